//! Subscriber connections for PUBLISH cells: each SUBSCRIBEs to one channel before the clock
//! starts and then counts the messages pushed to it, so a run can check that every PUBLISH
//! reached every subscriber (a server that drops messages must not look fast).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use tokio::task::JoinHandle;

use crate::connection::Connection;
use crate::workload::{put_array_header, put_bulk};

pub struct Subscribers {
    tasks: Vec<JoinHandle<()>>,
    received: Arc<AtomicU64>,
}

impl Subscribers {
    /// Opens `count` connections subscribed to `channel`; returns once every subscription is
    /// confirmed.
    pub async fn start(
        host: &str,
        port: u16,
        count: usize,
        channel: &str,
    ) -> Result<Subscribers, String> {
        let received = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::with_capacity(count);
        for _ in 0..count {
            let mut connection = Connection::open(host, port).await?;
            let mut request = BytesMut::new();
            put_array_header(&mut request, 2);
            put_bulk(&mut request, b"SUBSCRIBE");
            put_bulk(&mut request, channel.as_bytes());
            connection.send(&request).await?;
            connection.read_reply().await?;
            let received = Arc::clone(&received);
            tasks.push(tokio::spawn(async move {
                while connection.read_reply().await.is_ok() {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        Ok(Subscribers { tasks, received })
    }

    /// Messages received so far by all subscribers together.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

impl Drop for Subscribers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
