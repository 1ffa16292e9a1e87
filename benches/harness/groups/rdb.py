"""`rdb`: one mixed dump.rdb (`rdb_keys` keys: 60% strings, 10% each hashes, sets, sorted sets
and lists of 5 short members), written once by redis-server's SAVE, then per contestant: time
to serve it (spawn with the file in `--dir`, persistence off, to PING + DBSIZE = all keys), and
BGSAVE of it: wall time to `rdb_bgsave_in_progress:0` and the peak RSS of the server's process
tree during it (Redis forks, so its child counts; BlinkDB saves from a thread).

Then the same data as an appendonlydir whose base each server's own rewrite wrote, once with
`aof-use-rdb-preamble yes` (an RDB base) and once with `no` (a RESP base): time to serve a
restart from it (to PING + DBSIZE). BlinkDB imports the dump.rdb into its AOF at its first
start (a rewrite in the chosen form); redis-server loads it with the AOF off, then
`CONFIG SET appendonly yes` writes its AOF."""
import os
import shutil
import time

from ..cells import alternate, pick
from ..resp import ReplyError, brief
from ..runners import NotApplicable, measure
from ..servers import Server, StartError

GROUP = "rdb"
BATCH = 1000
SAMPLE_SECONDS = 0.01


def commands(keys):
    """The mixed dataset, in pipelined batches."""
    batch = []
    for i in range(keys):
        kind = i % 10
        if kind < 6:
            batch.append(["SET", "s:%d" % i, "value:%d" % i])
        elif kind == 6:
            batch.append(["HSET", "h:%d" % i] + [x for j in range(5) for x in ("f%d" % j, str(i + j))])
        elif kind == 7:
            batch.append(["SADD", "set:%d" % i] + ["m%d" % (i + j) for j in range(5)])
        elif kind == 8:
            batch.append(["ZADD", "z:%d" % i] + [x for j in range(5) for x in (str(j), "m%d" % j)])
        else:
            batch.append(["RPUSH", "l:%d" % i] + ["e%d" % j for j in range(5)])
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def make_dump(ctx, keys):
    """dump.rdb written by redis-server; returns its path."""
    server = Server(ctx.redis, ctx.ports, ctx.root)
    try:
        server.start()
        with server.client() as client:
            for batch in commands(keys):
                for reply in client.pipeline(batch):
                    if isinstance(reply, ReplyError):
                        raise reply
            if client.call("DBSIZE") != keys:
                raise NotApplicable("the dataset did not build")
            client.call("SAVE")
        server.stop()
        path = os.path.join(ctx.root, "rdb-group-dump.rdb")
        shutil.copy(os.path.join(server.dir, "dump.rdb"), path)
        return path
    finally:
        server.discard()


def tree_rss_kb(pid):
    """VmRSS of `pid` plus its children's (a forked save child counts)."""
    pids = [pid]
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    total = 0
    for p in pids:
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


def bgsave(server):
    """Seconds of one BGSAVE and the tree's peak RSS (kB) while it ran."""
    with server.client() as client:
        before = tree_rss_kb(server.proc.pid)
        began = time.monotonic()
        try:
            client.call("BGSAVE")
        except ReplyError as e:
            raise NotApplicable(brief(e))
        peak = before
        while True:
            peak = max(peak, tree_rss_kb(server.proc.pid))
            info = client.call("INFO", "persistence")
            info = info.decode() if isinstance(info, bytes) else info
            if "rdb_bgsave_in_progress:0" in info:
                break
            time.sleep(SAMPLE_SECONDS)
        seconds = time.monotonic() - began
        if "rdb_last_bgsave_status:ok" not in info:
            raise NotApplicable("BGSAVE failed")
    return seconds, peak, before


def run(ctx):
    keys = ctx.size("rdb_keys")
    try:
        dump = make_dump(ctx, keys)
    except (StartError, NotApplicable, ReplyError) as e:
        print("  rdb: no dataset (%s)" % brief(e), flush=True)
        return

    def runner(contestant):
        def once():
            server = Server(contestant, ctx.ports, ctx.root)
            try:
                shutil.copy(dump, os.path.join(server.dir, "dump.rdb"))
                try:
                    load = server.start(timeout=900, ready=lambda c: c.call("DBSIZE") == keys)
                except StartError as e:
                    raise NotApplicable("did not load: %s" % brief(e))
                seconds, peak, before = bgsave(server)
                return {"load": measure(load * 1000.0),
                        "bgsave": measure(seconds * 1000.0),
                        "peak": measure(peak),
                        "growth": measure(peak - before)}
            finally:
                server.discard()
        return once

    def aof_dir(contestant, preamble):
        """A server directory holding the dataset as an appendonlydir whose base the
        server's own rewrite wrote with `aof-use-rdb-preamble preamble`."""
        flags = ["--aof-use-rdb-preamble", preamble]
        server = Server(contestant, ctx.ports, ctx.root, appendonly=contestant.is_blinkdb,
                        extra=flags)
        shutil.copy(dump, os.path.join(server.dir, "dump.rdb"))
        try:
            server.start(timeout=900, ready=lambda c: c.call("DBSIZE") == keys)
            with server.client() as client:
                if not contestant.is_blinkdb:
                    client.call("CONFIG", "SET", "appendonly", "yes")
                deadline = time.monotonic() + 900
                while time.monotonic() < deadline:
                    info = client.call("INFO", "persistence")
                    info = info.decode() if isinstance(info, bytes) else info
                    if ("aof_rewrite_in_progress:0" in info
                            and "aof_rewrite_scheduled:0" in info):
                        break
                    time.sleep(0.05)
            server.stop()
        except (StartError, ReplyError) as e:
            server.discard()
            raise NotApplicable("no AOF: %s" % brief(e))
        os.remove(os.path.join(server.dir, "dump.rdb"))
        return server.dir

    def restart_runner(contestant, preamble):
        state = {}

        def once():
            if "dir" not in state:
                state["dir"] = aof_dir(contestant, preamble)
            server = Server(contestant, ctx.ports, ctx.root, appendonly=True,
                            extra=["--aof-use-rdb-preamble", preamble])
            shutil.rmtree(server.dir, ignore_errors=True)
            server.dir = state["dir"]
            try:
                load = server.start(timeout=900, ready=lambda c: c.call("DBSIZE") == keys)
            except StartError as e:
                raise NotApplicable("did not load: %s" % brief(e))
            finally:
                server.stop(graceful=False)
            return {"restart": measure(load * 1000.0)}
        return once, state

    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    table = alternate([(c.label, runner(c)) for c in contestants], ctx.rounds, ctx.warmups)
    params = {"keys": keys, "dump_bytes": os.path.getsize(dump)}
    section = "dump.rdb"
    ctx.results.add(GROUP, section, "load a %d-key mixed dump.rdb (to PING + DBSIZE)" % keys,
                    "ms", "lower", ctx.redis.label, pick(table, "load", labels), params)
    ctx.results.add(GROUP, section, "BGSAVE of it (to rdb_bgsave_in_progress:0)", "ms",
                    "lower", ctx.redis.label, pick(table, "bgsave", labels), params)
    ctx.results.add(GROUP, section, "peak RSS of the process tree during BGSAVE", "kB",
                    "lower", ctx.redis.label, pick(table, "peak", labels), params)
    ctx.results.add(GROUP, section, "RSS growth of the process tree during BGSAVE", "kB",
                    "lower", ctx.redis.label, pick(table, "growth", labels), params)
    for preamble, form in (("yes", "an RDB base"), ("no", "a RESP base")):
        runners, states = [], []
        for c in contestants:
            fn, state = restart_runner(c, preamble)
            runners.append((c.label, fn))
            states.append(state)
        table = alternate(runners, ctx.rounds, ctx.warmups)
        ctx.results.add(GROUP, "appendonlydir",
                        "restart from a %d-key mixed AOF with %s (aof-use-rdb-preamble %s; "
                        "to PING + DBSIZE)" % (keys, form, preamble),
                        "ms", "lower", ctx.redis.label, pick(table, "restart", labels), params)
        for state in states:
            if "dir" in state:
                shutil.rmtree(state["dir"], ignore_errors=True)
    os.remove(dump)
