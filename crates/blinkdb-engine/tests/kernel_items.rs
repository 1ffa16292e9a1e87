//! Scenario: items go into kernel filters and come back: digest mode for any
//! bytes, RAW mode for fixed-width items, single and batch calls.

use crate::kernel_support::kernel_root;
use blinkdb_engine::bpf::{FilterSpec, KernelError, KernelFilter, PinLocation};

#[test]
fn add_reports_new_items_and_contains_finds_them() {
    let Some(root) = kernel_root("add_reports_new_items_and_contains_finds_them") else {
        return;
    };
    let location = PinLocation::for_key(root.path(), 0, b"emails");
    let filter = KernelFilter::create(&location, &FilterSpec::digest(1_000, 0.001)).unwrap();
    assert!(!filter.contains(b"alice@example.com").unwrap());
    assert!(
        filter.add(b"alice@example.com").unwrap(),
        "first add is new"
    );
    assert!(
        !filter.add(b"alice@example.com").unwrap(),
        "second add is not"
    );
    assert!(filter.contains(b"alice@example.com").unwrap());
    assert!(!filter.contains(b"bob@example.com").unwrap());
    assert!(filter.add(b"").unwrap(), "the empty item is an item too");
    assert!(filter.contains(b"").unwrap());
}

#[test]
fn batch_helpers_keep_order_and_agree_with_single_calls() {
    let Some(root) = kernel_root("batch_helpers_keep_order_and_agree_with_single_calls") else {
        return;
    };
    let location = PinLocation::for_key(root.path(), 0, b"batch");
    let filter = KernelFilter::create(&location, &FilterSpec::digest(1_000, 0.001)).unwrap();
    filter.insert_many(&[b"a".as_slice(), b"b"]).unwrap();
    let added = filter.add_many(&[b"b".as_slice(), b"c", b"c"]).unwrap();
    assert_eq!(added, vec![false, true, false]);
    let found = filter
        .contains_many(&[b"a".as_slice(), b"zzz", b"c"])
        .unwrap();
    assert_eq!(found, vec![true, false, true]);
}

#[test]
fn raw_mode_stores_fixed_width_items_and_refuses_others() {
    let Some(root) = kernel_root("raw_mode_stores_fixed_width_items_and_refuses_others") else {
        return;
    };
    let location = PinLocation::for_key(root.path(), 0, b"blocked-ips");
    let filter = KernelFilter::create(&location, &FilterSpec::raw(1_000, 0.001, 4)).unwrap();
    assert_eq!(filter.info().value_size, 4);
    assert!(filter.add(&[192, 168, 1, 7]).unwrap());
    assert!(filter.contains(&[192, 168, 1, 7]).unwrap());
    assert!(!filter.contains(&[192, 168, 1, 8]).unwrap());

    let err = filter.add(b"192.168.1.7").unwrap_err();
    assert!(matches!(
        err,
        KernelError::ItemWidth {
            expected: 4,
            actual: 11
        }
    ));
    assert_eq!(
        err.to_string(),
        "item is 11 bytes but this kernel filter stores RAW 4-byte items"
    );
    assert!(filter.contains(b"abc").is_err());

    // A bad item anywhere in a batch refuses the whole batch up front.
    let err = filter
        .add_many(&[[10u8, 0, 0, 1].as_slice(), &[10, 0, 0]])
        .unwrap_err();
    assert!(err.to_string().contains("item is 3 bytes"), "{err}");
    assert!(
        !filter.contains(&[10, 0, 0, 1]).unwrap(),
        "nothing was added"
    );
}
