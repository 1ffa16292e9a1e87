//! BlinkDB server: network, protocol, commands and configuration on top of
//! `blinkdb-engine`. Holds no storage logic of its own.

pub mod alloc_count;
pub mod block_timer;
pub mod blocking;
pub mod bloom_flush;
pub mod busy_poll;
pub mod client;
pub mod client_eviction;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod connection;
pub mod eviction;
pub mod exec;
pub mod exec_gate;
pub mod flusher;
pub mod info;
pub mod info_bloom;
pub mod instant;
pub mod io_threads;
pub mod logging;
pub mod logo;
pub mod memory;
pub mod network;
mod output;
pub mod pause;
pub mod persistence;
pub mod process;
pub mod propagation;
pub mod protocol;
pub mod pubsub;
pub mod rdb_file;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod signal;
pub mod socket;
pub mod stale_temp;
pub mod state;
pub mod tls;
pub mod tracking;

/// The Redis version BlinkDB's commands, replies and test suite match (the
/// oracle the integration tests compare against), reported by INFO, HELLO,
/// `--version` and the startup banner so that clients enable the features
/// they would with that Redis. The only place the number is written.
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";
