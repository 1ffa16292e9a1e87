//! The key as a shard's table stores it: 16 bytes, inline up to 15 bytes.
//!
//! Every key pays for one table slot (key + `Entry`) divided by the table's
//! load, about 1.8 slots per key at 300,000 keys: a 24-byte key made the
//! slot 64 bytes, this one makes it 56, 14 bytes less per key (issue 42).
//! Longer keys live in a heap buffer of exactly their length.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Bytes kept inline.
const INLINE: usize = 15;
/// `tag`'s bit for an inline key (its low bits are then the length).
const INLINE_BIT: u8 = 0x80;

/// A key: inline (`tag` = INLINE_BIT | length, bytes in `head` then
/// `tail`), or on the heap (`tag` = 0, `head` the pointer of a `Box<[u8]>`,
/// `tail` its length, 56 bits little-endian).
#[repr(C)]
pub struct SlotKey {
    head: Head,
    tail: [u8; 7],
    tag: u8,
}

#[repr(C)]
#[derive(Clone, Copy)]
union Head {
    ptr: *mut u8,
    bytes: [u8; 8],
}

// SAFETY: a SlotKey owns its bytes (like a Box<[u8]>); nothing is shared
// between copies.
unsafe impl Send for SlotKey {}
unsafe impl Sync for SlotKey {}

const _: () = assert!(std::mem::size_of::<SlotKey>() == 16);

impl SlotKey {
    pub fn from_slice(key: &[u8]) -> Self {
        if key.len() <= INLINE {
            let mut all = [0u8; 16];
            all[..key.len()].copy_from_slice(key);
            let mut head = [0u8; 8];
            head.copy_from_slice(&all[..8]);
            let mut tail = [0u8; 7];
            tail.copy_from_slice(&all[8..15]);
            return SlotKey {
                head: Head { bytes: head },
                tail,
                tag: INLINE_BIT | key.len() as u8,
            };
        }
        let len = key.len() as u64;
        assert!(len < 1 << 56, "a key under 2^56 bytes");
        let boxed: Box<[u8]> = key.into();
        let ptr = Box::into_raw(boxed) as *mut u8;
        let mut tail = [0u8; 7];
        tail.copy_from_slice(&len.to_le_bytes()[..7]);
        SlotKey {
            head: Head { ptr },
            tail,
            tag: 0,
        }
    }

    #[inline]
    fn is_inline(&self) -> bool {
        self.tag & INLINE_BIT != 0
    }

    #[inline]
    fn heap_len(&self) -> usize {
        let mut b = [0u8; 8];
        b[..7].copy_from_slice(&self.tail);
        u64::from_le_bytes(b) as usize
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        if self.is_inline() {
            let len = (self.tag & !INLINE_BIT) as usize;
            // SAFETY: #[repr(C)] lays head (8 bytes) and tail (7 bytes)
            // out contiguously from the struct's start; an inline key's
            // first `len` (<= 15) of those bytes are its bytes.
            unsafe { std::slice::from_raw_parts(self as *const Self as *const u8, len) }
        } else {
            // SAFETY: a heap key's head is the pointer of a live Box<[u8]>
            // of heap_len() bytes, owned by this key.
            unsafe { std::slice::from_raw_parts(self.head.ptr, self.heap_len()) }
        }
    }

    /// Heap bytes held (0 inline).
    pub fn heap_len_or_zero(&self) -> usize {
        if self.is_inline() {
            0
        } else {
            self.heap_len()
        }
    }
}

impl Drop for SlotKey {
    fn drop(&mut self) {
        if !self.is_inline() {
            // SAFETY: rebuilds the Box<[u8]> from_slice leaked, once.
            unsafe {
                let slice = std::ptr::slice_from_raw_parts_mut(self.head.ptr, self.heap_len());
                drop(Box::from_raw(slice));
            }
        }
    }
}

impl Clone for SlotKey {
    fn clone(&self) -> Self {
        if self.is_inline() {
            SlotKey {
                head: self.head,
                tail: self.tail,
                tag: self.tag,
            }
        } else {
            SlotKey::from_slice(self.as_slice())
        }
    }
}

impl std::ops::Deref for SlotKey {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for SlotKey {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for SlotKey {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

/// Hashes as the `[u8]` it borrows as (the table looks keys up by slice).
impl Hash for SlotKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl PartialEq for SlotKey {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for SlotKey {}

impl PartialOrd for SlotKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SlotKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl std::fmt::Debug for SlotKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl From<&[u8]> for SlotKey {
    fn from(key: &[u8]) -> Self {
        SlotKey::from_slice(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_heap_keys_round_trip() {
        for len in [0usize, 1, 12, 14, 15, 16, 17, 100, 5000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            let k = SlotKey::from_slice(&bytes);
            assert_eq!(&*k, &bytes[..], "len {len}");
            let c = k.clone();
            drop(k);
            assert_eq!(&*c, &bytes[..]);
            assert_eq!(c.heap_len_or_zero(), if len > 15 { len } else { 0 });
        }
    }

    #[test]
    fn hashes_and_compares_as_its_slice() {
        use std::collections::hash_map::DefaultHasher;
        let h = |x: &dyn Fn(&mut DefaultHasher)| {
            let mut s = DefaultHasher::new();
            x(&mut s);
            s.finish()
        };
        for key in [&b"k"[..], b"key:00000001", &[9u8; 40]] {
            let k = SlotKey::from_slice(key);
            assert_eq!(h(&|s| k.hash(s)), h(&|s| key.hash(s)));
        }
        assert!(SlotKey::from_slice(b"a") < SlotKey::from_slice(b"ab"));
        let mut m = hashbrown::HashMap::new();
        m.insert(SlotKey::from_slice(b"long key of more than fifteen"), 1);
        m.insert(SlotKey::from_slice(b"short"), 2);
        assert_eq!(m.get(&b"long key of more than fifteen"[..]), Some(&1));
        assert_eq!(m.get(&b"short"[..]), Some(&2));
    }
}
