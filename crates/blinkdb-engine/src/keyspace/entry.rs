//! What the index stores per key.

use crate::aof::BlobRef;

/// A stored value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string held in memory.
    Str(super::InlineBytes),
    /// A string of at least `blob-threshold` bytes, kept only in the log:
    /// the index holds where it lies, GET reads it back with pread. Boxed
    /// so that every entry is not as large as a BlobRef (32 bytes).
    Blob(Box<BlobRef>),
    /// A BF.* filter; cloning shares it (COPY uses `BloomValue::duplicate`).
    Bloom(crate::bfkeys::BloomValue),
}

impl Value {
    /// The name `TYPE` replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) | Value::Blob(_) => "string",
            Value::Bloom(_) => "MBbloom--",
        }
    }

    /// Bytes of an in-memory string, or None (a blob or another type).
    pub fn as_str(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s) => Some(s),
            Value::Blob(_) | Value::Bloom(_) => None,
        }
    }

    /// Is this a string (in memory or in the log)?
    pub fn is_string(&self) -> bool {
        matches!(self, Value::Str(_) | Value::Blob(_))
    }

    /// Length of a string value without reading a blob.
    pub fn str_len(&self) -> Option<usize> {
        match self {
            Value::Str(s) => Some(s.len()),
            Value::Blob(b) => Some(b.len as usize),
            Value::Bloom(_) => None,
        }
    }

    /// Approximate heap bytes held by the value (MEMORY USAGE).
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.len(),
            Value::Blob(_) => std::mem::size_of::<BlobRef>() + std::mem::size_of::<usize>(),
            Value::Bloom(b) => b.size_bytes(),
        }
    }
}

/// The oldest log segment an entry's value (or TTL) was built from, and whether a
/// later record touched it: cache mode evicts an entry together with that segment
/// and logs a DEL for it if touched (see docs/cache-mode.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin(u32);

impl Origin {
    /// Not labeled yet: `Tx::insert` labels it.
    pub const UNSET: Origin = Origin(u32::MAX);
    const TOUCHED: u32 = 1 << 31;
    /// Labels saturate here; a saturated label is never below a cutoff (kept, not
    /// evicted early), which 2^31 segments make theoretical.
    const MAX_SEG: u64 = (Self::TOUCHED - 2) as u64;

    /// Segment `seg` (an incr seq; 0 for the base).
    pub fn new(seg: u64, touched: bool) -> Self {
        let touched = if touched { Self::TOUCHED } else { 0 };
        Origin(seg.min(Self::MAX_SEG) as u32 | touched)
    }

    pub fn is_set(self) -> bool {
        self != Self::UNSET
    }

    pub fn seg(self) -> u64 {
        (self.0 & !Self::TOUCHED) as u64
    }

    /// Did a record after the one that created the value mention the key?
    pub fn touched(self) -> bool {
        self.0 & Self::TOUCHED != 0
    }

    pub fn mark_touched(&mut self) {
        if self.is_set() {
            self.0 |= Self::TOUCHED;
        }
    }
}

/// A value plus its absolute expiry time in Unix milliseconds (0: none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: Value,
    pub expire_at: u64,
    pub origin: Origin,
}

/// Bytes a hash-table slot takes besides the key's and value's heap parts
/// (key, entry, one control byte, rounded up for the table's free slots).
const SLOT_BYTES: usize = 96;

impl Entry {
    pub fn new(value: Value) -> Self {
        Entry {
            value,
            expire_at: 0,
            origin: Origin::UNSET,
        }
    }

    /// Memory this entry costs under `key`, for cache mode's maxmemory: a
    /// count kept by the shards, since RSS does not shrink reliably after
    /// frees. Filters count only their descriptor (their bits are in files).
    pub fn accounted_bytes(&self, key: &[u8]) -> usize {
        let heap = |n: usize| if n > 16 { n } else { 0 };
        let value = match &self.value {
            Value::Str(s) => heap(s.len()),
            Value::Blob(_) => std::mem::size_of::<BlobRef>(),
            Value::Bloom(_) => 64,
        };
        let ttl = if self.expire_at != 0 {
            48 + heap(key.len())
        } else {
            0
        };
        SLOT_BYTES + heap(key.len()) + value + ttl
    }

    pub fn string(bytes: &[u8]) -> Self {
        Entry::new(Value::Str(bytes.into()))
    }

    /// An in-memory string that keeps an expiry (0: none), for commands
    /// that rewrite a value but not its TTL (APPEND, SETRANGE, INCR...).
    pub fn string_expiring(bytes: impl Into<super::InlineBytes>, expire_at: u64) -> Self {
        Entry {
            value: Value::Str(bytes.into()),
            expire_at,
            origin: Origin::UNSET,
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
    #[test]
    fn entries_stay_small() {
        // Every key pays for an Entry in its shard's table; the cache-mode
        // origin label took it from 40 to 48 bytes (docs/cache-mode.md).
        assert!(std::mem::size_of::<super::Entry>() <= 48);
    }
}
