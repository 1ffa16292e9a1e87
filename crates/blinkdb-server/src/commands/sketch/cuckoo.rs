//! CF.* commands with RedisBloom 2.8.2's replies (RESP2 and RESP3), error
//! texts (several without `ERR `), argument quirks and key handling, on
//! `blinkdb_engine::cf::CuckooFilter` (RedisBloom's algorithm, byte for byte).
//!
//! Quirks kept because clients see them: CF.EXISTS/MEXISTS/COUNT answer 0
//! for a key of another type; CF.DEL and CF.COMPACT answer their own
//! not-found texts for one; CF.RESERVE finds its options anywhere in the
//! command line (RMUtil_ArgIndex) and ignores unknown words; CF.INSERT takes
//! any word starting with c/i/n as CAPACITY/ITEMS/NOCREATE.
//!
//! Log records: each command that changed a filter is logged as sent; unlike
//! RedisBloom, CF.LOADCHUNK's data chunks are logged too (RedisBloom
//! replicates only the header chunk, so its replicas miss the data).
//! Keyspace events: `new` when a filter is created; RedisBloom publishes no
//! others. Writes signal the key (WATCH, tracking) whenever they opened it for
//! writing, changed or not, as a module key opened for writing does.

use super::{create, get, modify, modify_found, read, update, WrongType};
use crate::commands::args::{parse_i64, ERR_WRONGTYPE};
use crate::commands::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::cf::{
    hash_item, CuckooFilter, Header, Insert, DEFAULT_BUCKET_SIZE, DEFAULT_CAPACITY,
    DEFAULT_EXPANSION, DEFAULT_MAX_ITERATIONS, HEADER_LEN, MAX_BUCKET_SIZE, MAX_EXPANSION,
    MAX_FILTERS_FOR_INSERT, MAX_ITERATIONS,
};
use smallvec::SmallVec;

const ERR_NOT_FOUND: &str = "ERR not found";
const ERR_EXISTS: &str = "ERR item exists";
const ERR_POSITION: &str = "Invalid position";
const ERR_SMALL: &str = "Capacity must be at least (BucketSize * 2)";

fn max_bytes(ctx: &mut Ctx) -> u64 {
    ctx.client.settings(ctx.shared).sketch_max_memory
}

/// RMUtil_ArgIndex: the first argument equal to `name` ignoring case,
/// counting from the command name.
fn arg_index(args: &Args, name: &str) -> Option<usize> {
    (0..args.len()).find(|&i| args[i].eq_ignore_ascii_case(name.as_bytes()))
}

/// CF.RESERVE's option `name`: `default` when absent, else its value within
/// `range`, or RedisBloom's two errors. A name with nothing after it (which
/// RedisBloom reads past its arguments for) fails to parse.
fn reserve_option(
    args: &Args,
    name: &str,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, String> {
    let Some(at) = arg_index(args, name) else {
        return Ok(default);
    };
    let Some(v) = (at + 1 < args.len())
        .then(|| parse_i64(args[at + 1]))
        .flatten()
    else {
        return Err(format!("Couldn't parse {name}"));
    };
    if !range.contains(&v) {
        return Err(format!(
            "{name}: value must be an integer between {} and {}, inclusive.",
            range.start(),
            range.end()
        ));
    }
    Ok(v)
}

pub fn reserve(ctx: &mut Ctx, args: &Args) {
    if args.len() < 3 || args.len().is_multiple_of(2) {
        return ctx.arity_error("cf.reserve");
    }
    let Some(capacity) = parse_i64(args[2]) else {
        return ctx.out.error("Bad capacity");
    };
    let options = (|| {
        let mi = reserve_option(
            args,
            "MAXITERATIONS",
            DEFAULT_MAX_ITERATIONS as i64,
            1..=MAX_ITERATIONS,
        )?;
        let bs = reserve_option(
            args,
            "BUCKETSIZE",
            DEFAULT_BUCKET_SIZE as i64,
            1..=MAX_BUCKET_SIZE,
        )?;
        let exp = reserve_option(
            args,
            "EXPANSION",
            DEFAULT_EXPANSION as i64,
            0..=MAX_EXPANSION,
        )?;
        Ok::<_, String>((mi as u16, bs as u16, exp as u16))
    })();
    let (max_iterations, bucket_size, expansion) = match options {
        Ok(o) => o,
        Err(e) => return ctx.out.error(&e),
    };
    if bucket_size as i64 * 2 > capacity {
        return ctx.out.error(ERR_SMALL);
    }
    let max = max_bytes(ctx);
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        tx.modified(db, key);
        match get::<CuckooFilter>(tx, db, key) {
            Err(WrongType) => return out.error(ERR_WRONGTYPE),
            Ok(Some(_)) => return out.error(ERR_EXISTS),
            Ok(None) => {}
        }
        let cf = CuckooFilter::new(capacity as u64, bucket_size, max_iterations, expansion, max);
        let Some(cf) = cf else {
            return out.error("Couldn't create Cuckoo Filter");
        };
        create(tx, db, key, cf);
        tx.log(db, args);
        tx.sketch_changed(db, key);
        out.ok();
    });
}

/// What CF.ADD, ADDNX, INSERT and INSERTNX were asked.
struct InsertOptions {
    nx: bool,
    multi: bool,
    autocreate: bool,
    capacity: i64,
}

/// cfInsertCommon: finds or creates the filter, adds each item, replies.
fn insert_items(ctx: &mut Ctx, args: &Args, items: &[&[u8]], o: InsertOptions) {
    let max = max_bytes(ctx);
    let key = args[1];
    let hashes: SmallVec<[u64; 1]> = items.iter().map(|item| hash_item(item)).collect();
    let add_all = |cf: &mut CuckooFilter| -> SmallVec<[Insert; 1]> {
        cf.insert_many(&hashes, o.nx, max).collect()
    };
    ctx.write1(key, |tx, db, out| {
        // One lookup finds the filter and adds (`update`); the key is
        // signalled whatever is found, as RedisBloom opens it for writing.
        let found = update(tx, db, key, |cf: &mut CuckooFilter| {
            (cf.num_filters() < MAX_FILTERS_FOR_INSERT).then(|| add_all(cf))
        });
        if !matches!(found, Ok(Some(_))) {
            tx.modified(db, key);
        }
        let mut created = false;
        let results = match found {
            Err(WrongType) => return out.error(ERR_WRONGTYPE),
            Ok(Some(None)) => return out.error("Maximum expansions reached"),
            Ok(Some(Some(results))) => results,
            Ok(None) if !o.autocreate => return out.error(ERR_NOT_FOUND),
            Ok(None) => {
                let cf = CuckooFilter::new(
                    o.capacity as u64,
                    DEFAULT_BUCKET_SIZE,
                    DEFAULT_MAX_ITERATIONS,
                    DEFAULT_EXPANSION,
                    max,
                );
                let Some(cf) = cf else {
                    return out.error("Could not create filter");
                };
                create(tx, db, key, cf);
                created = true;
                modify_found(tx, db, key, add_all)
            }
        };
        if created || results.contains(&Insert::Inserted) {
            tx.log(db, args);
            tx.sketch_changed(db, key);
        }
        if o.multi {
            out.array(results.len());
        }
        // RESP3 booleans except for INSERTNX, which answers integers.
        let booleans = out.resp3() && (!o.nx || !o.multi);
        for r in results {
            match r {
                Insert::Inserted | Insert::Exists if booleans => out.boolean(r == Insert::Inserted),
                Insert::Inserted => out.int(1),
                Insert::Exists => out.int(0),
                Insert::NoSpace if !o.multi => return out.error("Filter is full"),
                Insert::NoSpace if out.resp3() && !o.nx => out.boolean(false),
                Insert::NoSpace => out.int(-1),
                Insert::TooBig => out.error("Memory allocation failure"),
            }
        }
    });
}

fn add_generic(ctx: &mut Ctx, args: &Args, nx: bool) {
    if args.len() != 3 {
        return ctx.arity_error(if nx { "cf.addnx" } else { "cf.add" });
    }
    let options = InsertOptions {
        nx,
        multi: false,
        autocreate: true,
        capacity: DEFAULT_CAPACITY,
    };
    insert_items(ctx, args, &[args[2]], options);
}

pub fn add(ctx: &mut Ctx, args: &Args) {
    add_generic(ctx, args, false);
}

pub fn addnx(ctx: &mut Ctx, args: &Args) {
    add_generic(ctx, args, true);
}

/// CF.INSERT/INSERTNX key [CAPACITY n] [NOCREATE] ITEMS item...: RedisBloom
/// reads each option by its first letter.
fn insert_generic(ctx: &mut Ctx, args: &Args, nx: bool) {
    let name = if nx { "cf.insertnx" } else { "cf.insert" };
    if args.len() < 4 {
        return ctx.arity_error(name);
    }
    let mut o = InsertOptions {
        nx,
        multi: true,
        autocreate: true,
        capacity: DEFAULT_CAPACITY,
    };
    let mut at = 2;
    let mut items_at = None;
    while at < args.len() && items_at.is_none() {
        match args[at].first().map(u8::to_ascii_lowercase) {
            Some(b'c') => {
                at += 1;
                if at == args.len() {
                    return ctx.arity_error(name);
                }
                let Some(capacity) = parse_i64(args[at]) else {
                    return ctx.out.error("Bad capacity");
                };
                at += 1;
                if 2 * (DEFAULT_BUCKET_SIZE as i64) > capacity {
                    return ctx.out.error(ERR_SMALL);
                }
                o.capacity = capacity;
            }
            Some(b'i') => {
                at += 1;
                items_at = Some(at);
            }
            Some(b'n') => {
                o.autocreate = false;
                at += 1;
            }
            _ => return ctx.out.error("Unknown argument received"),
        }
    }
    let Some(items_at) = items_at.filter(|&i| i < args.len()) else {
        return ctx.arity_error(name);
    };
    let items: Vec<&[u8]> = (items_at..args.len()).map(|i| args[i]).collect();
    insert_items(ctx, args, &items, o);
}

pub fn insert(ctx: &mut Ctx, args: &Args) {
    insert_generic(ctx, args, false);
}

pub fn insertnx(ctx: &mut Ctx, args: &Args) {
    insert_generic(ctx, args, true);
}

/// CF.EXISTS, CF.MEXISTS and CF.COUNT (CFCheck): a missing key, or one of
/// another type, answers 0 for every item.
fn check(ctx: &mut Ctx, args: &Args, multi: bool, count: bool) {
    let arity_ok = if multi {
        args.len() >= 3
    } else {
        args.len() == 3
    };
    if !arity_ok {
        let name = match (multi, count) {
            (true, _) => "cf.mexists",
            (false, true) => "cf.count",
            (false, false) => "cf.exists",
        };
        return ctx.arity_error(name);
    }
    let items = &args[2..];
    read(ctx, args[1], |cf: Result<Option<&CuckooFilter>, _>, out| {
        let cf = cf.ok().flatten();
        if multi {
            out.array(items.len());
            if let Some(cf) = cf {
                let hashes: SmallVec<[u64; 1]> = items.iter().map(|i| hash_item(i)).collect();
                return cf.check_many(&hashes).for_each(|found| out.boolean(found));
            }
        }
        for item in items {
            let n = match cf {
                None => 0,
                Some(cf) if count => cf.count(hash_item(item)),
                Some(cf) => cf.check(hash_item(item)) as u64,
            };
            if count {
                out.int(n as i64);
            } else {
                out.boolean(n != 0);
            }
        }
    });
}

pub fn exists(ctx: &mut Ctx, args: &Args) {
    check(ctx, args, false, false);
}

pub fn mexists(ctx: &mut Ctx, args: &Args) {
    check(ctx, args, true, false);
}

pub fn count(ctx: &mut Ctx, args: &Args) {
    check(ctx, args, false, true);
}

pub fn del(ctx: &mut Ctx, args: &Args) {
    if args.len() != 3 {
        return ctx.arity_error("cf.del");
    }
    let (key, item) = (args[1], args[2]);
    ctx.write1(key, |tx, db, out| {
        tx.modified(db, key);
        let deleted = modify(tx, db, key, |cf: &mut CuckooFilter| {
            cf.delete(hash_item(item))
        });
        match deleted {
            // A key of another type is "Not found" too.
            None => out.error("Not found"),
            Some(d) => {
                if d {
                    tx.log(db, args);
                    tx.sketch_changed(db, key);
                }
                out.boolean(d)
            }
        }
    });
}

pub fn compact(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 {
        return ctx.arity_error("cf.compact");
    }
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        tx.modified(db, key);
        match modify(tx, db, key, |cf: &mut CuckooFilter| cf.compact(true)) {
            None => out.error("Cuckoo filter was not found"),
            Some(()) => {
                tx.log(db, args);
                tx.sketch_changed(db, key);
                out.ok()
            }
        }
    });
}

/// The filter of CF.INFO/DEBUG/SCANDUMP, or its error replied.
fn read_or_reply<R>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(&CuckooFilter, &mut Out) -> R,
) -> Option<R> {
    read(
        ctx,
        key,
        |cf: Result<Option<&CuckooFilter>, _>, out| match cf {
            Err(WrongType) => {
                out.error(ERR_WRONGTYPE);
                None
            }
            Ok(None) => {
                out.error(ERR_NOT_FOUND);
                None
            }
            Ok(Some(cf)) => Some(f(cf, out)),
        },
    )
}

pub fn info(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 {
        return ctx.arity_error("cf.info");
    }
    read_or_reply(ctx, args[1], |cf, out| {
        let fields: [(&str, u64); 8] = [
            ("Size", cf.size()),
            ("Number of buckets", cf.num_buckets()),
            ("Number of filters", cf.num_filters() as u64),
            ("Number of items inserted", cf.num_items()),
            ("Number of items deleted", cf.num_deletes()),
            ("Bucket size", cf.bucket_size() as u64),
            ("Expansion rate", cf.expansion() as u64),
            ("Max iterations", cf.max_iterations() as u64),
        ];
        out.map(fields.len());
        for (name, v) in fields {
            out.simple(name);
            out.int(v as i64);
        }
    });
}

pub fn debug(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 {
        return ctx.arity_error("cf.debug");
    }
    read_or_reply(ctx, args[1], |cf, out| out.bulk(cf.debug_line().as_bytes()));
}

pub fn scandump(ctx: &mut Ctx, args: &Args) {
    if args.len() != 3 {
        return ctx.arity_error("cf.scandump");
    }
    let Some(pos) = parse_i64(args[2]).filter(|&p| p >= 0) else {
        return ctx.out.error(ERR_POSITION);
    };
    read_or_reply(ctx, args[1], |cf, out| {
        out.array(2);
        if cf.num_items() == 0 {
            out.int(0);
            return out.null();
        }
        if pos == 0 {
            out.int(1);
            return out.bulk(&Header::of(cf).to_bytes());
        }
        match cf.chunk_at(pos) {
            Some((next, chunk)) => {
                out.int(next);
                out.bulk(chunk);
            }
            None => {
                out.int(0);
                out.null();
            }
        }
    });
}

pub fn loadchunk(ctx: &mut Ctx, args: &Args) {
    if args.len() != 4 {
        return ctx.arity_error("cf.loadchunk");
    }
    let max = max_bytes(ctx);
    let (key, data) = (args[1], args[3]);
    let pos = parse_i64(args[2]).filter(|&p| p != 0);
    ctx.write1(key, |tx, db, out| {
        // RedisBloom opens the key before it reads the position.
        tx.modified(db, key);
        let Some(pos) = pos else {
            return out.error(ERR_POSITION);
        };
        let status = get::<CuckooFilter>(tx, db, key).map(|cf| cf.is_some());
        if pos == 1 {
            match status {
                Err(WrongType) => return out.error(ERR_WRONGTYPE),
                Ok(true) => return out.error(ERR_EXISTS),
                Ok(false) if data.len() != HEADER_LEN => return out.error("Invalid header"),
                Ok(false) => {}
            }
            let Some(cf) = CuckooFilter::from_header(data, max) else {
                return out.error("Couldn't create filter!");
            };
            create(tx, db, key, cf);
            tx.log(db, args);
            tx.sketch_changed(db, key);
            return out.ok();
        }
        match status {
            Err(WrongType) => return out.error(ERR_WRONGTYPE),
            Ok(false) => return out.error(ERR_NOT_FOUND),
            Ok(true) => {}
        }
        let loaded = modify(tx, db, key, |cf: &mut CuckooFilter| {
            cf.load_chunk(pos, data)
        });
        if loaded == Some(true) {
            tx.log(db, args);
            tx.sketch_changed(db, key);
            out.ok()
        } else {
            out.error("Couldn't load chunk!")
        }
    });
}

use crate::commands::table::cmd;

/// This family's entries of the command table. As redis-server with
/// RedisBloom 2.8 lists them: module commands (no ACL categories), arity -1
/// (they check counts themselves), key range 1 1 1, `write deny-oom` or
/// `readonly fast` as RedisBloom registers them (CF.DEL `write fast`;
/// CF.COMPACT `readonly fast` although it writes). DOCS add RedisBloom's
/// summary, complexity and arguments (commands.json).
#[rustfmt::skip]
pub(in crate::commands) const COMMANDS: &[crate::commands::table::CommandSpec] = &[
    cmd!("cf.reserve", -1, W | MODULE, KEY1, "module", "1.0.0", "Creates a new Cuckoo Filter", reserve;
        complexity: "O(1)",
        props: props::FILE_COVERED,
        args: "key:key capacity:integer bucketsize:integer=BUCKETSIZE? maxiterations:integer=MAXITERATIONS? expansion:integer=EXPANSION?"),
    cmd!("cf.add", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds an item to a Cuckoo Filter", add;
        complexity: "O(k + i), where k is the number of sub-filters and i is maxIterations",
        props: props::FILE_COVERED,
        args: "key:key item:string"),
    cmd!("cf.addnx", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds an item to a Cuckoo Filter if the item did not exist previously.", addnx;
        complexity: "O(k + i), where k is the number of sub-filters and i is maxIterations",
        props: props::FILE_COVERED,
        args: "key:key item:string"),
    cmd!("cf.insert", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist", insert;
        complexity: "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations",
        props: props::FILE_COVERED,
        args: "key:key capacity:integer=CAPACITY? nocreate:NOCREATE? items:ITEMS item:string*"),
    cmd!("cf.insertnx", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter will be created if it does not exist", insertnx;
        complexity: "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations",
        props: props::FILE_COVERED,
        args: "key:key capacity:integer=CAPACITY? nocreate:NOCREATE? items:ITEMS item:string*"),
    cmd!("cf.exists", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Checks whether one or more items exist in a Cuckoo Filter", exists;
        complexity: "O(k), where k is the number of sub-filters",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string"),
    cmd!("cf.mexists", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Checks whether one or more items exist in a Cuckoo Filter", mexists;
        complexity: "O(k * n), where k is the number of sub-filters and n is the number of items",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string*"),
    cmd!("cf.count", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Return the number of times an item might be in a Cuckoo Filter", count;
        complexity: "O(k), where k is the number of sub-filters",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string"),
    cmd!("cf.del", -1, WRITE | FAST | MODULE, KEY1, "module", "1.0.0", "Deletes an item from a Cuckoo Filter", del;
        complexity: "O(k), where k is the number of sub-filters",
        props: props::FILE_COVERED,
        args: "key:key item:string"),
    cmd!("cf.compact", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Compacts the sub-filters of a Cuckoo Filter", compact;
        complexity: "O(n), where n is the number of slots",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
    cmd!("cf.scandump", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Begins an incremental save of the bloom filter", scandump;
        complexity: "O(n), where n is the capacity",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key iterator:integer"),
    cmd!("cf.loadchunk", -1, W | MODULE, KEY1, "module", "1.0.0", "Restores a filter previously saved using SCANDUMP", loadchunk;
        complexity: "O(n), where n is the capacity",
        props: props::FILE_COVERED,
        args: "key:key iterator:integer data:string"),
    cmd!("cf.info", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Returns information about a Cuckoo Filter", info;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
    cmd!("cf.debug", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Describes the shape of a Cuckoo Filter", debug;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
];
