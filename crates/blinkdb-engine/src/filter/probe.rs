//! Item hashing: one xxh3-128 per item, reusable across the filters of a chain.

use super::layout::{BIT_WORDS, LINE_BITS};
use xxhash_rust::xxh3::xxh3_128;

/// 2^64 / golden ratio, odd: an LCG multiplier with full period and good high bits.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The 128-bit hash of an item; compute once, probe many filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemHash(u128);

impl ItemHash {
    pub fn of(item: &[u8]) -> ItemHash {
        ItemHash(xxh3_128(item))
    }

    /// Line index in `0..lines`: multiply-high range reduction of the low 64 bits,
    /// which has no modulo bias worth measuring and no division.
    #[inline]
    pub fn line(self, lines: u64) -> u64 {
        ((self.0 as u64 as u128 * lines as u128) >> 64) as u64
    }

    /// Per-word masks of the k bits inside the line. The high 64 bits seed a 64-bit
    /// multiplicative generator; each probe takes the top 32 bits of the state and
    /// reduces them onto 480 bits by multiply-high. Plain a + i·b double hashing
    /// measured 7% above the predicted rate at 1%; this does not.
    #[inline]
    pub fn masks(self, hashes: u32) -> [u32; BIT_WORDS] {
        let mut state = (self.0 >> 64) as u64;
        let mut masks = [0u32; BIT_WORDS];
        for _ in 0..hashes {
            let bit = (((state >> 32) * LINE_BITS as u64) >> 32) as usize;
            masks[bit >> 5] |= 1 << (bit & 31);
            state = state.wrapping_mul(GOLDEN_GAMMA).wrapping_add(GOLDEN_GAMMA);
        }
        masks
    }
}
