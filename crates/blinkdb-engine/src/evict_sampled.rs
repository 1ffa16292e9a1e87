//! Key-by-key eviction for Redis's maxmemory policies (allkeys-/volatile-
//! lru, lfu, random, and volatile-ttl), as Redis's evict.c does it: sample a
//! few keys of each database (`maxmemory-samples`), keep the best candidates
//! in a pool of 16 across rounds, and delete the best one, logging a DEL and
//! reporting an `evicted` event. LRU ranks by idle time, LFU by a low access
//! counter, TTL by the nearest expiry (all read from the access clocks of
//! keyspace/access.rs). Cache mode's whole-segment eviction is evict.rs.

use crate::clock::now_ms;
use crate::engine::Engine;
use crate::keyspace::{access, InlineBytes, SHARDS};
use crate::notify::EVICTED;
use rand::Rng;
use std::sync::atomic::Ordering;

/// Redis's EVPOOL_SIZE.
const POOL: usize = 16;

/// What a policy ranks keys by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rank {
    Lru,
    Lfu,
    Random,
    Ttl,
}

/// A sampled policy: what it ranks by, and whether only keys with a TTL
/// may go (volatile-*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub rank: Rank,
    pub volatile: bool,
}

impl Policy {
    /// The policy a `maxmemory-policy` value names, if it is a sampled one.
    pub fn parse(name: &str) -> Option<Policy> {
        let (volatile, rank) = match name {
            "allkeys-lru" => (false, Rank::Lru),
            "volatile-lru" => (true, Rank::Lru),
            "allkeys-lfu" => (false, Rank::Lfu),
            "volatile-lfu" => (true, Rank::Lfu),
            "allkeys-random" => (false, Rank::Random),
            "volatile-random" => (true, Rank::Random),
            "volatile-ttl" => (true, Rank::Ttl),
            _ => return None,
        };
        Some(Policy { rank, volatile })
    }
}

/// The candidates of one run of evictions (a write's or a cron tick's):
/// the databases that held keys when it started, and the pool.
pub struct Sampler {
    dbs: Vec<usize>,
    /// (score, db, key), best (highest score) last.
    pool: Vec<(u64, usize, InlineBytes)>,
}

impl Engine {
    /// Starts a run of evictions.
    pub fn eviction_sampler(&self) -> Sampler {
        let dbs = (0..self.databases())
            .filter(|&db| !self.db(db).is_empty())
            .collect();
        Sampler {
            dbs,
            pool: Vec::with_capacity(POOL + 1),
        }
    }

    /// Evicts one key under `policy`, sampling `samples` keys of each
    /// database first. Returns the bytes its entry accounted for, or None
    /// when no key can be evicted (no key, or none with a TTL under a
    /// volatile policy).
    pub fn evict_sampled(&self, s: &mut Sampler, policy: Policy, samples: usize) -> Option<u64> {
        loop {
            self.fill_pool(s, policy, samples.max(1));
            let (_, db, key) = s.pool.pop()?;
            let (freed, _) = self.write1(db, &key, |tx| {
                let present = access::without_touch(|| tx.get(db, &key).is_some());
                let eligible = present
                    && (!policy.volatile || tx.get(db, &key).is_some_and(|e| e.expire_at != 0));
                if !eligible {
                    return None;
                }
                let entry = tx.remove(db, &key)?;
                tx.log(db, &[b"DEL", &key]);
                tx.notify(EVICTED, "evicted", db, &key);
                Some(entry.accounted_bytes(&key) as u64)
            });
            if let Some(bytes) = freed {
                self.stats.evicted_keys.fetch_add(1, Ordering::Relaxed);
                return Some(bytes);
            }
            // Gone or changed since it was sampled: try the next one.
            if s.pool.is_empty() && s.dbs.is_empty() {
                return None;
            }
        }
    }

    /// Adds `samples` keys of each database to the pool, as Redis's
    /// evictionPoolPopulate: a run of keys from a random point of the
    /// keyspace (dictGetSomeKeys), the pool keeping the 16 best. A database
    /// found without candidates is dropped from the run.
    fn fill_pool(&self, s: &mut Sampler, policy: Policy, samples: usize) {
        let now = now_ms();
        let mut rng = rand::thread_rng();
        let mut emptied = Vec::new();
        for &db in &s.dbs {
            let start = rng.gen_range(0..SHARDS);
            let mut got = 0;
            for step in 0..SHARDS {
                if got >= samples {
                    break;
                }
                let shard = self.db(db).shard((start + step) % SHARDS).read();
                let n = if policy.volatile {
                    shard.expires_len()
                } else {
                    shard.len()
                };
                if n == 0 {
                    continue;
                }
                let offset = rng.gen_range(0..n);
                let take = samples - got;
                let mut consider = |key: &[u8], entry: &crate::keyspace::Entry| {
                    if entry.is_expired(now) {
                        return;
                    }
                    got += 1;
                    let score = match policy.rank {
                        Rank::Lru => access::idle_ms(entry.clock().get(), now),
                        Rank::Lfu => 255 - self.access.freq(entry.clock().get(), now) as u64,
                        Rank::Random => rng.gen(),
                        Rank::Ttl => u64::MAX - entry.expire_at,
                    };
                    add_candidate(&mut s.pool, score, db, key);
                };
                if policy.volatile {
                    for key in shard.expiring_keys().skip(offset).take(take) {
                        if let Some(e) = shard.get_any(key) {
                            consider(key, e);
                        }
                    }
                } else {
                    for (key, e) in shard.iter().skip(offset).take(take) {
                        consider(key, e);
                    }
                }
            }
            if got == 0 {
                emptied.push(db);
            }
        }
        s.dbs.retain(|db| !emptied.contains(db));
    }
}

/// Puts a candidate in the pool (best last), unless already there or worse
/// than a full pool's worst.
fn add_candidate(pool: &mut Vec<(u64, usize, InlineBytes)>, score: u64, db: usize, key: &[u8]) {
    if pool.iter().any(|(_, d, k)| *d == db && k.as_slice() == key) {
        return;
    }
    if pool.len() >= POOL && pool[0].0 >= score {
        return;
    }
    let at = pool.partition_point(|(s, _, _)| *s < score);
    pool.insert(at, (score, db, InlineBytes::from_slice(key)));
    if pool.len() > POOL {
        pool.remove(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_keeps_the_best() {
        let mut pool = Vec::new();
        for i in 0..40u64 {
            add_candidate(&mut pool, i * 7 % 41, 0, format!("k{i}").as_bytes());
        }
        assert_eq!(pool.len(), POOL);
        assert!(pool.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(pool.last().unwrap().0, 40);
        add_candidate(&mut pool, 1000, 0, b"k0");
        assert_eq!(pool.iter().filter(|c| c.2.as_slice() == b"k0").count(), 1);
    }

    #[test]
    fn policies_by_name() {
        assert_eq!(
            Policy::parse("volatile-ttl"),
            Some(Policy {
                rank: Rank::Ttl,
                volatile: true
            })
        );
        assert_eq!(Policy::parse("noeviction"), None);
        assert_eq!(Policy::parse("allkeys-fifo"), None);
    }
}
