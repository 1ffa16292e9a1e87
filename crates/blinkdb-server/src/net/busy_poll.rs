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
//!
//! Polling adapts to the load (`Governor`): a poll that runs out its window
//! without finding work is pure cost, so after `MISSES_TO_STOP` such polls in a
//! row the thread sleeps at once, as with `busy-poll-us 0`. While it does, each
//! wake-up says whether a poll would have paid: a sleep shorter than twice the
//! window means the next request came soon after the last reply. After enough
//! short sleeps in a row polling resumes. A resumed streak that again only
//! missed doubles the number of short sleeps asked for next time, so a load
//! whose gaps sit just past the window pays for a few polls, not one per
//! request.
//!
//! Three more cases where a poll costs more than it saves:
//! - The thread read from more than one socket since it last parked: its
//!   clients overlap, a wake-up's latency is spread over their requests, and
//!   the spin is CPU taken from them (50 clients: one park per ~40 requests).
//!   It sleeps at once. A poll pays in ping-pong, one request per wake-up.
//! - The request that ended each of the last `SWITCHES_TO_STOP` parks came
//!   from another client than the request before it: clients that take turns.
//!   A server that answers faster than its clients send parks after every
//!   request even under 50 clients (`redis-benchmark -c 50 -P 1`: 4 polls per
//!   5 requests, 99% of them hits), and each poll then spins through the gap
//!   in which the load generator, which is what limits throughput, works on
//!   other connections: no client waits on the server's wake-up, so the spin
//!   buys nothing. It sleeps at once until a park is again ended by the client
//!   it last served.
//! - A poll that took far longer than its window was descheduled in
//!   `sched_yield`: the CPUs are oversubscribed (several servers and the load
//!   generator on 2 cores), and a yield can hand a whole time slice to another
//!   process while a request waits. Polling stops as after misses, and the
//!   evidence asked to resume it doubles.
//!
//! In the first two cases the thread may nap instead of sleeping at once,
//! while its clients hold a backlog (`nap.rs`).
//!
//! Measured in docs/design.md, "Busy polling".

use std::cell::Cell;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::nap::{backlog, judge, Active, Nap, NapGovernor};

/// Polls in a row that found nothing before this thread stops polling.
const MISSES_TO_STOP: u32 = 3;
/// Parks in a row ended by another client than the one served before them
/// after which this thread stops polling.
const SWITCHES_TO_STOP: u32 = 3;
/// Short sleeps in a row that resume polling, at first and at most.
const SHORT_SLEEPS_FIRST: u32 = 2;
const SHORT_SLEEPS_MAX: u32 = 64;
/// The longest nap, whatever the window: a nap delays the requests that come
/// during it, and about two requests of a saturated load tool over TLS come in
/// this time.
const NAP_MAX: Duration = Duration::from_micros(50);
/// A wake-up this long after a nap ended means tokio's `epoll_wait` slept:
/// the nap found nothing (a wait that finds events returns in a few us).
const SLEPT_AFTER_NAP: Duration = Duration::from_micros(20);

/// Whether a connection thread polls before it sleeps, from what its recent
/// polls and sleeps found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Governor {
    polling: bool,
    /// Polls in a row that ran out the window (while polling).
    misses: u32,
    /// Whether any poll found work since polling last resumed.
    hit_since_resume: bool,
    /// Sleeps in a row shorter than twice the window (while not polling).
    short_sleeps: u32,
    /// Short sleeps in a row needed to resume.
    resume_after: u32,
}

impl Default for Governor {
    fn default() -> Self {
        Governor {
            polling: true,
            misses: 0,
            hit_since_resume: true,
            short_sleeps: 0,
            resume_after: SHORT_SLEEPS_FIRST,
        }
    }
}

impl Governor {
    pub fn polling(&self) -> bool {
        self.polling
    }

    /// A poll ended: `hit` if it found work before the window ran out.
    pub fn polled(&mut self, hit: bool) {
        if hit {
            self.misses = 0;
            self.hit_since_resume = true;
            self.resume_after = SHORT_SLEEPS_FIRST;
            return;
        }
        self.misses += 1;
        if self.misses >= MISSES_TO_STOP {
            // Resumed for nothing: ask for longer evidence next time.
            self.stop(!self.hit_since_resume);
        }
    }

    /// Stops polling; `doubt` doubles the short sleeps the next resume needs.
    fn stop(&mut self, doubt: bool) {
        if doubt {
            self.resume_after = (self.resume_after * 2).min(SHORT_SLEEPS_MAX);
        }
        self.polling = false;
        self.short_sleeps = 0;
    }

    /// A poll was descheduled (it ran far past its window): stop polling, and
    /// ask for longer evidence before the next resume.
    pub fn contended(&mut self) {
        self.stop(true);
    }

    /// The thread slept (without polling) for `slept`; `window` is busy-poll-us.
    pub fn slept(&mut self, slept: Duration, window: Duration) {
        if self.polling {
            return;
        }
        // Twice the window: the measured sleep includes the wake-up itself.
        if slept < window * 2 {
            self.short_sleeps += 1;
            if self.short_sleeps >= self.resume_after {
                self.polling = true;
                self.misses = 0;
                self.hit_since_resume = false;
            }
        } else {
            self.short_sleeps = 0;
        }
    }
}

/// A nap's state until its verdict.
#[derive(Clone, Copy)]
enum Napping {
    No,
    /// Napped until this instant; tokio's park follows.
    Until(Instant),
    /// The park after the nap found events: the next turn's reads judge it.
    Judge,
}

thread_local! {
    /// This thread's epoll set of connections (-1: none yet, or it failed).
    static SET: Cell<RawFd> = const { Cell::new(-1) };
    static GOVERNOR: Cell<Governor> = Cell::new(Governor::default());
    /// When this thread went to sleep without polling (None: it did not).
    static ASLEEP_SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
    /// Socket reads with data since this thread last parked.
    static READS: Cell<u32> = const { Cell::new(0) };
    /// The client this thread last read from.
    static LAST_CLIENT: Cell<u64> = const { Cell::new(0) };
    /// The client served just before the last park (None once the first read
    /// after it is counted).
    static PARKED_AFTER: Cell<Option<u64>> = const { Cell::new(None) };
    /// Parks in a row whose first read was another client's.
    static SWITCHES: Cell<u32> = const { Cell::new(0) };
    static ACTIVE: Cell<Active> = const { Cell::new(Active::NONE) };
    static NAP_GOVERNOR: Cell<NapGovernor> = Cell::new(NapGovernor::default());
    static NAPPING: Cell<Napping> = const { Cell::new(Napping::No) };
}

/// A connection of this thread read a request batch from `client` (called
/// per read with data).
#[inline]
pub fn read_done(client: u64) {
    READS.with(|r| r.set(r.get().saturating_add(1)));
    if let Some(before) = PARKED_AFTER.with(Cell::take) {
        SWITCHES.with(|s| {
            s.set(if before == client {
                0
            } else {
                s.get().saturating_add(1)
            })
        });
    }
    LAST_CLIENT.with(|c| c.set(client));
    ACTIVE.with(|a| {
        let mut active = a.get();
        active.read(client);
        a.set(active);
    });
}

/// Polls run, and those that found work, over all threads (INFO stats
/// `busy_poll_polls` and `busy_poll_hits`); naps taken, and those judged a hit
/// (`busy_poll_naps`, `busy_poll_nap_hits`).
static POLLS: AtomicU64 = AtomicU64::new(0);
static HITS: AtomicU64 = AtomicU64::new(0);
static NAPS: AtomicU64 = AtomicU64::new(0);
static NAP_HITS: AtomicU64 = AtomicU64::new(0);

/// [polls, hits, naps, nap hits] since start.
pub fn counts() -> [u64; 4] {
    [&POLLS, &HITS, &NAPS, &NAP_HITS].map(|c| c.load(Ordering::Relaxed))
}

/// A poll that ran this many windows long was descheduled.
const DESCHEDULED: u32 = 4;

fn set() -> RawFd {
    SET.with(|s| {
        if s.get() < 0 {
            // SAFETY: plain system calls; a failure leaves -1 and disables
            // polling. A nap is a timer sleep, which Linux may stretch by the
            // thread's timer slack (50 us by default): 1 us keeps it the
            // window it was asked for.
            unsafe {
                s.set(libc::epoll_create1(libc::EPOLL_CLOEXEC));
                libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong);
            }
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

/// `busy-poll-us`, which CONFIG SET changes while the threads run (0: never poll).
static WINDOW_US: AtomicU64 = AtomicU64::new(0);

/// CONFIG SET busy-poll-us takes effect at once.
pub const fn on_set<S>() -> crate::config::OnSet<S> {
    crate::config::OnSet {
        options: &["busy-poll-us"],
        stage: crate::config::Stage::BeforeCommit,
        apply: apply_on_set::<S>,
    }
}

fn apply_on_set<S>(
    _: &S,
    s: &crate::config::Settings,
    _: &dyn Fn(&str) -> bool,
) -> Result<(), (String, String)> {
    set_window(s.busy_poll_us);
    Ok(())
}

pub fn set_window(us: u64) {
    WINDOW_US.store(us, Ordering::Relaxed);
}

fn window() -> Duration {
    Duration::from_micros(WINDOW_US.load(Ordering::Relaxed))
}

/// Called by tokio just before this thread parks: while polling pays (see
/// `Governor`), returns as soon as one of its sockets is readable, another
/// thread queued work for it, or the `busy-poll-us` window passed; otherwise
/// at once.
pub fn before_park(handle: &tokio::runtime::Handle) {
    let budget = window();
    let ep = SET.with(Cell::get);
    if ep < 0 || budget.is_zero() {
        return;
    }
    let reads = READS.with(|r| r.replace(0));
    if let Napping::Judge = NAPPING.with(|n| n.replace(Napping::No)) {
        nap_judged(judge(reads, ACTIVE.with(Cell::get).count()));
    }
    match reads {
        0 => {}
        1 => PARKED_AFTER.with(|p| p.set(Some(LAST_CLIENT.with(Cell::get)))),
        // Overlapping clients: no poll and no verdict on polling; a nap
        // while they hold a backlog.
        _ => return nap(reads, budget, handle),
    }
    if SWITCHES.with(Cell::get) >= SWITCHES_TO_STOP {
        // Clients taking turns: no poll and no verdict either; a nap as above.
        return nap(reads, budget, handle);
    }
    let mut governor = GOVERNOR.with(Cell::get);
    if !governor.polling() {
        ASLEEP_SINCE.with(|a| a.set(Some(Instant::now())));
        return;
    }
    let start = Instant::now();
    let hit = poll(ep, start, budget, handle);
    POLLS.fetch_add(1, Ordering::Relaxed);
    if hit {
        HITS.fetch_add(1, Ordering::Relaxed);
    }
    if start.elapsed() > budget * DESCHEDULED {
        governor.contended();
    } else {
        governor.polled(hit);
    }
    GOVERNOR.with(|g| g.set(governor));
}

/// Sleeps on a timer for the window (at most `NAP_MAX`) if the turn that
/// just ended (`turn` sockets read) left the clients a backlog and recent naps
/// paid (module comment). tokio's `epoll_wait` comes next and finds what came
/// meanwhile; the turn after it judges the nap.
fn nap(turn: u32, budget: Duration, handle: &tokio::runtime::Handle) {
    if !backlog(turn, ACTIVE.with(Cell::get).count()) || handle.metrics().global_queue_depth() > 0 {
        return;
    }
    let mut governor = NAP_GOVERNOR.with(Cell::get);
    let now = governor.nap_now();
    NAP_GOVERNOR.with(|g| g.set(governor));
    if !now {
        return;
    }
    std::thread::sleep(budget.min(NAP_MAX));
    NAPS.fetch_add(1, Ordering::Relaxed);
    NAPPING.with(|n| n.set(Napping::Until(Instant::now())));
}

fn nap_judged(verdict: Nap) {
    if verdict == Nap::Hit {
        NAP_HITS.fetch_add(1, Ordering::Relaxed);
    }
    NAP_GOVERNOR.with(|g| {
        let mut governor = g.get();
        governor.napped(verdict);
        g.set(governor);
    });
}

/// Called by tokio when this thread wakes: a sleep without polling tells the
/// governor how soon work came; a sleep after a nap means it found nothing.
pub fn after_unpark() {
    if let Napping::Until(end) = NAPPING.with(Cell::get) {
        if end.elapsed() > SLEPT_AFTER_NAP {
            NAPPING.with(|n| n.set(Napping::No));
            nap_judged(Nap::Empty);
        } else {
            NAPPING.with(|n| n.set(Napping::Judge));
        }
    }
    let budget = window();
    if let Some(since) = ASLEEP_SINCE.with(|a| a.take()) {
        let mut governor = GOVERNOR.with(Cell::get);
        governor.slept(since.elapsed(), budget);
        GOVERNOR.with(|g| g.set(governor));
    }
}

/// Polls until work comes (true) or `budget` passes (false).
fn poll(ep: RawFd, start: Instant, budget: Duration, handle: &tokio::runtime::Handle) -> bool {
    let mut ev = [libc::epoll_event { events: 0, u64: 0 }];
    loop {
        // SAFETY: one-element buffer, zero timeout.
        match unsafe { libc::epoll_wait(ep, ev.as_mut_ptr(), 1, 0) } {
            0 => {}
            n => return n > 0, // an event; an error stops polling this round
        }
        if handle.metrics().global_queue_depth() > 0 {
            return true;
        }
        if start.elapsed() >= budget {
            return false;
        }
        // Lets a runnable client sharing this CPU go first.
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_micros(50);
    const SHORT: Duration = Duration::from_micros(60);
    const LONG: Duration = Duration::from_micros(500);

    fn stopped() -> Governor {
        let mut g = Governor::default();
        for _ in 0..MISSES_TO_STOP {
            assert!(g.polling());
            g.polled(false);
        }
        assert!(!g.polling());
        g
    }

    #[test]
    fn polls_while_polls_find_work() {
        let mut g = Governor::default();
        for _ in 0..1000 {
            g.polled(false);
            g.polled(false);
            g.polled(true); // two misses then a hit: never three in a row
        }
        assert!(g.polling());
    }

    #[test]
    fn stops_after_misses_in_a_row_and_long_sleeps_keep_it_stopped() {
        let mut g = stopped();
        for _ in 0..100 {
            g.slept(LONG, WINDOW);
        }
        assert!(!g.polling());
        // Short sleeps broken by a long one do not add up.
        g.slept(SHORT, WINDOW);
        g.slept(LONG, WINDOW);
        g.slept(SHORT, WINDOW);
        assert!(!g.polling());
    }

    #[test]
    fn a_descheduled_poll_stops_polling_and_doubles_the_evidence() {
        let mut g = Governor::default();
        g.contended();
        assert!(!g.polling());
        for _ in 0..SHORT_SLEEPS_FIRST {
            g.slept(SHORT, WINDOW);
        }
        assert!(!g.polling(), "resuming needs twice the short sleeps now");
        for _ in 0..SHORT_SLEEPS_FIRST {
            g.slept(SHORT, WINDOW);
        }
        assert!(g.polling());
    }

    #[test]
    fn short_sleeps_in_a_row_resume() {
        let mut g = stopped();
        for _ in 0..SHORT_SLEEPS_FIRST {
            g.slept(SHORT, WINDOW);
        }
        assert!(g.polling());
    }

    #[test]
    fn a_resume_that_finds_nothing_asks_for_twice_the_evidence() {
        let mut g = stopped();
        let mut needed = SHORT_SLEEPS_FIRST;
        for _ in 0..10 {
            for _ in 0..needed - 1 {
                g.slept(SHORT, WINDOW);
            }
            assert!(!g.polling(), "resumed before {needed} short sleeps");
            g.slept(SHORT, WINDOW);
            assert!(g.polling());
            for _ in 0..MISSES_TO_STOP {
                g.polled(false);
            }
            assert!(!g.polling());
            needed = (needed * 2).min(SHORT_SLEEPS_MAX);
        }
        assert_eq!(needed, SHORT_SLEEPS_MAX);
        // One hit after a resume restores the first threshold.
        for _ in 0..SHORT_SLEEPS_MAX {
            g.slept(SHORT, WINDOW);
        }
        assert!(g.polling());
        g.polled(true);
        for _ in 0..MISSES_TO_STOP {
            g.polled(false);
        }
        for _ in 0..SHORT_SLEEPS_FIRST {
            g.slept(SHORT, WINDOW);
        }
        assert!(g.polling());
    }

    #[test]
    fn sleeps_while_polling_change_nothing() {
        let mut g = Governor::default();
        let before = g;
        g.slept(LONG, WINDOW);
        assert_eq!(g, before);
    }
}
