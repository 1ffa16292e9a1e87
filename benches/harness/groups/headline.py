"""`headline`: only the `redis-benchmark -c 50 -n 1000000 -t set,get` cells at -P 1 and -P 16
with persistence off, at full size even with --quick (about 4 minutes). The full run has the
same cells in `strings`, so the default group list leaves this one out: run it with
`--only headline`."""
from ..cells import alternate, pick
from ..context import running
from .strings import runner

GROUP = "headline"
REQUESTS = 1_000_000


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    with running(ctx, contestants, appendonly=False) as servers:
        for pipeline in (1, 16):
            table = alternate(
                [(label, runner(server, clients=50, requests=REQUESTS, pipeline=pipeline,
                                tests=["SET", "GET"]))
                 for label, server in servers],
                ctx.rounds, ctx.warmups)
            for test in ("SET", "GET"):
                ctx.results.add(GROUP, "persistence off",
                                "%s -c 50 -n %d -P %d" % (test, REQUESTS, pipeline),
                                "req/s", "higher", ctx.redis.label, pick(table, test, labels),
                                {"test": test, "clients": 50, "pipeline": pipeline,
                                 "headline": True, "appendonly": False})
