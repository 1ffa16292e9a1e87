//! Binding a sketch's file at start (`sketch_files::open_all`): header,
//! page table, a count-min sketch's counter pages or a cuckoo filter's,
//! top-k's or t-digest's encoded body, all untrusted.
//!
//! Input: a flags byte, then the file's bytes. With flag 1 the harness
//! rewrites the header checksum and every page table entry (generation 0,
//! the page's checksum), so mutations get past them to the sizes and the
//! mapping.
//!
//! Checks: no panic and no allocation beyond the file's own size whatever
//! it holds (plus, for a t-digest, the node slots a digest preallocates, at
//! most 1 MB); a file that binds names the key and dimensions its header gives
//! and its counters read back as the file's bytes.
#![no_main]

use blinkdb_engine::sketch_file::{FileHeader, SketchFiles};
use blinkdb_fuzz::alloc_meter::peak_during;
use libfuzzer_sys::fuzz_target;
use xxhash_rust::xxh3::xxh3_64;

const PAGE: usize = 4096;

fn seal(raw: &mut [u8]) {
    if raw.len() < PAGE {
        return;
    }
    let sum = (xxh3_64(&raw[..PAGE - 4]) as u32).to_le_bytes();
    raw[PAGE - 4..PAGE].copy_from_slice(&sum);
    let Ok(h) = FileHeader::decode(&raw[..PAGE]) else {
        return;
    };
    let Some(pages) = h.data_pages() else { return };
    let table = PAGE;
    let data = PAGE + (pages * 8).div_ceil(PAGE) * PAGE;
    for p in 0..pages {
        let (at, page) = (table + 8 * p, data + p * PAGE);
        if raw.len() < page + PAGE || raw.len() < at + 8 {
            break;
        }
        let sum = xxh3_64(&raw[page..page + PAGE]) as u32;
        raw[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
        raw[at + 4..at + 8].copy_from_slice(&sum.to_le_bytes());
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut raw = rest.to_vec();
    if flags & 1 != 0 {
        seal(&mut raw);
    }
    let scratch = blinkdb_fuzz::scratch_dir();
    let dir = scratch.path().join("sketch");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("0000000000000001.sketch"), &raw).unwrap();
    let files = SketchFiles::new(scratch.path());
    let (found, peak) = peak_during(|| files.open_all(0));
    assert!(
        peak <= raw.len() + (1 << 20) + (64 << 10),
        "{peak} bytes of heap to open a {}-byte file",
        raw.len()
    );
    for f in found {
        let h = FileHeader::decode(&raw[..PAGE]).expect("a bound file's header decodes");
        assert_eq!(f.key, h.key);
        assert_eq!(f.db, h.db as usize);
        assert_eq!(f.checkpoint, h.checkpoint);
    }
});
