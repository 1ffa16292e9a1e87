"""`collection_ops`: heavier collection commands against Redis 7 at c50, persistence off:
ZRANGEBYSCORE (10 members from a random score) on a 1M-member sorted set, PFADD of random
elements and PFCOUNT on one HyperLogLog, and SINTER of two 100k-member sets that share half
their members (a 50k-member reply). The data is built before the cells, in 1000-member
commands."""
from ..cells import alternate, pick
from ..context import persistence_label, running
from ..runners import NotApplicable, loadgen, loadgen_measure, send_all

GROUP = "collection_ops"
ZSET_MEMBERS = 1_000_000
SET_MEMBERS = 100_000
BATCH = 1000
# The HyperLogLog PFCOUNT reads.
HLL_FILL = ["PFADD", "bench:hll"] + ["e:%d" % i for i in range(BATCH)]


def build(server):
    commands = []
    for start in range(0, ZSET_MEMBERS, BATCH):
        ids = range(start, start + BATCH)
        commands.append(["ZADD", "bench:z"] + [x for i in ids for x in (str(i), "m:%d" % i)])
    for name, first in (("bench:s1", 0), ("bench:s2", SET_MEMBERS // 2)):
        for start in range(first, first + SET_MEMBERS, BATCH):
            commands.append(["SADD", name] + ["m:%d" % i for i in range(start, start + BATCH)])
    commands.append(HLL_FILL)
    send_all(server, commands)


CELLS = [
    ("ZRANGEBYSCORE 1M-member zset, LIMIT 0 10", "ZRANGEBYSCORE bench:z __rand_int__ +inf LIMIT 0 10",
     ZSET_MEMBERS, (1, 16)),
    ("PFADD random element", "PFADD bench:hll e:__rand_int__", 10_000_000, (1, 16)),
    ("PFCOUNT one key", "PFCOUNT bench:hll", 1, (1, 16)),
    ("SINTER of two 100k-member sets (50k reply)", "SINTER bench:s1 bench:s2", 1, (1,)),
]


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = persistence_label(False, "everysec")
    seconds = ctx.size("run_seconds")
    with running(ctx, contestants) as servers:
        ready = []
        for label, server in servers:
            if isinstance(server, str):
                ready.append((label, server))
                continue
            try:
                build(server)
                ready.append((label, server))
            except NotApplicable as e:
                ready.append((label, "n/a (%s)" % e))
        for title, template, keys, pipelines in CELLS:
            for pipeline in pipelines:
                def fn(server, template=template, keys=keys, pipeline=pipeline):
                    return {"m": loadgen_measure(loadgen(
                        ctx.loadgen, server.port, clients=50, pipeline=pipeline,
                        duration=seconds, keys=keys, commands=[template]))}
                table = alternate([(label, s if isinstance(s, str) else (lambda s=s: fn(s)))
                                   for label, s in ready], ctx.rounds, ctx.warmups)
                ctx.results.add(GROUP, section, "%s c50 P%d" % (title, pipeline), "ops/s",
                                "higher", ctx.redis.label, pick(table, "m", labels),
                                {"pipeline": pipeline})
