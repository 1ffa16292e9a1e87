//! Positions in the log: which file, where in it, and where in the whole stream.

use std::fmt;

/// Bits of an [`Lsn`] that hold the byte offset inside one incr file.
pub const LSN_OFFSET_BITS: u32 = 40;
const LSN_OFFSET_MASK: u64 = (1 << LSN_OFFSET_BITS) - 1;

/// Monotonic position in the whole log stream: `incr_seq << 40 | byte offset in that file`.
/// Stable across restarts and rewrites because incr sequence numbers only grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    pub fn new(incr_seq: u64, offset: u64) -> Self {
        debug_assert!(offset <= LSN_OFFSET_MASK);
        Lsn((incr_seq << LSN_OFFSET_BITS) | offset)
    }
    pub fn incr_seq(self) -> u64 {
        self.0 >> LSN_OFFSET_BITS
    }
    pub fn offset(self) -> u64 {
        self.0 & LSN_OFFSET_MASK
    }
}

/// Identity of one base or incr file (its manifest sequence number and kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u64);

const BASE_FLAG: u64 = 1 << 63;

impl FileId {
    pub fn incr(seq: u64) -> Self {
        FileId(seq)
    }
    pub fn base(seq: u64) -> Self {
        FileId(seq | BASE_FLAG)
    }
    pub fn is_base(self) -> bool {
        self.0 & BASE_FLAG != 0
    }
    pub fn seq(self) -> u64 {
        self.0 & !BASE_FLAG
    }
}

impl fmt::Display for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_base() { "base" } else { "incr" };
        write!(f, "{kind}#{}", self.seq())
    }
}

/// Where a large value's bytes lie: the bulk payload inside a record of a base/incr file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobRef {
    pub file: FileId,
    /// Offset of the first payload byte (after `$<len>\r\n`).
    pub offset: u64,
    pub len: u64,
    /// xxh3-64 of the payload.
    pub checksum: u64,
}
