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
    #[inline(always)]
    pub fn new(data: &'a [u8]) -> Self {
        let chunks = data.chunks_exact(4);
        let rest = chunks.remainder();
        let mut s = Seeded {
            data,
            mixed: [0u32; INLINE],
            blocks: data.len() / 4,
            tail: rest.iter().rev().fold(0u32, |t, &b| t << 8 | b as u32),
            has_tail: !rest.is_empty(),
        };
        // Mixed in place: a local array copied in afterwards was stored a
        // word at a time and read back 16 octets at a time, which the
        // processor cannot forward (a stall per item).
        if s.blocks <= INLINE {
            for (slot, b) in s.mixed.iter_mut().zip(chunks) {
                *slot = mix(b);
            }
        }
        s
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

/// `h % d` for a 32-bit `h`, by two multiplications instead of a division
/// (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019;
/// exact for every 32-bit `h` and `d` >= 1): the division a row's slot
/// takes was a tenth of TOPK.ADD's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modulus {
    d: u64,
    /// ceil(2^64 / d), which wraps to 0 for d = 1 (every remainder is 0).
    m: u64,
}

impl Modulus {
    pub fn new(d: u32) -> Self {
        assert!(d > 0);
        Modulus {
            d: d as u64,
            m: (u64::MAX / d as u64).wrapping_add(1),
        }
    }

    #[inline(always)]
    pub fn rem(self, h: u32) -> u32 {
        let low = self.m.wrapping_mul(h as u64);
        ((low as u128 * self.d as u128) >> 64) as u32
    }
}

/// Seeds `hash_lanes` hashes under at once.
pub const LANES: usize = 8;

/// `first + i` in lanes i < `n`, `spare` in the others.
#[inline(always)]
fn lane_seeds(first: u32, n: usize, spare: u32) -> [u32; LANES] {
    std::array::from_fn(|i| {
        if i < n {
            first.wrapping_add(i as u32)
        } else {
            spare
        }
    })
}

/// `murmur2(data, seed)` under LANES seeds at once: `murmur2`'s steps,
/// each on every lane, which in a function compiled for AVX2 are vector
/// multiplies (eight hashes in the time of about two). Each block is mixed
/// once for all lanes, as it comes. The seeds are `first + i` in lanes
/// i < `n` and `spare` in the others, made in registers (eight seeds stored
/// one by one and read as one vector cannot be forwarded: a stall a call).
#[inline(always)]
fn hash_lanes(data: &[u8], first: u32, n: usize, spare: u32) -> [u32; LANES] {
    let len = data.len() as u32;
    let mut h = lane_seeds(first, n, spare).map(|seed| seed ^ len);
    let mut blocks = data.chunks_exact(4);
    for b in &mut blocks {
        let k = mix(b);
        for x in &mut h {
            *x = x.wrapping_mul(M) ^ k;
        }
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let t = tail.iter().rev().fold(0u32, |t, &b| t << 8 | b as u32);
        for x in &mut h {
            *x = (*x ^ t).wrapping_mul(M);
        }
    }
    for x in &mut h {
        *x ^= *x >> 13;
        *x = x.wrapping_mul(M);
        *x ^= *x >> 15;
    }
    h
}

/// An item's slots in rows `first .. first + n` (`n` <= LANES) of an array
/// `width` wide kept row after row (slot i is row `first + i`'s, as
/// `Seeded::row_slots` places it), with the division done by `Modulus`;
/// and its hash under `spare` if given (in a lane no row needs, when there
/// is one: top-k's fingerprint). Plain code, inlined: called from a
/// function compiled for AVX2 its lanes become vector multiplies (see
/// `hash_lanes`), and its arrays stay in registers (an array returned
/// through memory and read back in other widths stalled).
#[inline(always)]
pub fn row_group(
    data: &[u8],
    width: Modulus,
    first: usize,
    n: usize,
    spare: Option<u32>,
) -> ([usize; LANES], u32) {
    debug_assert!(n <= LANES);
    let h = hash_lanes(data, first as u32, n, spare.unwrap_or(0));
    let spare = match spare {
        Some(seed) if n == LANES => murmur2(data, seed),
        _ => h[LANES - 1],
    };
    let mut slots = [0; LANES];
    for (i, slot) in slots[..n].iter_mut().enumerate() {
        *slot = width.rem(h[i]) as usize + (first + i) * width.d as usize;
    }
    (slots, spare)
}

impl Seeded<'_> {
    /// The item's slot in each row of a `width` x `depth` array kept row
    /// after row, in row order, as RedisBloom places a count-min counter or
    /// a top-k bucket: `murmur2(data, row) % width` in row `row` (the seed is
    /// the row number, as C passes a size_t to a uint32_t).
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
    fn modulus_is_the_remainder() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u32
        };
        let mut divisors = vec![1, 2, 3, 7, 2000, 65_535, 65_536, u32::MAX - 1, u32::MAX];
        divisors.extend((0..200).map(|_| next() >> (next() % 32)).filter(|&d| d > 0));
        for d in divisors {
            let m = Modulus::new(d);
            let mut hs = vec![0, 1, d - 1, d, d.wrapping_add(1), u32::MAX, u32::MAX - 1];
            hs.extend((0..2000).map(|_| next()));
            for h in hs {
                assert_eq!(m.rem(h), h % d, "{h} % {d}");
            }
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
            for (first, n, spare) in [(0, 8, 0), (0, 7, 1919), (5, 3, 7), (u32::MAX, 2, 9)] {
                let want = lane_seeds(first, n, spare).map(|seed| murmur2(item, seed));
                assert_eq!(hash_lanes(item, first, n, spare), want, "len {len}");
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
                if let Ok(w) = u32::try_from(width) {
                    let mut got = Vec::new();
                    for first in (0..depth).step_by(LANES) {
                        let n = LANES.min(depth - first);
                        let (slots, fp) = row_group(item, Modulus::new(w), first, n, Some(1919));
                        got.extend_from_slice(&slots[..n]);
                        assert_eq!(fp, murmur2(item, 1919));
                        let (slots, _) = row_group(item, Modulus::new(w), first, n, None);
                        assert_eq!(&slots[..n], &want[first..first + n]);
                    }
                    assert_eq!(got, want, "len {len} width {width} depth {depth}");
                }
            }
        }
    }
}
