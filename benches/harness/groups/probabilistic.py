"""`probabilistic`: RedisBloom's structures besides Bloom filters (issue 45), BlinkDB against
redis-server + RedisBloom 2.8 in one run (alternated rounds), AOF everysec (the full run repeats
them with persistence off): single-item cells at -P 1 and -P 16 (50 clients) and a batch cell
per structure. Server CPU per operation (per item in items/s cells) is recorded with every cell
(harness/servercpu.py).

One structure of each kind, made in `prepare` (for its family's servers, below) large enough that
no add fails: a cuckoo filter,
a count-min sketch (CMS.INITBYPROB 0.001 0.01: 2000 x 7), a top-k (k 100, 2000 x 7, decay
0.925) and a t-digest (compression 100). Batch cells send 100 items per command: CF.INSERT and
CF.MEXISTS through the load generator, the others through redis-benchmark with the item
repeated (each `__rand_int__` is drawn anew), counted as items/s. Every cell sends a fixed
number of commands, so each server's structures go through the same states whatever its
speed: CF.INSERT adds to a filter of its own (`cfi`, made anew before each run: RESET below),
and CF.MEXISTS asks the filter the
CF.ADD cells filled. (CF.INSERT used to run for a fixed time into `cf`, and the faster
server inserted more: in the 2026-12-06-0606 run about 3.5M items into BlinkDB's filter, 2.1M
into RedisBloom's, 1M keys repeated, which grows a 16M filter to 5-6 sub-filters and to 4, so
its CF.MEXISTS cell (0.79x) searched different filters on the two servers.) Plain GET at -P 1
(on an empty keyspace, so a miss) is the round-trip ceiling for the -P 1 cells: neither server can
answer a command faster than it answers a GET.

At -P 16 the server and redis-benchmark (one thread) fill the two cores between them, so the
tool bounds these cells: in the 2026-12-06-0606 run (load ~2) redis-benchmark took 74-86% of a
core against BlinkDB (1.34-1.57 us of its CPU per request) and 51-74% against RedisBloom. At
1.5x RedisBloom's CF.EXISTS rate (800k/s) it would need 1.1 cores: that cell cannot show more
than ~1.3x here whatever the server does; the others need about 0.8-0.95 of a core for 1.5x.
Instructions per request of each cell's command, which the tool does not bound:
results/2026-12-06-probperf-ir.md.

Each structure's cells (and GET's) run on a fresh pair of servers holding that structure alone.
Until 2026-12-06 one pair served every cell, so the count-min, top-k and t-digest batches ran
beside the cuckoo cells' filters, which CF.INSERT grows to ~150 MB: an AOF rewrite set off by a
CMS batch's records rewrote and compressed them too, on either server, and decided the cell by
where it landed (CMS.INCRBY of 100 items: 0.85x median of rounds' ratios, interval [0.71,
1.36], with 1.38x less CPU per item, in the 18:36 run)."""

import os

from ..cells import alternate, pick
from ..context import persistence_label, persistence_modes, prepared, redisbloom_peer, running
from ..resp import ReplyError, brief, is_unsupported
from ..runners import loadgen, loadgen_measure, redis_benchmark

GROUP = "probabilistic"
ITEMS = 1_000_000
# Twice the items any run adds, so CF.ADD never meets a full filter or a sub-filter limit.
CF_CAPACITY = 16_000_000
BATCH = 100

def _repeat(word, n):
    return [w for _ in range(n) for w in word]


# (workload, unit, how): how is ("bench", command, pipeline, items) for redis-benchmark
# (items > 1: a batch, measured in items/s) or ("loadgen", command, items) for the load
# generator's batches (items/s).
# (family, workload, unit, how): a family's cells share a pair of servers made for them (its
# structure alone); how is ("bench", command, pipeline, items) for redis-benchmark (items > 1:
# a batch, measured in items/s) or ("loadgen", command, items) for the load generator's
# batches (items/s).
CELLS = [
    ("GET", "GET c50 P1 (round-trip ceiling)", "ops/s",
     ("bench", ["GET", "key:__rand_int__"], 1, 1)),
]
for _family, _name, _cmd in [("CF", "CF.ADD", ["CF.ADD", "cf", "key:__rand_int__"]),
                             ("CF", "CF.EXISTS", ["CF.EXISTS", "cf", "key:__rand_int__"]),
                             ("CMS", "CMS.INCRBY", ["CMS.INCRBY", "cms", "key:__rand_int__", "1"]),
                             ("TOPK", "TOPK.ADD", ["TOPK.ADD", "tk", "key:__rand_int__"]),
                             ("TDIGEST", "TDIGEST.ADD", ["TDIGEST.ADD", "td", "__rand_int__"])]:
    for _p in (1, 16):
        CELLS.append((_family, "%s c50 P%d" % (_name, _p), "ops/s", ("bench", _cmd, _p, 1)))
CELLS += [
    ("CF", "CF.INSERT %d items c50" % BATCH, "items/s",
     ("loadgen", "CF.INSERT cfi ITEMS __items__", BATCH)),
    ("CF", "CF.MEXISTS %d items c50" % BATCH, "items/s",
     ("loadgen", "CF.MEXISTS cf __items__", BATCH)),
    ("CMS", "CMS.INCRBY %d items c50" % BATCH, "items/s",
     ("bench", ["CMS.INCRBY", "cms"] + _repeat(["key:__rand_int__", "1"], BATCH), 1, BATCH)),
    ("TOPK", "TOPK.ADD %d items c50" % BATCH, "items/s",
     ("bench", ["TOPK.ADD", "tk"] + _repeat(["key:__rand_int__"], BATCH), 1, BATCH)),
    ("TDIGEST", "TDIGEST.ADD %d values c50" % BATCH, "items/s",
     ("bench", ["TDIGEST.ADD", "td"] + _repeat(["__rand_int__"], BATCH), 1, BATCH)),
]
# Commands sent before each run of a cell, outside its measurement: CF.INSERT starts every run
# from a fresh `cfi`, so every run (and round) inserts 1M items into the same empty 16M
# filter. Carried from run to run, 1M keys repeated grew it a sub-filter or more a run (an
# item's fingerprint fits four times in its two buckets), up to RedisBloom's 32 at 15 rounds
# ("Maximum expansions reached", the 2026-12-06 19:11 run), and each round measured a larger
# filter than the last.
RESET = {
    "CF.INSERT %d items c50" % BATCH: [("DEL", "cfi"), ("CF.RESERVE", "cfi", CF_CAPACITY)],
}
# Results keep this order: the families' single-item cells, then their batches.
FAMILIES = ["GET", "CF", "CMS", "TOPK", "TDIGEST"]
# What each family's servers are given first.
SETUP = {
    "GET": [],
    "CF": [("CF.RESERVE", "cf", CF_CAPACITY), ("CF.RESERVE", "cfi", CF_CAPACITY)],
    "CMS": [("CMS.INITBYPROB", "cms", "0.001", "0.01")],
    "TOPK": [("TOPK.RESERVE", "tk", "100", "2000", "7", "0.925")],
    "TDIGEST": [("TDIGEST.CREATE", "td", "COMPRESSION", "100")],
}
# Only these cells (comma-separated workload prefixes, e.g. "CF.ADD,GET"), for a quick look.
ONLY = [w for w in os.environ.get("BENCH_PROB_CELLS", "").split(",") if w]


def prepare(server, family):
    """The family's structures; None, or why this server cannot run them."""
    try:
        with server.client() as client:
            for command in SETUP[family]:
                client.call(*command)
    except ReplyError as e:
        return "n/a (%s)" % brief(e) if is_unsupported(e) else "n/a (setup: %s)" % brief(e)
    return None


def run(ctx):
    peer = redisbloom_peer(ctx, GROUP)
    chosen = [ctx.blinkdb, peer]
    labels = [c.label for c in chosen]
    for appendonly in persistence_modes(ctx, True):
        section = persistence_label(appendonly, "everysec")
        measured = {}
        for family in FAMILIES:
            cells = [c for c in CELLS if c[0] == family
                     and (not ONLY or any(c[1].startswith(w) for w in ONLY))]
            if not cells:
                continue
            with running(ctx, chosen, appendonly=appendonly, appendfsync="everysec") as started:
                servers = prepared(ctx, started, peer, lambda s, f=family: prepare(s, f))
                for _, workload, unit, how in cells:
                    table = alternate([(label, s if isinstance(s, str) else
                                        (lambda s=s, how=how, w=workload:
                                         {"m": measure(ctx, s, how, RESET.get(w, []))}))
                                       for label, s in servers], ctx.rounds, ctx.warmups)
                    measured[workload] = (unit, how, table)
        for _, workload, _, _ in CELLS:
            if workload not in measured:
                continue
            unit, how, table = measured[workload]
            items = how[2] if how[0] == "loadgen" else how[3]
            params = {"items": items} if items > 1 else None
            ctx.results.add(GROUP, section, workload, unit, "higher", peer.label,
                            pick(table, "m", labels), params)


def measure(ctx, server, how, reset):
    if reset:
        with server.client() as client:
            for command in reset:
                client.call(*command)
    if how[0] == "bench":
        _, command, pipeline, items = how
        requests = batch_commands(ctx, items) if items > 1 else ctx.size("bloom_requests")
        rows = redis_benchmark(server.port, clients=50, pipeline=pipeline, requests=requests,
                               keyspace=ITEMS, command=command)
        return per_item(next(iter(rows.values())), items)
    _, command, items = how
    report = loadgen(ctx.loadgen, server.port, clients=50, pipeline=1,
                     requests=batch_commands(ctx, items), keys=ITEMS, commands=[command],
                     items=items)
    return loadgen_measure(report, "items")


def batch_commands(ctx, items):
    """Commands per batch run: five times a single cell's items, and at least 10,000
    commands (a quick run's 3,000 lasted 0.3-0.8 s, so one stall of a loaded machine
    decided the cell: TDIGEST.ADD of 100 values swung 0.7-2.6x between alternated
    3,000-command runs, 1.15-1.66x at 20,000, 2026-12-06). A count, not a duration, so
    both servers' structures end each run in the same state."""
    return max(ctx.size("bloom_requests") * 5 // items, 10_000)


def per_item(m, items):
    """A redis-benchmark measure of commands of `items` items each, turned into items/s and
    CPU per item (latencies stay per command)."""
    if items == 1:
        return m
    m["value"] *= items
    for field in ("client_cpu_us", "server_cpu_us", "server_stat_cpu_us"):
        if m.get(field) is not None:
            m[field] /= items
    return m
