//! Incremental request parser.
//!
//! Hand-written rather than built on redis-protocol's frame decoder: Redis
//! requests are a narrower grammar (arrays of bulk strings, or inline lines),
//! must be rejected with Redis's exact error texts, and must never allocate
//! on the word of a length header. Parsing resumes where the last read left
//! off, so a large value arriving in many reads is scanned once.

use super::int::parse_i64;
use blinkdb_engine::split_args;
use smallvec::SmallVec;

/// The arguments of one command; args[0] is the command name. They borrow the
/// connection's read buffer: a profile of pipelined SET spent 10% on reference
/// counting and dropping one `Bytes` per argument.
pub type Args<'a> = SmallVec<[&'a [u8]; 4]>;

/// The arguments packed end to end in `bytes`, each ending at its offset in
/// `ends` (how waiters and queued calls keep their argv in one buffer).
pub fn split_at_ends<'a, C: FromIterator<&'a [u8]>>(bytes: &'a [u8], ends: &[usize]) -> C {
    let mut start = 0;
    ends.iter()
        .map(|&end| {
            let arg = &bytes[start..end];
            start = end;
            arg
        })
        .collect()
}

/// Longest header or inline line accepted before its terminator arrives
/// (Redis's PROTO_INLINE_MAX_SIZE).
const INLINE_MAX: usize = 64 * 1024;
/// Arguments a client that has not authenticated may send (as Redis).
const UNAUTH_MAX_ARGS: i64 = 10;
const UNAUTH_MAX_BULK: i64 = 16384;

/// A request that cannot be parsed. The text is Redis's, without `ERR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

#[derive(Debug, Clone, Copy)]
pub struct RequestLimits {
    pub max_bulk_len: i64,
    pub authenticated: bool,
}

/// Where an unfinished multibulk request stands.
#[derive(Default)]
struct Pending {
    /// Arguments still to come.
    remaining: usize,
    /// Offset in the buffer where parsing resumes.
    pos: usize,
    /// (start, end) of each argument parsed so far.
    ranges: Vec<(usize, usize)>,
    /// The buffer length that completes the large argument being received
    /// (0: none), so that the reader sizes the buffer to it once.
    awaited: usize,
    /// Bytes parsed into arguments (or a large argument's header) so far.
    taken: usize,
}

/// An argument this large gets a read buffer sized to it (Redis's
/// PROTO_MBULK_BIG_ARG), not one grown by doubling: client memory (and so
/// client eviction) then reflects what the command holds.
const BIG_ARG: usize = 32 * 1024;

#[derive(Default)]
pub struct RequestParser {
    pending: Option<Pending>,
    /// Reused between commands so parsing allocates nothing per command.
    spare_ranges: Vec<(usize, usize)>,
    /// The arguments of the last inline command (unquoting makes them new bytes).
    inline_args: Vec<Vec<u8>>,
}

/// What one call of [`RequestParser::parse`] found.
pub struct Parsed<'a> {
    /// The next complete command, if the buffer holds one.
    pub args: Option<Args<'a>>,
    /// Bytes at the front of the buffer that are done with (the command's, and
    /// any empty requests before it): the caller drops them before the next read.
    pub consumed: usize,
}

/// Finds "\r" starting at `from`; Redis looks for '\r' and assumes '\n' follows.
fn find_cr(buf: &[u8], from: usize) -> Option<usize> {
    buf[from..]
        .iter()
        .position(|&b| b == b'\r')
        .map(|i| i + from)
}

/// A bulk header `$<digits>\r` at `pos` in string2ll's form (no leading zero
/// but "0" itself, at most 18 digits), read in one pass: (length, offset of
/// its '\r'). None for anything else, which the general path (find the '\r',
/// then parse) reads or refuses with Redis's texts; it finds the same '\r'.
#[inline]
fn bulk_header(buf: &[u8], pos: usize) -> Option<(i64, usize)> {
    let h = buf.get(pos..)?;
    if h.first() != Some(&b'$') {
        return None;
    }
    let mut n: i64 = 0;
    let mut i = 1;
    loop {
        let c = *h.get(i)?;
        if c == b'\r' {
            break;
        }
        let d = c.wrapping_sub(b'0');
        if d > 9 || i > 18 {
            return None;
        }
        n = n * 10 + d as i64;
        i += 1;
    }
    if i == 1 || (h[1] == b'0' && i > 2) {
        return None;
    }
    Some((n, pos + i))
}

impl RequestParser {
    /// True when part of a request is buffered.
    pub fn in_progress(&self) -> bool {
        self.pending.is_some()
    }

    /// The buffer length (from the first byte not consumed) that completes
    /// the large argument being received; 0 when none is.
    pub fn awaited_len(&self) -> usize {
        self.pending.as_ref().map_or(0, |p| p.awaited)
    }

    /// How far an unfinished request is parsed: (bytes taken from the front of
    /// the buffer, the bytes of its arguments complete so far). CLIENT LIST
    /// shows the rest as `qbuf` and those arguments as `argv-mem`, as Redis
    /// (which moves them out of its query buffer as they come).
    pub fn progress(&self) -> (usize, usize) {
        self.pending.as_ref().map_or((0, 0), |p| {
            (p.taken, p.ranges.iter().map(|(s, e)| e - s).sum())
        })
    }

    /// Parses the next complete command at the front of `buf`, if there is one.
    /// `buf` must start with the first byte not yet consumed, and a request left
    /// incomplete must be passed again, with more bytes after it, next time.
    pub fn parse<'a>(
        &'a mut self,
        buf: &'a [u8],
        limits: RequestLimits,
    ) -> Result<Parsed<'a>, ProtocolError> {
        let mut skipped = 0;
        loop {
            let rest = &buf[skipped..];
            let step = if self.pending.is_none() && rest.first().is_some_and(|&b| b != b'*') {
                self.inline(rest)?
            } else if self.pending.is_none() && rest.is_empty() {
                Step::Incomplete
            } else {
                self.multibulk(rest, limits)?
            };
            match step {
                Step::Empty(len) => skipped += len,
                Step::Incomplete => {
                    return Ok(Parsed {
                        args: None,
                        consumed: skipped,
                    })
                }
                Step::Done(len, Source::Buffer(ranges)) => {
                    let args = ranges.iter().map(|&(s, e)| &rest[s..e]).collect();
                    if ranges.capacity() <= 1024 {
                        self.spare_ranges = ranges;
                    }
                    return Ok(Parsed {
                        args: Some(args),
                        consumed: skipped + len,
                    });
                }
                Step::Done(len, Source::Inline) => {
                    let args = self.inline_args.iter().map(|a| a.as_slice()).collect();
                    return Ok(Parsed {
                        args: Some(args),
                        consumed: skipped + len,
                    });
                }
            }
        }
    }

    fn inline(&mut self, buf: &[u8]) -> Result<Step, ProtocolError> {
        let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
            if buf.len() > INLINE_MAX {
                return Err(ProtocolError(
                    "Protocol error: too big inline request".into(),
                ));
            }
            return Ok(Step::Incomplete);
        };
        let mut text = &buf[..nl];
        if text.last() == Some(&b'\r') {
            text = &text[..text.len() - 1];
        }
        let args = split_args(text)
            .ok_or_else(|| ProtocolError("Protocol error: unbalanced quotes in request".into()))?;
        if args.is_empty() {
            return Ok(Step::Empty(nl + 1));
        }
        self.inline_args = args;
        Ok(Step::Done(nl + 1, Source::Inline))
    }

    fn multibulk(&mut self, buf: &[u8], limits: RequestLimits) -> Result<Step, ProtocolError> {
        let mut p = match self.pending.take() {
            Some(p) => p,
            None => {
                let Some(cr) = find_cr(buf, 0) else {
                    if buf.len() > INLINE_MAX {
                        return Err(ProtocolError(
                            "Protocol error: too big mbulk count string".into(),
                        ));
                    }
                    return Ok(Step::Incomplete);
                };
                if cr + 1 >= buf.len() {
                    return Ok(Step::Incomplete);
                }
                let count = parse_i64(&buf[1..cr]);
                let count = match count {
                    Some(n) if n <= i32::MAX as i64 => n,
                    _ => {
                        return Err(ProtocolError(
                            "Protocol error: invalid multibulk length".into(),
                        ))
                    }
                };
                if !limits.authenticated && count > UNAUTH_MAX_ARGS {
                    return Err(ProtocolError(
                        "Protocol error: unauthenticated multibulk length".into(),
                    ));
                }
                if count <= 0 {
                    return Ok(Step::Empty(cr + 2));
                }
                let mut ranges = std::mem::take(&mut self.spare_ranges);
                ranges.clear();
                // Capacity grows with arguments actually received.
                ranges.reserve((count as usize).min(16));
                Pending {
                    remaining: count as usize,
                    pos: cr + 2,
                    ranges,
                    awaited: 0,
                    taken: 0,
                }
            }
        };
        p.awaited = 0;
        while p.remaining > 0 {
            let header = bulk_header(buf, p.pos).filter(|&(_, cr)| cr + 1 < buf.len());
            let (len, cr) = match header {
                Some(found) => found,
                None => {
                    let Some(cr) = find_cr(buf, p.pos) else {
                        if buf.len() - p.pos > INLINE_MAX {
                            return Err(ProtocolError(
                                "Protocol error: too big bulk count string".into(),
                            ));
                        }
                        p.taken = p.pos;
                        self.pending = Some(p);
                        return Ok(Step::Incomplete);
                    };
                    if cr + 1 >= buf.len() {
                        p.taken = p.pos;
                        self.pending = Some(p);
                        return Ok(Step::Incomplete);
                    }
                    if buf[p.pos] != b'$' {
                        return Err(ProtocolError(format!(
                            "Protocol error: expected '$', got '{}'",
                            buf[p.pos] as char
                        )));
                    }
                    match parse_i64(&buf[p.pos + 1..cr]) {
                        Some(n) if n >= 0 => (n, cr),
                        _ => {
                            return Err(ProtocolError("Protocol error: invalid bulk length".into()))
                        }
                    }
                }
            };
            if len > limits.max_bulk_len {
                return Err(ProtocolError("Protocol error: invalid bulk length".into()));
            }
            if !limits.authenticated && len > UNAUTH_MAX_BULK {
                return Err(ProtocolError(
                    "Protocol error: unauthenticated bulk length".into(),
                ));
            }
            let start = cr + 2;
            let end = start + len as usize;
            if buf.len() < end + 2 {
                p.taken = p.pos;
                if len as usize >= BIG_ARG {
                    p.awaited = end + 2;
                    p.taken = start;
                }
                self.pending = Some(p);
                return Ok(Step::Incomplete);
            }
            p.ranges.push((start, end));
            p.pos = end + 2;
            p.remaining -= 1;
        }
        Ok(Step::Done(p.pos, Source::Buffer(p.ranges)))
    }
}

/// Where a parsed command's arguments are.
enum Source {
    /// (start, end) of each argument in the buffer.
    Buffer(Vec<(usize, usize)>),
    /// In `RequestParser::inline_args`.
    Inline,
}

enum Step {
    /// A command of this many bytes.
    Done(usize, Source),
    /// An empty request of this many bytes, to be skipped.
    Empty(usize),
    Incomplete,
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: RequestLimits = RequestLimits {
        max_bulk_len: 512 * 1024 * 1024,
        authenticated: true,
    };

    /// Parses the next command at the front of `buf` and removes what it consumed.
    fn next_owned(
        p: &mut RequestParser,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Vec<Vec<u8>>>, ProtocolError> {
        let (args, consumed) = {
            let parsed = p.parse(buf, LIMITS)?;
            let consumed = parsed.consumed;
            let args: Option<Vec<Vec<u8>>> =
                parsed.args.map(|a| a.iter().map(|b| b.to_vec()).collect());
            (args, consumed)
        };
        buf.drain(..consumed);
        Ok(args)
    }

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut p = RequestParser::default();
        let mut buf = input.to_vec();
        let mut out = vec![];
        while let Some(a) = next_owned(&mut p, &mut buf)? {
            out.push(a);
        }
        Ok(out)
    }

    #[test]
    fn multibulk_pipeline_and_inline() {
        let got = parse_all(b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nECHO \"a b\"\r\n")
            .unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1][1], b"k");
        assert_eq!(got[2][1], b"a b");
    }

    #[test]
    fn byte_by_byte_equals_whole() {
        let input = b"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$5\r\nv\0lue\r\n";
        let mut p = RequestParser::default();
        let mut buf = Vec::new();
        let mut got = None;
        for b in input.iter() {
            buf.push(*b);
            if let Some(a) = next_owned(&mut p, &mut buf).unwrap() {
                got = Some(a);
            }
        }
        let a = got.unwrap();
        assert_eq!(&a[1][..], b"k\r\n");
        assert_eq!(&a[2][..], b"v\0lue");
        assert!(buf.is_empty());
    }

    #[test]
    fn redis_error_texts() {
        let err = |i: &[u8]| parse_all(i).unwrap_err().0;
        assert_eq!(err(b"*abc\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(err(b"*1\r\n$-5\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(err(b"*1\r\nx\r\n"), "Protocol error: expected '$', got 'x'");
        assert_eq!(
            err(b"SET a \"b\r\n"),
            "Protocol error: unbalanced quotes in request"
        );
        assert_eq!(
            err(b"*1\r\n$99999999999\r\n"),
            "Protocol error: invalid bulk length"
        );
        // Lengths are read with Redis's string2ll: "-0" is not a number
        // (found writing the numbers fuzz target's model of string2ll).
        assert_eq!(err(b"*-0\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(err(b"*1\r\n$-0\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(err(b"*+1\r\n"), "Protocol error: invalid multibulk length");
        // Headers the one-pass reader leaves to the general path.
        for bad in [
            &b"*1\r\n$00\r\n\r\n"[..],
            b"*1\r\n$01\r\nx\r\n",
            b"*1\r\n$+1\r\nx\r\n",
            b"*1\r\n$\r\n\r\n",
            b"*1\r\n$1x\r\nx\r\n",
            b"*1\r\n$1234567890123456789\r\n",
            b"*1\r\n$99999999999999999999\r\n",
        ] {
            assert_eq!(err(bad), "Protocol error: invalid bulk length", "{bad:?}");
        }
        assert_eq!(
            err(b"*1\r\n$536870913\r\n"),
            "Protocol error: invalid bulk length"
        );
        let ok = parse_all(b"*3\r\n$0\r\n\r\n$1\r\nx\r\n$10\r\n0123456789\r\n").unwrap();
        assert_eq!(
            ok,
            vec![vec![b"".to_vec(), b"x".to_vec(), b"0123456789".to_vec()]]
        );
    }

    #[test]
    fn huge_header_does_not_allocate_or_complete() {
        let mut p = RequestParser::default();
        let mut buf = b"*1\r\n$536870912\r\nabc".to_vec();
        assert!(next_owned(&mut p, &mut buf).unwrap().is_none());
        assert!(p.in_progress());
        assert!(buf.capacity() < 1024);
        let mut buf = b"*1\r\n$2147483647\r\n".to_vec();
        assert!(
            next_owned(&mut p, &mut buf).is_err(),
            "beyond proto-max-bulk-len"
        );
        let mut buf = b"*2147483647\r\n".to_vec();
        let mut p = RequestParser::default();
        assert!(next_owned(&mut p, &mut buf).unwrap().is_none());
    }

    #[test]
    fn empty_requests_before_a_command_are_consumed_with_it() {
        let input = b"*0\r\n\r\n*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI";
        let mut p = RequestParser::default();
        {
            let parsed = p.parse(input, LIMITS).unwrap();
            assert_eq!(parsed.args.unwrap()[..], [b"PING"]);
            assert_eq!(parsed.consumed, 20);
        }
        let parsed = p.parse(&input[20..], LIMITS).unwrap();
        assert!(parsed.args.is_none());
        assert_eq!(
            parsed.consumed, 0,
            "an incomplete command stays in the buffer"
        );
    }

    #[test]
    fn empty_multibulk_is_skipped() {
        assert_eq!(parse_all(b"*0\r\n*-1\r\n\r\n").unwrap().len(), 0);
    }
}
