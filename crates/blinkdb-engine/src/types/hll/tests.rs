use super::*;
use rand::{Rng, SeedableRng};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn sketch(elements: impl IntoIterator<Item = Vec<u8>>, max: usize) -> Vec<u8> {
    let mut v = new_sparse();
    for e in elements {
        if add(&mut v, &e, max).unwrap() {
            invalidate_cache(&mut v);
        }
    }
    v
}

/// What redis-server 7.0.15 stores for `PFADD h a b c` (its GET reply).
const ABC: &[u8] =
    b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ";

/// redis-server 7.0.15's bytes for PFADD of "1".."200" then PFCOUNT (201).
const TWO_HUNDRED: &str = "48594c4c01000000c900000000000000407388404690409784208c2a8c404a841c803380404790018440c680407e8016803b802b801c8c4041884091843b8016881084404d8007803680118041418c128038840798406a8404840880318840ed804059842080078040f480418380098040808817801c804040842b80178440778006942e8040aa800a8040ad80018c378833804076804046804052803180405f802c840580404a8001884054904083804054848040898040628440568414802280108c1e84409f980f8040588040948037802480404b8001804121803180328441628040ad94404390406580407990028c407e8040578040ac90038040758040cb881a840c8004802a8c258040db80048c0f8440bf84159440bb8c378c09880c84405c880d804056844045843a940b8c3a80407780318c28802d803c801c8029804072802e884196802a80404b88404b801a8040b084409e804052883e804095800d84405d8840c4841b881588408d804044804095842d800e90388440eb8037843788218440a580406d84407384405280407584298040da80198409804058800680406b8804a0407b8440cd84388c40fb80358422801d882184406f80168c0b801b844099802880404880404a942c801180258c12841c802188179040768840a680404a8c40b880158418883a8040d994408a80407b80404e804098";

#[test]
fn same_bytes_as_redis() {
    let v = sketch([b"a".to_vec(), b"b".to_vec(), b"c".to_vec()], 3000);
    assert_eq!(v, ABC);
    assert_eq!(cached_count(&v), None);
    assert_eq!(count(&v), Ok(3));

    let mut v = sketch((1..=200).map(|i| i.to_string().into_bytes()), 3000);
    let c = count(&v).unwrap();
    assert_eq!(c, 201);
    set_cached_count(&mut v, c);
    assert_eq!(v, hex(TWO_HUNDRED));
    assert!(decode_sparse(&v).starts_with("Z:116 v:3,1 Z:71 v:5,1 Z:152 v:2,1 z:33"));
    let dense = to_dense(&v).unwrap();
    assert_eq!(dense.len(), DENSE_LEN);
    assert_eq!(encoding_of(&dense), Ok(Encoding::Dense));
    assert_eq!(cached_count(&dense), Some(201));
    assert_eq!(count(&dense), Ok(201));
}

#[test]
fn constants() {
    assert_eq!(DENSE_LEN, 12304);
    // Redis's literal, as its compiler reads it.
    assert_eq!(Ok(ALPHA_INF), "0.721347520444481703680".parse::<f64>());
    assert_eq!(new_sparse().len(), 18);
    assert_eq!(decode_sparse(&new_sparse()), "Z:16384");
    assert_eq!(count(&new_sparse()), Ok(0));
    assert_eq!(cached_count(&new_sparse()), Some(0));
}

#[test]
fn header_checks() {
    assert_eq!(encoding_of(b"HYLL"), Err(HllError::NotHll));
    assert_eq!(
        encoding_of(b"HYLX\x01\0\0\0\0\0\0\0\0\0\0\0"),
        Err(HllError::NotHll)
    );
    assert_eq!(
        encoding_of(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0"),
        Err(HllError::NotHll)
    );
    assert_eq!(
        encoding_of(b"HYLL\x00\0\0\0\0\0\0\0\0\0\0\0"),
        Err(HllError::NotHll)
    );
    assert_eq!(
        encoding_of(b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0"),
        Ok(Encoding::Sparse)
    );
    // Sparse with no opcodes: valid header, corrupt code.
    assert_eq!(
        count(b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0"),
        Err(HllError::Corrupt)
    );
    assert_eq!(
        HllError::NotHll.to_string(),
        "WRONGTYPE Key is not a valid HyperLogLog string value."
    );
    assert_eq!(
        HllError::Corrupt.to_string(),
        "INVALIDOBJ Corrupted HLL object detected"
    );
}

#[test]
fn registers_pack_six_bits_each() {
    let mut regs = vec![0u8; DENSE_LEN - HEADER_LEN];
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let want: Vec<u8> = (0..REGISTERS).map(|_| rng.gen_range(0..64)).collect();
    for (i, &w) in want.iter().enumerate() {
        dense_set(&mut regs, i, w);
    }
    for (i, &w) in want.iter().enumerate() {
        assert_eq!(dense_get(&regs, i), w, "register {i}");
    }
    let mut value = vec![0u8; HEADER_LEN];
    value[..5].copy_from_slice(b"HYLL\0");
    value.extend_from_slice(&regs);
    let mut h = [0u32; 64];
    for &w in &want {
        h[w as usize] += 1;
    }
    assert_eq!(histogram(&value), Ok(h));
    assert!(dense_registers(&value).eq(want.iter().copied()));
}

/// Sparse and dense sketches fed the same elements hold the same registers
/// (whichever way the sparse one went), and so estimate the same.
#[test]
fn sparse_agrees_with_dense() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for round in 0..40 {
        let max = [0, 50, 300, 3000, 20000][round % 5];
        let n = rng.gen_range(0..3000);
        let mut sparse = new_sparse();
        let mut dense = to_dense(&new_sparse()).unwrap();
        for _ in 0..n {
            let e: [u8; 8] = rng.gen();
            let a = add(&mut sparse, &e, max).unwrap();
            let b = add(&mut dense, &e, max).unwrap();
            assert_eq!(a, b);
        }
        assert!(max < 20000 || n == 0 || encoding_of(&sparse) == Ok(Encoding::Sparse));
        if let Ok(Encoding::Sparse) = encoding_of(&sparse) {
            assert!(sparse.len() <= max.max(HEADER_LEN + 2));
        }
        let as_dense = to_dense(&sparse).unwrap();
        assert_eq!(as_dense[HEADER_LEN..], dense[HEADER_LEN..], "round {round}");
        assert_eq!(count(&sparse), count(&dense));
    }
}

#[test]
fn dense_holds_all_agrees_with_add() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(23);
    let mut dense = to_dense(&new_sparse()).unwrap();
    let mut sparse = new_sparse();
    for _ in 0..20000 {
        let e: [u8; 8] = rng.gen();
        let held = dense_holds_all(&dense, &[&e]);
        assert_eq!(add(&mut dense, &e, 3000).unwrap(), !held);
        assert!(dense_holds_all(&dense, &[&e]));
        // A sparse sketch is never answered from, whatever it holds.
        add(&mut sparse, &e, 20000).unwrap();
        assert!(!dense_holds_all(&sparse, &[&e]));
    }
    // Several elements: held only if every one is.
    let new = (0u64..)
        .map(u64::to_le_bytes)
        .find(|b| !dense_holds_all(&dense, &[b]))
        .unwrap();
    let old = (0u64..)
        .map(u64::to_le_bytes)
        .find(|b| dense_holds_all(&dense, &[b]))
        .unwrap();
    assert!(dense_holds_all(&dense, &[&old, &old]));
    assert!(!dense_holds_all(&dense, &[&old, &new]));
    assert!(dense_holds_all(&dense, &[]));
    // Not a sketch, or a dense one of the wrong length.
    assert!(!dense_holds_all(b"hello", &[]));
    assert!(!dense_holds_all(&dense[..DENSE_LEN - 1], &[]));
}

#[test]
fn merging_takes_the_largest_register() {
    let a = sketch((0..100).map(|i| format!("a{i}").into_bytes()), 3000);
    let b = to_dense(&sketch(
        (0..5000).map(|i| format!("b{i}").into_bytes()),
        3000,
    ))
    .unwrap();
    let mut max = [0u8; REGISTERS];
    merge_into(&mut max, &a).unwrap();
    merge_into(&mut max, &b).unwrap();
    let both = sketch(
        (0..100)
            .map(|i| format!("a{i}").into_bytes())
            .chain((0..5000).map(|i| format!("b{i}").into_bytes())),
        3000,
    );
    assert_eq!(estimate(&raw_histogram(&max)), count(&both).unwrap());
    let mut dest = new_sparse();
    store_merged(&mut dest, &max, false, 3000).unwrap();
    assert_eq!(cached_count(&dest), None);
    assert_eq!(count(&dest), count(&both));
    let mut dest = new_sparse();
    store_merged(&mut dest, &max, true, 3000).unwrap();
    assert_eq!(encoding_of(&dest), Ok(Encoding::Dense));
    assert_eq!(to_dense(&both).unwrap()[HEADER_LEN..], dest[HEADER_LEN..]);
}

/// The suite's overflow payloads: runs adding up past 2^32 registers.
#[test]
fn long_runs_are_corrupt_not_overflows() {
    let mut xz = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
    for _ in 0..(131072 + 1000) {
        xz.extend_from_slice(&xzero(16384));
    }
    xz.push(0xff);
    let mut z = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
    z.extend(std::iter::repeat_n(0x3f, 1 << 20));
    z.push(0xff);
    for v in [xz, z] {
        assert_eq!(count(&v), Err(HllError::Corrupt));
        assert_eq!(to_dense(&v), Err(HllError::Corrupt));
        let mut max = [0u8; REGISTERS];
        assert_eq!(merge_into(&mut max, &v), Err(HllError::Corrupt));
    }
}

#[test]
fn truncated_xzero_reads_a_zero_byte() {
    // XZERO of 16384 is 0x7f 0xff; 0x7f alone reads as 0x7f00 + 1 = 16129.
    let mut v = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
    v.extend_from_slice(&[0x40, 0xfe]); // XZERO 255
    v.push(0x7f); // 16129 with the terminator
    assert_eq!(count(&v), Ok(0));
    assert_eq!(decode_sparse(&v), "Z:255 Z:16129");
    let mut w = v.clone();
    // Register 300 lies in the truncated opcode: the split's last byte falls
    // past the new end, as in Redis, leaving a code that no longer adds up
    // (Redis may still read that byte from its buffer; here it reads zero).
    assert_eq!(raise(&mut w, 300, 3, 3000), Ok(true));
    assert_eq!(w.len(), v.len() + 2);
    assert_eq!(count(&w), Err(HllError::Corrupt));
}

#[test]
fn corrupt_codes_never_panic() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for _ in 0..3000 {
        let n = rng.gen_range(0..64);
        let mut v = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
        v.extend((0..n).map(|_| rng.gen::<u8>()));
        let valid = count(&v).is_ok();
        assert_eq!(to_dense(&v).is_ok(), valid);
        let _ = decode_sparse(&v);
        let mut w = v.clone();
        for _ in 0..8 {
            let (i, c) = (rng.gen_range(0..REGISTERS), rng.gen_range(1..52));
            if raise(&mut w, i, c, rng.gen_range(0..200)).is_err() {
                break;
            }
        }
        if valid {
            assert!(count(&w).is_ok(), "a valid code stays valid");
        }
    }
}

#[test]
fn estimates_stay_close() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    assert_eq!(self_check(&mut rng, 3000, 3, 100_000), Ok(()));
    assert_eq!(self_check(&mut rng, 0, 1, 10_000), Ok(()));
}
