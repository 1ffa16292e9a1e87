use super::file::OpenReport;
use super::*;
use std::io::{Seek, SeekFrom, Write};
use std::sync::Arc;

fn key(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

fn ready(outcome: OpenOutcome) -> (BloomFile, OpenReport) {
    match outcome {
        OpenOutcome::Ready(file, report) => (file, report),
        OpenOutcome::Rebuild(reason) => panic!("unexpected rebuild: {reason:?}"),
    }
}

fn filled(path: &std::path::Path, items: u64) -> Geometry {
    let geometry = Geometry::for_items(items, 0.01).unwrap();
    let filter = BloomFile::create(path, geometry).unwrap();
    for i in 0..items {
        filter.insert(&key(i));
    }
    filter
        .flush(LogPosition {
            file: 3,
            offset: 4096,
        })
        .unwrap();
    geometry
}

fn corrupt_lines(path: &std::path::Path, lines: impl Iterator<Item = u64>) {
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    for line in lines {
        file.seek(SeekFrom::Start(layout::HEADER_BYTES + line * 64 + 7))
            .unwrap();
        file.write_all(&[0x5A, 0x00, 0x13]).unwrap();
    }
}

#[test]
fn round_trip_keeps_bits_count_and_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let geometry = filled(&path, 10_000);
    let (filter, report) = ready(BloomFile::open(&path, geometry).unwrap());
    assert_eq!(report.corrupt_lines, 0);
    assert_eq!(
        report.checkpoint,
        LogPosition {
            file: 3,
            offset: 4096
        }
    );
    assert_eq!(filter.checkpoint(), report.checkpoint);
    assert!((0..10_000).all(|i| filter.contains(&key(i))));
    assert!(filter.item_count() <= 10_000 && filter.item_count() > 9_900);
    let absent = (1_000_000..1_100_000)
        .filter(|&i| filter.contains(&key(i)))
        .count();
    assert!(absent < 1_000, "false positives {absent}");
}

#[test]
fn corrupt_lines_become_ones_and_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let geometry = filled(&path, 20_000);
    let bad: std::collections::BTreeSet<u64> = (0..geometry.lines / 50)
        .map(|i| (i * 7919) % geometry.lines)
        .collect();
    corrupt_lines(&path, bad.iter().copied());
    let (filter, report) = ready(BloomFile::open(&path, geometry).unwrap());
    assert_eq!(report.corrupt_lines, bad.len() as u64);
    assert!(
        (0..20_000).all(|i| filter.contains(&key(i))),
        "false negative after repair"
    );
    assert_eq!(filter.stats().corrupt_lines_at_open, bad.len() as u64);
    drop(filter);
    // The repair is written back, so a second open sees a clean file.
    let (_, again) = ready(BloomFile::open(&path, geometry).unwrap());
    assert_eq!(again.corrupt_lines, 0);
}

#[test]
fn over_five_percent_corrupt_asks_for_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let geometry = filled(&path, 20_000);
    let count = geometry.lines * 6 / 100;
    corrupt_lines(&path, 0..count);
    match BloomFile::open(&path, geometry).unwrap() {
        OpenOutcome::Rebuild(RebuildReason::TooManyCorruptLines { corrupt, lines }) => {
            assert_eq!((corrupt, lines), (count, geometry.lines))
        }
        other => panic!("expected rebuild, got {other:?}"),
    }
}

#[test]
fn geometry_change_missing_file_and_bad_header_ask_for_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let geometry = filled(&path, 1_000);
    let bigger = Geometry {
        lines: geometry.lines + 1,
        ..geometry
    };
    assert!(matches!(
        BloomFile::open(&path, bigger).unwrap(),
        OpenOutcome::Rebuild(RebuildReason::GeometryChanged { found }) if found == geometry
    ));
    let more_hashes = Geometry {
        hashes: geometry.hashes + 1,
        ..geometry
    };
    assert!(matches!(
        BloomFile::open(&path, more_hashes).unwrap(),
        OpenOutcome::Rebuild(_)
    ));
    assert!(matches!(
        BloomFile::open(&dir.path().join("none"), geometry).unwrap(),
        OpenOutcome::Rebuild(RebuildReason::Missing)
    ));
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.seek(SeekFrom::Start(40)).unwrap();
    file.write_all(&[1]).unwrap();
    assert!(matches!(
        BloomFile::open(&path, geometry).unwrap(),
        OpenOutcome::Rebuild(RebuildReason::HeaderCorrupt)
    ));
}

#[test]
fn checkpoint_persists_across_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let geometry = Geometry::for_items(100, 0.01).unwrap();
    let filter = BloomFile::create(&path, geometry).unwrap();
    assert_eq!(filter.checkpoint(), LogPosition::default());
    filter.insert(b"a");
    filter
        .flush(LogPosition {
            file: 1,
            offset: 10,
        })
        .unwrap();
    filter.insert(b"b");
    filter
        .flush(LogPosition {
            file: 2,
            offset: 20,
        })
        .unwrap();
    drop(filter);
    let (filter, report) = ready(BloomFile::open(&path, geometry).unwrap());
    assert_eq!(
        report.checkpoint,
        LogPosition {
            file: 2,
            offset: 20
        }
    );
    assert_eq!(filter.item_count(), 2);
}

#[test]
fn unflushed_adds_survive_without_flush_as_page_cache_does() {
    // Models kill -9: the mapping is dropped without flush, the page cache keeps it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let geometry = Geometry::for_items(5_000, 0.01).unwrap();
    let filter = BloomFile::create(&path, geometry).unwrap();
    (0..5_000).for_each(|i| {
        filter.insert(&key(i));
    });
    drop(filter);
    let (filter, report) = ready(BloomFile::open(&path, geometry).unwrap());
    assert_eq!(report.corrupt_lines, 0);
    assert!((0..5_000).all(|i| filter.contains(&key(i))));
}

#[test]
fn concurrent_adds_and_reads_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let geometry = Geometry::for_items(400_000, 0.01).unwrap();
    let filter = Arc::new(BloomFile::create(&path, geometry).unwrap());
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let filter = filter.clone();
            std::thread::spawn(move || {
                for i in (t..400_000).step_by(4) {
                    filter.insert(&key(i));
                    assert!(filter.contains(&key(i)));
                    // Reads of other threads' keys run concurrently with their adds.
                    let _ = filter.contains(&key((i * 31) % 400_000));
                }
            })
        })
        .collect();
    let flusher = {
        let filter = filter.clone();
        std::thread::spawn(move || {
            for n in 0..3 {
                filter.flush(LogPosition { file: 0, offset: n }).unwrap();
            }
        })
    };
    threads.into_iter().for_each(|t| t.join().unwrap());
    flusher.join().unwrap();
    assert!((0..400_000).all(|i| filter.contains(&key(i))));
    drop(filter);
    // Every line checksum must match its bits after the concurrent writers.
    let (_, report) = ready(BloomFile::open(&path, geometry).unwrap());
    assert_eq!(report.corrupt_lines, 0);
}

#[test]
fn measured_false_positives_stay_under_the_target() {
    let dir = tempfile::tempdir().unwrap();
    for (items, fp) in [(100_000u64, 0.01), (100_000, 0.001)] {
        let path = dir.path().join(format!("f{fp}.bloom"));
        let geometry = Geometry::for_items(items, fp).unwrap();
        let mut filter = BloomFile::create(&path, geometry).unwrap();
        (0..items).for_each(|i| {
            filter.insert_exclusive(&key(i));
        });
        let probes = 1_000_000u64;
        let hits = (0..probes)
            .filter(|i| filter.contains(&key(u64::MAX - i)))
            .count();
        let measured = hits as f64 / probes as f64;
        let predicted = geometry.predicted_fp(items);
        eprintln!("target {fp} predicted {predicted} measured {measured}");
        assert!(measured <= fp, "{fp}: measured {measured}");
        let stats = filter.stats();
        assert!(
            (stats.estimated_fp - measured).abs() < fp * 0.3,
            "{stats:?} vs {measured}"
        );
    }
}

#[test]
fn batch_calls_match_one_by_one_calls() {
    let dir = tempfile::tempdir().unwrap();
    let geometry = Geometry::for_items(50_000, 0.01).unwrap();
    let create = |name: &str| BloomFile::create(&dir.path().join(name), geometry).unwrap();
    let (mut one, mut exclusive, shared) = (create("one"), create("exclusive"), create("shared"));
    // Every key twice, the repeat often inside the same batch.
    let items: Vec<[u8; 8]> = (0..100_000u64)
        .map(|i| key((i / 2) ^ (i % 2 * 3)))
        .collect();
    let singles: Vec<bool> = items.iter().map(|i| one.insert_exclusive(i)).collect();
    let mut batched_exclusive = Vec::new();
    let mut batched_shared = Vec::new();
    for chunk in items.chunks(128) {
        batched_exclusive.extend(exclusive.insert_many_exclusive(chunk));
        batched_shared.extend(shared.insert_many(chunk));
    }
    assert!(singles.iter().any(|&added| !added));
    assert_eq!(singles, batched_exclusive);
    assert_eq!(singles, batched_shared);
    assert_eq!(one.item_count(), exclusive.item_count());
    assert_eq!(one.item_count(), shared.item_count());
    // Same bits and same checksums, byte for byte.
    let all = |f: &BloomFile| f.read_lines(0, geometry.lines);
    assert_eq!(all(&one), all(&exclusive));
    assert_eq!(all(&one), all(&shared));
    assert!(BloomFile::lines_are_valid(&all(&shared)));

    let probes: Vec<[u8; 8]> = (0..100_000u64).map(key).collect();
    let expected: Vec<bool> = probes.iter().map(|p| one.contains(p)).collect();
    assert!(expected[..50_000].iter().all(|&present| present));
    assert!(expected[50_000..].iter().any(|&present| !present));
    assert_eq!(shared.contains_many(&probes), expected);
    // Slots already true are left alone (a chain tests link after link).
    let hashes: Vec<ItemHash> = probes[50_000..].iter().map(|p| ItemHash::of(p)).collect();
    let mut found = vec![true; hashes.len()];
    shared.contains_hashes(&hashes, &mut found);
    assert!(found.iter().all(|&f| f));
}

/// The vector probes answer exactly as the scalar one, for every k the format allows,
/// on lines from empty to full (random bits, so every word and bit position occurs).
#[test]
fn vector_probes_match_the_scalar_probe() {
    let path = tempfile::tempdir().unwrap();
    let mut state = 0x243F_6A88_85A3_08D3u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    #[cfg(target_arch = "x86_64")]
    let avx2 = file::has_avx2();
    #[cfg(not(target_arch = "x86_64"))]
    let avx2 = false;
    let mut checked = [0u64; 2];
    for hashes in 1..=MAX_HASHES {
        let geometry = Geometry::new(64, hashes).unwrap();
        let filter = BloomFile::create(&path.path().join(format!("{hashes}")), geometry).unwrap();
        for line in 0..64 {
            // Density from ~0 to all ones: AND or OR of random words.
            let words: [u64; 8] = std::array::from_fn(|_| match line % 4 {
                0 => next() & next() & next(),
                1 => next(),
                2 => next() | next() | next(),
                _ => !0,
            });
            filter.store_line_for_test(line, &words);
        }
        for _ in 0..4000 {
            let hash =
                ItemHash::from_digest((next() as u128 | (next() as u128) << 64).to_le_bytes());
            let words = filter.words_for_test(hash);
            let scalar = BloomFile::covers_scalar(words, hash, hashes);
            checked[scalar as usize] += 1;
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                // SAFETY: just detected.
                let vector = unsafe { probe::covers_avx2(words, hash.seed(), hashes) };
                assert_eq!(vector, scalar, "avx2, k {hashes}");
            }
        }
    }
    // The batch loops agree too, on a half-full filter.
    let geometry = Geometry::for_items(20_000, 0.01).unwrap();
    let filter = BloomFile::create(&path.path().join("batch"), geometry).unwrap();
    filter.insert_many(&(0..10_000u64).map(key).collect::<Vec<_>>());
    let hashes: Vec<ItemHash> = (0..20_000u64).map(|i| ItemHash::of(&key(i))).collect();
    let batch = |run: &dyn Fn(&mut [bool])| {
        let mut found = vec![false; hashes.len()];
        run(&mut found);
        found
    };
    let scalar = batch(&|f| filter.contains_hashes_with(&hashes, f, BloomFile::covers_scalar));
    assert!(scalar[..10_000].iter().all(|&present| present));
    assert!(scalar[10_000..].iter().any(|&present| !present));
    assert_eq!(batch(&|f| filter.contains_hashes(&hashes, f)), scalar);
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: just detected.
        let vector = batch(&|f| unsafe { filter.contains_hashes_avx2(&hashes, f) });
        assert_eq!(vector, scalar);
    }
    // Both answers occurred often (so a probe that always says yes or no would fail).
    assert!(checked.iter().all(|&n| n > 20_000), "{checked:?}");
    eprintln!("AVX2 probe tested: {avx2}");
}

/// A flat file: RedisBloom's bit x is bit x % 480 of line x / 480, every line it
/// touches keeps a valid checksum, the layout is in the header (a blocked
/// geometry of the same lines does not open it), and a corrupt line becomes all
/// ones (no false negative).
#[test]
fn flat_layout_spreads_redisbloom_bits_over_checksummed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flat.bloom");
    let geometry = Geometry::flat(9216 * 8, 11).unwrap();
    assert_eq!(geometry.lines, (9216 * 8u64).div_ceil(480));
    let mut filter = BloomFile::create(&path, geometry).unwrap();
    let pairs: Vec<(u64, u64)> = (0..500u64)
        .map(|i| {
            (
                i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                i.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) | 1,
            )
        })
        .collect();
    for &pair in &pairs {
        filter.insert_pair_exclusive(pair);
    }
    assert_eq!(filter.item_count(), 500);
    // Bit (a + i·b) mod bits, read straight from the line bytes.
    let bytes = filter.read_lines(0, geometry.lines);
    assert!(BloomFile::lines_are_valid(&bytes));
    let bit = |x: u64| {
        let (line, at) = (x / 480, x % 480);
        bytes[(line * 64 + at / 8) as usize] >> (at % 8) & 1 == 1
    };
    for &(a, b) in &pairs {
        assert!((0..11u64).all(|i| bit(a.wrapping_add(i.wrapping_mul(b)) % geometry.flat_bits)));
    }
    filter.flush(LogPosition::default()).unwrap();
    drop(filter);
    let blocked = Geometry::new(geometry.lines, 11).unwrap();
    assert!(matches!(
        BloomFile::open(&path, blocked).unwrap(),
        OpenOutcome::Rebuild(RebuildReason::GeometryChanged { found }) if found == geometry
    ));
    corrupt_lines(&path, [3].into_iter());
    let (filter, report) = ready(BloomFile::open(&path, geometry).unwrap());
    assert_eq!(report.corrupt_lines, 1);
    assert!(pairs.iter().all(|&p| filter.contains_pair(p)));
    assert!(!filter.contains_pair((12345, 678)) || filter.stats().fill_ratio > 0.3);
}

/// A version-1 header (before layouts) still opens, as blocked.
#[test]
fn version_1_files_load_as_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.bloom");
    let geometry = filled(&path, 1_000);
    let mut raw = std::fs::read(&path).unwrap();
    raw[8..12].copy_from_slice(&1u32.to_le_bytes());
    raw[28..32].copy_from_slice(&0u32.to_le_bytes());
    let sum = layout::checksum60(&raw[..60]);
    raw[60..64].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(&path, &raw).unwrap();
    let (filter, _) = ready(BloomFile::open(&path, geometry).unwrap());
    assert!(!filter.geometry().is_flat());
    assert!((0..1_000).all(|i| filter.contains(&key(i))));
}
