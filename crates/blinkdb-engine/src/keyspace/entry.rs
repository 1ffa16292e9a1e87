//! What the index stores per key.

/// A stored value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Str(Box<[u8]>),
    /// A BF.* filter; cloning shares it (COPY uses `BloomValue::duplicate`).
    Bloom(crate::bfkeys::BloomValue),
}

impl Value {
    /// The name `TYPE` replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Bloom(_) => "MBbloom--",
        }
    }

    /// Bytes of a string value, or None for other types.
    pub fn as_str(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s) => Some(s),
            Value::Bloom(_) => None,
        }
    }

    /// Approximate heap bytes held by the value (MEMORY USAGE).
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.len(),
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

    pub fn string(bytes: impl Into<Box<[u8]>>) -> Self {
        Entry::new(Value::Str(bytes.into()))
    }

    /// Expired at time `now`? `now == 0` means "never expire" (used while
    /// loading the log, where Redis also keeps keys until loading ends).
    #[inline]
    pub fn is_expired(&self, now: u64) -> bool {
        self.expire_at != 0 && now != 0 && self.expire_at <= now
    }
}
