//! DEBUG DIGEST and DEBUG DIGEST-VALUE: Redis 7.0's SHA1 signature of the
//! dataset and of single values, so that `redis-cli --cluster fix` and
//! tests comparing two servers see the same value as the same digest.
//!
//! The scheme (Redis's debug.c, restated): `xor(d, data)` XORs SHA1(data)
//! into the 20-byte `d`; `mix(d, data)` does the same then replaces `d` with
//! SHA1(d), so that order matters. A value's digest mixes its type number
//! (big-endian u32), then its logical elements: a string's bytes; a list's
//! elements in order (mix); a set's members (xor); a sorted set's and a
//! hash's pairs, each digested alone into a fresh 20 bytes (mix member or
//! field, mix `%.17g` score or value) and XORed in; a stream's entries in
//! order (mix `ms.seq`, then each field and value), consumer groups left
//! out. A module value (a Bloom filter: RedisBloom registers no digest
//! callback) adds nothing past its type. A key with a TTL XORs in
//! `!!expire!!`. Encodings never enter: a listpack and a hash table of the
//! same elements digest alike.

use blinkdb_engine::{stream::StreamId, write_double, Db, Engine, Entry, Value};
use sha1_smol::Sha1;

/// One 20-byte digest.
pub type Digest = [u8; 20];

fn sha1(data: &[u8]) -> Digest {
    Sha1::from(data).digest().bytes()
}

/// XORs SHA1(`data`) into `d` (order-free accumulation).
fn xor(d: &mut Digest, data: &[u8]) {
    for (a, b) in d.iter_mut().zip(sha1(data)) {
        *a ^= b;
    }
}

/// `xor`, then `d` becomes SHA1(`d`) (ordered accumulation).
fn mix(d: &mut Digest, data: &[u8]) {
    xor(d, data);
    *d = sha1(d);
}

/// Redis's object type numbers (OBJ_STRING...).
fn type_number(v: &Value) -> u32 {
    match v {
        Value::Str(..) | Value::Blob(..) => 0,
        Value::List(..) => 1,
        Value::Set(..) => 2,
        Value::ZSet(..) => 3,
        Value::Hash(..) => 4,
        Value::Bloom(..) | Value::Sketch(..) => 5,
        Value::Stream(..) => 6,
    }
}

/// A pair digested alone, as a sorted-set member or a hash field is.
fn pair(a: &[u8], b: &[u8]) -> Digest {
    let mut d = [0; 20];
    mix(&mut d, a);
    mix(&mut d, b);
    d
}

/// Mixes the digest of `entry`'s value (and its TTL) into `d`
/// (xorObjectDigest). Fails only when a large value cannot be read back.
pub fn value_into(engine: &Engine, entry: &Entry, d: &mut Digest) -> Result<(), String> {
    let v = entry.value();
    mix(d, &type_number(v).to_be_bytes());
    match v {
        Value::Str(..) | Value::Blob(..) => mix(d, &engine.string_bytes(v)?),
        Value::List(l, _) => {
            for e in l.iter() {
                mix(d, &e);
            }
        }
        Value::Set(s, _) => {
            for m in s.iter() {
                xor(d, &m);
            }
        }
        Value::ZSet(z, _) => {
            let mut buf = [0u8; 32];
            for (m, score) in z.iter() {
                let n = write_double(score, &mut buf);
                xor(d, &pair(m, &buf[..n]));
            }
        }
        Value::Hash(h, _) => {
            // Redis 8.0 marks a field with a TTL (not its time) in the
            // field's own digest.
            for (f, val, at) in h.iter_ttl() {
                let mut e = pair(f, val);
                if at != 0 {
                    xor(&mut e, b"!!hexpire!!");
                }
                xor(d, &e);
            }
        }
        Value::Stream(s, _) => {
            for (id, fields) in s.range(StreamId::MIN, StreamId::MAX, false) {
                mix(d, format!("{}.{}", id.ms, id.seq).as_bytes());
                for (f, val) in fields {
                    mix(d, f);
                    mix(d, val);
                }
            }
        }
        // A module type without a digest callback adds nothing.
        Value::Bloom(..) | Value::Sketch(..) => {}
    }
    if entry.expire_at != 0 {
        xor(d, b"!!expire!!");
    }
    Ok(())
}

/// DEBUG DIGEST-VALUE of one key: zeros when it does not exist. A key past
/// its TTL but not yet removed still counts, as Redis's dictFind sees it.
pub fn key_value(engine: &Engine, db: usize, key: &[u8]) -> Result<Digest, String> {
    let shard = engine.db(db).shard(Db::shard_index(key)).read();
    let mut d = [0; 20];
    if let Some(e) = shard.get_any(key) {
        value_into(engine, e, &mut d)?;
    }
    Ok(d)
}

/// DEBUG DIGEST: every database's keys and values at one point in time
/// (every shard held, as a snapshot is taken); zeros when all are empty.
pub fn dataset(engine: &Engine) -> Result<Digest, String> {
    let mut out = [0; 20];
    let all: Vec<Vec<_>> = (0..engine.databases())
        .map(|d| engine.db(d).shards().iter().map(|s| s.read()).collect())
        .collect();
    for (index, guards) in all.iter().enumerate() {
        if guards.iter().all(|s| s.is_empty()) {
            continue;
        }
        mix(&mut out, &(index as u32).to_be_bytes());
        for shard in guards {
            for (key, entry) in shard.iter() {
                let mut d = [0; 20];
                mix(&mut d, key);
                value_into(engine, entry, &mut d)?;
                xor(&mut out, &d);
            }
        }
    }
    Ok(out)
}

/// The lowercase hex Redis replies with.
pub fn hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from redis-server 7.0.15: `SET k v` then DEBUG DIGEST-VALUE k
    /// and DEBUG DIGEST are checked in the integration tests; here the
    /// building blocks against SHA1 itself.
    #[test]
    fn mix_is_sha1_of_the_xor() {
        let mut d = [0; 20];
        mix(&mut d, b"abc");
        assert_eq!(d, sha1(&sha1(b"abc")));
        let mut a = [0; 20];
        xor(&mut a, b"x");
        xor(&mut a, b"y");
        let mut b = [0; 20];
        xor(&mut b, b"y");
        xor(&mut b, b"x");
        assert_eq!(a, b);
        assert_eq!(hex(&[0; 20]), "0".repeat(40));
    }
}
