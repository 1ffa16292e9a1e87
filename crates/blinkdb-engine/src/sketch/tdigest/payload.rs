//! RedisBloom's `TDIS-TYPE` module value (encoding version 0), as
//! TDigestRdbSave writes it after the module type id; every field behind its
//! module opcode (signed fields as UINT, the rest as DOUBLE):
//!
//! ```text
//! compression  double    the digest's compression
//! min, max     double    DBL_MAX / -DBL_MAX while empty
//! cap          signed    node buffer size, 6 * compression + 10
//! merged       signed    centroids written below
//! unmerged     signed    buffered samples (not written: 0 after the save's
//!                        compression, 1 for a digest of one sample)
//! compressions signed    compressions made so far
//! merged_w     double    weight of the centroids (an integer)
//! unmerged_w   double    weight of the buffered samples (an integer)
//! means        double x merged
//! weights      double x merged (integers)
//! ```
//!
//! RedisBloom compresses the digest in place before writing it; `write`
//! compresses a copy when the digest has buffered samples, which writes the
//! same bytes.

use super::{cap_from_compression, TDigest, LOAD_MAX_BYTES};
use crate::rdb::module::{
    check_count, double as read_double, put_double as write_double, put_uint as write_uint,
    uint as read_uint,
};
use crate::rdb::{RdbError, Reader};

pub const TYPE_NAME: &str = "TDIS-TYPE";
pub const ENCVER: u64 = 0;

/// The most buffered (unwritten, zero) nodes a payload may declare.
const MAX_UNMERGED: usize = 64;

/// A digest read whose whole node buffer takes at most this many bytes holds
/// it at once, as RedisBloom's load (`td_new`'s calloc) and a digest a
/// command creates do, so MEMORY USAGE is the same before and after a
/// reload or restart (RedisBloom's test_save_load checks it). Compression
/// 100 (the default) takes 9,760 bytes; above the bound the buffer grows as
/// it fills, so that a few payload bytes never cost more than this.
const PREALLOCATE_MAX_BYTES: usize = 1 << 20;

/// A weight field: an integral double RedisBloom wrote from a `long long`.
fn weight(v: f64) -> Result<i64, RdbError> {
    if v.is_finite() && (0.0..9_223_372_036_854_775_808.0).contains(&v) {
        Ok(v as i64)
    } else {
        Err(RdbError::Corrupt("t-digest weight out of range"))
    }
}

fn count(v: u64, at_most: usize) -> Result<usize, RdbError> {
    usize::try_from(v)
        .ok()
        .filter(|n| *n <= at_most)
        .ok_or(RdbError::Corrupt("t-digest node count out of range"))
}

/// The value after the module type id. A compression whose buffer would pass
/// `LOAD_MAX_BYTES` is refused before anything is allocated (RedisBloom would
/// abort on the allocation, or crash on a negative one).
pub fn read(r: &mut Reader<'_>, encver: u64) -> Result<TDigest, RdbError> {
    if encver != ENCVER {
        return Err(RdbError::Unsupported(format!(
            "module type {TYPE_NAME} encoding version {encver} is not supported ({ENCVER})"
        )));
    }
    let compression = read_double(r)?;
    let mut t = TDigest::new(compression, LOAD_MAX_BYTES)
        .map_err(|_| RdbError::Corrupt("t-digest compression out of range"))?;
    t.min = read_double(r)?;
    t.max = read_double(r)?;
    let cap = read_uint(r)?;
    if Some(cap as usize) != cap_from_compression(compression) || cap > u32::MAX as u64 {
        return Err(RdbError::Corrupt(
            "t-digest capacity does not match its compression",
        ));
    }
    t.merged_nodes = count(read_uint(r)?, t.cap())?;
    // RedisBloom's save compresses first: buffered samples remain only in a
    // digest of total weight 1 or less (one sample). A few are allowed; the
    // payload does not hold them, so many would be an allocation it does
    // not pay for.
    t.unmerged_nodes = count(read_uint(r)?, (t.cap() - t.merged_nodes).min(MAX_UNMERGED))?;
    t.total_compressions = read_uint(r)? as i64;
    t.merged_weight = weight(read_double(r)?)?;
    t.unmerged_weight = weight(read_double(r)?)?;
    // Two 9-byte fields per centroid must still be there.
    check_count(r, t.merged_nodes as u64, 18)?;
    t.ensure(t.merged_nodes + t.unmerged_nodes);
    if t.cap() * 16 <= PREALLOCATE_MAX_BYTES {
        t.allocate_all();
    }
    for i in 0..t.merged_nodes {
        t.means[i] = read_double(r)?;
    }
    for i in 0..t.merged_nodes {
        t.weights[i] = weight(read_double(r)?)?;
    }
    Ok(t)
}

/// TDigestRdbSave's fields after the module type id (the caller writes the
/// id and the EOF opcode).
pub fn write(t: &TDigest, out: &mut Vec<u8>) {
    let compressed;
    let t = if t.unmerged_nodes > 0 {
        let mut c = t.clone();
        let _ = c.compress();
        compressed = c;
        &compressed
    } else {
        t
    };
    write_double(out, t.compression);
    write_double(out, t.min);
    write_double(out, t.max);
    write_uint(out, t.cap() as u64);
    write_uint(out, t.merged_nodes as u64);
    write_uint(out, t.unmerged_nodes as u64);
    write_uint(out, t.total_compressions as u64);
    write_double(out, t.merged_weight as f64);
    write_double(out, t.unmerged_weight as f64);
    for m in &t.means[..t.merged_nodes] {
        write_double(out, *m);
    }
    for w in &t.weights[..t.merged_nodes] {
        write_double(out, *w as f64);
    }
}

/// The body of a t-digest's sketch file (docs/sketch-file-format.md): every
/// field and every node in use, buffered samples included, so a restart has
/// the digest exactly as it was (the RDB form compresses it first, which
/// changes later answers), and how many slots were allocated (slots past the
/// nodes in use are never read before written: they come back as zeros).
/// Its length is at most `file_capacity`: the nodes are bounded by the
/// compression.
impl TDigest {
    pub fn file_body(&self, out: &mut Vec<u8>) {
        use crate::sketch::body::{put_f64, put_u64};
        let used = self.next_node();
        out.reserve(88 + used * 16);
        put_f64(out, self.compression);
        put_f64(out, self.min);
        put_f64(out, self.max);
        put_u64(out, self.cap as u64);
        put_u64(out, self.merged_nodes as u64);
        put_u64(out, self.unmerged_nodes as u64);
        put_u64(out, self.total_compressions as u64);
        put_u64(out, self.merged_weight as u64);
        put_u64(out, self.unmerged_weight as u64);
        put_u64(out, self.means.len() as u64);
        for m in &self.means[..used] {
            put_f64(out, *m);
        }
        for w in &self.weights[..used] {
            put_u64(out, *w as u64);
        }
    }

    /// `file_body`'s length.
    pub fn file_len(&self) -> usize {
        80 + self.next_node() * 16
    }

    /// The most bytes `file_body` writes for this digest's compression.
    pub fn file_capacity(&self) -> usize {
        80 + self.cap * 16
    }

    /// Reads `file_body`'s bytes back, refusing what no digest holds.
    pub fn from_file_body(bytes: &[u8]) -> crate::sketch::body::Result<Self> {
        let mut r = crate::sketch::body::In::new(bytes);
        let compression = r.f64()?;
        let mut t = TDigest::new(compression, LOAD_MAX_BYTES)
            .map_err(|_| "t-digest compression out of range")?;
        t.min = r.f64()?;
        t.max = r.f64()?;
        if r.u64()? != t.cap as u64 {
            return Err("t-digest capacity does not match its compression");
        }
        let signed = |v: u64| i64::try_from(v).map_err(|_| "t-digest field out of range");
        let merged = r.u64()?;
        let unmerged = r.u64()?;
        t.total_compressions = r.u64()? as i64;
        t.merged_weight = signed(r.u64()?)?;
        t.unmerged_weight = signed(r.u64()?)?;
        let allocated = r.u64()?;
        let used = merged.saturating_add(unmerged);
        if allocated > t.cap as u64 || used > allocated {
            return Err("t-digest node counts out of range");
        }
        // The nodes in use must be there before the slots are allocated.
        r.check_count(used, 16)?;
        (t.merged_nodes, t.unmerged_nodes) = (merged as usize, unmerged as usize);
        // The slots allocated come back as zeros, up to the bound a payload
        // gets too (past it, a few bytes of file must not cost gigabytes: the
        // buffer then grows as it fills, as a payload's does).
        let slots = match allocated as usize * 16 <= PREALLOCATE_MAX_BYTES {
            true => allocated,
            false => used,
        } as usize;
        t.means = vec![0.0; slots];
        t.weights = vec![0; slots];
        for m in &mut t.means[..used as usize] {
            *m = r.f64()?;
        }
        for w in &mut t.weights[..used as usize] {
            *w = signed(r.u64()?)?;
        }
        r.end()?;
        Ok(t)
    }
}
