//! TLS on client connections, replication links and the cluster bus (issue
//! 41), with rustls and its ring provider (it builds with a C compiler only;
//! aws-lc-rs wants cmake and more). The contexts are built from the `tls-*`
//! options as Redis's tlsConfigure does: atomically, a failure keeping the
//! contexts in use; new connections take the current ones, so CONFIG SET of a
//! certificate applies to them while sessions already open go on.
//!
//! Where rustls deliberately lacks what OpenSSL gives Redis (TLSv1/1.1, CBC
//! and DHE suites, encrypted private keys), the value is refused with a text
//! that says so (docs/compatibility.md).

mod contexts;
mod sessions;
mod stream;
mod v1;
mod verify;

pub use contexts::{Contexts, CONFIG_CHECKS};
pub use stream::TlsSocket;

use crate::config::TlsSettings;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The contexts in use, if TLS is configured, and the handshakes under way.
#[derive(Default)]
pub struct Tls(parking_lot::RwLock<Option<Arc<Contexts>>>, Arc<AtomicUsize>);

/// One handshake under way, until dropped.
pub struct Handshake(Arc<AtomicUsize>);

impl Drop for Handshake {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Tls {
    /// The contexts new connections use.
    pub fn current(&self) -> Option<Arc<Contexts>> {
        self.0.read().clone()
    }

    /// Handshakes of accepted clients under way.
    pub fn handshakes(&self) -> usize {
        self.1.load(Ordering::Relaxed)
    }

    pub fn handshake_started(&self) -> Handshake {
        self.1.fetch_add(1, Ordering::Relaxed);
        Handshake(self.1.clone())
    }

    /// Builds contexts from `s` and puts them in use; on failure (logged)
    /// the old ones stay.
    pub fn configure(&self, s: &TlsSettings) -> Result<(), String> {
        match Contexts::build(s) {
            Ok(c) => {
                *self.0.write() = Some(Arc::new(c));
                Ok(())
            }
            Err(e) => {
                tracing::warn!("{e}");
                Err(e)
            }
        }
    }
}

/// Whether anything uses TLS (Redis configures it then, and only then).
pub fn wanted(tls_port: u16, s: &TlsSettings) -> bool {
    tls_port != 0 || s.replication || s.cluster
}

/// How long a handshake may take.
pub fn handshake_timeout(s: &TlsSettings) -> Duration {
    Duration::from_secs(s.handshake_timeout_secs.max(1))
}

/// The server side of a handshake on an accepted socket, bounded by `timeout`.
pub async fn accept<IO>(
    contexts: &Contexts,
    io: IO,
    timeout: Duration,
) -> Result<TlsSocket<IO>, String>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let acceptor = tokio_rustls::TlsAcceptor::from(contexts.server.clone());
    let done = bounded(timeout, acceptor.accept(io)).await?;
    let (io, conn) = done.into_inner();
    Ok(TlsSocket::new(io, conn))
}

/// A handshake's outcome within `timeout`, its error as text.
async fn bounded<T>(
    timeout: Duration,
    handshake: impl std::future::Future<Output = std::io::Result<T>>,
) -> Result<T, String> {
    match tokio::time::timeout(timeout, handshake).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("handshake timed out after {} s", timeout.as_secs())),
    }
}

/// The client side of a handshake (replication, cluster bus). The peer's
/// certificate is checked against the CA but not its name, as Redis does.
pub async fn connect<IO>(
    contexts: &Contexts,
    io: IO,
    timeout: Duration,
) -> Result<TlsSocket<IO>, String>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let connector = tokio_rustls::TlsConnector::from(contexts.client.clone());
    // Any name: verify.rs does not check it.
    let name = rustls::pki_types::ServerName::try_from("blinkdb").expect("a valid DNS name");
    let done = bounded(timeout, connector.connect(name, io)).await?;
    let (io, conn) = done.into_inner();
    Ok(TlsSocket::new(io, conn))
}
