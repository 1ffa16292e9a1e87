//! The clients registry: every connected client's `ClientInfo` by id, the
//! next id, and how many are connected (CLIENT LIST/KILL, INFO clients,
//! maxclients, client eviction, the output limits).

use crate::client::ClientInfo;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

pub struct Registry {
    clients: Mutex<HashMap<u64, Arc<ClientInfo>>>,
    next_id: AtomicU64,
    connected: AtomicUsize,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            clients: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            connected: AtomicUsize::new(0),
        }
    }
}

/// The memory the clients hold (`ClientInfo::memory`): normal and pub/sub
/// clients and our master's link, and replicas; and how many of each.
#[derive(Default, Debug, Clone, Copy)]
pub struct ClientsMemory {
    pub normal: u64,
    pub normal_count: u64,
    pub replicas: u64,
    pub replica_count: u64,
}

impl Registry {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// How many clients are registered.
    pub fn connected(&self) -> usize {
        self.connected.load(Ordering::Acquire)
    }

    pub fn register(&self, info: Arc<ClientInfo>) {
        self.clients.lock().insert(info.id, info);
        self.connected.fetch_add(1, Ordering::AcqRel);
    }

    /// Takes `id` out of the registry and marks it gone.
    pub fn remove(&self, id: u64) {
        if let Some(info) = self.clients.lock().remove(&id) {
            info.mark_gone();
            self.connected.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The live client with `id`, if any (CLIENT TRACKING REDIRECT).
    pub fn by_id(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }

    /// Every client, by id.
    pub fn snapshot(&self) -> Vec<Arc<ClientInfo>> {
        let mut v: Vec<_> = self.clients.lock().values().cloned().collect();
        v.sort_by_key(|c| c.id);
        v
    }

    /// The connected clients `pick` chooses (it runs under the registry's lock).
    pub fn filter(&self, pick: impl Fn(&ClientInfo) -> bool) -> Vec<Arc<ClientInfo>> {
        let clients = self.clients.lock();
        clients.values().filter(|c| pick(c)).cloned().collect()
    }

    /// The memory the clients hold, summed for normal and pub/sub clients
    /// and our master's link, and for replicas; and how many of each.
    pub fn memory(&self) -> ClientsMemory {
        self.clients
            .lock()
            .values()
            .fold(ClientsMemory::default(), |mut m, c| {
                if c.is_replica() {
                    m.replicas += c.memory();
                    m.replica_count += 1;
                } else {
                    m.normal += c.memory();
                    m.normal_count += 1;
                }
                m
            })
    }

    /// The largest of each of two figures over the connected clients.
    pub fn max(&self, figures: impl Fn(&ClientInfo) -> (u64, u64)) -> (u64, u64) {
        self.clients.lock().values().fold((0, 0), |(a, b), c| {
            let (x, y) = figures(c);
            (a.max(x), b.max(y))
        })
    }

    /// Kills matching clients except `skip`; returns how many.
    pub fn kill(&self, matches: impl Fn(&ClientInfo) -> bool, skip: Option<u64>) -> usize {
        let victims: Vec<_> = self
            .clients
            .lock()
            .values()
            .filter(|c| Some(c.id) != skip && matches(c))
            .cloned()
            .collect();
        for v in &victims {
            v.kill();
        }
        victims.len()
    }
}
