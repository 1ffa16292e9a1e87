//! Helpers shared by the aof_* scenario tests.
#![allow(dead_code)]

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use blinkdb_engine::{Aof, AofArg, AofOptions, FsyncPolicy, LoadStats, LoadedCommand, Lsn};

pub fn options(dir: &Path) -> AofOptions {
    let mut o = AofOptions::new(dir.join("appendonlydir"));
    o.fsync = FsyncPolicy::No;
    o.blob_threshold = 1024;
    o
}

/// Loads everything and resolves blobs to bytes (verifying their checksums).
pub fn load_all(aof: &Aof) -> (Vec<Vec<Vec<u8>>>, LoadStats) {
    let mut cmds: Vec<LoadedCommand> = Vec::new();
    let stats = aof
        .load(
            |c| {
                cmds.push(c);
                Ok(())
            },
            |_| {},
        )
        .expect("load");
    let resolved = cmds
        .iter()
        .map(|c| {
            c.args
                .iter()
                .map(|a| match a {
                    AofArg::Inline(b) => b.to_vec(),
                    AofArg::Blob(r) => aof.read_blob(r, true).expect("blob").to_vec(),
                })
                .collect()
        })
        .collect();
    (resolved, stats)
}

/// `threads` threads each append `per_thread` SETs (keys `t<thread>:<i>`) and hand each
/// record's position to `acknowledge`, on the thread's own current-thread runtime; returns
/// once all are done (a failed acknowledgement panics its thread, and so this call).
pub fn write_from_threads(
    aof: &std::sync::Arc<Aof>,
    threads: usize,
    per_thread: usize,
    acknowledge: fn(&Aof, Lsn, &tokio::runtime::Runtime),
) {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let aof = aof.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                for i in 0..per_thread {
                    let key = format!("t{t}:{i}");
                    let (lsn, _) = aof
                        .append(|w| w.command(&[b"SET", key.as_bytes(), b"v"]))
                        .unwrap();
                    acknowledge(&aof, lsn, &rt);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

pub fn cmd(args: &[&[u8]]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.to_vec()).collect()
}

/// A redis-server child that is killed when dropped.
pub struct RedisServer {
    pub child: Child,
    pub port: u16,
}

impl RedisServer {
    pub fn start(port: u16, extra: &[&str]) -> RedisServer {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (Debian redis-server 7) must be installed");
        // Owned from here on, so every exit path (including panics) kills and reaps it.
        let server = RedisServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            // Loading may still be in progress; wait until PING answers PONG.
            if TcpStream::connect(("127.0.0.1", port)).is_ok()
                && server.cli(&["PING"]).trim() == "PONG"
            {
                return server;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server on {port} did not start");
    }

    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
