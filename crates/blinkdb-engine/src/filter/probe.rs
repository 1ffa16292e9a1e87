//! Item hashing: one xxh3-128 per item, reusable across the filters of a chain.

use super::geometry::MAX_HASHES;
use super::layout::{BIT_WORDS, LINE_BITS, LINE_WORDS64};
#[cfg(target_arch = "x86_64")]
use std::sync::atomic::AtomicU64;
use xxhash_rust::xxh3::xxh3_128;

/// 2^64 / golden ratio, odd: an LCG multiplier with full period and good high bits.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Probe i's generator state is `STEP_MUL[i] * seed + STEP_ADD[i]` (wrapping): the
/// closed form of i steps of `s = s * G + G`. Same bits as stepping, but the k
/// multiplies are independent, so they pipeline instead of forming a k-long chain.
const STEP_MUL: [u64; MAX_HASHES as usize] = step_constants().0;
const STEP_ADD: [u64; MAX_HASHES as usize] = step_constants().1;

const fn step_constants() -> ([u64; MAX_HASHES as usize], [u64; MAX_HASHES as usize]) {
    let mut mul = [0u64; MAX_HASHES as usize];
    let mut add = [0u64; MAX_HASHES as usize];
    mul[0] = 1;
    let mut i = 1;
    while i < MAX_HASHES as usize {
        mul[i] = mul[i - 1].wrapping_mul(GOLDEN_GAMMA);
        add[i] = add[i - 1]
            .wrapping_mul(GOLDEN_GAMMA)
            .wrapping_add(GOLDEN_GAMMA);
        i += 1;
    }
    (mul, add)
}

/// The 128-bit hash of an item; compute once, probe many filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemHash(u128);

impl ItemHash {
    #[inline]
    pub fn of(item: &[u8]) -> ItemHash {
        ItemHash(xxh3_128(item))
    }

    /// The hash as stored in a side log: little-endian (the kernel digest's bytes).
    pub fn to_digest(self) -> [u8; 16] {
        self.0.to_le_bytes()
    }

    pub fn from_digest(digest: [u8; 16]) -> ItemHash {
        ItemHash(u128::from_le_bytes(digest))
    }

    /// The high 64 bits, which seed the in-line probes.
    #[inline]
    pub(crate) fn seed(self) -> u64 {
        (self.0 >> 64) as u64
    }

    /// Line index in `0..lines`: multiply-high range reduction of the low 64 bits,
    /// which has no modulo bias worth measuring and no division.
    #[inline]
    pub fn line(self, lines: u64) -> u64 {
        ((self.0 as u64 as u128 * lines as u128) >> 64) as u64
    }

    /// Per-u32-word masks of the k bits inside the line (see [`ItemHash::line_masks`]).
    pub fn masks(self, hashes: u32) -> [u32; BIT_WORDS] {
        let wide = self.line_masks(hashes);
        std::array::from_fn(|w| (wide[w / 2] >> (32 * (w % 2))) as u32)
    }

    /// The k bit positions (0..480) inside the line, in probe order.
    #[inline]
    pub(crate) fn probe_bits(self, hashes: u32) -> impl Iterator<Item = u64> {
        let seed = self.seed();
        let hashes = (hashes as usize).min(MAX_HASHES as usize);
        STEP_MUL[..hashes]
            .iter()
            .zip(&STEP_ADD[..hashes])
            .map(move |(mul, add)| {
                let state = seed.wrapping_mul(*mul).wrapping_add(*add);
                ((state >> 32) * LINE_BITS as u64) >> 32
            })
    }

    /// Per-u64-word masks of the k bits inside the line (bit b is bit b%64 of word
    /// b/64; word 7 only uses its low 32 bits). The high 64 bits seed a 64-bit
    /// multiplicative generator; each probe takes the top 32 bits of the state and
    /// reduces them onto 480 bits by multiply-high. Plain a + i·b double hashing
    /// measured 7% above the predicted rate at 1%; this does not.
    #[inline]
    pub fn line_masks(self, hashes: u32) -> [u64; LINE_WORDS64] {
        let mut masks = [0u64; LINE_WORDS64];
        for bit in self.probe_bits(hashes) {
            let one = 1u64 << (bit & 63);
            // Select instead of `masks[bit >> 6] |= one`: an indexed read-modify-write
            // of the stack array measured ~3x slower (store-to-load forwarding stalls).
            for (word, mask) in masks.iter_mut().enumerate() {
                *mask |= one & ((word as u64 == bit >> 6) as u64).wrapping_neg();
            }
        }
        masks
    }
}

/// Whether every probe bit of `seed` (the hash's high 64 bits) is set in `line`
/// (eight little-endian u64 words), eight probes at a time.
/// Same bits as [`ItemHash::probe_bits`]: the 64-bit generator state is built from
/// 32-bit multiplies (AVX2 has no 64-bit one), and the line's sixteen u32 words are
/// looked up in registers (two 8-lane permutes), so a probe costs no scalar multiply,
/// load or variable shift. Hand-written because no crate probes this file format.
/// AVX-512 (16 probes a step, one permute) was measured and dropped: faster in-process,
/// but in the server every command got slower (BF.EXISTS -P 16 ~10%, BF.MEXISTS of 128
/// ~9%), as 512-bit code slows the whole core (docs/bloom-file-format.md).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn covers_avx2(line: &[AtomicU64; LINE_WORDS64], seed: u64, hashes: u32) -> bool {
    use core::arch::x86_64::*;
    let hashes = (hashes as usize).min(MAX_HASHES as usize);
    // The line in two registers. Its words are atomics that other threads may be setting
    // bits in (under a stripe lock), so Rust must not read them with a plain load; the
    // load is an `asm!` block, which the compiler treats as opaque, with the effect of
    // eight relaxed loads: each aligned 8-byte part of a vector load is read whole on
    // x86, and even a torn word could only lack bits of an insert still in progress, as a
    // read made just before it would (bits are only ever added). Eight scalar loads put
    // into vectors instead cost ~2 ns per lookup in shuffles.
    let (low_words, high_words): (__m256i, __m256i);
    // SAFETY: `line` is 64 readable bytes, and the asm only reads them.
    core::arch::asm!(
        "vmovdqu {low}, ymmword ptr [{line}]",
        "vmovdqu {high}, ymmword ptr [{line} + 32]",
        line = in(reg) line.as_ptr(),
        low = out(ymm_reg) low_words,
        high = out(ymm_reg) high_words,
        options(nostack, preserves_flags, readonly),
    );
    let seed_low = _mm256_set1_epi64x(seed as i64);
    let seed_high = _mm256_srli_epi64::<32>(seed_low);
    let line_bits = _mm256_set1_epi64x(LINE_BITS as i64);
    // Four probes' bit positions (0..480) in the low halves of four u64 lanes.
    // SAFETY (loads): STEP_* have MAX_HASHES entries, and first + 4 <= chunk + 8 <=
    // MAX_HASHES because chunk is a multiple of 8 below hashes <= 64.
    let positions = |first: usize| {
        let mul = _mm256_loadu_si256(STEP_MUL.as_ptr().add(first) as *const __m256i);
        let add = _mm256_loadu_si256(STEP_ADD.as_ptr().add(first) as *const __m256i);
        let low = _mm256_mul_epu32(seed_low, mul);
        let cross = _mm256_add_epi64(
            _mm256_mul_epu32(seed_high, mul),
            _mm256_mul_epu32(seed_low, _mm256_srli_epi64::<32>(mul)),
        );
        let state = _mm256_add_epi64(_mm256_add_epi64(low, _mm256_slli_epi64::<32>(cross)), add);
        _mm256_srli_epi64::<32>(_mm256_mul_epu32(_mm256_srli_epi64::<32>(state), line_bits))
    };
    let mut chunk = 0;
    while chunk < hashes {
        // u32 lane 2j holds probe chunk+j, lane 2j+1 probe chunk+4+j.
        let bit = _mm256_or_si256(
            positions(chunk),
            _mm256_slli_epi64::<32>(positions(chunk + 4)),
        );
        let word = _mm256_srli_epi32::<5>(bit);
        let from_low = _mm256_permutevar8x32_epi32(low_words, word);
        let from_high = _mm256_permutevar8x32_epi32(high_words, word);
        let in_high = _mm256_cmpgt_epi32(word, _mm256_set1_epi32(7));
        let value = _mm256_blendv_epi8(from_low, from_high, in_high);
        let shifted = _mm256_srlv_epi32(value, _mm256_and_si256(bit, _mm256_set1_epi32(31)));
        let clear = _mm256_cmpeq_epi32(
            _mm256_and_si256(shifted, _mm256_set1_epi32(1)),
            _mm256_setzero_si256(),
        );
        let clear = _mm256_movemask_ps(_mm256_castsi256_ps(clear)) as u32;
        if clear & live_lanes((hashes - chunk).min(8)) != 0 {
            return false;
        }
        chunk += 8;
    }
    true
}

/// The lanes of a chunk in [`covers_avx2`] that hold one of its first `remaining` (at
/// most 8) probes: lane 2j holds probe j and lane 2j+1 probe 4+j.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
const fn live_lanes(remaining: usize) -> u32 {
    let low = if remaining < 4 { remaining } else { 4 };
    let high = remaining - low;
    // Even lanes 0, 2, .. for the first `low` probes, odd lanes for the next `high`.
    (0x55 & ((1u32 << (2 * low)) - 1)) | (0xAA & ((1u32 << (2 * high)) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe function is part of the file format: it must stay the stepped LCG.
    #[test]
    fn closed_form_matches_the_stepped_generator() {
        for item in 0u64..2_000 {
            let hash = ItemHash::of(&item.to_le_bytes());
            for hashes in [1, 7, 13, MAX_HASHES] {
                let mut state = (hash.0 >> 64) as u64;
                let mut stepped = [0u32; BIT_WORDS];
                for _ in 0..hashes {
                    let bit = (((state >> 32) * LINE_BITS as u64) >> 32) as usize;
                    stepped[bit >> 5] |= 1 << (bit & 31);
                    state = state.wrapping_mul(GOLDEN_GAMMA).wrapping_add(GOLDEN_GAMMA);
                }
                assert_eq!(hash.masks(hashes), stepped, "item {item} k {hashes}");
            }
        }
    }
}
