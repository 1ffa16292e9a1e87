//! BLINK.CFMERGE (BlinkDB's own command; RedisBloom has no cuckoo merge):
//! every fingerprint of the sources added to a copy of the destination.
//!
//! A slot keeps only an item's fingerprint and bucket, not its hash, so a
//! fingerprint can move only to a sub-filter where that bucket still
//! names the item's two candidate buckets. With power-of-two bucket counts
//! it does in any sub-filter of at most as many buckets as its own: for
//! `n` dividing `m`, `h % n == (h % m) % n`, and the alternate bucket
//! `h ^ fp * 0x5bd1e995` taken mod `n` commutes the same way (the filter's
//! own compaction relies on this). So filters merge when they have the
//! same shape (bucket size, first sub-filter's buckets, expansion, power-of-
//! two bucket counts everywhere): a fingerprint of a source's sub-filter
//! goes to the destination's sub-filters no larger than that one, newest
//! first, as CF.ADD places an item, then by the kick-out walk in the
//! newest of them, and the destination grows (by sub-filters no larger
//! than the fingerprint's, up to CF.ADD's 32) when neither finds room. The order is fixed (sources as given, sub-filters oldest first,
//! slots in order), so a replayed or replicated merge gives the same bytes.

use super::{alt_hash, sub_buckets, CuckooFilter, Lookup, SubFilter, MAX_FILTERS_FOR_INSERT};
use crate::sketch::dirty::Dirty;

/// Why a merge was refused; the destination is left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeError {
    /// Bucket size, buckets or expansion differ, or a bucket count is not a
    /// power of two.
    Shape,
    /// A fingerprint found no room and the destination cannot grow
    /// (EXPANSION 0, or its next sub-filter would be larger than the
    /// fingerprint's own).
    Full,
    /// Growing would pass the sub-filter count CF.ADD stops at.
    MaxExpansions,
    /// Growing would pass the memory cap.
    TooBig,
}

impl CuckooFilter {
    /// An empty filter of this one's shape: one zeroed sub-filter, the same
    /// bucket size, buckets, max iterations and expansion.
    pub fn empty_like(&self) -> Self {
        let mut cf = CuckooFilter {
            num_buckets: self.num_buckets,
            num_items: 0,
            num_deletes: 0,
            bucket_size: self.bucket_size,
            max_iterations: self.max_iterations,
            expansion: self.expansion,
            filters: vec![SubFilter::zeroed(self.num_buckets, self.bucket_size)],
            pages: Dirty::new(0),
        };
        cf.lay_out();
        cf
    }

    /// Whether `other`'s fingerprints can move into this filter (see the
    /// module's comment).
    pub fn mergeable_with(&self, other: &Self) -> bool {
        let pow2 = |f: &Self| f.filters.iter().all(|s| s.num_buckets.is_power_of_two());
        self.bucket_size == other.bucket_size
            && self.num_buckets == other.num_buckets
            && self.expansion == other.expansion
            && pow2(self)
            && pow2(other)
    }

    /// This filter with every fingerprint of `sources` added, and how many
    /// were added; `num_items` grows by that many, `num_deletes` is kept.
    pub fn merged(
        &self,
        sources: &[&CuckooFilter],
        max_bytes: u64,
    ) -> Result<(CuckooFilter, u64), MergeError> {
        if sources.iter().any(|s| !self.mergeable_with(s)) {
            return Err(MergeError::Shape);
        }
        let mut out = self.clone();
        let mut added = 0u64;
        for src in sources {
            for sub in &src.filters {
                let bs = src.bucket_size as usize;
                for (at, &fp) in sub.data.iter().enumerate() {
                    if fp != 0 {
                        out.place(fp, (at / bs) as u64, sub.num_buckets, max_bytes)?;
                        added += 1;
                    }
                }
            }
        }
        out.num_items = out.num_items.wrapping_add(added);
        out.mark_header();
        Ok((out, added))
    }

    /// Adds fingerprint `fp` found in bucket `bucket` of a source sub-filter
    /// of `m` buckets.
    fn place(&mut self, fp: u8, bucket: u64, m: u64, max_bytes: u64) -> Result<(), MergeError> {
        let p = Lookup {
            h1: bucket,
            h2: alt_hash(fp, bucket),
            fp,
        };
        let bs = self.bucket_size;
        loop {
            // Sub-filters of at most `m` buckets: the oldest ones (sizes grow).
            let eligible = self
                .filters
                .iter()
                .take_while(|f| f.num_buckets <= m)
                .count();
            if eligible == 0 {
                return Err(MergeError::Shape);
            }
            for f in self.filters[..eligible].iter_mut().rev() {
                if let Some(slot) = f.available(p.h1, p.h2, bs) {
                    f.set(slot, fp, &mut self.pages);
                    return Ok(());
                }
            }
            let max_iterations = self.max_iterations;
            if self.filters[eligible - 1].kick_insert(&p, bs, max_iterations, &mut self.pages) {
                return Ok(());
            }
            // A new sub-filter must be one the fingerprint may go to.
            let next = sub_buckets(self.num_buckets, self.expansion, self.filters.len());
            if self.expansion == 0 || next.is_none_or(|n| n > m) {
                return Err(MergeError::Full);
            }
            if self.filters.len() >= MAX_FILTERS_FOR_INSERT {
                return Err(MergeError::MaxExpansions);
            }
            if !self.grow(max_bytes) {
                return Err(MergeError::TooBig);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::cuckoo::{hash_item, Insert};

    fn with_items(exp: u16, items: std::ops::Range<u32>) -> CuckooFilter {
        let mut cf = CuckooFilter::new(64, 2, 20, exp, u64::MAX).unwrap();
        for i in items {
            let r = cf.insert(hash_item(i.to_string().as_bytes()), false, u64::MAX);
            assert_eq!(r, Insert::Inserted);
        }
        cf
    }

    #[test]
    fn merged_filter_finds_every_item() {
        let (a, b) = (with_items(1, 0..500), with_items(1, 500..1000));
        let (m, added) = a.empty_like().merged(&[&a, &b], u64::MAX).unwrap();
        assert_eq!((added, m.num_items()), (1000, 1000));
        assert!((0..1000u32).all(|i| m.check(hash_item(i.to_string().as_bytes()))));
        // Into itself: every item counted twice.
        let (twice, _) = a.merged(&[&a], u64::MAX).unwrap();
        assert!((0..500u32).all(|i| twice.count(hash_item(i.to_string().as_bytes())) >= 2));
    }

    #[test]
    fn grown_source_copies_level_by_level() {
        let a = with_items(2, 0..1000);
        assert!(a.num_filters() > 2);
        let (m, _) = a.empty_like().merged(&[&a], u64::MAX).unwrap();
        assert_eq!(m.num_filters(), a.num_filters());
        assert!((0..1000u32).all(|i| m.check(hash_item(i.to_string().as_bytes()))));
    }

    #[test]
    fn refusals() {
        let a = with_items(1, 0..10);
        let other = CuckooFilter::new(128, 2, 20, 1, u64::MAX).unwrap();
        assert_eq!(
            a.merged(&[&other], u64::MAX).unwrap_err(),
            MergeError::Shape
        );
        let full = with_items(0, 0..40);
        assert_eq!(
            full.merged(&[&full], u64::MAX).unwrap_err(),
            MergeError::Full
        );
        let big = with_items(1, 0..600);
        let cap = a.data_bytes();
        assert_eq!(a.merged(&[&big], cap).unwrap_err(), MergeError::TooBig);
    }
}
