//! Every supported command with its Redis 7 arity, flags and key positions
//! (served by COMMAND so that redis-cli hints and cluster-aware clients work).

use super::{bloom, conn, keys, multi, pubsub, scripting, server, strings, Handler};
use hashbrown::HashMap;
use std::sync::OnceLock;

pub const WRITE: u32 = 1;
pub const READONLY: u32 = 1 << 1;
pub const DENYOOM: u32 = 1 << 2;
pub const FAST: u32 = 1 << 3;
pub const NO_AUTH: u32 = 1 << 4;
pub const LOADING_OK: u32 = 1 << 5;
pub const ADMIN: u32 = 1 << 6;
pub const STALE: u32 = 1 << 7;
/// Runs at once inside MULTI instead of being queued (EXEC, DISCARD, MULTI,
/// WATCH, QUIT, RESET).
pub const TX_CONTROL: u32 = 1 << 8;
pub const NO_MULTI: u32 = 1 << 9;
/// Refused inside scripts ("This Redis command is not allowed from script").
pub const NO_SCRIPT: u32 = 1 << 10;
/// Runs while a script is past its busy threshold (others get BUSY).
pub const ALLOW_BUSY: u32 = 1 << 11;

const FLAG_NAMES: &[(u32, &str)] = &[
    (WRITE, "write"),
    (READONLY, "readonly"),
    (DENYOOM, "denyoom"),
    (ADMIN, "admin"),
    (NO_AUTH, "no_auth"),
    (LOADING_OK, "loading"),
    (STALE, "stale"),
    (FAST, "fast"),
    (NO_MULTI, "no_multi"),
    (NO_SCRIPT, "noscript"),
    (ALLOW_BUSY, "allow_busy"),
];

pub struct CommandSpec {
    pub name: &'static str,
    /// Redis arity: n means exactly n arguments, -n means at least n.
    pub arity: i32,
    pub flags: u32,
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
    pub handler: Handler,
}

impl CommandSpec {
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    pub fn flag_names(&self) -> Vec<&'static str> {
        FLAG_NAMES
            .iter()
            .filter(|(f, _)| self.has(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, $keys:expr, $group:literal, $since:literal, $summary:literal, $h:path) => {
        CommandSpec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $keys.0,
            last_key: $keys.1,
            step: $keys.2,
            group: $group,
            since: $since,
            summary: $summary,
            handler: $h,
        }
    };
}

const NOKEYS: (i32, i32, i32) = (0, 0, 0);
const KEY1: (i32, i32, i32) = (1, 1, 1);
const ALLKEYS: (i32, i32, i32) = (1, -1, 1);
const W: u32 = WRITE | DENYOOM;

pub static COMMANDS: &[CommandSpec] = &[
    // strings
    cmd!("get", 2, READONLY | FAST, KEY1, "string", "1.0.0", "Returns the string value of a key.", strings::get),
    cmd!("set", -3, W, KEY1, "string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", strings::set),
    cmd!("setnx", 3, W | FAST, KEY1, "string", "1.0.0", "Set the string value of a key only when the key doesn't exist.", strings::setnx),
    cmd!("setex", 4, W, KEY1, "string", "2.0.0", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", strings::setex),
    cmd!("psetex", 4, W, KEY1, "string", "2.6.0", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", strings::psetex),
    cmd!("mget", -2, READONLY | FAST, ALLKEYS, "string", "1.0.0", "Atomically returns the string values of one or more keys.", strings::mget),
    cmd!("mset", -3, W, (1, -1, 2), "string", "1.0.1", "Atomically creates or modifies the string values of one or more keys.", strings::mset),
    cmd!("msetnx", -3, W, (1, -1, 2), "string", "1.0.1", "Atomically modifies the string values of one or more keys only when all keys don't exist.", strings::msetnx),
    cmd!("getset", 3, W | FAST, KEY1, "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value.", strings::getset),
    cmd!("getdel", 2, WRITE | FAST, KEY1, "string", "6.2.0", "Returns the string value of a key after deleting the key.", strings::getdel),
    cmd!("getex", -2, WRITE | FAST, KEY1, "string", "6.2.0", "Returns the string value of a key after setting its expiration time.", strings::getex),
    cmd!("append", 3, W | FAST, KEY1, "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist.", strings::append),
    cmd!("strlen", 2, READONLY | FAST, KEY1, "string", "2.2.0", "Returns the length of a string value.", strings::strlen),
    cmd!("getrange", 4, READONLY, KEY1, "string", "2.4.0", "Returns a substring of the string stored at a key.", strings::getrange),
    cmd!("substr", 4, READONLY, KEY1, "string", "1.0.0", "Returns a substring from a string value.", strings::getrange),
    cmd!("setrange", 4, W, KEY1, "string", "2.2.0", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", strings::setrange),
    cmd!("incr", 2, W | FAST, KEY1, "string", "1.0.0", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", strings::incr),
    cmd!("decr", 2, W | FAST, KEY1, "string", "1.0.0", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", strings::decr),
    cmd!("incrby", 3, W | FAST, KEY1, "string", "1.0.0", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", strings::incrby),
    cmd!("decrby", 3, W | FAST, KEY1, "string", "1.0.0", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", strings::decrby),
    cmd!("incrbyfloat", 3, W | FAST, KEY1, "string", "2.6.0", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", strings::incrbyfloat),
    // keyspace
    cmd!("del", -2, WRITE, ALLKEYS, "generic", "1.0.0", "Deletes one or more keys.", keys::del),
    cmd!("unlink", -2, WRITE | FAST, ALLKEYS, "generic", "4.0.0", "Asynchronously deletes one or more keys.", keys::del),
    cmd!("exists", -2, READONLY | FAST, ALLKEYS, "generic", "1.0.0", "Determines whether one or more keys exist.", keys::exists),
    cmd!("type", 2, READONLY | FAST, KEY1, "generic", "1.0.0", "Determines the type of value stored at a key.", keys::type_),
    cmd!("expire", -3, WRITE | FAST, KEY1, "generic", "1.0.0", "Sets the expiration time of a key in seconds.", keys::expire),
    cmd!("pexpire", -3, WRITE | FAST, KEY1, "generic", "2.6.0", "Sets the expiration time of a key in milliseconds.", keys::pexpire),
    cmd!("expireat", -3, WRITE | FAST, KEY1, "generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp.", keys::expireat),
    cmd!("pexpireat", -3, WRITE | FAST, KEY1, "generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp.", keys::pexpireat),
    cmd!("ttl", 2, READONLY | FAST, KEY1, "generic", "1.0.0", "Returns the expiration time in seconds of a key.", keys::ttl),
    cmd!("pttl", 2, READONLY | FAST, KEY1, "generic", "2.6.0", "Returns the expiration time in milliseconds of a key.", keys::pttl),
    cmd!("expiretime", 2, READONLY | FAST, KEY1, "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp.", keys::expiretime),
    cmd!("pexpiretime", 2, READONLY | FAST, KEY1, "generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp.", keys::pexpiretime),
    cmd!("persist", 2, WRITE | FAST, KEY1, "generic", "2.2.0", "Removes the expiration time of a key.", keys::persist),
    cmd!("keys", 2, READONLY, NOKEYS, "generic", "1.0.0", "Returns all key names that match a pattern.", keys::keys),
    cmd!("scan", -2, READONLY, NOKEYS, "generic", "2.8.0", "Iterates over the key names in the database.", keys::scan),
    cmd!("randomkey", 1, READONLY, NOKEYS, "generic", "1.0.0", "Returns a random key name from the database.", keys::randomkey),
    cmd!("rename", 3, WRITE, (1, 2, 1), "generic", "1.0.0", "Renames a key and overwrites the destination.", keys::rename),
    cmd!("renamenx", 3, WRITE | FAST, (1, 2, 1), "generic", "1.0.0", "Renames a key only when the target key name doesn't exist.", keys::renamenx),
    cmd!("copy", -3, W, (1, 2, 1), "generic", "6.2.0", "Copies the value of a key to a new key.", keys::copy),
    cmd!("move", 3, WRITE | FAST, KEY1, "generic", "1.0.0", "Moves a key to another database.", keys::move_),
    cmd!("dbsize", 1, READONLY | FAST, NOKEYS, "server", "1.0.0", "Returns the number of keys in the database.", keys::dbsize),
    cmd!("flushdb", -1, WRITE, NOKEYS, "server", "1.0.0", "Remove all keys from the current database.", keys::flushdb),
    cmd!("flushall", -1, WRITE, NOKEYS, "server", "1.0.0", "Removes all keys from all databases.", keys::flushall),
    cmd!("select", 2, LOADING_OK | STALE | FAST, NOKEYS, "connection", "1.0.0", "Changes the selected database.", conn::select),
    // transactions
    cmd!("multi", 1, LOADING_OK | STALE | FAST | TX_CONTROL | NO_SCRIPT | ALLOW_BUSY, NOKEYS, "transactions", "1.2.0", "Starts a transaction.", multi::multi),
    cmd!("exec", 1, LOADING_OK | STALE | TX_CONTROL | NO_SCRIPT, NOKEYS, "transactions", "1.2.0", "Executes all commands in a transaction.", multi::exec),
    cmd!("discard", 1, LOADING_OK | STALE | FAST | TX_CONTROL | NO_SCRIPT | ALLOW_BUSY, NOKEYS, "transactions", "2.0.0", "Discards a transaction.", multi::discard),
    cmd!("watch", -2, LOADING_OK | STALE | FAST | TX_CONTROL | NO_SCRIPT | ALLOW_BUSY, ALLKEYS, "transactions", "2.2.0", "Monitors changes to keys to determine the execution of a transaction.", multi::watch),
    cmd!("unwatch", 1, LOADING_OK | STALE | FAST | NO_SCRIPT | ALLOW_BUSY, NOKEYS, "transactions", "2.2.0", "Forgets about watched keys of a transaction.", multi::unwatch),
    cmd!("swapdb", 3, WRITE | FAST, NOKEYS, "server", "4.0.0", "Swaps two Redis databases.", keys::swapdb),
    // scripting
    cmd!("eval", -3, NO_SCRIPT | STALE, NOKEYS, "scripting", "2.6.0", "Executes a server-side Lua script.", scripting::eval),
    cmd!("evalsha", -3, NO_SCRIPT | STALE, NOKEYS, "scripting", "2.6.0", "Executes a server-side Lua script by SHA1 digest.", scripting::evalsha),
    cmd!("eval_ro", -3, NO_SCRIPT | STALE | READONLY, NOKEYS, "scripting", "7.0.0", "Executes a read-only server-side Lua script.", scripting::eval_ro),
    cmd!("evalsha_ro", -3, NO_SCRIPT | STALE | READONLY, NOKEYS, "scripting", "7.0.0", "Executes a read-only server-side Lua script by SHA1 digest.", scripting::evalsha_ro),
    cmd!("script", -2, NO_SCRIPT, NOKEYS, "scripting", "2.6.0", "A container for Lua scripts management commands.", scripting::script),
    // connection
    cmd!("ping", -1, FAST | STALE, NOKEYS, "connection", "1.0.0", "Returns the server's liveliness response.", conn::ping),
    cmd!("echo", 2, FAST | STALE, NOKEYS, "connection", "1.0.0", "Returns the given string.", conn::echo),
    cmd!("quit", -1, NO_AUTH | LOADING_OK | STALE | FAST | TX_CONTROL | NO_SCRIPT | ALLOW_BUSY, NOKEYS, "connection", "1.0.0", "Closes the connection.", conn::quit),
    cmd!("reset", 1, NO_AUTH | LOADING_OK | STALE | FAST | TX_CONTROL | NO_SCRIPT | ALLOW_BUSY, NOKEYS, "connection", "6.2.0", "Resets the connection.", conn::reset),
    cmd!("hello", -1, NO_AUTH | LOADING_OK | STALE | FAST | NO_SCRIPT | ALLOW_BUSY, NOKEYS, "connection", "6.0.0", "Handshakes with the Redis server.", conn::hello),
    cmd!("auth", -2, NO_AUTH | LOADING_OK | STALE | FAST | NO_SCRIPT | ALLOW_BUSY, NOKEYS, "connection", "1.0.0", "Authenticates the connection.", conn::auth),
    cmd!("client", -2, LOADING_OK | STALE | NO_SCRIPT, NOKEYS, "connection", "2.4.0", "A container for client connection commands.", conn::client),
    // server
    cmd!("command", -1, LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Returns detailed information about all commands.", server::command),
    cmd!("config", -2, ADMIN | LOADING_OK | STALE | NO_SCRIPT, NOKEYS, "server", "2.0.0", "A container for server configuration commands.", server::config),
    cmd!("info", -1, LOADING_OK | STALE, NOKEYS, "server", "1.0.0", "Returns information and statistics about the server.", server::info),
    cmd!("time", 1, LOADING_OK | STALE | FAST, NOKEYS, "server", "2.6.0", "Returns the server time.", server::time),
    cmd!("shutdown", -1, ADMIN | LOADING_OK | STALE | NO_MULTI | NO_SCRIPT | ALLOW_BUSY, NOKEYS, "server", "1.0.0", "Synchronously saves the database(s) to disk and shuts down the Redis server.", server::shutdown),
    cmd!("memory", -2, READONLY, NOKEYS, "server", "4.0.0", "A container for memory diagnostics commands.", server::memory),
    cmd!("bgrewriteaof", 1, ADMIN | STALE | NO_SCRIPT, NOKEYS, "server", "1.0.0", "Asynchronously rewrites the append-only file to disk.", server::bgrewriteaof),
    // Bloom filters: RedisBloom 2.8 registers them with arity -1 and checks counts itself.
    cmd!("bf.reserve", -1, W, KEY1, "bf", "1.0.0", "Creates a new Bloom Filter", bloom::reserve),
    cmd!("bf.add", -1, W, KEY1, "bf", "1.0.0", "Adds an item to a Bloom Filter", bloom::add),
    cmd!("bf.madd", -1, W, KEY1, "bf", "1.0.0", "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", bloom::madd),
    cmd!("bf.insert", -1, W, KEY1, "bf", "1.0.0", "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", bloom::insert),
    cmd!("bf.exists", -1, READONLY | FAST, KEY1, "bf", "1.0.0", "Checks whether an item exists in a Bloom Filter", bloom::exists),
    cmd!("bf.mexists", -1, READONLY | FAST, KEY1, "bf", "1.0.0", "Checks whether one or more items exist in a Bloom Filter", bloom::mexists),
    cmd!("bf.info", -1, READONLY | FAST, KEY1, "bf", "1.0.0", "Returns information about a Bloom Filter", bloom::info),
    cmd!("bf.card", -1, READONLY | FAST, KEY1, "bf", "2.4.4", "Returns the cardinality of a Bloom filter", bloom::card),
    cmd!("bf.scandump", -1, READONLY | FAST, KEY1, "bf", "1.0.0", "Begins an incremental save of the bloom filter", bloom::scandump),
    cmd!("bf.loadchunk", -1, W, KEY1, "bf", "1.0.0", "Restores a filter previously saved using SCANDUMP", bloom::loadchunk),
    // pub/sub
    cmd!("subscribe", -2, LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Listens for messages published to channels.", pubsub::subscribe),
    cmd!("unsubscribe", -1, LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Stops listening to messages posted to channels.", pubsub::unsubscribe),
    cmd!("psubscribe", -2, LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Listens for messages published to channels that match one or more patterns.", pubsub::psubscribe),
    cmd!("punsubscribe", -1, LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Stops listening to messages published to channels that match one or more patterns.", pubsub::punsubscribe),
    cmd!("ssubscribe", -2, LOADING_OK | STALE, ALLKEYS, "pubsub", "7.0.0", "Listens for messages published to shard channels.", pubsub::ssubscribe),
    cmd!("sunsubscribe", -1, LOADING_OK | STALE, ALLKEYS, "pubsub", "7.0.0", "Stops listening to messages posted to shard channels.", pubsub::sunsubscribe),
    cmd!("publish", 3, LOADING_OK | STALE | FAST, NOKEYS, "pubsub", "2.0.0", "Posts a message to a channel.", pubsub::publish),
    cmd!("spublish", 3, LOADING_OK | STALE | FAST, KEY1, "pubsub", "7.0.0", "Post a message to a shard channel", pubsub::spublish),
    cmd!("pubsub", -2, 0, NOKEYS, "pubsub", "2.8.0", "A container for Pub/Sub commands.", pubsub::pubsub),
    cmd!("lastsave", 1, LOADING_OK | STALE | FAST, NOKEYS, "server", "1.0.0", "Returns the Unix timestamp of the last successful save to disk.", server::lastsave),
];

/// Records only the log replay may run (clients get "unknown command"):
/// not listed by COMMAND.
pub static INTERNAL: &[CommandSpec] = &[
    cmd!(
        "blinkdb.bfbind",
        -2,
        W | LOADING_OK,
        KEY1,
        "bf",
        "0.1.0",
        "Binds a key to its Bloom filter files (log replay only).",
        bloom::internal_bind
    ),
    cmd!(
        "blinkdb.bfloadhdr",
        -2,
        W | LOADING_OK,
        KEY1,
        "bf",
        "0.1.0",
        "Replays a BF.LOADCHUNK header step (log replay only).",
        bloom::internal_load_header
    ),
    cmd!(
        "blinkdb.bfvalues",
        -2,
        W | LOADING_OK,
        KEY1,
        "bf",
        "0.1.0",
        "Replays stored kernel filter values (log replay only).",
        bloom::internal_values
    ),
];

/// Finds an internal (replay-only) record name, ignoring ASCII case.
pub fn lookup_internal(name: &[u8]) -> Option<&'static CommandSpec> {
    INTERNAL
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
}

static INDEX: OnceLock<HashMap<&'static str, &'static CommandSpec>> = OnceLock::new();

/// Finds a command by name, ignoring ASCII case.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    let index = INDEX.get_or_init(|| COMMANDS.iter().map(|c| (c.name, c)).collect());
    if name.len() > 32 {
        return None;
    }
    let mut lower = [0u8; 32];
    let lower = &mut lower[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    std::str::from_utf8(lower)
        .ok()
        .and_then(|n| index.get(n).copied())
}
