//! The network below the command pipeline: sockets and listeners, TLS, the
//! connection threads and their event loops, busy polling, and a connection's
//! queue of replies. Serving a connection on them is serve/'s.

pub mod busy_poll;
pub mod io_threads;
pub(crate) mod output;
pub mod socket;
pub mod tls;
