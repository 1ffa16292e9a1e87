//! Memory-mapped Bloom filter file with checksummed 64-byte lines (format:
//! `docs/bloom-file-format.md`, layout in [`layout`]).
//!
//! One item's k probes fall in one line, so a lookup touches one cache line. Lines end
//! in a checksum; a line that fails it at open becomes all ones, so the filter never
//! returns a false negative, and more than 5% of such lines asks the caller to rebuild.

mod error;
mod file;
mod geometry;
pub mod layout;
mod memory;
mod probe;

pub use error::FilterError;
pub use file::{BloomFile, FilterStats, LogPosition, OpenOutcome, RebuildReason, PREFETCH_AHEAD};
pub use geometry::{Geometry, MAX_HASHES, MAX_LINES};
pub use probe::ItemHash;

#[cfg(test)]
mod tests;
