//! Pub/Sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.

use super::Ctx;
use crate::protocol::Args;
use crate::pubsub::{self, Kind};

fn sub(ctx: &mut Ctx, args: &Args, kind: Kind) {
    let c = &mut *ctx.client;
    pubsub::subscribe(
        &ctx.shared.pubsub,
        &c.info,
        &mut c.pubsub,
        ctx.out,
        kind,
        &args[1..],
    );
}

fn unsub(ctx: &mut Ctx, args: &Args, kind: Kind) {
    let c = &mut *ctx.client;
    pubsub::unsubscribe(
        &ctx.shared.pubsub,
        &c.info,
        &mut c.pubsub,
        ctx.out,
        kind,
        &args[1..],
    );
}

pub fn subscribe(ctx: &mut Ctx, args: &Args) {
    sub(ctx, args, Kind::Channel)
}

pub fn psubscribe(ctx: &mut Ctx, args: &Args) {
    sub(ctx, args, Kind::Pattern)
}

pub fn ssubscribe(ctx: &mut Ctx, args: &Args) {
    sub(ctx, args, Kind::Shard)
}

pub fn unsubscribe(ctx: &mut Ctx, args: &Args) {
    unsub(ctx, args, Kind::Channel)
}

pub fn punsubscribe(ctx: &mut Ctx, args: &Args) {
    unsub(ctx, args, Kind::Pattern)
}

pub fn sunsubscribe(ctx: &mut Ctx, args: &Args) {
    unsub(ctx, args, Kind::Shard)
}

fn publish_to(ctx: &mut Ctx, args: &Args, shard: bool) {
    let limit = ctx.client.settings(ctx.shared).output_limits.pubsub;
    let now = blinkdb_engine::now_ms();
    let n = ctx
        .shared
        .pubsub
        .publish(args[1], args[2], shard, &limit, now);
    crate::cluster::bus::propagate_publish(ctx.shared, args[1], args[2], shard);
    // Replicas deliver it to their own subscribers (in a cluster the bus
    // reaches every node instead), as Redis propagates it: not to the AOF.
    if ctx.shared.cluster.is_none() {
        ctx.shared.engine.feed_replicas(ctx.client.db, args);
    }
    // A RESP3 client subscribed to the channel it publishes to sees the message
    // before the reply, as in Redis (the message is written to it first).
    pubsub::flush_mailbox(&ctx.client.info, ctx.out);
    ctx.out.int(n as i64);
}

pub fn publish(ctx: &mut Ctx, args: &Args) {
    publish_to(ctx, args, false)
}

pub fn spublish(ctx: &mut Ctx, args: &Args) {
    publish_to(ctx, args, true)
}

const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

pub fn pubsub(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    let argc = args.len();
    // Redis 7 declares each subcommand with its own arity.
    let arity_ok = match sub.as_str() {
        "help" | "numpat" => argc == 2,
        "channels" | "shardchannels" | "numsub" | "shardnumsub" => true,
        _ => {
            return ctx.out.error(&format!(
                "ERR unknown subcommand '{}'. Try PUBSUB HELP.",
                String::from_utf8_lossy(&args[1][..args[1].len().min(128)])
            ))
        }
    };
    if !arity_ok {
        return ctx.arity_error(&format!("pubsub|{sub}"));
    }
    let registry = &ctx.shared.pubsub;
    match sub.as_str() {
        "help" => ctx.out.help(HELP),
        "channels" | "shardchannels" if argc <= 3 => {
            let kind = if sub == "channels" {
                Kind::Channel
            } else {
                Kind::Shard
            };
            let names = registry.names(kind, args.get(2).copied());
            ctx.out.strs(names.iter().map(|n| &n[..]));
        }
        "numsub" | "shardnumsub" => {
            let kind = if sub == "numsub" {
                Kind::Channel
            } else {
                Kind::Shard
            };
            ctx.out.array((argc - 2) * 2);
            for name in &args[2..] {
                ctx.out.bulk(name);
                ctx.out.int(registry.subscribers(kind, name) as i64);
            }
        }
        "numpat" => ctx.out.int(registry.count(Kind::Pattern) as i64),
        _ => ctx.out.error(&format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(&args[1][..args[1].len().min(128)])
        )),
    }
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    // pub/sub
    cmd!("subscribe", -2, PUBSUB | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Listen for messages published to the given channels", subscribe;
        props: props::SUBSCRIBED_OK | props::SUBSCRIBES,
        complexity: "O(N) where N is the number of channels to subscribe to.",
        args: "channel:string*"),
    cmd!("unsubscribe", -1, PUBSUB | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Stop listening for messages posted to the given channels", unsubscribe;
        props: props::SUBSCRIBED_OK,
        complexity: "O(N) where N is the number of clients already subscribed to a channel.",
        args: "channel:string?*"),
    cmd!("psubscribe", -2, PUBSUB | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Listen for messages published to channels matching the given patterns", psubscribe;
        props: props::SUBSCRIBED_OK | props::SUBSCRIBES | props::PATTERN_CHANNELS,
        complexity: "O(N) where N is the number of patterns the client is already subscribed to.",
        args: "pattern:block*(pattern:pattern)"),
    cmd!("punsubscribe", -1, PUBSUB | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Stop listening for messages posted to channels matching the given patterns", punsubscribe;
        props: props::SUBSCRIBED_OK,
        complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
        args: "pattern:pattern?*"),
    cmd!("ssubscribe", -2, PUBSUB | NOSCRIPT | LOADING_OK | STALE, ALLKEYS, "pubsub", "7.0.0", "Listen for messages published to the given shard channels", ssubscribe;
        props: props::SUBSCRIBED_OK | props::SHARD_CHANNELS | props::SUBSCRIBES,
        complexity: "O(N) where N is the number of shard channels to subscribe to.",
        keys: "not_key index:1 range:-1:1:0",
        args: "shardchannel:string*"),
    cmd!("sunsubscribe", -1, PUBSUB | NOSCRIPT | LOADING_OK | STALE, ALLKEYS, "pubsub", "7.0.0", "Stop listening for messages posted to the given shard channels", sunsubscribe;
        props: props::SUBSCRIBED_OK | props::SHARD_CHANNELS,
        complexity: "O(N) where N is the number of clients already subscribed to a shard channel.",
        keys: "not_key index:1 range:-1:1:0",
        args: "shardchannel:string?*"),
    cmd!("publish", 3, PUBSUB | LOADING_OK | STALE | FAST | MAY_REPLICATE, NOKEYS, "pubsub", "2.0.0", "Post a message to a channel", publish;
        props: props::PUBLISHES,
        complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
        args: "channel:string message:string"),
    cmd!("spublish", 3, PUBSUB | LOADING_OK | STALE | FAST | MAY_REPLICATE, KEY1, "pubsub", "7.0.0", "Post a message to a shard channel", spublish;
        props: props::SHARD_CHANNELS | props::PUBLISHES,
        complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
        keys: "not_key index:1 range:0:1:0",
        args: "shardchannel:string message:string"),
    cmd!("pubsub", -2, CONTAINER, NOKEYS, "pubsub", "2.8.0", "A container for Pub/Sub commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("pubsub|channels", -2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "2.8.0", "List active channels", pubsub;
        complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
        args: "pattern:pattern?"),
    cmd!("pubsub|help", 2, LOADING_OK | STALE, NOKEYS, "pubsub", "6.2.0", "Show helpful text about the different subcommands", pubsub;
        complexity: "O(1)"),
    cmd!("pubsub|numpat", 2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "2.8.0", "Get the count of unique patterns pattern subscriptions", pubsub;
        complexity: "O(1)"),
    cmd!("pubsub|numsub", -2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "2.8.0", "Get the count of subscribers for channels", pubsub;
        complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
        args: "channel:string?*"),
    cmd!("pubsub|shardchannels", -2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "7.0.0", "List active shard channels", pubsub;
        complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
        args: "pattern:pattern?"),
    cmd!("pubsub|shardnumsub", -2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "7.0.0", "Get the count of subscribers for shard channels", pubsub;
        complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
        args: "shardchannel:string?*"),
];
