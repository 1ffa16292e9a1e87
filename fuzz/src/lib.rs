//! What the fuzz targets share: an input cursor, an allocation meter, a scratch
//! directory, a RESP encoder and an in-process server (no sockets).

pub mod alloc_meter;
pub mod server;

use std::path::PathBuf;

/// Reads structured choices from the fuzzer's bytes; past the end every read
/// yields zeros/empty, so any input decodes to something.
pub struct Cursor<'a> {
    data: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Cursor { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        for x in &mut b {
            *x = self.u8();
        }
        u64::from_le_bytes(b)
    }

    /// Up to `n` bytes.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }
}

/// Splits `data` at every `sep` (the separator is dropped).
pub fn split_parts<'a>(data: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while let Some(i) = rest.windows(sep.len()).position(|w| w == sep) {
        parts.push(&rest[..i]);
        rest = &rest[i + sep.len()..];
    }
    parts.push(rest);
    parts
}

/// A fresh directory for one input, in RAM when /dev/shm exists (libFuzzer runs
/// thousands of inputs a second; a disk directory would wear the disk).
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = PathBuf::from("/dev/shm");
    let base = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    tempfile::Builder::new()
        .prefix("blinkdb-fuzz-")
        .tempdir_in(base)
        .expect("scratch directory")
}

/// A RESP multibulk request.
pub fn encode_request(args: &[Vec<u8>], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Counts the complete top-level replies in `buf`, which must be nothing but
/// well-formed RESP2/RESP3 replies (panics otherwise: a client would lose its
/// place in the stream). Strings may hold any bytes, as Redis's do.
pub fn count_replies(buf: &[u8]) -> usize {
    let (n, at) = count_complete_replies(buf);
    assert!(
        at == buf.len(),
        "truncated reply at byte {at}: {:?}",
        show(&buf[at..])
    );
    n
}

/// Counts the complete top-level replies at the start of `buf`, a stream
/// still being read: returns how many and the bytes they take; what follows
/// them is the start of a reply not all read yet. Panics on a malformed reply
/// (one that no more bytes could make well-formed).
pub fn count_complete_replies(buf: &[u8]) -> (usize, usize) {
    let mut at = 0;
    let mut n = 0;
    while at < buf.len() {
        match reply_end(buf, at) {
            Ok(Some(end)) => at = end,
            Ok(None) => break,
            Err(why) => panic!(
                "malformed reply at byte {at} ({why}): {:?}",
                show(&buf[at..])
            ),
        }
        n += 1;
    }
    (n, at)
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(300)]).into_owned()
}

/// The end of the reply that starts at `at` (elements of aggregates included),
/// or None if `buf` ends before it does.
fn reply_end(buf: &[u8], mut at: usize) -> Result<Option<usize>, String> {
    // Elements still owed by the open aggregates.
    let mut owed: Vec<i64> = vec![1];
    while let Some(left) = owed.last_mut() {
        if *left == 0 {
            owed.pop();
            continue;
        }
        *left -= 1;
        let Some(line_end) = buf[at..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|i| at + i)
        else {
            return Ok(None); // the line is not all here yet
        };
        if line_end == at {
            return Err("empty line".into());
        }
        let kind = buf[at];
        let body = &buf[at + 1..line_end];
        let number = || -> Result<i64, String> {
            std::str::from_utf8(body)
                .ok()
                .and_then(|t| t.parse().ok())
                .ok_or_else(|| format!("bad length {:?}", show(body)))
        };
        at = line_end + 2;
        match kind {
            b'+' | b'-' | b'#' | b'_' | b',' | b'(' => {}
            b':' => {
                number()?;
            }
            b'$' | b'!' | b'=' => {
                let len = number()?;
                if len >= 0 {
                    let end = at + len as usize;
                    if buf.len() < end + 2 {
                        return Ok(None);
                    }
                    if &buf[end..end + 2] != b"\r\n" {
                        return Err("bulk without its CRLF".into());
                    }
                    at = end + 2;
                } else if len != -1 || kind != b'$' {
                    return Err("negative bulk length".into());
                }
            }
            b'*' | b'~' | b'>' => {
                let len = number()?;
                if len >= 0 {
                    owed.push(len);
                } else if len != -1 || kind != b'*' {
                    return Err("negative aggregate length".into());
                }
            }
            b'%' | b'|' => owed.push(2 * number()?),
            other => return Err(format!("unknown type byte {other:?}")),
        }
    }
    Ok(Some(at))
}
