//! A shard's keys with a TTL, ordered by (time, key): the active expiry
//! cycle pops due keys in order instead of sampling.
//!
//! Runs of up to `RUN` items, sorted, each in a `Vec` filed in a `BTreeMap`
//! under a lower bound of its items (at most its first, above every item of
//! the run before). Why not a `BTreeSet<(u64, Key)>`: keys mostly gain
//! their TTL in time order (`SET ... EX n` with one n), so items go to the
//! end, and the std B-tree splits a full node in the middle there, leaving
//! every node about half full: 66 bytes per 32-byte item at 300,000 keys
//! (issue 42). Here an item added past the last run's end starts a new run
//! once that one is full, so runs filled in time order stay full (32 bytes
//! an item plus a map item per run); an item added inside a full run splits
//! it in halves, as a B-tree would.
//!
//! Removing a run's first item keeps its bound valid (still at most its
//! new first, above the run before), so only an item below the first bound
//! moves a run in the map.

use super::shard::Key;
use std::collections::BTreeMap;

/// Items per run: 2 KB of (time, key) pairs; inserting in the middle moves at
/// most that many bytes.
const RUN: usize = 64;

type Item = (u64, Key);

#[derive(Default)]
pub(super) struct Expires {
    runs: BTreeMap<Item, Vec<Item>>,
    len: usize,
    /// Sum of the items' times (INFO keyspace's `avg_ttl`, exact where Redis
    /// estimates it from the expiry cycle's samples).
    pub sum_ms: u128,
}

impl Expires {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Heap bytes: the runs' buffers and the map's items (about 1.5 of their
    /// size, for the B-tree's nodes).
    pub fn bytes(&self) -> usize {
        let map_item = std::mem::size_of::<(Item, Vec<Item>)>();
        self.runs
            .values()
            .map(|r| crate::types::malloc_chunk(r.capacity() * std::mem::size_of::<Item>()))
            .sum::<usize>()
            + self.runs.len() * map_item * 3 / 2
    }

    /// The run `item` belongs in: the last whose bound is at most `item`,
    /// else the first.
    fn run_for(&self, item: &Item) -> Option<&Item> {
        self.runs
            .range(..=item)
            .next_back()
            .or_else(|| self.runs.iter().next())
            .map(|(bound, _)| bound)
    }

    /// Adds `item` (true), or finds it there already (false).
    pub fn insert(&mut self, item: Item) -> bool {
        let Some(bound) = self.run_for(&item).cloned() else {
            self.runs.insert(item.clone(), vec![item.clone()]);
            self.added(&item);
            return true;
        };
        let last = self.runs.range(&bound..).nth(1).is_none();
        let run = self.runs.get_mut(&bound).expect("found above");
        let at = match run.binary_search(&item) {
            Ok(_) => return false,
            Err(at) => at,
        };
        self.len += 1;
        self.sum_ms += item.0 as u128;
        if run.len() < RUN {
            if run.len() == run.capacity() {
                // Double, up to a full run: a full run wastes nothing.
                run.reserve_exact(run.len().clamp(1, RUN - run.len()));
            }
            run.insert(at, item);
            if at == 0 && item_below(&bound, &run[0]) {
                self.rebound(bound);
            }
            return true;
        }
        if at == RUN && last {
            // Past the end of the last run: a new run, this one stays full.
            self.runs.insert(item.clone(), vec![item]);
            return true;
        }
        // Inside a full run: halves. The right half's bound is its first.
        let mut right = run.split_off(RUN / 2);
        if at <= RUN / 2 {
            run.insert(at, item);
        } else {
            right.insert(at - RUN / 2, item);
        }
        let first_below = item_below(&bound, &run[0]);
        self.runs.insert(right[0].clone(), right);
        if first_below {
            self.rebound(bound);
        }
        true
    }

    /// Files the run under `bound` anew under its first item (which went
    /// below the bound).
    fn rebound(&mut self, bound: Item) {
        let run = self.runs.remove(&bound).expect("a run");
        self.runs.insert(run[0].clone(), run);
    }

    fn added(&mut self, item: &Item) {
        self.len += 1;
        self.sum_ms += item.0 as u128;
    }

    /// Removes `item`; true if it was there.
    pub fn remove(&mut self, item: &Item) -> bool {
        let Some((bound, run)) = self.runs.range_mut(..=item).next_back() else {
            return false;
        };
        let Ok(at) = run.binary_search(item) else {
            return false;
        };
        run.remove(at);
        if run.is_empty() {
            let bound = bound.clone();
            self.runs.remove(&bound);
        }
        self.removed(item);
        true
    }

    /// Counts `item` out; an emptied map gives back its root node (most
    /// shards hold a handful of keys with a TTL).
    fn removed(&mut self, item: &Item) {
        self.len -= 1;
        self.sum_ms -= item.0 as u128;
        if self.len == 0 {
            self.runs = BTreeMap::new();
        }
    }

    pub fn first(&self) -> Option<&Item> {
        self.runs.values().next().map(|r| &r[0])
    }

    pub fn pop_first(&mut self) -> Option<Item> {
        let mut run = self.runs.first_entry()?;
        let item = run.get_mut().remove(0);
        if run.get().is_empty() {
            run.remove();
        }
        self.removed(&item);
        Some(item)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Item> {
        self.runs.values().flatten()
    }
}

fn item_below(bound: &Item, first: &Item) -> bool {
    first < bound
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeSet;

    fn key(i: u64) -> Key {
        Key::from_slice(format!("k{i}").as_bytes())
    }

    #[test]
    fn follows_a_btreeset_through_random_changes() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(42);
        let (mut e, mut model) = (Expires::default(), BTreeSet::new());
        for round in 0..20_000u64 {
            let item = (rng.gen_range(0..500u64), key(rng.gen_range(0..300)));
            match rng.gen_range(0..10) {
                0..=4 => assert_eq!(e.insert(item.clone()), model.insert(item)),
                5..=6 => assert_eq!(e.remove(&item), model.remove(&item)),
                7 => assert_eq!(e.pop_first(), model.pop_first()),
                _ => {
                    // Time order, as SET ... EX writes.
                    let item = (1000 + round, key(round));
                    assert_eq!(e.insert(item.clone()), model.insert(item));
                }
            }
            assert_eq!(e.len(), model.len());
            assert_eq!(e.first(), model.first());
        }
        assert!(e.iter().eq(model.iter()));
        assert_eq!(
            e.sum_ms,
            model.iter().map(|(t, _)| *t as u128).sum::<u128>()
        );
        while let Some(item) = model.pop_first() {
            assert_eq!(e.pop_first(), Some(item));
        }
        assert!(e.is_empty() && e.runs.is_empty());
    }

    #[test]
    fn items_in_time_order_fill_their_runs() {
        let mut e = Expires::default();
        for i in 0..10 * RUN as u64 {
            assert!(e.insert((i, key(i))));
        }
        assert_eq!(e.runs.len(), 10);
        assert!(e
            .runs
            .values()
            .all(|r| r.len() == RUN && r.capacity() == RUN));
        // 32 bytes an item, and the map's share.
        assert!(e.bytes() / e.len() < 36, "{} per item", e.bytes() / e.len());
    }
}
