//! A command applied for this server's master, or replayed from the AOF,
//! that answers an error: the data has diverged from what its source had.
//! As Redis 7.0 (`afterErrorReply`), it is logged as "== CRITICAL ==", and
//! `propagation-error-behavior` says whether the server stops: `panic` for
//! both sources, `panic-on-replicas` for the master's commands only, and for
//! a master's commands only while `replica-read-only` is on (a writable
//! replica may diverge on purpose).

use crate::config::Settings;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the failed command came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Source {
    Master,
    AofLoading,
}

/// The longest error text logged, as Redis's.
const MAX_LOGGED: usize = 4096;

/// The first error line of `reply` (a command's encoded replies), without its
/// `-` and line end.
fn first_error(reply: &[u8]) -> Option<&[u8]> {
    reply
        .split(|b| *b == b'\n')
        .find_map(|line| line.strip_prefix(b"-"))
        .map(|e| e.strip_suffix(b"\r").unwrap_or(e))
}

/// Logs an error reply to a propagated command; returns the panic message
/// when `propagation-error-behavior` says the server must stop.
pub fn after_error(
    settings: &Settings,
    source: Source,
    reply: &[u8],
    command: &[u8],
) -> Result<(), String> {
    let error = first_error(reply).unwrap_or(reply);
    let error = &error[..error.len().min(MAX_LOGGED)];
    let (from, to) = match source {
        Source::Master => ("replica", "master"),
        Source::AofLoading => ("server", "AOF-loading-client"),
    };
    let command = String::from_utf8_lossy(command).to_ascii_lowercase();
    tracing::warn!(
        "== CRITICAL == This {from} is sending an error to its {to}: '{}' after processing the command '{command}'",
        String::from_utf8_lossy(error)
    );
    let panics = match source {
        Source::Master => {
            settings.replica_read_only
                && matches!(
                    settings.propagation_error_behavior.as_str(),
                    "panic" | "panic-on-replicas"
                )
        }
        Source::AofLoading => settings.propagation_error_behavior == "panic",
    };
    if panics {
        return Err(format!(
            "This {from} panicked sending an error to its {to} after processing the command '{command}'"
        ));
    }
    Ok(())
}

/// Hidden `use-exit-on-panic`: a panic exits with status 1 rather than
/// aborting (no core dump; Redis's tests set it for valgrind).
static USE_EXIT_ON_PANIC: AtomicBool = AtomicBool::new(false);

/// Applies `use-exit-on-panic` (at start and on CONFIG SET).
pub fn apply_exit_on_panic(s: &Settings) {
    USE_EXIT_ON_PANIC.store(s.use_exit_on_panic, Ordering::Relaxed);
}

pub const EXIT_ON_PANIC_ON_SET: crate::config::OnSet<crate::server::state::Shared> =
    crate::config::OnSet {
        options: &["use-exit-on-panic"],
        stage: crate::config::Stage::AfterCommit,
        apply: |_, s, _| {
            apply_exit_on_panic(s);
            Ok(())
        },
    };

/// Stops the server as Redis's serverPanic does: the message logged with
/// "Guru Meditation", then an abort (SIGABRT, a core dump where enabled),
/// or an exit with status 1 under `use-exit-on-panic`, without the orderly
/// shutdown either way. The log is written synchronously, so nothing of it
/// is lost to the abort.
pub fn panic(message: &str) -> ! {
    tracing::error!("------------------------------------------------");
    tracing::error!("!!! Software Failure. Press left mouse button to continue");
    tracing::error!("Guru Meditation: {message}");
    if USE_EXIT_ON_PANIC.load(Ordering::Relaxed) {
        std::process::exit(1)
    }
    std::process::abort()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(behavior: &str, read_only: bool) -> Settings {
        let mut c = crate::config::Config::new(&[]);
        c.set_runtime("propagation-error-behavior", behavior)
            .unwrap();
        c.set_runtime("replica-read-only", if read_only { "yes" } else { "no" })
            .unwrap();
        c.settings()
    }

    #[test]
    fn behaviors_decide_who_panics() {
        let err = b"-ERR unknown command 'x'\r\n";
        for (behavior, master, aof) in [
            ("ignore", false, false),
            ("panic", true, true),
            ("panic-on-replicas", true, false),
        ] {
            let s = settings(behavior, true);
            assert_eq!(after_error(&s, Source::Master, err, b"x").is_err(), master);
            assert_eq!(after_error(&s, Source::AofLoading, err, b"x").is_err(), aof);
        }
        // A writable replica may diverge on purpose.
        let s = settings("panic", false);
        assert!(after_error(&s, Source::Master, err, b"x").is_ok());
    }

    #[test]
    fn the_first_error_line_is_logged() {
        assert_eq!(
            first_error(b"*2\r\n+OK\r\n-ERR no\r\n"),
            Some(&b"ERR no"[..])
        );
    }
}
