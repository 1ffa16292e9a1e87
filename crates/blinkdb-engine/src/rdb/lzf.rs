//! LZF as Redis uses it for RDB strings.
//!
//! Compression is written here rather than taken from the `lzf` crate because
//! DUMP payloads must be byte-equal to Redis's, and Redis's lzf_c.c (HLOG 16,
//! VERY_FAST, a zeroed hash table, its 16-octet unrolled match loop) picks
//! different matches than the crate's port. Decompression has a single valid
//! answer, so it is the `lzf` crate's.

use super::RdbError;

const LZF_MAX_LIT: usize = 1 << 5;
const LZF_MAX_OFF: usize = 1 << 13;
const LZF_MAX_REF: usize = (1 << 8) + (1 << 3);

/// LZF compression as Redis's lzf_c.c does it (HLOG 16, VERY_FAST, a
/// zeroed hash table), so that the bytes equal Redis's: None when the
/// output would not fit in `limit` bytes.
pub fn compress(input: &[u8], limit: usize) -> Option<Vec<u8>> {
    if input.len() < 3 || limit == 0 {
        return None;
    }
    HTAB.with(|t| {
        let mut t = t.borrow_mut();
        t.next_call();
        compress_with(input, limit, &mut t)
    })
}

/// lzf_c.c's hash table, zeroed for each call: the zeroing is a stamp, not
/// a 256 KB memset per string (which was three quarters of a BGSAVE of
/// small strings). A slot not written in this call reads 0.
struct HashTable {
    stamp: u32,
    slots: Vec<(u32, u32)>,
}

impl HashTable {
    fn next_call(&mut self) {
        if self.slots.is_empty() {
            self.slots = vec![(0, 0); 1 << 16];
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.slots.fill((0, 0));
            self.stamp = 1;
        }
    }

    #[inline]
    fn get(&self, slot: usize) -> u32 {
        let (stamp, v) = self.slots[slot];
        if stamp == self.stamp {
            v
        } else {
            0
        }
    }

    #[inline]
    fn set(&mut self, slot: usize, v: u32) {
        self.slots[slot] = (self.stamp, v);
    }
}

thread_local! {
    static HTAB: std::cell::RefCell<HashTable> = const {
        std::cell::RefCell::new(HashTable { stamp: 0, slots: Vec::new() })
    };
}

fn compress_with(input: &[u8], limit: usize, htab: &mut HashTable) -> Option<Vec<u8>> {
    let n = input.len();
    let idx = |h: u32| ((h >> 8).wrapping_sub(h.wrapping_mul(5)) & 0xFFFF) as usize;
    let mut out = vec![0u8; limit];
    let (mut ip, mut op, mut lit) = (0usize, 1usize, 0usize);
    let mut hval: u32 = (input[0] as u32) << 8 | input[1] as u32;
    while ip + 2 < n {
        hval = hval << 8 | input[ip + 2] as u32;
        let slot = idx(hval);
        let r = htab.get(slot) as usize;
        htab.set(slot, ip as u32);
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
            htab.set(idx(hval), ip as u32);
            ip += 1;
            hval = hval << 8 | input[ip + 2] as u32;
            htab.set(idx(hval), ip as u32);
            ip += 1;
        } else {
            literal(&mut out, &mut op, &mut lit, input[ip], limit)?;
            ip += 1;
        }
    }
    if op + 3 > limit {
        return None;
    }
    while ip < n {
        literal(&mut out, &mut op, &mut lit, input[ip], limit)?;
        ip += 1;
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1); // end the run
    op -= (lit == 0) as usize;
    out.truncate(op);
    Some(out)
}

/// Appends one byte to the current literal run (lzf_c.c's literal step),
/// closing the run at LZF_MAX_LIT bytes; None when the output is full.
fn literal(out: &mut [u8], op: &mut usize, lit: &mut usize, byte: u8, limit: usize) -> Option<()> {
    if *op >= limit {
        return None;
    }
    *lit += 1;
    out[*op] = byte;
    *op += 1;
    if *lit == LZF_MAX_LIT {
        out[*op - *lit - 1] = (*lit - 1) as u8;
        *lit = 0;
        *op += 1;
    }
    Some(())
}

/// Most output one input byte of LZF can stand for: a 3-byte back reference
/// copies at most 264 bytes. A declared length past this is a lie, refused
/// before anything is allocated.
const MAX_EXPANSION: u64 = 88;

/// The `ulen` bytes that `packed` expands to.
pub fn decompress(packed: &[u8], ulen: u64) -> Result<Vec<u8>, RdbError> {
    if ulen == 0 || ulen > (packed.len() as u64).saturating_mul(MAX_EXPANSION) {
        return Err(RdbError::Corrupt("LZF length out of range"));
    }
    let ulen = ulen as usize;
    let plain = lzf::decompress(packed, ulen).map_err(|_| RdbError::Corrupt("invalid LZF data"))?;
    if plain.len() != ulen {
        return Err(RdbError::Corrupt("LZF data shorter than declared"));
    }
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let text = b"abcabcabcabcabcabcabcabcabcabcabcabc hello hello hello hello".repeat(20);
        let packed = compress(&text, text.len() - 4).unwrap();
        assert!(packed.len() < text.len());
        assert_eq!(decompress(&packed, text.len() as u64).unwrap(), text);
        assert!(decompress(&packed, u64::MAX).is_err());
    }

    #[test]
    fn incompressible_does_not_fit() {
        let noise: Vec<u8> = (0..64u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
            .collect();
        assert!(compress(&noise, noise.len() - 4).is_none());
    }
}
