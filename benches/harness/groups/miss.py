"""`miss`: GET over a keyspace where half the lookups miss, BlinkDB with its existence filter
on and off against Redis; persistence off (quick: only that), then AOF everysec."""
from ..cells import alternate, pick
from ..context import persistence_label, persistence_modes, running
from ..runners import ToolError, loadgen, loadgen_measure

GROUP = "miss"
# Bits of existence filter per key: about a 1% false-positive rate at 10 bits.
FILTER_BITS_PER_KEY = 10


def run(ctx):
    keys = ctx.size("miss_keys")
    filter_bytes = keys * FILTER_BITS_PER_KEY // 8
    filter_on = ctx.blinkdb.with_flags(ctx.blinkdb.label + " filter on",
                                       ["--existence-filter-size", str(filter_bytes)])
    filter_off = ctx.blinkdb.with_flags(ctx.blinkdb.label + " filter off",
                                        ["--existence-filter-size", "0"])
    contestants = [filter_on, filter_off, ctx.redis]
    labels = [c.label for c in contestants]
    if ctx.blinkdb.standin:
        ctx.results.note(GROUP, "stand-in server: --existence-filter-size dropped, so both "
                         "BlinkDB columns are the same redis-server")
    for appendonly in persistence_modes(ctx, False):
        measure_pass(ctx, contestants, labels, keys, appendonly)


def measure_pass(ctx, contestants, labels, keys, appendonly):
    section = "%d keys loaded, 50%% of GETs miss, %s" % (keys, persistence_label(appendonly,
                                                                                 "everysec"))
    with running(ctx, contestants, appendonly=appendonly) as servers:
        for label, server in servers:
            if isinstance(server, str):
                continue
            report = loadgen(ctx.loadgen, server.port, preload=True, keys=keys, requests=0)
            print("  %s: preloaded %d keys in %.1f s" % (label, keys, report["preload_seconds"]),
                  flush=True)
        for pipeline in (1, 16):
            def runner(server, pipeline=pipeline):
                if isinstance(server, str):
                    return server

                def once():
                    report = loadgen(ctx.loadgen, server.port, clients=50, pipeline=pipeline,
                                     duration=ctx.size("run_seconds"), keys=keys, miss_ratio=0.5)
                    gets = report["hits"] + report["misses"]
                    if gets and not 0.4 < report["misses"] / gets < 0.6:
                        raise ToolError("miss rate %.2f, expected 0.5: preload incomplete?"
                                        % (report["misses"] / gets))
                    return {"GET": loadgen_measure(report)}
                return once

            table = alternate([(label, runner(server)) for label, server in servers],
                              ctx.rounds, ctx.warmups)
            ctx.results.add(GROUP, section, "GET 50%% miss c50 P%d" % pipeline, "ops/s", "higher",
                            ctx.redis.label, pick(table, "GET", labels),
                            {"clients": 50, "pipeline": pipeline, "keys": keys})
        for label, server in servers:
            if not isinstance(server, str):
                print("  %s: RSS %d kB" % (label, server.rss_kb()), flush=True)
        ctx.results.add(GROUP, section, "RSS after load and run", "kB", "lower", ctx.redis.label,
                        {label: (server if isinstance(server, str)
                                 else [{"value": server.rss_kb()}]) for label, server in servers})
