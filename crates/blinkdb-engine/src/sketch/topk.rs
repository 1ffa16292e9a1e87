//! Top-k (TOPK.*) as RedisBloom 2.8.2 keeps it (src/topk.c): HeavyKeeper's
//! `depth` rows of `width` buckets (a fingerprint and a count each, bucket by
//! MurmurHash2 with the row as seed, fingerprint with seed 1919) and a min-heap
//! of the `k` heaviest items, sifted as topk.c sifts it so ties and expulsions
//! come out in RedisBloom's order. The RDB payload is `TopK-TYPE` encoding
//! version 0, field for field.
//!
//! Decay: when an item meets a bucket held by another fingerprint, each unit
//! of its increment decrements that bucket with probability decay^count.
//! RedisBloom draws `rand()/RAND_MAX` from the process's libc generator, which
//! Redis seeds from the clock, so its draws cannot be reproduced; here each
//! sketch has its own generator giving the same distribution (a uniform 31-bit
//! value over RAND_MAX). It is seeded at creation from the caller's seed and at
//! load from the loaded buckets, so replaying the same commands from the same
//! start (an AOF, a replica's stream) draws the same values. With decay 1 every
//! draw decrements (but for the 2^-31 chance of a draw equal to RAND_MAX), so
//! answers are RedisBloom's exactly.

use super::cells::PAGE;
use super::dirty::{Dirty, WHOLE_PART_PAGES};
use super::mapped::FileArray;
use super::murmur2::{murmur2, row_group, Modulus, Seeded, LANES};
use crate::rdb::module;
use crate::rdb::{RdbError, Reader};
use std::sync::Arc;

/// RedisBloom's module type name and the encoding version it writes.
pub const TYPE_NAME: &str = "TopK-TYPE";
pub const ENCVER: u64 = 0;

/// TOPK.RESERVE's defaults when only k is given.
pub const DEFAULT_WIDTH: u32 = 8;
pub const DEFAULT_DEPTH: u32 = 7;
pub const DEFAULT_DECAY: f64 = 0.9;

/// The fingerprint's seed (topk.c's GA).
const FP_SEED: u32 = 1919;
/// Entries of the decay lookup table (TOPK_DECAY_LOOKUP_TABLE).
const LOOKUP: usize = 256;
/// rand()'s largest value in glibc.
const RAND_MAX: f64 = 2_147_483_647.0;
/// sizeof(HeapBucket) and sizeof(Bucket) on a 64-bit build: the RDB buffers'
/// element sizes, and what RedisBloom allocates per slot and bucket.
const HEAP_BUCKET_BYTES: u64 = 24;
const BUCKET_BYTES: u64 = 8;
/// The file body's fixed fields before the buckets (k, width, depth, decay,
/// the generator's state); bucket i is at `BODY_HEAD + 8i`.
const BODY_HEAD: usize = 28;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopkError {
    /// Past the caller's cap (RedisBloom answers this when its size check or
    /// allocation fails; on redis-server 7.0 a failed allocation aborts).
    TooLarge,
}

impl TopkError {
    /// The reply text.
    pub fn text(self) -> &'static str {
        match self {
            TopkError::TooLarge => "ERR Insufficient memory to create topk data structure",
        }
    }
}

/// As the file body holds it (two little-endian u32), so that a restart
/// maps the buckets instead of decoding them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
struct Bucket {
    fp: u32,
    count: u32,
}

/// An item `TopK::add_each` has hashed ahead (`TopK::prepare`).
struct Prepared<'i> {
    item: &'i [u8],
    increment: u32,
    /// The first LANES rows' slots.
    at: [usize; LANES],
    fp: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct HeapSlot {
    fp: u32,
    /// The item's length as the heap keeps it (after an RDB load it can
    /// differ from `item`'s: RedisBloom saves items as C strings).
    itemlen: u32,
    /// `None` for an empty slot, and for an empty item after a load.
    item: Option<Box<[u8]>>,
    count: u32,
}

impl HeapSlot {
    fn item(&self) -> &[u8] {
        self.item.as_deref().unwrap_or(b"")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopK {
    k: u32,
    width: u32,
    depth: u32,
    decay: f64,
    /// On the heap, or mapped from the sketch's file at a restart.
    buckets: FileArray<Bucket>,
    heap: Vec<HeapSlot>,
    /// Each heap slot's fingerprint, in the heap's order: the search for an
    /// item (on nearly every add) compares these 16 at a time instead of
    /// walking the slots (a third of TOPK.ADD's instructions at k 100).
    fps: Vec<u32>,
    /// decay^i for i < 256 (pow, as TopK_Create computes it).
    lookup: Box<[f64; LOOKUP]>,
    /// For i < 256, how many draws decay a bucket of count i: a draw `d`
    /// decays it exactly when `d < below[i]`, the same test as
    /// `d / RAND_MAX < lookup[i]` without the division (see `thresholds`).
    below: Box<[u32; LOOKUP]>,
    rng: u64,
    /// The heap's item bytes, kept as items come and go: memory accounting
    /// asks for `heap_bytes` after every write, and summing k items each
    /// time was a fifth of TOPK.ADD's instructions (k 100).
    item_bytes: usize,
    /// The file body's pages changed since its file got them: a bucket's
    /// page, the first page (the generator's state), and from the heap's
    /// start on when the heap changed (its slots vary in length).
    pages: Dirty,
}

// The doubles (decay and its powers) are never NaN: RESERVE and the loader
// keep decay in (0, 1].
impl Eq for TopK {}

/// The part of an item RedisBloom replies (RedisModule_ReplyWithCString):
/// up to its first NUL byte.
pub fn c_string(item: &[u8]) -> &[u8] {
    item.iter()
        .position(|b| *b == 0)
        .map_or(item, |end| &item[..end])
}

fn lookup_table(decay: f64) -> Box<[f64; LOOKUP]> {
    let mut t = Box::new([0.0; LOOKUP]);
    for (i, v) in t.iter_mut().enumerate() {
        *v = decay.powf(i as f64);
    }
    t
}

/// For each entry of the decay table, the number of draws `d` (31-bit
/// values) with `d as f64 / RAND_MAX < chance`. Dividing by a positive
/// constant is monotonic in IEEE arithmetic, so those draws are a prefix of
/// 0..2^31, found by binary search; comparing a draw with it is the
/// division's test exactly.
fn thresholds(lookup: &[f64; LOOKUP]) -> Box<[u32; LOOKUP]> {
    let mut t = Box::new([0u32; LOOKUP]);
    for (out, &chance) in t.iter_mut().zip(lookup.iter()) {
        let (mut lo, mut hi) = (0u64, 1u64 << 31);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if (mid as f64 / RAND_MAX) < chance {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        *out = lo as u32;
    }
    t
}

/// splitmix64's increment: the generator's state advances by it per draw.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// splitmix64, reduced to rand()'s 31 bits.
fn draw(state: &mut u64) -> u32 {
    *state = state.wrapping_add(GOLDEN);
    output(*state)
}

/// splitmix64's output for a state already advanced.
#[inline(always)]
fn output(state: u64) -> u32 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 33) as u32
}

/// The probability that one unit of increment decays a bucket of `count`.
fn decay_chance(lookup: &[f64; LOOKUP], count: u32) -> f64 {
    let count = count as usize;
    if count < LOOKUP {
        lookup[count]
    } else {
        lookup[LOOKUP - 1].powf((count / (LOOKUP - 1)) as f64) * lookup[count % (LOOKUP - 1)]
    }
}

/// `increment` units of an item with fingerprint `fp` on bucket `b`, as
/// TopK_Add counts them: an empty bucket takes the item with the whole
/// increment, one holding `fp` adds it, and one holding another item is
/// decayed unit by unit, each unit with chance decay^count; if it reaches 0
/// the item takes it with the units left. Returns the count the item
/// reached in this bucket, 0 if it holds another item.
fn add_units(
    rng: &mut u64,
    lookup: &[f64; LOOKUP],
    b: &mut Bucket,
    fp: u32,
    increment: u32,
) -> u32 {
    if b.count == 0 {
        *b = Bucket {
            fp,
            count: increment,
        };
        return increment;
    }
    if b.fp == fp {
        b.count = b.count.wrapping_add(increment);
        return b.count;
    }
    let mut left = increment;
    while left > 0 {
        if (draw(rng) as f64 / RAND_MAX) < decay_chance(lookup, b.count) {
            b.count -= 1;
            if b.count == 0 {
                *b = Bucket { fp, count: left };
                return left;
            }
        }
        left -= 1;
    }
    0
}

/// `add_units` with an increment of 1 on a bucket whose count is below
/// LOOKUP, without branching on the bucket or the draw: which case applies
/// is random, and a mispredicted branch per row was most of TOPK.ADD's
/// time. The generator advances exactly when `add_units` draws (the bucket
/// holds another item), and a draw decays exactly when its division test
/// would (`thresholds`).
#[inline(always)]
fn add_one(rng: &mut u64, below: &[u32; LOOKUP], b: &mut Bucket, fp: u32) -> u32 {
    let held = b.count != 0;
    let same = held & (b.fp == fp);
    let other = held & (b.fp != fp);
    let next = rng.wrapping_add(GOLDEN);
    let decays = other & (output(next) < below[b.count as usize % LOOKUP]);
    *rng = if other { next } else { *rng };
    let count = b.count + same as u32 - decays as u32;
    // Empty, or decayed to 0: the item's now.
    let takes = count == 0;
    let count = count | takes as u32;
    b.count = count;
    b.fp = if takes { fp } else { b.fp };
    if other & !takes {
        0
    } else {
        count
    }
}

/// heapifyDown: sifts `start` down the min-heap by count, stopping at an
/// equal child as topk.c does (the order of ties depends on it); `fps`
/// (the slots' fingerprints) moves with the slots.
fn heapify_down(heap: &mut [HeapSlot], fps: &mut [u32], start: usize) {
    let len = heap.len();
    if len < 2 || (len - 2) / 2 < start {
        return;
    }
    let mut child = 2 * start + 1;
    if child + 1 < len && heap[child].count > heap[child + 1].count {
        child += 1;
    }
    if heap[child].count > heap[start].count {
        return;
    }
    let top = heap[start].count;
    let mut at = start;
    loop {
        // Moving the child up and the sifted slot down is topk.c's copy
        // into `start` with the slot written last.
        heap.swap(at, child);
        fps.swap(at, child);
        at = child;
        if (len - 2) / 2 < child {
            break;
        }
        child = 2 * child + 1;
        if child + 1 < len && heap[child].count > heap[child + 1].count {
            child += 1;
        }
        if heap[child].count >= top {
            break;
        }
    }
}

impl TopK {
    /// The bytes RedisBloom allocates for a sketch's buckets and heap.
    pub fn table_bytes(k: u32, width: u32, depth: u32) -> u64 {
        // Saturating: u32::MAX cubed overflows u64, and a wrapped product
        // would pass the size check.
        (k as u64 * HEAP_BUCKET_BYTES)
            .saturating_add((width as u64 * depth as u64).saturating_mul(BUCKET_BYTES))
    }

    /// TopK_Create: k, width and depth at least 1, decay in (0, 1] (the
    /// caller parses them with RedisBloom's errors); refused past `max_bytes`.
    pub fn new(
        k: u32,
        width: u32,
        depth: u32,
        decay: f64,
        max_bytes: u64,
        seed: u64,
    ) -> Result<Self, TopkError> {
        assert!(k > 0 && width > 0 && depth > 0 && decay > 0.0 && decay <= 1.0);
        if Self::table_bytes(k, width, depth) > max_bytes {
            return Err(TopkError::TooLarge);
        }
        Ok(Self::from_parts(
            k,
            width,
            depth,
            decay,
            FileArray::from_vec(vec![Bucket::default(); width as usize * depth as usize]),
            vec![HeapSlot::default(); k as usize],
            seed,
        ))
    }

    /// A sketch of these stored parts; the decay table and the heap's item
    /// bytes are derived from them.
    fn from_parts(
        k: u32,
        width: u32,
        depth: u32,
        decay: f64,
        buckets: FileArray<Bucket>,
        heap: Vec<HeapSlot>,
        rng: u64,
    ) -> Self {
        let lookup = lookup_table(decay);
        TopK {
            k,
            width,
            depth,
            decay,
            buckets,
            item_bytes: heap.iter().map(|s| s.item().len()).sum(),
            fps: heap.iter().map(|s| s.fp).collect(),
            heap,
            below: thresholds(&lookup),
            lookup,
            rng,
            pages: Dirty::new(0),
        }
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }

    pub fn decay(&self) -> f64 {
        self.decay
    }

    /// checkExistInHeap: the item's heap slot, searched from the last slot.
    fn find(&self, item: &[u8], fp: u32) -> Option<usize> {
        const LANES: usize = 16;
        let mut end = self.fps.len();
        while end > 0 {
            let start = end.saturating_sub(LANES);
            // No early exit inside a block: the compiler compares it whole.
            let block = &self.fps[start..end];
            if block.iter().fold(false, |any, &f| any | (f == fp)) {
                let found = (start..end).rev().find(|&i| {
                    let s = &self.heap[i];
                    self.fps[i] == fp && s.itemlen as usize == item.len() && s.item() == item
                });
                if found.is_some() {
                    return found;
                }
            }
            end = start;
        }
        None
    }

    /// TopK_Add: counts `increment` occurrences of `item`. Returns the item
    /// the heap expelled to make room for it (`None`: nothing expelled, or
    /// an empty slot, which RedisBloom also answers as a null).
    pub fn add(&mut self, item: &[u8], increment: u32) -> Option<Box<[u8]>> {
        let mut expelled = None;
        self.add_each(std::iter::once((item, increment)), |e| expelled = e);
        expelled
    }

    /// [`add`](Self::add) for each `(item, increment)` in turn, giving each
    /// result to `each`. While one item's buckets are counted, the next
    /// item's are hashed and their cache lines requested: a command's items
    /// overlap their bucket misses (a quarter of TOPK.ADD's time in the
    /// server, where the network churns the caches between commands).
    pub fn add_each<'i>(
        &mut self,
        items: impl Iterator<Item = (&'i [u8], u32)>,
        each: impl FnMut(Option<Box<[u8]>>),
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is available, as just checked.
            return unsafe { self.add_each_avx2(items, each) };
        }
        self.add_each_any(items, each)
    }

    /// [`add_each`](Self::add_each) compiled for AVX2: the rows' hashes
    /// (`murmur2::row_group`) are computed eight at a time.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn add_each_avx2<'i>(
        &mut self,
        items: impl Iterator<Item = (&'i [u8], u32)>,
        each: impl FnMut(Option<Box<[u8]>>),
    ) {
        self.add_each_any(items, each)
    }

    #[inline(always)]
    fn add_each_any<'i>(
        &mut self,
        mut items: impl Iterator<Item = (&'i [u8], u32)>,
        mut each: impl FnMut(Option<Box<[u8]>>),
    ) {
        let width = Modulus::new(self.width);
        let mut next = items
            .next()
            .map(|(item, inc)| self.prepare(width, item, inc));
        if next.is_none() {
            return;
        }
        // The generator's state (page 0) moves with any decay draw. Small
        // buckets are all marked once for all the items (WHOLE_PART_PAGES),
        // larger ones each changed bucket's page.
        self.pages.mark(0);
        let bucket_bytes = 8 * self.buckets.len();
        let small = bucket_bytes <= WHOLE_PART_PAGES * PAGE;
        if small {
            self.pages.mark_bytes(BODY_HEAD, bucket_bytes);
        }
        while let Some(cur) = next {
            next = items
                .next()
                .map(|(item, inc)| self.prepare(width, item, inc));
            each(self.apply(width, small, cur));
        }
    }

    /// An item's fingerprint and first LANES rows' slots, with their
    /// buckets' lines requested.
    #[inline(always)]
    fn prepare<'i>(&self, width: Modulus, item: &'i [u8], increment: u32) -> Prepared<'i> {
        let n = LANES.min(self.depth as usize);
        let (at, fp) = row_group(item, width, 0, n, Some(FP_SEED));
        for &at in &at[..n] {
            crate::prefetch::line(self.buckets.as_ptr().wrapping_add(at));
        }
        Prepared {
            item,
            increment,
            at,
            fp,
        }
    }

    /// TopK_Add of a prepared item. The caller has marked page 0, and every
    /// bucket page if `small`; otherwise each bucket changed here is marked.
    #[inline(always)]
    fn apply(&mut self, width: Modulus, small: bool, p: Prepared<'_>) -> Option<Box<[u8]>> {
        let Prepared {
            item,
            increment,
            mut at,
            fp,
        } = p;
        let depth = self.depth as usize;
        let heap_min = self.heap[0].count;
        let mut max_count = 0u32;
        // Rows in groups of LANES: the group's slots first (hashed at
        // once), then its buckets, whose loads are all known by then (each
        // bucket read after its own slot cost a stall a row).
        let buckets = &mut *self.buckets;
        let mut row = 0;
        loop {
            let n = LANES.min(depth - row);
            for &at in &at[..n] {
                if !small {
                    self.pages.mark_bytes(BODY_HEAD + 8 * at, 8);
                }
                let b = &mut buckets[at];
                // One unit on a bucket inside the decay table (every
                // TOPK.ADD) takes the path that does not branch on the draw.
                let count = if increment == 1 && b.count < LOOKUP as u32 {
                    add_one(&mut self.rng, &self.below, b, fp)
                } else {
                    add_units(&mut self.rng, &self.lookup, b, fp, increment)
                };
                max_count = max_count.max(count);
            }
            row += n;
            if row == depth {
                break;
            }
            at = row_group(item, width, row, LANES.min(depth - row), None).0;
        }
        if max_count < heap_min {
            return None;
        }
        self.pages.mark_from(self.heap_at());
        if let Some(i) = self.find(item, fp) {
            // Not the larger of the two: the buckets may have decayed.
            self.heap[i].count = max_count;
            heapify_down(&mut self.heap, &mut self.fps, i);
            return None;
        }
        let expelled = std::mem::replace(
            &mut self.heap[0],
            HeapSlot {
                fp,
                itemlen: item.len() as u32,
                item: Some(item.into()),
                count: max_count,
            },
        );
        self.fps[0] = fp;
        heapify_down(&mut self.heap, &mut self.fps, 0);
        self.item_bytes = self.item_bytes + item.len() - expelled.item().len();
        expelled.item
    }

    /// Where the heap starts in the file body.
    fn heap_at(&self) -> usize {
        BODY_HEAD + 8 * self.buckets.len()
    }

    /// TopK_Query: whether the item is in the heap.
    pub fn query(&self, item: &[u8]) -> bool {
        self.find(item, murmur2(item, FP_SEED)).is_some()
    }

    /// TopK_Count: the largest count among the item's buckets holding its
    /// fingerprint (for an item in the heap, only those at least the heap's
    /// minimum).
    pub fn count(&self, item: &[u8]) -> u32 {
        let seeded = Seeded::new(item);
        let fp = seeded.hash(FP_SEED);
        let heap_min = self.heap[0].count;
        let in_heap = self.find(item, fp).is_some();
        let mut res = 0;
        for at in seeded.row_slots(self.width as usize, self.depth as usize) {
            let b = self.buckets[at];
            if b.fp == fp && (!in_heap || b.count >= heap_min) {
                res = res.max(b.count);
            }
        }
        res
    }

    /// TOPK.LIST: the heap's items by count, largest first (a stable sort of
    /// the heap array, as glibc's qsort merge sort gives), up to the first
    /// empty slot.
    pub fn list(&self) -> Vec<(&[u8], u32)> {
        let mut slots: Vec<&HeapSlot> = self.heap.iter().collect();
        slots.sort_by_key(|s| std::cmp::Reverse(s.count));
        slots
            .into_iter()
            .take_while(|s| s.count != 0)
            .map(|s| (s.item(), s.count))
            .collect()
    }

    /// The heap bytes this sketch holds besides itself (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        let items = self.item_bytes;
        debug_assert_eq!(items, self.heap.iter().map(|s| s.item().len()).sum());
        self.buckets.bytes()
            + self.heap.capacity() * std::mem::size_of::<HeapSlot>()
            + self.fps.capacity() * 4
            + LOOKUP * (8 + 4)
            + items
    }

    /// The fields TopKRdbSave writes (between the type id and EOF): k, width,
    /// depth, decay, the buckets and the heap as C arrays (little-endian; the
    /// heap's item pointers written as 0), then each heap item as a C string
    /// with its NUL (one NUL for an empty slot).
    pub fn write_rdb(&self, out: &mut Vec<u8>, compress: bool) {
        module::put_uint(out, self.k as u64);
        module::put_uint(out, self.width as u64);
        module::put_uint(out, self.depth as u64);
        module::put_double(out, self.decay);
        let mut raw = Vec::with_capacity(self.buckets.len() * BUCKET_BYTES as usize);
        for b in self.buckets.iter() {
            raw.extend_from_slice(&b.fp.to_le_bytes());
            raw.extend_from_slice(&b.count.to_le_bytes());
        }
        module::put_string(out, &raw, compress);
        raw.clear();
        for s in &self.heap {
            raw.extend_from_slice(&s.fp.to_le_bytes());
            raw.extend_from_slice(&s.itemlen.to_le_bytes());
            raw.extend_from_slice(&[0; 8]);
            raw.extend_from_slice(&s.count.to_le_bytes());
            raw.extend_from_slice(&[0; 4]);
        }
        module::put_string(out, &raw, compress);
        for s in &self.heap {
            raw.clear();
            raw.extend_from_slice(c_string(s.item()));
            raw.push(0);
            module::put_string(out, &raw, compress);
        }
    }

    /// TopKRdbLoad's fields (`encver` from the type id). RedisBloom asserts the buffers' sizes
    /// (an abort); here a payload that does not hold together is an error.
    /// RedisBloom 2.8.2 leaves the decay table zeroed after a load (no decay
    /// until the key is made again); it is rebuilt here, as RedisBloom 8 does.
    pub fn read_rdb(r: &mut Reader<'_>, encver: u64) -> Result<Self, RdbError> {
        if encver > ENCVER {
            return Err(RdbError::Unsupported(format!(
                "module type {TYPE_NAME} encoding version {encver} is not supported ({ENCVER})"
            )));
        }
        let dim = |v: u64| u32::try_from(v).ok().filter(|v| *v > 0);
        let k = dim(module::uint(r)?);
        let width = dim(module::uint(r)?);
        let depth = dim(module::uint(r)?);
        let (Some(k), Some(width), Some(depth)) = (k, width, depth) else {
            return Err(RdbError::Corrupt("top-k dimensions out of range"));
        };
        let decay = module::double(r)?;
        if !(decay > 0.0 && decay <= 1.0) {
            return Err(RdbError::Corrupt("top-k decay out of range"));
        }
        let raw = module::string(r)?;
        if Some(raw.len() as u64) != (width as u64 * depth as u64).checked_mul(BUCKET_BYTES) {
            return Err(RdbError::Corrupt(
                "top-k buckets do not match its dimensions",
            ));
        }
        let u32_at = |raw: &[u8], at: usize| {
            u32::from_le_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]])
        };
        let buckets: Vec<Bucket> = raw
            .chunks_exact(8)
            .map(|c| Bucket {
                fp: u32_at(c, 0),
                count: u32_at(c, 4),
            })
            .collect();
        let raw = module::string(r)?;
        if raw.len() as u64 != k as u64 * HEAP_BUCKET_BYTES {
            return Err(RdbError::Corrupt("top-k heap does not match k"));
        }
        // k slots are in memory now: the item loop allocates no more than that.
        let mut heap = Vec::with_capacity(k as usize);
        for c in raw.chunks_exact(HEAP_BUCKET_BYTES as usize) {
            let item = module::string(r)?;
            // RedisBloom reads the item as a C string: it ends at its first
            // NUL, as every reply and the writer above take it. Nothing
            // before the NUL is an empty slot (or an empty item): NULL in C.
            let item = c_string(&item);
            let item = (!item.is_empty()).then(|| item.into());
            heap.push(HeapSlot {
                fp: u32_at(c, 0),
                itemlen: u32_at(c, 4),
                item,
                count: u32_at(c, 16),
            });
        }
        let seed = buckets.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ ((b.fp as u64) << 32 | b.count as u64)).wrapping_mul(0x0100_0000_01b3)
        });
        Ok(Self::from_parts(
            k,
            width,
            depth,
            decay,
            FileArray::from_vec(buckets),
            heap,
            seed,
        ))
    }
}

/// Buckets as the file body holds them.
fn decode_buckets(raw: &[u8]) -> Vec<Bucket> {
    raw.chunks_exact(8)
        .map(|c| Bucket {
            fp: u32::from_le_bytes(c[0..4].try_into().unwrap()),
            count: u32::from_le_bytes(c[4..8].try_into().unwrap()),
        })
        .collect()
}

/// The body of a top-k's sketch file (docs/sketch-file-format.md): every
/// field as it is in memory, the random generator's state included, so the
/// decay draws after a restart are the ones the running server would have
/// drawn (the RDB form keeps neither the state nor items past a NUL byte).
impl TopK {
    pub fn file_body(&self, out: &mut Vec<u8>) {
        use super::body::{put_f64, put_u32, put_u64};
        out.reserve(32 + self.buckets.len() * 8 + self.heap.len() * 17 + self.item_bytes);
        put_u32(out, self.k);
        put_u32(out, self.width);
        put_u32(out, self.depth);
        put_f64(out, self.decay);
        put_u64(out, self.rng);
        for b in self.buckets.iter() {
            put_u32(out, b.fp);
            put_u32(out, b.count);
        }
        self.heap_body(out);
    }

    /// The body's heap slots.
    fn heap_body(&self, out: &mut Vec<u8>) {
        use super::body::{put_u32, put_u64};
        for s in &self.heap {
            put_u32(out, s.fp);
            put_u32(out, s.itemlen);
            put_u32(out, s.count);
            match &s.item {
                None => out.push(0),
                Some(item) => {
                    out.push(1);
                    put_u64(out, item.len() as u64);
                    out.extend_from_slice(item);
                }
            }
        }
    }

    /// `file_body`'s length.
    pub fn file_len(&self) -> usize {
        let slots: usize = self
            .heap
            .iter()
            .map(|s| 13 + s.item.as_ref().map_or(0, |i| 8 + i.len()))
            .sum();
        self.heap_at() + slots
    }

    /// The body's pages changed since its file got them.
    pub fn file_dirty(&self) -> &Dirty {
        &self.pages
    }

    /// Pages `pages` (ascending) of `file_body`, each zero-padded past the
    /// body's end: the fixed fields and the buckets the page holds, the
    /// heap (encoded once, when a page reaches it).
    pub fn file_pages(
        &self,
        pages: &[usize],
        out: &mut dyn FnMut(usize, &[u8; PAGE]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        use super::body::{copy_part, put_f64, put_u32, put_u64};
        let mut head = Vec::with_capacity(BODY_HEAD);
        put_u32(&mut head, self.k);
        put_u32(&mut head, self.width);
        put_u32(&mut head, self.depth);
        put_f64(&mut head, self.decay);
        put_u64(&mut head, self.rng);
        let heap_at = self.heap_at();
        let mut heap = Vec::new();
        let mut part = Vec::with_capacity(PAGE + 16);
        let mut buf = [0u8; PAGE];
        for &p in pages {
            let start = p * PAGE;
            buf.fill(0);
            copy_part(&mut buf, start, 0, &head);
            let (lo, hi) = (start.max(BODY_HEAD), (start + PAGE).min(heap_at));
            if lo < hi {
                let (first, last) = ((lo - BODY_HEAD) / 8, (hi - BODY_HEAD).div_ceil(8));
                part.clear();
                for b in &self.buckets[first..last] {
                    put_u32(&mut part, b.fp);
                    put_u32(&mut part, b.count);
                }
                copy_part(&mut buf, start, BODY_HEAD + 8 * first, &part);
            }
            if start + PAGE > heap_at {
                if heap.is_empty() {
                    self.heap_body(&mut heap);
                }
                copy_part(&mut buf, start, heap_at, &heap);
            }
            out(p, &buf)?;
        }
        Ok(())
    }

    /// Reads `file_body`'s bytes back, refusing what no top-k holds.
    pub fn from_file_body(bytes: &[u8]) -> super::body::Result<Self> {
        Self::from_body_with(bytes, |at, n| {
            Ok(FileArray::from_vec(decode_buckets(&bytes[at..at + 8 * n])))
        })
    }

    /// The same from a file's private mapping whose first `len` bytes are
    /// the body: the buckets stay in the mapping (nothing read or copied)
    /// where their layout is the body's (a little-endian machine).
    pub fn from_file_map(map: &Arc<memmap2::MmapMut>, len: usize) -> super::body::Result<Self> {
        Self::from_body_with(&map[..len], |at, n| {
            if cfg!(target_endian = "little") {
                // SAFETY: the only array in the mapping, nothing else keeps
                // it, and any 8 bytes are a `Bucket` (two u32, `repr(C)`).
                unsafe { FileArray::mapped(map, at, n) }.ok_or("top-k buckets past the body")
            } else {
                Ok(FileArray::from_vec(decode_buckets(&map[at..at + 8 * n])))
            }
        })
    }

    /// The body's fields, the buckets made by `buckets(at, n)` from the
    /// body's bytes `at .. at + 8n` (checked to be there).
    fn from_body_with(
        bytes: &[u8],
        buckets: impl FnOnce(usize, usize) -> super::body::Result<FileArray<Bucket>>,
    ) -> super::body::Result<Self> {
        let mut r = super::body::In::new(bytes);
        let (k, width, depth) = (r.u32()?, r.u32()?, r.u32()?);
        let decay = r.f64()?;
        let rng = r.u64()?;
        if k == 0 || width == 0 || depth == 0 {
            return Err("top-k dimensions out of range");
        }
        if !(decay > 0.0 && decay <= 1.0) {
            return Err("top-k decay out of range");
        }
        let cells = width as u64 * depth as u64;
        r.check_count(cells, BUCKET_BYTES)?;
        r.bytes(cells * BUCKET_BYTES)?;
        let buckets = buckets(BODY_HEAD, cells as usize)?;
        // 13 bytes at least per slot.
        r.check_count(k as u64, 13)?;
        let mut heap = Vec::with_capacity(k as usize);
        for _ in 0..k {
            let (fp, itemlen, count) = (r.u32()?, r.u32()?, r.u32()?);
            let item = match r.u8()? {
                0 => None,
                1 => {
                    let n = r.u64()?;
                    Some(r.bytes(n)?.into())
                }
                _ => return Err("top-k heap slot tag"),
            };
            heap.push(HeapSlot {
                fp,
                itemlen,
                item,
                count,
            });
        }
        r.end()?;
        Ok(Self::from_parts(k, width, depth, decay, buckets, heap, rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: u64 = 1 << 30;

    fn listed(t: &TopK) -> Vec<(String, u32)> {
        t.list()
            .into_iter()
            .map(|(i, c)| (String::from_utf8_lossy(i).into_owned(), c))
            .collect()
    }

    fn add_all(t: &mut TopK, items: &[&str]) -> Vec<Option<String>> {
        items
            .iter()
            .map(|i| {
                t.add(i.as_bytes(), 1)
                    .map(|e| String::from_utf8_lossy(&e).into_owned())
            })
            .collect()
    }

    #[test]
    fn incrby_as_test_topk_py() {
        // test_incrby: k 3, width 10, depth 3, decay 1 (no random decay).
        let mut t = TopK::new(3, 10, 3, 1.0, MAX, 1).unwrap();
        for (item, n) in [("bar", 3), ("baz", 6), ("42", 2)] {
            assert_eq!(t.add(item.as_bytes(), n), None);
        }
        assert_eq!(t.add(b"42", 8), None);
        assert_eq!(t.add(b"xyzzy", 4).as_deref(), Some(&b"bar"[..]));
        let counts: Vec<u32> = ["bar", "baz", "42", "xyzzy", "4"]
            .iter()
            .map(|i| t.count(i.as_bytes()))
            .collect();
        assert_eq!(counts, vec![3, 6, 10, 4, 0]);
    }

    #[test]
    fn list_with_count_as_test_topk_py() {
        // test_list_with_count and test_no_init_params (defaults 8 x 7, 0.9).
        let mut t = TopK::new(3, DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_DECAY, MAX, 7).unwrap();
        add_all(&mut t, &["foo", "bar", "baz", "42", "foo", "bar", "baz"]);
        add_all(&mut t, &["foo", "baz", "42", "foo"]);
        add_all(&mut t, &["foo", "bar", "baz", "foo"]);
        let want = vec![("foo".into(), 6), ("baz".into(), 4), ("bar".into(), 3)];
        assert_eq!(listed(&t), want);
    }

    #[test]
    fn expulsions_as_test_topk_py() {
        // test_list_info: k 2, 50 x 5.
        let mut t = TopK::new(2, 50, 5, 0.9, MAX, 3).unwrap();
        add_all(&mut t, &["foo", "bar", "baz", "42", "foo", "bar", "baz"]);
        add_all(&mut t, &["foo", "baz", "42", "foo", "baz"]);
        add_all(&mut t, &["foo", "bar", "baz", "foo", "baz"]);
        let names: Vec<String> = listed(&t).into_iter().map(|(i, _)| i).collect();
        assert_eq!(names, vec!["foo", "baz"]);
        let out = add_all(&mut t, &["bar", "bar", "bar", "bar", "bar"]);
        assert_eq!(out, vec![None, None, Some("foo".into()), None, None]);
        let names: Vec<String> = listed(&t).into_iter().map(|(i, _)| i).collect();
        assert_eq!(names, vec!["bar", "baz"]);
    }

    #[test]
    fn fingerprints_follow_the_heap_and_find_as_a_walk() {
        // k 37 (blocks of 16 and a remainder), a skewed stream with
        // expulsions, count updates and equal counts.
        let mut t = TopK::new(37, 200, 4, 0.9, MAX, 7).unwrap();
        for i in 0..20_000u32 {
            let item = format!("item:{}", (i * 7919) % (1 + i % 300));
            t.add(item.as_bytes(), 1 + i % 3);
            if i % 997 == 0 {
                let fps: Vec<u32> = t.heap.iter().map(|s| s.fp).collect();
                assert_eq!(t.fps, fps, "after {i} adds");
            }
        }
        for i in 0..400u32 {
            let item = format!("item:{i}");
            let fp = murmur2(item.as_bytes(), FP_SEED);
            let walked = (0..t.heap.len()).rev().find(|&j| {
                let s = &t.heap[j];
                s.fp == fp && s.itemlen as usize == item.len() && s.item() == item.as_bytes()
            });
            assert_eq!(t.find(item.as_bytes(), fp), walked, "{item}");
        }
        assert!(t.heap.iter().any(|s| s.item.is_some()));
    }

    #[test]
    fn empty_item_and_nul_bytes() {
        let mut t = TopK::new(3, 8, 7, 0.9, MAX, 5).unwrap();
        t.add(b"", 1);
        assert_eq!(listed(&t), vec![(String::new(), 1)]);
        assert!(t.query(b"") && !t.query(b"x"));
        assert_eq!(t.count(b""), 1);
        t.add(b"a\0b", 2);
        assert_eq!(c_string(t.list()[0].0), b"a");
        assert!(t.query(b"a\0b") && !t.query(b"a"));
    }

    #[test]
    fn add_one_is_add_units_of_one() {
        let lookup = lookup_table(0.925);
        let below = thresholds(&lookup);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let bucket = Bucket {
                fp: (x >> 60) as u32,
                count: ((x >> 32) % LOOKUP as u64) as u32 * ((x >> 20) & 1) as u32,
            };
            let fp = ((x >> 56) & 3) as u32;
            let (mut a, mut b) = (bucket, bucket);
            let (mut ra, mut rb) = (x, x);
            let got = add_one(&mut ra, &below, &mut a, fp);
            let want = add_units(&mut rb, &lookup, &mut b, fp, 1);
            assert_eq!((got, a, ra), (want, b, rb), "{bucket:?} fp {fp}");
        }
        // The thresholds are the division's test at its edges.
        for (i, &t) in below.iter().enumerate() {
            if t > 0 {
                assert!(((t - 1) as f64 / RAND_MAX) < lookup[i]);
            }
            assert!((t as f64 / RAND_MAX) >= lookup[i] || t == 1 << 31);
        }
    }

    #[test]
    fn add_each_is_add_in_turn() {
        let items: Vec<String> = (0..5000).map(|i| format!("i{}", i * 7919 % 613)).collect();
        for (k, width, depth) in [(10, 50, 7), (5, 20, 11), (3, 8, 1)] {
            let mut one = TopK::new(k, width, depth, 0.9, MAX, 42).unwrap();
            let mut each = one.clone();
            let want: Vec<_> = items.iter().map(|i| one.add(i.as_bytes(), 1)).collect();
            let mut got = Vec::new();
            each.add_each(items.iter().map(|i| (i.as_bytes(), 1)), |e| got.push(e));
            assert_eq!(got, want);
            assert_eq!(each, one);
            let mut got = Vec::new();
            each.add_each(items.iter().map(|i| (i.as_bytes(), 3)), |e| got.push(e));
            let want: Vec<_> = items.iter().map(|i| one.add(i.as_bytes(), 3)).collect();
            assert_eq!(got, want);
            assert_eq!(each, one);
        }
    }

    #[test]
    fn decay_is_statistically_redisbloom_s() {
        // One bucket (width 1, depth 1) held by "a" with count c: a single
        // "b" decrements it with probability 0.9^c.
        let trials = 20_000;
        let mut hits = 0;
        for seed in 0..trials {
            let mut t = TopK::new(1, 1, 1, 0.9, MAX, seed).unwrap();
            t.add(b"a", 5);
            t.add(b"b", 1);
            // Decayed below the heap's minimum (a's own 5), a's count reads 0.
            if t.count(b"a") != 5 {
                hits += 1;
            }
        }
        let p = 0.9f64.powi(5);
        let expect = p * trials as f64;
        let sd = (trials as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (hits as f64 - expect).abs() < 5.0 * sd,
            "{hits} vs {expect}"
        );
        // Counts past the table: decay^count through the pow path.
        let t = TopK::new(1, 1, 1, 0.99, MAX, 0).unwrap();
        let c = decay_chance(&t.lookup, 1000);
        assert!((c - 0.99f64.powi(1000)).abs() < 1e-12, "{c}");
    }

    #[test]
    fn sizes_are_bounded() {
        assert_eq!(
            TopK::new(u32::MAX, u32::MAX, u32::MAX, 0.9, MAX, 0),
            Err(TopkError::TooLarge)
        );
    }

    #[test]
    fn rdb_round_trips_and_refuses_bad_payloads() {
        let mut t = TopK::new(5, 20, 4, 0.9, MAX, 11).unwrap();
        for i in 0..200u32 {
            t.add(format!("item{}", i % 37).as_bytes(), 1);
        }
        t.add(b"", 3);
        for compress in [false, true] {
            let mut out = Vec::new();
            t.write_rdb(&mut out, compress);
            let mut r = Reader::new(&out);
            let back = TopK::read_rdb(&mut r, ENCVER).unwrap();
            assert_eq!(r.remaining(), 0);
            assert_eq!(back.list(), t.list());
            assert_eq!(back.buckets, t.buckets);
            for i in 0..40u32 {
                let item = format!("item{i}");
                assert_eq!(back.count(item.as_bytes()), t.count(item.as_bytes()));
                assert_eq!(back.query(item.as_bytes()), t.query(item.as_bytes()));
            }
            for cut in 0..out.len() {
                assert!(TopK::read_rdb(&mut Reader::new(&out[..cut]), ENCVER).is_err());
            }
        }
        // An item as RedisBloom reads it: up to its first NUL, whatever
        // follows; so it writes back and reads back the same (a fuzz find).
        let mut out = Vec::new();
        for v in [1, 1, 1] {
            module::put_uint(&mut out, v);
        }
        module::put_double(&mut out, 0.9);
        module::put_string(&mut out, &[0; 8], false);
        module::put_string(&mut out, &[0; 24], false);
        module::put_string(&mut out, b"a\0bc", false);
        let once = TopK::read_rdb(&mut Reader::new(&out), ENCVER).unwrap();
        assert_eq!(once.heap[0].item(), b"a");
        let mut again = Vec::new();
        once.write_rdb(&mut again, false);
        assert_eq!(
            TopK::read_rdb(&mut Reader::new(&again), ENCVER).unwrap(),
            once
        );
        // Dimensions against buffers; a k that the heap buffer does not hold.
        for (k, w, d, decay) in [
            (5, 21, 4, 0.9),
            (6, 20, 4, 0.9),
            (0, 20, 4, 0.9),
            (5, 20, 4, 1.5),
        ] {
            let mut out = Vec::new();
            module::put_uint(&mut out, k);
            module::put_uint(&mut out, w);
            module::put_uint(&mut out, d);
            module::put_double(&mut out, decay);
            module::put_string(&mut out, &[0; 640], false);
            module::put_string(&mut out, &[0; 120], false);
            for _ in 0..k {
                module::put_string(&mut out, b"\0", false);
            }
            assert!(
                TopK::read_rdb(&mut Reader::new(&out), ENCVER).is_err(),
                "{k} {w} {d}"
            );
        }
    }
}
