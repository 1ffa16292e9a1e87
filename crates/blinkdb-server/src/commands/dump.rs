//! DUMP and RESTORE: a key's value as Redis 7.0's RDB payload (type byte,
//! value, RDB version 10, CRC-64), byte-compatible with redis-server both
//! ways (engine::rdb holds the codec).

use super::args::{eq_ic, parse_i64, ERR_NOT_INT};
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::{
    event::GENERIC,
    rdb_format::{self, RdbError},
    Entry,
};

const ERR_BUSYKEY: &str = "BUSYKEY Target key name already exists.";

pub fn dump(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&[args[1]]);
    settle_for_dump(ctx, args[1]);
    // The value is cloned out of the shard (collections share their members
    // until the next write), then serialized with no lock held.
    let value = ctx
        .shared
        .engine
        .read(ctx.db(), args[1], |e| e.map(|e| e.value().clone()));
    let Some(value) = value else {
        return ctx.out.null();
    };
    let compress = ctx.client.settings(ctx.shared).rdbcompression;
    match rdb_format::dump_value(&ctx.shared.engine, &value, compress) {
        Ok(payload) => ctx.out.bulk(&payload),
        Err(e) => ctx.out.error(&format!("ERR {e}")),
    }
}

/// RedisBloom's rdb_save changes some values before writing them (a
/// t-digest compresses its buffer), and DUMP runs it on the live key: done
/// here in place too, unsignalled, since later answers depend on it.
fn settle_for_dump(ctx: &mut Ctx, key: &[u8]) {
    let unsettled = ctx.shared.engine.read(ctx.db(), key, |e| {
        e.and_then(|e| e.value().as_sketch())
            .is_some_and(|s| s.unsettled())
    });
    if unsettled {
        ctx.write1(key, |tx, db, _| {
            tx.unsignaled(|tx| {
                if let Some(s) = tx
                    .get_mut(db, key)
                    .and_then(|e| e.value_mut().as_sketch_mut())
                {
                    s.settle_for_save();
                }
            })
        });
    }
}

/// RESTORE's reply for a payload that does not decode: Redis's text, naming
/// what BlinkDB does not load yet when that is the reason.
fn bad_format(e: &RdbError) -> String {
    match e {
        RdbError::Payload => format!("ERR {}", rdb_format::ERR_PAYLOAD),
        RdbError::Unsupported(what) => format!("ERR Bad data format: {what}"),
        _ => "ERR Bad data format".to_string(),
    }
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]
///
/// IDLETIME sets the key's access clock under any policy but an LFU one,
/// FREQ its counter under an LFU one; the other is checked and ignored, as
/// in Redis (objectSetLRUOrLFU).
pub fn restore(ctx: &mut Ctx, args: &Args) {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (-1i64, -1i64);
    let mut j = 4;
    while j < args.len() {
        let more = args.len() - j - 1;
        if eq_ic(args[j], "replace") {
            replace = true;
        } else if eq_ic(args[j], "absttl") {
            absttl = true;
        } else if eq_ic(args[j], "idletime") && more >= 1 && freq == -1 {
            let Some(v) = parse_i64(args[j + 1]) else {
                return ctx.out.error(ERR_NOT_INT);
            };
            if v < 0 {
                return ctx.out.error("ERR Invalid IDLETIME value, must be >= 0");
            }
            idle = v;
            j += 1;
        } else if eq_ic(args[j], "freq") && more >= 1 && idle == -1 {
            let Some(v) = parse_i64(args[j + 1]) else {
                return ctx.out.error(ERR_NOT_INT);
            };
            if !(0..=255).contains(&v) {
                return ctx
                    .out
                    .error("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            freq = v;
            j += 1;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    // Decoded before the key is locked; the errors keep Redis's order (a
    // busy key first, then the TTL, then the payload).
    let ttl = match parse_i64(args[2]) {
        None => Err(ERR_NOT_INT.to_string()),
        Some(t) if t < 0 => Err("ERR Invalid TTL value, must be >= 0".to_string()),
        Some(t) => Ok(t),
    };
    let limits = ctx.client.settings(ctx.shared).collection_limits;
    let value = match &ttl {
        Ok(_) => rdb_format::restore_value(args[3], &limits, true).map_err(|e| bad_format(&e)),
        Err(_) => Err(String::new()),
    };
    if value.is_ok() && sanitized(ctx, args[3]) {
        ctx.shared
            .stats
            .dump_payload_sanitizations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let value = value.and_then(|v| v.into_value(&ctx.shared.engine).map_err(|e| bad_format(&e)));
    let now = ctx.shared.engine.now() as i64;
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        if !replace && tx.exists(db, key) {
            return out.error(ERR_BUSYKEY);
        }
        let mut ttl = match &ttl {
            Ok(t) => *t,
            Err(e) => return out.error(e),
        };
        let value = match value {
            Ok(v) => v,
            Err(e) => return out.error(&e),
        };
        let deleted = replace && tx.remove(db, key).is_some();
        if ttl != 0 && !absttl {
            ttl = ttl.saturating_add(now);
        }
        // Already expired (never while loading, where now is 0): only the
        // deletion of the replaced key remains, propagated as a DEL.
        if ttl != 0 && now != 0 && ttl <= now {
            if deleted {
                tx.log(db, &[b"DEL", key]);
                tx.notify(GENERIC, "del", db, key);
            }
            return out.ok();
        }
        let mut entry = Entry::new(value);
        entry.expire_at = ttl as u64;
        tx.insert(db, key, entry);
        tx.set_access(db, key, u64::try_from(idle).ok(), u8::try_from(freq).ok());
        // Propagated with an absolute TTL, as Redis rewrites it.
        let at = ttl.to_string();
        let mut record: Vec<&[u8]> = args.to_vec();
        if ttl != 0 && !absttl {
            record[2] = at.as_bytes();
            record.push(b"ABSTTL");
        }
        tx.log(db, &record);
        tx.notify(GENERIC, "restore", db, key);
        out.ok();
    });
}

/// Whether this RESTORE's payload counts as checked in full
/// (`sanitize-dump-payload`, INFO's dump_payload_sanitizations): BlinkDB
/// always decodes a compact encoding whole, so the count follows the setting,
/// once per payload of a compact type (intset, listpacks, quicklist 2,
/// stream listpacks), where Redis counts each listpack node of one.
fn sanitized(ctx: &mut Ctx, payload: &[u8]) -> bool {
    // The compact encodings Redis checks deeply (with RDB 11 and 12's).
    const COMPACT: &[u8] = &[11, 15, 16, 17, 18, 19, 20, 21, 23, 25];
    let deep = match ctx
        .client
        .settings(ctx.shared)
        .sanitize_dump_payload
        .as_str()
    {
        "yes" => true,
        "clients" => !ctx.client.info.is_master(),
        _ => false,
    };
    deep && payload.first().is_some_and(|t| COMPACT.contains(t))
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("dump", 2, READONLY, KEY1, "generic", "2.6.0", "Return a serialized version of the value stored at the specified key.", dump;
        acl: acl::KEYSPACE,
        complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("restore-asking", -4, WRITE | DENYOOM | ASKING, KEY1, "server", "3.0.0", "An internal command for migrating keys in a cluster", restore;
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        keys: "OW,update index:1 range:0:1:0",
        args: "key:key ttl:integer serialized-value:string replace:REPLACE?^3.0.0 absttl:ABSTTL?^5.0.0 seconds:integer=IDLETIME?^5.0.0 frequency:integer=FREQ?^5.0.0",
        history: &[("3.0.0", "Added the `REPLACE` modifier."), ("5.0.0", "Added the `ABSTTL` modifier."), ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")],
        doc_flags: doc::SYSCMD),
    cmd!("restore", -4, WRITE | DENYOOM, KEY1, "generic", "2.6.0", "Create a key using the provided serialized value, previously obtained using DUMP.", restore;
        props: props::RESTORES_PAYLOAD,
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        keys: "OW,update index:1 range:0:1:0",
        args: "key:key ttl:integer serialized-value:string replace:REPLACE?^3.0.0 absttl:ABSTTL?^5.0.0 seconds:integer=IDLETIME?^5.0.0 frequency:integer=FREQ?^5.0.0",
        history: &[("3.0.0", "Added the `REPLACE` modifier."), ("5.0.0", "Added the `ABSTTL` modifier."), ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")]),
];
