//! Cluster replicas and failover, as Redis 7.0 does them: a node becomes a
//! replica of a master (clusterSetMaster) and replicates it through the
//! replication module; a replica whose master is FAIL asks the masters for
//! their votes (clusterHandleSlaveFailover), a master votes at most once per
//! epoch (clusterSendFailoverAuthIfNeeded), and the winner takes its
//! master's slots with the election's epoch
//! (clusterFailoverReplaceYourMaster). CLUSTER FAILOVER runs the manual
//! variant: MFSTART, the master pauses writes and sends its offset, the
//! replica catches up, then the election (with FORCEACK).

use super::bus;
use super::message::{self, Body};
use super::nodes::{self, Name};
use super::slots::SLOTS;
use super::{Cluster, Options, State};
use crate::replication::replica::{self, LinkState};
use crate::server::state::Shared;
use std::sync::atomic::Ordering;

/// How long a manual failover may take (CLUSTER_MF_TIMEOUT).
pub const MF_TIMEOUT_MS: u64 = 5000;
/// The master pauses writes for this many MF timeouts (CLUSTER_MF_PAUSE_MULT).
const MF_PAUSE_MULT: u64 = 2;

/// mflags[0] bits.
pub const FLAG0_PAUSED: u8 = 1;
pub const FLAG0_FORCEACK: u8 = 2;

/// This replica's election (Redis's failover_auth_* fields).
#[derive(Default)]
pub struct Election {
    /// When the election may start, or started (ms).
    pub auth_time: u64,
    pub auth_count: usize,
    pub auth_sent: bool,
    pub auth_rank: usize,
    pub auth_epoch: u64,
}

/// A manual failover (Redis's mf_* fields), on the replica that runs it
/// and on the master that serves it.
#[derive(Default)]
pub struct Manual {
    /// When it times out (0: none in progress).
    pub end: u64,
    /// Replica: the election may start.
    pub can_start: bool,
    /// Replica: the paused master's offset, once received.
    pub master_offset: Option<u64>,
    /// Master: the replica that asked.
    pub slave: Option<Name>,
}

/// Redis's resetManualFailover: a master lifts the write pause it set.
pub fn reset_manual(shared: &Shared, st: &mut State) {
    if st.manual.slave.is_some() {
        shared.exec.pause.unpause();
    }
    st.manual = Manual::default();
}

/// How long a master must stay orphaned before a replica migrates to it
/// (CLUSTER_SLAVE_MIGRATION_DELAY): time for its own replicas, after a
/// failover, to announce their new master first.
const MIGRATION_DELAY_MS: u64 = 5000;

/// Replica migration, as Redis's clusterCron and clusterHandleSlaveMigration
/// do it: a replica of one of the masters with the most working replicas
/// (the one with the smallest name among them) moves to a master left with
/// none (an "orphaned" MIGRATE_TO master serving slots) once it has been
/// orphaned for MIGRATION_DELAY_MS, if its own master keeps more than
/// `cluster-migration-barrier` working replicas.
pub fn handle_replica_migration(shared: &Shared, st: &mut State, opts: &Options, now: u64) {
    let my_master = st.me().slaveof;
    if !opts.allow_replica_migration || !st.me().is_slave() {
        return;
    }
    // Working (not FAIL) replicas per master, counted in one pass.
    let mut per_master: std::collections::HashMap<Name, usize> = Default::default();
    for r in st.nodes.values() {
        if let (true, Some(m), false) = (r.is_slave(), r.slaveof, r.failed()) {
            *per_master.entry(m).or_default() += 1;
        }
    }
    let working = |m: &Name| per_master.get(m).copied().unwrap_or(0);
    let (mut orphaned, mut max, mut mine) = (0, 0, 0);
    for n in st.nodes.values() {
        let skip = nodes::MYSELF | nodes::NOADDR | nodes::HANDSHAKE;
        if n.flags & skip != 0 || !n.is_master() || n.failed() {
            continue;
        }
        let ok = working(&n.name);
        if ok == 0 && n.numslots() > 0 && n.flags & nodes::MIGRATE_TO != 0 {
            orphaned += 1;
        }
        max = max.max(ok);
        if my_master == Some(n.name) {
            mine = ok;
        }
    }
    if orphaned == 0 || max < 2 || mine != max || !st.ok {
        return;
    }
    let Some(my_master) = my_master else { return };
    let timed_out = nodes::FAIL | nodes::PFAIL;
    let ok_here = st
        .replicas_of(&my_master)
        .iter()
        .filter(|r| r.flags & timed_out == 0)
        .count();
    if ok_here <= opts.migration_barrier {
        return;
    }
    let mut candidate = st.myself;
    let mut target = None;
    let names: Vec<Name> = st.nodes.keys().copied().collect();
    for name in names {
        let n = &st.nodes[&name];
        let ok = if n.is_master() { working(&name) } else { 0 };
        let is_orphaned =
            n.is_master() && !n.failed() && n.flags & nodes::MIGRATE_TO != 0 && ok == 0;
        if ok == max {
            for r in st.replicas_of(&name) {
                candidate = candidate.min(r.name);
            }
        }
        let serves = n.numslots() > 0;
        let n = st.nodes.get_mut(&name).expect("listed");
        if is_orphaned {
            if target.is_none() && serves {
                target = Some(name);
            }
            if n.orphaned_time == 0 {
                n.orphaned_time = now;
            }
        } else {
            n.orphaned_time = 0;
        }
    }
    let Some(target) = target else { return };
    if candidate == st.myself
        && now.saturating_sub(st.nodes[&target].orphaned_time) > MIGRATION_DELAY_MS
    {
        tracing::warn!("Migrating to orphaned master {}", nodes::name_str(&target));
        set_master(shared, st, target);
    }
}

/// Redis's clusterSetMaster (the replication link follows in
/// `sync_replication`).
pub fn set_master(shared: &Shared, st: &mut State, master: Name) {
    if master == st.myself {
        return;
    }
    if st.me().is_master() {
        st.migrating.clear();
        st.importing.clear();
    }
    let me = st.myself;
    st.set_role(&me, Some(master));
    reset_manual(shared, st);
    st.dirty = true;
}

/// Makes the replication link match the cluster role: a replica replicates
/// its master's address (Redis's replicationSetMaster from clusterCron and
/// clusterSetMaster), a master replicates nobody (replicationUnsetMaster).
/// Called without the cluster lock held.
pub fn sync_replication(shared: &Shared, c: &Cluster) {
    let (target, master) = {
        let st = c.state.read();
        let me = st.me();
        let target = if me.is_slave() {
            me.slaveof
                .and_then(|m| st.nodes.get(&m))
                .filter(|m| !m.ip.is_empty() && m.port != 0 && m.flags & nodes::NOADDR == 0)
                .map(|m| (m.ip.clone(), m.port))
        } else {
            None
        };
        (target, me.is_master())
    };
    let link = &shared.replication.link;
    let following = link.is_replica.load(Ordering::Acquire);
    match target {
        Some((ip, port)) => {
            let same = following
                && link
                    .status
                    .lock()
                    .as_ref()
                    .is_some_and(|s| s.host == ip && s.port == port);
            if !same {
                replica::follow(shared, ip, port);
            }
        }
        None if master && following => {
            tracing::info!("Discarding previously cached master state.");
            replica::promote(shared);
        }
        None => {}
    }
}

/// The offset this replica has applied (replicationGetSlaveOffset).
fn my_offset(shared: &Shared) -> u64 {
    shared.replication.feed.lock().offset
}

/// Milliseconds since this replica last heard from its master.
fn data_age(shared: &Shared, now: u64) -> u64 {
    match shared.replication.link.status.lock().as_ref() {
        Some(s) if s.state == LinkState::Connected => now.saturating_sub(s.last_io_ms),
        Some(s) if s.down_since_ms != 0 => now.saturating_sub(s.down_since_ms),
        _ => now,
    }
}

/// Redis's clusterGetSlaveRank: how many other replicas of my master have
/// a greater offset.
fn rank(st: &State, offset: u64) -> usize {
    let Some(master) = st.me().slaveof else {
        return 0;
    };
    st.replicas_of(&master)
        .iter()
        .filter(|n| {
            n.name != st.myself && n.flags & nodes::NOFAILOVER == 0 && n.repl_offset > offset
        })
        .count()
}

/// Redis's clusterFailoverReplaceYourMaster: a master now, with the old
/// master's slots, told to everyone.
pub fn replace_master(shared: &Shared, c: &Cluster, st: &mut State, opts: &Options, now: u64) {
    let Some(old) = st.me().slaveof.filter(|_| st.me().is_slave()) else {
        return;
    };
    let me = st.myself;
    st.set_role(&me, None);
    for j in 0..SLOTS {
        if st.slots[j] == Some(old) {
            st.add_slot(j, me);
        }
    }
    st.dirty = true;
    st.update_state(now, opts);
    bus::broadcast_pong(shared, c, st, opts, false);
    reset_manual(shared, st);
}

/// Redis's clusterHandleSlaveFailover, from the cron of a replica.
pub fn handle_replica_failover(
    shared: &Shared,
    c: &Cluster,
    st: &mut State,
    opts: &Options,
    now: u64,
) {
    let manual = st.manual.end != 0 && st.manual.can_start;
    let me = st.me();
    let master = me
        .slaveof
        .filter(|_| me.is_slave())
        .and_then(|m| st.nodes.get(&m));
    let Some(master) = master else { return };
    // A manual failover goes ahead; an automatic one needs a failed master
    // and failover allowed.
    let wanted = manual || (master.failed() && !opts.replica_no_failover);
    if !wanted || master.numslots() == 0 {
        return;
    }
    let timeout = opts.node_timeout_ms;
    let auth_timeout = (timeout * 2).max(2000) as i64;
    let auth_retry = auth_timeout * 2;
    let auth_age = now as i64 - st.election.auth_time as i64;
    let mut age = data_age(shared, now);
    if age > timeout {
        age -= timeout;
    }
    if opts.replica_validity_factor > 0
        && age > opts.repl_ping_period_ms + timeout * opts.replica_validity_factor
        && !manual
    {
        return;
    }
    let offset = my_offset(shared);
    if auth_age > auth_retry {
        let r = rank(st, offset);
        let e = &mut st.election;
        e.auth_time = now + 500 + rand::random::<u64>() % 500;
        e.auth_count = 0;
        e.auth_sent = false;
        e.auth_rank = r;
        e.auth_time += e.auth_rank as u64 * 1000;
        if st.manual.end != 0 {
            e.auth_time = now;
            e.auth_rank = 0;
        }
        tracing::warn!(
            "Start of election delayed for {} milliseconds (rank #{}, offset {offset}).",
            e.auth_time - now,
            e.auth_rank
        );
        bus::broadcast_pong(shared, c, st, opts, true);
        return;
    }
    if !st.election.auth_sent && st.manual.end == 0 {
        let new_rank = rank(st, offset);
        let e = &mut st.election;
        if new_rank > e.auth_rank {
            let added = (new_rank - e.auth_rank) as u64 * 1000;
            e.auth_time += added;
            e.auth_rank = new_rank;
            tracing::warn!(
                "Replica rank updated to #{new_rank}, added {added} milliseconds of delay."
            );
        }
    }
    if now < st.election.auth_time || auth_age > auth_timeout {
        return;
    }
    if !st.election.auth_sent {
        st.current_epoch += 1;
        st.election.auth_epoch = st.current_epoch;
        tracing::warn!(
            "Starting a failover election for epoch {}.",
            st.current_epoch
        );
        let mut m = bus::header(
            shared,
            st,
            opts,
            message::FAILOVER_AUTH_REQUEST,
            Body::Other,
        );
        if st.manual.end != 0 {
            m.mflags[0] |= FLAG0_FORCEACK;
        }
        bus::broadcast(c, st, &m);
        st.election.auth_sent = true;
        st.dirty = true;
        return;
    }
    if st.election.auth_count > st.size / 2 {
        tracing::warn!("Failover election won: I'm the new master.");
        let epoch = st.election.auth_epoch;
        if st.me().config_epoch < epoch {
            st.me_mut().config_epoch = epoch;
            tracing::warn!("configEpoch set to {epoch} after successful failover");
        }
        replace_master(shared, c, st, opts, now);
    }
}

/// Redis's clusterSendFailoverAuthIfNeeded: a slot-serving master votes for
/// a replica of a failed master (or one flagged FORCEACK), once per epoch.
pub fn vote(
    shared: &Shared,
    c: &Cluster,
    st: &mut State,
    opts: &Options,
    replica: Name,
    m: &message::Message,
    now: u64,
) {
    let me = st.me();
    if me.is_slave() || me.numslots() == 0 {
        return;
    }
    let who = nodes::name_str(&replica).to_string();
    if m.current_epoch < st.current_epoch {
        tracing::warn!(
            "Failover auth denied to {who}: reqEpoch ({}) < curEpoch({})",
            m.current_epoch,
            st.current_epoch
        );
        return;
    }
    if st.last_vote_epoch == st.current_epoch {
        tracing::warn!(
            "Failover auth denied to {who}: already voted for epoch {}",
            st.current_epoch
        );
        return;
    }
    let node = &st.nodes[&replica];
    let force = m.mflags[0] & FLAG0_FORCEACK != 0;
    let master = node.slaveof.and_then(|n| st.nodes.get(&n));
    if node.is_master() {
        tracing::warn!("Failover auth denied to {who}: it is a master node");
        return;
    }
    let Some(master) = master else {
        tracing::warn!("Failover auth denied to {who}: I don't know its master");
        return;
    };
    if !master.failed() && !force {
        tracing::warn!("Failover auth denied to {who}: its master is up");
        return;
    }
    let since = now.saturating_sub(master.voted_time);
    if since < opts.node_timeout_ms * 2 {
        tracing::warn!(
            "Failover auth denied to {who}: can't vote about this master before {} milliseconds",
            opts.node_timeout_ms * 2 - since
        );
        return;
    }
    for j in 0..SLOTS {
        if m.myslots[j / 8] & (1 << (j % 8)) == 0 {
            continue;
        }
        let owner_epoch = st.slots[j]
            .and_then(|o| st.nodes.get(&o))
            .map_or(0, |o| o.config_epoch);
        if st.slots[j].is_some() && owner_epoch > m.config_epoch {
            tracing::warn!(
                "Failover auth denied to {who}: slot {j} epoch ({owner_epoch}) > reqEpoch ({})",
                m.config_epoch
            );
            return;
        }
    }
    let master_name = master.name;
    st.last_vote_epoch = st.current_epoch;
    if let Some(n) = st.nodes.get_mut(&master_name) {
        n.voted_time = now;
    }
    st.dirty = true;
    let Some(link) = st.nodes[&replica].link else {
        return;
    };
    let ack = bus::header(shared, st, opts, message::FAILOVER_AUTH_ACK, Body::Other);
    c.links.send(link, message::encode(&ack));
    st.sent[message::FAILOVER_AUTH_ACK as usize] += 1;
    tracing::warn!(
        "Failover auth granted to {who} for epoch {}",
        st.current_epoch
    );
}

/// A vote received (FAILOVER_AUTH_ACK).
pub fn count_vote(st: &mut State, voter: &Name, current_epoch: u64) {
    let Some(n) = st.nodes.get(voter) else { return };
    if n.is_master() && n.numslots() > 0 && current_epoch >= st.election.auth_epoch {
        st.election.auth_count += 1;
    }
}

/// MFSTART from one of our replicas: pause writes and send it our offset.
pub fn manual_start(shared: &Shared, c: &Cluster, st: &mut State, opts: &Options, from: Name) {
    if st.nodes.get(&from).and_then(|n| n.slaveof) != Some(st.myself) {
        return;
    }
    reset_manual(shared, st);
    let now = now_ms();
    st.manual.end = now + MF_TIMEOUT_MS;
    st.manual.slave = Some(from);
    shared.exec.pause.pause(
        crate::exec::pause::WRITE,
        now + MF_TIMEOUT_MS * MF_PAUSE_MULT,
    );
    tracing::warn!(
        "Manual failover requested by replica {}.",
        nodes::name_str(&from)
    );
    bus::ping_now(shared, c, st, opts, &from);
}

/// The cron's manual failover steps (manualFailoverCheckTimeout,
/// clusterHandleManualFailover), before the election.
pub fn manual_cron(shared: &Shared, st: &mut State, now: u64) {
    if st.manual.end == 0 {
        return;
    }
    if st.manual.end < now {
        tracing::warn!("Manual failover timed out.");
        reset_manual(shared, st);
        return;
    }
    if !st.me().is_slave() || st.manual.can_start {
        return;
    }
    if st.manual.master_offset == Some(my_offset(shared)) {
        st.manual.can_start = true;
        tracing::warn!("All master replication stream processed, manual failover can start.");
    }
}

fn now_ms() -> u64 {
    blinkdb_engine::now_ms()
}
