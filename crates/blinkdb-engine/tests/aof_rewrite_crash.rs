//! A crash at every storage step of a rewrite (and of the rotation it starts) leaves a
//! directory that loads to the same logical contents, with no blob lost.

use std::sync::Arc;

use crate::common::{cmd, load_all, options};
use blinkdb_engine::{Aof, AofOptions, FaultStorage};

fn populate(opts: &AofOptions) -> Vec<Vec<Vec<u8>>> {
    let aof = Aof::open(opts.clone()).unwrap();
    load_all(&aof);
    for i in 0..30 {
        let key = format!("k{}", i % 10);
        let value = vec![b'a' + (i % 26) as u8; if i % 7 == 0 { 4000 } else { 10 }];
        let (lsn, _) = aof
            .append(|w| w.command(&[b"SET", key.as_bytes(), &value]))
            .unwrap();
        aof.commit(lsn).unwrap();
    }
    aof.close().unwrap();
    final_state(opts)
}

/// Logical state: last SET per key, in key order.
fn final_state(opts: &AofOptions) -> Vec<Vec<Vec<u8>>> {
    let aof = Aof::open(opts.clone()).unwrap();
    let (cmds, _) = load_all(&aof);
    let mut m = std::collections::BTreeMap::new();
    for c in cmds {
        m.insert(c[1].clone(), c[2].clone());
    }
    m.into_iter().map(|(k, v)| cmd(&[b"SET", &k, &v])).collect()
}

fn rewrite(aof: &Aof, state: &[Vec<Vec<u8>>]) -> blinkdb_engine::AofResult<()> {
    let mut base = aof.begin_rewrite()?;
    for c in state {
        let args: Vec<&[u8]> = c.iter().map(|a| a.as_slice()).collect();
        base.command(&args)?;
    }
    aof.finish_rewrite(base)
}

#[test]
fn crash_at_each_rewrite_step_leaves_a_loadable_set() {
    let template = tempfile::tempdir().unwrap();
    let topts = options(template.path());
    let expected = populate(&topts);

    // Count the storage operations of a complete rewrite.
    let total_ops = {
        let d = tempfile::tempdir().unwrap();
        let o = options(d.path());
        copy(&topts, &o);
        let storage = FaultStorage::new();
        let aof = Aof::open_with(o.clone(), Arc::new(storage.clone())).unwrap();
        load_all(&aof);
        let before = storage.ops();
        rewrite(&aof, &expected).unwrap();
        let n = storage.ops() - before;
        drop(aof);
        assert_eq!(final_state(&o), expected);
        assert!(Aof::open(o).unwrap().manifest().base.is_some());
        n
    };
    assert!(total_ops >= 8, "rewrite does {total_ops} storage ops");

    for step in 0..=total_ops {
        let d = tempfile::tempdir().unwrap();
        let o = options(d.path());
        copy(&topts, &o);
        let storage = FaultStorage::new();
        let aof = Aof::open_with(o.clone(), Arc::new(storage.clone())).unwrap();
        load_all(&aof);
        storage.crash_after(step);
        let result = rewrite(&aof, &expected);
        // Failures after the manifest switch (history cleanup) are logged, not returned.
        assert!(
            result.is_ok() || storage.crashed(),
            "step {step}: {result:?}"
        );
        assert_eq!(storage.crashed(), step < total_ops, "step {step}");
        drop(aof); // the "crashed" process; its final flush fails too
        assert_eq!(final_state(&o), expected, "after crash at step {step}");
        // Opening the directory (final_state did) removed an unfinished rewrite's base.
        let leftover = std::fs::read_dir(&o.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .find(|n| n.starts_with("temp-rewrite-"));
        assert_eq!(leftover, None, "step {step}");
        // The survivor can rewrite again and append.
        let aof = Aof::open(o.clone()).unwrap();
        load_all(&aof);
        rewrite(&aof, &expected).unwrap();
        let (lsn, _) = aof.append(|w| w.command(&[b"SET", b"new", b"x"])).unwrap();
        aof.commit(lsn).unwrap();
        drop(aof);
        let mut with_new = expected.clone();
        with_new.push(cmd(&[b"SET", b"new", b"x"]));
        with_new.sort();
        assert_eq!(final_state(&o), with_new, "step {step}");
        let names: Vec<_> = std::fs::read_dir(&o.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.len() <= 4, "old files must be cleaned up: {names:?}");
    }
}

fn copy(from: &AofOptions, to: &AofOptions) {
    std::fs::create_dir_all(&to.dir).unwrap();
    for e in std::fs::read_dir(&from.dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.dir.join(e.file_name())).unwrap();
    }
}
