//! Redis glob matching (`KEYS`, `SCAN MATCH`, `CONFIG GET`).
//!
//! Hand-written because Redis's `stringmatchlen` works on raw bytes with its
//! own rules (`[^a-z]`, `\` escapes, no braces or `**`); glob crates work on
//! UTF-8 paths with different syntax.

/// Does `text` match the glob `pattern`? `nocase` folds ASCII case.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    match_from(pattern, text, nocase, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

// Depth-limited like Redis (which caps nested `*` recursion) so hostile
// patterns cannot blow the stack.
fn match_from(mut p: &[u8], mut s: &[u8], nocase: bool, depth: u32) -> bool {
    if depth > 1000 {
        return false;
    }
    while let Some(&c) = p.first() {
        match c {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                for i in 0..=s.len() {
                    if match_from(&p[1..], &s[i..], nocase, depth + 1) {
                        return true;
                    }
                }
                return false;
            }
            b'?' => {
                if s.is_empty() {
                    return false;
                }
                s = &s[1..];
                p = &p[1..];
            }
            b'[' => {
                let Some(&ch) = s.first() else { return false };
                let (matched, rest) = match_class(&p[1..], ch, nocase);
                if !matched {
                    return false;
                }
                p = rest;
                s = &s[1..];
            }
            b'\\' if p.len() >= 2 => {
                if s.is_empty() || !eq(p[1], s[0], nocase) {
                    return false;
                }
                p = &p[2..];
                s = &s[1..];
            }
            _ => {
                if s.is_empty() || !eq(c, s[0], nocase) {
                    return false;
                }
                p = &p[1..];
                s = &s[1..];
            }
        }
    }
    s.is_empty()
}

/// Matches one byte against a `[...]` class; `p` starts after `[`.
/// Returns whether it matched and the pattern after the closing `]`.
fn match_class(mut p: &[u8], ch: u8, nocase: bool) -> (bool, &[u8]) {
    let not = p.first() == Some(&b'^');
    if not {
        p = &p[1..];
    }
    let mut matched = false;
    loop {
        match p {
            [] => break, // Redis treats an unterminated class as ending here.
            [b'\\', c, rest @ ..] => {
                if eq(*c, ch, nocase) {
                    matched = true;
                }
                p = rest;
            }
            [b']', rest @ ..] => {
                p = rest;
                break;
            }
            [lo, b'-', hi, rest @ ..] if *hi != b']' => {
                let (mut lo, mut hi, mut c) = (*lo, *hi, ch);
                if lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                if nocase {
                    lo = lo.to_ascii_lowercase();
                    hi = hi.to_ascii_lowercase();
                    c = c.to_ascii_lowercase();
                }
                if c >= lo && c <= hi {
                    matched = true;
                }
                p = rest;
            }
            [c, rest @ ..] => {
                if eq(*c, ch, nocase) {
                    matched = true;
                }
                p = rest;
            }
        }
    }
    (matched != not, p)
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn redis_glob_rules() {
        assert!(glob_match(b"*", b"anything", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(!glob_match(b"h?llo", b"hllo", false));
        assert!(glob_match(b"h*llo", b"heeeello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[ae]llo", b"hillo", false));
        assert!(glob_match(b"h[^e]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"h\\*llo", b"h*llo", false));
        assert!(!glob_match(b"h\\*llo", b"hello", false));
        assert!(glob_match(b"*max*", b"maxclients", false));
        assert!(glob_match(b"MAX*", b"maxclients", true));
        assert!(!glob_match(b"a*b", b"acbd", false));
    }
}
