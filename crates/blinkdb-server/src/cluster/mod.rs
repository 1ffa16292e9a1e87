//! Redis Cluster: the slot table, the nodes this node knows, nodes.conf,
//! client redirections (redirect.rs), CLUSTER commands (commands.rs) and
//! the cluster bus (bus.rs, message.rs). Absent (`Shared::cluster` is None)
//! unless `cluster-enabled yes`: nothing here runs then.

pub mod bus;
pub mod commands;
pub mod config_file;
pub mod failover;
mod link;
pub mod message;
pub mod nodes;
pub mod redirect;
pub mod slots;

use nodes::{Name, Node};
use parking_lot::RwLock;
use slots::SLOTS;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Redis's CLUSTER_WRITABLE_DELAY: a master that starts with the cluster
/// failed waits this long before it declares it ok.
const WRITABLE_DELAY_MS: u64 = 2000;
const MIN_REJOIN_DELAY_MS: u64 = 500;
const MAX_REJOIN_DELAY_MS: u64 = 5000;
/// How long a forgotten node is kept out (Redis's CLUSTER_BLACKLIST_TTL).
pub const BLACKLIST_TTL_MS: u64 = 60_000;

/// Message counters by bus message type (CLUSTER INFO).
pub const MSG_TYPES: usize = 11;
pub const MSG_TYPE_NAMES: [&str; MSG_TYPES] = [
    "ping",
    "pong",
    "meet",
    "fail",
    "publish",
    "auth-req",
    "auth-ack",
    "update",
    "mfstart",
    "module",
    "publishshard",
];

pub struct State {
    pub myself: Name,
    pub nodes: HashMap<Name, Node>,
    /// The owner of each slot.
    pub slots: Vec<Option<Name>>,
    pub migrating: BTreeMap<u16, Name>,
    pub importing: BTreeMap<u16, Name>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    pub ok: bool,
    /// Masters serving at least one slot.
    pub size: usize,
    pub sent: [u64; MSG_TYPES],
    pub received: [u64; MSG_TYPES],
    /// Forgotten nodes and until when gossip must not bring them back.
    pub blacklist: HashMap<Name, u64>,
    first_update_ms: u64,
    among_minority_ms: u64,
    /// nodes.conf is out of date.
    pub dirty: bool,
    /// Nodes just marked FAIL, for the cron to tell everyone.
    pub pending_fail: Vec<Name>,
    /// This replica's election (failover.rs).
    pub election: failover::Election,
    /// A manual failover in progress (failover.rs).
    pub manual: failover::Manual,
    /// Tell every node our new configuration at once (after a failover).
    pub pong_all: bool,
}

impl State {
    fn new(myself: Name, now: u64) -> State {
        let mut nodes = HashMap::new();
        nodes.insert(
            myself,
            Node::new(myself, nodes::MYSELF | nodes::MASTER, now),
        );
        State {
            myself,
            nodes,
            slots: vec![None; SLOTS],
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            current_epoch: 0,
            last_vote_epoch: 0,
            ok: false,
            size: 0,
            sent: [0; MSG_TYPES],
            received: [0; MSG_TYPES],
            blacklist: HashMap::new(),
            first_update_ms: 0,
            among_minority_ms: 0,
            dirty: true,
            pending_fail: Vec::new(),
            election: Default::default(),
            manual: Default::default(),
            pong_all: false,
        }
    }

    pub fn me(&self) -> &Node {
        &self.nodes[&self.myself]
    }

    pub fn me_mut(&mut self) -> &mut Node {
        self.nodes.get_mut(&self.myself).expect("myself is known")
    }

    pub fn node(&self, name: &[u8]) -> Option<&Node> {
        self.nodes.get(&nodes::parse_name(name)?)
    }

    pub fn add_slot(&mut self, slot: usize, owner: Name) {
        if let Some(prev) = self.slots[slot].take() {
            if let Some(n) = self.nodes.get_mut(&prev) {
                n.slots.set(slot, false);
            }
        }
        // A master's first slot makes it a replica-migration target when some
        // master has replicas (Redis's clusterNodeSetSlotBit). The cheap tests
        // go first: this runs for every slot of ADDSLOTS, UPDATE and a load.
        let target = self
            .nodes
            .get(&owner)
            .is_some_and(|n| n.flags & nodes::MIGRATE_TO == 0 && !n.slots.get(slot))
            && self.masters_have_replicas()
            && self.nodes[&owner].slots.is_empty();
        if let Some(n) = self.nodes.get_mut(&owner) {
            n.slots.set(slot, true);
            if target {
                n.flags |= nodes::MIGRATE_TO;
            }
            self.slots[slot] = Some(owner);
        }
    }

    fn masters_have_replicas(&self) -> bool {
        self.nodes.values().any(|n| {
            n.is_slave()
                && n.slaveof
                    .and_then(|m| self.nodes.get(&m))
                    .is_some_and(|m| m.is_master())
        })
    }

    /// Makes `name` a master (`slaveof` None) or a replica of `slaveof`, with
    /// Redis's MIGRATE_TO bookkeeping, which marks the masters that replica
    /// migration may fill: one that has or had a replica, or a replica promoted
    /// over a master that had some (clusterNodeAddSlave, clusterNodeRemoveSlave,
    /// clusterSetNodeAsMaster).
    pub fn set_role(&mut self, name: &Name, slaveof: Option<Name>) {
        let me = self.myself;
        let Some(n) = self.nodes.get_mut(name) else {
            return;
        };
        let old = n.slaveof.filter(|_| n.is_slave());
        match slaveof {
            None => {
                n.flags = (n.flags & !nodes::SLAVE) | nodes::MASTER;
                if old.is_some() && *name != me {
                    n.flags |= nodes::MIGRATE_TO;
                }
            }
            Some(_) => {
                if n.is_master() {
                    n.flags = (n.flags & !(nodes::MASTER | nodes::MIGRATE_TO)) | nodes::SLAVE;
                }
            }
        }
        if n.slaveof != slaveof {
            n.slaveof = slaveof;
            self.dirty = true;
        }
        if let Some(m) = slaveof.and_then(|m| self.nodes.get_mut(&m)) {
            m.flags |= nodes::MIGRATE_TO;
        }
        if let Some(o) = old.filter(|o| Some(*o) != slaveof) {
            self.drop_target_without_replicas(&o);
        }
    }

    /// A master left with no replica listed is no migration target any more.
    fn drop_target_without_replicas(&mut self, master: &Name) {
        if self.replicas_of(master).is_empty() {
            if let Some(m) = self.nodes.get_mut(master) {
                m.flags &= !nodes::MIGRATE_TO;
            }
        }
    }

    pub fn del_slot(&mut self, slot: usize) {
        if let Some(prev) = self.slots[slot].take() {
            if let Some(n) = self.nodes.get_mut(&prev) {
                n.slots.set(slot, false);
            }
        }
    }

    /// The config epoch a node shows: a replica shows its master's.
    pub fn shown_epoch(&self, n: &Node) -> u64 {
        match (&n.slaveof, n.is_slave()) {
            (Some(m), true) => self.nodes.get(m).map_or(n.config_epoch, |m| m.config_epoch),
            _ => n.config_epoch,
        }
    }

    /// One node's CLUSTER NODES line (without the newline); `plaintext`:
    /// for a plain client of a TLS cluster (`Node::client_port`).
    pub fn describe(&self, n: &Node, plaintext: bool) -> String {
        let mut line = n.describe_head(self.shown_epoch(n), plaintext);
        for (start, end) in n.slots.ranges() {
            if start == end {
                line.push_str(&format!(" {start}"));
            } else {
                line.push_str(&format!(" {start}-{end}"));
            }
        }
        if n.name == self.myself {
            // Redis lists a slot once, migrating first.
            let mut open: BTreeMap<u16, String> = BTreeMap::new();
            for (s, to) in &self.importing {
                open.insert(*s, format!(" [{s}-<-{}]", nodes::name_str(to)));
            }
            for (s, to) in &self.migrating {
                open.insert(*s, format!(" [{s}->-{}]", nodes::name_str(to)));
            }
            open.values().for_each(|t| line.push_str(t));
        }
        line
    }

    /// CLUSTER NODES (or nodes.conf without `vars`), skipping nodes with any
    /// of the `skip` flags.
    pub fn describe_all(&self, skip: u16, plaintext: bool) -> String {
        let mut out = String::new();
        // By name, so nodes.conf and CLUSTER NODES do not reorder between writes.
        let mut nodes: Vec<&Node> = self.nodes.values().collect();
        nodes.sort_by_key(|n| n.name);
        for n in nodes {
            if n.flags & skip != 0 {
                continue;
            }
            out.push_str(&self.describe(n, plaintext));
            out.push('\n');
        }
        out
    }

    /// The replicas of a master, as known.
    pub fn replicas_of(&self, master: &Name) -> Vec<&Node> {
        self.nodes
            .values()
            .filter(|n| n.is_slave() && n.slaveof.as_ref() == Some(master))
            .collect()
    }

    /// Redis's clusterUpdateState: ok when every slot is served (if
    /// `require_full_coverage`) by a node not failed, and a majority of
    /// slot-serving masters is reachable.
    pub fn update_state(&mut self, now: u64, opts: &Options) {
        if self.first_update_ms == 0 {
            self.first_update_ms = now;
        }
        if self.me().is_master() && !self.ok && now - self.first_update_ms < WRITABLE_DELAY_MS {
            return;
        }
        let mut ok = true;
        if opts.require_full_coverage {
            // Every slot claimed by a node not failed: the owner table and
            // the nodes' bitmaps change together (add_slot, del_slot), so
            // the union of those bitmaps answers a word at a time.
            let mut served = slots::SlotBits::default();
            for n in self.nodes.values().filter(|n| !n.failed()) {
                served.union_with(&n.slots);
            }
            ok = served.all();
        }
        let mut size = 0;
        let mut reachable = 0;
        for n in self.nodes.values() {
            if n.is_master() && n.numslots() > 0 {
                size += 1;
                if n.flags & (nodes::FAIL | nodes::PFAIL) == 0 {
                    reachable += 1;
                }
            }
        }
        self.size = size;
        if reachable < size / 2 + 1 {
            ok = false;
            self.among_minority_ms = now;
        }
        if ok != self.ok {
            let delay = opts
                .node_timeout_ms
                .clamp(MIN_REJOIN_DELAY_MS, MAX_REJOIN_DELAY_MS);
            if ok && self.me().is_master() && now - self.among_minority_ms < delay {
                return;
            }
            tracing::warn!("Cluster state changed: {}", if ok { "ok" } else { "fail" });
            self.ok = ok;
        }
    }

    /// Redis's clusterBumpConfigEpochWithoutConsensus.
    pub fn bump_epoch_without_consensus(&mut self) -> bool {
        let max = self
            .nodes
            .values()
            .map(|n| n.config_epoch)
            .max()
            .unwrap_or(0);
        let mine = self.me().config_epoch;
        if mine == 0 || mine != max {
            self.current_epoch += 1;
            let e = self.current_epoch;
            self.me_mut().config_epoch = e;
            self.dirty = true;
            tracing::warn!("New configEpoch set to {e}");
            true
        } else {
            false
        }
    }

    pub fn forget(&mut self, name: &Name, now: u64) {
        for s in 0..SLOTS {
            if self.slots[s] == Some(*name) {
                self.del_slot(s);
            }
        }
        self.migrating.retain(|_, n| n != name);
        self.importing.retain(|_, n| n != name);
        for n in self.nodes.values_mut() {
            n.fail_reports.retain(|(r, _)| r != name);
            if n.slaveof == Some(*name) {
                n.slaveof = None;
            }
        }
        let master = self.nodes.remove(name).and_then(|n| n.slaveof);
        if let Some(m) = master {
            self.drop_target_without_replicas(&m);
        }
        self.blacklist.insert(*name, now + BLACKLIST_TTL_MS);
        self.dirty = true;
    }
}

/// The cluster options (read from the configuration when needed, so CONFIG
/// SET applies at once).
#[derive(Clone, Debug)]
pub struct Options {
    pub node_timeout_ms: u64,
    pub require_full_coverage: bool,
    pub allow_reads_when_down: bool,
    pub allow_pubsubshard_when_down: bool,
    pub announce_ip: String,
    pub announce_port: u16,
    pub announce_bus_port: u16,
    pub announce_tls_port: u16,
    pub replica_validity_factor: u64,
    pub replica_no_failover: bool,
    pub repl_ping_period_ms: u64,
    pub migration_barrier: usize,
    pub allow_replica_migration: bool,
}

impl Options {
    /// The data, plaintext and bus ports this node announces (Redis's
    /// deriveAnnouncedPorts): with tls-cluster yes the data port is the TLS
    /// one and the plaintext port goes beside it (pport), so clients of
    /// either kind can be sent to the node; cluster-announce-*port, where
    /// set, replace the ports it serves on. The bus cron applies them, so
    /// CONFIG SET of any of them, or of `port`, reaches the other nodes.
    pub fn announced_ports(&self, s: &crate::config::Settings, bus_port: u16) -> (u16, u16, u16) {
        let (mut port, mut pport) = if s.tls.cluster {
            (s.tls_port, s.port)
        } else {
            (s.port, 0)
        };
        if s.tls.cluster && self.announce_tls_port != 0 {
            (port, pport) = (self.announce_tls_port, self.announce_port);
        } else if self.announce_port != 0 {
            port = self.announce_port;
        }
        let cport = match self.announce_bus_port {
            0 => bus_port,
            p => p,
        };
        (port, pport, cport)
    }

    pub fn from_config(c: &crate::config::Config) -> Options {
        let int = |n: &str| c.get(n).parse::<i64>().unwrap_or(0);
        Options {
            node_timeout_ms: int("cluster-node-timeout").max(0) as u64,
            require_full_coverage: c.get("cluster-require-full-coverage") == "yes",
            allow_reads_when_down: c.get("cluster-allow-reads-when-down") == "yes",
            allow_pubsubshard_when_down: c.get("cluster-allow-pubsubshard-when-down") == "yes",
            announce_ip: c.get("cluster-announce-ip").to_string(),
            announce_port: int("cluster-announce-port") as u16,
            announce_bus_port: int("cluster-announce-bus-port") as u16,
            announce_tls_port: int("cluster-announce-tls-port") as u16,
            replica_validity_factor: int("cluster-replica-validity-factor").max(0) as u64,
            replica_no_failover: c.get("cluster-replica-no-failover") == "yes",
            repl_ping_period_ms: int("repl-ping-replica-period").max(0) as u64 * 1000,
            migration_barrier: int("cluster-migration-barrier").max(0) as usize,
            allow_replica_migration: allow_replica_migration(c),
        }
    }
}

/// `cluster-allow-replica-migration`: also read alone where SETSLOT and UPDATE
/// decide whether a master left without slots follows their new owner.
pub fn allow_replica_migration(c: &crate::config::Config) -> bool {
    c.get("cluster-allow-replica-migration") == "yes"
}

pub struct Cluster {
    pub state: RwLock<State>,
    /// nodes.conf.
    pub path: PathBuf,
    /// The bus port this node listens on (the data port is `port`'s, which
    /// CONFIG SET may change).
    pub cport: u16,
    /// Wakes the bus (a MEET to start, a broadcast to send).
    pub bus_wake: tokio::sync::Notify,
    pub links: bus::Links,
}

impl Cluster {
    /// Loads nodes.conf, or starts a new node (and writes the file).
    pub fn open(
        config: &crate::config::Config,
        settings: &crate::config::Settings,
    ) -> Result<Cluster, String> {
        let file = config.get("cluster-config-file");
        let path = settings.dir.join(file);
        // The bus port defaults to the data port's + 10000: the TLS one's
        // when the bus is TLS, as Redis's.
        let port = if settings.tls.cluster {
            settings.tls_port
        } else {
            settings.port
        };
        let cport = match config.get("cluster-port").parse::<u16>().unwrap_or(0) {
            0 => port.wrapping_add(10000),
            p => p,
        };
        let now = blinkdb_engine::now_ms();
        let opts = Options::from_config(config);
        let mut state = match config_file::load(&path, now)? {
            Some(state) => state,
            None => {
                let name = nodes::random_name();
                tracing::info!(
                    "No cluster configuration found, I'm {}",
                    nodes::name_str(&name)
                );
                State::new(name, now)
            }
        };
        {
            let me = state.me_mut();
            (me.port, me.pport, me.cport) = opts.announced_ports(settings, cport);
            if !opts.announce_ip.is_empty() {
                me.ip = opts.announce_ip.clone();
            }
        }
        state.update_state(now, &opts);
        let cluster = Cluster {
            state: RwLock::new(state),
            path,
            cport,
            bus_wake: tokio::sync::Notify::new(),
            links: bus::Links::default(),
        };
        cluster
            .save(true)
            .map_err(|e| format!("Fatal: can't update cluster config file: {e}"))?;
        Ok(cluster)
    }

    /// Writes nodes.conf now (`config_file::write`: how each kind of save
    /// survives a crash).
    pub fn save(&self, fsync: bool) -> std::io::Result<()> {
        let text = {
            let mut st = self.state.write();
            st.dirty = false;
            config_file::render(&st)
        };
        config_file::write(&self.path, &text, fsync)
    }

    /// Saves nodes.conf if a change left it out of date.
    pub fn save_if_dirty(&self) {
        if self.state.read().dirty {
            if let Err(e) = self.save(true) {
                tracing::warn!("Fatal: can't update cluster config file: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::nodes::{self, Node};
    use super::State;

    fn name(c: u8) -> nodes::Name {
        [c; 40]
    }

    /// Redis's MIGRATE_TO bookkeeping: which masters replica migration may fill.
    #[test]
    fn migrate_to_follows_replicas_and_promotions() {
        let (me, a, b, r) = (name(b'0'), name(b'a'), name(b'b'), name(b'r'));
        let mut st = State::new(me, 0);
        for n in [a, b, r] {
            st.nodes.insert(n, Node::new(n, nodes::MASTER, 0));
        }
        let target = |st: &State, n| st.nodes[&n].flags & nodes::MIGRATE_TO != 0;
        st.add_slot(0, a);
        assert!(!target(&st, a), "no master has replicas yet");
        st.set_role(&r, Some(a));
        assert!(target(&st, a) && st.nodes[&r].is_slave());
        st.add_slot(1, b);
        assert!(target(&st, b), "first slot while a master has replicas");
        st.set_role(&r, Some(b));
        assert!(!target(&st, a), "its last replica left");
        // The replica promoted over its master is a target; myself never is.
        st.set_role(&r, None);
        assert!(target(&st, r) && st.nodes[&r].is_master());
        st.set_role(&me, Some(b));
        st.set_role(&me, None);
        assert!(!target(&st, me));
        // A replica forgotten: its master is no target any more.
        st.set_role(&r, Some(a));
        assert!(target(&st, a));
        st.forget(&r, 0);
        assert!(!target(&st, a));
    }
}
