//! Wall-clock time in milliseconds, the unit Redis uses for expiry.

use std::time::{SystemTime, UNIX_EPOCH};

use std::cell::Cell;

thread_local! {
    /// Non-zero while this thread runs one batch of pipelined commands: the time
    /// read when the batch started. Redis reads its clock once per command, not at
    /// every expiry check; a profile of pipelined SET had clock_gettime at 6%.
    /// While a script runs, its start: as in Redis 7.0, a key cannot expire
    /// between two of its calls.
    static BATCH_NOW: Cell<u64> = const { Cell::new(0) };
}

/// Milliseconds since the Unix epoch (the batch's time while one is running).
pub fn now_ms() -> u64 {
    match BATCH_NOW.get() {
        0 => read_clock_ms(),
        pinned => pinned,
    }
}

fn read_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Reads the clock once for a batch of commands this thread is about to run;
/// [`now_ms`] returns that time until the guard is dropped. Inside a batch
/// or a script already running, their time goes on.
pub fn batch() -> BatchClock {
    let before = BATCH_NOW.get();
    let now = if before != 0 { before } else { read_clock_ms() };
    BATCH_NOW.set(now);
    BatchClock { now, before }
}

/// [`now_ms`] returns `ms` on this thread until the guard is dropped (a
/// script's calls: its start time).
pub fn pin(ms: u64) -> BatchClock {
    BatchClock {
        now: ms,
        before: BATCH_NOW.replace(ms),
    }
}

/// See [`batch`]; dropped, the time of before it comes back.
pub struct BatchClock {
    pub now: u64,
    before: u64,
}

impl Drop for BatchClock {
    fn drop(&mut self) {
        BATCH_NOW.set(self.before);
    }
}

/// Microseconds since the Unix epoch (for TIME).
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}
