//! BlinkDB server: network, protocol, commands and configuration on top of
//! `blinkdb-engine`. Holds no storage logic of its own.

pub mod algo;
pub mod boot;
pub mod client;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod exec;
pub mod info;
pub mod memory;
pub mod net;
pub mod persistence;
pub mod protocol;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod serve;
pub mod server;
pub mod tracking;

/// The Redis version BlinkDB's commands, replies and test suite match (the
/// oracle the integration tests compare against), reported by INFO, HELLO,
/// `--version` and the startup banner so that clients enable the features
/// they would with that Redis. The only place the number is written.
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";
