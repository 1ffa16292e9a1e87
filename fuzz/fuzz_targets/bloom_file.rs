//! Reopening a key's Bloom filter from its files at log replay (what a
//! `BLINKDB.BFBIND` record does): the chain file, the sub-filter files (header,
//! checksummed lines), the item log; and BF.LOADCHUNK's header and data chunks.
//!
//! Input: a flags byte, the binding's `base` (u16), then parts separated by
//! "\n#--\n": chain file, sub-filter files 0..2, item log, dump header, data
//! chunk. An empty part is an absent file. With flag 1 the harness rewrites
//! the checksums of the chain file, of the sub-filter headers and of every line
//! (so mutations get past them); with flag 2 the item log's header is made
//! valid.
//!
//! Checks: no panic and no over-allocation whatever the files hold; a reopened
//! or rebuilt filter answers, grows, dumps; SCANDUMP fed to LOADCHUNK gives a
//! filter with the same answers; a flushed filter reopens with its items.
#![no_main]

use blinkdb_engine::bf::{
    BackendSpec, Binding, BloomConfig, BloomLimits, BloomStore, BloomValue, KeyFilterSpec,
    LogPosition,
};
use blinkdb_fuzz::alloc_meter::peak_during;
use blinkdb_fuzz::{split_parts, Cursor};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::Arc;
use xxhash_rust::xxh3::xxh3_64;

const ID: u64 = 1;
const MAX_MEMORY: u64 = 4 << 20;
const PROBES: &[&[u8]] = &[b"a", b"b", b"item-1", b"item-2", b"x", b"", b"zzzzzzzz"];

fn seal(bytes: &mut [u8], body: std::ops::Range<usize>, at: usize) {
    let sum = (xxh3_64(&bytes[body]) as u32).to_le_bytes();
    bytes[at..at + 4].copy_from_slice(&sum);
}

/// Rewrites the checksum of the chain file (its last 4 bytes).
fn seal_chain(raw: &mut [u8]) {
    if raw.len() >= 52 {
        let n = raw.len();
        seal(raw, 0..n - 4, n - 4);
    }
}

/// Rewrites the header checksum and every line checksum of a sub-filter file.
fn seal_filter(raw: &mut [u8]) {
    for line in raw.chunks_exact_mut(64) {
        seal(line, 0..60, 60);
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    if !bytes.is_empty() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

fn answers(v: &BloomValue) -> Vec<bool> {
    PROBES
        .iter()
        .map(|p| v.exists(p).unwrap_or(false))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let flags = c.u8();
    let base = c.u16() as u64;
    let parts = split_parts(c.rest(), b"\n#--\n");
    let part = |i: usize| parts.get(i).copied().unwrap_or(&[]);
    let scratch = blinkdb_fuzz::scratch_dir();
    let bloom_dir = scratch.path().join("bloom");
    std::fs::create_dir_all(&bloom_dir).unwrap();
    let mut chain = part(0).to_vec();
    if flags & 1 != 0 {
        seal_chain(&mut chain);
    }
    write(&bloom_dir, &format!("{ID:016x}.chain"), &chain);
    for i in 0..3 {
        let mut file = part(1 + i).to_vec();
        if flags & 1 != 0 {
            seal_filter(&mut file);
        }
        write(&bloom_dir, &format!("{ID:016x}.{i}.bloom"), &file);
    }
    let mut ilog = part(4).to_vec();
    if flags & 2 != 0 && ilog.len() >= 16 {
        ilog[..8].copy_from_slice(b"BLINKKL\0");
        ilog[8..12].copy_from_slice(&1u32.to_le_bytes());
        ilog[12..16].copy_from_slice(&16u32.to_le_bytes());
    }
    write(&bloom_dir, &format!("{ID:016x}.ilog"), &ilog);
    let files: usize = parts.iter().map(|p| p.len()).sum();

    let pins = scratch.path().join("pins");
    let store = Arc::new(BloomStore::new(scratch.path(), &pins));
    let limits = BloomLimits {
        max_memory: MAX_MEMORY,
    };
    let binding = Binding {
        id: ID,
        base,
        spec: KeyFilterSpec {
            config: BloomConfig {
                nonscaling: flags & 4 != 0,
                ..BloomConfig::default()
            },
            backend: BackendSpec::User,
        },
        pin: None,
    };
    let (bound, peak) = peak_during(|| store.bind(&binding, &limits));
    // A rebuilt filter may take bf-max-memory; the item log is read in chunks.
    assert!(
        peak as u64 <= 64 * files as u64 + 2 * MAX_MEMORY + (1 << 20),
        "{peak} bytes of heap to open {files} bytes of files"
    );
    if let Ok(v) = bound {
        let _ = v.card();
        let _ = v.info();
        let before = answers(&v);
        for item in PROBES.iter().take(flags as usize >> 5) {
            let _ = v.add(item, &limits);
        }
        // SCANDUMP into LOADCHUNK of a new filter: the same answers.
        let mut copy: Option<BloomValue> = None;
        let mut cursor = 0;
        for _ in 0..64 {
            let Ok((next, chunk)) = v.scandump(cursor) else {
                break;
            };
            if next == 0 {
                break;
            }
            if cursor == 0 {
                copy = store.load_header(None, &chunk, &limits).ok();
            } else if let Some(copy) = &copy {
                copy.load_chunk(next, &chunk, false)
                    .expect("a chunk SCANDUMP made");
            }
            cursor = next;
        }
        if let Some(copy) = &copy {
            if cursor != 0 {
                assert_eq!(answers(copy), answers(&v), "LOADCHUNK of SCANDUMP differs");
            }
        }
        drop(copy);
        // Flushed, then reopened: everything that was in is still in.
        if v.flush(LogPosition { file: 1, offset: 2 }).is_ok() {
            let now = answers(&v);
            for (b, n) in before.iter().zip(&now) {
                assert!(!b || *n, "an add lost an item");
            }
            store.close();
            drop(v);
            let store = Arc::new(BloomStore::new(scratch.path(), &pins));
            if let Ok(again) = store.bind(&binding, &limits) {
                let after = answers(&again);
                for (n, a) in now.iter().zip(&after) {
                    assert!(!n || *a, "reopening lost an item");
                }
            }
            store.close();
        }
    }
    // BF.LOADCHUNK from a client: a header chunk, then a data chunk.
    let store = Arc::new(BloomStore::new(scratch.path(), &pins));
    if let Ok(v) = store.load_header(None, part(5), &limits) {
        let cursor = i64::from_le_bytes(part(6).get(..8).map_or([0; 8], |b| b.try_into().unwrap()));
        let _ = v.load_chunk(cursor, part(6).get(8..).unwrap_or(&[]), false);
        let _ = answers(&v);
        let _ = v.scandump(cursor);
    }
});
