//! `glob_match` (KEYS, SCAN MATCH, CONFIG GET, COMMAND LIST) against a model of
//! Redis 7.0's `stringmatchlen` written from its C control flow: pointer and
//! length walked as in C (a read at the end sees the string's NUL), `char`
//! signed as on x86-64 (it decides `[a-\xff]` ranges), `tolower` of the C
//! locale, and the recursion for `*` memoized (O(pattern · text), like the
//! matcher under test, so that a long text stays cheap). Any difference fails;
//! libFuzzer's -timeout catches a matcher that backtracks. Patterns here are at
//! most 255 bytes, below Redis's 1000-star nesting limit (pattern.rs tests that).
#![no_main]

use blinkdb_engine::glob_match;
use blinkdb_fuzz::Cursor;
use libfuzzer_sys::fuzz_target;

struct Model<'a> {
    pat: &'a [u8],
    text: &'a [u8],
    nocase: bool,
    /// Answers by (pattern position, text position): 0 unknown, 1 no, 2 yes.
    memo: Vec<u8>,
    star_memo: Vec<u8>,
}

fn known(v: u8) -> Option<bool> {
    (v != 0).then_some(v == 2)
}

fn answer(b: bool) -> u8 {
    1 + b as u8
}

/// C `char` on x86-64.
fn signed(c: u8) -> i32 {
    c as i8 as i32
}

/// glibc `tolower` in the C locale, on a (possibly negative) `int`.
fn c_tolower(c: i32) -> i32 {
    if (b'A' as i32..=b'Z' as i32).contains(&c) {
        c + 32
    } else {
        c
    }
}

impl Model<'_> {
    fn p_at(&self, p: usize) -> u8 {
        self.pat.get(p).copied().unwrap_or(0)
    }

    fn same(&self, a: u8, b: u8) -> bool {
        if self.nocase {
            c_tolower(signed(a)) == c_tolower(signed(b))
        } else {
            a == b
        }
    }

    /// `stringmatchlen(pat + p, plen - p, text + s, slen - s, nocase)`.
    fn slot(&self, p: usize, s: usize) -> usize {
        p * (self.text.len() + 1) + s
    }

    fn matches(&mut self, p0: usize, s0: usize) -> bool {
        let slot = self.slot(p0, s0);
        if let Some(m) = known(self.memo[slot]) {
            return m;
        }
        let m = self.walk(p0, s0);
        self.memo[slot] = answer(m);
        m
    }

    /// The loop of `*` at `p`: does the rest match from some position in
    /// `s..slen`? Answers are kept for every position looked at, so each
    /// (star, position) pair is tried once: O(pattern · text) overall.
    fn star(&mut self, p: usize, s: usize) -> bool {
        let mut seen = Vec::new();
        let mut found = false;
        for at in s..self.text.len() {
            if let Some(k) = known(self.star_memo[self.slot(p, at)]) {
                found = k;
                break;
            }
            seen.push(at);
            if self.matches(p + 1, at) {
                found = true;
                break;
            }
        }
        for at in seen {
            let slot = self.slot(p, at);
            self.star_memo[slot] = answer(found);
        }
        found
    }

    fn walk(&mut self, mut p: usize, mut s: usize) -> bool {
        let (plen, slen) = (self.pat.len(), self.text.len());
        while p < plen && s < slen {
            match self.pat[p] {
                b'*' => {
                    while p < plen && self.p_at(p + 1) == b'*' {
                        p += 1;
                    }
                    if plen - p == 1 {
                        return true;
                    }
                    return self.star(p, s);
                }
                b'?' => s += 1,
                b'[' => {
                    p += 1;
                    let not = self.p_at(p) == b'^';
                    if not {
                        p += 1;
                    }
                    let mut matched = false;
                    loop {
                        let left = plen - p;
                        if self.p_at(p) == b'\\' && left >= 2 {
                            p += 1;
                            if self.pat[p] == self.text[s] {
                                matched = true;
                            }
                        } else if self.p_at(p) == b']' {
                            break;
                        } else if left == 0 {
                            p -= 1;
                            break;
                        } else if left >= 3 && self.pat[p + 1] == b'-' {
                            let (mut start, mut end) =
                                (signed(self.pat[p]), signed(self.pat[p + 2]));
                            let mut c = signed(self.text[s]);
                            if start > end {
                                std::mem::swap(&mut start, &mut end);
                            }
                            if self.nocase {
                                start = c_tolower(start);
                                end = c_tolower(end);
                                c = c_tolower(c);
                            }
                            p += 2;
                            if c >= start && c <= end {
                                matched = true;
                            }
                        } else if self.same(self.pat[p], self.text[s]) {
                            matched = true;
                        }
                        p += 1;
                    }
                    if not {
                        matched = !matched;
                    }
                    if !matched {
                        return false;
                    }
                    s += 1;
                }
                c => {
                    if c == b'\\' && plen - p >= 2 {
                        p += 1;
                    }
                    if !self.same(self.pat[p], self.text[s]) {
                        return false;
                    }
                    s += 1;
                }
            }
            p += 1;
            if s == slen {
                while self.p_at(p) == b'*' && p < plen {
                    p += 1;
                }
                break;
            }
        }
        p == plen && s == slen
    }
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let flags = c.u8();
    let split = c.u8() as usize;
    let rest = c.rest();
    let split = split.min(rest.len());
    let (pat, text) = rest.split_at(split);
    // A long text made of a repeated piece: adversarial for backtracking.
    let repeated;
    let text = if flags & 2 != 0 && !text.is_empty() {
        repeated = text.repeat(64.min(4096 / text.len()).max(1));
        &repeated[..]
    } else {
        text
    };
    let nocase = flags & 1 != 0;
    let mut model = Model {
        pat,
        text,
        nocase,
        memo: vec![0; (pat.len() + 1) * (text.len() + 1)],
        star_memo: vec![0; (pat.len() + 1) * (text.len() + 1)],
    };
    let expected = model.matches(0, 0);
    assert_eq!(
        glob_match(pat, text, nocase),
        expected,
        "pattern {:?} text {:?} nocase {nocase}",
        String::from_utf8_lossy(pat),
        String::from_utf8_lossy(text)
    );
});
