"""`probabilistic`: RedisBloom's structures besides Bloom filters (issue 45), BlinkDB against
redis-server + RedisBloom 2.8 in one run, AOF everysec (the full run repeats them with
persistence off): single-item cells at -P 1 and -P 16 (50 clients) and a batch cell per
structure. Server CPU per operation is recorded with every cell (harness/servercpu.py).

CF: CF.ADD and CF.EXISTS on one filter reserved large enough that no add fails, and CF.INSERT of
100 items per command. The other structures (CMS, TOPK, TDIGEST) add their cells in
`CELLS` and their setup in `prepare`."""

from ..cells import alternate, pick
from ..context import persistence_label, persistence_modes, running
from ..resp import ReplyError, brief, is_unsupported
from ..runners import loadgen, loadgen_measure, redis_benchmark

GROUP = "probabilistic"
ITEMS = 1_000_000
# Twice the items any run adds, so CF.ADD never meets a full filter or a sub-filter limit.
CF_CAPACITY = 16_000_000
BATCH = 100

# (workload, unit, how): how is ("bench", command, pipeline) for redis-benchmark or
# ("loadgen", command, items) for the load generator's batches (items/s).
CELLS = [
    ("CF.ADD c50 P1", "ops/s", ("bench", ["CF.ADD", "cf", "key:__rand_int__"], 1)),
    ("CF.ADD c50 P16", "ops/s", ("bench", ["CF.ADD", "cf", "key:__rand_int__"], 16)),
    ("CF.EXISTS c50 P1", "ops/s", ("bench", ["CF.EXISTS", "cf", "key:__rand_int__"], 1)),
    ("CF.EXISTS c50 P16", "ops/s", ("bench", ["CF.EXISTS", "cf", "key:__rand_int__"], 16)),
    ("CF.INSERT %d items c50" % BATCH, "items/s", ("loadgen", "CF.INSERT cf ITEMS __items__",
                                                   BATCH)),
]


def prepare(server):
    """The structures the cells use; None, or why this server cannot run them."""
    try:
        with server.client() as client:
            client.call("CF.RESERVE", "cf", CF_CAPACITY)
    except ReplyError as e:
        return "n/a (%s)" % brief(e) if is_unsupported(e) else "n/a (setup: %s)" % brief(e)
    return None


def run(ctx):
    if ctx.redisbloom is None:
        ctx.results.note(GROUP, "RedisBloom module not found: the peer column is n/a")
    peer = ctx.redisbloom or ctx.redis.with_flags("RedisBloom 2.8", [])
    chosen = [ctx.blinkdb, peer]
    labels = [c.label for c in chosen]
    for appendonly in persistence_modes(ctx, True):
        section = persistence_label(appendonly, "everysec")
        with running(ctx, chosen, appendonly=appendonly, appendfsync="everysec") as started:
            servers = []
            for label, server in started:
                if not isinstance(server, str):
                    if ctx.redisbloom is None and label == peer.label:
                        server = "n/a (RedisBloom module not found)"
                    else:
                        server = prepare(server) or server
                servers.append((label, server))
            for workload, unit, how in CELLS:
                table = alternate([(label, s if isinstance(s, str) else
                                    (lambda s=s, how=how: {"m": measure(ctx, s, how)}))
                                   for label, s in servers], ctx.rounds, ctx.warmups)
                params = {"items": how[2]} if how[0] == "loadgen" else None
                ctx.results.add(GROUP, section, workload, unit, "higher", peer.label,
                                pick(table, "m", labels), params)


def measure(ctx, server, how):
    kind, command, n = how
    if kind == "bench":
        rows = redis_benchmark(server.port, clients=50, pipeline=n,
                               requests=ctx.size("bloom_requests"), keyspace=ITEMS,
                               command=command)
        return next(iter(rows.values()))
    report = loadgen(ctx.loadgen, server.port, clients=50, pipeline=1,
                     duration=ctx.size("bloom_seconds"), keys=ITEMS, commands=[command],
                     items=n)
    return loadgen_measure(report, "items")
