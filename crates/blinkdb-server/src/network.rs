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
    TcpListener::from_std(bind_tcp_std(addr, port, backlog)?)
}

/// A listening socket not yet tied to any runtime's reactor: CONFIG SET binds
/// on a connection thread, and the accept loop runs on the main runtime.
fn bind_tcp_std(addr: &str, port: u16, backlog: u32) -> std::io::Result<std::net::TcpListener> {
    use std::os::fd::{FromRawFd, IntoRawFd};
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
    let fd = sock.into_raw_fd();
    // SAFETY: `fd` is the bound socket just released by `sock`; the listener
    // made from it owns and closes it.
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    // SAFETY: plain system call on a socket this function owns.
    if unsafe { libc::listen(fd, backlog.min(i32::MAX as u32) as i32) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// The TCP listeners of `bind` x `port`. CONFIG SET port or bind replaces
/// them: addresses kept stay open, new ones are bound before anything closes,
/// and a failure changes nothing.
#[derive(Default)]
pub struct TcpListeners(parking_lot::Mutex<Open>);

#[derive(Default)]
struct Open {
    /// The runtime the accept loops run on (the main one).
    runtime: Option<tokio::runtime::Handle>,
    /// (bind address as configured, port, address listened on, stop signal).
    listening: Vec<(String, u16, String, Arc<tokio::sync::Notify>)>,
}

impl TcpListeners {
    /// The first listeners, at start-up: accept loops run on the calling
    /// runtime, then and after every later `listen`.
    pub fn start(
        &self,
        shared: &Arc<Shared>,
        bind: &[String],
        port: u16,
        backlog: u32,
    ) -> Result<Vec<String>, String> {
        self.0.lock().runtime = Some(tokio::runtime::Handle::current());
        self.listen(shared, bind, port, backlog)
    }

    /// Listens on every address of `bind` at `port` (none for port 0),
    /// closing the listeners of addresses no longer wanted; returns the
    /// addresses now listened on. An address with a `-` prefix that this host
    /// lacks is skipped, as in Redis. A server that never started listening
    /// (the fuzzing harness) refuses, before binding anything.
    pub fn listen(
        &self,
        shared: &Arc<Shared>,
        bind: &[String],
        port: u16,
        backlog: u32,
    ) -> Result<Vec<String>, String> {
        let mut open = self.0.lock();
        let Some(runtime) = open.runtime.clone() else {
            return Err("this server has no listeners".into());
        };
        let wanted: Vec<&String> = if port == 0 {
            vec![]
        } else {
            bind.iter().collect()
        };
        let mut bound = vec![];
        for addr in &wanted {
            if open
                .listening
                .iter()
                .any(|(a, p, ..)| a == *addr && *p == port)
            {
                continue;
            }
            match bind_tcp_std(addr, port, backlog) {
                Ok(l) => bound.push(((*addr).clone(), l)),
                Err(e) if addr.starts_with('-') && optional_missing(&e) => {
                    tracing::warn!("Could not bind optional address {addr}:{port}: {e}")
                }
                Err(e) => return Err(format!("{addr}:{port}: {e}")),
            }
        }
        open.listening.retain(|(a, p, _, stop)| {
            let keep = *p == port && wanted.contains(&a);
            if !keep {
                // A permit is stored if the loop is not waiting yet.
                stop.notify_one();
            }
            keep
        });
        for (addr, l) in bound {
            let local = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
            let stop = Arc::new(tokio::sync::Notify::new());
            open.listening
                .push((addr, port, local.clone(), stop.clone()));
            let shared = shared.clone();
            runtime.spawn(async move {
                match TcpListener::from_std(l) {
                    Ok(l) => accept_loop(shared, l, local, Some(stop)).await,
                    Err(e) => tracing::warn!("Listening on {local}: {e}"),
                }
            });
        }
        Ok(open
            .listening
            .iter()
            .map(|(.., local, _)| local.clone())
            .collect())
    }
}

/// An optional (`-`) bind address this host cannot have.
fn optional_missing(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::AddrNotAvailable
        || matches!(
            e.raw_os_error(),
            Some(libc::EAFNOSUPPORT) | Some(libc::EPROTONOSUPPORT)
        )
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
            a = listener.next() => a,
            _ = stop.changed() => return,
            _ = closed.notified() => return,
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
