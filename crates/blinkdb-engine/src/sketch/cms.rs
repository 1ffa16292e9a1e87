//! Count-min sketch (CMS.*) as RedisBloom 2.8.2 keeps it (src/cms.c): `depth`
//! rows of `width` 32-bit counters, row `i` indexed by MurmurHash2 of the item
//! with seed `i`; a counter saturates at `u32::MAX` instead of wrapping. The
//! same inputs give the same counters, so answers, MERGE and the RDB payload
//! (`CMSk-TYPE`, encoding version 0) match RedisBloom's.

use super::cells::Cells;
use crate::rdb::module;
use crate::rdb::{RdbError, Reader};

/// RedisBloom's module type name and the encoding version it writes.
pub const TYPE_NAME: &str = "CMSk-TYPE";
pub const ENCVER: u64 = 0;

pub use super::murmur2::murmur2;
use super::murmur2::{row_group, Modulus, Seeded, LANES};

/// Why a sketch cannot be made or merged (RedisBloom's replies: `text`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmsError {
    InvalidInit,
    TooLarge,
    MergeOverflow,
}

impl CmsError {
    /// The reply text, for replies that take a `&'static str`.
    pub fn text(self) -> &'static str {
        match self {
            CmsError::InvalidInit => "CMS: invalid init arguments",
            CmsError::TooLarge => "CMS: Insufficient memory to create the key",
            CmsError::MergeOverflow => "CMS: MERGE overflow",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountMin {
    width: usize,
    depth: usize,
    /// The sum of all increments (a `size_t` in C: it wraps).
    counter: u64,
    /// Row-major: row `i` is `cells[i * width..(i + 1) * width]`.
    cells: Cells,
}

/// CMS_DimFromProb: width `ceil(2 / error)`, depth `ceil(log10f(delta) /
/// log10f(0.5))` computed in single precision as cms.c does (a double
/// computation gives another depth for some deltas).
pub fn dims_from_prob(error: f64, delta: f64) -> (u64, u64) {
    let width = (2.0 / error).ceil();
    let depth = ((delta as f32).log10() / 0.5f32.log10()).ceil();
    // `as` saturates: a width past u64 is refused by the size check anyway.
    (width as u64, depth as u64)
}

impl CountMin {
    /// The bytes the counters of a `width` x `depth` sketch take, if they fit a u64.
    pub fn counter_bytes(width: u64, depth: u64) -> Option<u64> {
        width.checked_mul(depth)?.checked_mul(4)
    }

    /// A zeroed sketch, refused past `max_bytes` of counters.
    pub fn new(width: u64, depth: u64, max_bytes: u64) -> Result<Self, CmsError> {
        if width < 1 || depth < 1 || width > i64::MAX as u64 / depth {
            return Err(CmsError::InvalidInit);
        }
        match Self::counter_bytes(width, depth) {
            Some(bytes) if bytes <= max_bytes => {}
            _ => return Err(CmsError::TooLarge),
        }
        let (width, depth) = (width as usize, depth as usize);
        Ok(CountMin {
            width,
            depth,
            counter: 0,
            cells: Cells::zeroed(width * depth),
        })
    }

    pub fn width(&self) -> u64 {
        self.width as u64
    }

    pub fn depth(&self) -> u64 {
        self.depth as u64
    }

    /// CMS.INFO's `count`: the increments' sum, as RedisBloom replies it.
    pub fn count(&self) -> u64 {
        self.counter
    }

    /// CMS_IncrBy: adds `value` to the item's counter in every row (saturating
    /// at u32::MAX) and returns the smallest of them; `u32::MAX` means the
    /// item overflowed (CMS.INCRBY answers an error for it).
    pub fn incr_by(&mut self, item: &[u8], value: u64) -> u32 {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available, as just checked.
            return unsafe { self.incr_by_avx2(item, value) };
        }
        self.incr_by_any(item, value)
    }

    /// [`incr_by`](Self::incr_by) compiled for AVX2: the rows' hashes are
    /// computed eight at a time (`murmur2::row_group`).
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn incr_by_avx2(&mut self, item: &[u8], value: u64) -> u32 {
        self.incr_by_any(item, value)
    }

    #[inline(always)]
    fn incr_by_any(&mut self, item: &[u8], value: u64) -> u32 {
        let min = match u32::try_from(self.width) {
            Ok(width) => {
                // Rows LANES at a time, written out rather than as an
                // iterator: an adapter's `next` is a function of its own, not
                // compiled for AVX2 with this one.
                let width = Modulus::new(width);
                let mut min = u32::MAX;
                let mut first = 0;
                while first < self.depth {
                    let n = LANES.min(self.depth - first);
                    let (at, _) = row_group(item, width, first, n, None);
                    min = min.min(self.bump(&at[..n], value));
                    first += n;
                }
                min
            }
            Err(_) => {
                let slots: Vec<usize> = Seeded::new(item)
                    .row_slots(self.width, self.depth)
                    .collect();
                self.bump(&slots, value)
            }
        };
        self.counter = self.counter.wrapping_add(value);
        min
    }

    /// Adds `value` to the counters at `slots` (an item's, in some rows);
    /// returns the smallest of them after.
    #[inline(always)]
    fn bump(&mut self, slots: &[usize], value: u64) -> u32 {
        // cms.c adds a size_t into a uint32_t and saturates when the
        // result is below the increment: any wrap, or an increment of 2^32 or more.
        let bump = |c: u32| {
            let sum = (c as u64).wrapping_add(value) as u32;
            if (sum as u64) < value {
                u32::MAX
            } else {
                sum
            }
        };
        let mut min = u32::MAX;
        if self.cells.small() {
            let cells = self.cells.all_mut();
            for &at in slots {
                cells[at] = bump(cells[at]);
                min = min.min(cells[at]);
            }
        } else {
            for &at in slots {
                let now = bump(self.cells.get(at));
                self.cells.set(at, now);
                min = min.min(now);
            }
        }
        min
    }

    /// CMS_Query: the smallest of the item's counters.
    pub fn query(&self, item: &[u8]) -> u32 {
        let item = Seeded::new(item);
        item.row_slots(self.width, self.depth)
            .map(|at| self.cells.get(at))
            .min()
            .unwrap_or(u32::MAX)
    }

    /// BLINK.CMSDECAY (BlinkDB's own, for an aging sketch): every counter
    /// and the count become `floor(value * factor)`, `factor` in 0..=1.
    /// IEEE double arithmetic, so a replica or a replay gets the same counters.
    pub fn decay(&mut self, factor: f64) {
        debug_assert!((0.0..=1.0).contains(&factor));
        if factor == 1.0 {
            return;
        }
        // Through `set`, so a sketch kept in a file marks its pages changed.
        for at in 0..self.cells.len() {
            let c = self.cells.get(at);
            self.cells.set(at, (c as f64 * factor) as u32);
        }
        self.counter = (self.counter as f64 * factor) as u64;
    }

    /// CMS_Merge into `self`: every counter becomes the weighted sum of the
    /// sources' (see `merged`); on error `self` is left as it was.
    pub fn merge(&mut self, sources: &[(&CountMin, i64)]) -> Result<(), CmsError> {
        *self = self.merged(sources)?;
        Ok(())
    }

    /// The sketch CMS_Merge makes of `sources` (all of this sketch's
    /// dimensions; this sketch may be one of them): each counter the weighted
    /// sum of theirs, the count the weighted sum of their counts. Any counter
    /// outside 0..=u32::MAX, an i64 overflow on the way, or a negative count
    /// refuses the merge, as checkOverflow does.
    pub fn merged(&self, sources: &[(&CountMin, i64)]) -> Result<CountMin, CmsError> {
        let cells = self.cells.len();
        assert!(sources.iter().all(|(s, _)| s.cells.len() == cells));
        let mut counter: i64 = 0;
        for (s, w) in sources {
            // __builtin_mul_overflow(size_t, long long, int64_t *): the exact product must fit.
            let product = i64::try_from(s.counter as i128 * *w as i128)
                .map_err(|_| CmsError::MergeOverflow)?;
            counter = counter
                .checked_add(product)
                .ok_or(CmsError::MergeOverflow)?;
        }
        if counter < 0 {
            return Err(CmsError::MergeOverflow);
        }
        let mut merged = Vec::with_capacity(cells);
        for at in 0..cells {
            let mut sum: i64 = 0;
            for (s, w) in sources {
                let product = i64::try_from(s.cells.get(at) as i128 * *w as i128)
                    .map_err(|_| CmsError::MergeOverflow)?;
                sum = sum.checked_add(product).ok_or(CmsError::MergeOverflow)?;
            }
            merged.push(u32::try_from(sum).map_err(|_| CmsError::MergeOverflow)?);
        }
        Ok(CountMin {
            width: self.width,
            depth: self.depth,
            counter: counter as u64,
            cells: Cells::from_vec(merged),
        })
    }

    /// A sketch from its parts (a file bound at start: `sketch/files.rs`).
    pub fn from_parts(width: usize, depth: usize, counter: u64, cells: Cells) -> Self {
        assert_eq!(cells.len(), width * depth);
        CountMin {
            width,
            depth,
            counter,
            cells,
        }
    }

    pub fn cells(&self) -> &Cells {
        &self.cells
    }

    /// The heap bytes this sketch holds besides itself (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        self.cells.bytes()
    }

    /// The fields CMSRdbSave writes (between the type id and EOF): width,
    /// depth, count, the counters as one little-endian buffer.
    pub fn write_rdb(&self, out: &mut Vec<u8>, compress: bool) {
        module::put_uint(out, self.width as u64);
        module::put_uint(out, self.depth as u64);
        module::put_uint(out, self.counter);
        let mut raw = Vec::with_capacity(self.cells.len() * 4);
        for c in self.cells.as_slice() {
            raw.extend_from_slice(&c.to_le_bytes());
        }
        module::put_string(out, &raw, compress);
    }

    /// CMSRdbLoad's fields (`encver` from the type id). RedisBloom trusts the
    /// buffer's length; here it must be exactly width x depth counters.
    pub fn read_rdb(r: &mut Reader<'_>, encver: u64) -> Result<Self, RdbError> {
        if encver > ENCVER {
            return Err(RdbError::Unsupported(format!(
                "module type {TYPE_NAME} encoding version {encver} is not supported ({ENCVER})"
            )));
        }
        let width = module::uint(r)?;
        let depth = module::uint(r)?;
        let counter = module::uint(r)?;
        let raw = module::string(r)?;
        if width == 0 || depth == 0 {
            return Err(RdbError::Corrupt("count-min sketch with no counters"));
        }
        if Self::counter_bytes(width, depth) != Some(raw.len() as u64) {
            return Err(RdbError::Corrupt(
                "count-min sketch counters do not match its dimensions",
            ));
        }
        let cells = raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(CountMin {
            width: width as usize,
            depth: depth as usize,
            counter,
            cells: Cells::from_vec(cells),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: u64 = 1 << 30;

    #[test]
    fn dims_from_prob_as_redisbloom() {
        // test_cms.py: 0.001 / 0.01 gives 2000 x 7.
        assert_eq!(dims_from_prob(0.001, 0.01), (2000, 7));
        assert_eq!(dims_from_prob(0.1, 0.1), (20, 4));
        assert_eq!(dims_from_prob(0.01, 0.5), (200, 1));
        assert_eq!(dims_from_prob(0.3, 0.001), (7, 10));
        // ceil(-0.0) of delta rounding to 1.0f: depth 0, refused at creation.
        let (w, d) = dims_from_prob(0.5, 0.999_999_999);
        assert_eq!((w, d), (4, 0));
        assert_eq!(CountMin::new(w, d, MAX), Err(CmsError::InvalidInit));
    }

    #[test]
    fn sizes_are_bounded() {
        assert_eq!(CountMin::new(0, 5, MAX), Err(CmsError::InvalidInit));
        assert_eq!(CountMin::new(5, 0, MAX), Err(CmsError::InvalidInit));
        assert_eq!(
            CountMin::new(u64::MAX / 2, 3, MAX),
            Err(CmsError::InvalidInit)
        );
        assert_eq!(CountMin::new(1 << 40, 4, MAX), Err(CmsError::TooLarge));
        assert_eq!(
            CountMin::new(1 << 28, 1, MAX),
            Ok(CountMin::new(1 << 28, 1, MAX).unwrap())
        );
        assert_eq!(CountMin::new(1 << 28, 2, MAX), Err(CmsError::TooLarge));
    }

    #[test]
    fn overflow_saturates_as_test_cms_py() {
        // test_overflow: width 5, depth 2.
        let large = (1u64 << 31) - 1;
        let mut c = CountMin::new(5, 2, MAX).unwrap();
        let incr = |c: &mut CountMin| {
            [("a", large), ("b", 10), ("c", 7), ("d", 5)]
                .iter()
                .map(|(i, v)| c.incr_by(i.as_bytes(), *v))
                .collect::<Vec<_>>()
        };
        let q = |c: &CountMin| {
            ["a", "b", "c", "d"]
                .iter()
                .map(|i| c.query(i.as_bytes()))
                .collect::<Vec<_>>()
        };
        let large = large as u32;
        assert_eq!(incr(&mut c), vec![large, 10, 17, 5]);
        assert_eq!(q(&c), vec![large, 17, 17, 5]);
        assert_eq!(incr(&mut c), vec![large * 2, 27, 34, 10]);
        assert_eq!(incr(&mut c), vec![u32::MAX, 44, 51, 15]);
        assert_eq!(q(&c), vec![u32::MAX, 51, 51, 15]);
        // An increment of 2^32 or more saturates at once.
        let mut c = CountMin::new(5, 2, MAX).unwrap();
        assert_eq!(c.incr_by(b"x", 1 << 32), u32::MAX);
        assert_eq!(c.count(), 1 << 32);
    }

    #[test]
    fn merge_checks_overflow_and_leaves_dest() {
        let mut a = CountMin::new(2, 2, MAX).unwrap();
        let mut b = CountMin::new(2, 2, MAX).unwrap();
        a.incr_by(b"foo", 4_000_000_000);
        b.incr_by(b"foo", 4_000_000_000);
        let before = a.clone();
        for (wa, wb) in [(1, -2), (-2, -2), (-2, 1), (2, 0), (0, 2), (-1, -1)] {
            let copy = a.clone();
            assert_eq!(
                a.merge(&[(&copy, wa), (&b, wb)]),
                Err(CmsError::MergeOverflow),
                "{wa} {wb}"
            );
            assert_eq!(a, before);
        }
        // test_merge_overflow_large_weight's success case.
        let mut a = CountMin::new(2, 2, MAX).unwrap();
        let mut b = CountMin::new(2, 2, MAX).unwrap();
        a.incr_by(b"foo", 4);
        b.incr_by(b"foo", 4);
        let copy = a.clone();
        for (wa, wb) in [
            (i64::MAX, -4_000_000_000),
            (-800_000_000_000, 8_000_000_000),
        ] {
            assert_eq!(
                a.merge(&[(&copy, wa), (&b, wb)]),
                Err(CmsError::MergeOverflow)
            );
        }
        a.merge(&[
            (&copy, -922_337_203_685_477_500),
            (&b, 922_337_203_685_477_502),
        ])
        .unwrap();
        assert_eq!((a.count(), a.query(b"foo")), (8, 8));
        // No source: every counter and the count become 0.
        a.merge(&[]).unwrap();
        assert_eq!((a.count(), a.query(b"foo")), (0, 0));
    }

    #[test]
    fn rdb_round_trips_and_refuses_bad_payloads() {
        let mut c = CountMin::new(20, 5, MAX).unwrap();
        for i in 0..50u32 {
            c.incr_by(&i.to_le_bytes(), i as u64);
        }
        for compress in [false, true] {
            let mut out = Vec::new();
            c.write_rdb(&mut out, compress);
            let mut r = Reader::new(&out);
            assert_eq!(CountMin::read_rdb(&mut r, ENCVER).unwrap(), c);
            assert_eq!(r.remaining(), 0);
            for cut in 0..out.len() {
                assert!(CountMin::read_rdb(&mut Reader::new(&out[..cut]), ENCVER).is_err());
            }
        }
        // Dimensions that do not match the buffer, or no counters at all.
        for (w, d) in [(21, 5), (0, 5), (5, 0), (u64::MAX, 2)] {
            let mut out = Vec::new();
            module::put_uint(&mut out, w);
            module::put_uint(&mut out, d);
            module::put_uint(&mut out, 0);
            module::put_string(&mut out, &[0; 400], false);
            assert!(CountMin::read_rdb(&mut Reader::new(&out), ENCVER).is_err());
        }
        assert!(CountMin::read_rdb(&mut Reader::new(&[]), 1).is_err());
    }
}
