"""`redis8`: hash-field expiration (issue 43) against redis-server 8.0.2, the first Redis with
HSETEX and HGETEX (Redis 7 has no field TTLs at all, so the run's Redis 7 column cannot be the
peer here). The peer is `ctx.redis8` (compare.py: `BENCH_REDIS8_BIN`, else the tree's
target/peers/redis-8.0.2/src/redis-server that tests/peers/build.sh builds); when it is
missing the group says so loudly and its column is n/a. With `BENCH_PEER_BIN` (an old BlinkDB
build against a new one) that build is the peer instead.

Throughput, persistence off on both (BlinkDB with `--save ''` as the harness gives Redis),
c50 at -P 1 and -P 16, redis-benchmark with a command line: the keyspace is filled first with
hashes `h:<12 digits>` (redis-benchmark's `__rand_int__`) of five fields, `name`, `age` and
`city` with a TTL of 100,000 s, `lang` and `tier` without; then, each cell on random keys:
HGET of a field with a TTL, HTTL, HEXPIRE of an existing field, HGETEX PERSIST then HGETEX EX
(PERSIST takes `name`'s TTL away where it has one; after a key's first hit it has none, until
the EX cell gives it back), HSETEX EX, HSETEX FXX EX (the field exists: always set) and HSETEX
FNX EX of a new field `n:<random>` (last, as it grows the hashes: about 14 fields each after
a quick run). Every run sends a fixed number of requests, so both servers' hashes go through
the same kind of states. Server CPU per request as every group reports it. A GET of a missing
key at each depth comes first, the control: no hash work, so what each server spends on a
request around the command (the first runs had BlinkDB above Redis 8.0.2 in CPU per request
in most HFE cells; this says whether that is the command's or every request's).
`BENCH_REDIS8_CELLS` (e.g. `GET,HGET`) runs only the throughput cells whose names start with
one of those, and the memory cells only if it names `memory`.

Memory, each server fresh per run, up to 3 alternated rounds without warm-up (memory does not
warm up): N small hashes of five fields, three of them with a TTL (`HSETEX h:%08d EX 100000
FIELDS 3 name alice age 33 city paris` + `HSET h:%08d lang en tier gold`), and one hash of 1M
fields each with a TTL (HSETEX of 1000 fields per command); the growth of RSS and of
used_memory, and MEMORY USAGE, per key or per field (small_objects' and collections' way).

The peer built by tests/peers/build.sh uses libc's malloc (MALLOC=libc), not jemalloc as
Debian's Redis 7 does: its RSS and used_memory are glibc's, which the report must say."""
import os

from ..cells import alternate, pick
from ..context import persistence_label, running
from ..runners import NotApplicable, measure, redis_benchmark
from .collections import fresh
from .small_objects import batches, memory_usage, send_batches, used_memory

GROUP = "redis8"
TTL = "100000"
BIG_FIELDS = 1_000_000
BIG_BATCH = 1000
ROUNDS_MAX = 3
# Encoded writes by what they build, made once and sent to every server of every round.
_ENCODED = {}


def encoded(what, n, command, per_write=1000):
    if (what, n) not in _ENCODED:
        _ENCODED[(what, n)] = batches(n, command, per_write)
    return _ENCODED[(what, n)]

# (name, command line for redis-benchmark). Keys and new fields are `__rand_int__`.
CELLS = [
    ("GET of a missing key (control)", ["GET", "key:__rand_int__"]),
    ("HGET of a field with a TTL", ["HGET", "h:__rand_int__", "name"]),
    ("HTTL 1 field", ["HTTL", "h:__rand_int__", "FIELDS", "1", "age"]),
    ("HEXPIRE 1 existing field", ["HEXPIRE", "h:__rand_int__", TTL, "FIELDS", "1", "city"]),
    ("HGETEX PERSIST 1 field", ["HGETEX", "h:__rand_int__", "PERSIST", "FIELDS", "1", "name"]),
    ("HGETEX EX 1 field", ["HGETEX", "h:__rand_int__", "EX", TTL, "FIELDS", "1", "name"]),
    ("HSETEX EX 1 field", ["HSETEX", "h:__rand_int__", "EX", TTL, "FIELDS", "1", "name", "bob"]),
    ("HSETEX FXX EX 1 existing field",
     ["HSETEX", "h:__rand_int__", "FXX", "EX", TTL, "FIELDS", "1", "age", "34"]),
    ("HSETEX FNX EX 1 new field",
     ["HSETEX", "h:__rand_int__", "FNX", "EX", TTL, "FIELDS", "1", "n:__rand_int__", "v"]),
]

# Only these cells (comma-separated name prefixes; `memory` for the memory cells).
ONLY = [w for w in os.environ.get("BENCH_REDIS8_CELLS", "").split(",") if w]


def small_hash(key):
    """The commands that make one five-field hash, three fields with a TTL; each is answered
    with one integer."""
    return [(b"HSETEX", key, b"EX", TTL.encode(), b"FIELDS", b"3", b"name", b"alice", b"age",
             b"33", b"city", b"paris"),
            (b"HSET", key, b"lang", b"en", b"tier", b"gold")]


def peer_of(ctx):
    """The column to compare with: an explicit old BlinkDB build (BENCH_PEER_BIN), else
    redis-server 8.0.2; None (noted loudly) when that is not there."""
    if ctx.redis.is_blinkdb:
        return ctx.redis
    if ctx.redis8 is None:
        text = ("!!!! redis-server 8.0.2 not found (%s): the peer column is n/a. "
                "tests/peers/build.sh redis builds it; BENCH_REDIS8_BIN names another"
                % ctx.redis8_missing)
        ctx.results.note(GROUP, text)
    return ctx.redis8


def run(ctx):
    peer = peer_of(ctx)
    peer_label = peer.label if peer else "Redis 8.0.2"
    contestants = [ctx.blinkdb] + ([peer] if peer else [])
    labels = [ctx.blinkdb.label, peer_label]
    missing = {} if peer else {peer_label: "n/a (redis-server 8.0.2 not found)"}
    throughput(ctx, contestants, labels, peer_label, missing)
    if not ONLY or "memory" in ONLY:
        memory(ctx, contestants, labels, peer_label, missing)


def no_snapshots(contestant):
    return ["--save", ""] if contestant.is_blinkdb and not contestant.standin else []


def throughput(ctx, contestants, labels, peer_label, missing):
    section = persistence_label(False, "everysec")
    keys = ctx.size("redis8_keys")
    requests = {1: ctx.size("redis8_requests_p1"), 16: ctx.size("redis8_requests_p16")}
    extra = {c.label: no_snapshots(c) for c in contestants}
    with running(ctx, contestants, extra=extra) as started:
        servers = []
        for label, server in started:
            if not isinstance(server, str):
                try:
                    fill(server, keys)
                except NotApplicable as e:
                    server = "n/a (%s)" % e
            servers.append((label, server))
        servers += list(missing.items())
        for name, command in CELLS:
            if ONLY and not any(name.startswith(w) for w in ONLY):
                continue
            for pipeline in (1, 16):
                table = alternate(
                    [(label, server if isinstance(server, str) else
                      (lambda server=server, command=command, pipeline=pipeline: {
                          "m": next(iter(redis_benchmark(
                              server.port, clients=50, requests=requests[pipeline],
                              pipeline=pipeline, keyspace=keys, command=command).values()))}))
                     for label, server in servers],
                    ctx.rounds, ctx.warmups)
                ctx.results.add(GROUP, section, "%s c50 P%d" % (name, pipeline), "req/s",
                                "higher", peer_label, pick(table, "m", labels),
                                {"command": " ".join(command), "clients": 50,
                                 "pipeline": pipeline, "keys": keys})


def fill(server, keys):
    """Every key redis-benchmark's `-r keys` can draw, as a small hash with field TTLs."""
    send_batches(server.port, encoded("fill", keys, lambda i: small_hash(b"h:%012d" % i)))
    with server.client() as client:
        size = client.call("DBSIZE")
    if size != keys:
        raise RuntimeError("DBSIZE %s after filling %d keys" % (size, keys))


def memory(ctx, contestants, labels, peer_label, missing):
    section = persistence_label(False, "everysec")
    rounds = min(ctx.rounds, ROUNDS_MAX)

    def cells(build, name, per, usage, params):
        """One memory measure on a fresh server per contestant and round, as three cells."""
        def measure(contestant):
            server = fresh(ctx, contestant)
            try:
                return build(server)
            finally:
                server.discard()

        table = alternate([(c.label, lambda c=c: measure(c)) for c in contestants]
                          + list(missing.items()), rounds, 0)
        for metric, title in (("rss", "RSS growth per " + per), ("used", "used_memory per " + per),
                              ("usage", "MEMORY USAGE " + usage)):
            ctx.results.add(GROUP, section, "%s: %s" % (name, title), "B/" + per, "lower",
                            peer_label, pick(table, metric, labels), params)

    for n in ctx.size("redis8_small_keys"):
        cells(lambda server, n=n: small_hashes(server, n),
              "%s keys of 5 fields, 3 with a TTL" % format(n, ","), "key", "of a key", {"keys": n})
    cells(lambda server: big_hash(server, BIG_FIELDS),
          "one hash of %s fields, each with a TTL" % format(BIG_FIELDS, ","), "field",
          "per field", {"fields": BIG_FIELDS})


def small_hashes(server, n):
    def command(i):
        return small_hash(b"h:%08d" % i)

    with server.client() as c:
        rss0, used0 = server.rss_kb(), used_memory(c)
    send_batches(server.port, encoded("small", n, command))
    with server.client() as c:
        rss1, used1 = server.rss_kb(), used_memory(c)
        dbsize = c.call("DBSIZE")
        with_ttl = c.call("HTTL", b"h:%08d" % (n - 1), "FIELDS", "2", "name", "lang")
        usage = memory_usage(c, n, command)
    if dbsize != n:
        raise RuntimeError("DBSIZE %s after writing %d keys" % (dbsize, n))
    if not (isinstance(with_ttl, list) and with_ttl[0] > 0 and with_ttl[1] == -1):
        raise RuntimeError("HTTL of the last hash's name and lang: %r" % (with_ttl,))
    out = {"rss": measure((rss1 - rss0) * 1024.0 / n), "used": measure((used1 - used0) / n)}
    if usage is not None:
        out["usage"] = measure(usage)
    return out


def big_hash(server, fields):
    def command(b):
        ids = range(b * BIG_BATCH, min((b + 1) * BIG_BATCH, fields))
        return (b"HSETEX", b"big", b"EX", TTL.encode(), b"FIELDS", b"%d" % len(ids),
                *[x for i in ids for x in (b"f:%d" % i, b"v:%d" % i)])

    # 20 commands (about 400 KB) to a write, as collections' send_all: a larger query buffer
    # would stay in the RSS measured.
    writes = encoded("big", -(-fields // BIG_BATCH), command, per_write=20)
    with server.client() as c:
        rss0, used0 = server.rss_kb(), used_memory(c)
    send_batches(server.port, writes)
    with server.client() as c:
        rss1, used1 = server.rss_kb(), used_memory(c)
        length = c.call("HLEN", "big")
        ttl = c.call("HTTL", "big", "FIELDS", "1", "f:%d" % (fields - 1))
        usage = c.call("MEMORY", "USAGE", "big", "SAMPLES", "0")
    if length != fields or not (isinstance(ttl, list) and ttl[0] > 0):
        raise RuntimeError("HLEN %s, HTTL of the last field %r after %d fields"
                           % (length, ttl, fields))
    out = {"rss": measure((rss1 - rss0) * 1024.0 / fields),
           "used": measure((used1 - used0) / fields)}
    if isinstance(usage, int):
        out["usage"] = measure(usage / fields)
    return out
