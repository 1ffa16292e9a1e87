//! `--rate`: a fixed offered load. Each client gets an equal share of the total
//! rate and a schedule of its own: its n-th operation is due at
//! `start + n * clients / rate`, and a batch of `--pipeline` operations goes out
//! when the first of them is due (so a pipeline counts as P requests). Clients'
//! schedules are staggered by a fraction of one interval, so 50 clients do not
//! all send at the same instant.
//!
//! The schedule is absolute: a client that fell behind (a slow reply, a timer
//! that fired late) sends its next batch at once until it is back on time, so
//! the run's average is the asked rate whenever the server can sustain it.
//! tokio's timers fire on a 1 ms grid, so at rates above ~1000 batches/s per
//! client batches leave in small bursts on each tick; the average holds.

use std::time::{Duration, Instant};

/// One client's send schedule.
#[derive(Debug, Clone)]
pub struct Pace {
    start: Instant,
    /// Seconds between two operations of this client.
    per_op: f64,
    /// Operations sent so far (the next one's index).
    sent: u64,
}

impl Pace {
    /// The schedule of client `client_id` of `clients`, for `rate` operations
    /// per second in total, from `start`.
    pub fn new(rate: f64, clients: usize, client_id: usize, start: Instant) -> Pace {
        let per_op = clients as f64 / rate;
        let stagger = Duration::from_secs_f64(per_op * client_id as f64 / clients as f64);
        Pace {
            start: start + stagger,
            per_op,
            sent: 0,
        }
    }

    /// When the next operation is due.
    pub fn due(&self) -> Instant {
        self.start + Duration::from_secs_f64(self.per_op * self.sent as f64)
    }

    /// `ops` more operations were sent.
    pub fn advance(&mut self, ops: usize) {
        self.sent += ops as u64;
    }

    /// Waits until the next operation is due (at once if it already is).
    pub async fn wait(&self) {
        let due = self.due();
        if due > Instant::now() {
            tokio::time::sleep_until(due.into()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_share_the_rate_and_are_staggered() {
        let start = Instant::now();
        // 1000 ops/s over 4 clients: each sends one op every 4 ms.
        let a = Pace::new(1000.0, 4, 0, start);
        let mut b = Pace::new(1000.0, 4, 2, start);
        assert_eq!(a.due(), start);
        assert_eq!(b.due(), start + Duration::from_millis(2));
        b.advance(16);
        assert_eq!(b.due(), start + Duration::from_millis(2 + 64));
    }

    #[test]
    fn a_late_client_is_due_at_once_until_back_on_schedule() {
        let now = Instant::now();
        let mut p = Pace::new(100.0, 1, 0, now - Duration::from_millis(95));
        // 95 ms late at 10 ms per op: ten ops are due already, the eleventh is not.
        for _ in 0..10 {
            assert!(p.due() <= now);
            p.advance(1);
        }
        assert!(p.due() > now);
    }
}
