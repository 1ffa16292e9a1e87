//! What a kernel filter stores and how it is sized.
//!
//! Value layout of one map element (the map's `value_size` bytes):
//!
//! ```text
//! Digest mode (value_size = 16):
//!   bytes 0..16  xxh3-128 of the item, seed 0, as a little-endian u128
//! RAW mode (value_size = width, 1..=MAX_RAW_WIDTH):
//!   bytes 0..width  the item itself, unchanged (e.g. an IPv4 address in
//!                   network order for width 4)
//! ```
//!
//! The kernel hashes those bytes `map_extra` times (jhash with a zero seed,
//! `BPF_F_ZERO_SEED`, plus the hash index, so a rebuilt map has the same bits) into a bit array of `max_entries * k / ln 2` bits
//! rounded up to a power of two, capped at 2^32 bits.

use super::error::{KernelError, KernelResult};

/// Width of a digest-mode element: one xxh3-128 value.
pub const DIGEST_WIDTH: u32 = 16;

/// Largest RAW item width accepted; longer items should use digest mode.
pub const MAX_RAW_WIDTH: u32 = 1024;

/// The kernel's limit on `map_extra` for bloom maps (4 bits).
pub const MAX_HASH_COUNT: u32 = 15;

/// How items become map values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueFormat {
    /// Store the 16-byte xxh3-128 digest of any item (the default).
    Digest,
    /// Store items of exactly `width` bytes as they are, so that eBPF
    /// programs can look up raw data (addresses, ports) without hashing.
    Raw {
        /// Every item's length in bytes.
        width: u32,
    },
}

impl ValueFormat {
    /// The map's `value_size` for this format.
    pub fn value_size(self) -> u32 {
        match self {
            ValueFormat::Digest => DIGEST_WIDTH,
            ValueFormat::Raw { width } => width,
        }
    }
}

/// Everything needed to create (or check) a kernel filter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterSpec {
    /// Expected number of items; becomes the map's `max_entries`.
    pub capacity: u32,
    /// Target false-positive rate, in (0, 1).
    pub error_rate: f64,
    /// How items are stored.
    pub format: ValueFormat,
}

impl FilterSpec {
    /// The element bytes `item` is stored as (its digest, or itself in RAW mode).
    pub fn encode_value(&self, item: &[u8]) -> KernelResult<Vec<u8>> {
        Ok(element_value(self.format, item)?.as_bytes().to_vec())
    }

    /// A digest-mode spec.
    pub fn digest(capacity: u32, error_rate: f64) -> Self {
        FilterSpec {
            capacity,
            error_rate,
            format: ValueFormat::Digest,
        }
    }

    /// A RAW-mode spec for items of exactly `width` bytes.
    pub fn raw(capacity: u32, error_rate: f64, width: u32) -> Self {
        FilterSpec {
            capacity,
            error_rate,
            format: ValueFormat::Raw { width },
        }
    }

    /// Rejects specs the kernel would refuse or that make no sense.
    pub fn validate(&self) -> KernelResult<()> {
        if self.capacity == 0 {
            return Err(KernelError::InvalidSpec(
                "kernel filter capacity must be at least 1",
            ));
        }
        if !(self.error_rate > 0.0 && self.error_rate < 1.0) {
            return Err(KernelError::InvalidSpec(
                "kernel filter error rate must be between 0 and 1 (exclusive)",
            ));
        }
        if let ValueFormat::Raw { width } = self.format {
            if width == 0 || width > MAX_RAW_WIDTH {
                return Err(KernelError::InvalidSpec(
                    "kernel filter RAW width must be between 1 and 1024 bytes",
                ));
            }
        }
        Ok(())
    }

    /// The number of hash functions (`map_extra`) for this spec.
    pub fn hash_count(&self) -> u32 {
        hash_count_for(self.error_rate)
    }
}

/// Hash functions for a target false-positive rate `p`:
/// `k = round(-log2 p)`, clamped to `1..=15`.
///
/// Why: the kernel sizes the bit array at `n * k / ln 2` bits, which is the
/// optimum for `k` hashes, and an optimal filter has a false-positive rate of
/// `2^-k`; so `k = -log2 p`. Rounding can pick a `k` one below the exact value
/// (e.g. p = 0.09 gives k = 3, 2^-3 = 0.125), but the kernel also rounds the
/// bit array up to a power of two, which gives up to 2x more bits than
/// needed and in practice brings the rate back under `p`. Rates below
/// `2^-15` (about 3e-5) cannot be reached: the kernel allows 15 hashes at most.
pub fn hash_count_for(error_rate: f64) -> u32 {
    let exact = -error_rate.log2();
    if exact.is_nan() {
        return 1;
    }
    // The clamp keeps the cast in range.
    (exact.round().clamp(1.0, MAX_HASH_COUNT as f64)) as u32
}

/// The bytes of one map element, borrowed for RAW items.
pub(crate) enum ElementValue<'a> {
    Digest([u8; DIGEST_WIDTH as usize]),
    Raw(&'a [u8]),
}

impl ElementValue<'_> {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            ElementValue::Digest(digest) => digest,
            ElementValue::Raw(item) => item,
        }
    }
}

/// The element value for `item` in `format`, or a width error for RAW.
pub(crate) fn element_value(format: ValueFormat, item: &[u8]) -> KernelResult<ElementValue<'_>> {
    match format {
        ValueFormat::Digest => Ok(ElementValue::Digest(item_digest(item))),
        ValueFormat::Raw { width } => {
            if item.len() != width as usize {
                return Err(KernelError::ItemWidth {
                    expected: width,
                    actual: item.len(),
                });
            }
            Ok(ElementValue::Raw(item))
        }
    }
}

/// The digest-mode value of `item`: xxh3-128, seed 0, little-endian.
pub fn item_digest(item: &[u8]) -> [u8; DIGEST_WIDTH as usize] {
    xxhash_rust::xxh3::xxh3_128(item).to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_count_follows_minus_log2_rounded() {
        assert_eq!(hash_count_for(0.5), 1);
        assert_eq!(hash_count_for(0.01), 7);
        assert_eq!(hash_count_for(0.001), 10);
        assert_eq!(hash_count_for(0.09), 3);
        assert_eq!(hash_count_for(0.9), 1);
        assert_eq!(hash_count_for(1e-9), 15);
    }

    #[test]
    fn validate_rejects_bad_specs() {
        assert!(FilterSpec::digest(0, 0.01).validate().is_err());
        assert!(FilterSpec::digest(10, 0.0).validate().is_err());
        assert!(FilterSpec::digest(10, 1.0).validate().is_err());
        assert!(FilterSpec::digest(10, f64::NAN).validate().is_err());
        assert!(FilterSpec::raw(10, 0.01, 0).validate().is_err());
        assert!(FilterSpec::raw(10, 0.01, MAX_RAW_WIDTH + 1)
            .validate()
            .is_err());
        assert!(FilterSpec::raw(10, 0.01, 4).validate().is_ok());
    }

    #[test]
    fn raw_items_must_have_the_width() {
        let format = ValueFormat::Raw { width: 4 };
        let err = element_value(format, b"abc")
            .err()
            .expect("3 bytes refused");
        assert_eq!(
            err.to_string(),
            "item is 3 bytes but this kernel filter stores RAW 4-byte items"
        );
        let value = element_value(format, &[10, 0, 0, 1]).expect("4 bytes accepted");
        assert_eq!(value.as_bytes(), &[10, 0, 0, 1]);
    }

    #[test]
    fn digest_is_xxh3_128_little_endian() {
        let value = element_value(ValueFormat::Digest, b"alice").unwrap();
        let expected = xxhash_rust::xxh3::xxh3_128(b"alice").to_le_bytes();
        assert_eq!(value.as_bytes(), &expected);
        assert_ne!(item_digest(b"alice"), item_digest(b"bob"));
    }
}
