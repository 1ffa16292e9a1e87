//! Stream entry IDs: `<ms>-<seq>`, two unsigned 64-bit numbers ordered as
//! one 128-bit number, and the textual forms commands accept.

use std::fmt;

#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl fmt::Debug for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// An ID argument as parsed: `seq_given` is false for `<ms>-*` (XADD picks
/// the sequence).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedId {
    pub id: StreamId,
    pub seq_given: bool,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> Self {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == Self::MIN
    }

    /// The next ID, None past the last one.
    pub fn next(self) -> Option<StreamId> {
        if self.seq < u64::MAX {
            Some(StreamId::new(self.ms, self.seq + 1))
        } else if self.ms < u64::MAX {
            Some(StreamId::new(self.ms + 1, 0))
        } else {
            None
        }
    }

    /// The previous ID, None before 0-0.
    pub fn prev(self) -> Option<StreamId> {
        if self.seq > 0 {
            Some(StreamId::new(self.ms, self.seq - 1))
        } else if self.ms > 0 {
            Some(StreamId::new(self.ms - 1, u64::MAX))
        } else {
            None
        }
    }

    pub fn to_bytes(self) -> Vec<u8> {
        self.to_string().into_bytes()
    }

    /// Parses `-`, `+`, `<ms>`, `<ms>-<seq>` and (with `allow_star`)
    /// `<ms>-*`, as Redis's streamGenericParseIDOrReply: a missing sequence
    /// is `missing_seq`; `strict` refuses `-` and `+`.
    pub fn parse(arg: &[u8], missing_seq: u64, strict: bool, allow_star: bool) -> Option<ParsedId> {
        // Redis copies the argument into a 128-byte C buffer: longer ones
        // are invalid, and the text ends at a NUL.
        if arg.len() > 127 {
            return None;
        }
        let arg = &arg[..arg.iter().position(|&b| b == 0).unwrap_or(arg.len())];
        let plain = |id| {
            Some(ParsedId {
                id,
                seq_given: true,
            })
        };
        match arg {
            b"-" if !strict => return plain(StreamId::MIN),
            b"+" if !strict => return plain(StreamId::MAX),
            b"-" | b"+" => return None,
            _ => {}
        }
        let (ms, rest) = match arg.iter().position(|&b| b == b'-') {
            Some(d) => (&arg[..d], Some(&arg[d + 1..])),
            None => (arg, None),
        };
        let ms = parse_u64(ms)?;
        match rest {
            None => plain(StreamId::new(ms, missing_seq)),
            Some(b"*") if allow_star => Some(ParsedId {
                id: StreamId::new(ms, 0),
                seq_given: false,
            }),
            Some(seq) => plain(StreamId::new(ms, parse_u64(seq)?)),
        }
    }
}

/// Redis's string2ull: a strict signed 64-bit number that is not negative,
/// else what C's strtoull accepts in full (leading blanks, a sign, and
/// values past i64::MAX; a `-` negates modulo 2^64).
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(n) = strict_i64(s) {
        return (n >= 0).then_some(n as u64);
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    if i == s.len() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in &s[i..] {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    Some(if negative { n.wrapping_neg() } else { n })
}

/// Redis's string2ll: optional `-`, digits, no leading zeros or blanks.
fn strict_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: i128 = 0;
    for &b in digits {
        n = n * 10 + (b - b'0') as i128;
    }
    let n = if neg { -n } else { n };
    i64::try_from(n).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<StreamId> {
        StreamId::parse(s.as_bytes(), 7, false, false).map(|p| p.id)
    }

    #[test]
    fn parses_like_redis() {
        assert_eq!(p("1-2"), Some(StreamId::new(1, 2)));
        assert_eq!(p("5"), Some(StreamId::new(5, 7)));
        assert_eq!(p("-"), Some(StreamId::MIN));
        assert_eq!(p("+"), Some(StreamId::MAX));
        assert_eq!(
            p("18446744073709551615-18446744073709551615"),
            Some(StreamId::MAX)
        );
        assert_eq!(p("18446744073709551616-0"), None);
        assert_eq!(p("-1"), None);
        assert_eq!(p("1-"), None);
        assert_eq!(p("a-1"), None);
        assert_eq!(p("1-2-3"), None);
        assert_eq!(p("1-*"), None);
        assert_eq!(StreamId::parse(b"-", 0, true, false), None);
        let star = StreamId::parse(b"3-*", 0, true, true).unwrap();
        assert_eq!((star.id, star.seq_given), (StreamId::new(3, 0), false));
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::MIN.prev(), None);
    }
}
