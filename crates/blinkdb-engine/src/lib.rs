//! BlinkDB storage engine: the keyspace and everything that persists it.
//!
//! This crate knows nothing about sockets or the client protocol. The server
//! crate parses commands and calls into [`Engine`].

pub mod aof;
pub mod bfkeys;
pub mod bits;
pub mod bloom;
pub mod checksum;
pub mod clock;
pub mod engine;
pub mod evict;
pub mod evict_sampled;
pub mod existence;
pub mod filter;
pub mod kernel;
pub mod keyspace;
pub mod notify;
pub mod pattern;
pub mod persist;
pub mod rdb;
pub mod ready;
pub mod rewrite;
pub mod splitargs;
pub mod types;

pub use engine::{Engine, EngineOptions, Tx};
pub use keyspace::{access, Entry, Meta, Origin, Value};
