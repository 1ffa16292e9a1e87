"""`busypoll`: what busy polling (`busy-poll-us`) buys and costs, by load. BlinkDB at its
default, BlinkDB with `busy-poll-us 0` and Redis 7 (the peer), persistence off, GET of 3 B
values; throughput and server CPU per operation from sparse to saturating load:

- one client sending a request every 1 ms, and one every 100 us (paced by the harness's own
  client: the gaps are longer than the 50 us window, so a poll after each reply finds nothing);
- one client sending as fast as replies come back, pinned across CPUs from the server like
  the bloom group's single-client cells;
- 50 clients at -P 1 and at -P 16 (blinkdb-loadgen).

With BENCH_BASELINE_BIN set, a fourth column runs that BlinkDB binary at its defaults, so a
change to polling is measured before and after in the same alternated run. Run it with
`--only busypoll` (it is not in the default list)."""
import contextlib
import os
import statistics
import time

from .. import cpupin, servercpu
from ..cells import alternate, pick
from ..context import running
from ..resp import Client
from ..runners import add_server_cpu, loadgen, loadgen_measure, measure
from ..servers import Contestant

GROUP = "busypoll"
KEYS = 100_000
GET = ["GET key:__rand_int__"]


def contestants(ctx):
    chosen = [ctx.blinkdb]
    if not ctx.blinkdb.standin:
        chosen.append(ctx.blinkdb.with_flags(ctx.blinkdb.label + " busy-poll-us 0",
                                             ["--busy-poll-us", "0"]))
    baseline = os.environ.get("BENCH_BASELINE_BIN")
    if baseline:
        chosen.append(Contestant("BlinkDB baseline (%s)" % os.path.basename(baseline), baseline,
                                 True))
    return chosen + [ctx.redis]


def paced(server, interval, seconds):
    """One client, one GET per `interval` seconds (by deadline, so a late reply does not
    stretch the schedule); returns a measure with the server's CPU per request."""
    latencies = []
    with Client(server.port) as client, servercpu.Window(server.proc.pid) as window:
        began = time.monotonic()
        next_send = began
        while True:
            now = time.monotonic()
            if now - began >= seconds:
                break
            if next_send > now:
                time.sleep(next_send - now)
            t0 = time.monotonic()
            client.call("GET", "key:%012d" % (len(latencies) % KEYS))
            latencies.append(time.monotonic() - t0)
            next_send += interval
        elapsed = time.monotonic() - began
    latencies.sort()
    m = measure(len(latencies) / elapsed, statistics.median(latencies) * 1000,
                latencies[int(len(latencies) * 0.99)] * 1000)
    return add_server_cpu(m, window, len(latencies))


def run(ctx):
    chosen = contestants(ctx)
    labels = [c.label for c in chosen]
    seconds = 1.0 if ctx.quick else 3.0
    with running(ctx, chosen, appendonly=False) as servers:
        for _, server in servers:
            if not isinstance(server, str):
                loadgen(ctx.loadgen, server.port, preload=True, keys=KEYS, requests=0)

        def cell(workload, fn, params):
            table = alternate([(label, s if isinstance(s, str) else (lambda s=s: {"m": fn(s)}))
                               for label, s in servers], ctx.rounds, ctx.warmups)
            ctx.results.add(GROUP, "persistence off", workload, "ops/s", "higher",
                            ctx.redis.label, pick(table, "m", labels), params)

        def lg(clients, pipeline):
            def fn(server):
                pin = cpupin.server_pinned(server.proc.pid) if clients == 1 \
                    else contextlib.nullcontext(None)
                with pin as cpu:
                    report = loadgen(ctx.loadgen, server.port, clients=clients, pipeline=pipeline,
                                     duration=seconds, keys=KEYS, commands=GET, cpu=cpu)
                return loadgen_measure(report)
            return fn

        for interval_us in (1000, 100):
            cell("GET, 1 client, one request per %d us" % interval_us,
                 lambda s, i=interval_us: paced(s, i / 1e6, seconds),
                 {"clients": 1, "interval_us": interval_us})
        cell("GET, 1 client back to back, pinned", lg(1, 1), {"clients": 1, "pipeline": 1})
        cell("GET c50 P1", lg(50, 1), {"clients": 50, "pipeline": 1})
        cell("GET c50 P16", lg(50, 16), {"clients": 50, "pipeline": 16})
