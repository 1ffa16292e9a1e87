//! FUNCTION DUMP's payload, as Redis writes it (rdbSaveFunctions plus the
//! DUMP footer): per library RDB_OPCODE_FUNCTION2 and the code as an RDB
//! string (LZF-compressed past 20 bytes when that saves room, as with
//! Redis's default rdbcompression), then the RDB version (2 bytes, little
//! endian) and the CRC-64 of everything before (Jones, reflected: Redis's
//! crc64.c), little endian.

const OPCODE_FUNCTION: u8 = 246;
const OPCODE_FUNCTION2: u8 = 245;
const RDB_VERSION: u16 = 10;
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

pub const ERR_PAYLOAD: &str = "DUMP payload version or checksum are wrong";

fn push_len(out: &mut Vec<u8>, len: usize) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u32::MAX as usize {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// rdbSaveRawString for a value that is not an integer (library code
/// starts with `#!`).
fn push_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() > 20 {
        // Redis gives LZF an output of len-4 bytes: what does not fit is
        // stored plain.
        if let Some(packed) = lzf_compress(s, s.len() - 4) {
            out.push(0xC0 | ENC_LZF);
            push_len(out, packed.len());
            push_len(out, s.len());
            out.extend_from_slice(&packed);
            return;
        }
    }
    push_len(out, s.len());
    out.extend_from_slice(s);
}

const LZF_MAX_LIT: usize = 1 << 5;
const LZF_MAX_OFF: usize = 1 << 13;
const LZF_MAX_REF: usize = (1 << 8) + (1 << 3);

/// LZF compression as Redis's lzf_c.c does it (HLOG 16, VERY_FAST, a
/// zeroed hash table), so that the bytes equal Redis's: None when the
/// output would not fit in `limit` bytes.
fn lzf_compress(input: &[u8], limit: usize) -> Option<Vec<u8>> {
    let n = input.len();
    if n < 3 || limit == 0 {
        return None;
    }
    let idx = |h: u32| ((h >> 8).wrapping_sub(h.wrapping_mul(5)) & 0xFFFF) as usize;
    let mut htab = vec![0u32; 1 << 16];
    let mut out = vec![0u8; limit];
    let (mut ip, mut op, mut lit) = (0usize, 1usize, 0usize);
    let mut hval: u32 = (input[0] as u32) << 8 | input[1] as u32;
    while ip + 2 < n {
        hval = hval << 8 | input[ip + 2] as u32;
        let slot = idx(hval);
        let r = htab[slot] as usize;
        htab[slot] = ip as u32;
        let off = ip.wrapping_sub(r).wrapping_sub(1);
        if r > 0
            && off < LZF_MAX_OFF
            && input[r + 2] == input[ip + 2]
            && input[r] == input[ip]
            && input[r + 1] == input[ip + 1]
        {
            let mut len = 2usize;
            let maxlen = (n - ip - len).min(LZF_MAX_REF);
            if op + 4 >= limit && op - (lit == 0) as usize + 4 >= limit {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1); // stop run
            op -= (lit == 0) as usize; // undo an empty run
                                       // lzf_c.c checks 16 octets without the maxlen bound first.
            let mut done = false;
            if maxlen > 16 {
                for _ in 0..16 {
                    len += 1;
                    if input[r + len] != input[ip + len] {
                        done = true;
                        break;
                    }
                }
            }
            if !done {
                loop {
                    len += 1;
                    if !(len < maxlen && input[r + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2; // octets - 1
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 2; // and start a run
            lit = 0;
            ip += len + 1;
            if ip + 2 >= n {
                break;
            }
            ip -= 2;
            hval = (input[ip] as u32) << 8 | input[ip + 1] as u32;
            hval = hval << 8 | input[ip + 2] as u32;
            htab[idx(hval)] = ip as u32;
            ip += 1;
            hval = hval << 8 | input[ip + 2] as u32;
            htab[idx(hval)] = ip as u32;
            ip += 1;
        } else {
            if op >= limit {
                return None;
            }
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == LZF_MAX_LIT {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }
    if op + 3 > limit {
        return None;
    }
    while ip < n {
        if op >= limit {
            return None;
        }
        lit += 1;
        out[op] = input[ip];
        op += 1;
        ip += 1;
        if lit == LZF_MAX_LIT {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1); // end the run
    op -= (lit == 0) as usize;
    out.truncate(op);
    Some(out)
}

pub fn dump_payload(codes: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION2);
        push_string(&mut out, code);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.data.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    /// A length, or an encoding number (true) for a special string.
    fn len(&mut self) -> Option<(u64, bool)> {
        let b = self.byte()?;
        Some(match b >> 6 {
            0 => ((b & 0x3F) as u64, false),
            1 => ((((b & 0x3F) as u64) << 8) | self.byte()? as u64, false),
            2 => match b {
                0x80 => (
                    u32::from_be_bytes(self.take(4)?.try_into().ok()?) as u64,
                    false,
                ),
                0x81 => (u64::from_be_bytes(self.take(8)?.try_into().ok()?), false),
                _ => return None,
            },
            _ => ((b & 0x3F) as u64, true),
        })
    }

    /// rdbGenericLoadStringObject.
    fn string(&mut self) -> Option<Vec<u8>> {
        let (len, encoded) = self.len()?;
        if !encoded {
            return Some(self.take(usize::try_from(len).ok()?)?.to_vec());
        }
        match len as u8 {
            ENC_INT8 => Some((self.byte()? as i8).to_string().into_bytes()),
            ENC_INT16 => Some(
                i16::from_le_bytes(self.take(2)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            ENC_INT32 => Some(
                i32::from_le_bytes(self.take(4)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            ENC_LZF => {
                let (clen, e1) = self.len()?;
                let (ulen, e2) = self.len()?;
                if e1 || e2 || ulen == 0 {
                    return None;
                }
                let packed = self.take(usize::try_from(clen).ok()?)?;
                let ulen = usize::try_from(ulen).ok()?;
                let plain = lzf::decompress(packed, ulen).ok()?;
                (plain.len() == ulen).then_some(plain)
            }
            _ => None,
        }
    }
}

/// The library codes of a FUNCTION RESTORE payload, or the error text
/// (without its ERR code).
pub fn parse_payload(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    // verifyDumpPayload
    if data.len() < 10 {
        return Err(ERR_PAYLOAD.into());
    }
    let footer = &data[data.len() - 10..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return Err(ERR_PAYLOAD.into());
    }
    let crc = CRC64.checksum(&data[..data.len() - 8]);
    if crc.to_le_bytes() != footer[2..] {
        return Err(ERR_PAYLOAD.into());
    }
    let mut r = Reader { data, at: 0 };
    let mut codes = Vec::new();
    while data.len() - r.at > 10 {
        let Some(kind) = r.byte() else {
            return Err("can not read data type".into());
        };
        match kind {
            OPCODE_FUNCTION2 => {
                codes.push(r.string().ok_or("Failed loading library payload")?);
            }
            OPCODE_FUNCTION => {
                // 7.0 release candidates: name, engine, description, code.
                let name = r.string().ok_or("Failed loading library name")?;
                let engine = r.string().ok_or("Failed loading engine name")?;
                let (has_desc, enc) = r
                    .len()
                    .ok_or("Failed loading library description indicator")?;
                if enc {
                    return Err("Failed loading library description indicator".into());
                }
                if has_desc != 0 {
                    r.string().ok_or("Failed loading library description")?;
                }
                let blob = r.string().ok_or("Failed loading library blob")?;
                let mut code = b"#!".to_vec();
                code.extend_from_slice(&engine);
                code.extend_from_slice(b" name=");
                code.extend_from_slice(&name);
                code.push(b'\n');
                code.extend_from_slice(&blob);
                codes.push(code);
            }
            _ => return Err("given type is not a function".into()),
        }
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_is_redis_jones() {
        // crc64.c's self test: crc64(0, "123456789") == 0xe9c6d914c4b8d9ca.
        assert_eq!(CRC64.checksum(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn payload_round_trip() {
        let long = b"#!lua name=lib\nredis.register_function('f', function() return 1 end)";
        let short = b"#!lua name=a\nx";
        let p = dump_payload(&[long, short]);
        assert_eq!(
            parse_payload(&p).unwrap(),
            vec![long.to_vec(), short.to_vec()]
        );
        let mut bad = p.clone();
        bad[3] ^= 1;
        assert_eq!(parse_payload(&bad).unwrap_err(), ERR_PAYLOAD);
    }
}
