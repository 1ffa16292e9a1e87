//! MurmurHash2 (32-bit) as RedisBloom's deps/murmur2 computes it: CMS rows,
//! top-k buckets and fingerprints all hash with it, and the same item under
//! one seed per row.

/// MurmurHash2 of `data`: 4-byte little-endian blocks, the tail mixed in
/// byte by byte.
pub fn murmur2(data: &[u8], seed: u32) -> u32 {
    // `len` is an `int` in C: the item length truncated to 32 bits.
    let mut h = seed ^ (data.len() as u32);
    let mut blocks = data.chunks_exact(4);
    for b in &mut blocks {
        h = h.wrapping_mul(M) ^ mix(b);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        if tail.len() == 3 {
            h ^= (tail[2] as u32) << 16;
        }
        if tail.len() >= 2 {
            h ^= (tail[1] as u32) << 8;
        }
        h ^= tail[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

const M: u32 = 0x5bd1_e995;

/// A 4-byte block's own mixing, which does not depend on the seed.
#[inline]
fn mix(b: &[u8]) -> u32 {
    let mut k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    k = k.wrapping_mul(M);
    k ^= k >> 24;
    k.wrapping_mul(M)
}

/// Blocks mixed ahead for items up to this many 4-byte blocks (64 octets);
/// a longer item is hashed whole for each seed.
const INLINE: usize = 16;

/// One item's [`murmur2`] under several seeds. A block's own mixing does
/// not depend on the seed, so it is done once here, and each seed's hash
/// only folds the mixed blocks in (a count-min sketch or top-k hashes the
/// same item once per row).
pub struct Seeded<'a> {
    data: &'a [u8],
    /// The mixed blocks, `blocks` of them; `blocks` past INLINE: not
    /// mixed ahead (a long item).
    mixed: [u32; INLINE],
    blocks: usize,
    /// The tail's octets as the reference XORs them in, and whether there
    /// is a tail.
    tail: u32,
    has_tail: bool,
}

impl<'a> Seeded<'a> {
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        let mut mixed = [0u32; INLINE];
        let chunks = data.chunks_exact(4);
        let rest = chunks.remainder();
        let tail = rest.iter().rev().fold(0u32, |t, &b| t << 8 | b as u32);
        let blocks = data.len() / 4;
        if blocks <= INLINE {
            for (slot, b) in mixed.iter_mut().zip(chunks) {
                *slot = mix(b);
            }
        }
        Seeded {
            data,
            mixed,
            blocks,
            tail,
            has_tail: !rest.is_empty(),
        }
    }

    /// `murmur2(data, seed)`.
    #[inline(always)]
    pub fn hash(&self, seed: u32) -> u32 {
        if self.blocks > INLINE {
            return murmur2(self.data, seed);
        }
        let mut h = seed ^ (self.data.len() as u32);
        for &k in &self.mixed[..self.blocks] {
            h = h.wrapping_mul(M) ^ k;
        }
        if self.has_tail {
            h = (h ^ self.tail).wrapping_mul(M);
        }
        h ^= h >> 13;
        h = h.wrapping_mul(M);
        h ^ (h >> 15)
    }
}

impl Seeded<'_> {
    /// The item's slot in each row of a `width` x `depth` array kept row
    /// after row, in row order, as RedisBloom places a count-min counter or
    /// a top-k bucket: `murmur2(data, row) % width` in row `row` (the seed is
    /// the row number, as C passes a size_t to a uint32_t). (Folding each
    /// block into 8 seeds at once was tried: more instructions per TOPK.ADD
    /// and CMS.INCRBY item.)
    #[inline]
    pub fn row_slots(&self, width: usize, depth: usize) -> impl Iterator<Item = usize> + '_ {
        (0..depth).map(move |row| self.hash(row as u32) as usize % width + row * width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_the_reference() {
        // Values printed by RedisBloom 2.8.2's deps/murmur2/MurmurHash2.c.
        let cases: [(&[u8], u32, u32); 10] = [
            (b"", 0, 0),
            (b"", 1919, 0x4a85_66e0),
            (b"hello", 1, 0xa631_918e),
            (
                b"The quick brown fox jumps over the lazy dog",
                1919,
                0xbc85_4605,
            ),
            (b"a", 7, 0xfbeb_9e30),
            (b"ab", 0, 0x1aa1_4063),
            (b"abc", 1, 0x60a4_fcc1),
            (b"abcd", 1919, 0x81b5_5b43),
            (b"abcd", 7, 0x80c2_68ee),
            (
                b"The quick brown fox jumps over the lazy dog",
                0,
                0x2127_29d0,
            ),
        ];
        for (data, seed, want) in cases {
            assert_eq!(murmur2(data, seed), want, "{data:?} {seed}");
        }
    }

    #[test]
    fn seeded_equals_murmur2() {
        let data: Vec<u8> = (0..80u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 9) as u8)
            .collect();
        for len in 0..data.len() {
            let item = &data[..len];
            let seeded = Seeded::new(item);
            for seed in [0, 1, 6, 7, 1919, u32::MAX] {
                assert_eq!(
                    seeded.hash(seed),
                    murmur2(item, seed),
                    "len {len} seed {seed}"
                );
            }
            for (width, depth) in [(1 << 32, 0), (1 << 32, 1), (1 << 32, 9), (2000, 7), (3, 20)] {
                let want: Vec<usize> = (0..depth)
                    .map(|row| murmur2(item, row as u32) as usize % width + row * width)
                    .collect();
                assert_eq!(
                    seeded.row_slots(width, depth).collect::<Vec<_>>(),
                    want,
                    "len {len} width {width} depth {depth}"
                );
            }
        }
    }
}
