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
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        if input.len() >= PLAIN_FROM {
            let plain = t.plain.get_or_insert_with(new_slots);
            plain.fill(0);
            compress_with(input, limit, &mut **plain)
        } else {
            let stamped = &mut t.stamped;
            stamped.next_call();
            compress_with(input, limit, stamped)
        }
    })
}

const SLOTS: usize = 1 << 16;

/// From this input size on, a plain table zeroed per call (256 KB, as
/// lzf_c.c's) is used: its memset is small next to the input, and its
/// 4-octet slots keep half the stamped table's cache lines.
const PLAIN_FROM: usize = 1 << 16;

/// lzf_c.c's hash table: a slot not written in this call reads 0.
trait Table {
    fn get(&self, slot: usize) -> u32;
    fn set(&mut self, slot: usize, v: u32);
}

impl Table for [u32; SLOTS] {
    #[inline]
    fn get(&self, slot: usize) -> u32 {
        self[slot & (SLOTS - 1)]
    }

    #[inline]
    fn set(&mut self, slot: usize, v: u32) {
        self[slot & (SLOTS - 1)] = v;
    }
}

fn new_slots<T: Copy + Default>() -> Box<[T; SLOTS]> {
    match vec![T::default(); SLOTS].into_boxed_slice().try_into() {
        Ok(slots) => slots,
        Err(_) => unreachable!("a vec of SLOTS"),
    }
}

/// The table for small strings, zeroed for each call by a stamp, not a
/// 256 KB memset per string (which was three quarters of a BGSAVE of
/// small strings).
struct Stamped {
    stamp: u32,
    slots: Option<Box<[(u32, u32); SLOTS]>>,
}

impl Stamped {
    fn next_call(&mut self) {
        let slots = self.slots.get_or_insert_with(new_slots);
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            slots.fill((0, 0));
            self.stamp = 1;
        }
    }
}

impl Table for Stamped {
    #[inline]
    fn get(&self, slot: usize) -> u32 {
        let slots = self.slots.as_ref().expect("next_call made the slots");
        let (stamp, v) = slots[slot & (SLOTS - 1)];
        if stamp == self.stamp {
            v
        } else {
            0
        }
    }

    #[inline]
    fn set(&mut self, slot: usize, v: u32) {
        let slots = self.slots.as_mut().expect("next_call made the slots");
        slots[slot & (SLOTS - 1)] = (self.stamp, v);
    }
}

struct Tables {
    stamped: Stamped,
    plain: Option<Box<[u32; SLOTS]>>,
}

thread_local! {
    static TABLES: std::cell::RefCell<Tables> = const {
        std::cell::RefCell::new(Tables { stamped: Stamped { stamp: 0, slots: None }, plain: None })
    };
}

fn compress_with<T: Table + ?Sized>(input: &[u8], limit: usize, htab: &mut T) -> Option<Vec<u8>> {
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
            let maxlen = (n - ip - 2).min(LZF_MAX_REF);
            if op + 4 >= limit && op - (lit == 0) as usize + 4 >= limit {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1); // stop run
            op -= (lit == 0) as usize; // undo an empty run
                                       // lzf_c.c's match length: first 16 octets compared without the
                                       // maxlen bound (when maxlen > 16), then octet by octet up to it.
                                       // Compared 8 at a time here; the length found is the same.
            let mut len = 2usize;
            let mut done = false;
            if maxlen > 16 {
                len = mismatch(input, r, ip, 3, 19);
                done = len < 19;
                len = len.min(18);
            }
            if !done {
                // do len++ while (len < maxlen && the octets match)
                len = mismatch(input, r, ip, len + 1, maxlen);
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

/// The first `i` in `from..to` where `input[r + i]` and `input[ip + i]`
/// differ, or `to`; `from` itself when `to <= from`. Eight octets a step.
#[inline]
fn mismatch(input: &[u8], r: usize, ip: usize, from: usize, to: usize) -> usize {
    let word = |at: usize| u64::from_le_bytes(input[at..at + 8].try_into().expect("8 octets"));
    let mut i = from;
    while i + 8 <= to {
        let x = word(r + i) ^ word(ip + i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < to && input[r + i] == input[ip + i] {
        i += 1;
    }
    i
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

    /// (seed, length) of a sample, and the length and FNV-1a hash of what
    /// Redis 7.0.15's lzf_c.c (built -O2 from Debian's source) makes of it:
    /// the stamped table, and the plain one past 64 KB.
    const SAMPLES: [(u64, usize, usize, u64); 3] = [
        (1, 5_000, 1_832, 0xa64c_443e_98c4_8391),
        (2, 70_000, 22_889, 0x697c_ce5d_a567_96dd),
        (3, 400_000, 140_728, 0xcd5f_6275_d769_5e42),
    ];

    #[test]
    fn bytes_equal_redis_lzf() {
        for (seed, len, packed_len, hash) in SAMPLES {
            let input = sample(seed, len);
            let packed = compress(&input, input.len() - 4).unwrap();
            assert_eq!(
                (packed.len(), fnv(&packed)),
                (packed_len, hash),
                "sample {seed}"
            );
            assert_eq!(decompress(&packed, len as u64).unwrap(), input);
            // A second call starts from an empty table again.
            assert_eq!(compress(&input, input.len() - 4).unwrap(), packed);
        }
    }

    /// Input with what LZF meets: zero runs, short periodic patterns, noise,
    /// and copies of earlier stretches, in pieces of random lengths.
    fn sample(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut v = Vec::with_capacity(len);
        while v.len() < len {
            let piece = (next() % 700) as usize + 1;
            match next() % 4 {
                0 => v.extend(std::iter::repeat_n(0u8, piece)),
                1 => {
                    let period = (next() % 20) as usize + 1;
                    let pattern: Vec<u8> = (0..period).map(|_| next() as u8).collect();
                    v.extend((0..piece).map(|i| pattern[i % period]));
                }
                2 => v.extend((0..piece).map(|_| next() as u8)),
                _ if v.len() > piece => {
                    let from = (next() as usize) % (v.len() - piece);
                    v.extend_from_within(from..from + piece);
                }
                _ => {}
            }
        }
        v.truncate(len);
        v
    }

    fn fnv(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
    }

    #[test]
    fn incompressible_does_not_fit() {
        let noise: Vec<u8> = (0..64u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
            .collect();
        assert!(compress(&noise, noise.len() - 4).is_none());
    }
}
