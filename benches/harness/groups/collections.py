"""`collections`: redis-benchmark's own collection tests (`-t hset,sadd,spop,zadd,zpopmin`) at
c50 P1 and P16 (5x the requests at P16), and RSS per member of a 1M-member hash, set, sorted set and list of short members
(`f:123456`; the list by RPUSH), each built in 1000-member commands on a fresh server, and of a 1M-entry stream of
one short field each (`XADD c * f v:123456`, pipelined 1000 at a time). Persistence off, as the
memory cells need. A server without a command shows n/a for its cell."""
from ..context import persistence_label, running
from ..runners import NotApplicable, send_all
from .redisbench import test_cells

GROUP = "collections"
TESTS = ["HSET", "SADD", "SPOP", "ZADD", "ZPOPMIN"]
BATCH = 1000


def build(kind, members):
    """The commands that build one collection of `members` short members."""
    if kind == "stream":
        for i in range(members):
            yield ["XADD", "c", "*", "f", "v:%d" % i]
        return
    for start in range(0, members, BATCH):
        ids = range(start, min(start + BATCH, members))
        if kind == "hash":
            yield ["HSET", "c"] + [x for i in ids for x in ("f:%d" % i, "v:%d" % i)]
        elif kind == "set":
            yield ["SADD", "c"] + ["m:%d" % i for i in ids]
        elif kind == "list":
            yield ["RPUSH", "c"] + ["m:%d" % i for i in ids]
        else:
            yield ["ZADD", "c"] + [x for i in ids for x in (str(i), "m:%d" % i)]


def rss_per_member(server, kind, members):
    before = server.rss_kb()
    commands = list(build(kind, members))
    send_all(server, commands, step=BATCH if kind == "stream" else 20)
    return {"value": (server.rss_kb() - before) * 1024 / members, "p50": None, "p99": None}


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    section = persistence_label(False, "everysec")
    with running(ctx, contestants) as servers:
        # P16 runs 5x the requests: at P1's count a P16 run lasted about a second, and single
        # runs of one server spread by 30% (HISTORY, 2026-11-27 14:21).
        requests = ctx.size("collection_requests")
        test_cells(ctx, GROUP, servers, TESTS, {1: requests, 16: 5 * requests})
    members = ctx.size("collection_members")
    for kind in ("hash", "set", "zset", "list", "stream"):
        row = {}
        for contestant in contestants:
            with running(ctx, [contestant]) as started:
                (label, server), = started
                try:
                    row[label] = server if isinstance(server, str) else \
                        [rss_per_member(server, kind, members)]
                except NotApplicable as e:
                    row[label] = "n/a (%s)" % e
        ctx.results.add(GROUP, section, "RSS per member, %d-member %s" % (members, kind),
                        "bytes", "lower", ctx.redis.label, row, {"members": members})
