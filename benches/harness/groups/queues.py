"""`queues`: what job queues do, against Redis 7 at AOF everysec (as a queue runs): 50
producers LPUSH items that 50 consumers take with BLPOP, and 50 producers XADD entries that 50
consumers of one group read with XREADGROUP (COUNT 16, BLOCK) and acknowledge with XACK. Each
item carries its push time, so the cells give items/s through the queue (popped, or read and
acknowledged, while the producers run) and the p50/p99 time from push to pop; a second row
per queue puts the p99 side by side."""
from ..cells import alternate, pick
from ..context import persistence_label, running
from ..runners import add_server_cpu, loadgen, measure

GROUP = "queues"
QUEUES = [
    ("LPUSH → BLPOP handoff, 50 producers + 50 consumers", "benchq", "LPUSH benchq __ts__",
     "list:benchq"),
    ("XADD → XREADGROUP + XACK, 50 producers + 50 consumers in one group", "benchs",
     "XADD benchs * t __ts__", "stream:benchs:g"),
]


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = persistence_label(True, "everysec")
    seconds = ctx.size("run_seconds")
    with running(ctx, contestants, appendonly=True) as servers:
        for title, key, producer, queue in QUEUES:
            def fn(server, key=key, producer=producer, queue=queue):
                with server.client() as client:
                    client.call("DEL", key)
                report = loadgen(ctx.loadgen, server.port, clients=50, duration=seconds,
                                 commands=[producer], consumers=50, consume=queue)
                popped = report["consumed"]
                lat = popped["latency_us"]
                m = measure(popped["items_per_sec"], lat["p50"] / 1000.0, lat["p99"] / 1000.0)
                add_server_cpu(m, report.get("server_window"), popped["items"])
                return {"items": m, "p99": measure(lat["p99"] / 1000.0)}

            table = alternate([(label, s if isinstance(s, str) else (lambda s=s: fn(s)))
                               for label, s in servers], ctx.rounds, ctx.warmups)
            ctx.results.add(GROUP, section, title, "items/s", "higher", ctx.redis.label,
                            pick(table, "items", labels), {"producers": 50, "consumers": 50})
            ctx.results.add(GROUP, section, title.split(",")[0] + ", push-to-pop p99", "ms",
                            "lower", ctx.redis.label, pick(table, "p99", labels),
                            {"producers": 50, "consumers": 50})
