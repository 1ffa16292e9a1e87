"""`replication` (issue 22): a master with replicas of its own kind on one machine, BlinkDB
master + BlinkDB replicas against redis-server master + redis-server replicas, persistence off.
Replicas start with `--replicaof 127.0.0.1 PORT` and count once INFO replication says
`master_link_status:up`. Redis servers get `--repl-diskless-sync-delay 0` so a replica's sync
starts at once (Redis 7's default waits 5 s for more replicas); it changes no steady-state cell.

1. SET throughput: `redis-benchmark -t set -c 50` at -P 1 and -P 16 on the master with 0, 1 and
   2 replicas attached. CPU us/op is the master's alone (the replicas apply the stream after
   the tool exits too; their work is not in the window). After every run the harness waits
   until each replica's `slave_repl_offset` reaches the master's `master_repl_offset`, so no
   run starts with the previous run's stream still being applied.
2. Replication lag under load: while `blinkdb-loadgen` sends SETs only (50 clients, -P 1 and
   -P 16, 1M keys, 3 B values) to a master with one replica, a probe thread of the harness
   SETs `benchlag:probe` to a new sequence number on the master every 10 ms (its own
   connection, waiting for +OK) and then GETs it from the replica back to back until the
   replica returns that number. A sample is the time from sending the SET to the first GET
   that sees it: the master's queueing, the stream's way to the replica, the replica applying
   it and one GET round trip. Only samples taken inside the load window count (from 0.2 s
   after the tool starts to 0.1 s before its duration ends). The cell is the p99 of a run's
   samples (median over runs); p50 / p99 columns show both. A second row counts the same
   samples from the master's +OK instead (the replication part alone, plus at most one GET
   round trip: polling starts only after the +OK), a third gives the load tool's SET rate
   during those runs.
   At full speed the two masters do not take the same load: at -P 16 BlinkDB's took 1.19x
   Redis's SETs (275k against 231k/s, quiet full run of 11-27 05:37), so its replica had more
   to apply on 2 cores that the load generator shares. So the same cells run again at a fixed
   offered load (`blinkdb-loadgen --rate`, `FIXED_RATES`): 45k SETs/s at -P 1 and 200k at
   -P 16, about 85% of the slower master's full-speed rate in the quiet runs of 11-26 and
   11-27 (-P 1: BlinkDB 51-55k, Redis 55-63k; -P 16: BlinkDB 270-287k, Redis 231-281k), so
   that both sustain it on a quiet machine (full run of 11-27 08:35, load about 2: both held
   200k; at 45k BlinkDB's master fell short in 1 of 5 runs, at 43k). Their third row is the
   achieved rate, which must equal the target on both sides for the cell to compare equal
   loads; a run short of 97% of it is named in a note.
3. Full sync, twice: a master holding `repl_sync_keys_small` (1M in full runs) and then
   `repl_sync_keys` (5M) keys of the `rdb` group's mixed dataset (60% strings, 10% each
   hashes, sets, sorted sets and lists of 5 members), a new empty server sent
   `REPLICAOF 127.0.0.1 PORT`; time from sending REPLICAOF to
   `master_link_status:up` with DBSIZE equal to the master's, and the peak RSS of the master's
   process tree meanwhile (VmRSS of the master plus its forked children, sampled every 10 ms;
   Redis forks a child for the snapshot, BlinkDB writes it from a thread). Columns: BlinkDB
   with `repl-diskless-sync no` (the snapshot written to a file, then sent) and `yes` (streamed
   to the socket, delay 0), Redis 7 with its default diskless sync (the peer) and Redis 7 with
   `repl-diskless-sync no`. The replicas are of the master's kind, with their default
   `repl-diskless-load disabled` (the RDB spooled to a file, then loaded). Every round uses a new replica process, so each sync
   is a full one. The sync row's CPU us/op is the master's CPU for one whole sync, forked
   children included (its CPU clock plus cutime + cstime of /proc/PID/stat, read before
   REPLICAOF and after the master has no replica and no save in progress, i.e. Redis has
   reaped its child).
"""
import threading
import time

from .. import servercpu
from ..cells import alternate, pick
from ..context import each_started
from ..resp import Client, ReplyError, brief
from ..runners import NotApplicable, ToolError, add_server_cpu, loadgen, loadgen_measure, \
    measure, redis_benchmark
from ..servers import Server, StartError
from .rdb import commands as mixed_commands
from .rdb import tree_rss_kb

GROUP = "replication"
SAMPLE_SECONDS = 0.01
PROBE_KEY = "benchlag:probe"
# The fixed-rate lag cells: total SET/s of the 50 clients, by pipeline depth (see the docstring).
FIXED_RATES = {1: 45_000, 16: 200_000}
# A fixed-rate run whose achieved rate is below this share of its target gets a note.
RATE_TOLERANCE = 0.97
REDIS_SYNC_NOW = ["--repl-diskless-sync-delay", "0"]


def info(client, section="replication"):
    text = client.call("INFO", section)
    text = text.decode() if isinstance(text, bytes) else text
    out = {}
    for line in text.splitlines():
        if ":" in line:
            name, value = line.split(":", 1)
            out[name] = value.strip()
    return out


def link_up(client):
    return info(client).get("master_link_status") == "up"


def extra_flags(contestant):
    return [] if contestant.is_blinkdb and not contestant.standin else REDIS_SYNC_NOW


class Topology:
    """A master and `replicas` replicas of the same contestant, all linked up."""

    def __init__(self, ctx, contestant, replicas):
        self.master = Server(contestant, ctx.ports, ctx.root, extra=extra_flags(contestant))
        self.replicas = []
        try:
            self.master.start()
            for _ in range(replicas):
                replica = Server(contestant, ctx.ports, ctx.root,
                                 extra=extra_flags(contestant)
                                 + ["--replicaof", "127.0.0.1", str(self.master.port)])
                self.replicas.append(replica)
                replica.start(timeout=300, ready=link_up)
        except Exception:
            self.discard()
            raise

    def wait_caught_up(self, timeout=300):
        """Until every replica's applied offset reaches the master's."""
        if not self.replicas:
            return
        deadline = time.monotonic() + timeout
        with self.master.client() as master:
            clients = [r.client() for r in self.replicas]
            try:
                while True:
                    target = int(info(master)["master_repl_offset"])
                    if all(int(info(c).get("slave_repl_offset", -1)) >= target for c in clients):
                        return
                    if time.monotonic() > deadline:
                        raise ToolError("replicas did not catch up with offset %d" % target)
                    time.sleep(SAMPLE_SECONDS)
            finally:
                for c in clients:
                    c.close()

    def discard(self):
        for server in self.replicas + [self.master]:
            server.discard()


def topologies(ctx, contestants, replicas):
    """[(label, Topology | "n/a (reason)")], one per contestant."""
    return each_started(contestants, lambda c: Topology(ctx, c, replicas), "topology",
                        (StartError, ReplyError, OSError, ToolError))


def throughput(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = "SET to a master with 0, 1, 2 replicas (persistence off)"
    for replicas in (0, 1, 2):
        with topologies(ctx, contestants, replicas) as tops:
            for pipeline in (1, 16):
                requests = ctx.size("repl_requests_p%d" % pipeline)

                def fn(top, pipeline=pipeline, requests=requests):
                    out = redis_benchmark(top.master.port, clients=50, requests=requests,
                                          pipeline=pipeline, tests=["SET"], keyspace=1_000_000)
                    top.wait_caught_up()
                    return out

                table = alternate([(label, top if isinstance(top, str) else
                                    (lambda top=top: fn(top))) for label, top in tops],
                                  ctx.rounds, ctx.warmups)
                ctx.results.add(GROUP, section, "SET c50 P%d, %d replica%s" % (
                    pipeline, replicas, "" if replicas == 1 else "s"), "req/s", "higher",
                    ctx.redis.label, pick(table, "SET", labels),
                    {"clients": 50, "pipeline": pipeline, "replicas": replicas,
                     "requests": requests})


class Probe(threading.Thread):
    """SET on the master every 10 ms, then GET on the replica until it shows; records lags."""

    def __init__(self, master_port, replica_port, start_after, seconds):
        super().__init__(daemon=True)
        self.master_port, self.replica_port = master_port, replica_port
        self.start_after, self.seconds = start_after, seconds
        self.lags_ms = []  # SET sent -> seen on the replica
        self.after_ack_ms = []  # the master's +OK -> seen on the replica
        self.error = None

    def run(self):
        try:
            with Client(self.master_port) as master, Client(self.replica_port) as replica:
                time.sleep(self.start_after)
                end = time.monotonic() + self.seconds
                seq = 0
                tick = time.monotonic()
                while time.monotonic() < end:
                    seq += 1
                    want = str(seq).encode()
                    began = time.perf_counter()
                    master.call("SET", PROBE_KEY, want)
                    acked = time.perf_counter()
                    while replica.call("GET", PROBE_KEY) != want:
                        if time.perf_counter() - began > 30:
                            raise ToolError("the replica never showed probe %d" % seq)
                    seen = time.perf_counter()
                    self.lags_ms.append((seen - began) * 1000.0)
                    self.after_ack_ms.append((seen - acked) * 1000.0)
                    tick += SAMPLE_SECONDS
                    pause = tick - time.monotonic()
                    if pause > 0:
                        time.sleep(pause)
                    else:
                        tick = time.monotonic()
        except Exception as e:  # reported by the runner, which joins the thread
            self.error = e


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def lag_run(ctx, top, pipeline, seconds, rate=None):
    """One lag run on `top`: the probe's samples during a loadgen SET load (at `rate` SETs/s
    in total, or as fast as the master answers)."""
    probe = Probe(top.master.port, top.replicas[0].port, 0.2, seconds - 0.3)
    probe.start()
    try:
        report = loadgen(ctx.loadgen, top.master.port, clients=50, pipeline=pipeline,
                         duration=seconds, keys=1_000_000, value_size=3, set_ratio=1.0,
                         rate=rate)
    finally:
        probe.join()
    if probe.error is not None:
        raise ToolError("lag probe: %s" % probe.error)
    if not probe.lags_ms:
        raise ToolError("lag probe took no sample")
    top.wait_caught_up()
    out = {"sets": loadgen_measure(report)}
    for name, values in (("lag", probe.lags_ms), ("after_ack", probe.after_ack_ms)):
        values = sorted(values)
        p50, p99 = percentile(values, 0.50), percentile(values, 0.99)
        m = measure(p99, p50, p99)
        m["samples"] = len(values)
        m["max"] = values[-1]
        add_server_cpu(m, report.get("server_window"), report.get("ops"))
        out[name] = m
    return out


def lag(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    seconds = ctx.size("repl_lag_seconds")
    section = "replication lag under 50-client SET load, 1 replica (persistence off)"
    with topologies(ctx, contestants, 1) as tops:
        for pipeline, rate in [(1, None), (16, None)] + sorted(FIXED_RATES.items()):
            def fn(top, pipeline=pipeline, rate=rate):
                return lag_run(ctx, top, pipeline, seconds, rate)

            table = alternate([(label, top if isinstance(top, str) else
                                (lambda top=top: fn(top))) for label, top in tops],
                              ctx.rounds, ctx.warmups)
            params = {"clients": 50, "pipeline": pipeline, "replicas": 1, "seconds": seconds,
                      "probe_interval_ms": SAMPLE_SECONDS * 1000}
            load = "c50 P%d" % pipeline
            if rate is not None:
                params["target_rate"] = rate
                load += " at %dk SET/s" % (rate // 1000)
            ctx.results.add(GROUP, section, "lag p99, SET load %s (probe SET to replica GET)"
                            % load, "ms", "lower", ctx.redis.label, pick(table, "lag", labels),
                            params)
            ctx.results.add(GROUP, section, "lag p99 counted from the master's +OK, %s" % load,
                            "ms", "lower", ctx.redis.label, pick(table, "after_ack", labels),
                            params)
            sets = pick(table, "sets", labels)
            ctx.results.add(GROUP, section, "SET rate of that load, %s" % load, "ops/s",
                            "higher", ctx.redis.label, sets, params)
            if rate is not None:
                for label, runs in sets.items():
                    if isinstance(runs, str):
                        continue
                    short = [r["value"] for r in runs if r["value"] < RATE_TOLERANCE * rate]
                    if short:
                        ctx.results.note(GROUP, "%s, %s: %d of %d runs fell short of the "
                                         "target rate (%s SET/s)" % (
                                             label, load, len(short), len(runs),
                                             ", ".join("%.0f" % v for v in short)))


def fullsync(ctx, keys):
    blinkdb_disk = ctx.blinkdb.with_flags(ctx.blinkdb.label + " (disk)",
                                          ["--repl-diskless-sync", "no"])
    blinkdb_diskless = ctx.blinkdb.with_flags(ctx.blinkdb.label + " (diskless)",
                                              ["--repl-diskless-sync", "yes",
                                               "--repl-diskless-sync-delay", "0"])
    redis_diskless = ctx.redis.with_flags("Redis 7 (diskless)", [])
    redis_disk = ctx.redis.with_flags("Redis 7 (disk)", ["--repl-diskless-sync", "no"])
    contestants = [blinkdb_disk, blinkdb_diskless, redis_diskless, redis_disk]
    labels = [c.label for c in contestants]
    masters = []
    try:
        for contestant in contestants:
            master = Server(contestant, ctx.ports, ctx.root, extra=extra_flags(contestant))
            try:
                master.start()
                with master.client() as client:
                    for batch in mixed_commands(keys):
                        for reply in client.pipeline(batch):
                            if isinstance(reply, ReplyError):
                                raise NotApplicable("loading the dataset: %s" % brief(reply))
                    if client.call("DBSIZE") != keys:
                        raise NotApplicable("the master did not load %d keys" % keys)
                masters.append((contestant, master))
            except (StartError, NotApplicable, ToolError) as e:
                master.discard()
                masters.append((contestant, "n/a (master did not start: %s)" % brief(e)))

        def runner(contestant, master):
            if isinstance(master, str):
                return master

            def once():
                replica = Server(contestant, ctx.ports, ctx.root,
                                 extra=extra_flags(contestant))
                try:
                    replica.start()
                    cpu0 = servercpu.cpu_seconds(master.proc.pid)
                    seconds, peak, before = sync_once(master, replica, keys)
                finally:
                    replica.discard()
                settle(master)
                cpu = servercpu.cpu_seconds(master.proc.pid) - cpu0
                sync = measure(seconds * 1000.0)
                # Per unit = per sync: the master's CPU for the whole of it, children included.
                sync["server_cpu_us"] = sync["server_stat_cpu_us"] = cpu * 1e6
                return {"sync": sync, "peak": measure(peak), "growth": measure(peak - before)}
            return once

        table = alternate([(c.label, runner(c, m)) for c, m in masters], ctx.rounds, ctx.warmups)
        params = {"keys": keys, "dataset": "mixed"}
        section = "full sync of %d mixed keys to one new replica (persistence off)" % keys
        peer = redis_diskless.label
        ctx.results.add(GROUP, section, "REPLICAOF to master_link_status:up with all keys", "ms",
                        "lower", peer, pick(table, "sync", labels), params)
        ctx.results.add(GROUP, section, "peak RSS of the master's process tree during it", "kB",
                        "lower", peer, pick(table, "peak", labels), params)
        ctx.results.add(GROUP, section, "RSS growth of the master's process tree during it", "kB",
                        "lower", peer, pick(table, "growth", labels), params)
    finally:
        for _, master in masters:
            if isinstance(master, Server):
                master.discard()


def sync_once(master, replica, keys, timeout=900):
    """Seconds from REPLICAOF to link up with all keys; the master tree's peak and prior RSS."""
    pid = master.proc.pid
    before = tree_rss_kb(pid)
    peak = before
    with replica.client() as client:
        began = time.monotonic()
        client.call("REPLICAOF", "127.0.0.1", str(master.port))
        while True:
            peak = max(peak, tree_rss_kb(pid))
            try:
                if link_up(client) and client.call("DBSIZE") == keys:
                    break
            except ReplyError:
                pass  # LOADING while the replica reads the snapshot
            if time.monotonic() - began > timeout:
                raise ToolError("no full sync within %d s" % timeout)
            time.sleep(SAMPLE_SECONDS)
        seconds = time.monotonic() - began
    return seconds, peak, before


def settle(master, timeout=300):
    """Until the master has no replica and no snapshot in progress (Redis's child gone)."""
    deadline = time.monotonic() + timeout
    with master.client() as client:
        while time.monotonic() < deadline:
            repl, persistence = info(client), info(client, "persistence")
            if repl.get("connected_slaves") == "0" and \
                    persistence.get("rdb_bgsave_in_progress", "0") == "0":
                return
            time.sleep(SAMPLE_SECONDS)
    raise ToolError("the master did not settle after a sync")


def run(ctx):
    throughput(ctx)
    lag(ctx)
    fullsync(ctx, ctx.size("repl_sync_keys_small"))
    fullsync(ctx, ctx.size("repl_sync_keys"))
