//! Makes a connection thread's writes durable once per round of its event loop, as
//! Redis does in `beforeSleep`: each connection that logged something registers how far
//! the log must reach before its replies may go out, and one flusher task per thread,
//! queued behind the connections that were already ready to run, does one write() (and
//! under `appendfsync always` one fdatasync) for all of them, on this thread.
//!
//! Why not hand every waiter to the shared fsync thread: that cost a futex wake and a
//! context switch per sync plus a cross-thread wake back per connection thread, and the
//! sync thread started its fdatasync as soon as the first waiter arrived, so the other
//! connections of the same round missed it and waited for the next one.

use crate::state::Shared;
use blinkdb_engine::aof::{AofError, Failure, FsyncPolicy, Lsn};
use blinkdb_engine::persist::Log;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::Arc;
use tokio::sync::{watch, Notify};

/// What a finished round tells its waiters.
#[derive(Clone, Default)]
struct Round {
    number: u64,
    /// Log position every byte before which is durable.
    covered: u64,
    failure: Option<Failure>,
}

#[derive(Default)]
struct Wanted {
    lsn: u64,
    log: Option<Arc<Log>>,
}

struct ThreadFlusher {
    wanted: Mutex<Wanted>,
    kick: Notify,
    done: watch::Sender<Round>,
}

thread_local! {
    static FLUSHER: RefCell<Option<Arc<ThreadFlusher>>> = const { RefCell::new(None) };
}

/// Starts this connection thread's flusher task; call from inside its runtime.
pub fn install() {
    let flusher = Arc::new(ThreadFlusher {
        wanted: Mutex::new(Wanted::default()),
        kick: Notify::new(),
        done: watch::channel(Round::default()).0,
    });
    FLUSHER.with(|f| *f.borrow_mut() = Some(flusher.clone()));
    drop(tokio::spawn(run(flusher)));
}

async fn run(flusher: Arc<ThreadFlusher>) {
    loop {
        flusher.kick.notified().await;
        let (lsn, log) = {
            let mut w = flusher.wanted.lock();
            (std::mem::take(&mut w.lsn), w.log.clone())
        };
        let (Some(log), true) = (log, lsn > 0) else {
            continue;
        };
        let result = log.aof.flush_inline(Lsn(lsn)).await;
        flusher.done.send_modify(|round| {
            round.number += 1;
            match &result {
                Ok(()) => {
                    round.covered = round.covered.max(lsn);
                    round.failure = None;
                }
                Err(e) => round.failure = Some(Failure::of_ref(e)),
            }
        });
    }
}

/// Makes a served blocked command's effect, which the thread that served it logged, as
/// durable as the fsync policy asks before the woken connection sends its reply. Under
/// `everysec`/`no` that is a write() of the log up to `lsn` done here and now, mostly a
/// check alone: the serving thread's own round has usually written it already (its
/// writer waits for the pops it served, see `blocking::serve_ready`). Going through this
/// thread's round instead cost the woken connection two more passes of its event loop
/// (the flusher task queued behind every ready connection, then itself again), which was
/// most of the LPUSH→BLPOP push-to-pop p99. Under `always`, the round.
pub async fn served_durable(shared: &Shared, lsn: u64) -> Result<(), AofError> {
    if let Some(log) = shared.engine.log_handle() {
        if log.aof.fsync_policy() != FsyncPolicy::Always {
            return log.aof.commit(Lsn(lsn));
        }
    }
    durable(shared, lsn).await
}

/// Resolves once everything this connection logged up to `lsn` is as durable as the
/// fsync policy asks. Off a connection thread (tests serving on their own runtime) it
/// falls back to the shared fsync thread.
pub async fn durable(shared: &Shared, lsn: u64) -> Result<(), AofError> {
    let Some(log) = shared.engine.log_handle() else {
        return Ok(());
    };
    let Some(flusher) = FLUSHER.with(|f| f.borrow().clone()) else {
        return shared.durable(lsn).await;
    };
    let mut rounds = flusher.done.subscribe();
    let started = rounds.borrow().number;
    {
        let mut w = flusher.wanted.lock();
        w.lsn = w.lsn.max(lsn);
        if w.log.is_none() {
            w.log = Some(log.clone());
        }
    }
    flusher.kick.notify_one();
    let round = rounds
        .wait_for(|r| r.number > started && (r.covered >= lsn || r.failure.is_some()))
        .await
        .map_err(|_| AofError::Closed)?
        .clone();
    match round.failure {
        Some(f) if round.covered < lsn => Err(f.into_error()),
        _ => Ok(()),
    }
}
