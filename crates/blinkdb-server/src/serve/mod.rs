//! Serving clients, the top of the request path: the accept loops and one
//! connection's read-run-write loop, which hands each request to exec/ and
//! queues its replies; and the cron's output-limit check. The sockets, TLS,
//! connection threads and reply queue they use are net/'s.

pub mod connection;
pub mod listen;
pub mod output_limits;
