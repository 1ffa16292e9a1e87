"""Shared state of one harness run and the helper that brings servers up and down."""
import contextlib
import os

from .resp import brief
from .servers import Server, StartError


class Context:
    def __init__(self, *, quick, rounds, warmups, ports, root, loadgen, blinkdb, redis,
                 redisbloom, results, sizes, redis8=None, redis8_missing=None):
        self.quick = quick
        self.rounds = rounds
        self.warmups = warmups
        self.ports = ports
        self.root = root
        self.loadgen = loadgen
        self.blinkdb = blinkdb
        self.redis = redis
        self.redisbloom = redisbloom
        self.results = results
        self.sizes = sizes
        # redis-server 8.0.2 (groups/redis8.py), or None and why not.
        self.redis8 = redis8
        self.redis8_missing = redis8_missing

    def size(self, name):
        return self.sizes["quick" if self.quick else "full"][name]


@contextlib.contextmanager
def each_started(contestants, start, what, errors=(StartError,)):
    """Runs `start(contestant)` for each contestant, which returns something with a
    discard() method (a server, a topology); yields [(label, it | "n/a (reason)")], a
    start that raised one of `errors` giving the reason. Discards them all at the end."""
    started = []
    try:
        for contestant in contestants:
            try:
                started.append((contestant.label, start(contestant)))
            except errors as e:
                reason = "n/a (%s did not start: %s)" % (what, brief(e, 120))
                print("  %s: %s" % (contestant.label, reason), flush=True)
                started.append((contestant.label, reason))
        yield started
    finally:
        for _, it in started:
            if not isinstance(it, str):
                it.discard()


def redisbloom_peer(ctx, group):
    """redis-server with RedisBloom, or (module not found, noted in `group`) a stand-in
    whose column `prepared` reports n/a."""
    if ctx.redisbloom is None:
        ctx.results.note(group, "RedisBloom module not found: the peer column is n/a")
    return ctx.redisbloom or ctx.redis.with_flags("RedisBloom 2.8", [])


def prepared(ctx, started, peer, prepare):
    """`running`'s (label, server) pairs with `prepare(server)` applied (its string, if it
    returns one, stands for the server: n/a and why); the stand-in peer is n/a."""
    servers = []
    for label, server in started:
        if not isinstance(server, str):
            if ctx.redisbloom is None and label == peer.label:
                server = "n/a (RedisBloom module not found)"
            else:
                server = prepare(server) or server
        servers.append((label, server))
    return servers


@contextlib.contextmanager
def running(ctx, contestants, appendonly=False, appendfsync="everysec", extra=None):
    """Starts one server per contestant; yields [(label, Server | "n/a (reason)")]."""

    def start(contestant):
        server = Server(contestant, ctx.ports, ctx.root, appendonly, appendfsync,
                        (extra or {}).get(contestant.label, ()))
        try:
            server.start()
        except StartError:
            server.discard()
            raise
        return server

    with each_started(contestants, start, "server") as started:
        yield started


def persistence_modes(ctx, main):
    """Whether each pass of a group runs with AOF (everysec) or with persistence off: both in
    the full run, `main` first; `main` alone with --quick (its time budget), unless
    BENCH_ALL_PERSISTENCE=1."""
    if ctx.quick and os.environ.get("BENCH_ALL_PERSISTENCE") != "1":
        return [main]
    return [main, not main]


def persistence_label(appendonly, appendfsync):
    return "AOF %s" % appendfsync if appendonly else "persistence off"
