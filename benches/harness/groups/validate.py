"""`validate`: blinkdb-loadgen against redis-benchmark on the same redis-server, same clients,
pipeline, value size and keyspace.

The 10% agreement criterion applies where the server is the bottleneck for both tools: the
server is held to a fixed share of one CPU (a cgroup CFS quota, 10 ms period), and the judged
cells are -P 16 at 50 clients and -P 1 at 1000 clients. At -P 1 with 50 clients redis-benchmark
spends more client CPU per request than the server does, so even the throttled server runs dry
within its slices under redis-benchmark (it sleeps 0.02-0.03 times per request, against
0.001-0.002 under the loadgen): that cell measures the client, is reported, and is not judged.
1000 clients queue about 5 ms of work per throttled slice of 2.5 ms, so the server never waits
for either tool. Unthrottled, on a 2-core machine where the client shares the cores, each tool
measures mostly its own cost per request; that comparison is kept as information, with both
tools' CPU per request."""
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
# (clients, pipeline, judged when throttled); the unthrottled comparison runs the c50 cells.
THROTTLED_CELLS = [(50, 1, False), (1000, 1, True), (50, 16, True)]
FREE_CELLS = [(50, 1, False), (50, 16, False)]
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
    for clients, pipeline, judge in (THROTTLED_CELLS if judged else FREE_CELLS):
        requests = ctx.size("strings_requests_p%d" % pipeline)
        if judged:
            # About a second per run at the throttled rate: shorter runs are dominated by
            # where they fall in the quota's 10 ms periods.
            requests = THROTTLED_REQUESTS[pipeline] * (1 if ctx.quick else 4)
        for test in ("SET", "GET"):
            ratio = 1.0 if test == "SET" else 0.0

            def ours(test=test, ratio=ratio, pipeline=pipeline, requests=requests,
                     clients=clients):
                report = loadgen(ctx.loadgen, server.port, clients=clients, pipeline=pipeline,
                                 requests=requests, keys=KEYSPACE, value_size=3, set_ratio=ratio)
                return {test: loadgen_measure(report)}

            def theirs(test=test, pipeline=pipeline, requests=requests, clients=clients):
                return redis_benchmark(server.port, clients=clients, requests=requests,
                                       pipeline=pipeline, tests=[test], keyspace=KEYSPACE,
                                       value_size=3)

            table = alternate([("blinkdb-loadgen", ours), ("redis-benchmark", theirs)],
                              ctx.rounds, ctx.warmups)
            cell = ctx.results.add(GROUP, section, "%s c%d P%d 3B" % (test, clients, pipeline),
                                   "req/s", "higher", "redis-benchmark",
                                   pick(table, test, ["blinkdb-loadgen", "redis-benchmark"]))
            r = cell["ratios"].get("blinkdb-loadgen")
            if r is None:
                verdict = "n/a"
            elif judge:
                verdict = "within 10%" if abs(r - 1) <= TOLERANCE else "OUTSIDE 10%"
            elif judged:
                verdict = "not judged: redis-benchmark lets the server run dry"
            else:
                verdict = "not judged: client-bound"
            cpu = ["%s %s" % (label, "-" if result.get("client_cpu_us") is None
                              else "%.2f" % result["client_cpu_us"])
                   for label, result in cell["results"].items()]
            ctx.results.note(GROUP, "%s, %s c%d P%d: loadgen/redis-benchmark = %s (%s); client "
                             "CPU us per request: %s" % (section.split(" (")[0], test, clients,
                                                         pipeline,
                                                         "-" if r is None else "%.3f" % r,
                                                         verdict, ", ".join(cpu)))
