//! Once a second, and at shutdown, makes Bloom filter adds durable (msync of
//! filter files, fsync of kernel side logs) so a restart replays little.

use blinkdb_engine::bf::LogPosition;
use blinkdb_engine::Engine;
use std::sync::Arc;
use std::time::Duration;

const PERIOD: Duration = Duration::from_secs(1);

/// Runs until `stop` changes (the server's stop signal).
pub async fn cycle<T>(engine: Arc<Engine>, mut stop: tokio::sync::watch::Receiver<T>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(PERIOD) => {}
            _ = stop.changed() => return,
        }
        if engine.blooms.open_filters() == 0 {
            continue;
        }
        // msync can block on disk: keep it off the reactor threads.
        let engine = engine.clone();
        let _ =
            tokio::task::spawn_blocking(move || engine.flush_filters(LogPosition::default())).await;
    }
}

pub fn flush_now(engine: &Engine) {
    if let Err(e) = engine.flush_filters(LogPosition::default()) {
        tracing::warn!("bloom filter flush at shutdown failed: {e}");
    }
}
