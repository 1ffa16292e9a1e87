"""Filters BlinkDB made travel exactly between BlinkDB servers: MIGRATE to a BlinkDB
target sends them as BlinkDB's module type `blinkdbBF` (the filter's BF.SCANDUMP, layout in
docs/rdb-format.md), which RESTORE on BlinkDB rebuilds bit for bit. To redis-server (with
RedisBloom) MIGRATE still sends RedisBloom's value (saturated), DUMP by a client keeps
returning that portable form, and redis-server answers a blinkdbBF payload with its own
`Bad data format`. Damaged native payloads are refused without a crash."""

import struct

import pytest

from aof_helpers import bgrewriteaof, start_aof_server, wait_rewrite_done
from bloom_support import redisbloom_path
from rdb_helpers import client, crc64, rdb_len
from server import ORACLE_BIN, ServerProcess

NOT_ADDED = [f"absent:{i}" for i in range(10_000)]


def build_filters(conn, prefix=""):
    """User-backend filters of several sizes: one link, scaled to several links,
    NONSCALING, EXPANSION 3."""
    items = {}
    k = prefix + "bf:small"
    conn.execute_command("BF.ADD", k, "one")
    items[k] = ["one"]
    k = prefix + "bf:scaled"
    conn.execute_command("BF.RESERVE", k, 0.01, 100)
    items[k] = [f"s{i}" for i in range(3000)]
    conn.execute_command("BF.MADD", k, *items[k])
    assert conn.execute_command("BF.INFO", k, "FILTERS")[-1] >= 4
    k = prefix + "bf:fixed"
    conn.execute_command("BF.RESERVE", k, 0.001, 5000, "NONSCALING")
    items[k] = [f"f{i}" for i in range(1000)]
    conn.execute_command("BF.MADD", k, *items[k])
    k = prefix + "bf:exp3"
    conn.execute_command("BF.INSERT", k, "CAPACITY", 50, "ERROR", 0.05, "EXPANSION", 3,
                         "ITEMS", *[f"e{i}" for i in range(700)])
    items[k] = [f"e{i}" for i in range(700)]
    k = prefix + "bf:big"
    conn.execute_command("BF.RESERVE", k, 0.0001, 200_000)
    items[k] = [f"b{i}" for i in range(20_000)]
    for i in range(0, len(items[k]), 5000):
        conn.execute_command("BF.MADD", k, *items[k][i:i + 5000])
    return items


def answers(conn, key, items):
    return conn.execute_command("BF.MEXISTS", key, *items, *NOT_ADDED)


@pytest.fixture
def pair(server_factory):
    return server_factory(name="source"), server_factory(name="target")


def migrate(conn, port, key, *extra, db=0):
    return conn.execute_command("MIGRATE", "127.0.0.1", port, key, db, 5000, *extra)


@pytest.mark.parametrize("how", ["single", "keys", "copy", "replace"])
def test_migrate_between_blinkdb_is_exact(pair, how):
    src, dst = pair
    s, d = client(src.port), client(dst.port)
    items = build_filters(s)
    before = {k: answers(s, k, v) for k, v in items.items()}
    info = {k: s.execute_command("BF.INFO", k) for k in items}
    assert all(all(a[:len(items[k])]) for k, a in before.items())
    if how == "keys":
        assert migrate(s, dst.port, "", "KEYS", *items) == b"OK"
    else:
        for key in items:
            if how == "replace":
                d.execute_command("BF.ADD", key, "in-the-way")
                assert migrate(s, dst.port, key, "REPLACE") == b"OK"
            elif how == "copy":
                assert migrate(s, dst.port, key, "COPY") == b"OK"
            else:
                assert migrate(s, dst.port, key) == b"OK"
    for key, v in items.items():
        assert answers(d, key, v) == before[key], key
        assert d.execute_command("BF.INFO", key) == info[key], key
        if how == "copy":
            assert answers(s, key, v) == before[key], key
        else:
            assert s.exists(key) == 0
    # The migrated filter is a filter of the target's own: it keeps growing exactly.
    more = [f"more:{i}" for i in range(2000)]
    d.execute_command("BF.MADD", "bf:scaled", *more)
    assert all(d.execute_command("BF.MEXISTS", "bf:scaled", *more))
    # And it comes back exactly too.
    assert migrate(d, src.port, "bf:exp3", "REPLACE") == b"OK"
    assert answers(s, "bf:exp3", items["bf:exp3"]) == before["bf:exp3"]


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_migrated_filter_survives_target_restart(server_factory, blinkdb_binary, tmp_path,
                                                 preamble):
    """The target's AOF holds the RESTORE with the native payload; after a rewrite, its
    base holds the filter (RDB: the blinkdb-bf field; RESP: bound to its files)."""
    src = server_factory(name="source")
    directory = str(tmp_path / "target")
    flags = ("--aof-use-rdb-preamble", preamble)
    dst = start_aof_server(blinkdb_binary, directory, *flags)
    s = client(src.port)
    items = build_filters(s)
    before = {k: answers(s, k, v) for k, v in items.items()}
    try:
        assert migrate(s, dst.port, "", "KEYS", *items) == b"OK"
    finally:
        dst.stop()
    for rewrite in (False, True):
        dst = start_aof_server(blinkdb_binary, directory, *flags, log_dir=directory + "-log")
        try:
            d = client(dst.port)
            for key, v in items.items():
                assert answers(d, key, v) == before[key], (key, rewrite)
            if not rewrite:
                bgrewriteaof(dst.connect())
                wait_rewrite_done(dst.connect())
        finally:
            dst.stop()


def test_migrate_to_redisbloom_sends_the_redisbloom_form(server_factory, tmp_path):
    src = server_factory(name="source")
    oracle = ServerProcess(ORACLE_BIN, str(tmp_path / "redisbloom"),
                           ["--loadmodule", redisbloom_path()])
    try:
        s, r = client(src.port), client(oracle.port)
        items = build_filters(s)
        info = {k: s.execute_command("BF.INFO", k) for k in items}
        assert migrate(s, oracle.port, "", "KEYS", *items) == b"OK"
        for key, v in items.items():
            assert r.type(key) == b"MBbloom--"
            assert r.execute_command("BF.INFO", key) == info[key], key
            assert all(r.execute_command("BF.MEXISTS", key, *v)), key
        # DUMP by a client is RedisBloom's form too: it restores in redis-server.
        build_filters(s, prefix="again:")
        assert r.restore("dumped", 0, s.dump("again:bf:scaled"))
        assert all(r.execute_command("BF.MEXISTS", "dumped", *items["bf:scaled"]))
    finally:
        oracle.stop()


def native_payload(conn, key):
    """The payload MIGRATE sends to BlinkDB, built from the filter's BF.SCANDUMP: module
    type blinkdbBF (encoding 1), one STRING field holding version 1, the header chunk,
    then every data chunk with the cursor returned with it."""
    cursor, header = conn.execute_command("BF.SCANDUMP", key, 0)
    field = b"\x01" + struct.pack("<I", len(header)) + header
    while True:
        cursor, data = conn.execute_command("BF.SCANDUMP", key, cursor)
        if cursor == 0:
            break
        field += struct.pack("<qI", cursor, len(data)) + data
    return module_payload(module_id("blinkdbBF", 1) + rdb_len(5) + rdb_len(len(field)) + field
                          + rdb_len(0))


def module_id(name, encver):
    charset = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    value = 0
    for c in name.encode():
        value = (value << 6) | charset.index(c)
    return b"\x81" + struct.pack(">Q", (value << 10) | encver)


def module_payload(body):
    data = b"\x07" + body + struct.pack("<H", 10)
    return data + struct.pack("<Q", crc64(data))


def refix(payload, edit):
    body = bytearray(payload[:-10])
    edit(body)
    data = bytes(body) + payload[-10:-8]
    return data + struct.pack("<Q", crc64(data))


def test_native_payload_layout_and_damage(pair, tmp_path):
    src, dst = pair
    s, d = client(src.port), client(dst.port)
    items = [f"x{i}" for i in range(500)]
    s.execute_command("BF.RESERVE", "f", 0.01, 100)
    s.execute_command("BF.MADD", "f", *items)
    before = answers(s, "f", items)
    good = native_payload(s, "f")
    # The documented layout restores exactly.
    assert d.restore("f", 0, good) == b"OK"
    assert answers(d, "f", items) == before
    raw = lambda *a: dst.connect().call(*a).raw  # noqa: E731
    assert raw("RESTORE", "f", "0", good).startswith(b"-BUSYKEY")
    # 0x07, the module id (9 bytes), the STRING opcode, then the field's length: the
    # field (its version byte first) starts after that length.
    first = good[11] >> 6
    header_at = 11 + {0: 1, 1: 2}.get(first, 5)
    cases = {
        "crc": (good[:-1] + bytes([good[-1] ^ 1]), b"-ERR DUMP payload version or checksum are wrong"),
        "truncated": (refix(good, lambda b: b.__delitem__(slice(len(b) - 30, len(b) - 1))),
                      b"-ERR Bad data format"),
        "version": (refix(good, lambda b: b.__setitem__(header_at, 9)), b"-ERR Bad data format"),
        "huge header": (refix(good, lambda b: b.__setitem__(slice(header_at + 1, header_at + 5),
                                                            b"\xff\xff\xff\x7f")),
                        b"-ERR Bad data format"),
        "encver": (refix(good, lambda b: b.__setitem__(9, b[9] ^ 2)), b"-ERR Bad data format"),
        "extra": (refix(good, lambda b: b.__setitem__(slice(len(b) - 1, len(b)), b"\x05\x01z\x00")),
                  b"-ERR Bad data format"),
    }
    for name, (payload, want) in cases.items():
        reply = raw("RESTORE", f"bad-{name}", "0", payload)
        assert reply.startswith(want), (name, reply)
        assert d.exists(f"bad-{name}") == 0, name
    # A flipped bit inside the bits: refused or loaded, never a crash.
    flipped = refix(good, lambda b: b.__setitem__(len(b) - 40, b[len(b) - 40] ^ 0x10))
    reply = raw("RESTORE", "flipped", "0", flipped)
    assert reply == b"+OK" or reply.startswith(b"-ERR Bad data format"), reply
    assert d.ping()


def test_redis_server_refuses_the_native_payload(blinkdb, tmp_path):
    oracle = ServerProcess(ORACLE_BIN, str(tmp_path / "redisbloom"),
                           ["--loadmodule", redisbloom_path()])
    try:
        b = client(blinkdb.port)
        b.execute_command("BF.MADD", "f", *[f"x{i}" for i in range(100)])
        payload = native_payload(b, "f")
        reply = oracle.connect().call("RESTORE", "f", "0", payload).raw
        assert reply.startswith(b"-ERR Bad data format"), reply
    finally:
        oracle.stop()
