//! Sorted sets: members ordered by (score, member). A `Pack` of (member,
//! score) pairs in that order while small (Redis's listpack encoding), then
//! a member table plus an ordered index (Redis's skiplist encoding).

use super::pack::Pack;
use super::{Limits, Member};
use std::collections::BTreeSet;

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
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .partial_cmp(&other.0)
            .unwrap_or(std::cmp::Ordering::Equal)
    }
}

/// The full encoding.
#[derive(Clone, Default)]
pub struct Sorted {
    scores: hashbrown::HashMap<Member, f64>,
    order: BTreeSet<(Score, Member)>,
    /// Heap bytes of spilled members (both copies).
    heap: usize,
}

#[derive(Clone)]
pub enum ZSetValue {
    Pack(Pack),
    Sorted(Box<Sorted>),
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

fn score_of(bytes: &[u8]) -> f64 {
    f64::from_le_bytes(bytes.try_into().expect("a packed score is 8 bytes"))
}

impl ZSetValue {
    pub fn len(&self) -> usize {
        match self {
            ZSetValue::Pack(p) => p.entries() / 2,
            ZSetValue::Sorted(s) => s.scores.len(),
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
            ZSetValue::Sorted(s) => s.scores.capacity() * 33 + s.order.len() * 48 + s.heap,
        }
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSetValue::Pack(p) => p.find_pair(member).map(|(_, s)| score_of(s)),
            ZSetValue::Sorted(s) => s.scores.get(member).copied(),
        }
    }

    /// Members in (score, member) order, with their scores.
    pub fn iter(&self) -> Box<dyn DoubleEndedIterator<Item = (&[u8], f64)> + '_> {
        match self {
            ZSetValue::Pack(p) => {
                let v: Vec<_> = p.pairs().map(|(_, m, s)| (m, score_of(s))).collect();
                Box::new(v.into_iter())
            }
            ZSetValue::Sorted(s) => Box::new(s.order.iter().map(|(sc, m)| (&m[..], sc.0))),
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
                let key = (Score(score), member);
                let at = p
                    .pairs()
                    .find(|(_, m, s)| (Score(score_of(s)), *m) > key)
                    .map_or(p.end(), |(pos, _, _)| pos);
                p.insert_at(at, &[member, &score.to_le_bytes()]);
                return old.map(|(_, s)| s);
            }
            self.convert();
        }
        let ZSetValue::Sorted(s) = self else {
            unreachable!("converted above")
        };
        let m = Member::from_slice(member);
        let old = s.scores.insert(m.clone(), score);
        match old {
            Some(o) => {
                s.order.remove(&(Score(o), m.clone()));
            }
            None => s.heap += 2 * super::hash::heap_of(&m),
        }
        s.order.insert((Score(score), m));
        old
    }

    fn convert(&mut self) {
        if let ZSetValue::Pack(p) = self {
            let mut s = Sorted::default();
            for (_, m, sc) in p.pairs() {
                let m = Member::from_slice(m);
                s.heap += 2 * super::hash::heap_of(&m);
                s.scores.insert(m.clone(), score_of(sc));
                s.order.insert((Score(score_of(sc)), m));
            }
            *self = ZSetValue::Sorted(Box::new(s));
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
            ZSetValue::Sorted(s) => {
                let old = s.scores.remove(member)?;
                let m = Member::from_slice(member);
                s.heap -= 2 * super::hash::heap_of(&m);
                s.order.remove(&(Score(old), m));
                Some(old)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_score_member_order_in_both_encodings() {
        for entries in [128, 2] {
            let limits = Limits {
                zset_max_listpack_entries: entries,
                ..Limits::default()
            };
            let mut z = ZSetValue::default();
            assert_eq!(z.insert(b"b", 1.0, &limits), None);
            z.insert(b"a", 1.0, &limits);
            z.insert(b"c", -0.5, &limits);
            assert_eq!(z.insert(b"b", 0.0, &limits), Some(1.0));
            let order: Vec<_> = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
            assert_eq!(
                order,
                [
                    (b"c".to_vec(), -0.5),
                    (b"b".to_vec(), 0.0),
                    (b"a".to_vec(), 1.0)
                ]
            );
            assert_eq!(z.remove(b"b"), Some(0.0));
            assert_eq!(z.len(), 2);
            assert_eq!(z.score(b"a"), Some(1.0));
        }
    }
}
