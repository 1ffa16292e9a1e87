//! Cuckoo filters (CF.*), RedisBloom 2.8.2's exactly: the same hash
//! (MurmurHash64A of the item, seed 0), fingerprint (`hash % 255 + 1`),
//! alternate bucket (`index ^ fp * 0x5bd1e995`), bucket layout (one byte
//! per slot, `bucket_size` slots per bucket, sub-filters one after the
//! other), kick-out walk and growth, so the same commands give the same
//! bytes: SCANDUMP chunks and RDB values move between RedisBloom and
//! BlinkDB both ways. RedisBloom's kick-out is deterministic (the victim is
//! the next slot of each bucket in turn, no random draw), so nothing here
//! is random.
//!
//! RedisBloom's integer widths are kept where they change answers: a slot
//! index is truncated to 32 bits (`SubCF_GetIndex` returns `uint32_t`) and
//! the kick-out walk counts buckets in 32 bits; both only matter past 4 GB
//! of filter. Where RedisBloom would divide by zero or write past a buffer
//! (hostile headers and RDB values), the value is refused instead.

pub(crate) mod dump;
mod merge;
#[cfg(test)]
mod tests;

pub use dump::{Header, HEADER_LEN};
pub use merge::MergeError;

use super::dirty::Dirty;
use super::mapped::FileArray;

/// RedisBloom's defaults and limits (cuckoo.h, rebloom.c).
pub const DEFAULT_CAPACITY: i64 = 1024;
pub const DEFAULT_BUCKET_SIZE: u16 = 2;
pub const DEFAULT_MAX_ITERATIONS: u16 = 20;
pub const DEFAULT_EXPANSION: u16 = 1;
pub const MAX_BUCKET_SIZE: i64 = 255;
pub const MAX_ITERATIONS: i64 = 65535;
pub const MAX_EXPANSION: i64 = 32768;
/// CF.ADD and CF.INSERT refuse a filter of this many sub-filters
/// (RedisBloom's `CF_MAX_EXPANSIONS` module argument, default 32).
pub const MAX_FILTERS_FOR_INSERT: usize = 32;
/// How many bucket lines batches keep prefetched ahead: enough misses in
/// flight to cover memory latency, few enough for the core's miss buffers
/// (an item takes two lines per sub-filter, so a filter of many sub-filters
/// looks fewer items ahead).
const PREFETCH_LINES: usize = 32;
const MAX_NUM_BUCKETS: u64 = 0x00FF_FFFF_FFFF_FFFF;
const MAX_NUM_FILTERS: usize = u16::MAX as usize;
/// What RedisBloom's `CFSize` counts per filter and per sub-filter: its
/// `CuckooFilter` and `SubCF` structs.
const STRUCT_BYTES: u64 = 40;
const SUB_STRUCT_BYTES: u64 = 16;

/// The outcome of adding one item (RedisBloom's `CuckooInsertStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    Inserted,
    Exists,
    NoSpace,
    /// Growing would pass the memory cap (RedisBloom aborts on a failed
    /// allocation; BlinkDB answers its "Memory allocation failure").
    TooBig,
}

/// One sub-filter: `num_buckets` buckets of the filter's bucket size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubFilter {
    num_buckets: u64,
    /// On the heap, or mapped from the filter's sketch file at a restart.
    data: FileArray<u8>,
    /// Where its slots start in the filter's file body (`place`).
    at: usize,
}

impl SubFilter {
    pub fn num_buckets(&self) -> u64 {
        self.num_buckets
    }

    pub fn data(&self) -> &[u8] {
        &self.data
    }
}

/// A cuckoo filter and its sub-filters (RedisBloom's `CuckooFilter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuckooFilter {
    /// Buckets of the first sub-filter; sub-filter i has
    /// `num_buckets * expansion^i`.
    num_buckets: u64,
    num_items: u64,
    num_deletes: u64,
    bucket_size: u16,
    max_iterations: u16,
    expansion: u16,
    filters: Vec<SubFilter>,
    /// The file body's pages changed since its file got them
    /// (`file_body`'s layout: the header, then each sub-filter at its `at`).
    pages: Dirty,
}

/// An item's fingerprint and its two bucket hashes (`LookupParams`).
#[derive(Clone, Copy)]
struct Lookup {
    h1: u64,
    h2: u64,
    fp: u8,
}

impl Lookup {
    fn of(hash: u64) -> Self {
        let fp = (hash % 255 + 1) as u8;
        Lookup {
            h1: hash,
            h2: alt_hash(fp, hash),
            fp,
        }
    }
}

/// The item's 64-bit hash (`CUCKOO_GEN_HASH`).
pub fn hash_item(item: &[u8]) -> u64 {
    crate::types::hll::murmur64a(item, 0)
}

fn alt_hash(fp: u8, index: u64) -> u64 {
    index ^ (fp as u64).wrapping_mul(0x5bd1_e995)
}

/// RedisBloom's getNextN2: the next power of two, 0 for 0 and past 2^63.
fn next_pow2(n: u64) -> u64 {
    let mut n = n.wrapping_sub(1);
    n |= n >> 1;
    n |= n >> 2;
    n |= n >> 4;
    n |= n >> 8;
    n |= n >> 16;
    n |= n >> 32;
    n.wrapping_add(1)
}

/// Buckets of sub-filter `i`: `num_buckets * expansion^i`, None past
/// RedisBloom's 56-bit field (where its arithmetic would wrap).
fn sub_buckets(num_buckets: u64, expansion: u16, i: usize) -> Option<u64> {
    let growth = (expansion as u128).checked_pow(i as u32)?;
    let n = (num_buckets as u128).checked_mul(growth)?;
    (n <= MAX_NUM_BUCKETS as u128).then_some(n as u64)
}

impl SubFilter {
    fn zeroed(num_buckets: u64, bucket_size: u16) -> Self {
        SubFilter {
            num_buckets,
            data: FileArray::from_vec(vec![0; (num_buckets * bucket_size as u64) as usize]),
            at: 0,
        }
    }

    /// The first slot of `hash`'s bucket (`SubCF_GetIndex`, 32 bits wide).
    /// The bucket count is a power of two unless a hostile or foreign header
    /// said otherwise: a mask then, not a 64-bit division.
    #[inline]
    fn index(&self, hash: u64, bs: u16) -> usize {
        let n = self.num_buckets;
        let bucket = if n.is_power_of_two() {
            hash & (n - 1)
        } else {
            hash % n
        };
        bucket.wrapping_mul(bs as u64) as u32 as usize
    }

    /// Starts loading both of an item's buckets.
    #[inline]
    fn prefetch(&self, p: &Lookup, bs: u16) {
        for at in [self.index(p.h1, bs), self.index(p.h2, bs)] {
            if let Some(slot) = self.data.get(at) {
                crate::prefetch::line(slot);
            }
        }
    }

    fn bucket(&self, at: usize, bs: u16) -> &[u8] {
        &self.data[at..at + bs as usize]
    }

    fn find(&self, p: &Lookup, bs: u16) -> bool {
        let (a, b) = (self.index(p.h1, bs), self.index(p.h2, bs));
        self.bucket(a, bs).contains(&p.fp) || self.bucket(b, bs).contains(&p.fp)
    }

    fn count(&self, p: &Lookup, bs: u16) -> u64 {
        let (a, b) = (self.index(p.h1, bs), self.index(p.h2, bs));
        let n = |at| self.bucket(at, bs).iter().filter(|&&s| s == p.fp).count() as u64;
        n(a) + n(b)
    }

    fn delete(&mut self, p: &Lookup, bs: u16, pages: &mut Dirty) -> bool {
        for at in [self.index(p.h1, bs), self.index(p.h2, bs)] {
            if let Some(i) = self.bucket(at, bs).iter().position(|s| *s == p.fp) {
                self.set(at + i, 0, pages);
                return true;
            }
        }
        false
    }

    /// Writes slot `at`, marking its page.
    #[inline]
    fn set(&mut self, at: usize, fp: u8, pages: &mut Dirty) {
        self.data[at] = fp;
        pages.mark_byte(self.at + at);
    }

    /// Swaps slot `at` with `fp`, marking its page.
    #[inline]
    fn swap(&mut self, at: usize, fp: &mut u8, pages: &mut Dirty) {
        std::mem::swap(&mut self.data[at], fp);
        pages.mark_byte(self.at + at);
    }

    /// An empty slot in either bucket, first bucket first.
    fn available(&self, h1: u64, h2: u64, bs: u16) -> Option<usize> {
        for at in [self.index(h1, bs), self.index(h2, bs)] {
            if let Some(i) = self.bucket(at, bs).iter().position(|&s| s == 0) {
                return Some(at + i);
            }
        }
        None
    }

    /// Filter_KOInsert: walks from `p.h1`'s bucket, each step swapping the
    /// carried fingerprint with the bucket's victim slot (the next slot at
    /// each step) and moving to the evicted one's other bucket; when no
    /// empty slot turns up in `max_iterations` steps the walk is undone.
    fn kick_insert(&mut self, p: &Lookup, bs: u16, max_iterations: u16, pages: &mut Dirty) -> bool {
        // RedisBloom keeps the bucket count and the position in 32 bits.
        let n = self.num_buckets as u32 as u64;
        if n == 0 {
            return false;
        }
        let bs32 = bs as u32;
        let mut fp = p.fp;
        let mut victim: u32 = 0;
        let mut ii = (p.h1 % n) as u32;
        for _ in 0..max_iterations {
            let at = ii.wrapping_mul(bs32) as usize;
            self.swap(at + victim as usize, &mut fp, pages);
            ii = (alt_hash(fp, ii as u64) % n) as u32;
            let at = ii.wrapping_mul(bs32) as usize;
            if let Some(i) = self.bucket(at, bs).iter().position(|&s| s == 0) {
                self.set(at + i, fp, pages);
                return true;
            }
            victim = (victim + 1) % bs32;
        }
        for _ in 0..max_iterations {
            victim = (victim + bs32 - 1) % bs32;
            ii = (alt_hash(fp, ii as u64) % n) as u32;
            let at = ii.wrapping_mul(bs32) as usize;
            self.swap(at + victim as usize, &mut fp, pages);
        }
        false
    }
}

impl CuckooFilter {
    /// CF.RESERVE's filter (CuckooFilter_Init): `capacity / bucket_size`
    /// buckets rounded up to a power of two, expansion rounded up to one.
    /// None when its bytes would pass `max_bytes`. The caller has checked
    /// RedisBloom's argument limits (capacity at least twice the bucket size).
    pub fn new(
        capacity: u64,
        bucket_size: u16,
        max_iterations: u16,
        expansion: u16,
        max_bytes: u64,
    ) -> Option<Self> {
        let num_buckets = match next_pow2(capacity / bucket_size.max(1) as u64) {
            0 => 1,
            n => n,
        };
        let mut cf = CuckooFilter {
            num_buckets,
            num_items: 0,
            num_deletes: 0,
            bucket_size,
            max_iterations,
            expansion: next_pow2(expansion as u64) as u16,
            filters: Vec::new(),
            pages: Dirty::new(0),
        };
        cf.grow(max_bytes).then_some(cf)
    }

    /// Adds a sub-filter `expansion^n` times the first one's size.
    fn grow(&mut self, max_bytes: u64) -> bool {
        if self.filters.len() >= MAX_NUM_FILTERS {
            return false;
        }
        let Some(buckets) = sub_buckets(self.num_buckets, self.expansion, self.filters.len())
        else {
            return false;
        };
        let bytes = buckets as u128 * self.bucket_size as u128;
        if self.data_bytes() as u128 + bytes > max_bytes as u128 {
            return false;
        }
        self.filters
            .push(SubFilter::zeroed(buckets, self.bucket_size));
        self.lay_out();
        true
    }

    /// Sets each sub-filter's offset in the file body (after the header and
    /// the bucket counts): a sub-filter added or dropped moves them all, so
    /// every page is marked.
    fn lay_out(&mut self) {
        let mut at = HEADER_LEN + 8 * self.filters.len();
        for f in &mut self.filters {
            f.at = at;
            at += f.data.len();
        }
        self.pages.mark_all();
    }

    /// The header's fields changed (item and delete counts): the body's
    /// first page.
    #[inline]
    fn mark_header(&mut self) {
        self.pages.mark(0);
    }

    /// The slot bytes of every sub-filter.
    pub fn data_bytes(&self) -> u64 {
        self.filters.iter().map(|f| f.data.len() as u64).sum()
    }

    /// CF.INFO's Size (RedisBloom's CFSize and CFMemUsage): its structs and
    /// every sub-filter's slots.
    pub fn size(&self) -> u64 {
        STRUCT_BYTES + SUB_STRUCT_BYTES * self.filters.len() as u64 + self.data_bytes()
    }

    /// Heap bytes this filter holds in BlinkDB (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        let subs = self.filters.capacity() * std::mem::size_of::<SubFilter>();
        crate::types::malloc_chunk(subs)
            + self
                .filters
                .iter()
                .map(|f| match f.data.is_mapped() {
                    true => f.data.bytes(),
                    false => crate::types::malloc_chunk(f.data.bytes()),
                })
                .sum::<usize>()
    }

    pub fn num_buckets(&self) -> u64 {
        self.num_buckets
    }
    pub fn num_items(&self) -> u64 {
        self.num_items
    }
    pub fn num_deletes(&self) -> u64 {
        self.num_deletes
    }
    pub fn num_filters(&self) -> usize {
        self.filters.len()
    }
    pub fn bucket_size(&self) -> u16 {
        self.bucket_size
    }
    pub fn max_iterations(&self) -> u16 {
        self.max_iterations
    }
    pub fn expansion(&self) -> u16 {
        self.expansion
    }
    pub fn filters(&self) -> &[SubFilter] {
        &self.filters
    }

    /// CF.EXISTS of an item's hash.
    pub fn check(&self, hash: u64) -> bool {
        let p = Lookup::of(hash);
        self.filters.iter().any(|f| f.find(&p, self.bucket_size))
    }

    /// Starts loading the buckets of `hash` in the sub-filters a batch
    /// reads: every one for a lookup (`all`), the newest alone for an add
    /// that may repeat an item (it looks there first and mostly stops there;
    /// the older ones are full: loading their buckets too cost a grown
    /// filter's CF.INSERT memory traffic it did not use).
    #[inline]
    fn prefetch(&self, hash: u64, all: bool) {
        let p = Lookup::of(hash);
        let skip = if all {
            0
        } else {
            self.filters.len().saturating_sub(1)
        };
        self.filters
            .iter()
            .skip(skip)
            .for_each(|f| f.prefetch(&p, self.bucket_size));
    }

    /// How many items ahead a batch prefetches.
    fn prefetch_items(&self, all: bool) -> usize {
        let filters = if all { self.filters.len().max(1) } else { 1 };
        (PREFETCH_LINES / (2 * filters)).max(1)
    }

    /// CF.MEXISTS: [`check`](Self::check) of each hash, in order, with the
    /// buckets of items further on prefetched, so that a batch's cache
    /// misses (two random buckets per item and sub-filter) overlap.
    pub fn check_many<'a>(&'a self, hashes: &'a [u64]) -> impl Iterator<Item = bool> + 'a {
        let ahead = self.prefetch_items(true);
        hashes
            .iter()
            .take(ahead)
            .for_each(|&h| self.prefetch(h, true));
        hashes.iter().enumerate().map(move |(i, &h)| {
            if let Some(&next) = hashes.get(i + ahead) {
                self.prefetch(next, true);
            }
            self.check(h)
        })
    }

    /// CF.INSERT and CF.INSERTNX: [`insert`](Self::insert) of each hash, in
    /// order (the same slots as one by one), with the buckets of items
    /// further on prefetched.
    pub fn insert_many<'a>(
        &'a mut self,
        hashes: &'a [u64],
        unique: bool,
        max_bytes: u64,
    ) -> impl Iterator<Item = Insert> + 'a {
        let ahead = self.prefetch_items(unique);
        hashes
            .iter()
            .take(ahead)
            .for_each(|&h| self.prefetch(h, unique));
        hashes.iter().enumerate().map(move |(i, &h)| {
            if let Some(&next) = hashes.get(i + ahead) {
                self.prefetch(next, unique);
            }
            self.insert(h, unique, max_bytes)
        })
    }

    /// CF.COUNT: the fingerprint's copies in both buckets of every
    /// sub-filter (a bucket counted twice when both hashes pick it).
    pub fn count(&self, hash: u64) -> u64 {
        let p = Lookup::of(hash);
        self.filters
            .iter()
            .map(|f| f.count(&p, self.bucket_size))
            .sum()
    }

    /// CF.ADD (`unique` false) or CF.ADDNX (`unique` true).
    pub fn insert(&mut self, hash: u64, unique: bool, max_bytes: u64) -> Insert {
        let p = Lookup::of(hash);
        if unique && self.filters.iter().any(|f| f.find(&p, self.bucket_size)) {
            return Insert::Exists;
        }
        loop {
            let bs = self.bucket_size;
            for f in self.filters.iter_mut().rev() {
                if let Some(slot) = f.available(p.h1, p.h2, bs) {
                    f.set(slot, p.fp, &mut self.pages);
                    self.num_items = self.num_items.wrapping_add(1);
                    self.mark_header();
                    return Insert::Inserted;
                }
            }
            let max_iterations = self.max_iterations;
            let last = self.filters.last_mut().expect("a filter has a sub-filter");
            if last.kick_insert(&p, bs, max_iterations, &mut self.pages) {
                self.num_items = self.num_items.wrapping_add(1);
                self.mark_header();
                return Insert::Inserted;
            }
            if self.expansion == 0 {
                return Insert::NoSpace;
            }
            if !self.grow(max_bytes) {
                return Insert::TooBig;
            }
        }
    }

    /// CF.DEL: removes one copy of the fingerprint, newest sub-filter
    /// first; past 10% deletes a filter of several sub-filters compacts.
    pub fn delete(&mut self, hash: u64) -> bool {
        let p = Lookup::of(hash);
        let bs = self.bucket_size;
        for i in (0..self.filters.len()).rev() {
            if self.filters[i].delete(&p, bs, &mut self.pages) {
                self.num_items = self.num_items.wrapping_sub(1);
                self.num_deletes = self.num_deletes.wrapping_add(1);
                self.mark_header();
                if self.filters.len() > 1 && self.num_deletes as f64 > self.num_items as f64 * 0.10
                {
                    self.compact(false);
                }
                return true;
            }
        }
        false
    }

    /// CF.COMPACT (`cont` true) and the compaction after deletes: moves
    /// fingerprints into older sub-filters, newest first, dropping the last
    /// sub-filter once it is empty; without `cont`, stops at the first
    /// sub-filter that cannot be emptied.
    pub fn compact(&mut self, cont: bool) {
        let mut i = self.filters.len();
        while i > 1 {
            if !self.compact_one(i - 1) && !cont {
                break;
            }
            i -= 1;
        }
        self.num_deletes = 0;
        self.mark_header();
    }

    /// CuckooFilter_CompactSingle: true when every fingerprint moved.
    fn compact_one(&mut self, at: usize) -> bool {
        let bs = self.bucket_size;
        let (older, rest) = self.filters.split_at_mut(at);
        let current = &mut rest[0];
        let pages = &mut self.pages;
        let mut all_moved = true;
        for bucket in 0..current.num_buckets {
            for slot in 0..bs as u64 {
                let pos = (bucket * bs as u64 + slot) as usize;
                let fp = current.data[pos];
                if fp == 0 {
                    continue;
                }
                let (h1, h2) = (bucket, alt_hash(fp, bucket));
                let home = older
                    .iter_mut()
                    .find_map(|f| f.available(h1, h2, bs).map(|s| (f, s)));
                match home {
                    Some((f, s)) => {
                        f.set(s, fp, pages);
                        current.set(pos, 0, pages);
                    }
                    None => all_moved = false,
                }
            }
        }
        if all_moved && at == self.filters.len() - 1 {
            self.filters.pop();
            self.lay_out();
        }
        all_moved
    }

    /// A filter from its parts, as an RDB value or a SCANDUMP header gives
    /// them; None when RedisBloom's arithmetic would fail on it (a
    /// sub-filter of no buckets, slots that do not match the size).
    pub(crate) fn from_parts(
        header: &Header,
        filters: Vec<SubFilter>,
    ) -> Result<Self, &'static str> {
        if header.bucket_size == 0 || header.bucket_size as i64 > MAX_BUCKET_SIZE {
            return Err("cuckoo filter bucket size out of range");
        }
        if header.num_buckets == 0 || header.num_buckets > MAX_NUM_BUCKETS {
            return Err("cuckoo filter bucket count out of range");
        }
        if filters.is_empty() || filters.len() > MAX_NUM_FILTERS {
            return Err("cuckoo filter sub-filter count out of range");
        }
        for f in &filters {
            if f.num_buckets == 0
                || f.num_buckets > MAX_NUM_BUCKETS
                || f.data.len() as u128 != f.num_buckets as u128 * header.bucket_size as u128
            {
                return Err("cuckoo sub-filter size does not match its buckets");
            }
        }
        let mut cf = CuckooFilter {
            num_buckets: header.num_buckets,
            num_items: header.num_items,
            num_deletes: header.num_deletes,
            bucket_size: header.bucket_size,
            max_iterations: header.max_iterations,
            expansion: header.expansion,
            filters,
            pages: Dirty::new(0),
        };
        cf.lay_out();
        Ok(cf)
    }

    /// CF.DEBUG's line.
    pub fn debug_line(&self) -> String {
        format!(
            "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
            self.bucket_size,
            self.num_buckets,
            self.num_items,
            self.num_deletes,
            self.filters.len(),
            self.max_iterations,
            self.expansion
        )
    }
}
