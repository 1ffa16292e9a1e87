//! Listeners: TCP on every `bind` address and an optional unix socket.
//! Admission (maxclients, protected mode) happens here, before a
//! connection task exists.

use crate::client::ClientInfo;
use crate::net::io_threads::Handoff;
use crate::net::socket::Socket;
use crate::serve::connection::serve;
use crate::server::state::Shared;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, UnixListener};

const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// CONFIG SET port or bind replaces the listeners before the new values
/// commit; a failure refuses the CONFIG SET with Redis's texts: the port's if
/// it changed, else the addresses'.
pub const ON_SET: crate::config::OnSet<Shared> = crate::config::OnSet {
    options: &["port", "bind"],
    stage: crate::config::Stage::BeforeCommit,
    apply: relisten,
};

fn relisten(
    shared: &Shared,
    s: &crate::config::Settings,
    changed: &dyn Fn(&str) -> bool,
) -> Result<(), (String, String)> {
    let port_option = if changed("port") { Some("port") } else { None };
    listen_or_refuse(
        &shared.net.listeners,
        &accepting(&shared.arc()),
        s,
        s.port,
        port_option,
    )
}

/// Replaces `listeners` with ones on `bind` x `port`; a failure refuses the
/// CONFIG SET with Redis's text: the port's under `port_option` if the port
/// changed, else the addresses' under `bind`.
fn listen_or_refuse(
    listeners: &crate::net::socket::TcpListeners,
    accept: &crate::net::socket::Accept,
    s: &crate::config::Settings,
    port: u16,
    port_option: Option<&str>,
) -> Result<(), (String, String)> {
    let (name, text) = match port_option {
        Some(option) => (option, "Unable to listen on this port. Check server logs."),
        None => ("bind", "Failed to bind to specified addresses."),
    };
    listeners
        .listen(accept, &s.bind, port, s.tcp_backlog)
        .map(|_| ())
        .map_err(|e| {
            tracing::warn!("CONFIG SET {name}: could not listen on {e}");
            (name.to_string(), text.to_string())
        })
}

/// What the TCP listeners do with a new listener (`socket::Accept`): run
/// its accept loop on the runtime they were started on.
pub fn accepting(
    shared: &Arc<Shared>,
) -> impl Fn(&tokio::runtime::Handle, std::net::TcpListener, String, Arc<tokio::sync::Notify>) {
    spawning(shared, |shared, l, local, stop| {
        accept_loop(shared, l, local, Some(stop))
    })
}

/// An `Accept` that spawns `run` (an accept loop) on the listeners' runtime
/// for each new listener.
fn spawning<F, Fut>(
    shared: &Arc<Shared>,
    run: F,
) -> impl Fn(&tokio::runtime::Handle, std::net::TcpListener, String, Arc<tokio::sync::Notify>)
where
    F: Fn(Arc<Shared>, TcpListener, String, Arc<tokio::sync::Notify>) -> Fut
        + Clone
        + Send
        + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let shared = shared.clone();
    move |runtime, l, local, stop| {
        let (shared, run) = (shared.clone(), run.clone());
        runtime.spawn(async move {
            match TcpListener::from_std(l) {
                Ok(l) => run(shared, l, local, stop).await,
                Err(e) => tracing::warn!("Listening on {local}: {e}"),
            }
        });
    }
}

/// Refusal to send instead of serving, if any.
fn admission(shared: &Shared, peer: Option<IpAddr>) -> Option<&'static str> {
    let settings = shared.settings();
    if shared.clients.connected() >= settings.maxclients {
        return Some("-ERR max number of clients reached\r\n");
    }
    if let Some(ip) = peer {
        if settings.protected_mode && shared.acl.default_user().nopass && !ip.is_loopback() {
            return Some(DENIED);
        }
    }
    None
}

/// Admits and registers a connected client, and serves it: on a connection
/// thread it is handed to, or `here` (a TLS session, whose handshake already
/// ran on the thread that is to serve it).
async fn start<S: Socket + 'static>(
    shared: &Arc<Shared>,
    mut sock: S,
    peer: Option<IpAddr>,
    addr: String,
    laddr: String,
    here: bool,
) {
    shared
        .stats
        .connections_received
        .fetch_add(1, Ordering::Relaxed);
    if let Some(refusal) = admission(shared, peer) {
        shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let _ = sock.write_all(refusal.as_bytes()).await;
            let _ = sock.shutdown().await;
        });
        return;
    }
    let origin = match peer {
        Some(ip) => crate::client::Peer::Tcp(ip),
        None => crate::client::Peer::Unix(addr.strip_suffix(":0").unwrap_or(&addr).to_string()),
    };
    let info = Arc::new(ClientInfo::new(
        shared.clients.next_id(),
        addr,
        laddr,
        sock.as_raw_fd(),
        origin,
        shared.clock(),
    ));
    info.set_flag(crate::client::FLAG_TLS, sock.is_tls());
    info.open_at_accept.store(
        !shared.acl.auth_required(),
        std::sync::atomic::Ordering::Relaxed,
    );
    shared.clients.register(info.clone());
    if here && crate::net::io_threads::started() {
        crate::net::busy_poll::register(sock.as_raw_fd());
    }
    if here || !crate::net::io_threads::started() {
        tokio::spawn(serve(shared.clone(), sock, info));
        return;
    }
    match sock.into_handoff() {
        Ok(sock) => dispatch(shared, sock, info),
        Err(e) => {
            tracing::warn!("Handing client id={} to a connection thread: {e}", info.id);
            shared.unregister(info.id);
        }
    }
}

/// Hands a registered connection to the next connection thread.
fn dispatch(shared: &Arc<Shared>, sock: Handoff, info: Arc<ClientInfo>) {
    let id = info.id;
    let serving = shared.clone();
    let start = Box::new(move || serve_handoff(serving, sock, info));
    // The thread is gone (only while the process exits): drop the client.
    if !crate::net::io_threads::start_on_thread(start) {
        shared.unregister(id);
    }
}

/// On the connection thread: registers the socket with this thread's runtime
/// and its busy polling, and starts serving it.
fn serve_handoff(shared: Arc<Shared>, sock: Handoff, info: Arc<ClientInfo>) {
    use std::os::fd::AsRawFd;
    let fd = match &sock {
        Handoff::Tcp(s) => s.as_raw_fd(),
        Handoff::Unix(s) => s.as_raw_fd(),
    };
    crate::net::busy_poll::register(fd);
    let started = match sock {
        Handoff::Tcp(s) => tokio::net::TcpStream::from_std(s)
            .map(|s| drop(tokio::spawn(serve(shared.clone(), s, info.clone())))),
        Handoff::Unix(s) => tokio::net::UnixStream::from_std(s)
            .map(|s| drop(tokio::spawn(serve(shared.clone(), s, info.clone())))),
    };
    if let Err(e) = started {
        tracing::warn!("Serving client id={}: {e}", info.id);
        shared.unregister(info.id);
    }
}

/// A listener that yields connected sockets with the peer's address.
pub trait Acceptor: Send + Sync + 'static {
    type Sock: Socket + 'static;
    /// The socket, the peer IP (None for unix sockets) and the peer as text.
    fn next(
        &self,
    ) -> impl std::future::Future<Output = std::io::Result<(Self::Sock, Option<IpAddr>, String)>> + Send;
}

impl Acceptor for TcpListener {
    type Sock = tokio::net::TcpStream;
    async fn next(&self) -> std::io::Result<(Self::Sock, Option<IpAddr>, String)> {
        let (sock, peer) = self.accept().await?;
        let _ = sock.set_nodelay(true);
        Ok((sock, Some(peer.ip()), peer.to_string()))
    }
}

/// A unix listener and its path (reported as the peer address, as Redis does).
pub struct UnixAcceptor(pub UnixListener, pub String);

impl Acceptor for UnixAcceptor {
    type Sock = tokio::net::UnixStream;
    async fn next(&self) -> std::io::Result<(Self::Sock, Option<IpAddr>, String)> {
        let (sock, _) = self.0.accept().await?;
        Ok((sock, None, format!("{}:0", self.1)))
    }
}

/// Accepts until the server stops, or until `closed` is signalled (CONFIG SET
/// port or bind); `local` is the listening address.
pub async fn accept_loop<A: Acceptor>(
    shared: Arc<Shared>,
    listener: A,
    local: String,
    closed: Option<Arc<tokio::sync::Notify>>,
) {
    let mut stop = shared.stop_signal();
    let closed = closed.unwrap_or_default();
    loop {
        let accepted = tokio::select! {
            // A closed listener's accept fails: the stop is seen first.
            biased;
            _ = stop.changed() => return,
            _ = closed.notified() => return,
            a = listener.next() => a,
        };
        match accepted {
            Ok((sock, ip, peer)) => start(&shared, sock, ip, peer, local.clone(), false).await,
            Err(e) => {
                tracing::warn!("Accepting a client connection on {local}: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

/// The options TLS_ON_SET answers: `tls-port` and `bind` (the listeners),
/// then those whose change rebuilds the TLS contexts (Redis's applyTlsCfg).
const TLS_SET_OPTIONS: &[&str] = &[
    "tls-port",
    "bind",
    "tls-dh-params-file",
    "tls-key-file-pass",
    "tls-client-key-file-pass",
    "tls-cert-file",
    "tls-key-file",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-auth-clients",
    "tls-replication",
    "tls-cluster",
    "tls-protocols",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-prefer-server-ciphers",
    "tls-session-caching",
    "tls-session-cache-size",
    "tls-session-cache-timeout",
];

/// The options whose change rebuilds the TLS contexts.
const TLS_OPTIONS: &[&str] = TLS_SET_OPTIONS.split_at(2).1;

/// CONFIG SET of a `tls-*` option rebuilds the contexts new connections take
/// (a failure refuses it, the old contexts staying); `tls-port` or `bind`
/// replaces the TLS listeners, configuring TLS first if it was not.
pub const TLS_ON_SET: crate::config::OnSet<Shared> = crate::config::OnSet {
    options: TLS_SET_OPTIONS,
    stage: crate::config::Stage::BeforeCommit,
    apply: retls,
};

fn retls(
    shared: &Shared,
    s: &crate::config::Settings,
    changed: &dyn Fn(&str) -> bool,
) -> Result<(), (String, String)> {
    const REFUSED: &str = "Unable to update TLS configuration. Check server logs.";
    let option = TLS_OPTIONS.iter().find(|o| changed(o));
    let port_opens = changed("tls-port") && s.tls_port != 0 && shared.net.tls.current().is_none();
    if let Some(option) = option.filter(|_| crate::net::tls::wanted(s.tls_port, &s.tls)) {
        shared
            .net
            .tls
            .configure(&s.tls)
            .map_err(|_| (option.to_string(), REFUSED.to_string()))?;
    } else if port_opens {
        shared
            .net
            .tls
            .configure(&s.tls)
            .map_err(|_| ("tls-port".to_string(), REFUSED.to_string()))?;
    }
    if !changed("tls-port") && !changed("bind") {
        return Ok(());
    }
    let port_option = if changed("tls-port") {
        Some("tls-port")
    } else {
        None
    };
    listen_or_refuse(
        &shared.net.tls_listeners,
        &accepting_tls(&shared.arc()),
        s,
        s.tls_port,
        port_option,
    )
}

/// What the TLS listeners do with a new listener: run its accept loop.
pub fn accepting_tls(
    shared: &Arc<Shared>,
) -> impl Fn(&tokio::runtime::Handle, std::net::TcpListener, String, Arc<tokio::sync::Notify>) {
    spawning(shared, tls_accept_loop)
}

/// Accepts TLS clients until the server stops or the listener is closed. The
/// handshake of each runs on the connection thread that will serve it, bounded
/// by `tls-handshake-timeout`, so a slow or stalled one holds up nobody.
async fn tls_accept_loop(
    shared: Arc<Shared>,
    listener: TcpListener,
    local: String,
    closed: Arc<tokio::sync::Notify>,
) {
    let mut stop = shared.stop_signal();
    loop {
        let accepted = tokio::select! {
            biased;
            _ = stop.changed() => return,
            _ = closed.notified() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((sock, peer)) => {
                let _ = sock.set_nodelay(true);
                handshake(&shared, sock, peer, local.clone());
            }
            Err(e) => {
                tracing::warn!("Accepting a client connection on {local}: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

/// Starts the handshake of an accepted TLS client. Handshakes under way
/// count against maxclients, so a flood of half-open ones is bounded.
fn handshake(
    shared: &Arc<Shared>,
    sock: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    local: String,
) {
    let Some(contexts) = shared.net.tls.current() else {
        tracing::warn!("Error accepting a client connection: TLS is not configured (addr={peer} laddr={local})");
        return;
    };
    let settings = shared.settings();
    let busy = shared.clients.connected() + shared.net.tls.handshakes();
    if busy >= settings.maxclients {
        shared
            .stats
            .connections_received
            .fetch_add(1, Ordering::Relaxed);
        shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!("Error accepting a client connection: max number of clients reached (addr={peer} laddr={local})");
        return;
    }
    let pending = shared.net.tls.handshake_started();
    let timeout = crate::net::tls::handshake_timeout(&settings.tls);
    let shared = shared.clone();
    let run = move |sock: tokio::net::TcpStream| async move {
        // A peer whose first byte does not open a TLS handshake record (a
        // plaintext client) is reset without an alert, as OpenSSL does: rustls
        // would answer with an alert record, which such a client reads as a
        // reply ("Bad protocol") where Redis's clients see an I/O error.
        let mut first = [0u8; 1];
        if let Ok(Ok(1)) = tokio::time::timeout(timeout, sock.peek(&mut first)).await {
            if first[0] != 0x16 {
                drop(pending);
                // A zero linger resets at once: the drop has nothing to wait on.
                #[allow(deprecated)]
                let _ = sock.set_linger(Some(std::time::Duration::ZERO));
                tracing::info!(
                    "Error accepting a client connection: wrong version number (addr={peer} laddr={local})"
                );
                return;
            }
        }
        let session = crate::net::tls::accept(&contexts, sock, timeout).await;
        drop(pending);
        match session {
            Ok(s) => start(&shared, s, Some(peer.ip()), peer.to_string(), local, true).await,
            Err(e) => tracing::info!(
                "Error accepting a client connection: {e} (addr={peer} laddr={local})"
            ),
        }
    };
    if !crate::net::io_threads::started() {
        tokio::spawn(run(sock));
        return;
    }
    let sock = match sock.into_std() {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("Handing a TLS client to a connection thread: {e}");
            return;
        }
    };
    let job = Box::new(move || match tokio::net::TcpStream::from_std(sock) {
        Ok(s) => drop(tokio::spawn(run(s))),
        Err(e) => tracing::warn!("Serving a TLS client: {e}"),
    });
    // The thread is gone only while the process exits: the client goes too.
    let _ = crate::net::io_threads::start_on_thread(job);
}
