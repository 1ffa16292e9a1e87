"""`validate`: blinkdb-loadgen against redis-benchmark on the same redis-server, same clients,
pipeline, value size and keyspace.

The 10% agreement criterion applies where the server is the bottleneck: the server is held to
a fixed share of one CPU (a cgroup CFS quota), so both tools measure the same server capacity.
Unthrottled, on a 2-core machine where the client shares the cores, each tool measures mostly
its own cost per request (redis-benchmark spends about 1.6x the client CPU of the load
generator at -P 1); that comparison is kept as information, with both tools' CPU per request."""
from ..cells import alternate, pick
from ..context import running
from ..cpulimit import Unavailable, limited
from ..runners import loadgen, loadgen_measure, redis_benchmark

GROUP = "validate"
KEYSPACE = 100_000
TOLERANCE = 0.10
SERVER_CPU_SHARE = 0.25
THROTTLED = "server held to %d%% of one CPU (the criterion)" % (SERVER_CPU_SHARE * 100)
THROTTLED_REQUESTS = {1: 40_000, 16: 200_000}
FREE = "server unthrottled (information: client cost differs)"


def run(ctx):
    with running(ctx, [ctx.redis]) as servers:
        (_, server), = servers
        if isinstance(server, str):
            ctx.results.note(GROUP, "redis-server did not start: " + server)
            return
        loadgen(ctx.loadgen, server.port, preload=True, keys=KEYSPACE, requests=0)
        try:
            with limited(server.proc.pid, SERVER_CPU_SHARE):
                compare(ctx, server, THROTTLED, judged=True)
        except Unavailable as e:
            ctx.results.note(GROUP, "SKIPPING the throttled comparison (%s): the loadgen is "
                             "NOT validated in this run" % e)
        compare(ctx, server, FREE, judged=False)


def compare(ctx, server, section, judged):
    for pipeline in (1, 16):
        requests = ctx.size("strings_requests_p%d" % pipeline)
        if judged:
            # About a second per run at the throttled rate: shorter runs are dominated by
            # where they fall in the quota's 10 ms periods.
            requests = THROTTLED_REQUESTS[pipeline] * (1 if ctx.quick else 4)
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
            cell = ctx.results.add(GROUP, section, "%s c50 P%d 3B" % (test, pipeline),
                                   "req/s", "higher", "redis-benchmark",
                                   pick(table, test, ["blinkdb-loadgen", "redis-benchmark"]))
            r = cell["ratios"].get("blinkdb-loadgen")
            if r is None:
                verdict = "n/a"
            elif judged:
                verdict = "within 10%" if abs(r - 1) <= TOLERANCE else "OUTSIDE 10%"
            else:
                verdict = "not judged: client-bound"
            cpu = ["%s %s" % (label, "-" if result.get("client_cpu_us") is None
                              else "%.2f" % result["client_cpu_us"])
                   for label, result in cell["results"].items()]
            ctx.results.note(GROUP, "%s, %s c50 P%d: loadgen/redis-benchmark = %s (%s); client "
                             "CPU us per request: %s" % (section.split(" (")[0], test, pipeline,
                                                         "-" if r is None else "%.3f" % r,
                                                         verdict, ", ".join(cpu)))
