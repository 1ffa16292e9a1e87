"""Hashes and sets (issue 19): reply types in RESP2 and RESP3 against redis-server 7,
the AOF (restart, rewrite in 64-item batches, files redis-server 7 loads), WATCH,
keyspace events, OBJECT ENCODING across the thresholds, and hostile input."""

import os
import shutil
import time

from aof_helpers import (
    aof_path, bgrewriteaof, parse_commands, redis_server, start_aof_server, wait_rewrite_done,
)
from resp import plain
from test_persistence_redis_interop import check_aof


def raw(conn, *args):
    return conn.call(*args).raw


# Deterministic commands whose exact reply bytes must match the oracle's.
SCRIPT = [
    ("HSET", "h", "a", "1", "b", "2"), ("HSET", "h", "a", "x"), ("HSETNX", "h", "a", "y"),
    ("HMSET", "h", "c", "3"), ("HGET", "h", "a"), ("HGET", "h", "zz"), ("HMGET", "h", "a", "q"),
    ("HLEN", "h"), ("HSTRLEN", "h", "b"), ("HEXISTS", "h", "c"), ("HINCRBY", "h", "b", "40"),
    ("HINCRBY", "h", "a", "1"), ("HINCRBYFLOAT", "h", "f", "1.5"), ("HINCRBYFLOAT", "h", "f", "+inf"),
    ("HINCRBY", "h", "n", "9223372036854775807"), ("HINCRBY", "h", "n", "1"),
    ("HSET", "h", "odd"), ("HDEL", "h", "a", "nope"), ("HRANDFIELD", "h", "0"),
    ("HRANDFIELD", "h", "-9223372036854775808"), ("HRANDFIELD", "h", "-5000000000000000000", "WITHVALUES"),
    ("HRANDFIELD", "nokey"), ("HRANDFIELD", "nokey", "3"), ("HSCAN", "h", "x"),
    ("HSCAN", "h", "0", "COUNT", "0"),
    ("SADD", "s", "3", "1", "2"), ("SADD", "s", "1"), ("SCARD", "s"), ("SISMEMBER", "s", "2"),
    ("SMISMEMBER", "s", "1", "01"), ("SREM", "s", "2", "9"), ("SADD", "t", "1", "x"),
    ("SINTERSTORE", "u", "s", "t"), ("SUNIONSTORE", "u2", "s", "t"), ("SDIFFSTORE", "u3", "s", "t"),
    ("SINTERCARD", "2", "s", "t"), ("SINTERCARD", "0", "s"), ("SINTERCARD", "5", "s"),
    ("SINTERCARD", "1", "s", "LIMIT", "-1"), ("SMOVE", "nokey", "h", "1"), ("SMOVE", "s", "h", "1"),
    ("SMOVE", "s", "t", "1"), ("SPOP", "s", "-1"), ("SPOP", "nokey"), ("SPOP", "nokey", "3"),
    ("SRANDMEMBER", "nokey", "3"), ("SRANDMEMBER", "t", "0"), ("SINTERSTORE", "u", "nokey", "t"),
    ("SET", "str", "v"), ("HGET", "str", "a"), ("SADD", "str", "a"), ("SINTER", "t", "str"),
    ("SINTER", "nokey", "str"), ("GET", "h"), ("INCR", "t"), ("TYPE", "h"), ("TYPE", "t"),
    ("HGETALL", "nokey"), ("SMEMBERS", "nokey"),
]

# Single-element containers, whose order cannot differ, in both protocols.
TYPED = [("HSET", "one", "f", "v"), ("HGETALL", "one"), ("HKEYS", "one"), ("SADD", "m", "x"),
         ("SMEMBERS", "m"), ("SINTER", "m"), ("SPOP", "m", "1"), ("SRANDMEMBER", "one"),
         ("HRANDFIELD", "one", "2", "WITHVALUES"), ("HRANDFIELD", "one", "-2", "WITHVALUES")]


def test_replies_match_redis(blinkdb, oracle):
    for proto in ("2", "3"):
        got = []
        for srv in (blinkdb, oracle):
            with srv.connect() as c:
                c.call("FLUSHALL")
                c.call("HELLO", proto)
                got.append([(cmd, raw(c, *cmd)) for cmd in SCRIPT + TYPED])
        for (cmd, ours), (_, theirs) in zip(*got):
            assert ours == theirs, f"RESP{proto} {cmd}: {ours!r} != redis {theirs!r}"


def test_encodings_follow_the_limits(blinkdb):
    with blinkdb.connect() as c:
        c.call("HSET", "h", "f", "v")
        assert plain_text(c.call("OBJECT", "ENCODING", "h")) == "listpack"
        c.call("HSET", "h", "long", "x" * 65)
        assert plain_text(c.call("OBJECT", "ENCODING", "h")) == "hashtable"
        c.call("SADD", "s", *[str(i) for i in range(512)])
        assert plain_text(c.call("OBJECT", "ENCODING", "s")) == "intset"
        c.call("SADD", "s", "512")
        assert plain_text(c.call("OBJECT", "ENCODING", "s")) == "hashtable"
        c.call("CONFIG", "SET", "hash-max-ziplist-entries", "2")
        c.call("HSET", "h2", "a", "1", "b", "2", "c", "3")
        assert plain_text(c.call("OBJECT", "ENCODING", "h2")) == "hashtable"
        # Emptied collections are deleted.
        c.call("HDEL", "h2", "a", "b", "c")
        assert c.call("EXISTS", "h2").value == 0


def value_of(reply):
    return plain((reply.kind, reply.value))


def plain_text(reply):
    v = value_of(reply)
    return v.decode() if isinstance(v, bytes) else v


def test_watch_and_events(blinkdb, oracle):
    seen = []
    for srv in (blinkdb, oracle):
        with srv.connect() as c, srv.connect() as other, srv.connect() as sub:
            c.call("FLUSHALL")
            c.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
            sub.call("PSUBSCRIBE", "__keyevent@0__:*")
            c.call("SADD", "src", "a", "b")
            c.call("SADD", "dst", "a")
            # SMOVE of a member the destination has leaves it unchanged for WATCH.
            c.call("WATCH", "dst")
            other.call("SMOVE", "src", "dst", "a")
            c.call("MULTI")
            c.call("SADD", "dst", "c")
            assert c.call("EXEC").value is not None
            c.call("WATCH", "h")
            other.call("HSET", "h", "f", "v")
            c.call("MULTI")
            c.call("HSET", "h", "g", "v")
            assert c.call("EXEC").value is None
            other.call("HDEL", "h", "f")
            other.call("SPOP", "src")
            events = []
            deadline = time.time() + 5
            while len(events) < 9 and time.time() < deadline:
                m = sub.read_reply()
                events.append(value_of(m)[2].decode().split(":")[-1])
            seen.append(events)
            c.call("CONFIG", "SET", "notify-keyspace-events", "")
    assert seen[0] == seen[1]
    assert seen[0] == ["sadd", "sadd", "srem", "sadd", "hset", "hdel", "del", "spop", "del"]


def test_aof_restart_rewrite_and_redis_loads_it(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as c:
            c.pipeline([("HSET", "big", f"f{i}", f"v{i}") for i in range(300)])
            c.call("HSET", "small", "a", "1", "b", "2")
            c.call("HINCRBYFLOAT", "small", "a", "0.5")
            c.call("SADD", "ints", *[str(i) for i in range(200)])
            c.call("SADD", "words", *[f"w{i}" for i in range(150)])
            c.call("SPOP", "ints", "10")
            c.call("SINTERSTORE", "both", "ints", "words")
            c.call("SUNIONSTORE", "all", "ints", "words")
            c.call("PEXPIRE", "all", "500000")
            expected = dump(c)
    finally:
        srv.stop()
    # The RESP base's batching (aof-use-rdb-preamble no; the RDB base: test_rdb_preamble.py).
    srv = start_aof_server(blinkdb_binary, directory, "--aof-use-rdb-preamble", "no")
    try:
        with srv.connect() as c:
            assert dump(c) == expected
            bgrewriteaof(c)
            assert wait_rewrite_done(c)["aof_last_bgrewrite_status"] == "ok"
    finally:
        srv.stop()
    base = [n for n in os.listdir(aof_path(directory)) if n.endswith(".base.aof")]
    with open(os.path.join(aof_path(directory), base[0]), "rb") as f:
        records = [args for _, _, args in parse_commands(f.read())]
    hmsets = [r for r in records if r[0] == b"HMSET" and r[1] == b"big"]
    assert [len(r) for r in hmsets] == [130, 130, 130, 130, 90]  # 64 pairs per command
    assert all(len(r) <= 66 for r in records if r[0] == b"SADD")
    check_aof(directory)
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as c:
            assert dump(c) == expected
    finally:
        srv.stop()
    copy = str(tmp_path / "redis-copy")
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("server.log"))
    redis = redis_server(copy, copy + "-log")
    try:
        with redis.connect() as c:
            assert dump(c) == expected
    finally:
        redis.stop()


def dump(c):
    """Every key's type and contents (order-free), TTL presence included."""
    out = {}
    for _, key in c.call("KEYS", "*").value:
        kind = c.call("TYPE", key).value
        if kind == b"hash":
            v = value_of(c.call("HGETALL", key))
            content = sorted(zip(v[::2], v[1::2])) if isinstance(v, list) else sorted(v.items())
        elif kind == b"set":
            content = sorted(value_of(c.call("SMEMBERS", key)))
        else:
            content = c.call("GET", key).value
        out[key] = (kind, content, c.call("PTTL", key).value > 0)
    return out


def test_hostile_counts_stay_bounded(blinkdb):
    with blinkdb.connect() as c:
        c.call("SADD", "s", "a", "b")
        c.call("HSET", "h", "f", "v")
        # A count far past the size returns the whole collection, once.
        assert len(c.call("SRANDMEMBER", "s", "9223372036854775807").value) == 2
        assert len(c.call("SPOP", "s", "9999999999").value) == 2
        assert c.call("EXISTS", "s").value == 0
        assert len(c.call("HRANDFIELD", "h", "4611686018427387903", "WITHVALUES").value) == 2
        assert c.call("HRANDFIELD", "h", "9223372036854775807", "WITHVALUES").is_error()
        assert c.call("HRANDFIELD", "h", "-9223372036854775807", "WITHVALUES").is_error()
        # Repeats allowed: Redis would build a reply of 2^63 picks; BlinkDB bounds it by
        # a quarter of proto-max-bulk-len and answers Redis's out-of-range error past that.
        for cmd in (("SRANDMEMBER", "t"), ("HRANDFIELD", "h"), ("ZRANDMEMBER", "z")):
            c.call("SADD", "t", "x")
            c.call("ZADD", "z", "1", "x")
            reply = c.call(*cmd, "-9223372036854775807")
            assert reply.value == b"ERR value is out of range", (cmd, reply.raw)
            assert len(c.call(*cmd, "-1000").value) == 1000
        assert c.call("PING").value == b"PONG"
