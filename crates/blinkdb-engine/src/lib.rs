//! BlinkDB storage engine: the keyspace and everything that persists it.
//!
//! This crate knows nothing about sockets or the client protocol. The server
//! crate parses commands and calls into [`Engine`].
//!
//! The modules are private: what a user of the engine needs is re-exported
//! below, types at the root and families of functions and constants in a few
//! small namespaces, so the compiler reports what nothing uses.

mod aof;
mod bfkeys;
mod bits;
mod bloom;
mod checksum;
mod clock;
pub mod debug_delay;
mod engine;
mod evict;
mod evict_sampled;
mod existence;
mod filter;
mod kernel;
mod keyspace;
mod notify;
mod pattern;
mod persist;
mod prefetch;
mod rdb;
mod ready;
mod rewrite;
mod sketch;
mod sketch_files;
mod splitargs;
mod types;

// The keyspace and its transactions.
/// The error reply for a large value whose read from the log failed.
pub use engine::blob_read_error;
/// What the server installs to receive the writes to propagate, and the scope that writes none.
pub use engine::{unlogged, WriteFeed};
/// The engine, how it is opened, and the transaction every command runs in.
pub use engine::{Engine, EngineOptions, TakenDataset, Tx};
/// Access-time bookkeeping (OBJECT IDLETIME, commands that do not touch keys).
pub use keyspace::access;
/// The cluster hash slot of a key (CRC16 of its hash tag).
pub use keyspace::slots::key_slot;
/// WATCH's per-key dirty flag.
pub use keyspace::WatchFlag;
/// A key's entry and value, its metadata, where a write came from, the per-db maps.
pub use keyspace::{table_mapped_bytes, Db, Entry, InlineBytes, Meta, Origin, Value, SHARDS};

// Values.
/// Whether a hash field expiring at a time (0: never) is past it at a clock (0: stopped).
pub use types::hash::field_expired as hash_field_expired;
/// The order of sorted-set members: by score, then bytewise.
pub use types::zset::order as zset_order;
/// Doubles formatted as Redis replies them.
pub use types::{fmt_double, write_double};
/// The size from which a list element is a plain node (DEBUG QUICKLIST-PACKED-THRESHOLD).
pub use types::{packed_threshold, DEFAULT_PACKED_THRESHOLD};
/// The collection types a `Value` holds and their size limits (the `*-max-listpack-*` options).
pub use types::{HashValue, Limits, ListShape, ListValue, SetValue, StreamValue, ZSetValue};
/// Counters of values freed in the background (INFO lazyfree_*).
pub use types::{LAZYFREED, LAZYFREE_PENDING};

/// Streams: ids, consumer groups, pending entries, trimming.
pub mod stream {
    pub use crate::types::stream::{EntryRef, Group, Nack, NodeLimits, ParsedId, StreamId, Trim};
}

/// HyperLogLog on a string value (PFADD, PFCOUNT, PFMERGE, PFDEBUG).
pub mod hll {
    pub use crate::types::hll::{
        add, cached_count, count, decode_sparse, dense_holds_all, dense_registers, encoding_of,
        estimate, invalidate_cache, merge_into, new_sparse, raw_histogram, selftest,
        set_cached_count, store_merged, to_dense, Encoding, HllError, DENSE_LEN, HEADER_LEN,
        REGISTERS,
    };
}

/// Bit operations on a string value (BITCOUNT, BITPOS, BITFIELD, BITOP).
pub mod bitmap {
    pub use crate::bits::{
        add_signed, add_unsigned, bitop, first_bit, get_signed, get_unsigned, popcount,
        set_unsigned, BitOp, Overflow,
    };
}

/// Keyspace event classes (`notify-keyspace-events`) and the observer that receives events.
pub mod event {
    pub use crate::notify::{
        Observer, ALL, EVICTED, EXPIRED, GENERIC, HASH, KEYEVENT, KEYSPACE, KEY_MISS, LIST, MODULE,
        NEW, SET, STREAM, STRING, TRACKING, ZSET,
    };
}

/// Keys a write made ready for clients blocked on them (BLPOP and friends).
pub mod ready_keys {
    pub use crate::ready::{pending, signal, take};
}

// Time and matching.
/// The wall clock in ms and µs, and pinning it for one batch of commands (Redis's cached `mstime`).
pub use clock::{batch as batch_clock, now_ms, now_us, pin as pin_clock};
/// Redis's glob (KEYS, SCAN MATCH, PSUBSCRIBE) and its quoted-argument splitter (config files, CLI).
pub use pattern::glob_match;
pub use splitargs::split_args;

// Eviction.
/// One step of segment eviction (cache mode) and the sampled `maxmemory-policy` policies.
pub use evict::EvictStep;
pub use evict_sampled::{Policy as EvictionPolicy, Rank as EvictionRank};

// Persistence.
/// Storage that fails on demand, for crash and disk-full tests of the AOF.
pub use aof::fault::FaultStorage;
/// A failed AOF write or fsync, as INFO and the error replies report it.
pub use aof::Failure as AofFailure;
/// The append-only file: options, fsync policy, errors, positions and large values in it.
pub use aof::{
    Aof, AofError, AofOptions, BlobRef, BlobSource, FileId, FsyncPolicy, Lsn, Result as AofResult,
};
/// What loading the AOF yields: commands, their arguments, the RDB preamble, counts.
pub use aof::{Arg as AofArg, LoadStats, LoadedCommand, RdbBase};
/// The engine's command log on top of the AOF.
pub use persist::Log;
/// What an AOF rewrite wrote.
pub use rewrite::{RewriteReport, BGSAVE_ABORTED};

/// The RDB codec: DUMP/RESTORE payloads, FUNCTION DUMP and `dump.rdb` files (docs/rdb-format.md).
pub mod rdb_format {
    pub use crate::rdb::{
        bloom_payload, create_payload, dump_value, dump_value_native, kind, load_file,
        load_file_sized, load_stream, object_type, opcode, read_old_function, restore_value,
        string_in_place, verify_payload, write_object, write_string, Loaded, LoadedKey, More, Next,
        RdbError, RdbFileWriter, Reader, CRC64, ERR_PAYLOAD,
    };
}

/// BF.* Bloom filters: arguments, chains, the filters keys own and their files.
pub mod bf {
    pub use crate::bfkeys::{
        BackendSpec, Binding, BloomStore, BloomValue, KeyFilterSpec, BIND_COMMAND,
        LOAD_HEADER_COMMAND,
    };
    pub use crate::bloom::args::{parse_insert, parse_reserve, InfoField};
    pub use crate::bloom::{
        redisbloom_hash, BloomConfig, BloomError, BloomLimits, RedisBloomChain, ScalableBloom,
    };
    pub use crate::filter::{BloomFile, Geometry, ItemHash, LogPosition, MAX_HASHES, MAX_LINES};
}

/// The probabilistic structures besides Bloom filters, as `Value::Sketch` holds them.
pub use sketch::{Sketch, SketchKind};
/// Count-min sketches' files: checkpoints and binding at start.
pub mod sketch_file {
    pub use crate::sketch::file::{Header as FileHeader, Reject};
    pub use crate::sketch_files::{checkpoint, sweep, Found, SketchFiles};
}

/// CF.* cuckoo filters: RedisBloom's algorithm, limits, SCANDUMP header and chunks.
pub mod cf {
    pub use crate::sketch::cuckoo::{
        hash_item, CuckooFilter, Header, Insert, MergeError, DEFAULT_BUCKET_SIZE, DEFAULT_CAPACITY,
        DEFAULT_EXPANSION, DEFAULT_MAX_ITERATIONS, HEADER_LEN, MAX_BUCKET_SIZE, MAX_EXPANSION,
        MAX_FILTERS_FOR_INSERT, MAX_ITERATIONS,
    };
}

/// CMS.* count-min sketches: RedisBloom's algorithm and MurmurHash2.
pub mod cms {
    pub use crate::sketch::cms::{dims_from_prob, murmur2, CmsError, CountMin};
}

/// TOPK.* top-k sketches: RedisBloom's HeavyKeeper and its defaults.
pub mod topk {
    pub use crate::sketch::topk::{
        c_string, TopK, TopkError, DEFAULT_DECAY, DEFAULT_DEPTH, DEFAULT_WIDTH,
    };
}

/// TDIGEST.* t-digests: RedisBloom's t-digest-c and the argument parsing its commands share.
pub mod tdigest {
    pub use crate::sketch::tdigest::{
        c_double_to_i64, string_to_double, TDigest, DEFAULT_COMPRESSION,
    };
}

/// Bloom filters in kernel eBPF maps, the backend `bf::BackendSpec` can choose.
pub mod bpf {
    pub use crate::kernel::{
        ensure_bpffs, is_bpffs, probe, FilterSpec, KernelError, KernelFilter, OpenOutcome,
        PinLocation, PinStatus,
    };
}
