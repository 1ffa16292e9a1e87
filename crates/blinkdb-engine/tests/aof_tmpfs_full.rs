//! A real full disk: a 1 MiB tmpfs (we run as root). Writes fail with ENOSPC, the AOF
//! reports MISCONF, freeing space lets the retry succeed, and everything acknowledged
//! loads back.

use std::process::Command;

use crate::common::{cmd, load_all};
use blinkdb_engine::{Aof, AofOptions, FsyncPolicy};

struct Mount(std::path::PathBuf);
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn real_enospc_on_tiny_tmpfs() {
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(dir.path())
        .status()
        .expect("mount");
    assert!(
        ok.success(),
        "mounting a tmpfs needs root (sessions and CI run as root)"
    );
    let _mount = Mount(dir.path().to_path_buf());
    let filler = dir.path().join("filler");
    std::fs::write(&filler, vec![1u8; 256 << 10]).unwrap();

    let mut opts = AofOptions::new(dir.path().join("appendonlydir"));
    opts.fsync = FsyncPolicy::EverySec;
    opts.blob_threshold = 1 << 20;
    let aof = Aof::open(opts.clone()).unwrap();
    load_all(&aof);
    let value = vec![b'v'; 5000];
    let mut acked = Vec::new();
    let mut failed_at = None;
    for i in 0..400 {
        let key = format!("key{i}");
        let (lsn, _) = aof
            .append(|w| w.command(&[b"SET", key.as_bytes(), &value]))
            .unwrap();
        match aof.commit(lsn) {
            Ok(()) => acked.push(cmd(&[b"SET", key.as_bytes(), &value])),
            Err(e) => {
                assert_eq!(
                    e.to_string(),
                    "MISCONF Errors writing to the AOF file: No space left on device"
                );
                failed_at = Some(i);
                break;
            }
        }
    }
    let failed_at = failed_at.expect("a 1 MiB tmpfs must fill up");
    assert!(aof.write_status().is_err());
    std::fs::remove_file(&filler).unwrap();
    let (lsn, _) = aof.append(|w| w.command(&[b"DEL", b"key0"])).unwrap();
    aof.commit(lsn).unwrap();
    assert!(aof.write_status().is_ok());
    acked.push(cmd(&[b"SET", format!("key{failed_at}").as_bytes(), &value]));
    acked.push(cmd(&[b"DEL", b"key0"]));
    aof.close().unwrap();

    let aof = Aof::open(opts).unwrap();
    let (cmds, stats) = load_all(&aof);
    assert_eq!(cmds, acked);
    assert!(stats.truncated.is_none());
}
