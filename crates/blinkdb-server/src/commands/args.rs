//! Argument parsing and number formatting with Redis's rules and texts.

pub const ERR_NOT_INT: &str = "ERR value is not an integer or out of range";
pub const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
pub const ERR_SYNTAX: &str = "ERR syntax error";
pub const ERR_WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const ERR_NO_SUCH_KEY: &str = "ERR no such key";
pub const ERR_DB_INDEX: &str = "ERR DB index is out of range";
pub const ERR_TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
pub const ERR_OFFSET: &str = "ERR offset is out of range";
/// An integer argument that parses but does not fit a C int.
pub const ERR_INT_RANGE: &str =
    "ERR value is out of range, value must between -2147483648 and 2147483647";

/// Redis's `string2ll`; lives with the request parser, which needs it for
/// length headers.
pub use crate::protocol::int::parse_i64;

pub fn int_arg(s: &[u8]) -> Result<i64, &'static str> {
    parse_i64(s).ok_or(ERR_NOT_INT)
}

/// Redis's `string2ld`: a float with no surrounding spaces, not NaN.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5120 || s[0].is_ascii_whitespace() {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    if text.ends_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    Some(v)
}

extern "C" {
    fn blinkdb_incrbyfloat(
        cur: *const u8,
        cur_len: usize,
        inc: *const u8,
        inc_len: usize,
        out: *mut u8,
        out_len: usize,
    ) -> std::os::raw::c_long;
}

/// INCRBYFLOAT's arithmetic and formatting, in C long double as Redis does
/// (see csrc/longdouble.c). `cur` is None for a missing key.
pub fn incr_by_float(cur: Option<&[u8]>, inc: &[u8]) -> Result<Vec<u8>, &'static str> {
    incr_by_float_as(cur, inc, ERR_NOT_FLOAT)
}

/// `incr_by_float` with the error for a current value that is not a number
/// (HINCRBYFLOAT's differs from INCRBYFLOAT's).
pub fn incr_by_float_as(
    cur: Option<&[u8]>,
    inc: &[u8],
    cur_not_float: &'static str,
) -> Result<Vec<u8>, &'static str> {
    let mut out = vec![0u8; 5 * 1024 + 64];
    let (cp, cl) = cur.map_or((std::ptr::null(), 0), |c| (c.as_ptr(), c.len()));
    // SAFETY: all pointers are valid for the given lengths; the C side
    // writes at most out.len() bytes.
    let n = unsafe {
        blinkdb_incrbyfloat(cp, cl, inc.as_ptr(), inc.len(), out.as_mut_ptr(), out.len())
    };
    match n {
        -1 => Err(cur_not_float),
        -2 => Err(ERR_NOT_FLOAT),
        n if n < 0 => Err("ERR increment would produce NaN or Infinity"),
        n => {
            out.truncate(n as usize);
            Ok(out)
        }
    }
}

pub fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// A SCAN cursor, read the way Redis's strtoul call reads it: optional sign,
/// decimal digits, nothing else; the empty string is 0.
pub fn parse_cursor(raw: &[u8]) -> Option<u64> {
    let (neg, digits) = match raw.first() {
        Some(b'-') => (true, &raw[1..]),
        Some(b'+') => (false, &raw[1..]),
        _ => (false, raw),
    };
    if !digits.iter().all(u8::is_ascii_digit) || (digits.is_empty() && !raw.is_empty()) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_like_redis() {
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"+1"), None);
        assert_eq!(parse_i64(b"01"), None);
        assert_eq!(parse_i64(b" 1"), None);
        assert_eq!(parse_i64(b"-0"), None);
    }

    #[test]
    fn incrbyfloat_uses_long_double() {
        assert_eq!(incr_by_float(Some(b"0.1"), b"0.2").unwrap(), b"0.3");
        assert_eq!(incr_by_float(None, b"1e-3").unwrap(), b"0.001");
        assert_eq!(incr_by_float(Some(b"10.5"), b"0.1").unwrap(), b"10.6");
        assert_eq!(incr_by_float(Some(b"x"), b"1"), Err(ERR_NOT_FLOAT));
        assert_eq!(incr_by_float(Some(b"1"), b" 1"), Err(ERR_NOT_FLOAT));
        assert!(incr_by_float(Some(b"1e4932"), b"1e4932").is_err());
        assert_eq!(incr_by_float(None, b"1e400").unwrap().len(), 401);
    }
}
