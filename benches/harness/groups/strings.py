"""`strings`: redis-benchmark SET/GET/PING_INLINE over a client/pipeline/value-size grid,
plus the headline `-c 50 -n 1000000 -t set,get` cell, with persistence off and AOF everysec."""
from ..cells import alternate, pick
from ..context import persistence_label, running
from ..runners import redis_benchmark

GROUP = "strings"
TESTS = ["SET", "GET", "PING_INLINE"]


def grid(ctx, appendonly):
    if ctx.quick:
        # Quick mode keeps AOF everysec to the headline cells to stay inside its time budget.
        return [] if appendonly else [(50, 1, 3), (50, 16, 3)]
    return [(c, p, d) for c in (10, 100, 1000) for p in (1, 16) for d in (3, 1024)]


def runner(server, **kwargs):
    if isinstance(server, str):
        return server
    return lambda: redis_benchmark(server.port, **kwargs)


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    for appendonly in (False, True):
        section = persistence_label(appendonly, "everysec")
        with running(ctx, contestants, appendonly=appendonly) as servers:
            for clients, pipeline, size in grid(ctx, appendonly):
                requests = ctx.size("strings_requests_p%d" % pipeline)
                table = alternate(
                    [(label, runner(server, clients=clients, requests=requests, pipeline=pipeline,
                                    tests=TESTS, keyspace=1_000_000, value_size=size))
                     for label, server in servers],
                    ctx.rounds, ctx.warmups)
                for test in TESTS:
                    ctx.results.add(GROUP, section, "%s c%d P%d %dB" % (test, clients, pipeline, size),
                                    "req/s", "higher", ctx.redis.label, pick(table, test, labels),
                                    {"test": test, "clients": clients, "pipeline": pipeline,
                                     "value_size": size, "appendonly": appendonly})
            for pipeline in (1, 16):
                headline(ctx, GROUP, section, servers, labels, pipeline,
                         ctx.size("headline_requests_p%d" % pipeline), appendonly)


def headline(ctx, group, section, servers, labels, pipeline, requests, appendonly):
    """The `-c 50 -n <requests> -t set,get -P <pipeline>` cells (issue #2's yardstick)."""
    table = alternate(
        [(label, runner(server, clients=50, requests=requests, pipeline=pipeline,
                        tests=["SET", "GET"]))
         for label, server in servers],
        ctx.rounds, ctx.warmups)
    for test in ("SET", "GET"):
        ctx.results.add(group, section,
                        "headline %s -c 50 -n %d -P %d" % (test, requests, pipeline),
                        "req/s", "higher", ctx.redis.label, pick(table, test, labels),
                        {"test": test, "clients": 50, "pipeline": pipeline,
                         "headline": True, "appendonly": appendonly})
