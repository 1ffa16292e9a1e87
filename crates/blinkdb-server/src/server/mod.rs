//! The server's shared state (`Shared`: the engine, the settings, the
//! registries every connection reaches) and what it is built from that
//! belongs to no other layer: ACL users, the log level, the process's OS
//! settings and its supervisor. Starting the process and its cron is boot/.

pub mod acl;
pub mod dataset;
pub mod hosts;
pub mod logging;
pub mod process;
pub mod state;
pub mod supervise;
