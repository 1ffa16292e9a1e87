//! Filter parameters, their RedisBloom defaults, and how each sub-filter is sized.

use super::error::BloomError;
use crate::filter::Geometry;

/// RedisBloom defaults for a filter created by BF.ADD / BF.INSERT.
pub const DEFAULT_ERROR_RATE: f64 = 0.01;
pub const DEFAULT_CAPACITY: u64 = 100;
pub const DEFAULT_EXPANSION: u64 = 2;

/// Share of the error budget given to the first sub-filter of a scaling filter.
/// RedisBloom gives it 1/2. A blocked filter needs 5-8% more bits than RedisBloom's
/// unblocked one at the same rate, so at 1/2 it would be bigger than RedisBloom's;
/// at 0.9 a 1M/0.01 filter fits in RedisBloom's bytes (docs/bloom-file-format.md).
pub const FIRST_FILTER_SHARE: f64 = 0.9;

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

    /// False-positive budget of sub-filter `index`. The shares sum to 1 over an
    /// unbounded chain: `FIRST_FILTER_SHARE`, then (1 - share) / (i (i + 1)), which
    /// tightens more slowly than RedisBloom's halving, so long chains cost less.
    pub fn sub_filter_error(&self, index: u32) -> f64 {
        if self.nonscaling {
            return self.error_rate;
        }
        match index {
            0 => self.error_rate * FIRST_FILTER_SHARE,
            i => self.error_rate * (1.0 - FIRST_FILTER_SHARE) / (i as f64 * (i as f64 + 1.0)),
        }
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
    pub fn sub_filter_geometry(
        &self,
        index: u32,
        already_used: u64,
        limits: &BloomLimits,
    ) -> Result<(u64, Geometry), BloomError> {
        let capacity = self.sub_filter_capacity(index)?;
        let error = self.sub_filter_error(index);
        // The unblocked optimum bounds the size from below: reject before searching.
        let floor_bytes = capacity as f64 * -error.ln() / std::f64::consts::LN_2.powi(2) / 8.0;
        let over = |needed: u64| BloomError::OverMaxMemory {
            needed,
            max: limits.max_memory,
        };
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
