//! BlinkDB's own Bloom filters in an RDB file, exactly, beside the
//! RedisBloom value that redis-server reads.
//!
//! ```text
//! AUX field "blinkdb-bf", written just before the key it belongs to:
//! offset  size  field (integers little-endian)
//! 0       1     version       1
//! 1       4     header length h
//! 5       h     BF.SCANDUMP header chunk (b"BLINKBD\0", bloom/meta.rs)
//! then each BF.SCANDUMP data chunk, in order, to the end of the field:
//!         8     cursor        the cursor SCANDUMP returns with it (i64)
//!         4     length n
//!         n     the chunk     whole 64-byte lines, checksums included
//! ```
//! The chunks are exactly those the header's sub-filters cut into
//! (`bloom::dump_chunk_plan`): the reader refuses any other count or length.
//!
//! Why: a filter made by BlinkDB hashes with xxh3 into lines, so its RedisBloom
//! value is a translation (its items' RedisBloom bits from its item log, or
//! saturated without them; docs/rdb-format.md), never BlinkDB's own bits.
//! redis-server ignores AUX fields it does not know (the RDB contract), so it
//! loads the RedisBloom value; BlinkDB (a restart from dump.rdb, a BlinkDB
//! replica's full sync) rebuilds the filter bit for bit from this field instead. Kernel
//! filters cannot be dumped (their maps are not readable) and RedisBloom's
//! own filters are exact already: neither gets the field.

use super::RdbError;
use crate::bfkeys::BloomValue;
use crate::bloom::dump_chunk_plan;

/// The AUX field's name.
pub const AUX_NAME: &[u8] = b"blinkdb-bf";
const VERSION: u8 = 1;

/// A filter's dump read back: the header chunk and the data chunks with
/// their cursors.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeBloom {
    pub header: Vec<u8>,
    pub chunks: Vec<(i64, Vec<u8>)>,
}

/// The field about to be written for a filter: its header, taken once, fixes
/// the sub-filters and so the field's length (adds meanwhile only set bits;
/// a sub-filter added meanwhile is left out, as after the header).
pub struct Field {
    header: Vec<u8>,
    len: u64,
}

impl Field {
    /// `None` when the filter has no dump (kernel, imported from RedisBloom,
    /// deleted).
    pub fn of(filter: &BloomValue) -> Option<Field> {
        if filter.is_kernel() || filter.is_imported() {
            return None;
        }
        let (_, header) = filter.scandump(0).ok()?;
        let data: u64 = dump_chunk_plan(&header)?.map(|n| 12 + n).sum();
        let len = 5 + header.len() as u64 + data;
        Some(Field { header, len })
    }

    /// The field's length in bytes.
    pub fn byte_len(&self) -> u64 {
        self.len
    }

    /// Emits the field's bytes in pieces (a chunk at a time: a large filter is
    /// never copied whole).
    pub fn write(
        &self,
        filter: &BloomValue,
        mut emit: impl FnMut(&[u8]) -> Result<(), RdbError>,
    ) -> Result<(), RdbError> {
        let mut head = vec![VERSION];
        head.extend_from_slice(&(self.header.len() as u32).to_le_bytes());
        head.extend_from_slice(&self.header);
        emit(&head)?;
        let plan = dump_chunk_plan(&self.header).ok_or(RdbError::Corrupt("filter dump header"))?;
        let mut cursor = 1i64;
        for want in plan {
            let (next, data) = filter
                .scandump(cursor)
                .map_err(|e| RdbError::Io(format!("Bloom filter dump: {e}")))?;
            if data.len() as u64 != want || next == 0 {
                return Err(RdbError::Io(
                    "Bloom filter dump: the filter changed shape while saved".into(),
                ));
            }
            let mut piece = Vec::with_capacity(12);
            piece.extend_from_slice(&next.to_le_bytes());
            piece.extend_from_slice(&(data.len() as u32).to_le_bytes());
            emit(&piece)?;
            emit(&data)?;
            cursor = next;
        }
        Ok(())
    }
}

/// Splits a field's value. `None` when it is malformed, or when its chunks
/// are not exactly those its header declares (so a damaged field never makes
/// the loader size files from a header alone).
pub fn decode(raw: &[u8]) -> Option<NativeBloom> {
    let (&version, rest) = raw.split_first()?;
    if version != VERSION {
        return None;
    }
    let h = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let header = rest.get(4..4usize.checked_add(h)?)?.to_vec();
    let mut at = 4 + h;
    let mut chunks = Vec::new();
    for want in dump_chunk_plan(&header)? {
        let cursor = i64::from_le_bytes(rest.get(at..at + 8)?.try_into().ok()?);
        let n = u32::from_le_bytes(rest.get(at + 8..at + 12)?.try_into().ok()?) as usize;
        if n as u64 != want {
            return None;
        }
        chunks.push((cursor, rest.get(at + 12..at + 12 + n)?.to_vec()));
        at += 12 + n;
    }
    (at == rest.len()).then_some(NativeBloom { header, chunks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_fields_are_refused() {
        assert_eq!(decode(b""), None);
        assert_eq!(decode(&[2, 0, 0, 0, 0]), None);
        // A header length past the end.
        assert_eq!(decode(&[1, 255, 0, 0, 0, 1, 2]), None);
        assert_eq!(decode(&[1, 255, 255, 255, 255, 1, 2]), None);
        // Not a dump header.
        assert_eq!(decode(&[1, 2, 0, 0, 0, 1, 2]), None);
    }
}
