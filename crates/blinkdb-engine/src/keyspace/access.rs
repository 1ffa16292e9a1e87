//! The access clock every key carries: Redis's 24-bit `lru` field of the
//! object header. Under an LRU (or no eviction) policy it holds the last
//! access time in seconds, wrapping at 2^24 s; under an LFU policy the last
//! decrement time in minutes (16 bits) and a logarithmic access counter
//! (8 bits). The field sits in the padding after `Value`'s tag (entry.rs), so
//! it is three align-1 atomics: a lookup updates it under a shard read lock.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};

/// Redis's LRU_CLOCK_MAX: the clock wraps above it.
pub const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;
/// Redis's LFU_INIT_VAL: the counter of a new key.
pub const LFU_INIT_VAL: u8 = 5;

/// Three bytes holding a 24-bit clock value.
pub struct Clock([AtomicU8; 3]);

impl Clock {
    pub const fn new(v: u32) -> Self {
        Clock([
            AtomicU8::new(v as u8),
            AtomicU8::new((v >> 8) as u8),
            AtomicU8::new((v >> 16) as u8),
        ])
    }

    #[inline]
    pub fn get(&self) -> u32 {
        let [a, b, c] = &self.0;
        a.load(Ordering::Relaxed) as u32
            | (b.load(Ordering::Relaxed) as u32) << 8
            | (c.load(Ordering::Relaxed) as u32) << 16
    }

    /// Stores `v` (its low 24 bits), writing only the bytes that change so
    /// that a key read again within the same second dirties no cache line.
    /// Two readers racing may mix their bytes; both wrote "about now", and
    /// the field is an estimate in Redis too.
    #[inline]
    pub fn set(&self, v: u32) {
        for (i, cell) in self.0.iter().enumerate() {
            let byte = (v >> (8 * i)) as u8;
            if cell.load(Ordering::Relaxed) != byte {
                cell.store(byte, Ordering::Relaxed);
            }
        }
    }
}

impl Clone for Clock {
    fn clone(&self) -> Self {
        Clock::new(self.get())
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock({})", self.get())
    }
}

/// Redis's LRU_CLOCK at `now_ms`.
pub fn lru_clock(now_ms: u64) -> u32 {
    ((now_ms / 1000) & LRU_CLOCK_MAX as u64) as u32
}

/// Redis's estimateObjectIdleTime, in milliseconds (the clock wraps once).
pub fn idle_ms(lru: u32, now_ms: u64) -> u64 {
    let clock = lru_clock(now_ms) as u64;
    let lru = lru as u64;
    let secs = if clock >= lru {
        clock - lru
    } else {
        clock + (LRU_CLOCK_MAX as u64 - lru)
    };
    secs * 1000
}

/// The clock value of a key last used `idle_secs` ago (RESTORE IDLETIME,
/// an RDB idle time): Redis's objectSetLRUOrLFU.
pub fn lru_for_idle(idle_secs: u64, now_ms: u64) -> u32 {
    let clock = lru_clock(now_ms) as i64;
    let mut abs = clock.wrapping_sub(idle_secs as i64);
    if abs < 0 {
        abs += LRU_CLOCK_MAX as i64;
    }
    // Redis stores it in a 24-bit field: the low bits, even of a time
    // further back than one wrap.
    abs as u32 & LRU_CLOCK_MAX
}

/// Redis's LFUDecrAndReturn for a decay time of `decay` minutes.
fn decayed(lfu: u32, now_ms: u64, decay: u32) -> u8 {
    let ldt = lfu >> 8;
    let counter = (lfu & 255) as u8;
    let now = minutes(now_ms);
    let elapsed = if now >= ldt {
        now - ldt
    } else {
        65535 - ldt + now
    };
    let periods = elapsed.checked_div(decay).unwrap_or(0);
    counter.saturating_sub(periods.min(255) as u8)
}

/// The access record an RDB file holds before a key (RDB_OPCODE_IDLE or
/// RDB_OPCODE_FREQ), if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SavedClock {
    Nothing,
    /// Seconds since the last access.
    Idle(u64),
    /// The LFU counter.
    Freq(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SaveMode {
    Nothing,
    Idle,
    /// With the decay time in minutes.
    Freq(u32),
}

/// How one RDB file records clocks: rdbSaveKeyValuePair's choice, made
/// once for the file from the policy at its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSave {
    mode: SaveMode,
    now_ms: u64,
}

impl ClockSave {
    /// Records nothing (DUMP payloads, files of tests).
    pub const NOTHING: ClockSave = ClockSave {
        mode: SaveMode::Nothing,
        now_ms: 0,
    };

    /// The record for a key whose clock is `clock`.
    pub fn record(&self, clock: u32) -> SavedClock {
        match self.mode {
            SaveMode::Nothing => SavedClock::Nothing,
            SaveMode::Idle => SavedClock::Idle(idle_ms(clock, self.now_ms) / 1000),
            SaveMode::Freq(decay) => SavedClock::Freq(decayed(clock, self.now_ms, decay)),
        }
    }
}

/// Redis's LFUGetTimeInMinutes.
fn minutes(now_ms: u64) -> u32 {
    ((now_ms / 60_000) & 0xffff) as u32
}

/// The policy the clocks follow, set from `maxmemory-policy`,
/// `lfu-log-factor` and `lfu-decay-time`.
pub struct AccessPolicy {
    lfu: AtomicBool,
    /// An LRU eviction policy (allkeys-lru, volatile-lru): RDB files carry
    /// idle times then, as Redis's rdbSaveKeyValuePair does.
    lru: AtomicBool,
    log_factor: AtomicU32,
    decay_time: AtomicU32,
}

impl Default for AccessPolicy {
    fn default() -> Self {
        AccessPolicy {
            lfu: AtomicBool::new(false),
            lru: AtomicBool::new(false),
            log_factor: AtomicU32::new(10),
            decay_time: AtomicU32::new(1),
        }
    }
}

impl AccessPolicy {
    /// `lfu`: the clocks hold LFU counters; `lru`: an LRU eviction policy
    /// (what RDB files carry depends on both).
    pub fn configure(&self, lfu: bool, lru: bool, log_factor: u32, decay_time: u32) {
        self.lru.store(lru, Ordering::Relaxed);
        self.log_factor.store(log_factor, Ordering::Relaxed);
        self.decay_time.store(decay_time, Ordering::Relaxed);
        self.lfu.store(lfu, Ordering::Relaxed);
    }

    /// Whether the clocks hold LFU counters.
    #[inline]
    pub fn is_lfu(&self) -> bool {
        self.lfu.load(Ordering::Relaxed)
    }

    /// The clock of a new value (Redis's createObject).
    pub fn fresh(&self, now_ms: u64) -> u32 {
        if self.is_lfu() {
            self.lfu_value(LFU_INIT_VAL, now_ms)
        } else {
            lru_clock(now_ms)
        }
    }

    /// The clock after an access (lookupKey: updateLFU, or the LRU clock).
    #[inline]
    pub fn touch(&self, clock: &Clock, now_ms: u64) {
        if self.is_lfu() {
            let counter = self.log_incr(self.freq(clock.get(), now_ms));
            clock.set(self.lfu_value(counter, now_ms));
        } else {
            clock.set(lru_clock(now_ms));
        }
    }

    /// An LFU clock value with counter `freq`, decremented now.
    pub fn lfu_value(&self, freq: u8, now_ms: u64) -> u32 {
        minutes(now_ms) << 8 | freq as u32
    }

    /// Redis's LFUDecrAndReturn: the counter after the decay periods that
    /// passed since its last decrement time.
    pub fn freq(&self, lfu: u32, now_ms: u64) -> u8 {
        decayed(lfu, now_ms, self.decay_time.load(Ordering::Relaxed))
    }

    /// What an RDB file written now says of each key's clock.
    pub fn save_mode(&self, now_ms: u64) -> ClockSave {
        let mode = if self.is_lfu() {
            SaveMode::Freq(self.decay_time.load(Ordering::Relaxed))
        } else if self.lru.load(Ordering::Relaxed) {
            SaveMode::Idle
        } else {
            SaveMode::Nothing
        };
        ClockSave { mode, now_ms }
    }

    /// Redis's LFULogIncr: the counter grows with probability
    /// 1 / ((counter - LFU_INIT_VAL) * lfu-log-factor + 1), up to 255.
    fn log_incr(&self, counter: u8) -> u8 {
        if counter == 255 {
            return 255;
        }
        let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
        let p = 1.0 / (base * self.log_factor.load(Ordering::Relaxed) as f64 + 1.0);
        if rand::random::<f64>() < p {
            counter + 1
        } else {
            counter
        }
    }
}

thread_local! {
    /// Set while this thread runs lookups that must not update clocks
    /// (Redis's LOOKUP_NOTOUCH, and CLIENT NO-TOUCH clients).
    static NO_TOUCH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with its key lookups leaving access clocks as they are.
pub fn without_touch<R>(f: impl FnOnce() -> R) -> R {
    let was = NO_TOUCH.with(|t| t.replace(true));
    let r = f();
    NO_TOUCH.with(|t| t.set(was));
    r
}

/// Runs `f` with its lookups updating clocks, even inside `without_touch`
/// (TOUCH from a CLIENT NO-TOUCH client).
pub fn with_touch<R>(f: impl FnOnce() -> R) -> R {
    let was = NO_TOUCH.with(|t| t.replace(false));
    let r = f();
    NO_TOUCH.with(|t| t.set(was));
    r
}

#[inline]
pub(crate) fn touching() -> bool {
    !NO_TOUCH.with(std::cell::Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_holds_24_bits() {
        let c = Clock::new(0);
        c.set(0x12_3456);
        assert_eq!(c.get(), 0x12_3456);
        c.set(0xffff_ffff);
        assert_eq!(c.get(), 0xff_ffff);
        assert_eq!(c.clone().get(), 0xff_ffff);
    }

    #[test]
    fn idle_time_wraps_once() {
        let now = 1_000_000 * 1000;
        assert_eq!(idle_ms(lru_clock(now), now), 0);
        assert_eq!(idle_ms(lru_for_idle(100, now), now), 100_000);
        // A clock just past the wrap: the key was used before it.
        let just_wrapped = (LRU_CLOCK_MAX as u64 + 1 + 10) * 1000;
        assert_eq!(lru_clock(just_wrapped), 10);
        let lru = lru_for_idle(1000, just_wrapped);
        assert_eq!(lru, LRU_CLOCK_MAX - 990);
        assert_eq!(idle_ms(lru, just_wrapped), 1_000_000);
    }

    #[test]
    fn lfu_counter_decays_by_periods() {
        let p = AccessPolicy::default();
        p.configure(true, false, 10, 1);
        let now = 90 * 60_000;
        let v = p.lfu_value(100, now);
        assert_eq!(p.freq(v, now), 100);
        assert_eq!(p.freq(v, now + 3 * 60_000), 97);
        p.configure(true, false, 10, 0);
        assert_eq!(p.freq(v, now + 3 * 60_000), 100);
        assert_eq!(p.fresh(now) & 255, LFU_INIT_VAL as u32);
    }

    #[test]
    fn lfu_counter_grows_logarithmically() {
        let p = AccessPolicy::default();
        p.configure(true, false, 10, 1);
        // 100 hits at factor 10 reach about 10 (Redis's table in redis.conf).
        // One counter lands on 7 about once in 60 tries (this test flaked);
        // the mean of 50 is 9.7 with a sigma of 0.17.
        let mut sum = 0u32;
        for _ in 0..50 {
            let c = Clock::new(p.fresh(0));
            for _ in 0..100 {
                p.touch(&c, 0);
            }
            sum += u32::from(p.freq(c.get(), 0));
        }
        let mean = f64::from(sum) / 50.0;
        assert!((8.5..=11.0).contains(&mean), "{mean}");
        let c = Clock::new(p.fresh(0));
        c.set(p.lfu_value(255, 0));
        p.touch(&c, 0);
        assert_eq!(p.freq(c.get(), 0), 255);
    }
}
