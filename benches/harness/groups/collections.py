"""`collections`: redis-benchmark's own collection tests (`-t hset,sadd,spop,zadd,zpopmin`) at
c50 P1 and P16 (5x the requests at P16), and RSS per member of a 1M-member hash, set, sorted set and list of short members
(`f:123456`; the list by RPUSH), each built in 1000-member commands on a fresh server, and of a 1M-entry stream of
one short field each (`XADD c * f v:123456`, pipelined 1000 at a time): the growth of RSS and
of used_memory, and MEMORY USAGE of the collection, per member, each server fresh, alternated
for up to 3 rounds. Persistence off, as the memory cells need. A server without a command shows
n/a for its cell. benches/collection_rss.py runs the memory cells alone."""
from ..cells import alternate, pick
from ..context import persistence_label, running
from ..runners import NotApplicable, measure, send_all
from ..servers import Server, StartError
from .redisbench import test_cells
from .small_objects import used_memory

GROUP = "collections"
TESTS = ["HSET", "SADD", "SPOP", "ZADD", "ZPOPMIN"]
BATCH = 1000
KINDS = ("hash", "set", "zset", "list", "stream")
ROUNDS_MAX = 3


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


def memory_per_member(server, kind, members):
    """Builds the collection `c` on `server` (1000-member commands pipelined 20 at a time, XADD
    1000 at a time) and returns the growth of its RSS and of INFO's used_memory, and MEMORY
    USAGE c SAMPLES 0, each per member."""
    with server.client() as client:
        rss0, used0 = server.rss_kb(), used_memory(client)
    send_all(server, list(build(kind, members)), step=BATCH if kind == "stream" else 20)
    with server.client() as client:
        rss1, used1 = server.rss_kb(), used_memory(client)
        usage = client.call("MEMORY", "USAGE", "c", "SAMPLES", "0")
    out = {"rss": measure((rss1 - rss0) * 1024 / members),
           "used": measure((used1 - used0) / members)}
    if isinstance(usage, int):
        out["usage"] = measure(usage / members)
    return out


def fresh(ctx, contestant):
    """A started server for one memory run (snapshots off on both sides: Redis's by the
    harness, BlinkDB's here, as a save during the load would copy what it measures)."""
    extra = ["--save", ""] if contestant.is_blinkdb and not contestant.standin else []
    server = Server(contestant, ctx.ports, ctx.root, appendonly=False, extra=extra)
    try:
        server.start()
    except StartError as e:
        server.discard()
        raise NotApplicable("did not start: %s" % e)
    return server


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = persistence_label(False, "everysec")
    with running(ctx, contestants) as servers:
        # P16 runs 5x the requests: at P1's count a P16 run lasted about a second, and single
        # runs of one server spread by 30% (HISTORY, 2026-11-27 14:21).
        requests = ctx.size("collection_requests")
        test_cells(ctx, GROUP, servers, TESTS, {1: requests, 16: 5 * requests})
    members = ctx.size("collection_members")
    params = {"members": members}
    for kind in KINDS:
        def fn(contestant, kind=kind):
            server = fresh(ctx, contestant)
            try:
                return memory_per_member(server, kind, members)
            finally:
                server.discard()

        # Memory does not warm up and moves little between runs: no warm-up, at most 3 rounds.
        table = alternate([(c.label, lambda c=c: fn(c)) for c in contestants],
                          min(ctx.rounds, ROUNDS_MAX), 0)
        name = "%d-member %s" % (members, kind)
        for metric, title in (("rss", "RSS per member"), ("used", "used_memory per member"),
                              ("usage", "MEMORY USAGE per member")):
            ctx.results.add(GROUP, section, "%s, %s" % (title, name), "bytes", "lower",
                            ctx.redis.label, pick(table, metric, labels), params)
