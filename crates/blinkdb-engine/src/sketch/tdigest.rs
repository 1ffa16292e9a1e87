//! The merging t-digest of RedisBloom 2.8.2 (its `deps/t-digest-c` at
//! 9dcd73d): the same node buffer, sort, k-scale merge rule and
//! interpolations, with the float operations in the same order, so that
//! every reply is the double RedisBloom replies.
//!
//! Layout (as `td_histogram_t`): `cap = 6 * compression + 10` nodes; the first
//! `merged_nodes` are sorted centroids, the next `unmerged_nodes` are samples
//! buffered since the last compression. A compression sorts the whole buffer
//! (RedisBloom's unstable quicksort: equal means with different weights end
//! up where it puts them) and merges neighbours while the merged weight stays
//! under the k-scale bound. Queries compress first, so a read changes the
//! digest as it does in RedisBloom (INFO shows it, and later answers depend on
//! when the compressions happened).
//!
//! A digest loaded from a payload is only checked for what indexing needs
//! (node counts within the buffer); weights are whatever the payload said,
//! and arithmetic on them wraps as the C code's does, never panics.

// `q < 0.0 || q > 1.0` is the C code's test, which lets a NaN through;
// `!(0.0..=1.0).contains(&q)` would not.
#![allow(clippy::manual_range_contains)]

pub mod payload;
#[cfg(test)]
mod tests;

/// RedisModule_StringToDouble (Redis's `string2d`), which RedisBloom reads
/// every double argument with.
pub use crate::bloom::args::parse_f64 as string_to_double;

/// TDIGEST.CREATE's compression when none is given.
pub const DEFAULT_COMPRESSION: i64 = 100;

/// The most memory a loaded digest's node buffer may take (a payload does
/// not hold the buffer, only its size: the bound keeps a few bytes from
/// asking for terabytes). Commands use `sketch-max-memory` instead.
/// RedisBloom has no limit of its own: it tries the allocation, and the
/// server aborts when that fails.
pub const LOAD_MAX_BYTES: u64 = 16 << 30;

/// t-digest-c's `MM_PI` (the same double).
const MM_PI: f64 = std::f64::consts::PI;

/// 2^63 as a double: the first value past `i64`.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// A weight sum that would pass `i64::MAX`: RedisBloom's "overflow detected".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

/// The digest would take more than the limit, its compression gives no
/// buffer, or the allocation failed (RedisBloom: `td_init` fails).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

#[derive(Debug, Clone)]
pub struct TDigest {
    compression: f64,
    min: f64,
    max: f64,
    merged_nodes: usize,
    unmerged_nodes: usize,
    total_compressions: i64,
    merged_weight: i64,
    unmerged_weight: i64,
    /// The C arrays' size: what the buffer may grow to.
    cap: usize,
    /// The C arrays, grown on demand up to `cap`: every slot below
    /// `next_node()` exists, and a slot never written is 0 as calloc's are.
    /// (Allocating `cap` at once would let a payload of a few bytes ask for
    /// gigabytes.)
    means: Vec<f64>,
    weights: Vec<i64>,
    /// The file body's pages changed since its file got them: all of them
    /// after any change (the weights follow the means in the body, so one
    /// more node moves every weight; docs/sketch-file-format.md).
    pub(crate) pages: super::dirty::Dirty,
}

/// Bitwise, so that a digest equals its own copy whatever NaNs it holds.
impl PartialEq for TDigest {
    fn eq(&self, o: &Self) -> bool {
        let f = |a: f64, b: f64| a.to_bits() == b.to_bits();
        f(self.compression, o.compression)
            && f(self.min, o.min)
            && f(self.max, o.max)
            && self.merged_nodes == o.merged_nodes
            && self.unmerged_nodes == o.unmerged_nodes
            && self.total_compressions == o.total_compressions
            && self.merged_weight == o.merged_weight
            && self.unmerged_weight == o.unmerged_weight
            && self.cap == o.cap
            && self.weights[..self.next_node()] == o.weights[..o.next_node()]
            && self.means[..self.next_node()]
                .iter()
                .zip(&o.means[..o.next_node()])
                .all(|(a, b)| f(*a, *b))
    }
}
impl Eq for TDigest {}

/// `cap_from_compression`: the node count for a compression, None where the
/// C code gives 0 (its allocation then fails).
pub fn cap_from_compression(compression: f64) -> Option<usize> {
    // (size_t)compression: truncation; a negative or NaN one is out of range.
    if compression.is_nan() || compression < 0.0 || compression >= usize::MAX as f64 {
        return None;
    }
    let c = compression as usize;
    if c > (usize::MAX / 8 / 6) - 10 {
        return None;
    }
    Some(6 * c + 10)
}

/// Bytes of a digest of `cap` nodes as RedisBloom's TDigestMemUsage counts
/// them (`sizeof` of the pointer, not of the struct, plus both arrays).
pub fn mem_usage_of(cap: usize) -> usize {
    8 + 2 * cap * 8
}

/// `__td_max` / `__td_min`: ternaries, not IEEE max/min (NaNs go through as C's do).
fn td_max(x: f64, y: f64) -> f64 {
    if x > y {
        x
    } else {
        y
    }
}
fn td_min(x: f64, y: f64) -> f64 {
    if x < y {
        x
    } else {
        y
    }
}

fn weighted_average_sorted(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    let x = (x1 * w1 + x2 * w2) / (w1 + w2);
    td_max(x1, td_min(x, x2))
}

fn weighted_average(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    if x1 <= x2 {
        weighted_average_sorted(x1, w1, x2, w2)
    } else {
        weighted_average_sorted(x2, w2, x1, w1)
    }
}

/// `_tdigest_long_long_add_safe`, without the C's own overflow for b < 0.
fn add_safe(a: i64, b: i64) -> bool {
    if b < 0 {
        a as i128 >= i64::MAX as i128 - b as i128
    } else {
        a <= i64::MAX - b
    }
}

/// C's `modf`-based `_halfRoundDown` of RedisBloom's TDIGEST.RANK: halves go
/// toward zero, other fractions to the nearest integer.
fn half_round_down(f: f64) -> f64 {
    let int_part = f.trunc();
    let frac = f - int_part;
    if frac.abs() <= 0.5 {
        return int_part;
    }
    if int_part >= 0.0 {
        int_part + 1.0
    } else {
        int_part - 1.0
    }
}

/// `(long long)x` as x86-64 converts it: NaN and out-of-range values give
/// `i64::MIN` (cvttsd2si's "integer indefinite"), where Rust would saturate.
pub fn c_double_to_i64(x: f64) -> i64 {
    if x.is_nan() || !(-TWO_63..TWO_63).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

impl TDigest {
    /// `td_init`: an empty digest whose node buffer may take at most
    /// `max_bytes` (it is allocated as it fills).
    pub fn new(compression: f64, max_bytes: u64) -> Result<TDigest, TooLarge> {
        let cap = cap_from_compression(compression).ok_or(TooLarge)?;
        if cap < 1 || cap as u64 > max_bytes / 16 {
            return Err(TooLarge);
        }
        let mut t = TDigest {
            compression,
            min: 0.0,
            max: 0.0,
            merged_nodes: 0,
            unmerged_nodes: 0,
            total_compressions: 0,
            merged_weight: 0,
            unmerged_weight: 0,
            cap,
            means: Vec::new(),
            weights: Vec::new(),
            pages: super::dirty::Dirty::new(0),
        };
        t.reset();
        Ok(t)
    }

    /// `td_reset` (the buffer keeps its old contents, as in C: only the
    /// counts go to zero).
    pub fn reset(&mut self) {
        self.pages.mark_all();
        self.min = f64::MAX;
        self.max = -self.min;
        self.merged_nodes = 0;
        self.merged_weight = 0;
        self.unmerged_nodes = 0;
        self.unmerged_weight = 0;
        self.total_compressions = 0;
    }

    pub fn compression(&self) -> f64 {
        self.compression
    }
    pub fn cap(&self) -> usize {
        self.cap
    }
    pub fn merged_nodes(&self) -> usize {
        self.merged_nodes
    }
    pub fn unmerged_nodes(&self) -> usize {
        self.unmerged_nodes
    }
    pub fn merged_weight(&self) -> i64 {
        self.merged_weight
    }
    pub fn unmerged_weight(&self) -> i64 {
        self.unmerged_weight
    }
    pub fn total_compressions(&self) -> i64 {
        self.total_compressions
    }
    /// `td_size` (wrapping like C's signed sum in practice).
    pub fn size(&self) -> i64 {
        self.merged_weight.wrapping_add(self.unmerged_weight)
    }
    /// `td_min`: `f64::MAX` while empty.
    pub fn min(&self) -> f64 {
        self.min
    }
    /// `td_max`: `-f64::MAX` while empty.
    pub fn max(&self) -> f64 {
        self.max
    }
    /// What TDIGEST.INFO's `Memory usage` and MEMORY USAGE count.
    pub fn mem_usage(&self) -> usize {
        mem_usage_of(self.cap())
    }
    /// Heap bytes besides the struct (MEMORY USAGE): the two node arrays.
    pub fn heap_bytes(&self) -> usize {
        (self.means.capacity() + self.weights.capacity()) * 8
    }

    /// `td_new`'s calloc of the whole buffer: a digest a command creates
    /// holds its `cap` nodes from the start, as RedisBloom's does (so MEMORY
    /// USAGE covers TDIGEST.INFO's `Memory usage`, as RedisBloom's flow test
    /// checks); one read from a payload grows as it fills instead.
    pub fn allocate_all(&mut self) {
        self.ensure(self.cap);
    }

    /// Makes slots `..n` exist (n <= cap), zero where never written; grows
    /// by doubling, never past `cap`.
    pub(crate) fn ensure(&mut self, n: usize) {
        let len = self.means.len();
        if n <= len {
            return;
        }
        self.pages.mark_all();
        let target = n.max(len * 2).min(self.cap).max(n);
        self.means.reserve_exact(target - len);
        self.weights.reserve_exact(target - len);
        self.means.resize(target, 0.0);
        self.weights.resize(target, 0);
    }

    fn next_node(&self) -> usize {
        self.merged_nodes + self.unmerged_nodes
    }

    /// `td_add`.
    pub fn add(&mut self, mean: f64, weight: i64) -> Result<(), Overflow> {
        if self.next_node() + 1 >= self.cap() {
            self.compress()?;
        }
        let pos = self.next_node();
        if pos >= self.cap() {
            return Err(Overflow);
        }
        if !add_safe(self.unmerged_weight, weight) {
            return Err(Overflow);
        }
        let new_unmerged_weight = self.unmerged_weight + weight;
        if !add_safe(new_unmerged_weight, self.merged_weight) {
            return Err(Overflow);
        }
        // The C code also checks that the new weights, as doubles, and
        // 2*pi*W*log(W) are finite: for any W below 2^63 they are, so the
        // log is not computed for every sample.
        if mean < self.min {
            self.min = mean;
        }
        if mean > self.max {
            self.max = mean;
        }
        self.ensure(pos + 1);
        self.pages.mark_all();
        self.means[pos] = mean;
        self.weights[pos] = weight;
        self.unmerged_nodes += 1;
        self.unmerged_weight = new_unmerged_weight;
        Ok(())
    }

    /// `td_compress`: sorts the buffer and merges it into centroids. A digest
    /// of total weight 1 or less is sorted but stays unmerged, as in C (its
    /// quantiles are then NaN).
    pub fn compress(&mut self) -> Result<(), Overflow> {
        if self.unmerged_nodes == 0 {
            return Ok(());
        }
        self.pages.mark_all();
        let n = self.next_node();
        sort(&mut self.means[..n], &mut self.weights[..n]);
        let total_weight = self.merged_weight as f64 + self.unmerged_weight as f64;
        if total_weight == f64::INFINITY {
            return Err(Overflow);
        }
        if total_weight <= 1.0 {
            return Ok(());
        }
        let denom = 2.0 * MM_PI * total_weight * total_weight.ln();
        if denom == f64::INFINITY {
            return Err(Overflow);
        }
        let normalizer = self.compression / denom;
        if normalizer == f64::INFINITY {
            return Err(Overflow);
        }
        let (means, weights) = (&mut self.means, &mut self.weights);
        let mut cur = 0usize;
        let mut weight_so_far = 0.0f64;
        for i in 1..n {
            let proposed_weight = weights[cur] as f64 + weights[i] as f64;
            let z = proposed_weight * normalizer;
            let q0 = weight_so_far / total_weight;
            let q2 = (weight_so_far + proposed_weight) / total_weight;
            if z <= q0 * (1.0 - q0) && z <= q2 * (1.0 - q2) {
                weights[cur] = weights[cur].wrapping_add(weights[i]);
                let delta = means[i] - means[cur];
                let weighted_delta = (delta * weights[i] as f64) / weights[cur] as f64;
                means[cur] += weighted_delta;
            } else {
                weight_so_far += weights[cur] as f64;
                cur += 1;
                weights[cur] = weights[i];
                means[cur] = means[i];
            }
            if cur != i {
                weights[i] = 0;
                means[i] = 0.0;
            }
        }
        self.merged_nodes = cur + 1;
        self.merged_weight = total_weight as i64;
        self.unmerged_nodes = 0;
        self.unmerged_weight = 0;
        self.total_compressions = self.total_compressions.wrapping_add(1);
        Ok(())
    }

    /// `td_merge` of an already compressed `from` (the caller compresses
    /// each source in place first, as `td_merge` does).
    pub fn merge_from(&mut self, from: &TDigest) -> Result<(), Overflow> {
        self.compress()?;
        for i in 0..from.next_node() {
            self.add(from.means[i], from.weights[i])?;
        }
        Ok(())
    }

    /// `td_cdf`.
    pub fn cdf(&mut self, val: f64) -> f64 {
        let _ = self.compress();
        let n = self.merged_nodes;
        if n == 0 {
            return f64::NAN;
        }
        if val < self.min {
            return 0.0;
        }
        if val > self.max {
            return 1.0;
        }
        if n == 1 {
            let width = self.max - self.min;
            return if val - self.min <= width {
                0.5
            } else {
                (val - self.min) / width
            };
        }
        let (means, weights) = (&self.means, &self.weights);
        let left_centroid_mean = means[0];
        let left_centroid_weight = weights[0] as f64;
        let merged_weight_d = self.merged_weight as f64;
        if val < left_centroid_mean {
            let width = left_centroid_mean - self.min;
            if width > 0.0 {
                if val == self.min {
                    return 0.5 / merged_weight_d;
                }
                return (1.0 + (val - self.min) / width * (left_centroid_weight / 2.0 - 1.0))
                    / merged_weight_d;
            }
            return 0.0;
        }
        let right_centroid_mean = means[n - 1];
        let right_centroid_weight = weights[n - 1] as f64;
        if val > right_centroid_mean {
            let width = self.max - right_centroid_mean;
            if width > 0.0 {
                if val == self.max {
                    return 1.0 - 0.5 / merged_weight_d;
                }
                let dq = (1.0 + (self.max - val) / width * (right_centroid_weight / 2.0 - 1.0))
                    / merged_weight_d;
                return 1.0 - dq;
            }
            return 1.0;
        }
        let mut weight_so_far = 0.0f64;
        let mut it = 0usize;
        while it + 1 < n {
            if means[it] == val {
                let mut dw = 0.0f64;
                while it < n && means[it] == val {
                    dw += weights[it] as f64;
                    it += 1;
                }
                return (weight_so_far + dw / 2.0) / self.merged_weight as f64;
            } else if means[it] <= val && val < means[it + 1] {
                let node_weight = weights[it] as f64;
                let node_weight_next = weights[it + 1] as f64;
                let node_mean = means[it];
                let node_mean_next = means[it + 1];
                if node_mean_next - node_mean > 0.0 {
                    let mut left_excluded_w = 0.0;
                    let mut right_excluded_w = 0.0;
                    if node_weight == 1.0 {
                        if node_weight_next == 1.0 {
                            return (weight_so_far + 1.0) / merged_weight_d;
                        }
                        left_excluded_w = 0.5;
                    } else if node_weight_next == 1.0 {
                        right_excluded_w = 0.5;
                    }
                    let dw = (node_weight + node_weight_next) / 2.0;
                    let dw_no_singleton = dw - left_excluded_w - right_excluded_w;
                    let base = weight_so_far + node_weight / 2.0 + left_excluded_w;
                    return (base
                        + dw_no_singleton * (val - node_mean) / (node_mean_next - node_mean))
                        / merged_weight_d;
                }
                let dw = (node_weight + node_weight_next) / 2.0;
                return (weight_so_far + dw) / merged_weight_d;
            } else {
                weight_so_far += weights[it] as f64;
            }
            it += 1;
        }
        1.0 - 0.5 / merged_weight_d
    }

    /// `td_internal_iterate_centroids_to_index`: the value at `index` (a
    /// weight), walking on from `*node_pos` with `*weight_so_far`.
    fn value_at_index(
        &self,
        index: f64,
        left_centroid_weight: f64,
        weight_so_far: &mut f64,
        node_pos: &mut usize,
    ) -> f64 {
        let n = self.merged_nodes;
        let (means, weights) = (&self.means, &self.weights);
        if left_centroid_weight > 1.0 && index < left_centroid_weight / 2.0 {
            return self.min
                + (index - 1.0) / (left_centroid_weight / 2.0 - 1.0) * (means[0] - self.min);
        }
        if index > self.merged_weight.wrapping_sub(1) as f64 {
            return self.max;
        }
        let right_centroid_weight = weights[n - 1] as f64;
        let right_centroid_mean = means[n - 1];
        let merged_weight_d = self.merged_weight as f64;
        if right_centroid_weight > 1.0 && merged_weight_d - index <= right_centroid_weight / 2.0 {
            return self.max
                - (merged_weight_d - index - 1.0) / (right_centroid_weight / 2.0 - 1.0)
                    * (self.max - right_centroid_mean);
        }
        while *node_pos + 1 < n {
            let i = *node_pos;
            let node_weight = weights[i] as f64;
            let node_weight_next = weights[i + 1] as f64;
            let node_mean = means[i];
            let node_mean_next = means[i + 1];
            let dw = (node_weight + node_weight_next) / 2.0;
            if *weight_so_far + dw > index {
                let mut left_unit = 0.0;
                if node_weight == 1.0 {
                    if index - *weight_so_far < 0.5 {
                        return node_mean;
                    }
                    left_unit = 0.5;
                }
                let mut right_unit = 0.0;
                if node_weight_next == 1.0 {
                    if *weight_so_far + dw - index <= 0.5 {
                        return node_mean_next;
                    }
                    right_unit = 0.5;
                }
                let z1 = index - *weight_so_far - left_unit;
                let z2 = *weight_so_far + dw - index - right_unit;
                return weighted_average(node_mean, z2, node_mean_next, z1);
            }
            *weight_so_far += dw;
            *node_pos += 1;
        }
        let z1 = index - merged_weight_d - right_centroid_weight / 2.0;
        let z2 = right_centroid_weight / 2.0 - z1;
        weighted_average(right_centroid_mean, z1, self.max, z2)
    }

    /// `td_quantile`.
    pub fn quantile(&mut self, q: f64) -> f64 {
        let _ = self.compress();
        if q < 0.0 || q > 1.0 || self.merged_nodes == 0 {
            return f64::NAN;
        }
        if self.merged_nodes == 1 {
            return self.means[0];
        }
        let index = q * self.merged_weight as f64;
        if index < 1.0 {
            return self.min;
        }
        let left_centroid_weight = self.weights[0] as f64;
        let mut weight_so_far = left_centroid_weight / 2.0;
        let mut pos = 0;
        self.value_at_index(index, left_centroid_weight, &mut weight_so_far, &mut pos)
    }

    /// `td_quantiles`: one walk for nondecreasing `qs` (no `index < 1` and
    /// no range check, unlike `td_quantile`).
    pub fn quantiles(&mut self, qs: &[f64], out: &mut [f64]) {
        let _ = self.compress();
        let n = self.merged_nodes;
        if n == 0 {
            out.iter_mut().for_each(|v| *v = f64::NAN);
            return;
        }
        if n == 1 {
            for (v, &q) in out.iter_mut().zip(qs) {
                *v = if q < 0.0 || q > 1.0 {
                    f64::NAN
                } else {
                    self.means[0]
                };
            }
            return;
        }
        let left_centroid_weight = self.weights[0] as f64;
        let mut weight_so_far = left_centroid_weight / 2.0;
        let mut pos = 0;
        for (v, &q) in out.iter_mut().zip(qs) {
            let index = q * self.merged_weight as f64;
            *v = self.value_at_index(index, left_centroid_weight, &mut weight_so_far, &mut pos);
        }
    }

    /// TDIGEST.QUANTILE's answers: each run of nondecreasing quantiles in
    /// one `td_quantiles` walk, as RedisBloom groups them.
    pub fn quantile_runs(&mut self, qs: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; qs.len()];
        let mut i = 0;
        while i < qs.len() {
            let start = i;
            while i + 1 < qs.len() && qs[i] <= qs[i + 1] {
                i += 1;
            }
            self.quantiles(&qs[start..=i], &mut out[start..=i]);
            i += 1;
        }
        out
    }

    /// `td_trimmed_mean` (cuts already checked to be in [0,1] and ordered by
    /// the command; C's own checks kept).
    pub fn trimmed_mean(&mut self, leftmost_cut: f64, rightmost_cut: f64) -> f64 {
        let _ = self.compress();
        if self.merged_nodes == 0
            || leftmost_cut < 0.0
            || leftmost_cut > 1.0
            || rightmost_cut < 0.0
            || rightmost_cut > 1.0
        {
            return f64::NAN;
        }
        if self.merged_nodes == 1 {
            return self.means[0];
        }
        let leftmost_weight = (self.merged_weight as f64 * leftmost_cut).floor();
        let rightmost_weight = (self.merged_weight as f64 * rightmost_cut).ceil();
        let mut count_done = 0.0f64;
        let mut trimmed_sum = 0.0f64;
        let mut trimmed_count = 0.0f64;
        for i in 0..self.merged_nodes {
            let n_weight = self.weights[i] as f64;
            let mut count_add = n_weight;
            count_add -= td_min(td_max(0.0, leftmost_weight - count_done), count_add);
            count_add = td_min(td_max(0.0, rightmost_weight - count_done), count_add);
            count_done += n_weight;
            trimmed_sum += self.means[i] * count_add;
            trimmed_count += count_add;
            if count_done >= rightmost_weight {
                break;
            }
        }
        trimmed_sum / trimmed_count
    }

    /// TDIGEST.RANK (`reverse`: REVRANK) of each value: -2 while empty, the
    /// outer ranks past min and max, the rounded cdf in between.
    pub fn ranks(&mut self, values: &[f64], reverse: bool) -> Vec<i64> {
        let size = self.size() as f64;
        let (min, max) = (self.min, self.max);
        values
            .iter()
            .map(|&v| {
                let rank = if size == 0.0 {
                    -2.0
                } else if v < min {
                    if reverse {
                        size
                    } else {
                        -1.0
                    }
                } else if v > max {
                    if reverse {
                        -1.0
                    } else {
                        size
                    }
                } else {
                    let prior_round = self.cdf(v) * size;
                    if reverse {
                        (size - prior_round.round()).round()
                    } else {
                        half_round_down(prior_round)
                    }
                };
                c_double_to_i64(rank)
            })
            .collect()
    }

    /// TDIGEST.BYRANK (`reverse`: BYREVRANK) of each non-negative rank.
    pub fn by_ranks(&mut self, ranks: &[i64], reverse: bool) -> Vec<f64> {
        let size = self.size() as f64;
        let (min, max) = (self.min, self.max);
        ranks
            .iter()
            .map(|&r| {
                let input_rank = r as f64;
                if size == 0.0 {
                    f64::NAN
                } else if input_rank == 0.0 {
                    if reverse {
                        max
                    } else {
                        min
                    }
                } else if input_rank >= size {
                    if reverse {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    }
                } else {
                    let rank = if reverse {
                        size - input_rank - 1.0
                    } else {
                        input_rank
                    };
                    self.quantile(rank / size)
                }
            })
            .collect()
    }
}

/// Sorts the parallel arrays by mean into the order `td_qsort` leaves them in.
fn sort(means: &mut [f64], weights: &mut [i64]) {
    if means.len() < 2 {
        return;
    }
    // Sorted, the nodes have one order but for ties (equal means: the same
    // value, or 0 and -0), so the library's sort (branchless partitions)
    // gives td_qsort's order whenever tied nodes are identical (same bits,
    // same weight), as repeated samples are. td_qsort's compare-and-swap
    // loop, mispredicted on random means, was two thirds of a compression.
    // Other ties keep the order td_qsort's pivots give them, which decides
    // what merges: those buffers, and NaN, take td_qsort's own steps from the
    // unsorted buffer (a quarter of compressions of random integers).
    let mut pairs: Vec<(f64, i64)> = means.iter().copied().zip(weights.iter().copied()).collect();
    if pairs.iter().any(|p| p.0.is_nan()) {
        return sort_as_c(means, weights);
    }
    pairs.sort_unstable_by(|a, b| a.0.partial_cmp(&b.0).expect("no NaN"));
    if pairs
        .windows(2)
        .any(|w| w[0].0 == w[1].0 && (w[0].0.to_bits() != w[1].0.to_bits() || w[0].1 != w[1].1))
    {
        return sort_as_c(means, weights);
    }
    for ((m, w), (pm, pw)) in means.iter_mut().zip(weights.iter_mut()).zip(pairs) {
        *m = pm;
        *w = pw;
    }
}

/// `td_qsort` on parallel arrays: Lomuto partition around the middle
/// element, recursion replaced by a stack of ranges (the ranges are
/// disjoint, so the order they are done in changes nothing). A range whose
/// means are all equal is permuted as the quicksort would permute it, in
/// one pass instead of its quadratic one.
fn sort_as_c(means: &mut [f64], weights: &mut [i64]) {
    if means.len() < 2 {
        return;
    }
    let mut ranges = vec![(0usize, means.len() - 1)];
    while let Some((start, end)) = ranges.pop() {
        if start >= end {
            continue;
        }
        if end - start == 1 {
            if means[start] > means[end] {
                means.swap(start, end);
                weights.swap(start, end);
            }
            continue;
        }
        if all_equal(&means[start..=end]) {
            equal_run(means, weights, start, end);
            continue;
        }
        let p = partition(means, weights, start, end, (end + start) / 2);
        if p > start {
            ranges.push((start, p - 1));
        }
        ranges.push((p + 1, end));
    }
}

fn all_equal(means: &[f64]) -> bool {
    // `==` as the partition compares: a NaN is never equal, so a range
    // holding one takes the general path.
    means.iter().all(|m| *m == means[0])
}

/// What `td_qsort` does to a range of equal means: each level swaps the
/// middle element to the end, then the end to the front (nothing is less
/// than the pivot), and goes on with the rest; the last two compare equal
/// and stay. The means move too: 0 and -0 compare equal.
fn equal_run(means: &mut [f64], weights: &mut [i64], mut start: usize, end: usize) {
    while end > start + 1 {
        let mid = (end + start) / 2;
        means.swap(mid, end);
        weights.swap(mid, end);
        means.swap(start, end);
        weights.swap(start, end);
        start += 1;
    }
}

fn partition(
    means: &mut [f64],
    weights: &mut [i64],
    start: usize,
    end: usize,
    pivot_idx: usize,
) -> usize {
    let pivot_mean = means[pivot_idx];
    means.swap(pivot_idx, end);
    weights.swap(pivot_idx, end);
    // `i` is one before the next slot for a smaller element (C: start - 1).
    let mut next = start;
    for j in start..end {
        if means[j] < pivot_mean {
            means.swap(next, j);
            weights.swap(next, j);
            next += 1;
        }
    }
    means.swap(next, end);
    weights.swap(next, end);
    next
}
