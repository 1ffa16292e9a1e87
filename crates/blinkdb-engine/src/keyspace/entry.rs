//! What the index stores per key.

use super::access::Clock;
use crate::aof::BlobRef;
use crate::types::{HashValue, ListValue, SetValue, StreamValue, ZSetValue};
use std::sync::Arc;

/// A stored value, carrying its entry's `Meta` (the cache-mode `Origin`
/// label and the access clock) as each variant's second field: `Meta` is 7
/// bytes of alignment 1, and rustc puts it in the padding after the enum's
/// 1-byte tag, which keeps `Entry` at 40 bytes (asserted below). Build values
/// with `Value::str`/`blob`/`bloom` (unlabeled); `Entry` owns the label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string held in memory.
    Str(super::InlineBytes, Meta),
    /// A string of at least `blob-threshold` bytes, kept only in the log:
    /// the index holds where it lies, GET reads it back with pread. Boxed
    /// so that every entry is not as large as a BlobRef (32 bytes).
    Blob(Box<BlobRef>, Meta),
    /// A BF.* filter; cloning shares it (COPY uses `BloomValue::duplicate`).
    Bloom(crate::bfkeys::BloomValue, Meta),
    /// A cuckoo filter, count-min sketch, top-k or t-digest (`crate::sketch`):
    /// shared on clone and copied on its next change, as a collection.
    Sketch(Arc<crate::sketch::Sketch>, Meta),
    /// Collections are shared on clone and copied on their next change
    /// (`Arc::make_mut`): COPY, and the AOF rewrite's snapshot of a key, cost
    /// nothing until the key changes again.
    Hash(Arc<HashValue>, Meta),
    Set(Arc<SetValue>, Meta),
    ZSet(Arc<ZSetValue>, Meta),
    List(Arc<ListValue>, Meta),
    Stream(Arc<StreamValue>, Meta),
}

impl Value {
    /// Whether clients block on keys of this type (BLPOP, BZPOPMIN...): its
    /// creation may serve them (ready.rs).
    pub fn wakes_blocked(&self) -> bool {
        matches!(self, Value::List(..) | Value::ZSet(..) | Value::Stream(..))
    }

    /// An unlabeled in-memory string.
    pub fn str(bytes: impl Into<super::InlineBytes>) -> Self {
        Value::Str(bytes.into(), Meta::unset())
    }

    /// An unlabeled reference to a string kept in the log.
    pub fn blob(at: BlobRef) -> Self {
        Value::Blob(Box::new(at), Meta::unset())
    }

    /// An unlabeled filter.
    pub fn bloom(filter: crate::bfkeys::BloomValue) -> Self {
        Value::Bloom(filter, Meta::unset())
    }

    /// An unlabeled probabilistic structure.
    pub fn sketch(s: crate::sketch::Sketch) -> Self {
        Value::Sketch(Arc::new(s), Meta::unset())
    }

    /// The structure of a CF/CMS/TOPK/TDIGEST key, or None.
    pub fn as_sketch(&self) -> Option<&Arc<crate::sketch::Sketch>> {
        match self {
            Value::Sketch(s, _) => Some(s),
            _ => None,
        }
    }

    /// The structure, to change in place (copied first if shared).
    pub fn as_sketch_mut(&mut self) -> Option<&mut crate::sketch::Sketch> {
        match self {
            Value::Sketch(s, _) => Some(Arc::make_mut(s)),
            _ => None,
        }
    }

    pub fn hash(h: HashValue) -> Self {
        Value::Hash(Arc::new(h), Meta::unset())
    }

    pub fn set(s: SetValue) -> Self {
        Value::Set(Arc::new(s), Meta::unset())
    }

    pub fn zset(z: ZSetValue) -> Self {
        Value::ZSet(Arc::new(z), Meta::unset())
    }

    pub fn list(l: ListValue) -> Self {
        Value::List(Arc::new(l), Meta::unset())
    }

    pub fn stream(s: StreamValue) -> Self {
        Value::Stream(Arc::new(s), Meta::unset())
    }

    /// The name `TYPE` replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(..) | Value::Blob(..) => "string",
            Value::Bloom(..) => "MBbloom--",
            Value::Sketch(s, _) => s.type_name(),
            Value::Hash(..) => "hash",
            Value::Set(..) => "set",
            Value::ZSet(..) => "zset",
            Value::List(..) => "list",
            Value::Stream(..) => "stream",
        }
    }

    /// The name `OBJECT ENCODING` replies with, for a collection.
    pub fn collection_encoding(&self) -> Option<&'static str> {
        match self {
            Value::Hash(h, _) => Some(h.encoding()),
            Value::Set(s, _) => Some(s.encoding()),
            Value::ZSet(z, _) => Some(z.encoding()),
            Value::List(l, _) => Some(l.encoding()),
            Value::Stream(s, _) => Some(s.encoding()),
            Value::Str(..) | Value::Blob(..) | Value::Bloom(..) | Value::Sketch(..) => None,
        }
    }

    /// Members (fields) of a collection; None for other types.
    pub fn collection_len(&self) -> Option<usize> {
        match self {
            Value::Hash(h, _) => Some(h.len()),
            Value::Set(s, _) => Some(s.len()),
            Value::ZSet(z, _) => Some(z.len()),
            Value::List(l, _) => Some(l.len()),
            Value::Stream(s, _) => Some(s.len() as usize),
            Value::Str(..) | Value::Blob(..) | Value::Bloom(..) | Value::Sketch(..) => None,
        }
    }

    /// Bytes of an in-memory string, or None (a blob or another type).
    pub fn as_str(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s, _) => Some(s),
            _ => None,
        }
    }

    /// The filter of a BF.* key, or None.
    pub fn as_bloom(&self) -> Option<&crate::bfkeys::BloomValue> {
        match self {
            Value::Bloom(b, _) => Some(b),
            _ => None,
        }
    }

    /// Is this a string (in memory or in the log)?
    pub fn is_string(&self) -> bool {
        matches!(self, Value::Str(..) | Value::Blob(..))
    }

    /// Length of a string value without reading a blob.
    pub fn str_len(&self) -> Option<usize> {
        match self {
            Value::Str(s, _) => Some(s.len()),
            Value::Blob(b, _) => Some(b.len as usize),
            _ => None,
        }
    }

    /// Approximate heap bytes held by the value (MEMORY USAGE): a
    /// collection counts its `Arc` allocation too.
    pub fn heap_size(&self) -> usize {
        use crate::types::arc_chunk;
        match self {
            Value::Str(s, _) => s.len(),
            Value::Blob(..) => std::mem::size_of::<BlobRef>() + std::mem::size_of::<usize>(),
            Value::Bloom(b, _) => b.size_bytes(),
            Value::Sketch(s, _) => arc_chunk::<crate::sketch::Sketch>() + s.heap_bytes(),
            Value::Hash(h, _) => arc_chunk::<HashValue>() + h.bytes(),
            Value::Set(s, _) => arc_chunk::<SetValue>() + s.bytes(),
            Value::ZSet(z, _) => arc_chunk::<ZSetValue>() + z.bytes(),
            Value::List(l, _) => arc_chunk::<ListValue>() + l.bytes(),
            Value::Stream(s, _) => arc_chunk::<StreamValue>() + s.bytes(),
        }
    }

    /// The label this value carries (`Origin::UNSET` until stored by `Tx`).
    pub fn origin(&self) -> Origin {
        self.meta().origin
    }

    /// The access clock (access.rs) this value carries.
    #[inline]
    pub fn clock(&self) -> &Clock {
        &self.meta().clock
    }

    fn meta(&self) -> &Meta {
        match self {
            Value::Str(_, m)
            | Value::Blob(_, m)
            | Value::Bloom(_, m)
            | Value::Sketch(_, m)
            | Value::Hash(_, m)
            | Value::Set(_, m)
            | Value::ZSet(_, m)
            | Value::List(_, m)
            | Value::Stream(_, m) => m,
        }
    }

    fn meta_mut(&mut self) -> &mut Meta {
        match self {
            Value::Str(_, m)
            | Value::Blob(_, m)
            | Value::Bloom(_, m)
            | Value::Sketch(_, m)
            | Value::Hash(_, m)
            | Value::Set(_, m)
            | Value::ZSet(_, m)
            | Value::List(_, m)
            | Value::Stream(_, m) => m,
        }
    }

    fn origin_mut(&mut self) -> &mut Origin {
        &mut self.meta_mut().origin
    }
}

/// What an entry keeps about its value besides the value: the cache-mode
/// label and the access clock. Both are byte arrays (alignment 1), so the
/// pair fits in the 7 bytes after `Value`'s tag.
pub struct Meta {
    pub origin: Origin,
    pub clock: Clock,
}

impl Meta {
    /// Unlabeled, clock 0 (`Tx::insert` labels and stamps it).
    pub const fn unset() -> Meta {
        Meta::new(Origin::UNSET)
    }

    pub const fn new(origin: Origin) -> Self {
        Meta {
            origin,
            clock: Clock::new(0),
        }
    }
}

impl Clone for Meta {
    fn clone(&self) -> Self {
        Meta {
            origin: self.origin,
            clock: self.clock.clone(),
        }
    }
}

/// The access clock is not part of what a value is: two values are equal
/// whenever they were last read.
impl PartialEq for Meta {
    fn eq(&self, other: &Self) -> bool {
        self.origin == other.origin
    }
}

impl Eq for Meta {}

impl std::fmt::Debug for Meta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}/{:?}", self.origin, self.clock)
    }
}

/// The oldest log segment an entry's value (or TTL) was built from, and whether a
/// later record touched it: cache mode evicts an entry together with that segment
/// and logs a DEL for it if touched (see docs/cache-mode.md).
/// Stored as bytes (alignment 1) so that it packs with the clock in `Meta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin([u8; 4]);

impl Origin {
    /// Not labeled yet: `Tx::insert` labels it.
    pub const UNSET: Origin = Origin(u32::MAX.to_ne_bytes());
    const TOUCHED: u32 = 1 << 31;
    /// Labels saturate here; a saturated label is never below a cutoff (kept, not
    /// evicted early), which 2^31 segments make theoretical.
    const MAX_SEG: u64 = (Self::TOUCHED - 2) as u64;

    #[inline]
    fn bits(self) -> u32 {
        u32::from_ne_bytes(self.0)
    }

    /// Segment `seg` (an incr seq; 0 for the base).
    pub fn new(seg: u64, touched: bool) -> Self {
        let touched = if touched { Self::TOUCHED } else { 0 };
        Origin((seg.min(Self::MAX_SEG) as u32 | touched).to_ne_bytes())
    }

    pub fn is_set(self) -> bool {
        self != Self::UNSET
    }

    pub fn seg(self) -> u64 {
        (self.bits() & !Self::TOUCHED) as u64
    }

    /// Did a record after the one that created the value mention the key?
    pub fn touched(self) -> bool {
        self.bits() & Self::TOUCHED != 0
    }

    pub fn mark_touched(&mut self) {
        if self.is_set() {
            self.0 = (self.bits() | Self::TOUCHED).to_ne_bytes();
        }
    }
}

/// A value plus its absolute expiry time in Unix milliseconds (0: none).
/// The entry's `Origin` lives inside the value; `value` is private so that
/// replacing it (`set_value`) cannot drop the label by accident.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    value: Value,
    pub expire_at: u64,
}

// A table pair is a 24-byte key plus this: 64 bytes, one cache line.
const _: () = assert!(std::mem::size_of::<Entry>() == 40);

/// Bytes the key table takes per key besides the key's and value's heap
/// parts, for cache mode's count: the (key, entry) pair in its chunk, and a
/// 4-byte position with its control byte over a load of 2/3 (between 7/16
/// and 7/8 as the index doubles; keyspace/dense.rs). MEMORY USAGE takes the
/// shard's real share instead (`usage_bytes`).
const SLOT_BYTES: usize =
    std::mem::size_of::<super::InlineBytes>() + std::mem::size_of::<Entry>() + (4 + 1) * 3 / 2;

/// Bytes a key's entry in its shard's expiry index takes: a (time, key)
/// pair of 32 bytes in a B-tree's nodes (66 measured per key at 300,000
/// keys: used_memory with `SET ... EX` over without, docs/design.md).
const EXPIRY_BYTES: usize = 64;

impl Entry {
    /// An unlabeled entry without expiry, whatever label `value` carried
    /// (`Tx::insert` labels it): a labeled entry is only ever a stored one,
    /// moved or cloned whole (RENAME, COPY).
    pub fn new(mut value: Value) -> Self {
        *value.origin_mut() = Origin::UNSET;
        Entry {
            value,
            expire_at: 0,
        }
    }

    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Replaces the value, keeping this entry's label and access clock (the
    /// new value's own are ignored): the key still depends on the same
    /// records, and was last used when it was.
    pub fn set_value(&mut self, mut value: Value) {
        *value.meta_mut() = self.value.meta_mut().clone();
        self.value = value;
    }

    /// The access clock (keyspace/access.rs).
    #[inline]
    pub fn clock(&self) -> &Clock {
        self.value.clock()
    }

    /// The value, to change in place (a collection's members); replacing
    /// it goes through `set_value`, which keeps the label.
    pub fn value_mut(&mut self) -> &mut Value {
        &mut self.value
    }

    /// The bytes of an in-memory string, to change in place; None for
    /// another value. The shard re-counts the entry's memory around a change
    /// (`Shard::with_str_mut`), so this stays inside the keyspace.
    pub(crate) fn str_mut(&mut self) -> Option<&mut super::InlineBytes> {
        match &mut self.value {
            Value::Str(s, _) => Some(s),
            _ => None,
        }
    }

    pub fn into_value(self) -> Value {
        self.value
    }

    pub fn origin(&self) -> Origin {
        self.value.origin()
    }

    pub fn set_origin(&mut self, origin: Origin) {
        *self.value.origin_mut() = origin;
    }

    pub fn origin_mut(&mut self) -> &mut Origin {
        self.value.origin_mut()
    }

    /// Memory this entry costs under `key`, for cache mode's maxmemory: a
    /// count kept by the shards, since RSS does not shrink reliably after
    /// frees. Filters count only their descriptor (their bits are in files).
    pub fn accounted_bytes(&self, key: &[u8]) -> usize {
        let heap = |n: usize| {
            if n > 16 {
                crate::types::malloc_chunk(n)
            } else {
                0
            }
        };
        let value = match &self.value {
            Value::Str(s, _) => heap(s.len()),
            Value::Blob(..) => std::mem::size_of::<BlobRef>(),
            Value::Bloom(..) => 64,
            Value::Hash(..)
            | Value::Set(..)
            | Value::ZSet(..)
            | Value::List(..)
            | Value::Stream(..)
            | Value::Sketch(..) => self.value.heap_size(),
        };
        let ttl = if self.expire_at != 0 {
            EXPIRY_BYTES + heap(key.len())
        } else {
            0
        };
        SLOT_BYTES + heap(key.len()) + value + ttl
    }

    /// MEMORY USAGE: what the key costs in RSS: `slot`, its shard's table
    /// bytes per key (`Shard::slot_share`), its heap parts and its share of
    /// the expiry index, with a filter's bits.
    pub fn usage_bytes(&self, key: &[u8], slot: usize) -> usize {
        let counted = self.accounted_bytes(key) - SLOT_BYTES + slot;
        match &self.value {
            Value::Bloom(b, _) => counted - 64 + b.size_bytes(),
            _ => counted,
        }
    }

    pub fn string(bytes: &[u8]) -> Self {
        Entry::new(Value::str(bytes))
    }

    /// An in-memory string that keeps an expiry (0: none), for commands
    /// that rewrite a value but not its TTL (APPEND, SETRANGE, INCR...).
    pub fn string_expiring(bytes: impl Into<super::InlineBytes>, expire_at: u64) -> Self {
        Entry {
            value: Value::str(bytes),
            expire_at,
        }
    }

    /// Expired at time `now`? `now == 0` means "never expire" (used while
    /// loading the log, where Redis also keeps keys until loading ends).
    #[inline]
    pub fn is_expired(&self, now: u64) -> bool {
        self.expire_at != 0 && now != 0 && self.expire_at <= now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_stay_small() {
        // Every key pays for an Entry in its shard's table: 40 bytes makes a
        // slot (24-byte key + entry) one cache line. The origin label fits in
        // the padding after Value's tag (docs/cache-mode.md).
        assert_eq!(std::mem::size_of::<Value>(), 32);
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }

    #[test]
    fn set_value_keeps_the_label() {
        let mut e = Entry::string(b"a");
        assert!(!e.origin().is_set());
        e.set_origin(Origin::new(7, false));
        let at = BlobRef {
            file: crate::aof::FileId::incr(7),
            offset: 10,
            len: 100,
            checksum: 1,
        };
        e.set_value(Value::blob(at));
        assert_eq!(e.origin(), Origin::new(7, false));
        e.set_value(Value::Str(
            (&b"b"[..]).into(),
            Meta::new(Origin::new(9, true)),
        ));
        assert_eq!(e.origin(), Origin::new(7, false));
        assert_eq!(e.value().as_str(), Some(&b"b"[..]));
    }

    #[test]
    fn new_entries_are_unlabeled() {
        let labeled = Value::Str((&b"v"[..]).into(), Meta::new(Origin::new(4, true)));
        let e = Entry::new(labeled);
        assert!(!e.origin().is_set());
        assert_eq!(e.value().as_str(), Some(&b"v"[..]));
    }

    #[test]
    fn origin_mut_changes_the_label_in_place() {
        let mut e = Entry::string_expiring(&b"a"[..], 5);
        e.set_origin(Origin::new(3, false));
        e.origin_mut().mark_touched();
        assert_eq!((e.origin().seg(), e.origin().touched()), (3, true));
        assert_eq!(e.value().origin(), e.origin());
        assert_eq!(e.expire_at, 5);
    }
}
