//! The reply buffer. Every reply is written directly, in RESP2 or RESP3 as
//! the connection chose (HELLO): aggregate headers (`*n`, `%n`, `~n`) so
//! that large arrays stream into the buffer, scalars because a frame
//! encoder cost more than the bytes (~157 instructions for a null).

use blinkdb_engine::BlobSource;
use bytes::BytesMut;

pub struct Out {
    pub buf: BytesMut,
    /// Large values still to be read from their log file when the replies are
    /// sent, each with its position in `buf` (ascending): the value's whole bulk
    /// reply goes there.
    pub files: Vec<(usize, BlobSource)>,
    /// 2 or 3.
    pub proto: u8,
    /// Error replies written so far (INFO errorstats counts them by code).
    pub errors: u64,
    /// `errors` when the last command's accounting ended: errors past it are
    /// the running command's own (failed_calls), not those of commands it ran.
    pub errors_accounted: u64,
    /// Error replies the running command caused on other clients (CLIENT
    /// UNBLOCK ERROR): Redis counts it failed for them too.
    pub foreign_errors: u64,
    /// End of the last Pub/Sub frame (a message or an (un)subscribe
    /// confirmation) in `buf`: CLIENT REPLY OFF and SKIP never drop those.
    pub pushed_to: usize,
    /// The client's hard output limit: past it bulk strings are not added
    /// (the connection closes instead of sending the batch), so a reply of
    /// 10M elements to a client that does not read never takes more than
    /// the limit, as Redis's CLIENT_CLOSE_ASAP stops its buffer.
    pub cap: usize,
}

/// `-<msg>\r\n` with line breaks in `msg` turned into spaces, as Redis does: the
/// error line of `Out::error_bytes`, also for replies built outside an `Out`.
pub fn push_error_line(dst: &mut impl Extend<u8>, msg: &[u8]) {
    dst.extend([b'-']);
    dst.extend(
        msg.iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
    );
    dst.extend(*b"\r\n");
}

impl Out {
    pub fn new(proto: u8) -> Self {
        Out {
            buf: BytesMut::new(),
            files: Vec::new(),
            proto,
            errors: 0,
            errors_accounted: 0,
            foreign_errors: 0,
            pushed_to: 0,
            cap: usize::MAX,
        }
    }

    /// Nothing to send.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty() && self.files.is_empty()
    }

    /// Bytes to send, a large value counted by its length.
    pub fn len(&self) -> usize {
        self.buf.len()
            + self
                .files
                .iter()
                .map(|(_, f)| f.len() as usize)
                .sum::<usize>()
    }

    /// Forgets what was sent.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.files.clear();
        self.pushed_to = 0;
    }

    /// Past the client's hard output limit: a command building a long reply
    /// stops here (the connection closes before anything is sent), so the
    /// reply never takes more memory or time than the limit allows.
    pub fn full(&self) -> bool {
        self.buf.len() >= self.cap
    }

    pub fn resp3(&self) -> bool {
        self.proto == 3
    }

    pub fn ok(&mut self) {
        self.simple("OK");
    }

    /// `+s\r\n`, the same line in RESP2 and RESP3 (written directly, as `int`).
    pub fn simple(&mut self, s: &str) {
        self.buf.reserve(s.len() + 3);
        self.buf.extend_from_slice(b"+");
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An error reply. `msg` carries its code (`ERR ...`, `WRONGTYPE ...`).
    pub fn error(&mut self, msg: &str) {
        self.error_bytes(msg.as_bytes());
    }

    /// An error line made of raw bytes (Redis echoes arguments verbatim in
    /// some errors); line breaks become spaces, as Redis does. Written
    /// directly: the encoder's error frame only takes UTF-8 text, and the
    /// line is the same in RESP2 and RESP3.
    pub fn error_bytes(&mut self, msg: &[u8]) {
        super::errorstats::count_error(msg);
        self.error_counted_before(msg);
    }

    /// An error reply already counted in errorstats where it arose (a
    /// command a script ran, whose error the script raised or returned):
    /// it fails the command that replies, but is not counted again, as
    /// Redis's ERR_REPLY_FLAG_NO_STATS_UPDATE.
    pub fn error_counted_before(&mut self, msg: &[u8]) {
        self.errors += 1;
        self.buf.reserve(msg.len() + 3);
        push_error_line(&mut self.buf, msg);
    }

    /// `:n\r\n`, the same line in RESP2 and RESP3. Written directly: through the
    /// encoder it cost ~12% of the server's CPU under BF.MEXISTS of 128 items.
    pub fn int(&mut self, n: i64) {
        // One copy of the whole line: three appends to the BytesMut cost
        // more than the digits (CF.INSERT's 100 replies of :0/:1 were 15% of
        // its instructions).
        if (0..10).contains(&n) {
            self.buf
                .extend_from_slice(&[b':', b'0' + n as u8, b'\r', b'\n']);
            return;
        }
        let mut num = itoa::Buffer::new();
        let digits = num.format(n).as_bytes();
        let mut line = [0u8; 23];
        line[0] = b':';
        line[1..1 + digits.len()].copy_from_slice(digits);
        line[1 + digits.len()..3 + digits.len()].copy_from_slice(b"\r\n");
        self.buf.extend_from_slice(&line[..3 + digits.len()]);
    }

    /// A boolean: `#t`/`#f` in RESP3, integer 1/0 in RESP2.
    pub fn boolean(&mut self, b: bool) {
        let line: &[u8; 4] = match (self.resp3(), b) {
            (true, true) => b"#t\r\n",
            (true, false) => b"#f\r\n",
            (false, true) => b":1\r\n",
            (false, false) => b":0\r\n",
        };
        self.buf.extend_from_slice(line);
    }

    /// `$len\r\nbytes\r\n`, the same in RESP2 and RESP3 (written directly:
    /// the encoder zero-fills the room it writes into, a quarter of the
    /// cost of a script's reply).
    pub fn bulk(&mut self, b: &[u8]) {
        if self.full() {
            return;
        }
        let mut num = itoa::Buffer::new();
        let digits = num.format(b.len()).as_bytes();
        self.buf.reserve(digits.len() + b.len() + 5);
        self.buf.extend_from_slice(b"$");
        self.buf.extend_from_slice(digits);
        self.buf.extend_from_slice(b"\r\n");
        self.buf.extend_from_slice(b);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// The bulk reply of a large value, read from its log file when the replies
    /// are sent (`connection.rs`), not now: a read waiting for the disk then does
    /// not hold up the connection thread. Same bytes as `bulk` in RESP2 and RESP3,
    /// or the error reply if the read fails.
    pub fn bulk_file(&mut self, src: BlobSource) {
        self.files.push((self.buf.len(), src));
    }

    pub fn bulk_opt(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => self.bulk(b),
            None => self.null(),
        }
    }

    /// A double as Redis's addReplyDouble sends it: `%.17g` (`inf`, `-inf`)
    /// in a bulk string in RESP2, a `,` double in RESP3.
    pub fn double(&mut self, x: f64) {
        let mut buf = [0u8; 32];
        let n = blinkdb_engine::write_double(x, &mut buf);
        if self.resp3() {
            self.buf.reserve(n + 3);
            self.buf.extend_from_slice(b",");
            self.buf.extend_from_slice(&buf[..n]);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(&buf[..n]);
        }
    }

    /// A missing value: `$-1` in RESP2, `_` in RESP3.
    /// A missing value: `$-1` in RESP2, `_` in RESP3.
    pub fn null(&mut self) {
        if self.resp3() {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// A missing aggregate: `*-1` in RESP2, `_` in RESP3.
    pub fn null_array(&mut self) {
        if self.resp3() {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"*-1\r\n");
        }
    }

    pub fn array(&mut self, n: usize) {
        self.header(b'*', n);
    }

    /// A map of `n` pairs: `%n` in RESP3, a flat array of 2n in RESP2.
    pub fn map(&mut self, n: usize) {
        if self.resp3() {
            self.header(b'%', n);
        } else {
            self.header(b'*', n * 2);
        }
    }

    /// A set: `~n` in RESP3, an array in RESP2.
    pub fn set(&mut self, n: usize) {
        self.header(if self.resp3() { b'~' } else { b'*' }, n);
    }

    /// A big number: `(digits` in RESP3, a bulk string in RESP2.
    pub fn bignum(&mut self, digits: &[u8]) {
        if self.resp3() {
            self.buf.extend_from_slice(b"(");
            self.buf.extend_from_slice(digits);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(digits);
        }
    }

    /// RESP3 attributes of `n` pairs, which precede the reply they describe;
    /// nothing in RESP2 (the reply alone is sent).
    pub fn attributes(&mut self, n: usize) {
        if self.resp3() {
            self.header(b'|', n);
        }
    }

    /// The header of an out-of-band push of `n` elements (RESP3 only: a
    /// RESP2 client has no push type, and the caller refuses it).
    pub fn push(&mut self, n: usize) {
        debug_assert!(self.resp3());
        self.header(b'>', n);
    }

    fn header(&mut self, kind: u8, n: usize) {
        let mut num = itoa::Buffer::new();
        self.buf.extend_from_slice(&[kind]);
        self.buf.extend_from_slice(num.format(n).as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// Text meant for humans (INFO, CLIENT LIST): a verbatim string in RESP3.
    pub fn verbatim(&mut self, text: &str) {
        self.verbatim_as(b"txt", text.as_bytes());
    }

    /// A verbatim string of `format` (its first 3 bytes, padded with
    /// spaces, as Redis's addReplyVerbatim) in RESP3, a bulk string in RESP2.
    pub fn verbatim_as(&mut self, format: &[u8], text: &[u8]) {
        if !self.resp3() {
            return self.bulk(text);
        }
        let mut f = [b' '; 3];
        for (d, s) in f.iter_mut().zip(format) {
            *d = *s;
        }
        let mut num = itoa::Buffer::new();
        self.buf.extend_from_slice(b"=");
        self.buf
            .extend_from_slice(num.format(text.len() + 4).as_bytes());
        self.buf.extend_from_slice(b"\r\n");
        self.buf.extend_from_slice(&f);
        self.buf.extend_from_slice(b":");
        self.buf.extend_from_slice(text);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A HELP reply: one status line per entry, as Redis sends them.
    pub fn help(&mut self, lines: &[&str]) {
        self.array(lines.len());
        for l in lines {
            self.simple(l);
        }
    }

    pub fn strs<'a>(&mut self, items: impl ExactSizeIterator<Item = &'a [u8]>) {
        self.array(items.len());
        for i in items {
            self.bulk(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Out;

    #[test]
    fn bulk_and_simple_lines_in_both_protocols() {
        for proto in [2, 3] {
            let mut out = Out::new(proto);
            out.bulk(b"abc");
            out.bulk(b"");
            out.bulk(&[b'x'; 12]);
            out.simple("OK");
            assert_eq!(
                &out.buf[..],
                b"$3\r\nabc\r\n$0\r\n\r\n$12\r\nxxxxxxxxxxxx\r\n+OK\r\n"
            );
        }
    }

    #[test]
    fn integers_of_every_width() {
        let mut out = Out::new(2);
        let mut want = Vec::new();
        for n in [0, 1, 9, 10, -1, -10, 12345, i64::MAX, i64::MIN] {
            out.int(n);
            want.extend_from_slice(format!(":{n}\r\n").as_bytes());
        }
        assert_eq!(&out.buf[..], &want[..]);
    }

    #[test]
    fn bulk_stops_at_the_output_limit() {
        let mut out = Out::new(2);
        out.cap = 4;
        out.bulk(b"abcdef");
        out.bulk(b"gh");
        assert_eq!(&out.buf[..], b"$6\r\nabcdef\r\n");
    }
}
