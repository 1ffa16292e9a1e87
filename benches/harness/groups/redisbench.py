"""`redisbench`: redis-benchmark's default run (what `redis-benchmark -q` does without -t), each
test alone so that each has its own server CPU, at c50 P1 and P16, persistence off. The LRANGE
tests fill their list first (redis-benchmark's "LPUSH (needed to benchmark LRANGE)" step, not
shown: LPUSH has its own row). redis-benchmark 7.0.15's default run has no XADD test; the
`queues` group measures streams. A server that cannot run a test shows n/a for it."""
import os

from ..cells import alternate, pick
from ..context import persistence_label, running
from ..runners import redis_benchmark

GROUP = "redisbench"
PREFILL = "LPUSH (needed"
# redis-benchmark's -t names of its default tests, in its order.
TESTS = ["ping_inline", "ping_mbulk", "set", "get", "incr", "lpush", "rpush", "lpop", "rpop",
         "sadd", "hset", "spop", "zadd", "zpopmin", "lrange_100", "lrange_300", "lrange_500",
         "lrange_600", "mset"]


def test_cells(ctx, group, servers, tests, requests, pipelines=(1, 16), rounds=None, user=None):
    """One cell per redis-benchmark test (each run alone) at c50 and each of `pipelines` on
    `servers`, named as redis-benchmark names the test; the LRANGE tests' fill step is left
    out. `requests` is a count per run, or a dict of counts by pipeline depth; `rounds`
    overrides the run's measured rounds; `user`: (name, password) the clients log in as."""
    labels = [c.label for c in (ctx.blinkdb, ctx.redis)]
    section = persistence_label(False, "everysec")
    per_run = requests if isinstance(requests, dict) else {1: requests, 16: requests}
    for pipeline in pipelines:
        for test in tests:
            # An LRANGE reply is hundreds of elements: P1's count is seconds at P16 too.
            count = per_run[1 if test.startswith("lrange") else pipeline]
            table = alternate(
                [(label, server if isinstance(server, str) else
                  (lambda server=server: redis_benchmark(
                      server.port, clients=50, requests=count, pipeline=pipeline,
                      tests=[test], user=user)))
                 for label, server in servers],
                rounds or ctx.rounds, ctx.warmups)
            names = [m for m in table if m != "*" and not m.startswith(PREFILL)]
            for name in names or [test.upper()]:
                ctx.results.add(group, section, "%s c50 P%d" % (name, pipeline), "req/s",
                                "higher", ctx.redis.label, pick(table, name, labels),
                                {"test": name, "clients": 50, "pipeline": pipeline})


def run(ctx):
    # BENCH_REDISBENCH_TESTS (e.g. "set,get") and BENCH_REDISBENCH_PIPELINES (e.g. "16") narrow
    # the grid, for an old-against-new check of a few cells (BENCH_PEER_BIN).
    tests = [t for t in os.environ.get("BENCH_REDISBENCH_TESTS", "").split(",") if t] or TESTS
    pipelines = tuple(int(p) for p in os.environ.get("BENCH_REDISBENCH_PIPELINES", "").split(",")
                      if p) or (1, 16)
    with running(ctx, [ctx.blinkdb, ctx.redis]) as servers:
        # P16 runs 10x the requests, so that a run lasts seconds at either depth.
        test_cells(ctx, GROUP, servers, tests, {1: ctx.size("redisbench_requests_p1"),
                                                16: ctx.size("redisbench_requests_p16")},
                   pipelines=pipelines)
