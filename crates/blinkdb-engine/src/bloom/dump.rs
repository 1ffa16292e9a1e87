//! BF.SCANDUMP / BF.LOADCHUNK with RedisBloom's cursor conventions: cursor 0 yields
//! the header chunk and cursor 1; each data chunk comes with the cursor of its end
//! (1 + byte offset after it, over the concatenated lines of all sub-filters); past the
//! end the reply is cursor 0 with empty data. LOADCHUNK gets (that cursor, that chunk)
//! and so places the chunk at `cursor - 1 - len`.
//! Header chunk layout: see `meta.rs` (magic b"BLINKBD\0", items filled in).
//! Data chunks are whole 64-byte lines, checksums included, never spanning two
//! sub-filters, so every line is validated by its own checksum before any write.

use super::chain::ScalableBloom;
use super::config::BloomLimits;
use super::error::BloomError;
use super::meta::{ChainMeta, DUMP_MAGIC};
use crate::filter::layout::LINE_BYTES;
use crate::filter::BloomFile;
use std::path::Path;

/// Lines per data chunk: 1 MiB, well under the 512 MB bulk-string limit.
pub const CHUNK_LINES: u64 = 16 * 1024;

/// Total items recorded in a SCANDUMP header chunk, if it decodes.
pub fn dump_header_items(data: &[u8]) -> Option<u64> {
    let meta = ChainMeta::decode(data, DUMP_MAGIC)?;
    Some(meta.links.iter().map(|l| l.items).sum())
}

/// The byte length of each data chunk a full SCANDUMP after this header
/// chunk yields, in order (as `scandump` cuts them: per sub-filter, at most
/// `CHUNK_LINES` lines each). Lazy: a header may declare very many.
pub fn dump_chunk_plan(header: &[u8]) -> Option<impl Iterator<Item = u64>> {
    let meta = ChainMeta::decode(header, DUMP_MAGIC)?;
    Some(meta.links.into_iter().flat_map(|link| {
        let lines = link.geometry.lines;
        (0..lines.div_ceil(CHUNK_LINES))
            .map(move |i| (lines - i * CHUNK_LINES).min(CHUNK_LINES) * LINE_BYTES as u64)
    }))
}

impl ScalableBloom {
    /// One BF.SCANDUMP step. Returns the next cursor and the chunk.
    pub fn scandump(&self, cursor: i64) -> (i64, Vec<u8>) {
        if cursor == 0 {
            return (1, self.meta(true).encode(DUMP_MAGIC));
        }
        // The cursor is the client's: i64::MIN - 1 must not overflow.
        let Some(offset) = cursor.checked_sub(1).and_then(|c| u64::try_from(c).ok()) else {
            return (0, Vec::new());
        };
        if !offset.is_multiple_of(LINE_BYTES as u64) {
            return (0, Vec::new());
        }
        let mut line = offset / LINE_BYTES as u64;
        for link in &self.links {
            let lines = link.file.geometry().lines;
            if line < lines {
                let count = (lines - line).min(CHUNK_LINES);
                let data = link.file.read_lines(line, count);
                return (cursor + data.len() as i64, data);
            }
            line -= lines;
        }
        (0, Vec::new())
    }

    /// BF.LOADCHUNK with cursor 1 on an absent key: validates the header chunk fully
    /// (and `limits`) before creating filter `id` with all-zero bits.
    pub fn load_header(
        dir: &Path,
        id: u64,
        data: &[u8],
        limits: &BloomLimits,
    ) -> Result<Self, BloomError> {
        let meta = ChainMeta::decode(data, DUMP_MAGIC).ok_or(BloomError::BadData)?;
        let needed = meta
            .links
            .iter()
            .try_fold(0u64, |sum, l| sum.checked_add(l.geometry.file_len()))
            .ok_or(BloomError::TooLarge)?;
        if needed > limits.max_memory {
            return Err(BloomError::OverMaxMemory {
                needed,
                max: limits.max_memory,
            });
        }
        if super::chain::chain_path(dir, id).exists() {
            return Err(BloomError::BadData);
        }
        Self::create_from_meta(dir, id, &meta)
    }

    /// BF.LOADCHUNK with a data chunk. Validates placement and every line checksum
    /// before writing, so bad data leaves the filter untouched.
    pub fn load_chunk(&mut self, cursor: i64, data: &[u8]) -> Result<(), BloomError> {
        // RedisBloom's first check: a cursor that cannot end a chunk this long.
        if cursor <= 1 || (cursor as u64) < data.len() as u64 {
            return Err(BloomError::BadData);
        }
        let end = cursor
            .checked_sub(1)
            .and_then(|c| u64::try_from(c).ok())
            .ok_or(BloomError::InvalidOffset)?;
        let start = end
            .checked_sub(data.len() as u64)
            .ok_or(BloomError::InvalidOffset)?;
        let mut first = start / LINE_BYTES as u64;
        let target = self.links.iter_mut().find_map(|link| {
            let lines = link.file.geometry().lines;
            if first < lines {
                Some(link)
            } else {
                first -= lines;
                None
            }
        });
        let link = target.ok_or(BloomError::InvalidOffset)?;
        let count = data.len() as u64 / LINE_BYTES as u64;
        if data.is_empty()
            || !start.is_multiple_of(LINE_BYTES as u64)
            || first + count > link.file.geometry().lines
            || !BloomFile::lines_are_valid(data)
        {
            return Err(BloomError::BadData);
        }
        if !link.file.write_lines(first, data) {
            return Err(BloomError::BadData);
        }
        Ok(())
    }
}
