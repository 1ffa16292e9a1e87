//! The keys' access clocks from the commands' side: TOUCH, which lookups
//! leave the clocks alone (Redis 7.0's LOOKUP_NOTOUCH callers, and Redis
//! 7.2's CLIENT NO-TOUCH), and the clock figures OBJECT and DEBUG OBJECT
//! show. The engine keeps and updates the clocks (keyspace/access.rs).

use super::table::{props, CommandSpec};
use super::Ctx;
use crate::client::FLAG_NO_TOUCH;
use crate::exec::session::Client;
use crate::protocol::Args;
use blinkdb_engine::{access, Entry};
use std::sync::atomic::Ordering;

/// TOUCH key [key ...]: looks each key up as a read (updating its clock,
/// even for a CLIENT NO-TOUCH client) and counts those that exist.
pub fn touch(ctx: &mut Ctx, args: &Args) {
    let db = ctx.db();
    let mut n = 0;
    for key in &args[1..] {
        let found = ctx.shared.engine.read(db, key, |e| e.is_some());
        ctx.client.count_lookup(found);
        n += found as i64;
    }
    ctx.out.int(n);
}

/// How `spec`'s lookups treat access clocks for `client`.
fn mode(client: &Client, spec: &CommandSpec) -> Mode {
    let own = cached_mode(spec);
    let no_touch = client.info.flags.load(Ordering::Relaxed) & FLAG_NO_TOUCH != 0;
    match own {
        Mode::Inherit if no_touch => Mode::Leave,
        m => m,
    }
}

/// A command's own mode, whoever runs it (the entry's `NO_TOUCH` and
/// `TOUCH` properties).
fn cached_mode(spec: &CommandSpec) -> Mode {
    if spec.has_prop(props::TOUCH) {
        // Redis 7.2 exempts TOUCH from CLIENT NO-TOUCH; inside MULTI it
        // runs within EXEC's no-touch scope, hence the explicit mode.
        Mode::Touch
    } else if spec.has_prop(props::NO_TOUCH) {
        Mode::Leave
    } else {
        Mode::Inherit
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Touch,
    Leave,
    Inherit,
}

/// Runs `spec`'s handler with lookups touching the keys or not, as above.
pub fn run(ctx: &mut Ctx, spec: &CommandSpec, args: &Args) {
    match mode(ctx.client, spec) {
        Mode::Inherit => (spec.handler)(ctx, args),
        Mode::Leave => access::without_touch(|| (spec.handler)(ctx, args)),
        Mode::Touch => access::with_touch(|| (spec.handler)(ctx, args)),
    }
}

/// Runs a command a script called: the no-touch commands leave clocks
/// alone; the others follow the caller (a CLIENT NO-TOUCH client's script
/// touches nothing, TOUCH included, as in Redis 7.2 where the calling
/// command is EVAL).
pub fn run_in_script(ctx: &mut Ctx, spec: &CommandSpec, args: &Args) {
    if matches!(cached_mode(spec), Mode::Leave) {
        access::without_touch(|| (spec.handler)(ctx, args))
    } else {
        (spec.handler)(ctx, args)
    }
}

/// The error OBJECT IDLETIME answers under an LFU policy.
const ERR_LFU: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
/// The error OBJECT FREQ answers under any other policy.
const ERR_NOT_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

/// What OBJECT IDLETIME or FREQ answers for `entry`: Redis's
/// estimateObjectIdleTime in seconds, or LFUDecrAndReturn.
pub fn object_figure(ctx: &Ctx, entry: &Entry, freq: bool) -> Result<i64, &'static str> {
    let policy = &ctx.shared.engine.access;
    let now = blinkdb_engine::now_ms();
    match (freq, policy.is_lfu()) {
        (false, false) => Ok((access::idle_ms(entry.clock().get(), now) / 1000) as i64),
        (true, true) => Ok(policy.freq(entry.clock().get(), now) as i64),
        (false, true) => Err(ERR_LFU),
        (true, false) => Err(ERR_NOT_LFU),
    }
}

/// DEBUG OBJECT's `lru:` and `lru_seconds_idle:` figures: the raw 24-bit
/// field, and the idle time read as LRU whatever the policy (as Redis does).
pub fn debug_fields(entry: &Entry) -> (u32, u64) {
    let lru = entry.clock().get();
    let now = blinkdb_engine::now_ms();
    (lru, access::idle_ms(lru, now) / 1000)
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("touch", -2, READONLY | FAST, ALLKEYS, "generic", "3.2.1", "Alters the last access time of a key(s). Returns the number of existing keys specified.", touch;
        props: props::TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(N) where N is the number of keys that will be touched.",
        keys: "RO index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
];
