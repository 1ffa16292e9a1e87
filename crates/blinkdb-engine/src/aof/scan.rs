//! A buffered forward reader over one log file that hashes what it consumes, so a batch
//! checksum and a blob checksum are computed while streaming, without keeping blobs.

use std::sync::Arc;

use xxhash_rust::xxh3::Xxh3;

use super::storage::{read_full_at, LogFile};

const CHUNK: usize = 256 << 10;
/// Redis's AOF_ANNOTATION_LINE_MAX_LEN: the longest header or `#` line it accepts.
pub const MAX_LINE: usize = 1024;

pub enum Line {
    /// A complete line including its '\n'.
    Full(Vec<u8>),
    /// The file ends before the line does.
    Torn,
    /// No '\n' within MAX_LINE bytes.
    TooLong,
}

pub struct Scanner {
    file: Arc<dyn LogFile>,
    pub len: u64,
    buf: Vec<u8>,
    buf_pos: usize,
    /// File offset of `buf[0]`.
    buf_start: u64,
    pub batch_hash: Xxh3,
}

impl Scanner {
    pub fn new(file: Arc<dyn LogFile>, len: u64) -> Self {
        Scanner {
            file,
            len,
            buf: Vec::new(),
            buf_pos: 0,
            buf_start: 0,
            batch_hash: Xxh3::new(),
        }
    }

    pub fn pos(&self) -> u64 {
        self.buf_start + self.buf_pos as u64
    }

    pub fn at_eof(&self) -> bool {
        self.pos() >= self.len
    }

    /// Makes at least one unread byte available unless at EOF.
    fn fill(&mut self) -> std::io::Result<bool> {
        if self.buf_pos < self.buf.len() {
            return Ok(true);
        }
        let start = self.pos();
        let want = CHUNK.min((self.len - start) as usize);
        if want == 0 {
            return Ok(false);
        }
        self.buf.resize(want, 0);
        let got = read_full_at(&*self.file, &mut self.buf, start)?;
        self.buf.truncate(got);
        self.buf_start = start;
        self.buf_pos = 0;
        Ok(got > 0)
    }

    /// Reads one line; the caller decides whether it belongs to the batch hash.
    pub fn line(&mut self) -> std::io::Result<Line> {
        let mut out = Vec::new();
        loop {
            if !self.fill()? {
                return Ok(Line::Torn);
            }
            let avail = &self.buf[self.buf_pos..];
            let room = MAX_LINE - out.len();
            let scan = &avail[..avail.len().min(room)];
            if let Some(i) = scan.iter().position(|&b| b == b'\n') {
                out.extend_from_slice(&scan[..=i]);
                self.buf_pos += i + 1;
                return Ok(Line::Full(out));
            }
            out.extend_from_slice(scan);
            self.buf_pos += scan.len();
            if out.len() >= MAX_LINE {
                return Ok(Line::TooLong);
            }
        }
    }

    /// An argument wholly buffered as `$<len>\r\n<payload>\r\n` with `len`
    /// below `below`: consumed, hashed into the batch hash in one piece, and
    /// its payload returned, without allocating. None (nothing consumed) in
    /// any other case: the caller reads it piece by piece then, and reports
    /// what is wrong with it. Most of a log's arguments take this path.
    pub fn inline_arg_in_buffer(&mut self, below: u64) -> Option<&[u8]> {
        let avail = &self.buf[self.buf_pos..];
        let scan = &avail[..avail.len().min(MAX_LINE)];
        let nl = scan.iter().position(|&b| b == b'\n')?;
        let len = header_number(&avail[..=nl], b'$').filter(|&n| n < below)?;
        let start = nl + 1;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        if avail.get(end..end.checked_add(2)?)? != b"\r\n" {
            return None;
        }
        self.batch_hash.update(&avail[..end + 2]);
        let at = self.buf_pos;
        self.buf_pos += end + 2;
        Some(&self.buf[at + start..at + end])
    }

    /// Consumes `n` bytes into the batch hash; with `keep` returns them, with `blob`
    /// hashes them into the blob hasher. Returns None if the file ends first.
    pub fn payload(
        &mut self,
        n: u64,
        keep: bool,
        mut blob: Option<&mut Xxh3>,
    ) -> std::io::Result<Option<Vec<u8>>> {
        // The length comes from the file: reserve at most 1 MB up front and grow as
        // bytes actually arrive, so a corrupt header cannot ask for terabytes.
        let mut out = Vec::with_capacity(if keep { n.min(1 << 20) as usize } else { 0 });
        let mut left = n;
        while left > 0 {
            if !self.fill()? {
                return Ok(None);
            }
            let avail = &self.buf[self.buf_pos..];
            let take = avail.len().min(left.min(usize::MAX as u64) as usize);
            let chunk = &avail[..take];
            self.batch_hash.update(chunk);
            if let Some(h) = blob.as_deref_mut() {
                h.update(chunk);
            }
            if keep {
                out.extend_from_slice(chunk);
            }
            self.buf_pos += take;
            left -= take as u64;
        }
        Ok(Some(out))
    }

    /// xxh3-64 of the file's bytes `start..end` (read again from the file).
    pub fn hash_range(&self, start: u64, end: u64) -> std::io::Result<u64> {
        let mut h = Xxh3::new();
        let mut chunk = vec![0u8; 64 << 10];
        let mut at = start;
        while at < end {
            let part = &mut chunk[..(end - at).min(64 << 10) as usize];
            let got = read_full_at(&*self.file, part, at)?;
            if got == 0 {
                break;
            }
            h.update(&part[..got]);
            at += got as u64;
        }
        Ok(h.digest())
    }

    /// Offset where the file's trailing run of zero bytes starts (`len` if none): what a
    /// crash leaves when the size was extended but the data blocks never reached the disk.
    pub fn zero_tail_start(&self) -> std::io::Result<u64> {
        let mut end = self.len;
        let mut chunk = vec![0u8; 64 << 10];
        while end > 0 {
            let start = end.saturating_sub(chunk.len() as u64);
            let part = &mut chunk[..(end - start) as usize];
            let got = read_full_at(&*self.file, part, start)?;
            if let Some(i) = part[..got].iter().rposition(|&b| b != 0) {
                return Ok(start + i as u64 + 1);
            }
            end = start;
        }
        Ok(0)
    }
}

/// The number of a `*<n>` or `$<n>` line (with its line end): at most 19
/// digits, so it fits without overflow.
pub fn header_number(line: &[u8], prefix: u8) -> Option<u64> {
    let body = line.strip_prefix(&[prefix])?.strip_suffix(b"\n")?;
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    if body.is_empty() || body.len() > 19 || !body.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(body.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}
