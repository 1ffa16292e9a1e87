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

/// RedisBloom's truncated ln 2 (bloom.c's LN2), not `f64::consts::LN_2`: the
/// hash count `ceil(LN2 · bpe)` must come out as RedisBloom computes it.
#[allow(clippy::approx_constant)]
const LN2: f64 = 0.693147180559945;
const LN2_SQUARED: f64 = 0.480453013918201;
const SEED: u64 = 0xc6a4_a793_5bd1_e995;
/// `sizeof(SBChain)` and `sizeof(SBLink)` on 64-bit: BF.INFO Size counts them.
pub(crate) const CHAIN_STRUCT_BYTES: u64 = 32;
pub(crate) const LINK_STRUCT_BYTES: u64 = 64;
const HEADER_BYTES: usize = 20;
const LINK_HEADER_BYTES: usize = 53;
/// RedisBloom's MAX_SCANDUMP_SIZE.
const SCANDUMP_CHUNK: usize = 16 << 20;
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

/// MurmurHash64A, as RedisBloom's MurmurHash64A_Bloom computes it: the
/// same function as HyperLogLog's (Redis's endian-neutral variant).
pub use crate::types::hll::murmur64a;

/// `bloom_calc_hash64`.
pub fn item_hash(item: &[u8]) -> (u64, u64) {
    let a = murmur64a(item, SEED);
    (a, murmur64a(item, a))
}

/// `calc_bpe`: bits per entry for an error rate.
fn bits_per_entry(error: f64) -> f64 {
    (error.ln() / LN2_SQUARED).abs()
}

/// What `bloom_init` with `BLOOM_OPT_NOROUND` (every BF.* filter) makes of a
/// link of `entries` items at `error`: its bit array's bytes and its hash
/// count. Arithmetic only. `None` where RedisBloom refuses the link (or its
/// bytes would not fit a u64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkShape {
    pub bytes: u64,
    pub hashes: u32,
}

impl LinkShape {
    pub fn of(entries: u64, error: f64) -> Option<LinkShape> {
        if entries < 1 || !(error > 0.0 && error < 1.0) {
            return None;
        }
        let bpe = bits_per_entry(error);
        // C's double-to-u64 conversion; `as` saturates where C's is undefined.
        let bits = ((entries as f64 * bpe) as u64).max(1);
        Some(LinkShape {
            bytes: bits.div_ceil(64).checked_mul(8)?,
            hashes: (LN2 * bpe).ceil() as u32,
        })
    }

    /// `bits` as BF.DEBUG prints it: every bit of the bytes.
    pub fn bits(&self) -> u64 {
        self.bytes.saturating_mul(8)
    }
}

/// One BF.DEBUG line of a link, as RedisBloom prints it
/// (`bytes:%lu bits:%lu hashes:%u hashwidth:%u capacity:%lu size:%zu ratio:%g`).
pub fn debug_link_line(
    shape: LinkShape,
    bits: u64,
    width: u32,
    capacity: u64,
    size: u64,
    ratio: f64,
) -> String {
    format!(
        "bytes:{} bits:{} hashes:{} hashwidth:{} capacity:{} size:{} ratio:{}",
        shape.bytes,
        bits,
        shape.hashes,
        width,
        capacity,
        size,
        format_g(ratio)
    )
}

/// C's `%g` (RedisBloom formats the ratio with it).
fn format_g(x: f64) -> String {
    let mut buf = [0u8; 32];
    // SAFETY: the buffer is 32 bytes and snprintf writes at most that many,
    // NUL included (%g of a double needs at most 14); "%g" takes one double.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%g".as_ptr(),
            x,
        )
    };
    String::from_utf8_lossy(&buf[..(n.max(0) as usize).min(31)]).into_owned()
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
        let bytes = bits
            .div_ceil(64)
            .checked_mul(8)
            .ok_or(BloomError::TooLarge)?;
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

    /// BF.DEBUG's lines: `size:N`, then one per link.
    pub fn debug_lines(&self) -> Vec<String> {
        let width = if self.options & OPT_FORCE64 != 0 {
            64
        } else {
            32
        };
        std::iter::once(format!("size:{}", self.size))
            .chain(self.links.iter().map(|l| {
                let bits = if l.bits != 0 { l.bits } else { 1u64 << l.n2 };
                let shape = LinkShape {
                    bytes: l.bf.len() as u64,
                    hashes: l.hashes,
                };
                debug_link_line(shape, bits, width, l.entries, l.size, l.error)
            }))
            .collect()
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

    /// The export of one of BlinkDB's own filters: RedisBloom's links for the
    /// same configuration and link count (entries, error, hashes and bytes as
    /// RedisBloom's BF.RESERVE and growth make them, which is what the
    /// source's BF.INFO Size and BF.DEBUG report), each counting the source
    /// link's items, every bit clear. [`set_item`](Self::set_item) then sets
    /// each link's items, or [`saturate`](Self::saturate) sets every bit when
    /// the items are not known. `links` is the items per source link. See
    /// docs/rdb-format.md.
    pub fn shaped(
        config: &super::BloomConfig,
        links: &[u64],
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
        for (link, items) in chain.links.iter_mut().zip(links) {
            link.size = *items;
        }
        chain.size = links.iter().sum();
        Ok(chain)
    }

    /// Sets every bit of every link: no item answers 0, every probe 1.
    pub fn saturate(&mut self) {
        for link in &mut self.links {
            link.bf.fill(0xFF);
        }
    }

    /// Sets the bits of the item whose [`item_hash`] is `pair` in link `link`
    /// (`bloom_add_h`), without counting it: [`shaped`](Self::shaped)
    /// counted the items already.
    pub fn set_item(&mut self, link: usize, pair: (u64, u64)) {
        self.links[link].insert(pair);
    }

    /// BF.SCANDUMP in RedisBloom's format: cursor 0 gives (1, header); then each
    /// chunk (at most 16 MiB, one link) with the cursor after it: 1 + its end's
    /// offset over the links' concatenated bit arrays; past the end (0, empty).
    pub fn scandump(&self, cursor: i64) -> (i64, Vec<u8>) {
        if cursor == 0 {
            return (1, self.scandump_header());
        }
        let Some((link, offset)) = self.link_at(cursor) else {
            return (0, Vec::new());
        };
        let bf = &self.links[link].bf;
        let len = (bf.len() - offset).min(SCANDUMP_CHUNK);
        (cursor + len as i64, bf[offset..offset + len].to_vec())
    }

    /// `getLinkPos`: the link and offset of cursor `iter` (1-based).
    fn link_at(&self, iter: i64) -> Option<(usize, usize)> {
        let mut at = u64::try_from(iter.checked_sub(1)?).ok()?;
        for (i, link) in self.links.iter().enumerate() {
            let bytes = link.bf.len() as u64;
            if at < bytes {
                return Some((i, at as usize));
            }
            at -= bytes;
        }
        None
    }

    /// `SBChain_GetEncodedHeader`: packed little-endian, 20 bytes then 53 per link.
    pub fn scandump_header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + LINK_HEADER_BYTES * self.links.len());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.options.to_le_bytes());
        out.extend_from_slice(&self.growth.to_le_bytes());
        for l in &self.links {
            out.extend_from_slice(&(l.bf.len() as u64).to_le_bytes());
            out.extend_from_slice(&l.bits.to_le_bytes());
            out.extend_from_slice(&l.size.to_le_bytes());
            out.extend_from_slice(&l.error.to_le_bytes());
            out.extend_from_slice(&l.bpe.to_le_bytes());
            out.extend_from_slice(&l.hashes.to_le_bytes());
            out.extend_from_slice(&l.entries.to_le_bytes());
            out.push(l.n2);
        }
        out
    }

    /// `SB_NewChainFromHeader` (BF.LOADCHUNK cursor 1 on a missing key): the
    /// chain with every bit clear, checked as RedisBloom checks it.
    pub fn from_scandump_header(buf: &[u8], limits: &BloomLimits) -> Result<Self, BloomError> {
        if buf.len() < HEADER_BYTES {
            return Err(BloomError::BadData);
        }
        let u64_at = |at: usize| u64::from_le_bytes(buf[at..at + 8].try_into().expect("8"));
        let u32_at = |at: usize| u32::from_le_bytes(buf[at..at + 4].try_into().expect("4"));
        let nfilters = u32_at(8) as usize;
        if buf.len() != HEADER_BYTES + LINK_HEADER_BYTES * nfilters {
            return Err(BloomError::BadData);
        }
        let mut links = Vec::with_capacity(nfilters);
        let mut total = 0u64;
        for i in 0..nfilters {
            let at = HEADER_BYTES + LINK_HEADER_BYTES * i;
            let bytes = u64_at(at);
            total = total.saturating_add(bytes);
            if total > limits.max_memory {
                return Err(BloomError::OverMaxMemory {
                    needed: total,
                    max: limits.max_memory,
                });
            }
            links.push(RbLink {
                bf: vec![0; bytes as usize],
                bits: u64_at(at + 8),
                size: u64_at(at + 16),
                error: f64::from_bits(u64_at(at + 24)),
                bpe: f64::from_bits(u64_at(at + 32)),
                hashes: u32_at(at + 40),
                entries: u64_at(at + 44),
                n2: buf[at + 52],
            });
        }
        let chain = RedisBloomChain {
            size: u64_at(0),
            options: u32_at(12),
            growth: u32_at(16),
            links,
        };
        chain.validate().map_err(|_| BloomError::BadData)?;
        Ok(chain)
    }

    /// `SBChain_LoadEncodedChunk`: `data` ends at cursor `iter`.
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), BloomError> {
        if iter <= 0 || (iter as u64) < data.len() as u64 {
            return Err(BloomError::BadData);
        }
        let (link, offset) = self
            .link_at(iter - data.len() as i64)
            .ok_or(BloomError::InvalidOffset)?;
        let bf = &mut self.links[link].bf;
        if data.len() > bf.len() - offset {
            return Err(BloomError::BadBackend(
                "invalid chunk - Too big for current filter",
            ));
        }
        bf[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
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
        let hashes: std::collections::HashSet<u64> = (0..=9)
            .map(|n| murmur64a(&b"abcdefghi"[..n], SEED))
            .collect();
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
    fn scandump_round_trips_through_loadchunk() {
        let limits = BloomLimits::default();
        let mut c = RedisBloomChain::new(20, 0.01, 2, false, &limits).unwrap();
        for i in 0..200 {
            c.add(format!("{i}").as_bytes(), &limits).unwrap();
        }
        let (mut cursor, header) = c.scandump(0);
        let mut copy = RedisBloomChain::from_scandump_header(&header, &limits).unwrap();
        loop {
            let (next, data) = c.scandump(cursor);
            if next == 0 {
                break;
            }
            copy.load_chunk(next, &data).unwrap();
            cursor = next;
        }
        assert_eq!(copy, c);
        assert!(
            RedisBloomChain::from_scandump_header(&header[..header.len() - 1], &limits).is_err()
        );
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

    #[test]
    fn a_shaped_chain_holds_exactly_the_items_set_into_it() {
        let limits = BloomLimits::default();
        let config = crate::bloom::BloomConfig {
            error_rate: 0.01,
            capacity: 100,
            expansion: 2,
            nonscaling: false,
        };
        // Two source links of 100 and 150 items: RedisBloom's links for 100 then 200 items.
        let mut c = RedisBloomChain::shaped(&config, &[100, 150], &limits).unwrap();
        let natural = RedisBloomChain::new(100, 0.01, 2, false, &limits).unwrap();
        assert_eq!(c.links[0].bf.len(), natural.links[0].bf.len());
        assert_eq!((c.links[1].entries, c.links[1].error), (200, 0.0025));
        assert_eq!((c.size, c.links[0].size, c.links[1].size), (250, 100, 150));
        assert!(c.links.iter().all(|l| l.bf.iter().all(|b| *b == 0)));
        let items: Vec<String> = (0..250).map(|i| format!("item:{i}")).collect();
        for (i, item) in items.iter().enumerate() {
            c.set_item(usize::from(i >= 100), item_hash(item.as_bytes()));
        }
        c.validate().unwrap();
        assert!(items.iter().all(|i| c.contains(i.as_bytes())));
        let probes = (0..10_000)
            .filter(|i| c.contains(format!("never:{i}").as_bytes()))
            .count();
        assert!(probes < 300, "{probes} false positives of 10000");
        // Each link has its own items' bits, set with that link's hash count and modulus.
        let first = item_hash(items[0].as_bytes());
        assert!(c.links[0].contains(first));
        c.saturate();
        assert!(c.links.iter().all(|l| l.bf.iter().all(|b| *b == 0xFF)));
    }
}
