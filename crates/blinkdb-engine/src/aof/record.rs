//! Record and batch encoding inside base and incr files.
//!
//! Byte layout of a file body (RESP2, exactly what Redis writes and reads):
//!
//! ```text
//! *<argc>\r\n                       one command: an array of bulk strings
//!   $<len>\r\n<len bytes>\r\n       ... argc times; a BlobRef points at <len bytes>
//! #BK:<len>:<xxh3 16 hex>\r\n       batch annotation: closes one group write
//! ```
//!
//! A batch is every byte since the previous `#BK` line (or the file start) up to, not
//! including, its own `#BK` line; `<len>` is that byte count in decimal and the hex is
//! xxh3-64 of those bytes. Other `#` lines (Redis's `#TS:`) are part of the batch bytes.
//! The annotation is at most 41 bytes; Redis's loader and redis-check-aof skip `#` lines.

use crate::checksum::xxh3_64_large;

use super::types::{BlobRef, FileId};

/// Prefix of BlinkDB's batch checksum annotation.
pub const BATCH_TAG: &[u8] = b"#BK:";

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, n: u64) {
    // Most lengths in a record are below 100 (a command's items): no loop.
    if n < 10 {
        out.push(b'0' + n as u8);
        return;
    }
    if n < 100 {
        out.extend_from_slice(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
        return;
    }
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Encodes one command at the end of `out`, whose first byte lies at file offset `base`.
/// Returns refs to the payloads of arguments at least `blob_threshold` bytes long.
pub fn encode_command(
    out: &mut Vec<u8>,
    args: &[&[u8]],
    file: FileId,
    base: u64,
    blob_threshold: usize,
) -> Vec<BlobRef> {
    let mut blobs = Vec::new();
    // Room for the whole record at once (a 100-item command grew it several times).
    out.reserve(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.push(b'*');
    push_decimal(out, args.len() as u64);
    out.extend_from_slice(b"\r\n");
    for arg in args {
        out.push(b'$');
        push_decimal(out, arg.len() as u64);
        out.extend_from_slice(b"\r\n");
        if arg.len() >= blob_threshold {
            blobs.push(BlobRef {
                file,
                offset: base + out.len() as u64,
                len: arg.len() as u64,
                checksum: xxh3_64_large(arg),
            });
        }
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    blobs
}

/// Appends the `#BK` annotation closing the batch `out[batch_start..]`.
pub fn seal_batch(out: &mut Vec<u8>, batch_start: usize) {
    let batch = &out[batch_start..];
    let (len, sum) = (batch.len() as u64, xxh3_64_large(batch));
    out.extend_from_slice(BATCH_TAG);
    push_decimal(out, len);
    out.push(b':');
    out.extend_from_slice(format!("{sum:016x}").as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Parses a `#BK:<len>:<hex>` line (with or without its line ending).
pub fn parse_batch_annotation(line: &[u8]) -> Option<(u64, u64)> {
    let body = line.strip_prefix(BATCH_TAG)?;
    let body = body.strip_suffix(b"\n").unwrap_or(body);
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    let text = std::str::from_utf8(body).ok()?;
    let (len, sum) = text.split_once(':')?;
    Some((len.parse().ok()?, u64::from_str_radix(sum, 16).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_64;

    #[test]
    fn decimals_of_every_width() {
        for n in [
            0u64,
            7,
            9,
            10,
            42,
            99,
            100,
            101,
            999,
            1000,
            123_456,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }

    #[test]
    fn encodes_resp_and_points_blobs_at_payload() {
        let mut out = b"xx".to_vec();
        let big = vec![7u8; 10];
        let refs = encode_command(&mut out, &[b"SET", b"k", &big], FileId::incr(3), 100, 10);
        assert_eq!(
            &out[2..],
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\r\n"
        );
        assert_eq!(refs.len(), 1);
        let start = (refs[0].offset - 100) as usize;
        assert_eq!(&out[start..start + 10], &big[..]);
        assert_eq!(refs[0].checksum, xxh3_64(&big));
    }

    #[test]
    fn annotation_round_trips_and_is_short() {
        let mut out = b"*1\r\n$4\r\nPING\r\n".to_vec();
        seal_batch(&mut out, 0);
        let line = &out[14..];
        assert!(line.len() < 128 && line.ends_with(b"\r\n"));
        assert_eq!(
            parse_batch_annotation(line),
            Some((14, xxh3_64(&out[..14])))
        );
        assert_eq!(parse_batch_annotation(b"#TS:123\r\n"), None);
    }
}
