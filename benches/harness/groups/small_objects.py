"""`small_objects`: memory per small key (issue 42). Each of eight workloads writes N keys of
one small object each (`SET key:%08d val12345`, a 5-field HSET, `SADD s:%08d 1 2 3 4 5`...)
into a fresh server (`--appendonly no`, snapshots off), and the cell is the growth of the process's RSS
across the load, divided by N (lower is better); a second cell is INFO's used_memory growth per
key, a third `MEMORY USAGE` of a sample of the keys (its mean), which should be close to the
RSS share. Keys are sequential (redis-benchmark's __rand_int__ is not), written by a loader
here that pipelines RESP over a socket, 1,000 commands per write. Memory is deterministic up
to allocator noise, so a cell takes at most 3 rounds, without warm-up."""
import socket

from ..cells import alternate, pick
from ..context import persistence_label
from ..resp import encode
from ..runners import NotApplicable, measure
from ..servers import Server, StartError

GROUP = "small-objects"
BATCH = 1000
SAMPLE = 200
ROUNDS_MAX = 3

# (title, command for key i). Integers start at 10,000,000 so that none is one of Redis's
# shared integers (0-9999), which cost it nothing per key.
WORKLOADS = [
    ("SET key:%08d val12345", lambda i: (b"SET", b"key:%08d" % i, b"val12345")),
    ("SET key:%08d <integer>", lambda i: (b"SET", b"key:%08d" % i, b"%d" % (10_000_000 + i))),
    ("HSET h:%08d name alice", lambda i: (b"HSET", b"h:%08d" % i, b"name", b"alice")),
    ("HSET h:%08d with 5 short fields",
     lambda i: (b"HSET", b"h:%08d" % i, b"name", b"alice", b"age", b"33", b"city", b"paris",
                b"lang", b"en", b"tier", b"gold")),
    ("SADD s:%08d 1 2 3 4 5", lambda i: (b"SADD", b"s:%08d" % i, b"1", b"2", b"3", b"4", b"5")),
    ("ZADD z:%08d with 5 members",
     lambda i: (b"ZADD", b"z:%08d" % i, b"1", b"a", b"2", b"b", b"3", b"c", b"4", b"d",
                b"5", b"e")),
    ("RPUSH l:%08d a bb ccc", lambda i: (b"RPUSH", b"l:%08d" % i, b"a", b"bb", b"ccc")),
    ("SET key:%08d val12345 EX 100000",
     lambda i: (b"SET", b"key:%08d" % i, b"val12345", b"EX", b"100000")),
]


def commands_of(command, i):
    """`command(i)` as a list of commands: a workload gives one (a tuple) or several (a list)
    per key."""
    made = command(i)
    return made if isinstance(made, list) else [made]


def batches(n, command, per_write=BATCH):
    """`command(i)` (one command, or a list of them) for i in 0..n, encoded `per_write` keys
    to a write: [(bytes, number of commands)]. Built once, it can be sent to several servers."""
    out = []
    for start in range(0, n, per_write):
        batch = [c for i in range(start, min(n, start + per_write))
                 for c in commands_of(command, i)]
        out.append((b"".join(encode(*c) for c in batch), len(batch)))
    return out


def send_batches(port, encoded):
    """Sends each write of `encoded` (from `batches`) and waits for its replies; every reply
    is one line (+OK, :n), so a write is answered when a line end per command has come back.
    An error reply aborts."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    try:
        for payload, want in encoded:
            sock.sendall(payload)
            got, tail = 0, b""
            while got < want:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    raise ConnectionError("server closed the connection")
                data = tail + chunk
                if data.startswith(b"-") or b"\r\n-" in data:
                    raise NotApplicable("error reply: %r" % data[data.find(b"-"):][:80])
                got += chunk.count(b"\n")
                tail = data[-1:]
    finally:
        sock.close()


def load(port, n, command):
    """Writes `command(i)` for i in 0..n (`batches`, `send_batches`)."""
    send_batches(port, batches(n, command))


def used_memory(client):
    info = client.call("INFO", "memory").decode()
    for line in info.splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    raise NotApplicable("no used_memory in INFO")


def memory_usage(client, n, command):
    step = max(1, n // SAMPLE)
    keys = [commands_of(command, i)[0][1] for i in range(0, n, step)]
    replies = client.pipeline([("MEMORY", "USAGE", k) for k in keys])
    if any(not isinstance(r, int) for r in replies):
        return None
    return sum(replies) / len(replies)


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = persistence_label(False, "everysec")
    rounds = min(ctx.rounds, ROUNDS_MAX)
    for n in ctx.size("small_objects_keys"):
        for title, command in WORKLOADS:
            def fn(contestant, command=command, n=n):
                # Snapshots off on both sides (Redis's by Server), as `collections` does:
                # BlinkDB's default `save 60 10000` fires once a load lasts a minute (a
                # loaded machine), and a save during the load left its copies' pages in
                # RSS (docs/design.md, "Memory per small key": the 5-field hashes' 187
                # bytes a key of 2026-12-06 06:42 against 140 with snapshots off).
                extra = ["--save", ""] if contestant.is_blinkdb and not contestant.standin else []
                server = Server(contestant, ctx.ports, ctx.root, appendonly=False, extra=extra)
                try:
                    server.start()
                except StartError as e:
                    server.discard()
                    raise NotApplicable("did not start: %s" % e)
                try:
                    with server.client() as c:
                        rss0, used0 = server.rss_kb(), used_memory(c)
                    load(server.port, n, command)
                    with server.client() as c:
                        rss1, used1 = server.rss_kb(), used_memory(c)
                        dbsize = c.call("DBSIZE")
                        usage = memory_usage(c, n, command)
                    if dbsize != n:
                        raise RuntimeError("DBSIZE %s after writing %d keys" % (dbsize, n))
                finally:
                    server.discard()
                out = {"rss": measure((rss1 - rss0) * 1024.0 / n),
                       "used": measure((used1 - used0) / n)}
                if usage is not None:
                    out["usage"] = measure(usage)
                return out

            table = alternate([(c.label, lambda c=c: fn(c)) for c in contestants], rounds, 0)
            name = "%s, %s keys" % (title, format(n, ","))
            params = {"keys": n}
            ctx.results.add(GROUP, section, name + ": RSS growth per key", "B/key", "lower",
                            ctx.redis.label, pick(table, "rss", labels), params)
            ctx.results.add(GROUP, section, name + ": used_memory per key", "B/key", "lower",
                            ctx.redis.label, pick(table, "used", labels), params)
            ctx.results.add(GROUP, section, name + ": MEMORY USAGE of a key", "B/key", "lower",
                            ctx.redis.label, pick(table, "usage", labels), params)
