//! Process-level options, as redis-server applies them: `daemonize`,
//! `oom-score-adj`/`oom-score-adj-values` and `disable-thp`; and the checks
//! of `oom-score-adj-values` and `proc-title-template`.

use crate::config::{Check, OnSet, Settings, Stage};
use parking_lot::Mutex;

/// Redis's text for a bad `oom-score-adj-values` element.
const ERR_OOM_VALUES: &str =
    "Invalid oom-score-adj-values, elements must be between -2000 and 2000.";

/// `oom-score-adj-values`'s and `proc-title-template`'s checks (registered
/// in boot::CONFIG_CHECKS).
pub const CONFIG_CHECKS: [Check; 2] = [
    Check {
        option: "oom-score-adj-values",
        check: canonical_oom_values,
    },
    Check {
        option: "proc-title-template",
        check: check_title_template,
    },
];

/// `watchdog-period`: Redis's SIGALRM watchdog logs the main thread's stack
/// when its event loop is stuck that long. BlinkDB serves clients from a
/// pool of threads and has no such watchdog, so only 0 (off) is accepted:
/// a period it would silently ignore is refused.
pub const WATCHDOG_CHECK: Check = Check {
    option: "watchdog-period",
    check: |v| match v {
        "0" => Ok(v.to_string()),
        _ => Err(
            "BlinkDB has no watchdog (it logs no stack of a stuck event loop): only 0 is accepted"
                .into(),
        ),
    },
};

/// CONFIG SET of the OOM score options writes the process's score at once,
/// before the new values commit (a failure refuses the CONFIG SET).
pub const fn oom_on_set<S>() -> OnSet<S> {
    OnSet {
        options: &["oom-score-adj", "oom-score-adj-values"],
        stage: Stage::BeforeCommit,
        apply: apply_oom_on_set::<S>,
    }
}

fn apply_oom_on_set<S>(
    _: &S,
    s: &Settings,
    _: &dyn Fn(&str) -> bool,
) -> Result<(), (String, String)> {
    apply_oom_score_adj(s).map_err(|e| ("oom-score-adj".to_string(), e))
}

fn canonical_oom_values(value: &str) -> Result<String, String> {
    parse_oom_values(value).map(|v| {
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn check_title_template(value: &str) -> Result<String, String> {
    if !valid_title_template(value) {
        return Err("template format is invalid or contains unknown variables".into());
    }
    Ok(value.to_string())
}

/// `oom-score-adj-values`: three integers (master, replica, background
/// child), each within -2000..=2000.
pub fn parse_oom_values(value: &str) -> Result<[i32; 3], String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let mut out = [0i32; 3];
    for (slot, w) in out.iter_mut().zip(words) {
        *slot = w
            .parse::<i32>()
            .ok()
            .filter(|n| (-2000..=2000).contains(n))
            .ok_or(ERR_OOM_VALUES)?;
    }
    Ok(out)
}

/// `proc-title-template`: `{name}` variables Redis knows, `{{` for a brace,
/// and something left once expanded (Redis's validateProcTitleTemplate).
pub fn valid_title_template(t: &str) -> bool {
    const VARS: &[&str] = &[
        "title",
        "listen-addr",
        "server-mode",
        "port",
        "tls-port",
        "unixsocket",
        "config-file",
    ];
    let mut rest = t;
    let mut literal = String::new();
    // Variables never empty (the title is empty when Redis validates;
    // server-mode, unixsocket and config-file can be).
    let mut filled = false;
    while let Some(open) = rest.find('{') {
        literal.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if after.is_empty() {
            return false;
        }
        if let Some(more) = after.strip_prefix('{') {
            literal.push('{');
            rest = more;
            continue;
        }
        let Some(close) = after.find('}') else {
            return false;
        };
        if !VARS.contains(&&after[..close]) {
            return false;
        }
        filled |= matches!(&after[..close], "listen-addr" | "port" | "tls-port");
        rest = &after[close + 1..];
    }
    literal.push_str(rest);
    filled || !literal.trim().is_empty()
}

/// `daemonize yes`: forks, the parent exits, the child leaves the terminal's
/// session and points stdin/stdout/stderr at /dev/null (Redis's daemonize()).
/// Must run before any thread starts.
pub fn daemonize() {
    // SAFETY: called from main before any other thread exists; the child
    // only calls async-signal-safe functions before returning to Rust.
    unsafe {
        match libc::fork() {
            -1 => {
                eprintln!("fork: {}", std::io::Error::last_os_error());
                std::process::exit(1);
            }
            0 => {}
            _ => libc::_exit(0),
        }
        libc::setsid();
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0);
        if fd != -1 {
            libc::dup2(fd, 0);
            libc::dup2(fd, 1);
            libc::dup2(fd, 2);
            if fd > 2 {
                libc::close(fd);
            }
        }
    }
}

/// The pidfile to write: the configured one, or Redis's /var/run/redis.pid
/// when daemonized without one.
pub fn pidfile(s: &Settings) -> Option<String> {
    s.pidfile
        .clone()
        .or_else(|| s.daemonize.then(|| "/var/run/redis.pid".to_string()))
}

/// `disable-thp yes`: when transparent huge pages are `always` on, turn
/// them off for this process (as Redis, against fork copy-on-write latency
/// and memory bloat; with `madvise` or `never` nothing is done).
pub fn disable_thp(s: &Settings) {
    if !s.disable_thp {
        return;
    }
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if mode.contains("[always]") {
        // SAFETY: prctl with integer arguments only.
        let r = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        if r != 0 {
            tracing::warn!(
                "Transparent huge pages could not be disabled: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// The oom_score_adj this process had before BlinkDB first changed it.
static OOM_BASE: Mutex<Option<i32>> = Mutex::new(None);

/// Redis's setOOMScoreAdj: with `oom-score-adj` on, writes the value for the
/// server's class (master or replica), relative to the score the process
/// started with or absolute, clamped to -1000..=1000; turned off, restores
/// the score it started with. Err: Redis's CONFIG SET text (the cause logged).
pub fn apply_oom_score_adj(s: &Settings) -> Result<(), String> {
    const PATH: &str = "/proc/self/oom_score_adj";
    let mode = s.oom_score_adj.as_str();
    let mut base = OOM_BASE.lock();
    let val = if mode != "no" {
        let start = match *base {
            Some(b) => b,
            None => {
                let b = std::fs::read_to_string(PATH)
                    .ok()
                    .and_then(|t| t.trim().parse::<i32>().ok())
                    .unwrap_or(0);
                *base = Some(b);
                b
            }
        };
        let class = usize::from(s.replicaof.is_some());
        let v = s.oom_score_adj_values[class];
        let v = if mode == "absolute" { v } else { v + start };
        v.clamp(-1000, 1000)
    } else if let Some(b) = base.take() {
        b
    } else {
        return Ok(());
    };
    std::fs::write(PATH, format!("{val}\n")).map_err(|e| {
        tracing::warn!("Unable to write oom_score_adj: {e}");
        "Failed to set current oom_score_adj. Check server logs.".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_values_as_redis() {
        assert_eq!(parse_oom_values("0 200 800"), Ok([0, 200, 800]));
        assert_eq!(parse_oom_values("-2000 0 2000"), Ok([-2000, 0, 2000]));
        assert_eq!(
            parse_oom_values("1 2").unwrap_err(),
            "wrong number of arguments"
        );
        assert_eq!(parse_oom_values("1 2 3000").unwrap_err(), ERR_OOM_VALUES);
        assert_eq!(parse_oom_values("a 2 3").unwrap_err(), ERR_OOM_VALUES);
    }

    #[test]
    fn title_templates_as_redis() {
        assert!(valid_title_template("{title} {listen-addr} {server-mode}"));
        assert!(valid_title_template("{title}x"));
        assert!(valid_title_template("bogus"));
        assert!(valid_title_template("{port} {{x"));
        assert!(!valid_title_template(""));
        assert!(!valid_title_template("{foo}"));
        assert!(!valid_title_template("{title"));
        assert!(!valid_title_template("x{"));
    }
}
