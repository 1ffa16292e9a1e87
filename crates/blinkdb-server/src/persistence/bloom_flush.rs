//! Once a second, and at shutdown, makes Bloom filter adds durable (msync of
//! filter files, fsync of kernel side logs) so a restart replays little.

use crate::server::state::Shared;
use blinkdb_engine::bf::LogPosition;
use std::sync::Arc;
use std::time::Duration;

const PERIOD: Duration = Duration::from_secs(1);

pub async fn cycle(shared: Arc<Shared>) {
    let mut stop = shared.stop_signal();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(PERIOD) => {}
            _ = stop.changed() => return,
        }
        if shared.engine.blooms.open_filters() == 0 {
            continue;
        }
        // msync can block on disk: keep it off the reactor threads.
        let engine = shared.engine.clone();
        let _ =
            tokio::task::spawn_blocking(move || engine.flush_filters(LogPosition::default())).await;
    }
}

pub fn flush_now(shared: &Shared) {
    if let Err(e) = shared.engine.flush_filters(LogPosition::default()) {
        tracing::warn!("bloom filter flush at shutdown failed: {e}");
    }
}
