//! `split_args` (inline commands, config lines, AOF manifest lines) against a
//! model of Redis 7.0's `sdssplitargs` written from its C control flow: a
//! NUL-terminated byte string walked with one pointer. Any difference fails.
//! Also: quoting each argument the way Redis prints strings (`sdscatrepr`) and
//! splitting the joined line gives the same arguments back.
#![no_main]

use blinkdb_engine::split_args;
use blinkdb_fuzz::alloc_meter::peak_during;
use libfuzzer_sys::fuzz_target;

fn c_isspace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// `sdssplitargs`: `s[p]` past the end reads the terminating NUL, as in C.
fn model(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let at = |p: usize| line.get(p).copied().unwrap_or(0);
    let mut p = 0;
    let mut out = Vec::new();
    loop {
        while at(p) != 0 && c_isspace(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Some(out);
        }
        let (mut inq, mut insq, mut done) = (false, false, false);
        let mut cur = Vec::new();
        while !done {
            let c = at(p);
            if inq {
                if c == b'\\'
                    && at(p + 1) == b'x'
                    && hex_val(at(p + 2)).is_some()
                    && hex_val(at(p + 3)).is_some()
                {
                    cur.push(hex_val(at(p + 2)).unwrap() * 16 + hex_val(at(p + 3)).unwrap());
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !c_isspace(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !c_isspace(at(p + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    _ => cur.push(c),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        out.push(cur);
    }
}

/// `sdscatrepr`: a double-quoted string with C escapes.
fn repr(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in arg {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c),
            c => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

fuzz_target!(|data: &[u8]| {
    let (got, peak) = peak_during(|| split_args(data));
    assert!(
        peak <= 64 * data.len() + 4096,
        "{peak} bytes of heap for {} bytes",
        data.len()
    );
    assert_eq!(got, model(data), "line {:?}", String::from_utf8_lossy(data));
    if let Some(args) = got {
        let mut line = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                line.push(b' ');
            }
            repr(a, &mut line);
        }
        assert_eq!(
            split_args(&line),
            Some(args),
            "quoted {:?}",
            String::from_utf8_lossy(&line)
        );
    }
});
