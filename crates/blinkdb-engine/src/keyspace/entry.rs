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

/// A value plus its absolute expiry time in Unix milliseconds (0: none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: Value,
    pub expire_at: u64,
}

impl Entry {
    pub fn new(value: Value) -> Self {
        Entry {
            value,
            expire_at: 0,
        }
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
        // Every key pays for an Entry in its shard's table.
        assert!(std::mem::size_of::<super::Entry>() <= 40);
    }
}
