"""Memory per small key (issue 42): small sets, hashes and sorted sets live in their key's table
entry (no allocation of their own up to 21 bytes), a small list is one small allocation, a TTL
costs about 34 bytes in the expiry index, and MEMORY USAGE answers close to what a key costs. The values read back as redis-server's do (scores stored as integers included), and
OBJECT ENCODING answers as Redis's across the thresholds."""

N = 50_000
BATCH = 1000


def load(conn, n, command):
    for start in range(0, n, BATCH):
        replies = conn.pipeline([command(i) for i in range(start, min(n, start + BATCH))])
        assert not any(r.is_error() for r in replies), replies[0]


def used_memory(conn):
    info = conn.call("INFO", "memory").value
    info = info.decode() if isinstance(info, bytes) else info
    for line in info.splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    raise AssertionError("no used_memory")


# (command for key i, bound on used_memory growth per key at 50,000 keys). The bounds sit
# under the cost with each hash, set and sorted set in an Arc and the expiry index a BTreeSet
# (SADD 137, HSET 137, 5-field HSET 201, ZADD 169, SET EX 139 bytes per key with the dense
# table) and over the cost with them in the table entry and the expiry index in runs (73-74,
# 138 for 5 fields, 107); SET and RPUSH as the dense table left them (73, 201). Since the last
# chunk of a shard grows by pages (keyspace/chunk.rs), up to 4 KB of room a shard counts
# in used_memory: 195 keys a shard here, 61 pairs of room, 8 bytes a key more (RSS is 14 less).
WORKLOADS = [
    (lambda i: ("SET", "key:%08d" % i, "val12345"), 90),
    (lambda i: ("SADD", "s:%08d" % i, "1", "2", "3", "4", "5"), 100),
    (lambda i: ("HSET", "h:%08d" % i, "name", "alice"), 100),
    (lambda i: ("HSET", "h:%08d" % i, "name", "alice", "age", "33", "city", "paris", "lang", "en",
                "tier", "gold"), 170),
    (lambda i: ("ZADD", "z:%08d" % i, "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"), 100),
    (lambda i: ("RPUSH", "l:%08d" % i, "a", "bb", "ccc"), 218),
    (lambda i: ("SET", "key:%08d" % i, "val12345", "EX", "100000"), 130),
]


def test_small_keys_cost_what_memory_usage_says(server_factory):
    for command, bound in WORKLOADS:
        srv = server_factory("--appendonly", "no")
        with srv.connect(timeout=60) as c:
            before = used_memory(c)
            load(c, N, command)
            per_key = (used_memory(c) - before) / N
            sample = [command(i)[1] for i in range(0, N, N // 100)]
            usage = [r.value for r in c.pipeline([("MEMORY", "USAGE", k) for k in sample])]
        srv.stop()
        what = command(0)[0]
        assert per_key < bound, (what, per_key)
        mean = sum(usage) / len(usage)
        # Issue 42: MEMORY USAGE within 10% of what a key costs.
        assert abs(mean - per_key) <= 0.10 * per_key, (what, mean, per_key)


def test_small_values_read_back_as_redis(servers):
    script = [
        ("SADD", "s", "5", "-3", "70000", "1"), ("SMEMBERS", "s"), ("SISMEMBER", "s", "70000"),
        ("OBJECT", "ENCODING", "s"), ("SADD", "s", "9223372036854775807"), ("SMEMBERS", "s"),
        ("SREM", "s", "-3"), ("SMEMBERS", "s"), ("OBJECT", "ENCODING", "s"),
        ("SADD", "s", "x"), ("OBJECT", "ENCODING", "s"), ("SCARD", "s"),
        ("ZADD", "z", "1", "a", "-2", "b", "0", "c", "-0", "d", "1.5", "e", "9007199254740992",
         "f", "-9007199254740993", "g", "1e300", "h", "inf", "i", "-inf", "j", "300", "k"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"), ("ZSCORE", "z", "f"), ("ZSCORE", "z", "g"),
        ("ZINCRBY", "z", "0.25", "a"), ("ZRANGEBYSCORE", "z", "-3", "2", "WITHSCORES"),
        ("OBJECT", "ENCODING", "z"),
        ("HSET", "h", "name", "alice", "age", "33"), ("HGETALL", "h"), ("HSET", "h", "name",
         "a much longer value than sixteen bytes"), ("HGETALL", "h"), ("OBJECT", "ENCODING", "h"),
        ("RPUSH", "l", "a", "bb", "ccc"), ("LPUSH", "l", "z"), ("LRANGE", "l", "0", "-1"),
        ("RPOP", "l"), ("LRANGE", "l", "0", "-1"), ("OBJECT", "ENCODING", "l"),
        # COPY of a compact collection copies it; of a full one shares it until a change.
        ("COPY", "h", "h2"), ("HSET", "h2", "x", "1"), ("HGETALL", "h"), ("HGETALL", "h2"),
        ("COPY", "z", "z2"), ("ZADD", "z2", "7", "a"), ("ZSCORE", "z", "a"), ("ZSCORE", "z2", "a"),
        ("SADD", "big", *[str(i) for i in range(600)]), ("COPY", "big", "big2"),
        ("SREM", "big2", "1"), ("SCARD", "big"), ("SCARD", "big2"), ("SISMEMBER", "big", "1"),
        ("OBJECT", "ENCODING", "big2"), ("DEL", "big"), ("SCARD", "big2"),
        # Across the 21 bytes kept inline and back.
        ("HSET", "g", "f", "v"), ("HSET", "g", "f2", "a value of thirty bytes or so.."),
        ("HGETALL", "g"), ("HDEL", "g", "f2"), ("HGETALL", "g"), ("OBJECT", "ENCODING", "g"),
        ("SET", "a-key-longer-than-fifteen-bytes", "v"), ("GET", "a-key-longer-than-fifteen-bytes"),
        ("SET", "fifteen-bytes-k", "w"), ("GET", "fifteen-bytes-k"), ("KEYS", "*teen*"),
    ]
    replies = {}
    for name, srv in servers.items():
        with srv.connect() as c:
            replies[name] = [c.call(*cmd).raw for cmd in script]
    for cmd, mine, theirs in zip(script, replies["blinkdb"], replies["redis"]):
        if cmd[0] == "KEYS":
            mine, theirs = sorted(mine.split(b"\r\n")), sorted(theirs.split(b"\r\n"))
        assert mine == theirs, cmd


def test_rss_of_small_keys_stays_near_used_memory(server_factory):
    """The key table's growing last chunks used to be realloc'ed by glibc side by side, 256 of
    them, leaving the old 1-15 KB blocks as holes in the heap: at 200,000 keys RSS grew 87 bytes
    a key for 71 of used_memory (17 over; 4 at 1M keys, where SET of an integer fell under
    redis-server). They grow by pages in slots of a mapped slab now (2 over). The slab's pages count
    in used_memory, and leave it with the keys."""
    n = 200_000
    srv = server_factory("--appendonly", "no")
    with srv.connect(timeout=60) as c:
        rss0, used0 = srv.anon_kb(), used_memory(c)
        load(c, n, lambda i: ("SET", "key:%08d" % i, str(10_000_000 + i)))
        rss1, used1 = srv.anon_kb(), used_memory(c)
        rss_per_key = (rss1 - rss0) * 1024 / n
        used_per_key = (used1 - used0) / n
        assert 64 < used_per_key < 76, used_per_key
        assert rss_per_key - used_per_key < 6, (rss_per_key, used_per_key)
        assert c.call("FLUSHALL", "SYNC").value in ("OK", b"OK")
        left = used_memory(c) - used0
        assert left < 1_000_000, left
