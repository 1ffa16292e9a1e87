//! HyperLogLog sketches read from arbitrary string values (what SET can store
//! under a key that PFADD, PFCOUNT, PFMERGE and PFDEBUG then read).
//!
//! Input: a flags byte, `hll-sparse-max-bytes` (u16), then the value and the
//! elements to add, separated by "\n#--\n" (elements one per part after the
//! value). Flag 1 overwrites the value's first 5 bytes with a valid header
//! ("HYLL" + encoding: dense with flag 2, else sparse) so that mutations reach
//! the sparse decoder; flag 4 appends the value to a real sparse sketch made
//! from the elements instead.
//!
//! Checks: no panic; every decoder's heap stays under 16 bytes per value byte
//! plus 64 KB (a run length never sizes an allocation); the decoders agree on
//! validity (PFCOUNT, the dense form, the merge); a valid sketch estimates the
//! same as its dense form and merges into its registers; adding the elements
//! to it and to its dense form changes the same registers and leaves the same
//! registers, and a sparse result stays valid and within the size limit
//! (except after a split of a cut-off last XZERO: see `ends_in_cut_xzero`).
#![no_main]

use blinkdb_engine::hll::{self, Encoding, HEADER_LEN, REGISTERS};
use blinkdb_fuzz::alloc_meter::peak_during;
use blinkdb_fuzz::{split_parts, Cursor};
use libfuzzer_sys::fuzz_target;

/// Does the sparse code end inside an XZERO opcode (its second byte cut off)?
/// Decoders read a zero there, as Redis reads its string's terminator; but a
/// split of that opcode writes a byte past the new end (Redis keeps it in its
/// buffer until the string is copied), so the result no longer adds up.
fn ends_in_cut_xzero(value: &[u8]) -> bool {
    let mut p = HEADER_LEN;
    while p < value.len() {
        if value[p] & 0xc0 == 0x40 {
            if p + 1 == value.len() {
                return true;
            }
            p += 2;
        } else {
            p += 1;
        }
    }
    false
}

fn registers(dense: &[u8]) -> Vec<u8> {
    hll::dense_registers(dense).collect()
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let flags = c.u8();
    let max = c.u16() as usize;
    let parts = split_parts(c.rest(), b"\n#--\n");
    let (raw, elements) = parts.split_first().expect("split_parts gives one part");
    let mut value = raw.to_vec();
    if flags & 4 != 0 {
        let mut made = hll::new_sparse();
        for e in elements {
            hll::add(&mut made, e, 3000).expect("a fresh sketch is valid");
        }
        made.extend_from_slice(raw);
        value = made;
    } else if flags & 1 != 0 && value.len() >= 5 {
        value[..4].copy_from_slice(b"HYLL");
        value[4] = if flags & 2 != 0 { 0 } else { 1 };
    }
    let bound = 16 * value.len() + (64 << 10);

    let Ok(encoding) = hll::encoding_of(&value) else {
        return;
    };
    let ((counted, dense, merged, _decoded), peak) = peak_during(|| {
        let mut max_regs = Box::new([0u8; REGISTERS]);
        let merged = hll::merge_into(&mut max_regs, &value).map(|_| max_regs);
        let decoded = (encoding == Encoding::Sparse).then(|| hll::decode_sparse(&value));
        (hll::count(&value), hll::to_dense(&value), merged, decoded)
    });
    assert!(
        peak <= bound,
        "{peak} bytes of heap to read {} bytes",
        value.len()
    );
    assert_eq!(counted.is_ok(), dense.is_ok());
    assert_eq!(counted.is_ok(), merged.is_ok());
    let _ = hll::cached_count(&value);

    let (Ok(estimate), Ok(dense), Ok(merged)) = (counted, dense, merged) else {
        // A corrupt sketch: additions may fail, never panic or run away.
        let mut v = value.clone();
        let (_, peak) = peak_during(|| {
            for e in elements {
                if hll::add(&mut v, e, max).is_err() {
                    break;
                }
            }
        });
        assert!(
            peak <= 2 * bound + hll::DENSE_LEN,
            "{peak} bytes to add to a corrupt sketch"
        );
        return;
    };
    assert_eq!(dense.len(), hll::DENSE_LEN);
    assert_eq!(hll::count(&dense), Ok(estimate));
    assert_eq!(&registers(&dense)[..], &merged[..]);
    assert_eq!(hll::estimate(&hll::raw_histogram(&merged)), estimate);

    if encoding == Encoding::Sparse && ends_in_cut_xzero(&value) {
        return;
    }
    let (mut sparse_side, mut dense_side) = (value.clone(), dense);
    for e in elements {
        let a = hll::add(&mut sparse_side, e, max);
        let b = hll::add(&mut dense_side, e, max);
        assert_eq!(a, b, "sparse and dense disagree on adding {e:?}");
    }
    assert_eq!(
        registers(&hll::to_dense(&sparse_side).expect("stays valid")),
        registers(&dense_side)
    );
    if hll::encoding_of(&sparse_side) == Ok(Encoding::Sparse) {
        assert!(
            sparse_side.len() <= value.len().max(max).max(HEADER_LEN + 2),
            "a sparse sketch grew past hll-sparse-max-bytes: {} > {max}",
            sparse_side.len()
        );
    }
    let mut merged_into = hll::new_sparse();
    hll::store_merged(&mut merged_into, &merged, flags & 8 != 0, max).expect("valid target");
    assert_eq!(hll::count(&merged_into), Ok(estimate));
});
