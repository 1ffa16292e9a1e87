"""`bloom`: the BF.* workloads of bloomd's table against RedisBloom 2.8: single add/check,
batches of 8/32/128, a 90/10 mix, the create/drop control cycle, filter-scale, cold start,
restart and RSS, with AOF everysec. The full run repeats the 50-client cells with persistence
off. BlinkDB's user backend, and its kernel backend when bpffs is usable."""
import contextlib
import os

from .. import cpupin
from ..cells import alternate, pick
from ..context import persistence_label, persistence_modes, prepared, redisbloom_peer, running
from ..runners import NotApplicable, loadgen, loadgen_measure, measure, redis_benchmark
from ..resp import ReplyError, brief, is_unsupported
from ..servers import Server, StartError

GROUP = "bloom"
ITEMS = 1_000_000
CAPACITY = 2_000_000
# Filter-scale filters are reserved with this capacity and their items are drawn from a key
# space of the same size, so a non-scaling (kernel) filter never fills up however long a run is.
SCALE_CAPACITY = 10_000
PROBE_ITEM = "restart-probe"
# The seed's mixed row: 90% checks, 10% adds.
MIXED_90_10 = ["@90 BF.EXISTS bf key:__rand_int__", "@10 BF.ADD bf key:__rand_int__"]


def bpffs_mounted():
    try:
        with open("/proc/mounts") as f:
            return any(line.split()[2] == "bpf" for line in f if len(line.split()) > 2)
    except OSError:
        return False


def contestants(ctx):
    user = ctx.blinkdb.with_flags(ctx.blinkdb.label + " user", ["--bf-default-backend", "user"])
    chosen = [user]
    if ctx.blinkdb.standin:
        reason = "BlinkDB is a stand-in redis-server"
    elif os.geteuid() != 0:
        reason = "not running as root"
    elif not bpffs_mounted():
        reason = "bpffs is not mounted (mount -t bpf bpf /sys/fs/bpf)"
    else:
        reason = None
    if reason:
        ctx.results.note(GROUP, "SKIPPING the kernel-backend column: " + reason)
    else:
        chosen.append(ctx.blinkdb.with_flags(ctx.blinkdb.label + " kernel",
                                             ["--bf-default-backend", "kernel"]))
    return chosen


def prepare(server):
    """Creates the shared filter; returns None, or a reason the server cannot do BF.*."""
    try:
        with server.client() as client:
            client.call("BF.RESERVE", "bf", "0.01", CAPACITY)
            client.call("BF.ADD", "bf", PROBE_ITEM)
    except ReplyError as e:
        if is_unsupported(e):
            return "n/a (%s)" % brief(e)
        return "n/a (BF.RESERVE failed: %s)" % brief(e)
    return None


def reserve_many(server, prefix, count):
    with server.client() as client:
        replies = client.pipeline([("BF.RESERVE", "%s:%d" % (prefix, i), "0.01", SCALE_CAPACITY)
                                   for i in range(count)])
    errors = [r for r in replies if isinstance(r, ReplyError)]
    if errors:
        raise NotApplicable("BF.RESERVE %s:*: %s" % (prefix, brief(errors[0])))


def run(ctx):
    peer = redisbloom_peer(ctx, GROUP)
    chosen = contestants(ctx) + [peer]
    labels = [c.label for c in chosen]
    for appendonly in persistence_modes(ctx, True):
        measure_pass(ctx, chosen, peer, labels, appendonly)
    restart(ctx, chosen, peer)


def measure_pass(ctx, chosen, peer, labels, appendonly):
    """The 50-client cells; with the AOF on also the seed's single-client rows, the control
    cycle, filter-scale, RSS and cold start."""
    section = persistence_label(appendonly, "everysec")
    with running(ctx, chosen, appendonly=appendonly, appendfsync="everysec") as started:
        servers = prepared(ctx, started, peer, prepare)

        def cell(workload, unit, metric_fn, params=None):
            table = alternate([(label, s if isinstance(s, str) else (lambda s=s: {"m": metric_fn(s)}))
                               for label, s in servers], ctx.rounds, ctx.warmups)
            ctx.results.add(GROUP, section, workload, unit, "higher", peer.label,
                            pick(table, "m", labels), params)

        def bench_single(command):
            def fn(server):
                rows = redis_benchmark(server.port, clients=50, pipeline=16,
                                       requests=ctx.size("bloom_requests"), keyspace=ITEMS,
                                       command=command)
                return next(iter(rows.values()))
            return fn

        def lg(commands, clients=50, pipeline=1, items=None, filters=None, per="ops", keys=ITEMS):
            def fn(server):
                # A single client is pinned across CPUs from the server (harness/cpupin.py).
                pin = cpupin.server_pinned(server.proc.pid) if clients == 1 \
                    else contextlib.nullcontext(None)
                with pin as cpu:
                    report = loadgen(ctx.loadgen, server.port, clients=clients,
                                     pipeline=pipeline, duration=ctx.size("bloom_seconds"),
                                     keys=keys, commands=commands, items=items,
                                     filters=filters, cpu=cpu)
                return loadgen_measure(report, per)
            return fn

        cell("BF.ADD c50 P16", "ops/s", bench_single(["BF.ADD", "bf", "key:__rand_int__"]))
        cell("BF.EXISTS c50 P16", "ops/s", bench_single(["BF.EXISTS", "bf", "key:__rand_int__"]))
        for n in (8, 32, 128):
            cell("BF.MADD %d items c50" % n, "items/s",
                 lg(["BF.MADD bf __items__"], items=n, per="items"), {"items": n})
            cell("BF.MEXISTS %d items c50" % n, "items/s",
                 lg(["BF.MEXISTS bf __items__"], items=n, per="items"), {"items": n})
        # The same at -P 16, as the single-item cells: at -P 1 every 128-item command
        # also pays a round of socket syscalls, which costs both servers alike.
        cell("BF.MADD 128 items c50 P16", "items/s",
             lg(["BF.MADD bf __items__"], items=128, pipeline=16, per="items"), {"items": 128})
        cell("BF.MEXISTS 128 items c50 P16", "items/s",
             lg(["BF.MEXISTS bf __items__"], items=128, pipeline=16, per="items"), {"items": 128})
        cell("mixed 90% BF.EXISTS / 10% BF.ADD c50 P16", "ops/s",
             lg(MIXED_90_10, pipeline=16))
        if not appendonly:
            return
        # The seed's own table (bloomd vs RedisBloom) is one client issuing one command
        # at a time: the same rows with one client, pinned (harness/cpupin.py).
        cell("single add, 1 client", "ops/s", lg(["BF.ADD bf key:__rand_int__"], clients=1))
        cell("single check, 1 client", "ops/s", lg(["BF.EXISTS bf key:__rand_int__"], clients=1))
        for n in (8, 32, 128):
            cell("batch-%d add (BF.MADD), 1 client" % n, "items/s",
                 lg(["BF.MADD bf __items__"], clients=1, items=n, per="items"), {"items": n})
            cell("batch-%d check (BF.MEXISTS), 1 client" % n, "items/s",
                 lg(["BF.MEXISTS bf __items__"], clients=1, items=n, per="items"), {"items": n})
        cell("mixed 90/10, 1 client", "ops/s", lg(MIXED_90_10, clients=1))
        cell("control cycle BF.RESERVE + DEL, 1 client", "cycles/s",
             lg(["BF.RESERVE ctl:__seq__ 0.01 1000 ; DEL ctl:__seq__"], clients=1))
        for count in (1, 64, 256, 512):
            prefix = "fs%d" % count
            for i, (label, server) in enumerate(servers):
                if not isinstance(server, str):
                    try:
                        reserve_many(server, prefix, count)
                    except NotApplicable as e:
                        servers[i] = (label, "n/a (%s)" % e)
            cell("filter-scale %d filters, 50/50 add/check, 1 client" % count, "ops/s",
                 lg(["@50 BF.ADD %s:__rand_filter__ key:__rand_int__" % prefix,
                     "@50 BF.EXISTS %s:__rand_filter__ key:__rand_int__" % prefix],
                    clients=1, filters=count, keys=SCALE_CAPACITY), {"filters": count})

        ctx.results.add(GROUP, section, "RSS after the workloads above", "kB", "lower", peer.label,
                        {label: s if isinstance(s, str) else [{"value": s.rss_kb()}]
                         for label, s in servers})
        cold_start(ctx, chosen, peer, dict(started))


def cold_start(ctx, chosen, peer, servers):
    """Spawn to first PONG on an empty data directory."""
    def runner(contestant):
        # Startup needs no BF.* support, only a server that starts at all.
        reason = servers.get(contestant.label)
        if isinstance(reason, str) and "did not start" in reason:
            return reason

        def once():
            server = Server(contestant, ctx.ports, ctx.root, True, "everysec")
            try:
                return {"m": measure(server.start() * 1000.0)}
            except StartError as e:
                raise NotApplicable(brief(e))
            finally:
                server.discard()
        return once

    table = alternate([(c.label, runner(c)) for c in chosen], ctx.rounds, ctx.warmups)
    ctx.results.add(GROUP, "startup", "cold start (empty dir, to PONG)", "ms", "lower", peer.label,
                    pick(table, "m", [c.label for c in chosen]))


def restart(ctx, chosen, peer):
    """Graceful stop, then spawn until an item added before the stop is found again. Each
    server first gets the same fixed load, so both replay the same amount of log."""
    batches = ctx.size("bloom_restart_batches")
    labels = [c.label for c in chosen]
    with running(ctx, chosen, appendonly=True, appendfsync="everysec") as started:
        servers = []
        for label, server in started:
            if not isinstance(server, str):
                server = prepare(server) or server
            if not isinstance(server, str):
                loadgen(ctx.loadgen, server.port, clients=4, requests=batches, keys=ITEMS,
                        items=100, commands=["BF.MADD bf __items__"])
            servers.append((label, server))

        def runner(server):
            if isinstance(server, str):
                return server

            def once():
                server.stop()
                seconds = server.start(
                    timeout=600, ready=lambda c: c.call("BF.EXISTS", "bf", PROBE_ITEM) == 1)
                return {"m": measure(seconds * 1000.0)}
            return once

        table = alternate([(label, runner(s)) for label, s in servers], ctx.rounds, ctx.warmups)
        ctx.results.add(GROUP, "startup",
                        "restart after %d BF.MADD of 100 items (to BF.EXISTS = 1)" % batches, "ms",
                        "lower", peer.label, pick(table, "m", labels), {"batches": batches})
