"""`sketch_restart`: restart time with sketches totalling `sketch_restart_mb` MB per
structure (issue 45), BlinkDB (AOF everysec; its sketch files are bound at start, their AOF
records not replayed) against redis-server + RedisBloom 2.8 loading its dump.rdb (SAVE after
the fill; AOF off), graceful stop then spawn until a value written last answers. One cell per
structure; both servers get the same commands:
- count-min: `CMS.INITBYDIM` of 256 MB sketches (width 2^24, depth 4), then `CMS.INCRBY` of
  random items spread over every page;
- cuckoo: `CF.RESERVE` of 256 MB filters (capacity 2^28, bucket size 2), then `CF.INSERT`;
- top-k: `TOPK.RESERVE` of 256 MB sketches (k 50, width 2^23, depth 4), then `TOPK.ADD`;
- t-digest: digests of compression 10,000 (RedisBloom allocates 960 KB of nodes for each),
  then `TDIGEST.ADD` of random samples.
Kept apart from `probabilistic.py` (another helper's file) as its own group."""

import random

from ..cells import alternate, pick
from ..context import prepared, redisbloom_peer, running
from ..resp import ReplyError, brief, is_unsupported
from ..runners import measure

GROUP = "sketch_restart"
WIDTH = 1 << 24
DEPTH = 4
SKETCH_MB = WIDTH * DEPTH * 4 >> 20
PROBE = "restart-probe"
INCRBY_COMMANDS = 200   # per sketch
ITEMS_PER_COMMAND = 500
TD_COMPRESSION = 10_000
TD_MB = (6 * TD_COMPRESSION + 10) * 16 / (1 << 20)
TD_COMMANDS = 4         # per digest


def cms_commands(key, rng):
    yield ("CMS.INITBYDIM", key, WIDTH, DEPTH)
    for _ in range(INCRBY_COMMANDS):
        args = ["CMS.INCRBY", key]
        for _ in range(ITEMS_PER_COMMAND):
            args += ["i%d" % rng.randrange(1 << 30), rng.randrange(1, 100)]
        yield tuple(args)


def cf_commands(key, rng):
    yield ("CF.RESERVE", key, 1 << 28, "BUCKETSIZE", 2)
    for _ in range(INCRBY_COMMANDS):
        yield ("CF.INSERT", key, "ITEMS",
               *["i%d" % rng.randrange(1 << 30) for _ in range(ITEMS_PER_COMMAND)])


def topk_commands(key, rng):
    yield ("TOPK.RESERVE", key, 50, 1 << 23, 4, 0.9)
    for _ in range(INCRBY_COMMANDS):
        yield ("TOPK.ADD", key, *["i%d" % rng.randrange(1 << 30) for _ in range(ITEMS_PER_COMMAND)])


def td_commands(key, rng):
    yield ("TDIGEST.CREATE", key, "COMPRESSION", TD_COMPRESSION)
    for _ in range(TD_COMMANDS):
        yield ("TDIGEST.ADD", key, *["%.6f" % rng.gauss(100, 30) for _ in range(ITEMS_PER_COMMAND)])


# name, key prefix, MB per structure, its commands, the probe written last, its check.
STRUCTURES = [
    ("count-min sketches", "cms", SKETCH_MB, cms_commands,
     ("CMS.INCRBY", "cms:0", PROBE, 7), ("CMS.QUERY", "cms:0", PROBE), [7]),
    ("cuckoo filters", "cf", 256, cf_commands,
     ("CF.ADD", "cf:0", PROBE), ("CF.EXISTS", "cf:0", PROBE), 1),
    ("top-k sketches", "tk", 256, topk_commands,
     ("TOPK.INCRBY", "tk:0", PROBE, 100_000), ("TOPK.QUERY", "tk:0", PROBE), [1]),
    ("t-digests", "td", TD_MB, td_commands,
     ("TDIGEST.ADD", "td:0", 123456789), ("TDIGEST.MAX", "td:0"), None),
]


def fill(server, prefix, count, commands, probe):
    """The structures; None, or why this server cannot make them."""
    rng = random.Random(45)
    try:
        with server.client() as client:
            for s in range(count):
                batch = list(commands("%s:%d" % (prefix, s), rng))
                for reply in client.pipeline(batch):
                    if isinstance(reply, ReplyError):
                        raise reply
            # An error reply comes back as a value: a probe that failed would leave the
            # restart waiting for it to answer (TOPK.INCRBY takes at most 100,000).
            reply = client.call(*probe)
            if isinstance(reply, ReplyError):
                raise reply
    except ReplyError as e:
        return "n/a (%s)" % brief(e) if is_unsupported(e) else "n/a (fill: %s)" % brief(e)
    return None


def ready_for(check, expected):
    def ready(client):
        reply = client.call(*check)
        if expected is None:  # TDIGEST.MAX: the probe's value (RESP2 bulk or RESP3 double)
            return reply in (b"123456789", "123456789", 123456789.0)
        return reply == expected
    return ready


def run(ctx):
    peer = redisbloom_peer(ctx, GROUP)
    chosen = [ctx.blinkdb, peer]
    labels = [c.label for c in chosen]
    megabytes = ctx.size("sketch_restart_mb")
    for name, prefix, each_mb, commands, probe, check, expected in STRUCTURES:
        count = max(1, int(megabytes // each_mb))
        run_cell(ctx, peer, chosen, labels, name, count, count * each_mb,
                 lambda server: fill(server, prefix, count, commands, probe),
                 ready_for(check, expected),
                 describe(name, prefix, count))


def describe(name, prefix, count):
    return {
        "cms": "%d x CMS.INITBYDIM %d %d, %d CMS.INCRBY of %d items each; to CMS.QUERY = 7"
               % (count, WIDTH, DEPTH, INCRBY_COMMANDS, ITEMS_PER_COMMAND),
        "cf": "%d x CF.RESERVE %d BUCKETSIZE 2, %d CF.INSERT of %d items each"
              % (count, 1 << 28, INCRBY_COMMANDS, ITEMS_PER_COMMAND),
        "tk": "%d x TOPK.RESERVE 50 %d 4 0.9, %d TOPK.ADD of %d items each"
              % (count, 1 << 23, INCRBY_COMMANDS, ITEMS_PER_COMMAND),
        "td": "%d x TDIGEST.CREATE COMPRESSION %d, %d TDIGEST.ADD of %d samples each"
              % (count, TD_COMPRESSION, TD_COMMANDS, ITEMS_PER_COMMAND),
    }[prefix]


def run_cell(ctx, peer, chosen, labels, name, count, megabytes, fill_one, ready, what):
    # The peer restarts from its RDB file: no AOF (the later --appendonly wins).
    extra = {peer.label: ["--appendonly", "no"]}
    with running(ctx, chosen, appendonly=True, appendfsync="everysec", extra=extra) as started:
        servers = prepared(ctx, started, peer, fill_one)
        for label, server in servers:
            if not isinstance(server, str) and label == peer.label:
                with server.client() as client:
                    client.call("SAVE")

        def runner(server):
            if isinstance(server, str):
                return server

            def once():
                server.stop()
                seconds = server.start(timeout=900, ready=ready)
                return {"m": measure(seconds * 1000.0)}
            return once

        table = alternate([(label, runner(s)) for label, s in servers], ctx.rounds, ctx.warmups)
        ctx.results.add(GROUP, "startup",
                        "restart with %d MB of %s (%s)" % (megabytes, name, what),
                        "ms", "lower", peer.label, pick(table, "m", labels),
                        {"megabytes": megabytes})
