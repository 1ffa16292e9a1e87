//! RedisBloom 2.8's scalable Bloom filter (`SBChain`), as its RDB payload
//! carries it: the bit arrays and their hash scheme, kept as they are so that
//! a filter imported from redis-server answers every BF.EXISTS exactly as
//! RedisBloom did (BlinkDB's own filters hash with xxh3 into 480-bit lines,
//! and a bit array cannot be rehashed without its items). Written from
//! RedisBloom's sb.c/bloom.c behaviour (docs/rdb-format.md, "Bloom filters").
//!
//! Hash (BLOOM_OPT_FORCE64, every filter RedisBloom 2.x makes):
//! `a = MurmurHash64A(item, 0xc6a4a7935bd1e995)`, `b = MurmurHash64A(item, a)`;
//! probe i of a link tests bit `(a + i·b) mod m` (wrapping u64), `m = 2^n2`
//! when `n2 > 0`, else the link's `bits`; bit x is bit `x % 8` of byte `x / 8`.

use super::config::BloomLimits;
use super::error::BloomError;

/// `BLOOM_OPT_NOROUND`: link bits are `entries · bpe`, not a power of two.
pub const OPT_NOROUND: u32 = 1;
/// `BLOOM_OPT_ENTS_IS_BITS`: only for filters made by size (never by BF.*).
pub const OPT_ENTS_IS_BITS: u32 = 2;
/// `BLOOM_OPT_FORCE64`: 64-bit MurmurHash64A hashing.
pub const OPT_FORCE64: u32 = 4;
/// `BLOOM_OPT_NO_SCALING`.
pub const OPT_NO_SCALING: u32 = 8;

const LN2: f64 = 0.693147180559945;
const LN2_SQUARED: f64 = 0.480453013918201;
const SEED: u64 = 0xc6a4_a793_5bd1_e995;
/// `sizeof(SBChain)` and `sizeof(SBLink)` on 64-bit: BF.INFO Size counts them.
const CHAIN_STRUCT_BYTES: u64 = 32;
const LINK_STRUCT_BYTES: u64 = 64;
/// RedisBloom's loader asserts fewer links than this.
pub const MAX_LINKS: u64 = 1000;

/// One link (`SBLink` with its `struct bloom`).
#[derive(Debug, Clone, PartialEq)]
pub struct RbLink {
    pub entries: u64,
    pub error: f64,
    pub hashes: u32,
    pub bpe: f64,
    pub bits: u64,
    pub n2: u8,
    pub bf: Vec<u8>,
    /// Items counted into this link.
    pub size: u64,
}

/// A whole chain (`SBChain`).
#[derive(Debug, Clone, PartialEq)]
pub struct RedisBloomChain {
    /// Items counted in all links.
    pub size: u64,
    pub options: u32,
    pub growth: u32,
    pub links: Vec<RbLink>,
}

/// MurmurHash64A as RedisBloom's MurmurHash64A_Bloom computes it (little-endian
/// 8-byte blocks, the tail folded in from its last byte down).
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut blocks = key.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, byte) in tail.iter().enumerate().rev() {
            h ^= (*byte as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// `bloom_calc_hash64`.
pub fn item_hash(item: &[u8]) -> (u64, u64) {
    let a = murmur64a(item, SEED);
    (a, murmur64a(item, a))
}

/// `calc_bpe`: bits per entry for an error rate.
fn bits_per_entry(error: f64) -> f64 {
    (error.ln() / LN2_SQUARED).abs()
}

impl RbLink {
    /// `bloom_init` for a new link of `entries` items at `error`.
    pub fn new(
        entries: u64,
        error: f64,
        options: u32,
        limits: &BloomLimits,
    ) -> Result<RbLink, BloomError> {
        if entries < 1 || error <= 0.0 || error >= 1.0 || options & OPT_ENTS_IS_BITS != 0 {
            return Err(BloomError::TooLarge);
        }
        let bpe = bits_per_entry(error);
        let mut link_entries = entries;
        let (bits, n2) = if options & OPT_NOROUND != 0 {
            let bits = (entries as f64 * bpe) as u64;
            (bits.max(1), 0u8)
        } else {
            let want = entries as f64 * bpe;
            let bn2 = want.log2().floor();
            if !(bn2.is_finite()) || bn2 > 63.0 {
                return Err(BloomError::TooLarge);
            }
            let n2 = bn2 as u8 + 1;
            if n2 > 63 {
                return Err(BloomError::TooLarge);
            }
            let bits = 1u64 << n2;
            let bit_diff = (bits as f64 - want) as u64;
            link_entries += (bit_diff as f64 / bpe) as u64;
            (bits, n2)
        };
        let bytes = bits.div_ceil(64).checked_mul(8).ok_or(BloomError::TooLarge)?;
        if bytes > limits.max_memory {
            return Err(BloomError::OverMaxMemory {
                needed: bytes,
                max: limits.max_memory,
            });
        }
        Ok(RbLink {
            entries: link_entries,
            error,
            hashes: (LN2 * bpe).ceil() as u32,
            bpe,
            bits: bytes * 8,
            n2,
            bf: vec![0; bytes as usize],
            size: 0,
        })
    }

    fn modulus(&self) -> u64 {
        if self.n2 > 0 {
            1u64 << self.n2
        } else {
            self.bits
        }
    }

    /// `bloom_check_h`.
    pub fn contains(&self, (a, b): (u64, u64)) -> bool {
        let m = self.modulus();
        (0..self.hashes as u64).all(|i| {
            let x = a.wrapping_add(i.wrapping_mul(b)) % m;
            self.bf[(x >> 3) as usize] & (1 << (x & 7)) != 0
        })
    }

    /// `bloom_add_h`: sets the probed bits; true when some bit was unset.
    fn insert(&mut self, (a, b): (u64, u64)) -> bool {
        let m = self.modulus();
        let mut fresh = false;
        for i in 0..self.hashes as u64 {
            let x = a.wrapping_add(i.wrapping_mul(b)) % m;
            let byte = &mut self.bf[(x >> 3) as usize];
            let mask = 1 << (x & 7);
            fresh |= *byte & mask == 0;
            *byte |= mask;
        }
        fresh
    }

    /// `bloom_validate_integrity`, plus what indexing needs: the bit array
    /// covers every probed bit.
    fn validate(&self) -> Result<(), &'static str> {
        let bytes = self.bf.len() as u64;
        if !(self.error > 0.0 && self.error < 1.0) {
            return Err("RedisBloom link error rate out of range");
        }
        if self.bits == 0 || Some(self.bits) != bytes.checked_mul(8) {
            return Err("RedisBloom link bit count does not match its bit array");
        }
        if self.n2 > 63 || (self.n2 != 0 && self.bits < (1u64 << self.n2)) {
            return Err("RedisBloom link n2 does not fit its bit array");
        }
        if !self.bpe.is_finite() || self.hashes as f64 != (LN2 * self.bpe).ceil() {
            return Err("RedisBloom link hash count does not match its bits per entry");
        }
        Ok(())
    }
}

impl RedisBloomChain {
    /// `SB_NewChain` as BF.RESERVE calls it (64-bit hashing, no rounding).
    pub fn new(
        capacity: u64,
        error: f64,
        expansion: u64,
        nonscaling: bool,
        limits: &BloomLimits,
    ) -> Result<Self, BloomError> {
        let options = OPT_FORCE64 | OPT_NOROUND | if nonscaling { OPT_NO_SCALING } else { 0 };
        let tightening = if nonscaling { 1.0 } else { 0.5 };
        let growth = u32::try_from(expansion).map_err(|_| BloomError::TooLarge)?;
        let first = RbLink::new(capacity, error * tightening, options, limits)?;
        Ok(RedisBloomChain {
            size: 0,
            options,
            growth,
            links: vec![first],
        })
    }

    pub fn nonscaling(&self) -> bool {
        self.options & OPT_NO_SCALING != 0
    }

    /// `SBChain_Check`.
    pub fn contains(&self, item: &[u8]) -> bool {
        let h = item_hash(item);
        self.links.iter().rev().any(|l| l.contains(h))
    }

    /// `SBChain_Add`: true when newly added; grows as RedisBloom does.
    pub fn add(&mut self, item: &[u8], limits: &BloomLimits) -> Result<bool, BloomError> {
        let h = item_hash(item);
        if self.links.iter().rev().any(|l| l.contains(h)) {
            return Ok(false);
        }
        let last = self.links.last().expect("a chain has links");
        if last.size >= last.entries {
            if self.nonscaling() {
                return Err(BloomError::NonScalingFull);
            }
            let entries = last
                .entries
                .checked_mul(self.growth as u64)
                .ok_or(BloomError::TooLarge)?;
            let used: u64 = self.links.iter().map(|l| l.bf.len() as u64).sum();
            let next = RbLink::new(entries, last.error * 0.5, self.options, limits)?;
            if used + next.bf.len() as u64 > limits.max_memory {
                return Err(BloomError::OverMaxMemory {
                    needed: used + next.bf.len() as u64,
                    max: limits.max_memory,
                });
            }
            self.links.push(next);
        }
        let cur = self.links.last_mut().expect("a chain has links");
        let fresh = cur.insert(h);
        if fresh {
            cur.size += 1;
            self.size += 1;
        }
        Ok(fresh)
    }

    /// BF.INFO Capacity: the links' entries.
    pub fn capacity(&self) -> u64 {
        self.links.iter().map(|l| l.entries).sum()
    }

    /// BF.INFO Size: RedisBloom's BFMemUsage.
    pub fn size_bytes(&self) -> u64 {
        CHAIN_STRUCT_BYTES
            + self
                .links
                .iter()
                .map(|l| LINK_STRUCT_BYTES + l.bf.len() as u64)
                .sum::<u64>()
    }

    /// The export of a filter whose items are gone (BlinkDB's own filters keep
    /// xxh3 digests, not items, and RedisBloom hashes items with MurmurHash64A):
    /// RedisBloom's links for the same configuration and link count (entries,
    /// error, hashes: where it grows next), each counting its items, every bit
    /// set, each bit array sized so that BF.INFO Size is the source's. Every
    /// item answers present (no false negative), and BF.INFO is the source's.
    /// `links` is (items, BF.INFO bytes) per source link. See docs/rdb-format.md.
    pub fn saturated(
        config: &super::BloomConfig,
        links: &[(u64, u64)],
        limits: &BloomLimits,
    ) -> Result<Self, BloomError> {
        let mut chain = RedisBloomChain::new(
            config.capacity,
            config.error_rate,
            config.expansion,
            config.nonscaling,
            limits,
        )?;
        while chain.links.len() < links.len().max(1) {
            let last = chain.links.last().expect("a chain has links");
            let entries = last
                .entries
                .checked_mul(chain.growth as u64)
                .ok_or(BloomError::TooLarge)?;
            let next = RbLink::new(entries, last.error * 0.5, chain.options, limits)?;
            chain.links.push(next);
        }
        for (i, (link, (items, bytes))) in chain.links.iter_mut().zip(links).enumerate() {
            let overhead = LINK_STRUCT_BYTES + if i == 0 { CHAIN_STRUCT_BYTES } else { 0 };
            let len = (bytes.saturating_sub(overhead) / 8 * 8).max(8);
            if len > limits.max_memory {
                return Err(BloomError::TooLarge);
            }
            link.bf = vec![0xFF; len as usize];
            link.bits = len * 8;
            link.n2 = 0;
            link.size = *items;
        }
        chain.size = links.iter().map(|(items, _)| items).sum();
        Ok(chain)
    }

    /// Checks a decoded chain: what RedisBloom's loader asserts and what its
    /// integrity check refuses, plus what BlinkDB needs to serve it safely.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.links.is_empty() || self.links.len() as u64 >= MAX_LINKS {
            return Err("RedisBloom filter link count out of range");
        }
        if self.options & !(OPT_NOROUND | OPT_FORCE64 | OPT_NO_SCALING) != 0 {
            return Err("RedisBloom filter with unknown options");
        }
        if self.options & OPT_FORCE64 == 0 {
            return Err("RedisBloom filter with 32-bit hashing (RedisBloom 1.x) is not supported");
        }
        if self.growth == 0 && !self.nonscaling() {
            return Err("RedisBloom filter expansion is 0");
        }
        let mut total = 0u64;
        for link in &self.links {
            link.validate()?;
            total = total.saturating_add(link.size);
        }
        if total != self.size {
            return Err("RedisBloom filter item count does not match its links");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur64a_matches_the_reference() {
        // MurmurHash64A("", 0) is 0 by construction; values below were computed
        // with RedisBloom's C function (seed 0xc6a4a7935bd1e995).
        assert_eq!(murmur64a(b"", 0), 0);
        let (a, b) = item_hash(b"hello");
        assert_ne!(a, b);
        // Tail lengths 1..=7 and a full block all differ.
        let hashes: std::collections::HashSet<u64> =
            (0..=9).map(|n| murmur64a(&b"abcdefghi"[..n], SEED)).collect();
        assert_eq!(hashes.len(), 10);
    }

    #[test]
    fn reserve_geometry_is_redisbloom_s() {
        // BF.RESERVE k 0.01 100 on RedisBloom 2.8: Size 240, Capacity 100.
        let limits = BloomLimits::default();
        let c = RedisBloomChain::new(100, 0.01, 2, false, &limits).unwrap();
        assert_eq!(c.size_bytes(), 240);
        assert_eq!(c.capacity(), 100);
        let n = RedisBloomChain::new(100, 0.01, 2, true, &limits).unwrap();
        assert_eq!(n.size_bytes(), 216);
        c.validate().unwrap();
    }

    #[test]
    fn adds_grow_and_never_forget() {
        let limits = BloomLimits::default();
        let mut c = RedisBloomChain::new(50, 0.01, 2, false, &limits).unwrap();
        let items: Vec<String> = (0..1000).map(|i| format!("item:{i}")).collect();
        for i in &items {
            c.add(i.as_bytes(), &limits).unwrap();
        }
        assert!(c.links.len() > 1);
        assert!(items.iter().all(|i| c.contains(i.as_bytes())));
        c.validate().unwrap();
        let mut full = RedisBloomChain::new(10, 0.01, 2, true, &limits).unwrap();
        let mut outcome = Ok(true);
        for i in &items {
            outcome = full.add(i.as_bytes(), &limits);
            if outcome.is_err() {
                break;
            }
        }
        assert!(matches!(outcome, Err(BloomError::NonScalingFull)));
    }
}
