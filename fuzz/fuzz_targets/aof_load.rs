//! Loading an append-only directory at start: the manifest, the base and incr
//! files (RESP commands, `#BK` batch annotations, MULTI/EXEC, Redis-written
//! files), truncation and corruption handling, and the replay of every
//! command through the server's command table (internal Bloom records too).
//!
//! Input: a flags byte, then parts separated by "\n#--\n": with flag 4 the
//! first part is the manifest and the others are written under the names a
//! seed manifest uses; without it a manifest listing the parts is generated
//! (the first as the base with flag 8, the rest as incr files 1, 2, ...).
//!
//! Checks: loading returns Ok or an error, never panics, and holds at most a
//! constant factor of the files' bytes on the heap (a `$1099511627776`
//! header reserves nothing); a loaded server answers commands.
#![no_main]

use blinkdb_fuzz::alloc_meter::peak_during;
use blinkdb_fuzz::server::Server;
use blinkdb_fuzz::{count_replies, encode_request, split_parts, Cursor};
use libfuzzer_sys::fuzz_target;

const NAMES: &[&str] = &[
    "appendonly.aof.1.base.aof",
    "appendonly.aof.1.incr.aof",
    "appendonly.aof.2.incr.aof",
    "appendonly.aof.3.incr.aof",
];

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let flags = c.u8();
    let parts = split_parts(c.rest(), b"\n#--\n");
    let yes_no = |bit: u8| if flags & bit != 0 { "yes" } else { "no" };
    let blob_threshold = ["16kb", "1", "16", "64"][(flags >> 4) as usize % 4];
    let server = Server::new(&[
        ("appendonly", "yes"),
        ("appendfsync", "no"),
        ("aof-load-truncated", yes_no(1)),
        ("aof-load-corrupt", yes_no(2)),
        ("blob-threshold", blob_threshold),
    ]);
    let aof_dir = server.dir.path().join("appendonlydir");
    std::fs::create_dir_all(&aof_dir).unwrap();
    let mut total = 0;
    if flags & 4 != 0 {
        std::fs::write(aof_dir.join("appendonly.aof.manifest"), parts[0]).unwrap();
        for (name, bytes) in NAMES.iter().zip(&parts[1..]) {
            std::fs::write(aof_dir.join(name), bytes).unwrap();
        }
        total += parts.iter().map(|p| p.len()).sum::<usize>();
    } else {
        let mut manifest = String::new();
        let mut files = parts.iter();
        if flags & 8 != 0 {
            let base = files.next().unwrap();
            std::fs::write(aof_dir.join(NAMES[0]), base).unwrap();
            manifest.push_str("file appendonly.aof.1.base.aof seq 1 type b\n");
            total += base.len();
        }
        for (i, bytes) in files.take(NAMES.len() - 1).enumerate() {
            std::fs::write(aof_dir.join(NAMES[i + 1]), bytes).unwrap();
            manifest.push_str(&format!("file {} seq {} type i\n", NAMES[i + 1], i + 1));
            total += bytes.len();
        }
        std::fs::write(aof_dir.join("appendonly.aof.manifest"), manifest).unwrap();
    }
    let shared = &server.shared;
    let settings = shared.settings();
    shared.engine.set_loading(true);
    let (loaded, peak) = peak_during(|| blinkdb_server::persistence::load(&**shared, &settings));
    shared.engine.set_loading(false);
    // A filter the log binds may be as large as bf-max-memory (4 MB here).
    let bound = 64 * total + (16 << 20);
    assert!(peak <= bound, "{peak} bytes of heap to load {total} bytes");
    if loaded.is_err() {
        return;
    }
    let mut conn = server.connect();
    let mut req = Vec::new();
    for cmd in [
        &["DBSIZE"][..],
        &["KEYS", "*"],
        &["SCAN", "0", "COUNT", "1000"],
        &["INFO", "persistence"],
        &["SET", "after-load", "1"],
    ] {
        let args: Vec<Vec<u8>> = cmd.iter().map(|a| a.as_bytes().to_vec()).collect();
        encode_request(&args, &mut req);
    }
    assert!(!conn.feed(&server, &req));
    assert_eq!(count_replies(&conn.out.buf), 5);
    conn.close(&server);
});
