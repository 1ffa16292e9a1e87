//! HyperLogLog sketches in Redis 7.0's own string format, so that a sketch
//! copied between BlinkDB and redis-server with GET/SET (or read back from
//! either's AOF) is the same sketch and gives the same PFCOUNT.
//!
//! Byte layout of the string value (all of it is the value GET returns):
//!
//! ```text
//! offset  size  field
//!      0     4  magic "HYLL"
//!      4     1  encoding: 0 dense, 1 sparse (anything else is not an HLL)
//!      5     3  unused, zero when written here (copied as found)
//!      8     8  cached cardinality, little endian; bit 7 of byte 15 set
//!               means the cache is stale and PFCOUNT recomputes it
//!     16     -  registers: 16384 of them, each the longest run of zeros
//!               (plus one) seen among the hashes that index it
//! ```
//!
//! Dense: 16384 6-bit registers packed little-endian-first, 12288 bytes
//! (register i starts at bit 6i; the low bits of a byte come first), so a
//! dense value is exactly 12304 bytes.
//!
//! Sparse: a run-length code of the register array, three opcodes:
//!
//! ```text
//! 00xxxxxx            ZERO:  xxxxxx+1 (1..=64) registers at 0
//! 01xxxxxx yyyyyyyy   XZERO: (xxxxxx << 8 | yyyyyyyy)+1 (1..=16384) registers at 0
//! 1vvvvvxx            VAL:   xx+1 (1..=4) registers at vvvvv+1 (1..=32)
//! ```
//!
//! A valid sparse code covers exactly 16384 registers. A register that needs a
//! value above 32, or an update that would grow the string past
//! `hll-sparse-max-bytes`, turns the value dense. The update rules (how runs
//! are split and merged) are Redis's, so the same additions give the same
//! bytes in both servers.
//!
//! Reading a corrupt value: where Redis reads one byte past the end of a
//! truncated XZERO (the string's NUL terminator), this code reads a zero; every
//! decoder stops at the first opcode that overruns 16384 registers, so work is
//! bounded by the register count, never by a hostile length field.

/// Header bytes before the registers.
pub const HEADER_LEN: usize = 16;
/// Registers per sketch (2^14: the low 14 bits of the hash pick one).
pub const REGISTERS: usize = 1 << P;
/// Length of a dense value.
pub const DENSE_LEN: usize = HEADER_LEN + REGISTERS * BITS / 8;

const P: u32 = 14;
/// Hash bits left for the run of zeros.
const Q: usize = 64 - P as usize;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
const MAGIC: &[u8; 4] = b"HYLL";
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// Bit 7 of the cached cardinality's last byte: the cache is stale.
const STALE_BIT: u8 = 0x80;
const HASH_SEED: u64 = 0xadc8_3b19;

const XZERO_BIT: u8 = 0x40;
const VAL_BIT: u8 = 0x80;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;
/// 0.5 / ln 2: the estimator's constant for an infinite register count.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// Why a string is not a usable sketch. `Display` is the exact reply text
/// redis-server 7.0 sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HllError {
    /// Not a sketch at all: too short, wrong magic, unknown encoding, or a
    /// dense value of the wrong length.
    #[error("WRONGTYPE Key is not a valid HyperLogLog string value.")]
    NotHll,
    /// A sparse code that does not cover exactly 16384 registers.
    #[error("INVALIDOBJ Corrupted HLL object detected")]
    Corrupt,
}

/// The representation a sketch uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

impl Encoding {
    /// PFDEBUG ENCODING's word.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// Checks the header as Redis does before any HLL command touches a value
/// (the sparse code itself is checked only as it is read).
pub fn encoding_of(value: &[u8]) -> Result<Encoding, HllError> {
    if value.len() < HEADER_LEN || &value[..4] != MAGIC {
        return Err(HllError::NotHll);
    }
    match value[4] {
        DENSE if value.len() == DENSE_LEN => Ok(Encoding::Dense),
        SPARSE => Ok(Encoding::Sparse),
        _ => Err(HllError::NotHll),
    }
}

/// An empty sketch, sparse: one XZERO opcode covering every register.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN + 2 + 3);
    v.extend_from_slice(MAGIC);
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(XZERO_MAX_LEN);
        v.extend_from_slice(&xzero(run));
        left -= run;
    }
    v
}

/// The cached cardinality, if it is not stale.
pub fn cached_count(value: &[u8]) -> Option<u64> {
    let card: [u8; 8] = value.get(8..16)?.try_into().ok()?;
    (card[7] & STALE_BIT == 0).then(|| u64::from_le_bytes(card))
}

/// Stores `count` as the cached cardinality (which makes it valid).
pub fn set_cached_count(value: &mut [u8], count: u64) {
    value[8..16].copy_from_slice(&count.to_le_bytes());
}

/// Marks the cached cardinality stale.
pub fn invalidate_cache(value: &mut [u8]) {
    value[15] |= STALE_BIT;
}

/// MurmurHash2, 64-bit version (MurmurHash64A), reading 8-byte blocks as
/// little-endian words as Redis's endian-neutral variant does.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("8-byte block"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element lands in and the length of its hash's
/// `000...1` pattern past the index bits (1..=51).
pub fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, HASH_SEED);
    let index = (hash as usize) & (REGISTERS - 1);
    // The sentinel bit caps the count at Q + 1.
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Register `i` of a dense register array.
#[inline]
pub fn dense_get(registers: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let mut v = (registers[byte] >> fb) as u32;
    // A register that starts past bit 2 spills into the next byte.
    if fb > 8 - BITS {
        v |= (registers[byte + 1] as u32) << (8 - fb);
    }
    (v as u8) & REGISTER_MAX
}

/// Sets register `i` of a dense register array to `value` (at most 63).
#[inline]
pub fn dense_set(registers: &mut [u8], i: usize, value: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = (value & REGISTER_MAX) as u32;
    registers[byte] &= !(((REGISTER_MAX as u32) << fb) as u8);
    registers[byte] |= (v << fb) as u8;
    if fb > 8 - BITS {
        let fb8 = 8 - fb;
        registers[byte + 1] &= !((REGISTER_MAX as u32 >> fb8) as u8);
        registers[byte + 1] |= (v >> fb8) as u8;
    }
}

/// Raises register `index` of a dense sketch (the whole value) to `count`;
/// true if it changed.
fn dense_raise(value: &mut [u8], index: usize, count: u8) -> bool {
    let regs = &mut value[HEADER_LEN..];
    if count > dense_get(regs, index) {
        dense_set(regs, index, count);
        true
    } else {
        false
    }
}

/// Whether `value` is a dense sketch that already holds every one of
/// `elements` (each register at least what the element would raise it to),
/// so that adding them would change nothing. False for anything else (a
/// sparse sketch, or not a sketch at all): the caller then adds them.
pub fn dense_holds_all(value: &[u8], elements: &[&[u8]]) -> bool {
    if encoding_of(value) != Ok(Encoding::Dense) {
        return false;
    }
    let regs = &value[HEADER_LEN..];
    elements.iter().all(|e| {
        let (index, count) = pattern(e);
        dense_get(regs, index) >= count
    })
}

/// Adds `element` to a sketch whose header passed [`encoding_of`]; true if
/// a register changed. A sparse sketch may turn dense (see the module
/// comment). Err(Corrupt): a sparse code that does not reach the element's
/// register, or that could not be made dense; the value is then as it was.
/// The caller invalidates the cache after a change (a sparse update already
/// did, as Redis's does).
pub fn add(value: &mut Vec<u8>, element: &[u8], sparse_max_bytes: usize) -> Result<bool, HllError> {
    let (index, count) = pattern(element);
    raise(value, index, count, sparse_max_bytes)
}

/// Raises register `index` to at least `count`, in either encoding.
pub fn raise(
    value: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max_bytes: usize,
) -> Result<bool, HllError> {
    match value.get(4) {
        Some(&DENSE) if value.len() == DENSE_LEN => Ok(dense_raise(value, index, count)),
        Some(&SPARSE) => sparse_raise(value, index, count, sparse_max_bytes),
        _ => Err(HllError::NotHll),
    }
}

// ---- sparse opcodes -------------------------------------------------------

#[inline]
fn is_zero(op: u8) -> bool {
    op & 0xc0 == 0
}

#[inline]
fn is_xzero(op: u8) -> bool {
    op & 0xc0 == XZERO_BIT
}

#[inline]
fn is_val(op: u8) -> bool {
    op & VAL_BIT != 0
}

#[inline]
fn zero_len(op: u8) -> usize {
    (op & 0x3f) as usize + 1
}

#[inline]
fn xzero_len(op: u8, next: u8) -> usize {
    (((op & 0x3f) as usize) << 8 | next as usize) + 1
}

#[inline]
fn val_value(op: u8) -> u8 {
    ((op >> 2) & 0x1f) + 1
}

#[inline]
fn val_len(op: u8) -> usize {
    (op & 0x3) as usize + 1
}

/// A VAL opcode; `value` in 1..=32, `len` in 1..=4.
#[inline]
fn val(value: u8, len: usize) -> u8 {
    ((value - 1) << 2 | (len - 1) as u8) | VAL_BIT
}

/// A ZERO opcode; `len` in 1..=64.
#[inline]
fn zero(len: usize) -> u8 {
    (len - 1) as u8
}

/// An XZERO opcode; `len` in 1..=16384.
#[inline]
fn xzero(len: usize) -> [u8; 2] {
    let l = len - 1;
    [(l >> 8) as u8 | XZERO_BIT, (l & 0xff) as u8]
}

/// One decoded opcode of a sparse code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A run of `len` registers at zero (`xzero`: the two-byte form).
    Zero { len: usize, xzero: bool },
    /// A run of `len` registers at `value`.
    Val { value: u8, len: usize },
}

/// Walks the opcodes of a sparse code (the bytes after the header), reading a
/// zero past the end as Redis reads the string's terminator.
pub fn ops(code: &[u8]) -> impl Iterator<Item = Op> + '_ {
    let mut p = 0;
    std::iter::from_fn(move || {
        let &op = code.get(p)?;
        Some(if is_zero(op) {
            p += 1;
            Op::Zero {
                len: zero_len(op),
                xzero: false,
            }
        } else if is_xzero(op) {
            let len = xzero_len(op, code.get(p + 1).copied().unwrap_or(0));
            p += 2;
            Op::Zero { len, xzero: true }
        } else {
            p += 1;
            Op::Val {
                value: val_value(op),
                len: val_len(op),
            }
        })
    })
}

/// Feeds every run of a sparse code to `run(first register, len, value)`;
/// Err(Corrupt) unless the runs cover exactly 16384 registers. Stops at the
/// first run that overruns, so a hostile code costs at most 16384 steps.
fn walk_sparse(code: &[u8], mut run: impl FnMut(usize, usize, u8)) -> Result<(), HllError> {
    let mut idx = 0;
    for op in ops(code) {
        let (len, value) = match op {
            Op::Zero { len, .. } => (len, 0),
            Op::Val { value, len } => (len, value),
        };
        if idx + len > REGISTERS {
            return Err(HllError::Corrupt);
        }
        run(idx, len, value);
        idx += len;
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(HllError::Corrupt)
    }
}

/// The dense form of a sketch: the same header (magic, unused bytes and cached
/// cardinality copied as they are) with encoding 0. A dense sketch is copied.
pub fn to_dense(value: &[u8]) -> Result<Vec<u8>, HllError> {
    match encoding_of(value)? {
        Encoding::Dense => Ok(value.to_vec()),
        Encoding::Sparse => {
            let mut dense = vec![0u8; DENSE_LEN];
            dense[..HEADER_LEN].copy_from_slice(&value[..HEADER_LEN]);
            dense[4] = DENSE;
            let regs = &mut dense[HEADER_LEN..];
            walk_sparse(&value[HEADER_LEN..], |first, len, v| {
                if v != 0 {
                    for i in first..first + len {
                        dense_set(regs, i, v);
                    }
                }
            })?;
            Ok(dense)
        }
    }
}

/// What one sparse update did.
enum Step {
    Unchanged,
    Updated,
    /// Needs the dense form (value too big for VAL, or the code would grow
    /// past the limit); nothing was changed.
    Promote,
    Corrupt,
}

/// Redis's hllSparseSet: raises register `index` of a sparse sketch to
/// `count`, splitting the opcode that covers it and merging equal VAL runs
/// around it, or turning the sketch dense.
fn sparse_raise(
    value: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max_bytes: usize,
) -> Result<bool, HllError> {
    let step = if count > VAL_MAX_VALUE {
        Step::Promote
    } else {
        // The update works as Redis's does on its string: a zero byte past the
        // end (the terminator) and room for the 3 bytes a split can add.
        let mut len = value.len();
        value.resize(len + 8, 0);
        let step = sparse_update(value, &mut len, index, count, sparse_max_bytes);
        value.truncate(len);
        step
    };
    match step {
        Step::Unchanged => Ok(false),
        Step::Updated => Ok(true),
        Step::Corrupt => Err(HllError::Corrupt),
        Step::Promote => {
            let mut dense = to_dense(value).map_err(|_| HllError::Corrupt)?;
            dense_raise(&mut dense, index, count);
            *value = dense;
            Ok(true)
        }
    }
}

/// Appends a zero run of `len` to a split sequence: ZERO up to 64, XZERO
/// beyond.
fn push_zero(seq: &mut [u8; 5], n: &mut usize, len: usize) {
    if len > ZERO_MAX_LEN {
        seq[*n..*n + 2].copy_from_slice(&xzero(len));
        *n += 2;
    } else {
        seq[*n] = zero(len);
        *n += 1;
    }
}

/// The body of [`sparse_raise`] on a buffer with slack past `len`.
fn sparse_update(
    buf: &mut [u8],
    len: &mut usize,
    index: usize,
    count: u8,
    sparse_max_bytes: usize,
) -> Step {
    let start = HEADER_LEN;
    let mut end = *len;
    // Step 1: find the opcode covering `index`.
    let mut p = start;
    let mut first = 0usize;
    let mut prev = None;
    let mut span = 0usize;
    while p < end {
        let op = buf[p];
        let mut oplen = 1;
        span = if is_zero(op) {
            zero_len(op)
        } else if is_val(op) {
            val_len(op)
        } else {
            oplen = 2;
            xzero_len(op, buf[p + 1])
        };
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Step::Corrupt;
    }
    let op = buf[p];
    let next = if is_xzero(op) { p + 2 } else { p + 1 };
    let next = (next < end).then_some(next);
    let (zero_run, xzero_run) = (is_zero(op), is_xzero(op));
    let runlen = if zero_run {
        zero_len(op)
    } else if xzero_run {
        xzero_len(op, buf[p + 1])
    } else {
        val_len(op)
    };

    // Step 2: the trivial updates in place, else the split sequence.
    let updated_in_place = if !zero_run && !xzero_run {
        if val_value(op) >= count {
            return Step::Unchanged;
        }
        runlen == 1
    } else {
        zero_run && runlen == 1
    };
    if updated_in_place {
        buf[p] = val(count, 1);
    } else {
        let mut seq = [0u8; 5];
        let mut n = 0;
        let last = first + span - 1;
        if zero_run || xzero_run {
            if index != first {
                push_zero(&mut seq, &mut n, index - first);
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                push_zero(&mut seq, &mut n, last - index);
            }
        } else {
            let current = val_value(op);
            if index != first {
                seq[n] = val(current, index - first);
                n += 1;
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                seq[n] = val(current, last - index);
                n += 1;
            }
        }
        // Step 3: put the sequence in place of the opcode.
        let oldlen = if xzero_run { 2 } else { 1 };
        let delta = n as isize - oldlen;
        if delta > 0 && *len + delta as usize > sparse_max_bytes {
            return Step::Promote;
        }
        if delta != 0 {
            if let Some(next) = next {
                buf.copy_within(next..end, (next as isize + delta) as usize);
            }
        }
        *len = (*len as isize + delta) as usize;
        buf[p..p + n].copy_from_slice(&seq[..n]);
        end = (end as isize + delta) as usize;
    }

    // Step 4: merge adjacent VAL runs of the same value, up to 5 opcodes on
    // from the one before the change.
    let mut p = prev.unwrap_or(start);
    let mut scan = 5;
    while p < end && scan > 0 {
        scan -= 1;
        let op = buf[p];
        if is_xzero(op) {
            p += 2;
            continue;
        } else if is_zero(op) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(buf[p + 1]) {
            let (v1, v2) = (val_value(op), val_value(buf[p + 1]));
            if v1 == v2 {
                let merged = val_len(op) + val_len(buf[p + 1]);
                if merged <= VAL_MAX_LEN {
                    buf[p + 1] = val(v1, merged);
                    buf.copy_within(p + 1..end + 1, p);
                    *len -= 1;
                    end -= 1;
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate_cache(&mut buf[..HEADER_LEN]);
    Step::Updated
}

// ---- counting ---------------------------------------------------------------

/// How many registers hold each value (0..=63).
pub type Histogram = [u32; 64];

/// The register histogram of a sketch whose header passed [`encoding_of`].
pub fn histogram(value: &[u8]) -> Result<Histogram, HllError> {
    let mut h = [0u32; 64];
    match encoding_of(value)? {
        Encoding::Dense => {
            // 3 bytes hold 4 registers.
            for c in value[HEADER_LEN..].chunks_exact(3) {
                h[(c[0] & 63) as usize] += 1;
                h[((c[0] >> 6 | c[1] << 2) & 63) as usize] += 1;
                h[((c[1] >> 4 | c[2] << 4) & 63) as usize] += 1;
                h[(c[2] >> 2) as usize] += 1;
            }
        }
        Encoding::Sparse => walk_sparse(&value[HEADER_LEN..], |_, len, v| {
            h[v as usize] += len as u32;
        })?,
    }
    Ok(h)
}

/// The histogram of an array of 16384 one-byte registers (values up to 63).
pub fn raw_histogram(registers: &[u8; REGISTERS]) -> Histogram {
    let mut h = [0u32; 64];
    for &r in registers {
        h[(r & 63) as usize] += 1;
    }
    h
}

/// Ertl's sigma (arXiv:1702.01284), iterated until it stops changing.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

/// Ertl's tau (arXiv:1702.01284).
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if before == z {
            return z / 3.0;
        }
    }
}

/// The cardinality estimate of a register histogram: Ertl's improved raw
/// estimator, as Redis 7.0's hllCount computes it (same operations in the
/// same order, so the same double and the same rounding).
pub fn estimate(h: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - h[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += h[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(h[0] as f64 / m);
    // llroundl: half away from zero, as f64::round.
    (ALPHA_INF * m * m / z).round() as u64
}

/// The cardinality estimate of a sketch (ignoring its cache).
pub fn count(value: &[u8]) -> Result<u64, HllError> {
    histogram(value).map(|h| estimate(&h))
}

/// Raises each of `max`'s registers to the sketch's (PFCOUNT of several keys,
/// PFMERGE). `max` may be changed in part when the sparse code is corrupt.
pub fn merge_into(max: &mut [u8; REGISTERS], value: &[u8]) -> Result<(), HllError> {
    match encoding_of(value)? {
        Encoding::Dense => {
            let regs = &value[HEADER_LEN..];
            for (i, c) in regs.chunks_exact(3).enumerate() {
                let four = [
                    c[0] & 63,
                    (c[0] >> 6 | c[1] << 2) & 63,
                    (c[1] >> 4 | c[2] << 4) & 63,
                    c[2] >> 2,
                ];
                for (m, r) in max[4 * i..4 * i + 4].iter_mut().zip(four) {
                    *m = (*m).max(r);
                }
            }
            Ok(())
        }
        Encoding::Sparse => walk_sparse(&value[HEADER_LEN..], |first, len, v| {
            if v != 0 {
                for m in &mut max[first..first + len] {
                    *m = (*m).max(v);
                }
            }
        }),
    }
}

/// Writes merged registers into a sketch as PFMERGE does: dense first if
/// `make_dense`, then every non-zero register raised in turn (a sparse
/// sketch may turn dense midway), then the cache invalidated.
pub fn store_merged(
    value: &mut Vec<u8>,
    max: &[u8; REGISTERS],
    make_dense: bool,
    sparse_max_bytes: usize,
) -> Result<(), HllError> {
    if make_dense && encoding_of(value)? == Encoding::Sparse {
        *value = to_dense(value)?;
    }
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            // A sketch that merged cleanly is a valid one: Redis ignores the
            // outcome here too.
            let _ = raise(value, i, m, sparse_max_bytes);
        }
    }
    invalidate_cache(value);
    Ok(())
}

/// All 16384 registers of a dense sketch (PFDEBUG GETREG).
pub fn dense_registers(value: &[u8]) -> impl ExactSizeIterator<Item = u8> + '_ {
    let regs = &value[HEADER_LEN..];
    (0..REGISTERS).map(move |i| dense_get(regs, i))
}

/// PFDEBUG DECODE's text for a sparse code: `z:LEN`, `Z:LEN` and
/// `v:VALUE,LEN`, space-separated, to the end of the code as Redis prints it
/// (at most 8 bytes of text per byte of code, corrupt or not).
pub fn decode_sparse(value: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for op in ops(&value[HEADER_LEN.min(value.len())..]) {
        let _ = match op {
            Op::Zero { len, xzero: false } => write!(out, "z:{len} "),
            Op::Zero { len, xzero: true } => write!(out, "Z:{len} "),
            Op::Val { value, len } => write!(out, "v:{value},{len} "),
        };
    }
    out.truncate(out.trim_end_matches(' ').len());
    out
}

/// PFSELFTEST: register packing, then 10 million additions to a dense and a
/// sparse sketch side by side, checking at each power of ten that the sparse
/// one is still sparse while small, that both estimate the same, and that the
/// error stays within six standard errors. Err holds Redis's reply text.
pub fn selftest(rng: &mut impl rand::RngCore, sparse_max_bytes: usize) -> Result<(), String> {
    self_check(rng, sparse_max_bytes, 1000, 10_000_000)
}

/// [`selftest`] with `cycles` rounds of register packing and `elements` additions.
fn self_check(
    rng: &mut impl rand::RngCore,
    sparse_max_bytes: usize,
    cycles: usize,
    elements: u64,
) -> Result<(), String> {
    let mut dense = vec![0u8; DENSE_LEN];
    dense[..4].copy_from_slice(MAGIC);
    let mut bytes = vec![0u8; REGISTERS];
    for _ in 0..cycles {
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (rng.next_u32() & REGISTER_MAX as u32) as u8;
            dense_set(&mut dense[HEADER_LEN..], i, *b);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let got = dense_get(&dense[HEADER_LEN..], i);
            if got != b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {got}"
                ));
            }
        }
    }
    dense[HEADER_LEN..].fill(0);
    let mut sparse = new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed = rng.next_u64();
    for j in 1..=elements {
        let element = (j ^ seed).to_le_bytes();
        let (index, run) = pattern(&element);
        dense_raise(&mut dense, index, run);
        // Valid by construction: a failure here is itself a test failure.
        if raise(&mut sparse, index, run, sparse_max_bytes).is_err() {
            return Err("TESTFAILED sparse representation became corrupt".into());
        }
        if j != checkpoint {
            continue;
        }
        if (j as usize) < sparse_max_bytes / 2 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let estimate = count(&dense).unwrap_or(0);
        if count(&sparse) != Ok(estimate) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = (checkpoint as i64 - estimate as i64).unsigned_abs();
        let mut maxerr = (relerr * 6.0 * checkpoint as f64).ceil() as u64;
        // Collisions make a large error at 10 likely enough to flake.
        if j == 10 {
            maxerr = 1;
        }
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
