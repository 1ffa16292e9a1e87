//! Where a command must run (Redis's getNodeByQuery): all its keys in one
//! slot, served here, or a -MOVED/-ASK/-TRYAGAIN/-CROSSSLOT/-CLUSTERDOWN
//! error instead of running it. A transaction is judged as a whole at EXEC.

use super::nodes;
use super::{Cluster, Options};
use crate::commands::table::props;
use crate::commands::{spec, table, CommandSpec};
use crate::exec::session::Client;
use crate::protocol::Args;
use crate::server::state::Shared;
use smallvec::SmallVec;

const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
const UNSTABLE: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
const DOWN: &str = "CLUSTERDOWN The cluster is down";
const DOWN_RO: &str = "CLUSTERDOWN The cluster is down and only accepts read commands";
const UNBOUND: &str = "CLUSTERDOWN Hash slot not served";

/// The error that replaces the command, if it must not run here. Called for
/// every command when cluster mode is on.
pub fn route(
    shared: &Shared,
    cluster: &Cluster,
    client: &mut Client,
    spec: &CommandSpec,
    args: &Args,
) -> Option<String> {
    // ASKING covers the next command only (a whole transaction inside MULTI).
    let asking = client.cluster_asking;
    if client.multi.is_none() && !spec.has_prop(props::SETS_ASKING) {
        client.cluster_asking = false;
    }
    let is_exec = spec.has_prop(props::RUNS_QUEUE);
    if !is_exec && !spec::movable_keys(spec) && !spec::has_keys(spec) && !is_shard_pubsub(spec) {
        return None;
    }
    // The keys of the command, or of every queued command at EXEC. Inline
    // storage: a single-key command, the common case, allocates nothing.
    let queued: Vec<(&CommandSpec, Args)> = match &client.multi {
        Some(tx) if is_exec => tx
            .queued()
            .iter()
            .map(|(s, argv)| (*s, argv.iter().map(|a| a.as_slice()).collect()))
            .collect(),
        None if is_exec => return None,
        _ => Vec::new(),
    };
    let mut write = false;
    let mut shard_pubsub = false;
    let mut keys: SmallVec<[&[u8]; 4]> = SmallVec::new();
    if is_exec {
        for (s, argv) in &queued {
            scan(shared, s, argv, &mut keys, &mut write, &mut shard_pubsub);
        }
    } else {
        scan(shared, spec, args, &mut keys, &mut write, &mut shard_pubsub);
    }
    let first = *keys.first()?;
    let slot = super::slots::key_slot(first) as usize;
    let st = cluster.state.read();
    let Some(owner) = st.slots[slot] else {
        return Some(UNBOUND.into());
    };
    let me = st.myself;
    let migrating = owner == me && st.migrating.contains_key(&(slot as u16));
    let importing = !migrating && st.importing.contains_key(&(slot as u16));
    let mut multiple = false;
    for k in &keys[1..] {
        if *k != first {
            if super::slots::key_slot(k) as usize != slot {
                return Some(CROSSSLOT.into());
            }
            multiple = true;
        }
    }
    let (mut missing, mut existing) = (0, 0);
    if (migrating || importing) && !shard_pubsub {
        for k in &keys {
            if shared.engine.peek(0, k, |e| e.is_some()) {
                existing += 1;
            } else {
                missing += 1;
            }
        }
    }
    if !st.ok {
        let opts = Options::from_config(&shared.config());
        if shard_pubsub {
            if !opts.allow_pubsubshard_when_down {
                return Some(DOWN.into());
            }
        } else if !opts.allow_reads_when_down {
            return Some(DOWN.into());
        } else if write {
            return Some(DOWN_RO.into());
        }
    }
    if (migrating || importing) && spec.has_prop(props::MIGRATING_OK) {
        return None;
    }
    if migrating && missing > 0 {
        if existing > 0 {
            return Some(UNSTABLE.into());
        }
        let to = st.migrating[&(slot as u16)];
        let plaintext = super::commands::plaintext_view(shared, client);
        return Some(redirect("ASK", slot, st.nodes.get(&to)?, plaintext));
    }
    if importing && (asking || spec.has(table::ASKING)) {
        if multiple && missing > 0 {
            return Some(UNSTABLE.into());
        }
        return None;
    }
    if owner == me {
        return None;
    }
    let mine = st.me();
    if (client.cluster_readonly || shard_pubsub)
        && !write
        && mine.is_slave()
        && mine.slaveof == Some(owner)
    {
        return None;
    }
    let plaintext = super::commands::plaintext_view(shared, client);
    Some(redirect("MOVED", slot, st.nodes.get(&owner)?, plaintext))
}

/// Adds a command's keys to `keys`; notes whether it writes and whether it is
/// shard pub/sub (whose channels count as keys).
fn scan<'a>(
    shared: &Shared,
    s: &CommandSpec,
    argv: &[&'a [u8]],
    keys: &mut SmallVec<[&'a [u8]; 4]>,
    write: &mut bool,
    shard_pubsub: &mut bool,
) {
    *write |= crate::scripting::command_flags(shared, s, argv) & table::WRITE != 0;
    if is_shard_pubsub(s) {
        *shard_pubsub = true;
        // The channels sit where the entry's key range says (Redis's key
        // specs mark them not_key).
        let last = if s.last_key < 0 {
            argv.len() as i32 + s.last_key
        } else {
            s.last_key.min(argv.len() as i32 - 1)
        };
        let first = s.first_key.max(1);
        if first <= last {
            keys.extend(argv[first as usize..=last as usize].iter().copied());
        }
    } else if let Some(found) = spec::command_keys(s, argv) {
        keys.extend(found.iter().map(|(i, _)| argv[*i]));
    }
}

/// `plaintext`: a plain client of a TLS cluster, sent to the plaintext port.
fn redirect(kind: &str, slot: usize, n: &nodes::Node, plaintext: bool) -> String {
    format!("{kind} {slot} {}:{}", n.ip, n.client_port(plaintext))
}

fn is_shard_pubsub(spec: &CommandSpec) -> bool {
    spec.has_prop(props::SHARD_CHANNELS)
}

/// Redis's clusterRedirectBlockedClientIfNeeded (each cron tick): a client
/// blocked on keys (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK...) whose slot this
/// node no longer serves nor imports gets `-MOVED slot host:port` (or
/// `-CLUSTERDOWN Hash slot not served`), every one `-CLUSTERDOWN The cluster
/// is down` when the cluster fails. A READONLY client's read of its master's
/// slot on a replica waits on.
pub fn redirect_blocked(shared: &Shared, cluster: &Cluster) {
    if shared.exec.blocking.blocked_clients() == 0 {
        return;
    }
    let tls_cluster = shared.settings().tls.cluster;
    shared.exec.blocking.fail_where(shared, |w| {
        let first = w.keys().first()?;
        let plaintext = tls_cluster && !w.is_tls();
        let st = cluster.state.read();
        if !st.ok {
            return Some((DOWN.into(), false));
        }
        let slot = super::slots::key_slot(first) as usize;
        let me = st.me();
        let mut owner = st.slots[slot];
        if w.readonly
            && me.is_slave()
            && me.slaveof.is_some()
            && me.slaveof == owner
            && !w.is_write()
        {
            owner = Some(st.myself);
        }
        if owner == Some(st.myself) || st.importing.contains_key(&(slot as u16)) {
            return None;
        }
        Some(match owner.and_then(|o| st.nodes.get(&o)) {
            Some(n) => (redirect("MOVED", slot, n, plaintext), false),
            None => (UNBOUND.into(), false),
        })
    });
}
