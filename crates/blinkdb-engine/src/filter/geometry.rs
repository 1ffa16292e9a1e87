//! Shape of a blocked Bloom filter and the math that sizes it.
//!
//! Every item's k probes fall in one 480-bit line, so a line holding j items has
//! false-positive rate (1 - (1 - 1/480)^(jk))^k, and j is Poisson(n / L) across lines.
//! The filter's rate is that per-line rate averaged over the Poisson load. The load
//! variance is what makes a blocked filter need more bits than m = -n ln p / ln²2:
//! with equal bits its rate is ~1.2x (p near 1e-2) to ~1.6x (p near 1e-3) the unblocked
//! one, so an equal rate needs ~5% and ~8% more bits (docs/bloom-file-format.md). For few lines the real load is binomial, whose smaller
//! variance makes the Poisson figure an over-estimate, so sizing stays on the safe side.

use super::error::FilterError;
use super::layout::{HEADER_BYTES, LINE_BITS, LINE_BYTES};
use parking_lot::Mutex;

/// Sizing answers kept by [`Geometry::for_items`].
const RECENT_SIZINGS: usize = 16;
/// Largest k accepted; more probes than this cannot pay off in 480 bits.
pub const MAX_HASHES: u32 = 64;
/// Sizing aims at this share of the requested rate: the prediction matches
/// measurement to about 1%, and the sampling noise of a 1M-probe check is ~1% too.
pub const SIZING_MARGIN: f64 = 0.95;
/// Largest line count (2^40 lines = 64 TiB): bounds every size computation.
pub const MAX_LINES: u64 = 1 << 40;

/// Line count, probes per item and layout: all that defines the probe function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Number of 64-byte lines.
    pub lines: u64,
    /// Bits set per item (k): all in one line (blocked), or anywhere (flat).
    pub hashes: u32,
    /// 0: blocked (xxh3, an item's k bits in one line). Otherwise the filter is
    /// RedisBloom's flat bit array of this many bits, probed at `(a + i·b) mod
    /// flat_bits` with its MurmurHash64A pair, bit x stored as bit `x % 480` of
    /// line `x / 480` (docs/bloom-file-format.md).
    pub flat_bits: u64,
}

/// Largest flat bit array (bits): the flat layout is for small sub-filters
/// (`bloom::FLAT_MAX_BYTES`), and this bounds what a file header may claim.
pub const MAX_FLAT_BITS: u64 = 1 << 31;

impl Geometry {
    /// Checks the bounds a file header may carry.
    pub fn new(lines: u64, hashes: u32) -> Result<Geometry, FilterError> {
        if lines == 0 || lines > MAX_LINES {
            return Err(FilterError::InvalidGeometry("line count out of range"));
        }
        if hashes == 0 || hashes > MAX_HASHES {
            return Err(FilterError::InvalidGeometry("hashes per item out of range"));
        }
        Ok(Geometry {
            lines,
            hashes,
            flat_bits: 0,
        })
    }

    /// A flat array of `bits` bits (RedisBloom's layout), spread over
    /// `ceil(bits / 480)` lines.
    pub fn flat(bits: u64, hashes: u32) -> Result<Geometry, FilterError> {
        if bits == 0 || bits > MAX_FLAT_BITS {
            return Err(FilterError::InvalidGeometry("flat bit count out of range"));
        }
        let mut geometry = Geometry::new(bits.div_ceil(LINE_BITS as u64), hashes)?;
        geometry.flat_bits = bits;
        Ok(geometry)
    }

    /// Checks a geometry read from a header or a chain file.
    pub fn checked(lines: u64, hashes: u32, flat_bits: u64) -> Result<Geometry, FilterError> {
        let geometry = if flat_bits == 0 {
            Geometry::new(lines, hashes)?
        } else {
            Geometry::flat(flat_bits, hashes)?
        };
        if geometry.lines != lines {
            return Err(FilterError::InvalidGeometry(
                "line count does not fit the flat bits",
            ));
        }
        Ok(geometry)
    }

    /// True for RedisBloom's flat layout.
    #[inline]
    pub fn is_flat(&self) -> bool {
        self.flat_bits != 0
    }

    /// Smallest geometry whose predicted false-positive rate with `items` items is
    /// at most `fp · SIZING_MARGIN`. Pure arithmetic: allocates nothing.
    /// The search costs tens of microseconds, as much as the rest of a BF.RESERVE, and
    /// applications create filters with a handful of shapes: recent answers are kept.
    pub fn for_items(items: u64, fp: f64) -> Result<Geometry, FilterError> {
        static RECENT: Mutex<[(u64, u64, Geometry); RECENT_SIZINGS]> = Mutex::new(
            [(
                0,
                0,
                Geometry {
                    lines: 0,
                    hashes: 0,
                    flat_bits: 0,
                },
            ); RECENT_SIZINGS],
        );
        let key = (items, fp.to_bits());
        if let Some(&(_, _, g)) = RECENT
            .lock()
            .iter()
            .find(|(i, f, g)| (*i, *f) == key && g.lines > 0)
        {
            return Ok(g);
        }
        let geometry = Self::search_for_items(items, fp)?;
        let mut recent = RECENT.lock();
        recent.rotate_right(1);
        recent[0] = (key.0, key.1, geometry);
        Ok(geometry)
    }

    fn search_for_items(items: u64, fp: f64) -> Result<Geometry, FilterError> {
        if !(fp > 0.0 && fp < 1.0) {
            return Err(FilterError::InvalidGeometry(
                "false-positive rate must be in (0, 1)",
            ));
        }
        let items = items.max(1);
        let requested = fp;
        let fp = fp * SIZING_MARGIN;
        let unreachable = FilterError::Unreachable {
            items,
            fp: requested,
            max_lines: MAX_LINES,
        };
        // A blocked filter never beats the unblocked optimum, so that is a lower bound.
        let optimum_bits = items as f64 * -fp.ln() / (std::f64::consts::LN_2.powi(2));
        let mut low = ((optimum_bits / LINE_BITS as f64).floor() as u64).clamp(1, MAX_LINES);
        if optimum_bits / LINE_BITS as f64 > MAX_LINES as f64 {
            return Err(unreachable);
        }
        let mut high = low;
        while best_hashes(items, high).1 > fp {
            if high == MAX_LINES {
                return Err(unreachable);
            }
            low = high + 1;
            high = high.saturating_mul(2).min(MAX_LINES);
        }
        while low < high {
            let mid = low + (high - low) / 2;
            if best_hashes(items, mid).1 <= fp {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        Ok(Geometry {
            lines: high,
            hashes: best_hashes(items, high).0,
            flat_bits: 0,
        })
    }

    /// The best geometry that fits in `bytes` of file (header included) for `items`.
    pub fn for_file_bytes(items: u64, bytes: u64) -> Result<Geometry, FilterError> {
        let lines = bytes.saturating_sub(HEADER_BYTES) / LINE_BYTES as u64;
        let lines = lines.min(MAX_LINES);
        if lines == 0 {
            return Err(FilterError::InvalidGeometry("file smaller than one line"));
        }
        Ok(Geometry {
            lines,
            hashes: best_hashes(items.max(1), lines).0,
            flat_bits: 0,
        })
    }

    /// File length in bytes: header plus lines.
    pub fn file_len(&self) -> u64 {
        HEADER_BYTES + self.lines * LINE_BYTES as u64
    }

    /// Total filter bits (checksums excluded; a flat filter's array).
    pub fn bits(&self) -> u64 {
        if self.is_flat() {
            return self.flat_bits;
        }
        self.lines * LINE_BITS as u64
    }

    /// Predicted false-positive rate once `items` distinct items are in.
    pub fn predicted_fp(&self, items: u64) -> f64 {
        blocked_fp(items as f64 / self.lines as f64, self.hashes)
    }
}

/// k minimising the blocked false-positive rate at this load, and that rate.
fn best_hashes(items: u64, lines: u64) -> (u32, f64) {
    let load = items as f64 / lines as f64;
    // Clamped first: for tiny loads the optimum passes MAX_HASHES and the range
    // below would be empty (capacity 1 then looked unreachable).
    let guess = ((std::f64::consts::LN_2 * LINE_BITS as f64 / load.max(1e-9)).round() as u32)
        .min(MAX_HASHES);
    let mut best = (1, f64::INFINITY);
    for k in guess.saturating_sub(3).max(1)..=(guess + 3).min(MAX_HASHES) {
        let fp = blocked_fp(load, k);
        if fp < best.1 {
            best = (k, fp);
        }
    }
    best
}

/// Σ_j Poisson(j; load) · (1 - (1 - 1/480)^(jk))^k.
/// Sizing evaluates this a few hundred times per BF.RESERVE, so the terms are built
/// by running products (no `powf` per term: that was most of a reserve's CPU) and
/// the sum stops once the Poisson tail past the mean can no longer move it.
fn blocked_fp(load: f64, k: u32) -> f64 {
    let keep_per_item = (1.0 - 1.0 / LINE_BITS as f64).powi(k as i32);
    let last = (load + 12.0 * load.sqrt() + 40.0).ceil() as u32;
    let mut weight = (-load).exp();
    let mut keep = 1.0; // (1 - 1/480)^(jk)
    let mut total = 0.0;
    for j in 0..=last {
        if j > 0 {
            weight *= load / j as f64;
            keep *= keep_per_item;
        }
        let term = weight * (1.0 - keep).powi(k as i32);
        total += term;
        // Past the mean the weights fall faster than geometrically and per-line
        // rates are at most 1, so the rest of the tail is below total·1e-16.
        if j as f64 > load + 1.0 && weight < total * 1e-17 {
            break;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_needs_more_bits_than_the_unblocked_optimum() {
        let g = Geometry::for_items(1_000_000, 0.01).unwrap();
        let bits_per_item = g.bits() as f64 / 1e6;
        assert!(
            bits_per_item > 9.59 && bits_per_item < 11.5,
            "{bits_per_item}"
        );
        assert!(g.predicted_fp(1_000_000) <= 0.01);
        let smaller = Geometry {
            lines: g.lines - 1,
            ..g
        };
        assert!(best_hashes(1_000_000, smaller.lines).1 > 0.01 * SIZING_MARGIN);
    }

    /// The formula term by term with `powf`, as written in the docs.
    fn blocked_fp_reference(load: f64, k: u32) -> f64 {
        let keep = 1.0 - 1.0 / LINE_BITS as f64;
        let last = (load + 12.0 * load.sqrt() + 40.0).ceil() as u32;
        let mut weight = (-load).exp();
        let mut total = 0.0;
        for j in 0..=last {
            if j > 0 {
                weight *= load / j as f64;
            }
            total += weight * (1.0 - keep.powf(j as f64 * k as f64)).powi(k as i32);
        }
        total
    }

    #[test]
    fn running_products_match_the_reference_formula() {
        for load in [0.01, 0.5, 3.0, 17.5, 45.0, 46.3, 70.0, 200.0] {
            for k in [1, 2, 5, 7, 10, 14, 20, 40, 64] {
                let (fast, slow) = (blocked_fp(load, k), blocked_fp_reference(load, k));
                assert!(
                    (fast - slow).abs() <= slow * 1e-9,
                    "load {load} k {k}: {fast} vs {slow}"
                );
            }
        }
    }

    #[test]
    fn remembered_sizings_equal_fresh_searches() {
        // 10 shapes fit the memory, so rounds after the first answer from it.
        for _round in 0..3 {
            for items in (1..=10u64).map(|i| i * 997) {
                let fp = 0.01 / items as f64;
                assert_eq!(
                    Geometry::for_items(items, fp).unwrap(),
                    Geometry::search_for_items(items, fp).unwrap()
                );
            }
        }
    }

    #[test]
    fn absurd_targets_are_rejected_without_allocating() {
        assert!(Geometry::for_items(u64::MAX, 1e-300).is_err());
        assert!(Geometry::for_items(10, 0.0).is_err());
        assert!(Geometry::new(0, 3).is_err());
    }
}
