"""`p1`: the c50 -P 1 cells of `redisbench` (redis-benchmark's 19 default tests) and of
`collection_ops` (PFADD, PFCOUNT), with at least 15 rounds of shorter runs, persistence off.

At -P 1 the load generator's CPU per request, not the server's, sets the rate, and single
runs of one server spread by 20-30% as the machine goes through fast and slow phases
(benches/results/HISTORY.md). Five rounds of a ratio of medians cannot tell 0.95x from
1.05x there. This group runs more rounds and adds each cell's paired ratios: the median of
the rounds' own ratios (a round runs both servers back to back) with a sign-test interval of
at least 95% (cells.py)."""
from ..cells import alternate, pick
from ..context import persistence_label, running
from ..runners import NotApplicable, loadgen, loadgen_measure, send_all
from . import collection_ops, redisbench

GROUP = "p1"
MIN_ROUNDS = 15
HLL_CELLS = [c for c in collection_ops.CELLS if c[1].startswith(("PFADD", "PFCOUNT"))]


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = persistence_label(False, "everysec")
    rounds = max(ctx.rounds, MIN_ROUNDS)
    ctx.results.note(GROUP, "%d measured rounds per cell after %d warm-up (this group runs at "
                     "least %d, whatever --rounds says)" % (rounds, ctx.warmups, MIN_ROUNDS))
    with running(ctx, contestants) as servers:
        redisbench.test_cells(ctx, GROUP, servers, redisbench.TESTS, ctx.size("p1_requests"),
                              pipelines=(1,), rounds=rounds)
        ready = []
        for label, server in servers:
            try:
                if not isinstance(server, str):
                    send_all(server, [collection_ops.HLL_FILL])
                ready.append((label, server))
            except NotApplicable as e:
                ready.append((label, "n/a (%s)" % e))
        for title, template, keys, _ in HLL_CELLS:
            def fn(server, template=template, keys=keys):
                return {"m": loadgen_measure(loadgen(
                    ctx.loadgen, server.port, clients=50, pipeline=1,
                    duration=ctx.size("p1_seconds"), keys=keys, commands=[template]))}
            table = alternate([(label, s if isinstance(s, str) else (lambda s=s: fn(s)))
                               for label, s in ready], rounds, ctx.warmups)
            ctx.results.add(GROUP, section, "%s c50 P1" % title, "ops/s", "higher",
                            ctx.redis.label, pick(table, "m", labels), {"pipeline": 1})
