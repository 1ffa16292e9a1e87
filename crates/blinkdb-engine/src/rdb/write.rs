//! Writing RDB values (rdbSaveObjectType, rdbSaveObject) in the encodings
//! Redis 7.0 writes, byte for byte where Redis's own bytes are determined by
//! the value (strings, listpacks, intsets, skiplists; a hash table's order is
//! its own).

use super::listpack::{self, ListpackWriter};
use super::{kind, lzf, RdbError};
use crate::aof::BlobRef;
use crate::keyspace::Value;
use crate::types::list::compress_node;
use crate::types::{HashValue, SetValue, ZSetValue};
use std::borrow::Cow;

/// rdbSaveLen.
pub fn write_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// rdbTryIntegerEncoding: a decimal of at most 11 bytes that fits 32 bits and
/// prints back the same (string2ll) is stored as 1, 2 or 4 bytes.
fn int_encoding(out: &mut Vec<u8>, s: &[u8]) -> bool {
    if s.len() > 11 {
        return false;
    }
    let Some(v) = listpack::as_int(s) else {
        return false;
    };
    if let Ok(v) = i8::try_from(v) {
        out.extend_from_slice(&[0xC0, v as u8]);
    } else if let Ok(v) = i16::try_from(v) {
        out.push(0xC1);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i32::try_from(v) {
        out.push(0xC2);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        return false;
    }
    true
}

/// rdbSaveRawString: as an integer when it is one, LZF-compressed past 20
/// bytes when `compress` and that saves at least 4 bytes, else verbatim.
pub fn write_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if int_encoding(out, s) {
        return;
    }
    if compress && s.len() > 20 {
        if let Some(packed) = lzf::compress(s, s.len() - 4) {
            write_lzf(out, &packed, s.len());
            return;
        }
    }
    write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// rdbSaveLzfBlob: `packed`, the LZF of `raw_len` bytes.
fn write_lzf(out: &mut Vec<u8>, packed: &[u8], raw_len: usize) {
    out.push(0xC3);
    write_len(out, packed.len() as u64);
    write_len(out, raw_len as u64);
    out.extend_from_slice(packed);
}

/// A quicklist 2 node holding one element as is (QUICKLIST_NODE_CONTAINER_PLAIN).
const QUICKLIST_NODE_CONTAINER_PLAIN: u64 = 1;
/// A quicklist 2 node holding a listpack (QUICKLIST_NODE_CONTAINER_PACKED).
const QUICKLIST_NODE_CONTAINER_PACKED: u64 = 2;

/// The RDB type byte of a value.
pub fn object_type(value: &Value) -> Result<u8, RdbError> {
    Ok(match value {
        Value::Str(..) | Value::Blob(..) => kind::STRING,
        Value::List(..) => kind::LIST_QUICKLIST_2,
        Value::Set(s, _) => match s {
            SetValue::Ints(_) => kind::SET_INTSET,
            SetValue::Table(_) => kind::SET,
        },
        Value::ZSet(z, _) => match z {
            ZSetValue::Pack(_) => kind::ZSET_LISTPACK,
            ZSetValue::Sorted(_) => kind::ZSET_2,
        },
        Value::Hash(h, _) => match h {
            HashValue::Pack(_) => kind::HASH_LISTPACK,
            HashValue::Table(_) => kind::HASH,
            HashValue::PackEx(..) => kind::HASH_LISTPACK_EX,
            // A table whose TTLs all went (HPERSIST) is a plain hash, as
            // Redis writes one.
            HashValue::TableEx(_) if h.exact_min_expire() == 0 => kind::HASH,
            HashValue::TableEx(_) => kind::HASH_METADATA,
        },
        Value::Bloom(..) | Value::Sketch(..) => kind::MODULE_2,
        Value::Stream(..) => kind::STREAM_LISTPACKS_2,
    })
}

/// A sorted-set score in a listpack, as zzlInsertAt stores it: an integer
/// when the double is one (double2ll), else its `%.17g` text.
fn push_score(lp: &mut ListpackWriter, score: f64) {
    const HALF: f64 = (i64::MAX / 2) as f64;
    if (-HALF..=HALF).contains(&score) && score == (score as i64) as f64 {
        lp.push_int(score as i64);
    } else {
        lp.push(crate::types::fmt_double(score).as_bytes());
    }
}

/// Bytes Redis adds to a node's size when it estimates an insert.
const SIZE_ESTIMATE_OVERHEAD: usize = 8;
/// A node of a positive fill stays under this many bytes.
const SIZE_SAFETY_LIMIT: usize = 8192;

/// Splits a list into listpack nodes as Redis's quicklist does when the
/// elements are pushed at the tail in order (_quicklistNodeAllowInsert under
/// `fill`), so a list built by RPUSH dumps to Redis's exact bytes; its
/// nodes in memory are BlinkDB's own. An element marked plain is a PLAIN
/// node of its own, which no later element joins. Each node comes with its
/// container.
fn quicklist_nodes<'a>(
    items: impl Iterator<Item = (Cow<'a, [u8]>, bool)>,
    fill: i64,
) -> Vec<(u64, Vec<u8>)> {
    let mut nodes = Vec::new();
    let mut lp = ListpackWriter::new();
    for (item, plain) in items {
        if plain {
            if lp.count() > 0 {
                nodes.push((
                    QUICKLIST_NODE_CONTAINER_PACKED,
                    std::mem::take(&mut lp).finish(),
                ));
                lp = ListpackWriter::new();
            }
            nodes.push((QUICKLIST_NODE_CONTAINER_PLAIN, item.into_owned()));
            continue;
        }
        if lp.count() > 0 {
            let new_sz = lp.bytes() + item.len() + SIZE_ESTIMATE_OVERHEAD;
            let allowed = if fill < 0 {
                let level = (fill.unsigned_abs() as usize).clamp(1, 5) - 1;
                new_sz <= 4096 << level
            } else {
                new_sz <= SIZE_SAFETY_LIMIT && (lp.count() as i64) < fill
            };
            if !allowed {
                nodes.push((
                    QUICKLIST_NODE_CONTAINER_PACKED,
                    std::mem::take(&mut lp).finish(),
                ));
                lp = ListpackWriter::new();
            }
        }
        lp.push(&item);
    }
    if lp.count() > 0 {
        nodes.push((QUICKLIST_NODE_CONTAINER_PACKED, lp.finish()));
    }
    nodes
}

/// The value after its type byte. `blob` reads a string kept in the log.
pub fn write_object(
    out: &mut Vec<u8>,
    value: &Value,
    compress: bool,
    blob: &mut dyn FnMut(&BlobRef) -> Result<bytes::Bytes, RdbError>,
) -> Result<(), RdbError> {
    match value {
        Value::Str(s, _) => write_string(out, s, compress),
        Value::Blob(r, _) => write_string(out, &blob(r)?, compress),
        Value::List(l, _) => {
            let nodes = quicklist_nodes(l.iter_marked(), l.fill());
            let (count, depth) = (nodes.len(), l.depth());
            write_len(out, count as u64);
            for (i, (container, bytes)) in nodes.into_iter().enumerate() {
                write_len(out, container);
                // A node quicklist.c keeps compressed (deeper than the
                // compress depth from both ends, and LZF pays; plain or
                // packed) is written as its LZF blob, whatever
                // `rdbcompression` says.
                let inner = depth > 0 && i >= depth && i + depth < count;
                match inner.then(|| compress_node(&bytes)).flatten() {
                    Some(packed) => write_lzf(out, &packed, bytes.len()),
                    None => write_string(out, &bytes, compress),
                }
            }
        }
        Value::Set(s, _) => match s {
            SetValue::Ints(ints) => write_string(out, &listpack::intset(&ints.to_vec()), compress),
            SetValue::Table(_) => {
                write_len(out, s.len() as u64);
                for m in s.iter() {
                    write_string(out, &m, compress);
                }
            }
        },
        Value::ZSet(z, _) => match z {
            ZSetValue::Pack(_) => {
                let mut lp = ListpackWriter::new();
                for (m, score) in z.iter() {
                    lp.push(m);
                    push_score(&mut lp, score);
                }
                write_string(out, &lp.finish(), compress);
            }
            ZSetValue::Sorted(_) => {
                // From the greatest to the smallest, as Redis walks its skiplist.
                write_len(out, z.len() as u64);
                for (m, score) in z.range(0, true) {
                    write_string(out, m, compress);
                    out.extend_from_slice(&score.to_le_bytes());
                }
            }
        },
        Value::Hash(h, _) => match h {
            HashValue::Pack(_) => {
                let mut lp = ListpackWriter::new();
                for (f, v) in h.iter() {
                    lp.push(f);
                    lp.push(v);
                }
                write_string(out, &lp.finish(), compress);
            }
            HashValue::Table(_) => {
                write_len(out, h.len() as u64);
                for (f, v) in h.iter() {
                    write_string(out, f, compress);
                    write_string(out, v, compress);
                }
            }
            HashValue::PackEx(..) => {
                // The earliest TTL (0: none), then (field, value, TTL)
                // triplets, a TTL 0 when the field has none.
                out.extend_from_slice(&h.exact_min_expire().to_le_bytes());
                let mut lp = ListpackWriter::new();
                for (f, v, at) in h.iter_ttl() {
                    lp.push(f);
                    lp.push(v);
                    lp.push_int(at as i64);
                }
                write_string(out, &lp.finish(), compress);
            }
            HashValue::TableEx(_) => {
                // The earliest TTL, then per field its TTL as 0 (none) or
                // 1 + its distance from the earliest, the field, the value.
                let min = h.exact_min_expire();
                if min != 0 {
                    out.extend_from_slice(&min.to_le_bytes());
                }
                write_len(out, h.len() as u64);
                for (f, v, at) in h.iter_ttl() {
                    if min != 0 {
                        write_len(out, if at == 0 { 0 } else { at - min + 1 });
                    }
                    write_string(out, f, compress);
                    write_string(out, v, compress);
                }
            }
        },
        Value::Stream(s, _) => super::stream::write(out, s, compress),
        Value::Sketch(s, _) => super::module::write_sketch(out, s, compress),
        Value::Bloom(b, _) => {
            let chain = b
                .to_redisbloom()
                .map_err(|e| RdbError::Io(format!("Bloom filter: {e}")))?;
            super::module::write(out, &chain, compress);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::read::read_object;
    use crate::rdb::Reader;
    use crate::types::{Limits, ListShape, ListValue};

    fn no_blob(_: &BlobRef) -> Result<bytes::Bytes, RdbError> {
        unreachable!()
    }

    fn round_trip(v: &Value) -> Value {
        let mut out = Vec::new();
        let t = object_type(v).unwrap();
        write_object(&mut out, v, true, &mut no_blob).unwrap();
        let mut r = Reader::new(&out);
        let back = read_object(t, &mut r, &Limits::default()).unwrap();
        assert_eq!(r.remaining(), 0);
        back
    }

    #[test]
    fn strings_as_redis_writes_them() {
        let mut out = Vec::new();
        write_string(&mut out, b"12", true);
        write_string(&mut out, b"-129", true);
        write_string(&mut out, b"012", true);
        write_string(&mut out, b"12345678901", true);
        assert_eq!(out, b"\xc0\x0c\xc1\x7f\xff\x03012\x0b12345678901".to_vec());
        let v = Value::str(&b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"[..]);
        assert_eq!(round_trip(&v), v);
    }

    #[test]
    fn collections_round_trip() {
        let limits = Limits::default();
        let mut h = HashValue::default();
        let mut z = ZSetValue::default();
        let mut s = SetValue::default();
        let mut l = ListValue::default();
        for i in 0..300 {
            let k = format!("k{i}");
            h.set(k.as_bytes(), i.to_string().as_bytes(), &limits);
            z.insert(k.as_bytes(), i as f64 / 3.0, &limits);
            s.add(i.to_string().as_bytes(), &limits);
            l.push_back(k.as_bytes(), ListShape::default());
            if i == 5 || i == 299 {
                for v in [
                    Value::hash(h.clone()),
                    Value::zset(z.clone()),
                    Value::set(s.clone()),
                    Value::list(l.clone()),
                ] {
                    let back = round_trip(&v);
                    assert_eq!(back, v);
                    assert_eq!(back.collection_encoding(), v.collection_encoding());
                }
            }
        }
    }

    /// Inner nodes of a compressed list are written as their LZF blobs
    /// (even with `rdbcompression no`), the end nodes as plain strings.
    /// Hashes with field TTLs as Redis 8.0 writes them (HASH_LISTPACK_EX,
    /// HASH_METADATA; a table whose TTLs all went is a plain HASH).
    #[test]
    fn hashes_with_field_ttls_round_trip() {
        let limits = Limits::default();
        let far = crate::clock::now_ms() + 3_600_000;
        for n in [3, 300] {
            let mut h = HashValue::default();
            for i in 0..n {
                h.set(format!("f{i}").as_bytes(), b"v", &limits);
            }
            h.set_expire(b"f1", far);
            h.set_expire(b"f2", far + 5);
            let v = Value::hash(h.clone());
            let want = if n == 3 {
                kind::HASH_LISTPACK_EX
            } else {
                kind::HASH_METADATA
            };
            assert_eq!(object_type(&v).unwrap(), want);
            assert_eq!(round_trip(&v), v);
            h.set_expire(b"f1", 0);
            h.set_expire(b"f2", 0);
            let v = Value::hash(h);
            if n == 300 {
                assert_eq!(object_type(&v).unwrap(), kind::HASH);
            }
            assert_eq!(round_trip(&v), v);
        }
    }

    #[test]
    fn compressed_list_nodes() {
        let shape = ListShape {
            fill: 4,
            depth: 1,
            ..ListShape::default()
        };
        let mut l = ListValue::default();
        for i in 0..12 {
            l.push_back(format!("element-{i:03}-").repeat(4).as_bytes(), shape);
        }
        let v = Value::list(l);
        let mut out = Vec::new();
        write_object(&mut out, &v, false, &mut no_blob).unwrap();
        // 3 nodes: the first and last plain, the middle one LZF.
        assert_eq!(out[0], 3);
        assert_eq!(out[1], QUICKLIST_NODE_CONTAINER_PACKED as u8);
        let mut r = Reader::new(&out[2..]);
        r.string().unwrap();
        let second = out.len() - r.remaining();
        assert_eq!(out[second], QUICKLIST_NODE_CONTAINER_PACKED as u8);
        assert_eq!(out[second + 1], 0xC3);
        let mut r = Reader::new(&out);
        let back = read_object(kind::LIST_QUICKLIST_2, &mut r, &Limits::default()).unwrap();
        assert_eq!(back, v);
    }

    /// Plain elements are PLAIN nodes of their own (container 1, the bytes
    /// as they are), inner ones LZF; they load back as plain nodes.
    #[test]
    fn plain_list_nodes() {
        let shape = ListShape {
            fill: -2,
            depth: 1,
            packed_threshold: 60,
        };
        let mut l = ListValue::default();
        l.push_back(b"a", shape);
        l.push_back(&[b'x'; 100], shape);
        l.push_back(&[b'y'; 100], shape);
        l.push_back(b"b", shape);
        l.push_back(b"c", shape);
        let v = Value::list(l);
        let mut out = Vec::new();
        write_object(&mut out, &v, false, &mut no_blob).unwrap();
        // [a] [x..] [y..] [b c]: the middle two deeper than 1, compressed.
        assert_eq!(out[0], 4);
        let mut r = Reader::new(&out[1..]);
        let mut containers = Vec::new();
        for _ in 0..4 {
            containers.push(r.len().unwrap());
            r.string().unwrap();
        }
        assert_eq!(containers, [2, 1, 1, 2]);
        assert!(out.windows(2).any(|w| w == [1, 0xC3]));
        let mut r = Reader::new(&out);
        let back = read_object(kind::LIST_QUICKLIST_2, &mut r, &Limits::default()).unwrap();
        assert_eq!(back, v);
        let Value::List(back, _) = back else {
            panic!("a list")
        };
        let kinds: Vec<bool> = back.iter_marked().map(|(_, p)| p).collect();
        assert_eq!(kinds, [false, true, true, false, false]);
        // Uncompressed, a plain node is its bytes as a string.
        let mut out = Vec::new();
        let mut l = ListValue::default();
        l.push_back(
            b"hello",
            ListShape {
                packed_threshold: 3,
                ..ListShape::default()
            },
        );
        write_object(&mut out, &Value::list(l), false, &mut no_blob).unwrap();
        assert_eq!(out, b"\x01\x01\x05hello");
    }

    #[test]
    fn listpack_scores() {
        let limits = Limits::default();
        let mut z = ZSetValue::default();
        z.insert(b"a", 1.5, &limits);
        z.insert(b"b", 2.0, &limits);
        z.insert(b"c", f64::INFINITY, &limits);
        let mut out = Vec::new();
        write_object(&mut out, &Value::zset(z), false, &mut no_blob).unwrap();
        // ZADD z 1.5 a 2 b inf c on redis-server 7.0.15, DUMP's body.
        let lp = b"\x81a\x02\x831.5\x04\x81b\x02\x02\x01\x81c\x02\x83inf\x04\xff";
        assert_eq!(&out[1 + 6..], &lp[..]);
    }
}
