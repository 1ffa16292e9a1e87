//! The temp files this server makes in `dir`, and their removal at start.
//!
//! BGSAVE, SAVE and full syncs run in threads of this process, so a kill -9
//! (or a crash) mid-save leaves their temp file behind, and nothing else
//! ever removes it. At start, before loading, every file named as below
//! whose writer is gone is removed and logged. Another server may share
//! `dir`: a file whose pid is a live process other than this one is kept.
//!
//! Names (the pid is the writer's):
//! - `temp-<pid>.rdb`: SAVE and BGSAVE (`blinkdb_engine::rdb_format::RdbFileWriter::create`);
//! - `temp-<unix ms>-<pid>.rdb`: a replica receiving its master's RDB;
//! - `temp-<pid>-replsync-<client id>.rdb`, then `replsync-<pid>-<client id>.rdb`:
//!   a master's snapshot for a replica's full sync.
//!
//! The AOF rewrite's temp base lives in the AOF directory and is removed by
//! the AOF itself when it opens (`blinkdb_engine::aof`).

use std::path::{Path, PathBuf};

/// A replica's file for its master's RDB.
pub fn receive_name(dir: &Path, now_ms: u64) -> PathBuf {
    dir.join(format!("temp-{now_ms}-{}.rdb", std::process::id()))
}

/// A full sync's snapshot: written as the first, renamed to the second.
pub fn sync_names(dir: &Path, client_id: u64) -> (PathBuf, PathBuf) {
    let pid = std::process::id();
    (
        dir.join(format!("temp-{pid}-replsync-{client_id}.rdb")),
        dir.join(format!("replsync-{pid}-{client_id}.rdb")),
    )
}

/// The writer's pid when `name` is one of the names above.
fn writer_pid(name: &str) -> Option<u32> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let stem = name.strip_suffix(".rdb")?;
    let pid = if let Some(rest) = stem.strip_prefix("temp-") {
        match rest.split('-').collect::<Vec<_>>()[..] {
            [pid] if digits(pid) => pid,
            [ms, pid] if digits(ms) && digits(pid) => pid,
            [pid, "replsync", id] if digits(pid) && digits(id) => pid,
            _ => return None,
        }
    } else {
        match stem
            .strip_prefix("replsync-")?
            .split('-')
            .collect::<Vec<_>>()[..]
        {
            [pid, id] if digits(pid) && digits(id) => pid,
            _ => return None,
        }
    };
    pid.parse().ok()
}

/// Whether `pid` is a running process (a zombie, killed but not yet
/// reaped by its parent, is not).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_none_or(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Removes the temp files in `dir` left by a writer that is gone: one of
/// this process's (nothing of ours runs yet) or of a process not running.
pub fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(writer_pid) else {
            continue;
        };
        if pid != me && running(pid) {
            tracing::info!(
                "Keeping {}: process {pid}, which writes it, is running",
                name.to_string_lossy()
            );
            continue;
        }
        let path = entry.path();
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::warn!(
                "Removed stale temp file {} (its writer, pid {pid}, is gone: a save cut short)",
                path.display()
            ),
            Err(e) => tracing::warn!("Could not remove stale temp file {}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_this_server_makes_are_known() {
        let dir = Path::new("/d");
        let (tmp, ready) = sync_names(dir, 7);
        let me = Some(std::process::id());
        for p in [receive_name(dir, 1_700_000_000_000), tmp, ready] {
            assert_eq!(writer_pid(p.file_name().unwrap().to_str().unwrap()), me);
        }
        assert_eq!(writer_pid("temp-42.rdb"), Some(42));
    }

    #[test]
    fn other_names_are_left_alone() {
        for name in [
            "dump.rdb",
            "temp-.rdb",
            "temp-x.rdb",
            "temp-1-2-3.rdb",
            "temp-1.rdb.bak",
            "temp-rewrite-appendonly.aof.2.base.rdb",
            "replsync-5.rdb",
            "mytemp-1.rdb",
        ] {
            assert_eq!(writer_pid(name), None, "{name}");
        }
    }

    #[test]
    fn only_files_of_gone_writers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // pid 1 (init) is running; no pid is above pid_max (4194304).
        let live = dir.path().join("temp-1.rdb");
        let dead = dir.path().join("temp-99999999.rdb");
        let mine = dir.path().join(format!("temp-{}.rdb", std::process::id()));
        let other = dir.path().join("dump.rdb");
        for p in [&live, &dead, &mine, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        remove_stale(dir.path());
        assert!(live.exists() && other.exists());
        assert!(!dead.exists() && !mine.exists());
    }
}
