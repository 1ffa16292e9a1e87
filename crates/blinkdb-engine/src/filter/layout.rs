//! Byte layout of a Bloom filter file (all integers little-endian).
//!
//! ```text
//! offset  size  field
//! 0       64    header
//!   0       8     magic            b"BLINKBF\0"
//!   8       4     format version   2 (1: before layouts; loads as blocked)
//!   12      4     hashes per item  k (1..=MAX_HASHES)
//!   16      8     line count       L (>= 1)
//!   24      4     probe scheme     1 = xxh3-128, fast-range line, 32-bit double hashing in-line
//!   28      4     layout           0 = blocked; else flat: RedisBloom's bit array of this
//!                                  many bits over the lines' bit bytes (L = ceil(bits/480))
//!   32      8     checkpoint file  opaque log file number supplied by the caller
//!   40      8     checkpoint off   opaque log byte offset supplied by the caller
//!   48      8     item count       items newly added, as of the checkpoint
//!   56      4     reserved         0
//!   60      4     header checksum  low 32 bits of xxh3-64(bytes 0..60)
//! 64      64*L  lines
//!   +0      60    480 filter bits  bit b lives in u32 word b/32 (LE), bit b%32
//!   +60     4     line checksum    low 32 bits of xxh3-64(the 60 bit bytes)
//! ```

use xxhash_rust::xxh3::xxh3_64;

/// Size of the header region and of every line.
pub const LINE_BYTES: usize = 64;
/// Bytes of filter bits in one line.
pub const LINE_BIT_BYTES: usize = 60;
/// Filter bits in one line.
pub const LINE_BITS: u32 = (LINE_BIT_BYTES * 8) as u32;
/// u32 words of bits in one line; word `BIT_WORDS` is the checksum.
pub const BIT_WORDS: usize = LINE_BIT_BYTES / 4;
/// u64 words in one line: bits 0..448 in words 0..7, bits 448..480 in the low half of
/// word 7, the checksum in its high half (little-endian).
pub const LINE_WORDS64: usize = LINE_BYTES / 8;
/// Offset of the first line.
pub const HEADER_BYTES: u64 = LINE_BYTES as u64;

pub const MAGIC: [u8; 8] = *b"BLINKBF\0";
pub const FORMAT_VERSION: u32 = 2;
/// Files written before the layout field: always blocked.
pub const FORMAT_VERSION_BLOCKED_ONLY: u32 = 1;
pub const PROBE_SCHEME: u32 = 1;

/// Checksum of 60 bytes of line bits (or header fields).
pub fn checksum60(bytes: &[u8]) -> u32 {
    debug_assert_eq!(bytes.len(), LINE_BIT_BYTES);
    xxh3_64(bytes) as u32
}

/// Decoded header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub hashes: u32,
    pub lines: u64,
    /// 0 = blocked, else the flat bit count.
    pub flat_bits: u32,
    pub checkpoint_file: u64,
    pub checkpoint_offset: u64,
    pub item_count: u64,
}

impl Header {
    pub fn encode(&self) -> [u8; LINE_BYTES] {
        let mut out = [0u8; LINE_BYTES];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&self.hashes.to_le_bytes());
        out[16..24].copy_from_slice(&self.lines.to_le_bytes());
        out[24..28].copy_from_slice(&PROBE_SCHEME.to_le_bytes());
        out[28..32].copy_from_slice(&self.flat_bits.to_le_bytes());
        out[32..40].copy_from_slice(&self.checkpoint_file.to_le_bytes());
        out[40..48].copy_from_slice(&self.checkpoint_offset.to_le_bytes());
        out[48..56].copy_from_slice(&self.item_count.to_le_bytes());
        let sum = checksum60(&out[0..LINE_BIT_BYTES]);
        out[60..64].copy_from_slice(&sum.to_le_bytes());
        out
    }

    /// `None` when magic, version, probe scheme or checksum do not match.
    pub fn decode(raw: &[u8]) -> Option<Header> {
        let raw: &[u8; LINE_BYTES] = raw.get(0..LINE_BYTES)?.try_into().ok()?;
        let u32_at = |o: usize| u32::from_le_bytes(raw[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().unwrap());
        let version = u32_at(8);
        if raw[0..8] != MAGIC
            || (version != FORMAT_VERSION && version != FORMAT_VERSION_BLOCKED_ONLY)
            || u32_at(24) != PROBE_SCHEME
            || u32_at(60) != checksum60(&raw[0..LINE_BIT_BYTES])
        {
            return None;
        }
        Some(Header {
            hashes: u32_at(12),
            lines: u64_at(16),
            flat_bits: if version == FORMAT_VERSION {
                u32_at(28)
            } else {
                0
            },
            checkpoint_file: u64_at(32),
            checkpoint_offset: u64_at(40),
            item_count: u64_at(48),
        })
    }
}
