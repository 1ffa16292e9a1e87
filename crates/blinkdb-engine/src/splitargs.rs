//! Splitting a line into arguments with the quoting rules of Redis's
//! `sdssplitargs`: inline commands (telnet, PING_INLINE), redis.conf lines
//! and AOF manifest lines all use it.

pub fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c)
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Returns None on unbalanced quotes (or a closing quote not followed by a space).
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // Redis splits a C string: everything from the first NUL on is ignored.
    let line = match line.iter().position(|&c| c == 0) {
        Some(nul) => &line[..nul],
        None => line,
    };
    let mut args = Vec::new();
    let mut i = 0;
    let at = |i: usize| line.get(i).copied();
    loop {
        while at(i).is_some_and(is_space) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut cur = Vec::new();
        let (mut dq, mut sq) = (false, false);
        loop {
            let c = at(i);
            // `\xHH` with two hex digits is that byte; any other escaped byte
            // stands for itself (`"\xZZ"` is "xZZ"), as in Redis.
            let hex_byte = match (c, at(i + 1)) {
                (Some(b'\\'), Some(b'x')) if dq => {
                    at(i + 2).and_then(hex).zip(at(i + 3).and_then(hex))
                }
                _ => None,
            };
            if let Some((h, l)) = hex_byte {
                cur.push(h * 16 + l);
                i += 3;
            } else if dq {
                match c {
                    None => return None,
                    Some(b'\\') if at(i + 1).is_some() => {
                        i += 1;
                        cur.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if at(i + 1).is_some_and(|n| !is_space(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(c) => cur.push(c),
                }
            } else if sq {
                match c {
                    None => return None,
                    Some(b'\\') if at(i + 1) == Some(b'\'') => {
                        i += 1;
                        cur.push(b'\'');
                    }
                    Some(b'\'') => {
                        if at(i + 1).is_some_and(|n| !is_space(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(c) => cur.push(c),
                }
            } else {
                match c {
                    None | Some(b' ' | b'\n' | b'\r' | b'\t') => break,
                    Some(b'"') => dq = true,
                    Some(b'\'') => sq = true,
                    Some(c) => cur.push(c),
                }
            }
            i += 1;
        }
        args.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::split_args;

    #[test]
    fn quoting() {
        let v = split_args(br#"set "a b" 'c d' "\x41\n" x"#).unwrap();
        assert_eq!(
            v,
            vec![
                b"set".to_vec(),
                b"a b".to_vec(),
                b"c d".to_vec(),
                b"A\n".to_vec(),
                b"x".to_vec()
            ]
        );
        assert!(split_args(br#"set "a"b"#).is_none());
        assert!(split_args(br#"set "abc"#).is_none());
        assert!(split_args(b"'it\\'s'").unwrap()[0] == b"it's");
        assert!(split_args(b"   ").unwrap().is_empty());
        assert!(split_args(&[0u8; 24]).unwrap().is_empty());
        assert_eq!(
            split_args(b"get a\0b c").unwrap(),
            vec![b"get".to_vec(), b"a".to_vec()]
        );
    }

    #[test]
    fn backslash_x_without_two_hex_digits_is_an_escaped_x() {
        // Redis 7.0: `ECHO "\xZZ"` replies "xZZ" (found writing the splitargs
        // fuzz target's model).
        assert_eq!(split_args(br#""\xZZ""#).unwrap(), vec![b"xZZ".to_vec()]);
        assert_eq!(split_args(br#""\x4""#).unwrap(), vec![b"x4".to_vec()]);
        assert_eq!(split_args(br#""\x""#).unwrap(), vec![b"x".to_vec()]);
        assert_eq!(split_args(br#""\x4f""#).unwrap(), vec![b"O".to_vec()]);
    }
}
