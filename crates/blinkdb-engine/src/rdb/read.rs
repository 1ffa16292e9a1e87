//! Reading RDB values (rdbLoadObject), every encoding Redis 2.x to 8.0 and
//! valkey 7.2 to 8.1 write.
//! Values come back in the encoding Redis would pick for them under the
//! server's limits, as Redis's loader converts them.

use super::listpack::{self, Item};
use super::{kind, lzf, module_type_name, ziplist, RdbError};
use crate::keyspace::Value;
use crate::types::{HashValue, Limits, ListShape, ListValue, SetValue, ZSetValue};
use std::borrow::Cow;
use std::ops::Deref;

const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

pub(crate) const TRUNCATED: RdbError = RdbError::Corrupt("unexpected end of data");

/// A cursor over RDB bytes; no read goes past the end.
pub struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, at: 0 }
    }

    pub fn pos(&self) -> usize {
        self.at
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.at
    }

    pub fn byte(&mut self) -> Result<u8, RdbError> {
        let b = *self.data.get(self.at).ok_or(TRUNCATED)?;
        self.at += 1;
        Ok(b)
    }

    pub fn take(&mut self, n: u64) -> Result<&'a [u8], RdbError> {
        if n > self.remaining() as u64 {
            return Err(TRUNCATED);
        }
        let s = &self.data[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }

    pub fn u32_le(&mut self) -> Result<u32, RdbError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    pub fn u64_le(&mut self) -> Result<u64, RdbError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }

    /// A length, or (true) the number of a special string encoding.
    fn len_or_enc(&mut self) -> Result<(u64, bool), RdbError> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => ((b & 0x3F) as u64, false),
            1 => ((((b & 0x3F) as u64) << 8) | self.byte()? as u64, false),
            2 => match b {
                0x80 => (
                    u32::from_be_bytes(self.take(4)?.try_into().expect("4")) as u64,
                    false,
                ),
                0x81 => (
                    u64::from_be_bytes(self.take(8)?.try_into().expect("8")),
                    false,
                ),
                _ => return Err(RdbError::Corrupt("unknown length encoding")),
            },
            _ => ((b & 0x3F) as u64, true),
        })
    }

    /// rdbLoadLen.
    #[allow(clippy::len_without_is_empty)] // reads a length; not a size
    pub fn len(&mut self) -> Result<u64, RdbError> {
        match self.len_or_enc()? {
            (n, false) => Ok(n),
            _ => Err(RdbError::Corrupt("length expected, special encoding found")),
        }
    }

    /// A count of items each taking at least `min_bytes`: past what the
    /// input still holds it is a lie.
    pub fn count(&mut self, min_bytes: u64) -> Result<usize, RdbError> {
        let n = self.len()?;
        if n.saturating_mul(min_bytes) > self.remaining() as u64 {
            return Err(TRUNCATED);
        }
        Ok(n as usize)
    }

    /// rdbGenericLoadStringObject: raw, integer or LZF.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>, RdbError> {
        let (len, encoded) = self.len_or_enc()?;
        if !encoded {
            return Ok(Cow::Borrowed(self.take(len)?));
        }
        let int = |v: i64| Cow::Owned(itoa::Buffer::new().format(v).as_bytes().to_vec());
        match len as u8 {
            ENC_INT8 => Ok(int(self.byte()? as i8 as i64)),
            ENC_INT16 => Ok(int(
                i16::from_le_bytes(self.take(2)?.try_into().expect("2")) as i64,
            )),
            ENC_INT32 => Ok(int(
                i32::from_le_bytes(self.take(4)?.try_into().expect("4")) as i64,
            )),
            ENC_LZF => {
                let clen = self.len()?;
                let ulen = self.len()?;
                let packed = self.take(clen)?;
                Ok(Cow::Owned(lzf::decompress(packed, ulen)?))
            }
            _ => Err(RdbError::Corrupt("unknown string encoding")),
        }
    }

    /// rdbLoadDoubleValue: a length byte then the text (253 NaN, 254 +inf, 255 -inf).
    pub fn text_double(&mut self) -> Result<f64, RdbError> {
        let len = self.byte()?;
        let v = match len {
            255 => f64::NEG_INFINITY,
            254 => f64::INFINITY,
            253 => f64::NAN,
            n => std::str::from_utf8(self.take(n as u64)?)
                .ok()
                .and_then(|t| t.trim().parse::<f64>().ok())
                .ok_or(RdbError::Corrupt("invalid double"))?,
        };
        Ok(v)
    }

    pub fn binary_double(&mut self) -> Result<f64, RdbError> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }

    /// A millisecond time (EXPIRETIME_MS): 8 bytes, little endian.
    pub fn millis(&mut self) -> Result<i64, RdbError> {
        Ok(self.u64_le()? as i64)
    }
}

fn score(v: f64) -> Result<f64, RdbError> {
    if v.is_nan() {
        Err(RdbError::Corrupt("NaN score"))
    } else {
        Ok(v)
    }
}

const DUPLICATE: RdbError = RdbError::Corrupt("duplicate member");

fn hash_from<F: Deref<Target = [u8]>, V: Deref<Target = [u8]>>(
    pairs: impl Iterator<Item = (F, V)>,
    bytes: usize,
    limits: &Limits,
) -> Result<Value, RdbError> {
    // `bytes` sizes the compact encoding (more than the limits allow would
    // convert anyway: then the hint is not used).
    let most =
        (limits.hash_max_listpack_value + 2).saturating_mul(2 * limits.hash_max_listpack_entries);
    let mut h = if bytes <= most {
        HashValue::with_pack_capacity(bytes)
    } else {
        HashValue::default()
    };
    for (f, v) in pairs {
        if !h.set(&f, &v, limits) {
            return Err(DUPLICATE);
        }
    }
    if h.is_empty() {
        return Err(RdbError::EmptyKey);
    }
    Ok(Value::hash(h))
}

/// The latest field expiry time Redis 8.0 accepts (EB_EXPIRE_TIME_MAX, 2^48-1 ms).
const FIELD_EXPIRE_MAX: u64 = (1 << 48) - 1;

/// A hash whose fields may carry a TTL (absolute Unix ms, 0 for none). A
/// field whose time has passed (against `now`; 0 keeps all, as a replica
/// does) is dropped, as Redis 8.0 drops it on load; the others keep their
/// TTLs (the hash takes the form that holds them).
fn hash_with_field_ttls<F: Deref<Target = [u8]>, V: Deref<Target = [u8]>>(
    fields: Vec<(F, V, u64)>,
    limits: &Limits,
    now: u64,
) -> Result<Value, RdbError> {
    if fields.iter().any(|(_, _, at)| *at > FIELD_EXPIRE_MAX) {
        return Err(RdbError::Corrupt("invalid hash field expire time"));
    }
    let live = |at: u64| at == 0 || now == 0 || at > now;
    if !fields.iter().any(|(_, _, at)| *at != 0 && live(*at)) {
        let kept: Vec<(&[u8], &[u8])> = fields
            .iter()
            .filter(|(_, _, at)| *at == 0)
            .map(|(f, v, _)| (&f[..], &v[..]))
            .collect();
        let bytes = pack_bytes(kept.iter().flat_map(|(f, v)| [f.len(), v.len()]));
        return hash_from(kept.into_iter(), bytes, limits);
    }
    let mut h = HashValue::default();
    for (f, v, at) in fields.iter().filter(|(_, _, at)| live(*at)) {
        if !h.set(f, v, limits) {
            return Err(DUPLICATE);
        }
        if *at != 0 {
            h.set_expire(f, *at);
        }
    }
    if h.is_empty() {
        return Err(RdbError::EmptyKey);
    }
    Ok(Value::hash(h))
}

/// The bytes entries of these lengths take in a `Pack`.
fn pack_bytes(lens: impl Iterator<Item = usize>) -> usize {
    lens.map(crate::types::pack::Pack::entry_bytes).sum()
}

fn set_from<'b>(
    members: impl Iterator<Item = Cow<'b, [u8]>>,
    limits: &Limits,
) -> Result<Value, RdbError> {
    let mut s = SetValue::default();
    for m in members {
        if !s.add(&m, limits) {
            return Err(DUPLICATE);
        }
    }
    if s.is_empty() {
        return Err(RdbError::EmptyKey);
    }
    Ok(Value::set(s))
}

/// A collection's declared count reserves at most this many members ahead.
const RESERVE_MAX: usize = 4096;

/// Members this many or fewer are checked for duplicates pairwise (no set).
const FEW: usize = 16;

fn zset_from<M: Deref<Target = [u8]>>(
    items: Vec<(M, f64)>,
    limits: &Limits,
) -> Result<Value, RdbError> {
    if items.is_empty() {
        return Err(RdbError::EmptyKey);
    }
    let unique = if items.len() <= FEW {
        (1..items.len()).all(|i| items[..i].iter().all(|(m, _)| m[..] != items[i].0[..]))
    } else {
        let mut seen = hashbrown::HashSet::with_capacity(items.len());
        items.iter().all(|(m, _)| seen.insert(&m[..]))
    };
    if !unique {
        return Err(DUPLICATE);
    }
    let scored: Vec<(&[u8], f64)> = items.iter().map(|(m, s)| (&m[..], *s)).collect();
    Ok(Value::zset(ZSetValue::build(scored, limits)))
}

fn pairs_of(items: Vec<Item<'_>>) -> Result<impl Iterator<Item = (Item<'_>, Item<'_>)>, RdbError> {
    if !items.len().is_multiple_of(2) {
        return Err(RdbError::Corrupt(
            "odd number of entries in a pair encoding",
        ));
    }
    let mut it = items.into_iter();
    Ok(std::iter::from_fn(move || Some((it.next()?, it.next()?))))
}

/// A ziplist's or listpack's elements, packed whatever their size: Redis
/// loads the node as it is (quicklistAppendListpack).
fn list_push(l: &mut ListValue, items: Vec<Item<'_>>, limits: &Limits) {
    let shape = ListShape {
        packed_threshold: usize::MAX,
        ..limits.list_shape()
    };
    for i in items {
        l.push_back(&i.bytes(), shape);
    }
}

/// A decoded value: a key's value, or a RedisBloom filter, which only the
/// server can turn into a key (it owns the filter store).
#[derive(Debug)]
pub enum Loaded {
    Value(Value),
    Bloom(Box<crate::bloom::RedisBloomChain>),
    /// A BlinkDB filter: its exact dump (the `blinkdb-bf` AUX field before
    /// the key), and the RedisBloom value written for redis-server.
    NativeBloom(
        Box<super::native_bloom::NativeBloom>,
        Box<crate::bloom::RedisBloomChain>,
    ),
    /// A BlinkDB filter as module type `blinkdbBF` (a RESTORE payload that
    /// MIGRATE sent from BlinkDB to BlinkDB): its exact dump alone.
    NativeDump(Box<super::native_bloom::NativeBloom>),
}

/// The value of RDB type `kind` at the reader's position, module values included.
pub fn read_entry(kind: u8, r: &mut Reader<'_>, limits: &Limits) -> Result<Loaded, RdbError> {
    match kind {
        kind::MODULE_2 => Ok(match super::module::read_any(r)? {
            super::module::ModuleValue::RedisBloom(chain) => Loaded::Bloom(Box::new(chain)),
            super::module::ModuleValue::Native(native) => Loaded::NativeDump(Box::new(native)),
            super::module::ModuleValue::Sketch(s) => Loaded::Value(Value::sketch(s)),
        }),
        kind::MODULE => {
            let id = r.len()?;
            let (name, encver) = module_type_name(id);
            Err(RdbError::Unsupported(format!(
                "module type {name} (encoding version {encver}) in the pre-Redis-5 module format is not supported"
            )))
        }
        _ => read_object(kind, r, limits).map(Loaded::Value),
    }
}

/// The value of RDB type `kind` at the reader's position (not module values).
pub fn read_object(kind: u8, r: &mut Reader<'_>, limits: &Limits) -> Result<Value, RdbError> {
    match kind {
        kind::STRING => Ok(Value::str(&r.string()?[..])),
        kind::LIST => {
            let n = r.count(1)?;
            let mut l = ListValue::default();
            for _ in 0..n {
                l.push_back(&r.string()?, limits.list_shape());
            }
            if l.is_empty() {
                return Err(RdbError::EmptyKey);
            }
            Ok(Value::list(l))
        }
        kind::SET => {
            let n = r.count(1)?;
            if n == 0 {
                return Err(RdbError::EmptyKey);
            }
            let first = r.string()?;
            // Room for what the count declares, up to a bound: a damaged
            // count is held only to the file's size.
            let mut s = SetValue::for_members(&first, n.min(RESERVE_MAX));
            s.add(&first, limits);
            for _ in 1..n {
                if !s.add(&r.string()?, limits) {
                    return Err(DUPLICATE);
                }
            }
            Ok(Value::set(s))
        }
        kind::ZSET | kind::ZSET_2 => {
            let n = r.count(2)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.string()?;
                let s = if kind == kind::ZSET {
                    r.text_double()?
                } else {
                    r.binary_double()?
                };
                items.push((m, score(s)?));
            }
            zset_from(items, limits)
        }
        kind::HASH => {
            let n = r.count(2)?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                let f = r.string()?;
                let v = r.string()?;
                pairs.push((f, v));
            }
            let bytes = pack_bytes(pairs.iter().flat_map(|(f, v)| [f.len(), v.len()]));
            hash_from(pairs.into_iter(), bytes, limits)
        }
        kind::HASH_ZIPMAP => {
            let blob = r.string()?;
            let pairs = ziplist::decode_zipmap(&blob)?;
            let bytes = pack_bytes(pairs.iter().flat_map(|(f, v)| [f.len(), v.len()]));
            hash_from(pairs.into_iter(), bytes, limits)
        }
        kind::HASH_ZIPLIST | kind::HASH_LISTPACK => {
            let blob = r.string()?;
            let items = if kind == kind::HASH_ZIPLIST {
                ziplist::decode(&blob)?
            } else {
                listpack::decode(&blob)?
            };
            let bytes = pack_bytes(items.iter().map(|i| i.bytes().len()));
            let pairs = pairs_of(items)?.map(|(f, v)| (f.bytes(), v.bytes()));
            hash_from(pairs, bytes, limits)
        }
        kind::ZSET_ZIPLIST | kind::ZSET_LISTPACK => {
            let blob = r.string()?;
            let items = if kind == kind::ZSET_ZIPLIST {
                ziplist::decode(&blob)?
            } else {
                listpack::decode(&blob)?
            };
            let items = pairs_of(items)?
                .map(|(m, s)| Ok((m.bytes(), s.score()?)))
                .collect::<Result<Vec<_>, RdbError>>()?;
            zset_from(items, limits)
        }
        kind::SET_LISTPACK => {
            let blob = r.string()?;
            let items = listpack::decode(&blob)?;
            set_from(items.into_iter().map(|i| Cow::Owned(i.to_bytes())), limits)
        }
        kind::HASH_METADATA | kind::HASH_METADATA_PRE_GA => {
            // 8.0 writes the smallest TTL first, and each field's TTL as
            // 0 (none) or its distance from it plus 1; the 7.4 release
            // candidates wrote absolute times and no minimum.
            let min = if kind == kind::HASH_METADATA {
                Some(r.u64_le()?)
            } else {
                None
            };
            let n = r.count(3)?;
            let mut fields = Vec::with_capacity(n.min(RESERVE_MAX));
            for _ in 0..n {
                let ttl = r.len()?;
                let at = match (ttl, min) {
                    (0, _) => 0,
                    (t, Some(m)) => (t - 1)
                        .checked_add(m)
                        .ok_or(RdbError::Corrupt("invalid hash field expire time"))?,
                    (t, None) => t,
                };
                let f = r.string()?;
                let v = r.string()?;
                fields.push((f, v, at));
            }
            hash_with_field_ttls(fields, limits, crate::clock::now_ms())
        }
        kind::HASH_LISTPACK_EX | kind::HASH_LISTPACK_EX_PRE_GA => {
            if kind == kind::HASH_LISTPACK_EX {
                // The smallest TTL, kept by Redis for later use: each
                // field carries its own absolute one.
                r.u64_le()?;
            }
            let blob = r.string()?;
            let items = listpack::decode(&blob)?;
            if !items.len().is_multiple_of(3) {
                return Err(RdbError::Corrupt("Hash listpack integrity check failed."));
            }
            let mut fields = Vec::with_capacity(items.len() / 3);
            for t in items.chunks_exact(3) {
                let at = match t[2] {
                    Item::Int(v) => u64::try_from(v).ok(),
                    Item::Str(s) => listpack::as_int(s).and_then(|v| u64::try_from(v).ok()),
                }
                .ok_or(RdbError::Corrupt("Hash listpack integrity check failed."))?;
                fields.push((t[0].bytes(), t[1].bytes(), at));
            }
            hash_with_field_ttls(fields, limits, crate::clock::now_ms())
        }
        kind::SET_INTSET => {
            let blob = r.string()?;
            let ints = listpack::decode_intset(&blob)?;
            if ints.len() <= limits.set_max_intset_entries {
                return Ok(Value::set(SetValue::Ints(
                    crate::types::set::IntSet::from_sorted(&ints),
                )));
            }
            let members = ints
                .iter()
                .map(|i| Cow::Owned(itoa::Buffer::new().format(*i).as_bytes().to_vec()));
            set_from(members, limits)
        }
        kind::LIST_ZIPLIST => {
            let blob = r.string()?;
            let mut l = ListValue::default();
            list_push(&mut l, ziplist::decode(&blob)?, limits);
            if l.is_empty() {
                return Err(RdbError::EmptyKey);
            }
            Ok(Value::list(l))
        }
        kind::LIST_QUICKLIST | kind::LIST_QUICKLIST_2 => {
            let nodes = r.count(2)?;
            let mut l = ListValue::default();
            for _ in 0..nodes {
                let container = if kind == kind::LIST_QUICKLIST_2 {
                    r.len()?
                } else {
                    2
                };
                let blob = r.string()?;
                match container {
                    // A plain node: one element, as is, and a plain node
                    // again whatever its size (quicklistAppendPlainNode);
                    // Redis refuses an empty one.
                    1 if blob.is_empty() => {
                        return Err(RdbError::Corrupt("empty plain quicklist node"))
                    }
                    1 => l.push_plain_back(&blob, limits.list_shape()),
                    2 => {
                        let items = if kind == kind::LIST_QUICKLIST {
                            ziplist::decode(&blob)?
                        } else {
                            listpack::decode(&blob)?
                        };
                        // Redis drops an empty node and loads the rest.
                        list_push(&mut l, items, limits);
                    }
                    _ => return Err(RdbError::Corrupt("unknown quicklist container")),
                }
            }
            if l.is_empty() {
                return Err(RdbError::EmptyKey);
            }
            Ok(Value::list(l))
        }
        kind::STREAM_LISTPACKS | kind::STREAM_LISTPACKS_2 | kind::STREAM_LISTPACKS_3 => {
            let version = match kind {
                kind::STREAM_LISTPACKS => 1,
                kind::STREAM_LISTPACKS_2 => 2,
                _ => 3,
            };
            Ok(Value::stream(super::stream::read(r, version)?))
        }
        kind::MODULE | kind::MODULE_2 => Err(RdbError::Corrupt(
            "module value where a plain value is expected",
        )),
        _ => Err(RdbError::Corrupt("unknown value type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_declared_lengths_are_refused_without_allocating() {
        let limits = Limits::default();
        // A string claiming 2^64-9 bytes, a set claiming 2^32 members.
        let mut r = Reader::new(b"\x81\xff\xff\xff\xff\xff\xff\xff\xf7");
        assert_eq!(read_object(kind::STRING, &mut r, &limits), Err(TRUNCATED));
        let mut r = Reader::new(b"\x80\xff\xff\xff\xff\x01a");
        assert!(read_object(kind::SET, &mut r, &limits).is_err());
        // LZF claiming 4 GB out of 3 bytes.
        let mut r = Reader::new(b"\xc3\x03\x80\xff\xff\xff\xff\x00\x00\x00");
        assert!(read_object(kind::STRING, &mut r, &limits).is_err());
    }

    fn lp_body(kind: u8, prefix: &[u8], items: &[&[u8]]) -> Vec<u8> {
        let mut lp = listpack::ListpackWriter::new();
        for i in items {
            match listpack::as_int(i) {
                Some(v) => lp.push_int(v),
                None => lp.push(i),
            }
        }
        let mut out = prefix.to_vec();
        super::super::write::write_string(&mut out, &lp.finish(), false);
        let _ = kind;
        out
    }

    fn hash_fields(v: &Value) -> Vec<(Vec<u8>, Vec<u8>)> {
        let Value::Hash(h, _) = v else {
            panic!("not a hash: {v:?}")
        };
        let mut got: Vec<(Vec<u8>, Vec<u8>)> =
            h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
        got.sort();
        got
    }

    #[test]
    fn set_listpack() {
        let limits = Limits::default();
        let body = lp_body(kind::SET_LISTPACK, b"", &[b"a", b"17", b"bcd"]);
        let v = read_object(kind::SET_LISTPACK, &mut Reader::new(&body), &limits).unwrap();
        let Value::Set(set, _) = &v else {
            panic!("not a set: {v:?}")
        };
        assert_eq!(set.len(), 3);
        for m in [&b"a"[..], b"17", b"bcd"] {
            assert!(set.contains(m));
        }
        let dup = lp_body(kind::SET_LISTPACK, b"", &[b"a", b"a"]);
        assert_eq!(
            read_object(kind::SET_LISTPACK, &mut Reader::new(&dup), &limits),
            Err(DUPLICATE)
        );
        let empty = lp_body(kind::SET_LISTPACK, b"", &[]);
        assert_eq!(
            read_object(kind::SET_LISTPACK, &mut Reader::new(&empty), &limits),
            Err(RdbError::EmptyKey)
        );
    }

    /// Field TTLs: past ones dropped, pending ones kept.
    #[test]
    fn hash_field_ttls() {
        let limits = Limits::default();
        let now = crate::clock::now_ms();
        let past = (now - 10_000).to_string();
        let future = (now + 3_600_000).to_string();
        let min = (now - 10_000).to_le_bytes();
        // Listpack form: (field, value, ttl) triples after the minimum.
        let body = lp_body(
            kind::HASH_LISTPACK_EX,
            &min,
            &[b"f1", b"v1", b"0", b"gone", b"x", past.as_bytes()],
        );
        let v = read_object(kind::HASH_LISTPACK_EX, &mut Reader::new(&body), &limits).unwrap();
        assert_eq!(hash_fields(&v), vec![(b"f1".to_vec(), b"v1".to_vec())]);
        // The release candidates' form has no minimum.
        let body = lp_body(
            kind::HASH_LISTPACK_EX_PRE_GA,
            b"",
            &[b"f1", b"v1", b"0", b"gone", b"x", past.as_bytes()],
        );
        let v = read_object(
            kind::HASH_LISTPACK_EX_PRE_GA,
            &mut Reader::new(&body),
            &limits,
        )
        .unwrap();
        assert_eq!(hash_fields(&v), vec![(b"f1".to_vec(), b"v1".to_vec())]);
        let body = lp_body(
            kind::HASH_LISTPACK_EX,
            &min,
            &[b"f1", b"v1", b"0", b"later", b"x", future.as_bytes()],
        );
        let v = read_object(kind::HASH_LISTPACK_EX, &mut Reader::new(&body), &limits).unwrap();
        let Value::Hash(h, _) = &v else {
            panic!("{v:?}")
        };
        assert_eq!(h.encoding(), "listpackex");
        assert_eq!(h.lookup(b"later").map(|(_, at)| at), Some(now + 3_600_000));
        assert_eq!(h.lookup(b"f1").map(|(_, at)| at), Some(0));
        // All fields expired: an empty key, skipped as Redis skips one.
        let body = lp_body(
            kind::HASH_LISTPACK_EX,
            &min,
            &[b"gone", b"x", past.as_bytes()],
        );
        assert_eq!(
            read_object(kind::HASH_LISTPACK_EX, &mut Reader::new(&body), &limits),
            Err(RdbError::EmptyKey)
        );
        // Not triples.
        let body = lp_body(kind::HASH_LISTPACK_EX, &min, &[b"f", b"v"]);
        assert!(read_object(kind::HASH_LISTPACK_EX, &mut Reader::new(&body), &limits).is_err());

        // Table form: minimum, count, then (ttl, field, value) with each
        // ttl 0 or its distance from the minimum plus 1.
        let mut body = min.to_vec();
        body.extend_from_slice(b"\x02\x00\x02f1\x02v1\x01\x04gone\x01x");
        let v = read_object(kind::HASH_METADATA, &mut Reader::new(&body), &limits).unwrap();
        assert_eq!(hash_fields(&v), vec![(b"f1".to_vec(), b"v1".to_vec())]);
        let mut body = min.to_vec();
        body.extend_from_slice(b"\x01\x80\x7f\xff\xff\xff\x05later\x01x");
        let v = read_object(kind::HASH_METADATA, &mut Reader::new(&body), &limits).unwrap();
        let Value::Hash(h, _) = &v else {
            panic!("{v:?}")
        };
        assert_eq!(
            h.lookup(b"later").map(|(_, at)| at),
            Some(now - 10_000 + 0x7fff_fffe)
        );
        // Absolute times (release candidates): 1 ms after the epoch is past.
        let body = b"\x02\x00\x02f1\x02v1\x01\x04gone\x01x";
        let v = read_object(kind::HASH_METADATA_PRE_GA, &mut Reader::new(body), &limits).unwrap();
        assert_eq!(hash_fields(&v), vec![(b"f1".to_vec(), b"v1".to_vec())]);
        // Past Redis's largest expiry time: corrupt; truncations: errors.
        let body = b"\x01\x81\x00\x01\x00\x00\x00\x00\x00\x00\x01f\x01v";
        assert!(matches!(
            read_object(kind::HASH_METADATA_PRE_GA, &mut Reader::new(body), &limits),
            Err(RdbError::Corrupt(_))
        ));
        for n in 0..body.len() {
            assert!(
                read_object(kind::HASH_METADATA, &mut Reader::new(&body[..n]), &limits).is_err()
            );
        }
    }

    #[test]
    fn integer_strings() {
        let limits = Limits::default();
        let mut r = Reader::new(b"\xc0\xfb\xc1\x00\x80\xc2\x00\x00\x00\x80");
        for want in ["-5", "-32768", "-2147483648"] {
            let v = read_object(kind::STRING, &mut r, &limits).unwrap();
            assert_eq!(v.as_str(), Some(want.as_bytes()));
        }
    }
}
