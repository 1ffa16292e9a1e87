//! A tail torn at any byte offset (cut short, or zero-filled) loads exactly a prefix of
//! the committed batches, and the file is truncated back to the last whole batch.

use std::fs;
use std::path::Path;

use crate::common::{cmd, load_all, options};
use blinkdb_engine::Aof;
use rand::{Rng, SeedableRng};

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn torn_tail_loads_a_prefix_of_batches() {
    let src = tempfile::tempdir().unwrap();
    let opts = options(src.path());
    let mut batches: Vec<Vec<Vec<Vec<u8>>>> = Vec::new();
    let mut ends = vec![0u64];
    let incr = opts.dir.join("appendonly.aof.1.incr.aof");
    {
        let aof = Aof::open(opts.clone()).unwrap();
        load_all(&aof);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for b in 0..40 {
            let mut batch = Vec::new();
            let n = rng.gen_range(1..5);
            let mut lsn = None;
            for i in 0..n {
                let key = format!("k{b}.{i}");
                let value = vec![b'a' + (b % 26) as u8; rng.gen_range(0..3000)];
                let (l, _) = aof
                    .append(|w| w.command(&[b"SET", key.as_bytes(), &value]))
                    .unwrap();
                lsn = Some(l);
                batch.push(cmd(&[b"SET", key.as_bytes(), &value]));
            }
            aof.commit(lsn.unwrap()).unwrap();
            batches.push(batch);
            ends.push(fs::metadata(&incr).unwrap().len());
        }
        aof.close().unwrap();
    }
    let full = fs::read(&incr).unwrap();
    assert_eq!(*ends.last().unwrap(), full.len() as u64);
    let mut rng = rand::rngs::StdRng::seed_from_u64(99);
    let mut cuts: Vec<u64> = (0..60)
        .map(|_| rng.gen_range(0..full.len() as u64))
        .collect();
    cuts.extend([ends[5], ends[5] + 1, ends[5] - 1, full.len() as u64 - 1]);
    for (i, &cut) in cuts.iter().enumerate() {
        let zero_fill = i % 3 == 0;
        let work = tempfile::tempdir().unwrap();
        let mut o = options(work.path());
        copy_dir(&opts.dir, &o.dir);
        let path = o.dir.join("appendonly.aof.1.incr.aof");
        let mut bytes = full[..cut as usize].to_vec();
        if zero_fill {
            bytes.resize(full.len(), 0);
        }
        fs::write(&path, &bytes).unwrap();
        o.load_truncated = true;
        let aof = Aof::open(o).unwrap();
        let (cmds, stats) = load_all(&aof);
        let whole = ends.iter().rposition(|&e| e <= cut).unwrap();
        let expected: Vec<_> = batches[..whole].iter().flatten().cloned().collect();
        assert_eq!(cmds, expected, "cut at {cut} (zero fill {zero_fill})");
        assert_eq!(fs::metadata(&path).unwrap().len(), ends[whole], "cut {cut}");
        if (bytes.len() as u64) != ends[whole] {
            let (file, at) = stats.truncated.expect("truncation reported");
            assert_eq!(
                (file.as_str(), at),
                ("appendonly.aof.1.incr.aof", ends[whole])
            );
        }
        // Appending after recovery continues cleanly from the cut.
        let (lsn, _) = aof.append(|w| w.command(&[b"DEL", b"x"])).unwrap();
        aof.commit(lsn).unwrap();
        drop(aof);
        let o = options(work.path());
        let aof = Aof::open(o).unwrap();
        let (again, stats) = load_all(&aof);
        assert_eq!(again.len(), expected.len() + 1);
        assert!(stats.truncated.is_none());
    }
}

#[test]
fn torn_tail_refused_when_load_truncated_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    {
        let aof = Aof::open(opts.clone()).unwrap();
        load_all(&aof);
        let (lsn, _) = aof.append(|w| w.command(&[b"SET", b"a", b"1"])).unwrap();
        aof.commit(lsn).unwrap();
    }
    let path = opts.dir.join("appendonly.aof.1.incr.aof");
    let len = fs::metadata(&path).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    opts.load_truncated = false;
    let aof = Aof::open(opts).unwrap();
    let err = aof.load(|_| Ok(()), |_| {}).unwrap_err().to_string();
    assert!(
        err.contains("appendonly.aof.1.incr.aof") && err.contains("offset 0"),
        "{err}"
    );
}
