"""SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO and LCS against
redis-server 7: replies byte for byte in RESP2 and RESP3 (fixed cases, bad input and
a seeded random run), the records the AOF gets (what Redis propagates), restarts and
redis-server loading BlinkDB's AOF, and memory bounded by proto-max-bulk-len for
offsets near 2^32."""

import os
import random

import pytest

import command_gen as gen
from aof_helpers import aof_path, bgrewriteaof, start_aof_server, wait_rewrite_done
from resp import RespConnection
from server import ORACLE_BIN, ServerProcess
from test_persistence_redis_interop import assert_same_data, check_aof, redis_loads, snapshot

BIG = b"B" * 40_000  # above the 16kb blob-threshold: BlinkDB keeps it in its log

CASES = [
    # SETBIT / GETBIT
    ("SETBIT", "k", "7", "1"), ("GET", "k"), ("SETBIT", "k", "7", "0"),
    ("SETBIT", "k", "100", "1"), ("STRLEN", "k"), ("SETBIT", "k", "-1", "1"),
    ("SETBIT", "k", "4294967296", "1"), ("SETBIT", "k", "1", "2"), ("SETBIT", "k", "1", "-1"),
    ("SETBIT", "k", "x", "1"), ("SETBIT", "k", "1", "x"), ("SETBIT", "k", "", "1"),
    ("SETBIT", "k", "+1", "1"), ("SETBIT", "k", "1", "01"), ("SETBIT", "k", "x", "x"),
    ("GETBIT", "k", "100"), ("GETBIT", "k", "101"), ("GETBIT", "k", "99999999"),
    ("GETBIT", "nokey", "3"), ("GETBIT", "k", "-1"), ("GETBIT", "k", "4294967296"),
    ("GETBIT", "k", "4294967295"), ("GETBIT", "nokey", "x"),
    ("SET", "n", "12345"), ("SETBIT", "n", "3", "1"), ("GET", "n"), ("GETBIT", "n", "2"),
    # BITCOUNT
    ("SET", "s", "foobar"), ("BITCOUNT", "s"), ("BITCOUNT", "s", "0", "0"),
    ("BITCOUNT", "s", "1", "1"), ("BITCOUNT", "s", "1", "1", "BYTE"),
    ("BITCOUNT", "s", "5", "30", "BIT"), ("BITCOUNT", "s", "-5", "-1", "bit"),
    ("BITCOUNT", "s", "-1", "-5"), ("BITCOUNT", "s", "-1", "-5", "xx"), ("BITCOUNT", "s", "1"),
    ("BITCOUNT", "s", "1", "2", "3", "4"), ("BITCOUNT", "nokey", "1"), ("BITCOUNT", "s", "a", "1"),
    ("BITCOUNT", "s", "1", "a"), ("BITCOUNT", "s", "1", "2", "foo"),
    ("BITCOUNT", "s", "0", "-1", "bIt"), ("BITCOUNT", "s", "100", "200"),
    ("BITCOUNT", "s", "-100", "-50"), ("BITCOUNT", "s", "-9223372036854775808", "-1", "BIT"),
    ("BITCOUNT", "s", "0", "9223372036854775807", "BIT"), ("BITCOUNT", "s", "3", "3", "BIT"),
    ("BITCOUNT", "s", "0", "-1", "bit\x00junk"), ("SET", "e", ""), ("BITCOUNT", "e", "0", "-1"),
    # BITPOS
    ("SET", "p", b"\xff\xf0\x00"), ("BITPOS", "p", "0"), ("BITPOS", "p", "1"),
    ("BITPOS", "p", "1", "2"), ("BITPOS", "p", "0", "0", "0"), ("BITPOS", "p", "0", "0", "-1"),
    ("BITPOS", "p", "0", "2", "-1"), ("BITPOS", "p", "0", "7", "15", "bit"),
    ("BITPOS", "p", "1", "7", "15", "bit"), ("BITPOS", "p", "1", "13", "23", "BIT"),
    ("BITPOS", "p", "0", "3", "5", "bit"), ("BITPOS", "p", "1", "3", "5", "bit"),
    ("BITPOS", "p", "1", "9", "10", "bit"), ("BITPOS", "p", "0", "9", "10", "bit"),
    ("BITPOS", "p", "2"), ("BITPOS", "p", "x"), ("BITPOS", "nokey", "1"),
    ("BITPOS", "nokey", "0", "1", "2", "zz"), ("BITPOS", "p", "0", "1", "2", "zz"),
    ("BITPOS", "p", "0", "x", "2", "zz"), ("BITPOS", "p", "0", "1", "x", "zz"),
    ("BITPOS", "p", "0", "1", "x"), ("BITPOS", "p", "0", "1", "2", "bit", "extra"),
    ("BITPOS", "p", "1", "-1"), ("BITPOS", "p", "0", "100"), ("BITPOS", "e", "0"),
    ("SET", "ff", b"\xff\xff\xff"), ("BITPOS", "ff", "0"), ("BITPOS", "ff", "0", "0"),
    ("BITPOS", "ff", "0", "0", "-1"), ("BITPOS", "ff", "0", "0", "-1", "bit"),
    ("SET", "z", b"\x00" * 70), ("BITPOS", "z", "1"), ("BITPOS", "z", "0", "33"),
    # BITOP
    ("BITOP", "AND", "d", "s", "p"), ("GET", "d"), ("BITOP", "or", "d", "s", "p", "nokey"),
    ("GET", "d"), ("BITOP", "xor", "d", "s", "p"), ("GET", "d"), ("BITOP", "not", "d", "s"),
    ("GET", "d"), ("BITOP", "not", "d", "s", "p"), ("BITOP", "nand", "d", "s"),
    ("BITOP", "and\x00x", "d", "s"), ("BITOP", "and", "d", "nokey"), ("EXISTS", "d"),
    ("BITOP", "and", "d", "nokey"), ("SET", "d", "v", "EX", "100"), ("BITOP", "or", "d", "s"),
    ("TTL", "d"), ("BITOP", "or", "s", "s", "s"), ("GET", "s"), ("BITOP", "and", "d2", "e"),
    ("EXISTS", "d2"), ("SET", "w", b"\xaa" * 100), ("BITOP", "XOR", "d3", "w", "z", "s"),
    ("GET", "d3"),
    # BITFIELD / BITFIELD_RO
    ("BITFIELD", "bf", "set", "i8", "0", "-100"),
    ("BITFIELD", "bf", "set", "i8", "0", "101", "get", "i8", "0", "incrby", "u4", "#3", "20"),
    ("BITFIELD", "bf", "overflow", "sat", "incrby", "i8", "0", "100", "overflow", "fail",
     "incrby", "i8", "0", "100", "overflow", "wrap", "incrby", "i8", "0", "100"),
    ("BITFIELD", "bf", "get", "u64", "0"), ("BITFIELD", "bf", "get", "i65", "0"),
    ("BITFIELD", "bf", "get", "i0", "0"), ("BITFIELD", "bf", "get", "x8", "0"),
    ("BITFIELD", "bf", "get", "u8"), ("BITFIELD", "bf", "overflow", "foo", "get", "u8", "0"),
    ("BITFIELD", "bf", "overflow"), ("BITFIELD", "bf", "bogus"),
    ("BITFIELD", "bf", "get", "u8", "#-1"), ("BITFIELD", "bf", "get", "u8", "#536870911"),
    ("BITFIELD", "bf", "get", "u8", "#536870912"), ("BITFIELD", "bf", "get", "u8", "4294967288"),
    ("BITFIELD", "bf", "get", "u8", "4294967296"), ("BITFIELD", "bf", "get", "i64", "#x"),
    ("BITFIELD", "bf", "get", "i64", "#1152921504606846976"),
    ("BITFIELD", "bf", "set", "u8", "0", "x"), ("BITFIELD", "bf", "set", "u8", "#x", "1"),
    ("BITFIELD", "bf", "set", "u8", "0", "-1"), ("BITFIELD", "bf", "get", "u8", "0"),
    ("BITFIELD", "bf", "overflow", "sat", "set", "u8", "0", "-1", "get", "u8", "0"),
    ("BITFIELD", "bf", "overflow", "fail", "set", "i4", "0", "100"),
    ("BITFIELD_RO", "bf", "get", "u8", "0", "get", "i4", "4"),
    ("BITFIELD_RO", "bf", "set", "u8", "0", "1"), ("BITFIELD_RO", "bf", "get", "u8", "#x"),
    ("BITFIELD_RO", "bf"), ("BITFIELD", "bf"), ("BITFIELD_RO", "nokey", "get", "u8", "0"),
    ("BITFIELD", "bf", "GET", "u8\x00x", "0"), ("BITFIELD", "bf", "get", "I8", "0"),
    ("BITFIELD", "nk", "overflow", "fail", "incrby", "u2", "100", "5"), ("GET", "nk"),
    ("BITFIELD", "bf", "set", "i64", "0", "-9223372036854775808", "incrby", "i64", "0", "-1",
     "overflow", "sat", "incrby", "i64", "0", "-1"),
    ("BITFIELD", "bf", "set", "u63", "3", "9223372036854775807", "incrby", "u63", "3", "1",
     "overflow", "sat", "incrby", "u63", "3", "100"),
    ("BITFIELD", "bf", "set", "i1", "#7", "1", "get", "i1", "#7", "get", "u1", "#7"),
    ("GET", "bf"), ("BITFIELD", "s", "get", "u8", "1000", "set", "u8", "#2", "9"), ("GET", "s"),
    # LCS
    ("SET", "a", "ohmytext"), ("SET", "b", "mynewtext"), ("LCS", "a", "b"),
    ("LCS", "a", "b", "LEN"), ("LCS", "a", "b", "IDX"), ("LCS", "a", "b", "IDX", "MINMATCHLEN", "4"),
    ("LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"),
    ("LCS", "a", "b", "IDX", "WITHMATCHLEN"), ("LCS", "a", "b", "LEN", "IDX"),
    ("LCS", "a", "b", "MINMATCHLEN"), ("LCS", "a", "b", "MINMATCHLEN", "x"), ("LCS", "a", "b", "foo"),
    ("LCS", "a", "nokey"), ("LCS", "a", "nokey", "IDX"), ("LCS", "nokey", "nokey", "LEN"),
    ("LCS", "a", "b", "MINMATCHLEN", "-5", "IDX"), ("LCS", "a", "a", "idx", "withmatchlen"),
    ("SET", "r1", "ACCGGTCGAGTGCGCGGAAGCCGGCCGAA"), ("SET", "r2", "GTCGTTCGGAATGCCGTTGCTCTGTAAA"),
    ("LCS", "r1", "r2"), ("LCS", "r1", "r2", "IDX", "WITHMATCHLEN"),
    ("LCS", "r1", "r2", "IDX", "MINMATCHLEN", "3", "LEN"),
    ("LCS", "r2", "r1", "IDX", "MINMATCHLEN", "2", "WITHMATCHLEN"),
    # values kept in BlinkDB's log
    ("SET", "big", BIG), ("SET", "big2", BIG[:20_000] + b"xyz"), ("GETBIT", "big", "9"),
    ("BITCOUNT", "big"), ("BITCOUNT", "big", "10", "-10", "BIT"), ("BITPOS", "big", "0", "3"),
    ("BITFIELD_RO", "big", "get", "u16", "#100"), ("SETBIT", "big", "9", "0"),
    ("SETBIT", "big", "9", "0"), ("GET", "big"), ("BITFIELD", "big2", "incrby", "u8", "#5", "1"),
    ("BITOP", "AND", "bigd", "big", "big2"), ("GET", "bigd"), ("LCS", "big", "a", "LEN"),
    ("SETBIT", "big", "330000", "1"), ("STRLEN", "big"),
]


def wrong_type_cases():
    """Every command against a key of another type (a set, a hash, and on BlinkDB a
    Bloom filter where the oracle has a set)."""
    return [
        ("BITOP", "AND", "d", "s", "wt"), ("BITOP", "AND", "wt2", "s"), ("TYPE", "wt2"),
        ("SETBIT", "wt", "1", "1"), ("SETBIT", "wt", "x", "1"), ("GETBIT", "wt", "1"),
        ("BITCOUNT", "wt"), ("BITCOUNT", "wt", "1"), ("BITPOS", "wt", "1"), ("BITPOS", "wt", "3"),
        ("BITPOS", "wt", "1", "2", "3", "4", "5"), ("BITFIELD", "wt", "get", "u8", "0"),
        ("BITFIELD", "wt", "set", "u8", "0", "1"), ("BITFIELD", "wt"),
        ("BITFIELD", "wt", "get", "u99", "0"), ("BITFIELD_RO", "wt", "get", "u8", "0"),
        ("BITFIELD_RO", "wt"), ("LCS", "wt", "s"), ("LCS", "s", "wt"), ("LCS", "wt", "s", "foo"),
    ]


def run_both(oracle, ours, commands, where):
    mismatches = []
    for cmd in commands:
        a, b = oracle.call(*cmd), ours.call(*cmd)
        if a.raw != b.raw:
            mismatches.append(f"{where}: {cmd!r}\n  redis: {a.raw[:300]!r}\n  ours:  {b.raw[:300]!r}")
    assert not mismatches, "\n".join(mismatches[:20])


@pytest.mark.parametrize("proto", ["2", "3"])
def test_replies_match_redis(oracle, blinkdb, proto):
    with oracle.connect() as a, blinkdb.connect() as b:
        if proto == "3":
            assert not a.call("HELLO", "3").is_error() and not b.call("HELLO", "3").is_error()
        run_both(a, b, CASES, f"RESP{proto}")
        for kind in ("SADD", "HSET"):
            for conn in (a, b):
                conn.call("DEL", "wt")
                conn.call(kind, "wt", "x", "y")
            run_both(a, b, wrong_type_cases(), f"RESP{proto} wrong type ({kind})")
        if b.call("BF.ADD", "wtb", "x").is_error():  # proving the test on redis-server
            return
        a.call("SADD", "wtb", "x")
        run_both(a, b, [(c[0],) + tuple("wtb" if x == "wt" else x for x in c[1:])
                        for c in wrong_type_cases()], f"RESP{proto} wrong type (Bloom)")


class BitGenerator(gen.CommandGenerator):
    """command_gen's bit commands over short values, with the string writes that
    shape them."""

    def value(self):
        r = self.rng.random()
        if r < 0.05:
            return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(17_000, 20_000)))
        if r < 0.15:
            return self.rng.choice(gen.EDGE_INTEGERS)
        return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(0, 40)))

    _table = [
        (3, gen.CommandGenerator._setbit), (2, gen.CommandGenerator._getbit),
        (3, gen.CommandGenerator._bitcount), (3, gen.CommandGenerator._bitpos),
        (2, gen.CommandGenerator._bitop), (4, gen.CommandGenerator._bitfield),
        (1, gen.CommandGenerator._lcs), (2, gen.CommandGenerator._set),
        (1, gen.CommandGenerator._append), (1, gen.CommandGenerator._setrange),
        (1, gen.CommandGenerator._del), (2, gen.CommandGenerator._get),
        (1, gen.CommandGenerator._strlen), (0.5, gen.CommandGenerator._expire),
    ]
    _makers = [f for _, f in _table]


@pytest.mark.parametrize("seed", [3, 17, 29])
def test_random_bit_commands_match_redis(oracle, blinkdb, seed):
    g = BitGenerator(seed)
    with oracle.connect() as a, blinkdb.connect() as b:
        if seed % 2:
            a.call("HELLO", "3")
            b.call("HELLO", "3")
        mismatches = []
        for _ in range(1500):
            args, _kind = g.command()
            ra, rb = a.call(*args), b.call(*args)
            if ra.raw != rb.raw:
                mismatches.append(f"{args!r:.200}\n  redis: {ra.raw[:200]!r}\n  ours:  {rb.raw[:200]!r}")
        final = [("GET", k) for k in gen.KEY_ALPHABET] + [("DBSIZE",)]
        for cmd in final:
            ra, rb = a.call(*cmd), b.call(*cmd)
            if ra.raw != rb.raw:
                mismatches.append(f"final {cmd!r}\n  redis: {ra.raw[:200]!r}\n  ours:  {rb.raw[:200]!r}")
        assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:10])


# Writes whose records, in order, the AOF must get exactly as redis-server logs them.
AOF_SCRIPT = [
    ("SETBIT", "s", "3", "1"), ("SETBIT", "s", "3", "1"), ("SETBIT", "s", "3", "0"),
    ("SETBIT", "s", "100", "0"), ("SETBIT", "s", "100", "0"), ("SETBIT", "s", "x", "1"),
    ("GETBIT", "s", "3"), ("BITFIELD", "b", "get", "u8", "0"),
    ("BITFIELD", "b", "get", "u8", "0", "set", "u8", "0", "5", "overflow", "fail", "incrby",
     "u8", "0", "300", "incrby", "u8", "0", "1"),
    ("BITFIELD", "b", "set", "u8", "0", "6"), ("BITFIELD", "b", "set", "u8", "0", "6"),
    ("BITFIELD", "b", "overflow", "fail", "incrby", "u8", "0", "255"),
    ("BITFIELD", "b", "incrby", "u8", "0", "0"), ("BITFIELD_RO", "b", "get", "u8", "0"),
    ("BITOP", "and", "d", "s", "nosuch"), ("BITOP", "and", "e", "nosuch"),
    ("BITOP", "or", "e", "s"), ("BITOP", "and", "e", "nosuch"), ("BITOP", "not", "f", "b"),
    ("BITCOUNT", "s"), ("BITPOS", "s", "1"), ("LCS", "s", "b"),
]


def aof_commands(directory):
    """Every command in the incr files, names lowercased, without SELECT."""
    names = sorted(n for n in os.listdir(aof_path(directory)) if n.endswith(".incr.aof"))
    data = b"".join(open(aof_path(directory, n), "rb").read() for n in names)
    commands, i = [], 0
    while i < len(data):
        if data[i:i + 1] == b"#":  # BlinkDB's checksum annotations
            i = data.index(b"\n", i) + 1
            continue
        end = data.index(b"\r\n", i)
        count, i = int(data[i + 1:end]), end + 2
        args = []
        for _ in range(count):
            end = data.index(b"\r\n", i)
            length = int(data[i + 1:end])
            args.append(data[end + 2:end + 2 + length])
            i = end + 2 + length + 2
        if args[0].lower() != b"select":
            commands.append([args[0].lower()] + args[1:])
    return commands


def test_aof_records_what_redis_propagates(blinkdb_binary, tmp_path):
    """The records match redis-server's, and BlinkDB loads redis-server's AOF."""
    logged, data = {}, {}
    servers = (("redis", ORACLE_BIN, ("--aof-use-rdb-preamble", "no")),
               ("blinkdb", blinkdb_binary, ()))
    for kind, binary, extra in servers:
        directory = str(tmp_path / kind)
        srv = start_aof_server(binary, directory, *extra)
        try:
            with srv.connect() as conn:
                for cmd in AOF_SCRIPT:
                    conn.call(*cmd)
                data[kind] = snapshot(conn)
        finally:
            srv.stop()
        logged[kind] = aof_commands(directory)
    assert logged["blinkdb"] == logged["redis"]
    assert [c[0] for c in logged["redis"]].count(b"setbit") == 3
    srv = start_aof_server(blinkdb_binary, str(tmp_path / "redis"),
                           log_dir=str(tmp_path / "blinkdb-on-redis-aof"))
    try:
        with srv.connect() as conn:
            assert_same_data(data["redis"], snapshot(conn), "BlinkDB loading redis-server's AOF")
    finally:
        srv.stop()


def workload(conn):
    """Bitmaps grown bit by bit, fields, BITOP results, and values kept in the log."""
    rng = random.Random(7)
    # Long enough for every field below: a BITFIELD whose writes all fail would pad the
    # string, which redis-server does not propagate (test_failed_bitfield_write_...).
    commands = [("SETBIT", f"bf:{i}", "4000", "0") for i in range(7)]
    for i in range(400):
        commands.append(("SETBIT", f"bm:{i % 13}", str(rng.randint(0, 5000)), str(rng.randint(0, 1))))
        commands.append(("BITFIELD", f"bf:{i % 7}", "OVERFLOW", rng.choice(["WRAP", "SAT", "FAIL"]),
                         "INCRBY", rng.choice(["i5", "u7", "i64", "u63"]), f"#{rng.randint(0, 50)}",
                         str(rng.randint(-300, 300)), "GET", "u8", str(rng.randint(0, 400))))
    commands += [
        ("SET", "big", BIG), ("SETBIT", "big", "17", "1"), ("SET", "big2", BIG),
        ("BITFIELD", "big2", "SET", "u16", "#3", "77"), ("SET", "big3", BIG),
        ("SETBIT", "big3", "400000", "1"), ("SET", "ttl", "abc", "EX", "5000"),
        ("SETBIT", "ttl", "200", "1"), ("BITOP", "XOR", "x1", "bm:1", "bm:2", "big"),
        ("BITOP", "NOT", "x2", "bf:3"), ("SET", "x3", "v", "EX", "100"),
        ("BITOP", "OR", "x3", "bm:4"), ("SET", "x4", "v"), ("BITOP", "AND", "x4", "nosuch"),
    ]
    for reply in conn.pipeline(commands):
        assert not reply.is_error(), reply.raw


def test_restart_and_redis_load_the_aof(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            workload(conn)
            expected = snapshot(conn)
    finally:
        srv.stop()
    assert b"x4" not in expected[0] and expected[0][b"x3"][1] == -1
    check_aof(directory)
    redis_loads(tmp_path, directory, expected, "bit commands")

    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            assert_same_data(expected, snapshot(conn), "BlinkDB after a restart")
            bgrewriteaof(conn)
            assert wait_rewrite_done(conn)["aof_last_bgrewrite_status"] == "ok"
            conn.call("SETBIT", "big", "18", "1")
            conn.call("BITFIELD", "big2", "INCRBY", "u16", "#3", "1")
            expected = snapshot(conn)
    finally:
        srv.stop()
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            assert_same_data(expected, snapshot(conn), "BlinkDB after a rewrite and a restart")
    finally:
        srv.stop()
    check_aof(directory)
    redis_loads(tmp_path, directory, expected, "bit commands after a rewrite")


def test_offsets_near_2_32_stay_bounded(oracle, blinkdb):
    """Offsets past proto-max-bulk-len are refused before anything is allocated, for
    every command that takes one, and the limit follows CONFIG SET."""
    refused = [
        ("SETBIT", "k", "4294967296", "1"), ("GETBIT", "k", "4294967296"),
        ("BITFIELD", "k", "SET", "u8", "4294967296", "1"),
        ("BITFIELD", "k", "SET", "i64", "#67108864", "1"),
        ("BITFIELD", "k", "INCRBY", "u8", "#536870912", "1"),
        ("BITFIELD_RO", "k", "GET", "u8", "9223372036854775807"),
        ("BITFIELD", "k", "GET", "i64", "#1152921504606846976"),  # wraps to 0, as in Redis
        ("CONFIG", "SET", "proto-max-bulk-len", "1mb"),
        ("SETBIT", "k", "8388608", "1"), ("SETBIT", "k", "8388607", "1"), ("STRLEN", "k"),
        ("BITFIELD", "k", "SET", "u8", "#1048576", "1"), ("BITFIELD", "k", "SET", "u8", "#1048575", "1"),
        ("SET", "l1", b"a" * 600), ("SET", "l2", b"b" * 600), ("LCS", "l1", "l2", "LEN"),
        ("SET", "l2", b"a" * 400), ("LCS", "l1", "l2", "LEN"),
    ]
    rss = blinkdb.rss_kb()
    with oracle.connect() as a, blinkdb.connect() as b:
        run_both(a, b, refused, "bounded")
    assert blinkdb.rss_kb() - rss < 32 * 1024


def test_setbit_at_the_last_allowed_offset(blinkdb):
    """SETBIT k 4294967295 1 is allowed with the default 512 MB limit, as in Redis: a
    512 MB string, not more."""
    rss = blinkdb.rss_kb()
    with blinkdb.connect(timeout=60) as conn:
        assert conn.call("SETBIT", "k", "4294967295", "1").raw == b":0\r\n"
        assert conn.call("STRLEN", "k").raw == b":536870912\r\n"
        grown = blinkdb.rss_kb() - rss
        assert conn.call("GETBIT", "k", "4294967295").raw == b":1\r\n"
        assert conn.call("BITCOUNT", "k").raw == b":1\r\n"
        assert conn.call("BITPOS", "k", "1").raw == b":4294967295\r\n"
        assert conn.call("BITFIELD", "k", "GET", "u8", "4294967288").raw == b"*1\r\n:1\r\n"
        assert conn.call("SETBIT", "k", "4294967294", "1").raw == b":0\r\n"
        assert conn.call("DEL", "k").raw == b":1\r\n"
    assert 500 * 1024 < grown < 700 * 1024, grown


def test_bitmap_grown_bit_by_bit(blinkdb):
    """A bitmap grown bit by bit to 8 MB (changed in place, with room reserved ahead)
    holds every bit where it was set."""
    with blinkdb.connect() as conn:
        commands = [("SETBIT", "grow", str(i * 4096 + 5), "1") for i in range(16384)]
        for reply in conn.pipeline(commands):
            assert reply.raw == b":0\r\n"
        assert conn.call("BITCOUNT", "grow").raw == b":16384\r\n"
        assert conn.call("STRLEN", "grow").raw == b":%d\r\n" % ((16383 * 4096 + 5) // 8 + 1)
        assert conn.call("BITPOS", "grow", "1", "-1").raw == b":%d\r\n" % (16383 * 4096 + 5)
        assert conn.call("GETBIT", "grow", str(4096 * 9 + 5)).raw == b":1\r\n"
        assert conn.call("GETBIT", "grow", str(4096 * 9 + 6)).raw == b":0\r\n"


def test_failed_bitfield_write_survives_restart(blinkdb_binary, tmp_path):
    """BITFIELD whose every write fails (OVERFLOW FAIL) still creates or pads the string,
    as in Redis, which then propagates nothing, so that its AOF loses the key. BlinkDB
    logs the command: a restart (of BlinkDB, or of redis-server on its AOF) has it."""
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            reply = conn.call("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "900", "9")
            assert reply.raw == b"*1\r\n$-1\r\n"
            conn.call("SET", "g", "ab")
            conn.call("BITFIELD", "g", "OVERFLOW", "FAIL", "SET", "i4", "#9", "99")
            expected = snapshot(conn)
    finally:
        srv.stop()
    assert expected[0][b"f"][0] == b"\x00" * 113 and expected[0][b"g"][0] == b"ab" + b"\x00" * 3
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            assert_same_data(expected, snapshot(conn), "BlinkDB after a restart")
    finally:
        srv.stop()
    redis_loads(tmp_path, directory, expected, "failed BITFIELD writes")


def test_cache_mode_drops_results_with_their_sources(blinkdb_binary, tmp_path):
    """Under allkeys-fifo a BITOP result goes with the segment of its oldest source (its
    record could not rebuild it without that source); bitmaps changed in place keep the
    segment of their first record. Memory, a restart and redis-server then agree."""
    from test_cache_mode import cache_server, drop_oldest_segment, restart_same

    directory = str(tmp_path / "data")
    extra = ("--segment-size", "4096")
    srv = cache_server(blinkdb_binary, directory, *extra)
    try:
        with srv.connect(timeout=60.0) as conn:
            # Segment 1: a source and a bitmap, then filler so the next record opens segment 2.
            conn.call("SET", "src1", "abc")
            conn.call("SETBIT", "bm", "5", "1")
            conn.call("SET", "filler", "x" * 5000)
            # Segment 2: records that need segment 1 to be replayed right, and some that do not.
            conn.call("SETBIT", "bm", "6", "1")
            conn.call("SET", "src2", "xyz")
            conn.call("BITOP", "OR", "dest", "src1", "src2")
            conn.call("BITOP", "AND", "dest2", "src2")
            conn.call("BITFIELD", "bf2", "SET", "u8", "0", "1")
            assert drop_oldest_segment(conn) == 4, "src1 bm filler dest"
            keys = sorted(k for _, k in conn.call("KEYS", "*").value)
            assert keys == [b"bf2", b"dest2", b"src2"], keys
        srv, before = restart_same(blinkdb_binary, srv, directory, *extra)
        srv.stop()
        redis_loads(tmp_path, directory, before, "evicted bit segment")
    finally:
        srv.stop()
