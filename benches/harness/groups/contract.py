"""`contract`: what client libraries use beyond plain commands, against Redis 7 at c50:
MULTI/SET/INCR/EXEC transactions, EVALSHA of a three-command script, and PUBLISH to 1 and to
100 subscribers (every message must reach every subscriber, or the cell fails). AOF
everysec, as the headline cells; a server without the command shows n/a."""
from ..cells import alternate, pick
from ..context import persistence_label, running
from ..resp import ReplyError, brief
from ..runners import NotApplicable, ToolError, loadgen, loadgen_measure

GROUP = "contract"
KEYS = 100_000
TRANSACTION = "MULTI ; SET key:__rand_int__ abc ; INCR counter:__rand_int__ ; EXEC"
# Three commands, as a rate limiter or a lock extension would run them.
SCRIPT = ("redis.call('SET', KEYS[1], ARGV[1]); "
          "local n = redis.call('INCR', KEYS[2]); "
          "return {redis.call('GET', KEYS[1]), n}")
CHANNEL = "bench:channel"


def load_script(server):
    """SCRIPT LOAD on the server; returns the SHA1, or raises NotApplicable."""
    try:
        with server.client() as client:
            return client.call("SCRIPT", "LOAD", SCRIPT).decode()
    except ReplyError as e:
        raise NotApplicable(brief(e))


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = persistence_label(True, "everysec")
    seconds = ctx.size("run_seconds")
    with running(ctx, contestants, appendonly=True) as servers:

        def cell(workload, unit, fn, params=None):
            table = alternate([(label, s if isinstance(s, str) else (lambda s=s: {"m": fn(s)}))
                               for label, s in servers], ctx.rounds, ctx.warmups)
            ctx.results.add(GROUP, section, workload, unit, "higher", ctx.redis.label,
                            pick(table, "m", labels), params)

        def lg(commands, pipeline=1, subscribers=None, script=False):
            def fn(server):
                templates = commands
                if script:
                    sha = load_script(server)
                    templates = [c.replace("__sha__", sha) for c in commands]
                report = loadgen(ctx.loadgen, server.port, clients=50, pipeline=pipeline,
                                 duration=seconds, keys=KEYS, commands=templates,
                                 subscribers=subscribers)
                if subscribers:
                    want = report["ops"] * subscribers
                    if report["subscriber_messages"] != want:
                        raise ToolError("subscribers received %d messages of %d"
                                        % (report["subscriber_messages"], want))
                return loadgen_measure(report)
            return fn

        for pipeline in (1, 16):
            cell("MULTI/SET/INCR/EXEC c50 P%d" % pipeline, "tx/s", lg([TRANSACTION], pipeline),
                 {"pipeline": pipeline})
        for pipeline in (1, 16):
            cell("EVALSHA 3-command script c50 P%d" % pipeline, "ops/s",
                 lg(["EVALSHA __sha__ 2 key:__rand_int__ counter:__rand_int__ abc"], pipeline,
                    script=True), {"pipeline": pipeline})
        for subscribers in (1, 100):
            cell("PUBLISH to %d subscriber%s c50 P1" % (subscribers, "s" if subscribers > 1 else ""),
                 "msg/s", lg(["PUBLISH %s hello" % CHANNEL], subscribers=subscribers),
                 {"subscribers": subscribers})
