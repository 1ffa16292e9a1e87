//! The wire protocol: requests in (multibulk and inline), replies out.

pub mod reply;
pub mod request;

pub use reply::Out;
pub use request::{Args, ProtocolError, RequestLimits, RequestParser};
