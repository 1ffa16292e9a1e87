//! `supervised`: telling upstart or systemd that the server is up, as
//! redis-server does (systemd: READY=1 and STATUS= lines on $NOTIFY_SOCKET;
//! upstart: the process stops itself with SIGSTOP once ready). `auto` picks
//! the one the environment names. INFO's process_supervised shows the result.

use std::sync::OnceLock;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Upstart,
    Systemd,
}

static MODE: OnceLock<Option<Mode>> = OnceLock::new();

/// Decides once, at start, which supervisor `option` means here: none when
/// its variable (UPSTART_JOB, NOTIFY_SOCKET) is not set, as Redis.
pub fn detect(option: &str) -> Option<Mode> {
    *MODE.get_or_init(|| {
        let upstart = std::env::var_os("UPSTART_JOB").is_some();
        let systemd = std::env::var_os("NOTIFY_SOCKET").is_some();
        match option {
            "upstart" if upstart => Some(Mode::Upstart),
            "systemd" if systemd => Some(Mode::Systemd),
            "auto" if upstart => Some(Mode::Upstart),
            "auto" if systemd => Some(Mode::Systemd),
            _ => None,
        }
    })
}

/// INFO's process_supervised.
pub fn name() -> &'static str {
    match MODE.get().copied().flatten() {
        Some(Mode::Upstart) => "upstart",
        Some(Mode::Systemd) => "systemd",
        None => "no",
    }
}

/// Sends `message` to systemd's notification socket; false if not
/// supervised by systemd or the socket refused it.
pub fn notify(message: &str) -> bool {
    if MODE.get().copied().flatten() != Some(Mode::Systemd) {
        return false;
    }
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return false;
    };
    let Ok(sock) = std::os::unix::net::UnixDatagram::unbound() else {
        return false;
    };
    let bytes = path.as_encoded_bytes();
    // A leading '@' names a socket in the abstract namespace.
    let addr = match bytes.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name)
        }
        None => std::os::unix::net::SocketAddr::from_pathname(std::path::Path::new(&path)),
    };
    addr.and_then(|a| sock.send_to_addr(message.as_bytes(), &a))
        .is_ok()
}

/// The server accepts connections: systemd hears READY=1, and an upstart
/// job's process stops itself so that upstart sees it started.
pub fn ready() {
    match MODE.get().copied().flatten() {
        Some(Mode::Systemd) => {
            notify("STATUS=Ready to accept connections\nREADY=1\n");
        }
        Some(Mode::Upstart) => {
            tracing::info!("supervised by upstart, will stop to signal readiness.");
            // SAFETY: raise only sends this process a signal.
            unsafe { libc::raise(libc::SIGSTOP) };
        }
        None => {}
    }
}
