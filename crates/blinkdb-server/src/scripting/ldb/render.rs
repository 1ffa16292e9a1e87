//! How the debugger shows values: Lua values (Redis's ldbCatStackValue),
//! replies (ldbRedisProtocolToHuman), and C's atoi and `%g` as Redis's
//! debugger uses them.

use mlua::Value;

/// Nesting shown of a table value (LDB_MAX_VALUES_DEPTH: LUA_MINSTACK / 2).
const MAX_DEPTH: usize = 10;

/// C's atoi: leading blanks, a sign, digits; 0 when none (wraps as i32).
pub(super) fn atoi(s: &[u8]) -> i32 {
    let mut i = 0;
    while i < s.len() && (s[i] == b' ' || (b'\t'..=b'\r').contains(&s[i])) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut n: i64 = 0;
    while let Some(d) = s.get(i).filter(|d| d.is_ascii_digit()) {
        n = (n * 10 + (d - b'0') as i64) & 0xffff_ffff_ffff;
        i += 1;
    }
    let n = if neg { -n } else { n };
    n as i32
}

/// sdscatrepr: a quoted string with escapes.
fn repr(o: &mut Vec<u8>, s: &[u8]) {
    o.push(b'"');
    for &c in s {
        match c {
            b'\\' | b'"' => {
                o.push(b'\\');
                o.push(c);
            }
            b'\n' => o.extend_from_slice(b"\\n"),
            b'\r' => o.extend_from_slice(b"\\r"),
            b'\t' => o.extend_from_slice(b"\\t"),
            7 => o.extend_from_slice(b"\\a"),
            8 => o.extend_from_slice(b"\\b"),
            c if c.is_ascii_graphic() || c == b' ' => o.push(c),
            c => o.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    o.push(b'"');
}

/// C's `%g` of a Lua number.
fn fmt_g(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let exp = x.abs().log10().floor() as i32;
    // %g: precision 6; scientific when the exponent is < -4 or >= 6 (the
    // exponent after rounding to 6 digits).
    let sci = format!("{:.5e}", x);
    let (mant, e) = sci.split_once('e').unwrap_or((&sci, "0"));
    let e: i32 = e.parse().unwrap_or(exp);
    if !(-4..6).contains(&e) {
        let mant = trim_zeros(mant);
        format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    } else {
        let decimals = (5 - e).max(0) as usize;
        trim_zeros(&format!("{:.*}", decimals, x)).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// ldbCatStackValue: a Lua value as the debugger shows it.
pub(super) fn cat_value(o: &mut Vec<u8>, v: &Value, level: usize) {
    if level == MAX_DEPTH {
        o.extend_from_slice(b"<max recursion level reached! Nested table?>");
        return;
    }
    let level = level + 1;
    match v {
        Value::String(s) => repr(o, &s.as_bytes()),
        Value::Boolean(b) => o.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => o.extend_from_slice(fmt_g(*i as f64).as_bytes()),
        Value::Number(n) => o.extend_from_slice(fmt_g(*n).as_bytes()),
        Value::Nil => o.extend_from_slice(b"nil"),
        Value::Table(t) => {
            let (mut array, mut full) = (Vec::new(), Vec::new());
            let mut is_array = true;
            let mut expected = 1.0;
            for pair in t.clone().pairs::<Value, Value>() {
                let Ok((k, val)) = pair else { break };
                let key_num = match k {
                    Value::Integer(i) => Some(i as f64),
                    Value::Number(n) => Some(n),
                    _ => None,
                };
                if is_array && key_num != Some(expected) {
                    is_array = false;
                }
                cat_value(&mut array, &val, level);
                array.extend_from_slice(b"; ");
                full.push(b'[');
                cat_value(&mut full, &k, level);
                full.extend_from_slice(b"]=");
                cat_value(&mut full, &val, level);
                full.extend_from_slice(b"; ");
                expected += 1.0;
            }
            let chosen = if is_array { &mut array } else { &mut full };
            chosen.truncate(chosen.len().saturating_sub(2));
            o.push(b'{');
            o.extend_from_slice(chosen);
            o.push(b'}');
        }
        Value::Function(_) | Value::UserData(_) | Value::Thread(_) | Value::LightUserData(_) => {
            let name = match v {
                Value::Function(_) => "function",
                Value::UserData(_) => "userdata",
                Value::Thread(_) => "thread",
                _ => "light-userdata",
            };
            o.extend_from_slice(format!("\"{name}@{:p}\"", v.to_pointer()).as_bytes());
        }
        _ => o.extend_from_slice(b"\"<unknown-lua-type>\""),
    }
}

/// ldbRedisProtocolToHuman: one RESP reply from `at`, advanced past it.
pub(super) fn human(o: &mut Vec<u8>, r: &[u8], at: &mut usize) {
    let line_end = |from: usize| {
        r[from..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map_or(r.len(), |p| from + p)
    };
    let Some(&t) = r.get(*at) else { return };
    let end = line_end(*at + 1);
    let head = &r[*at + 1..end];
    let num = || {
        std::str::from_utf8(head)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let next = (end + 2).min(r.len());
    match t {
        b':' => {
            o.extend_from_slice(head);
            *at = next;
        }
        b'$' => {
            let len = num();
            if len < 0 {
                o.extend_from_slice(b"NULL");
                *at = next;
            } else {
                let stop = (next + len as usize).min(r.len());
                repr(o, &r[next..stop]);
                *at = (stop + 2).min(r.len());
            }
        }
        b'+' | b'-' => {
            repr(o, &r[*at..end]);
            *at = next;
        }
        b'*' | b'~' | b'%' => {
            let n = num();
            *at = next;
            if t == b'*' && n < 0 {
                o.extend_from_slice(b"NULL");
                return;
            }
            o.extend_from_slice(match t {
                b'*' => b"[",
                b'~' => b"~(",
                _ => b"{",
            });
            for j in 0..n {
                human(o, r, at);
                if t == b'%' {
                    o.extend_from_slice(b" => ");
                    human(o, r, at);
                }
                if j != n - 1 {
                    o.push(b',');
                }
            }
            o.extend_from_slice(match t {
                b'*' => b"]",
                b'~' => b")",
                _ => b"}",
            });
        }
        b'_' => {
            o.extend_from_slice(b"(null)");
            *at = next;
        }
        b'#' => {
            o.extend_from_slice(if head.first() == Some(&b't') {
                b"#true"
            } else {
                b"#false"
            });
            *at = next;
        }
        b',' => {
            o.extend_from_slice(b"(double) ");
            o.extend_from_slice(head);
            *at = next;
        }
        _ => *at = r.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(reply: &[u8]) -> String {
        let mut o = Vec::new();
        human(&mut o, reply, &mut 0);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn replies_as_redis_shows_them() {
        assert_eq!(shown(b":12\r\n"), "12");
        assert_eq!(shown(b"$-1\r\n"), "NULL");
        assert_eq!(shown(b"$3\r\na\"b\r\n"), "\"a\\\"b\"");
        assert_eq!(shown(b"+OK\r\n"), "\"+OK\"");
        assert_eq!(shown(b"*2\r\n$1\r\na\r\n*-1\r\n"), "[\"a\",NULL]");
        assert_eq!(shown(b"%1\r\n+k\r\n:1\r\n"), "{\"+k\" => 1}");
        assert_eq!(shown(b"~1\r\n#t\r\n"), "~(#true)");
        assert_eq!(shown(b"_\r\n"), "(null)");
        assert_eq!(shown(b",1.5\r\n"), "(double) 1.5");
        // A truncated reply shows what there is, without panicking.
        assert_eq!(shown(b"*3\r\n:1\r\n"), "[1,,]");
        assert_eq!(shown(b"$10\r\nab"), "\"ab\"");
    }

    #[test]
    fn numbers_as_percent_g() {
        for (x, s) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(fmt_g(x), s, "{x}");
        }
    }

    #[test]
    fn atoi_as_c() {
        assert_eq!(atoi(b"  42x"), 42);
        assert_eq!(atoi(b"-5"), -5);
        assert_eq!(atoi(b"abc"), 0);
        assert_eq!(atoi(b"+7"), 7);
    }
}
