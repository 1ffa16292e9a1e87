"""`sketch_restart`: restart time with count-min sketches totalling `sketch_restart_mb` MB
(issue 45), BlinkDB (AOF everysec; its sketch files are bound at start, their AOF records
not replayed) against redis-server + RedisBloom 2.8 loading its dump.rdb (SAVE after the
fill; AOF off), graceful stop then spawn until a counter written last answers. Both servers
get the same commands: `CMS.INITBYDIM` of 256 MB sketches (width 2^24, depth 4), then
`CMS.INCRBY` of random items spread over every page. Kept apart from `probabilistic.py`
(another helper's file) as its own group."""

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


def fill(server, sketches):
    """The sketches; None, or why this server cannot make them."""
    rng = random.Random(45)
    try:
        with server.client() as client:
            for s in range(sketches):
                key = "cms:%d" % s
                client.call("CMS.INITBYDIM", key, WIDTH, DEPTH)
                commands = []
                for _ in range(INCRBY_COMMANDS):
                    args = ["CMS.INCRBY", key]
                    for _ in range(ITEMS_PER_COMMAND):
                        args += ["i%d" % rng.randrange(1 << 30), rng.randrange(1, 100)]
                    commands.append(tuple(args))
                for reply in client.pipeline(commands):
                    if isinstance(reply, ReplyError):
                        raise reply
            client.call("CMS.INCRBY", "cms:0", PROBE, 7)
    except ReplyError as e:
        return "n/a (%s)" % brief(e) if is_unsupported(e) else "n/a (fill: %s)" % brief(e)
    return None


def ready(client):
    return client.call("CMS.QUERY", "cms:0", PROBE) == [7]


def run(ctx):
    peer = redisbloom_peer(ctx, GROUP)
    chosen = [ctx.blinkdb, peer]
    labels = [c.label for c in chosen]
    megabytes = ctx.size("sketch_restart_mb")
    sketches = max(1, megabytes // SKETCH_MB)
    # The peer restarts from its RDB file: no AOF (the later --appendonly wins).
    extra = {peer.label: ["--appendonly", "no"]}
    with running(ctx, chosen, appendonly=True, appendfsync="everysec", extra=extra) as started:
        servers = prepared(ctx, started, peer, lambda server: fill(server, sketches))
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
                        "restart with %d MB of count-min sketches (%d x CMS.INITBYDIM %d %d, "
                        "%d CMS.INCRBY of %d items each; to CMS.QUERY = 7)"
                        % (sketches * SKETCH_MB, sketches, WIDTH, DEPTH, INCRBY_COMMANDS,
                           ITEMS_PER_COMMAND),
                        "ms", "lower", peer.label, pick(table, "m", labels),
                        {"megabytes": sketches * SKETCH_MB})
