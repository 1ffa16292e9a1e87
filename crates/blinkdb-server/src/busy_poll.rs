//! Busy polling before a connection thread sleeps (option `busy-poll-us`).
//!
//! When its event loop runs out of work, a connection thread keeps checking its
//! sockets for up to `busy-poll-us` microseconds before tokio blocks in
//! `epoll_wait`. A request that arrives in that window is served without the
//! sleep and wake-up, which on virtual machines (an idle vCPU halts and is woken
//! by an interrupt) cost about 20 us per request in single-client round trips
//! (docs/design.md, "Busy polling"). The price is CPU: a thread that gets a
//! request every 50 us never sleeps.
//!
//! tokio has no spin-before-park of its own, and its epoll descriptor is private,
//! so each thread keeps a second, level-triggered epoll set with its connections
//! in it (a socket leaves it when it is closed). Polling that set with a zero
//! timeout consumes nothing, so tokio's own `epoll_wait` still finds the event.
//! Work woken from another thread lands in tokio's injection queue, which the
//! loop checks too.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

thread_local! {
    /// This thread's epoll set of connections (-1: none yet, or it failed).
    static SET: Cell<RawFd> = const { Cell::new(-1) };
}

fn set() -> RawFd {
    SET.with(|s| {
        if s.get() < 0 {
            // SAFETY: plain system call; a failure leaves -1 and disables polling.
            s.set(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) });
        }
        s.get()
    })
}

/// Adds a connection served by this thread to its polling set. Failure only
/// means this connection waits for tokio's wake-up, as without busy polling.
pub fn register(fd: RawFd) {
    let ep = set();
    if ep < 0 {
        return;
    }
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
        u64: fd as u64,
    };
    // SAFETY: `ev` is a valid epoll_event; `fd` is an open socket of this thread.
    unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
}

/// Called by tokio just before this thread parks: returns as soon as one of its
/// sockets is readable, another thread queued work for it, or `budget` passed.
pub fn before_park(budget: Duration, handle: &tokio::runtime::Handle) {
    let ep = SET.with(Cell::get);
    if ep < 0 {
        return;
    }
    let start = Instant::now();
    let mut ev = [libc::epoll_event { events: 0, u64: 0 }];
    loop {
        // SAFETY: one-element buffer, zero timeout.
        if unsafe { libc::epoll_wait(ep, ev.as_mut_ptr(), 1, 0) } != 0 {
            return; // an event (or an error: stop polling this round)
        }
        if handle.metrics().global_queue_depth() > 0 || start.elapsed() >= budget {
            return;
        }
        // Lets a runnable client sharing this CPU go first.
        std::thread::yield_now();
    }
}
