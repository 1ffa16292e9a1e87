//! Connection threads. Each runs its own single-threaded tokio runtime, an event
//! loop as in Redis, and a connection stays on one of them for its whole life.
//! Why not one multi-threaded runtime: its workers share one poller and wake each
//! other (futex + context switch) to steal freshly woken tasks, which cost ~20% more
//! server CPU per request at `-P 1` than a single loop; independent loops keep a
//! single loop's cost per request and still use every core under load.
//!
//! The threads run whatever work they are handed (`start_on_thread`): serving an
//! accepted client is serve/'s, following the master is the replica link's,
//! so this pool imports neither.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// An accepted socket on its way to a connection thread (detached from the
/// accepting runtime; registered again by the thread that serves it).
pub enum Handoff {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

/// Work to start on a thread, inside its runtime (it spawns its tasks).
type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    threads: Vec<UnboundedSender<Job>>,
    next: AtomicUsize,
}

static POOL: OnceLock<Pool> = OnceLock::new();

/// The connection threads' kernel ids, as each starts (INFO reads their CPU
/// time: they run the commands, Redis's main thread's work).
static THREAD_IDS: parking_lot::Mutex<Vec<i32>> = parking_lot::Mutex::new(Vec::new());

/// The connection threads' kernel ids (none before `start`).
pub fn thread_ids() -> Vec<i32> {
    THREAD_IDS.lock().clone()
}

/// Starts `n` connection threads (once per process), each polling its sockets
/// for up to `busy_poll` before it sleeps (`busy_poll.rs`), and each running
/// `per_thread` first: the thread-local services its work needs (the layers
/// above install them, so this pool imports none of them).
pub fn start(n: usize, busy_poll: Duration, per_thread: &'static [fn()]) -> std::io::Result<()> {
    crate::net::busy_poll::set_window(busy_poll.as_micros() as u64);
    let mut threads = Vec::with_capacity(n);
    for i in 0..n.max(1) {
        let (tx, rx) = unbounded_channel();
        let mut builder = tokio::runtime::Builder::new_current_thread();
        builder.enable_all();
        // The blocking pool reads large values for replies (`connection.rs`): up
        // to this many at once per connection thread, the rest queue.
        builder.max_blocking_threads(16);
        // Installed even with busy-poll-us 0, which CONFIG SET may change.
        builder.on_thread_park(|| {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                crate::net::busy_poll::before_park(&handle);
            }
        });
        builder.on_thread_unpark(crate::net::busy_poll::after_unpark);
        let runtime = builder.build()?;
        std::thread::Builder::new()
            .name(format!("blinkdb-io-{i}"))
            // A spawned task, not the block_on future itself: a wake from another
            // thread then goes through the queue that busy polling watches.
            .spawn(move || runtime.block_on(async { tokio::spawn(run(rx, per_thread)).await }))?;
        threads.push(tx);
    }
    let _ = POOL.set(Pool {
        threads,
        next: AtomicUsize::new(0),
    });
    Ok(())
}

/// Whether connections are handed to connection threads (false in tests that
/// serve connections on their own runtime).
pub fn started() -> bool {
    POOL.get().is_some()
}

/// Runs `start` on the next connection thread (round robin), inside its
/// runtime; false if the threads are not running or gone (only while the
/// process exits). An accepted client is served this way (`network.rs`), and
/// the replica's link hands its master's stream over this way, so that it is
/// applied in an event loop that also serves clients, as in Redis, not on a
/// thread of its own that a busy 2-core machine must also schedule.
pub fn start_on_thread(start: Box<dyn FnOnce() + Send>) -> bool {
    let Some(pool) = POOL.get() else {
        return false;
    };
    let i = pool.next.fetch_add(1, Ordering::Relaxed) % pool.threads.len();
    pool.threads[i].send(start).is_ok()
}

thread_local! {
    static CONNECTION_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is a connection thread: its tasks never move to
/// another thread, so a script may pause on it (scripting/run.rs).
pub fn on_connection_thread() -> bool {
    CONNECTION_THREAD.with(|c| c.get())
}

async fn run(mut jobs: UnboundedReceiver<Job>, per_thread: &'static [fn()]) {
    for install in per_thread {
        install();
    }
    CONNECTION_THREAD.with(|c| c.set(true));
    // SAFETY: gettid takes nothing and cannot fail.
    THREAD_IDS.lock().push(unsafe { libc::gettid() });
    while let Some(start) = jobs.recv().await {
        start();
    }
}
