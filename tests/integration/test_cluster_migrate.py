"""MIGRATE of every type between BlinkDB nodes (issue 23, resharding): hash,
set, zset, list, stream with consumer groups, HyperLogLog, a large string kept
on disk (above blob-threshold), a Bloom filter, with TTLs; between two
cluster nodes (one slot IMPORTING / MIGRATING, RESTORE-ASKING) and between
two plain nodes. Each key is compared on both sides: DUMP payload, TYPE, a
full read of the value and its TTL."""

from cluster_util import (blinkdb_nodes, call, myid, restart, state_ok, stop_all,
                          wait_until)
from resp import plain
from server import ServerProcess, blinkdb_bin

TAG = "{mig}"
KEYS = [f"{TAG}{n}" for n in ("str", "int", "big", "hash", "set", "zset", "list",
                                 "stream", "hll", "bf")]
BLOOM_ITEMS = [f"item:{i}" for i in range(3000)]
BIG = bytes(range(256)) * 1024  # 256 KiB, above any blob-threshold in use
AOF = ("--appendonly", "yes", "--blob-threshold", "16384")


def populate(c):
    def ok(*cmd):
        r = c.call(*cmd)
        assert not r.is_error(), (cmd, r.raw)
        return r
    ok("SET", f"{TAG}str", "hello", "PX", "600000")
    ok("SET", f"{TAG}int", "12345")
    ok("SET", f"{TAG}big", BIG)
    ok("PEXPIRE", f"{TAG}big", "500000")
    ok("HSET", f"{TAG}hash", *[x for i in range(200) for x in (f"f{i}", f"v{i}" * (i % 7))])
    ok("SADD", f"{TAG}set", *[f"m{i}" for i in range(300)], "1", "2", "3")
    ok("ZADD", f"{TAG}zset", *[x for i in range(250) for x in (str(i / 3), f"z{i}")])
    ok("ZADD", f"{TAG}zset", "inf", "top", "-inf", "bottom")
    ok("RPUSH", f"{TAG}list", *[f"e{i}" for i in range(400)])
    ok("EXPIRE", f"{TAG}list", "4000")
    for i in range(50):
        ok("XADD", f"{TAG}stream", f"{i + 1}-0", "a", str(i), "b", "x" * (i % 5))
    ok("XGROUP", "CREATE", f"{TAG}stream", "g1", "0")
    ok("XGROUP", "CREATE", f"{TAG}stream", "g2", "$")
    ok("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "10", "STREAMS", f"{TAG}stream", ">")
    ok("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "5", "STREAMS", f"{TAG}stream", ">")
    ok("XACK", f"{TAG}stream", "g1", "3-0", "4-0")
    ok("XDEL", f"{TAG}stream", "20-0")
    ok("PFADD", f"{TAG}hll", *[f"h{i}" for i in range(5000)])
    ok("BF.RESERVE", f"{TAG}bf", "0.001", "1000")
    for i in range(0, len(BLOOM_ITEMS), 500):
        ok("BF.MADD", f"{TAG}bf", *BLOOM_ITEMS[i:i + 500])
    ok("PEXPIRE", f"{TAG}bf", "700000")


def snapshot(c):
    """Every key: (DUMP, TYPE, its value read with the type's commands, TTL in s)."""
    out = {}
    for k in KEYS:
        if k.endswith("hll"):
            c.call("PFCOUNT", k)  # caches the cardinality in the value first
        t = c.call("TYPE", k).value
        reads = {
            b"string": [("GET", k), ("STRLEN", k)],
            b"hash": [("HGETALL", k)],
            b"set": [("SMEMBERS", k)],
            b"zset": [("ZRANGE", k, "0", "-1", "WITHSCORES")],
            b"list": [("LRANGE", k, "0", "-1")],
            b"stream": [("XRANGE", k, "-", "+"), ("XINFO", "STREAM", k, "FULL"),
                        ("XPENDING", k, "g1"), ("XINFO", "GROUPS", k)],
            b"MBbloom--": [("BF.INFO", k), ("BF.CARD", k)],
        }.get(t, [])
        vals = []
        for cmd in reads:
            r = c.call(*cmd)
            v = r.raw
            if t == b"set":
                v = sorted(plain((r.kind, r.value)))
            elif cmd[1] == "STREAM":
                # XINFO STREAM FULL: delivery times differ by nature; keep the rest.
                v = strip_times(r)
            vals.append(v)
        if k.endswith("hll"):
            vals.append(c.call("PFCOUNT", k).value)
        if t == b"MBbloom--":
            got = c.call("BF.MEXISTS", k, *BLOOM_ITEMS).value
            vals.append(all(x == 1 for x in plain((b"*", got))))
        ttl = c.call("TTL", k).value
        out[k] = (c.call("DUMP", k).raw, t, vals, ttl)
    return out


def strip_times(reply):
    """XINFO STREAM FULL minus seen-time/delivery-time (they are wall clock)."""
    v = plain((reply.kind, reply.value))

    def walk(x):
        if isinstance(x, list):
            res, skip = [], False
            for i, e in enumerate(x):
                if skip:
                    skip = False
                    continue
                if e in (b"seen-time", b"active-time"):
                    skip = True
                    continue
                res.append(walk(e))
            return res
        return x
    # pending entries: [id, consumer, delivery-time, count] -> drop the time
    def drop_pel_times(x):
        if isinstance(x, list):
            if len(x) == 4 and isinstance(x[2], int) and isinstance(x[1], bytes) \
                    and isinstance(x[0], bytes) and b"-" in x[0]:
                return [x[0], x[1], x[3]]
            if len(x) == 3 and isinstance(x[1], int) and isinstance(x[0], bytes) \
                    and b"-" in x[0]:
                return [x[0], x[2]]
            return [drop_pel_times(e) for e in x]
        return x
    return drop_pel_times(walk(v))


def assert_same(before, after):
    for k in KEYS:
        d0, t0, v0, ttl0 = before[k]
        d1, t1, v1, ttl1 = after[k]
        assert t1 == t0, (k, t0, t1)
        assert v1 == v0, k
        assert d1 == d0, k
        if ttl0 == -1:
            assert ttl1 == -1, k
        else:
            assert 0 < ttl1 <= ttl0 and ttl0 - ttl1 <= 5, (k, ttl0, ttl1)
    assert after[f"{TAG}bf"][2][-1] is True


def migrate_all(src, dst, extra=()):
    with src.connect() as c:
        r = c.call("MIGRATE", "127.0.0.1", str(dst.port), "", "0", "20000", *extra,
                   "KEYS", *KEYS)
        assert r.raw == b"+OK\r\n", r.raw


def test_migrate_every_type_between_cluster_nodes(tmp_path):
    nodes = blinkdb_nodes(tmp_path, 2, AOF)
    try:
        a, b = nodes
        call(a, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        call(a, "CLUSTER", "MEET", "127.0.0.1", str(b.port))
        wait_until(lambda: b"cluster_state:ok" in call(b, "CLUSTER", "INFO").raw, 30, "ok")
        slot = str(call(a, "CLUSTER", "KEYSLOT", TAG).value)
        with a.connect() as c:
            populate(c)
            before = snapshot(c)
        assert call(a, "CLUSTER", "COUNTKEYSINSLOT", slot).value == len(KEYS)
        assert call(b, "CLUSTER", "SETSLOT", slot, "IMPORTING", myid(a)).raw == b"+OK\r\n"
        assert call(a, "CLUSTER", "SETSLOT", slot, "MIGRATING", myid(b)).raw == b"+OK\r\n"
        migrate_all(a, b)
        assert call(a, "CLUSTER", "COUNTKEYSINSLOT", slot).value == 0
        assert call(b, "CLUSTER", "COUNTKEYSINSLOT", slot).value == len(KEYS)
        for s in (b, a):
            assert call(s, "CLUSTER", "SETSLOT", slot, "NODE", myid(b)).raw == b"+OK\r\n"
        with b.connect() as c:
            after = snapshot(c)
        assert_same(before, after)
        # The target keeps them over a restart (its AOF).
        b.stop()
        b2 = restart(b)
        nodes[1] = b2
        wait_until(lambda: state_ok(b2), 30, "b back")
        with b2.connect() as c:
            assert_same(before, snapshot(c))
        # Back to the first node: still the same.
        assert call(a, "CLUSTER", "SETSLOT", slot, "IMPORTING", myid(b2)).raw == b"+OK\r\n"
        assert call(b2, "CLUSTER", "SETSLOT", slot, "MIGRATING", myid(a)).raw == b"+OK\r\n"
        migrate_all(b2, a)
        for s in (a, b2):
            call(s, "CLUSTER", "SETSLOT", slot, "NODE", myid(a))
        with a.connect() as c:
            assert_same(before, snapshot(c))
    finally:
        stop_all(nodes)


def test_migrate_every_type_between_plain_nodes(tmp_path):
    a = ServerProcess(blinkdb_bin(), str(tmp_path / "a"), AOF)
    b = ServerProcess(blinkdb_bin(), str(tmp_path / "b"), AOF)
    try:
        with a.connect() as c:
            populate(c)
            before = snapshot(c)
        migrate_all(a, b, ("COPY",))
        with a.connect() as c:
            assert_same(before, snapshot(c))
        with b.connect() as c:
            assert_same(before, snapshot(c))
            # REPLACE over existing keys of other types.
            c.call("FLUSHALL")
            for k in KEYS:
                c.call("SET", k, "other")
        migrate_all(a, b, ("REPLACE",))
        with a.connect() as c:
            assert c.call("EXISTS", *KEYS).value == 0
        with b.connect() as c:
            assert_same(before, snapshot(c))
    finally:
        a.stop()
        b.stop()
