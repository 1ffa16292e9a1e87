//! Client eviction (`maxmemory-clients`, Redis 7.0's evictClients): when the
//! memory held by normal and pub/sub clients reaches the limit, the largest
//! evictable ones are closed until the total is below it. The main thread's
//! 100 ms cron checks it: a client's memory is a handful of atomics its own
//! connection keeps (`ClientInfo::memory`), and summing them at every command
//! would make each connection write a shared counter.

use crate::client::{ClientInfo, ClientType, FLAG_NO_EVICT};
use crate::state::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn counted(c: &ClientInfo) -> bool {
    matches!(ClientType::of(c), ClientType::Normal | ClientType::Pubsub) && !c.is_killed()
}

/// Closes the largest evictable clients while the clients' memory is at or
/// over the limit; returns how many it closed.
pub fn cron(shared: &Shared) -> usize {
    let limit = shared.settings().maxmemory_clients;
    if limit == 0 {
        return 0;
    }
    let clients: Vec<(u64, Arc<ClientInfo>)> = shared
        .clients_snapshot()
        .into_iter()
        .filter(|c| counted(c))
        .map(|c| (c.memory(), c))
        .collect();
    let mut total: u64 = clients.iter().map(|(m, _)| m).sum();
    if total < limit {
        return 0;
    }
    let mut evictable: Vec<&(u64, Arc<ClientInfo>)> = clients
        .iter()
        .filter(|(_, c)| c.flags.load(Ordering::Relaxed) & FLAG_NO_EVICT == 0)
        .collect();
    evictable.sort_by_key(|(m, _)| std::cmp::Reverse(*m));
    let mut evicted = 0;
    for (mem, c) in evictable {
        if total < limit {
            break;
        }
        tracing::info!("Evicting client: {}", c.describe(&shared.clock()));
        c.kill();
        total -= mem;
        evicted += 1;
    }
    if total >= limit {
        tracing::warn!("Over client maxmemory after evicting all evictable clients");
    }
    shared
        .stats
        .evicted_clients
        .fetch_add(evicted as u64, Ordering::Relaxed);
    evicted
}

/// Before each command and after a batch: a client that alone holds
/// `maxmemory-clients` (a large command's arguments, or replies queued for a
/// socket that does not take them) makes the check run now rather than at the
/// next cron tick, as Redis checks before each command. True if this client
/// was the one closed (its command is then not run). Summing every client is
/// left to the cron otherwise: one client's own memory costs a few atomic
/// loads, and none while the limit is off.
pub fn check_client(shared: &Shared, info: &ClientInfo, limit: u64) -> bool {
    if limit == 0 || info.memory() < limit {
        return false;
    }
    cron(shared);
    info.is_killed()
}
