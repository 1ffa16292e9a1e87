"""Blocking pops (issue 20): BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN, BZPOPMAX
and BZMPOP, against redis-server 7: replies when served at once, when served by another
connection's push and on timeout (RESP2 and RESP3), first-blocked-first-served order, chains
through BLMOVE, CLIENT UNBLOCK, MULTI and scripts never blocking, the AOF recording the pop
(never the blocking command), clients that go away while blocked, and many waiters."""

import time

from aof_helpers import aof_path, parse_commands, start_aof_server
from test_persistence_redis_interop import check_aof


def raw(conn, *args):
    return conn.call(*args).raw


def blocked_clients(conn):
    info = conn.call("INFO", "clients").value.decode()
    return int(info.split("blocked_clients:")[1].split("\r\n")[0])


def wait_blocked(conn, n, timeout=5.0):
    deadline = time.time() + timeout
    while blocked_clients(conn) != n:
        assert time.time() < deadline, f"blocked_clients never reached {n}"
        time.sleep(0.01)


# Served at once (data is there), errors and argument checks.
IMMEDIATE = [
    ("RPUSH", "l", "a", "b", "c", "d"), ("BLPOP", "nokey", "l", "0"), ("BRPOP", "l", "1"),
    ("BLMPOP", "0", "2", "nokey", "l", "LEFT", "COUNT", "5"), ("RPUSH", "l", "x", "y"),
    ("BLMOVE", "l", "m", "RIGHT", "LEFT", "0"), ("BRPOPLPUSH", "l", "m", "0"),
    ("LRANGE", "m", "0", "-1"),
    ("ZADD", "z", "1", "a", "2", "b", "3", "c"), ("BZPOPMIN", "z", "0"), ("BZPOPMAX", "nokey", "z", "0"),
    ("BZMPOP", "0", "1", "z", "MIN", "COUNT", "9"), ("ZADD", "z", "1.5", "q"),
    ("BZMPOP", "0", "1", "z", "MAX"),
    ("BLPOP", "l", "-1"), ("BLPOP", "l", "abc"), ("BLPOP", "l", "1e3x"), ("BLPOP", "l", " 1"),
    ("BLPOP", "l", "nan"), ("BLPOP", "l", "inf"), ("BLPOP", "l", "-inf"), ("BLPOP", "l", "1e30"),
    ("BLMPOP", "0", "0", "l", "LEFT"), ("BLMPOP", "0", "1", "l", "UP"),
    ("BLMPOP", "0", "1", "l", "LEFT", "COUNT", "0"), ("BLMPOP", "0", "5", "l", "LEFT"),
    ("BLMPOP", "-1", "1", "l", "LEFT"), ("BLMPOP", "x", "1", "l", "LEFT"),
    ("BZMPOP", "0", "1", "z", "LEFT"), ("BLMOVE", "l", "m", "UP", "LEFT", "0"),
    ("BLMOVE", "l", "m", "LEFT", "LEFT", "-2"),
    ("SET", "s", "v"), ("BLPOP", "nokey", "s", "0"), ("BZPOPMIN", "s", "0"),
    ("BLMOVE", "s", "m", "LEFT", "LEFT", "0"), ("RPUSH", "l", "e"),
    ("BLMOVE", "l", "s", "LEFT", "LEFT", "0"), ("LRANGE", "l", "0", "-1"),
    ("BLMPOP", "0", "2", "nokey", "s", "LEFT"),
    ("MULTI",), ("BLPOP", "empty", "0"), ("BLMOVE", "empty", "m", "LEFT", "LEFT", "0"),
    ("BZPOPMIN", "empty", "0"), ("BLMPOP", "0", "1", "empty", "LEFT"),
    ("BZMPOP", "0", "1", "empty", "MIN"), ("BRPOPLPUSH", "empty", "m", "0"), ("EXEC",),
    ("EVAL", "return redis.call('BLMPOP', 0, 1, 'empty', 'LEFT')", "0"),
    ("EVAL", "return redis.call('BZMPOP', 0, 1, 'empty', 'MIN')", "0"),
    ("EVAL", "return redis.pcall('BLPOP', 'empty', 0)", "0"),
    ("CLIENT", "UNBLOCK", "999999"), ("CLIENT", "UNBLOCK", "x"),
    ("CLIENT", "UNBLOCK", "1", "MAYBE"),
]


def test_immediate_replies_match_redis(blinkdb, oracle):
    for proto in ("2", "3"):
        got = []
        for srv in (blinkdb, oracle):
            with srv.connect() as c:
                c.call("FLUSHALL")
                c.call("HELLO", proto)
                got.append([(cmd, raw(c, *cmd)) for cmd in IMMEDIATE])
        for (cmd, ours), (_, theirs) in zip(*got):
            assert ours == theirs, f"RESP{proto} {cmd}: {ours!r} != redis {theirs!r}"


# (blocking command, what another connection then runs): the blocked client's reply must be
# the one redis-server gives.
SERVED = [
    (("BLPOP", "k1", "k2", "0"), [("RPUSH", "k2", "a", "b")]),
    (("BRPOP", "k1", "k2", "0"), [("RPUSH", "k1", "a", "b")]),
    (("BLMPOP", "0", "2", "k1", "k2", "RIGHT", "COUNT", "3"), [("RPUSH", "k2", "a", "b")]),
    (("BLMOVE", "k1", "d", "RIGHT", "LEFT", "0"), [("RPUSH", "k1", "a", "b")]),
    (("BRPOPLPUSH", "k1", "d", "0"), [("RPUSH", "k1", "a", "b")]),
    (("BZPOPMIN", "z1", "z2", "0"), [("ZADD", "z2", "2", "b", "1.5", "a")]),
    (("BZPOPMAX", "z1", "0"), [("ZADD", "z1", "2", "b", "1.5", "a")]),
    (("BZMPOP", "0", "1", "z1", "MAX", "COUNT", "5"), [("ZADD", "z1", "2", "b", "1.5", "a")]),
    # Created then deleted in one transaction: not served, then served by the next push.
    (("BLPOP", "k1", "0"), [("MULTI",), ("RPUSH", "k1", "x"), ("DEL", "k1"), ("EXEC",),
                            ("LPUSH", "k1", "y")]),
    # Moved into place by RENAME.
    (("BLPOP", "k1", "0"), [("RPUSH", "src", "p", "q"), ("RENAME", "src", "k1")]),
    # A destination of another type ends the wait with WRONGTYPE and takes nothing.
    (("BLMOVE", "k1", "str", "LEFT", "LEFT", "0"), [("SET", "str", "v"), ("RPUSH", "k1", "a")]),
    # A key of another type does not serve; the list that replaces it does.
    (("BLPOP", "k1", "0"), [("SET", "k1", "v"), ("DEL", "k1"), ("RPUSH", "k1", "z")]),
]


def run_served(srv, proto, blocking, then):
    with srv.connect() as c, srv.connect() as waiter:
        c.call("FLUSHALL")
        waiter.call("HELLO", proto)
        waiter.send(*blocking)
        wait_blocked(c, 1)
        for cmd in then:
            c.call(*cmd)
        reply = waiter.read_reply().raw
        wait_blocked(c, 0)
        after = [raw(c, "LRANGE", k, "0", "-1") for k in ("k1", "k2", "d")]
        after += [raw(c, "ZRANGE", k, "0", "-1", "WITHSCORES") for k in ("z1", "z2")]
        return reply, after


def test_served_by_push_matches_redis(blinkdb, oracle):
    for proto in ("2", "3"):
        for blocking, then in SERVED:
            ours = run_served(blinkdb, proto, blocking, then)
            theirs = run_served(oracle, proto, blocking, then)
            assert ours == theirs, f"RESP{proto} {blocking} then {then}: {ours} != redis {theirs}"


def test_timeout_replies_match_redis(blinkdb, oracle):
    cmds = [("BLPOP", "nokey", "0.05"), ("BLMOVE", "nokey", "d", "LEFT", "LEFT", "0.05"),
            ("BZMPOP", "0.05", "1", "nokey", "MIN"), ("BZPOPMAX", "nokey", "0.01")]
    for proto in ("2", "3"):
        for cmd in cmds:
            replies = []
            for srv in (blinkdb, oracle):
                with srv.connect() as c:
                    c.call("HELLO", proto)
                    t0 = time.time()
                    replies.append(raw(c, *cmd))
                    assert time.time() - t0 >= 0.01
            assert replies[0] == replies[1], f"RESP{proto} {cmd}: {replies}"


def test_first_blocked_first_served_and_chains(blinkdb):
    with blinkdb.connect() as c:
        waiters = [blinkdb.connect() for _ in range(4)]
        try:
            for i, w in enumerate(waiters[:3]):
                w.send("BLPOP", "q", "0")
                wait_blocked(c, i + 1)
            # A BLMOVE from q2 into q: served by the push to q2, its push serves the next
            # BLPOP waiting on q, in the same command's wake-up.
            waiters[3].send("BLMOVE", "q2", "q", "LEFT", "RIGHT", "0")
            wait_blocked(c, 4)
            assert c.call("RPUSH", "q", "1", "2").value == 2
            assert c.call("RPUSH", "q2", "3").value == 1
            got = [w.read_reply().value for w in waiters]
            assert got[0] == [(b"$", b"q"), (b"$", b"1")]
            assert got[1] == [(b"$", b"q"), (b"$", b"2")]
            assert got[2] == [(b"$", b"q"), (b"$", b"3")]
            assert got[3] == b"3"
            assert c.call("EXISTS", "q", "q2").value == 0
            assert blocked_clients(c) == 0
        finally:
            for w in waiters:
                w.close()


def test_client_unblock_and_client_list(blinkdb):
    with blinkdb.connect() as c, blinkdb.connect() as w:
        wid = w.call("CLIENT", "ID").value
        w.send("BLPOP", "k", "0")
        wait_blocked(c, 1)
        assert b"flags=b " in c.call("CLIENT", "LIST", "ID", str(wid)).value
        assert c.call("CLIENT", "UNBLOCK", str(wid)).value == 1
        assert w.read_reply().raw == b"*-1\r\n"
        assert c.call("CLIENT", "UNBLOCK", str(wid)).value == 0
        w.send("BZPOPMIN", "z", "0")
        wait_blocked(c, 1)
        assert c.call("CLIENT", "UNBLOCK", str(wid), "ERROR").value == 1
        assert w.read_reply().raw == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
        # WAIT is a blocked client too.
        w.send("WAIT", "1", "0")
        wait_blocked(c, 1)
        assert c.call("CLIENT", "UNBLOCK", str(wid)).value == 1
        assert w.read_reply().raw == b":0\r\n"
        # Commands pipelined behind a blocking one run after it is served.
        w.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nk\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n")
        wait_blocked(c, 1)
        c.call("RPUSH", "k", "v")
        assert w.read_reply().value == [(b"$", b"k"), (b"$", b"v")]
        assert w.read_reply().raw == b"+PONG\r\n"
        assert b"flags=N " in c.call("CLIENT", "LIST", "ID", str(wid)).value


def test_disconnected_waiter_leaves_nothing(blinkdb):
    with blinkdb.connect() as c:
        for _ in range(3):
            w = blinkdb.connect()
            w.send("BLPOP", "gone", "gone2", "0")
            wait_blocked(c, 1)
            w.close()
            wait_blocked(c, 0)
        # The push is not taken by anyone: it stays.
        assert c.call("RPUSH", "gone", "v").value == 1
        assert c.call("LRANGE", "gone", "0", "-1").value == [(b"$", b"v")]


def test_aof_records_the_pop(tmp_path, blinkdb_binary):
    directory = str(tmp_path / "data")
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always")
    try:
        with srv.connect() as c, srv.connect() as w, srv.connect() as w2:
            w.send("BLMPOP", "0", "1", "jobs", "LEFT", "COUNT", "2")
            wait_blocked(c, 1)
            w2.send("BLMOVE", "jobs", "done", "LEFT", "RIGHT", "0")
            wait_blocked(c, 2)
            assert c.call("RPUSH", "jobs", "a", "b", "c", "d").value == 4
            assert w.read_reply().value == [(b"$", b"jobs"), (b"*", [(b"$", b"a"), (b"$", b"b")])]
            assert w2.read_reply().value == b"c"
            w.send("BZPOPMIN", "zq", "0")
            wait_blocked(c, 1)
            c.call("ZADD", "zq", "1", "m")
            w.read_reply()
    finally:
        srv.stop()
    with open(aof_path(directory, "appendonly.aof.1.incr.aof"), "rb") as f:
        cmds = [[a.upper() if i == 0 else a for i, a in enumerate(args)]
                for _, _, args in parse_commands(f.read())]
    names = [args[0] for args in cmds]
    assert not any(n.startswith(b"B") for n in names), names
    assert [b"LPOP", b"jobs", b"2"] in cmds
    assert [b"LMOVE", b"jobs", b"done", b"LEFT", b"RIGHT"] in cmds
    assert [b"ZPOPMIN", b"zq"] in cmds
    check_aof(directory)
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as c:
            assert c.call("LRANGE", "jobs", "0", "-1").value == [(b"$", b"d")]
            assert c.call("LRANGE", "done", "0", "-1").value == [(b"$", b"c")]
            assert c.call("EXISTS", "zq").value == 0
    finally:
        srv.stop()


def test_many_keys_and_many_waiters(blinkdb):
    with blinkdb.connect() as c:
        # One client blocked on 100k keys: registering and waking stay linear.
        keys = [f"many:{i}" for i in range(100_000)]
        with blinkdb.connect() as w:
            w.send("BLPOP", *keys, "0")
            wait_blocked(c, 1, timeout=30)
            c.call("RPUSH", keys[-1], "v")
            assert w.read_reply().value == [(b"$", keys[-1].encode()), (b"$", b"v")]
        wait_blocked(c, 0)
        # 500 clients on one key, then one push of 500 elements: each served once, in order.
        waiters = [blinkdb.connect() for _ in range(500)]
        try:
            for w in waiters:
                w.send("BLPOP", "hot", "0")
            wait_blocked(c, 500, timeout=30)
            c.call("RPUSH", "hot", *[str(i) for i in range(500)])
            got = sorted(int(w.read_reply().value[1][1]) for w in waiters)
            assert got == list(range(500))
            assert c.call("EXISTS", "hot").value == 0
        finally:
            for w in waiters:
                w.close()


def blocked_stats_scenario(srv):
    """Blocked commands served, timed out, unblocked and failing, then what INFO
    commandstats, the slow log and the latency histograms say of them."""
    with srv.connect() as c, srv.connect() as w:
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        c.call("CONFIG", "RESETSTAT")
        c.call("SLOWLOG", "RESET")
        wid = str(w.call("CLIENT", "ID").value)

        def served(blocking, *pushes):
            w.send(*blocking)
            wait_blocked(c, 1)
            for p in pushes:
                c.call(*p)
            return w.read_reply().raw

        replies = [
            served(("BLPOP", "l", "0"), ("RPUSH", "l", "x")),
            raw(w, "BLPOP", "l", "0.01"),                                   # timeout
            served(("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"),
                   ("SET", "dst", "s"), ("RPUSH", "src", "y")),             # served: WRONGTYPE
            served(("BZPOPMIN", "z", "0"), ("ZADD", "z", "1", "m")),
            served(("BLMPOP", "0", "1", "l2", "LEFT", "COUNT", "5"), ("RPUSH", "l2", "p", "q")),
            served(("BLPOP", "l", "0"), ("CLIENT", "UNBLOCK", wid)),
            served(("BLPOP", "l", "0"), ("CLIENT", "UNBLOCK", wid, "ERROR")),
            served(("WAIT", "1", "0"), ("CLIENT", "UNBLOCK", wid)),
            raw(w, "BLPOP", "dst", "0"),                                     # WRONGTYPE at once
            raw(w, "BLPOP", "l"),                                            # rejected
        ]
        info = c.call("INFO", "commandstats").value.decode()
        stats = {}
        for line in info.split("\r\n"):
            if line.startswith("cmdstat_"):
                name, fields = line[len("cmdstat_"):].split(":", 1)
                f = dict(kv.split("=") for kv in fields.split(","))
                if name != "info":  # wait_blocked's polling
                    stats[name] = (f["calls"], f["failed_calls"], f["rejected_calls"])
        entries = reversed(c.call("SLOWLOG", "GET", "-1").value)
        slowlog = [[v for _, v in e[1][3][1]] for e in entries]
        slowlog = [e[:2] if e[:2] == [b"CLIENT", b"UNBLOCK"] else e
                   for e in slowlog if e[:1] != [b"INFO"]]
        lat = c.call("INFO", "latencystats").value.decode()
        histograms = sorted(line.split(":")[0] for line in lat.split("\r\n") if line.startswith("latency_"))
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
        return replies, stats, slowlog, histograms


def test_blocked_command_statistics_match_redis(blinkdb, oracle):
    """Redis 7.0.15 counts a blocked command's call when it blocks, and when a push serves
    it (or CLIENT UNBLOCK ends it, counted failed either way) its time again, its failed
    call, its latency histogram sample and its slow log entry (none for a timeout)."""
    ours, theirs = blocked_stats_scenario(blinkdb), blocked_stats_scenario(oracle)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    assert ours[1]["blpop"] == ("5", "3", "1")
    assert ours[1]["client|unblock"] == ("3", "1", "0")
    assert ours[2] == theirs[2]
    assert ours[3] == theirs[3]
