//! BF.* commands with RedisBloom 2.8's replies, on filters owned by keys
//! (`blinkdb_engine::bf`), plus the internal records only replay accepts.
//!
//! Log records: creating a filter logs `BLINKDB.BFBIND` (its id), and adds log
//! only the items that were new (`BF.ADD key item` / `BF.MADD key item...`), so a
//! replayed add re-applies exactly what was counted (see `bfkeys` docs).
//!
//! Keyspace events: creating a filter is a `new` key, as with RedisBloom. Each
//! write that changes a filter is also a module-class (`d`) event named after
//! its command (`bf.reserve`, `bf.add`, `bf.madd`, `bf.insert`, `bf.loadchunk`);
//! RedisBloom 2.8 itself publishes none of these.

use super::args::{parse_i64, ERR_WRONGTYPE};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::{
    bf::{
        parse_insert, parse_reserve, BackendSpec, Binding, BloomConfig, BloomError, BloomLimits,
        BloomValue, InfoField, KeyFilterSpec, RedisBloomChain,
    },
    event::MODULE,
    Entry, Tx, Value,
};

/// The first bytes of a BlinkDB SCANDUMP header chunk (docs/bloom-file-format.md).
const BLINKDB_DUMP_MAGIC: &[u8] = b"BLINKBD\0";

const ERR_CURSOR: &str = "Second argument must be numeric";

fn limits(ctx: &mut Ctx) -> BloomLimits {
    BloomLimits::from_setting(ctx.client.settings(ctx.shared).bf_max_memory)
}

fn replaying(ctx: &Ctx) -> bool {
    ctx.shared.engine.is_loading()
}

/// The key's filter, `Ok(None)` when absent, `Err(())` (WRONGTYPE) otherwise.
fn filter_of(tx: &mut Tx, db: usize, key: &[u8]) -> Result<Option<BloomValue>, ()> {
    match tx.get(db, key) {
        None => Ok(None),
        Some(e) => e.value().as_bloom().cloned().map(Some).ok_or(()),
    }
}

fn read_filter(ctx: &Ctx, key: &[u8]) -> Result<Option<BloomValue>, ()> {
    ctx.shared.engine.read(ctx.db(), key, |e| match e {
        None => Ok(None),
        Some(e) => e.value().as_bloom().cloned().map(Some).ok_or(()),
    })
}

fn log_args(tx: &mut Tx, db: usize, record: &[Vec<u8>]) {
    let args: Vec<&[u8]> = record.iter().map(|a| &a[..]).collect();
    tx.log(db, &args);
}

/// BACKEND user|kernel and RAW width, taken out of BF.RESERVE / BF.INSERT options.
struct BackendArgs {
    kernel: Option<bool>,
    raw_width: Option<u32>,
    explicit_expansion: bool,
}

fn split_backend<'a>(options: &[&'a [u8]]) -> Result<(Vec<&'a [u8]>, BackendArgs), BloomError> {
    let mut rest = Vec::with_capacity(options.len());
    let mut found = BackendArgs {
        kernel: None,
        raw_width: None,
        explicit_expansion: false,
    };
    let mut i = 0;
    while i < options.len() {
        let word = options[i];
        if word.eq_ignore_ascii_case(b"ITEMS") {
            rest.extend_from_slice(&options[i..]);
            break;
        }
        if word.eq_ignore_ascii_case(b"EXPANSION") {
            found.explicit_expansion = true;
        }
        let value = options.get(i + 1).copied();
        if word.eq_ignore_ascii_case(b"BACKEND") {
            let v = value.ok_or(BloomError::BadBackend("BACKEND needs user or kernel"))?;
            found.kernel = Some(if v.eq_ignore_ascii_case(b"kernel") {
                true
            } else if v.eq_ignore_ascii_case(b"user") {
                false
            } else {
                return Err(BloomError::BadBackend("BACKEND must be user or kernel"));
            });
            i += 2;
            continue;
        }
        if word.eq_ignore_ascii_case(b"RAW") {
            let width = value
                .and_then(parse_i64)
                .filter(|w| (1..=1024).contains(w))
                .ok_or(BloomError::BadBackend("RAW width must be 1..1024 bytes"))?;
            found.raw_width = Some(width as u32);
            i += 2;
            continue;
        }
        rest.push(word);
        i += 1;
    }
    Ok((rest, found))
}

fn spec_for(
    ctx: &Ctx,
    mut config: BloomConfig,
    b: &BackendArgs,
) -> Result<KeyFilterSpec, BloomError> {
    let kernel = b.kernel.unwrap_or(ctx.shared.settings().bf_default_kernel);
    if !kernel {
        if b.raw_width.is_some() {
            return Err(BloomError::BadBackend("RAW needs BACKEND kernel"));
        }
        return Ok(KeyFilterSpec {
            config,
            backend: BackendSpec::User,
        });
    }
    if b.explicit_expansion {
        return Err(BloomError::KernelExpansion);
    }
    config.nonscaling = true;
    Ok(KeyFilterSpec {
        config,
        backend: BackendSpec::Kernel {
            raw_width: b.raw_width,
        },
    })
}

/// Creates a filter for `key` and logs its binding record.
fn create(
    ctx_shared: &crate::server::state::Shared,
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    spec: KeyFilterSpec,
    limits: &BloomLimits,
) -> Result<BloomValue, BloomError> {
    let value = ctx_shared.engine.blooms.create(db, key, spec, limits)?;
    tx.insert(db, key, Entry::new(Value::bloom(value.clone())));
    log_args(tx, db, &value.binding(0).encode(key));
    Ok(value)
}

fn add_results(out: &mut Out, results: &[Result<bool, BloomError>]) {
    out.array(results.len());
    for r in results {
        match r {
            Ok(b) => out.boolean(*b),
            Err(e) => out.error(&e.to_string()),
        }
    }
}

/// Logs the items a live add counted as new.
fn log_new_items(
    tx: &mut Tx,
    db: usize,
    cmd: &[u8],
    key: &[u8],
    items: &[&[u8]],
    results: &[Result<bool, BloomError>],
) {
    let mut record: Vec<&[u8]> = vec![cmd, key];
    record.extend(
        items
            .iter()
            .zip(results)
            .filter(|(_, r)| matches!(r, Ok(true)))
            .map(|(i, _)| *i),
    );
    if record.len() > 2 {
        tx.log(db, &record);
    }
}

/// Replay of an add record: the key's binding record came first; a missing key
/// (deleted later in the log, or a binding that failed) has nothing to refill.
fn replay_adds(ctx: &mut Ctx, key: &[u8], items: &[&[u8]]) {
    let limits = limits(ctx);
    let result = ctx.write1(key, |tx, db, _| match filter_of(tx, db, key) {
        Ok(Some(f)) => f.replay_items(items.iter().copied(), &limits),
        _ => Ok(()),
    });
    match result {
        Ok(()) => ctx.out.ok(),
        Err(e) => {
            tracing::warn!(key = %String::from_utf8_lossy(key), "bloom replay: {e}");
            ctx.out.error(&e.to_string())
        }
    }
}

pub fn reserve(ctx: &mut Ctx, args: &Args) {
    if args.len() < 4 {
        return ctx.arity_error("bf.reserve");
    }
    let key = &args[1];
    let options: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
    let parsed = split_backend(&options).and_then(|(rest, backend)| {
        let config = parse_reserve(&rest)?;
        spec_for(ctx, config, &backend)
    });
    let spec = match parsed {
        Ok(spec) => spec,
        Err(e) => return ctx.out.error(&e.to_string()),
    };
    let limits = limits(ctx);
    let shared = ctx.shared;
    ctx.write1(key, |tx, db, out| {
        match filter_of(tx, db, key) {
            Err(()) => return out.error(ERR_WRONGTYPE),
            Ok(Some(_)) => return out.error(&BloomError::ItemExists.to_string()),
            Ok(None) => {}
        }
        match create(shared, tx, db, key, spec, &limits) {
            Ok(_) => {
                tx.notify(MODULE, "bf.reserve", db, key);
                out.ok()
            }
            Err(e) => out.error(&e.to_string()),
        }
    });
}

/// BF.ADD, BF.MADD and BF.INSERT's shared body: find or create, add, log.
/// `event` is the command's name, notified when an item was new.
fn add_items(
    ctx: &mut Ctx,
    key: &[u8],
    items: &[&[u8]],
    create_spec: Option<KeyFilterSpec>,
    event: &'static str,
) {
    let single = event == "bf.add";
    if replaying(ctx) {
        return replay_adds(ctx, key, items);
    }
    let limits = limits(ctx);
    let shared = ctx.shared;
    ctx.write1(key, |tx, db, out| {
        let filter = match filter_of(tx, db, key) {
            Err(()) => return out.error(ERR_WRONGTYPE),
            Ok(Some(f)) => f,
            Ok(None) => match create_spec {
                None => return out.error(&BloomError::NotFound.to_string()),
                Some(spec) => match create(shared, tx, db, key, spec, &limits) {
                    Ok(f) => f,
                    Err(e) => return out.error(&e.to_string()),
                },
            },
        };
        let results = filter.madd(items.iter().copied(), &limits);
        // Opened for writing: watchers see a change, as RedisBloom's keys signal.
        tx.modified(db, key);
        let cmd: &[u8] = if single { b"BF.ADD" } else { b"BF.MADD" };
        log_new_items(tx, db, cmd, key, items, &results);
        if results.iter().any(|r| matches!(r, Ok(true))) {
            tx.notify(MODULE, event, db, key);
        }
        if single {
            match &results[0] {
                Ok(b) => out.boolean(*b),
                Err(e) => out.error(&e.to_string()),
            }
        } else {
            add_results(out, &results);
        }
    });
}

fn default_spec(ctx: &Ctx) -> Result<KeyFilterSpec, BloomError> {
    let none = BackendArgs {
        kernel: None,
        raw_width: None,
        explicit_expansion: false,
    };
    spec_for(ctx, BloomConfig::default(), &none)
}

pub fn add(ctx: &mut Ctx, args: &Args) {
    if args.len() != 3 {
        return ctx.arity_error("bf.add");
    }
    let spec = match default_spec(ctx) {
        Ok(s) => s,
        Err(e) => return ctx.out.error(&e.to_string()),
    };
    add_items(ctx, args[1], &[args[2]], Some(spec), "bf.add");
}

pub fn madd(ctx: &mut Ctx, args: &Args) {
    if args.len() < 3 {
        return ctx.arity_error("bf.madd");
    }
    let spec = match default_spec(ctx) {
        Ok(s) => s,
        Err(e) => return ctx.out.error(&e.to_string()),
    };
    let items: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
    add_items(ctx, args[1], &items, Some(spec), "bf.madd");
}

pub fn insert(ctx: &mut Ctx, args: &Args) {
    if args.len() < 2 {
        return ctx.arity_error("bf.insert");
    }
    let options: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
    let parsed = split_backend(&options).and_then(|(rest, backend)| {
        let request = parse_insert(&rest)?;
        let spec = spec_for(ctx, request.config, &backend)?;
        Ok((request.nocreate, request.items.to_vec(), spec))
    });
    let (nocreate, items, spec) = match parsed {
        Ok(p) => p,
        Err(e) => return ctx.out.error(&e.to_string()),
    };
    add_items(
        ctx,
        args[1],
        &items,
        (!nocreate).then_some(spec),
        "bf.insert",
    );
}

pub fn exists(ctx: &mut Ctx, args: &Args) {
    if args.len() != 3 {
        return ctx.arity_error("bf.exists");
    }
    match read_filter(ctx, args[1]) {
        Ok(Some(f)) => match f.exists(args[2]) {
            Ok(b) => ctx.out.boolean(b),
            Err(e) => ctx.out.error(&e.to_string()),
        },
        // RedisBloom answers 0 for a missing key and for a key of another type.
        _ => ctx.out.boolean(false),
    }
}

pub fn mexists(ctx: &mut Ctx, args: &Args) {
    if args.len() < 3 {
        return ctx.arity_error("bf.mexists");
    }
    let items = args[2..].iter().map(|a| &a[..]);
    let answers = match read_filter(ctx, args[1]) {
        Ok(Some(f)) => f.mexists(items),
        // RedisBloom answers 0s for a missing key and for a key of another type.
        _ => Ok(vec![false; args.len() - 2]),
    };
    match answers {
        Ok(answers) => {
            ctx.out.array(answers.len());
            for a in answers {
                ctx.out.boolean(a);
            }
        }
        Err(e) => ctx.out.error(&e.to_string()),
    }
}

pub fn card(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 {
        return ctx.arity_error("bf.card");
    }
    match read_filter(ctx, args[1]) {
        Err(()) => ctx.out.error(ERR_WRONGTYPE),
        Ok(f) => ctx.out.int(f.map_or(0, |f| f.card()) as i64),
    }
}

/// BF.DEBUG: RedisBloom's lines (`size:N`, then one per sub-filter) as bulk
/// strings, in RESP2 and RESP3 alike.
pub fn debug(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 {
        return ctx.arity_error("bf.debug");
    }
    match read_filter(ctx, args[1]) {
        Err(()) => ctx.out.error(ERR_WRONGTYPE),
        Ok(None) => ctx.out.error(&BloomError::NotFound.to_string()),
        Ok(Some(f)) => {
            let lines = f.debug_lines();
            ctx.out.array(lines.len());
            for line in lines {
                ctx.out.bulk(line.as_bytes());
            }
        }
    }
}

fn info_value(out: &mut Out, value: Option<u64>) {
    match value {
        Some(v) => out.int(v as i64),
        None => out.null(),
    }
}

pub fn info(ctx: &mut Ctx, args: &Args) {
    if !(2..=3).contains(&args.len()) {
        return ctx.arity_error("bf.info");
    }
    let filter = match read_filter(ctx, args[1]) {
        Err(()) => return ctx.out.error(ERR_WRONGTYPE),
        Ok(None) => return ctx.out.error(&BloomError::NotFound.to_string()),
        Ok(Some(f)) => f,
    };
    let info = filter.info();
    let b = info.bloom;
    let fields: [(&str, Option<u64>); 5] = [
        ("Capacity", Some(b.capacity)),
        ("Size", Some(b.size)),
        ("Number of filters", Some(b.filters)),
        ("Number of items inserted", Some(b.items)),
        ("Expansion rate", b.expansion),
    ];
    let out = &mut *ctx.out;
    if let Some(field) = args.get(2) {
        let index = match InfoField::parse(field) {
            Ok(InfoField::Capacity) => 0,
            Ok(InfoField::Size) => 1,
            Ok(InfoField::Filters) => 2,
            Ok(InfoField::Items) => 3,
            Ok(InfoField::Expansion) => 4,
            Err(e) => return out.error(&e.to_string()),
        };
        let (name, value) = fields[index];
        if out.resp3() {
            out.map(1);
            out.simple(name);
        } else {
            out.array(1);
        }
        return info_value(out, value);
    }
    let kernel = info.kernel;
    out.map(fields.len() + if kernel.is_some() { 4 } else { 0 });
    for (name, value) in fields {
        out.simple(name);
        info_value(out, value);
    }
    if let Some(k) = kernel {
        out.simple("Backend");
        out.simple("kernel");
        out.simple("Map id");
        out.int(k.map_id as i64);
        out.simple("Pinned path");
        out.bulk(k.pin_path.display().to_string().as_bytes());
        out.simple("Hash count");
        out.int(k.hash_count as i64);
    }
}

pub fn scandump(ctx: &mut Ctx, args: &Args) {
    if args.len() != 3 {
        return ctx.arity_error("bf.scandump");
    }
    let filter = match read_filter(ctx, args[1]) {
        Err(()) => return ctx.out.error(ERR_WRONGTYPE),
        Ok(None) => return ctx.out.error(&BloomError::NotFound.to_string()),
        Ok(Some(f)) => f,
    };
    let Some(cursor) = parse_i64(args[2]) else {
        return ctx.out.error(ERR_CURSOR);
    };
    match filter.scandump(cursor) {
        Ok((next, data)) => {
            ctx.out.array(2);
            ctx.out.int(next);
            ctx.out.bulk(&data);
        }
        Err(e) => ctx.out.error(&e.to_string()),
    }
}

pub fn loadchunk(ctx: &mut Ctx, args: &Args) {
    if args.len() != 4 {
        return ctx.arity_error("bf.loadchunk");
    }
    let Some(cursor) = parse_i64(args[2]) else {
        return ctx.out.error(&format!("ERR {ERR_CURSOR}"));
    };
    let (key, data) = (&args[1], &args[3]);
    let limits = limits(ctx);
    let replay = replaying(ctx);
    let shared = ctx.shared;
    ctx.write1(key, |tx, db, out| {
        let result = match filter_of(tx, db, key) {
            Err(()) => return out.error(ERR_WRONGTYPE),
            // RedisBloom's own header (its SCANDUMP, its AOF rewrite): the
            // filter is imported as RedisBloom's (docs/rdb-format.md), and the
            // record is logged as it came, so replay makes it again.
            Ok(None) if cursor == 1 && !data.starts_with(BLINKDB_DUMP_MAGIC) => {
                match RedisBloomChain::from_scandump_header(data, &limits) {
                    Ok(chain) => {
                        let f = shared.engine.blooms.import(chain);
                        tx.insert(db, key, Entry::new(Value::bloom(f)));
                        tx.log(db, &[b"BF.LOADCHUNK", key, args[2], data]);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Ok(None) if cursor == 1 && !replay => {
                match shared.engine.blooms.load_header(None, data, &limits) {
                    Ok(f) => {
                        tx.insert(db, key, Entry::new(Value::bloom(f.clone())));
                        let id = f.id().to_string();
                        tx.log(db, &[b"BLINKDB.BFLOADHDR", key, id.as_bytes(), data]);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Ok(None) if replay => Ok(()),
            Ok(None) => Err(BloomError::NotFound),
            Ok(Some(_)) if cursor == 1 => Err(BloomError::ItemExists),
            Ok(Some(f)) => f.load_chunk(cursor, data, replay).inspect(|_| {
                tx.modified(db, key);
                tx.log(db, &[b"BF.LOADCHUNK", key, args[2], data]);
            }),
        };
        match result {
            Ok(()) => {
                tx.notify(MODULE, "bf.loadchunk", db, key);
                out.ok()
            }
            Err(e) => out.error(&e.to_string()),
        }
    });
}

/// Internal records answer "unknown command" outside replay.
fn internal_only(ctx: &mut Ctx, args: &Args) -> bool {
    if replaying(ctx) {
        return true;
    }
    ctx.out.error_bytes(&super::unknown_command(args));
    false
}

pub fn internal_bind(ctx: &mut Ctx, args: &Args) {
    if !internal_only(ctx, args) {
        return;
    }
    let rest: Vec<&[u8]> = args.iter().skip(2).map(|a| &a[..]).collect();
    let Some(binding) = args.get(1).and(Binding::decode(&rest)) else {
        return ctx.out.error("ERR malformed BLINKDB.BFBIND record");
    };
    let key = &args[1];
    let limits = limits(ctx);
    let shared = ctx.shared;
    ctx.write1(key, |tx, db, out| match shared.engine.blooms.bind(&binding, &limits) {
        Ok(f) => {
            tx.insert(db, key, Entry::new(Value::bloom(f)));
            out.ok();
        }
        Err(e) => {
            tracing::warn!(key = %String::from_utf8_lossy(key), "bloom filter binding failed at replay: {e}");
            out.error(&e.to_string());
        }
    });
}

pub fn internal_load_header(ctx: &mut Ctx, args: &Args) {
    if !internal_only(ctx, args) {
        return;
    }
    let id = args.get(2).and_then(|a| parse_i64(a)).filter(|&i| i > 0);
    let (Some(id), Some(data), 4) = (id, args.get(3), args.len()) else {
        return ctx.out.error("ERR malformed BLINKDB.BFLOADHDR record");
    };
    let key = &args[1];
    let limits = limits(ctx);
    let shared = ctx.shared;
    ctx.write1(key, |tx, db, out| {
        match shared
            .engine
            .blooms
            .load_header(Some(id as u64), data, &limits)
        {
            Ok(f) => {
                tx.insert(db, key, Entry::new(Value::bloom(f)));
                out.ok();
            }
            Err(e) => out.error(&e.to_string()),
        }
    });
}

pub fn internal_values(ctx: &mut Ctx, args: &Args) {
    if !internal_only(ctx, args) {
        return;
    }
    if args.len() < 2 {
        return ctx.out.error("ERR malformed BLINKDB.BFVALUES record");
    }
    let key = &args[1];
    let limits = limits(ctx);
    let result = ctx.write1(key, |tx, db, _| match filter_of(tx, db, key) {
        Ok(Some(f)) => f.replay_values(args[2..].iter().map(|a| &a[..]), &limits),
        _ => Ok(()),
    });
    match result {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(&e.to_string()),
    }
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    // Bloom filters, as redis-server with RedisBloom 2.8 lists them: module
    // commands (group "module", no ACL categories), arity -1 (they check counts
    // themselves), RW key specs even for reads. BACKEND and RAW are BlinkDB's.
    cmd!("bf.reserve", -1, W | MODULE, KEY1, "module", "1.0.0", "Creates a new Bloom Filter", reserve;
        complexity: "O(1)",
        args: "key:key error_rate:double capacity:integer expansion:integer=EXPANSION? nonscaling:NONSCALING? backend:oneof=BACKEND?(user:USER kernel:KERNEL) width:integer=RAW?"),
    cmd!("bf.add", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds an item to a Bloom Filter", add;
        complexity: "O(k), where k is the number of hash functions used by the last sub-filter",
        args: "key:key item:string"),
    cmd!("bf.madd", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", madd;
        complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
        args: "key:key item:string*"),
    cmd!("bf.insert", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", insert;
        complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
        args: "key:key capacity:integer=CAPACITY? error:double=ERROR? expansion:integer=EXPANSION? nocreate:NOCREATE? nonscaling:NONSCALING? backend:oneof=BACKEND?(user:USER kernel:KERNEL) width:integer=RAW? items:ITEMS item:string*"),
    cmd!("bf.exists", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Checks whether an item exists in a Bloom Filter", exists;
        complexity: "O(k), where k is the number of hash functions used by the last sub-filter",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string"),
    cmd!("bf.mexists", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Checks whether one or more items exist in a Bloom Filter", mexists;
        complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string*"),
    cmd!("bf.info", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Returns information about a Bloom Filter", info;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key single_value:oneof?(capacity:CAPACITY size:SIZE filters:FILTERS items:ITEMS expansion:EXPANSION)"),
    cmd!("bf.card", -1, READONLY | FAST | MODULE, KEY1, "module", "2.4.4", "Returns the cardinality of a Bloom filter", card;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
    cmd!("bf.debug", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Returns information about a Bloom Filter's sub-filters", debug;
        complexity: "O(n), where n is the number of sub-filters",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
    cmd!("bf.scandump", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Begins an incremental save of the bloom filter", scandump;
        complexity: "O(n), where n is the capacity",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key iterator:integer"),
    cmd!("bf.loadchunk", -1, W | MODULE, KEY1, "module", "1.0.0", "Restores a filter previously saved using SCANDUMP", loadchunk;
        complexity: "O(n), where n is the capacity",
        args: "key:key iterator:integer data:string"),
];
