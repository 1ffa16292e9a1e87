"""`pipelines`: a whole pipeline written before any reply is read, as redis-py's
`pipeline(transaction=False).execute()` does (also go-redis, ioredis and bulk loaders): N GETs
of a 100-byte value, whose requests and replies are far larger than the socket buffers, so the
server must go on reading while its replies wait. Each cell is commands/s through one
execute() (higher is better), and the server's RSS after it (lower is better). The client is
redis-py itself, so its own CPU bounds both servers alike."""
import time

from ..cells import alternate, pick
from ..context import persistence_label, running
from ..runners import measure

GROUP = "pipelines"
VALUE = b"v" * 100


def run(ctx):
    import redis  # the project's venv has it (tests/integration/requirements.txt)

    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = persistence_label(False, "everysec")
    with running(ctx, contestants, appendonly=False) as servers:
        for n in ctx.size("pipeline_commands"):
            def fn(server, n=n):
                r = redis.Redis(port=server.port, socket_timeout=300)
                try:
                    r.set("pipe:k", VALUE)
                    p = r.pipeline(transaction=False)
                    for _ in range(n):
                        p.get("pipe:k")
                    began = time.monotonic()
                    got = p.execute()
                    took = time.monotonic() - began
                finally:
                    r.close()
                if len(got) != n or got[-1] != VALUE:
                    raise RuntimeError("wrong replies")
                return {"rate": measure(n / took),
                        "rss": measure(server.rss_kb() / 1024.0)}

            table = alternate([(label, s if isinstance(s, str) else (lambda s=s: fn(s)))
                               for label, s in servers], ctx.rounds, ctx.warmups)
            title = "redis-py pipeline of %s GETs, sent whole before reading" % format(n, ",")
            ctx.results.add(GROUP, section, title, "commands/s", "higher", ctx.redis.label,
                            pick(table, "rate", labels), {"commands": n})
            ctx.results.add(GROUP, section, title + ", server RSS after", "MB", "lower",
                            ctx.redis.label, pick(table, "rss", labels), {"commands": n})
