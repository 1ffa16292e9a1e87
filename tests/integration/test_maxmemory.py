"""maxmemory as Redis honours it (issue 38 §2): used_memory is what the process
allocated, eviction runs before writes against it, INFO memory's figures add up,
and MEMORY STATS/DOCTOR/MALLOC-STATS/PURGE answer as Redis 7.0's. The policy
tests reproduce unit/maxmemory.tcl's (tagged external:skip there), with the same
limits: the memory in use plus 100 KB. Each test runs against BlinkDB and, where
the behaviour should match, redis-server 7.0.15."""

import time

import pytest

from server import ORACLE_BIN, ServerProcess

OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
# Redis's own slack in maxmemory.tcl: used_memory < limit + 4096.
SLACK = 4096


def info(conn, section="memory"):
    text = conn.call("INFO", section).value
    text = text.decode() if isinstance(text, bytes) else text
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def used(conn):
    return int(info(conn)["used_memory"])


def set_limit(conn, policy, extra=100 * 1024):
    conn.call("FLUSHALL")
    limit = used(conn) + extra
    assert conn.call("CONFIG", "SET", "maxmemory", str(limit)).raw == b"+OK\r\n"
    assert conn.call("CONFIG", "SET", "maxmemory-policy", policy).raw == b"+OK\r\n"
    return limit


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-random", "allkeys-lfu", "volatile-lru"])
@pytest.mark.parametrize("which", ["blinkdb", "redis"])
def test_limit_honoured_writing_three_times_over(servers, which, policy):
    """maxmemory.tcl's "is the memory limit honoured?", with 1 KB values written
    to 3x the room: used_memory ends under the limit and stays near it while
    writing; evicted_keys grows."""
    srv = servers[which]
    with srv.connect(timeout=60.0) as c:
        room = 2 * 1024 * 1024
        limit = set_limit(c, policy, room)
        value = "v" * 1024
        ex = ("EX", "100000") if policy.startswith("volatile") else ()
        total = 3 * room // 1024
        peak = 0
        for start in range(0, total, 200):
            replies = c.pipeline([("SET", f"k:{i}", value, *ex) for i in range(start, start + 200)])
            assert not any(r.is_error() for r in replies), replies[0].raw
            peak = max(peak, used(c))
        after = used(c)
        assert after < limit + SLACK, (which, after, limit)
        # Near it throughout: a write evicts before it runs.
        assert peak < limit + 256 * 1024, (which, peak, limit)
        assert int(info(c, "stats")["evicted_keys"]) > total // 3
        left = c.call("DBSIZE").value
        assert 0 < left < total


@pytest.mark.parametrize("policy", ["allkeys-random", "allkeys-lru", "volatile-lru",
                                    "volatile-random", "volatile-ttl"])
@pytest.mark.parametrize("which", ["blinkdb", "redis"])
def test_only_allkeys_policies_remove_non_volatile_keys(servers, which, policy):
    """maxmemory.tcl: fill to near the limit with keys without a TTL, then add as
    many again: allkeys-* stay under the limit, volatile-* refuse with the OOM
    text (nothing they may evict) and keep every key."""
    srv = servers[which]
    with srv.connect(timeout=60.0) as c:
        limit = set_limit(c, policy)
        n = 0
        while used(c) + SLACK <= limit:
            c.pipeline([("SET", f"a:{n + i}", "x") for i in range(20)])
            n += 20
        assert n > 10
        errors = set()
        for start in range(0, n, 50):
            for r in c.pipeline([("SET", f"b:{start + i}", "x") for i in range(50)]):
                if r.is_error():
                    errors.add(r.raw)
        if policy.startswith("allkeys-"):
            assert not errors
            assert used(c) < limit + SLACK
        else:
            assert errors == {OOM}, errors
            assert all(r.value == 1 for r in c.pipeline([("EXISTS", f"a:{i}")
                                                         for i in range(0, n, 7)]))


@pytest.mark.parametrize("which", ["blinkdb", "redis"])
def test_volatile_policy_removes_only_volatile_keys(servers, which):
    """maxmemory.tcl's "policy volatile-lru should only remove volatile keys"."""
    with servers[which].connect(timeout=60.0) as c:
        limit = set_limit(c, "volatile-lru")
        n = 0
        while used(c) + SLACK <= limit:
            c.pipeline([("SETEX", f"key:{n + i}", "10000", "x") if (n + i) % 2 else
                        ("SET", f"key:{n + i}", "x") for i in range(20)])
            n += 20
        c.pipeline([("SETEX", f"foo:{j}", "10000", "x") for j in range(n)])
        assert used(c) < limit + SLACK
        assert all(r.value == 1 for r in c.pipeline([("EXISTS", f"key:{j}")
                                                     for j in range(0, n, 2)]))


@pytest.mark.parametrize("which", ["blinkdb", "redis"])
def test_noeviction_refuses_denyoom_commands_only(servers, which):
    with servers[which].connect() as c:
        c.call("FLUSHALL")
        c.call("SET", "keep", "1")
        c.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
        c.call("CONFIG", "SET", "maxmemory", "1")
        assert c.call("SET", "new", "v").raw == OOM
        assert c.call("LPUSH", "l", "v").raw == OOM
        # Not denyoom: reads and DEL still run.
        assert c.call("GET", "keep").value in (b"1", "1")
        assert c.call("DEL", "keep").raw == b":1\r\n"
        c.call("CONFIG", "SET", "maxmemory", "0")
        assert c.call("SET", "new", "v").raw == b"+OK\r\n"


@pytest.mark.parametrize("which", ["blinkdb", "redis"])
def test_commands_inside_exec_are_not_refused_for_memory(servers, which):
    """maxmemory.tcl's "propagation with eviction in MULTI": EXEC is admitted
    with its queue's flags when it arrives (maxmemory still 0 here); a CONFIG
    SET maxmemory 1 it runs does not get the commands after it refused, as
    Redis's execCommand calls them without processCommand's checks. The key
    is evicted after EXEC."""
    with servers[which].connect() as c:
        c.call("FLUSHALL")
        c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
        try:
            c.call("MULTI")
            c.call("INCR", "x")
            c.call("CONFIG", "SET", "maxmemory", "1")
            c.call("INCR", "x")
            assert c.call("EXEC").raw == b"*3\r\n:1\r\n+OK\r\n:2\r\n"
            deadline = time.monotonic() + 10
            while c.call("DBSIZE").value != 0:
                assert time.monotonic() < deadline, "x not evicted"
                time.sleep(0.01)
            # A denyoom command outside a transaction is refused again.
            c.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
            assert c.call("SET", "y", "1").raw == OOM
        finally:
            c.call("CONFIG", "SET", "maxmemory", "0")
            c.call("CONFIG", "SET", "maxmemory-policy", "noeviction")


@pytest.mark.parametrize("which", ["blinkdb", "redis"])
def test_tracking_invalidations_do_not_feed_eviction(servers, which):
    """maxmemory.tcl's "client tracking don't cause eviction feedback loop": ten
    RESP3 tracking clients that do not read cache 300 keys of 1 KB names; a limit
    40 KB under the memory in use evicts a few dozen keys, not the keyspace. The
    invalidations of evicted keys are not set against the memory a round of
    eviction frees, and a client's reply buffer is not kept past 16 KB once
    written, as Redis's; else each round's invalidations (10 KB a key) grew the
    clients' buffers and evicted more keys, until none was left."""
    server = servers[which]
    with server.connect() as r:
        r.call("FLUSHALL")
        for name, value in (("latency-tracking", "no"), ("maxmemory", "0"),
                            ("maxmemory-policy", "allkeys-lru"),
                            ("maxmemory-eviction-tenacity", "100")):
            r.call("CONFIG", "SET", name, value)
        clients = [server.connect() for _ in range(10)]
        try:
            for c in clients:
                c.call("HELLO", "3")
                c.call("CLIENT", "TRACKING", "on")
            for j in range(300):
                key = "%d%s" % (j, "x" * 1000)
                r.call("SET", key, "x")
                for c in clients:
                    c.call("GET", key)
            # Both trim an idle client's read buffer in their cron (Redis
            # after 2 s idle, as maxmemory.tcl waits a second for).
            time.sleep(1.1)
            before = int(info(r, "stats")["evicted_keys"])
            r.call("CONFIG", "SET", "maxmemory", str(used(r) - 40000))
            evicted = int(info(r, "stats")["evicted_keys"]) - before
            assert 200 <= r.call("DBSIZE").value <= 300
            assert 10 <= evicted <= 50, evicted
        finally:
            r.call("CONFIG", "SET", "maxmemory", "0")
            r.call("CONFIG", "SET", "maxmemory-eviction-tenacity", "10")
            r.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
            for c in clients:
                c.close()


MEMORY_FIELDS = [
    "used_memory", "used_memory_human", "used_memory_rss", "used_memory_rss_human",
    "used_memory_peak", "used_memory_peak_human", "used_memory_peak_perc",
    "used_memory_overhead", "used_memory_startup", "used_memory_dataset",
    "used_memory_dataset_perc", "allocator_allocated", "allocator_active",
    "allocator_resident", "total_system_memory", "total_system_memory_human",
    "maxmemory", "maxmemory_human", "maxmemory_policy", "allocator_frag_ratio",
    "allocator_frag_bytes", "allocator_rss_ratio", "allocator_rss_bytes", "rss_overhead_ratio",
    "rss_overhead_bytes", "mem_fragmentation_ratio", "mem_fragmentation_bytes",
    "mem_not_counted_for_evict", "mem_replication_backlog", "mem_total_replication_buffers",
    "mem_clients_slaves", "mem_clients_normal", "mem_cluster_links", "mem_aof_buffer",
    "mem_allocator", "active_defrag_running", "lazyfree_pending_objects", "lazyfreed_objects",
]


def test_info_memory_fields_add_up(servers):
    for which, srv in servers.items():
        with srv.connect(timeout=60.0) as c:
            c.call("FLUSHALL")
            c.pipeline([("SET", f"k:{i}", "v" * 500) for i in range(2000)])
            c.pipeline([("EXPIRE", f"k:{i}", "1000") for i in range(0, 2000, 2)])
            text = c.call("INFO", "memory").value
            text = text.decode() if isinstance(text, bytes) else text
            names = [line.split(":", 1)[0] for line in text.split("\r\n") if ":" in line]
            # Redis's fields in Redis's order (BlinkDB adds max_disk_size).
            assert [n for n in names if n in MEMORY_FIELDS] == MEMORY_FIELDS, which
            m = info(c)
            num = {k: int(v) for k, v in m.items() if v.lstrip("-").isdigit()}
            assert num["used_memory_dataset"] == num["used_memory"] - num["used_memory_overhead"]
            parts = (num["used_memory_startup"] + num["mem_clients_normal"]
                     + num["mem_clients_slaves"] + num["mem_replication_backlog"]
                     + num["mem_aof_buffer"])
            assert parts <= num["used_memory_overhead"], which
            # 2000 values of 500 bytes are data, not overhead.
            assert num["used_memory_dataset"] > 1_000_000, (which, m)
            assert num["used_memory_peak"] >= num["used_memory"]
            assert 0 <= num["mem_clients_normal"] < 1_000_000
            # RSS over used_memory, both as the cron last sampled them.
            assert float(m["mem_fragmentation_ratio"]) > 0.5, which


def test_used_memory_follows_the_data(blinkdb):
    """used_memory is allocations, not RSS: it grows with the data and shrinks
    after FLUSHALL (RSS need not)."""
    with blinkdb.connect(timeout=60.0) as c:
        before = used(c)
        c.pipeline([("SET", f"k:{i}", "v" * 1000) for i in range(10000)])
        grown = used(c)
        assert grown - before > 10_000_000
        c.call("FLUSHALL")
        assert used(c) - before < 1_000_000


def plain(value):
    """A parsed reply without the type bytes resp.py keeps for array items."""
    if isinstance(value, list):
        return [plain(v[1] if isinstance(v, tuple) else v) for v in value]
    return value


def flat_map(reply):
    v = plain(reply.value)
    return list(zip(v[0::2], v[1::2]))


STATS_FIELDS = [
    "peak.allocated", "total.allocated", "startup.allocated", "replication.backlog",
    "clients.slaves", "clients.normal", "cluster.links", "aof.buffer", "lua.caches",
    "functions.caches", "db.0", "overhead.total", "keys.count", "keys.bytes-per-key",
    "dataset.bytes", "dataset.percentage", "peak.percentage", "allocator.allocated",
    "allocator.active", "allocator.resident", "allocator-fragmentation.ratio",
    "allocator-fragmentation.bytes", "allocator-rss.ratio", "allocator-rss.bytes",
    "rss-overhead.ratio", "rss-overhead.bytes", "fragmentation", "fragmentation.bytes",
]


def test_memory_stats_doctor_purge_shape(servers):
    for which, srv in servers.items():
        with srv.connect(timeout=60.0) as c:
            c.call("FLUSHALL")
            empty = c.call("MEMORY", "DOCTOR").value
            assert empty.startswith(b"Hi Sam, this instance is empty or is using very little "
                                    b"memory, my issues detector can't be used in these "
                                    b"conditions."), (which, empty)
            c.pipeline([("SET", f"k:{i}", "v" * 1000) for i in range(8000)])
            c.call("EXPIRE", "k:1", "100")
            stats = flat_map(c.call("MEMORY", "STATS"))
            names = [k.decode() for k, _ in stats]
            assert names == STATS_FIELDS, which
            s = {k.decode(): v for k, v in stats}
            db0 = {k.decode(): v for k, v in zip(s["db.0"][0::2], s["db.0"][1::2])}
            assert list(db0) == ["overhead.hashtable.main", "overhead.hashtable.expires",
                                 "overhead.hashtable.slot-to-keys"]
            assert db0["overhead.hashtable.main"] > 8000 * 16
            assert db0["overhead.hashtable.expires"] > 0
            assert s["keys.count"] == 8000
            assert s["dataset.bytes"] == s["total.allocated"] - s["overhead.total"]
            assert float(s["fragmentation"]) > 0.5
            assert s["dataset.bytes"] > 8_000_000
            assert s["overhead.total"] >= s["startup.allocated"] + s["clients.normal"]
            assert float(s["dataset.percentage"]) > 50
            assert s["keys.bytes-per-key"] > 1000
            report = c.call("MEMORY", "DOCTOR").value
            assert report.startswith(b"Hi Sam, I can't find any memory issue") or \
                report.startswith(b"Sam, I detected a few issues"), (which, report)
            assert c.call("MEMORY", "PURGE").raw == b"+OK\r\n"
            assert c.call("MEMORY", "MALLOC-STATS").raw.startswith(b"$")
            for bad in (("MEMORY", "STATS", "x"), ("MEMORY", "PURGE", "x")):
                assert c.call(*bad).is_error()
            assert c.call("MEMORY", "NOPE").raw.startswith(b"-ERR unknown subcommand 'NOPE'")


def test_memory_help_and_command_docs_match(servers):
    replies = {}
    for which, srv in servers.items():
        with srv.connect() as c:
            replies[which] = [c.call("MEMORY", "HELP").raw,
                              c.call("COMMAND", "INFO", "memory|stats", "memory|doctor",
                                     "memory|purge", "memory|malloc-stats").raw,
                              c.call("MEMORY", "STATS", "x").raw]
    assert replies["blinkdb"] == replies["redis"]


def test_eviction_tenacity_is_a_runtime_option(servers):
    for srv in servers.values():
        with srv.connect() as c:
            assert c.call("CONFIG", "GET", "maxmemory-eviction-tenacity").raw == \
                b"*2\r\n$27\r\nmaxmemory-eviction-tenacity\r\n$2\r\n10\r\n"
            assert c.call("CONFIG", "SET", "maxmemory-eviction-tenacity", "100").raw == b"+OK\r\n"
            assert c.call("CONFIG", "SET", "maxmemory-eviction-tenacity", "101").is_error()


def test_cron_finishes_what_a_time_bounded_write_left(blinkdb):
    """With tenacity 0 a write evicts at most 16 keys; the cron goes on until
    used_memory is under the limit (Redis's evictionTimeProc)."""
    with blinkdb.connect(timeout=60.0) as c:
        c.pipeline([("SET", f"k:{i}", "v" * 1000) for i in range(20000)])
        c.call("CONFIG", "SET", "maxmemory-eviction-tenacity", "0")
        c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
        limit = used(c) - 10_000_000
        c.call("CONFIG", "SET", "maxmemory", str(limit))
        assert c.call("SET", "x", "y").raw == b"+OK\r\n"
        deadline = time.monotonic() + 20
        while used(c) > limit and time.monotonic() < deadline:
            time.sleep(0.05)
        assert used(c) <= limit + SLACK
        assert c.call("DBSIZE").value < 11000


@pytest.mark.parametrize("which", ["blinkdb", "redis"])
def test_small_integers_not_shared_under_lru_or_lfu(servers, which):
    """maxmemory.tcl: small integers are shared objects (OBJECT REFCOUNT
    INT_MAX) unless a maxmemory is set with an LRU or LFU policy, where each
    value carries its own access clock."""
    shared = 2147483647
    with servers[which].connect() as c:
        c.call("SET", "a", "1")
        assert c.call("OBJECT", "REFCOUNT", "a").value == shared
        c.call("CONFIG", "SET", "maxmemory", "1073741824")
        c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
        c.call("SET", "a", "1")
        assert c.call("OBJECT", "REFCOUNT", "a").value == shared
        for policy in ("allkeys-lru", "volatile-lfu"):
            c.call("CONFIG", "SET", "maxmemory-policy", policy)
            c.call("SET", "b", "2")
            assert c.call("OBJECT", "REFCOUNT", "b").value == 1, policy
            assert c.call("OBJECT", "ENCODING", "b").value == b"int"
        c.call("CONFIG", "SET", "maxmemory", "0")


@pytest.mark.parametrize("which", [
    # Not strict: since eviction counts only the entries it drops against the
    # excess (no longer what dropping them queues), it passes in some runs.
    pytest.param("blinkdb", marks=pytest.mark.xfail(
        strict=False, reason="a key is often still evicted once the replica lags "
                             "(docs/compatibility.md)")),
    "redis",
])
def test_stopped_replica_buffer_does_not_induce_eviction(server_factory, tmp_path, which):
    """maxmemory.tcl's "replica buffer don't induce eviction": with maxmemory
    just above the data and a replica that stopped reading, 10 MB of writes
    that do not grow the data pile up in the replica's output, which
    mem_not_counted_for_evict leaves out: no key is evicted, no write
    refused. The figure is read when eviction checks, not sampled by the cron
    (a sample lagging the buffer's growth evicted every key, then OOM); BlinkDB
    still evicts one key early on (known, see docs/compatibility.md)."""
    import os
    import signal

    def start(name):
        args = ["--save", "", "--appendonly", "no"]
        if which == "redis":
            return ServerProcess(ORACLE_BIN, str(tmp_path / name), args)
        return server_factory(*args, name=name)

    master, replica = start("master"), start("replica")
    try:
        with master.connect(timeout=60.0) as m, replica.connect() as r:
            m.pipeline([("SETRANGE", f"key:{j}", "100000", "asdf") for j in range(100)])
            m.call("CONFIG", "SET", "repl-timeout", "1200")
            # Redis's per-command latency histograms would take the room.
            m.call("CONFIG", "SET", "latency-tracking", "no")
            m.call("CONFIG", "SET", "client-output-buffer-limit", "replica 100000000 100000000 300")
            m.call("CONFIG", "SET", "repl-backlog-size", str(10 * 1024))
            r.call("REPLICAOF", "127.0.0.1", str(master.port))
            deadline = time.monotonic() + 30
            while info(r, "replication").get("master_link_status") != "up":
                assert time.monotonic() < deadline, "replica link not up"
                time.sleep(0.05)
            mem = info(m)
            limit = int(mem["used_memory"]) - int(mem["mem_not_counted_for_evict"]) + 32 * 1024
            m.call("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
            m.call("CONFIG", "SET", "maxmemory", str(limit))
            os.kill(replica.pid, signal.SIGSTOP)
            try:
                payload = "A" * 100
                # Small batches: a deep pipeline's query buffer would itself
                # pass the 32 KB of room.
                for _ in range(10000):
                    replies = m.pipeline([("SETRANGE", "key:0", "0", payload)] * 10)
                    assert not any(x.is_error() for x in replies), replies[0].raw
                assert m.call("DBSIZE").value == 100
                assert int(info(m, "stats")["evicted_keys"]) == 0
                assert int(info(m)["mem_clients_slaves"]) > 2 * 1024 * 1024
            finally:
                os.kill(replica.pid, signal.SIGCONT)
    finally:
        if which == "redis":
            master.stop()
            replica.stop()


@pytest.mark.parametrize("which", ["blinkdb", "redis"])
def test_unread_replies_count_what_they_hold(servers, which):
    """maxmemory.tcl's "slave buffer are counted correctly" measures used_memory
    less mem_clients_normal while a pipelining client does not read its replies:
    the rest must stay flat, so a client's output counts the buffers its replies
    wait in, not only their bytes (BlinkDB counted the bytes, and the buffers'
    unused room, ~3.5 bytes a reply here, showed up as unaccounted memory).
    Enough replies that most wait in the server, past the sockets' buffers."""
    import threading

    n = 1_000_000
    with servers[which].connect() as c, servers[which].connect(rcvbuf=4096) as p:
        c.call("FLUSHALL")
        c.call("SETRANGE", "k", "0", "x")
        c.call("CONFIG", "SET", "latency-tracking", "no")
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")

        def rest(m):
            return int(m["used_memory"]) - int(m["mem_clients_normal"])

        # p's receive window is small from its connect on (rcvbuf): the
        # replies wait in the server, not in the sockets' buffers.
        p.call("CLIENT", "SETNAME", "pipe")
        before = rest(info(c))
        batch = b"*4\r\n$8\r\nSETRANGE\r\n$1\r\nk\r\n$1\r\n0\r\n$10\r\nAAAAAAAAAA\r\n" * 1000
        sender = threading.Thread(target=lambda: [p.send_raw(batch) for _ in range(n // 1000)])
        sender.start()
        sender.join(60)
        assert not sender.is_alive()

        def pipe():
            listed = c.call("CLIENT", "LIST").value
            listed = listed.decode() if isinstance(listed, bytes) else listed
            line = [x for x in listed.splitlines() if " name=pipe " in x][0]
            return dict(f.split("=", 1) for f in line.split(" ") if "=" in f)

        # Every command read by the server, the replies waiting for us.
        deadline = time.monotonic() + 30
        while pipe()["qbuf"] != "0":
            assert time.monotonic() < deadline, "commands not all read"
            time.sleep(0.05)
        m = info(c)
        grown = rest(m) - before
        waiting = int(m["mem_clients_normal"])
        assert waiting > 300_000
        # maxmemory.tcl's bound: half a byte a command. redis-server's own
        # figure wanders under load (684 KB once on a loaded 2-core box, with
        # 1.3 MB of replies waiting), so the oracle gets twice the room.
        assert abs(grown) < (n // 2 if which == "blinkdb" else n), (grown, waiting)
        if which == "blinkdb":
            # Tighter for BlinkDB, whose other figures hold still here (Redis's
            # vary by a few hundred KB run to run): before, a third of what
            # waited was missing from mem_clients_normal.
            assert abs(grown) < waiting // 4, (grown, waiting)
        c.call("CONFIG", "SET", "latency-tracking", "yes")
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
