//! Sockets below the connection: the `Socket` a client is served over,
//! binding listening sockets, the TCP listeners CONFIG SET port and bind
//! replace, and socket options. What accepting a client means (admission, a
//! connection task) is `network.rs`'s; the listeners are handed it as an
//! `Accept`, so this module imports nothing of the server's state.

use bytes::BytesMut;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket, UnixListener};

/// A stream socket (TCP or unix) that can be polled for readability and
/// read without awaiting, so idle connections hold no read buffer.
pub trait Socket: AsyncRead + AsyncWrite + Unpin + Send + std::os::fd::AsRawFd {
    /// Ready once the socket may be read.
    fn readable(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        std::future::poll_fn(|cx| self.poll_read_ready(cx))
    }

    /// Ready once the socket may be read; otherwise the task of `cx` is woken
    /// when it may. Nothing is registered that must be removed again: the
    /// socket keeps one reader waker, replaced in place. (Mutable: a TLS
    /// session also sends its pending records from here.)
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    /// Detaches the socket from this runtime, to be served by a connection thread.
    fn into_handoff(self) -> io::Result<crate::net::io_threads::Handoff>;

    /// A TLS session (the client is then flagged so: net/tls).
    fn is_tls(&self) -> bool {
        false
    }

    /// Reads what is there now, or fails with `WouldBlock`. It goes through
    /// `poll_read` rather than `try_read_buf` because tokio's `poll_read` treats
    /// a short read as "drained" and clears the readiness: with `try_read_buf`
    /// every request at `-P 1` cost one extra `recvfrom` returning EAGAIN
    /// (13k of them per 50k requests under redis-benchmark).
    fn read_now(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        let mut cx = Context::from_waker(Waker::noop());
        let read = self.read_buf(buf);
        let mut read = std::pin::pin!(read);
        match read.as_mut().poll(&mut cx) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Writes what the socket takes now, or fails with `WouldBlock`: one
    /// `sendto`, without a future or a select around it. A reply batch almost
    /// always fits the socket buffer, so this is the whole send; the rest
    /// waits in the output queue.
    fn write_now(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut cx = Context::from_waker(Waker::noop());
        match std::pin::Pin::new(&mut *self).poll_write(&mut cx, buf) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl Socket for tokio::net::TcpStream {
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::net::TcpStream::poll_read_ready(self, cx)
    }
    fn into_handoff(self) -> io::Result<crate::net::io_threads::Handoff> {
        self.into_std().map(crate::net::io_threads::Handoff::Tcp)
    }
}

impl Socket for tokio::net::UnixStream {
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::net::UnixStream::poll_read_ready(self, cx)
    }
    fn into_handoff(self) -> io::Result<crate::net::io_threads::Handoff> {
        self.into_std().map(crate::net::io_threads::Handoff::Unix)
    }
}

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

/// Starts the accept loop of a new TCP listener on the given runtime (the
/// main one): the listener, the address listened on, and the signal that
/// stops that loop when CONFIG SET closes the listener.
pub type Accept =
    dyn Fn(&tokio::runtime::Handle, std::net::TcpListener, String, Arc<tokio::sync::Notify>);

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
        accept: &Accept,
        bind: &[String],
        port: u16,
        backlog: u32,
    ) -> Result<Vec<String>, String> {
        self.0.lock().runtime = Some(tokio::runtime::Handle::current());
        self.listen(accept, bind, port, backlog)
    }

    /// Listens on every address of `bind` at `port` (none for port 0),
    /// closing the listeners of addresses no longer wanted; returns the
    /// addresses now listened on. An address with a `-` prefix that this host
    /// lacks is skipped, as in Redis. A server that never started listening
    /// (the fuzzing harness) refuses, before binding anything.
    pub fn listen(
        &self,
        accept: &Accept,
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
                                Ok(l) => Self::serve(&mut open, &runtime, accept, addr, port, l),
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
            Self::serve(&mut open, &runtime, accept, addr, port, l);
        }
        Ok(open.listening.iter().map(|l| l.local.clone()).collect())
    }

    /// Starts accepting on `l`, a new listener of `addr` at `port`.
    fn serve(
        open: &mut Open,
        runtime: &tokio::runtime::Handle,
        accept: &Accept,
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
        accept(runtime, l, local, stop);
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
