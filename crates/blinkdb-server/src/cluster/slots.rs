//! The 16384 hash slots: which slot a key hashes to (CRC16/XMODEM of the key,
//! or of its `{hash tag}`), and the slot bitmap the bus carries.

pub use blinkdb_engine::keyspace::slots::key_slot;

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
