//! Where the server under test is and how to restart it, shared by the sync and tokio suites.

use std::process::Command;

/// `redis://BLINKDB_HOST:BLINKDB_PORT/`, defaulting to 127.0.0.1:6379.
pub fn server_url() -> String {
    let host = std::env::var("BLINKDB_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("BLINKDB_PORT").unwrap_or_else(|_| "6379".into());
    format!("redis://{host}:{port}/")
}

/// Runs BLINKDB_RESTART_CMD (split on whitespace) and panics if it is unset or fails.
pub fn restart_server() {
    let cmd = std::env::var("BLINKDB_RESTART_CMD")
        .expect("BLINKDB_RESTART_CMD is not set; the reconnection test needs it");
    let mut words = cmd.split_whitespace();
    let program = words.next().expect("BLINKDB_RESTART_CMD is empty");
    let status = Command::new(program)
        .args(words)
        .status()
        .expect("spawn restart command");
    assert!(status.success(), "restart command failed: {status}");
}

/// Every byte value, then the bytes RESP framing uses, then every byte value again.
pub fn all_bytes_value() -> Vec<u8> {
    let all: Vec<u8> = (0..=255u8).collect();
    let mut value = all.clone();
    value.extend_from_slice(b"\r\n\0\r\n$-1\r\n");
    value.extend_from_slice(&all);
    value
}
