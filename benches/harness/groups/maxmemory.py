"""`maxmemory`: Redis's contract under a memory limit. Each server starts with `--maxmemory
50mb --maxmemory-policy allkeys-lru`; 1 KB values are written (redis-py pipelines of 1,000 SETs)
until five times the limit has gone in; then INFO's used_memory and the process's RSS are read
(lower is better). Redis holds used_memory at the limit; the cell shows whether BlinkDB does,
and what each costs in RSS for it."""
from ..cells import alternate, pick
from ..context import persistence_label, running
from ..runners import measure

GROUP = "maxmemory"
LIMIT = 50 << 20
VALUE = b"x" * 1024
BATCH = 1000


def run(ctx):
    import redis  # the project's venv has it (tests/integration/requirements.txt)

    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = persistence_label(False, "everysec")
    flags = ["--maxmemory", "50mb", "--maxmemory-policy", "allkeys-lru"]
    written = ctx.size("maxmemory_times") * LIMIT

    def fn(server):
        r = redis.Redis(port=server.port, socket_timeout=120)
        try:
            r.flushall()
            n = 0
            while n * len(VALUE) < written:
                p = r.pipeline(transaction=False)
                for i in range(n, n + BATCH):
                    p.set("mm:%010d" % i, VALUE)
                p.execute()
                n += BATCH
            used = int(r.info("memory")["used_memory"])
        finally:
            r.close()
        return {"used": measure(used / (1 << 20)), "rss": measure(server.rss_kb() / 1024.0)}

    with running(ctx, contestants, appendonly=False,
                 extra={label: flags for label in labels}) as servers:
        table = alternate([(label, s if isinstance(s, str) else (lambda s=s: fn(s)))
                           for label, s in servers], ctx.rounds, ctx.warmups)
    title = "maxmemory 50mb, allkeys-lru, %dx the limit written in 1 KB SETs" % (
        ctx.size("maxmemory_times"))
    ctx.results.add(GROUP, section, title + ": used_memory", "MB", "lower", ctx.redis.label,
                    pick(table, "used", labels), {"limit_mb": 50})
    ctx.results.add(GROUP, section, title + ": RSS", "MB", "lower", ctx.redis.label,
                    pick(table, "rss", labels), {"limit_mb": 50})
