//! Byte layout of a chain metadata file `<id:016x>.chain` and of a SCANDUMP header
//! chunk (all integers little-endian):
//!
//! ```text
//! offset   size  field
//! 0        8     magic        b"BLINKBC\0" (chain file) or b"BLINKBD\0" (dump header)
//! 8        4     version      2 (1: before layouts, every link blocked)
//! 12       4     flags        bit 0 = NONSCALING
//! 16       8     error rate   f64 bits
//! 24       8     capacity     first sub-filter
//! 32       8     expansion
//! 40       4     link count   n >= 1
//! 44       4     reserved     0
//! 48       32*n  links: capacity u64, lines u64, hashes u32, layout u32, items u64
//!                (layout: 0 = blocked, else flat with that many bits; 0 in version 1)
//! 48+32n   4     checksum     low 32 bits of xxh3-64 of all bytes before it
//! ```
//! The chain file's `items` fields are unused (0): item counts live in each
//! sub-filter's header next to its checkpoint.

use super::config::BloomConfig;
use crate::filter::Geometry;
use xxhash_rust::xxh3::xxh3_64;

pub const CHAIN_MAGIC: [u8; 8] = *b"BLINKBC\0";
pub const DUMP_MAGIC: [u8; 8] = *b"BLINKBD\0";
const VERSION: u32 = 2;
const VERSION_BLOCKED_ONLY: u32 = 1;
const FIXED: usize = 48;
const LINK: usize = 32;
/// More sub-filters than this cannot come from any sane expansion.
pub const MAX_LINKS: u32 = 4096;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkMeta {
    pub capacity: u64,
    pub geometry: Geometry,
    pub items: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChainMeta {
    pub config: BloomConfig,
    pub links: Vec<LinkMeta>,
}

impl ChainMeta {
    pub fn encode(&self, magic: [u8; 8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED + LINK * self.links.len() + 4);
        out.extend_from_slice(&magic);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.config.nonscaling as u32).to_le_bytes());
        out.extend_from_slice(&self.config.error_rate.to_bits().to_le_bytes());
        out.extend_from_slice(&self.config.capacity.to_le_bytes());
        out.extend_from_slice(&self.config.expansion.to_le_bytes());
        out.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for link in &self.links {
            out.extend_from_slice(&link.capacity.to_le_bytes());
            out.extend_from_slice(&link.geometry.lines.to_le_bytes());
            out.extend_from_slice(&link.geometry.hashes.to_le_bytes());
            // Geometry::flat bounds it below 2^32.
            out.extend_from_slice(&(link.geometry.flat_bits as u32).to_le_bytes());
            out.extend_from_slice(&link.items.to_le_bytes());
        }
        let sum = xxh3_64(&out) as u32;
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Full validation: magic, version, length, checksum, config ranges, geometry
    /// bounds and capacities consistent with the config. `None` on any mismatch.
    pub fn decode(raw: &[u8], magic: [u8; 8]) -> Option<ChainMeta> {
        let u32_at = |o: usize| Some(u32::from_le_bytes(raw.get(o..o + 4)?.try_into().ok()?));
        let u64_at = |o: usize| Some(u64::from_le_bytes(raw.get(o..o + 8)?.try_into().ok()?));
        let version = u32_at(8)?;
        if raw.get(0..8)? != magic || (version != VERSION && version != VERSION_BLOCKED_ONLY) {
            return None;
        }
        let count = u32_at(40)?;
        if count == 0 || count > MAX_LINKS || raw.len() != FIXED + LINK * count as usize + 4 {
            return None;
        }
        let body = raw.len() - 4;
        if u32_at(body)? != xxh3_64(&raw[..body]) as u32 {
            return None;
        }
        let flags = u32_at(12)?;
        let config = BloomConfig {
            nonscaling: flags == 1,
            error_rate: f64::from_bits(u64_at(16)?),
            capacity: u64_at(24)?,
            expansion: u64_at(32)?,
        };
        if flags > 1 || config.validate().is_err() || (config.nonscaling && count != 1) {
            return None;
        }
        let mut links = Vec::with_capacity(count as usize);
        for i in 0..count {
            let at = FIXED + LINK * i as usize;
            let flat_bits = if version == VERSION {
                u32_at(at + 20)? as u64
            } else {
                0
            };
            let geometry = Geometry::checked(u64_at(at + 8)?, u32_at(at + 16)?, flat_bits).ok()?;
            let link = LinkMeta {
                capacity: u64_at(at)?,
                geometry,
                items: u64_at(at + 24)?,
            };
            if config.sub_filter_capacity(i).ok()? != link.capacity || link.items > link.capacity {
                return None;
            }
            links.push(link);
        }
        Some(ChainMeta { config, links })
    }
}
