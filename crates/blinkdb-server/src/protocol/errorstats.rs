//! Error statistics (INFO errorstats, total_error_replies): every error reply
//! is counted where it is written (`Out::error_bytes`), so the counter lives
//! with the writer, below everything that replies.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// Distinct error codes counted at most (further new codes are not counted
/// per code, only in total_error_replies), so that error texts a client can
/// choose (a script's error_reply) cannot grow the table without bound.
const ERROR_CODES_MAX: usize = 128;

#[derive(Default)]
struct Errors {
    by_code: BTreeMap<String, u64>,
}

fn errors() -> &'static Mutex<Errors> {
    static ERRORS: OnceLock<Mutex<Errors>> = OnceLock::new();
    ERRORS.get_or_init(Default::default)
}

static TOTAL_ERRORS: AtomicU64 = AtomicU64::new(0);

/// An error reply was sent: counts it under its code (the text up to the
/// first space within 32 bytes, else ERR), as Redis does.
pub fn count_error(msg: &[u8]) {
    TOTAL_ERRORS.fetch_add(1, Relaxed);
    let code = msg[..msg.len().min(32)]
        .iter()
        .position(|&c| c == b' ')
        .map_or(&b"ERR"[..], |space| &msg[..space]);
    let code = String::from_utf8_lossy(code);
    let mut e = errors().lock();
    if let Some(n) = e.by_code.get_mut(code.as_ref()) {
        *n += 1;
    } else if e.by_code.len() < ERROR_CODES_MAX {
        e.by_code.insert(code.into_owned(), 1);
    }
}

pub fn total_error_replies() -> u64 {
    TOTAL_ERRORS.load(Relaxed)
}

/// Error counts by code, in code order.
pub fn error_counts() -> Vec<(String, u64)> {
    errors()
        .lock()
        .by_code
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// CONFIG RESETSTAT's part for errors.
pub fn reset() {
    errors().lock().by_code.clear();
    TOTAL_ERRORS.store(0, Relaxed);
}
