//! A cuckoo filter's outside forms: CF.SCANDUMP's header and chunks (which
//! CF.LOADCHUNK and RedisBloom's AOF rewrite take back) and the RDB value of
//! module type `MBbloomCF` (encoding version 4, as RedisBloom 2.8's
//! CFRdbSave writes it; versions below 4, which lack the per-filter sizes
//! and options, are read as RedisBloom reads them).

use super::{next_pow2, sub_buckets, CuckooFilter, SubFilter, MAX_NUM_BUCKETS};
use crate::rdb::module::{
    check_count, put_string, put_uint, string as get_string, uint as get_uint,
};
use crate::rdb::{RdbError, Reader};
use crate::sketch::cells::PAGE;
use crate::sketch::mapped::FileArray;
use std::sync::Arc;

/// Bytes of RedisBloom's packed `CFHeader`.
pub const HEADER_LEN: usize = 38;
/// The largest chunk SCANDUMP hands out (RedisBloom's MAX_SCANDUMP_SIZE).
pub const MAX_CHUNK: u64 = 16 * 1024 * 1024;
/// RedisBloom's module type for cuckoo filters, and the version it writes.
pub const TYPE_NAME: &str = "MBbloomCF";
pub const ENCVER: u64 = 4;

/// RedisBloom's `CFHeader`: little-endian, packed, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub num_items: u64,
    pub num_buckets: u64,
    pub num_deletes: u64,
    pub num_filters: u64,
    pub bucket_size: u16,
    pub max_iterations: u16,
    pub expansion: u16,
}

impl Header {
    pub fn of(cf: &CuckooFilter) -> Self {
        Header {
            num_items: cf.num_items,
            num_buckets: cf.num_buckets,
            num_deletes: cf.num_deletes,
            num_filters: cf.filters.len() as u64,
            bucket_size: cf.bucket_size,
            max_iterations: cf.max_iterations,
            expansion: cf.expansion,
        }
    }

    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&self.num_items.to_le_bytes());
        b[8..16].copy_from_slice(&self.num_buckets.to_le_bytes());
        b[16..24].copy_from_slice(&self.num_deletes.to_le_bytes());
        b[24..32].copy_from_slice(&self.num_filters.to_le_bytes());
        b[32..34].copy_from_slice(&self.bucket_size.to_le_bytes());
        b[34..36].copy_from_slice(&self.max_iterations.to_le_bytes());
        b[36..38].copy_from_slice(&self.expansion.to_le_bytes());
        b
    }

    pub fn parse(b: &[u8]) -> Option<Self> {
        if b.len() != HEADER_LEN {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u16_at = |i: usize| u16::from_le_bytes(b[i..i + 2].try_into().expect("2 bytes"));
        Some(Header {
            num_items: u64_at(0),
            num_buckets: u64_at(8),
            num_deletes: u64_at(16),
            num_filters: u64_at(24),
            bucket_size: u16_at(32),
            max_iterations: u16_at(34),
            expansion: u16_at(36),
        })
    }
}

impl CuckooFilter {
    /// CF.LOADCHUNK's first chunk (CFHeader_Load): an empty filter of the
    /// header's shape. RedisBloom keeps the sub-filter count in 16 bits
    /// (so a count is taken modulo 65536) and checks the options as
    /// CuckooFilter_ValidateIntegrity does; BlinkDB also refuses a shape
    /// whose slots pass `max_bytes` or whose sub-filters would have no
    /// bucket (expansion 0), where RedisBloom aborts or divides by zero.
    pub fn from_header(bytes: &[u8], max_bytes: u64) -> Option<Self> {
        let mut h = Header::parse(bytes)?;
        h.num_filters = h.num_filters as u16 as u64;
        let valid = (1..=super::MAX_BUCKET_SIZE as u16).contains(&h.bucket_size)
            && (1..=MAX_NUM_BUCKETS).contains(&h.num_buckets)
            && h.num_filters != 0
            && h.max_iterations != 0
            && next_pow2(h.num_buckets) == h.num_buckets;
        if !valid {
            return None;
        }
        let mut total: u128 = 0;
        let mut filters = Vec::new();
        for i in 0..h.num_filters as usize {
            let buckets = sub_buckets(h.num_buckets, h.expansion, i).filter(|&n| n > 0)?;
            total += buckets as u128 * h.bucket_size as u128;
            if total > max_bytes as u128 {
                return None;
            }
            filters.push(SubFilter::zeroed(buckets, h.bucket_size));
        }
        CuckooFilter::from_parts(&h, filters).ok()
    }

    /// CF.SCANDUMP from `pos` (at least 1): the next position and the chunk
    /// (CF_GetEncodedChunk), None past the end. A sub-filter of at most
    /// MAX_CHUNK bytes goes whole, from its start whatever `pos` pointed at
    /// inside it, as RedisBloom sends it.
    pub fn chunk_at(&self, pos: i64) -> Option<(i64, &[u8])> {
        let mut offset = pos as i128 - 1;
        let filter = self.filters.iter().find(|f| {
            let size = f.data.len() as i128;
            if offset < size {
                return true;
            }
            offset -= size;
            false
        })?;
        let size = filter.data.len() as i128;
        let pos = pos as i128;
        let (next, data) = if size <= MAX_CHUNK as i128 {
            (pos + size, &filter.data[..])
        } else {
            let len = (size - offset).min(MAX_CHUNK as i128);
            let at = offset as usize;
            (pos + len, &filter.data[at..at + len as usize])
        };
        Some((next as i64, data))
    }

    /// CF.LOADCHUNK of a later chunk (CF_LoadEncodedChunk): `data` ends at
    /// byte `pos - 1` of the sub-filters laid end to end. As in RedisBloom,
    /// an offset past the last sub-filter's start is taken inside the last
    /// one. False (nothing written) when it does not fit.
    pub fn load_chunk(&mut self, pos: i64, data: &[u8]) -> bool {
        if data.is_empty() || pos <= 0 || ((pos - 1) as u64) < data.len() as u64 {
            return false;
        }
        let mut offset = pos as i128 - data.len() as i128 - 1;
        let mut at = None;
        for (i, f) in self.filters.iter().enumerate() {
            at = Some(i);
            let size = f.data.len() as i128;
            if offset < size {
                break;
            }
            offset -= size;
        }
        let Some(i) = at else {
            return false;
        };
        let target = &mut self.filters[i].data;
        if (target.len() as i128) < offset + data.len() as i128 {
            return false;
        }
        let offset = offset as usize;
        target[offset..offset + data.len()].copy_from_slice(data);
        let at = self.filters[i].at + offset;
        self.pages.mark_bytes(at, data.len());
        true
    }

    /// The module value CFRdbSave writes (after the type id).
    pub fn write_rdb(&self, out: &mut Vec<u8>, compress: bool) {
        put_uint(out, self.filters.len() as u64);
        put_uint(out, self.num_buckets);
        put_uint(out, self.num_items);
        put_uint(out, self.num_deletes);
        put_uint(out, self.bucket_size as u64);
        put_uint(out, self.max_iterations as u64);
        put_uint(out, self.expansion as u64);
        for f in &self.filters {
            put_uint(out, f.num_buckets);
            put_string(out, &f.data, compress);
        }
    }

    /// The module value CFRdbLoad reads, of encoding version `encver`
    /// (the type id already read). Every size is checked against the
    /// slots actually present, so a hostile value is an error, never a
    /// large allocation or a later out-of-range access.
    pub fn read_rdb(r: &mut Reader<'_>, encver: u64) -> Result<Self, RdbError> {
        if encver > ENCVER {
            return Err(RdbError::Unsupported(format!(
                "module type {TYPE_NAME} encoding version {encver} is not supported (at most {ENCVER})"
            )));
        }
        let corrupt = RdbError::Corrupt;
        let num_filters = get_uint(r)?;
        // Each sub-filter takes at least two bytes: the count cannot pass what is left.
        check_count(r, num_filters, 2)?;
        let num_buckets = get_uint(r)?;
        let num_items = get_uint(r)?;
        let small = |v: u64, what: &'static str| u16::try_from(v).map_err(|_| corrupt(what));
        let (num_deletes, bucket_size, max_iterations, expansion) = if encver < ENCVER {
            (
                0,
                super::DEFAULT_BUCKET_SIZE,
                super::DEFAULT_MAX_ITERATIONS,
                super::DEFAULT_EXPANSION,
            )
        } else {
            (
                get_uint(r)?,
                small(get_uint(r)?, "cuckoo filter bucket size out of range")?,
                small(get_uint(r)?, "cuckoo filter max iterations out of range")?,
                small(get_uint(r)?, "cuckoo filter expansion out of range")?,
            )
        };
        let mut filters = Vec::with_capacity(num_filters as usize);
        for _ in 0..num_filters {
            let buckets = if encver < ENCVER {
                num_buckets
            } else {
                get_uint(r)?
            };
            let data = get_string(r)?;
            filters.push(SubFilter {
                num_buckets: buckets,
                data: FileArray::from_vec(data),
                at: 0,
            });
        }
        let header = Header {
            num_items,
            num_buckets,
            num_deletes,
            num_filters,
            bucket_size,
            max_iterations,
            expansion,
        };
        CuckooFilter::from_parts(&header, filters).map_err(corrupt)
    }
}

/// The body of a cuckoo filter's sketch file (docs/sketch-file-format.md):
/// its `CFHeader`, each sub-filter's bucket count, then each sub-filter's
/// slots, so the whole filter is exactly as it was (RDB's own form would do
/// too, but its strings are length-prefixed in RDB's variable encoding).
impl CuckooFilter {
    pub fn file_body(&self, out: &mut Vec<u8>) {
        use crate::sketch::body::put_u64;
        out.reserve(HEADER_LEN + 8 * self.filters.len() + self.data_bytes() as usize);
        out.extend_from_slice(&Header::of(self).to_bytes());
        for f in &self.filters {
            put_u64(out, f.num_buckets);
        }
        for f in &self.filters {
            out.extend_from_slice(&f.data);
        }
    }

    /// `file_body`'s length.
    pub fn file_len(&self) -> usize {
        HEADER_LEN + 8 * self.filters.len() + self.data_bytes() as usize
    }

    /// The body's pages changed since its file got them.
    pub fn file_dirty(&self) -> &crate::sketch::dirty::Dirty {
        &self.pages
    }

    /// Pages `pages` (ascending) of `file_body`, each zero-padded past the
    /// body's end, without encoding the rest: the header and the bucket
    /// counts, then the slots of the sub-filters the page overlaps.
    pub fn file_pages(
        &self,
        pages: &[usize],
        out: &mut dyn FnMut(usize, &[u8; PAGE]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        use crate::sketch::body::{copy_part, put_u64};
        let mut head = Vec::with_capacity(HEADER_LEN + 8 * self.filters.len());
        head.extend_from_slice(&Header::of(self).to_bytes());
        for f in &self.filters {
            put_u64(&mut head, f.num_buckets);
        }
        let mut buf = [0u8; PAGE];
        for &p in pages {
            let start = p * PAGE;
            buf.fill(0);
            copy_part(&mut buf, start, 0, &head);
            // The sub-filters lie in order: the first that ends past the
            // page's start, then on while they start before its end.
            let first = self
                .filters
                .partition_point(|f| f.at + f.data.len() <= start);
            for f in self.filters[first..]
                .iter()
                .take_while(|f| f.at < start + PAGE)
            {
                copy_part(&mut buf, start, f.at, &f.data);
            }
            out(p, &buf)?;
        }
        Ok(())
    }

    /// Reads `file_body`'s bytes back; every size is checked against the
    /// bytes present before it is allocated.
    pub fn from_file_body(bytes: &[u8]) -> crate::sketch::body::Result<Self> {
        Self::from_body_with(bytes, |at, len| {
            Ok(FileArray::from_vec(bytes[at..at + len].to_vec()))
        })
    }

    /// The same from a file's private mapping whose first `len` bytes are
    /// the body: the slots stay in the mapping (nothing read or copied).
    pub fn from_file_map(
        map: &Arc<memmap2::MmapMut>,
        len: usize,
    ) -> crate::sketch::body::Result<Self> {
        Self::from_body_with(&map[..len], |at, n| {
            // SAFETY: the sub-filters' ranges are disjoint (one after the
            // other), nothing else keeps the mapping, and any byte is a slot.
            unsafe { FileArray::mapped(map, at, n) }.ok_or("cuckoo sub-filter past the body")
        })
    }

    /// The body's fields, each sub-filter's slots made by `slots(at, len)`
    /// from the body's bytes `at .. at + len` (checked to be there).
    fn from_body_with(
        bytes: &[u8],
        mut slots: impl FnMut(usize, usize) -> crate::sketch::body::Result<FileArray<u8>>,
    ) -> crate::sketch::body::Result<Self> {
        let mut r = crate::sketch::body::In::new(bytes);
        let header = Header::parse(r.bytes(HEADER_LEN as u64)?).expect("HEADER_LEN bytes");
        r.check_count(header.num_filters, 8)?;
        let mut sizes = Vec::with_capacity(header.num_filters as usize);
        for _ in 0..header.num_filters {
            sizes.push(r.u64()?);
        }
        let mut filters = Vec::with_capacity(sizes.len());
        let mut at = HEADER_LEN + 8 * sizes.len();
        for num_buckets in sizes {
            let len = num_buckets
                .checked_mul(header.bucket_size as u64)
                .ok_or("cuckoo sub-filter size out of range")?;
            let len = r.bytes(len)?.len();
            filters.push(SubFilter {
                num_buckets,
                data: slots(at, len)?,
                at: 0,
            });
            at += len;
        }
        r.end()?;
        CuckooFilter::from_parts(&header, filters)
    }
}
