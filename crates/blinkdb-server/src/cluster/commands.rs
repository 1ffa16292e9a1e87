//! CLUSTER subcommands, ASKING, READONLY and READWRITE, as Redis 7.0 answers
//! them. Each answers `ERR This instance has cluster support disabled`
//! without cluster mode.

use super::nodes::{self, Name, Node};
use super::slots::{key_slot, SLOTS};
use super::{Cluster, Options, State};
use crate::commands::args::parse_i64;
use crate::commands::Ctx;
use crate::protocol::Args;
use std::sync::Arc;

/// Failure reports older than node-timeout times this are ignored (Redis's
/// CLUSTER_FAIL_REPORT_VALIDITY_MULT).
pub const FAIL_REPORT_VALIDITY_MULT: u64 = 2;

/// An I/O error as C's strerror words it (Redis's replies use it).
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

const DISABLED: &str = "ERR This instance has cluster support disabled";

fn enabled(ctx: &mut Ctx) -> Option<Arc<Cluster>> {
    let c = ctx.shared.cluster.clone();
    if c.is_none() {
        ctx.out.error(DISABLED);
    }
    c
}

/// A plain client of a TLS cluster (tls-cluster yes) is told the nodes'
/// plaintext ports (Redis's use_pport).
pub(super) fn plaintext_view(
    shared: &crate::server::state::Shared,
    client: &crate::exec::session::Client,
) -> bool {
    !client.info.is_tls() && shared.settings().tls.cluster
}

fn now() -> u64 {
    blinkdb_engine::now_ms()
}

fn opts(ctx: &Ctx) -> Options {
    Options::from_config(&ctx.shared.config())
}

/// After a change: recompute the state and write nodes.conf (without
/// fsync, as Redis saves after a command; elections and votes fsync).
fn changed(ctx: &Ctx, c: &Cluster, st: parking_lot::RwLockWriteGuard<State>) {
    changed_fsync(ctx, c, st, false)
}

fn changed_fsync(
    ctx: &Ctx,
    c: &Cluster,
    mut st: parking_lot::RwLockWriteGuard<State>,
    fsync: bool,
) {
    st.dirty = true;
    st.update_state(now(), &opts(ctx));
    drop(st);
    if let Err(e) = c.save(fsync) {
        tracing::warn!("Fatal: can't update cluster config file: {e}");
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn slot_arg(ctx: &mut Ctx, a: &[u8]) -> Option<usize> {
    match parse_i64(a) {
        Some(s) if (0..SLOTS as i64).contains(&s) => Some(s as usize),
        _ => {
            ctx.out.error("ERR Invalid or out of range slot");
            None
        }
    }
}

fn int_arg(ctx: &mut Ctx, a: &[u8]) -> Option<i64> {
    let v = parse_i64(a);
    if v.is_none() {
        ctx.out.error(crate::commands::args::ERR_NOT_INT);
    }
    v
}

/// A node named by a client; `Unknown node X` when not known.
fn known(ctx: &mut Ctx, st: &State, name: &[u8]) -> Option<Name> {
    match st.node(name) {
        Some(n) => Some(n.name),
        None => {
            ctx.out.error(&format!("ERR Unknown node {}", lossy(name)));
            None
        }
    }
}

pub fn asking(ctx: &mut Ctx, _args: &Args) {
    if enabled(ctx).is_some() {
        ctx.client.cluster_asking = true;
        ctx.out.ok();
    }
}

pub fn readonly(ctx: &mut Ctx, _args: &Args) {
    if enabled(ctx).is_some() {
        ctx.client.set_cluster_readonly(true);
        ctx.out.ok();
    }
}

pub fn readwrite(ctx: &mut Ctx, _args: &Args) {
    if enabled(ctx).is_some() {
        ctx.client.set_cluster_readonly(false);
        ctx.out.ok();
    }
}

pub fn help(ctx: &mut Ctx, _args: &Args) {
    if enabled(ctx).is_none() {
        return;
    }
    ctx.out.help(&[
        "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ADDSLOTS <slot> [<slot> ...]",
        "    Assign slots to current node.",
        "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
        "    Assign slots which are between <start-slot> and <end-slot> to current node.",
        "BUMPEPOCH",
        "    Advance the cluster config epoch.",
        "COUNT-FAILURE-REPORTS <node-id>",
        "    Return number of failure reports for <node-id>.",
        "COUNTKEYSINSLOT <slot>",
        "    Return the number of keys in <slot>.",
        "DELSLOTS <slot> [<slot> ...]",
        "    Delete slots information from current node.",
        "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
        "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
        "FAILOVER [FORCE|TAKEOVER]",
        "    Promote current replica node to being a master.",
        "FORGET <node-id>",
        "    Remove a node from the cluster.",
        "GETKEYSINSLOT <slot> <count>",
        "    Return key names stored by current node in a slot.",
        "FLUSHSLOTS",
        "    Delete current node own slots information.",
        "INFO",
        "    Return information about the cluster.",
        "KEYSLOT <key>",
        "    Return the hash slot for <key>.",
        "MEET <ip> <port> [<bus-port>]",
        "    Connect nodes into a working cluster.",
        "MYID",
        "    Return the node id.",
        "NODES",
        "    Return cluster configuration seen by node. Output format:",
        "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
        "REPLICATE <node-id>",
        "    Configure current node as replica to <node-id>.",
        "RESET [HARD|SOFT]",
        "    Reset current node (default: soft).",
        "SET-CONFIG-EPOCH <epoch>",
        "    Set config epoch of current node.",
        "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
        "    Set slot state.",
        "REPLICAS <node-id>",
        "    Return <node-id> replicas.",
        "SAVECONFIG",
        "    Force saving cluster configuration on disk.",
        "SLOTS",
        "    Return information about slots range mappings. Each range is made of:",
        "    start, end, master and replicas IP addresses, ports and ids",
        "SHARDS",
        "    Return information about slot range mappings and the nodes associated with them.",
        "LINKS",
        "    Return information about all network links between this node and its peers.",
        "    Output format is an array where each array element is a map containing attributes of a link",
        "HELP",
        "    Prints this help.",
    ]);
}

pub fn myid(ctx: &mut Ctx, _args: &Args) {
    if let Some(c) = enabled(ctx) {
        let me = c.state.read().myself;
        ctx.out.bulk(&me);
    }
}

pub fn keyslot(ctx: &mut Ctx, args: &Args) {
    if enabled(ctx).is_some() {
        ctx.out.int(key_slot(args[2]) as i64);
    }
}

pub fn info(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let st = c.state.read();
    // Counted from each node's bitmap, which changes with the owner table
    // (State::add_slot): a lookup per slot made this ~500 us.
    let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
    for n in st.nodes.values() {
        let count = n.numslots();
        assigned += count;
        if n.failed() {
            fail += count;
        } else if n.flags & nodes::PFAIL != 0 {
            pfail += count;
        } else {
            ok += count;
        }
    }
    let mut text = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\ncluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\ncluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n",
        if st.ok { "ok" } else { "fail" },
        st.nodes.len(),
        st.size,
        st.current_epoch,
        st.shown_epoch(st.me()),
    );
    for (dir, counts) in [("sent", &st.sent), ("received", &st.received)] {
        let mut total = 0;
        for (i, n) in counts.iter().enumerate() {
            if *n > 0 {
                total += n;
                text.push_str(&format!(
                    "cluster_stats_messages_{}_{dir}:{n}\r\n",
                    super::MSG_TYPE_NAMES[i]
                ));
            }
        }
        text.push_str(&format!("cluster_stats_messages_{dir}:{total}\r\n"));
    }
    text.push_str("total_cluster_links_buffer_limit_exceeded:0\r\n");
    ctx.out.verbatim(&text);
}

pub fn nodes(ctx: &mut Ctx, _args: &Args) {
    if let Some(c) = enabled(ctx) {
        let plaintext = plaintext_view(ctx.shared, ctx.client);
        let text = c.state.read().describe_all(0, plaintext);
        ctx.out.verbatim(&text);
    }
}

/// A node as CLUSTER SLOTS lists it: ip, port, id, and no more endpoints.
fn slot_node(ctx: &mut Ctx, n: &Node, plaintext: bool) {
    ctx.out.array(4);
    ctx.out.bulk(n.ip.as_bytes());
    ctx.out.int(n.client_port(plaintext) as i64);
    ctx.out.bulk(&n.name);
    let extra = usize::from(!n.hostname.is_empty());
    ctx.out.map(extra);
    if extra > 0 {
        ctx.out.bulk(b"hostname");
        ctx.out.bulk(n.hostname.as_bytes());
    }
}

/// Replicas that CLUSTER SLOTS lists: not failed and with data (Redis's
/// isReplicaAvailable; our own offset is the one we applied).
fn available(n: &Node, my_offset: u64) -> bool {
    let offset = if n.flags & nodes::MYSELF != 0 {
        my_offset
    } else {
        n.repl_offset
    };
    !n.failed() && offset != 0
}

pub fn slots(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let plaintext = plaintext_view(ctx.shared, ctx.client);
    let my_offset = ctx.shared.replication.feed.lock().offset;
    let st = c.state.read();
    let runs = super::slots::runs(|s| st.slots[s]);
    ctx.out.array(runs.len());
    for (start, end, owner) in runs {
        let Some(master) = st.nodes.get(&owner) else {
            continue;
        };
        let replicas: Vec<&Node> = st
            .replicas_of(&owner)
            .into_iter()
            .filter(|n| available(n, my_offset))
            .collect();
        ctx.out.array(3 + replicas.len());
        ctx.out.int(start as i64);
        ctx.out.int(end as i64);
        slot_node(ctx, master, plaintext);
        for r in replicas {
            slot_node(ctx, r, plaintext);
        }
    }
}

fn shard_node(ctx: &mut Ctx, st: &State, n: &Node, tls_cluster: bool) {
    // In a TLS cluster a node's port is its TLS one and pport its plain one.
    let (plain, tls) = if tls_cluster {
        (n.pport, n.port)
    } else {
        (n.port, 0)
    };
    let fields = 6 + usize::from(plain != 0) + usize::from(tls != 0);
    ctx.out.map(fields + usize::from(!n.hostname.is_empty()));
    ctx.out.bulk(b"id");
    ctx.out.bulk(&n.name);
    if plain != 0 {
        ctx.out.bulk(b"port");
        ctx.out.int(plain as i64);
    }
    if tls != 0 {
        ctx.out.bulk(b"tls-port");
        ctx.out.int(tls as i64);
    }
    ctx.out.bulk(b"ip");
    ctx.out.bulk(n.ip.as_bytes());
    ctx.out.bulk(b"endpoint");
    ctx.out.bulk(n.ip.as_bytes());
    if !n.hostname.is_empty() {
        ctx.out.bulk(b"hostname");
        ctx.out.bulk(n.hostname.as_bytes());
    }
    let offset = if n.name == st.myself {
        ctx.shared.replication.feed.lock().offset
    } else {
        n.repl_offset
    };
    ctx.out.bulk(b"role");
    ctx.out
        .bulk(if n.is_slave() { b"replica" } else { b"master" });
    ctx.out.bulk(b"replication-offset");
    ctx.out.int(offset as i64);
    ctx.out.bulk(b"health");
    let health: &[u8] = if n.failed() {
        b"fail"
    } else if n.is_slave() && offset == 0 {
        b"loading"
    } else {
        b"online"
    };
    ctx.out.bulk(health);
}

pub fn shards(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let tls_cluster = ctx.shared.settings().tls.cluster;
    let st = c.state.read();
    let masters: Vec<&Node> = st.nodes.values().filter(|n| n.is_master()).collect();
    ctx.out.array(masters.len());
    for m in masters {
        ctx.out.map(2);
        ctx.out.bulk(b"slots");
        let runs = m.slots.ranges();
        ctx.out.array(runs.len() * 2);
        for (a, b) in runs {
            ctx.out.int(a as i64);
            ctx.out.int(b as i64);
        }
        ctx.out.bulk(b"nodes");
        let mut members = vec![m];
        members.extend(st.replicas_of(&m.name));
        ctx.out.array(members.len());
        for n in members {
            shard_node(ctx, &st, n, tls_cluster);
        }
    }
}

pub fn links(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let st = c.state.read();
    let mut links = Vec::new();
    for n in st.nodes.values() {
        if let Some(t) = n.link_ctime {
            links.push(("to", n.name, t));
        }
        if let Some(t) = n.inbound_ctime {
            links.push(("from", n.name, t));
        }
    }
    ctx.out.array(links.len());
    for (dir, name, t) in links {
        ctx.out.map(6);
        ctx.out.bulk(b"direction");
        ctx.out.bulk(dir.as_bytes());
        ctx.out.bulk(b"node");
        ctx.out.bulk(&name);
        ctx.out.bulk(b"create-time");
        ctx.out.int(t as i64);
        ctx.out.bulk(b"events");
        ctx.out.bulk(b"r");
        ctx.out.bulk(b"send-buffer-allocated");
        ctx.out.int(0);
        ctx.out.bulk(b"send-buffer-used");
        ctx.out.int(0);
    }
}

/// Keys of db 0 in a slot, up to `max`, from the engine's per-slot index
/// (kept in cluster mode: docs/cluster.md "Keys per slot").
fn keys_in_slot(ctx: &Ctx, slot: usize, max: usize) -> Vec<Vec<u8>> {
    ctx.shared
        .engine
        .keys_in_slot(slot as u16, max)
        .expect("cluster mode keeps the slot index")
}

fn count_in_slot(ctx: &Ctx, slot: usize) -> usize {
    ctx.shared
        .engine
        .count_keys_in_slot(slot as u16)
        .expect("cluster mode keeps the slot index")
}

pub fn countkeysinslot(ctx: &mut Ctx, args: &Args) {
    if enabled(ctx).is_none() {
        return;
    }
    let Some(slot) = int_arg(ctx, args[2]) else {
        return;
    };
    if !(0..SLOTS as i64).contains(&slot) {
        return ctx.out.error("ERR Invalid slot");
    }
    let n = count_in_slot(ctx, slot as usize);
    ctx.out.int(n as i64);
}

pub fn getkeysinslot(ctx: &mut Ctx, args: &Args) {
    if enabled(ctx).is_none() {
        return;
    }
    let Some(slot) = int_arg(ctx, args[2]) else {
        return;
    };
    let Some(max) = int_arg(ctx, args[3]) else {
        return;
    };
    if !(0..SLOTS as i64).contains(&slot) || max < 0 {
        return ctx.out.error("ERR Invalid slot or number of keys");
    }
    let keys = keys_in_slot(ctx, slot as usize, max as usize);
    ctx.out.array(keys.len());
    for k in keys {
        ctx.out.bulk(&k);
    }
}

/// Checks a list of slots for ADDSLOTS/DELSLOTS(RANGE), marking them in `marked`.
fn check_slots(
    ctx: &mut Ctx,
    st: &State,
    marked: &mut [u8],
    del: bool,
    a: usize,
    b: usize,
) -> bool {
    for (s, mark) in marked.iter_mut().enumerate().take(b + 1).skip(a) {
        if del && st.slots[s].is_none() {
            ctx.out
                .error(&format!("ERR Slot {s} is already unassigned"));
            return false;
        } else if !del && st.slots[s].is_some() {
            ctx.out.error(&format!("ERR Slot {s} is already busy"));
            return false;
        }
        *mark += 1;
        if *mark == 2 {
            ctx.out
                .error(&format!("ERR Slot {s} specified multiple times"));
            return false;
        }
    }
    true
}

fn update_slots(
    ctx: &mut Ctx,
    c: &Cluster,
    mut st: parking_lot::RwLockWriteGuard<State>,
    marked: &[u8],
    del: bool,
) {
    let me = st.myself;
    for (s, m) in marked.iter().enumerate() {
        if *m > 0 {
            st.importing.remove(&(s as u16));
            if del {
                st.del_slot(s);
            } else {
                st.add_slot(s, me);
            }
        }
    }
    changed(ctx, c, st);
    ctx.out.ok();
}

fn add_or_del(ctx: &mut Ctx, args: &Args, del: bool) {
    let Some(c) = enabled(ctx) else { return };
    let mut slots = Vec::new();
    for a in &args[2..] {
        let Some(s) = slot_arg(ctx, a) else { return };
        slots.push(s);
    }
    let st = c.state.write();
    let mut marked = vec![0u8; SLOTS];
    for s in slots {
        if !check_slots(ctx, &st, &mut marked, del, s, s) {
            return;
        }
    }
    update_slots(ctx, &c, st, &marked, del);
}

pub fn addslots(ctx: &mut Ctx, args: &Args) {
    add_or_del(ctx, args, false)
}

pub fn delslots(ctx: &mut Ctx, args: &Args) {
    add_or_del(ctx, args, true)
}

fn ranges(ctx: &mut Ctx, args: &Args, del: bool) {
    let Some(c) = enabled(ctx) else { return };
    if args.len() % 2 == 1 {
        return ctx.arity_error(&format!("cluster|{}", lossy(args[1]).to_ascii_lowercase()));
    }
    let st = c.state.write();
    let mut marked = vec![0u8; SLOTS];
    for pair in args[2..].chunks(2) {
        let Some(a) = slot_arg(ctx, pair[0]) else {
            return;
        };
        let Some(b) = slot_arg(ctx, pair[1]) else {
            return;
        };
        if a > b {
            return ctx.out.error(&format!(
                "ERR start slot number {a} is greater than end slot number {b}"
            ));
        }
        if !check_slots(ctx, &st, &mut marked, del, a, b) {
            return;
        }
    }
    update_slots(ctx, &c, st, &marked, del);
}

pub fn addslotsrange(ctx: &mut Ctx, args: &Args) {
    ranges(ctx, args, false)
}

pub fn delslotsrange(ctx: &mut Ctx, args: &Args) {
    ranges(ctx, args, true)
}

fn db0_empty(ctx: &Ctx) -> bool {
    ctx.shared.engine.scan(0, 0, usize::MAX, |_, _| {}) == 0 && keys_in_any(ctx) == 0
}

fn keys_in_any(ctx: &Ctx) -> usize {
    let mut n = 0;
    let mut cursor = 0;
    loop {
        cursor = ctx.shared.engine.scan(0, cursor, 1024, |_, _| n += 1);
        if cursor == 0 || n > 0 {
            return n;
        }
    }
}

pub fn flushslots(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    if !db0_empty(ctx) {
        return ctx
            .out
            .error("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.");
    }
    let mut st = c.state.write();
    let me = st.myself;
    for s in 0..SLOTS {
        if st.slots[s] == Some(me) {
            st.del_slot(s);
        }
    }
    changed(ctx, &c, st);
    ctx.out.ok();
}

pub fn setslot(ctx: &mut Ctx, args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    if c.state.read().me().is_slave() {
        return ctx.out.error("ERR Please use SETSLOT only with masters.");
    }
    let Some(slot) = slot_arg(ctx, args[2]) else {
        return;
    };
    let action = args[3].to_ascii_lowercase();
    let mut st = c.state.write();
    let me = st.myself;
    let mut became_replica = false;
    let target = |ctx: &mut Ctx, st: &State, unknown: &str| -> Option<Name> {
        let Some(n) = st.node(args[4]) else {
            ctx.out.error(&format!("ERR {unknown} {}", lossy(args[4])));
            return None;
        };
        if n.is_slave() {
            ctx.out.error("ERR Target node is not a master");
            return None;
        }
        Some(n.name)
    };
    match (action.as_slice(), args.len()) {
        (b"migrating", 5) => {
            if st.slots[slot] != Some(me) {
                return ctx
                    .out
                    .error(&format!("ERR I'm not the owner of hash slot {slot}"));
            }
            let Some(n) = target(ctx, &st, "I don't know about node") else {
                return;
            };
            st.migrating.insert(slot as u16, n);
        }
        (b"importing", 5) => {
            if st.slots[slot] == Some(me) {
                return ctx
                    .out
                    .error(&format!("ERR I'm already the owner of hash slot {slot}"));
            }
            let Some(n) = target(ctx, &st, "I don't know about node") else {
                return;
            };
            st.importing.insert(slot as u16, n);
        }
        (b"stable", 4) => {
            st.importing.remove(&(slot as u16));
            st.migrating.remove(&(slot as u16));
        }
        (b"node", 5) => {
            let Some(n) = target(ctx, &st, "Unknown node") else {
                return;
            };
            let count = count_in_slot(ctx, slot);
            if st.slots[slot] == Some(me) && n != me && count != 0 {
                return ctx.out.error(&format!("ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."));
            }
            if count == 0 {
                st.migrating.remove(&(slot as u16));
            }
            let was_mine = st.slots[slot] == Some(me);
            st.add_slot(slot, n);
            if n == me && st.importing.remove(&(slot as u16)).is_some() {
                if st.bump_epoch_without_consensus() {
                    tracing::warn!("configEpoch updated after importing slot {slot}");
                }
                c.bus_wake.notify_one();
            }
            // A master that gave away its last slot becomes a replica of the
            // new owner, as redis-server 7.0's SETSLOT does (unless
            // cluster-allow-replica-migration is no).
            let allow_migration = super::allow_replica_migration(&ctx.shared.config());
            if was_mine && n != me && st.me().numslots() == 0 && allow_migration {
                tracing::warn!(
                    "Configuration change detected. Reconfiguring myself as a replica of {}",
                    nodes::name_str(&n)
                );
                super::failover::set_master(ctx.shared, &mut st, n);
                became_replica = true;
            }
        }
        _ => {
            return ctx.out.error(
                "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
            )
        }
    }
    changed(ctx, &c, st);
    if became_replica {
        super::failover::sync_replication(ctx.shared, &c);
    }
    ctx.out.ok();
}

pub fn bumpepoch(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let mut st = c.state.write();
    let bumped = st.bump_epoch_without_consensus();
    let e = st.me().config_epoch;
    changed(ctx, &c, st);
    ctx.out
        .simple(&format!("{} {e}", if bumped { "BUMPED" } else { "STILL" }));
}

pub fn saveconfig(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    match c.save(true) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(&format!(
            "ERR error saving the cluster node config: {}",
            strerror(&e)
        )),
    }
}

pub fn set_config_epoch(ctx: &mut Ctx, args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let Some(epoch) = int_arg(ctx, args[2]) else {
        return;
    };
    let mut st = c.state.write();
    if epoch < 0 {
        ctx.out
            .error(&format!("ERR Invalid config epoch specified: {epoch}"));
    } else if st.nodes.len() > 1 {
        ctx.out.error("ERR The user can assign a config epoch only when the node does not know any other node.");
    } else if st.me().config_epoch != 0 {
        ctx.out.error("ERR Node config epoch is already non-zero");
    } else {
        st.me_mut().config_epoch = epoch as u64;
        tracing::warn!("configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH");
        st.current_epoch = st.current_epoch.max(epoch as u64);
        changed_fsync(ctx, &c, st, true);
        ctx.out.ok();
    }
}

pub fn count_failure_reports(ctx: &mut Ctx, args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let st = c.state.read();
    let Some(name) = known(ctx, &st, args[2]) else {
        return;
    };
    let timeout = opts(ctx).node_timeout_ms * FAIL_REPORT_VALIDITY_MULT;
    let now = now();
    let n = st.nodes[&name]
        .fail_reports
        .iter()
        .filter(|(_, t)| now.saturating_sub(*t) <= timeout)
        .count();
    ctx.out.int(n as i64);
}

pub fn forget(ctx: &mut Ctx, args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let mut st = c.state.write();
    let Some(name) = known(ctx, &st, args[2]) else {
        return;
    };
    if name == st.myself {
        return ctx
            .out
            .error("ERR I tried hard but I can't forget myself...");
    }
    if st.me().is_slave() && st.me().slaveof == Some(name) {
        return ctx.out.error("ERR Can't forget my master!");
    }
    st.forget(&name, now());
    changed(ctx, &c, st);
    ctx.out.ok();
}

fn replicas_reply(ctx: &mut Ctx, args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let plaintext = plaintext_view(ctx.shared, ctx.client);
    let st = c.state.read();
    let Some(name) = known(ctx, &st, args[2]) else {
        return;
    };
    if st.nodes[&name].is_slave() {
        return ctx.out.error("ERR The specified node is not a master");
    }
    let lines: Vec<String> = st
        .replicas_of(&name)
        .iter()
        .map(|n| st.describe(n, plaintext))
        .collect();
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.bulk(l.as_bytes());
    }
}

pub fn replicas(ctx: &mut Ctx, args: &Args) {
    replicas_reply(ctx, args)
}

pub fn slaves(ctx: &mut Ctx, args: &Args) {
    replicas_reply(ctx, args)
}

pub fn reset(ctx: &mut Ctx, args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    let hard = match args.get(2).map(|a| a.to_ascii_lowercase()) {
        None => false,
        Some(a) if a == b"hard" => true,
        Some(a) if a == b"soft" => false,
        Some(_) => return ctx.syntax_error(),
    };
    if c.state.read().me().is_master() && keys_in_any(ctx) != 0 {
        return ctx
            .out
            .error("ERR CLUSTER RESET can't be called with master nodes containing keys");
    }
    let mut st = c.state.write();
    // A replica turns into an empty master (Redis's clusterReset).
    let was_replica = st.me().is_slave();
    if was_replica {
        let me = st.myself;
        st.set_role(&me, None);
        super::failover::reset_manual(ctx.shared, &mut st);
    }
    st.migrating.clear();
    st.importing.clear();
    for s in 0..SLOTS {
        st.del_slot(s);
    }
    let me = st.myself;
    let others: Vec<Name> = st.nodes.keys().filter(|n| **n != me).copied().collect();
    for n in others {
        st.nodes.remove(&n);
    }
    if hard {
        st.current_epoch = 0;
        st.last_vote_epoch = 0;
        tracing::warn!("configEpoch set to 0 via CLUSTER RESET HARD");
        let mut node = st.nodes.remove(&me).expect("myself is known");
        node.config_epoch = 0;
        node.name = nodes::random_name();
        tracing::info!("Node hard reset, now I'm {}", nodes::name_str(&node.name));
        st.myself = node.name;
        st.nodes.insert(node.name, node);
    }
    changed(ctx, &c, st);
    if was_replica {
        super::failover::sync_replication(ctx.shared, &c);
        ctx.shared.engine.flush(None, &[b"FLUSHALL"], false, 0);
    }
    ctx.out.ok();
}

pub fn meet(ctx: &mut Ctx, args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    if args.len() > 5 {
        return crate::commands::subcommand_syntax_error(ctx, args);
    }
    let Some(port) = parse_i64(args[3]) else {
        return ctx.out.error(&format!(
            "ERR Invalid TCP base port specified: {}",
            lossy(args[3])
        ));
    };
    let cport = match args.get(4) {
        Some(a) => match parse_i64(a) {
            Some(p) => p,
            None => {
                return ctx
                    .out
                    .error(&format!("ERR Invalid TCP bus port specified: {}", lossy(a)))
            }
        },
        None => port + 10000,
    };
    let ip: Option<std::net::IpAddr> = std::str::from_utf8(args[2])
        .ok()
        .and_then(|s| s.parse().ok());
    let valid = |p: i64| (1..=65535).contains(&p);
    let Some(ip) = ip.filter(|_| valid(port) && valid(cport)) else {
        return ctx.out.error(&format!(
            "ERR Invalid node address specified: {}:{}",
            lossy(args[2]),
            lossy(args[3])
        ));
    };
    super::bus::start_handshake(&c, &ip.to_string(), port as u16, cport as u16);
    ctx.out.ok();
}

/// CLUSTER REPLICATE <node-id>: this node becomes a replica of a master
/// (an empty master without slots, or a replica switching masters).
pub fn replicate(ctx: &mut Ctx, args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    {
        let mut st = c.state.write();
        let Some(name) = known(ctx, &st, args[2]) else {
            return;
        };
        if name == st.myself {
            return ctx.out.error("ERR Can't replicate myself");
        }
        if st.nodes[&name].is_slave() {
            return ctx
                .out
                .error("ERR I can only replicate a master, not a replica.");
        }
        if st.me().is_master() && (st.me().numslots() != 0 || keys_in_any(ctx) != 0) {
            return ctx
                .out
                .error("ERR To set a master the node must be empty and without assigned slots.");
        }
        super::failover::set_master(ctx.shared, &mut st, name);
        changed(ctx, &c, st);
    }
    super::failover::sync_replication(ctx.shared, &c);
    ctx.out.ok();
}

/// CLUSTER FAILOVER [FORCE|TAKEOVER], sent to a replica.
pub fn failover(ctx: &mut Ctx, args: &Args) {
    let Some(c) = enabled(ctx) else { return };
    if args.len() > 3 {
        return crate::commands::subcommand_syntax_error(ctx, args);
    }
    let (force, takeover) = match args.get(2).map(|a| a.to_ascii_lowercase()) {
        None => (false, false),
        Some(a) if a == b"force" => (true, false),
        Some(a) if a == b"takeover" => (true, true),
        Some(_) => return ctx.syntax_error(),
    };
    let opts = opts(ctx);
    let mut st = c.state.write();
    let me = st.me();
    if me.is_master() {
        return ctx
            .out
            .error("ERR You should send CLUSTER FAILOVER to a replica");
    }
    let Some(master) = me.slaveof.and_then(|m| st.nodes.get(&m)) else {
        return ctx
            .out
            .error("ERR I'm a replica but my master is unknown to me");
    };
    if !force && (master.failed() || master.link.is_none()) {
        return ctx
            .out
            .error("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE");
    }
    let master = master.name;
    super::failover::reset_manual(ctx.shared, &mut st);
    let now = now();
    st.manual.end = now + super::failover::MF_TIMEOUT_MS;
    if takeover {
        tracing::warn!("Taking over the master (user request).");
        st.bump_epoch_without_consensus();
        super::failover::replace_master(ctx.shared, &c, &mut st, &opts, now);
    } else if force {
        tracing::warn!("Forced failover user request accepted.");
        st.manual.can_start = true;
    } else {
        tracing::warn!("Manual failover user request accepted.");
        super::bus::send_mfstart(ctx.shared, &c, &mut st, &opts, &master);
    }
    changed_fsync(ctx, &c, st, true);
    super::failover::sync_replication(ctx.shared, &c);
    ctx.out.ok();
}

use crate::commands::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(crate) const COMMANDS: &[crate::commands::table::CommandSpec] = &[
    cmd!("cluster", -2, CONTAINER, NOKEYS, "cluster", "3.0.0", "A container for cluster commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("cluster|addslots", -3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Assign new hash slots to receiving node", addslots;
        complexity: "O(N) where N is the total number of hash slot arguments",
        args: "slot:integer*"),
    cmd!("cluster|addslotsrange", -4, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "7.0.0", "Assign new hash slots to receiving node", addslotsrange;
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        args: "start-slot_end-slot:block*(start-slot:integer end-slot:integer)"),
    cmd!("cluster|bumpepoch", 2, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Advance the cluster config epoch", bumpepoch;
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|count-failure-reports", 3, ADMIN | STALE, NOKEYS, "cluster", "3.0.0", "Return the number of failure reports active for a given node", count_failure_reports;
        complexity: "O(N) where N is the number of failure reports",
        args: "node-id:string",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|countkeysinslot", 3, STALE, NOKEYS, "cluster", "3.0.0", "Return the number of local keys in the specified hash slot", countkeysinslot;
        complexity: "O(1)",
        args: "slot:integer"),
    cmd!("cluster|delslots", -3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Set hash slots as unbound in receiving node", delslots;
        complexity: "O(N) where N is the total number of hash slot arguments",
        args: "slot:integer*"),
    cmd!("cluster|delslotsrange", -4, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "7.0.0", "Set hash slots as unbound in receiving node", delslotsrange;
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        args: "start-slot_end-slot:block*(start-slot:integer end-slot:integer)"),
    cmd!("cluster|failover", -2, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Forces a replica to perform a manual failover of its master.", failover;
        complexity: "O(1)",
        args: "options:oneof?(force:FORCE takeover:TAKEOVER)"),
    cmd!("cluster|flushslots", 2, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Delete a node's own slots information", flushslots;
        complexity: "O(1)"),
    cmd!("cluster|forget", 3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Remove a node from the nodes table", forget;
        complexity: "O(1)",
        args: "node-id:string"),
    cmd!("cluster|getkeysinslot", 4, STALE, NOKEYS, "cluster", "3.0.0", "Return local key names in the specified hash slot", getkeysinslot;
        complexity: "O(log(N)) where N is the number of requested keys",
        args: "slot:integer count:integer",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|help", 2, LOADING_OK | STALE, NOKEYS, "cluster", "5.0.0", "Show helpful text about the different subcommands", help;
        complexity: "O(1)"),
    cmd!("cluster|info", 2, STALE, NOKEYS, "cluster", "3.0.0", "Provides info about Redis Cluster node state", info;
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|keyslot", 3, STALE, NOKEYS, "cluster", "3.0.0", "Returns the hash slot of the specified key", keyslot;
        complexity: "O(N) where N is the number of bytes in the key",
        args: "key:string"),
    cmd!("cluster|links", 2, STALE, NOKEYS, "cluster", "7.0.0", "Returns a list of all TCP links to and from peer nodes in cluster", links;
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|meet", -4, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Force a node cluster to handshake with another node", meet;
        complexity: "O(1)",
        args: "ip:string port:integer cluster_bus_port:integer?^4.0.0",
        history: &[("4.0.0", "Added the optional `cluster_bus_port` argument.")]),
    cmd!("cluster|myid", 2, STALE, NOKEYS, "cluster", "3.0.0", "Return the node id", myid;
        complexity: "O(1)"),
    cmd!("cluster|nodes", 2, STALE, NOKEYS, "cluster", "3.0.0", "Get Cluster config for the node", nodes;
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|replicas", 3, ADMIN | STALE, NOKEYS, "cluster", "5.0.0", "List replica nodes of the specified master node", replicas;
        complexity: "O(1)",
        args: "node-id:string",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|replicate", 3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Reconfigure a node as a replica of the specified master node", replicate;
        complexity: "O(1)",
        args: "node-id:string"),
    cmd!("cluster|reset", -2, ADMIN | NOSCRIPT | STALE, NOKEYS, "cluster", "3.0.0", "Reset a Redis Cluster node", reset;
        complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
        args: "hard_soft:oneof?(hard:HARD soft:SOFT)"),
    cmd!("cluster|saveconfig", 2, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Forces the node to save cluster state on disk", saveconfig;
        complexity: "O(1)"),
    cmd!("cluster|set-config-epoch", 3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Set the configuration epoch in a new node", set_config_epoch;
        complexity: "O(1)",
        args: "config-epoch:integer"),
    cmd!("cluster|setslot", -4, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Bind a hash slot to a specific node", setslot;
        complexity: "O(1)",
        args: "slot:integer subcommand:oneof(node-id:string=IMPORTING node-id:string=MIGRATING node-id:string=NODE stable:STABLE)"),
    cmd!("cluster|shards", 2, STALE, NOKEYS, "cluster", "7.0.0", "Get array of cluster slots to node mappings", shards;
        complexity: "O(N) where N is the total number of cluster nodes",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|slaves", 3, ADMIN | STALE, NOKEYS, "cluster", "3.0.0", "List replica nodes of the specified master node", slaves;
        complexity: "O(1)",
        args: "node-id:string",
        tips: &["nondeterministic_output"],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "5.0.0",
        replaced_by: "`CLUSTER REPLICAS`"),
    cmd!("cluster|slots", 2, STALE, NOKEYS, "cluster", "3.0.0", "Get array of Cluster slot to node mappings", slots;
        complexity: "O(N) where N is the total number of Cluster nodes",
        history: &[("4.0.0", "Added node IDs."), ("7.0.0", "Added additional networking metadata field.")],
        tips: &["nondeterministic_output"],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "7.0.0",
        replaced_by: "`CLUSTER SHARDS`"),
    cmd!("asking", 1, FAST, NOKEYS, "cluster", "3.0.0", "Sent by cluster clients after an -ASK redirect", asking;
        props: props::SETS_ASKING,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("readonly", 1, LOADING_OK | STALE | FAST, NOKEYS, "cluster", "3.0.0", "Enables read queries for a connection to a cluster replica node", readonly;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("readwrite", 1, LOADING_OK | STALE | FAST, NOKEYS, "cluster", "3.0.0", "Disables read queries for a connection to a cluster replica node", readwrite;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
];
