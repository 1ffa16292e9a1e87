"""Count-min sketches and top-k between BlinkDB and redis-server 7.0.15 with RedisBloom
2.8.2: DUMP/RESTORE and dump.rdb both ways (`CMSk-TYPE` and `TopK-TYPE` encoding 0),
replication to a RedisBloom replica, an AOF restart, and hostile RESTORE payloads.

RedisBloom 2.8.2 does not rebuild a loaded top-k's decay table (it stays zero: a loaded
sketch never decays again), so after a load only reads are compared for top-k, and
adds only where no bucket is contested."""

import os
import shutil
import struct
import time

import pytest

from bloom_support import redisbloom_path
from rdb_helpers import client, crc64
from server import ORACLE_BIN, ServerProcess, blinkdb_bin

ITEMS = [f"item:{i}" for i in range(400)]
# Top-k sketches: decay 1 (no random draw) and the default decay.
TOPK = {"tk:exact": ("10", "40", "4", "1"), "tk:default": ("5",)}
CMS = {"cms:dim": ("CMS.INITBYDIM", "300", "5"), "cms:prob": ("CMS.INITBYPROB", "0.01", "0.01")}


def start_redisbloom(directory, *extra):
    return ServerProcess(ORACLE_BIN, str(directory), ["--loadmodule", redisbloom_path(), *extra])


def build(conn):
    for key, (cmd, a, b) in CMS.items():
        conn.execute_command(cmd, key, a, b)
        for i, item in enumerate(ITEMS):
            conn.execute_command("CMS.INCRBY", key, item, i % 17 + 1)
    for key, params in TOPK.items():
        conn.execute_command("TOPK.RESERVE", key, *params)
        stream = [ITEMS[(i * i) % 97] for i in range(1500)]
        for at in range(0, len(stream), 50):
            conn.execute_command("TOPK.ADD", key, *stream[at:at + 50])
    conn.execute_command("TOPK.RESERVE", "tk:empty", "3")


def state(conn, replica=False):
    """Everything a client can read of the sketches (TOPK.COUNT is a write command
    for RedisBloom: a replica refuses it)."""
    out = {}
    for key in CMS:
        out[key] = (conn.execute_command("CMS.INFO", key),
                    conn.execute_command("CMS.QUERY", key, *ITEMS, "absent"),
                    conn.type(key))
    for key in list(TOPK) + ["tk:empty"]:
        out[key] = (conn.execute_command("TOPK.LIST", key, "WITHCOUNT"),
                    conn.execute_command("TOPK.INFO", key),
                    None if replica else conn.execute_command("TOPK.COUNT", key, *ITEMS[:120]),
                    conn.execute_command("TOPK.QUERY", key, *ITEMS[:120]),
                    conn.type(key))
    return out


@pytest.fixture
def redisbloom(tmp_path):
    srv = start_redisbloom(tmp_path / "redisbloom")
    yield srv
    srv.stop()


def test_dump_restore_both_ways(blinkdb, redisbloom):
    r, b = client(redisbloom.port), client(blinkdb.port)
    build(r)
    want = state(r)
    keys = list(want)
    for key in keys:
        assert b.restore(key, 0, r.dump(key))
    assert state(b) == want
    # A count-min sketch's payload is RedisBloom's, byte for byte (top-k's holds
    # RedisBloom's heap pointers, written as 0 here).
    for key in CMS:
        assert b.dump(key) == r.dump(key), key
    # Counting goes on identically after the import.
    for key in CMS:
        args = sum(([item, "3"] for item in ITEMS[::7]), [])
        assert b.execute_command("CMS.INCRBY", key, *args) == \
            r.execute_command("CMS.INCRBY", key, *args)
    # And back: RedisBloom loads BlinkDB's payloads with the same answers.
    for key in keys:
        assert r.restore(key + ":back", 0, b.dump(key))
    for key in CMS:
        assert r.execute_command("CMS.QUERY", key + ":back", *ITEMS) == \
            b.execute_command("CMS.QUERY", key, *ITEMS)
        assert r.execute_command("CMS.INFO", key + ":back") == b.execute_command("CMS.INFO", key)
    for key in list(TOPK) + ["tk:empty"]:
        for cmd in (("TOPK.LIST", "WITHCOUNT"), ("TOPK.INFO",), ("TOPK.COUNT", *ITEMS[:120])):
            assert r.execute_command(cmd[0], key + ":back", *cmd[1:]) == \
                b.execute_command(cmd[0], key, *cmd[1:]), (key, cmd)


def saved_dump(conn, directory):
    assert conn.save()
    return os.path.join(directory, "dump.rdb")


def test_dump_rdb_both_ways(tmp_path):
    rdir, bdir = tmp_path / "redisbloom", tmp_path / "blinkdb"
    redis = start_redisbloom(rdir)
    try:
        r = client(redis.port)
        build(r)
        want = state(r)
        src = saved_dump(r, str(rdir))
    finally:
        redis.stop()
    bdir.mkdir()
    shutil.copy(src, bdir / "dump.rdb")
    srv = ServerProcess(blinkdb_bin(), str(bdir), ["--appendonly", "no"])
    try:
        b = client(srv.port)
        assert state(b) == want
        src = saved_dump(b, str(bdir))
    finally:
        srv.stop()
    back = tmp_path / "back"
    back.mkdir()
    shutil.copy(src, back / "dump.rdb")
    redis = start_redisbloom(back)
    try:
        assert state(client(redis.port)) == want
    finally:
        redis.stop()


def wait_for(cond, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_replication_to_a_redisbloom_replica(blinkdb, redisbloom):
    m, r = client(blinkdb.port), client(redisbloom.port)
    build(m)  # before the link: carried by the full sync's RDB
    r.execute_command("REPLICAOF", "127.0.0.1", blinkdb.port)
    wait_for(lambda: r.info("replication")["master_link_status"] == "up", "replica link up")
    # After the link: carried as commands. A wide exact top-k: no contested bucket.
    m.execute_command("CMS.INITBYDIM", "cms:live", "100", "4")
    m.execute_command("TOPK.RESERVE", "tk:live", "5", "2000", "3", "1")
    for i in range(200):
        m.execute_command("CMS.INCRBY", "cms:live", ITEMS[i % 50], i)
        m.execute_command("TOPK.INCRBY", "tk:live", ITEMS[i % 30], i % 7)
    m.execute_command("CMS.INITBYDIM", "cms:copy", "300", "5")
    m.execute_command("CMS.MERGE", "cms:copy", "1", "cms:dim", "WEIGHTS", "2")
    m.execute_command("SET", "fence", "1")
    wait_for(lambda: r.get("fence") == b"1", "the stream reaching the replica")
    assert state(r, replica=True) == state(m, replica=True)
    for key, n in (("cms:live", 50), ("cms:copy", 400)):
        cmd = "CMS.QUERY"
        assert r.execute_command(cmd, key, *ITEMS[:n]) == m.execute_command(cmd, key, *ITEMS[:n])
        assert r.execute_command("CMS.INFO", key) == m.execute_command("CMS.INFO", key)
    assert r.execute_command("TOPK.LIST", "tk:live", "WITHCOUNT") == \
        m.execute_command("TOPK.LIST", "tk:live", "WITHCOUNT")


def test_aof_restart_keeps_every_answer(tmp_path):
    """Commands replayed from the AOF (the same decay draws: even the default-decay top-k
    comes back identical), then a RESP rewrite base (RedisBloom's RESTORE records, which
    redis-server + RedisBloom loads too), then an RDB-preamble base."""
    bdir = tmp_path / "blinkdb"
    srv = ServerProcess(blinkdb_bin(), str(bdir), ["--appendonly", "yes"])
    try:
        b = client(srv.port)
        build(b)
        b.expire("cms:dim", 1000)
        want = state(b)
    finally:
        srv.stop()
    for step, preamble in (("replay", "no"), ("resp-base", "yes"), ("rdb-base", "yes")):
        if step == "resp-base":
            rdir = tmp_path / "redis-aof"
            shutil.copytree(bdir / "appendonlydir", rdir / "appendonlydir")
            redis = start_redisbloom(rdir, "--appendonly", "yes")
            try:
                assert state(client(redis.port)) == want
            finally:
                redis.stop()
        srv = ServerProcess(blinkdb_bin(), str(bdir),
                            ["--appendonly", "yes", "--aof-use-rdb-preamble", preamble])
        try:
            b = client(srv.port)
            assert state(b) == want, step
            assert 0 < b.ttl("cms:dim") <= 1000
            b.bgrewriteaof()
            wait_for(lambda: b.info("persistence")["aof_rewrite_in_progress"] == 0 and
                     b.info("persistence")["aof_rewrite_scheduled"] == 0, "rewrite")
            assert b.info("persistence")["aof_last_bgrewrite_status"] == "ok"
        finally:
            srv.stop()


def module_payload(body):
    data = b"\x07" + body + struct.pack("<H", 10)
    return data + struct.pack("<Q", crc64(data))


def module_id(name):
    charset = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    value = 0
    for c in name.encode():
        value = (value << 6) | charset.index(c)
    return b"\x81" + struct.pack(">Q", value << 10)


def uint(v):
    return b"\x02" + (bytes([v]) if v < 64 else b"\x81" + struct.pack(">Q", v))


def string(b):
    n = len(b)
    head = bytes([n]) if n < 64 else b"\x80" + struct.pack(">I", n)
    return b"\x05" + head + b


def double(v):
    return b"\x04" + struct.pack("<d", v)


def test_hostile_restore_payloads(blinkdb):
    b = blinkdb.connect()
    before = blinkdb.rss_kb()
    cms = lambda w, d, buf: module_id("CMSk-TYPE") + uint(w) + uint(d) + uint(0) + string(buf)  # noqa: E731
    topk = lambda k, w, d, decay, data, heap, items: (  # noqa: E731
        module_id("TopK-TYPE") + uint(k) + uint(w) + uint(d) + double(decay) + string(data)
        + string(heap) + b"".join(string(i) for i in items))
    cases = [
        cms(2, 2, bytes(12)) + b"\x00",                      # a counter short
        cms(3, 2, bytes(16)) + b"\x00",                      # buffer smaller than 3 x 2
        cms(0, 2, b"") + b"\x00",                            # no counters
        cms(1 << 40, 1 << 20, bytes(16)) + b"\x00",          # huge, product overflows size
        cms(2, 2, bytes(16)),                                # no EOF
        topk(1 << 31, 8, 7, 0.9, bytes(448), bytes(24), [b"\x00"]) + b"\x00",  # k past the heap
        topk(2, 8, 7, 0.9, bytes(448), bytes(48), [b"\x00"]) + b"\x00",       # an item missing
        topk(2, 8, 7, 2.0, bytes(448), bytes(48), [b"\x00"] * 2) + b"\x00",   # decay > 1
        topk(2, 8, 7, float("nan"), bytes(448), bytes(48), [b"\x00"] * 2) + b"\x00",
        topk(2, 1 << 31, 1 << 31, 0.9, bytes(448), bytes(48), [b"\x00"] * 2) + b"\x00",
        topk(0, 8, 7, 0.9, bytes(448), b"", []) + b"\x00",
    ]
    for i, body in enumerate(cases):
        reply = b.call("RESTORE", f"bad{i}", "0", module_payload(body)).raw
        assert reply.startswith(b"-ERR Bad data format"), (i, reply)
        assert b.call("EXISTS", f"bad{i}").raw == b":0\r\n"
    # A well-formed one loads (the builders above are right).
    good = topk(2, 8, 7, 0.9, bytes(448), bytes(48), [b"\x00"] * 2) + b"\x00"
    assert b.call("RESTORE", "good", "0", module_payload(good)).raw == b"+OK\r\n"
    assert b.call("TOPK.INFO", "good").raw.startswith(b"*8\r\n")
    good = cms(2, 2, bytes(16)) + b"\x00"
    assert b.call("RESTORE", "goodcms", "0", module_payload(good)).raw == b"+OK\r\n"
    assert b.call("CMS.QUERY", "goodcms", "x").raw == b"*1\r\n:0\r\n"
    assert blinkdb.rss_kb() < before + 100_000
