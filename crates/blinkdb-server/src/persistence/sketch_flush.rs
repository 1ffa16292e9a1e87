//! Once a second, and at shutdown, checkpoints the sketches (count-min, cuckoo, top-k,
//! t-digest) changed since the last pass into their files (engine `sketch_files.rs`), so a
//! restart skips their log records; the one at shutdown marks the files
//! clean so the restart does not re-read their pages either.

use blinkdb_engine::Engine;
use std::sync::Arc;
use std::time::Duration;

const PERIOD: Duration = Duration::from_secs(1);
/// Files of keys deleted, renamed or flushed are removed within this many
/// periods (a look per file, no I/O).
const SWEEP_EVERY: u64 = 10;

/// Runs until `stop` changes (the server's stop signal).
pub async fn cycle<T>(engine: Arc<Engine>, mut stop: tokio::sync::watch::Receiver<T>) {
    let mut ticks = 0u64;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(PERIOD) => {}
            _ = stop.changed() => return,
        }
        ticks += 1;
        if ticks.is_multiple_of(SWEEP_EVERY) {
            blinkdb_engine::sketch_file::sweep(&engine);
        }
        if !engine.sketch_files.has_pending() {
            continue;
        }
        // Writes and syncs files: keep it off the reactor threads.
        let engine = engine.clone();
        let done = tokio::task::spawn_blocking(move || {
            blinkdb_engine::sketch_file::checkpoint(&engine, false)
        })
        .await;
        if let Ok(Err(e)) = done {
            tracing::warn!("Sketch file checkpoint failed (retried next second): {e}");
        }
    }
}

/// The last pass: every file's header is marked clean, so the next start
/// binds it without re-reading its pages.
pub fn flush_now(engine: &Engine) {
    if let Err(e) = blinkdb_engine::sketch_file::checkpoint(engine, true) {
        tracing::warn!("Sketch file checkpoint at shutdown failed: {e}");
    }
}
