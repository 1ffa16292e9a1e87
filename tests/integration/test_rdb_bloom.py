"""Bloom filters in RDB as RedisBloom 2.8's module type `MBbloom--`, against redis-server
7.0.15 with RedisBloom 2.8: DUMP/RESTORE and SAVE/load both ways, no false negative after
any, the same BF.INFO, and damaged or foreign module payloads refused (docs/rdb-format.md,
"Bloom filters")."""

import os
import shutil
import struct
import subprocess
import time

import pytest

from bloom_support import redisbloom_path
from rdb_helpers import client, crc64
from server import ORACLE_BIN, ServerProcess, blinkdb_bin

ITEMS = [f"item:{i}" for i in range(3000)]
PROBES = [f"absent:{i}" for i in range(5000)]


def start_redisbloom(directory):
    return ServerProcess(ORACLE_BIN, str(directory), ["--loadmodule", redisbloom_path()])


def build_filters(conn):
    """Scaling (grown to several links), NONSCALING, EXPANSION 3, BF.ADD default."""
    conn.execute_command("BF.RESERVE", "bf:scaling", 0.01, 100)
    conn.execute_command("BF.MADD", "bf:scaling", *ITEMS)
    conn.execute_command("BF.RESERVE", "bf:fixed", 0.001, 5000, "NONSCALING")
    conn.execute_command("BF.MADD", "bf:fixed", *ITEMS[:1000])
    conn.execute_command("BF.INSERT", "bf:exp3", "CAPACITY", 50, "ERROR", 0.05,
                         "EXPANSION", 3, "ITEMS", *ITEMS[:700])
    conn.execute_command("BF.ADD", "bf:default", "one")
    return {"bf:scaling": ITEMS, "bf:fixed": ITEMS[:1000], "bf:exp3": ITEMS[:700],
            "bf:default": ["one"]}


def info(conn, key):
    return conn.execute_command("BF.INFO", key)


def assert_no_false_negative(conn, key, items):
    found = conn.execute_command("BF.MEXISTS", key, *items)
    assert all(found), f"{key}: {found.count(0)} false negatives of {len(items)}"


@pytest.fixture
def redisbloom(tmp_path):
    srv = start_redisbloom(tmp_path / "redisbloom")
    yield srv
    srv.stop()


def test_redisbloom_dump_restores_in_blinkdb_and_back(blinkdb, redisbloom):
    r, b = client(redisbloom.port), client(blinkdb.port)
    filters = build_filters(r)
    for key, items in filters.items():
        payload = r.dump(key)
        assert b.restore(key, 0, payload)
        assert info(b, key) == info(r, key), key
        assert_no_false_negative(b, key, items)
        # The same bits and hash scheme: every probe answers as RedisBloom does.
        assert b.execute_command("BF.MEXISTS", key, *PROBES) == \
            r.execute_command("BF.MEXISTS", key, *PROBES), key
        # BlinkDB's DUMP of the imported filter is RedisBloom's payload, byte for byte.
        assert b.dump(key) == payload, key
    # Adds after the import grow the chain as RedisBloom does.
    more = [f"more:{i}" for i in range(2000)]
    assert b.execute_command("BF.MADD", "bf:scaling", *more) == \
        r.execute_command("BF.MADD", "bf:scaling", *more)
    assert info(b, "bf:scaling") == info(r, "bf:scaling")
    assert b.dump("bf:scaling") == r.dump("bf:scaling")
    assert b.execute_command("BF.ADD", "bf:fixed", "x") == r.execute_command("BF.ADD", "bf:fixed", "x")
    # And back: RedisBloom loads BlinkDB's DUMP with the same answers.
    for key, items in filters.items():
        assert r.restore(key + ":back", 0, b.dump(key))
        assert info(r, key + ":back") == info(b, key)
        assert_no_false_negative(r, key + ":back", items)
    assert b.type("bf:scaling") == b"MBbloom--"


def test_blinkdb_filters_restore_in_redisbloom(blinkdb, redisbloom):
    r, b = client(redisbloom.port), client(blinkdb.port)
    filters = build_filters(b)
    for key, items in filters.items():
        payload = b.dump(key)
        assert r.restore(key, 0, payload)
        # Items are not kept by BlinkDB's own filters: the export is saturated
        # (every bit set), so nothing added is lost and BF.INFO is unchanged.
        assert info(r, key) == info(b, key), key
        assert_no_false_negative(r, key, items)
        # RESTORE on BlinkDB of its own DUMP keeps that promise too.
        assert b.restore(key + ":copy", 0, payload)
        assert info(b, key + ":copy") == info(b, key)
        assert_no_false_negative(b, key + ":copy", items)


def test_redisbloom_save_loads_in_blinkdb_and_survives_restart(tmp_path):
    rdir = tmp_path / "redisbloom"
    redis = start_redisbloom(rdir)
    try:
        r = client(redis.port)
        filters = build_filters(r)
        r.set("plain", "value")
        want = {key: info(r, key) for key in filters}
        probes = {key: r.execute_command("BF.MEXISTS", key, *PROBES) for key in filters}
        assert r.save()
    finally:
        redis.stop()
    bdir = tmp_path / "blinkdb"
    bdir.mkdir()
    shutil.copy(rdir / "dump.rdb", bdir / "dump.rdb")
    for restart in range(2):
        # First start: dump.rdb loads into the AOF; second: the AOF alone (the
        # rewrite wrote each imported filter as a RESTORE record).
        srv = ServerProcess(blinkdb_bin(), str(bdir), ["--appendonly", "yes"])
        try:
            b = client(srv.port)
            assert b.get("plain") == b"value"
            for key, items in filters.items():
                assert info(b, key) == want[key], (restart, key)
                assert_no_false_negative(b, key, items)
                assert b.execute_command("BF.MEXISTS", key, *PROBES) == probes[key]
            if restart == 0:
                b.execute_command("BF.ADD", "bf:scaling", "after-load")
                items = filters["bf:scaling"] = filters["bf:scaling"] + ["after-load"]
                want["bf:scaling"] = info(b, "bf:scaling")
                probes["bf:scaling"] = b.execute_command("BF.MEXISTS", "bf:scaling", *PROBES)
        finally:
            srv.stop()
        if restart == 0:
            os.remove(bdir / "dump.rdb")


@pytest.mark.parametrize("how", ["SAVE", "BGSAVE"])
def test_blinkdb_save_with_filters_loads_in_redisbloom(server_factory, tmp_path, how):
    srv = server_factory("--appendonly", "yes")
    b = client(srv.port)
    filters = build_filters(b)
    b.set("plain", "value")
    # An imported filter travels exactly, a BlinkDB one saturated.
    r0 = start_redisbloom(tmp_path / "source")
    try:
        rc = client(r0.port)
        rc.execute_command("BF.MADD", "bf:imported", *ITEMS[:500])
        assert b.restore("bf:imported", 0, rc.dump("bf:imported"))
        filters["bf:imported"] = ITEMS[:500]
        imported_probes = rc.execute_command("BF.MEXISTS", "bf:imported", *PROBES)
    finally:
        r0.stop()
    if how == "SAVE":
        assert b.save()
    else:
        b.bgsave()
        for _ in range(200):
            if b.info("persistence")["rdb_bgsave_in_progress"] == 0:
                break
            time.sleep(0.05)
        assert b.info("persistence")["rdb_last_bgsave_status"] == "ok"
    rdir = tmp_path / "redis"
    rdir.mkdir()
    shutil.copy(os.path.join(srv.dir, "dump.rdb"), rdir / "dump.rdb")
    redis = start_redisbloom(rdir)
    try:
        r = client(redis.port)
        assert r.get("plain") == b"value"
        for key, items in filters.items():
            assert info(r, key) == info(b, key), key
            assert_no_false_negative(r, key, items)
        assert r.execute_command("BF.MEXISTS", "bf:imported", *PROBES) == imported_probes
    finally:
        redis.stop()


def test_blinkdb_save_restarts_with_its_filters_exact(tmp_path):
    """BlinkDB's own filters come back bit for bit from its dump.rdb (the blinkdb-bf AUX
    field beside the saturated RedisBloom value), then from the AOF it loads them into;
    redis-check-rdb accepts the file."""
    bdir = tmp_path / "blinkdb"
    srv = ServerProcess(blinkdb_bin(), str(bdir), ["--appendonly", "no"])
    try:
        b = client(srv.port)
        filters = build_filters(b)
        # Several SCANDUMP chunks (1 MiB each).
        b.execute_command("BF.RESERVE", "bf:big", 0.001, 2_000_000)
        b.execute_command("BF.MADD", "bf:big", *ITEMS)
        filters["bf:big"] = ITEMS
        assert len(scandump(b, "bf:big")) > 2
        b.expire("bf:exp3", 1000)
        want = {key: (info(b, key), scandump(b, key), b.execute_command("BF.MEXISTS", key, *PROBES))
                for key in filters}
        assert b.save()
    finally:
        srv.stop()
    # It prints AUX values as they are: the field's bytes are binary.
    check = subprocess.run(["redis-check-rdb", str(bdir / "dump.rdb")], capture_output=True)
    assert check.returncode == 0 and b"RDB looks OK" in check.stdout, check.stdout[-2000:]
    for restart in range(2):
        # First start: dump.rdb loads into a new AOF; second: the AOF alone.
        srv = ServerProcess(blinkdb_bin(), str(bdir), ["--appendonly", "yes"])
        try:
            b = client(srv.port)
            for key, items in filters.items():
                got = (info(b, key), scandump(b, key), b.execute_command("BF.MEXISTS", key, *PROBES))
                assert got == want[key], (restart, key)
                assert_no_false_negative(b, key, items)
            assert 0 < b.ttl("bf:exp3") <= 1000
        finally:
            srv.stop()
        if restart == 0:
            os.remove(bdir / "dump.rdb")


def module_payload(body):
    """A DUMP payload around a MODULE_2 value: RDB version 10 and a valid CRC-64."""
    data = b"\x07" + body + struct.pack("<H", 10)
    return data + struct.pack("<Q", crc64(data))


def with_fixed_crc(payload, body_edit):
    body = bytearray(payload[:-10])
    body_edit(body)
    data = bytes(body) + payload[-10:-8]
    return data + struct.pack("<Q", crc64(data))


def test_damaged_and_foreign_module_payloads(blinkdb, redisbloom):
    r, b = client(redisbloom.port), client(blinkdb.port)
    r.execute_command("BF.MADD", "f", *ITEMS[:200])
    good = r.dump("f")
    raw = lambda *a: blinkdb.connect().call(*a).raw  # noqa: E731
    # A truncated value, a flipped length byte, a huge declared link count,
    # and a wrong CRC: refused, nothing created.
    cases = [
        with_fixed_crc(good, lambda body: body.__delitem__(slice(len(body) - 40, len(body) - 20))),
        with_fixed_crc(good, lambda body: body.__setitem__(12, body[12] ^ 0x40)),
        good[:-1] + bytes([good[-1] ^ 1]),
    ]
    for i, payload in enumerate(cases):
        reply = raw("RESTORE", f"bad{i}", "0", payload)
        assert reply.startswith(b"-ERR"), reply
        assert b.exists(f"bad{i}") == 0
    # A module type BlinkDB does not serve (RedisJSON's, RedisGraph's, a
    # name one letter's case away from RedisBloom's CMSk-TYPE): the error
    # names it.
    for name in ("ReJSON-RL", "graphdata", "CMSk-type"):
        body = rdb_module_id(name, 0)
        reply = raw("RESTORE", "other", "0", module_payload(body + b"\x00"))
        assert reply.startswith(b"-ERR Bad data format"), reply
        assert name.encode() in reply, reply
    # redis-server refuses what BlinkDB refuses.
    for i, payload in enumerate(cases):
        with pytest.raises(Exception):
            r.restore(f"bad{i}", 0, payload)


def rdb_module_id(name, encver):
    charset = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    value = 0
    for c in name.encode():
        value = (value << 6) | charset.index(c)
    value = (value << 10) | encver
    return b"\x81" + struct.pack(">Q", value)


def test_rdb_file_with_a_foreign_module_is_refused_whole(tmp_path):
    """A dump.rdb holding a value of a module BlinkDB does not serve (here
    RedisJSON's type, written by hand: RedisBloom's five types are all served)
    stops the start with the type's name; nothing is loaded half-way."""
    string = lambda b: bytes([len(b)]) + b  # noqa: E731  (short RDB strings)
    data = (b"REDIS0010" + b"\xfe\x00" + b"\x00" + string(b"a") + string(b"1")
            + b"\x07" + string(b"j") + rdb_module_id("ReJSON-RL", 3) + b"\x00" + b"\xff")
    bdir = tmp_path / "blinkdb"
    bdir.mkdir()
    (bdir / "dump.rdb").write_bytes(data + struct.pack("<Q", crc64(data)))
    srv = ServerProcess(blinkdb_bin(), str(bdir), wait=False)
    try:
        srv.proc.wait(timeout=20)
        assert srv.proc.returncode != 0
        assert "ReJSON-RL" in srv.log_text()
    finally:
        srv.stop()


def scandump(conn, key):
    chunks, cursor = [], 0
    while True:
        cursor, data = conn.execute_command("BF.SCANDUMP", key, cursor)
        if cursor == 0:
            return chunks
        chunks.append((cursor, data))


def test_redisbloom_scandump_loads_both_ways(blinkdb, redisbloom):
    """RedisBloom's SCANDUMP format (also what its AOF rewrite writes as BF.LOADCHUNK)."""
    r, b = client(redisbloom.port), client(blinkdb.port)
    filters = build_filters(r)
    for key, items in filters.items():
        for cursor, data in scandump(r, key):
            assert b.execute_command("BF.LOADCHUNK", key, cursor, data)
        assert info(b, key) == info(r, key), key
        assert_no_false_negative(b, key, items)
        assert b.execute_command("BF.MEXISTS", key, *PROBES) == \
            r.execute_command("BF.MEXISTS", key, *PROBES), key
        assert b.dump(key) == r.dump(key)
        # And back: BlinkDB's SCANDUMP of an imported filter is RedisBloom's.
        assert scandump(b, key) == scandump(r, key)
        for cursor, data in scandump(b, key):
            assert r.execute_command("BF.LOADCHUNK", key + ":back", cursor, data)
        assert info(r, key + ":back") == info(r, key)
    raw = lambda *a: blinkdb.connect().call(*a).raw  # noqa: E731
    header = scandump(r, "bf:scaling")[0][1]
    assert raw("BF.LOADCHUNK", "bad", 1, header[:-1]) == b"-ERR received bad data\r\n"
    assert b.exists("bad") == 0
