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
//!
//! The flusher and the connections it serves are tasks of one single-threaded runtime,
//! so their meeting point is this thread's own state, not a channel: registering costs
//! no lock and no atomic operation beyond the waker's reference count (a `watch`
//! channel and a `Notify` took and released a lock about five times per request).

use blinkdb_engine::{AofError, AofFailure, Engine, FsyncPolicy, Log, Lsn};
use std::cell::RefCell;
use std::sync::Arc;
use std::task::{Poll, Waker};

/// What a finished round tells its waiters.
#[derive(Clone, Default)]
struct Round {
    number: u64,
    /// Log position every byte before which is durable.
    covered: u64,
    failure: Option<AofFailure>,
}

/// One connection thread's flusher and the connections waiting for its rounds.
#[derive(Default)]
struct ThreadFlusher {
    /// Highest log position asked for since the last round started.
    wanted: u64,
    log: Option<Arc<Log>>,
    /// A connection asked for a round that has not started yet.
    kicked: bool,
    /// The flusher task, while it waits for a kick.
    flusher: Option<Waker>,
    /// The last round finished.
    round: Round,
    /// The connections waiting for a round to cover them.
    waiting: Vec<Waker>,
}

thread_local! {
    /// None off connection threads (and before `install`).
    static FLUSHER: RefCell<Option<ThreadFlusher>> = const { RefCell::new(None) };
}

/// Starts this connection thread's flusher task; call from inside its runtime.
pub fn install() {
    FLUSHER.with_borrow_mut(|f| *f = Some(ThreadFlusher::default()));
    drop(tokio::spawn(run()));
}

fn with<R>(f: impl FnOnce(&mut ThreadFlusher) -> R) -> R {
    FLUSHER.with_borrow_mut(|t| f(t.as_mut().expect("installed")))
}

async fn run() {
    let mut woken = Vec::new();
    loop {
        std::future::poll_fn(|cx| {
            with(|t| {
                if std::mem::take(&mut t.kicked) {
                    return Poll::Ready(());
                }
                match &mut t.flusher {
                    Some(w) => w.clone_from(cx.waker()),
                    None => t.flusher = Some(cx.waker().clone()),
                }
                Poll::Pending
            })
        })
        .await;
        let (lsn, log) = with(|t| (std::mem::take(&mut t.wanted), t.log.clone()));
        let (Some(log), true) = (log, lsn > 0) else {
            continue;
        };
        let result = log.aof.flush_inline(Lsn(lsn)).await;
        with(|t| {
            let round = &mut t.round;
            round.number += 1;
            match &result {
                Ok(()) => {
                    round.covered = round.covered.max(lsn);
                    round.failure = None;
                }
                Err(e) => round.failure = Some(AofFailure::of_ref(e)),
            }
            std::mem::swap(&mut woken, &mut t.waiting);
        });
        for w in woken.drain(..) {
            w.wake();
        }
    }
}

/// Resolves once everything this connection logged up to `lsn` is as durable as the
/// fsync policy asks. Off a connection thread (tests serving on their own runtime) it
/// falls back to the shared fsync thread.
pub async fn durable(engine: &Engine, lsn: u64) -> Result<(), AofError> {
    let Some(log) = engine.log_handle() else {
        return Ok(());
    };
    let kicked = FLUSHER.with_borrow_mut(|t| {
        let t = t.as_mut()?;
        t.wanted = t.wanted.max(lsn);
        if t.log.is_none() {
            t.log = Some(log.clone());
        }
        t.kicked = true;
        Some((t.round.number, t.flusher.take()))
    });
    let Some((started, flusher)) = kicked else {
        return log.aof.wait_synced(Lsn(lsn)).await;
    };
    if let Some(flusher) = flusher {
        flusher.wake();
    }
    let round = std::future::poll_fn(|cx| {
        with(|t| {
            let round = &t.round;
            if round.number > started && (round.covered >= lsn || round.failure.is_some()) {
                return Poll::Ready(round.clone());
            }
            t.waiting.push(cx.waker().clone());
            Poll::Pending
        })
    })
    .await;
    match round.failure {
        Some(f) if round.covered < lsn => Err(f.into_error()),
        _ => Ok(()),
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
pub async fn served_durable(engine: &Engine, lsn: u64) -> Result<(), AofError> {
    if let Some(log) = engine.log_handle() {
        if log.aof.fsync_policy() != FsyncPolicy::Always {
            return log.aof.commit(Lsn(lsn));
        }
    }
    durable(engine, lsn).await
}
