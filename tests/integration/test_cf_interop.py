"""Cuckoo filters between BlinkDB and redis-server 7.0.15 with RedisBloom 2.8.2, both ways:
DUMP/RESTORE (module type `MBbloomCF`, encoding version 4), dump.rdb, CF.SCANDUMP/
CF.LOADCHUNK, replication (full sync and the command stream), and BlinkDB's restart from its
AOF (with a RESP rewrite base of CF.LOADCHUNK records, which redis-server + RedisBloom loads
too). The algorithm is RedisBloom's, so every check compares exact answers and bytes."""

import os
import shutil
import time

from redis import exceptions as redis_exceptions

from bloom_support import redisbloom_path, start_oracle
from rdb_helpers import client
from resp import plain
from server import ORACLE_BIN, ServerProcess, blinkdb_bin

ITEMS = [f"item:{i}" for i in range(600)]
PROBES = [f"probe:{i}" for i in range(300)] + ITEMS[::7]
KEYS = ["cf:default", "cf:bs4", "cf:grown", "cf:deleted", "cf:fixed", "cf:loaded"]


def build(conn):
    """Shapes that exercise every field: defaults, bucket size 4, sub-filters grown with
    EXPANSION 2, deletes (and the compaction they trigger), a full EXPANSION 0 filter."""
    conn.execute_command("CF.ADD", "cf:default", "one")
    conn.execute_command("CF.RESERVE", "cf:bs4", 200, "BUCKETSIZE", 4, "MAXITERATIONS", 50)
    conn.execute_command("CF.INSERT", "cf:bs4", "ITEMS", *ITEMS[:300])
    conn.execute_command("CF.RESERVE", "cf:grown", 16, "EXPANSION", 2)
    conn.execute_command("CF.INSERT", "cf:grown", "ITEMS", *ITEMS)
    conn.execute_command("CF.RESERVE", "cf:deleted", 8)
    conn.execute_command("CF.INSERT", "cf:deleted", "ITEMS", *ITEMS[:100])
    for item in ITEMS[:40]:
        conn.execute_command("CF.DEL", "cf:deleted", item)
    conn.execute_command("CF.RESERVE", "cf:fixed", 8, "EXPANSION", 0)
    conn.execute_command("CF.INSERT", "cf:fixed", "ITEMS", *ITEMS[:20])
    conn.execute_command("CF.ADD", "cf:loaded", "x")
    conn.execute_command("CF.COMPACT", "cf:grown")


def state(conn, key):
    """Everything a client can see of a filter (the chunks: the header, then the slots)."""
    chunks, pos = [], 0
    while True:
        pos, data = conn.execute_command("CF.SCANDUMP", key, pos)
        if pos == 0:
            break
        chunks.append((pos, data))
    return (conn.type(key), conn.execute_command("CF.DEBUG", key),
            conn.execute_command("CF.INFO", key), chunks,
            conn.execute_command("CF.MEXISTS", key, *PROBES),
            [conn.execute_command("CF.COUNT", key, p) for p in PROBES[:50]])


def assert_same(a, b, keys=KEYS):
    for key in keys:
        assert state(a, key) == state(b, key), key


def test_dump_restore_both_ways(blinkdb, tmp_path):
    redis = start_oracle(str(tmp_path / "redisbloom"))
    try:
        r, b = client(redis.port), client(blinkdb.port)
        build(r)
        for key in KEYS:
            payload = r.dump(key)
            assert b.restore(key, 0, payload)
            # The same module value, byte for byte.
            assert b.dump(key) == payload, key
        assert_same(r, b)
        # Later writes give the same answers and the same bytes.
        more = [f"more:{i}" for i in range(300)]
        for conn in (r, b):
            assert conn.execute_command("CF.INSERT", "cf:grown", "ITEMS", *more)
        assert r.execute_command("CF.INSERTNX", "cf:fixed", "ITEMS", *more[:5]) == \
            b.execute_command("CF.INSERTNX", "cf:fixed", "ITEMS", *more[:5])
        assert [r.execute_command("CF.DEL", "cf:grown", m) for m in more[:200]] == \
            [b.execute_command("CF.DEL", "cf:grown", m) for m in more[:200]]
        assert_same(r, b)
        # And back: RedisBloom loads BlinkDB's DUMP.
        for key in KEYS:
            assert r.restore(key + ":back", 0, b.dump(key))
            assert state(r, key + ":back")[1:] == state(b, key)[1:], key
        assert b.object("encoding", "cf:grown") == r.object("encoding", "cf:grown")
    finally:
        redis.stop()


def test_scandump_loadchunk_both_ways(blinkdb, tmp_path):
    redis = start_oracle(str(tmp_path / "redisbloom"))
    try:
        r, b = client(redis.port), client(blinkdb.port)
        build(r)
        for src, dst in ((r, b), (b, r)):
            for key in KEYS:
                # The header (position 1), then the slots.
                chunks = state(src, key)[3]
                assert chunks[0][0] == 1 and len(chunks[0][1]) == 38
                dst.delete(key)
                for pos, data in chunks:
                    assert dst.execute_command("CF.LOADCHUNK", key, pos, data) == b"OK"
            assert_same(src, dst)
    finally:
        redis.stop()


def wait_for(predicate, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_rdb_files_both_ways(tmp_path):
    # RedisBloom's dump.rdb loads in BlinkDB...
    rdir, bdir = tmp_path / "redis", tmp_path / "blinkdb"
    redis = start_oracle(str(rdir))
    try:
        r = client(redis.port)
        build(r)
        want = {key: state(r, key) for key in KEYS}
        assert r.save()
    finally:
        redis.stop()
    bdir.mkdir()
    shutil.copy(rdir / "dump.rdb", bdir / "dump.rdb")
    srv = ServerProcess(blinkdb_bin(), str(bdir), [])
    try:
        b = client(srv.port)
        for key in KEYS:
            assert state(b, key) == want[key], key
        b.execute_command("CF.INSERT", "cf:grown", "ITEMS", *[f"b:{i}" for i in range(200)])
        want = {key: state(b, key) for key in KEYS}
        assert b.save()
    finally:
        srv.stop()
    # ...and BlinkDB's loads in RedisBloom.
    rdir2 = tmp_path / "redis2"
    rdir2.mkdir()
    shutil.copy(bdir / "dump.rdb", rdir2 / "dump.rdb")
    redis = ServerProcess(ORACLE_BIN, str(rdir2), ["--loadmodule", redisbloom_path()])
    try:
        r = client(redis.port)
        for key in KEYS:
            assert state(r, key) == want[key], key
    finally:
        redis.stop()


def test_replication_both_ways(server_factory, tmp_path):
    """BlinkDB master -> RedisBloom replica (full sync, then the stream), and RedisBloom
    master -> BlinkDB replica."""
    master = server_factory()
    m = client(master.port)
    m.execute_command("CF.RESERVE", "cf:before", 32, "EXPANSION", 2)
    m.execute_command("CF.INSERT", "cf:before", "ITEMS", *ITEMS[:200])
    replica = ServerProcess(ORACLE_BIN, str(tmp_path / "replica"),
                            ["--loadmodule", redisbloom_path(),
                             "--replicaof", "127.0.0.1", str(master.port)])
    try:
        r = client(replica.port)
        wait_for(lambda: r.info("replication").get("master_link_status") == "up", "link up")
        build(m)
        # A chunk loaded after the header reaches the replica too (RedisBloom's own master
        # would not send it).
        for pos, data in state(m, "cf:grown")[3]:
            m.execute_command("CF.LOADCHUNK", "cf:copy", pos, data)
        assert m.execute_command("WAIT", 1, 10000) == 1
        assert_same(m, r, KEYS + ["cf:before", "cf:copy"])
    finally:
        replica.stop()
    redis = start_oracle(str(tmp_path / "redismaster"))
    try:
        rm = client(redis.port)
        rm.execute_command("CF.INSERT", "cf:before", "ITEMS", *ITEMS[:200])
        ours = server_factory("--replicaof", "127.0.0.1", str(redis.port))
        b = client(ours.port)
        wait_for(lambda: b.info("replication").get("master_link_status") == "up", "link up")
        build(rm)
        assert rm.execute_command("WAIT", 1, 10000) == 1
        assert_same(rm, b, KEYS + ["cf:before"])
    finally:
        redis.stop()


def test_restart_from_the_aof_and_rewrites(tmp_path):
    """Commands replayed from the AOF, then a RESP rewrite base (CF.LOADCHUNK records, which
    redis-server + RedisBloom loads too), then an RDB-preamble base: every filter comes back
    exactly, with its TTL."""
    bdir = tmp_path / "blinkdb"
    srv = ServerProcess(blinkdb_bin(), str(bdir), ["--appendonly", "yes"])
    try:
        b = client(srv.port)
        build(b)
        b.expire("cf:default", 1000)
        want = {key: state(b, key) for key in KEYS}
    finally:
        srv.stop()
    # Each step loads what the previous one left, then rewrites with `preamble`.
    for step, preamble in (("replay", "no"), ("resp-base", "yes"), ("rdb-base", "yes")):
        if step == "resp-base":
            rdir = tmp_path / "redis-aof"
            shutil.copytree(bdir / "appendonlydir", rdir / "appendonlydir")
            redis = ServerProcess(ORACLE_BIN, str(rdir), ["--loadmodule", redisbloom_path(),
                                                          "--appendonly", "yes"])
            try:
                r = client(redis.port)
                for key in KEYS:
                    assert state(r, key) == want[key], ("redis", key)
            finally:
                redis.stop()
        srv = ServerProcess(blinkdb_bin(), str(bdir),
                            ["--appendonly", "yes", "--aof-use-rdb-preamble", preamble])
        try:
            b = client(srv.port)
            for key in KEYS:
                assert state(b, key) == want[key], (step, key)
            assert 0 < b.ttl("cf:default") <= 1000
            b.bgrewriteaof()
            wait_for(lambda: b.info("persistence")["aof_rewrite_in_progress"] == 0 and
                     b.info("persistence")["aof_rewrite_scheduled"] == 0, "rewrite")
            assert b.info("persistence")["aof_last_bgrewrite_status"] == "ok"
        finally:
            srv.stop()


def test_commands_listed_as_redisbloom_does(blinkdb, tmp_path):
    """COMMAND INFO of every CF.* command as redis-server + RedisBloom lists it (module
    commands of the `bf` module, RedisBloom's flags and key range), DOCS with the module's
    fields; TYPE and OBJECT ENCODING of a filter; WATCH sees a write."""
    redis = start_oracle(str(tmp_path / "redisbloom"))
    try:
        b, r = client(blinkdb.port), client(redis.port)
        with blinkdb.connect() as braw, redis.connect() as rraw:
            def call(conn, *args):
                return plain((lambda x: (x.kind, x.value))(conn.call(*args)))
            ours, theirs = (sorted(n for n in call(c, "COMMAND", "LIST", "FILTERBY", "MODULE", "bf")
                                   if n.startswith(b"cf.")) for c in (braw, rraw))
            assert ours == theirs and len(ours) == 14
            for name in ours:
                assert call(braw, "COMMAND", "INFO", name) == call(rraw, "COMMAND", "INFO", name)
                docs = call(braw, "COMMAND", "DOCS", name)[1]
                docs = dict(zip(docs[0::2], docs[1::2]))
                assert docs[b"group"] == b"module" and docs[b"module"] == b"bf", name
        for conn in (b, r):
            conn.execute_command("CF.ADD", "k", "a")
        assert b.type("k") == r.type("k") == b"MBbloomCF"
        assert b.object("encoding", "k") == r.object("encoding", "k")
        # A write opened for writing marks a watched key dirty, as a module key does.
        for conn in (b, r):
            with conn.pipeline() as p:
                p.watch("k")
                conn.execute_command("CF.ADDNX", "k", "a")  # changes nothing, still a write
                p.multi()
                p.set("x", "1")
                try:
                    p.execute()
                    raise AssertionError("EXEC ran after a write to a watched key")
                except redis_exceptions.WatchError:
                    pass
    finally:
        redis.stop()
