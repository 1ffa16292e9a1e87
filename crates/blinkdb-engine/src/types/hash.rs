//! Hashes: field → value, a `Pack` of pairs while small (Redis's listpack
//! encoding), a `Table` past `hash-max-listpack-entries` fields or
//! `hash-max-listpack-value` bytes in a field or value.

use super::pack::Pack;
use super::shared::Shared;
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

pub(crate) fn heap_of(m: &Member) -> usize {
    if m.spilled() {
        m.capacity()
    } else {
        0
    }
}

/// A field and its value.
pub type FieldValue<'a> = (&'a [u8], &'a [u8]);

/// 24 bytes, held in the key's table entry: the pack inline there (up to
/// `pack::INLINE` bytes of fields, a heap buffer beyond), the table behind
/// a `Shared` (shared on clone, copied on the next change). Room for a side
/// structure (field TTLs, issue 43) is a third variant or one inside the
/// table: the compact form has none.
#[derive(Clone)]
pub enum HashValue {
    Pack(Pack),
    Table(Shared<Table<Pair>>),
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
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl Eq for HashValue {}

impl HashValue {
    /// An empty hash in the compact encoding, with room for `bytes` of
    /// entries (a loader that knows its fields' sizes allocates once).
    pub fn with_pack_capacity(bytes: usize) -> Self {
        HashValue::Pack(Pack::with_capacity(bytes))
    }

    pub fn len(&self) -> usize {
        match self {
            HashValue::Pack(p) => p.entries() / 2,
            HashValue::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// OBJECT ENCODING's name.
    pub fn encoding(&self) -> &'static str {
        match self {
            HashValue::Pack(_) => "listpack",
            HashValue::Table(_) => "hashtable",
        }
    }

    pub fn bytes(&self) -> usize {
        match self {
            HashValue::Pack(p) => p.bytes(),
            HashValue::Table(t) => Shared::<Table<Pair>>::arc_chunk() + t.bytes(),
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Pack(p) => p.find_pair(field).map(|(_, v)| v),
            HashValue::Table(t) => t.get(field).map(|p| &p.value[..]),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field`; true if it is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &Limits) -> bool {
        if let HashValue::Pack(p) = self {
            let long = field.len() > limits.hash_max_listpack_value
                || value.len() > limits.hash_max_listpack_value;
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
        let HashValue::Table(t) = self else {
            unreachable!("converted above")
        };
        t.make_mut()
            .insert(Pair {
                field: Member::from_slice(field),
                value: Member::from_slice(value),
            })
            .is_none()
    }

    /// To the full encoding (past a limit; never back, as in Redis).
    fn convert(&mut self) {
        if let HashValue::Pack(p) = self {
            let mut t = Table::with_capacity(p.entries() / 2 + 1);
            for (_, f, v) in p.pairs() {
                t.insert(Pair {
                    field: Member::from_slice(f),
                    value: Member::from_slice(v),
                });
            }
            *self = HashValue::Table(Shared::new(t));
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
        }
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            HashValue::Pack(p) => Box::new(p.pairs().map(|(_, f, v)| (f, v))),
            HashValue::Table(t) => Box::new(t.iter().map(|p| (&p.field[..], &p.value[..]))),
        }
    }

    /// HSCAN: a step from `cursor`; the compact encoding answers in one step.
    pub fn scan(&self, cursor: u64, count: usize) -> (Vec<FieldValue<'_>>, u64) {
        match self {
            HashValue::Pack(_) => (self.iter().collect(), 0),
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
        }
    }

    /// A uniformly random field and its value.
    pub fn random(&self, rng: &mut impl rand::Rng) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Pack(p) => {
                let n = p.entries() / 2;
                if n == 0 {
                    return None;
                }
                p.pairs().nth(rng.gen_range(0..n)).map(|(_, f, v)| (f, v))
            }
            HashValue::Table(t) => t.random(rng).map(|p| (&p.field[..], &p.value[..])),
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
        assert_eq!(h.get(b"f1"), Some(&b"new"[..]));
        assert!(h.set(b"f4", b"v", &limits));
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        assert_eq!(h.get(b"f1"), Some(&b"new"[..]));
        let mut small = HashValue::default();
        small.set(b"f", &[b'x'; 65], &limits);
        assert_eq!(small.encoding(), "hashtable");
        assert!(h.remove(b"f0") && !h.remove(b"f0"));
        assert_eq!(h.len(), 4);
    }
}
