//! Scenario: a kernel filter's pin lifecycle: create and pin, reopen the same
//! map, notice a removed pin, and unpin on delete.

use std::os::fd::{AsFd, AsRawFd};
use std::process::Command;

use crate::kernel_support::{kernel_root, say_skipped};
use blinkdb_engine::bpf::{
    FilterSpec, KernelError, KernelFilter, OpenOutcome, PinLocation, PinStatus,
};

#[test]
fn create_pins_a_bloom_map_with_the_requested_hash_count() {
    let Some(root) = kernel_root("create_pins_a_bloom_map_with_the_requested_hash_count") else {
        return;
    };
    let location = PinLocation::for_key(root.path(), 0, b"users");
    let filter = KernelFilter::create(&location, &FilterSpec::digest(10_000, 0.01)).unwrap();
    let info = filter.info().clone();
    assert_eq!(info.pin_path, root.path().join("0").join("k7573657273"));
    assert!(info.pin_path.exists());
    assert_eq!(info.max_entries, 10_000);
    assert_eq!(info.value_size, 16);
    assert_eq!(info.hash_count, 7, "round(-log2 0.01) = 7 hashes");

    // The kernel's own view through another fd: /proc fdinfo shows map_extra.
    let other = aya::maps::MapData::from_pin(&info.pin_path).unwrap();
    let fd = other.fd().as_fd().as_raw_fd();
    let fdinfo = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap();
    assert!(fdinfo.contains("map_type:\t30"), "{fdinfo}"); // BPF_MAP_TYPE_BLOOM_FILTER
    assert!(fdinfo.contains("map_extra:\t0x7"), "{fdinfo}");
    assert!(fdinfo.contains("max_entries:\t10000"), "{fdinfo}");

    // And bpftool, which knows nothing of our code.
    match Command::new("bpftool")
        .args(["-j", "map", "show", "pinned"])
        .arg(&info.pin_path)
        .output()
    {
        Ok(out) => {
            let json = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "bpftool failed: {json}");
            assert!(json.contains("\"type\":\"bloom_filter\""), "{json}");
            assert!(json.contains("\"max_entries\":10000"), "{json}");
            assert!(json.contains(&format!("\"id\":{}", info.map_id)), "{json}");
            assert!(json.contains("\"bytes_value\":16"), "{json}");
        }
        Err(err) => say_skipped("bpftool part of create_pins...", &err.to_string()),
    }

    let again = KernelFilter::create(&location, &FilterSpec::digest(10_000, 0.01));
    assert!(matches!(again, Err(KernelError::PinExists { .. })));
}

#[test]
fn reopening_the_pin_serves_the_same_map_and_items() {
    let Some(root) = kernel_root("reopening_the_pin_serves_the_same_map_and_items") else {
        return;
    };
    let location = PinLocation::for_key(root.path(), 2, b"seen");
    let spec = FilterSpec::digest(1_000, 0.001);
    let (first, outcome) = KernelFilter::open_or_create(&location, &spec).unwrap();
    assert_eq!(outcome, OpenOutcome::Created);
    assert!(first.add(b"alice").unwrap());
    let first_id = first.info().map_id;
    drop(first); // closes our fd; the pin keeps the map alive

    let (reopened, outcome) = KernelFilter::open_or_create(&location, &spec).unwrap();
    assert_eq!(outcome, OpenOutcome::Reopened);
    assert_eq!(reopened.info().map_id, first_id);
    assert_eq!(reopened.info().hash_count, 10);
    assert!(reopened.contains(b"alice").unwrap());
    assert!(!reopened.add(b"alice").unwrap(), "already present");

    let other_spec = FilterSpec::digest(2_000, 0.001);
    let err = KernelFilter::open(&location, &other_spec).unwrap_err();
    assert!(
        err.to_string()
            .contains("does not match: max_entries expected 2000, found 1000"),
        "{err}"
    );
}

#[test]
fn a_removed_pin_is_detected() {
    let Some(root) = kernel_root("a_removed_pin_is_detected") else {
        return;
    };
    let location = PinLocation::new(root.path(), 0, "gone").unwrap();
    let spec = FilterSpec::digest(100, 0.01);
    let filter = KernelFilter::create(&location, &spec).unwrap();
    filter.add(b"x").unwrap();
    assert_eq!(filter.pin_status().unwrap(), PinStatus::Pinned);

    std::fs::remove_file(location.path()).unwrap();
    assert_eq!(filter.pin_status().unwrap(), PinStatus::Missing);
    // A restarted process finds nothing and must rebuild from its log.
    assert!(KernelFilter::open(&location, &spec).unwrap().is_none());

    // While we still hold the map, it can be pinned again, contents intact.
    filter.repin().unwrap();
    assert_eq!(filter.pin_status().unwrap(), PinStatus::Pinned);
    let reopened = KernelFilter::open(&location, &spec).unwrap().unwrap();
    assert_eq!(reopened.info().map_id, filter.info().map_id);
    assert!(reopened.contains(b"x").unwrap());

    // A different map pinned in its place is reported, not adopted.
    drop(reopened);
    std::fs::remove_file(location.path()).unwrap();
    let replacement = KernelFilter::create(&location, &spec).unwrap();
    assert_eq!(
        filter.pin_status().unwrap(),
        PinStatus::Replaced {
            map_id: replacement.info().map_id
        }
    );
    filter.delete().unwrap();
    assert!(location.path().exists(), "delete leaves another map's pin");
}

#[test]
fn delete_unpins_and_frees_the_map() {
    let Some(root) = kernel_root("delete_unpins_and_frees_the_map") else {
        return;
    };
    let location = PinLocation::for_key(root.path(), 0, b"tmp");
    let filter = KernelFilter::create(&location, &FilterSpec::digest(100, 0.01)).unwrap();
    let map_id = filter.info().map_id;
    filter.delete().unwrap();
    assert!(!location.path().exists());
    // The kernel frees a map from a work queue, so give it a moment.
    let freed = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        aya::maps::MapData::from_id(map_id).is_err()
    });
    assert!(
        freed,
        "no fd and no pin left, yet map {map_id} still exists"
    );
}
