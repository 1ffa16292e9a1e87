//! Integer parsing with Redis's rules, shared by the request parser (length
//! headers) and every command argument (commands::args re-exports it).

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
