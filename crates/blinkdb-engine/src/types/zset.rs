//! Sorted sets: members ordered by (score, member). A `Pack` of (member,
//! score) pairs in that order while small (Redis's listpack encoding), then
//! `Sorted` (Redis's skiplist encoding): members and scores in a `Table`
//! slot arena, and their order in a `Ranked` tree of slot numbers, each with
//! its score (so that a score search reads no table slot).
//!
//! A member of a large set costs its `ZEntry` slot (32 bytes; members up to
//! 16 bytes inline), about 5 bytes of hash index and about 16 of order, where
//! Redis pays a skiplist node, an sds and a dict entry (~100 bytes).

use super::pack::Pack;
use super::ranked::Ranked;
use super::shared::Shared;
use super::table::{Element, Table};
use super::{Limits, Member};
use std::cmp::Ordering;

/// A score ordered as Redis orders them: by `<`, so -0 and 0 tie (then the
/// member decides). Scores are never NaN: commands refuse NaN first.
#[derive(Clone, Copy, Debug)]
pub struct Score(pub f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// (score, member) order.
pub fn order(a: (f64, &[u8]), b: (f64, &[u8])) -> Ordering {
    Score(a.0).cmp(&Score(b.0)).then_with(|| a.1.cmp(b.1))
}

/// A member and its score: what an arena slot of `Sorted` holds.
#[derive(Clone, Debug, PartialEq)]
pub struct ZEntry {
    pub member: Member,
    pub score: f64,
}

impl Element for ZEntry {
    fn vacant() -> Self {
        ZEntry {
            member: Member::new(),
            score: 0.0,
        }
    }
    fn member(&self) -> &[u8] {
        &self.member
    }
    fn heap(&self) -> usize {
        super::hash::heap_of(&self.member)
    }
}

/// The full encoding.
#[derive(Clone, Default)]
pub struct Sorted {
    table: Table<ZEntry>,
    order: Ranked,
}

impl Sorted {
    fn entry(&self, slot: u32) -> (&[u8], f64) {
        let e = self.table.at(slot);
        (&e.member, e.score)
    }

    /// The rank (score, member) has or would have.
    fn rank_of(&self, score: f64, member: &[u8]) -> usize {
        // The table is read only between equal scores.
        self.order
            .partition_point(|k, s| match Score(k).cmp(&Score(score)) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => self.table.at(s).member[..] < *member,
            })
    }

    fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        if let Some(slot) = self.table.find(member) {
            let old = self.table.at(slot).score;
            let rank = self.rank_of(old, member);
            // Where the new score keeps the member between its neighbours,
            // only the score changes (as zslUpdateScore does).
            let fits_before = rank == 0 || {
                let (m, s) = self.entry(self.order.get(rank - 1));
                order((s, m), (score, member)) == Ordering::Less
            };
            let fits_after = rank + 1 >= self.order.len() || {
                let (m, s) = self.entry(self.order.get(rank + 1));
                order((score, member), (s, m)) == Ordering::Less
            };
            self.table.at_mut(slot).score = score;
            if fits_before && fits_after {
                self.order.set_key(rank, score);
            } else {
                let gone = self.order.remove_at(rank);
                debug_assert_eq!(gone, slot);
                let at = self.rank_of(score, member);
                self.order.insert_at(at, score, slot);
            }
            return Some(old);
        }
        let at = self.rank_of(score, member);
        let (slot, _) = self.table.insert_slot(ZEntry {
            member: Member::from_slice(member),
            score,
        });
        self.order.insert_at(at, score, slot);
        None
    }

    fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let slot = self.table.find(member)?;
        let score = self.table.at(slot).score;
        let gone = self.order.remove_at(self.rank_of(score, member));
        debug_assert_eq!(gone, slot);
        self.table.take(member);
        if self.table.is_sparse() {
            let map = self.table.compact_map();
            self.order.remap(|s| map[s as usize]);
        }
        Some(score)
    }

    /// Removes ranks `start..end` (within the set).
    fn remove_ranks(&mut self, start: usize, end: usize) {
        for _ in start..end {
            let slot = self.order.remove_at(start);
            let member = self.table.at(slot).member.clone();
            self.table.take(&member);
        }
        if self.table.is_sparse() {
            let map = self.table.compact_map();
            self.order.remap(|s| map[s as usize]);
        }
    }

    /// Built from unique members already in (score, member) order.
    fn from_sorted(items: &[(&[u8], f64)]) -> Self {
        let mut table = Table::with_capacity(items.len());
        let slots: Vec<(f64, u32)> = items
            .iter()
            .map(|&(m, score)| {
                let slot = table
                    .insert_slot(ZEntry {
                        member: Member::from_slice(m),
                        score,
                    })
                    .0;
                (score, slot)
            })
            .collect();
        Sorted {
            table,
            order: Ranked::from_sorted(slots),
        }
    }
}

/// 24 bytes, held in the key's table entry: the pack inline there (up to
/// `pack::INLINE` bytes: 5 one-letter members with small integer scores),
/// the full encoding behind a `Shared` (shared on clone, copied on the next
/// change).
#[derive(Clone)]
pub enum ZSetValue {
    Pack(Pack),
    Sorted(Shared<Sorted>),
}

const _: () = assert!(std::mem::size_of::<ZSetValue>() == 24);

impl super::shared::Members for Sorted {
    fn members(&self) -> usize {
        self.order.len()
    }
}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue::Pack(Pack::default())
    }
}

impl std::fmt::Debug for ZSetValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ZSet({} members)", self.len())
    }
}

impl PartialEq for ZSetValue {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(m, s)| other.score(m).is_some_and(|o| Score(o) == Score(s)))
    }
}

impl Eq for ZSetValue {}

/// A score as the compact encoding stores it: an integer (within 2^53, where
/// every integer is exact as a double) in its fewest little-endian
/// two's-complement bytes (1 to 7), any other score as its 8 bytes of f64,
/// so `ZADD z 1 a` costs 2 bytes, not 9 (Redis's listpack stores integers
/// as integers too). -0 is an integer, kept as 0 there (as in Redis); the
/// full encoding keeps -0.
struct PackedScore {
    bytes: [u8; 8],
    len: u8,
}

impl std::ops::Deref for PackedScore {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

const EXACT_INT: f64 = (1u64 << 53) as f64;

fn packed(score: f64) -> PackedScore {
    let score = score + 0.0;
    if score.fract() == 0.0 && score.abs() <= EXACT_INT {
        let i = score as i64;
        let mut len = 1;
        while len < 7 && (i >> (8 * len - 1)) != 0 && (i >> (8 * len - 1)) != -1 {
            len += 1;
        }
        return PackedScore {
            bytes: i.to_le_bytes(),
            len: len as u8,
        };
    }
    PackedScore {
        bytes: score.to_le_bytes(),
        len: 8,
    }
}

fn score_of(bytes: &[u8]) -> f64 {
    if let Ok(b) = <[u8; 8]>::try_from(bytes) {
        return f64::from_le_bytes(b);
    }
    debug_assert!((1..8).contains(&bytes.len()), "a packed score is 1-8 bytes");
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    // Sign-extend from the top byte stored.
    let shift = 64 - 8 * bytes.len() as u32;
    ((i64::from_le_bytes(b) << shift) >> shift) as f64
}

/// A member and its score.
pub type Scored<'a> = (&'a [u8], f64);

impl ZSetValue {
    /// The encoding Redis would pick for a set built whole (the *STORE
    /// commands): compact when within both limits. `items` must hold unique
    /// members; any order.
    pub fn build(mut items: Vec<Scored<'_>>, limits: &Limits) -> Self {
        items.sort_by(|a, b| order((a.1, a.0), (b.1, b.0)));
        let compact = items.len() <= limits.zset_max_listpack_entries
            && items
                .iter()
                .all(|(m, _)| m.len() <= limits.zset_max_listpack_value);
        if compact {
            let bytes = items
                .iter()
                .map(|(m, s)| Pack::entry_bytes(m.len()) + Pack::entry_bytes(packed(*s).len()))
                .sum();
            let mut p = Pack::with_capacity(bytes);
            for (m, s) in &items {
                p.push(m);
                p.push(&packed(*s));
            }
            ZSetValue::Pack(p)
        } else {
            ZSetValue::Sorted(Shared::new(Sorted::from_sorted(&items)))
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ZSetValue::Pack(p) => p.entries() / 2,
            ZSetValue::Sorted(s) => s.order.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            ZSetValue::Pack(_) => "listpack",
            ZSetValue::Sorted(_) => "skiplist",
        }
    }

    pub fn bytes(&self) -> usize {
        match self {
            ZSetValue::Pack(p) => p.bytes(),
            ZSetValue::Sorted(s) => {
                Shared::<Sorted>::arc_chunk() + s.table.bytes() + s.order.bytes()
            }
        }
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSetValue::Pack(p) => p.find_pair(member).map(|(_, s)| score_of(s)),
            ZSetValue::Sorted(s) => s.table.get(member).map(|e| e.score),
        }
    }

    /// `member`'s rank in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match self {
            ZSetValue::Pack(p) => p.pairs().position(|(_, m, _)| m == member),
            ZSetValue::Sorted(s) => {
                let score = s.table.get(member)?.score;
                Some(s.rank_of(score, member))
            }
        }
    }

    /// Members in (score, member) order, with their scores.
    pub fn iter(&self) -> Box<dyn Iterator<Item = Scored<'_>> + '_> {
        self.range(0, false)
    }

    /// Members from rank `start` on, ascending; or with `rev`, from rank
    /// `start` counted from the end (0: the last member) towards the first.
    pub fn range(&self, start: usize, rev: bool) -> Box<dyn Iterator<Item = Scored<'_>> + '_> {
        let len = self.len();
        if start >= len {
            return Box::new(std::iter::empty());
        }
        match self {
            ZSetValue::Pack(p) => {
                let pairs = p.pairs().map(|(_, m, s)| (m, score_of(s)));
                if rev {
                    let mut all: Vec<_> = pairs.take(len - start).collect();
                    all.reverse();
                    Box::new(all.into_iter())
                } else {
                    Box::new(pairs.skip(start))
                }
            }
            ZSetValue::Sorted(s) => {
                let from = if rev { len - 1 - start } else { start };
                Box::new(s.order.iter_from(from, rev).map(|slot| s.entry(slot)))
            }
        }
    }

    /// The member at ascending rank `rank` (< len).
    pub fn nth(&self, rank: usize) -> Scored<'_> {
        match self {
            ZSetValue::Pack(_) => self.range(rank, false).next().expect("rank < len"),
            ZSetValue::Sorted(s) => s.entry(s.order.get(rank)),
        }
    }

    /// How many leading members (ascending) satisfy `pred`, which should
    /// hold for a prefix of the order. The compact encoding scans for the
    /// first member failing it, as Redis's listpack code does.
    pub fn partition(&self, pred: impl Fn(&[u8], f64) -> bool) -> usize {
        match self {
            ZSetValue::Pack(p) => p
                .pairs()
                .position(|(_, m, s)| !pred(m, score_of(s)))
                .unwrap_or(self.len()),
            ZSetValue::Sorted(s) => s.order.partition_point(|_, slot| {
                let (m, sc) = s.entry(slot);
                pred(m, sc)
            }),
        }
    }

    /// [`ZSetValue::partition`] of a predicate on scores alone: the full
    /// encoding answers from the scores its order tree holds, without
    /// reading a member.
    pub fn partition_by_score(&self, pred: impl Fn(f64) -> bool) -> usize {
        match self {
            ZSetValue::Pack(_) => self.partition(|_, s| pred(s)),
            ZSetValue::Sorted(s) => s.order.partition_point_by_key(pred),
        }
    }

    /// Visits members from a score boundary, while `visit` returns true:
    /// ascending from the first member whose score fails `before` (which
    /// holds for a prefix of the order), or with `rev` descending from the
    /// last member whose score satisfies it. The full encoding finds the
    /// start in one descent of its order tree.
    pub fn walk_by_score<'a>(
        &'a self,
        before: impl Fn(f64) -> bool,
        rev: bool,
        mut visit: impl FnMut(&'a [u8], f64) -> bool,
    ) {
        match self {
            ZSetValue::Pack(_) => {
                let at = self.partition_by_score(before);
                let from = match (rev, at) {
                    (false, _) => at,
                    (true, 0) => return,
                    (true, _) => self.len() - at,
                };
                for (m, s) in self.range(from, rev) {
                    if !visit(m, s) {
                        break;
                    }
                }
            }
            ZSetValue::Sorted(s) => {
                for slot in s.order.iter_from_key(before, rev) {
                    let (m, score) = s.entry(slot);
                    if !visit(m, score) {
                        break;
                    }
                }
            }
        }
    }

    /// Sets `member`'s score; returns its previous score (None: it is new).
    pub fn insert(&mut self, member: &[u8], score: f64, limits: &Limits) -> Option<f64> {
        if let ZSetValue::Pack(p) = self {
            let fits = member.len() <= limits.zset_max_listpack_value;
            let old = p.find_pair(member).map(|(pos, s)| (pos, score_of(s)));
            if fits && (old.is_some() || p.entries() / 2 < limits.zset_max_listpack_entries) {
                if let Some((pos, _)) = old {
                    p.remove_at(pos, 2);
                }
                let key = (score, member);
                let at = p
                    .pairs()
                    .find(|(_, m, s)| order((score_of(s), m), key) == Ordering::Greater)
                    .map_or(p.end(), |(pos, _, _)| pos);
                p.insert_at(at, &[member, &packed(score)]);
                return old.map(|(_, s)| s);
            }
            self.convert();
        }
        let ZSetValue::Sorted(s) = self else {
            unreachable!("converted above")
        };
        s.make_mut().insert(member, score)
    }

    /// Moves to the full (skiplist) encoding; SORT does this to the set it
    /// sorts, as Redis's zsetConvert does.
    pub fn convert(&mut self) {
        if let ZSetValue::Pack(p) = self {
            let items: Vec<_> = p.pairs().map(|(_, m, s)| (m, score_of(s))).collect();
            *self = ZSetValue::Sorted(Shared::new(Sorted::from_sorted(&items)));
        }
    }

    /// Removes `member`; returns its score if it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match self {
            ZSetValue::Pack(p) => {
                let (pos, s) = p.find_pair(member).map(|(pos, s)| (pos, score_of(s)))?;
                p.remove_at(pos, 2);
                Some(s)
            }
            ZSetValue::Sorted(s) => s.make_mut().remove(member),
        }
    }

    /// Removes the members of ascending ranks `start..end`; returns how many.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let end = end.min(self.len());
        if start >= end {
            return 0;
        }
        match self {
            ZSetValue::Pack(p) => {
                let pos = p
                    .pairs()
                    .nth(start)
                    .map(|(pos, _, _)| pos)
                    .expect("start < len");
                p.remove_at(pos, 2 * (end - start));
            }
            ZSetValue::Sorted(s) => s.make_mut().remove_ranks(start, end),
        }
        end - start
    }

    /// ZSCAN: a step from `cursor`; the compact encoding answers in one step.
    pub fn scan(&self, cursor: u64, count: usize) -> (Vec<Scored<'_>>, u64) {
        match self {
            ZSetValue::Pack(_) => (self.iter().collect(), 0),
            ZSetValue::Sorted(s) => {
                let (items, next) = s.table.scan(cursor, count);
                (
                    items
                        .into_iter()
                        .map(|e| (&e.member[..], e.score))
                        .collect(),
                    next,
                )
            }
        }
    }

    /// A uniformly random member.
    pub fn random(&self, rng: &mut impl rand::Rng) -> Option<Scored<'_>> {
        match self {
            ZSetValue::Pack(_) if self.is_empty() => None,
            ZSetValue::Pack(_) => Some(self.nth(rng.gen_range(0..self.len()))),
            ZSetValue::Sorted(s) => s.table.random(rng).map(|e| (&e.member[..], e.score)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_scores_round_trip_in_few_bytes() {
        for (score, len) in [
            (0.0, 1),
            (-0.0, 1),
            (1.0, 1),
            (-128.0, 1),
            (127.0, 1),
            (128.0, 2),
            (-129.0, 2),
            (1e6, 3),
            (EXACT_INT, 7),
            (-EXACT_INT, 7),
            (EXACT_INT * 2.0, 8),
            (1.5, 8),
            (f64::INFINITY, 8),
            (f64::NEG_INFINITY, 8),
            (-2.5e-300, 8),
        ] {
            let p = packed(score);
            assert_eq!(p.len(), len, "{score}");
            assert_eq!(score_of(&p), score + 0.0, "{score}");
        }
    }
    use rand::{Rng, SeedableRng};

    fn small(entries: usize) -> Limits {
        Limits {
            zset_max_listpack_entries: entries,
            ..Limits::default()
        }
    }

    fn all(z: &ZSetValue) -> Vec<(Vec<u8>, f64)> {
        z.iter().map(|(m, s)| (m.to_vec(), s)).collect()
    }

    #[test]
    fn keeps_score_member_order_in_both_encodings() {
        for entries in [128, 2] {
            let limits = small(entries);
            let mut z = ZSetValue::default();
            assert_eq!(z.insert(b"b", 1.0, &limits), None);
            z.insert(b"a", 1.0, &limits);
            z.insert(b"c", -0.5, &limits);
            assert_eq!(z.insert(b"b", 0.0, &limits), Some(1.0));
            assert_eq!(
                all(&z),
                [
                    (b"c".to_vec(), -0.5),
                    (b"b".to_vec(), 0.0),
                    (b"a".to_vec(), 1.0)
                ]
            );
            assert_eq!(z.rank(b"a"), Some(2));
            assert_eq!(z.remove(b"b"), Some(0.0));
            assert_eq!(z.len(), 2);
            assert_eq!(z.score(b"a"), Some(1.0));
        }
    }

    #[test]
    fn ties_negative_zero_and_infinities() {
        for entries in [128, 0] {
            let limits = small(entries);
            let mut z = ZSetValue::default();
            for (m, s) in [
                ("z", 0.0),
                ("a", -0.0),
                ("m", f64::INFINITY),
                ("b", f64::NEG_INFINITY),
                ("y", 0.0),
                ("c", f64::INFINITY),
            ] {
                z.insert(m.as_bytes(), s, &limits);
            }
            let members: Vec<_> = z.iter().map(|(m, _)| m.to_vec()).collect();
            assert_eq!(members, [&b"b"[..], b"a", b"y", b"z", b"c", b"m"]);
            // -0 ties with 0; the full encoding keeps its sign, the compact
            // one stores it as the integer 0 (as a listpack does).
            assert_eq!(z.score(b"a").unwrap().is_sign_negative(), entries == 0);
            assert_eq!(z.rank(b"y"), Some(2));
            // Scores in [0, 0]: a, y, z.
            let lo = z.partition(|_, s| s < 0.0);
            let hi = z.partition(|_, s| s <= 0.0);
            assert_eq!(lo, z.partition_by_score(|s| s < 0.0));
            assert_eq!(hi, z.partition_by_score(|s| s <= 0.0));
            assert_eq!((lo, hi), (1, 4));
            // Walks from a score boundary, both ways, stopped by the visitor.
            let mut up = Vec::new();
            z.walk_by_score(
                |s| s < 0.0,
                false,
                |m, _| {
                    up.push(m.to_vec());
                    up.len() < 4
                },
            );
            assert_eq!(up, [&b"a"[..], b"y", b"z", b"c"]);
            let mut down = Vec::new();
            z.walk_by_score(
                |s| s <= 0.0,
                true,
                |m, _| {
                    down.push(m.to_vec());
                    true
                },
            );
            assert_eq!(down, [&b"z"[..], b"y", b"a", b"b"]);
            let mut none = 0;
            z.walk_by_score(
                |_| false,
                true,
                |_, _| {
                    none += 1;
                    true
                },
            );
            z.walk_by_score(
                |_| true,
                false,
                |_, _| {
                    none += 1;
                    true
                },
            );
            assert_eq!(none, 0);
            let back: Vec<_> = z.range(0, true).map(|(m, _)| m.to_vec()).collect();
            assert_eq!(back[0], b"m");
            assert_eq!(z.nth(4).0, b"c");
        }
    }

    #[test]
    fn large_set_matches_a_model_through_updates_and_removals() {
        let limits = small(16);
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut z = ZSetValue::default();
        let mut model = std::collections::BTreeMap::<Vec<u8>, f64>::new();
        for step in 0..30_000 {
            let m = format!("m:{}", rng.gen_range(0..3000)).into_bytes();
            match rng.gen_range(0..10) {
                0..=5 => {
                    let s = rng.gen_range(-50..50) as f64 / 4.0;
                    assert_eq!(z.insert(&m, s, &limits), model.insert(m, s));
                }
                6..=8 => assert_eq!(z.remove(&m), model.remove(&m)),
                _ => {
                    let n = rng.gen_range(0..5);
                    let removed = z.remove_ranks(3, 3 + n);
                    let mut sorted: Vec<_> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
                    sorted.sort_by(|a, b| order((a.1, &a.0), (b.1, &b.0)));
                    let gone: Vec<_> = sorted.iter().skip(3).take(n).cloned().collect();
                    assert_eq!(removed, gone.len());
                    for (m, _) in gone {
                        model.remove(&m);
                    }
                }
            }
            if step % 3000 == 0 || step == 29_999 {
                let mut sorted: Vec<_> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
                sorted.sort_by(|a, b| order((a.1, &a.0), (b.1, &b.0)));
                assert_eq!(all(&z), sorted);
                for (r, (m, _)) in sorted.iter().enumerate().step_by(37) {
                    assert_eq!(z.rank(m), Some(r));
                    assert_eq!(z.nth(r).0, &m[..]);
                }
            }
        }
        assert_eq!(z.encoding(), "skiplist");
        // Mass removal compacts the arena and keeps the order valid.
        let members: Vec<_> = model.keys().cloned().collect();
        for m in &members[..members.len() - 3] {
            z.remove(m);
        }
        assert_eq!(z.len(), 3);
        assert_eq!(z.iter().count(), 3);
    }

    #[test]
    fn build_picks_the_encoding_by_final_size() {
        let limits = small(2);
        let z = ZSetValue::build(vec![(b"b", 2.0), (b"a", 2.0)], &limits);
        assert_eq!(z.encoding(), "listpack");
        assert_eq!(all(&z)[0].0, b"a");
        let z = ZSetValue::build(vec![(b"b", 2.0), (b"a", 2.0), (b"c", 1.0)], &limits);
        assert_eq!(z.encoding(), "skiplist");
        assert_eq!(all(&z)[0].0, b"c");
    }
}
