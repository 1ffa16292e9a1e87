//! Scenario: a separate process opens BlinkDB's pinned maps by path with
//! plain aya (no BlinkDB code) and finds every item BlinkDB added. This is
//! what an eBPF loader or a sidecar sharing the filter does.
//!
//! The separate process is this test binary run again with
//! `BLINKDB_INTEROP_PIN` set, executing `interop_reader` only.

use std::path::Path;
use std::process::Command;

use crate::kernel_support::kernel_root;
use aya::maps::{bloom_filter::BloomFilter, Map, MapData};
use blinkdb_engine::bpf::{FilterSpec, KernelFilter, PinLocation};

const PIN_VAR: &str = "BLINKDB_INTEROP_PIN";
const MODE_VAR: &str = "BLINKDB_INTEROP_MODE";
const ITEMS: u32 = 500;

fn digest_item(i: u32) -> Vec<u8> {
    format!("user-{i}@example.com").into_bytes()
}

fn ipv4_item(i: u32) -> [u8; 4] {
    [10, 1, (i >> 8) as u8, i as u8]
}

/// The reader side: only aya and xxhash, the way another program would.
#[test]
fn interop_reader() {
    let (Ok(pin), Ok(mode)) = (std::env::var(PIN_VAR), std::env::var(MODE_VAR)) else {
        return;
    };
    let map = Map::BloomFilter(MapData::from_pin(Path::new(&pin)).expect("open pin"));
    let found = match mode.as_str() {
        "digest" => {
            let filter = BloomFilter::<MapData, [u8; 16]>::try_from(map).expect("16-byte values");
            (0..ITEMS)
                .filter(|&i| {
                    // The documented value: xxh3-128 of the item, little-endian.
                    let digest = xxhash_rust::xxh3::xxh3_128(&digest_item(i)).to_le_bytes();
                    filter.contains(digest, 0).is_ok()
                })
                .count()
        }
        "raw4" => {
            let filter = BloomFilter::<MapData, [u8; 4]>::try_from(map).expect("4-byte values");
            (0..ITEMS)
                .filter(|&i| filter.contains(ipv4_item(i), 0).is_ok())
                .count()
        }
        other => panic!("unknown mode {other}"),
    };
    println!("READER-FOUND: {found}");
}

fn run_reader(pin: &Path, mode: &str) -> usize {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kernel_interop::interop_reader",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PIN_VAR, pin)
        .env(MODE_VAR, mode)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "reader failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|line| {
            line.split_once("READER-FOUND: ")
                .map(|(_, n)| n.trim().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no READER-FOUND line in:\n{stdout}"))
}

#[test]
fn another_process_finds_every_item_through_the_pin() {
    let Some(root) = kernel_root("another_process_finds_every_item_through_the_pin") else {
        return;
    };
    let digest_location = PinLocation::for_key(root.path(), 0, b"shared");
    let digest = KernelFilter::create(&digest_location, &FilterSpec::digest(ITEMS, 0.01)).unwrap();
    let raw_location = PinLocation::for_key(root.path(), 0, b"shared-ips");
    let raw = KernelFilter::create(&raw_location, &FilterSpec::raw(ITEMS, 0.01, 4)).unwrap();

    assert_eq!(
        run_reader(&digest_location.path(), "digest"),
        0,
        "empty filter"
    );
    for i in 0..ITEMS {
        digest.add(&digest_item(i)).unwrap();
        raw.add(&ipv4_item(i)).unwrap();
    }
    assert_eq!(
        run_reader(&digest_location.path(), "digest"),
        ITEMS as usize
    );
    assert_eq!(run_reader(&raw_location.path(), "raw4"), ITEMS as usize);
}
