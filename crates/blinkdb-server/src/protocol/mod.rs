//! The wire protocol: requests in (multibulk and inline), replies out.

pub mod errorstats;
pub mod int;
pub mod reply;
pub mod request;

pub use reply::{push_error_line, Out};
pub use request::{Args, ProtocolError, RequestLimits, RequestParser};
