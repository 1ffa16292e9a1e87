//! The compact encodings of files older than Redis 7, read only.
//!
//! ```text
//! ziplist: [total bytes u32 LE][tail offset u32 LE][count u16 LE (65535: unknown)]
//!          entry... [0xFF]
//!   entry: [prevlen: 1 byte < 254, or 0xFE + u32 LE][encoding][data]
//!   00LLLLLL | 01LLLLLL LLLLLLLL | 10000000 L32(BE)   string of that length
//!   C0 i16 | D0 i32 | E0 i64 | F0 i24 | FE i8 (LE)    integers
//!   F1..FD                                            immediate 0..12
//! zipmap:  [count u8] ( [len][key] [len][free u8][value][free bytes] )... [0xFF]
//!   len:   1 byte < 254, or 0xFE + u32 LE
//! ```

use super::listpack::Item;
use super::RdbError;

const ERR: RdbError = RdbError::Corrupt("invalid ziplist");

fn take(b: &[u8], at: usize, n: usize) -> Result<&[u8], RdbError> {
    at.checked_add(n).and_then(|end| b.get(at..end)).ok_or(ERR)
}

fn int_le(raw: &[u8]) -> i64 {
    let mut v = 0u64;
    for (i, byte) in raw.iter().enumerate() {
        v |= (*byte as u64) << (8 * i);
    }
    let shift = 64 - 8 * raw.len() as u32;
    ((v << shift) as i64) >> shift
}

/// Every entry of a ziplist, after checking its header, each entry's
/// previous-length field and its terminator.
pub fn decode(b: &[u8]) -> Result<Vec<Item<'_>>, RdbError> {
    if b.len() < 11 {
        return Err(ERR);
    }
    let total = u32::from_le_bytes(b[0..4].try_into().expect("4")) as usize;
    let tail = u32::from_le_bytes(b[4..8].try_into().expect("4")) as usize;
    let declared = u16::from_le_bytes([b[8], b[9]]) as usize;
    if total != b.len() || b[b.len() - 1] != 0xFF {
        return Err(ERR);
    }
    let end = b.len() - 1;
    let mut items = Vec::new();
    let (mut at, mut prev, mut last) = (10usize, 0usize, 10usize);
    while at < end {
        let start = at;
        last = start;
        let p = b[at];
        let prevlen = match p {
            0..=253 => {
                at += 1;
                p as usize
            }
            254 => {
                let raw = take(b, at + 1, 4)?;
                at += 5;
                u32::from_le_bytes(raw.try_into().expect("4")) as usize
            }
            _ => return Err(ERR),
        };
        if prevlen != prev {
            return Err(ERR);
        }
        let e = *b.get(at).ok_or(ERR)?;
        let item = match e >> 6 {
            0 => {
                let len = (e & 0x3F) as usize;
                at += 1;
                let s = take(b, at, len)?;
                at += len;
                Item::Str(s)
            }
            1 => {
                let lo = *b.get(at + 1).ok_or(ERR)? as usize;
                let len = ((e as usize & 0x3F) << 8) | lo;
                at += 2;
                let s = take(b, at, len)?;
                at += len;
                Item::Str(s)
            }
            2 => {
                if e != 0x80 {
                    return Err(ERR);
                }
                let len = u32::from_be_bytes(take(b, at + 1, 4)?.try_into().expect("4")) as usize;
                at += 5;
                let s = take(b, at, len)?;
                at += len;
                Item::Str(s)
            }
            _ => {
                let width = match e {
                    0xC0 => 2,
                    0xD0 => 4,
                    0xE0 => 8,
                    0xF0 => 3,
                    0xFE => 1,
                    0xF1..=0xFD => 0,
                    _ => return Err(ERR),
                };
                at += 1;
                let v = if width == 0 {
                    (e & 0x0F) as i64 - 1
                } else {
                    int_le(take(b, at, width)?)
                };
                at += width;
                Item::Int(v)
            }
        };
        if at > end {
            return Err(ERR);
        }
        prev = at - start;
        items.push(item);
    }
    // The tail offset must name the last entry, as Redis's integrity check requires.
    if tail != last || (declared != 65535 && declared != items.len()) {
        return Err(ERR);
    }
    Ok(items)
}

/// A field and its value.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// A zipmap's pairs in order.
pub fn decode_zipmap(b: &[u8]) -> Result<Vec<Pair<'_>>, RdbError> {
    const ERR: RdbError = RdbError::Corrupt("invalid zipmap");
    let mut at = 1usize;
    let len = |at: &mut usize| -> Result<Option<usize>, RdbError> {
        match *b.get(*at).ok_or(ERR)? {
            255 => Ok(None),
            254 => {
                let raw = b.get(*at + 1..*at + 5).ok_or(ERR)?;
                *at += 5;
                Ok(Some(u32::from_le_bytes(raw.try_into().expect("4")) as usize))
            }
            n => {
                *at += 1;
                Ok(Some(n as usize))
            }
        }
    };
    let slice = |at: &mut usize, n: usize| -> Result<&[u8], RdbError> {
        let s = at
            .checked_add(n)
            .and_then(|end| b.get(*at..end))
            .ok_or(ERR)?;
        *at += n;
        Ok(s)
    };
    let mut pairs = Vec::new();
    while let Some(klen) = len(&mut at)? {
        let key = slice(&mut at, klen)?;
        let vlen = len(&mut at)?.ok_or(ERR)?;
        let free = *b.get(at).ok_or(ERR)? as usize;
        at += 1;
        let value = slice(&mut at, vlen)?;
        slice(&mut at, free)?;
        pairs.push((key, value));
    }
    if at + 1 != b.len() {
        return Err(ERR);
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ziplist_of_redis_6() {
        // RPUSH l a 1 300 (ziplist of Redis 6.2): zlbytes 21, tail 16, 3 entries.
        let zl = b"\x14\x00\x00\x00\x0f\x00\x00\x00\x03\x00\x00\x01a\x03\xf2\x02\xc0\x2c\x01\xff";
        let items = decode(zl).unwrap();
        assert_eq!(items, vec![Item::Str(b"a"), Item::Int(1), Item::Int(300)]);
        let mut bad = zl.to_vec();
        bad[13] = 9;
        assert!(decode(&bad).is_err());
    }

    #[test]
    fn zipmap() {
        let zm = b"\x02\x01a\x01\x00b\x02cd\x03\x01efgX\xff";
        assert_eq!(
            decode_zipmap(zm).unwrap(),
            vec![(&b"a"[..], &b"b"[..]), (&b"cd"[..], &b"efg"[..])]
        );
        assert!(decode_zipmap(&zm[..zm.len() - 1]).is_err());
    }
}
