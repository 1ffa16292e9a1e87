"""DUMP and RESTORE against redis-server 7.0.15: the same payload bytes for every value
whose encoding fixes them, RESTORE of each server's payload on the other with the same
contents and encoding, the same error replies for bad input, and RESTORE in the AOF."""

import os
import shutil
import struct

import pytest

from rdb_helpers import ORDER_DEPENDENT, WORKLOAD, WORKLOAD_KEYS, client, content, crc64
from resp import RespConnection
from server import ORACLE_BIN, ServerProcess


@pytest.fixture
def pair(server_factory, oracle):
    b, r = client(server_factory().port), client(oracle.port)
    # Both at 128, so that the workload's h:big is a hashtable on both.
    for conn in (b, r):
        conn.config_set("hash-max-listpack-entries", 128)
    for conn in (b, r):
        for cmd in WORKLOAD:
            conn.execute_command(*cmd)
    return b, r


def keys_of_workload():
    return list(WORKLOAD_KEYS)


def test_payloads_equal_redis_and_restore_both_ways(pair):
    b, r = pair
    for key in keys_of_workload():
        from_b, from_r = b.dump(key), r.dump(key)
        if key not in ORDER_DEPENDENT:
            assert from_b == from_r, f"DUMP {key} differs"
        assert b.restore(key + ":r", 0, from_r)
        assert r.restore(key + ":b", 0, from_b)
        want = content(r, key)
        assert content(b, key + ":r") == want
        assert content(r, key + ":b") == want
        assert content(b, key) == want
        enc = r.object("encoding", key)
        assert b.object("encoding", key + ":r") == enc, key
        assert r.object("encoding", key + ":b") == enc, key


def raw_call(conn, *args):
    with RespConnection(conn.connection_pool.connection_kwargs["port"]) as c:
        return c.call(*args).raw


def test_error_replies_match_redis(pair, server_factory, oracle):
    b, r = pair
    good = r.dump("s:raw")
    lp = r.dump("h:small")
    cases = [
        ("RESTORE", "s:raw", "0", good),                       # BUSYKEY
        ("RESTORE", "new", "-1", good),                        # negative TTL
        ("RESTORE", "new", "abc", good),                       # TTL not an integer
        ("RESTORE", "new", "0", good[:-1] + b"\x00"),          # checksum
        ("RESTORE", "new", "0", good[:-10] + b"\x0b\x00" + good[-8:]),  # version 11
        ("RESTORE", "new", "0", b"short"),
        ("RESTORE", "new", "0", good, "bogus"),
        ("RESTORE", "new", "0", good, "IDLETIME", "-1"),
        ("RESTORE", "new", "0", good, "FREQ", "256"),
        ("RESTORE", "new", "0", good, "FREQ", "x"),
        ("RESTORE", "new", "0", good, "IDLETIME", "5", "FREQ", "5"),
        ("RESTORE", "new", "0", good, "IDLETIME"),
        ("RESTORE", "new", "0", lp[:5] + b"\x00" + lp[6:]),     # damaged, CRC now wrong
        ("DUMP", "missing"),
        ("RESTORE", "new"),
    ]
    for case in cases:
        assert raw_call(b, *case) == raw_call(r, *case), case[:3]


def test_hostile_payloads_with_valid_checksums(pair):
    """Bodies with a valid footer that lie about their lengths: an error, nothing stored,
    no allocation of the declared size (the server keeps answering)."""
    b, r = pair
    # A string that claims 2^64-9 bytes; a set that claims 2^32 members; an LZF
    # string that claims 4 GB out of 3 bytes; a listpack whose header lies.
    bodies = [
        b"\x00\x81\xff\xff\xff\xff\xff\xff\xff\xf7",
        b"\x02\x80\xff\xff\xff\xff\x01a",
        b"\x00\xc3\x03\x80\xff\xff\xff\xff\x00\x00\x00",
        b"\x10\x0c\xff\x00\x00\x00\x02\x00\x81a\x02\x01\x01\xff",
    ]
    # Not sent to redis-server: the set that claims 2^32 members keeps it busy for
    # minutes (it sizes its table from the count).
    for body in bodies:
        got = raw_call(b, "RESTORE", "h", "0", crc_payload(body))
        assert got.startswith(b"-ERR Bad data format"), got
        assert b.exists("h") == 0
    assert b.ping()


def test_damaged_stream_payloads(pair):
    """A stream payload of redis-server's with one byte changed and its checksum
    recomputed, and cut short: BlinkDB refuses each (or, where the change lands in a
    value, stores a stream that reads back), and answers Redis's error otherwise."""
    b, r = pair
    payload = r.dump("x:groups")
    body = payload[:-10]
    port = b.connection_pool.connection_kwargs["port"]
    with RespConnection(port) as c:
        for n in range(len(body)):
            got = c.call("RESTORE", "cut", "0", crc_payload(body[:n]), "REPLACE").raw
            assert got.startswith(b"-ERR Bad data format"), (n, got)
        for i in range(1, len(body)):
            damaged = body[:i] + bytes([body[i] ^ 0x41]) + body[i + 1:]
            got = c.call("RESTORE", "bad", "0", crc_payload(damaged), "REPLACE").raw
            assert got == b"+OK\r\n" or got.startswith(b"-ERR Bad data format"), (i, got)
            if got == b"+OK\r\n":
                c.call("XRANGE", "bad", "-", "+")
                c.call("XINFO", "STREAM", "bad", "FULL")
    assert b.ping()
    # The legacy type 15 (Redis 5 and 6) of an empty stream with no groups.
    assert raw_call(b, "RESTORE", "old", "0", crc_payload(b"\x0f\x00\x00\x05\x00\x00")) == b"+OK\r\n"
    assert b.xinfo_stream("old")["last-generated-id"] == b"5-0"


def crc_payload(body):
    body = body + b"\x0a\x00"
    return body + struct.pack("<Q", crc64(body))


def test_crc64_matches_redis(pair):
    _, r = pair
    payload = r.dump("s:raw")
    assert crc_payload(payload[:-10]) == payload


def test_ttl_options(pair):
    b, r = pair
    payload = r.dump("s:raw")
    for conn in (b, r):
        assert conn.restore("t1", 5000, payload)
        assert 3000 < conn.pttl("t1") <= 5000
        assert conn.restore("t2", 4_000_000_000_000, payload, absttl=True)
        assert conn.pexpiretime("t2") == 4_000_000_000_000
        conn.set("t3", "old")
        assert conn.restore("t3", 1, payload, replace=True, absttl=True)
        assert conn.exists("t3") == 0
        assert conn.restore("t4", 0, payload, idletime=10)
        assert conn.get("t4") == b"hello"


def test_restore_is_logged_and_replays_in_both_servers(server_factory, tmp_path):
    srv = server_factory("--appendonly", "yes")
    conn = client(srv.port)
    donor = client(server_factory().port)
    for cmd in WORKLOAD:
        donor.execute_command(*cmd)
    for key in keys_of_workload():
        conn.restore(key, 0, donor.dump(key))
    conn.restore("ttl", 100000000, donor.dump("s:raw"))
    want = {k: content(conn, k) for k in keys_of_workload() + ["ttl"]}
    pttl = conn.pttl("ttl")
    srv.stop()
    restarted = server_factory("--appendonly", "yes", "--dir", srv.dir, name="restarted")
    c2 = client(restarted.port)
    assert {k: content(c2, k) for k in want} == want
    assert abs(c2.pttl("ttl") - pttl) < 5000
    # redis-server replays the same AOF (RESTORE records with ABSTTL).
    redis_dir = tmp_path / "redis-from-aof"
    shutil.copytree(os.path.join(srv.dir, "appendonlydir"), redis_dir / "appendonlydir")
    restarted.stop()
    oracle = ServerProcess(ORACLE_BIN, str(redis_dir), ["--appendonly", "yes"])
    try:
        rc = client(oracle.port)
        assert {k: content(rc, k) for k in want} == want
        assert abs(rc.pttl("ttl") - pttl) < 5000
    finally:
        oracle.stop()


def test_migrate_both_ways(server_factory, oracle):
    b, r = client(server_factory("--appendonly", "yes").port), client(oracle.port)
    r.config_set("hash-max-listpack-entries", 128)
    for cmd in WORKLOAD:
        b.execute_command(*cmd)
    keys = keys_of_workload()
    want = {k: content(b, k) for k in keys}
    host, rport = "127.0.0.1", oracle.port
    assert b.execute_command("MIGRATE", host, rport, "", 3, 5000, "COPY", "KEYS", *keys) == b"OK"
    assert all(b.exists(k) for k in keys)
    r3 = client(oracle.port, 3)
    assert {k: content(r3, k) for k in keys} == want
    assert r3.pttl("s:ttl") > 0
    # Without REPLACE the target refuses keys it has; the error names its reply.
    reply = raw_call(b, "MIGRATE", host, str(rport), "s:raw", "3", "5000")
    assert reply.startswith(b"-ERR Target instance replied with error: BUSYKEY"), reply
    assert b.execute_command("MIGRATE", host, rport, "", 3, 5000, "REPLACE", "KEYS", *keys) == b"OK"
    assert not any(b.exists(k) for k in keys)
    assert b.execute_command("MIGRATE", host, rport, "missing", 3, 5000) == b"NOKEY"
    assert b.info("stats")["migrate_cached_sockets"] == 1
    # And back: redis-server migrates to BlinkDB.
    bport = b.connection_pool.connection_kwargs["port"]
    assert r3.execute_command("MIGRATE", host, bport, "", 0, 5000, "KEYS", *keys) == b"OK"
    assert {k: content(b, k) for k in keys} == want
    assert raw_call(b, "MIGRATE", host, "1", "s:raw", "0", "100") == \
        b"-IOERR error or timeout connecting to the client\r\n"


@pytest.mark.parametrize("depth,fill,rdbcompression", [
    (1, 4, "yes"), (1, 4, "no"), (2, 16, "yes"), (3, -1, "no"), (1, 1, "yes"),
])
def test_compressed_lists_dump_as_redis(server_factory, oracle, depth, fill, rdbcompression):
    """list-compress-depth N: the nodes deeper than N from both ends are written as their
    LZF blobs, byte-equal to redis-server's, whatever rdbcompression says; RESTORE of each
    server's payload on the other gives the same list, still compressed where it pays."""
    b, r = client(server_factory().port), client(oracle.port)
    noise = bytes((i * 2654435761 >> 7) & 0xFF for i in range(300))
    elements = []
    for i in range(400):
        if i % 11 == 0:
            elements.append(noise[i % 200:i % 200 + 60])        # incompressible node content
        elif i % 5 == 0:
            elements.append(str(i * 1000 - 70000).encode())      # integers
        else:
            elements.append(f"element-{i}-".encode() * (1 + i % 4))
    for conn in (b, r):
        conn.config_set("list-compress-depth", depth)
        conn.config_set("list-max-listpack-size", fill)
        conn.config_set("rdbcompression", rdbcompression)
        for lo in range(0, len(elements), 50):
            conn.rpush("l", *elements[lo:lo + 50])
        conn.rpush("short", "a", "b")
    for key in ("l", "short"):
        from_b, from_r = b.dump(key), r.dump(key)
        assert from_b == from_r, f"DUMP {key} differs"
        assert b.restore(key + ":r", 0, from_r)
        assert r.restore(key + ":b", 0, from_b)
        assert b.dump(key + ":r") == from_r
        assert b.lrange(key + ":r", 0, -1) == r.lrange(key, 0, -1)
        assert r.lrange(key + ":b", 0, -1) == r.lrange(key, 0, -1)
        assert b.object("encoding", key) == b"quicklist"
    # Reads and writes in the compressed middle.
    for conn in (b, r):
        conn.lset("l", 200, "changed")
        conn.linsert("l", "BEFORE", elements[150], "inserted")
        conn.lrem("l", 1, elements[300])
    for i in range(0, 400, 37):
        assert b.lindex("l", i) == r.lindex("l", i)
        assert b.lrange("l", i, i + 20) == r.lrange("l", i, i + 20)
    assert b.lpos("l", "changed") == r.lpos("l", "changed")
    assert b.lrange("l", 0, -1) == r.lrange("l", 0, -1)
