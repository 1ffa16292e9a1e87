//! Collection values, one module per type. Each has a compact encoding for
//! small values (Redis's listpack and intset, under the same limits) and a
//! full one past them, and knows how the AOF rewrite writes it back.

pub mod hash;
pub mod hll;
pub mod list;
pub mod pack;
pub mod ranked;
pub mod set;
pub mod shared;
pub mod smallbuf;
pub mod stream;
pub mod table;
pub mod zset;

pub use hash::HashValue;
pub use list::{packed_threshold, ListShape, ListValue, DEFAULT_PACKED_THRESHOLD};
pub use set::SetValue;
pub use stream::StreamValue;
pub use zset::ZSetValue;

use std::sync::atomic::{AtomicU64, Ordering};

/// The encoding limits (`hash-max-listpack-entries` and the rest), which the
/// server's configuration sets; a value converts to its full encoding once
/// past them, and never back (as in Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    /// `list-max-listpack-size`: entries per list node, or -1..-5 for 4-64 KB.
    pub list_max_listpack_size: i64,
    /// `list-compress-depth`: list nodes further than this from both ends
    /// are compressed (0: none).
    pub list_compress_depth: usize,
    /// `stream-node-max-bytes` and `stream-node-max-entries`.
    pub stream_node: stream::NodeLimits,
}

impl Limits {
    /// How a list lays out its nodes under these limits, plain nodes from
    /// the default 1 GB (the server's list commands put in the threshold
    /// DEBUG QUICKLIST-PACKED-THRESHOLD set).
    pub fn list_shape(&self) -> ListShape {
        ListShape {
            fill: self.list_max_listpack_size,
            depth: self.list_compress_depth,
            packed_threshold: list::DEFAULT_PACKED_THRESHOLD,
        }
    }
}

impl Default for Limits {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        Limits {
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            list_max_listpack_size: -2,
            list_compress_depth: 0,
            stream_node: stream::NodeLimits::default(),
        }
    }
}

/// The heap glibc's malloc takes for a request of `n` bytes (an 8-byte
/// header, 16-byte granules, 32 bytes at least; its request2size), which is
/// what a key costs in RSS: MEMORY USAGE counts this, not the bytes asked.
pub const fn malloc_chunk(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        let c = (n + 8 + 15) & !15;
        if c < 32 {
            32
        } else {
            c
        }
    }
}

/// From this size up a block's pages are not resident until written: glibc
/// maps such a block (its mmap threshold starts at 128 KB) or takes it from
/// the never-touched top of an arena, and the kernel backs a page on its
/// first write. The room a doubling vector keeps past its length costs no RSS.
pub const UNTOUCHED_FROM: usize = 128 * 1024;

const PAGE: usize = 4096;

/// What an array of `len` elements of `size` bytes, with room for `cap`,
/// adds to RSS: a small block as malloc rounds it (it shares its pages with
/// other blocks, which write them), a large one the pages up to its last
/// element (the room beyond was never written). MEMORY USAGE answers this.
pub const fn array_bytes(len: usize, cap: usize, size: usize) -> usize {
    let block = cap * size;
    if block < UNTOUCHED_FROM {
        malloc_chunk(block)
    } else {
        (len * size + 16 + PAGE - 1) & !(PAGE - 1)
    }
}

/// The heap an `Arc` of `T` takes: its two counts and the value.
pub const fn arc_chunk<T>() -> usize {
    malloc_chunk(2 * std::mem::size_of::<usize>() + std::mem::size_of::<T>())
}

/// A member of a full-encoding collection: inline up to 16 bytes.
pub type Member = crate::keyspace::InlineBytes;

/// How many members, pairs or fields one command of the AOF rewrite carries
/// (Redis's AOF_REWRITE_ITEMS_PER_CMD).
pub const REWRITE_ITEMS_PER_CMD: usize = 64;

/// `%.17g`, the format Redis gives doubles (scores in replies and in the AOF),
/// with `inf` and `-inf` for the infinities.
pub fn fmt_double(x: f64) -> String {
    let mut buf = [0u8; 32];
    let n = write_double(x, &mut buf);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// `fmt_double` into `buf` without allocating; returns the length.
pub fn write_double(x: f64, buf: &mut [u8; 32]) -> usize {
    if x.is_infinite() {
        let t: &[u8] = if x > 0.0 { b"inf" } else { b"-inf" };
        buf[..t.len()].copy_from_slice(t);
        return t.len();
    }
    // SAFETY: the buffer is 32 bytes and snprintf writes at most that many,
    // NUL included (%.17g of a finite double needs at most 25); "%.17g"
    // takes exactly one double.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%.17g".as_ptr(),
            x,
        )
    };
    (n.max(0) as usize).min(31)
}

/// Writes a collection as the commands that rebuild it, at most
/// `REWRITE_ITEMS_PER_CMD` items each: HMSET (and HPEXPIREAT per field
/// TTL), SADD, ZADD or RPUSH, as Redis's rewrite does.
pub fn rewrite_records(key: &[u8], value: &crate::keyspace::Value, mut emit: impl FnMut(&[&[u8]])) {
    use crate::keyspace::Value;
    let mut batch: Vec<Vec<u8>> = Vec::new();
    let mut flush = |cmd: &'static [u8], batch: &mut Vec<Vec<u8>>| {
        if batch.is_empty() {
            return;
        }
        let mut args: Vec<&[u8]> = vec![cmd, key];
        args.extend(batch.iter().map(|a| &a[..]));
        emit(&args);
        batch.clear();
    };
    match value {
        Value::Hash(h, _) => {
            for (f, v) in h.iter() {
                batch.push(f.to_vec());
                batch.push(v.to_vec());
                if batch.len() == 2 * REWRITE_ITEMS_PER_CMD {
                    flush(b"HMSET", &mut batch);
                }
            }
            flush(b"HMSET", &mut batch);
            // Then each field's TTL, as Redis 8.0's rewrite records it
            // (after its field's HMSET; a time past by the load expires
            // the field after it).
            for (f, _, at) in h.iter_ttl().filter(|(_, _, at)| *at != 0) {
                let at = at.to_string();
                emit(&[b"HPEXPIREAT", key, at.as_bytes(), b"FIELDS", b"1", f]);
            }
        }
        Value::Set(s, _) => {
            for m in s.iter() {
                batch.push(m.into_owned());
                if batch.len() == REWRITE_ITEMS_PER_CMD {
                    flush(b"SADD", &mut batch);
                }
            }
            flush(b"SADD", &mut batch);
        }
        Value::ZSet(z, _) => {
            for (m, score) in z.iter() {
                batch.push(fmt_double(score).into_bytes());
                batch.push(m.to_vec());
                if batch.len() == 2 * REWRITE_ITEMS_PER_CMD {
                    flush(b"ZADD", &mut batch);
                }
            }
            flush(b"ZADD", &mut batch);
        }
        Value::List(l, _) => {
            for e in l.iter() {
                batch.push(e.to_vec());
                if batch.len() == REWRITE_ITEMS_PER_CMD {
                    flush(b"RPUSH", &mut batch);
                }
            }
            flush(b"RPUSH", &mut batch);
        }
        Value::Stream(s, _) => stream::rewrite(key, s, &mut emit),
        Value::Sketch(s, _) => s.rewrite_records(key, &mut emit),
        Value::Str(..) | Value::Blob(..) | Value::Bloom(..) => {}
    }
}

/// Members past which a dropped collection is freed by a background thread,
/// as Redis's lazyfree does (LAZYFREE_THRESHOLD): DEL, an overwrite or an
/// expiry of a 10M-member set must not stall the connection thread.
pub const LAZYFREE_THRESHOLD: usize = 64;

/// INFO's lazyfree_pending_objects (handed to the freeing thread, not freed
/// yet) and lazyfreed_objects (freed there since the last CONFIG RESETSTAT).
pub static LAZYFREE_PENDING: AtomicU64 = AtomicU64::new(0);
pub static LAZYFREED: AtomicU64 = AtomicU64::new(0);

/// Hands `garbage` to the freeing thread (started on first use); frees it
/// here if that thread cannot be reached.
pub(crate) fn free_later<T: Send + 'static>(garbage: T) {
    free_later_objects(garbage, 1);
}

/// `free_later` for `garbage` that holds `objects` values (a flushed
/// database counts its keys, as Redis's emptyDbAsync does).
pub(crate) fn free_later_objects<T: Send + 'static>(garbage: T, objects: u64) {
    use std::sync::mpsc::{channel, Sender};
    use std::sync::{Mutex, OnceLock};
    type Garbage = (Box<dyn Send>, u64);
    static FREER: OnceLock<Option<Mutex<Sender<Garbage>>>> = OnceLock::new();
    let freer = FREER.get_or_init(|| {
        let (tx, rx) = channel::<Garbage>();
        std::thread::Builder::new()
            .name("lazyfree".into())
            .spawn(move || {
                for (garbage, objects) in rx {
                    drop(garbage);
                    LAZYFREE_PENDING.fetch_sub(objects, Ordering::Relaxed);
                    LAZYFREED.fetch_add(objects, Ordering::Relaxed);
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    if let Some(tx) = freer {
        if let Ok(tx) = tx.lock() {
            LAZYFREE_PENDING.fetch_add(objects, Ordering::Relaxed);
            // On failure the value comes back inside the error and drops here.
            if tx.send((Box::new(garbage), objects)).is_err() {
                LAZYFREE_PENDING.fetch_sub(objects, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_collections_are_one_small_allocation() {
        // A small hash, set or sorted set is its table entry's value field
        // (24 bytes, its pack or intset inline up to 21 bytes): no
        // allocation of its own (issue 42). A list's Arc (16 bytes of counts
        // + the value) stays within one malloc chunk.
        assert_eq!(std::mem::size_of::<HashValue>(), 24);
        assert_eq!(std::mem::size_of::<SetValue>(), 24);
        assert_eq!(std::mem::size_of::<ZSetValue>(), 24);
        assert_eq!(arc_chunk::<ListValue>(), 80);
        assert_eq!(malloc_chunk(1), 32);
        assert_eq!(malloc_chunk(24), 32);
        assert_eq!(malloc_chunk(25), 48);
    }

    #[test]
    fn large_arrays_count_the_pages_written() {
        // Small: the whole block as malloc rounds it, room included.
        assert_eq!(array_bytes(10, 16, 48), malloc_chunk(16 * 48));
        // A 300,000-slot array doubled to 2^19 slots: the pages up to its last slot.
        let (len, cap) = (300_000, 1 << 19);
        assert_eq!(
            array_bytes(len, cap, 48),
            (len * 48 + 16).div_ceil(4096) * 4096
        );
        assert!(array_bytes(len, cap, 48) < cap * 48 * 6 / 10);
    }
}
