"""`blobs`: the BlobCache mix on 256 KB values: 10% SET, 45% GET hit, 45% GET miss, over a
keyspace holding the configured total, both servers with AOF everysec; then GET hits only
(issue #4's large-value GET goal) over the same keys; throughput and RSS. The full run repeats
it with persistence off, where BlinkDB too keeps large values in memory."""
from ..cells import alternate, pick
from ..context import persistence_label, persistence_modes, running
from ..runners import loadgen, loadgen_measure

GROUP = "blobs"
VALUE_SIZE = 256 * 1024


def run(ctx):
    total = ctx.size("blob_total_bytes")
    keys = total // VALUE_SIZE
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    for appendonly in persistence_modes(ctx, True):
        measure_pass(ctx, contestants, labels, keys, total, appendonly)


def measure_pass(ctx, contestants, labels, keys, total, appendonly):
    section = "%d x 256 KB values (%d MB), %s" % (keys, total >> 20,
                                                  persistence_label(appendonly, "everysec"))
    with running(ctx, contestants, appendonly=appendonly, appendfsync="everysec") as servers:
        for label, server in servers:
            if isinstance(server, str):
                continue
            report = loadgen(ctx.loadgen, server.port, preload=True, keys=keys,
                             value_size=VALUE_SIZE, requests=0)
            print("  %s: preloaded %d MB in %.1f s" % (label, total >> 20, report["preload_seconds"]),
                  flush=True)

        def runner(server):
            if isinstance(server, str):
                return server

            def once():
                report = loadgen(ctx.loadgen, server.port, clients=50, pipeline=1,
                                 duration=ctx.size("run_seconds"), keys=keys, value_size=VALUE_SIZE,
                                 set_ratio=0.1, miss_ratio=0.5)
                m = loadgen_measure(report)
                mb = report["ops_per_sec"] * VALUE_SIZE * 0.55 / (1 << 20)
                hits = loadgen(ctx.loadgen, server.port, clients=50, pipeline=1,
                               duration=ctx.size("run_seconds"), keys=keys, value_size=VALUE_SIZE)
                return {"mix": m, "mb": {"value": mb, "p50": None, "p99": None},
                        "get": loadgen_measure(hits)}
            return once

        table = alternate([(label, runner(server)) for label, server in servers],
                          ctx.rounds, ctx.warmups)
        ctx.results.add(GROUP, section, "10% SET / 45% hit / 45% miss c50", "ops/s", "higher",
                        ctx.redis.label, pick(table, "mix", labels),
                        {"clients": 50, "keys": keys, "value_size": VALUE_SIZE})
        ctx.results.add(GROUP, section, "value bytes moved (SET + GET hit)", "MB/s", "higher",
                        ctx.redis.label, pick(table, "mb", labels))
        ctx.results.add(GROUP, section, "GET hit only c50", "ops/s", "higher",
                        ctx.redis.label, pick(table, "get", labels),
                        {"clients": 50, "keys": keys, "value_size": VALUE_SIZE})
        ctx.results.add(GROUP, section, "RSS after workload", "kB", "lower", ctx.redis.label,
                        {label: (server if isinstance(server, str)
                                 else [{"value": server.rss_kb()}]) for label, server in servers})
