"""Shared state of one harness run and the helper that brings servers up and down."""
import contextlib
import os

from .resp import brief
from .servers import Server, StartError


class Context:
    def __init__(self, *, quick, rounds, warmups, ports, root, loadgen, blinkdb, redis,
                 redisbloom, results, sizes):
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

    def size(self, name):
        return self.sizes["quick" if self.quick else "full"][name]


@contextlib.contextmanager
def running(ctx, contestants, appendonly=False, appendfsync="everysec", extra=None):
    """Starts one server per contestant; yields [(label, Server | "n/a (reason)")]."""
    started = []
    try:
        for contestant in contestants:
            server = Server(contestant, ctx.ports, ctx.root, appendonly, appendfsync,
                            (extra or {}).get(contestant.label, ()))
            try:
                server.start()
                started.append((contestant.label, server))
            except StartError as e:
                server.discard()
                reason = "n/a (server did not start: %s)" % brief(e, 120)
                print("  %s: %s" % (contestant.label, reason), flush=True)
                started.append((contestant.label, reason))
        yield started
    finally:
        for _, server in started:
            if isinstance(server, Server):
                server.discard()


def persistence_modes(ctx, main):
    """Whether each pass of a group runs with AOF (everysec) or with persistence off: both in
    the full run, `main` first; `main` alone with --quick (its time budget), unless
    BENCH_ALL_PERSISTENCE=1."""
    if ctx.quick and os.environ.get("BENCH_ALL_PERSISTENCE") != "1":
        return [main]
    return [main, not main]


def persistence_label(appendonly, appendfsync):
    return "AOF %s" % appendfsync if appendonly else "persistence off"
