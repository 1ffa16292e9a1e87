//! Per-command statistics (INFO commandstats and latencystats, LATENCY
//! HISTOGRAM) and error statistics (INFO errorstats, total_error_replies).
//!
//! Every thread that runs commands counts into its own block, one entry per
//! command-table entry, so the hot path writes only cache lines no other core
//! writes: a plain load and store per counter (each block has one writer), no
//! lock and no atomic read-modify-write. INFO adds the blocks up.
//! Error replies are counted where they are written, in
//! protocol::errorstats (re-exported here).
//! CONFIG RESETSTAT bumps a generation instead of writing other threads'
//! blocks: a block from an older generation reads as zero, and its thread
//! clears it before it next counts.

use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

pub use crate::protocol::errorstats::{count_error, error_counts, total_error_replies};

fn clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// Measures one command's run (calibrates the TSC clock on first use).
pub struct Timer(u64);

impl Timer {
    pub fn start() -> Timer {
        Timer(clock().raw())
    }

    pub fn elapsed_nanos(&self) -> u64 {
        let c = clock();
        c.delta_as_nanos(self.0, c.raw())
    }
}

/// Latency buckets: bucket k counts calls of at most 1024 << k nanoseconds
/// (Redis reports its histograms on the same base-2 grid from 1.024 µs).
pub const BUCKETS: usize = 32;

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    nanos: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
    histogram: [AtomicU64; BUCKETS],
}

/// One thread's counters.
struct Block {
    generation: AtomicU64,
    commands: Box<[Counters]>,
}

static GENERATION: AtomicU64 = AtomicU64::new(0);
static BLOCKS: Mutex<Vec<&'static Block>> = Mutex::new(Vec::new());

thread_local! {
    static LOCAL: Cell<Option<&'static Block>> = const { Cell::new(None) };
}

fn bump(c: &AtomicU64, by: u64) {
    // One writer per block: no read-modify-write instruction needed.
    c.store(c.load(Relaxed).wrapping_add(by), Relaxed);
}

/// This thread's block, cleared first if a RESETSTAT happened since it last
/// counted. Blocks live as long as the process (one per thread that ever ran
/// a command: the connection threads and the log replay).
fn local() -> &'static Block {
    let block = LOCAL.get().unwrap_or_else(|| {
        let n = crate::commands::table::COMMANDS.len();
        let block: &'static Block = Box::leak(Box::new(Block {
            generation: AtomicU64::new(GENERATION.load(Relaxed)),
            commands: (0..n).map(|_| Counters::default()).collect(),
        }));
        BLOCKS.lock().push(block);
        LOCAL.set(Some(block));
        block
    });
    let generation = GENERATION.load(Relaxed);
    if block.generation.load(Relaxed) != generation {
        for c in block.commands.iter() {
            for a in [&c.calls, &c.nanos, &c.rejected, &c.failed]
                .into_iter()
                .chain(c.histogram.iter())
            {
                a.store(0, Relaxed);
            }
        }
        block.generation.store(generation, Relaxed);
    }
    block
}

fn bucket(nanos: u64) -> usize {
    let units = nanos.saturating_sub(1) >> 10; // whole 1024 ns steps beyond the first
    ((u64::BITS - units.leading_zeros()) as usize).min(BUCKETS - 1)
}

/// A command of table entry `index` ran for `nanos`; `failed` if it replied
/// with an error of its own.
pub fn record_call(index: usize, nanos: u64, failed: bool, histogram: bool) {
    let c = &local().commands[index];
    bump(&c.calls, 1);
    bump(&c.nanos, nanos);
    if failed {
        bump(&c.failed, 1);
    }
    if histogram {
        bump(&c.histogram[bucket(nanos)], 1);
    }
}

/// A blocked command of table entry `index` (its call counted when it
/// blocked) was served or unblocked, as Redis's updateStatsOnUnblock counts
/// it: `nanos` more, a failed call if `failed`, a histogram sample.
pub fn record_unblocked(index: usize, nanos: u64, failed: bool, histogram: bool) {
    let c = &local().commands[index];
    bump(&c.nanos, nanos);
    if failed {
        bump(&c.failed, 1);
    }
    if histogram {
        bump(&c.histogram[bucket(nanos)], 1);
    }
}

/// A command of table entry `index` was refused before it ran.
/// A script of table entry `index` that paused past its busy threshold (its
/// call counted then, with the time so far) has ended: `more` nanoseconds
/// since the pause, `total` for its latency sample, failed if its reply was
/// an error (Redis's call() returns, and counts, only at the script's end).
pub fn record_resumed(index: usize, more: u64, total: u64, failed: bool, histogram: bool) {
    let c = &local().commands[index];
    bump(&c.nanos, more);
    if failed {
        bump(&c.failed, 1);
    }
    if histogram {
        bump(&c.histogram[bucket(total)], 1);
    }
}

pub fn record_rejected(index: usize) {
    bump(&local().commands[index].rejected, 1);
}

/// Totals of one command over every thread.
#[derive(Default, Clone)]
pub struct CommandTotals {
    pub calls: u64,
    pub nanos: u64,
    pub rejected: u64,
    pub failed: u64,
    pub histogram: [u64; BUCKETS],
}

/// Totals per table entry (indexed as `COMMANDS`).
pub fn totals() -> Vec<CommandTotals> {
    let n = crate::commands::table::COMMANDS.len();
    let mut out = vec![CommandTotals::default(); n];
    let generation = GENERATION.load(Relaxed);
    for block in BLOCKS.lock().iter() {
        if block.generation.load(Relaxed) != generation {
            continue;
        }
        for (t, c) in out.iter_mut().zip(block.commands.iter()) {
            t.calls += c.calls.load(Relaxed);
            t.nanos += c.nanos.load(Relaxed);
            t.rejected += c.rejected.load(Relaxed);
            t.failed += c.failed.load(Relaxed);
            for (a, b) in t.histogram.iter_mut().zip(c.histogram.iter()) {
                *a += b.load(Relaxed);
            }
        }
    }
    out
}

/// The upper bound of histogram bucket `k`, in microseconds (as Redis
/// labels it).
pub fn bucket_micros(k: usize) -> u64 {
    (1024u64 << k) / 1000
}

/// The latency below which `pct` percent of the calls fell, in microseconds
/// (the upper bound of the bucket holding that rank).
pub fn percentile_micros(histogram: &[u64; BUCKETS], pct: f64) -> f64 {
    let total: u64 = histogram.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let rank = ((pct / 100.0) * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (k, n) in histogram.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return (1024u64 << k) as f64 / 1000.0;
        }
    }
    (1024u64 << (BUCKETS - 1)) as f64 / 1000.0
}

/// INFO commandstats: the commands called, rejected or failed since the
/// last CONFIG RESETSTAT.
pub fn commandstats_section(o: &mut String) {
    use crate::commands::table::COMMANDS;
    use std::fmt::Write;
    o.push_str("# Commandstats\r\n");
    let totals = totals();
    for (c, t) in COMMANDS.iter().zip(&totals) {
        if t.calls == 0 && t.rejected == 0 && t.failed == 0 {
            continue;
        }
        let usec = t.nanos / 1000;
        let per_call = if t.calls == 0 {
            0.0
        } else {
            t.nanos as f64 / 1000.0 / t.calls as f64
        };
        let _ = write!(
            o,
            "cmdstat_{}:calls={},usec={usec},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
            c.name, t.calls, t.rejected, t.failed
        );
    }
}

/// INFO latencystats: each command's `latency-tracking-info-percentiles`.
pub fn latencystats_section(settings: &crate::config::Settings, o: &mut String) {
    use crate::commands::table::COMMANDS;
    use std::fmt::Write;
    o.push_str("# Latencystats\r\n");
    if settings.latency_tracking {
        let totals = totals();
        for (c, t) in COMMANDS.iter().zip(&totals) {
            if t.histogram.iter().all(|n| *n == 0) {
                continue;
            }
            let _ = write!(o, "latency_percentiles_usec_{}:", c.name);
            for (i, p) in settings.latency_percentiles.iter().enumerate() {
                let v = percentile_micros(&t.histogram, *p);
                let sep = if i > 0 { "," } else { "" };
                let _ = write!(o, "{sep}p{p}={v:.3}");
            }
            o.push_str("\r\n");
        }
    }
}

/// CONFIG RESETSTAT.
pub fn reset() {
    GENERATION.fetch_add(1, Relaxed);
    crate::protocol::errorstats::reset();
}

/// `latency-tracking-info-percentiles`' check (registered in
/// boot::CONFIG_CHECKS): space-separated percentiles, each within 0..100.
pub const CONFIG_CHECK: crate::config::Check = crate::config::Check {
    option: "latency-tracking-info-percentiles",
    check: canonical_percentiles,
};

fn canonical_percentiles(value: &str) -> Result<String, String> {
    let parsed: Result<Vec<f64>, String> = value
        .split_whitespace()
        .map(|w| match w.parse::<f64>() {
            // Redis's string2d refuses NaN as it refuses words.
            Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
            Ok(v) if !v.is_nan() => Err(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                    .to_string(),
            ),
            _ => Err("Invalid latency-tracking-info-percentiles parameters".to_string()),
        })
        .collect();
    parsed.map(|p| {
        p.iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_on_redis_grid() {
        assert_eq!(bucket(1), 0);
        assert_eq!(bucket(1024), 0);
        assert_eq!(bucket(1025), 1);
        assert_eq!(bucket(2048), 1);
        assert_eq!(bucket(2049), 2);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_micros(0), 1);
        assert_eq!(bucket_micros(4), 16);
        let mut h = [0u64; BUCKETS];
        h[0] = 99;
        h[10] = 1;
        assert_eq!(percentile_micros(&h, 50.0), 1.024);
        assert_eq!(percentile_micros(&h, 100.0), 1048.576);
    }
}

/// What timing and counting add per command:
/// `cargo test --release -p blinkdb-server --lib overhead -- --ignored --nocapture`.
#[cfg(test)]
mod overhead {
    #[test]
    #[ignore]
    fn per_command_overhead() {
        let n = 20_000_000u64;
        let per_op = |t: std::time::Instant| t.elapsed().as_nanos() as f64 / n as f64;
        let mut acc = 0;
        let t = std::time::Instant::now();
        for i in 0..n {
            let timer = super::Timer::start();
            acc += std::hint::black_box(i) & 1;
            super::record_call((i % 3) as usize, timer.elapsed_nanos(), false, true);
        }
        eprintln!("timer + record: {:.1} ns/command", per_op(t));
        let t = std::time::Instant::now();
        for i in 0..n {
            super::record_call((i % 3) as usize, i & 1023, false, true);
        }
        eprintln!("record only: {:.1} ns/command", per_op(t));
        let t = std::time::Instant::now();
        for i in 0..n {
            acc += std::hint::black_box(i) & 1;
        }
        eprintln!("empty loop: {:.1} ns ({acc})", per_op(t));
    }
}
