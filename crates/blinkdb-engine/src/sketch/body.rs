//! The encoded bodies of sketch files (docs/sketch-file-format.md): fixed
//! little-endian fields, written by each structure's `file_body` and read
//! back by its `from_file_body`. Everything read is untrusted: a count is
//! checked against the bytes left before anything is allocated for it.

pub type Result<T> = std::result::Result<T, &'static str>;

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_f64(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_bits().to_le_bytes());
}

/// Copies what of `part` (the body's bytes from `at`) falls in the page
/// that starts at body byte `start` into `page` (the rest left as it is).
pub fn copy_part(page: &mut [u8], start: usize, at: usize, part: &[u8]) {
    let lo = start.max(at);
    let hi = (start + page.len()).min(at + part.len());
    if lo < hi {
        page[lo - start..hi - start].copy_from_slice(&part[lo - at..hi - at]);
    }
}

/// A reader over a body's bytes.
pub struct In<'a> {
    rest: &'a [u8],
}

impl<'a> In<'a> {
    pub fn new(bytes: &'a [u8]) -> In<'a> {
        In { rest: bytes }
    }

    pub fn bytes(&mut self, n: u64) -> Result<&'a [u8]> {
        if n > self.rest.len() as u64 {
            return Err("body shorter than its fields");
        }
        let (b, rest) = self.rest.split_at(n as usize);
        self.rest = rest;
        Ok(b)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.bytes(N as u64)?.try_into().expect("N bytes"))
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_bits(self.u64()?))
    }

    /// Refuses `count` items of at least `each` bytes when fewer bytes are
    /// left (so a hostile count allocates nothing).
    pub fn check_count(&self, count: u64, each: u64) -> Result<()> {
        match count.checked_mul(each) {
            Some(n) if n <= self.rest.len() as u64 => Ok(()),
            _ => Err("a count passes the body's length"),
        }
    }

    /// The body must end here: trailing bytes are damage.
    pub fn end(self) -> Result<()> {
        match self.rest.is_empty() {
            true => Ok(()),
            false => Err("bytes after the body's fields"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_short_input_is_an_error() {
        let mut b = Vec::new();
        put_u32(&mut b, 9);
        put_u64(&mut b, u64::MAX);
        put_f64(&mut b, -0.5);
        let mut r = In::new(&b);
        assert_eq!(r.u32(), Ok(9));
        assert_eq!(r.u64(), Ok(u64::MAX));
        assert_eq!(r.f64(), Ok(-0.5));
        assert!(r.check_count(1, 1).is_err());
        assert!(r.u8().is_err());
        assert!(In::new(&b).end().is_err());
        assert!(In::new(&b).check_count(u64::MAX, 2).is_err());
    }
}
