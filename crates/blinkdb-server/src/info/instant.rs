//! INFO's instantaneous figures, sampled by the cron as Redis's
//! trackInstantaneousMetric does: every 100 ms the rate since the previous
//! sample goes into a ring of 16, and INFO shows the ring's mean. Also the
//! peak of the sampled memory (used_memory_peak).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

const SAMPLES: usize = 16;

/// The metrics INFO stats shows as instantaneous_*.
#[derive(Clone, Copy)]
pub enum Metric {
    Ops = 0,
    NetInput = 1,
    NetOutput = 2,
}

#[derive(Default)]
struct Ring {
    last_ms: u64,
    last_value: u64,
    samples: [f64; SAMPLES],
    next: usize,
}

#[derive(Default)]
pub struct Instant {
    rings: Mutex<[Ring; 3]>,
    memory_peak: AtomicU64,
}

impl Instant {
    /// Records the current totals (commands, bytes in, bytes out) at `now_ms`.
    pub fn sample(&self, now_ms: u64, totals: [u64; 3]) {
        let mut rings = self.rings.lock();
        for (ring, value) in rings.iter_mut().zip(totals) {
            let elapsed = now_ms.saturating_sub(ring.last_ms);
            if ring.last_ms != 0 && elapsed > 0 {
                let rate = value.saturating_sub(ring.last_value) as f64 * 1000.0 / elapsed as f64;
                ring.samples[ring.next] = rate;
                ring.next = (ring.next + 1) % SAMPLES;
            }
            ring.last_ms = now_ms;
            ring.last_value = value;
        }
    }

    /// The mean rate per second of the last 16 samples.
    pub fn rate(&self, metric: Metric) -> f64 {
        let rings = self.rings.lock();
        rings[metric as usize].samples.iter().sum::<f64>() / SAMPLES as f64
    }

    /// Notes a memory reading; returns the peak so far.
    pub fn note_memory(&self, bytes: u64) -> u64 {
        self.memory_peak
            .fetch_max(bytes, Ordering::Relaxed)
            .max(bytes)
    }

    pub fn memory_peak(&self) -> u64 {
        self.memory_peak.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_the_mean_of_the_ring() {
        let m = Instant::default();
        m.sample(1000, [0, 0, 0]);
        m.sample(1100, [100, 1024, 0]);
        // One sample of 1000/s among 16.
        assert_eq!(m.rate(Metric::Ops), 1000.0 / 16.0);
        assert_eq!(m.rate(Metric::NetInput), 10240.0 / 16.0);
        for t in 2..=20 {
            m.sample(1000 + t * 100, [t * 100, 0, 0]);
        }
        assert_eq!(m.rate(Metric::Ops), 1000.0);
        assert_eq!(m.note_memory(5), 5);
        assert_eq!(m.note_memory(3), 5);
        assert_eq!(m.memory_peak(), 5);
    }
}
