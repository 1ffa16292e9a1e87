"""Shared by the RDB tests: a workload of every type in both encodings, a key-by-key
comparison of two servers, and hand-built RDB bytes in the encodings of older Redis."""

import struct

import redis

# Strings (int, raw, LZF-compressible, longer than 20 bytes), hashes, sets and sorted sets
# in their compact and full encodings, lists of one and of several quicklist nodes.
WORKLOAD = [
    ("SET", "s:int", "12345"),
    ("SET", "s:neg", "-70000"),
    ("SET", "s:i64", "9" * 15),
    ("SET", "s:raw", "hello"),
    ("SET", "s:lzf", "abc" * 40),
    ("SET", "s:bin", b"\x00\xff\r\n" * 10),
    ("SET", "s:ttl", "v", "PX", "100000000"),
    ("HSET", "h:small", "a", "1", "b", "hello", "c", "-5000"),
    ("HSET", "h:big", *[x for i in range(200) for x in (f"f{i}", f"v{i}")]),
    ("HSET", "h:long", "f", "x" * 100),
    ("SADD", "set:int", *range(-3, 10)),
    ("SADD", "set:wide", 1, 100000, 5000000000),
    ("SADD", "set:str", *[f"m{i}" for i in range(20)]),
    ("SADD", "set:many", *range(600)),
    ("ZADD", "z:small", 1.5, "a", 2, "b", "inf", "c", "-inf", "d", 1e20, "e", 3e-7, "f"),
    ("ZADD", "z:big", *[x for i in range(300) for x in (i / 7, f"m{i}")]),
    ("ZADD", "z:long", 1, "m" * 100),
    ("RPUSH", "l:small", *[f"e{i}" for i in range(10)], 1, 2, 300, -1),
    ("RPUSH", "l:big", *[f"element-{i}" * 3 for i in range(3000)]),
    ("PEXPIRE", "h:big", "100000000"),
    # Streams: a tombstone and an entry with fields of its own in one node; three
    # nodes of 100 entries; an empty stream with a group; groups with pending entries.
    ("XADD", "x:small", "1-1", "a", "1"),
    ("XADD", "x:small", "1-2", "a", "2"),
    ("XADD", "x:small", "2-0", "b", "x"),
    ("XDEL", "x:small", "1-2"),
    *[("XADD", "x:big", f"{i}-{i % 3}", "f", i, "g", "v" * (i % 70)) for i in range(1, 251)],
    ("XTRIM", "x:big", "MAXLEN", "245"),
    # Nodes cut by stream-node-max-bytes (4096), measured on Redis's listpack.
    *[("XADD", "x:wide", f"{i}-0", "blob", "b" * (300 * i), "n", i) for i in range(1, 12)],
    ("XDEL", "x:big", "200-2"),
    ("XGROUP", "CREATE", "x:empty", "g", "$", "MKSTREAM"),
    ("XADD", "x:groups", "5-1", "k", "v"),
    ("XADD", "x:groups", "6-1", "k", "v", "extra", "field"),
    ("XADD", "x:groups", "7-1", "k", "v"),
    ("XGROUP", "CREATE", "x:groups", "readers", "0"),
    ("XGROUP", "CREATE", "x:groups", "idle", "$"),
    ("XGROUP", "CREATECONSUMER", "x:groups", "idle", "nobody"),
    ("XREADGROUP", "GROUP", "readers", "alice", "COUNT", "2", "STREAMS", "x:groups", ">"),
    ("XREADGROUP", "GROUP", "readers", "bob", "STREAMS", "x:groups", ">"),
    ("XACK", "x:groups", "readers", "5-1"),
    ("XSETID", "x:groups", "9-9", "ENTRIESADDED", "10", "MAXDELETEDID", "3-0"),
]

# Every key the workload writes (XGROUP and XREADGROUP name theirs later).
WORKLOAD_KEYS = sorted({cmd[1] for cmd in WORKLOAD if cmd[0] not in ("XGROUP", "XREADGROUP")})

# The full encodings iterate in hash order, which differs between servers; a stream's
# consumers and pending entries carry the time they were seen and delivered.
ORDER_DEPENDENT = {"h:big", "h:long", "set:str", "set:many", "x:groups"}


def stream_content(conn, key):
    """Entries, XINFO STREAM's counters, and per group XINFO GROUPS, its consumers and
    pending entries, without the times (idle, time since delivery) and radix-tree-nodes
    (the size of Redis's own radix tree)."""
    info = conn.xinfo_stream(key)
    info.pop("radix-tree-nodes", None)
    groups = []
    for g in conn.xinfo_groups(key):
        name = g["name"]
        consumers = [(c["name"], c["pending"]) for c in conn.xinfo_consumers(key, name)]
        pending = [
            (p["message_id"], p["consumer"], p["times_delivered"])
            for p in conn.xpending_range(key, name, "-", "+", 1000)
        ]
        groups.append((sorted(g.items()), consumers, pending))
    return conn.xrange(key), sorted(info.items(), key=lambda kv: kv[0]), groups


def content(conn, key):
    kind = conn.type(key).decode()
    if kind == "string":
        return kind, conn.get(key)
    if kind == "hash":
        return kind, sorted(conn.hgetall(key).items())
    if kind == "set":
        return kind, sorted(conn.smembers(key))
    if kind == "zset":
        return kind, conn.zrange(key, 0, -1, withscores=True)
    if kind == "list":
        return kind, conn.lrange(key, 0, -1)
    if kind == "stream":
        return kind, stream_content(conn, key)
    return kind, None


def client(port, db=0):
    return redis.Redis(port=port, db=db, protocol=2)


def assert_same_keyspace(port_a, port_b, databases=16, ttl_slack_ms=5000):
    """Every key of every database: same type, contents and TTL (within the slack)."""
    total = 0
    for db in range(databases):
        a, b = client(port_a, db), client(port_b, db)
        keys_a, keys_b = sorted(a.keys("*")), sorted(b.keys("*"))
        assert keys_a == keys_b, f"db {db}: keys differ"
        for key in keys_a:
            assert content(a, key) == content(b, key), f"db {db}: {key!r} differs"
            ta, tb = a.pttl(key), b.pttl(key)
            assert (ta < 0) == (tb < 0) and abs(ta - tb) <= ttl_slack_ms, (key, ta, tb)
            total += 1
    return total


def crc64(data):
    """Redis's CRC-64 (Jones, reflected), bit by bit."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x95AC9329AC4BC9B5 if crc & 1 else 0)
    return crc


def rdb_len(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | n >> 8, n & 0xFF])
    return b"\x80" + struct.pack(">I", n)


def rdb_str(b):
    b = b if isinstance(b, bytes) else str(b).encode()
    return rdb_len(len(b)) + b


def ziplist(items):
    """A ziplist as Redis 2.6-6.2 wrote them: strings under 64 bytes, 16-bit integers."""
    body, prev, tail = b"", 0, 10
    for item in items:
        tail = 10 + len(body)
        head = bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I", prev)
        if isinstance(item, int):
            enc = b"\xc0" + struct.pack("<h", item)
        else:
            enc = bytes([len(item)]) + item
        body += head + enc
        prev = len(head + enc)
    return struct.pack("<IIH", 10 + len(body) + 1, tail, len(items)) + body + b"\xff"


def zipmap(pairs):
    """A zipmap (Redis before 2.6): lengths under 254, one free byte after each value."""
    out = bytes([len(pairs)])
    for field, value in pairs:
        out += bytes([len(field)]) + field + bytes([len(value), 1]) + value + b"?"
    return out + b"\xff"


def legacy_rdb():
    """An RDB version 9 file (Redis 5 and 6) holding every encoding that Redis 7 no
    longer writes: ziplist and zipmap hashes, ziplist sorted sets, quicklists of
    ziplists, ziplist and linked lists, text scores; its CRC is 0 (not checked)."""
    zl = ziplist
    keys = [
        (10, b"old:list-ziplist", rdb_str(zl([b"a", 300, b"bb", -2]))),
        (14, b"old:quicklist", rdb_len(2) + rdb_str(zl([b"x", 1])) + rdb_str(zl([b"y"]))),
        (1, b"old:linked", rdb_len(2) + rdb_str(b"p") + rdb_str(b"q")),
        (9, b"old:zipmap", rdb_str(zipmap([(b"f1", b"v1"), (b"f2", b"22")]))),
        (13, b"old:hash-ziplist", rdb_str(zl([b"f", 1, b"g", b"v"]))),
        (12, b"old:zset-ziplist", rdb_str(zl([b"m", 1, b"n", b"2.5"]))),
        (3, b"old:zset-text", rdb_len(2) + rdb_str(b"a") + b"\x031.5" + rdb_str(b"b") + b"\xfe"),
        (11, b"old:intset", rdb_str(struct.pack("<II", 2, 3) + struct.pack("<hhh", -1, 2, 300))),
    ]
    out = b"REDIS0009" + b"\xfa" + rdb_str(b"redis-ver") + rdb_str(b"6.2.14")
    out += b"\xfe\x00\xfb" + rdb_len(len(keys)) + rdb_len(0)
    for kind, key, body in keys:
        out += bytes([kind]) + rdb_str(key) + body
    return out + b"\xff" + b"\x00" * 8


DEBUG = ("--enable-debug-command", "yes")


def assert_same_digests(port_a, port_b, databases=16):
    """DEBUG DIGEST-VALUE of every key of every database, and DEBUG DIGEST, alike on both
    servers (both started with DEBUG enabled)."""
    for db in range(databases):
        a, b = client(port_a, db), client(port_b, db)
        keys = sorted(a.keys("*"))
        if keys:
            da = a.execute_command("DEBUG", "DIGEST-VALUE", *keys)
            db_ = b.execute_command("DEBUG", "DIGEST-VALUE", *keys)
            diff = [k for k, x, y in zip(keys, da, db_) if x != y]
            assert not diff, f"db {db}: digests differ for {diff[:10]}"
    assert client(port_a).execute_command("DEBUG", "DIGEST") == \
        client(port_b).execute_command("DEBUG", "DIGEST")
