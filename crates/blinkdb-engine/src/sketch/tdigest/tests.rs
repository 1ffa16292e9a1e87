use super::*;
use crate::rdb::module::{read_any, write_sketch, ModuleValue};
use crate::rdb::Reader;
use crate::sketch::Sketch;
use rand::{rngs::StdRng, Rng, SeedableRng};

const LIMIT: u64 = 1 << 30;

fn digest(compression: f64, values: impl IntoIterator<Item = f64>) -> TDigest {
    let mut t = TDigest::new(compression, LIMIT).unwrap();
    for v in values {
        t.add(v, 1).unwrap();
    }
    t
}

/// td_qsort as written: recursive, no shortcut for equal runs.
fn reference_sort(means: &mut [f64], weights: &mut [i64], start: usize, end: usize) {
    if start < end {
        if end - start == 1 {
            if means[start] > means[end] {
                means.swap(start, end);
                weights.swap(start, end);
            }
            return;
        }
        let p = partition(means, weights, start, end, (end + start) / 2);
        if p > start {
            reference_sort(means, weights, start, p - 1);
        }
        reference_sort(means, weights, p + 1, end);
    }
}

#[test]
fn sort_permutes_as_the_recursive_quicksort() {
    let mut rng = StdRng::seed_from_u64(45);
    for round in 0..600 {
        let n = rng.gen_range(1..700);
        let distinct: u64 = [1, 2, 3, 50, 1 << 40, 1 << 40][round % 6];
        let mut means: Vec<f64> = (0..n)
            .map(|_| match rng.gen_range(0..distinct + 1) {
                0 => -0.0,
                k => (k % distinct) as f64 - 25.0,
            })
            .collect();
        // All distinct (the library sort's path), but for a NaN or an equal
        // pair now and then (td_qsort's own steps).
        if distinct == 1 << 40 && round % 12 == 5 {
            let (i, j) = (rng.gen_range(0..n), rng.gen_range(0..n));
            means[i] = if rng.gen() { f64::NAN } else { means[j] };
        }
        // Distinct weights, so any tie tells td_qsort's order from another;
        // or all 1, so that nodes tied on a value are identical.
        let weights: Vec<i64> = if round % 5 == 0 {
            vec![1; n]
        } else {
            (0..n as i64).collect()
        };
        let (mut m1, mut w1) = (means.clone(), weights.clone());
        let (mut m2, mut w2) = (means, weights);
        sort(&mut m1, &mut w1);
        reference_sort(&mut m2, &mut w2, 0, n - 1);
        assert_eq!(w1, w2, "round {round}");
        let bits = |m: &[f64]| m.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&m1), bits(&m2), "round {round}");
    }
}

#[test]
fn weight_and_extremes_are_kept() {
    let mut rng = StdRng::seed_from_u64(1);
    let values: Vec<f64> = (0..10_000).map(|_| rng.gen::<f64>() * 1000.0).collect();
    let mut t = digest(100.0, values.iter().copied());
    assert_eq!(t.size(), 10_000);
    t.compress().unwrap();
    assert_eq!(t.unmerged_nodes(), 0);
    assert_eq!(t.merged_weight(), 10_000);
    let sum: i64 = t.weights[..t.merged_nodes()].iter().sum();
    assert_eq!(sum, 10_000);
    assert!(t.merged_nodes() < t.cap());
    let min = values.iter().cloned().fold(f64::MAX, f64::min);
    let max = values.iter().cloned().fold(f64::MIN, f64::max);
    assert_eq!(t.quantile(0.0), min);
    assert_eq!(t.quantile(1.0), max);
    let median = t.quantile(0.5);
    assert!((median - 500.0).abs() < 20.0, "{median}");
    // The cdf never decreases.
    let mut last = 0.0;
    for i in 0..=1000 {
        let c = t.cdf(i as f64);
        assert!(c >= last, "cdf({i}) = {c} < {last}");
        last = c;
    }
}

#[test]
fn one_sample_stays_unmerged() {
    let mut t = digest(100.0, [5.0]);
    assert!(t.quantile(0.5).is_nan());
    assert!(t.cdf(5.0).is_nan());
    assert_eq!((t.merged_nodes(), t.unmerged_nodes()), (0, 1));
    assert_eq!(t.total_compressions(), 0);
    // RANK's cdf * size is NaN: (long long)NaN on x86-64.
    assert_eq!(t.ranks(&[5.0], false), vec![i64::MIN]);
    assert_eq!(t.ranks(&[4.0, 6.0], false), vec![-1, 1]);
}

#[test]
fn empty_digest_answers() {
    let mut t = digest(100.0, []);
    assert_eq!(t.ranks(&[1.0], true), vec![-2]);
    assert!(t.by_ranks(&[0], false)[0].is_nan());
    assert!(t.trimmed_mean(0.1, 0.9).is_nan());
    assert_eq!((t.min(), t.max()), (f64::MAX, -f64::MAX));
}

#[test]
fn by_rank_bounds() {
    let mut t = digest(100.0, (1..=100).map(|x| x as f64));
    assert_eq!(
        t.by_ranks(&[0, 100, 1000], false),
        vec![1.0, f64::INFINITY, f64::INFINITY]
    );
    assert_eq!(t.by_ranks(&[0, 100], true), vec![100.0, f64::NEG_INFINITY]);
    assert_eq!(t.ranks(&[0.0, 101.0], false), vec![-1, 100]);
    assert_eq!(t.ranks(&[0.0, 101.0], true), vec![100, -1]);
}

#[test]
fn buffer_full_compresses() {
    let mut t = digest(1.0, []);
    assert_eq!(t.cap(), 16);
    // cap - 1 buffered nodes compress before the next sample goes in.
    for i in 0..15 {
        t.add(i as f64, 1).unwrap();
    }
    assert_eq!((t.total_compressions(), t.unmerged_nodes()), (0, 15));
    t.add(15.0, 1).unwrap();
    assert_eq!(t.total_compressions(), 1);
    assert_eq!(t.size(), 16);
}

#[test]
fn weight_overflow_is_refused() {
    let mut t = digest(100.0, []);
    t.add(1.0, i64::MAX).unwrap();
    assert_eq!(t.add(2.0, 1), Err(Overflow));
    assert_eq!(t.size(), i64::MAX);
}

#[test]
fn too_large_is_refused() {
    assert_eq!(TDigest::new(1e15, LIMIT), Err(TooLarge));
    assert_eq!(TDigest::new(100.0, 16 * 609), Err(TooLarge));
    assert!(TDigest::new(100.0, 16 * 610).is_ok());
    assert_eq!(TDigest::new(f64::NAN, LIMIT), Err(TooLarge));
    assert_eq!(TDigest::new(-1.0, LIMIT), Err(TooLarge));
    assert_eq!(
        TDigest::new(100.0, LIMIT).unwrap().mem_usage(),
        8 + 16 * 610
    );
}

#[test]
fn half_round_down_rounds_halves_toward_zero() {
    assert_eq!(half_round_down(2.5), 2.0);
    assert_eq!(half_round_down(2.6), 3.0);
    assert_eq!(half_round_down(-2.5), -2.0);
    assert_eq!(half_round_down(-2.6), -3.0);
    assert_eq!(c_double_to_i64(f64::NAN), i64::MIN);
    assert_eq!(c_double_to_i64(1e300), i64::MIN);
    assert_eq!(c_double_to_i64(-7.9), -7);
}

/// The module value as the framework writes it: type id, fields, EOF.
fn write_value(out: &mut Vec<u8>, t: &TDigest) {
    write_sketch(out, &Sketch::TDigest(t.clone()), false);
}

/// The module value read as any module value is.
fn read_value(r: &mut Reader<'_>) -> Result<TDigest, crate::rdb::RdbError> {
    match read_any(r)? {
        ModuleValue::Sketch(Sketch::TDigest(t)) => Ok(t),
        _ => panic!("not a t-digest"),
    }
}

fn round_trip(t: &TDigest) -> TDigest {
    let mut out = Vec::new();
    write_value(&mut out, t);
    let mut r = Reader::new(&out);
    let back = read_value(&mut r).unwrap();
    assert_eq!(r.remaining(), 0);
    for cut in 0..out.len() {
        assert!(read_value(&mut Reader::new(&out[..cut])).is_err());
    }
    back
}

#[test]
fn payload_round_trips_compressed() {
    let mut rng = StdRng::seed_from_u64(7);
    let t = digest(50.0, (0..3000).map(|_| rng.gen::<f64>()));
    let back = round_trip(&t);
    let mut c = t.clone();
    c.compress().unwrap();
    assert_eq!(back, c);
    // A one-sample digest keeps its unmerged count, but not the sample
    // (RedisBloom writes only merged nodes).
    let one = round_trip(&digest(100.0, [3.0]));
    assert_eq!((one.unmerged_nodes(), one.size(), one.min()), (1, 1, 3.0));
    assert_eq!(one.means[0], 0.0);
    assert_eq!(one.weights[0], 0);
}

/// Fields of a value, to write hostile variants of it.
struct Fields {
    compression: f64,
    cap: u64,
    merged: u64,
    unmerged: u64,
    merged_w: f64,
    nodes: Vec<(f64, f64)>,
}

fn encode(f: &Fields) -> Vec<u8> {
    use crate::rdb::module::{module_type_id, put_double as write_double, put_uint as write_uint};
    let mut out = Vec::new();
    // A type id takes the 64-bit length form.
    out.push(0x81);
    out.extend_from_slice(&module_type_id("TDIS-TYPE", 0).to_be_bytes());
    write_double(&mut out, f.compression);
    write_double(&mut out, 0.0);
    write_double(&mut out, 1.0);
    write_uint(&mut out, f.cap);
    write_uint(&mut out, f.merged);
    write_uint(&mut out, f.unmerged);
    write_uint(&mut out, 0);
    write_double(&mut out, f.merged_w);
    write_double(&mut out, 0.0);
    for n in &f.nodes {
        write_double(&mut out, n.0);
    }
    for n in &f.nodes {
        write_double(&mut out, n.1);
    }
    out.push(0); // EOF
    out
}

#[test]
fn hostile_payloads_are_errors() {
    let good = Fields {
        compression: 1.0,
        cap: 16,
        merged: 2,
        unmerged: 0,
        merged_w: 3.0,
        nodes: vec![(0.0, 1.0), (1.0, 2.0)],
    };
    assert!(read_value(&mut Reader::new(&encode(&good))).is_ok());
    let bad = [
        Fields {
            cap: 1 << 40,
            ..good_clone(&good)
        },
        Fields {
            compression: 1e18,
            cap: 6_000_000_000_000_000_010,
            ..good_clone(&good)
        },
        Fields {
            compression: -5.0,
            ..good_clone(&good)
        },
        Fields {
            compression: f64::NAN,
            ..good_clone(&good)
        },
        Fields {
            merged: 17,
            ..good_clone(&good)
        },
        Fields {
            merged: 10,
            unmerged: 7,
            ..good_clone(&good)
        },
        Fields {
            merged: u64::MAX,
            ..good_clone(&good)
        },
        Fields {
            merged_w: -1.0,
            ..good_clone(&good)
        },
        Fields {
            merged_w: f64::INFINITY,
            ..good_clone(&good)
        },
        Fields {
            nodes: vec![(0.0, 1.0), (1.0, -2.0)],
            ..good_clone(&good)
        },
        Fields {
            nodes: vec![(0.0, 1.0), (1.0, 1e30)],
            ..good_clone(&good)
        },
        Fields {
            merged: 3,
            ..good_clone(&good)
        },
    ];
    for (i, f) in bad.iter().enumerate() {
        assert!(
            read_value(&mut Reader::new(&encode(f))).is_err(),
            "case {i}"
        );
    }
    // A tiny payload cannot ask for a buffer past the load limit.
    let big = Fields {
        compression: 1e9,
        cap: 6_000_000_010,
        merged: 0,
        nodes: vec![],
        ..good_clone(&good)
    };
    assert!(read_value(&mut Reader::new(&encode(&big))).is_err());
}

fn good_clone(f: &Fields) -> Fields {
    Fields {
        nodes: f.nodes.clone(),
        ..*f
    }
}

#[test]
fn inconsistent_weights_do_not_panic() {
    // Weights that do not add up to the totals (a payload can say so):
    // queries and adds give some answer, and nothing overflows a panic.
    let f = Fields {
        compression: 1.0,
        cap: 16,
        merged: 2,
        unmerged: 3,
        merged_w: 9.0e18,
        nodes: vec![(0.0, 9.0e18), (1.0, 9.0e18)],
    };
    let mut t = read_value(&mut Reader::new(&encode(&f))).unwrap();
    let _ = t.quantile(0.5);
    let _ = t.cdf(0.5);
    let _ = t.trimmed_mean(0.1, 0.9);
    let _ = t.ranks(&[0.5], true);
    let _ = t.by_ranks(&[3], true);
    for i in 0..40 {
        let _ = t.add(i as f64, 1);
    }
    let mut into = TDigest::new(1.0, LIMIT).unwrap();
    let _ = into.merge_from(&t);
}
