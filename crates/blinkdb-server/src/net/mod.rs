//! The network below the command pipeline: listeners, sockets, the connection
//! threads and their event loops, one connection's read-run-write loop and
//! its queue of replies.

pub mod busy_poll;
pub mod connection;
pub mod io_threads;
pub mod listen;
pub(crate) mod output;
pub mod output_limits;
pub mod socket;
pub mod tls;
