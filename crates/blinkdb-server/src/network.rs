//! Listeners: TCP on every `bind` address and an optional unix socket.
//! Admission (maxclients, protected mode) happens here, before a
//! connection task exists.

use crate::client::ClientInfo;
use crate::connection::{serve, Socket};
use crate::io_threads::Handoff;
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
    if ip.is_ipv6() {
        // As Redis (anetV6Only): `::` then takes IPv6 only, so `bind 0.0.0.0 ::`
        // binds both instead of the second failing with "address in use".
        let on: libc::c_int = 1;
        // SAFETY: setsockopt on the socket this function owns, reading one c_int.
        let set = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&sock),
                libc::IPPROTO_IPV6,
                libc::IPV6_V6ONLY,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if set != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
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
    let (name, text) = if changed("port") {
        ("port", "Unable to listen on this port. Check server logs.")
    } else {
        ("bind", "Failed to bind to specified addresses.")
    };
    shared
        .listeners
        .listen(&shared.arc(), &s.bind, s.port, s.tcp_backlog)
        .map(|_| ())
        .map_err(|e| {
            tracing::warn!("CONFIG SET {name}: could not listen on {e}");
            (name.to_string(), text.to_string())
        })
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
    /// What is listened on, one per address.
    listening: Vec<Listening>,
}

struct Listening {
    /// The address as configured, and the port.
    addr: String,
    port: u16,
    /// The address listened on.
    local: String,
    /// Stops its accept loop.
    stop: Arc<tokio::sync::Notify>,
    /// A second descriptor of the listening socket (the accept loop owns
    /// the first), to stop it listening at once: see `close`.
    socket: std::os::fd::OwnedFd,
}

impl Listening {
    /// Stops the accept loop, and the socket listening right now rather
    /// than when that task gets to drop it: an address overlapping this
    /// one at the same port (0.0.0.0 over 127.0.0.1) can be bound next.
    fn close(&self) {
        use std::os::fd::AsRawFd;
        // A permit is stored if the loop is not waiting yet.
        self.stop.notify_one();
        // SAFETY: shutdown on a descriptor this struct owns.
        unsafe { libc::shutdown(self.socket.as_raw_fd(), libc::SHUT_RDWR) };
    }
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
        let is_open = |open: &Open, addr: &str| {
            open.listening
                .iter()
                .any(|l| l.addr == addr && l.port == port)
        };
        let mut bound = vec![];
        // Bound while our own listener of an overlapping address at this
        // port still listens: tried again once those are closed.
        let mut overlapping = vec![];
        for addr in &wanted {
            if is_open(&open, addr) {
                continue;
            }
            match bind_tcp_std(addr, port, backlog) {
                Ok(l) => bound.push(((*addr).clone(), l)),
                Err(e) if addr.starts_with('-') && optional_missing(&e) => {
                    tracing::warn!("Could not bind optional address {addr}:{port}: {e}")
                }
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => overlapping.push(*addr),
                Err(e) => return Err(format!("{addr}:{port}: {e}")),
            }
        }
        let unwanted = |l: &Listening| l.port != port || !wanted.contains(&&l.addr);
        let closing_here = open.listening.iter().any(|l| unwanted(l) && l.port == port);
        if !overlapping.is_empty() && !closing_here {
            let addr = overlapping[0];
            return Err(format!("{addr}:{port}: address already in use"));
        }
        // As Redis's changeBindAddr: the old listeners close before the new
        // ones bind (only when one overlaps them: otherwise nothing closes
        // before everything is bound).
        let mut closed = vec![];
        if !overlapping.is_empty() {
            for l in open.listening.iter().filter(|l| unwanted(l)) {
                l.close();
                closed.push((l.addr.clone(), l.port));
            }
            open.listening.retain(|l| !unwanted(l));
            for addr in overlapping {
                match bind_tcp_std(addr, port, backlog) {
                    Ok(l) => bound.push((addr.clone(), l)),
                    Err(e) => {
                        // Back to what was listened on (the config change is refused).
                        drop(bound);
                        for (addr, port) in closed {
                            match bind_tcp_std(&addr, port, backlog) {
                                Ok(l) => Self::serve(&mut open, &runtime, shared, addr, port, l),
                                Err(e) => {
                                    tracing::warn!("Could not listen again on {addr}:{port}: {e}")
                                }
                            }
                        }
                        return Err(format!("{addr}:{port}: {e}"));
                    }
                }
            }
        }
        open.listening.retain(|l| {
            if unwanted(l) {
                l.close();
            }
            !unwanted(l)
        });
        for (addr, l) in bound {
            Self::serve(&mut open, &runtime, shared, addr, port, l);
        }
        Ok(open.listening.iter().map(|l| l.local.clone()).collect())
    }

    /// Starts accepting on `l`, a new listener of `addr` at `port`.
    fn serve(
        open: &mut Open,
        runtime: &tokio::runtime::Handle,
        shared: &Arc<Shared>,
        addr: String,
        port: u16,
        l: std::net::TcpListener,
    ) {
        let local = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let socket = match l.try_clone() {
            Ok(dup) => std::os::fd::OwnedFd::from(dup),
            Err(e) => {
                tracing::warn!("Listening on {local}: {e}");
                return;
            }
        };
        let stop = Arc::new(tokio::sync::Notify::new());
        open.listening.push(Listening {
            addr,
            port,
            local: local.clone(),
            stop: stop.clone(),
            socket,
        });
        let shared = shared.clone();
        runtime.spawn(async move {
            match TcpListener::from_std(l) {
                Ok(l) => accept_loop(shared, l, local, Some(stop)).await,
                Err(e) => tracing::warn!("Listening on {local}: {e}"),
            }
        });
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
    if !crate::io_threads::start_on_thread(start) {
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
    crate::busy_poll::register(fd);
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
