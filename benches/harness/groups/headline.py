"""`headline`: only the `redis-benchmark -c 50 -n 1000000 -t set,get` cells at -P 1 and -P 16
with persistence off, at full size even with --quick (about 4 minutes). The full run has the
same cells in `strings`, so the default group list leaves this one out: run it with
`--only headline`."""
from ..context import running
from .strings import headline

GROUP = "headline"
REQUESTS = 1_000_000


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    with running(ctx, contestants, appendonly=False) as servers:
        for pipeline in (1, 16):
            headline(ctx, GROUP, "persistence off", servers, labels, pipeline, REQUESTS, False)
