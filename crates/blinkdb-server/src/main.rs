//! `blinkdb [config-file] [--option value ...]`, as redis-server.

use blinkdb_server::config::Config;
use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

/// Counts what the process allocates: INFO `used_memory` and maxmemory.
#[global_allocator]
static ALLOC: blinkdb_server::memory::alloc_count::Counting =
    blinkdb_server::memory::alloc_count::Counting;

const USAGE: &str = "Usage: blinkdb [/path/to/blinkdb.conf] [--option value ...]
       blinkdb --ping [host:port]   (health probe: exit 0 if the server answers PONG)
       blinkdb -v | --version
       blinkdb -h | --help
Examples:
       blinkdb                      (embedded defaults: bind 127.0.0.1, port 6379, dir ./data)
       blinkdb /etc/blinkdb.conf
       blinkdb --port 7000 --dir /tmp/x --loglevel debug";

/// Connects, sends PING, expects +PONG (used by the container HEALTHCHECK,
/// where no shell or redis-cli exists).
fn ping(addr: &str) -> ExitCode {
    let probe = || -> std::io::Result<bool> {
        let sa = std::net::ToSocketAddrs::to_socket_addrs(addr)?
            .next()
            .ok_or_else(|| std::io::Error::other("no address"))?;
        let mut s = std::net::TcpStream::connect_timeout(&sa, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(b"*1\r\n$4\r\nPING\r\n")?;
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf)?;
        Ok(buf[..n].starts_with(b"+PONG"))
    };
    match probe() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("{addr}: unexpected reply to PING");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{addr}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-v" | "--version") => {
            println!(
                "BlinkDB server v={} (Redis {} compatible)",
                env!("CARGO_PKG_VERSION"),
                blinkdb_server::REDIS_COMPAT_VERSION
            );
            return ExitCode::SUCCESS;
        }
        Some("-h" | "--help") => {
            println!("{USAGE}\n\n{}", blinkdb_server::config::options_help());
            return ExitCode::SUCCESS;
        }
        Some("--ping") => return ping(args.get(1).map_or("127.0.0.1:6379", String::as_str)),
        _ => {}
    }
    let config = match Config::from_args(&args, blinkdb_server::boot::CONFIG_CHECKS) {
        Ok(c) => c,
        Err(e) => {
            // Redis's report (the header, the line and why), on stderr.
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let settings = config.settings();
    // Before any thread starts (the logger's included), as redis-server; the
    // log file is checked first, while errors still reach the terminal.
    if let Some(path) = settings.logfile.as_deref() {
        let open = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        if let Err(e) = open {
            eprintln!("*** FATAL CONFIG FILE ERROR ***\nCan't open the log file: {e}");
            return ExitCode::FAILURE;
        }
    }
    // A supervised server stays in the foreground, as redis-server.
    let supervised = blinkdb_server::server::supervise::detect(&settings.supervised).is_some();
    if settings.daemonize && !supervised {
        blinkdb_server::server::process::daemonize();
    }
    let on_loglevel = match blinkdb_server::server::logging::init(
        &settings.loglevel,
        settings.logfile.as_deref(),
    ) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("Can't open the log file: {e}");
            return ExitCode::FAILURE;
        }
    };
    // 0: half the cores, at least one. The other half is left to clients and the
    // kernel's network work (measured on 2 cores: one loop served pipelined strings
    // and BF.* as fast as two, and `appendfsync always` 10-20% faster; docs/design.md).
    let threads = match settings.io_threads {
        0 => std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)),
        n => n,
    };
    if let Err(e) = blinkdb_server::boot::start_io_threads(
        threads,
        std::time::Duration::from_micros(settings.busy_poll_us),
    ) {
        eprintln!("Can't start the connection threads: {e}");
        return ExitCode::FAILURE;
    }
    // This thread accepts connections and runs the background cycles; the
    // connection threads serve the clients.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("blinkdb")
        .build()
        .expect("tokio runtime");
    match runtime.block_on(blinkdb_server::boot::run(config, on_loglevel)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
