"""Memory per small key (issue 42): small sets, hashes, sorted sets and lists are one small
allocation each, and MEMORY USAGE answers close to what a key costs. The values read back as redis-server's do (scores stored as integers included), and
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
# under the cost with the key table as a hash map of (key, entry) slots (SET 89, SADD 150,
# HSET 151, ZADD 183, RPUSH 215, SET EX 155 bytes per key; its load is 0.76 at this size, 0.57
# at 300,000 keys where the gap is 40 bytes) and over the dense table's (75, 139, 139, 171,
# 203, 141 with hashbrown's index; 1-2 bytes less with keyspace/positions.rs).
WORKLOADS = [
    (lambda i: ("SET", "key:%08d" % i, "val12345"), 81),
    (lambda i: ("SADD", "s:%08d" % i, "1", "2", "3", "4", "5"), 145),
    (lambda i: ("HSET", "h:%08d" % i, "name", "alice"), 145),
    (lambda i: ("ZADD", "z:%08d" % i, "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"), 177),
    (lambda i: ("RPUSH", "l:%08d" % i, "a", "bb", "ccc"), 209),
    (lambda i: ("SET", "key:%08d" % i, "val12345", "EX", "100000"), 148),
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
