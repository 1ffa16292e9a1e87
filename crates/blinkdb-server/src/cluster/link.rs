//! One bus link's socket, plain or a TLS session (tls-cluster yes), driven by
//! a single task that both reads messages and writes what is queued for the
//! link. One task rather than a reader and a writer over split halves: a TLS
//! session reads and writes records in either direction, and two tasks
//! polling one session would each replace the other's waker on the socket.

use super::message;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

/// Queued messages coalesced into one write up to this many bytes.
const WRITE_BATCH: usize = 64 * 1024;
const READ_CHUNK: usize = 16 * 1024;

/// Serves the link until the peer closes it, a read or write fails, a
/// message is malformed, `on_message` returns false, or the link is closed
/// here (its queue's sender dropped).
pub(super) async fn drive<S, F>(
    mut sock: S,
    mut queue: mpsc::UnboundedReceiver<Vec<u8>>,
    mut on_message: F,
) where
    S: AsyncRead + AsyncWrite + Unpin,
    F: FnMut(&[u8]) -> bool,
{
    let mut out: Vec<u8> = Vec::new();
    let mut sent = 0;
    let mut input: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; READ_CHUNK];
    poll_fn(|cx| loop {
        let mut progress = false;
        // Output: queued messages, in order, as the socket takes them.
        loop {
            if sent == out.len() {
                out.clear();
                sent = 0;
                while out.len() < WRITE_BATCH {
                    match queue.poll_recv(cx) {
                        Poll::Ready(Some(b)) => out.extend_from_slice(&b),
                        Poll::Ready(None) => return Poll::Ready(()),
                        Poll::Pending => break,
                    }
                }
                if out.is_empty() {
                    // Nothing more to write: what a TLS session still holds
                    // goes out as the socket takes it.
                    if let Poll::Ready(Err(_)) = Pin::new(&mut sock).poll_flush(cx) {
                        return Poll::Ready(());
                    }
                    break;
                }
            }
            match Pin::new(&mut sock).poll_write(cx, &out[sent..]) {
                Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Ready(Ok(n)) => {
                    sent += n;
                    progress = true;
                }
                Poll::Pending => break,
            }
        }
        // Input: whole messages, each handled as soon as it is complete.
        let mut buf = ReadBuf::new(&mut chunk);
        match Pin::new(&mut sock).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(()),
            Poll::Ready(Ok(())) => {
                input.extend_from_slice(buf.filled());
                progress = true;
                let mut used = 0;
                while input.len() - used >= 8 {
                    let prefix: &[u8; 8] = input[used..used + 8].try_into().expect("8 bytes");
                    let total = match message::check_prefix(prefix) {
                        Ok(n) => n,
                        Err(e) => {
                            tracing::warn!("{e}");
                            return Poll::Ready(());
                        }
                    };
                    if input.len() - used < total {
                        break;
                    }
                    if !on_message(&input[used..used + total]) {
                        return Poll::Ready(());
                    }
                    used += total;
                }
                input.drain(..used);
            }
            Poll::Ready(Err(_)) => return Poll::Ready(()),
            Poll::Pending => {}
        }
        if !progress {
            return Poll::Pending;
        }
    })
    .await
}
