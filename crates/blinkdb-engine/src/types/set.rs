//! Sets: a sorted vector of integers while every member is one and there are
//! at most `set-max-intset-entries` (Redis's intset), a `Table` otherwise.

use super::shared::Shared;
use super::table::{Element, Table};
use super::{Limits, Member};
use std::borrow::Cow;

#[derive(Clone, Debug, PartialEq)]
pub struct SetMember(pub Member);

impl Element for SetMember {
    fn vacant() -> Self {
        SetMember(Member::new())
    }
    fn member(&self) -> &[u8] {
        &self.0
    }
    fn heap(&self) -> usize {
        super::hash::heap_of(&self.0)
    }
}

/// 24 bytes, held in the key's table entry: an intset inline there (up to
/// `pack::INLINE` bytes, 10 small integers), the table behind a `Shared`
/// (shared on clone, copied on the next change).
#[derive(Clone)]
pub enum SetValue {
    Ints(IntSet),
    Table(Shared<Table<SetMember>>),
}

const _: () = assert!(std::mem::size_of::<SetValue>() == 24);

/// Sorted integers of one width (2, 4 or 8 bytes, little-endian), the
/// narrowest that holds them all, as Redis's intset: 5 small integers are
/// 10 bytes, kept inline. The width is the buffer's `aux` word (0 while
/// empty: 2).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct IntSet {
    buf: super::pack::PackBuf,
}

fn width_of(v: i64) -> u8 {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

impl IntSet {
    /// From ascending integers.
    pub fn from_sorted(ints: &[i64]) -> Self {
        let width = ints.iter().map(|&v| width_of(v)).max().unwrap_or(2);
        let mut s = IntSet {
            buf: super::pack::PackBuf::with_capacity(ints.len() * width as usize),
        };
        s.buf.set_aux(width as u16);
        for &v in ints {
            s.buf.extend_from_slice(&v.to_le_bytes()[..width as usize]);
        }
        s
    }

    fn w(&self) -> usize {
        self.buf.aux().max(2) as usize
    }

    pub fn len(&self) -> usize {
        self.buf.len() / self.w()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The `i`th smallest.
    pub fn get(&self, i: usize) -> i64 {
        let w = self.w();
        let b = &self.buf[i * w..(i + 1) * w];
        match w {
            2 => i16::from_le_bytes([b[0], b[1]]) as i64,
            4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            _ => i64::from_le_bytes(b.try_into().expect("8 bytes")),
        }
    }

    pub fn binary_search(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.get(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Inserts `v` at `at` (where `binary_search` said), widening every
    /// member first if `v` needs more bytes.
    pub fn insert(&mut self, at: usize, v: i64) {
        if width_of(v) > self.w() as u8 {
            let mut all = self.to_vec();
            all.insert(at, v);
            *self = IntSet::from_sorted(&all);
            return;
        }
        let w = self.w();
        self.buf.set_aux(w as u16);
        self.buf.insert_from_slice(at * w, &v.to_le_bytes()[..w]);
    }

    pub fn remove(&mut self, at: usize) {
        let w = self.w();
        self.buf.drain(at * w..(at + 1) * w);
    }

    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    pub fn to_vec(&self) -> Vec<i64> {
        self.iter().collect()
    }

    /// Heap bytes as malloc rounds them (0 while inline).
    pub fn bytes(&self) -> usize {
        if self.buf.spilled() {
            super::malloc_chunk(self.buf.capacity())
        } else {
            0
        }
    }
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::Ints(IntSet::default())
    }
}

impl std::fmt::Debug for SetValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Set({} members)", self.len())
    }
}

impl PartialEq for SetValue {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|m| other.contains(&m))
    }
}

impl Eq for SetValue {}

/// The integer a member is, under Redis's rules for intset members (its
/// `string2ll`: no sign but `-`, no leading zero, no spaces, within i64).
pub fn as_int(m: &[u8]) -> Option<i64> {
    if m.is_empty() || m.len() > 20 {
        return None;
    }
    let digits = m.strip_prefix(b"-").unwrap_or(m);
    if digits.is_empty()
        || !digits.iter().all(u8::is_ascii_digit)
        || (digits[0] == b'0' && (digits.len() > 1 || m[0] == b'-'))
    {
        return None;
    }
    std::str::from_utf8(m).ok()?.parse().ok()
}

impl SetValue {
    /// A set for a first member: integers start compact.
    pub fn for_member(m: &[u8]) -> Self {
        Self::for_members(m, 0)
    }

    /// A set for a first member `m` of about `n` to come (SADD's count, an
    /// RDB's), with room for them when they go into a table, so that
    /// building it allocates once. An intset grows to the size it needs
    /// (its width is not known ahead).
    pub fn for_members(m: &[u8], n: usize) -> Self {
        if as_int(m).is_some() {
            SetValue::Ints(IntSet::default())
        } else {
            SetValue::Table(Shared::new(Table::with_capacity(n)))
        }
    }

    pub fn len(&self) -> usize {
        match self {
            SetValue::Ints(v) => v.len(),
            SetValue::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            SetValue::Ints(_) => "intset",
            SetValue::Table(_) => "hashtable",
        }
    }

    pub fn bytes(&self) -> usize {
        match self {
            SetValue::Ints(v) => v.bytes(),
            SetValue::Table(t) => Shared::<Table<SetMember>>::arc_chunk() + t.bytes(),
        }
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        match self {
            SetValue::Ints(v) => as_int(m).is_some_and(|i| v.binary_search(i).is_ok()),
            SetValue::Table(t) => t.contains(m),
        }
    }

    /// Adds `m`; true if it is new.
    pub fn add(&mut self, m: &[u8], limits: &Limits) -> bool {
        if let SetValue::Ints(v) = self {
            if let Some(i) = as_int(m) {
                match v.binary_search(i) {
                    Ok(_) => return false,
                    Err(at) if v.len() < limits.set_max_intset_entries => {
                        v.insert(at, i);
                        return true;
                    }
                    Err(_) => {}
                }
            }
            self.convert();
        }
        let SetValue::Table(t) = self else {
            unreachable!("converted above")
        };
        t.make_mut()
            .insert(SetMember(Member::from_slice(m)))
            .is_none()
    }

    fn convert(&mut self) {
        if let SetValue::Ints(v) = self {
            let mut t = Table::with_capacity(v.len() + 1);
            for i in v.iter() {
                t.insert(SetMember(Member::from_slice(
                    itoa::Buffer::new().format(i).as_bytes(),
                )));
            }
            *self = SetValue::Table(Shared::new(t));
        }
    }

    /// Removes `m`; true if it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self {
            SetValue::Ints(v) => match as_int(m).map(|i| v.binary_search(i)) {
                Some(Ok(at)) => {
                    v.remove(at);
                    true
                }
                _ => false,
            },
            SetValue::Table(t) => t.make_mut().remove(m).is_some(),
        }
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = Cow<'_, [u8]>> + '_> {
        match self {
            SetValue::Ints(v) => Box::new(
                v.iter()
                    .map(|i| Cow::Owned(itoa::Buffer::new().format(i).as_bytes().to_vec())),
            ),
            SetValue::Table(t) => Box::new(t.iter().map(|m| Cow::Borrowed(&m.0[..]))),
        }
    }

    /// SSCAN: a step from `cursor`; the compact encoding answers in one step.
    pub fn scan(&self, cursor: u64, count: usize) -> (Vec<Cow<'_, [u8]>>, u64) {
        match self {
            SetValue::Ints(_) => (self.iter().collect(), 0),
            SetValue::Table(t) => {
                let (items, next) = t.scan(cursor, count);
                (
                    items.into_iter().map(|m| Cow::Borrowed(&m.0[..])).collect(),
                    next,
                )
            }
        }
    }

    /// A uniformly random member.
    pub fn random(&self, rng: &mut impl rand::Rng) -> Option<Cow<'_, [u8]>> {
        match self {
            SetValue::Ints(v) if v.is_empty() => None,
            SetValue::Ints(v) => {
                let i = v.get(rng.gen_range(0..v.len()));
                Some(Cow::Owned(
                    itoa::Buffer::new().format(i).as_bytes().to_vec(),
                ))
            }
            SetValue::Table(t) => t.random(rng).map(|m| Cow::Borrowed(&m.0[..])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intset_members_follow_redis_rules() {
        for ok in [
            "0",
            "-1",
            "123",
            "9223372036854775807",
            "-9223372036854775808",
        ] {
            assert!(as_int(ok.as_bytes()).is_some(), "{ok}");
        }
        for no in [
            "",
            "-",
            "01",
            "-0",
            "+1",
            " 1",
            "1.0",
            "9223372036854775808",
            "abc",
        ] {
            assert!(as_int(no.as_bytes()).is_none(), "{no}");
        }
    }

    #[test]
    fn converts_on_a_non_integer_or_past_the_limit() {
        let limits = Limits {
            set_max_intset_entries: 3,
            ..Limits::default()
        };
        let mut s = SetValue::for_member(b"1");
        for m in ["3", "1", "2"] {
            assert!(s.add(m.as_bytes(), &limits));
        }
        assert!(!s.add(b"2", &limits));
        assert_eq!(s.encoding(), "intset");
        assert_eq!(
            s.iter().map(|m| m.into_owned()).collect::<Vec<_>>(),
            [b"1".to_vec(), b"2".to_vec(), b"3".to_vec()]
        );
        assert!(s.add(b"4", &limits));
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"1") && s.contains(b"4") && !s.contains(b"01"));
        let mut t = SetValue::for_member(b"x");
        t.add(b"x", &limits);
        assert_eq!(t.encoding(), "hashtable");
    }
}
