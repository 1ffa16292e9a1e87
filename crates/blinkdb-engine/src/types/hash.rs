//! Hashes: field → value, a `Pack` of pairs while small (Redis's listpack
//! encoding), a `Table` past `hash-max-listpack-entries` fields or
//! `hash-max-listpack-value` bytes in a field or value.
//!
//! Field TTLs (Redis 7.4's hash-field expiration, issue 43): a hash whose
//! field gains a TTL moves to an `Ex` form and stays there, as Redis's
//! `listpackex` does. The compact one is a pack of triplets (field, value,
//! TTL), the TTL an empty entry (none) or 6 bytes little-endian of
//! milliseconds (Redis bounds a field's expiry by 2^48), behind a `Box` so
//! that `HashValue` stays 24 bytes and a hash without TTLs pays nothing;
//! the full one a table of (field, value, TTL). Both keep a lower bound of
//! their earliest TTL and how many fields have one, updated by each write
//! (the compact one in the word beside its box, `PackTtls`), so that a
//! write scans nothing for them. Expired fields stay until the active cycle or a write
//! removes them; reads pass a clock (`now`, 0: nothing has expired) and
//! skip them.

use super::pack::Pack;
use super::shared::{Members, Shared};
use super::table::{Element, Table};
use super::{Limits, Member};

#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub field: Member,
    pub value: Member,
}

impl Element for Pair {
    fn vacant() -> Self {
        Pair {
            field: Member::new(),
            value: Member::new(),
        }
    }
    fn member(&self) -> &[u8] {
        &self.field
    }
    fn heap(&self) -> usize {
        heap_of(&self.field) + heap_of(&self.value)
    }
}

/// A field of a full-encoding hash with TTLs; `at` 0: none.
#[derive(Clone, Debug, PartialEq)]
pub struct PairEx {
    pub field: Member,
    pub value: Member,
    pub at: u64,
}

impl Element for PairEx {
    fn vacant() -> Self {
        PairEx {
            field: Member::new(),
            value: Member::new(),
            at: 0,
        }
    }
    fn member(&self) -> &[u8] {
        &self.field
    }
    fn heap(&self) -> usize {
        heap_of(&self.field) + heap_of(&self.value)
    }
}

/// The full encoding with TTLs: the fields, a lower bound of their
/// earliest TTL (exact after an `expire_due` that found it past), and how
/// many fields have one (exact: with none, `min` is 0, so a hash with field
/// TTLs is counted exactly, as INFO keyspace's `subexpiry` counts it).
#[derive(Clone, Default)]
pub struct TableEx {
    table: Table<PairEx>,
    min: u64,
    ttls: usize,
}

impl Members for TableEx {
    fn members(&self) -> usize {
        self.table.len()
    }
}

pub(crate) fn heap_of(m: &Member) -> usize {
    if m.spilled() {
        m.capacity()
    } else {
        0
    }
}

/// A field and its value.
pub type FieldValue<'a> = (&'a [u8], &'a [u8]);

/// The largest field expiry (Redis's EB_EXPIRE_TIME_MAX, 2^48 - 1 ms).
pub const MAX_FIELD_EXPIRE: u64 = (1 << 48) - 1;

/// Whether a field expiring at `at` (0: never) is gone at `now` (0: the
/// clock is stopped, while loading or on a replica's link).
#[inline]
pub fn field_expired(at: u64, now: u64) -> bool {
    at != 0 && now != 0 && at < now
}

fn ttl_bytes(at: u64, buf: &mut [u8; 6]) -> &[u8] {
    if at == 0 {
        return &[];
    }
    buf.copy_from_slice(&at.min(MAX_FIELD_EXPIRE).to_le_bytes()[..6]);
    &buf[..]
}

fn ttl_of(entry: &[u8]) -> u64 {
    // Byte by byte, little-endian: a copy of up to 6 bytes into a word was
    // a call to memcpy.
    entry
        .iter()
        .take(6)
        .rev()
        .fold(0, |at, b| at << 8 | u64::from(*b))
}

/// A pack of triplets: (start, field, value, TTL).
fn triplets(p: &Pack) -> impl Iterator<Item = (usize, &[u8], &[u8], u64)> + '_ {
    let mut it = p.iter();
    std::iter::from_fn(move || {
        let (pos, f) = it.next()?;
        let (_, v) = it.next()?;
        let (_, t) = it.next()?;
        Some((pos, f, v, ttl_of(t)))
    })
}

fn find_triplet<'a>(p: &'a Pack, field: &[u8]) -> Option<(usize, &'a [u8], u64)> {
    let (pos, vpos) = p.find_group(field, 3)?;
    let (v, tpos) = p.entry_at(vpos);
    Some((pos, v, ttl_of(p.entry(tpos))))
}

/// What a compact hash with TTLs knows of them without a walk, in the word
/// beside its box (`HashValue` has room for it there and stays 24 bytes): a
/// lower bound of the earliest TTL in the low 48 bits (0 exactly when no
/// field has one; exact after `expire_due` scanned), and how many fields
/// have one in the high 16, `MANY` meaning at least that many (counted by
/// a walk when one goes: only a pack past `hash-max-listpack-entries`
/// 65,535 gets there). Every write updates it, so neither the write nor the
/// shard's field-expiry index (`Shard::modify` reads the earliest TTL
/// before and after each change) scans the pack for it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PackTtls(u64);

const MANY: u64 = 0xFFFF;

impl PackTtls {
    fn new(min: u64, count: u64) -> Self {
        debug_assert!((min == 0) == (count == 0) && min <= MAX_FIELD_EXPIRE);
        PackTtls(min | count.min(MANY) << 48)
    }

    /// Counted from the pack's triplets, exact.
    fn of(p: &Pack) -> Self {
        let (mut min, mut count) = (0, 0);
        for (_, _, _, at) in triplets(p) {
            if at != 0 {
                count += 1;
                if min == 0 || at < min {
                    min = at;
                }
            }
        }
        PackTtls::new(min, count)
    }

    fn min(self) -> u64 {
        self.0 & MAX_FIELD_EXPIRE
    }

    fn count(self) -> u64 {
        self.0 >> 48
    }

    /// A field's TTL went from `old` to `new` (0: none) in `p`, which
    /// already holds the change.
    fn changed(&mut self, old: u64, new: u64, p: &Pack) {
        let new = new.min(MAX_FIELD_EXPIRE);
        let (min, count) = (self.min(), self.count());
        *self = match (old, new) {
            (0, 0) => return,
            (_, 0) if count == MANY => PackTtls::of(p),
            (_, 0) if count == 1 => PackTtls::default(),
            (_, 0) => PackTtls::new(min, count - 1),
            (old, new) => PackTtls::new(
                if min == 0 { new } else { min.min(new) },
                count + u64::from(old == 0),
            ),
        };
    }
}

/// What a set does to the field's TTL.
#[derive(Clone, Copy)]
enum Ttl {
    /// Drops it (HSET).
    Clear,
    /// Keeps it (HINCRBY, HSETEX KEEPTTL).
    Keep,
    /// Sets it (HSETEX EX): not 0.
    At(u64),
}

impl Ttl {
    /// The field's TTL after the set, `old` before (0: none, or new).
    fn of(self, old: u64) -> u64 {
        match self {
            Ttl::Clear => 0,
            Ttl::Keep => old,
            Ttl::At(at) => at,
        }
    }
}

/// 24 bytes, held in the key's table entry: the pack inline there (up to
/// `pack::INLINE` bytes of fields, a heap buffer beyond), the table behind
/// a `Shared` (shared on clone, copied on the next change); a hash with
/// field TTLs behind one pointer (see the module's comment).
#[derive(Clone)]
pub enum HashValue {
    Pack(Pack),
    Table(Shared<Table<Pair>>),
    PackEx(Box<Pack>, PackTtls),
    TableEx(Shared<TableEx>),
}

const _: () = assert!(std::mem::size_of::<HashValue>() == 24);

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Pack(Pack::default())
    }
}

impl std::fmt::Debug for HashValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hash({} fields)", self.len())
    }
}

impl PartialEq for HashValue {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter_ttl()
                .all(|(f, v, at)| other.lookup(f) == Some((v, at)))
    }
}

impl Eq for HashValue {}

impl HashValue {
    /// An empty hash in the compact encoding, with room for `bytes` of
    /// entries (a loader that knows its fields' sizes allocates once).
    pub fn with_pack_capacity(bytes: usize) -> Self {
        HashValue::Pack(Pack::with_capacity(bytes))
    }

    /// Fields stored, expired ones not yet removed included (Redis's HLEN).
    pub fn len(&self) -> usize {
        match self {
            HashValue::Pack(p) => p.entries() / 2,
            HashValue::Table(t) => t.len(),
            HashValue::PackEx(p, _) => p.entries() / 3,
            HashValue::TableEx(t) => t.table.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the hash is in the form that holds field TTLs.
    #[inline]
    pub fn has_ttls(&self) -> bool {
        matches!(self, HashValue::PackEx(..) | HashValue::TableEx(_))
    }

    /// Whether no field can have expired at `now`: none has a TTL, the
    /// clock is stopped, or the earliest TTL's lower bound is not past.
    #[inline]
    fn none_expired(&self, now: u64) -> bool {
        !field_expired(self.min_expire(), now)
    }

    /// Fields not expired at `now`.
    pub fn live_len(&self, now: u64) -> usize {
        if self.none_expired(now) {
            return self.len();
        }
        self.iter_ttl()
            .filter(|(_, _, at)| !field_expired(*at, now))
            .count()
    }

    /// OBJECT ENCODING's name.
    pub fn encoding(&self) -> &'static str {
        match self {
            HashValue::Pack(_) => "listpack",
            HashValue::PackEx(..) => "listpackex",
            HashValue::Table(_) | HashValue::TableEx(_) => "hashtable",
        }
    }

    pub fn bytes(&self) -> usize {
        match self {
            HashValue::Pack(p) => p.bytes(),
            HashValue::Table(t) => Shared::<Table<Pair>>::arc_chunk() + t.bytes(),
            HashValue::PackEx(p, _) => super::malloc_chunk(std::mem::size_of::<Pack>()) + p.bytes(),
            HashValue::TableEx(t) => Shared::<TableEx>::arc_chunk() + t.table.bytes(),
        }
    }

    /// The value of `field` and its expiry (0: none), expired or not.
    pub fn lookup(&self, field: &[u8]) -> Option<(&[u8], u64)> {
        match self {
            HashValue::Pack(p) => p.find_pair(field).map(|(_, v)| (v, 0)),
            HashValue::Table(t) => t.get(field).map(|p| (&p.value[..], 0)),
            HashValue::PackEx(p, _) => find_triplet(p, field).map(|(_, v, at)| (v, at)),
            HashValue::TableEx(t) => t.table.get(field).map(|p| (&p.value[..], p.at)),
        }
    }

    /// The value of `field` unless it expired before `now`.
    #[inline]
    pub fn get(&self, field: &[u8], now: u64) -> Option<&[u8]> {
        match self {
            HashValue::Pack(p) => p.find_pair(field).map(|(_, v)| v),
            HashValue::Table(t) => t.get(field).map(|p| &p.value[..]),
            _ => self
                .lookup(field)
                .filter(|(_, at)| !field_expired(*at, now))
                .map(|(v, _)| v),
        }
    }

    /// `field`'s value and whether it expired before `now` (Redis 8.0's
    /// hashTypeGetValue, which removes such a field); None if absent.
    #[inline]
    pub fn find(&self, field: &[u8], now: u64) -> Option<(&[u8], bool)> {
        match self {
            HashValue::Pack(p) => p.find_pair(field).map(|(_, v)| (v, false)),
            HashValue::Table(t) => t.get(field).map(|p| (&p.value[..], false)),
            _ => self
                .lookup(field)
                .map(|(v, at)| (v, field_expired(at, now))),
        }
    }

    pub fn contains(&self, field: &[u8], now: u64) -> bool {
        self.get(field, now).is_some()
    }

    /// Sets `field` and clears its TTL (HSET); true if it is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &Limits) -> bool {
        self.set_with(field, value, limits, Ttl::Clear)
    }

    /// Sets `field`, keeping its TTL (HINCRBY, HSETEX KEEPTTL); true if new.
    pub fn set_keep_ttl(&mut self, field: &[u8], value: &[u8], limits: &Limits) -> bool {
        self.set_with(field, value, limits, Ttl::Keep)
    }

    /// Sets `field` and its expiry `at` (not 0) in one look for it
    /// (HSETEX EX), moving the hash to the form with TTLs; true if new.
    pub fn set_expiring(&mut self, field: &[u8], value: &[u8], at: u64, limits: &Limits) -> bool {
        debug_assert!(at != 0, "0 is no TTL: set_expire persists");
        self.to_ex();
        self.set_with(field, value, limits, Ttl::At(at))
    }

    fn set_with(&mut self, field: &[u8], value: &[u8], limits: &Limits, ttl: Ttl) -> bool {
        let long = field.len() > limits.hash_max_listpack_value
            || value.len() > limits.hash_max_listpack_value;
        match self {
            HashValue::Pack(p) => {
                debug_assert!(!matches!(ttl, Ttl::At(_)), "to_ex first");
                if !long {
                    if let Some((pos, _)) = p.find_pair(field) {
                        let vpos = p.next_pos(pos);
                        p.replace_at(vpos, value);
                        return false;
                    }
                    if p.entries() / 2 < limits.hash_max_listpack_entries {
                        p.push(field);
                        p.push(value);
                        return true;
                    }
                }
                self.convert();
            }
            HashValue::PackEx(p, ttls) => {
                if !long {
                    let mut buf = [0u8; 6];
                    if let Some((pos, _, at)) = find_triplet(p, field) {
                        let vpos = p.next_pos(pos);
                        p.replace_at(vpos, value);
                        let new = ttl.of(at);
                        if new != at {
                            let tpos = p.next_pos(vpos);
                            p.replace_at(tpos, ttl_bytes(new, &mut buf));
                            ttls.changed(at, new, p);
                        }
                        return false;
                    }
                    if p.entries() / 3 < limits.hash_max_listpack_entries {
                        let new = ttl.of(0);
                        p.push(field);
                        p.push(value);
                        p.push(ttl_bytes(new, &mut buf));
                        ttls.changed(0, new, p);
                        return true;
                    }
                }
                self.convert();
            }
            _ => {}
        }
        match self {
            HashValue::Table(t) => t
                .make_mut()
                .insert(Pair {
                    field: Member::from_slice(field),
                    value: Member::from_slice(value),
                })
                .is_none(),
            HashValue::TableEx(t) => {
                let t = t.make_mut();
                let at = ttl.of(t.table.get(field).map_or(0, |p| p.at));
                let old = t.table.insert(PairEx {
                    field: Member::from_slice(field),
                    value: Member::from_slice(value),
                    at,
                });
                if let Some(old) = &old {
                    t.forget_ttl(old.at);
                }
                t.note_ttl(at);
                old.is_none()
            }
            _ => unreachable!("converted above"),
        }
    }

    /// To the full encoding (past a limit; never back, as in Redis).
    fn convert(&mut self) {
        match self {
            HashValue::Pack(p) => {
                let mut t = Table::with_capacity(p.entries() / 2 + 1);
                for (_, f, v) in p.pairs() {
                    t.insert(Pair {
                        field: Member::from_slice(f),
                        value: Member::from_slice(v),
                    });
                }
                *self = HashValue::Table(Shared::new(t));
            }
            HashValue::PackEx(p, _) => {
                let mut t = TableEx {
                    table: Table::with_capacity(p.entries() / 3 + 1),
                    ..TableEx::default()
                };
                for (_, f, v, at) in triplets(p) {
                    t.note_ttl(at);
                    t.table.insert(PairEx {
                        field: Member::from_slice(f),
                        value: Member::from_slice(v),
                        at,
                    });
                }
                *self = HashValue::TableEx(Shared::new(t));
            }
            _ => {}
        }
    }

    /// To the form that holds TTLs, as Redis 8.0 converts a hash a command
    /// sets field TTLs on (whether or not one is set: OBJECT ENCODING
    /// answers `listpackex` after an HEXPIRE of no field).
    pub fn to_ex(&mut self) {
        match self {
            HashValue::Pack(p) => {
                let mut ex = Pack::with_capacity(p.end() + p.entries() / 2);
                for (_, f, v) in p.pairs() {
                    ex.push(f);
                    ex.push(v);
                    ex.push(&[]);
                }
                *self = HashValue::PackEx(Box::new(ex), PackTtls::default());
            }
            HashValue::Table(t) => {
                let mut ex = TableEx {
                    table: Table::with_capacity(t.len()),
                    ..TableEx::default()
                };
                for p in t.iter() {
                    ex.table.insert(PairEx {
                        field: p.field.clone(),
                        value: p.value.clone(),
                        at: 0,
                    });
                }
                *self = HashValue::TableEx(Shared::new(ex));
            }
            _ => {}
        }
    }

    /// Sets the expiry of an existing `field` (0: persist); false if there
    /// is no such field.
    pub fn set_expire(&mut self, field: &[u8], at: u64) -> bool {
        if !self.has_ttls() {
            if at == 0 || self.lookup(field).is_none() {
                return self.lookup(field).is_some();
            }
            self.to_ex();
        }
        match self {
            HashValue::PackEx(p, ttls) => match find_triplet(p, field) {
                Some((pos, _, old)) => {
                    let tpos = p.next_pos(p.next_pos(pos));
                    let mut buf = [0u8; 6];
                    p.replace_at(tpos, ttl_bytes(at, &mut buf));
                    ttls.changed(old, at, p);
                    true
                }
                None => false,
            },
            HashValue::TableEx(t) => {
                if !t.table.contains(field) {
                    return false;
                }
                let t = t.make_mut();
                let old = std::mem::replace(&mut t.table.get_mut(field).expect("checked").at, at);
                t.forget_ttl(old);
                t.note_ttl(at);
                true
            }
            _ => unreachable!("to_ex above"),
        }
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Pack(p) => match p.find_pair(field) {
                Some((pos, _)) => {
                    p.remove_at(pos, 2);
                    true
                }
                None => false,
            },
            HashValue::Table(t) => t.make_mut().remove(field).is_some(),
            HashValue::PackEx(p, ttls) => match find_triplet(p, field) {
                Some((pos, _, at)) => {
                    p.remove_at(pos, 3);
                    ttls.changed(at, 0, p);
                    true
                }
                None => false,
            },
            HashValue::TableEx(t) => {
                if !t.table.contains(field) {
                    return false;
                }
                let t = t.make_mut();
                let old = t.table.remove(field).expect("checked");
                t.forget_ttl(old.at);
                true
            }
        }
    }

    /// Every stored field with its value, expired ones included (the RDB,
    /// the AOF rewrite, DUMP: a loader drops what has expired).
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            HashValue::Pack(p) => Box::new(p.pairs().map(|(_, f, v)| (f, v))),
            HashValue::Table(t) => Box::new(t.iter().map(|p| (&p.field[..], &p.value[..]))),
            _ => Box::new(self.iter_ttl().map(|(f, v, _)| (f, v))),
        }
    }

    /// Every stored field with its value and expiry (0: none).
    pub fn iter_ttl(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8], u64)> + '_> {
        match self {
            HashValue::Pack(p) => Box::new(p.pairs().map(|(_, f, v)| (f, v, 0))),
            HashValue::Table(t) => Box::new(t.iter().map(|p| (&p.field[..], &p.value[..], 0))),
            HashValue::PackEx(p, _) => Box::new(triplets(p).map(|(_, f, v, at)| (f, v, at))),
            HashValue::TableEx(t) => {
                Box::new(t.table.iter().map(|p| (&p.field[..], &p.value[..], p.at)))
            }
        }
    }

    /// The fields not expired at `now`, with their values.
    pub fn iter_live(&self, now: u64) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        if self.none_expired(now) {
            return self.iter();
        }
        Box::new(
            self.iter_ttl()
                .filter(move |(_, _, at)| !field_expired(*at, now))
                .map(|(f, v, _)| (f, v)),
        )
    }

    /// HSCAN: a step from `cursor`; the compact encoding answers in one
    /// step. Fields expired at `now` are left out.
    pub fn scan(&self, cursor: u64, count: usize, now: u64) -> (Vec<FieldValue<'_>>, u64) {
        match self {
            HashValue::Pack(_) | HashValue::PackEx(..) => (self.iter_live(now).collect(), 0),
            HashValue::Table(t) => {
                let (items, next) = t.scan(cursor, count);
                (
                    items
                        .into_iter()
                        .map(|p| (&p.field[..], &p.value[..]))
                        .collect(),
                    next,
                )
            }
            HashValue::TableEx(t) => {
                let (items, next) = t.table.scan(cursor, count);
                (
                    items
                        .into_iter()
                        .filter(|p| !field_expired(p.at, now))
                        .map(|p| (&p.field[..], &p.value[..]))
                        .collect(),
                    next,
                )
            }
        }
    }

    /// A uniformly random field and its value, among those live at `now`.
    pub fn random(&self, rng: &mut impl rand::Rng, now: u64) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Pack(p) => {
                let n = p.entries() / 2;
                if n == 0 {
                    return None;
                }
                p.pairs().nth(rng.gen_range(0..n)).map(|(_, f, v)| (f, v))
            }
            HashValue::Table(t) => t.random(rng).map(|p| (&p.field[..], &p.value[..])),
            _ => {
                let n = self.live_len(now);
                if n == 0 {
                    return None;
                }
                self.iter_live(now).nth(rng.gen_range(0..n))
            }
        }
    }

    /// A lower bound of the earliest field expiry (0: none, exactly when
    /// no field has a TTL), exact after `expire_due`; read without a walk.
    #[inline]
    pub fn min_expire(&self) -> u64 {
        match self {
            HashValue::Pack(_) | HashValue::Table(_) => 0,
            HashValue::PackEx(_, ttls) => ttls.min(),
            HashValue::TableEx(t) => t.min,
        }
    }

    /// Whether a field has a TTL (expired or not): INFO keyspace's
    /// `subexpiry` counts such hashes.
    pub fn has_field_ttl(&self) -> bool {
        self.min_expire() != 0
    }

    /// The earliest field expiry (0: none), exact.
    pub fn exact_min_expire(&self) -> u64 {
        self.iter_ttl()
            .map(|(_, _, at)| at)
            .filter(|at| *at != 0)
            .min()
            .unwrap_or(0)
    }

    /// Removes the fields expired at `now` (at most `max`), returning their
    /// names, and makes the earliest expiry exact, in one walk. A hash whose
    /// lower bound is not past has nothing due and is not walked: every
    /// write to a hash with TTLs calls this first (a walk there made each
    /// HSETEX into a 1M-field hash cost the whole hash).
    pub fn expire_due(&mut self, now: u64, max: usize) -> Vec<Member> {
        if self.none_expired(now) {
            return Vec::new();
        }
        match self {
            HashValue::PackEx(p, ttls) => {
                // The due triplets' starts, and the TTLs of those that stay.
                let (mut due, mut min, mut count) = (Vec::new(), 0, 0);
                for (pos, f, _, at) in triplets(p) {
                    if field_expired(at, now) && due.len() < max {
                        due.push((pos, Member::from_slice(f)));
                    } else if at != 0 {
                        count += 1;
                        if min == 0 || at < min {
                            min = at;
                        }
                    }
                }
                // From the last, so that the starts before stay where they are.
                for (pos, _) in due.iter().rev() {
                    p.remove_at(*pos, 3);
                }
                *ttls = PackTtls::new(min, count);
                due.into_iter().map(|(_, f)| f).collect()
            }
            HashValue::TableEx(t) => {
                let (mut due, mut min) = (Vec::new(), 0);
                for pe in t.table.iter() {
                    if field_expired(pe.at, now) && due.len() < max {
                        due.push(pe.field.clone());
                    } else if pe.at != 0 && (min == 0 || pe.at < min) {
                        min = pe.at;
                    }
                }
                if due.is_empty() && min == t.min {
                    return due;
                }
                let t = t.make_mut();
                for f in &due {
                    let old = t.table.remove(f).expect("met in the walk");
                    t.forget_ttl(old.at);
                }
                t.min = min;
                due
            }
            HashValue::Pack(_) | HashValue::Table(_) => unreachable!("none_expired without TTLs"),
        }
    }
}

impl TableEx {
    /// A field gained the TTL `at` (0: none).
    fn note_ttl(&mut self, at: u64) {
        if at == 0 {
            return;
        }
        self.ttls += 1;
        if self.min == 0 || at < self.min {
            self.min = at;
        }
    }

    /// A field with the TTL `at` (0: none) lost it or went; with no TTL
    /// left the earliest is 0.
    fn forget_ttl(&mut self, at: u64) {
        if at == 0 {
            return;
        }
        self.ttls -= 1;
        if self.ttls == 0 {
            self.min = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_past_the_limits_and_keeps_fields() {
        let limits = Limits {
            hash_max_listpack_entries: 4,
            ..Limits::default()
        };
        let mut h = HashValue::default();
        for i in 0..4 {
            assert!(h.set(format!("f{i}").as_bytes(), b"v", &limits));
        }
        assert_eq!(h.encoding(), "listpack");
        assert!(!h.set(b"f1", b"new", &limits));
        assert_eq!(h.get(b"f1", 0), Some(&b"new"[..]));
        assert!(h.set(b"f4", b"v", &limits));
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        assert_eq!(h.get(b"f1", 0), Some(&b"new"[..]));
        let mut small = HashValue::default();
        small.set(b"f", &[b'x'; 65], &limits);
        assert_eq!(small.encoding(), "hashtable");
        assert!(h.remove(b"f0") && !h.remove(b"f0"));
        assert_eq!(h.len(), 4);
    }

    #[test]
    fn field_ttls_in_both_encodings() {
        let limits = Limits {
            hash_max_listpack_entries: 3,
            ..Limits::default()
        };
        let mut h = HashValue::default();
        h.set(b"a", b"1", &limits);
        h.set(b"b", b"2", &limits);
        assert!(h.set_expire(b"a", 1000));
        assert!(!h.set_expire(b"zz", 1000));
        assert_eq!(h.encoding(), "listpackex");
        assert_eq!(h.lookup(b"a"), Some((&b"1"[..], 1000)));
        assert_eq!(h.min_expire(), 1000);
        assert_eq!(h.get(b"a", 999), Some(&b"1"[..]));
        assert_eq!(h.get(b"a", 1001), None);
        assert_eq!(h.live_len(1001), 1);
        // HINCRBY keeps the TTL, HSET drops it.
        h.set_keep_ttl(b"a", b"5", &limits);
        assert_eq!(h.lookup(b"a"), Some((&b"5"[..], 1000)));
        h.set(b"a", b"6", &limits);
        assert_eq!(h.lookup(b"a"), Some((&b"6"[..], 0)));
        h.set_expire(b"b", 500);
        h.set(b"c", b"3", &limits);
        h.set(b"d", b"4", &limits);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.lookup(b"b"), Some((&b"2"[..], 500)));
        assert_eq!(h.min_expire(), 500);
        let gone = h.expire_due(600, 10);
        assert_eq!(gone.len(), 1);
        assert_eq!(h.len(), 3);
        assert_eq!(h.min_expire(), 0);
        // The table counts its TTLs: the last one dropped (HSET), removed
        // (HDEL) or persisted leaves none, whatever the lower bound was.
        assert!(!h.has_field_ttl());
        h.set_expire(b"c", 900);
        h.set_expire(b"d", 800);
        assert!(h.has_field_ttl());
        h.set(b"c", b"x", &limits);
        assert!(h.remove(b"d"));
        assert!(!h.has_field_ttl() && h.min_expire() == 0);
        h.set_expire(b"a", 700);
        h.set_keep_ttl(b"a", b"y", &limits);
        assert_eq!(h.min_expire(), 700);
        h.set_expire(b"a", 0);
        assert!(!h.has_field_ttl());
        let mut small = HashValue::default();
        small.set(b"x", b"y", &limits);
        small.set_expire(b"x", 7);
        assert_eq!(small.expire_due(8, 10).len(), 1);
        assert!(small.is_empty());
    }

    #[test]
    fn a_table_is_scanned_only_once_its_bound_is_past() {
        let limits = Limits {
            hash_max_listpack_entries: 2,
            ..Limits::default()
        };
        let mut h = HashValue::default();
        for (f, at) in [(&b"a"[..], 100), (b"b", 300), (b"c", 200), (b"d", 0)] {
            h.set(f, b"v", &limits);
            if at != 0 {
                h.set_expire(f, at);
            }
        }
        assert_eq!(h.encoding(), "hashtable");
        // HSET drops a's TTL: the bound stays 100, below the true 200.
        h.set(b"a", b"w", &limits);
        assert_eq!((h.min_expire(), h.exact_min_expire()), (100, 200));
        // Not past: nothing can be due, and the bound is left as it is.
        assert!(h.expire_due(100, usize::MAX).is_empty());
        assert_eq!(h.min_expire(), 100);
        // Past: the scan finds nothing due yet and makes the bound exact.
        assert!(h.expire_due(150, usize::MAX).is_empty());
        assert_eq!(h.min_expire(), 200);
        let gone = h.expire_due(250, usize::MAX);
        assert_eq!(gone, vec![Member::from_slice(b"c")]);
        assert_eq!((h.min_expire(), h.len()), (300, 3));
    }

    /// The exact earliest TTL and the count of fields with one, by a walk.
    fn walked(h: &HashValue) -> (u64, usize) {
        let ats: Vec<u64> = h
            .iter_ttl()
            .map(|(_, _, at)| at)
            .filter(|at| *at != 0)
            .collect();
        (ats.iter().copied().min().unwrap_or(0), ats.len())
    }

    #[test]
    fn the_kept_bound_and_count_follow_every_write() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(43);
        for entries in [8, 128] {
            let limits = Limits {
                hash_max_listpack_entries: entries,
                ..Limits::default()
            };
            let mut h = HashValue::default();
            h.to_ex();
            let mut now = 1000;
            for _ in 0..20_000 {
                let f = format!("f{}", rng.gen_range(0..12));
                let at = rng.gen_range(900..1200);
                match rng.gen_range(0..7) {
                    0 => {
                        let _ = h.set(f.as_bytes(), b"v", &limits);
                    }
                    1 => {
                        let _ = h.set_keep_ttl(f.as_bytes(), b"w", &limits);
                    }
                    2 => {
                        let _ = h.set_expire(f.as_bytes(), at);
                    }
                    3 => {
                        let _ = h.set_expire(f.as_bytes(), 0);
                    }
                    4 => {
                        let _ = h.remove(f.as_bytes());
                    }
                    5 => {
                        now += rng.gen_range(0..5);
                        let (before, max) = (h.len(), rng.gen_range(1..4));
                        let due = h.len() - h.live_len(now);
                        let walks = field_expired(h.min_expire(), now);
                        let gone = h.expire_due(now, max);
                        assert_eq!(gone.len(), due.min(max));
                        assert_eq!(h.len() + gone.len(), before);
                        assert!(gone.iter().all(|f| h.lookup(f).is_none()));
                        if walks {
                            assert_eq!(h.min_expire(), walked(&h).0);
                        }
                    }
                    _ => {
                        let _ = h.set_expire(f.as_bytes(), at + 500);
                    }
                }
                let (min, count) = walked(&h);
                let bound = h.min_expire();
                // A lower bound, 0 exactly when no field has a TTL.
                assert!(
                    bound <= min && (bound == 0) == (count == 0),
                    "{bound} {min} {count}"
                );
                assert_eq!(h.has_field_ttl(), count != 0);
                if let HashValue::PackEx(_, t) = &h {
                    assert_eq!(t.count() as usize, count);
                }
                // Reads agree with a walk whatever the bound says.
                let live = h
                    .iter_ttl()
                    .filter(|(_, _, at)| !field_expired(*at, now))
                    .count();
                assert_eq!(h.live_len(now), live);
                assert_eq!(h.iter_live(now).count(), live);
            }
            assert_eq!(
                h.encoding(),
                if entries == 8 {
                    "hashtable"
                } else {
                    "listpackex"
                }
            );
        }
    }

    #[test]
    fn a_pack_past_the_count_word_recounts_when_a_ttl_goes() {
        let mut p = Pack::default();
        for (f, at) in [(&b"a"[..], 5u64), (b"b", 7)] {
            let mut buf = [0u8; 6];
            p.push(f);
            p.push(b"v");
            p.push(ttl_bytes(at, &mut buf));
        }
        // As if 65,535 or more fields had a TTL: the count no longer says,
        // so a TTL going is counted by a walk (exact: its minimum too).
        let mut h = HashValue::PackEx(Box::new(p), PackTtls::new(5, MANY));
        assert!(h.remove(b"a"));
        match &h {
            HashValue::PackEx(_, t) => assert_eq!((t.min(), t.count()), (7, 1)),
            _ => unreachable!(),
        }
        assert!(h.set_expire(b"b", 0));
        assert!(!h.has_field_ttl() && h.min_expire() == 0);
    }
}
