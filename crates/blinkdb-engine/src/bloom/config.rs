//! Filter parameters, their RedisBloom defaults, and how each sub-filter is sized.

use super::error::BloomError;
use super::redisbloom::LinkShape;
use crate::filter::{Geometry, MAX_HASHES};

/// RedisBloom defaults for a filter created by BF.ADD / BF.INSERT.
pub const DEFAULT_ERROR_RATE: f64 = 0.01;
pub const DEFAULT_CAPACITY: u64 = 100;
pub const DEFAULT_EXPANSION: u64 = 2;

/// RedisBloom's ERROR_TIGHTENING_RATIO: a scaling chain's first sub-filter gets
/// this share of the error rate, and each new one this share of the last one's.
pub const ERROR_TIGHTENING: f64 = 0.5;

/// A sub-filter whose RedisBloom bit array is at most this many bytes uses
/// RedisBloom's flat layout (its bits, hash and probes), so its answers and item
/// counts are RedisBloom's; larger ones stay blocked (one cache line per item).
/// An array this small stays in L1/L2, where k scattered probes cost about what
/// one line does (docs/bloom-file-format.md, "Layouts").
pub const FLAT_MAX_BYTES: u64 = 64 << 10;

/// What BF.RESERVE / BF.INSERT ask for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BloomConfig {
    /// Target false-positive rate of the whole chain, in (0, 1).
    pub error_rate: f64,
    /// Items the first sub-filter holds before the chain grows.
    pub capacity: u64,
    /// Capacity multiplier of each new sub-filter (>= 1); ignored when `nonscaling`.
    pub expansion: u64,
    /// Refuse new items once the single sub-filter is full.
    pub nonscaling: bool,
}

impl Default for BloomConfig {
    fn default() -> Self {
        BloomConfig {
            error_rate: DEFAULT_ERROR_RATE,
            capacity: DEFAULT_CAPACITY,
            expansion: DEFAULT_EXPANSION,
            nonscaling: false,
        }
    }
}

/// Resource limits checked before anything is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomLimits {
    /// `bf-max-memory`: largest total file size of one filter, in bytes.
    pub max_memory: u64,
}

impl BloomLimits {
    /// The limits for a `bf-max-memory` setting: 0 means RedisBloom's rule,
    /// no cap of its own, so a filter may take up to the machine's physical
    /// memory (RedisBloom allocates until the allocator fails, and then
    /// redis-server aborts; BlinkDB refuses instead, since every line of a
    /// filter is written when it is made).
    pub fn from_setting(max_memory: u64) -> BloomLimits {
        let max_memory = if max_memory == 0 {
            physical_memory()
        } else {
            max_memory
        };
        BloomLimits { max_memory }
    }
}

/// Bytes of physical memory (`_SC_PHYS_PAGES` pages), read once.
fn physical_memory() -> u64 {
    static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        // SAFETY: sysconf only reads system parameters.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && page > 0 {
            (pages as u64).saturating_mul(page as u64)
        } else {
            // Unknown: the cap the option had before it followed RedisBloom.
            1 << 30
        }
    })
}

impl Default for BloomLimits {
    fn default() -> Self {
        BloomLimits {
            max_memory: 1 << 32,
        }
    }
}

impl BloomConfig {
    /// The RedisBloom range checks of BF.RESERVE.
    pub fn validate(&self) -> Result<(), BloomError> {
        if !(self.error_rate > 0.0 && self.error_rate < 1.0) {
            return Err(BloomError::ErrorRateRange);
        }
        if self.capacity == 0 || self.capacity > i64::MAX as u64 {
            return Err(BloomError::CapacityRange);
        }
        if self.expansion == 0 || self.expansion > i64::MAX as u64 {
            return Err(BloomError::ExpansionRange);
        }
        Ok(())
    }

    /// False-positive budget of sub-filter `index`, RedisBloom's rule: the whole
    /// rate for NONSCALING, else half of it for the first sub-filter and half of
    /// the last one's for each new one (so the budgets sum to at most the rate).
    /// Halved step by step as RedisBloom does, so the value is its bit for bit.
    pub fn sub_filter_error(&self, index: u32) -> f64 {
        if self.nonscaling {
            return self.error_rate;
        }
        (0..=index).fold(self.error_rate, |error, _| error * ERROR_TIGHTENING)
    }

    /// Capacity of sub-filter `index`: capacity · expansion^index.
    pub fn sub_filter_capacity(&self, index: u32) -> Result<u64, BloomError> {
        self.expansion
            .checked_pow(index)
            .and_then(|growth| growth.checked_mul(self.capacity))
            .filter(|&c| c <= i64::MAX as u64)
            .ok_or(BloomError::TooLarge)
    }

    /// Geometry of sub-filter `index`, refused if `already_used + its size` would
    /// pass `limits.max_memory`. Arithmetic only: nothing is allocated.
    /// `flat_allowed` (the first sub-filter, or the one before is flat): flat when
    /// RedisBloom's array is at most [`FLAT_MAX_BYTES`], so the flat sub-filters of
    /// a chain are always its first ones.
    pub fn sub_filter_geometry(
        &self,
        index: u32,
        already_used: u64,
        limits: &BloomLimits,
        flat_allowed: bool,
    ) -> Result<(u64, Geometry), BloomError> {
        let capacity = self.sub_filter_capacity(index)?;
        let error = self.sub_filter_error(index);
        if error <= 0.0 {
            // Halved to nothing after ~1075 sub-filters: RedisBloom's bloom_init
            // refuses such a link too.
            return Err(BloomError::GrowFailed);
        }
        let over = |needed: u64| BloomError::OverMaxMemory {
            needed,
            max: limits.max_memory,
        };
        if let Some(shape) = LinkShape::of(capacity, error)
            .filter(|s| flat_allowed && s.bytes <= FLAT_MAX_BYTES && s.hashes <= MAX_HASHES)
        {
            let geometry = Geometry::flat(shape.bits(), shape.hashes)?;
            let needed = geometry.file_len();
            if needed.saturating_add(already_used) > limits.max_memory {
                return Err(over(needed));
            }
            return Ok((capacity, geometry));
        }
        // The unblocked optimum bounds the size from below: reject before searching.
        let floor_bytes = capacity as f64 * -error.ln() / std::f64::consts::LN_2.powi(2) / 8.0;
        if floor_bytes + already_used as f64 > limits.max_memory as f64 {
            return Err(over(floor_bytes.min(u64::MAX as f64) as u64));
        }
        let geometry = Geometry::for_items(capacity, error)?;
        let needed = geometry.file_len();
        if needed.saturating_add(already_used) > limits.max_memory {
            return Err(over(needed));
        }
        Ok((capacity, geometry))
    }
}
