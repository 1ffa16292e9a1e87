"""t-digests move between redis-server 7.0.15 with RedisBloom 2.8.2 and BlinkDB as
RedisBloom's module type `TDIS-TYPE` (encoding version 0): DUMP payloads are the same
bytes for the same digest, DUMP/RESTORE and dump.rdb work both ways, a RedisBloom
replica follows a BlinkDB master (full sync, then the commands as sent), an AOF (plain
and rewritten without the RDB preamble) restores the digests, and hostile RESTORE
payloads are refused with Redis's error, never a crash or a huge allocation."""

import os
import random
import shutil
import struct
import time

from bloom_support import start_blinkdb, start_oracle
from rdb_helpers import crc64, rdb_len

KEYS = ["td:small", "td:big", "td:c50", "td:one", "td:empty", "td:merged"]
QUERIES = [
    ["TDIGEST.INFO"],
    ["TDIGEST.MIN"],
    ["TDIGEST.MAX"],
    ["TDIGEST.QUANTILE", "0", "0.01", "0.1", "0.5", "0.9", "0.99", "1"],
    ["TDIGEST.CDF", "-1", "0", "3", "50", "99.5", "1000"],
    ["TDIGEST.TRIMMED_MEAN", "0.1", "0.9"],
    ["TDIGEST.RANK", "-5", "0", "10", "500"],
    ["TDIGEST.REVRANK", "-5", "0", "10", "500"],
    ["TDIGEST.BYRANK", "0", "1", "7", "100", "100000"],
    ["TDIGEST.BYREVRANK", "0", "1", "7", "100", "100000"],
]


def build(conn, rng_seed=45):
    """The same digests on any server: buffered samples left in some."""
    rng = random.Random(rng_seed)
    conn.call("TDIGEST.CREATE", "td:small")
    conn.call("TDIGEST.ADD", "td:small", *[repr(rng.gauss(10, 3)) for _ in range(50)])
    conn.call("TDIGEST.CREATE", "td:big", "COMPRESSION", "200")
    for _ in range(20):
        conn.call("TDIGEST.ADD", "td:big", *[repr(rng.expovariate(0.05)) for _ in range(300)])
    conn.call("TDIGEST.CREATE", "td:c50", "COMPRESSION", "50")
    conn.call("TDIGEST.ADD", "td:c50", *[str(rng.randrange(0, 20)) for _ in range(1000)])
    conn.call("TDIGEST.CREATE", "td:one")
    conn.call("TDIGEST.ADD", "td:one", "3.25")
    conn.call("TDIGEST.CREATE", "td:empty", "COMPRESSION", "7")
    conn.call("TDIGEST.MERGE", "td:merged", "2", "td:small", "td:c50")


def answers(conn, keys=KEYS):
    out = []
    for key in keys:
        for q in QUERIES:
            out.append(conn.call(q[0], key, *q[1:]).raw)
    return out


def wait_for(cond, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_dump_payloads_are_redisbloom_bytes_and_restore_both_ways(blinkdb_binary, tmp_path):
    oracle = start_oracle(str(tmp_path / "oracle"))
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        r, b = oracle.connect(), ours.connect()
        build(r)
        build(b)
        for key in KEYS:
            theirs, mine = r.call("DUMP", key), b.call("DUMP", key)
            assert mine.raw == theirs.raw, key
            assert b.call("TYPE", key).raw == b"+TDIS-TYPE\r\n"
            # Restored on the other side under another name: the same answers.
            assert b.call("RESTORE", key + ":r", "0", theirs.value).raw == b"+OK\r\n"
            assert r.call("RESTORE", key + ":r", "0", mine.value).raw == b"+OK\r\n"
        restored = [k + ":r" for k in KEYS]
        assert answers(b, restored) == answers(r, restored)
        assert answers(b) == answers(r)
    finally:
        ours.stop()
        oracle.stop()


def test_dump_rdb_both_ways(blinkdb_binary, tmp_path):
    oracle_dir, our_dir = tmp_path / "oracle", tmp_path / "blinkdb"
    oracle = start_oracle(str(oracle_dir))
    r = oracle.connect()
    build(r)
    assert r.call("SAVE").raw == b"+OK\r\n"
    expected = answers(r)
    oracle.stop()
    os.makedirs(our_dir, exist_ok=True)
    shutil.copy(oracle_dir / "dump.rdb", our_dir / "dump.rdb")
    ours = start_blinkdb(blinkdb_binary, str(our_dir))
    try:
        b = ours.connect()
        assert answers(b) == expected
        build_more(b)
        assert b.call("SAVE").raw == b"+OK\r\n"
    finally:
        ours.stop()
    # Back: RedisBloom loads BlinkDB's file as BlinkDB does (BlinkDB's SAVE
    # writes a compressed copy; RedisBloom's would compress the live digest).
    back_dir = tmp_path / "back"
    os.makedirs(back_dir)
    shutil.copy(our_dir / "dump.rdb", back_dir / "dump.rdb")
    oracle = start_oracle(str(back_dir))
    ours = start_blinkdb(blinkdb_binary, str(our_dir))
    try:
        assert answers(oracle.connect()) == answers(ours.connect())
    finally:
        ours.stop()
        oracle.stop()


def build_more(conn):
    conn.call("TDIGEST.ADD", "td:small", *[str(i) for i in range(30)])
    conn.call("TDIGEST.ADD", "td:empty", "1.5")


def test_redisbloom_replica_follows_blinkdb(blinkdb_binary, tmp_path):
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    replica = start_oracle(str(tmp_path / "replica"))
    reference = start_oracle(str(tmp_path / "reference"))
    try:
        b, rep, ref = ours.connect(), replica.connect(), reference.connect()
        # Compressed digests for the full sync (a snapshot compresses what it
        # writes: a buffered digest would then compress at another moment).
        for conn in (b, ref):
            conn.call("TDIGEST.CREATE", "td:pre")
            conn.call("TDIGEST.ADD", "td:pre", *[str(i * 0.5) for i in range(200)])
            conn.call("TDIGEST.QUANTILE", "td:pre", "0.5")
        rep.call("REPLICAOF", "127.0.0.1", str(ours.port))
        wait_for(lambda: b"master_link_status:up" in rep.call("INFO", "replication").raw,
                 what="the replica's link")
        for conn in (b, ref):
            build(conn)
        wait_for(lambda: rep.call("EXISTS", "td:merged").value == 1, what="replication")
        offset = b.call("INFO", "replication").raw.split(b"master_repl_offset:")[1].split(b"\r")[0]
        wait_for(lambda: b"slave_repl_offset:" + offset in rep.call("INFO", "replication").raw,
                 what="the replica's offset")
        assert answers(rep, KEYS + ["td:pre"]) == answers(ref, KEYS + ["td:pre"])
    finally:
        ours.stop()
        replica.stop()
        reference.stop()


def test_aof_restart_and_resp_rewrite(blinkdb_binary, tmp_path):
    d = tmp_path / "blinkdb"
    ours = start_blinkdb(blinkdb_binary, str(d), "--appendonly", "yes",
                         "--aof-use-rdb-preamble", "no")
    reference = start_oracle(str(tmp_path / "reference"))
    try:
        b, ref = ours.connect(), reference.connect()
        build(b)
        build(ref)
        ours.stop()
        ours = start_blinkdb(blinkdb_binary, str(d), "--appendonly", "yes",
                             "--aof-use-rdb-preamble", "no")
        b = ours.connect()
        assert answers(b) == answers(ref)
        # The rewrite writes RESTORE records (RedisBloom's aof_rewrite does
        # too): they load back to the same digests.
        b.call("BGREWRITEAOF")
        wait_for(lambda: b"aof_rewrite_in_progress:0" in b.call("INFO", "persistence").raw
                 and b"aof_rewrite_scheduled:0" in b.call("INFO", "persistence").raw,
                 what="the rewrite")
        expected = answers(b)
        ours.stop()
        ours = start_blinkdb(blinkdb_binary, str(d), "--appendonly", "yes",
                             "--aof-use-rdb-preamble", "no")
        assert answers(ours.connect()) == expected
    finally:
        ours.stop()
        reference.stop()


def payload(fields, encver=0, name="TDIS-TYPE"):
    """A DUMP payload of one TDIS-TYPE value with the given module fields."""
    charset = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    mid = 0
    for ch in name.encode():
        mid = (mid << 6) | charset.index(ch)
    mid = (mid << 10) | encver
    body = bytes([7]) + b"\x81" + struct.pack(">Q", mid)
    for kind, v in fields:
        if kind == "u":
            body += bytes([2]) + (rdb_len(v) if v < 2**32 else b"\x81" + struct.pack(">Q", v))
        else:
            body += bytes([4]) + struct.pack("<d", v)
    body += bytes([0]) + struct.pack("<H", 10)
    return body + struct.pack("<Q", crc64(body))


def fields(compression=100.0, cap=610, merged=2, unmerged=0, mw=3.0, nodes=((1.0, 1.0), (2.0, 2.0))):
    f = [("d", compression), ("d", 1.0), ("d", 2.0), ("u", cap), ("u", merged), ("u", unmerged),
         ("u", 1), ("d", mw), ("d", 0.0)]
    f += [("d", m) for m, _ in nodes] + [("d", w) for _, w in nodes]
    return f


def test_hostile_restore_is_refused(blinkdb_binary, tmp_path):
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        b = ours.connect()
        good = payload(fields())
        assert b.call("RESTORE", "ok", "0", good).raw == b"+OK\r\n"
        assert b.call("TDIGEST.MAX", "ok").value == b"2"
        hostile = [
            fields(compression=1e12, cap=6 * 10**12 + 10),  # a terabyte buffer
            fields(compression=-1.0),
            fields(compression=float("nan")),
            fields(cap=1 << 40),
            fields(merged=611),
            fields(merged=600, unmerged=11),
            fields(merged=2**64 - 1),
            fields(mw=float("inf")),
            fields(nodes=((1.0, 1.0), (2.0, -2.0))),
            fields(nodes=((1.0, 1.0), (2.0, 1e300))),
            fields(merged=3),  # a node missing
            fields()[:-1],
        ]
        for i, f in enumerate(hostile):
            reply = b.call("RESTORE", f"bad{i}", "0", payload(f))
            assert reply.is_error() and b"Bad data format" in reply.raw, (i, reply.raw)
        assert b.call("RESTORE", "enc", "0", payload(fields(), encver=1)).is_error()
        # Truncated at every byte: refused, the server stays up.
        for cut in range(1, len(good) - 10):
            body = good[:cut]
            b.call("RESTORE", "cut", "0", body + struct.pack("<H", 10)
                   + struct.pack("<Q", crc64(body + struct.pack("<H", 10))))
        assert b.call("PING").raw == b"+PONG\r\n"
        assert b.call("EXISTS", "cut").value == 0
    finally:
        ours.stop()
