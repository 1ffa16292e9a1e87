//! Scalable Bloom filters with RedisBloom 2.8 semantics (BF.* commands), stored in
//! [`crate::filter`] files. Holds no server or RESP types: the server parses frames,
//! calls [`args`] for BF.RESERVE/BF.INSERT/BF.INFO arguments, maps keys to filter ids,
//! holds a per-key lock, and turns [`BloomError`] into an error reply with its
//! `Display` text (RedisBloom's exact text).
//!
//! Sizing: sub-filter i holds capacity·expansionⁱ items at error budget
//! [`BloomConfig::sub_filter_error`] (RedisBloom's rule); BF.INFO Size and
//! BF.DEBUG report RedisBloom's figures for those sub-filters; see
//! `docs/bloom-file-format.md`.

pub mod args;
mod chain;
mod config;
mod dump;
mod error;
mod meta;
mod redisbloom;

pub use chain::{BloomInfo, ChainOpen, ChainRebuildReason, ProbeHash, ScalableBloom};
pub use config::{BloomConfig, BloomLimits};
pub use dump::{dump_chunk_plan, dump_header_items};
pub use error::BloomError;
pub use redisbloom::{
    debug_link_line, item_hash as redisbloom_hash, LinkShape, RbLink, RedisBloomChain,
};

#[cfg(test)]
mod tests;
