"""`system`: RSS after 1M small keys, restart time from a RESP AOF, SET throughput with
appendfsync always, and p50/p99 latency of the main SET/GET cells."""
import time

from ..cells import alternate, pick
from ..context import running
from ..resp import brief
from ..runners import NotApplicable, loadgen, measure, redis_benchmark
from ..servers import Server, StartError

GROUP = "system"
RSS_KEYS = 1_000_000


def rss_after_small_keys(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    with running(ctx, contestants) as servers:
        row = {}
        for label, server in servers:
            if isinstance(server, str):
                row[label] = server
                continue
            loadgen(ctx.loadgen, server.port, preload=True, keys=RSS_KEYS, requests=0)
            row[label] = [{"value": server.rss_kb()}]
        ctx.results.add(GROUP, "memory", "RSS after %d SETs of 3 B values" % RSS_KEYS, "kB",
                        "lower", ctx.redis.label, row)


def restart_time(ctx):
    keys = ctx.size("restart_keys")
    # Redis must write a pure RESP AOF (no RDB preamble) so both servers replay commands.
    extra = {ctx.redis.label: ["--aof-use-rdb-preamble", "no"]}
    servers = []
    try:
        for contestant in (ctx.blinkdb, ctx.redis):
            server = Server(contestant, ctx.ports, ctx.root, True, "everysec",
                            extra.get(contestant.label, ()))
            servers.append(server)
            try:
                server.start()
                loadgen(ctx.loadgen, server.port, preload=True, keys=keys, requests=0)
                wait_for_rewrite(server)
                server.stop()
            except (StartError, NotApplicable) as e:
                servers[-1] = "n/a (server did not start: %s)" % brief(e)
                server.discard()

        def runner(server):
            if isinstance(server, str):
                return server

            def once():
                seconds = server.start(timeout=600, ready=lambda c: c.call("DBSIZE") == keys)
                server.stop()
                return {"restart": measure(seconds * 1000.0)}
            return once

        labels = [ctx.blinkdb.label, ctx.redis.label]
        table = alternate([(label, runner(s)) for label, s in zip(labels, servers)],
                          ctx.rounds, ctx.warmups)
        ctx.results.add(GROUP, "restart", "restart with %d keys in the AOF (to PING + DBSIZE)" % keys,
                        "ms", "lower", ctx.redis.label, pick(table, "restart", labels), {"keys": keys})
    finally:
        for server in servers:
            if isinstance(server, Server):
                server.discard()


def wait_for_rewrite(server, timeout=120):
    """Lets an automatic AOF rewrite finish so the files on disk are the steady state."""
    deadline = time.monotonic() + timeout
    with server.client() as client:
        while time.monotonic() < deadline:
            try:
                info = client.call("INFO", "persistence")
            except Exception:
                return  # a server without INFO persistence has no rewrite to wait for
            if b"aof_rewrite_in_progress:1" not in info and b"aof_rewrite_scheduled:1" not in info:
                return
            time.sleep(0.1)


def fsync_always(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    requests = ctx.size("fsync_always_requests")
    with running(ctx, contestants, appendonly=True, appendfsync="always") as servers:
        table = alternate(
            [(label, server if isinstance(server, str) else
              (lambda s=server: redis_benchmark(s.port, clients=50, requests=requests,
                                                tests=["SET"], keyspace=1_000_000)))
             for label, server in servers], ctx.rounds, ctx.warmups)
        ctx.results.add(GROUP, "AOF always", "SET c50 P1 appendfsync always", "req/s", "higher",
                        ctx.redis.label, pick(table, "SET", labels), {"clients": 50})


def latency(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    requests = ctx.size("strings_requests_p1")
    with running(ctx, contestants) as servers:
        table = alternate(
            [(label, server if isinstance(server, str) else
              (lambda s=server: latency_measures(s.port, requests)))
             for label, server in servers], ctx.rounds, ctx.warmups)
        for test in ("SET", "GET"):
            for q in ("p50", "p99"):
                ctx.results.add(GROUP, "latency (persistence off, c50 P1)",
                                "%s %s latency" % (test, q), "ms", "lower", ctx.redis.label,
                                pick(table, "%s %s" % (test, q), labels))


def latency_measures(port, requests):
    rows = redis_benchmark(port, clients=50, requests=requests, tests=["SET", "GET"],
                           keyspace=1_000_000)
    out = {}
    for test in rows:
        for q in ("p50", "p99"):
            m = measure(rows[test][q])
            # The latency cells come from the same run as its server CPU per request.
            for key in ("server_cpu_us", "server_stat_cpu_us", "server_idle_cpu_s",
                        "server_idle_wall_s"):
                if key in rows[test]:
                    m[key] = rows[test][key]
            out["%s %s" % (test, q)] = m
    return out


def run(ctx):
    rss_after_small_keys(ctx)
    restart_time(ctx)
    fsync_always(ctx)
    latency(ctx)
