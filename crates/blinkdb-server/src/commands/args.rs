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

/// Redis's `string2ll`: an optional '-', digits, no leading zeros or '+'.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, d) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if d.is_empty() || d[0] == b'0' {
        return None;
    }
    let mut v: i64 = 0;
    for &c in d {
        if !c.is_ascii_digit() {
            return None;
        }
        let digit = (c - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(digit)?
        } else {
            v.checked_add(digit)?
        };
    }
    Some(v)
}

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

/// Formats like Redis's human-readable long double output ("%.17Lf" with
/// trailing zeros removed). Redis computes in 80-bit long double; rounding
/// to 15 significant digits first hides the f64 noise Redis does not show.
pub fn format_double(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return "0".into();
    }
    let rounded: f64 = format!("{:.14e}", v).parse().unwrap_or(v);
    let s = format!("{}", rounded);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

pub fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
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
    fn doubles_like_redis() {
        assert_eq!(format_double(0.1 + 0.2), "0.3");
        assert_eq!(format_double(10.5), "10.5");
        assert_eq!(format_double(3.0), "3");
        assert_eq!(format_double(-0.000025), "-0.000025");
        assert_eq!(format_double(5.0e20), "500000000000000000000");
    }
}
