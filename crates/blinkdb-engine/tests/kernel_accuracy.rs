//! Scenario: a kernel filter filled to capacity keeps its promise: no false
//! negatives, and a measured false-positive rate at or under the request.

use crate::kernel_support::kernel_root;
use blinkdb_engine::bpf::{FilterSpec, KernelFilter, PinLocation};

const CAPACITY: u32 = 10_000;
const ERROR_RATE: f64 = 0.01;
const PROBES: u32 = 100_000;

#[test]
fn false_positive_rate_at_capacity_is_within_the_request() {
    let Some(root) = kernel_root("false_positive_rate_at_capacity_is_within_the_request") else {
        return;
    };
    let location = PinLocation::for_key(root.path(), 0, b"accuracy");
    let spec = FilterSpec::digest(CAPACITY, ERROR_RATE);
    let filter = KernelFilter::create(&location, &spec).unwrap();
    for i in 0..CAPACITY {
        filter.insert(format!("member:{i}").as_bytes()).unwrap();
    }
    for i in 0..CAPACITY {
        assert!(
            filter.contains(format!("member:{i}").as_bytes()).unwrap(),
            "false negative for member:{i}"
        );
    }
    let mut false_positives = 0u32;
    for i in 0..PROBES {
        if filter.contains(format!("stranger:{i}").as_bytes()).unwrap() {
            false_positives += 1;
        }
    }
    let rate = f64::from(false_positives) / f64::from(PROBES);
    println!(
        "kernel filter n={CAPACITY} p={ERROR_RATE} k={}: {false_positives}/{PROBES} false positives = {rate:.5}",
        filter.info().hash_count
    );
    assert!(
        rate <= ERROR_RATE,
        "measured {rate} > requested {ERROR_RATE}"
    );
}
