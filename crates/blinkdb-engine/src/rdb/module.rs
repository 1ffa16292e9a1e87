//! Module values (`RDB_TYPE_MODULE_2`): the 64-bit module type id, then the
//! module's fields, each behind an opcode (`RDB_MODULE_OPCODE_*`), then EOF.
//! BlinkDB reads and writes RedisBloom's `MBbloom--` (encoding version 4, as
//! RedisBloom 2.8's BFRdbSave writes it; 2 and 3 are read) and the types of
//! `crate::sketch` (each reads and writes its own fields with the helpers
//! below); any other type is refused naming it.

use super::read::Reader;
use super::write::{write_len, write_string};
use super::{module_type_name, RdbError};
use crate::bloom::{RbLink, RedisBloomChain};

const OPCODE_EOF: u64 = 0;
const OPCODE_UINT: u64 = 2;
const OPCODE_DOUBLE: u64 = 4;
const OPCODE_STRING: u64 = 5;

/// RedisBloom's Bloom filter type name and the encoding version it writes.
pub const BLOOM_TYPE: &str = "MBbloom--";
pub const BLOOM_ENCVER: u64 = 4;
/// The oldest encoding that carries options (older ones hash with 32 bits).
const BLOOM_MIN_OPTIONS_ENC: u64 = 2;

const CHARSET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A module type id: nine 6-bit characters, then a 10-bit encoding version.
pub fn module_type_id(name: &str, encver: u64) -> u64 {
    let mut id = 0u64;
    for c in name.bytes() {
        let v = CHARSET
            .iter()
            .position(|x| *x == c)
            .expect("module charset") as u64;
        id = (id << 6) | v;
    }
    (id << 10) | (encver & 1023)
}

// A sketch's fields, each behind its opcode (RedisModule_Save*/Load*):
// `uint`, `double` and `string` read them, `put_*` write them.

pub(crate) fn put_uint(out: &mut Vec<u8>, v: u64) {
    write_len(out, OPCODE_UINT);
    write_len(out, v);
}

pub(crate) fn put_double(out: &mut Vec<u8>, v: f64) {
    write_len(out, OPCODE_DOUBLE);
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_string(out: &mut Vec<u8>, v: &[u8], compress: bool) {
    write_len(out, OPCODE_STRING);
    write_string(out, v, compress);
}

/// A count of `n` fields of at least `min_bytes` each: past what the input
/// holds it is a lie (or, in a file being streamed, more is to come).
pub(crate) fn check_count(r: &Reader<'_>, n: u64, min_bytes: u64) -> Result<(), RdbError> {
    if n.saturating_mul(min_bytes) > r.remaining() as u64 {
        return Err(super::read::TRUNCATED);
    }
    Ok(())
}

/// A sketch's module value: its type id, its fields, EOF.
pub fn write_sketch(out: &mut Vec<u8>, sketch: &crate::sketch::Sketch, compress: bool) {
    let (name, encver) = sketch.module_type();
    write_len(out, module_type_id(name, encver));
    sketch.write_rdb(out, compress);
    write_len(out, OPCODE_EOF);
}

pub(crate) fn uint(r: &mut Reader<'_>) -> Result<u64, RdbError> {
    if r.len()? != OPCODE_UINT {
        return Err(RdbError::Corrupt("module value: unsigned field expected"));
    }
    r.len()
}

pub(crate) fn double(r: &mut Reader<'_>) -> Result<f64, RdbError> {
    if r.len()? != OPCODE_DOUBLE {
        return Err(RdbError::Corrupt("module value: double field expected"));
    }
    r.binary_double()
}

pub(crate) fn string(r: &mut Reader<'_>) -> Result<Vec<u8>, RdbError> {
    if r.len()? != OPCODE_STRING {
        return Err(RdbError::Corrupt("module value: string field expected"));
    }
    Ok(r.string()?.into_owned())
}

/// BlinkDB's own module type: a filter BlinkDB made, exactly, as its
/// BF.SCANDUMP (the `blinkdb-bf` AUX field's layout, native_bloom.rs) in one
/// STRING field. Only MIGRATE to a BlinkDB target writes it; redis-server
/// answers RESTORE of it with `Bad data format` (no such module type).
pub const NATIVE_TYPE: &str = "blinkdbBF";
pub const NATIVE_ENCVER: u64 = 1;

/// A module value read: RedisBloom's filter, BlinkDB's exact dump, or a sketch.
pub enum ModuleValue {
    RedisBloom(RedisBloomChain),
    Native(super::native_bloom::NativeBloom),
    Sketch(crate::sketch::Sketch),
}

/// The value after a `MODULE_2` type byte, any module type BlinkDB knows.
pub fn read_any(r: &mut Reader<'_>) -> Result<ModuleValue, RdbError> {
    let id = r.len()?;
    let (name, encver) = module_type_name(id);
    if let Some(sketch) = crate::sketch::Sketch::read_rdb(&name, encver, r) {
        let sketch = sketch?;
        if r.len()? != OPCODE_EOF {
            return Err(RdbError::Corrupt("module value not fully consumed"));
        }
        return Ok(ModuleValue::Sketch(sketch));
    }
    if name != NATIVE_TYPE {
        return read_bloom(r, id).map(ModuleValue::RedisBloom);
    }
    if encver != NATIVE_ENCVER {
        return Err(RdbError::Unsupported(format!(
            "module type {name} encoding version {encver} is not supported ({NATIVE_ENCVER})"
        )));
    }
    // The field's length is checked against what is left before anything is
    // allocated (Reader::string); decode then requires every chunk the
    // header declares to be present, so no size is trusted past the payload.
    let field = string(r)?;
    if r.len()? != OPCODE_EOF {
        return Err(RdbError::Corrupt("module value not fully consumed"));
    }
    super::native_bloom::decode(&field)
        .map(ModuleValue::Native)
        .ok_or(RdbError::Corrupt("BlinkDB filter dump"))
}

/// `filter`'s exact value as module type `blinkdbBF` (after the `MODULE_2`
/// type byte); `None` when it has no dump (kernel-backed or imported from
/// RedisBloom: those go as RedisBloom's value).
pub fn write_native(
    out: &mut Vec<u8>,
    filter: &crate::bfkeys::BloomValue,
) -> Option<Result<(), RdbError>> {
    let field = super::native_bloom::Field::of(filter)?;
    write_len(out, module_type_id(NATIVE_TYPE, NATIVE_ENCVER));
    write_len(out, OPCODE_STRING);
    write_len(out, field.byte_len());
    let start = out.len();
    let result = field.write(filter, |piece| {
        out.extend_from_slice(piece);
        Ok(())
    });
    if let Err(e) = result {
        return Some(Err(e));
    }
    if (out.len() - start) as u64 != field.byte_len() {
        return Some(Err(RdbError::Io(
            "Bloom filter dump: the filter changed shape while dumped".into(),
        )));
    }
    write_len(out, OPCODE_EOF);
    Some(Ok(()))
}

fn read_bloom(r: &mut Reader<'_>, id: u64) -> Result<RedisBloomChain, RdbError> {
    let (name, encver) = module_type_name(id);
    if name != BLOOM_TYPE {
        return Err(RdbError::Unsupported(format!(
            "module type {name} (encoding version {encver}) is not supported"
        )));
    }
    if !(BLOOM_MIN_OPTIONS_ENC..=BLOOM_ENCVER).contains(&encver) {
        return Err(RdbError::Unsupported(format!(
            "module type {name} encoding version {encver} is not supported (2 to {BLOOM_ENCVER})"
        )));
    }
    let size = uint(r)?;
    // Each link takes at least 17 bytes: the count cannot exceed what is left.
    let nfilters = uint(r)?;
    if nfilters.saturating_mul(17) > r.remaining() as u64 {
        // (A stream being read may hold them later: the reader retries.)
        return Err(super::read::TRUNCATED);
    }
    let options = u32::try_from(uint(r)?)
        .map_err(|_| RdbError::Corrupt("RedisBloom filter options out of range"))?;
    let growth = if encver >= 4 {
        u32::try_from(uint(r)?)
            .map_err(|_| RdbError::Corrupt("RedisBloom filter expansion out of range"))?
    } else {
        2
    };
    let mut links = Vec::new();
    for _ in 0..nfilters {
        let entries = uint(r)?;
        let error = double(r)?;
        let hashes = u32::try_from(uint(r)?)
            .map_err(|_| RdbError::Corrupt("RedisBloom link hash count out of range"))?;
        let bpe = double(r)?;
        let bits = uint(r)?;
        let n2 = u8::try_from(uint(r)?)
            .map_err(|_| RdbError::Corrupt("RedisBloom link n2 out of range"))?;
        let bf = string(r)?;
        let link_size = uint(r)?;
        links.push(RbLink {
            entries,
            error,
            hashes,
            bpe,
            bits,
            n2,
            bf,
            size: link_size,
        });
    }
    if r.len()? != OPCODE_EOF {
        return Err(RdbError::Corrupt("module value not fully consumed"));
    }
    let chain = RedisBloomChain {
        size,
        options,
        growth,
        links,
    };
    chain.validate().map_err(RdbError::Corrupt)?;
    Ok(chain)
}

/// The value BFRdbSave writes (after the `MODULE_2` type byte).
pub fn write(out: &mut Vec<u8>, chain: &RedisBloomChain, compress: bool) {
    let uint = |out: &mut Vec<u8>, v: u64| {
        write_len(out, OPCODE_UINT);
        write_len(out, v);
    };
    let double = |out: &mut Vec<u8>, v: f64| {
        write_len(out, OPCODE_DOUBLE);
        out.extend_from_slice(&v.to_le_bytes());
    };
    write_len(out, module_type_id(BLOOM_TYPE, BLOOM_ENCVER));
    uint(out, chain.size);
    uint(out, chain.links.len() as u64);
    uint(out, chain.options as u64);
    uint(out, chain.growth as u64);
    for link in &chain.links {
        uint(out, link.entries);
        double(out, link.error);
        uint(out, link.hashes as u64);
        double(out, link.bpe);
        uint(out, link.bits);
        uint(out, link.n2 as u64);
        write_len(out, OPCODE_STRING);
        write_string(out, &link.bf, compress);
        uint(out, link.size);
    }
    write_len(out, OPCODE_EOF);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::BloomLimits;

    /// A RedisBloom value, read the way the loader reads any module value.
    fn read(r: &mut Reader<'_>) -> Result<RedisBloomChain, RdbError> {
        match read_any(r)? {
            ModuleValue::RedisBloom(chain) => Ok(chain),
            _ => panic!("a RedisBloom value was written"),
        }
    }

    #[test]
    fn bloom_round_trips() {
        let limits = BloomLimits::default();
        let mut c = RedisBloomChain::new(20, 0.01, 2, false, &limits).unwrap();
        for i in 0..100 {
            c.add(format!("{i}").as_bytes(), &limits).unwrap();
        }
        for compress in [false, true] {
            let mut out = Vec::new();
            write(&mut out, &c, compress);
            let mut r = Reader::new(&out);
            assert_eq!(read(&mut r).unwrap(), c);
            assert_eq!(r.remaining(), 0);
            // Every truncation fails cleanly.
            for cut in 0..out.len() {
                assert!(read(&mut Reader::new(&out[..cut])).is_err());
            }
        }
    }

    #[test]
    fn other_module_types_are_named() {
        let mut out = Vec::new();
        write_len(&mut out, module_type_id("CMSk-type", 0));
        let err = read(&mut Reader::new(&out)).unwrap_err();
        assert!(err.to_string().contains("CMSk-type"), "{err}");
    }
}
