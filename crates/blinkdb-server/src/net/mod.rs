//! The network below the command pipeline: sockets and listeners, TLS, the
//! connection threads and their event loops, busy polling, and a connection's
//! queue of replies. Serving a connection on them is serve/'s.

pub mod busy_poll;
pub mod io_threads;
pub mod nap;
pub(crate) mod output;
pub mod socket;
pub mod tls;

/// The network handle: the TCP listeners of `bind` x `port` (CONFIG SET
/// port and bind replace them), the TLS listeners of `bind` x `tls-port`,
/// and the TLS contexts new connections use.
#[derive(Default)]
pub struct Network {
    pub listeners: socket::TcpListeners,
    pub tls_listeners: socket::TcpListeners,
    pub tls: tls::Tls,
}
