//! Memory accounting as Redis's: `used_memory` is what the process allocated
//! (alloc_count.rs), without the Lua interpreters (Redis's Lua allocates
//! outside zmalloc); the overhead is the part of it that is not data (startup
//! memory, client and replication buffers, the AOF buffer, script caches and
//! the keyspace's index), as getMemoryOverheadData counts it; the dataset is
//! the rest. maxmemory (eviction.rs) and maxmemory-clients
//! (client_eviction.rs) read it from here; INFO memory and MEMORY STATS/DOCTOR
//! report it (info/memory.rs).
//!
//! This layer sits below the command pipeline and the server state: what it
//! reads of them comes through `Host`, which `Shared` implements.

pub mod alloc_count;
pub mod client_eviction;
pub mod eviction;

use crate::client::ClientInfo;
use crate::config::Settings;
use blinkdb_engine::Engine;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What memory accounting, eviction and client eviction read of the rest of
/// the server, and nothing more. `server::state::Shared` implements it; the
/// functions here are generic over it, so the calls cost what direct field
/// reads did.
pub trait Host {
    fn memory(&self) -> &MemoryState;
    fn eviction(&self) -> &eviction::EvictionState;
    fn engine(&self) -> &Engine;
    fn settings(&self) -> Arc<Settings>;
    /// Bytes the Lua interpreters hold (EVAL's and FUNCTION's together).
    fn lua_vm_bytes(&self) -> u64;
    /// The replication stream's buffer as maxmemory sees it.
    fn replication_buffer(&self) -> ReplicationBuffer;
    /// Records a used_memory sample (used_memory_peak); the peak so far.
    fn note_used_memory(&self, used: u64) -> u64;
    /// Runs `f` as a command runs, holding the EXEC gate, unless a
    /// transaction or a script holds the keyspace now (then not at all).
    fn between_commands(&self, f: &mut dyn FnMut());
    /// Every client, by id.
    fn clients(&self) -> Vec<Arc<ClientInfo>>;
    /// The memory of the clients maxmemory-clients counts, kept up to date
    /// as each publishes its own (client_eviction.rs).
    fn clients_memory_total(&self) -> &AtomicU64;
    /// INFO's evicted_clients.
    fn evicted_clients(&self) -> &AtomicU64;
}

/// The memory handle: used_memory's samples and the eviction's state.
#[derive(Default)]
pub struct Memory {
    pub accounting: MemoryState,
    pub eviction: eviction::EvictionState,
}

/// The replication stream's buffer: its bytes, `repl-backlog-size`, and
/// whether replicas are attached (only then is what passes the backlog theirs).
pub struct ReplicationBuffer {
    pub bytes: u64,
    pub backlog_size: u64,
    pub replicas: bool,
}

/// What the server cron samples every 100 ms (RSS is slow to read), and
/// what maxmemory subtracts.
#[derive(Default)]
pub struct MemoryState {
    /// used_memory once the server was set up, before any data loaded.
    startup: AtomicU64,
    /// The Lua interpreters' memory, which used_memory leaves out.
    lua_vm: AtomicU64,
    /// RSS and used_memory sampled together, so that their ratio is right.
    rss: AtomicU64,
    used: AtomicU64,
    /// Cron ticks since the heap was last trimmed.
    ticks_since_trim: AtomicU64,
}

/// The cron's last samples, as INFO memory and MEMORY STATS report them.
pub struct Samples {
    pub startup: u64,
    pub lua_vm: u64,
    pub rss: u64,
    pub used: u64,
    pub allocator_allocated: u64,
    pub allocator_active: u64,
}

impl MemoryState {
    /// The allocator's figures are read here, when INFO or MEMORY STATS asks.
    pub fn samples(&self) -> Samples {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (allocated, active) = allocator_stats();
        Samples {
            startup: get(&self.startup),
            lua_vm: get(&self.lua_vm),
            rss: get(&self.rss),
            used: get(&self.used),
            allocator_allocated: allocated,
            allocator_active: active,
        }
    }
}

/// Cron ticks (100 ms) between two trims at most.
const TRIM_EVERY: u64 = 10;

/// Redis's used_memory: bytes allocated, less the Lua interpreters.
pub fn used_memory(h: &impl Host) -> u64 {
    alloc_count::allocated().saturating_sub(h.memory().lua_vm.load(Ordering::Relaxed))
}

/// Memory maxmemory does not count: replica output beyond the backlog and
/// the AOF buffer (Redis's freeMemoryGetNotCountedMemory). Read when asked,
/// as used_memory is: a figure sampled by the cron lags the replication
/// buffer, whose growth (a doubling of its capacity among them) would then
/// count against maxmemory and evict keys between two samples.
pub fn not_counted(h: &impl Host) -> u64 {
    replication_memory(h).beyond_backlog + aof_buffer(h)
}

/// Notes used_memory once the server is set up (`used_memory_startup`).
pub fn note_startup(h: &impl Host) {
    h.memory().startup.store(used_memory(h), Ordering::Relaxed);
}

/// The server cron's sampling.
pub fn cron(h: &impl Host) {
    let m = h.memory();
    m.lua_vm.store(h.lua_vm_bytes(), Ordering::Relaxed);
    let used = used_memory(h);
    m.rss.store(rss_bytes(), Ordering::Relaxed);
    m.used.store(used, Ordering::Relaxed);
    h.note_used_memory(used);
    maybe_trim(h);
}

/// glibc's in-use bytes and the heap it took from the system. mallinfo2
/// walks every free chunk of every arena under the arena's lock (about 1 ms
/// on a fragmented heap, while connection threads wait to allocate), so it
/// is read only when asked and by the trim check, never on every cron tick.
fn allocator_stats() -> (u64, u64) {
    // SAFETY: mallinfo2 only reads glibc's arenas, under their locks.
    let mi = unsafe { libc::mallinfo2() };
    (
        (mi.uordblks + mi.hblkhd) as u64,
        (mi.arena + mi.hblkhd) as u64,
    )
}

/// Under maxmemory, gives glibc's free pages back once a second when its
/// arenas hold much more than is in use. Evicting frees keys all over the
/// heap; glibc only returns the top of an arena by itself, so without this
/// RSS stayed ~4 MB higher at a 50 MB limit (docs/design.md, "Memory").
fn maybe_trim(h: &impl Host) {
    let m = h.memory();
    if h.settings().maxmemory == 0
        || m.ticks_since_trim.fetch_add(1, Ordering::Relaxed) + 1 < TRIM_EVERY
    {
        return;
    }
    m.ticks_since_trim.store(0, Ordering::Relaxed);
    let (allocated, active) = allocator_stats();
    let free = active.saturating_sub(allocated);
    if free < (4 << 20).max(allocated / 16) {
        return;
    }
    let started = std::time::Instant::now();
    alloc_count::purge();
    tracing::debug!(
        "Trimmed the heap ({free} bytes free) in {:?}",
        started.elapsed()
    );
}

/// The process's resident set, from /proc/self/statm (its second field, in
/// pages): a few counters, where /proc/self/status formats 50 lines.
pub fn rss_bytes() -> u64 {
    // SAFETY: sysconf only reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page)
}

/// Bytes as Redis's `*_human` fields write them (bytesToHuman).
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "K", "M", "G"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i < 3 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes}B")
    } else {
        format!("{v:.2}{}", UNITS[i])
    }
}

pub struct Replication {
    pub backlog: u64,
    /// The stream's buffer beyond the backlog, held for lagging replicas.
    pub beyond_backlog: u64,
    /// The whole buffer.
    pub buffer: u64,
}

/// The replication buffer split as Redis does: up to repl-backlog-size is
/// the backlog, the rest is the replicas' (only while replicas exist); and
/// how much the replica links hold themselves.
pub fn replication_memory(h: &impl Host) -> Replication {
    let b = h.replication_buffer();
    if b.replicas && b.bytes > b.backlog_size {
        Replication {
            backlog: b.backlog_size,
            beyond_backlog: b.bytes - b.backlog_size,
            buffer: b.bytes,
        }
    } else {
        Replication {
            backlog: b.bytes,
            beyond_backlog: 0,
            buffer: b.bytes,
        }
    }
}

/// Appended AOF bytes not yet written (Redis's `aof_buf`).
pub fn aof_buffer(h: &impl Host) -> u64 {
    let Some(log) = h.engine().log_handle() else {
        return 0;
    };
    let s = log.aof.stats();
    let (a, w) = (s.appended_lsn, s.written_lsn);
    if a.incr_seq() == w.incr_seq() {
        a.offset().saturating_sub(w.offset())
    } else {
        a.offset()
    }
}

/// MEMORY MALLOC-STATS: glibc's own report (malloc_info's XML), where
/// Redis with jemalloc prints jemalloc's.
pub fn malloc_stats() -> String {
    let mut buf: *mut libc::c_char = std::ptr::null_mut();
    let mut len: libc::size_t = 0;
    // SAFETY: open_memstream allocates the buffer with malloc; it is read
    // after fclose (which finalizes buf/len) and freed with free.
    unsafe {
        let f = libc::open_memstream(&mut buf, &mut len);
        if f.is_null() {
            return "Stats not supported for the current allocator".to_string();
        }
        libc::malloc_info(0, f);
        libc::fclose(f);
        if buf.is_null() {
            return String::new();
        }
        let text =
            String::from_utf8_lossy(std::slice::from_raw_parts(buf as *const u8, len)).into_owned();
        libc::free(buf as *mut libc::c_void);
        text
    }
}

/// `activedefrag`'s check: BlinkDB allocates with glibc malloc, which cannot
/// move allocations, so it refuses "yes" as redis-server built without
/// jemalloc does, with its text.
pub const DEFRAG_CHECK: crate::config::Check = crate::config::Check {
    option: "activedefrag",
    check: refuse_defrag,
};

fn refuse_defrag(value: &str) -> Result<String, String> {
    if value == "yes" {
        return Err("Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution".into());
    }
    Ok(value.to_string())
}
