//! The replication stream as a master sends it: every record the engine logs
//! (the AOF's records, with the AOF off too), RESP-encoded with a SELECT
//! before a record of another database, appended to one buffer numbered by
//! replication offset. The buffer is the backlog (`repl-backlog-size`, kept
//! for partial resyncs) and, beyond it, whatever a connected replica has not
//! been sent yet; each replica reads its bytes from here by offset.

use crate::client::ClientInfo;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Capacity the stream's buffer keeps however little it holds.
const MIN_BUFFER: usize = 16 * 1024;

/// Where a replica is in its life on this master (INFO's `state=`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReplicaState {
    /// Waiting for the snapshot's point in time.
    WaitBgsave,
    /// Its RDB file is being written or sent.
    SendBulk,
    /// Streaming.
    Online,
}

impl ReplicaState {
    pub fn name(self) -> &'static str {
        match self {
            ReplicaState::WaitBgsave => "wait_bgsave",
            ReplicaState::SendBulk => "send_bulk",
            ReplicaState::Online => "online",
        }
    }
}

/// A connected replica, as the master sees it.
pub struct Replica {
    pub info: Arc<ClientInfo>,
    pub ip: String,
    /// REPLCONF listening-port (0 if it never said).
    pub port: u16,
    pub state: ReplicaState,
    /// The next stream byte to send it (None before its snapshot point).
    pub next: Option<u64>,
    /// The offset it last acknowledged (REPLCONF ACK), and when (ms).
    pub ack: u64,
    pub ack_ms: u64,
    /// The offset its AOF last reported fsync'd (REPLCONF ACK ... FACK, Redis
    /// 7.2's); 0 from a replica without an AOF, or one that never says.
    pub aof_ack: u64,
    /// Rung when the stream grows.
    pub wake: Arc<Notify>,
}

/// A WAIT or WAITAOF in progress: the client, the offset it waits for, how
/// many replicas must have acknowledged it.
struct WaitReq {
    client: u64,
    offset: u64,
    replicas: usize,
    /// WAITAOF: replicas count by their FACK, and `aof` says what is left.
    aof: Option<AofWait>,
}

/// What a WAITAOF still waits for besides its replicas.
struct AofWait {
    /// WAITAOF's numlocal was 1: `appendonly no` ends the wait with an error.
    local: bool,
    /// Its own AOF has not fsync'd the client's writes yet.
    local_pending: bool,
    /// Told when the wait ends, so the task watching the local fsync ends too.
    ended: Arc<Notify>,
}

impl WaitReq {
    fn satisfied(&self, b: &Backlog) -> bool {
        match &self.aof {
            None => b.acked(self.offset) >= self.replicas,
            Some(a) => !a.local_pending && b.aof_acked(self.offset) >= self.replicas,
        }
    }

    fn ended(&self) {
        if let Some(a) = &self.aof {
            a.ended.notify_one();
        }
    }
}

pub struct Backlog {
    pub replid: String,
    pub replid2: String,
    /// Redis's second_replid_offset: `replid2`'s history covers offsets
    /// below this one (-1: no second id).
    pub second_offset: i64,
    /// Stream bytes from offset `first` on (offsets count from 1, as Redis's).
    data: VecDeque<u8>,
    first: u64,
    /// master_repl_offset: the offset of the last byte ever fed.
    pub offset: u64,
    /// Whether the backlog exists (made when the first replica connects).
    pub active: bool,
    /// The database the stream last SELECTed (None: the next record says).
    db: Option<usize>,
    /// repl-backlog-size.
    pub size: usize,
    /// Hard limit of the replica output class (0: none): a replica this many
    /// bytes behind is dropped.
    pub hard_limit: u64,
    pub replicas: Vec<Replica>,
    waits: Vec<WaitReq>,
    /// On a replica, inside a MULTI its master sent: the offset before
    /// that MULTI (a sub-replica's snapshot point must not fall inside it).
    multi_start: Option<u64>,
    /// push_command's record buffer, reused.
    scratch: Vec<u8>,
}

impl Backlog {
    pub fn first_byte_offset(&self) -> u64 {
        if self.active {
            self.first
        } else {
            0
        }
    }

    pub fn histlen(&self) -> u64 {
        self.data.len() as u64
    }

    /// The memory the stream's buffer holds (Redis's `repl_buffer_mem`): the
    /// backlog, and what lagging replicas still need beyond it.
    pub fn buffer_bytes(&self) -> u64 {
        (self.data.capacity() + self.scratch.capacity()) as u64
    }

    /// One RESP array: built in a reused buffer (lengths by itoa, not
    /// `fmt`), then copied into the backlog at once. `fmt` and the
    /// per-piece copies were ~5% of a master's CPU under SET -P 16 (perf).
    fn push_command(&mut self, args: &[&[u8]]) {
        fn head(out: &mut Vec<u8>, tag: u8, n: usize) {
            out.push(tag);
            out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        let mut rec = std::mem::take(&mut self.scratch);
        rec.clear();
        head(&mut rec, b'*', args.len());
        for a in args {
            head(&mut rec, b'$', a.len());
            rec.extend_from_slice(a);
            rec.extend_from_slice(b"\r\n");
        }
        self.data.extend(rec.iter());
        if rec.capacity() > 64 * 1024 {
            rec = Vec::new();
        }
        self.scratch = rec;
    }

    /// Appends one record (after a SELECT when `db` changes; None: no
    /// SELECT, as for the master's PING), then wakes the replicas and drops
    /// the ones too far behind.
    fn append(&mut self, db: Option<usize>, args: &[&[u8]]) {
        let before = self.data.len();
        if let Some(db) = db {
            if self.db != Some(db) {
                let n = db.to_string();
                self.push_command(&[b"SELECT", n.as_bytes()]);
                self.db = Some(db);
            }
        }
        self.push_command(args);
        self.offset += (self.data.len() - before) as u64;
        self.pushed();
    }

    /// After bytes were added: wakes the replicas, drops the ones too far
    /// behind, trims.
    fn pushed(&mut self) {
        let end = self.offset + 1;
        let hard = self.hard_limit;
        for r in &mut self.replicas {
            if let Some(next) = r.next {
                if hard > 0 && end - next >= hard && !r.info.is_killed() {
                    tracing::warn!(
                        "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
                        r.info.id,
                        r.info.addr
                    );
                    r.info.kill();
                    r.next = None;
                    continue;
                }
                r.wake.notify_one();
            }
        }
        self.trim();
    }

    /// Drops what neither the backlog size nor any replica still needs.
    fn trim(&mut self) {
        let end = self.offset + 1;
        let mut keep = self.size as u64;
        for r in &self.replicas {
            if let Some(next) = r.next {
                keep = keep.max(end - next);
            }
        }
        let len = self.data.len() as u64;
        if len > keep {
            let drop = (len - keep) as usize;
            self.data.drain(..drop);
            self.first += drop as u64;
        }
        self.fit();
    }

    /// Sizes the buffer's allocation, which is what used_memory sees of it.
    /// The first 16 KB (Redis's first block) are taken at once: grown as the
    /// stream filled them, they counted against a maxmemory set in between
    /// (maxmemory.tcl leaves 32 KB of room). The room a lagging replica made
    /// it grow to is given back once no longer needed (it caught up, or is
    /// gone): with no replica, all of it counts against maxmemory (Redis
    /// frees its replication buffer's blocks as they are released). Shrinks
    /// only past 4x what is held: amortized, the copies cost no more than
    /// the growth did.
    fn fit(&mut self) {
        let len = self.data.len();
        let want = len.max(self.size).max(MIN_BUFFER);
        if self.data.capacity() > 4 * want {
            self.data.shrink_to(want);
        } else if self.data.capacity() < MIN_BUFFER {
            // Not all of a large backlog: Redis too allocates it as it fills.
            self.data.reserve_exact(MIN_BUFFER - len);
        }
    }

    /// Makes the backlog if there is none: the stream starts after the
    /// current offset.
    fn activate(&mut self) {
        if !self.active {
            self.active = true;
            self.data.clear();
            self.fit();
            self.first = self.offset + 1;
            self.db = None;
        }
    }

    /// Whether a replica asking for `replid` from `offset` can be served from
    /// the backlog (Redis's masterTryPartialResynchronization test).
    pub fn can_continue(&self, replid: &str, offset: u64) -> bool {
        if !self.active {
            return false;
        }
        let same = replid.eq_ignore_ascii_case(&self.replid)
            || (replid.eq_ignore_ascii_case(&self.replid2)
                && self.second_offset >= 0
                && offset <= self.second_offset as u64);
        same && offset >= self.first && offset <= self.offset + 1
    }

    fn replica_mut(&mut self, id: u64) -> Option<&mut Replica> {
        self.replicas.iter_mut().find(|r| r.info.id == id)
    }

    /// How many replicas acknowledged `offset` or more.
    pub fn acked(&self, offset: u64) -> usize {
        self.replicas.iter().filter(|r| r.ack >= offset).count()
    }

    /// How many replicas reported `offset` or more fsync'd to their AOF.
    pub fn aof_acked(&self, offset: u64) -> usize {
        self.replicas.iter().filter(|r| r.aof_ack >= offset).count()
    }
}

/// A replica the stream can no longer serve: dropped (output limit, kill),
/// or the bytes it needs are gone.
#[derive(Debug)]
pub struct Gone;

/// The stream and its replicas, shared by every thread that writes.
pub struct Feed {
    /// Mirrors `Backlog::active`, read without the lock on every write.
    active: AtomicBool,
    /// Set while this server is a replica: the stream is its master's,
    /// proxied byte for byte (`proxy`), and its own writes are not fed.
    proxy: AtomicBool,
    inner: Mutex<Backlog>,
    /// INFO stats' sync_full, sync_partial_ok, sync_partial_err.
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
}

pub fn random_replid() -> String {
    (0..40)
        .map(|_| format!("{:x}", rand::random::<u8>() % 16))
        .collect()
}

impl Feed {
    pub fn new(size: usize) -> Self {
        Feed {
            active: AtomicBool::new(false),
            proxy: AtomicBool::new(false),
            inner: Mutex::new(Backlog {
                replid: random_replid(),
                replid2: "0".repeat(40),
                second_offset: -1,
                data: VecDeque::new(),
                first: 1,
                offset: 0,
                active: false,
                db: None,
                size,
                hard_limit: 0,
                replicas: Vec::new(),
                waits: Vec::new(),
                multi_start: None,
                scratch: Vec::new(),
            }),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
        }
    }

    /// CONFIG RESETSTAT.
    pub fn reset_stats(&self) {
        self.sync_full.store(0, Ordering::Relaxed);
        self.sync_partial_ok.store(0, Ordering::Relaxed);
        self.sync_partial_err.store(0, Ordering::Relaxed);
    }

    pub fn lock(&self) -> parking_lot::MutexGuard<'_, Backlog> {
        self.inner.lock()
    }

    /// Appends a record of the master's own (PING, REPLCONF GETACK) with no
    /// SELECT before it; nothing while there is no backlog.
    pub fn feed_raw(&self, args: &[&[u8]]) {
        if !self.active.load(Ordering::Acquire) || self.proxy.load(Ordering::Relaxed) {
            return;
        }
        self.inner.lock().append(None, args);
    }

    /// Registers a replica that is about to sync (state wait_bgsave).
    pub fn add_replica(&self, info: Arc<ClientInfo>, ip: String, port: u16) -> Arc<Notify> {
        let wake = Arc::new(Notify::new());
        let mut b = self.inner.lock();
        b.replicas.retain(|r| r.info.id != info.id);
        b.replicas.push(Replica {
            info,
            ip,
            port,
            state: ReplicaState::WaitBgsave,
            next: None,
            ack: 0,
            ack_ms: blinkdb_engine::now_ms(),
            aof_ack: 0,
            wake: wake.clone(),
        });
        wake
    }

    /// The snapshot's point in time for replica `id` (called while every
    /// shard is locked): makes the backlog if needed and starts the
    /// replica's stream right after the current offset, which it returns.
    pub fn start_full(&self, id: u64) -> u64 {
        let mut b = self.inner.lock();
        b.activate();
        self.active.store(true, Ordering::Release);
        let offset = b.multi_start.unwrap_or(b.offset);
        if b.multi_start.is_none() {
            // The new replica's stream must say its database: the next
            // record SELECTs again (replicationSetupSlaveForFullResync's
            // slaveseldb = -1).
            b.db = None;
        }
        if let Some(r) = b.replica_mut(id) {
            r.next = Some(offset + 1);
            r.state = ReplicaState::SendBulk;
        }
        offset
    }

    /// PSYNC replid offset: registers the replica streaming from `offset`
    /// if the backlog covers it; the replication id to answer with.
    pub fn try_continue(
        &self,
        info: &Arc<ClientInfo>,
        ip: String,
        port: u16,
        replid: &str,
        offset: u64,
    ) -> Option<(String, Arc<Notify>)> {
        let mut b = self.inner.lock();
        if !b.can_continue(replid, offset) {
            return None;
        }
        let wake = Arc::new(Notify::new());
        b.replicas.retain(|r| r.info.id != info.id);
        b.replicas.push(Replica {
            info: info.clone(),
            ip,
            port,
            state: ReplicaState::Online,
            next: Some(offset),
            ack: offset.saturating_sub(1),
            ack_ms: blinkdb_engine::now_ms(),
            aof_ack: 0,
            wake: wake.clone(),
        });
        Some((b.replid.clone(), wake))
    }

    /// A replica put online starts its repl-timeout afresh (Redis's
    /// replicaPutOnline): a long transfer and load is no silence.
    pub fn set_state(&self, id: u64, state: ReplicaState) {
        if let Some(r) = self.inner.lock().replica_mut(id) {
            r.state = state;
            if state == ReplicaState::Online {
                r.ack_ms = blinkdb_engine::now_ms();
            }
        }
    }

    pub fn remove_replica(&self, id: u64) {
        let mut b = self.inner.lock();
        b.replicas.retain(|r| r.info.id != id);
        b.trim();
    }

    /// Copies up to `max` bytes of the stream for replica `id`, from its
    /// position (which `sent` moves once they are written: until then they
    /// count against its output limit). Err: it can no longer be served
    /// (dropped, or its bytes are gone).
    pub fn peek(&self, id: u64, max: usize, into: &mut Vec<u8>) -> Result<(), Gone> {
        into.clear();
        let mut b = self.inner.lock();
        let (first, end) = (b.first, b.offset + 1);
        let Some(next) = b.replica_mut(id).and_then(|r| r.next) else {
            return Err(Gone);
        };
        if next < first || next > end {
            return Err(Gone);
        }
        let from = (next - first) as usize;
        let to = from + ((end - next) as usize).min(max);
        let (a, c) = b.data.as_slices();
        if from < a.len() {
            into.extend_from_slice(&a[from..to.min(a.len())]);
        }
        if to > a.len() {
            into.extend_from_slice(&c[from.saturating_sub(a.len())..to - a.len()]);
        }
        Ok(())
    }

    /// Replica `id` was sent `n` more bytes.
    pub fn sent(&self, id: u64, n: usize) {
        let mut b = self.inner.lock();
        if let Some(r) = b.replica_mut(id) {
            if let Some(next) = r.next.as_mut() {
                *next += n as u64;
            }
        }
        b.trim();
    }

    /// Bytes replica `id` has not been sent yet.
    pub fn pending(&self, id: u64) -> u64 {
        let mut b = self.inner.lock();
        let end = b.offset + 1;
        b.replica_mut(id)
            .and_then(|r| r.next)
            .map_or(0, |n| end - n)
    }

    /// REPLCONF ACK from replica `id`; returns the WAITs it satisfied.
    pub fn ack(&self, id: u64, offset: u64, fsynced: Option<u64>) -> Vec<u64> {
        let mut b = self.inner.lock();
        if let Some(r) = b.replica_mut(id) {
            r.ack = r.ack.max(offset);
            r.ack_ms = blinkdb_engine::now_ms();
            if let Some(f) = fsynced {
                r.aof_ack = r.aof_ack.max(f);
            }
        }
        let mut done = Vec::new();
        let waits = std::mem::take(&mut b.waits);
        for w in waits {
            if w.satisfied(&b) {
                w.ended();
                done.push(w.client);
            } else {
                b.waits.push(w);
            }
        }
        done
    }

    /// Registers a WAIT of `client` for `replicas` acknowledgements of
    /// `offset`, and asks the replicas for theirs.
    pub fn add_wait(&self, client: u64, offset: u64, replicas: usize) {
        self.push_wait(WaitReq {
            client,
            offset,
            replicas,
            aof: None,
        });
    }

    /// Registers a WAITAOF of `client`: `replicas` FACKs of `offset`, and
    /// (`local_pending`) the local fsync that `local_synced` reports; `local`:
    /// its numlocal was 1. The returned Notify is told when the wait ends.
    pub fn add_aof_wait(
        &self,
        client: u64,
        offset: u64,
        replicas: usize,
        local: bool,
        local_pending: bool,
    ) -> Arc<Notify> {
        let ended = Arc::new(Notify::new());
        self.push_wait(WaitReq {
            client,
            offset,
            replicas,
            aof: Some(AofWait {
                local,
                local_pending,
                ended: ended.clone(),
            }),
        });
        ended
    }

    fn push_wait(&self, req: WaitReq) {
        let mut b = self.inner.lock();
        b.waits.push(req);
        if b.active {
            b.append(None, &[b"REPLCONF", b"GETACK", b"*"]);
        }
    }

    /// The local AOF fsync'd what `client`'s WAITAOF waits for: true when
    /// that ends its wait (the caller wakes it).
    pub fn local_synced(&self, client: u64) -> bool {
        let mut b = self.inner.lock();
        let Some(i) = b.waits.iter().position(|w| w.client == client) else {
            return false;
        };
        if let Some(a) = &mut b.waits[i].aof {
            a.local_pending = false;
        }
        if !b.waits[i].satisfied(&b) {
            return false;
        }
        b.waits.swap_remove(i).ended();
        true
    }

    /// Ends every WAITAOF whose numlocal is 1 (`appendonly` was turned off):
    /// returns their clients, for the caller to wake.
    pub fn end_local_aof_waits(&self) -> Vec<u64> {
        let mut done = Vec::new();
        self.inner.lock().waits.retain(|w| {
            let keep = !w.aof.as_ref().is_some_and(|a| a.local);
            if !keep {
                w.ended();
                done.push(w.client);
            }
            keep
        });
        done
    }

    /// Forgets the WAIT of `client` (it ended).
    pub fn end_wait(&self, client: u64) {
        self.inner.lock().waits.retain(|w| {
            let keep = w.client != client;
            if !keep {
                w.ended();
            }
            keep
        });
    }

    pub fn set_limits(&self, size: usize, hard: u64) {
        let mut b = self.inner.lock();
        b.size = size.max(16 * 1024);
        b.hard_limit = hard;
        if b.active {
            b.trim();
        }
    }
}

impl Feed {
    /// Replica mode on or off (see `proxy`).
    pub fn set_proxy(&self, on: bool) {
        self.proxy.store(on, Ordering::Release);
    }

    pub fn is_proxy(&self) -> bool {
        self.proxy.load(Ordering::Acquire)
    }

    /// Drops every sub-replica's link (they reconnect and PSYNC again).
    fn drop_replicas(b: &mut Backlog) {
        for r in b.replicas.drain(..) {
            r.info.kill();
        }
    }

    /// A replica's full sync is loaded: the stream is now the master's
    /// `replid` from `offset` on, with a fresh backlog, and sub-replicas
    /// must sync again.
    pub fn follow_full(&self, replid: &str, offset: u64) {
        let mut b = self.inner.lock();
        Self::drop_replicas(&mut b);
        b.replid = replid.to_string();
        b.replid2 = "0".repeat(40);
        b.second_offset = -1;
        b.data.clear();
        b.fit();
        b.offset = offset;
        b.first = offset + 1;
        b.active = true;
        b.db = None;
        b.multi_start = None;
        self.proxy.store(true, Ordering::Release);
        self.active.store(true, Ordering::Release);
    }

    /// `+CONTINUE [replid]`: the stream goes on from our offset; a new id
    /// becomes ours, the old one our second (PSYNC2), and sub-replicas
    /// reconnect to learn it.
    pub fn follow_continue(&self, new_replid: Option<&str>) {
        let mut b = self.inner.lock();
        if let Some(id) = new_replid.filter(|id| !id.eq_ignore_ascii_case(&b.replid)) {
            b.replid2 = std::mem::replace(&mut b.replid, id.to_string());
            b.second_offset = b.offset as i64 + 1;
            Self::drop_replicas(&mut b);
        }
        b.activate();
        b.multi_start = None;
        self.proxy.store(true, Ordering::Release);
        self.active.store(true, Ordering::Release);
    }

    /// Leaves proxy mode without changing ids (REPLICAOF to another master:
    /// the handshake decides) and drops the sub-replicas.
    pub fn unfollow(&self, drop_replicas: bool) {
        let mut b = self.inner.lock();
        if drop_replicas {
            Self::drop_replicas(&mut b);
        }
        b.multi_start = None;
    }

    /// REPLICAOF NO ONE: a new history starts here (Redis's
    /// shiftReplicationId); replicas of the old one may PSYNC to it with
    /// the old id up to this offset.
    pub fn promote(&self) {
        let mut b = self.inner.lock();
        self.proxy.store(false, Ordering::Release);
        if b.active {
            b.replid2 = std::mem::replace(&mut b.replid, random_replid());
            b.second_offset = b.offset as i64 + 1;
        } else {
            b.replid = random_replid();
        }
        b.db = None;
        b.multi_start = None;
        Self::drop_replicas(&mut b);
    }

    /// The replication id and offset this replica PSYNCs with, if it has a
    /// history (a backlog).
    pub fn resume_point(&self) -> Option<(String, u64)> {
        let b = self.inner.lock();
        b.active.then(|| (b.replid.clone(), b.offset))
    }

    /// One command of the master's stream, applied: its exact bytes go to
    /// this replica's backlog and sub-replicas. `multi`: Some(true) for a
    /// MULTI, Some(false) for its EXEC/DISCARD.
    pub fn proxy_bytes(&self, bytes: &[u8], multi: Option<bool>) {
        let mut b = self.inner.lock();
        match multi {
            Some(true) if b.multi_start.is_none() => b.multi_start = Some(b.offset),
            Some(false) => b.multi_start = None,
            _ => {}
        }
        b.data.extend(bytes.iter());
        b.offset += bytes.len() as u64;
        b.pushed();
    }
}

impl blinkdb_engine::WriteFeed for Feed {
    #[inline]
    fn feed(&self, db: usize, args: &[&[u8]]) {
        if !self.active.load(Ordering::Acquire) || self.proxy.load(Ordering::Relaxed) {
            return;
        }
        if args[0].len() > 8 && args[0][..8].eq_ignore_ascii_case(b"blinkdb.") {
            return self.feed_internal(db, args);
        }
        self.inner.lock().append(Some(db), args);
    }
}

impl Feed {
    /// BlinkDB's internal log records (`BLINKDB.*`, which bind keys to
    /// filter files) in the form a replica can apply: redis-server with
    /// RedisBloom, or BlinkDB, which stores the filter in files of its own.
    fn feed_internal(&self, db: usize, args: &[&[u8]]) {
        use blinkdb_engine::bf::{Binding, BIND_COMMAND, LOAD_HEADER_COMMAND};
        let name = args[0];
        let form: Option<Vec<Vec<u8>>> = if name.eq_ignore_ascii_case(BIND_COMMAND.as_bytes()) {
            args.get(2..)
                .and_then(Binding::decode)
                .and_then(|b| b.redisbloom_form(args[1]))
        } else if name.eq_ignore_ascii_case(LOAD_HEADER_COMMAND.as_bytes()) && args.len() == 4 {
            // BF.LOADCHUNK's header step, iterator 1 as SCANDUMP gave it.
            Some(vec![
                b"BF.LOADCHUNK".to_vec(),
                args[1].to_vec(),
                b"1".to_vec(),
                args[3].to_vec(),
            ])
        } else {
            None
        };
        match form {
            Some(cmd) => {
                let refs: Vec<&[u8]> = cmd.iter().map(|a| &a[..]).collect();
                self.inner.lock().append(Some(db), &refs);
            }
            None => tracing::warn!(
                record = %String::from_utf8_lossy(name),
                key = %String::from_utf8_lossy(args.get(1).copied().unwrap_or_default()),
                "a write has no form replicas can apply (a COPY of a Bloom filter): replicas miss it"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: u64) -> Arc<ClientInfo> {
        Arc::new(ClientInfo::new(
            id,
            "127.0.0.1:1".into(),
            "127.0.0.1:2".into(),
            -1,
            crate::client::Peer::Internal,
            0,
        ))
    }

    #[test]
    fn stream_selects_db_and_counts_offsets() {
        use blinkdb_engine::WriteFeed;
        let feed = Feed::new(1 << 20);
        feed.feed(0, &[b"SET", b"a", b"1"]);
        assert_eq!(feed.lock().offset, 0, "nothing is kept before a replica");
        let r = info(7);
        feed.add_replica(r.clone(), "127.0.0.1".into(), 1);
        assert_eq!(feed.start_full(7), 0);
        feed.feed(3, &[b"SET", b"a", b"1"]);
        feed.feed(3, &[b"DEL", b"a"]);
        let mut out = Vec::new();
        feed.peek(7, 1 << 20, &mut out).unwrap();
        let want = b"*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\nDEL\r\n$1\r\na\r\n";
        assert_eq!(out, want);
        assert_eq!(feed.lock().offset, want.len() as u64);
        let id = feed.lock().replid.clone();
        assert!(feed.lock().can_continue(&id, 1));
        assert!(feed.lock().can_continue(&id, want.len() as u64 + 1));
        assert!(!feed.lock().can_continue(&id, want.len() as u64 + 2));
        assert!(!feed.lock().can_continue(&"0".repeat(40), 1));
    }

    #[test]
    fn backlog_keeps_its_size_unless_a_replica_needs_more() {
        use blinkdb_engine::WriteFeed;
        let feed = Feed::new(0);
        feed.set_limits(16 * 1024, 0);
        feed.add_replica(info(1), "x".into(), 1);
        feed.start_full(1);
        let v = vec![b'x'; 1000];
        for _ in 0..100 {
            feed.feed(0, &[b"SET", b"k", &v]);
        }
        // The replica read nothing: everything is still there for it.
        assert!(feed.lock().histlen() > 90_000);
        let mut out = Vec::new();
        while {
            feed.peek(1, 4096, &mut out).unwrap();
            feed.sent(1, out.len());
            !out.is_empty()
        } {}
        assert_eq!(feed.lock().histlen(), 16 * 1024);
        let (first, end) = {
            let b = feed.lock();
            (b.first, b.offset + 1)
        };
        assert_eq!(end - first, 16 * 1024);
        let id = feed.lock().replid.clone();
        assert!(!feed.lock().can_continue(&id, first - 1));
        assert!(feed.lock().can_continue(&id, first));
    }

    #[test]
    fn a_replica_past_the_hard_limit_is_dropped() {
        use blinkdb_engine::WriteFeed;
        let feed = Feed::new(16 * 1024);
        feed.set_limits(16 * 1024, 10_000);
        let r = info(2);
        feed.add_replica(r.clone(), "x".into(), 1);
        feed.start_full(2);
        let v = vec![b'x'; 1000];
        for _ in 0..20 {
            feed.feed(0, &[b"SET", b"k", &v]);
        }
        assert!(r.is_killed());
        let mut out = Vec::new();
        assert!(feed.peek(2, 100, &mut out).is_err());
    }
}
