//! Shared set-up for the kernel filter tests: a private pin root per test,
//! and a loud skip when this machine cannot run kernel filters.

#![allow(dead_code)] // not every part is used

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use blinkdb_engine::bpf::probe;

static NEXT_ROOT: AtomicU32 = AtomicU32::new(0);

/// A pin root of its own under /sys/fs/bpf, removed with all pins on drop.
pub struct TestRoot {
    path: PathBuf,
}

impl TestRoot {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TestRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Prints past the test harness's output capture, so a skip is always seen.
pub fn say_skipped(test: &str, reason: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// A fresh pin root if kernel filters work here, else a printed skip.
pub fn kernel_root(test: &str) -> Option<TestRoot> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        say_skipped(test, "not running as root");
        return None;
    }
    let n = NEXT_ROOT.fetch_add(1, Ordering::Relaxed);
    let path = PathBuf::from(format!(
        "/sys/fs/bpf/blinkdb-test-{}-{n}",
        std::process::id()
    ));
    if let Err(err) = probe(&path) {
        let _ = std::fs::remove_dir_all(&path);
        say_skipped(test, &err.to_string());
        return None;
    }
    Some(TestRoot { path })
}
