//! The timeouts of the clients blocked on one connection thread: one ordered
//! set of deadlines per thread, watched by one task, as Redis keeps its
//! blocked clients' timeouts in one radix tree that it checks before it sleeps.
//!
//! Why not a tokio `Sleep` per blocked client: each one registers in the
//! runtime's timer wheel, and one due before the wheel's planned wake-up
//! (always, while no other timer is pending) writes the thread's eventfd so
//! that the driver plans again. Queue consumers block thousands of times a
//! second (`BLPOP key 1`): that write, its wake-up and the wheel's bookkeeping
//! were ~2% of the server's CPU per LPUSH→BLPOP item. Here a deadline only
//! goes into the set; the task is woken only by one earlier than all others.

use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Weak};
use tokio::sync::Notify;
use tokio::time::Instant;

/// A deadline and the waiter's sequence number (deadlines can be equal).
type Due = (Instant, u64);

/// A wait with a deadline, told when the deadline passes. The waits are
/// blocked clients (`blocking::Waiter`), a layer above this timer: the timer
/// knows them only by this call, so it imports nothing of theirs.
pub trait Expire: Send + Sync {
    /// Its deadline passed: wake the waiting connection, which ends the wait.
    fn deadline_passed(&self);
}

struct ThreadTimer {
    due: Mutex<BTreeMap<Due, Weak<dyn Expire>>>,
    /// A deadline earlier than every other one was added.
    earlier: Notify,
}

thread_local! {
    static TIMER: RefCell<Option<Arc<ThreadTimer>>> = const { RefCell::new(None) };
}

/// Starts this connection thread's timeout task; call from inside its runtime.
pub fn install() {
    let timer = Arc::new(ThreadTimer {
        due: Mutex::new(BTreeMap::new()),
        earlier: Notify::new(),
    });
    TIMER.with(|t| *t.borrow_mut() = Some(timer.clone()));
    drop(tokio::spawn(run(timer)));
}

async fn run(timer: Arc<ThreadTimer>) {
    loop {
        let first = timer.due.lock().keys().next().map(|d| d.0);
        match first {
            Some(at) => tokio::select! {
                _ = tokio::time::sleep_until(at) => {}
                _ = timer.earlier.notified() => continue,
            },
            None => {
                timer.earlier.notified().await;
                continue;
            }
        }
        let now = Instant::now();
        let expired: Vec<Weak<dyn Expire>> = {
            let mut due = timer.due.lock();
            let later = due.split_off(&(now, u64::MAX));
            std::mem::replace(&mut *due, later).into_values().collect()
        };
        for w in expired.iter().filter_map(Weak::upgrade) {
            w.deadline_passed();
        }
    }
}

/// Takes a waiter's deadline out of the set when its wait ends, however it
/// ends (served, timed out, or the connection dropped the wait).
struct Listed {
    timer: Arc<ThreadTimer>,
    due: Due,
}

impl Drop for Listed {
    fn drop(&mut self) {
        self.timer.due.lock().remove(&self.due);
    }
}

/// Resolves once `w`'s wait has ended (`woken` resolves) or its deadline `at`
/// has passed; `seq` orders waits of equal deadline and is unique among them.
pub async fn wait<W: Expire + 'static>(
    w: &Arc<W>,
    at: Option<Instant>,
    seq: u64,
    woken: impl Future<Output = ()>,
) {
    let Some(at) = at else {
        return woken.await;
    };
    let Some(timer) = TIMER.with(|t| t.borrow().clone()) else {
        // Not a connection thread (tests serving on their own runtime).
        tokio::select! {
            _ = tokio::time::sleep_until(at) => {}
            _ = woken => {}
        }
        return;
    };
    let due = (at, seq);
    let first = {
        let mut set = timer.due.lock();
        let first = set.keys().next().is_none_or(|d| due < *d);
        let w: Weak<W> = Arc::downgrade(w);
        set.insert(due, w as Weak<dyn Expire>);
        first
    };
    if first {
        timer.earlier.notify_one();
    }
    let _listed = Listed { timer, due };
    woken.await;
}
