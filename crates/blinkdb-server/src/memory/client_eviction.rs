//! Client eviction (`maxmemory-clients`, Redis 7.0's evictClients): when the
//! memory held by normal and pub/sub clients reaches the limit, the largest
//! evictable ones are closed until the total is below it. A client's memory
//! is a handful of atomics its own connection keeps (`ClientInfo::memory`).
//! While the limit is on, each connection also publishes its figure into a
//! running total after each batch and before each command (one shared atomic
//! add), as Redis updates stat_clients_type_memory after each read, command
//! and write; the total reaching the limit makes that connection run the
//! eviction at once, else the main thread's 100 ms cron does. Many clients
//! growing together (unread replies, unfinished commands) are then evicted
//! before their memory makes maxmemory evict keys.

use crate::client::{ClientInfo, ClientType, FLAG_NO_EVICT};
use crate::memory::Host;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `evict_counted` of a client whose connection has ended.
const GONE: u64 = u64::MAX;

fn counted(c: &ClientInfo) -> bool {
    matches!(ClientType::of(c), ClientType::Normal | ClientType::Pubsub) && !c.is_killed()
}

/// Closes the largest evictable clients while the clients' memory is at or
/// over the limit; returns how many it closed. The cron samples every
/// client, NO-EVICT ones included (Redis's clientsCron is what updates
/// those).
pub fn cron(h: &impl Host) -> usize {
    evict(h, Sampling::Cron)
}

/// As `cron`, from inside a command of `running` (CONFIG SET lowering the
/// limit): that client is counted without the arguments of the command it
/// runs. Redis updates a client's figure after each read, command and
/// write, so the command being run is not in it yet; counting it would
/// close one client more than the limit asks for when the limit was set
/// from the measured figures (CLIENT LIST shows the caller with its own,
/// shorter, command).
pub fn from_command(h: &impl Host, running: &ClientInfo) -> usize {
    evict(h, Sampling::Command(running.id))
}

#[derive(Clone, Copy, PartialEq)]
enum Sampling {
    Cron,
    /// Outside the cron: NO-EVICT clients count as the cron last saw them.
    Now,
    /// As `Now`, from inside a command of this client.
    Command(u64),
}

fn no_evict(c: &ClientInfo) -> bool {
    c.flags.load(Ordering::Relaxed) & FLAG_NO_EVICT != 0
}

fn evict(h: &impl Host, sampling: Sampling) -> usize {
    let limit = h.settings().maxmemory_clients;
    if limit == 0 {
        if sampling == Sampling::Cron {
            // Sampled while the limit is off too, as Redis's clientsCron
            // does: NO-EVICT clients count as they are when it is set.
            for c in h.clients() {
                publish(h, &c);
            }
        }
        return 0;
    }
    let figure = |c: &ClientInfo| {
        if sampling != Sampling::Cron && no_evict(c) {
            let last = c.usage.evict_counted.load(Ordering::Relaxed);
            return if last == GONE { 0 } else { last };
        }
        // The running total catches up with this client.
        let (mem, _) = publish(h, c);
        if sampling == Sampling::Command(c.id) {
            mem.saturating_sub(c.usage.argv())
        } else {
            mem
        }
    };
    let clients: Vec<(u64, Arc<ClientInfo>)> = h
        .clients()
        .into_iter()
        .filter_map(|c| {
            let mem = figure(&c);
            counted(&c).then_some((mem, c))
        })
        .collect();
    let mut total: u64 = clients.iter().map(|(m, _)| m).sum();
    if total < limit {
        return 0;
    }
    let mut evictable: Vec<&(u64, Arc<ClientInfo>)> =
        clients.iter().filter(|(_, c)| !no_evict(c)).collect();
    evictable.sort_by_key(|(m, _)| std::cmp::Reverse(*m));
    let mut evicted = 0;
    for (mem, c) in evictable {
        if total < limit {
            break;
        }
        tracing::info!("Evicting client: {}", c.describe(&blinkdb_engine::now_ms()));
        c.kill();
        publish(h, c); // out of the running total at once
        total -= mem;
        evicted += 1;
    }
    if total >= limit {
        tracing::warn!("Over client maxmemory after evicting all evictable clients");
    }
    h.evicted_clients()
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
pub fn check_client(h: &impl Host, info: &ClientInfo, limit: u64) -> bool {
    if limit == 0 {
        return false;
    }
    let (mine, total) = if no_evict(info) {
        // Sampled by the cron only, as Redis's clientsCron does.
        (0, h.clients_memory_total().load(Ordering::Relaxed))
    } else {
        publish(h, info)
    };
    if mine < limit && total < limit {
        return false;
    }
    evict(h, Sampling::Now);
    info.is_killed()
}

/// Puts this client's current figure (0 unless it is a counted type) into
/// the running total in place of the last one; its memory and the new total.
fn publish(h: &impl Host, info: &ClientInfo) -> (u64, u64) {
    let mem = info.memory();
    let now = if counted(info) { mem } else { 0 };
    // Not once the connection has ended (a cron that listed the client just
    // before would otherwise put it back for good).
    let Ok(before) =
        info.usage
            .evict_counted
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |before| {
                (before != GONE).then_some(now)
            })
    else {
        return (0, h.clients_memory_total().load(Ordering::Relaxed));
    };
    let change = now.wrapping_sub(before);
    let total = h
        .clients_memory_total()
        .fetch_add(change, Ordering::Relaxed)
        .wrapping_add(change);
    (mem, total)
}

/// A connection that ends takes its figure out of the running total.
pub fn forget(h: &impl Host, info: &ClientInfo) {
    let before = info.usage.evict_counted.swap(GONE, Ordering::Relaxed);
    if before != GONE {
        h.clients_memory_total()
            .fetch_sub(before, Ordering::Relaxed);
    }
}
