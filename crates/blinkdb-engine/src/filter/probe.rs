//! Item hashing: one xxh3-128 per item, reusable across the filters of a chain.

use super::geometry::MAX_HASHES;
use super::layout::{BIT_WORDS, LINE_BITS, LINE_WORDS64};
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
        let seed = (self.0 >> 64) as u64;
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
