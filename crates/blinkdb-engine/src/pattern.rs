//! Redis glob matching (`KEYS`, `SCAN MATCH`, `CONFIG GET`).
//!
//! Hand-written because Redis's `stringmatchlen` works on raw bytes with its
//! own rules (`[^a-z]`, `\` escapes, no braces or `**`); glob crates work on
//! UTF-8 paths with different syntax.

/// Does `text` match the glob `pattern`? `nocase` folds ASCII case.
///
/// Same answers as Redis's `stringmatchlen`, in O(pattern × text) time and no
/// recursion: every token but `*` consumes exactly one byte, so on a mismatch
/// only the latest `*` needs to take one more byte (an earlier `*` taking more
/// could only reach states the latest one reaches too). A backtracking matcher
/// is exponential in the number of stars (`a*a*a*...b`).
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    // Each nested star group needs at least two bytes of pattern.
    if pattern.len() > 2 * MAX_NESTED_STARS && too_many_nested_stars(pattern) {
        return false;
    }
    // Redis's loop runs only while both are non-empty: `*` does not match "".
    if text.is_empty() {
        return pattern.is_empty();
    }
    let (mut p, mut s) = (0, 0);
    // Where to resume after the latest star: (pattern after it, text it took up to).
    let mut star: Option<(usize, usize)> = None;
    loop {
        if s == text.len() {
            while pattern.get(p) == Some(&b'*') {
                p += 1;
            }
            return p == pattern.len();
        }
        if let Some(&c) = pattern.get(p) {
            if c == b'*' {
                while pattern.get(p + 1) == Some(&b'*') {
                    p += 1;
                }
                if p + 1 == pattern.len() {
                    return true;
                }
                star = Some((p + 1, s));
                p += 1;
                continue;
            }
            if let Some(next) = match_token(pattern, p, text[s], nocase) {
                p = next;
                s += 1;
                continue;
            }
        }
        match star {
            Some((after, taken)) => {
                star = Some((after, taken + 1));
                p = after;
                s = taken + 1;
            }
            None => return false,
        }
    }
}

/// Redis's matcher recurses once per star group it passes and gives up beyond this depth
/// (`nesting > 1000`), so a pattern with more star groups than this before its end matches
/// nothing there. Every such group precedes a token that takes a byte, so a match has to pass
/// all of them, and the answer depends on the pattern alone.
const MAX_NESTED_STARS: usize = 1000;

fn too_many_nested_stars(pattern: &[u8]) -> bool {
    let (mut p, mut groups) = (0, 0);
    while p < pattern.len() {
        match pattern[p] {
            b'*' => {
                while pattern.get(p + 1) == Some(&b'*') {
                    p += 1;
                }
                if p + 1 == pattern.len() {
                    return false; // a final star group matches the rest without recursing
                }
                groups += 1;
                if groups > MAX_NESTED_STARS {
                    return true;
                }
                p += 1;
            }
            b'[' => p = pattern.len() - match_class(&pattern[p + 1..], 0, false).1.len(),
            b'\\' if p + 1 < pattern.len() => p += 2,
            _ => p += 1,
        }
    }
    false
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

/// Matches the one-byte token at `pattern[p]` (not `*`) against `ch`;
/// returns the index of the next token.
fn match_token(pattern: &[u8], p: usize, ch: u8, nocase: bool) -> Option<usize> {
    match pattern[p] {
        b'?' => Some(p + 1),
        b'[' => {
            let (matched, rest) = match_class(&pattern[p + 1..], ch, nocase);
            matched.then_some(pattern.len() - rest.len())
        }
        b'\\' if p + 1 < pattern.len() => eq(pattern[p + 1], ch, nocase).then_some(p + 2),
        c => eq(c, ch, nocase).then_some(p + 1),
    }
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
                if *c == ch {
                    matched = true;
                }
                p = rest;
            }
            [b']', rest @ ..] => {
                p = rest;
                break;
            }
            [lo, b'-', hi, rest @ ..] => {
                // Redis compares range ends as C `char`s, signed on x86-64: bytes
                // from 0x80 sort below 0, so `[a-\xff]` is the range -1..='a'.
                let signed = |b: u8| {
                    let b = if nocase { b.to_ascii_lowercase() } else { b };
                    b as i8
                };
                let (mut lo, mut hi) = (*lo as i8, *hi as i8);
                if lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                let (lo, hi, c) = (signed(lo as u8), signed(hi as u8), signed(ch));
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
    use super::{glob_match, match_class};
    use std::time::{Duration, Instant};

    /// Redis's `stringmatchlen`, step for step (recursive, exponential): the
    /// oracle for small inputs.
    fn reference(mut p: &[u8], mut s: &[u8], nocase: bool) -> bool {
        while !p.is_empty() && !s.is_empty() {
            match p[0] {
                b'*' => {
                    while p.len() > 1 && p[1] == b'*' {
                        p = &p[1..];
                    }
                    if p.len() == 1 {
                        return true;
                    }
                    while !s.is_empty() {
                        if reference(&p[1..], s, nocase) {
                            return true;
                        }
                        s = &s[1..];
                    }
                    return false;
                }
                b'?' => s = &s[1..],
                b'[' => {
                    let (matched, rest) = match_class(&p[1..], s[0], nocase);
                    if !matched {
                        return false;
                    }
                    s = &s[1..];
                    // `rest` starts after the class; undo the common step below.
                    p = &p[p.len() - rest.len() - 1..];
                }
                c => {
                    let lit = if c == b'\\' && p.len() >= 2 {
                        p = &p[1..];
                        p[0]
                    } else {
                        c
                    };
                    let same = if nocase {
                        lit.eq_ignore_ascii_case(&s[0])
                    } else {
                        lit == s[0]
                    };
                    if !same {
                        return false;
                    }
                    s = &s[1..];
                }
            }
            p = &p[1..];
            if s.is_empty() {
                while p.first() == Some(&b'*') {
                    p = &p[1..];
                }
                break;
            }
        }
        p.is_empty() && s.is_empty()
    }

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
        // Redis's edges: `*` needs a non-empty string; a trailing `\` is literal;
        // an unterminated class ends with the pattern.
        assert!(!glob_match(b"*", b"", false));
        assert!(glob_match(b"", b"", false));
        assert!(glob_match(b"a*", b"a", false));
        assert!(glob_match(b"a\\", b"a\\", false));
        assert!(glob_match(b"a[bc", b"ac", false));
        assert!(!glob_match(b"a[", b"ab", false));
        assert!(glob_match(b"a[^", b"ab", false));
    }

    #[test]
    fn more_than_a_thousand_nested_stars_match_nothing_as_in_redis() {
        // Redis 7.0's keyspace test: KEYS of 50000 `*?` against a 50000-byte key is empty.
        let text = vec![b'a'; 50_000];
        assert!(!glob_match(&b"*?".repeat(50_000), &text, false));
        assert!(glob_match(&b"*?".repeat(1000), &text[..1000], false));
        assert!(!glob_match(&b"*?".repeat(1001), &text[..1001], false));
        // A final star group does not nest; stars in a class or escaped are not stars.
        assert!(glob_match(&b"a*".repeat(1001), &text[..1001], false));
        let mut literal = b"[*]?".repeat(1001);
        literal.extend_from_slice(b"*?");
        assert!(glob_match(
            &literal,
            &b"*a"
                .repeat(1001)
                .into_iter()
                .chain(*b"a")
                .collect::<Vec<_>>(),
            false
        ));
        assert!(glob_match(
            &b"\\*?".repeat(1001),
            &b"*a".repeat(1001),
            false
        ));
    }

    #[test]
    fn ranges_compare_signed_chars_like_redis_on_x86_64() {
        // Redis 7.0 on x86-64: KEYS [a-\xff] matches "A" and "\xff", not "b" or
        // "\xfe" (found writing the glob fuzz target's model of stringmatchlen).
        let p = b"[a-\xff]";
        assert!(glob_match(p, b"A", false));
        assert!(glob_match(p, b"\xff", false));
        assert!(glob_match(p, b"\x00", false));
        assert!(!glob_match(p, b"b", false));
        assert!(!glob_match(p, b"\xfe", false));
        assert!(glob_match(b"[\x80-\xff]", b"\x90", false));
        assert!(!glob_match(b"[\x80-\xff]", b"a", false));
        assert!(glob_match(b"[\x80-a]", b"\x00", true));
    }

    #[test]
    fn agrees_with_redis_on_random_inputs() {
        // xorshift: deterministic, no dependency.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let pat_alphabet = b"ab*?[]^-\\A";
        let text_alphabet = b"abA-]\\";
        for _ in 0..200_000 {
            let plen = (next() % 9) as usize;
            let slen = (next() % 9) as usize;
            let pat: Vec<u8> = (0..plen)
                .map(|_| pat_alphabet[(next() % pat_alphabet.len() as u64) as usize])
                .collect();
            let text: Vec<u8> = (0..slen)
                .map(|_| text_alphabet[(next() % text_alphabet.len() as u64) as usize])
                .collect();
            for nocase in [false, true] {
                assert_eq!(
                    glob_match(&pat, &text, nocase),
                    reference(&pat, &text, nocase),
                    "pattern {:?} text {:?} nocase {nocase}",
                    String::from_utf8_lossy(&pat),
                    String::from_utf8_lossy(&text),
                );
            }
        }
    }

    #[test]
    fn adversarial_patterns_finish_in_milliseconds() {
        // Exponential for a backtracking matcher: the KEYS pattern against
        // a long key, and a 1000-star pattern against a 100 KB string.
        let cases: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (
                b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b".to_vec(),
                vec![b'a'; 200],
            ),
            (
                b"*a".repeat(1000).into_iter().chain(*b"b").collect(),
                vec![b'a'; 100_000],
            ),
            (
                [b"[a]*".repeat(500), b"?b".to_vec()].concat(),
                vec![b'a'; 10_000],
            ),
        ];
        for (pat, text) in cases {
            // On a thread, so that a matcher that never ends fails the test
            // instead of hanging it.
            let (done, finished) = std::sync::mpsc::channel();
            let t = Instant::now();
            std::thread::spawn(move || {
                let _ = done.send(glob_match(&pat, &text, false) || glob_match(&pat, &text, true));
            });
            let matched = finished
                .recv_timeout(Duration::from_secs(2))
                .expect("the matcher did not finish in 2 s");
            assert!(!matched);
            eprintln!("adversarial pattern: {:?}", t.elapsed());
        }
    }
}
