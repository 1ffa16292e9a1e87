//! Argument parsing for BF.RESERVE / BF.INSERT / BF.INFO with RedisBloom 2.8's
//! exact checks and error replies. Input is raw argument bytes; no RESP types.

use super::config::BloomConfig;
use super::error::BloomError;

/// A parsed BF.INSERT.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertRequest<'a> {
    /// Used only when the key does not exist yet.
    pub config: BloomConfig,
    /// NOCREATE: a missing key is `ERR not found`.
    pub nocreate: bool,
    pub items: Vec<&'a [u8]>,
}

/// One BF.INFO field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoField {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
}

impl InfoField {
    /// Case-insensitive CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION.
    pub fn parse(arg: &[u8]) -> Result<InfoField, BloomError> {
        let field = match arg.to_ascii_uppercase().as_slice() {
            b"CAPACITY" => InfoField::Capacity,
            b"SIZE" => InfoField::Size,
            b"FILTERS" => InfoField::Filters,
            b"ITEMS" => InfoField::Items,
            b"EXPANSION" => InfoField::Expansion,
            _ => return Err(BloomError::InvalidInfoField),
        };
        Ok(field)
    }
}

/// RedisModule_StringToDouble, i.e. Redis's `string2d`: glibc `strtod` must read
/// the whole argument (so hex floats and "inf" pass, a leading space, a '\0' or
/// trailing bytes do not), and an overflow, an underflow to zero or NaN is refused.
pub fn parse_f64(arg: &[u8]) -> Option<f64> {
    if let Some(v) = plain_decimal(arg) {
        return Some(v);
    }
    strtod(arg)
}

/// The common case without strtod (~600 instructions a value, half of a
/// 100-value TDIGEST.ADD): `[+-]digits[.digits]` whose digits make an integer
/// up to 2^53 with at most 22 after the point. That integer and the power of
/// ten are exact doubles, so their quotient is the correctly rounded value,
/// which glibc's strtod also returns (Clinger's fast path). Anything else
/// (exponents, hex, inf, more digits): None, and strtod decides.
fn plain_decimal(arg: &[u8]) -> Option<f64> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let (neg, body) = match arg.first()? {
        b'-' => (true, &arg[1..]),
        b'+' => (false, &arg[1..]),
        _ => (false, arg),
    };
    // One pass: at most 19 digits (so `m` cannot overflow) and one point;
    // leading digits eight at a time while they last (a 12-digit value's
    // digit loop was a chain of 12 multiply-adds).
    let (mut m, mut digits, mut dot) = (0u64, 0usize, None);
    while digits + 8 <= 19 && body.len() - digits >= 8 {
        let chunk = u64::from_le_bytes(body[digits..digits + 8].try_into().expect("8 octets"));
        let Some(v) = eight_digits(chunk) else {
            break;
        };
        m = m * 100_000_000 + v as u64;
        digits += 8;
    }
    for (i, &b) in body.iter().enumerate().skip(digits) {
        let d = b.wrapping_sub(b'0');
        if d <= 9 {
            if digits == 19 {
                return None;
            }
            m = m * 10 + d as u64;
            digits += 1;
        } else if b == b'.' && dot.is_none() {
            dot = Some(i);
        } else {
            return None;
        }
    }
    let frac = dot.map_or(0, |i| body.len() - i - 1);
    if digits == 0 || frac >= POW10.len() || m > 1 << 53 {
        return None;
    }
    let v = m as f64 / POW10[frac];
    Some(if neg { -v } else { v })
}

/// The value of eight ASCII digits (the first in the lowest octet), or None
/// if any octet is not a digit: each octet's digit, then pairs, then
/// fours, combined by multiplication in one register (Lemire's method).
fn eight_digits(chunk: u64) -> Option<u32> {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // '0'..='9' is 0x30..=0x39: high nibble 3, and still 3 after adding 6.
    if chunk & HIGH != ZEROS || chunk.wrapping_add(0x0606_0606_0606_0606) & HIGH != ZEROS {
        return None;
    }
    let v = chunk - ZEROS;
    let v = v * 10 + (v >> 8);
    let v = ((v & 0x0000_00FF_0000_00FF).wrapping_mul(100 + (1_000_000 << 32))
        + ((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32)))
        >> 32;
    Some(v as u32)
}

/// glibc's strtod over the whole argument, as string2d calls it.
fn strtod(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() || matches!(arg[0], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return None;
    }
    // strtod needs a NUL-terminated copy. A number fits a stack buffer: a heap
    // CString per argument was a fifth of a 100-value TDIGEST.ADD (malloc and
    // free per value, under callgrind). A NUL inside the argument stops strtod
    // short of its end, so it is refused below as the CString's error did.
    let mut stack = [0u8; 64];
    let heap;
    let text: &[u8] = if arg.len() < stack.len() {
        stack[..arg.len()].copy_from_slice(arg);
        &stack[..=arg.len()]
    } else {
        heap = std::ffi::CString::new(arg).ok()?;
        heap.as_bytes_with_nul()
    };
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `text` is NUL-terminated and outlives the call; errno is this
    // thread's, read right after it.
    let (v, errno) = unsafe {
        *libc::__errno_location() = 0;
        let v = libc::strtod(text.as_ptr().cast(), &mut end);
        (v, *libc::__errno_location())
    };
    let used = end as usize - text.as_ptr() as usize;
    let out_of_range = errno == libc::ERANGE && (v.is_infinite() || v == 0.0);
    (used == arg.len() && !out_of_range && !v.is_nan()).then_some(v)
}

/// RedisModule_StringToLongLong, i.e. Redis's `string2ll`: an optional '-' and
/// digits, no '+', no leading zero, no spaces.
fn parse_i64(arg: &[u8]) -> Option<i64> {
    if arg == b"0" {
        return Some(0);
    }
    let (neg, digits) = match arg.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, arg),
    };
    if digits.len() > 19 || !matches!(digits.first(), Some(b'1'..=b'9')) {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = (c - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(d)?
        } else {
            v.checked_add(d)?
        };
    }
    Some(v)
}

/// BF.RESERVE arguments after the key: `error_rate capacity [EXPANSION n] [NONSCALING]`.
/// Like RedisBloom, unknown trailing words are ignored and at most 5 are accepted.
pub fn parse_reserve(args: &[&[u8]]) -> Result<BloomConfig, BloomError> {
    if !(2..=5).contains(&args.len()) {
        return Err(BloomError::WrongArity("bf.reserve"));
    }
    let error_rate = parse_f64(args[0]).ok_or(BloomError::BadErrorRate)?;
    if !(error_rate > 0.0 && error_rate < 1.0) {
        return Err(BloomError::ErrorRateRange);
    }
    let capacity = parse_i64(args[1]).ok_or(BloomError::BadCapacity)?;
    if capacity <= 0 {
        return Err(BloomError::CapacityRange);
    }
    let mut config = BloomConfig {
        error_rate,
        capacity: capacity as u64,
        ..BloomConfig::default()
    };
    let options = &args[2..];
    let mut explicit_expansion = false;
    for (i, arg) in options.iter().enumerate() {
        if arg.eq_ignore_ascii_case(b"NONSCALING") {
            config.nonscaling = true;
        } else if arg.eq_ignore_ascii_case(b"EXPANSION") {
            let value = options.get(i + 1).ok_or(BloomError::NoExpansion)?;
            let expansion = parse_i64(value).ok_or(BloomError::BadExpansion)?;
            if expansion < 1 {
                return Err(BloomError::ExpansionRange);
            }
            config.expansion = expansion as u64;
            explicit_expansion = true;
        }
    }
    if config.nonscaling && explicit_expansion {
        return Err(BloomError::NonScalingExpansion);
    }
    Ok(config)
}

/// BF.INSERT arguments after the key:
/// `[CAPACITY n] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING] ITEMS item...`.
pub fn parse_insert<'a>(args: &[&'a [u8]]) -> Result<InsertRequest<'a>, BloomError> {
    let arity = || BloomError::WrongArity("bf.insert");
    let mut request = InsertRequest {
        config: BloomConfig::default(),
        nocreate: false,
        items: Vec::new(),
    };
    // RedisBloom reports an unknown option before an out-of-range value.
    let mut out_of_range = false;
    let mut i = 0;
    while i < args.len() {
        let word = args[i].to_ascii_uppercase();
        let value = || args.get(i + 1).copied();
        match word.as_slice() {
            b"ITEMS" => {
                request.items = args[i + 1..].to_vec();
                break;
            }
            b"NOCREATE" => request.nocreate = true,
            b"NONSCALING" => request.config.nonscaling = true,
            b"CAPACITY" => {
                let v =
                    parse_i64(value().ok_or_else(arity)?).ok_or(BloomError::InsertBadCapacity)?;
                out_of_range |= v <= 0;
                request.config.capacity = v.max(1) as u64;
                i += 1;
            }
            b"ERROR" => {
                let v =
                    parse_f64(value().ok_or_else(arity)?).ok_or(BloomError::InsertBadErrorRate)?;
                out_of_range |= !(v > 0.0 && v < 1.0);
                request.config.error_rate = v;
                i += 1;
            }
            b"EXPANSION" => {
                let v =
                    parse_i64(value().ok_or_else(arity)?).ok_or(BloomError::InsertBadExpansion)?;
                out_of_range |= v < 1;
                request.config.expansion = v.max(1) as u64;
                i += 1;
            }
            _ => return Err(BloomError::InsertUnknownArgument),
        }
        i += 1;
    }
    if request.items.is_empty() {
        return Err(arity());
    }
    if out_of_range {
        return Err(BloomError::InsertBadArgument);
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::{parse_f64, strtod};

    #[test]
    fn plain_decimals_equal_strtod() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "+0",
            "00",
            "0.",
            ".0",
            "5.",
            ".5",
            "-.5",
            "+.5",
            "000000123456",
            "1.5",
            "9007199254740992",
            "9007199254740993",
            "18446744073709551616",
            "0.1",
            "0.3",
            "123456789.123456789",
            "1.0000000000000000000001",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            ".",
            "-",
            "+",
            "",
            "-.",
            "1..2",
            "1.2.3",
            "1e5",
            "1 ",
            " 1",
            "1a",
            "--1",
            "+-1",
            "0x10",
            "inf",
            "nan",
            "1,5",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..20_000 {
            let digits = (next() % 20) as usize;
            let mut s: String = (0..digits)
                .map(|_| (b'0' + (next() % 10) as u8) as char)
                .collect();
            if digits > 0 && next() % 2 == 0 {
                s.insert((next() as usize) % (digits + 1), '.');
            }
            match next() % 4 {
                0 => s.insert(0, '-'),
                1 => s.insert(0, '+'),
                _ => {}
            }
            cases.push(s);
        }
        for c in &cases {
            let (fast, slow) = (parse_f64(c.as_bytes()), strtod(c.as_bytes()));
            assert_eq!(fast.map(f64::to_bits), slow.map(f64::to_bits), "{c:?}");
        }
    }

    #[test]
    fn eight_digits_are_read_or_refused() {
        for n in [0u32, 1, 7, 10, 12_345_678, 99_999_999, 90_000_001] {
            let text = format!("{n:08}");
            let chunk = u64::from_le_bytes(text.as_bytes().try_into().unwrap());
            assert_eq!(super::eight_digits(chunk), Some(n), "{text}");
        }
        for bad in [
            b"1234567/",
            b"1234567:",
            b"1234.678",
            b"-2345678",
            b"\xb12345678",
        ] {
            let chunk = u64::from_le_bytes(*bad);
            assert_eq!(super::eight_digits(chunk), None, "{bad:?}");
        }
        for at in 0..8 {
            for b in 0..=255u8 {
                let mut text = *b"12345678";
                text[at] = b;
                let want = b.is_ascii_digit();
                let got = super::eight_digits(u64::from_le_bytes(text));
                assert_eq!(got.is_some(), want, "{text:?}");
                if want {
                    let s = std::str::from_utf8(&text).unwrap();
                    assert_eq!(got, Some(s.parse().unwrap()));
                }
            }
        }
    }

    #[test]
    fn parse_f64_reads_the_whole_argument_on_the_stack_or_the_heap() {
        assert_eq!(parse_f64(b"0.01"), Some(0.01));
        assert_eq!(parse_f64(b"-1e3"), Some(-1000.0));
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"1x",
            b"1\x000",
            b"\x00",
            b"nan",
            b"1e400",
            b"1e-400",
        ] {
            assert_eq!(parse_f64(bad), None, "{bad:?}");
        }
        // 63 bytes is the longest the stack buffer takes; 64 and more go to the heap.
        for len in [62, 63, 64, 65, 200] {
            let mut long = b"1.".to_vec();
            long.resize(len, b'0');
            assert_eq!(parse_f64(&long), Some(1.0), "{len} bytes");
            long.push(0);
            long.push(b'1');
            assert_eq!(parse_f64(&long), None, "{len} bytes and a NUL");
        }
    }
}
