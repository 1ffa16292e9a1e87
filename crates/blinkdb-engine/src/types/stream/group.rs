//! Consumer groups: the last delivered ID, the entries-read counter, the
//! pending entries list (PEL: delivered, not acknowledged) and the
//! consumers, each with its own view of the PEL, as Redis keeps them.

use super::id::StreamId;
use std::collections::{BTreeMap, BTreeSet};

/// A pending entry: who has it, when it was last delivered (Unix ms), and
/// how many times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nack {
    pub consumer: Box<[u8]>,
    pub delivery_time: i64,
    pub delivery_count: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    /// Last time the consumer was seen (Unix ms).
    pub seen_time: i64,
    pub pel: BTreeSet<StreamId>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    pub last_id: StreamId,
    /// None: not known (Redis's SCG_INVALID_ENTRIES_READ, -1).
    pub entries_read: Option<u64>,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: Option<u64>) -> Group {
        Group {
            last_id,
            entries_read,
            ..Group::default()
        }
    }

    /// Approximate heap bytes: each consumer's name and node, and each
    /// pending entry's node with its copy of its consumer's name. Counted
    /// per consumer (an entry is in its consumer's PEL too), not per entry:
    /// every write to the stream counts its memory twice, and walking a PEL
    /// of thousands of entries each time was a tenth of XREADGROUP + XACK.
    pub fn bytes(&self) -> usize {
        let per_consumer: usize = self
            .consumers
            .iter()
            .map(|(name, c)| (name.len() + 96) * (1 + c.pel.len()))
            .sum();
        per_consumer + 128
    }

    /// Creates consumer `name` seen at `now`; false if it exists.
    pub fn create_consumer(&mut self, name: &[u8], now: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(
            name.into(),
            Consumer {
                seen_time: now,
                pel: BTreeSet::new(),
            },
        );
        true
    }

    /// Removes consumer `name` and its pending entries; returns how many it
    /// had, or None if there was no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Acknowledges `id`: true if it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(nack) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(&nack.consumer) {
            c.pel.remove(&id);
        }
        true
    }

    /// Records a fresh delivery of `id` to `consumer` (which exists): a new
    /// pending entry, or one moved from another consumer with its count
    /// reset, as Redis's XREADGROUP does.
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now: i64) -> &Nack {
        if let Some(old) = self.pel.get(&id) {
            if *old.consumer != *consumer {
                let prev = old.consumer.clone();
                if let Some(c) = self.consumers.get_mut(&prev) {
                    c.pel.remove(&id);
                }
            }
        }
        self.pel.insert(
            id,
            Nack {
                consumer: consumer.into(),
                delivery_time: now,
                delivery_count: 1,
            },
        );
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
        &self.pel[&id]
    }

    /// Gives pending entry `id` to `consumer` (which exists), as XCLAIM and
    /// XAUTOCLAIM do.
    pub fn assign(&mut self, id: StreamId, consumer: &[u8]) {
        let Some(nack) = self.pel.get_mut(&id) else {
            return;
        };
        if *nack.consumer != *consumer {
            let prev = std::mem::replace(&mut nack.consumer, consumer.into());
            if let Some(c) = self.consumers.get_mut(&prev) {
                c.pel.remove(&id);
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `bytes` counts, entry by entry.
    fn bytes_by_entry(g: &Group) -> usize {
        let names: usize = g.consumers.keys().map(|k| k.len() + 96).sum();
        let pel: usize = g.pel.values().map(|n| n.consumer.len() + 96).sum();
        names + pel + 128
    }

    #[test]
    fn bytes_counted_per_consumer_match_the_entries() {
        let mut g = Group::new(StreamId::MIN, Some(0));
        g.create_consumer(b"alice", 0);
        g.create_consumer(b"bob-the-consumer", 0);
        for seq in 0..10 {
            let who: &[u8] = if seq % 3 == 0 {
                b"alice"
            } else {
                b"bob-the-consumer"
            };
            g.deliver(StreamId::new(1, seq), who, 0);
        }
        assert_eq!(g.bytes(), bytes_by_entry(&g));
        g.deliver(StreamId::new(1, 0), b"bob-the-consumer", 0);
        g.assign(StreamId::new(1, 1), b"alice");
        assert!(g.ack(StreamId::new(1, 2)));
        assert_eq!(g.bytes(), bytes_by_entry(&g));
        g.delete_consumer(b"alice");
        assert_eq!(g.bytes(), bytes_by_entry(&g));
    }
}
