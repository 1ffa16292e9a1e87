"""Sorted sets against the oracle: a scripted sequence of every sorted-set
command (both encodings, edge cases, bad input, WRONGTYPE) must get the same
reply bytes from BlinkDB and redis-server 7 in RESP2 and RESP3; keyspace
events match; random replies have the right shape; sorted sets survive a
restart and BGREWRITEAOF, and redis-server 7 loads the AOF."""

import random

import pytest

from aof_helpers import (
    bgrewriteaof, blinkdb_snapshot, redis_server, redis_snapshot_of_aof, start_aof_server,
    wait_rewrite_done,
)
from resp import plain
from test_persistence_redis_interop import check_aof


def members(n, prefix="m"):
    return [f"{prefix}{i}" for i in range(n)]


def zadd_many(key, n, prefix="m", score=lambda i: i):
    args = ["ZADD", key]
    for i, m in enumerate(members(n, prefix)):
        args += [str(score(i)), m]
    return tuple(args)


def script():
    """Deterministic commands whose replies must match byte for byte."""
    s = []
    add = s.append
    # ZADD and its options, conflicts and score parsing.
    add(("ZADD", "z", "1", "a", "2", "b", "3", "c"))
    add(("ZADD", "z", "NX", "10", "a", "4", "d"))
    add(("ZADD", "z", "XX", "CH", "5", "a", "6", "nope"))
    add(("ZADD", "z", "GT", "CH", "1", "a", "7", "b"))
    add(("ZADD", "z", "LT", "CH", "0", "a", "9", "b"))
    add(("ZADD", "z", "XX", "GT", "CH", "100", "c"))
    add(("ZADD", "z", "NX", "XX", "1", "a"))
    add(("ZADD", "z", "GT", "LT", "1", "a"))
    add(("ZADD", "z", "NX", "GT", "1", "a"))
    add(("ZADD", "z", "INCR", "1", "a", "2", "b"))
    add(("ZADD", "z", "1"))
    add(("ZADD", "z", "1", "a", "2"))
    add(("ZADD", "z", "nan", "a"))
    add(("ZADD", "z", "abc", "a"))
    add(("ZADD", "z", " 1", "a"))
    add(("ZADD", "z", "1e400", "a"))
    add(("ZADD", "z", "0x10", "hex", "+inf", "pinf", "-inf", "ninf", "1e-310", "tiny"))
    add(("ZADD", "z", "INCR", "5", "a"))
    add(("ZADD", "z", "INCR", "NX", "5", "a"))
    add(("ZADD", "z", "INCR", "XX", "5", "absent"))
    add(("ZADD", "z", "INCR", "GT", "-1", "a"))
    add(("ZINCRBY", "z", "2.5", "a"))
    add(("ZINCRBY", "z", "1", "new"))
    add(("ZINCRBY", "z", "-inf", "pinf"))
    add(("ZINCRBY", "z", "inf", "pinf"))
    add(("ZINCRBY", "z", "abc", "a"))
    add(("ZADD", "z", "INCR", "-inf", "pinf"))
    add(("ZADD", "z", "INCR", "+inf", "ninf"))
    add(("ZADD", "z", "-0", "negzero", "0", "zero"))
    add(("ZADD", "z", "0", "negzero"))
    add(("ZSCORE", "z", "negzero"))
    add(("ZADD", "z", "XX", "1", "nokey-member"))
    add(("ZADD", "absent", "XX", "1", "a"))
    add(("ZADD", "absent", "XX", "INCR", "1", "a"))
    add(("EXISTS", "absent"))
    add(("ZRANGE", "z", "0", "-1", "WITHSCORES"))
    # Reads.
    for cmd in [
        ("ZCARD", "z"), ("ZCARD", "absent"),
        ("ZSCORE", "z", "a"), ("ZSCORE", "z", "x"), ("ZSCORE", "absent", "a"),
        ("ZMSCORE", "z", "a", "x", "pinf", "ninf", "tiny"), ("ZMSCORE", "absent", "a", "b"),
        ("ZRANK", "z", "a"), ("ZRANK", "z", "x"), ("ZREVRANK", "z", "a"), ("ZRANK", "absent", "a"),
        ("ZCOUNT", "z", "-inf", "+inf"), ("ZCOUNT", "z", "(1", "3"), ("ZCOUNT", "z", "1", "(1"),
        ("ZCOUNT", "z", "(", "inf"), ("ZCOUNT", "z", "a", "1"), ("ZCOUNT", "z", "nan", "1"),
        ("ZCOUNT", "z", " 2", "1e400"), ("ZCOUNT", "absent", "0", "1"),
    ]:
        add(cmd)
    # ZRANGE family on the small set.
    for cmd in [
        ("ZRANGE", "z", "0", "-1"), ("ZRANGE", "z", "2", "4", "WITHSCORES"),
        ("ZRANGE", "z", "-3", "-1", "REV", "WITHSCORES"), ("ZRANGE", "z", "5", "2"),
        ("ZRANGE", "z", "-100", "100"), ("ZRANGE", "z", "100", "200"),
        ("ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"),
        ("ZRANGE", "z", "(1", "+inf", "BYSCORE", "WITHSCORES"),
        ("ZRANGE", "z", "+inf", "(1", "BYSCORE", "REV", "WITHSCORES"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "-1"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "5"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "0", "0"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "0", "9223372036854775807"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "9223372036854775807", "1"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "0", "99999999999999999999"),
        ("ZRANGE", "z", "-", "+", "BYLEX"), ("ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"),
        ("ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"), ("ZRANGE", "z", "0", "1", "REV", "REV"),
        ("ZRANGE", "z", "0", "1", "LIMIT", "0"), ("ZRANGE", "z", "0", "1", "bogus"),
        ("ZRANGE", "z", "a", "1"), ("ZRANGE", "absent", "0", "-1"),
        ("ZREVRANGE", "z", "0", "2", "WITHSCORES"), ("ZREVRANGE", "z", "0", "2", "REV"),
        ("ZRANGEBYSCORE", "z", "-inf", "(3", "WITHSCORES", "LIMIT", "1", "10"),
        ("ZRANGEBYSCORE", "z", "3", "1"), ("ZRANGEBYSCORE", "z", "1", "3", "BYSCORE"),
        ("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "2", "3", "WITHSCORES"),
        ("ZREVRANGEBYSCORE", "z", "1", "2"),
    ]:
        add(cmd)
    # Lexicographic ranges: all scores equal.
    add(("ZADD", "lex", *[x for m in "abcdefg" for x in ("0", m)]))
    add(("ZADD", "lex", "0", "", "0", "b\x00z", "0", "\xff"))
    for cmd in [
        ("ZRANGEBYLEX", "lex", "-", "+"), ("ZRANGEBYLEX", "lex", "[b", "(e"),
        ("ZRANGEBYLEX", "lex", "(b", "[e", "LIMIT", "1", "2"), ("ZRANGEBYLEX", "lex", "+", "-"),
        ("ZRANGEBYLEX", "lex", "[", "[c"), ("ZRANGEBYLEX", "lex", "(", "+"),
        ("ZRANGEBYLEX", "lex", "b", "+"), ("ZRANGEBYLEX", "lex", "-x", "+"),
        ("ZRANGEBYLEX", "lex", "[e", "[b"), ("ZRANGEBYLEX", "lex", "[c", "(c"),
        ("ZREVRANGEBYLEX", "lex", "+", "-"), ("ZREVRANGEBYLEX", "lex", "[e", "(b", "LIMIT", "1", "10"),
        ("ZREVRANGEBYLEX", "lex", "-", "+"), ("ZRANGEBYLEX", "lex", "-", "+", "WITHSCORES"),
        ("ZLEXCOUNT", "lex", "-", "+"), ("ZLEXCOUNT", "lex", "[b", "[d"),
        ("ZLEXCOUNT", "lex", "(a", "(a"), ("ZLEXCOUNT", "lex", "a", "b"),
        ("ZLEXCOUNT", "absent", "-", "+"),
        ("ZRANGE", "lex", "[c", "-", "BYLEX", "REV", "LIMIT", "0", "2"),
    ]:
        add(cmd)
    # Large sets (the full encoding), the same questions.
    add(zadd_many("big", 300, score=lambda i: (i * 7919) % 101))
    add(zadd_many("big", 50, prefix="long" + "x" * 70))
    add(("ZADD", "biglex", *[x for i in range(200) for x in ("0", f"k{i:04}")]))
    for key in ["big"]:
        for cmd in [
            ("ZCARD", key), ("ZRANGE", key, "0", "-1", "WITHSCORES"),
            ("ZRANGE", key, "100", "120", "REV", "WITHSCORES"),
            ("ZRANGE", key, "(10", "50", "BYSCORE", "LIMIT", "5", "20", "WITHSCORES"),
            ("ZRANGE", key, "50", "(10", "BYSCORE", "REV", "LIMIT", "5", "20"),
            ("ZRANGEBYSCORE", key, "-inf", "+inf", "LIMIT", "290", "100"),
            ("ZCOUNT", key, "20", "30"), ("ZRANK", key, "m150"), ("ZREVRANK", key, "m150"),
            ("ZMSCORE", key, "m1", "m299", "zz"),
        ]:
            add(cmd)
    for cmd in [
        ("ZRANGEBYLEX", "biglex", "[k0100", "(k0150"), ("ZLEXCOUNT", "biglex", "(k0010", "+"),
        ("ZREVRANGEBYLEX", "biglex", "(k0100", "-", "LIMIT", "3", "4"),
        ("OBJECT", "ENCODING", "big"), ("OBJECT", "ENCODING", "z"),
    ]:
        add(cmd)
    # Removals, pops and events on both encodings (lexicographic ranges only
    # where scores are equal: otherwise Redis's answer depends on its
    # skiplist's random levels).
    add(("ZREMRANGEBYLEX", "biglex", "[k0010", "(k0020"))
    add(("ZREMRANGEBYLEX", "biglex", "(k0150", "+"))
    add(("ZRANGE", "biglex", "0", "-1"))
    for key in ["z", "big"]:
        for cmd in [
            ("ZREM", key, "a", "a", "nothere"), ("ZREMRANGEBYRANK", key, "0", "1"),
            ("ZREMRANGEBYRANK", key, "-2", "-1"), ("ZREMRANGEBYRANK", key, "5", "2"),
            ("ZREMRANGEBYSCORE", key, "(5", "20"), ("ZREMRANGEBYSCORE", key, "x", "1"),
            ("ZREMRANGEBYLEX", key, "m", "+"),
            ("ZPOPMIN", key), ("ZPOPMAX", key), ("ZPOPMIN", key, "3"), ("ZPOPMAX", key, "2"),
            ("ZPOPMIN", key, "0"), ("ZPOPMIN", key, "-1"), ("ZPOPMIN", key, "1", "2"),
            ("ZPOPMIN", key, "x"), ("ZRANGE", key, "0", "-1", "WITHSCORES"),
        ]:
            add(cmd)
    add(("ZPOPMIN", "absent")), add(("ZPOPMAX", "absent", "5"))
    add(("ZADD", "two", "1", "a", "2", "b"))
    add(("ZPOPMAX", "two", "10"))
    add(("EXISTS", "two"))
    add(("ZADD", "one", "1", "a"))
    add(("ZREM", "one", "a", "b"))
    add(("EXISTS", "one"))
    # ZMPOP (non-blocking).
    add(("ZADD", "mp", "1", "a", "2", "b", "3", "c"))
    for cmd in [
        ("ZMPOP", "2", "absent", "mp", "MIN"), ("ZMPOP", "1", "mp", "MAX", "COUNT", "5"),
        ("ZMPOP", "1", "mp", "MAX"), ("ZMPOP", "0", "mp", "MAX"), ("ZMPOP", "x", "mp", "MAX"),
        ("ZMPOP", "5", "mp", "MAX"), ("ZMPOP", "1", "mp", "MIDDLE"),
        ("ZMPOP", "1", "mp", "MIN", "COUNT", "0"), ("ZMPOP", "1", "mp", "MIN", "COUNT", "1", "x"),
    ]:
        add(cmd)
    # Set algebra, with sets as inputs and weights.
    add(("ZADD", "za", "1", "a", "2", "b", "3", "c", "inf", "i"))
    add(("ZADD", "zb", "10", "b", "20", "c", "30", "d", "-inf", "i"))
    add(zadd_many("zbig", 200))
    add(("SADD", "sa", "a", "d", "e"))
    add(("SADD", "si", "1", "2", "3"))
    for cmd in [
        ("ZUNION", "2", "za", "zb", "WITHSCORES"),
        ("ZUNION", "3", "za", "zb", "zbig", "WEIGHTS", "1", "2", "3", "WITHSCORES"),
        ("ZUNION", "2", "za", "zb", "AGGREGATE", "MIN", "WITHSCORES"),
        ("ZUNION", "2", "za", "zb", "AGGREGATE", "MAX", "WITHSCORES"),
        ("ZUNION", "2", "za", "zb", "WEIGHTS", "0", "1", "WITHSCORES"),
        ("ZINTER", "2", "za", "zb", "WITHSCORES"),
        ("ZINTER", "3", "za", "zb", "zbig"), ("ZINTER", "2", "za", "zbig", "WITHSCORES"),
        ("ZINTER", "2", "za", "absent"), ("ZINTER", "2", "zbig", "za", "WITHSCORES"),
        ("ZUNION", "3", "za", "zb", "sa", "WEIGHTS", "1", "2", "3", "WITHSCORES"),
        ("ZINTER", "2", "za", "sa", "WITHSCORES"), ("ZDIFF", "2", "za", "sa", "WITHSCORES"),
        ("ZUNION", "2", "si", "sa", "WITHSCORES"), ("ZINTERSTORE", "dsi", "2", "si", "zbig"),
        ("ZRANGE", "dsi", "0", "-1", "WITHSCORES"), ("ZINTERCARD", "2", "sa", "za"),
        ("ZINTERCARD", "2", "za", "zb"), ("ZINTERCARD", "2", "za", "zb", "LIMIT", "1"),
        ("ZINTERCARD", "2", "za", "zb", "LIMIT", "-1"), ("ZINTERCARD", "0", "za"),
        ("ZINTERCARD", "2", "za", "zb", "WITHSCORES"),
        ("ZDIFF", "2", "za", "zb", "WITHSCORES"), ("ZDIFF", "2", "zbig", "za"),
        ("ZDIFF", "2", "absent", "za"), ("ZDIFF", "1", "za", "WEIGHTS", "2"),
        ("ZUNION", "0", "za"), ("ZUNION", "-1", "za"), ("ZUNION", "3", "za", "zb"),
        ("ZUNION", "x", "za"), ("ZUNION", "2", "za", "zb", "WEIGHTS", "1"),
        ("ZUNION", "2", "za", "zb", "WEIGHTS", "1", "x"),
        ("ZUNION", "2", "za", "zb", "AGGREGATE", "avg"),
        ("ZUNION", "2", "za", "zb", "AGGREGATE"),
        ("ZUNION", "2", "za", "zbig"),
        ("ZUNIONSTORE", "dst", "2", "za", "zb"), ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("OBJECT", "ENCODING", "dst"),
        ("ZUNIONSTORE", "dst", "2", "za", "zb", "WITHSCORES"),
        ("ZINTERSTORE", "dst", "2", "za", "zb", "WEIGHTS", "2", "0.5", "AGGREGATE", "max"),
        ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZINTERSTORE", "dst", "2", "za", "absent"), ("EXISTS", "dst"),
        ("ZDIFFSTORE", "dst", "2", "za", "zb"), ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZUNIONSTORE", "za", "2", "za", "zbig"), ("ZCARD", "za"), ("OBJECT", "ENCODING", "za"),
        ("ZRANGESTORE", "dst", "zbig", "10", "20"), ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "dst", "zbig", "(15", "+inf", "BYSCORE", "REV", "LIMIT", "0", "3"),
        ("ZRANGE", "dst", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "dst", "zbig", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "dst", "zbig", "5", "1"), ("EXISTS", "dst"),
        ("ZRANGESTORE", "dst", "absent", "0", "-1"),
        ("ZRANGESTORE", "dst", "zbig", "0", "-1"), ("OBJECT", "ENCODING", "dst"),
    ]:
        add(cmd)
    # ZRANDMEMBER's deterministic corners and ZSCAN of a small set.
    for cmd in [
        ("ZRANDMEMBER", "absent"), ("ZRANDMEMBER", "absent", "5"), ("ZRANDMEMBER", "zb", "0"),
        ("ZRANDMEMBER", "zb", "-9223372036854775808"),
        ("ZRANDMEMBER", "zb", "9223372036854775807", "WITHSCORES"),
        ("ZRANDMEMBER", "zb", "1", "x"), ("ZRANDMEMBER", "zb", "x"),
        ("ZADD", "sc", "1e17", "big", "1.5", "frac", "-0", "nz", "inf", "inf", "3", "int"),
        ("ZSCAN", "sc", "0"), ("ZSCAN", "sc", "0", "MATCH", "*i*"), ("ZSCAN", "sc", "0", "COUNT", "0"),
        ("ZSCAN", "sc", "x"), ("ZSCAN", "absent", "0"), ("ZSCAN", "absent", "0", "COUNT", "0"),
        ("ZRANGE", "sc", "0", "-1", "WITHSCORES"),
    ]:
        add(cmd)
    # WRONGTYPE everywhere.
    add(("SET", "str", "x"))
    for cmd in [
        ("ZADD", "str", "1", "a"), ("ZINCRBY", "str", "1", "a"), ("ZREM", "str", "a"),
        ("ZCARD", "str"), ("ZSCORE", "str", "a"), ("ZMSCORE", "str", "a"), ("ZRANK", "str", "a"),
        ("ZREVRANK", "str", "a"), ("ZCOUNT", "str", "0", "1"), ("ZLEXCOUNT", "str", "-", "+"),
        ("ZRANGE", "str", "0", "1"), ("ZRANGEBYSCORE", "str", "0", "1"),
        ("ZRANGEBYLEX", "str", "-", "+"), ("ZREMRANGEBYRANK", "str", "0", "1"),
        ("ZREMRANGEBYSCORE", "str", "0", "1"), ("ZREMRANGEBYLEX", "str", "-", "+"),
        ("ZPOPMIN", "str"), ("ZPOPMAX", "str", "2"), ("ZMPOP", "1", "str", "MIN"),
        ("ZRANDMEMBER", "str"), ("ZRANDMEMBER", "str", "2"), ("ZSCAN", "str", "0"),
        ("ZUNION", "2", "zb", "str"), ("ZINTER", "2", "str", "zb"), ("ZDIFF", "1", "str"),
        ("ZUNIONSTORE", "dst", "1", "str"), ("ZINTERCARD", "1", "str"),
        ("ZRANGESTORE", "dst", "str", "0", "1"),
        ("ZUNION", "2", "zb", "str", "bogus"), ("ZADD", "str", "x", "a"),
        ("ZRANGE", "zb", "0", "-1"), ("ZUNIONSTORE", "str", "1", "zb"), ("TYPE", "str"),
    ]:
        add(cmd)
    add(("ZRANGE", "z", "0", "-1", "WITHSCORES"))
    add(("ZRANGE", "big", "0", "-1", "WITHSCORES"))
    return s


def run_pair(a, b, commands, what):
    bad = []
    for cmd in commands:
        ra, rb = a.call(*cmd), b.call(*cmd)
        if ra.raw != rb.raw:
            bad.append(f"{what}: {cmd[:8]}\n  oracle: {ra.raw[:300]!r}\n  blinkdb: {rb.raw[:300]!r}")
    assert not bad, "\n".join(bad[:20]) + f"\n({len(bad)} mismatches)"


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_oracle(blinkdb, oracle, proto):
    with blinkdb.connect() as b, oracle.connect() as a:
        if proto == 3:
            assert not a.call("HELLO", "3").is_error()
            assert not b.call("HELLO", "3").is_error()
        run_pair(a, b, script(), f"RESP{proto}")


def test_small_encoding_limits(blinkdb, oracle):
    """Conversion at zset-max-listpack-entries/value, and *STORE picking the
    encoding of its result."""
    with blinkdb.connect() as b, oracle.connect() as a:
        cmds = [
            ("CONFIG", "SET", "zset-max-listpack-entries", "4"),
            ("CONFIG", "SET", "zset-max-listpack-value", "8"),
            zadd_many("k", 4), ("OBJECT", "ENCODING", "k"),
            ("ZADD", "k", "9", "m9"), ("OBJECT", "ENCODING", "k"),
            ("ZREM", "k", "m9", "m1"), ("OBJECT", "ENCODING", "k"),
            ("ZADD", "l", "1", "123456789"), ("OBJECT", "ENCODING", "l"),
            ("ZRANGESTORE", "d", "k", "0", "1"), ("OBJECT", "ENCODING", "d"),
            ("ZUNIONSTORE", "d", "2", "k", "l"), ("OBJECT", "ENCODING", "d"),
            ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
            ("CONFIG", "SET", "zset-max-listpack-entries", "0"),
            ("ZADD", "e", "1", "a"), ("OBJECT", "ENCODING", "e"),
        ]
        run_pair(a, b, cmds, "limits")


def test_keyspace_events_match(blinkdb, oracle):
    def events(srv):
        with srv.connect() as c, srv.connect() as sub:
            c.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
            sub.call("PSUBSCRIBE", "__keyevent@*__:*")
            c.call("SET", "str", "x")
            for cmd in EVENT_SCRIPT:
                c.call(*cmd)
            c.call("SET", "end", "1")
            seen = []
            while True:
                reply = sub.read_reply()
                _, _, channel, key = plain((reply.kind, reply.value))
                seen.append((channel, key))
                if key == b"end":
                    return seen

    assert events(oracle) == events(blinkdb)


EVENT_SCRIPT = [
    ("ZADD", "e", "1", "a", "2", "b", "3", "c", "4", "d"), ("ZADD", "e", "1", "a"),
    ("ZADD", "e", "GT", "0", "a"), ("ZINCRBY", "e", "1", "a"),
    ("ZADD", "e", "INCR", "1", "a"), ("ZREM", "e", "zz"), ("ZREM", "e", "a"),
    ("ZREMRANGEBYRANK", "e", "0", "0"), ("ZADD", "e", "5", "x", "6", "y"),
    ("ZREMRANGEBYSCORE", "e", "5", "5"), ("ZREMRANGEBYLEX", "e", "[y", "[y"),
    ("ZPOPMIN", "e"), ("ZPOPMAX", "e", "5"), ("ZADD", "f", "1", "a"),
    ("ZUNIONSTORE", "g", "1", "f"), ("ZINTERSTORE", "g", "2", "f", "nope"),
    ("ZDIFFSTORE", "g", "1", "f"), ("ZRANGESTORE", "h", "f", "0", "-1"),
    ("ZRANGESTORE", "h", "f", "5", "6"), ("ZMPOP", "1", "f", "MIN"),
    ("ZADD", "str", "1", "a"), ("ZADD", "x", "1", "a"), ("ZREMRANGEBYRANK", "x", "0", "-1"),
]


@pytest.mark.parametrize("proto", [2, 3])
def test_random_replies_have_the_right_shape(blinkdb, proto):
    with blinkdb.connect() as c:
        if proto == 3:
            c.call("HELLO", "3")
        for key, n in [("small", 10), ("large", 500)]:
            c.call(*zadd_many(key, n))
            scores = {f"m{i}".encode(): i for i in range(n)}
            one = c.call("ZRANDMEMBER", key).value
            assert one in scores
            for count in [3, n, n + 5]:
                got = plain((b"*", c.call("ZRANDMEMBER", key, str(count)).value))
                assert len(got) == min(count, n) and len(set(got)) == len(got)
                assert set(got) <= set(scores)
            got = plain((b"*", c.call("ZRANDMEMBER", key, "-20").value))
            assert len(got) == 20 and set(got) <= set(scores)
            got = plain((b"*", c.call("ZRANDMEMBER", key, "5", "WITHSCORES").value))
            pairs = got if proto == 3 else [got[i:i + 2] for i in range(0, len(got), 2)]
            assert len(pairs) == 5
            for m, s in pairs:
                assert float(s) == scores[m]
            # A full ZSCAN returns every member once with its score.
            seen, cursor = {}, b"0"
            while True:
                cur, items = plain((b"*", c.call("ZSCAN", key, cursor, "COUNT", "7").value))
                for i in range(0, len(items), 2):
                    seen[items[i]] = float(items[i + 1])
                cursor = cur
                if cursor == b"0":
                    break
            assert seen == scores


def zset_snapshot(conn):
    keys = sorted(k for _, k in conn.call("KEYS", "*").value)
    return {k: conn.call("ZRANGE", k, "0", "-1", "WITHSCORES").raw for k in keys}


def zset_workload(conn, rng):
    cmds = []
    for i in range(40):
        key = f"z{i % 7}"
        n = rng.choice([3, 50, 300])
        args = ["ZADD", key]
        for _ in range(n):
            args += [repr(rng.uniform(-100, 100)) if rng.random() < 0.9 else "inf",
                     f"m:{rng.randrange(1000)}"]
        cmds.append(args)
        cmds.append(("ZINCRBY", key, "1.25", f"m:{rng.randrange(1000)}"))
        cmds.append(("ZREM", key, *[f"m:{rng.randrange(1000)}" for _ in range(20)]))
        cmds.append(("ZREMRANGEBYSCORE", key, "(10", "20"))
        cmds.append(("ZPOPMIN", key, "2"))
        cmds.append(("ZMPOP", "1", key, "MAX", "COUNT", "2"))
    cmds += [
        ("ZUNIONSTORE", "u", "3", "z0", "z1", "z2", "WEIGHTS", "1", "2", "0.5"),
        ("ZINTERSTORE", "i", "2", "z0", "z1", "AGGREGATE", "MAX"),
        ("ZDIFFSTORE", "d", "2", "z3", "z4"),
        ("ZRANGESTORE", "r", "z5", "(0", "50", "BYSCORE"),
        ("ZADD", "neg", "-0", "a", "1e-300", "b", "123456789012345678", "c"),
        ("ZADD", "gone", "1", "a"), ("ZPOPMIN", "gone"),
    ]
    for reply in conn.pipeline(cmds):
        assert not reply.is_error(), reply.raw


def test_persistence_restart_rewrite_and_redis_loads(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    rng = random.Random(5)
    expected = blinkdb_snapshot(blinkdb_binary, directory, zset_snapshot,
                                lambda conn: zset_workload(conn, rng))
    assert len(expected) > 8
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            assert zset_snapshot(conn) == expected, "after a restart"
            bgrewriteaof(conn)
            assert wait_rewrite_done(conn)["aof_last_bgrewrite_status"] == "ok"
            conn.call("ZADD", "after", "1", "x")
            expected = zset_snapshot(conn)
    finally:
        srv.stop()
    assert blinkdb_snapshot(blinkdb_binary, directory, zset_snapshot) == expected, \
        "after BGREWRITEAOF and a restart"
    check_aof(directory)
    assert redis_snapshot_of_aof(directory, str(tmp_path / "redis-copy"), zset_snapshot) == \
        expected, "redis-server loading BlinkDB's AOF"


def test_redis_aof_replays_to_the_same_sets(blinkdb_binary, tmp_path):
    """The incr AOF written by BlinkDB replays in redis-server to what a
    redis-server given the same commands holds (ZPOPMIN/ZMPOP/ZINCRBY are
    logged as Redis propagates them)."""
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory)
    rng = random.Random(9)
    try:
        with srv.connect() as conn:
            zset_workload(conn, rng)
            expected = zset_snapshot(conn)
    finally:
        srv.stop()
    odir = str(tmp_path / "oracle")
    oracle = redis_server(odir, odir + "-log")
    try:
        with oracle.connect() as conn:
            zset_workload(conn, random.Random(9))
            assert zset_snapshot(conn) == expected, "redis-server given the same commands"
    finally:
        oracle.stop()
