//! The start-up logo, shown where redis-server shows its own: when the log
//! goes to a terminal, or always with `always-show-logo yes`. Its
//! ` PID: <pid>` line is what Redis's test harness waits for before it talks
//! to a server it started. Without the logo, one "Running mode=..." line is
//! logged instead, as Redis does.

use crate::config::Settings;
use std::io::{IsTerminal, Write};

/// BlinkDB's own art (an eye, open), with the facts Redis's logo gives.
fn text(mode: &str, port: u16, pid: u32) -> String {
    let version = format!(
        "BlinkDB {} (Redis {} compatible) {} bit",
        env!("CARGO_PKG_VERSION"),
        crate::REDIS_COMPAT_VERSION,
        usize::BITS
    );
    let lines = [
        ("          _.--------._          ", version),
        ("       .-'    .--.    '-.       ", String::new()),
        (
            "     .'      ( () )      '.     ",
            format!("Running in {mode} mode"),
        ),
        ("     '.       '--'       .'     ", format!("Port: {port}")),
        ("       '-._          _.-'       ", format!("PID: {pid}")),
        ("           '--------'           ", String::new()),
    ];
    let mut out = String::from("\n");
    for (art, fact) in lines {
        out.push_str(format!("{art}  {fact}").trim_end());
        out.push('\n');
    }
    out.push('\n');
    out
}

/// Shows the logo or logs the mode line. Like Redis's, both are notice-level
/// messages: `loglevel warning` or `nothing` hides them.
pub fn show(settings: &Settings, cluster: bool) {
    let mode = if cluster { "cluster" } else { "standalone" };
    if matches!(settings.loglevel.as_str(), "warning" | "nothing") {
        return;
    }
    let on_terminal = settings.logfile.is_none() && std::io::stdout().is_terminal();
    if !(on_terminal || settings.always_show_logo) {
        tracing::info!("Running mode={mode}, port={}.", settings.port);
        return;
    }
    // Raw, without the log's line prefix, to where the log goes.
    let logo = text(mode, settings.port, std::process::id());
    let written = match &settings.logfile {
        Some(path) => std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(logo.as_bytes())),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(logo.as_bytes()).and_then(|_| out.flush())
        }
    };
    if let Err(e) = written {
        tracing::warn!("Could not write the start-up logo: {e}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_logo_names_the_pid_as_redis_test_harness_reads_it() {
        let logo = super::text("standalone", 6379, 4242);
        assert!(logo.contains(" PID: 4242\n"));
        assert!(logo.contains("Port: 6379"));
        assert!(logo.contains("Running in standalone mode"));
    }
}
