//! When a connection thread naps (`busy_poll.rs`): where busy polling does not
//! poll (overlapping clients, clients taking turns), while the clients hold a
//! backlog. A thread that sleeps in `epoll_wait` is woken by the next request,
//! and the client whose write finds it asleep pays for the wake-up. Under
//! `redis-benchmark -c 50 -P 1` over TLS that client is the load tool, which
//! saturates a core and so sets the throughput: it woke BlinkDB's thread after
//! one request in 5 (Redis's, slower per request and so idle less often, one in
//! 12). A thread that sleeps on a timer instead (`busy_poll.rs`'s `NAP_MAX`, no
//! longer than the window) and then looks finds what came meanwhile, and no
//! client's write wakes it. That pays only while the clients are busy with
//! other connections: then a request that comes during the nap was not held up
//! by it, since the client had others to send first. Where the clients instead
//! wait on the replies just written (`redis-benchmark -c 4`: all four answered,
//! the next request needs the client's round trip), a nap only makes them wait.
//! So a thread naps only when its last turn served at most a quarter of the
//! clients it read from recently (`backlog`: many connections, few served, the
//! rest somewhere on the client's side), and judges each nap by the turn after
//! it (`judge`, no system call): two or more sockets read, but fewer than half
//! of the recently active clients, is a hit; half or more means the clients had
//! been waiting for the nap to end, and napping stops at once; one or none (or
//! a sleep in `epoll_wait` after the nap) saved nothing, and three such naps in
//! a row stop napping. A stop skips a number of eligible parks that doubles per
//! stop without a hit since the last (`NapGovernor`).
//!
//! Measured in docs/design.md, "Busy polling".

/// Fewer recently active clients than this never nap: whether the others are
/// on the client's side or on their way cannot be told apart.
const NAP_MIN_ACTIVE: u32 = 4;
/// Naps in a row that found at most one socket before napping stops.
const EMPTY_NAPS_TO_STOP: u32 = 3;
/// Eligible parks skipped after a stop, at first and at most.
const NAP_SKIP_FIRST: u32 = 2;
const NAP_SKIP_MAX: u32 = 1024;
/// Reads after which the older of the two maps of recent clients is dropped.
const ACTIVE_ROTATE: u32 = 64;

/// Whether a thread whose turn read from `turn` sockets, with `active`
/// clients read from recently, may nap: the turn served few of them, so the
/// rest are with the client (module comment).
pub fn backlog(turn: u32, active: u32) -> bool {
    active >= NAP_MIN_ACTIVE && turn.saturating_mul(4) <= active
}

/// What a nap bought, from the sockets read in the turn after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nap {
    /// Several requests, few of the active clients: the clients were busy.
    Hit,
    /// Half the active clients or more: they were waiting on the nap.
    Waited,
    /// One request or none: no wake-up saved for several requests.
    Empty,
}

/// The verdict on a nap after which `found` sockets were read, with `active`
/// clients read from recently.
pub fn judge(found: u32, active: u32) -> Nap {
    if found < 2 {
        Nap::Empty
    } else if found.saturating_mul(2) >= active {
        Nap::Waited
    } else {
        Nap::Hit
    }
}

/// Whether an eligible park naps, from what recent naps found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NapGovernor {
    /// Eligible parks still to pass without a nap.
    skip: u32,
    /// What `skip` becomes at the next stop.
    next_skip: u32,
    /// Naps in a row judged `Empty`.
    empty: u32,
}

impl Default for NapGovernor {
    fn default() -> Self {
        NapGovernor {
            skip: 0,
            next_skip: NAP_SKIP_FIRST,
            empty: 0,
        }
    }
}

impl NapGovernor {
    /// Called at an eligible park: whether to nap now (a skipped park counts).
    pub fn nap_now(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        true
    }

    pub fn napped(&mut self, verdict: Nap) {
        match verdict {
            Nap::Hit => {
                self.empty = 0;
                self.next_skip = NAP_SKIP_FIRST;
            }
            Nap::Waited => self.stop(),
            Nap::Empty => {
                self.empty += 1;
                if self.empty >= EMPTY_NAPS_TO_STOP {
                    self.stop();
                }
            }
        }
    }

    fn stop(&mut self) {
        self.skip = self.next_skip;
        self.next_skip = (self.next_skip * 2).min(NAP_SKIP_MAX);
        self.empty = 0;
    }
}

/// The clients a thread read from recently, as bits of two maps (a hash of
/// the client id picks the bit); the older map is dropped every
/// `ACTIVE_ROTATE` reads, so a client counts for 64 to 128 reads.
#[derive(Clone, Copy, Default)]
pub struct Active {
    now: u128,
    before: u128,
    reads: u32,
}

impl Active {
    pub const NONE: Active = Active {
        now: 0,
        before: 0,
        reads: 0,
    };

    #[inline]
    pub fn read(&mut self, client: u64) {
        // Fibonacci hashing: consecutive ids land on spread-out bits.
        self.now |= 1u128 << (client.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57);
        self.reads += 1;
        if self.reads >= ACTIVE_ROTATE {
            self.before = self.now;
            self.now = 0;
            self.reads = 0;
        }
    }

    pub fn count(&self) -> u32 {
        (self.now | self.before).count_ones()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naps_need_many_active_clients_and_a_turn_that_served_few() {
        // redis-benchmark -c 50 on one thread: a turn of 2-5 of 50 clients.
        assert!(backlog(5, 50));
        assert!(backlog(0, 50));
        // -c 4: a turn that served all four, or two of them, never naps; one
        // of four may, and the nap's verdict decides.
        assert!(!backlog(4, 4));
        assert!(!backlog(2, 4));
        assert!(backlog(1, 4));
        // One to three clients never nap (ping-pong is busy polling's).
        assert!(!backlog(0, 3));
        assert!(!backlog(1, 1));
        assert!(!backlog(u32::MAX, 50));
    }

    #[test]
    fn a_nap_is_judged_by_the_turn_after_it() {
        assert_eq!(judge(2, 50), Nap::Hit);
        assert_eq!(judge(24, 50), Nap::Hit);
        assert_eq!(judge(25, 50), Nap::Waited);
        assert_eq!(judge(4, 4), Nap::Waited);
        assert_eq!(judge(2, 4), Nap::Waited);
        assert_eq!(judge(1, 50), Nap::Empty);
        assert_eq!(judge(0, 50), Nap::Empty);
        assert_eq!(judge(u32::MAX, 50), Nap::Waited);
    }

    /// Naps taken over `parks` eligible parks whose naps all get `verdict`.
    fn naps_over(parks: u32, verdict: Nap) -> u32 {
        let mut g = NapGovernor::default();
        let mut naps = 0;
        for _ in 0..parks {
            if g.nap_now() {
                naps += 1;
                g.napped(verdict);
            }
        }
        naps
    }

    #[test]
    fn naps_go_on_while_they_hit() {
        assert_eq!(naps_over(1000, Nap::Hit), 1000);
        let mut g = NapGovernor::default();
        for _ in 0..1000 {
            assert!(g.nap_now());
            g.napped(Nap::Empty);
            g.napped(Nap::Empty);
            g.napped(Nap::Hit); // never three empty naps in a row
        }
    }

    #[test]
    fn naps_clients_waited_for_stop_at_once_and_back_off() {
        let mut g = NapGovernor::default();
        assert!(g.nap_now());
        g.napped(Nap::Waited);
        for _ in 0..NAP_SKIP_FIRST {
            assert!(!g.nap_now());
        }
        assert!(g.nap_now());
        g.napped(Nap::Waited);
        for _ in 0..NAP_SKIP_FIRST * 2 {
            assert!(!g.nap_now());
        }
        assert!(g.nap_now());
        // Clients that always wait (redis-benchmark -c 4): one nap per
        // NAP_SKIP_MAX eligible parks once backed off, about 20 in 10,000.
        let waited = naps_over(10_000, Nap::Waited);
        assert!(waited <= 20, "{waited}");
    }

    #[test]
    fn empty_naps_stop_after_three_in_a_row_and_a_hit_resets_the_backoff() {
        let mut g = NapGovernor::default();
        for _ in 0..EMPTY_NAPS_TO_STOP {
            assert!(g.nap_now());
            g.napped(Nap::Empty);
        }
        for _ in 0..NAP_SKIP_FIRST {
            assert!(!g.nap_now());
        }
        let empty = naps_over(10_000, Nap::Empty);
        assert!(empty <= 3 * 20, "{empty}");
        // A hit after a long backoff: the next stop skips the first count again.
        let mut g = NapGovernor::default();
        for _ in 0..5 {
            while !g.nap_now() {}
            g.napped(Nap::Waited);
        }
        while !g.nap_now() {}
        g.napped(Nap::Hit);
        g.napped(Nap::Waited);
        for _ in 0..NAP_SKIP_FIRST {
            assert!(!g.nap_now());
        }
        assert!(g.nap_now());
    }

    #[test]
    fn recent_clients_are_counted_and_forgotten() {
        let mut a = Active::default();
        for i in 0..(ACTIVE_ROTATE * 2) as u64 {
            a.read(1000 + i % 4);
        }
        assert_eq!(a.count(), 4);
        // Fifty clients in turn, consecutive ids: most land on their own bit.
        let mut a = Active::default();
        for i in 0..200u64 {
            a.read(7 + i % 50);
        }
        assert!(a.count() >= 35, "{}", a.count());
        // Two maps of 64 reads: after 128 reads from one client the others
        // are gone.
        for _ in 0..ACTIVE_ROTATE * 2 {
            a.read(3);
        }
        assert_eq!(a.count(), 1);
    }
}
