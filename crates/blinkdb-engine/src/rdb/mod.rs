//! The RDB codec: one reader and one writer for DUMP/RESTORE payloads,
//! FUNCTION DUMP, and whole `dump.rdb` files. It writes version 10 (Redis
//! 7.0's, which every later Redis and valkey reads) and reads up to version
//! 12 (Redis 7.2 and valkey 7.2 to 8.x write 11, Redis 7.4 and 8.x write 12).
//! The byte layout is in docs/rdb-format.md.
//!
//! Reading never trusts a declared length or count beyond the bytes left in
//! the input: every take is bounded by what remains, and no collection is
//! preallocated past it, so a hostile payload costs at most its own size.

mod dump;
mod file;
pub(crate) mod listpack;
pub(crate) mod lzf;
pub mod module;
pub mod native_bloom;
mod read;
mod stream;
mod write;
mod ziplist;

pub use dump::{create_payload, verify_payload, ERR_PAYLOAD};
pub use file::{
    load_file, load_file_sized, load_stream, read_old_function, LoadedKey, More, Next,
    RdbFileWriter,
};
pub use read::{read_entry, Loaded, Reader};
pub use write::{object_type, write_object, write_string};

/// The version BlinkDB writes: Redis 7.0's, so that a Redis 7.0 replica or
/// `redis-check-rdb` 7.0 reads BlinkDB's files and payloads.
pub const RDB_VERSION: u16 = 10;

/// The highest version read (files, DUMP payloads, a master's full sync):
/// Redis 8.0's. Anything newer is refused as Redis refuses it.
pub const RDB_VERSION_READ: u16 = 12;

/// Redis's CRC-64 (Jones polynomial, reflected), as its crc64.c computes it.
/// Slicing-by-16 tables (32 KB): a whole-file check at load was 5% of a
/// 500k-key load with the one-byte table (Redis's crcspeed slices by 8).
pub static CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

/// Value types (`RDB_TYPE_*`): one byte before each key.
pub mod kind {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    /// Sorted set with binary (little-endian f64) scores.
    pub const ZSET_2: u8 = 5;
    pub const MODULE: u8 = 6;
    /// Module value with opcodes that let a reader skip it.
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    /// Quicklist of ziplists (Redis 3.2 to 6.2).
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    /// Quicklist of listpacks, each node tagged plain or packed (7.0).
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    /// Set as one listpack of members (Redis 7.2, RDB 11).
    pub const SET_LISTPACK: u8 = 20;
    /// Stream whose consumers also record their active time (Redis 7.2, RDB 11).
    pub const STREAM_LISTPACKS_3: u8 = 21;
    /// Hash with field TTLs, absolute times (Redis 7.4 release candidates).
    pub const HASH_METADATA_PRE_GA: u8 = 22;
    /// Listpack hash with field TTLs, without the leading minimum (7.4 RCs).
    pub const HASH_LISTPACK_EX_PRE_GA: u8 = 23;
    /// Hash with field TTLs: the minimum TTL, then each field's TTL relative
    /// to it (Redis 7.4 and 8.x, RDB 12).
    pub const HASH_METADATA: u8 = 24;
    /// Listpack hash of (field, value, TTL) triples after the minimum TTL
    /// (Redis 7.4 and 8.x, RDB 12).
    pub const HASH_LISTPACK_EX: u8 = 25;
}

/// Opcodes between keys of a whole file (`RDB_OPCODE_*`).
pub mod opcode {
    /// A cluster slot's key and expiry counts (Redis 7.4+, cluster mode):
    /// a sizing hint only.
    pub const SLOT_INFO: u8 = 244;
    pub const FUNCTION2: u8 = 245;
    /// FUNCTION of the 7.0 release candidates.
    pub const FUNCTION: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    /// Seconds, from files older than RDB 3.
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
}

/// What went wrong reading RDB data. RESTORE answers any of these with
/// Redis's `Bad data format`; a file load names the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RdbError {
    /// The DUMP footer's version is newer than 12, or its CRC does not match.
    #[error("DUMP payload version or checksum are wrong")]
    Payload,
    /// Truncated or inconsistent data.
    #[error("{0}")]
    Corrupt(&'static str),
    /// A collection with no members (Redis skips such keys in a file).
    #[error("empty collection")]
    EmptyKey,
    /// A well-formed value of a type BlinkDB does not load yet.
    #[error("{0}")]
    Unsupported(String),
    /// Writing a file.
    #[error("{0}")]
    Io(String),
}

impl From<std::io::Error> for RdbError {
    fn from(e: std::io::Error) -> Self {
        RdbError::Io(e.to_string())
    }
}

/// DUMP's payload for `value`: type byte, body, version and CRC-64.
pub fn dump_value(
    engine: &crate::Engine,
    value: &crate::Value,
    compress: bool,
) -> Result<Vec<u8>, RdbError> {
    let mut out = vec![object_type(value)?];
    let mut blob = |r: &crate::aof::BlobRef| engine.read_blob(r).map_err(RdbError::Io);
    write_object(&mut out, value, compress, &mut blob)?;
    Ok(create_payload(out))
}

/// DUMP's payload for `value` as MIGRATE sends it to another BlinkDB: a
/// filter BlinkDB made goes exactly, as module type `blinkdbBF`; anything
/// else as `dump_value`.
pub fn dump_value_native(
    engine: &crate::Engine,
    value: &crate::Value,
    compress: bool,
) -> Result<Vec<u8>, RdbError> {
    if let crate::Value::Bloom(filter, _) = value {
        let mut out = vec![kind::MODULE_2];
        if let Some(result) = module::write_native(&mut out, filter) {
            result?;
            return Ok(create_payload(out));
        }
    }
    dump_value(engine, value, compress)
}

impl Loaded {
    /// The key's value: a RedisBloom filter becomes a filter of `engine`'s
    /// store. Fails only for a `blinkdbBF` dump whose filter does not load
    /// (a line checksum, a header the store refuses).
    pub fn into_value(self, engine: &crate::Engine) -> Result<crate::Value, RdbError> {
        Ok(match self {
            Loaded::NativeDump(native) => crate::Value::bloom(
                engine
                    .blooms
                    .load_dump(&native.header, &native.chunks)
                    .map_err(|e| RdbError::Io(format!("BlinkDB filter dump: {e}")))?,
            ),
            Loaded::Value(v) => v,
            Loaded::Bloom(chain) => crate::Value::bloom(engine.blooms.import(*chain)),
            Loaded::NativeBloom(native, chain) => {
                match engine.blooms.load_dump(&native.header, &native.chunks) {
                    Ok(filter) => crate::Value::bloom(filter),
                    Err(e) => {
                        tracing::warn!(
                            "a BlinkDB Bloom filter's dump did not load ({e}): its RedisBloom value is used"
                        );
                        crate::Value::bloom(engine.blooms.import(*chain))
                    }
                }
            }
        })
    }
}

/// A string value stored uncompressed in a file, `raw` being its bytes there
/// (length prefix included, as `LoadedKey::raw`): when it is at least
/// `threshold` bytes, a reference to it in place, in AOF file `file` (an
/// RDB-format AOF base keeps its large values on disk, as a RESP base does).
pub fn string_in_place(
    data: &[u8],
    raw: std::ops::Range<usize>,
    file: crate::aof::FileId,
    threshold: usize,
) -> Option<crate::aof::BlobRef> {
    let bytes = data.get(raw.clone())?;
    let header = match bytes.first()? >> 6 {
        0 => 1,
        1 => 2,
        2 if bytes[0] == 0x80 => 5,
        2 if bytes[0] == 0x81 => 9,
        _ => return None, // an integer or LZF encoding
    };
    let payload = bytes.get(header..)?;
    if payload.len() < threshold.max(1) {
        return None;
    }
    Some(crate::aof::BlobRef {
        file,
        offset: (raw.start + header) as u64,
        len: payload.len() as u64,
        checksum: crate::checksum::xxh3_64_large(payload),
    })
}

/// DUMP's payload for a RedisBloom filter (compressed, as `rdbcompression yes`).
pub fn bloom_payload(chain: &crate::bloom::RedisBloomChain) -> Vec<u8> {
    let mut out = vec![kind::MODULE_2];
    module::write(&mut out, chain, true);
    create_payload(out)
}

/// The value in a RESTORE payload: the footer checked, then exactly one
/// value that fills the body.
pub fn restore_value(
    payload: &[u8],
    limits: &crate::types::Limits,
    check_crc: bool,
) -> Result<Loaded, RdbError> {
    let body = verify_payload(payload, check_crc)?;
    let mut r = Reader::new(body);
    let kind = r.byte()?;
    read_entry(kind, &mut r, limits)
}

/// A module type's name from its 64-bit id: nine 6-bit characters from the
/// top, then a 10-bit encoding version.
pub fn module_type_name(id: u64) -> (String, u64) {
    const CHARSET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let name = (0..9)
        .map(|i| CHARSET[((id >> (64 - 6 * (i + 1))) & 63) as usize] as char)
        .collect();
    (name, id & 1023)
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
    fn module_names_decode() {
        // RedisBloom's "MBbloom--", encoding version 4.
        let mut id = 0u64;
        for c in b"MBbloom--" {
            let v = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                .iter()
                .position(|x| x == c)
                .unwrap() as u64;
            id = (id << 6) | v;
        }
        id = (id << 10) | 4;
        assert_eq!(module_type_name(id), ("MBbloom--".to_string(), 4));
    }
}
