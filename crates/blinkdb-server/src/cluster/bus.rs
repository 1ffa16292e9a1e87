//! The cluster bus: Redis 7.0's node-to-node protocol on the bus port
//! (docs/cluster-bus.md). One task per TCP link reads whole messages and
//! applies them to the state under its lock (Redis's clusterProcessPacket),
//! a writer task per link drains what is queued for it, and a 100 ms cron
//! connects to nodes, pings them, and detects failures (clusterCron).

use super::message::{self, Body, Gossip, Message};
use super::nodes::{self, Name, Node};
use super::slots::SLOTS;
use super::{Cluster, Options, State};
use crate::server::state::Shared;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A FAIL undone after node-timeout times this (CLUSTER_FAIL_UNDO_TIME_MULT).
const FAIL_UNDO_TIME_MULT: u64 = 2;

/// The bus's links: where to queue bytes for each.
#[derive(Default)]
pub struct Links {
    next: AtomicU64,
    senders: Mutex<HashMap<u64, mpsc::UnboundedSender<Vec<u8>>>>,
}

impl Links {
    fn add(&self) -> (u64, mpsc::UnboundedReceiver<Vec<u8>>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = mpsc::unbounded_channel();
        self.senders.lock().insert(id, tx);
        (id, rx)
    }

    pub(super) fn send(&self, id: u64, bytes: Vec<u8>) {
        if let Some(tx) = self.senders.lock().get(&id) {
            let _ = tx.send(bytes);
        }
    }

    /// Closes a link: its writer ends, and so its socket.
    fn close(&self, id: u64) {
        self.senders.lock().remove(&id);
    }
}

fn now() -> u64 {
    blinkdb_engine::now_ms()
}

/// CLUSTER MEET: a node in handshake, to be met by the cron.
pub fn start_handshake(c: &Cluster, ip: &str, port: u16, cport: u16) {
    let mut st = c.state.write();
    let busy = st.nodes.values().any(|n| {
        n.flags & nodes::HANDSHAKE != 0
            && n.ip.eq_ignore_ascii_case(ip)
            && n.port == port
            && n.cport == cport
    });
    if busy {
        return;
    }
    let mut n = Node::new(nodes::random_name(), nodes::HANDSHAKE | nodes::MEET, now());
    n.ip = ip.to_string();
    n.port = port;
    n.cport = cport;
    st.nodes.insert(n.name, n);
    st.dirty = true;
    drop(st);
    c.bus_wake.notify_one();
}

/// Binds the bus port where the data port binds, then serves it and runs
/// the cron until the server stops.
pub async fn run(shared: Arc<Shared>, bind: Vec<String>) -> Result<(), String> {
    let cluster = shared.cluster.clone().expect("cluster mode");
    for addr in &bind {
        let l = crate::net::socket::bind_tcp(addr, cluster.cport, 511).map_err(|e| {
            format!(
                "Failed listening on {addr}:{} (cluster): {e}",
                cluster.cport
            )
        })?;
        tokio::spawn(accept_loop(shared.clone(), l));
    }
    tokio::spawn(cron(shared));
    Ok(())
}

async fn accept_loop(shared: Arc<Shared>, l: TcpListener) {
    loop {
        let Ok((sock, peer)) = l.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let _ = sock.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let Some(sock) = secure(&shared, sock, peer, true).await else {
                return;
            };
            let cluster = shared.cluster.clone().expect("cluster mode");
            let (id, rx) = cluster.links.add();
            serve_link(shared, sock, id, true, rx).await;
        });
    }
}

/// A bus link's socket: plain, or a TLS session with tls-cluster yes.
enum BusSock {
    Plain(TcpStream),
    Tls(Box<crate::net::tls::TlsSocket<TcpStream>>),
}

/// The TLS handshake of a bus link when tls-cluster is on (the server side
/// for links nodes open to us); None, logged, when it fails.
async fn secure(
    shared: &Shared,
    sock: TcpStream,
    peer: SocketAddr,
    inbound: bool,
) -> Option<BusSock> {
    let settings = shared.settings();
    if !settings.tls.cluster {
        return Some(BusSock::Plain(sock));
    }
    let Some(contexts) = shared.net.tls.current() else {
        tracing::warn!(
            "Cluster bus: TLS is not configured (tls-cluster yes); dropping the link with {peer}"
        );
        return None;
    };
    let timeout = crate::net::tls::handshake_timeout(&settings.tls);
    let session = if inbound {
        crate::net::tls::accept(&contexts, sock, timeout).await
    } else {
        crate::net::tls::connect(&contexts, sock, timeout).await
    };
    match session {
        Ok(s) => Some(BusSock::Tls(Box::new(s))),
        Err(e) => {
            let side = if inbound { "accepting" } else { "making" };
            tracing::info!("Error {side} a cluster bus connection: {e} (addr={peer})");
            None
        }
    }
}

/// Reads messages from one link until it fails or a message is malformed,
/// and writes what is queued for it.
async fn serve_link(
    shared: Arc<Shared>,
    sock: BusSock,
    id: u64,
    inbound: bool,
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    let cluster = shared.cluster.clone().expect("cluster mode");
    let tcp = match &sock {
        BusSock::Plain(s) => s,
        BusSock::Tls(s) => s.get_ref(),
    };
    let link = LinkInfo {
        id,
        inbound,
        local: tcp.local_addr().ok(),
        peer: tcp.peer_addr().ok(),
    };
    let on_message = |buf: &[u8]| match message::decode(buf) {
        Ok(msg) => process(&shared, &cluster, &link, msg),
        Err(e) => {
            tracing::warn!("Cluster bus: {e}; closing the link");
            false
        }
    };
    match sock {
        BusSock::Plain(s) => super::link::drive(s, rx, on_message).await,
        BusSock::Tls(s) => super::link::drive(s, rx, on_message).await,
    }
    cluster.links.close(id);
    forget_link(&cluster, id);
}

fn forget_link(c: &Cluster, id: u64) {
    let mut st = c.state.write();
    for n in st.nodes.values_mut() {
        if n.link == Some(id) {
            n.link = None;
            n.link_ctime = None;
        }
        if n.inbound_link == Some(id) {
            n.inbound_link = None;
            n.inbound_ctime = None;
        }
    }
}

struct LinkInfo {
    id: u64,
    inbound: bool,
    local: Option<SocketAddr>,
    peer: Option<SocketAddr>,
}

/// The header every message from this node carries (clusterBuildMessageHdr).
pub(super) fn header(
    shared: &Shared,
    st: &State,
    opts: &Options,
    kind: u16,
    body: Body,
) -> Message {
    let me = st.me();
    let master = match (&me.slaveof, me.is_slave()) {
        (Some(m), true) => st.nodes.get(m).unwrap_or(me),
        _ => me,
    };
    Message {
        kind,
        port: me.port,
        current_epoch: st.current_epoch,
        config_epoch: master.config_epoch,
        offset: shared.replication.feed.lock().offset,
        sender: me.name,
        myslots: master.slots.0.clone(),
        slaveof: if me.is_slave() { me.slaveof } else { None },
        myip: opts.announce_ip.clone(),
        pport: me.pport,
        cport: me.cport,
        flags: me.flags,
        state_ok: st.ok,
        mflags: [
            if me.is_master() && st.manual.end != 0 {
                super::failover::FLAG0_PAUSED
            } else {
                0
            },
            0,
            0,
        ],
        body,
    }
}

fn gossip_of(n: &Node) -> Gossip {
    Gossip {
        name: n.name,
        ping_sent: (n.ping_sent / 1000) as u32,
        pong_received: (n.pong_received / 1000) as u32,
        ip: n.ip.clone(),
        port: n.port,
        cport: n.cport,
        flags: n.flags,
        pport: n.pport,
    }
}

/// A PING, PONG or MEET with its gossip section (clusterSendPing): about a
/// tenth of the nodes (at least 3) picked at random, plus every node in PFAIL.
fn ping_message(
    shared: &Shared,
    st: &State,
    opts: &Options,
    kind: u16,
    to: Option<&Name>,
) -> Message {
    use rand::seq::SliceRandom;
    let fresh = st.nodes.len().saturating_sub(2);
    let wanted = (st.nodes.len() / 10).max(3).min(fresh);
    let mut candidates: Vec<&Node> = st
        .nodes
        .values()
        .filter(|n| {
            n.name != st.myself
                && Some(&n.name) != to
                && n.flags & (nodes::PFAIL | nodes::HANDSHAKE | nodes::NOADDR) == 0
                && !(n.link.is_none() && n.numslots() == 0)
        })
        .collect();
    candidates.shuffle(&mut rand::thread_rng());
    let mut gossip: Vec<Gossip> = candidates.into_iter().take(wanted).map(gossip_of).collect();
    gossip.extend(
        st.nodes
            .values()
            .filter(|n| {
                n.flags & nodes::PFAIL != 0 && n.flags & (nodes::HANDSHAKE | nodes::NOADDR) == 0
            })
            .map(gossip_of),
    );
    let hostname = Some(st.me().hostname.clone()).filter(|h| !h.is_empty());
    header(shared, st, opts, kind, Body::Ping { gossip, hostname })
}

/// Sends a PING/MEET on a node's outbound link, noting when.
fn send_ping(shared: &Shared, c: &Cluster, st: &mut State, opts: &Options, name: &Name, kind: u16) {
    let Some(link) = st.nodes.get(name).and_then(|n| n.link) else {
        return;
    };
    let msg = ping_message(shared, st, opts, kind, Some(name));
    c.links.send(link, message::encode(&msg));
    st.sent[kind as usize] += 1;
    if kind == message::PING {
        if let Some(n) = st.nodes.get_mut(name) {
            if n.ping_sent == 0 {
                n.ping_sent = now();
            }
        }
    }
}

/// Sends a message to every node with a link (clusterBroadcastMessage).
pub(super) fn broadcast(c: &Cluster, st: &mut State, msg: &Message) {
    let bytes = message::encode(msg);
    for n in st.nodes.values() {
        if let Some(l) = n.link {
            if n.flags & (nodes::MYSELF | nodes::HANDSHAKE) == 0 {
                c.links.send(l, bytes.clone());
            }
        }
    }
    let sent = st
        .nodes
        .values()
        .filter(|n| n.link.is_some() && n.flags & (nodes::MYSELF | nodes::HANDSHAKE) == 0)
        .count() as u64;
    st.sent[msg.kind as usize] += sent;
}

/// A PING now on a node's link (a master serving a manual failover).
pub(super) fn ping_now(shared: &Shared, c: &Cluster, st: &mut State, opts: &Options, name: &Name) {
    send_ping(shared, c, st, opts, name, message::PING);
}

/// MFSTART to our master (CLUSTER FAILOVER).
pub(super) fn send_mfstart(
    shared: &Shared,
    c: &Cluster,
    st: &mut State,
    opts: &Options,
    to: &Name,
) {
    let Some(link) = st.nodes.get(to).and_then(|n| n.link) else {
        return;
    };
    let m = header(shared, st, opts, message::MFSTART, Body::Other);
    c.links.send(link, message::encode(&m));
    st.sent[message::MFSTART as usize] += 1;
}

/// Redis's clusterBroadcastPong: a PONG to every connected node, or only
/// to the other replicas of our master (`local`).
pub(super) fn broadcast_pong(
    shared: &Shared,
    c: &Cluster,
    st: &mut State,
    opts: &Options,
    local: bool,
) {
    let master = st.me().slaveof;
    let targets: Vec<(Name, u64)> = st
        .nodes
        .values()
        .filter(|n| n.flags & (nodes::MYSELF | nodes::HANDSHAKE) == 0)
        .filter(|n| !local || (n.is_slave() && n.slaveof.is_some() && n.slaveof == master))
        .filter_map(|n| n.link.map(|l| (n.name, l)))
        .collect();
    for (name, link) in targets {
        let m = ping_message(shared, st, opts, message::PONG, Some(&name));
        c.links.send(link, message::encode(&m));
        st.sent[message::PONG as usize] += 1;
    }
}

/// PUBLISH (or SPUBLISH, to this shard only) reaches the other nodes.
pub fn propagate_publish(shared: &Shared, channel: &[u8], msg: &[u8], shard: bool) {
    let Some(c) = &shared.cluster else { return };
    let opts = Options::from_config(&shared.config());
    let mut st = c.state.write();
    let body = Body::Publish {
        channel: channel.to_vec(),
        message: msg.to_vec(),
    };
    let kind = if shard {
        message::PUBLISHSHARD
    } else {
        message::PUBLISH
    };
    let m = header(shared, &st, &opts, kind, body);
    if shard {
        let me = st.me();
        let master = if me.is_slave() {
            me.slaveof
        } else {
            Some(me.name)
        };
        let bytes = message::encode(&m);
        let targets: Vec<u64> = st
            .nodes
            .values()
            .filter(|n| {
                n.name != st.myself
                    && (Some(n.name) == master || (n.is_slave() && n.slaveof == master))
            })
            .filter_map(|n| n.link)
            .collect();
        for l in &targets {
            c.links.send(*l, bytes.clone());
        }
        st.sent[kind as usize] += targets.len() as u64;
    } else {
        broadcast(c, &mut st, &m);
    }
}

/// Applies one message (clusterProcessPacket). False: close the link.
fn process(shared: &Shared, c: &Cluster, link: &LinkInfo, m: Message) -> bool {
    let opts = Options::from_config(&shared.config());
    let now = now();
    let mut st = c.state.write();
    if (m.kind as usize) < super::MSG_TYPES {
        st.received[m.kind as usize] += 1;
    }
    let link_node: Option<Name> = st
        .nodes
        .values()
        .find(|n| {
            if link.inbound {
                n.inbound_link == Some(link.id)
            } else {
                n.link == Some(link.id)
            }
        })
        .map(|n| n.name);
    let in_handshake = |st: &State, n: &Name| {
        st.nodes
            .get(n)
            .is_some_and(|n| n.flags & nodes::HANDSHAKE != 0)
    };
    let mut sender = match link_node {
        Some(n) if !in_handshake(&st, &n) => Some(n),
        _ => st.nodes.contains_key(&m.sender).then_some(m.sender),
    };
    if let (Some(s), true, None) = (sender, link.inbound, link_node) {
        if let Some(n) = st.nodes.get_mut(&s) {
            n.inbound_link = Some(link.id);
            n.inbound_ctime = Some(now);
        }
    }
    if let Some(s) = sender {
        let n = st.nodes.get_mut(&s).expect("sender is known");
        n.data_received = now;
    }
    let sender_known = sender.filter(|s| !in_handshake(&st, s));
    if let Some(s) = sender_known {
        if m.current_epoch > st.current_epoch {
            st.current_epoch = m.current_epoch;
        }
        let n = st.nodes.get_mut(&s).expect("sender is known");
        if m.config_epoch > n.config_epoch {
            n.config_epoch = m.config_epoch;
            st.dirty = true;
        }
        let n = st.nodes.get_mut(&s).expect("sender is known");
        n.repl_offset = m.offset;
        // A replica running a manual failover learns its paused master's offset.
        if st.manual.end != 0
            && st.me().is_slave()
            && st.me().slaveof == Some(s)
            && m.mflags[0] & super::failover::FLAG0_PAUSED != 0
            && st.manual.master_offset.is_none()
        {
            st.manual.master_offset = Some(m.offset);
        }
    }
    match (m.kind, sender_known) {
        (message::FAILOVER_AUTH_REQUEST, Some(s)) => {
            super::failover::vote(shared, c, &mut st, &opts, s, &m, now);
            return true;
        }
        (message::FAILOVER_AUTH_ACK, Some(s)) => {
            super::failover::count_vote(&mut st, &s, m.current_epoch);
            return true;
        }
        (message::MFSTART, Some(s)) => {
            super::failover::manual_start(shared, c, &mut st, &opts, s);
            return true;
        }
        _ => {}
    }
    let is_ping = matches!(m.kind, message::PING | message::MEET);
    if is_ping {
        if (m.kind == message::MEET || st.me().ip.is_empty()) && opts.announce_ip.is_empty() {
            if let Some(local) = link.local {
                let ip = local.ip().to_string();
                if st.me().ip != ip {
                    tracing::warn!("IP address for this node updated to {ip}");
                    st.me_mut().ip = ip;
                    st.dirty = true;
                }
            }
        }
        if sender.is_none() && m.kind == message::MEET {
            let mut n = Node::new(nodes::random_name(), nodes::HANDSHAKE, now);
            n.ip = if m.myip.is_empty() {
                link.peer.map(|p| p.ip().to_string()).unwrap_or_default()
            } else {
                m.myip.clone()
            };
            n.port = m.port;
            n.pport = m.pport;
            n.cport = m.cport;
            st.nodes.insert(n.name, n);
            st.dirty = true;
            process_gossip(c, &mut st, &m, None, now);
        }
        let pong = ping_message(shared, &st, &opts, message::PONG, None);
        c.links.send(link.id, message::encode(&pong));
        st.sent[message::PONG as usize] += 1;
    }
    match &m.body {
        Body::Ping { hostname, .. } => {
            if !link.inbound {
                let Some(ln) = link_node else { return false };
                if in_handshake(&st, &ln) {
                    if let Some(s) = sender {
                        // Known already under its real name: drop the
                        // handshake node (and this link with it).
                        update_address(&mut st, &s, &m, link);
                        st.nodes.remove(&ln);
                        st.dirty = true;
                        return false;
                    }
                    // The handshake node gets its real name.
                    let mut n = st.nodes.remove(&ln).expect("link node is known");
                    tracing::debug!(
                        "Handshake with node {} completed.",
                        nodes::name_str(&m.sender)
                    );
                    n.name = m.sender;
                    n.flags &= !nodes::HANDSHAKE;
                    n.flags |= m.flags & (nodes::MASTER | nodes::SLAVE);
                    st.nodes.insert(n.name, n);
                    st.dirty = true;
                    sender = Some(m.sender);
                } else if ln != m.sender {
                    let n = st.nodes.get_mut(&ln).expect("link node is known");
                    n.flags |= nodes::NOADDR;
                    n.ip.clear();
                    n.port = 0;
                    n.cport = 0;
                    n.link = None;
                    n.link_ctime = None;
                    st.dirty = true;
                    return false;
                }
            }
            if let Some(s) = sender {
                let n = st.nodes.get_mut(&s).expect("sender is known");
                n.flags = (n.flags & !nodes::NOFAILOVER) | (m.flags & nodes::NOFAILOVER);
                if m.kind == message::PING && n.flags & nodes::HANDSHAKE == 0 {
                    update_address(&mut st, &s, &m, link);
                }
            }
            if !link.inbound && m.kind == message::PONG {
                if let Some(n) = st.nodes.get_mut(&m.sender) {
                    n.pong_received = now;
                    n.ping_sent = 0;
                    if n.flags & nodes::PFAIL != 0 {
                        n.flags &= !nodes::PFAIL;
                        st.dirty = true;
                    } else if n.flags & nodes::FAIL != 0 {
                        clear_failure_if_needed(&mut st, &m.sender, now, &opts);
                    }
                }
            }
            let Some(s) = sender else { return true };
            if st
                .nodes
                .get(&s)
                .is_some_and(|n| n.flags & nodes::HANDSHAKE != 0)
            {
                return true;
            }
            set_role(&mut st, &s, m.slaveof);
            let sender_master = {
                let n = &st.nodes[&s];
                if n.is_master() {
                    Some(s)
                } else {
                    n.slaveof
                }
            };
            let dirty_slots = sender_master
                .and_then(|sm| st.nodes.get(&sm))
                .is_some_and(|sm| sm.slots.0[..] != m.myslots[..]);
            if st.nodes[&s].is_master() && dirty_slots {
                update_slots_with(shared, &mut st, &s, m.config_epoch, &m.myslots[..]);
            }
            if dirty_slots {
                for j in 0..SLOTS {
                    if m.myslots[j / 8] & (1 << (j % 8)) == 0 {
                        continue;
                    }
                    let Some(owner) = st.slots[j] else { continue };
                    if owner == s {
                        continue;
                    }
                    let owner_epoch = st.nodes.get(&owner).map_or(0, |n| n.config_epoch);
                    if owner_epoch > m.config_epoch {
                        if let Some(l) = st.nodes.get(&s).and_then(|n| n.link) {
                            let o = &st.nodes[&owner];
                            let body = Body::Update {
                                config_epoch: o.config_epoch,
                                name: o.name,
                                slots: o.slots.0.clone(),
                            };
                            let upd = header(shared, &st, &opts, message::UPDATE, body);
                            c.links.send(l, message::encode(&upd));
                            st.sent[message::UPDATE as usize] += 1;
                        }
                        break;
                    }
                }
            }
            let me = st.myself;
            if st.me().is_master()
                && st.nodes[&s].is_master()
                && m.config_epoch == st.me().config_epoch
                && s > me
            {
                st.current_epoch += 1;
                let e = st.current_epoch;
                st.me_mut().config_epoch = e;
                st.dirty = true;
                tracing::warn!(
                    "WARNING: configEpoch collision with node {}. configEpoch set to {e}",
                    nodes::name_str(&s)
                );
            }
            process_gossip(c, &mut st, &m, Some(s), now);
            if let Some(n) = st.nodes.get_mut(&s) {
                let h = hostname.clone().unwrap_or_default();
                if n.hostname != h {
                    n.hostname = h;
                    st.dirty = true;
                }
            }
        }
        Body::Fail { about } => {
            if sender.is_some() {
                if let Some(n) = st.nodes.get_mut(about) {
                    if n.flags & (nodes::FAIL | nodes::MYSELF) == 0 {
                        tracing::info!(
                            "FAIL message received from {} about {}",
                            nodes::name_str(&m.sender),
                            nodes::name_str(about)
                        );
                        n.flags = (n.flags | nodes::FAIL) & !nodes::PFAIL;
                        n.fail_time = now;
                        st.dirty = true;
                    }
                }
            }
        }
        Body::Publish {
            channel,
            message: msg,
        } => {
            if sender.is_some() {
                drop(st);
                let limit = shared.settings().output_limits.pubsub;
                shared
                    .pubsub
                    .publish(channel, msg, m.kind == message::PUBLISHSHARD, &limit, now);
                return true;
            }
        }
        Body::Update {
            config_epoch,
            name,
            slots,
        } => {
            if sender.is_none() {
                return true;
            }
            let Some(n) = st.nodes.get_mut(name) else {
                return true;
            };
            if n.config_epoch >= *config_epoch {
                return true;
            }
            n.config_epoch = *config_epoch;
            let name = *name;
            if st.nodes[&name].is_slave() {
                st.set_role(&name, None);
            }
            st.dirty = true;
            update_slots_with(shared, &mut st, &name, *config_epoch, &slots[..]);
        }
        Body::Other => {}
    }
    true
}

/// Redis's nodeUpdateAddressIfNeeded: a known node that now talks from
/// another address.
fn update_address(st: &mut State, name: &Name, m: &Message, link: &LinkInfo) {
    let ip = if m.myip.is_empty() {
        match link.peer {
            Some(p) => p.ip().to_string(),
            None => return,
        }
    } else {
        m.myip.clone()
    };
    if *name == st.myself {
        return;
    }
    let Some(n) = st.nodes.get_mut(name) else {
        return;
    };
    if n.ip == ip && n.port == m.port && n.pport == m.pport && n.cport == m.cport {
        return;
    }
    n.ip = ip;
    n.port = m.port;
    n.pport = m.pport;
    n.cport = m.cport;
    n.flags &= !nodes::NOADDR;
    st.dirty = true;
}

/// A node's role as it announces it: master, or replica of `slaveof`.
fn set_role(st: &mut State, s: &Name, slaveof: Option<Name>) {
    let n = st.nodes.get(s).expect("sender is known");
    if slaveof.is_some() && n.is_master() {
        // A master turned replica: its slots are nobody's until claimed.
        for j in 0..SLOTS {
            if st.slots[j] == Some(*s) {
                st.del_slot(j);
            }
        }
        st.dirty = true;
    }
    let n = st.nodes.get(s).expect("sender is known");
    if n.is_slave() != slaveof.is_some() || n.slaveof != slaveof {
        st.set_role(s, slaveof);
        st.dirty = true;
    }
}

/// Redis's clusterUpdateSlotsConfigWith: slots a master claims with a newer
/// config epoch than their owner's become its. When our master (or we)
/// lost its last slot to the sender, we become the sender's replica.
fn update_slots_with(shared: &Shared, st: &mut State, sender: &Name, epoch: u64, slots: &[u8]) {
    let me = st.myself;
    if *sender == me {
        tracing::warn!("Discarding UPDATE message about myself.");
        return;
    }
    let cur_master = if st.me().is_master() {
        Some(me)
    } else {
        st.me().slaveof
    };
    let mut lost = 0;
    let mut sender_slots = 0;
    let mut migrated_ours = 0;
    let mut dirty: Vec<u16> = Vec::new();
    for j in 0..SLOTS {
        if slots[j / 8] & (1 << (j % 8)) == 0 {
            continue;
        }
        sender_slots += 1;
        if st.slots[j] == Some(*sender) || st.importing.contains_key(&(j as u16)) {
            continue;
        }
        let owner_epoch = st.slots[j]
            .and_then(|o| st.nodes.get(&o))
            .map(|o| o.config_epoch);
        if owner_epoch.is_none_or(|e| e < epoch) {
            if st.slots[j] == Some(me) {
                lost += 1;
                if shared.engine.count_keys_in_slot(j as u16).unwrap_or(0) > 0 {
                    dirty.push(j as u16);
                }
            }
            if st.slots[j].is_some() && st.slots[j] == cur_master {
                migrated_ours += 1;
            }
            st.add_slot(j, *sender);
            st.dirty = true;
        }
    }
    if lost > 0 {
        tracing::warn!(
            "Configuration change: {lost} of my slots now belong to {}",
            nodes::name_str(sender)
        );
    }
    let cur_empty = cur_master
        .and_then(|m| st.nodes.get(&m))
        .is_some_and(|m| m.numslots() == 0);
    let allow_migration = super::allow_replica_migration(&shared.config());
    if migrated_ours > 0
        && cur_empty
        && sender_slots > 0
        && (allow_migration || sender_slots == migrated_ours)
    {
        tracing::warn!(
            "Configuration change detected. Reconfiguring myself as a replica of {}",
            nodes::name_str(sender)
        );
        super::failover::set_master(shared, st, *sender);
    } else if let Some(grand) = st
        .me()
        .slaveof
        .and_then(|m| st.nodes.get(&m))
        .and_then(|m| m.slaveof)
        .filter(|g| *g != me)
    {
        // Our master became a replica: follow its master.
        super::failover::set_master(shared, st, grand);
    } else {
        // Still a master: the keys of the slots we lost go (they are the
        // new owner's now), so that keys and slots agree.
        for slot in dirty {
            del_keys_in_slot(shared, slot);
        }
    }
}

/// Redis's delKeysInSlot: every key of a slot deleted, each propagated as a
/// DEL to the AOF and the replicas, as Redis 7.2 does (7.0 deletes without
/// propagating, so its replicas keep the keys and its AOF brings them back
/// at the next start). No keyspace event: the keys moved, they were not
/// deleted (7.2 tells modules only).
pub fn del_keys_in_slot(shared: &Shared, slot: u16) -> usize {
    let mut deleted = 0;
    loop {
        let keys = shared.engine.keys_in_slot(slot, 1000).unwrap_or_default();
        if keys.is_empty() {
            break;
        }
        let before = deleted;
        for key in &keys {
            let (gone, _) = shared.engine.write1(0, key, |tx| {
                let gone = tx.remove(0, key).is_some();
                if gone {
                    tx.log(0, &[b"DEL", key]);
                }
                gone
            });
            deleted += usize::from(gone);
        }
        if deleted == before {
            break; // nothing left to delete (only expired entries indexed)
        }
    }
    if deleted > 0 {
        tracing::warn!("Deleted {deleted} keys of slot {slot}, now served by another node");
    }
    deleted
}

/// Gossip about other nodes (clusterProcessGossipSection): failure reports
/// from masters, fresher pong times, and nodes not known yet.
fn process_gossip(c: &Cluster, st: &mut State, m: &Message, sender: Option<Name>, now: u64) {
    let Body::Ping { gossip, .. } = &m.body else {
        return;
    };
    let sender_is_master = sender
        .and_then(|s| st.nodes.get(&s))
        .is_some_and(|n| n.is_master());
    for g in gossip {
        if st.nodes.contains_key(&g.name) {
            if let (Some(s), true) = (sender, sender_is_master) {
                if g.name != st.myself {
                    let n = st.nodes.get_mut(&g.name).expect("known");
                    if g.flags & (nodes::FAIL | nodes::PFAIL) != 0 {
                        match n.fail_reports.iter_mut().find(|(r, _)| *r == s) {
                            Some(r) => r.1 = now,
                            None => n.fail_reports.push((s, now)),
                        }
                        mark_failing_if_needed(c, st, &g.name, now);
                    } else {
                        n.fail_reports.retain(|(r, _)| *r != s);
                    }
                }
            }
            let n = st.nodes.get_mut(&g.name).expect("known");
            if g.flags & (nodes::FAIL | nodes::PFAIL) == 0
                && n.ping_sent == 0
                && n.fail_reports.is_empty()
            {
                let pong = g.pong_received as u64 * 1000;
                if pong <= now + 500 && pong > n.pong_received {
                    n.pong_received = pong;
                }
            }
            if n.flags & (nodes::FAIL | nodes::PFAIL) != 0
                && g.flags & (nodes::NOADDR | nodes::FAIL | nodes::PFAIL) == 0
                && (!n.ip.eq_ignore_ascii_case(&g.ip) || n.port != g.port || n.cport != g.cport)
            {
                if let Some(l) = n.link.take() {
                    c.links.close(l);
                }
                n.ip = g.ip.clone();
                n.port = g.port;
                n.pport = g.pport;
                n.cport = g.cport;
                n.flags &= !nodes::NOADDR;
            }
        } else if sender.is_some()
            && g.flags & nodes::NOADDR == 0
            && st.blacklist.get(&g.name).is_none_or(|t| *t <= now)
        {
            let mut n = Node::new(g.name, g.flags, now);
            n.ip = g.ip.clone();
            n.port = g.port;
            n.pport = g.pport;
            n.cport = g.cport;
            // Flags about the link or ourselves do not carry over.
            n.flags &= !(nodes::MYSELF | nodes::MEET | nodes::HANDSHAKE);
            st.nodes.insert(n.name, n);
            st.dirty = true;
        }
    }
}

/// Redis's markNodeAsFailingIfNeeded: PFAIL becomes FAIL when a majority of
/// masters report it, and everyone is told.
fn mark_failing_if_needed(c: &Cluster, st: &mut State, name: &Name, now: u64) {
    let needed = st.size / 2 + 1;
    let Some(n) = st.nodes.get(name) else { return };
    if n.flags & nodes::PFAIL == 0 || n.flags & nodes::FAIL != 0 {
        return;
    }
    let mut failures = n.fail_reports.len();
    if st.me().is_master() {
        failures += 1;
    }
    if failures < needed {
        return;
    }
    tracing::info!(
        "Marking node {} as failing (quorum reached).",
        nodes::name_str(name)
    );
    let n = st.nodes.get_mut(name).expect("known");
    n.flags = (n.flags & !nodes::PFAIL) | nodes::FAIL;
    n.fail_time = now;
    st.dirty = true;
    let _ = c;
    st.pending_fail.push(*name);
}

/// Redis's clearNodeFailureIfNeeded.
fn clear_failure_if_needed(st: &mut State, name: &Name, now: u64, opts: &Options) {
    let n = st.nodes.get_mut(name).expect("known");
    if n.is_slave() || n.numslots() == 0 {
        n.flags &= !nodes::FAIL;
        st.dirty = true;
        return;
    }
    if now.saturating_sub(n.fail_time) > opts.node_timeout_ms * FAIL_UNDO_TIME_MULT {
        n.flags &= !nodes::FAIL;
        st.dirty = true;
    }
}

/// clusterCron, ten times a second.
async fn cron(shared: Arc<Shared>) {
    let cluster = shared.cluster.clone().expect("cluster mode");
    let mut iteration: u64 = 0;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = cluster.bus_wake.notified() => {}
        }
        iteration += 1;
        let opts = Options::from_config(&shared.config());
        let now = now();
        let timeout = opts.node_timeout_ms;
        let mut connect = Vec::new();
        let announced = opts.announced_ports(&shared.settings(), cluster.cport);
        {
            let mut st = cluster.state.write();
            let me = st.me_mut();
            (me.port, me.pport, me.cport) = announced;
            let handshake_timeout = timeout.max(1000);
            let expired: Vec<Name> = st
                .nodes
                .values()
                .filter(|n| {
                    n.flags & nodes::HANDSHAKE != 0
                        && now.saturating_sub(n.ctime) > handshake_timeout
                })
                .map(|n| n.name)
                .collect();
            for n in expired {
                if let Some(l) = st.nodes.remove(&n).and_then(|n| n.link) {
                    cluster.links.close(l);
                }
                st.dirty = true;
            }
            let me = st.myself;
            for n in st.nodes.values_mut() {
                if n.name == me
                    || n.flags & nodes::NOADDR != 0
                    || n.link.is_some()
                    || n.ip.is_empty()
                {
                    continue;
                }
                let (id, rx) = cluster.links.add();
                n.link = Some(id);
                connect.push((n.name, n.ip.clone(), n.cport, id, rx));
            }
            if iteration.is_multiple_of(10) {
                // Ping the node with the oldest pong among five random ones.
                use rand::seq::IteratorRandom;
                let pick = st
                    .nodes
                    .values()
                    .filter(|n| {
                        n.link_ctime.is_some()
                            && n.ping_sent == 0
                            && n.flags & (nodes::MYSELF | nodes::HANDSHAKE) == 0
                    })
                    .choose_multiple(&mut rand::thread_rng(), 5)
                    .into_iter()
                    .min_by_key(|n| n.pong_received)
                    .map(|n| n.name);
                if let Some(p) = pick {
                    send_ping(&shared, &cluster, &mut st, &opts, &p, message::PING);
                }
            }
            let names: Vec<Name> = st.nodes.keys().copied().collect();
            for name in names {
                let n = &st.nodes[&name];
                if n.flags & (nodes::MYSELF | nodes::NOADDR | nodes::HANDSHAKE) != 0 {
                    continue;
                }
                let (ping_sent, pong, data, link, link_ctime) = (
                    n.ping_sent,
                    n.pong_received,
                    n.data_received,
                    n.link,
                    n.link_ctime,
                );
                // A link that stopped answering is made again.
                if let (Some(l), Some(t)) = (link, link_ctime) {
                    if now.saturating_sub(t) > timeout
                        && ping_sent != 0
                        && now - ping_sent > timeout / 2
                        && now.saturating_sub(data) > timeout / 2
                    {
                        cluster.links.close(l);
                    }
                }
                if link_ctime.is_some() && ping_sent == 0 && now.saturating_sub(pong) > timeout / 2
                {
                    send_ping(&shared, &cluster, &mut st, &opts, &name, message::PING);
                    continue;
                }
                if ping_sent == 0 {
                    continue;
                }
                let delay = (now - ping_sent.min(now)).min(now.saturating_sub(data));
                if delay > timeout {
                    let n = st.nodes.get_mut(&name).expect("known");
                    if n.flags & (nodes::PFAIL | nodes::FAIL) == 0 {
                        tracing::debug!("*** NODE {} possibly failing", nodes::name_str(&name));
                        n.flags |= nodes::PFAIL;
                        st.dirty = true;
                    }
                }
            }
            let failing: Vec<Name> = std::mem::take(&mut st.pending_fail);
            for about in failing {
                let m = header(&shared, &st, &opts, message::FAIL, Body::Fail { about });
                broadcast(&cluster, &mut st, &m);
            }
            for n in st.nodes.values_mut() {
                let validity = timeout * super::commands::FAIL_REPORT_VALIDITY_MULT;
                n.fail_reports
                    .retain(|(_, t)| now.saturating_sub(*t) <= validity);
            }
            let nofailover = if opts.replica_no_failover {
                nodes::NOFAILOVER
            } else {
                0
            };
            if st.me().flags & nodes::NOFAILOVER != nofailover {
                let me = st.me_mut();
                me.flags = (me.flags & !nodes::NOFAILOVER) | nofailover;
                st.dirty = true;
            }
            super::failover::manual_cron(&shared, &mut st, now);
            if st.me().is_master() && st.manual.end != 0 {
                // A master serving a manual failover pings its replica
                // continuously: each PING carries the paused offset.
                if let Some(r) = st.manual.slave {
                    send_ping(&shared, &cluster, &mut st, &opts, &r, message::PING);
                }
            }
            if st.me().is_slave() {
                super::failover::handle_replica_failover(&shared, &cluster, &mut st, &opts, now);
                super::failover::handle_replica_migration(&shared, &mut st, &opts, now);
            }
            st.update_state(now, &opts);
        }
        super::failover::sync_replication(&shared, &cluster);
        super::redirect::redirect_blocked(&shared, &cluster);
        for (name, ip, cport, id, rx) in connect {
            tokio::spawn(connect_link(shared.clone(), name, ip, cport, id, rx));
        }
        cluster.save_if_dirty();
    }
}

/// Opens an outbound link and sends its first PING (or MEET).
async fn connect_link(
    shared: Arc<Shared>,
    name: Name,
    ip: String,
    cport: u16,
    id: u64,
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    let cluster = shared.cluster.clone().expect("cluster mode");
    let timeout = Duration::from_millis(
        Options::from_config(&shared.config())
            .node_timeout_ms
            .max(1000),
    );
    let connected =
        match tokio::time::timeout(timeout, TcpStream::connect((ip.as_str(), cport))).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                match s.peer_addr() {
                    Ok(peer) => secure(&shared, s, peer, false).await,
                    Err(_) => None,
                }
            }
            _ => None,
        };
    let sock = match connected {
        Some(s) => s,
        None => {
            tracing::debug!(
                "Connection with Node {} at {ip}:{cport} failed",
                nodes::name_str(&name)
            );
            cluster.links.close(id);
            forget_link(&cluster, id);
            // Failure detection counts from a PING: a node we cannot reach
            // counts as pinged now (as Redis does on a failed connect).
            if let Some(n) = cluster.state.write().nodes.get_mut(&name) {
                if n.ping_sent == 0 {
                    n.ping_sent = now();
                }
            }
            return;
        }
    };
    {
        let opts = Options::from_config(&shared.config());
        let mut st = cluster.state.write();
        let current = st
            .nodes
            .values()
            .find(|n| n.link == Some(id))
            .map(|n| n.name);
        let Some(current) = current else {
            cluster.links.close(id);
            return;
        };
        let n = st.nodes.get_mut(&current).expect("known");
        n.link_ctime = Some(now());
        let meet = n.flags & nodes::MEET != 0;
        let old_ping = n.ping_sent;
        n.flags &= !nodes::MEET;
        send_ping(
            &shared,
            &cluster,
            &mut st,
            &opts,
            &current,
            if meet { message::MEET } else { message::PING },
        );
        let n = st.nodes.get_mut(&current).expect("known");
        n.ping_sent = if old_ping != 0 { old_ping } else { now() };
    }
    serve_link(shared, sock, id, false, rx).await;
}
