//! A wake-up for the one task that serves a connection (its kill signal, its
//! inbox's news of messages, a blocked command's end), raised from any thread.
//!
//! tokio's `Notify` did this job, but its `notified()` future takes the
//! Notify's lock to join its waiter list when first polled and again to leave
//! it when dropped, and a connection's loop makes and drops one per request
//! (about 1% of a cluster node's CPU under `redis-benchmark`). Only the
//! connection's own task ever waits here, so one waker slot (`AtomicWaker`)
//! and a flag do: waiting costs two atomic operations and leaving nothing.
//!
//! Same contract as `Notify::notify_one`/`notified`: a raise with nobody
//! waiting is kept (once) for the next wait.

use atomic_waker::AtomicWaker;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

#[derive(Default)]
pub struct Signal {
    raised: AtomicBool,
    waker: AtomicWaker,
}

impl Signal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Wakes the waiting task, or the next wait if none waits now.
    pub fn notify_one(&self) {
        self.raised.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// Resolves once raised (consuming the raise). Only one task may wait.
    pub fn notified(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| self.poll_raised(cx))
    }

    /// Ready once raised (consuming the raise); otherwise the task of `cx` is
    /// woken by the next raise. For a task that polls several wake-ups in one
    /// hand-written future, without a future per wait.
    pub fn poll_raised(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.take() {
            return Poll::Ready(());
        }
        self.waker.register(cx.waker());
        // A raise between the check and the registration woke nobody.
        if self.take() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    fn take(&self) -> bool {
        self.raised.load(Ordering::Relaxed) && self.raised.swap(false, Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn a_raise_before_the_wait_is_kept_once() {
        let s = Signal::new();
        s.notify_one();
        s.notify_one();
        tokio::time::timeout(Duration::from_secs(1), s.notified())
            .await
            .expect("kept raise");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), s.notified())
                .await
                .is_err(),
            "two raises with nobody waiting count once, as Notify's permit"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_raise_from_another_thread_wakes_the_waiter() {
        for _ in 0..1000 {
            let s = Arc::new(Signal::new());
            let t = {
                let s = s.clone();
                std::thread::spawn(move || s.notify_one())
            };
            tokio::time::timeout(Duration::from_secs(5), s.notified())
                .await
                .expect("woken");
            t.join().unwrap();
        }
    }
}
