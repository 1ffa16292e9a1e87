//! BGREWRITEAOF while a writer changes keys: the writer copies each key it is about to
//! change into the new base (unless the rewrite already copied the key's shard), so
//! the base holds the keyspace as it was when the rewrite started and the new incr
//! files hold every write after. Replaying base + incr must give exactly the state in
//! memory, for strings, large values (kept in the log), expiries, deletes and keys
//! created during the rewrite.

use std::collections::HashMap;
use std::sync::Arc;

use blinkdb_engine::{Aof, AofArg, AofOptions, Engine, EngineOptions, Entry, Log, Value};
use rand::{Rng, SeedableRng};

const KEYS: usize = 150_000;
const BLOB_THRESHOLD: usize = 16 << 10;
const FAR: u64 = 4_000_000_000_000;

/// Value and expiry (0: none) of each key, as the server keeps them.
type Model = HashMap<Vec<u8>, (Vec<u8>, u64)>;

fn key(i: usize) -> Vec<u8> {
    format!("key:{i}").into_bytes()
}

fn value(rng: &mut impl Rng, round: usize) -> Vec<u8> {
    // One value in 200 is large enough to be kept only in the log.
    let len = if rng.gen_ratio(1, 200) {
        BLOB_THRESHOLD + rng.gen_range(0..4096)
    } else {
        rng.gen_range(1..120)
    };
    let mut v = format!("r{round}:").into_bytes();
    v.resize(len.max(v.len()), b'a' + (round % 26) as u8);
    v
}

fn set(e: &Engine, k: &[u8], v: &[u8], at: u64) {
    e.write1(0, k, |tx| {
        let at_text = at.to_string();
        let refs = if at == 0 {
            tx.log(0, &[b"SET", k, v])
        } else {
            tx.log(0, &[b"SET", k, v, b"PXAT", at_text.as_bytes()])
        };
        let val = match refs.get(2).copied().flatten() {
            Some(r) => Value::blob(r),
            None => Value::str(v),
        };
        let mut entry = Entry::new(val);
        entry.expire_at = at;
        tx.insert_after_log(0, k, entry);
    });
}

fn del(e: &Engine, k: &[u8]) {
    e.write1(0, k, |tx| {
        if tx.remove(0, k).is_some() {
            tx.log(0, &[b"DEL", k]);
        }
    });
}

fn append(e: &Engine, k: &[u8], suffix: &[u8]) -> bool {
    e.write1(0, k, |tx| {
        let Some(Value::Str(old, _)) = tx.get(0, k).map(|en| en.value().clone()) else {
            return false; // missing, or a large value: APPEND is not modelled for those
        };
        let at = tx.get(0, k).map_or(0, |en| en.expire_at);
        let mut v = old.to_vec();
        v.extend_from_slice(suffix);
        tx.log(0, &[b"APPEND", k, suffix]);
        tx.insert(0, k, Entry::string_expiring(&v[..], at));
        true
    })
    .0
}

fn pexpireat(e: &Engine, k: &[u8], at: u64) -> bool {
    e.write1(0, k, |tx| {
        let ok = tx.set_expire(0, k, at);
        if ok {
            tx.log(0, &[b"PEXPIREAT", k, at.to_string().as_bytes()]);
        }
        ok
    })
    .0
}

/// One random write, applied to the engine and to `model`.
fn random_write(e: &Engine, model: &mut Model, rng: &mut impl Rng, round: usize) {
    // Keys past KEYS are created during the rewrite.
    let k = key(rng.gen_range(0..KEYS + KEYS / 10));
    match rng.gen_range(0..10) {
        0..=4 => {
            let v = value(rng, round);
            let at = if rng.gen_ratio(1, 4) {
                FAR + round as u64
            } else {
                0
            };
            set(e, &k, &v, at);
            model.insert(k, (v, at));
        }
        5 | 6 => {
            del(e, &k);
            model.remove(&k);
        }
        7 | 8 => {
            let suffix = format!("+{round}").into_bytes();
            if append(e, &k, &suffix) {
                model
                    .get_mut(&k)
                    .expect("appended to a live key")
                    .0
                    .extend(suffix);
            }
        }
        _ => {
            let at = FAR + 7 * round as u64;
            if pexpireat(e, &k, at) {
                model.get_mut(&k).expect("expiry on a live key").1 = at;
            }
        }
    }
}

/// Replays the log directory into a model, reading large values back.
fn replay(dir: &std::path::Path) -> Model {
    let aof = Aof::open(AofOptions::new(dir)).unwrap();
    let mut cmds = Vec::new();
    aof.load(
        |c| {
            cmds.push(c.args);
            Ok(())
        },
        |_| {},
    )
    .unwrap();
    let mut model = Model::new();
    for args in cmds {
        let args: Vec<Vec<u8>> = args
            .into_iter()
            .map(|a| match a {
                AofArg::Inline(b) => b.to_vec(),
                AofArg::Blob(r) => aof.read_blob(&r, true).unwrap().to_vec(),
            })
            .collect();
        let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
        match name.as_str() {
            "SELECT" => assert_eq!(args[1], b"0"),
            "SET" => {
                let at = match args.get(3) {
                    Some(opt) if opt.eq_ignore_ascii_case(b"PXAT") => {
                        std::str::from_utf8(&args[4]).unwrap().parse().unwrap()
                    }
                    None => 0,
                    Some(other) => panic!("unexpected SET option {other:?}"),
                };
                model.insert(args[1].clone(), (args[2].clone(), at));
            }
            "DEL" => {
                model.remove(&args[1]);
            }
            "APPEND" => model
                .get_mut(&args[1])
                .expect("APPEND replayed on a missing key")
                .0
                .extend_from_slice(&args[2]),
            "PEXPIREAT" => {
                model
                    .get_mut(&args[1])
                    .expect("PEXPIREAT on a missing key")
                    .1 = std::str::from_utf8(&args[2]).unwrap().parse().unwrap()
            }
            other => panic!("unexpected command {other} in the log"),
        }
    }
    model
}

#[test]
fn a_rewrite_under_writes_keeps_exactly_the_state_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let aofdir = dir.path().join("appendonlydir");
    let aof = Aof::open(AofOptions::new(&aofdir)).unwrap();
    aof.load(|_| Ok(()), |_| {}).unwrap();
    let engine = Arc::new(Engine::new(EngineOptions {
        data_dir: dir.path().to_path_buf(),
        ..EngineOptions::default()
    }));
    engine.set_log(Arc::new(Log::new(aof, true, BLOB_THRESHOLD)));
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut model = Model::new();
    for i in 0..KEYS {
        let v = value(&mut rng, 0);
        let at = if i % 5 == 0 { FAR } else { 0 };
        set(&engine, &key(i), &v, at);
        model.insert(key(i), (v, at));
    }

    let mut during = 0usize;
    for round in 1..=2 {
        let rewriter = {
            let engine = engine.clone();
            std::thread::spawn(move || engine.rewrite_aof())
        };
        // Writes while the rewrite runs (and a few before it has started or after it
        // ended, which must be right too).
        while !rewriter.is_finished() {
            for _ in 0..64 {
                random_write(&engine, &mut model, &mut rng, round);
                during += usize::from(engine.rewrite_in_progress());
            }
        }
        let report = rewriter.join().unwrap().expect("rewrite succeeded");
        assert!(report.keys > 0);
    }
    assert!(
        during > 1_000,
        "only {during} writes landed while a rewrite ran: the test did not test"
    );

    // Memory agrees with the model...
    for (k, (v, at)) in &model {
        let found = engine.read(0, k, |en| {
            en.map(|en| {
                let bytes = match en.value() {
                    Value::Str(s, _) => s.to_vec(),
                    Value::Blob(r, _) => {
                        engine.log_handle().unwrap().read_blob(r).unwrap().to_vec()
                    }
                    _ => panic!("only strings here"),
                };
                (bytes, en.expire_at)
            })
        });
        assert_eq!(
            found.as_ref(),
            Some(&(v.clone(), *at)),
            "key {:?}",
            String::from_utf8_lossy(k)
        );
    }
    // ... and so does a replay of base + incr files.
    drop(engine);
    let replayed = replay(&aofdir);
    assert_eq!(replayed.len(), model.len());
    for (k, expected) in &model {
        assert_eq!(
            replayed.get(k),
            Some(expected),
            "key {:?}",
            String::from_utf8_lossy(k)
        );
    }
}
