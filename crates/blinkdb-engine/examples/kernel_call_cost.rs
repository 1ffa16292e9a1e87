//! Prints the cost of one bpf() push and one bpf() peek on a kernel filter.
//!
//! Run as root: `cargo run --release -p blinkdb-engine --example kernel_call_cost [N]`
//! A measurement to read, not a pass/fail check; medians of 5 rounds.

use std::path::PathBuf;
use std::time::Instant;

use blinkdb_engine::bpf::{probe, FilterSpec, KernelFilter, PinLocation};

const ROUNDS: usize = 5;

fn median_ns_per_call(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn time_calls(n: u32, mut call: impl FnMut(u32)) -> f64 {
    let start = Instant::now();
    for i in 0..n {
        call(i);
    }
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = std::env::args()
        .nth(1)
        .map_or(Ok(200_000), |arg| arg.parse())?;
    let root = PathBuf::from(format!("/sys/fs/bpf/blinkdb-cost-{}", std::process::id()));
    probe(&root)?;
    let result = measure(&root, n);
    let _ = std::fs::remove_dir_all(&root);
    result
}

fn measure(root: &std::path::Path, n: u32) -> Result<(), Box<dyn std::error::Error>> {
    let key = |i: u32| format!("item-{i}").into_bytes();
    let ip = |i: u32| i.to_be_bytes();
    let mut rows: Vec<(&str, Vec<f64>)> = vec![
        ("digest insert (xxh3 + 1 push)", vec![]),
        ("digest contains (xxh3 + 1 peek)", vec![]),
        ("digest add (xxh3 + peek + push)", vec![]),
        ("raw4 insert (1 push)", vec![]),
        ("raw4 contains (1 peek)", vec![]),
    ];
    for round in 0..ROUNDS {
        let name = format!("r{round}");
        let digest = KernelFilter::create(
            &PinLocation::new(root, 0, format!("{name}d"))?,
            &FilterSpec::digest(n, 0.01),
        )?;
        let raw = KernelFilter::create(
            &PinLocation::new(root, 0, format!("{name}r"))?,
            &FilterSpec::raw(n, 0.01, 4),
        )?;
        let keys: Vec<Vec<u8>> = (0..n).map(key).collect();
        rows[0]
            .1
            .push(time_calls(n, |i| digest.insert(&keys[i as usize]).unwrap()));
        rows[1].1.push(time_calls(n, |i| {
            std::hint::black_box(digest.contains(&keys[i as usize]).unwrap());
        }));
        let fresh: Vec<Vec<u8>> = (0..n).map(|i| format!("fresh-{i}").into_bytes()).collect();
        rows[2].1.push(time_calls(n, |i| {
            std::hint::black_box(digest.add(&fresh[i as usize]).unwrap());
        }));
        rows[3]
            .1
            .push(time_calls(n, |i| raw.insert(&ip(i)).unwrap()));
        rows[4].1.push(time_calls(n, |i| {
            std::hint::black_box(raw.contains(&ip(i)).unwrap());
        }));
        digest.delete()?;
        raw.delete()?;
    }
    println!("kernel filter call cost, {n} calls x {ROUNDS} rounds, median ns/call");
    for (label, samples) in rows {
        println!("{label:<34} {:>8.0}", median_ns_per_call(samples));
    }
    Ok(())
}
