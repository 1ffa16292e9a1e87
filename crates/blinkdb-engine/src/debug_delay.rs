//! Redis's hidden debugging delays: `key-load-delay` (each key or command a
//! load reads) and `rdb-key-save-delay` (each key a save or AOF rewrite
//! writes). Redis's tests set them to make a load or a save last long
//! enough to act on it meanwhile. Process-wide, as Redis's server fields;
//! 0 (the default) costs one relaxed load per key.
//!
//! A value is microseconds per key; a negative one -N sleeps 1 µs for one
//! key in N on average, Redis's way of pacing below a microsecond a key (it
//! draws at random: so do we).

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// `key-load-delay`: per key (or command) read while loading an RDB or AOF.
pub static KEY_LOAD_DELAY: AtomicI32 = AtomicI32::new(0);
/// `rdb-key-save-delay`: per key written to an RDB file, a full sync's RDB
/// or an AOF rewrite's base.
pub static KEY_SAVE_DELAY: AtomicI32 = AtomicI32::new(0);

/// Sleeps what `keys` keys cost under `delay`'s current value.
#[inline]
pub fn pause(delay: &AtomicI32, keys: u64) {
    let d = delay.load(Ordering::Relaxed);
    if d != 0 && keys != 0 {
        sleep_for(d, keys);
    }
}

#[cold]
fn sleep_for(d: i32, keys: u64) {
    let micros = if d > 0 {
        d as u64 * keys
    } else {
        let every = d.unsigned_abs() as u64;
        (0..keys)
            .filter(|_| rand::random::<u64>().is_multiple_of(every))
            .count() as u64
    };
    if micros > 0 {
        std::thread::sleep(Duration::from_micros(micros));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn positive_delay_sleeps_per_key_and_zero_not_at_all() {
        let d = AtomicI32::new(0);
        let t = Instant::now();
        pause(&d, 1_000_000);
        assert!(t.elapsed() < Duration::from_millis(50));
        d.store(2000, Ordering::Relaxed);
        let t = Instant::now();
        pause(&d, 10);
        assert!(t.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn negative_delay_sleeps_for_about_one_key_in_n() {
        // 1 key in 1 always sleeps.
        let d = AtomicI32::new(-1);
        let t = Instant::now();
        pause(&d, 3000);
        assert!(t.elapsed() >= Duration::from_millis(3));
    }
}
