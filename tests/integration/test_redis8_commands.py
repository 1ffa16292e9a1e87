"""The Redis 7.2-7.4 commands and options clients send (issue 43), reply for reply against
redis-server 8.0.2: ZRANK/ZREVRANK ... WITHSCORE, HSCAN ... NOVALUES, CLIENT KILL ... MAXAGE,
WAITAOF (local fsync and replicas' FACK, a redis-server 8.0.2 replica of BlinkDB counted),
XREAD ... STREAMS key + (also blocking), CLIENT NO-TOUCH; their COMMAND INFO and DOCS are
8.0's."""

import time

import pytest

from peer_servers import start_peer
from test_introspection import py

# ZRANK/ZREVRANK ... WITHSCORE, HSCAN ... NOVALUES (and the error SSCAN/ZSCAN give it).
RANK_AND_SCAN = [
    ("ZADD", "z", 1, "a", "2.5", "b", "inf", "c"),
    ("ZRANK", "z", "b"),
    ("ZRANK", "z", "b", "WITHSCORE"),
    ("ZRANK", "z", "c", "withscore"),
    ("ZREVRANK", "z", "a", "WITHSCORE"),
    ("ZREVRANK", "z", "a"),
    ("ZRANK", "z", "nosuch", "WITHSCORE"),
    ("ZRANK", "z", "nosuch"),
    ("ZRANK", "nokey", "a", "WITHSCORE"),
    ("ZREVRANK", "nokey", "a", "WITHSCORE"),
    ("ZRANK", "z", "a", "WITHSCORES"),
    ("ZRANK", "z", "a", "WITHSCORE", "extra"),
    ("ZREVRANK", "z", "a", "WITHSCORE", "extra"),
    ("SET", "str", "x"),
    ("ZRANK", "str", "a", "WITHSCORE"),
    ("ZRANK", "str", "a", "bad"),
    ("HSET", "h", "f1", "v1", "f2", "v2", "f3", 3),
    ("HSCAN", "h", 0, "NOVALUES"),
    ("HSCAN", "h", 0, "novalues", "COUNT", 100),
    ("HSCAN", "h", 0, "MATCH", "f[12]", "NOVALUES"),
    ("HSCAN", "h", 0),
    ("HSCAN", "nokey", 0, "NOVALUES"),
    ("HSCAN", "h", 0, "NOVALUES", "COUNT"),
    ("SADD", "s", "a", "b"),
    ("SSCAN", "s", 0, "NOVALUES"),
    ("SSCAN", "nokey", 0, "NOVALUES"),
    ("ZSCAN", "z", 0, "NOVALUES"),
    ("ZSCAN", "nokey", 0, "NOVALUES"),
]

CASES = [
    # XREAD ... + : the last entry of each stream.
    ("XADD", "s", "1-1", "a", 1),
    ("XADD", "s", "2-5", "b", 2),
    ("XREAD", "STREAMS", "s", "+"),
    ("XREAD", "COUNT", 5, "STREAMS", "s", "+"),
    ("XADD", "t", "7-0", "c", 3),
    ("XREAD", "STREAMS", "s", "t", "+", "+"),
    ("XREAD", "STREAMS", "s", "nokey", "+", "+"),
    ("XREAD", "STREAMS", "s", "t", "+", "0"),
    ("XREAD", "STREAMS", "nokey", "+"),
    ("XDEL", "s", "2-5"),
    ("XREAD", "STREAMS", "s", "+"),
    ("XADD", "e", "3-0", "x", "y"),
    ("XDEL", "e", "3-0"),
    ("XREAD", "STREAMS", "e", "+"),
    ("XREAD", "BLOCK", 10, "STREAMS", "s", "+"),
    ("XREAD", "BLOCK", 10, "STREAMS", "nokey", "+"),
    # An odd STREAMS list keeps 7.0.15's "Unbalanced XREAD list" text, which 8.0 reworded
    # (test_differential compares it with 7.0.15): not sent here.
    ("XGROUP", "CREATE", "s", "g", "0"),
    # XREADGROUP ... + keeps 7.0.15's "Invalid stream ID" (8.0: "+ ID is meaningless").
    ("SET", "str", "x"),
    ("XREAD", "STREAMS", "str", "+"),
    # CLIENT KILL ... MAXAGE: its errors; nothing here is that old.
    ("CLIENT", "KILL", "MAXAGE", 0),
    ("CLIENT", "KILL", "MAXAGE", -3),
    ("CLIENT", "KILL", "MAXAGE", "x"),
    ("CLIENT", "KILL", "MAXAGE", "99999999999999999999"),
    ("CLIENT", "KILL", "MAXAGE", 100000),
    ("CLIENT", "KILL", "MAXAGE", 100000, "SKIPME", "no", "TYPE", "normal"),
    ("CLIENT", "KILL", "ID", 0, "MAXAGE"),
    ("CLIENT", "KILL", "MAXAGE", 1, "ID"),
    ("CLIENT", "KILL", "MAXAGE"),
    # WAITAOF on a server without an AOF: its errors and immediate answers.
    ("WAITAOF", 2, 0, 0),
    ("WAITAOF", -1, 0, 0),
    ("WAITAOF", "a", 0, 0),
    ("WAITAOF", 0, -1, 0),
    ("WAITAOF", 0, "x", 0),
    ("WAITAOF", 0, 0, -1),
    ("WAITAOF", 0, 0, "x"),
    ("WAITAOF", 0, 0),
    ("WAITAOF", 1, 0, 0),
    ("WAITAOF", 0, 0, 0),
    ("WAITAOF", 0, 1, 20),
    ("MULTI",),
    ("WAITAOF", 0, 1, 0),
    ("EXEC",),
    ("EVAL", "return redis.call('waitaof', 0, 1, 0)", 0),
    # CLIENT NO-TOUCH's syntax.
    ("CLIENT", "NO-TOUCH", "maybe"),
    ("CLIENT", "NO-TOUCH", "on"),
    ("CLIENT", "NO-TOUCH", "OFF"),
]


def wait_for(cond, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def peers(tmp_path):
    started = []
    yield lambda name, *args: start_peer(started, "redis", tmp_path / name, args)
    for srv in started:
        srv.stop()


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_redis8(blinkdb, peers, proto):
    redis8 = peers("redis8")
    with blinkdb.connect() as ours, redis8.connect() as theirs:
        if proto == 3:
            ours.call("HELLO", "3")
            theirs.call("HELLO", "3")
        # (A small hash scans in insertion order on both.)
        for cmd in RANK_AND_SCAN + [("FLUSHALL",)] + CASES:
            a, b = ours.call(*cmd), theirs.call(*cmd)
            assert a.raw == b.raw, (cmd, a.raw, b.raw)


def test_command_entries_are_redis8s(blinkdb, peers):
    redis8 = peers("redis8")
    with blinkdb.connect() as ours, redis8.connect() as theirs:
        hfe = ("hexpire", "hpexpire", "hexpireat", "hpexpireat", "httl", "hpttl",
               "hexpiretime", "hpexpiretime", "hpersist", "hgetex", "hsetex", "hgetdel")
        for name in ("zrank", "zrevrank", "hscan", "waitaof", "client|kill", "client|no-touch",
                     "xread", "xreadgroup") + hfe:
            a = ours.call("COMMAND", "INFO", name).raw
            b = theirs.call("COMMAND", "INFO", name).raw
            assert a == b, (name, a, b)
            da = py(ours.call("COMMAND", "DOCS", name))
            db = py(theirs.call("COMMAND", "DOCS", name))
            fa, fb = dict(zip(da[1][0::2], da[1][1::2])), dict(zip(db[1][0::2], db[1][1::2]))

            # (8.0 gives every argument a display_text, BlinkDB none.)
            def args(d):
                def strip(a):
                    out = []
                    for k, v in zip(a[0::2], a[1::2]):
                        if k == "display_text":
                            continue
                        out += [k, [strip(x) for x in v] if k == "arguments" else v]
                    return out
                return [strip(a) for a in d.get("arguments", [])]

            if name not in ("xread", "xreadgroup"):  # (8.0 renamed arguments; BlinkDB keeps 7.0's)
                assert args(fa) == args(fb), name
            assert fa.get("history") == fb.get("history"), name
            assert fa.get("since") == fb.get("since"), name


def test_client_kill_maxage_kills_only_older_connections(blinkdb, peers):
    redis8 = peers("redis8")
    for srv in (blinkdb, redis8):
        with srv.connect() as old, srv.connect() as admin:
            old_id = old.call("CLIENT", "ID").value

            def age():
                for line in py(admin.call("CLIENT", "LIST", "ID", old_id)).splitlines():
                    return int(line.split(" age=")[1].split(" ")[0])
            wait_for(lambda: age() >= 3, "a connection 3 seconds old")
            with srv.connect() as young:
                young_id = young.call("CLIENT", "ID").value
                # The admin connection is as old but skipped (SKIPME yes).
                assert admin.call("CLIENT", "KILL", "MAXAGE", 3).value == 1, srv
                ids = py(admin.call("CLIENT", "LIST"))
                assert f"id={old_id} " not in ids and f"id={young_id} " in ids, ids
                assert young.call("PING").value == b"PONG"
                assert admin.call("CLIENT", "KILL", "MAXAGE", 3, "ID", young_id).value == 0


def test_xread_plus_blocking_form(blinkdb, peers):
    redis8 = peers("redis8")
    replies = []
    for srv in (blinkdb, redis8):
        with srv.connect() as reader, srv.connect() as writer:
            writer.call("XADD", "full", "5-1", "f", "v")
            # A stream with entries: served at once, its last entry.
            a = reader.call("XREAD", "BLOCK", 0, "STREAMS", "full", "+")
            # An empty one: the first entry added.
            reader.send("XREAD", "BLOCK", 0, "COUNT", 10, "STREAMS", "none", "empty", "+", "+")
            wait_for(lambda: b"blocked_clients:1" in writer.call("INFO", "clients").value,
                     "the reader blocked")
            writer.call("XADD", "none", "9-9", "k", "w")
            replies.append((a.raw, reader.read_reply().raw))
    assert replies[0] == replies[1], replies


def test_waitaof_local_follows_appendfsync(server_factory, peers):
    ours = server_factory("--appendonly", "yes")
    theirs = peers("redis8", "--appendonly", "yes")
    for srv in (ours, theirs):
        with srv.connect() as c, srv.connect() as admin:
            assert py(c.call("WAITAOF", 1, 0, 0)) == [1, 0]  # nothing written yet
            admin.call("CONFIG", "SET", "appendfsync", "always")
            c.call("INCR", "foo")
            assert py(c.call("WAITAOF", 1, 0, 0)) == [1, 0], srv
            # Pipelined: the write's batch is the WAITAOF's.
            replies = c.pipeline([("INCR", "foo"), ("WAITAOF", 1, 0, 0)])
            assert py(replies[1]) == [1, 0], srv
            admin.call("CONFIG", "SET", "appendfsync", "everysec")
            c.call("INCR", "foo")
            assert py(c.call("WAITAOF", 1, 0, 0)) == [1, 0], srv  # the next second's fsync
            admin.call("CONFIG", "SET", "appendfsync", "no")
            # An fsync the everysec policy had already begun may still cover the next write
            # (seen on a loaded machine); after it, none comes.
            for _ in range(40):
                c.call("INCR", "foo")
                if py(c.call("WAITAOF", 1, 0, 50)) == [0, 0]:
                    break
            else:
                raise AssertionError(f"{srv}: writes still fsynced under appendfsync no")
            assert py(c.call("WAITAOF", 0, 0, 0)) == [0, 0], srv
            # Blocked, then a policy with fsyncs releases it.
            c.send("WAITAOF", 1, 0, 0)
            wait_for(lambda: b"blocked_clients:1" in admin.call("INFO", "clients").value,
                     "WAITAOF blocked")
            admin.call("CONFIG", "SET", "appendfsync", "everysec")
            assert py(c.read_reply()) == [1, 0], srv
            # Another client's writes do not hold this one's WAITAOF.
            admin.call("CONFIG", "SET", "appendfsync", "no")
            admin.call("INCR", "other")
            with srv.connect() as fresh:
                assert py(fresh.call("WAITAOF", 1, 0, 0)) == [1, 0], srv


def test_waitaof_after_appendonly_no(server_factory, peers):
    """CONFIG SET appendonly no: a new WAITAOF with numlocal 1 and one already blocked both get
    8.0.2's error at once; a blocked one with numlocal 0 goes on waiting."""
    ours = server_factory("--appendonly", "yes", "--appendfsync", "always")
    theirs = peers("redis8", "--appendonly", "yes", "--appendfsync", "always")
    replies = []
    for srv in (ours, theirs):
        with srv.connect() as local, srv.connect() as remote, srv.connect() as admin:
            local.call("SET", "k", "v")
            remote.call("SET", "k", "w")
            # No replica: both block (timeout 0: for ever; 60 s: answered when it ends).
            local.send("WAITAOF", 1, 1, 0)
            remote.send("WAITAOF", 0, 1, 60000)
            wait_for(lambda: b"blocked_clients:2" in admin.call("INFO", "clients").value,
                     "both WAITAOFs blocked")
            assert admin.call("CONFIG", "SET", "appendonly", "no").value == b"OK"
            blocked = local.read_reply()
            wait_for(lambda: b"blocked_clients:1" in admin.call("INFO", "clients").value,
                     "the numlocal 1 WAITAOF answered")
            fresh = admin.call("WAITAOF", 1, 0, 0)
            zero = admin.call("WAITAOF", 0, 0, 0)
            replies.append((py(blocked), py(fresh), py(zero)))
    err = ("error", "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
    assert replies[0] == replies[1] == (err, err, [0, 0]), replies


def online_replicas(master):
    with master.connect() as c:
        info = c.call("INFO", "replication").value.decode()
    return info.count("state=online")


@pytest.mark.parametrize("replica_kind", ["redis", "blinkdb"])
def test_waitaof_counts_replicas_fsyncs(server_factory, peers, replica_kind):
    """A BlinkDB master counts the FACKs of a redis-server 8.0.2 replica and of a BlinkDB one."""
    master = server_factory("--appendonly", "yes", "--appendfsync", "always")
    replica_args = ("--appendonly", "yes", "--replicaof", "127.0.0.1", str(master.port))
    if replica_kind == "redis":
        replica = peers("replica", *replica_args)
    else:
        replica = server_factory(*replica_args)
    wait_for(lambda: online_replicas(master) == 1, "the replica online")
    with master.connect() as c:
        c.call("SET", "k", "v")
        assert py(c.call("WAITAOF", 1, 1, 20000)) == [1, 1]
        assert py(c.call("WAIT", 1, 20000)) == 1
        # Without an AOF the replica sends no FACK: it does not count.
        with replica.connect() as r:
            assert r.call("CONFIG", "SET", "appendonly", "no").value == b"OK"
        c.call("SET", "k", "w")
        assert py(c.call("WAITAOF", 0, 1, 1500)) == [1, 0]
        assert py(c.call("WAIT", 1, 20000)) == 1
    with replica.connect() as r:
        err = py(r.call("WAITAOF", 0, 0, 0))
        assert err == ("error", "ERR WAITAOF cannot be used with replica instances. Please also"
                       " note that writes to replicas are just local and are not propagated.")


def test_blinkdb_replica_facks_a_redis8_master(server_factory, peers):
    master = peers("master", "--appendonly", "yes", "--appendfsync", "always")
    server_factory("--appendonly", "yes", "--replicaof", "127.0.0.1", str(master.port))
    wait_for(lambda: online_replicas(master) == 1, "the replica online")
    with master.connect() as c:
        c.call("SET", "k", "v")
        assert py(c.call("WAITAOF", 1, 1, 20000)) == [1, 1]


def test_no_touch_leaves_the_lfu_counter(server_factory, peers):
    """CLIENT NO-TOUCH: reads leave OBJECT FREQ as it was, TOUCH still counts, as in 8.0."""
    ours = server_factory("--maxmemory-policy", "allkeys-lfu")
    theirs = peers("redis8", "--maxmemory-policy", "allkeys-lfu")
    seen = []
    for srv in (ours, theirs):
        with srv.connect() as c:
            c.call("SET", "k", "v")
            got = [py(c.call("OBJECT", "FREQ", "k"))]
            c.call("CLIENT", "NO-TOUCH", "ON")
            c.call("GET", "k")
            c.call("HSET", "h", "f", "v")
            got.append(py(c.call("OBJECT", "FREQ", "k")))
            c.call("TOUCH", "k")
            got.append(py(c.call("OBJECT", "FREQ", "k")))
            c.call("CLIENT", "NO-TOUCH", "OFF")
            got.append(py(c.call("OBJECT", "FREQ", "h")))
            seen.append(got)
    assert seen[0] == seen[1] == [5, 5, 6, 5], seen


def test_announced_redis_version(server_factory):
    """announce-redis-version: INFO server's redis_version and HELLO's version, 7.0.15 unless
    asked (clients switch features on them); Lua keeps 7.0.15."""
    def announced(srv):
        with srv.connect() as c:
            info = c.call("INFO", "server").value.decode()
            hello = py(c.call("HELLO", "3"))
            lua = py(c.call("EVAL", "return redis.REDIS_VERSION", 0))
        return info.split("redis_version:")[1].split("\r\n")[0], hello["version"], lua

    plain = server_factory()
    assert announced(plain) == ("7.0.15", "7.0.15", "7.0.15")
    eight = server_factory("--announce-redis-version", "8.0.2")
    assert announced(eight) == ("8.0.2", "8.0.2", "7.0.15")
    with plain.connect() as c:
        assert c.call("CONFIG", "SET", "announce-redis-version", "8.0.2").value == b"OK"
        assert c.call("CONFIG", "SET", "announce-redis-version", "9").is_error()
    assert announced(plain)[:2] == ("8.0.2", "8.0.2")
