//! `SmallBuf`: the bytes of a compact collection (a pack, an intset) in 24
//! bytes, so that a small hash, set or sorted set lives inside its key's
//! table entry (the 24-byte value field, issue 42) with no allocation of its
//! own up to `INLINE` bytes. It also keeps a 16-bit `aux` word for its owner
//! (a pack's entry count, an intset's width), which would otherwise push the
//! owner past 24 bytes.
//!
//! Beyond `INLINE` bytes the bytes go to a boxed slice whose length is the
//! capacity; the used length is kept beside it in 40 bits (a terabyte).
//! Why not `SmallVec<[u8; 16]>`: it is 24 bytes with no room for the count
//! and no niche, so an enum of it and a shared table was 32 bytes.

/// Bytes kept without a heap buffer.
pub const INLINE: usize = 21;

/// Up to this many bytes a heap buffer grows to the size it needs, as
/// Redis's listpack does (glibc rounds to 16 anyway); beyond, by doubling,
/// so that a list node filled one push at a time to 8 KB is not copied per
/// push.
const EXACT_GROWTH_UP_TO: usize = 256;

#[derive(Clone)]
enum Repr {
    Inline {
        len: u8,
        aux: u8,
        data: [u8; INLINE],
    },
    Heap {
        buf: Box<[u8]>,
        len_lo: u32,
        len_hi: u8,
        aux: u16,
    },
}

#[derive(Clone)]
pub struct SmallBuf(Repr);

// The point of the type: it fits the value field of a table entry, and an
// enum of it and a pointer (a compact or a shared full encoding) does too.
const _: () = assert!(std::mem::size_of::<SmallBuf>() == 24);
const _: () = assert!(std::mem::size_of::<Option<SmallBuf>>() == 24);

impl Default for SmallBuf {
    fn default() -> Self {
        SmallBuf(Repr::Inline {
            len: 0,
            aux: 0,
            data: [0; INLINE],
        })
    }
}

impl PartialEq for SmallBuf {
    fn eq(&self, other: &Self) -> bool {
        self.aux() == other.aux() && self[..] == other[..]
    }
}

impl Eq for SmallBuf {}

impl std::fmt::Debug for SmallBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SmallBuf({:?}, aux {})", &self[..], self.aux())
    }
}

impl std::ops::Deref for SmallBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, data, .. } => &data[..*len as usize],
            Repr::Heap {
                buf,
                len_lo,
                len_hi,
                ..
            } => &buf[..join(*len_lo, *len_hi)],
        }
    }
}

fn join(lo: u32, hi: u8) -> usize {
    lo as usize | (hi as usize) << 32
}

fn split(len: usize) -> (u32, u8) {
    assert!(len >> 40 == 0, "a compact buffer over 1 TiB");
    (len as u32, (len >> 32) as u8)
}

impl SmallBuf {
    /// Empty, with room for `cap` bytes (inline up to `INLINE`).
    pub fn with_capacity(cap: usize) -> Self {
        let mut b = SmallBuf::default();
        if cap > INLINE {
            b.realloc(cap);
        }
        b
    }

    /// From the bytes of `v` (its capacity is dropped: exact size).
    pub fn from_vec(v: Vec<u8>) -> Self {
        if v.len() <= INLINE {
            let mut b = SmallBuf::default();
            b.extend_from_slice(&v);
            return b;
        }
        let (len_lo, len_hi) = split(v.len());
        SmallBuf(Repr::Heap {
            buf: v.into_boxed_slice(),
            len_lo,
            len_hi,
            aux: 0,
        })
    }

    /// Bytes the buffer can hold without growing.
    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => INLINE,
            Repr::Heap { buf, .. } => buf.len(),
        }
    }

    /// Does it hold a heap buffer?
    pub fn spilled(&self) -> bool {
        matches!(self.0, Repr::Heap { .. })
    }

    /// The owner's 16-bit word (0 at first).
    pub fn aux(&self) -> u16 {
        match &self.0 {
            Repr::Inline { aux, .. } => *aux as u16,
            Repr::Heap { aux, .. } => *aux,
        }
    }

    pub fn set_aux(&mut self, v: u16) {
        if v > u8::MAX as u16 && !self.spilled() {
            // Inline keeps 8 bits; a wider word needs the heap form.
            self.realloc(INLINE + 1);
        }
        match &mut self.0 {
            Repr::Inline { aux, .. } => *aux = v as u8,
            Repr::Heap { aux, .. } => *aux = v,
        }
    }

    /// The whole capacity and the used length, to write into.
    /// The bytes held, to change in place.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let (all, len) = self.parts();
        &mut all[..len]
    }

    fn parts(&mut self) -> (&mut [u8], usize) {
        match &mut self.0 {
            Repr::Inline { len, data, .. } => (&mut data[..], *len as usize),
            Repr::Heap {
                buf,
                len_lo,
                len_hi,
                ..
            } => {
                let len = join(*len_lo, *len_hi);
                (&mut buf[..], len)
            }
        }
    }

    fn set_len(&mut self, new: usize) {
        debug_assert!(new <= self.capacity());
        match &mut self.0 {
            Repr::Inline { len, .. } => *len = new as u8,
            Repr::Heap { len_lo, len_hi, .. } => (*len_lo, *len_hi) = split(new),
        }
    }

    /// Moves the bytes to a heap buffer of exactly `cap` bytes (at least the
    /// length), or inline when they fit and `cap` does.
    fn realloc(&mut self, cap: usize) {
        let len = self.len();
        let cap = cap.max(len);
        let aux = self.aux();
        if cap <= INLINE && aux <= u8::MAX as u16 {
            if self.spilled() {
                let mut data = [0; INLINE];
                data[..len].copy_from_slice(&self[..]);
                self.0 = Repr::Inline {
                    len: len as u8,
                    aux: aux as u8,
                    data,
                };
            }
            return;
        }
        // Heap to heap through the allocator's realloc, which grows or
        // shrinks a block in place where it can (at the top of the heap, or
        // into a free neighbour) instead of a new block, a copy and a hole
        // where the old one was.
        let mut buf = match std::mem::take(self).0 {
            Repr::Heap { buf, .. } => buf.into_vec(),
            Repr::Inline { data, .. } => {
                let mut v = Vec::with_capacity(cap);
                v.extend_from_slice(&data[..len]);
                v
            }
        };
        if cap > buf.len() {
            buf.reserve_exact(cap - buf.len());
            buf.resize(cap, 0);
        }
        buf.truncate(cap);
        let buf = buf.into_boxed_slice();
        let (len_lo, len_hi) = split(len);
        self.0 = Repr::Heap {
            buf,
            len_lo,
            len_hi,
            aux,
        };
    }

    /// Room for `more` bytes: exact growth up to `EXACT_GROWTH_UP_TO`, then
    /// doubling.
    pub fn reserve(&mut self, more: usize) {
        self.reserve_within(more, usize::MAX);
    }

    /// As [`SmallBuf::reserve`], but a doubling stops at `limit` (unless the
    /// bytes need more): a list node that holds at most 8 KB ends in an 8 KB
    /// buffer. Doubling from an exact size past 256 bytes overshoots any
    /// limit (4,080 became 8,160, then 16,320 for the node's last bytes), and
    /// a 1M-element list held twice the room it used (issue 42).
    pub fn reserve_within(&mut self, more: usize, limit: usize) {
        let need = self.len().checked_add(more).expect("buffer size overflow");
        let cap = self.capacity();
        if need > cap {
            let new = if need <= EXACT_GROWTH_UP_TO {
                need
            } else {
                need.max(cap.saturating_mul(2).min(limit))
            };
            self.realloc(new);
        }
    }

    pub fn push(&mut self, b: u8) {
        self.extend_from_slice(&[b]);
    }

    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        let at = self.len();
        self.insert_from_slice(at, bytes);
    }

    /// Inserts `bytes` at `at`, moving what follows.
    pub fn insert_from_slice(&mut self, at: usize, bytes: &[u8]) {
        assert!(at <= self.len());
        self.reserve(bytes.len());
        let (all, len) = self.parts();
        all.copy_within(at..len, at + bytes.len());
        all[at..at + bytes.len()].copy_from_slice(bytes);
        self.set_len(len + bytes.len());
    }

    /// Removes the bytes of `range`, moving what follows.
    pub fn drain(&mut self, range: std::ops::Range<usize>) {
        let (all, len) = self.parts();
        assert!(range.start <= range.end && range.end <= len);
        all.copy_within(range.end..len, range.start);
        self.set_len(len - range.len());
    }

    pub fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.set_len(len);
        }
    }

    /// Gives back unused capacity (inline again when the bytes fit).
    pub fn shrink_to_fit(&mut self) {
        if self.spilled() && self.capacity() > self.len() {
            self.realloc(self.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_spills_shrinks_and_keeps_aux() {
        let mut b = SmallBuf::default();
        b.set_aux(7);
        b.extend_from_slice(b"hello");
        b.insert_from_slice(0, b">> ");
        assert_eq!(&b[..], b">> hello");
        assert!(!b.spilled());
        let long = [b'x'; 30];
        b.extend_from_slice(&long);
        assert!(b.spilled());
        assert_eq!(b.capacity(), 38);
        assert_eq!(b.aux(), 7);
        b.drain(0..3);
        assert_eq!(&b[..5], b"hello");
        assert_eq!(b.len(), 35);
        b.truncate(5);
        b.shrink_to_fit();
        assert!(!b.spilled());
        assert_eq!((&b[..], b.aux()), (&b"hello"[..], 7));
        b.set_aux(300);
        assert!(b.spilled());
        assert_eq!((&b[..], b.aux()), (&b"hello"[..], 300));
        for i in 0..1000u32 {
            b.push(i as u8);
        }
        assert_eq!(b.len(), 1005);
        assert!(b.capacity() < 2 * 1005 + 256);
        assert_eq!(SmallBuf::from_vec(b[..].to_vec())[..], b[..]);
        assert_eq!(SmallBuf::with_capacity(100).capacity(), 100);
    }

    #[test]
    fn doubling_stops_at_the_limit() {
        let mut b = SmallBuf::default();
        let mut caps = vec![];
        for _ in 0..8192 / 9 {
            b.reserve_within(9, 8192);
            b.extend_from_slice(&[1; 9]);
            if caps.last() != Some(&b.capacity()) {
                caps.push(b.capacity());
            }
        }
        // Exact to 256, then doubling, the last step cut to the limit.
        let last = caps.len() - 1;
        assert_eq!((caps[last], caps[last - 1]), (8192, 8064), "{caps:?}");
        assert!(caps.windows(2).all(|w| w[1] <= 2 * w[0]));
        // Past the limit only what the bytes need.
        b.reserve_within(100, 8192);
        assert_eq!(b.capacity(), b.len() + 100);
    }
}
