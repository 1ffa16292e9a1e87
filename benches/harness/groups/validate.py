"""`validate`: blinkdb-loadgen against redis-benchmark on the same redis-server, same clients,
pipeline, value size and keyspace; they should agree within 10%."""
from ..cells import alternate, pick
from ..context import running
from ..runners import loadgen, loadgen_measure, redis_benchmark

GROUP = "validate"
KEYSPACE = 100_000
TOLERANCE = 0.10


def run(ctx):
    with running(ctx, [ctx.redis]) as servers:
        (_, server), = servers
        if isinstance(server, str):
            ctx.results.note(GROUP, "redis-server did not start: " + server)
            return
        loadgen(ctx.loadgen, server.port, preload=True, keys=KEYSPACE, requests=0)
        for pipeline in (1, 16):
            requests = ctx.size("strings_requests_p%d" % pipeline)
            for test in ("SET", "GET"):
                ratio = 1.0 if test == "SET" else 0.0

                def ours(test=test, ratio=ratio, pipeline=pipeline, requests=requests):
                    report = loadgen(ctx.loadgen, server.port, clients=50, pipeline=pipeline,
                                     requests=requests, keys=KEYSPACE, value_size=3, set_ratio=ratio)
                    return {test: loadgen_measure(report)}

                def theirs(test=test, pipeline=pipeline, requests=requests):
                    return redis_benchmark(server.port, clients=50, requests=requests,
                                           pipeline=pipeline, tests=[test], keyspace=KEYSPACE,
                                           value_size=3)

                table = alternate([("blinkdb-loadgen", ours), ("redis-benchmark", theirs)],
                                  ctx.rounds, ctx.warmups)
                cell = ctx.results.add(GROUP, "against redis-server", "%s c50 P%d 3B" % (test, pipeline),
                                       "req/s", "higher", "redis-benchmark",
                                       pick(table, test, ["blinkdb-loadgen", "redis-benchmark"]))
                r = cell["ratios"].get("blinkdb-loadgen")
                verdict = "n/a" if r is None else ("within 10%" if abs(r - 1) <= TOLERANCE
                                                   else "OUTSIDE 10%")
                cpu = ["%s %s" % (label, "-" if result.get("client_cpu_us") is None
                                  else "%.2f" % result["client_cpu_us"])
                       for label, result in cell["results"].items()]
                ctx.results.note(GROUP, "%s c50 P%d: loadgen/redis-benchmark = %s (%s); client CPU "
                                 "us per request: %s" % (test, pipeline, "-" if r is None else
                                                         "%.3f" % r, verdict, ", ".join(cpu)))
