//! The 16384 hash slots: which slot a key hashes to (CRC16/XMODEM of the key,
//! or of its `{hash tag}`), and the slot bitmap the bus carries.

pub use blinkdb_engine::key_slot;

pub const SLOTS: usize = 16384;
/// Bytes of a slot bitmap (one bit per slot, slot 0 in bit 0 of byte 0).
pub const BITMAP_BYTES: usize = SLOTS / 8;

/// A slot bitmap, as `myslots` in the bus header.
#[derive(Clone, PartialEq, Eq)]
pub struct SlotBits(pub Box<[u8; BITMAP_BYTES]>);

impl Default for SlotBits {
    fn default() -> Self {
        SlotBits(Box::new([0; BITMAP_BYTES]))
    }
}

impl SlotBits {
    pub fn get(&self, slot: usize) -> bool {
        self.0[slot / 8] & (1 << (slot % 8)) != 0
    }

    pub fn set(&mut self, slot: usize, on: bool) {
        if on {
            self.0[slot / 8] |= 1 << (slot % 8);
        } else {
            self.0[slot / 8] &= !(1 << (slot % 8));
        }
    }

    pub fn count(&self) -> usize {
        self.0.iter().map(|b| b.count_ones() as usize).sum()
    }

    /// The bitmap as 256 words, slot `64 * i + b` in bit `b` of word `i`.
    fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.0
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
    }

    /// Whether every slot is set.
    /// No slot set (stops at the first byte that has one).
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&b| b == 0)
    }

    pub fn all(&self) -> bool {
        self.0.iter().all(|&b| b == u8::MAX)
    }

    /// Sets every slot set in `other`.
    pub fn union_with(&mut self, other: &SlotBits) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a |= b;
        }
    }

    /// Runs of set slots as (first, last), a word at a time: a save of
    /// nodes.conf describes every node's slots, and a slot-by-slot scan of
    /// 16384 bits per node was about a quarter of a reshard's SETSLOT time
    /// in `perf` (docs/cluster.md, "Slots that move").
    pub fn ranges(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut open: Option<usize> = None;
        for (i, word) in self.words().enumerate() {
            let base = i * 64;
            let mut bit = 0u32;
            while bit < 64 {
                let rest = word >> bit;
                match open {
                    Some(first) => {
                        // Zeros shift in from the top, so a run reaching
                        // bit 63 counts exactly the bits left.
                        let ones = rest.trailing_ones();
                        if bit + ones >= 64 {
                            break;
                        }
                        out.push((first, base + (bit + ones) as usize - 1));
                        open = None;
                        bit += ones;
                    }
                    None => {
                        if rest == 0 {
                            break;
                        }
                        let zeros = rest.trailing_zeros();
                        open = Some(base + (bit + zeros) as usize);
                        bit += zeros;
                    }
                }
            }
        }
        if let Some(first) = open {
            out.push((first, SLOTS - 1));
        }
        out
    }
}

/// Runs of consecutive slots owned by the same value, as (start, end, owner).
pub fn runs<T: PartialEq + Copy>(owner: impl Fn(usize) -> Option<T>) -> Vec<(usize, usize, T)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, T)> = None;
    for slot in 0..=SLOTS {
        let o = if slot < SLOTS { owner(slot) } else { None };
        match (cur, o) {
            (Some((_, a)), Some(b)) if a == b => {}
            _ => {
                if let Some((start, a)) = cur {
                    out.push((start, slot - 1, a));
                }
                cur = o.map(|b| (slot, b));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_match_a_slot_by_slot_scan() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for case in 0..200 {
            let mut bits = SlotBits::default();
            match case {
                0 => {}
                1 => (0..SLOTS).for_each(|s| bits.set(s, true)),
                2 => bits.set(SLOTS - 1, true),
                3 => (63..=64).for_each(|s| bits.set(s, true)),
                _ => {
                    // Runs of random lengths, some crossing word edges.
                    let mut s = 0;
                    let mut on = next() % 2 == 0;
                    while s < SLOTS {
                        let len = (next() % if case % 3 == 0 { 200 } else { 70 }) as usize + 1;
                        for t in s..(s + len).min(SLOTS) {
                            bits.set(t, on);
                        }
                        s += len;
                        on = !on;
                    }
                }
            }
            let slow: Vec<(usize, usize)> = runs(|s| bits.get(s).then_some(()))
                .into_iter()
                .map(|(a, b, _)| (a, b))
                .collect();
            assert_eq!(bits.ranges(), slow, "case {case}");
            assert_eq!(bits.all(), slow == [(0, SLOTS - 1)]);
        }
    }

    #[test]
    fn slots_match_redis() {
        // Values from redis-server 7.0.15's CLUSTER KEYSLOT.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        assert_eq!(key_slot(b""), 0);
    }

    #[test]
    fn runs_group_owners() {
        let r = runs(|s| {
            if s < 10 {
                Some(1)
            } else if s == 11 {
                Some(2)
            } else {
                None
            }
        });
        assert_eq!(r, vec![(0, 9, 1), (11, 11, 2)]);
    }
}
