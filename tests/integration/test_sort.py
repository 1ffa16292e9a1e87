"""SORT and SORT_RO against the oracle: scripted commands over lists, sets and
sorted sets (BY weights, hash fields and nosort, GET, LIMIT, ASC|DESC,
ALPHA, STORE, bad weights and bad input) must get the same reply bytes from
BlinkDB and redis-server 7 in RESP2 and RESP3; keyspace events match; SORT
STORE reaches the AOF as Redis propagates it, and redis-server 7 loads the
AOF to the same lists."""

import os
import random

import pytest

from aof_helpers import blinkdb_snapshot, redis_snapshot_of_aof, redis_snapshot_of_run
from resp import plain
from test_persistence_redis_interop import check_aof


def setup():
    s = []
    add = s.append
    add(("RPUSH", "l", "3", "1", "2", "10", "-1.5", "2", "1e3"))
    add(("RPUSH", "words", "banana", "Apple", "cherry", "apple", "b\x00z", "b", "10", "9"))
    add(("SADD", "s", "5", "3", "9", "1", "7"))
    add(("SADD", "sw", "pear", "fig", "kiwi", "date"))
    add(("ZADD", "z", "1", "c", "2", "a", "3", "b", "3", "d", "-1", "e"))
    add(("ZADD", "zn", "10", "3", "20", "1", "30", "2"))
    for i, w in [(1, "30"), (2, "10"), (3, "20"), (10, "5"), (-1.5, "5"), (1e3, "x")]:
        add(("SET", f"w_{i}", w))
    for i in ["1", "2", "3", "10"]:
        add(("SET", f"num_{i}", str(int(i) * 7)))
    for x in ["a", "b", "c", "d", "e"]:
        add(("HSET", f"h_{x}", "f", {"a": "2", "b": "1", "c": "3", "d": "1", "e": "0"}[x],
             "name", f"N{x}"))
    for x in ["banana", "Apple", "cherry", "apple", "b", "10", "9"]:
        add(("SET", f"a_{x}", x[::-1]))
    add(("HSET", "h_3", "f", "9"))
    add(("SET", "str", "x"))
    add(("RPUSH", "ties", "x", "y", "z", "w"))
    add(("MSET", "t_x", "b", "t_y", "a", "t_z", "b", "t_w", "a"))
    add(("RPUSH", "many", *[f"e{i}" for i in range(100)]))
    add(("MSET", *[x for i in range(100) for x in (f"mt_e{i}", str(i % 4))]))
    return s


def script():
    s = setup()
    add = s.append
    for cmd in [
        ("SORT", "l"), ("SORT", "l", "DESC"), ("SORT", "l", "ASC", "DESC", "ASC"),
        ("SORT", "l", "LIMIT", "1", "3"), ("SORT", "l", "LIMIT", "-5", "2"),
        ("SORT", "l", "LIMIT", "5", "100"), ("SORT", "l", "LIMIT", "100", "1"),
        ("SORT", "l", "LIMIT", "0", "0"), ("SORT", "l", "LIMIT", "2", "-1"),
        ("SORT", "l", "LIMIT", "-9223372036854775808", "9223372036854775807"),
        ("SORT", "l", "LIMIT", "1"), ("SORT", "l", "LIMIT", "a", "1"),
        ("SORT", "l", "LIMIT", "1", "99999999999999999999"),
        ("SORT", "l", "ALPHA"), ("SORT", "l", "ALPHA", "DESC", "LIMIT", "1", "2"),
        ("SORT", "l", "BY", "w_*"), ("SORT", "l", "BY", "w_*", "DESC"),
        ("SORT", "l", "BY", "w_*", "LIMIT", "1", "2"),
        ("SORT", "l", "BY", "w_*", "ALPHA"), ("SORT", "l", "BY", "w_*", "ALPHA", "DESC"),
        ("SORT", "l", "BY", "nosort"), ("SORT", "l", "BY", "nosort", "DESC"),
        ("SORT", "l", "BY", "nosort", "LIMIT", "1", "3"),
        ("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "2", "3"),
        ("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "20", "3"),
        ("SORT", "l", "BY", "nosort", "BY", "w_*"),
        ("SORT", "l", "GET", "#"), ("SORT", "l", "GET", "num_*", "GET", "#", "GET", "nope"),
        ("SORT", "l", "GET", "num_*->f"), ("SORT", "l", "GET", "h_*->f"),
        ("SORT", "l", "GET", "num_*->"), ("SORT", "l", "BY", "nosort", "GET", "w_*"),
        ("SORT", "l", "BY", "num_*", "GET", "#", "GET", "w_*"),
        ("SORT", "words", "ALPHA"), ("SORT", "words", "ALPHA", "DESC"),
        ("SORT", "words"), ("SORT", "words", "BY", "a_*", "ALPHA"),
        ("SORT", "words", "BY", "a_*"), ("SORT", "words", "BY", "nosort", "LIMIT", "1", "2"),
        ("SORT", "words", "ALPHA", "GET", "a_*"),
        ("SORT", "s"), ("SORT", "s", "DESC", "LIMIT", "1", "2"), ("SORT", "s", "ALPHA"),
        ("SORT", "s", "BY", "num_*"), ("SORT", "sw", "ALPHA"), ("SORT", "sw"),
        ("SORT", "z"), ("SORT", "z", "ALPHA"), ("SORT", "z", "BY", "nosort"),
        ("SORT", "z", "BY", "nosort", "DESC"), ("SORT", "z", "BY", "nosort", "LIMIT", "1", "3"),
        ("SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "3"),
        ("SORT", "z", "BY", "nosort", "DESC", "LIMIT", "9", "3"),
        ("SORT", "z", "BY", "h_*->f"), ("SORT", "z", "BY", "h_*->f", "DESC"),
        ("SORT", "z", "BY", "h_*->f", "GET", "h_*->name", "GET", "#"),
        ("SORT", "zn"), ("SORT", "zn", "BY", "nosort", "GET", "num_*"),
        ("SORT", "ties", "BY", "t_*", "ALPHA"), ("SORT", "ties", "BY", "t_*", "ALPHA", "DESC"),
        ("SORT", "ties", "BY", "missing_*", "ALPHA"), ("SORT", "ties", "BY", "t_*"),
        ("SORT", "many", "BY", "mt_*", "ALPHA"), ("SORT", "many", "BY", "mt_*", "ALPHA", "DESC"),
        ("SORT", "many", "BY", "mt_*", "ALPHA", "LIMIT", "0", "10"),
        ("SORT", "many", "BY", "mt_*", "ALPHA", "LIMIT", "37", "12", "DESC"),
        ("SORT", "many", "BY", "mt_*", "ALPHA", "LIMIT", "70", "50"),
        ("SORT", "many", "BY", "nope_*", "ALPHA", "LIMIT", "3", "20"),
        ("SORT", "many", "BY", "mt_*", "LIMIT", "5", "30"),
        ("SORT", "absent"), ("SORT", "absent", "BY", "nosort", "LIMIT", "0", "5"),
        ("SORT", "str"), ("SORT", "str", "BOGUS"), ("SORT", "l", "BOGUS"),
        ("SORT", "l", "BY"), ("SORT", "l", "GET"), ("SORT", "l", "STORE"),
        ("SORT", "words"), ("SORT", "l", "BY", "a_*"),
        ("SORT_RO", "l"), ("SORT_RO", "l", "BY", "w_*", "GET", "#", "GET", "w_*"),
        ("SORT_RO", "l", "STORE", "d"), ("SORT_RO", "s", "BY", "nosort", "GET", "nope"),
        # STORE.
        ("SORT", "l", "STORE", "d1"), ("LRANGE", "d1", "0", "-1"),
        ("SORT", "l", "BY", "w_*", "GET", "num_*", "GET", "#", "STORE", "d2"),
        ("LRANGE", "d2", "0", "-1"),
        ("SORT", "s", "BY", "nosort", "STORE", "d3"), ("LRANGE", "d3", "0", "-1"),
        ("SORT", "sw", "BY", "nosort", "STORE", "d4", "DESC"), ("LRANGE", "d4", "0", "-1"),
        ("SORT", "words", "ALPHA", "STORE", "d5"), ("LRANGE", "d5", "0", "-1"),
        ("SORT", "ties", "BY", "t_*", "ALPHA", "STORE", "d6"), ("LRANGE", "d6", "0", "-1"),
        ("SORT", "absent", "STORE", "d1"), ("EXISTS", "d1"),
        ("SORT", "absent", "STORE", "d1"), ("SORT", "l", "LIMIT", "0", "0", "STORE", "d2"),
        ("EXISTS", "d2"), ("SORT", "l", "STORE", "str"), ("TYPE", "str"),
        ("SORT", "l", "STORE", "a", "STORE", "b"), ("EXISTS", "a", "b"),
        ("SORT", "words", "STORE", "d7"), ("EXISTS", "d7"),
        ("SORT", "z", "STORE", "d8"), ("LRANGE", "d8", "0", "-1"),
        ("SORT", "z", "BY", "nosort", "STORE", "d9"), ("LRANGE", "d9", "0", "-1"),
        ("OBJECT", "ENCODING", "d9"),
        ("ZADD", "small", "1", "a"), ("OBJECT", "ENCODING", "small"),
        ("SORT_RO", "small", "ALPHA"), ("OBJECT", "ENCODING", "small"),
        ("ZADD", "small2", "1", "a"), ("SORT", "small2", "BOGUS"),
        ("OBJECT", "ENCODING", "small2"),
    ]:
        add(cmd)
    return s


def run_pair(a, b, commands, what):
    bad = []
    for cmd in commands:
        ra, rb = a.call(*cmd), b.call(*cmd)
        if ra.raw != rb.raw:
            bad.append(f"{what}: {cmd[:12]}\n  oracle: {ra.raw[:400]!r}\n  blinkdb: {rb.raw[:400]!r}")
    assert not bad, "\n".join(bad[:20]) + f"\n({len(bad)} mismatches)"


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_oracle(blinkdb, oracle, proto):
    with blinkdb.connect() as b, oracle.connect() as a:
        if proto == 3:
            assert not a.call("HELLO", "3").is_error()
            assert not b.call("HELLO", "3").is_error()
        run_pair(a, b, script(), f"RESP{proto}")


def test_random_sorts_match_oracle(blinkdb, oracle):
    rng = random.Random(int(os.environ.get("BLINKDB_SORT_SEED", "3")))
    with blinkdb.connect() as b, oracle.connect() as a:
        cmds = [("RPUSH", "rl", *[str(rng.randrange(-50, 50)) for _ in range(300)]),
                ("SADD", "rs", *[str(rng.randrange(1000)) for _ in range(300)]),
                ("ZADD", "rz", *[x for i in range(300) for x in (str(rng.randrange(20)), f"m{i}")])]
        for i in range(-50, 50):
            cmds.append(("SET", f"rw_{i}", str(rng.randrange(10))))
        for i in range(1000):
            cmds.append(("HSET", f"rh_{i}", "f", str(rng.random())))
        for i in range(300):
            cmds.append(("SET", f"rw_m{i}", str(rng.randrange(5))))
        run_pair(a, b, cmds, "setup")
        sorts = []
        for _ in range(200):
            key = rng.choice(["rl", "rs", "rz"])
            opts = []
            if rng.random() < 0.5:
                opts += ["BY", rng.choice(["rw_*", "rh_*->f", "nosort"])]
            if rng.random() < 0.5:
                opts += ["LIMIT", str(rng.randrange(-2, 40)), str(rng.randrange(-2, 40))]
            if rng.random() < 0.3:
                opts.append("DESC")
            if rng.random() < 0.2:
                opts.append("ALPHA")
            if rng.random() < 0.4:
                opts += ["GET", rng.choice(["#", "rw_*", "rh_*->f"])]
            if key == "rs" and "nosort" in opts:
                continue  # a set's own order is its hash table's
            if "ALPHA" in opts and "BY" in opts and "nosort" not in opts:
                continue  # ties in the weights keep the load order (the set's)
            sorts.append(("SORT", key, *opts))
        run_pair(a, b, sorts, "random")


def test_keyspace_events_match(blinkdb, oracle):
    def events(srv):
        with srv.connect() as c, srv.connect() as sub:
            c.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
            c.call("RPUSH", "l", "2", "1")
            sub.call("PSUBSCRIBE", "__keyevent@*__:*")
            for cmd in [("SORT", "l"), ("SORT", "l", "STORE", "d"), ("SORT", "nope", "STORE", "d"),
                        ("SORT", "nope", "STORE", "d"), ("SORT", "l", "BY", "w_*", "STORE", "e")]:
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


def test_getkeys_match_oracle(blinkdb, oracle):
    with blinkdb.connect() as b, oracle.connect() as a:
        run_pair(a, b, [
            ("COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "STORE", "d"),
            ("COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "LIMIT", "0", "1", "GET", "store",
             "STORE", "a", "STORE", "b"),
            ("COMMAND", "GETKEYS", "SORT", "k", "BY", "STORE", "x"),
            ("COMMAND", "GETKEYS", "SORT_RO", "k", "GET", "#"),
            ("COMMAND", "GETKEYS", "GEORADIUS", "k", "0", "0", "1", "km", "STORE", "d"),
            ("COMMAND", "GETKEYS", "GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m"),
            ("COMMAND", "INFO", "sort", "sort_ro", "geoadd", "georadius", "geosearchstore"),
        ], "getkeys")


def workload(conn):
    cmds = setup() + [
        ("SORT", "l", "STORE", "d1"),
        ("SORT", "l", "BY", "w_*", "GET", "num_*", "GET", "#", "STORE", "d2"),
        ("SORT", "s", "BY", "nosort", "STORE", "d3"),
        ("SORT", "z", "BY", "h_*->f", "DESC", "LIMIT", "1", "3", "STORE", "d4"),
        ("SORT", "absent", "STORE", "d4"),
        ("SORT", "words", "ALPHA", "STORE", "str"),
    ]
    for reply in conn.pipeline(cmds):
        assert not reply.is_error(), reply.raw


def snapshot(conn):
    keys = sorted(k for _, k in conn.call("KEYS", "d*").value) + [b"str"]
    return {k: conn.call("LRANGE", k, "0", "-1").raw for k in keys}


def test_persistence_and_redis_loads_the_aof(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    expected = blinkdb_snapshot(blinkdb_binary, directory, snapshot, workload)
    assert set(expected) == {b"d1", b"d2", b"d3", b"str"}
    assert blinkdb_snapshot(blinkdb_binary, directory, snapshot) == expected, "after a restart"
    check_aof(directory)
    assert redis_snapshot_of_aof(directory, str(tmp_path / "redis-copy"), snapshot) == expected, \
        "redis-server loading BlinkDB's AOF"
    assert redis_snapshot_of_run(str(tmp_path / "oracle"), workload, snapshot) == expected, \
        "redis-server given the same commands"
