//! Listeners: TCP on every `bind` address and an optional unix socket.
//! Admission (maxclients, protected mode) happens here, before a
//! connection task exists.

use crate::client::ClientInfo;
use crate::connection::{serve, Socket};
use crate::state::Shared;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, UnixListener};

const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

pub fn bind_tcp(addr: &str, port: u16, backlog: u32) -> std::io::Result<TcpListener> {
    let ip: IpAddr = addr.trim_start_matches('-').parse().map_err(|e| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{addr}: {e}"))
    })?;
    let sa = SocketAddr::new(ip, port);
    let sock = if ip.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    sock.set_reuseaddr(true)?;
    sock.bind(sa)?;
    sock.listen(backlog)
}

/// With `perm`, the socket is bound under a temporary name, given its mode,
/// then renamed into place: no client ever finds it with the default mode.
pub fn bind_unix(path: &std::path::Path, perm: u32) -> std::io::Result<UnixListener> {
    let _ = std::fs::remove_file(path);
    if perm == 0 {
        return UnixListener::bind(path);
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    use std::os::unix::fs::PermissionsExt;
    let Ok(l) = UnixListener::bind(&tmp) else {
        // The longer name may not fit a socket address: bind, then chmod.
        let l = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
        return Ok(l);
    };
    let placed = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(perm))
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(l)
}

/// Refusal to send instead of serving, if any.
fn admission(shared: &Shared, peer: Option<IpAddr>) -> Option<&'static str> {
    let settings = shared.settings();
    if shared.connected.load(Ordering::Acquire) >= settings.maxclients {
        return Some("-ERR max number of clients reached\r\n");
    }
    if let Some(ip) = peer {
        if settings.protected_mode && settings.requirepass.is_none() && !ip.is_loopback() {
            return Some(DENIED);
        }
    }
    None
}

async fn start<S: Socket + 'static>(
    shared: &Arc<Shared>,
    mut sock: S,
    peer: Option<IpAddr>,
    addr: String,
    laddr: String,
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
        shared.next_client_id(),
        addr,
        laddr,
        sock.as_raw_fd(),
        origin,
        shared.clock(),
    ));
    shared.register(info.clone());
    if !crate::io_threads::started() {
        tokio::spawn(serve(shared.clone(), sock, info));
        return;
    }
    match sock.into_handoff() {
        Ok(sock) => crate::io_threads::dispatch(shared, sock, info),
        Err(e) => {
            tracing::warn!("Handing client id={} to a connection thread: {e}", info.id);
            shared.unregister(info.id);
        }
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

/// Accepts until the server stops; `local` is the listening address.
pub async fn accept_loop<A: Acceptor>(shared: Arc<Shared>, listener: A, local: String) {
    let mut stop = shared.stop_signal();
    loop {
        let accepted = tokio::select! {
            a = listener.next() => a,
            _ = stop.changed() => return,
        };
        match accepted {
            Ok((sock, ip, peer)) => start(&shared, sock, ip, peer, local.clone()).await,
            Err(e) => {
                tracing::warn!("Accepting a client connection on {local}: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

/// `repl-disable-tcp-nodelay yes`: a replica's stream lets the kernel merge
/// small writes (Nagle), as Redis does at SYNC/PSYNC. A unix socket has no
/// such option; the call then fails and changes nothing.
pub fn disable_nodelay(fd: std::os::fd::RawFd) {
    let off: libc::c_int = 0;
    // SAFETY: setsockopt on a descriptor the caller owns, reading one c_int.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&off as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}
