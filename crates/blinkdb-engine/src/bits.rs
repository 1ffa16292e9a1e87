//! Bit algorithms on string values, with the semantics of Redis's bitmap and
//! bitfield commands (BITCOUNT, BITPOS, BITOP, BITFIELD). Bit 0 is the most
//! significant bit of the first byte; a field of `bits` bits at `offset`
//! reads its bits in that order (big endian across byte boundaries).

/// Set bits in `bytes`.
pub fn popcount(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut n: u64 = chunks
        .by_ref()
        .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")).count_ones() as u64)
        .sum();
    n += chunks
        .remainder()
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum::<u64>();
    n
}

/// Position of the first bit equal to `bit` in `bytes`. Looking for a 1 in a
/// string without one gives -1; looking for a 0 in a string of ones gives
/// the first bit past the end, as if the string went on with zeros.
pub fn first_bit(bytes: &[u8], bit: bool) -> i64 {
    let skip = if bit { 0u8 } else { 0xff };
    // Whole words of the value to skip first: long runs are common in bitmaps.
    let words = bytes.len() / 8;
    let skip_word = u64::from_ne_bytes([skip; 8]);
    let mut at = 0;
    while at < words
        && u64::from_ne_bytes(bytes[at * 8..at * 8 + 8].try_into().expect("8")) == skip_word
    {
        at += 1;
    }
    match bytes[at * 8..].iter().position(|&b| b != skip) {
        Some(i) => {
            let byte = bytes[at * 8 + i];
            let inner = if bit {
                byte.leading_zeros()
            } else {
                byte.leading_ones()
            };
            ((at * 8 + i) as i64) * 8 + inner as i64
        }
        None if bit => -1,
        None => bytes.len() as i64 * 8,
    }
}

/// The unsigned value of the `bits`-bit field (1..=64) at bit `offset`.
/// The field must lie within `p`.
pub fn get_unsigned(p: &[u8], offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for j in 0..bits as u64 {
        let at = offset + j;
        let bit = (p[(at >> 3) as usize] >> (7 - (at & 7))) & 1;
        value = (value << 1) | bit as u64;
    }
    value
}

/// The field read as a two's complement number of `bits` bits.
pub fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_unsigned(p, offset, bits);
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        (v | (u64::MAX << bits)) as i64
    } else {
        v as i64
    }
}

/// Stores the low `bits` bits of `value` in the field at bit `offset`.
pub fn set_unsigned(p: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..bits as u64 {
        let on = (value >> (bits as u64 - 1 - j)) & 1;
        let at = offset + j;
        let byte = &mut p[(at >> 3) as usize];
        let shift = 7 - (at & 7);
        *byte = (*byte & !(1 << shift)) | ((on as u8) << shift);
    }
}

/// What BITFIELD does when a SET or INCRBY does not fit its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// `value + incr` stored in an unsigned field of `bits` bits (1..=63), as
/// Redis computes it: Some(stored value) when no overflow happened or WRAP
/// or SAT gave one, None when FAIL refuses it. `value` may already be out of
/// range (a SET of a value too large, or negative cast to unsigned).
pub fn add_unsigned(value: u64, incr: i64, bits: u32, ow: Overflow) -> (bool, Option<u64>) {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = (value as i64).wrapping_neg();
    let wrapped = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > max_incr) {
        return match ow {
            Overflow::Wrap => (true, Some(wrapped())),
            Overflow::Sat => (true, Some(max)),
            Overflow::Fail => (true, None),
        };
    }
    if incr < 0 && incr < min_incr {
        return match ow {
            Overflow::Wrap => (true, Some(wrapped())),
            Overflow::Sat => (true, Some(0)),
            Overflow::Fail => (true, None),
        };
    }
    (false, Some(value.wrapping_add(incr as u64)))
}

/// The signed counterpart of [`add_unsigned`], for fields of 1..=64 bits.
pub fn add_signed(value: i64, incr: i64, bits: u32, ow: Overflow) -> (bool, Option<i64>) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    // These may overflow; they are only used once `value` is known in range,
    // where they do not.
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrapped = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr)
    {
        return match ow {
            Overflow::Wrap => (true, Some(wrapped())),
            Overflow::Sat => (true, Some(max)),
            Overflow::Fail => (true, None),
        };
    }
    if value < min || (bits != 64 && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr)
    {
        return match ow {
            Overflow::Wrap => (true, Some(wrapped())),
            Overflow::Sat => (true, Some(min)),
            Overflow::Fail => (true, None),
        };
    }
    (false, Some(value.wrapping_add(incr)))
}

/// BITOP's operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// BITOP over `srcs` (NOT takes one): shorter inputs count as padded with
/// zero bytes up to the longest. Empty when every input is.
pub fn bitop(op: BitOp, srcs: &[&[u8]]) -> Vec<u8> {
    let maxlen = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
    let Some((first, rest)) = srcs.split_first() else {
        return Vec::new();
    };
    let mut out = first.to_vec();
    out.resize(maxlen, 0);
    match op {
        BitOp::Not => out.iter_mut().for_each(|b| *b = !*b),
        BitOp::And => {
            for s in rest {
                let n = s.len();
                out.iter_mut().zip(s.iter()).for_each(|(b, x)| *b &= x);
                out[n..].fill(0);
            }
        }
        BitOp::Or => {
            for s in rest {
                out.iter_mut().zip(s.iter()).for_each(|(b, x)| *b |= x);
            }
        }
        BitOp::Xor => {
            for s in rest {
                out.iter_mut().zip(s.iter()).for_each(|(b, x)| *b ^= x);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_bits() {
        assert_eq!(popcount(b""), 0);
        assert_eq!(popcount(b"foobar"), 26);
        assert_eq!(popcount(&[0xff; 17]), 136);
    }

    #[test]
    fn finds_first_bits() {
        assert_eq!(first_bit(b"", true), -1);
        assert_eq!(first_bit(b"", false), 0);
        assert_eq!(first_bit(&[0xff, 0xf0, 0], true), 0);
        assert_eq!(first_bit(&[0xff, 0xf0, 0], false), 12);
        assert_eq!(first_bit(&[0xff; 11], false), 88);
        assert_eq!(first_bit(&[0; 11], true), -1);
        let mut v = vec![0u8; 20];
        v[19] = 1;
        assert_eq!(first_bit(&v, true), 159);
    }

    #[test]
    fn fields_cross_bytes() {
        let mut p = [0u8; 2];
        set_unsigned(&mut p, 7, 5, 23);
        assert_eq!(p, [0b0000_0001, 0b0111_0000]);
        assert_eq!(get_unsigned(&p, 7, 5), 23);
        set_unsigned(&mut p, 0, 8, 0xff);
        assert_eq!(get_signed(&p, 0, 8), -1);
        let mut q = [0u8; 9];
        set_unsigned(&mut q, 3, 64, i64::MIN as u64);
        assert_eq!(get_signed(&q, 3, 64), i64::MIN);
    }

    #[test]
    fn overflow_like_redis() {
        assert_eq!(add_unsigned(100, 257, 8, Overflow::Wrap), (true, Some(101)));
        assert_eq!(add_unsigned(100, 257, 8, Overflow::Sat), (true, Some(255)));
        assert_eq!(add_unsigned(100, -255, 8, Overflow::Sat), (true, Some(0)));
        assert_eq!(add_unsigned(100, 1, 8, Overflow::Fail), (false, Some(101)));
        assert_eq!(add_unsigned(255, 1, 8, Overflow::Fail), (true, None));
        assert_eq!(add_signed(100, 257, 8, Overflow::Wrap), (true, Some(101)));
        assert_eq!(add_signed(100, 257, 8, Overflow::Sat), (true, Some(127)));
        assert_eq!(add_signed(100, -255, 8, Overflow::Sat), (true, Some(-128)));
        assert_eq!(add_signed(255, 0, 8, Overflow::Wrap), (true, Some(-1)));
        assert_eq!(
            add_signed(i64::MAX, 1, 64, Overflow::Wrap),
            (true, Some(i64::MIN))
        );
        assert_eq!(add_signed(-1, i64::MIN, 64, Overflow::Fail), (true, None));
        assert_eq!(add_signed(-1, 1, 64, Overflow::Fail), (false, Some(0)));
    }

    #[test]
    fn bitops_pad_with_zeros() {
        assert_eq!(bitop(BitOp::And, &[b"\xff\xff", b"\x0f"]), b"\x0f\x00");
        assert_eq!(bitop(BitOp::Or, &[b"\x01", b"\x10\x02"]), b"\x11\x02");
        assert_eq!(bitop(BitOp::Xor, &[b"\xff", b"\x0f", b""]), b"\xf0");
        assert_eq!(bitop(BitOp::Not, &[b"\x0f"]), b"\xf0");
        assert!(bitop(BitOp::Or, &[b"", b""]).is_empty());
    }
}
