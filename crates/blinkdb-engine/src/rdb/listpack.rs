//! Redis's listpack and intset blobs, as RDB carries them.
//!
//! ```text
//! listpack: [total bytes u32 LE][count u16 LE (65535: unknown)] entry... [0xFF]
//!   entry:  [encoding + data][backlen: size of encoding + data, 1-5 bytes]
//!   0xxxxxxx            7-bit unsigned int
//!   10LLLLLL data       string, 6-bit length
//!   110xxxxx xxxxxxxx   13-bit signed int
//!   1110LLLL LLLLLLLL   string, 12-bit length
//!   11110000 L32 data   string, 32-bit LE length
//!   F1/F2/F3/F4 + 2/3/4/8 bytes LE   16/24/32/64-bit signed int
//! intset:   [width u32 LE: 2, 4 or 8][count u32 LE][ints, LE, ascending]
//! ```

use super::RdbError;

const HDR: usize = 6;
const EOF: u8 = 0xFF;

/// A decoded listpack or ziplist entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    Str(&'a [u8]),
    Int(i64),
}

/// An entry's bytes without an allocation: a string's are the blob's, an
/// integer's are printed into the value itself.
pub enum ItemBytes<'a> {
    Str(&'a [u8]),
    /// The decimal digits (at most 20: `-9223372036854775808`) and their count.
    Int([u8; 20], u8),
}

impl std::ops::Deref for ItemBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ItemBytes::Str(s) => s,
            ItemBytes::Int(digits, n) => &digits[..*n as usize],
        }
    }
}

impl<'a> Item<'a> {
    /// The entry as its bytes, borrowed or printed in place.
    pub fn bytes(self) -> ItemBytes<'a> {
        match self {
            Item::Str(s) => ItemBytes::Str(s),
            Item::Int(i) => {
                let mut buf = itoa::Buffer::new();
                let text = buf.format(i).as_bytes();
                let mut digits = [0u8; 20];
                digits[..text.len()].copy_from_slice(text);
                ItemBytes::Int(digits, text.len() as u8)
            }
        }
    }

    pub fn to_bytes(self) -> Vec<u8> {
        match self {
            Item::Str(s) => s.to_vec(),
            Item::Int(i) => itoa::Buffer::new().format(i).as_bytes().to_vec(),
        }
    }

    /// A sorted-set score stored in the entry (an integer, or text as
    /// `%.17g` and `inf` print it). NaN is refused.
    pub fn score(self) -> Result<f64, RdbError> {
        let v = match self {
            Item::Int(i) => i as f64,
            Item::Str(s) => std::str::from_utf8(s)
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .ok_or(RdbError::Corrupt("invalid score"))?,
        };
        if v.is_nan() {
            return Err(RdbError::Corrupt("NaN score"));
        }
        Ok(v)
    }
}

/// lpStringToInt64: a decimal without sign-only, leading zeros, spaces or
/// overflow, at most 20 characters.
pub fn as_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !(b'1'..=b'9').contains(&digits[0]) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

fn backlen_len(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Bytes an integer entry takes in a listpack, its back length included.
pub fn int_entry_len(v: i64) -> usize {
    let l = if (0..=127).contains(&v) {
        1
    } else if (-4096..=4095).contains(&v) {
        2
    } else if (-32768..=32767).contains(&v) {
        3
    } else if (-8388608..=8388607).contains(&v) {
        4
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        5
    } else {
        9
    };
    l + backlen_len(l)
}

/// Bytes `s` takes in a listpack as lpAppend stores it (an integer when it
/// is one), its back length included.
pub fn entry_len(s: &[u8]) -> usize {
    if let Some(v) = as_int(s) {
        return int_entry_len(v);
    }
    let l = s.len()
        + match s.len() {
            0..=63 => 1,
            64..=4095 => 2,
            _ => 5,
        };
    l + backlen_len(l)
}

fn push_int(out: &mut Vec<u8>, v: i64) {
    if (0..=127).contains(&v) {
        out.push(v as u8);
    } else if (-4096..=4095).contains(&v) {
        let u = (v as u64) & 0x1FFF;
        out.push(0xC0 | (u >> 8) as u8);
        out.push(u as u8);
    } else if (-32768..=32767).contains(&v) {
        out.push(0xF1);
        out.extend_from_slice(&(v as i16).to_le_bytes());
    } else if (-8388608..=8388607).contains(&v) {
        out.push(0xF2);
        out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        out.push(0xF3);
        out.extend_from_slice(&(v as i32).to_le_bytes());
    } else {
        out.push(0xF4);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn push_backlen(out: &mut Vec<u8>, l: usize) {
    let l = l as u64;
    let n = match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    };
    for i in (0..n).rev() {
        let b = ((l >> (7 * i)) & 127) as u8;
        // The most significant byte comes first, without the continuation bit.
        out.push(if i == n - 1 { b } else { b | 128 });
    }
}

/// Builds a listpack as Redis's lpAppend does: integers where the text is
/// one (lpStringToInt64), strings otherwise.
#[derive(Default)]
pub struct ListpackWriter {
    buf: Vec<u8>,
    count: usize,
}

impl ListpackWriter {
    pub fn new() -> Self {
        ListpackWriter {
            buf: vec![0; HDR],
            count: 0,
        }
    }

    pub fn push(&mut self, s: &[u8]) {
        match as_int(s) {
            Some(v) => self.push_int(v),
            None => {
                let start = self.buf.len();
                let len = s.len();
                if len < 64 {
                    self.buf.push(0x80 | len as u8);
                } else if len < 4096 {
                    self.buf.push(0xE0 | (len >> 8) as u8);
                    self.buf.push(len as u8);
                } else {
                    self.buf.push(0xF0);
                    self.buf.extend_from_slice(&(len as u32).to_le_bytes());
                }
                self.buf.extend_from_slice(s);
                let size = self.buf.len() - start;
                push_backlen(&mut self.buf, size);
                self.count += 1;
            }
        }
    }

    pub fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        push_int(&mut self.buf, v);
        let size = self.buf.len() - start;
        push_backlen(&mut self.buf, size);
        self.count += 1;
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// The listpack's size so far, header and terminator included.
    pub fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(EOF);
        let total = self.buf.len() as u32;
        self.buf[0..4].copy_from_slice(&total.to_le_bytes());
        let n = if self.count < 65535 {
            self.count as u16
        } else {
            65535
        };
        self.buf[4..6].copy_from_slice(&n.to_le_bytes());
        self.buf
    }
}

fn need(b: &[u8], at: usize, n: usize) -> Result<&[u8], RdbError> {
    at.checked_add(n)
        .and_then(|end| b.get(at..end))
        .ok_or(RdbError::Corrupt("listpack entry past its end"))
}

fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

/// Every entry of a listpack, after checking its header, each entry's
/// back length and its terminator.
pub fn decode(b: &[u8]) -> Result<Vec<Item<'_>>, RdbError> {
    if b.len() < HDR + 1 {
        return Err(RdbError::Corrupt("listpack shorter than its header"));
    }
    let total = u32::from_le_bytes(b[0..4].try_into().expect("4 bytes")) as usize;
    let declared = u16::from_le_bytes([b[4], b[5]]) as usize;
    if total != b.len() || b[b.len() - 1] != EOF {
        return Err(RdbError::Corrupt("listpack length or terminator wrong"));
    }
    let end = b.len() - 1;
    // The header's count (65535: unknown), held to what the bytes can hold.
    let mut items = Vec::with_capacity(declared.min(end - HDR));
    let mut at = HDR;
    while at < end {
        let start = at;
        let e = b[at];
        let item = if e & 0x80 == 0 {
            at += 1;
            Item::Int(e as i64)
        } else if e & 0xC0 == 0x80 {
            let len = (e & 0x3F) as usize;
            let s = need(b, at + 1, len)?;
            at += 1 + len;
            Item::Str(s)
        } else if e & 0xE0 == 0xC0 {
            let lo = need(b, at + 1, 1)?[0];
            at += 2;
            Item::Int(sign_extend(((e as u64 & 0x1F) << 8) | lo as u64, 13))
        } else if e & 0xF0 == 0xE0 {
            let lo = need(b, at + 1, 1)?[0] as usize;
            let len = ((e as usize & 0x0F) << 8) | lo;
            let s = need(b, at + 2, len)?;
            at += 2 + len;
            Item::Str(s)
        } else {
            let (width, bits) = match e {
                0xF0 => {
                    let len = u32::from_le_bytes(need(b, at + 1, 4)?.try_into().expect("4"));
                    let s = need(b, at + 5, len as usize)?;
                    at += 5 + len as usize;
                    check_backlen(b, start, at, end)?;
                    at = skip_backlen(start, at);
                    items.push(Item::Str(s));
                    continue;
                }
                0xF1 => (2, 16),
                0xF2 => (3, 24),
                0xF3 => (4, 32),
                0xF4 => (8, 64),
                _ => return Err(RdbError::Corrupt("invalid listpack encoding")),
            };
            let raw = need(b, at + 1, width)?;
            let mut v = 0u64;
            for (i, byte) in raw.iter().enumerate() {
                v |= (*byte as u64) << (8 * i);
            }
            at += 1 + width;
            Item::Int(sign_extend(v, bits))
        };
        check_backlen(b, start, at, end)?;
        at = skip_backlen(start, at);
        items.push(item);
    }
    if at != end {
        return Err(RdbError::Corrupt("listpack entry past its end"));
    }
    if declared != 65535 && declared != items.len() {
        return Err(RdbError::Corrupt("listpack count wrong"));
    }
    Ok(items)
}

fn skip_backlen(start: usize, at: usize) -> usize {
    at + backlen_len(at - start)
}

/// The back length after an entry must encode the entry's size.
fn check_backlen(b: &[u8], start: usize, at: usize, end: usize) -> Result<(), RdbError> {
    let size = at - start;
    let mut expect = Vec::with_capacity(5);
    push_backlen(&mut expect, size);
    match at.checked_add(expect.len()) {
        Some(stop) if stop <= end && b[at..stop] == expect[..] => Ok(()),
        _ => Err(RdbError::Corrupt("listpack back length wrong")),
    }
}

/// An intset blob of `ints` (ascending), in the narrowest width that holds
/// them all, as Redis's intset keeps it.
pub fn intset(ints: &[i64]) -> Vec<u8> {
    let width = ints
        .iter()
        .map(|&v| {
            if i16::try_from(v).is_ok() {
                2
            } else if i32::try_from(v).is_ok() {
                4
            } else {
                8
            }
        })
        .max()
        .unwrap_or(2);
    let mut out = Vec::with_capacity(8 + width * ints.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(ints.len() as u32).to_le_bytes());
    for &v in ints {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

/// The integers of an intset blob; they must be strictly ascending.
pub fn decode_intset(b: &[u8]) -> Result<Vec<i64>, RdbError> {
    if b.len() < 8 {
        return Err(RdbError::Corrupt("intset shorter than its header"));
    }
    let width = u32::from_le_bytes(b[0..4].try_into().expect("4")) as usize;
    let count = u32::from_le_bytes(b[4..8].try_into().expect("4")) as usize;
    if !matches!(width, 2 | 4 | 8)
        || (b.len() - 8) / width != count
        || !(b.len() - 8).is_multiple_of(width)
    {
        return Err(RdbError::Corrupt("intset length wrong"));
    }
    let mut out = Vec::with_capacity(count);
    for chunk in b[8..].chunks_exact(width) {
        let mut v = 0u64;
        for (i, byte) in chunk.iter().enumerate() {
            v |= (*byte as u64) << (8 * i);
        }
        let v = sign_extend(v, 8 * width as u32);
        if out.last().is_some_and(|&last| last >= v) {
            return Err(RdbError::Corrupt("intset not ascending"));
        }
        out.push(v);
    }
    if count == 0 {
        return Err(RdbError::EmptyKey);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_encoding() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 100];
        let items: Vec<&[u8]> = vec![
            b"7",
            b"-1",
            b"4095",
            b"-4096",
            b"30000",
            b"-8000000",
            b"2000000000",
            b"-9223372036854775808",
            b"abc",
            &mid,
            &long,
            b"",
            b"007",
        ];
        let mut w = ListpackWriter::new();
        for i in &items {
            w.push(i);
        }
        let lp = w.finish();
        let back: Vec<Vec<u8>> = decode(&lp)
            .unwrap()
            .into_iter()
            .map(|i| i.to_bytes())
            .collect();
        assert_eq!(back, items.iter().map(|i| i.to_vec()).collect::<Vec<_>>());
        let mut bad = lp.clone();
        bad[7] ^= 0x40;
        assert!(decode(&bad).is_err());
    }

    #[test]
    fn redis_bytes() {
        // HSET h a 1 in redis-server 7.0: the listpack of DUMP's payload.
        let mut w = ListpackWriter::new();
        w.push(b"a");
        w.push(b"1");
        assert_eq!(
            w.finish(),
            b"\x0c\x00\x00\x00\x02\x00\x81a\x02\x01\x01\xff".to_vec()
        );
    }

    #[test]
    fn backlen_is_big_endian_ish() {
        let mut v = Vec::new();
        push_backlen(&mut v, 200);
        assert_eq!(v, vec![200 >> 7, (200 & 127) | 128]);
    }

    #[test]
    fn intsets() {
        let b = intset(&[-5, 3, 70000]);
        assert_eq!(&b[..8], &[4, 0, 0, 0, 3, 0, 0, 0]);
        assert_eq!(decode_intset(&b).unwrap(), vec![-5, 3, 70000]);
        assert!(decode_intset(&intset(&[3, 1])).is_err());
    }
}
