//! Number parsing and the arithmetic that sizes things from client numbers.
//!
//! - `parse_i64` (every integer argument) against a model of Redis's `string2ll`;
//! - the request parser's `*<count>` header against the same model;
//! - BF.RESERVE / BF.INSERT numbers against RedisBloom's parsers: `string2ll`
//!   for integers, `string2d` (glibc `strtod` with Redis's checks) for rates;
//! - INCRBYFLOAT: never panics, and its reply reads back as the same number
//!   (adding 0 to the reply gives the reply);
//! - Bloom sizing from arbitrary capacity / rate / expansion / index: no panic,
//!   no overflow, results within the file format's bounds.
#![no_main]

use blinkdb_engine::bf::{
    parse_insert, parse_reserve, BloomConfig, BloomError, BloomLimits, Geometry, MAX_HASHES,
    MAX_LINES,
};
use blinkdb_fuzz::Cursor;
use blinkdb_server::commands::args::{incr_by_float, parse_i64};
use blinkdb_server::protocol::{RequestLimits, RequestParser};
use libfuzzer_sys::fuzz_target;

/// Redis's `string2ll`.
fn string2ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, s),
    };
    if !matches!(digits.first(), Some(b'1'..=b'9')) || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v: u128 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let v = if neg { -(v as i128) } else { v as i128 };
    i64::try_from(v).ok()
}

/// Redis's `string2d` on an sds string (NUL-terminated, so `strtod` stops at
/// an embedded NUL and the length check rejects it).
fn string2d(s: &[u8]) -> Option<f64> {
    let mut buf = s.to_vec();
    buf.push(0);
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: buf is NUL-terminated and outlives the call.
    let (v, errno) = unsafe {
        *libc::__errno_location() = 0;
        let v = libc::strtod(buf.as_ptr().cast(), &mut end);
        (v, *libc::__errno_location())
    };
    let used = end as usize - buf.as_ptr() as usize;
    let space = s
        .first()
        .is_some_and(|&c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'));
    let range = errno == libc::ERANGE && (v.is_infinite() || v == 0.0);
    if s.is_empty() || space || used != s.len() || range || v.is_nan() {
        return None;
    }
    Some(v)
}

fn reserve_model(rate: &[u8], capacity: &[u8]) -> Result<(), &'static str> {
    let rate = string2d(rate).ok_or("ERR bad error rate")?;
    if !(rate > 0.0 && rate < 1.0) {
        return Err("ERR (0 < error rate range < 1) ");
    }
    let capacity = string2ll(capacity).ok_or("ERR bad capacity")?;
    if capacity <= 0 {
        return Err("ERR (capacity should be larger than 0)");
    }
    Ok(())
}

fn insert_model(option: &str, value: &[u8]) -> Result<(), &'static str> {
    let in_range = match option {
        "CAPACITY" => string2ll(value).ok_or("Bad capacity")? > 0,
        "ERROR" => {
            let v = string2d(value).ok_or("Bad error rate")?;
            v > 0.0 && v < 1.0
        }
        _ => string2ll(value).ok_or("Bad expansion")? >= 1,
    };
    if in_range {
        Ok(())
    } else {
        Err("Bad argument received")
    }
}

fn text(r: Result<impl Sized, BloomError>) -> Result<(), String> {
    r.map(drop).map_err(|e| e.to_string())
}

fn check_geometry(g: Geometry) {
    assert!(g.lines >= 1 && g.lines <= MAX_LINES, "{g:?}");
    assert!(g.hashes >= 1 && g.hashes <= MAX_HASHES, "{g:?}");
    assert!(!g.is_flat() || g.lines == g.flat_bits.div_ceil(480), "{g:?}");
    let _ = g.file_len();
    let _ = g.bits();
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let which = c.u8();
    let split = c.u8() as usize;
    let rest = c.rest();
    let (a, b) = rest.split_at(split.min(rest.len()));
    match which % 6 {
        0 => assert_eq!(
            parse_i64(a),
            string2ll(a),
            "{:?}",
            String::from_utf8_lossy(a)
        ),
        1 => {
            if a.contains(&b'\r') || a.contains(&b'\n') {
                return;
            }
            let mut header = b"*".to_vec();
            header.extend_from_slice(a);
            header.extend_from_slice(b"\r\n");
            let mut parser = RequestParser::default();
            let limits = RequestLimits {
                max_bulk_len: 512 << 20,
                authenticated: true,
            };
            let got = parser
                .parse(&header, limits)
                .map(|p| (p.args.is_some(), p.consumed))
                .map_err(|e| e.0);
            let expected = match string2ll(a) {
                Some(n) if n > i32::MAX as i64 => {
                    Err("Protocol error: invalid multibulk length".to_string())
                }
                None => Err("Protocol error: invalid multibulk length".to_string()),
                Some(n) if n <= 0 => Ok((false, header.len())),
                Some(_) => Ok((false, 0)),
            };
            assert_eq!(
                got,
                expected,
                "header {:?}",
                String::from_utf8_lossy(&header)
            );
        }
        2 => {
            let got = text(parse_reserve(&[a, b]));
            assert_eq!(
                got,
                reserve_model(a, b).map_err(String::from),
                "BF.RESERVE k {:?} {:?}",
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b)
            );
        }
        3 => {
            for option in ["CAPACITY", "ERROR", "EXPANSION"] {
                let got = text(parse_insert(&[option.as_bytes(), a, b"ITEMS", b"x"]));
                assert_eq!(
                    got,
                    insert_model(option, a).map_err(String::from),
                    "BF.INSERT k {option} {:?} ITEMS x",
                    String::from_utf8_lossy(a)
                );
            }
        }
        4 => {
            let cur = (split & 1 == 0).then_some(a);
            if let Ok(reply) = incr_by_float(cur, b) {
                assert_eq!(
                    incr_by_float(Some(&reply), b"0").as_deref(),
                    Ok(&reply[..]),
                    "INCRBYFLOAT reply {:?} does not read back",
                    String::from_utf8_lossy(&reply)
                );
            }
        }
        _ => {
            let mut c = Cursor::new(rest);
            let config = BloomConfig {
                error_rate: f64::from_bits(c.u64()),
                capacity: c.u64(),
                expansion: c.u64(),
                nonscaling: c.u8() & 1 == 1,
            };
            let index = c.u8() as u32;
            let used = c.u64();
            let limits = BloomLimits {
                max_memory: c.u64(),
            };
            if let Ok(g) = Geometry::for_items(config.capacity, config.error_rate) {
                check_geometry(g);
            }
            if config.validate().is_ok() {
                let _ = config.sub_filter_capacity(index);
                let _ = config.sub_filter_error(index);
                let flat_allowed = c.u8() & 1 == 1;
                if let Ok((_, g)) = config.sub_filter_geometry(index, used, &limits, flat_allowed)
                {
                    check_geometry(g);
                    assert!(g.file_len() <= limits.max_memory);
                }
            }
        }
    }
});
