"""HyperLogLog (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST) against redis-server 7.0:
the same replies byte for byte in RESP2 and RESP3, the same sketch bytes (GET) after the
same commands, sketches copied with GET/SET between the two servers counting the same,
corrupt payloads answered with Redis's errors, keyspace events, WATCH, and persistence
(restart, rewrite, redis-server loading BlinkDB's AOF)."""

import os
import random
import shutil
import struct
import time

import pytest

from aof_helpers import bgrewriteaof, start_aof_server, wait_rewrite_done
from server import ORACLE_BIN, ServerProcess, free_port
from test_persistence_redis_interop import check_aof

DEBUG = ("--enable-debug-command", "yes")
HEADER = b"HYLL"
DENSE_LEN = 12304


def sparse_header(card=b"\0" * 8):
    return HEADER + b"\x01\0\0\0" + card


def same(a, b, *cmd):
    """Runs `cmd` on both connections; the replies must be the same bytes."""
    ra, rb = a.call(*cmd), b.call(*cmd)
    assert ra.raw == rb.raw, f"{cmd[:4]}: BlinkDB {ra.raw[:300]!r}, Redis {rb.raw[:300]!r}"
    return ra


def same_all(a, b, commands):
    for cmd in commands:
        same(a, b, *cmd)


def elements(rng, n, prefix="e"):
    return [f"{prefix}{rng.getrandbits(48)}" for _ in range(n)]


def script(rng):
    """Every command and error path, with GETs of the sketch bytes in between."""
    big = elements(rng, 6000, "d")
    cmds = [
        ["PFCOUNT", "nokey"], ["PFCOUNT", "nokey", "nokey2"], ["PFADD", "h"], ["GET", "h"],
        ["PFCOUNT", "h"], ["PFADD", "h", "a", "b", "c"], ["GET", "h"], ["PFADD", "h", "a"],
        ["PFADD", "h", ""], ["PFCOUNT", "h"], ["GET", "h"], ["PFCOUNT", "h"],
        ["PFADD", "bin", "\x00\xff", "a\r\nb", "x" * 1000], ["GET", "bin"],
        ["PFADD", "mid", *elements(rng, 300, "m")], ["GET", "mid"], ["PFCOUNT", "mid"],
        ["PFADD", "dense", *big], ["PFDEBUG", "ENCODING", "dense"], ["GET", "dense"],
        ["PFCOUNT", "dense"], ["PFCOUNT", "dense"], ["PFADD", "dense", *big[:100]],
        ["PFCOUNT", "h", "mid", "dense", "nokey"], ["PFCOUNT", "h", "h"],
        ["PFMERGE", "m1", "h", "mid"], ["GET", "m1"], ["PFCOUNT", "m1"],
        ["PFMERGE", "m2", "h", "dense"], ["PFDEBUG", "ENCODING", "m2"], ["GET", "m2"],
        ["PFMERGE", "m1", "dense"], ["GET", "m1"], ["PFMERGE", "m3"], ["GET", "m3"],
        ["PFMERGE", "m3", "nokey"], ["GET", "m3"], ["PFMERGE", "h"], ["GET", "h"],
        ["PFDEBUG", "DECODE", "mid"], ["PFDEBUG", "decode", "dense"],
        ["PFDEBUG", "GETREG", "dense"], ["PFDEBUG", "GETREG", "mid"], ["GET", "mid"],
        ["PFDEBUG", "ENCODING", "mid"], ["PFDEBUG", "TODENSE", "h"], ["PFDEBUG", "TODENSE", "h"],
        ["GET", "h"], ["PFDEBUG", "nosuch", "h"], ["PFDEBUG", "GETREG", "nokey"],
        ["PFDEBUG", "x\x00y", "h"], ["PFDEBUG", "GETREG"], ["PFADD"], ["PFCOUNT"], ["PFMERGE"],
        ["PFSELFTEST", "x"],
        # Strings that are not sketches, and other types.
        ["SET", "s", "hello"], ["PFADD", "s", "a"], ["PFCOUNT", "s"], ["PFCOUNT", "h", "s"],
        ["PFMERGE", "s", "h"], ["PFMERGE", "h", "s"], ["PFDEBUG", "ENCODING", "s"],
        ["SET", "int", "12345678901234567"], ["PFADD", "int", "a"],
        ["SET", "short", "HYLL\x01"], ["PFCOUNT", "short"],
        ["SET", "badenc", sparse_header()[:4] + b"\x02" + sparse_header()[5:] + b"\x7f\xff"],
        ["PFCOUNT", "badenc"], ["PFADD", "badenc", "a"],
        ["SET", "shortdense", HEADER + b"\0" * 12],
        ["PFCOUNT", "shortdense"], ["PFMERGE", "x", "shortdense"],
        # A valid sparse header with a code that does not add up.
        ["SET", "c1", sparse_header()], ["PFCOUNT", "c1"], ["PFADD", "c1", "a"],
        ["PFCOUNT", "h", "c1"], ["PFMERGE", "x", "c1"], ["EXISTS", "x"],
        ["PFDEBUG", "GETREG", "c1"], ["PFDEBUG", "DECODE", "c1"], ["PFDEBUG", "TODENSE", "c1"],
        ["SET", "c2", sparse_header() + b"\x7f\xff\x80"], ["PFCOUNT", "c2"],
        ["PFADD", "c2", *elements(rng, 20)], ["GET", "c2"], ["PFDEBUG", "DECODE", "c2"],
        # A stale cache on a value set from outside is recomputed and stored.
        ["SET", "stale", sparse_header(b"\x07" + b"\0" * 6 + b"\x80") + b"\x7f\xff"],
        ["PFCOUNT", "stale"], ["GET", "stale"],
        ["SET", "cached", sparse_header(b"\x07" + b"\0" * 7) + b"\x7f\xff"],
        ["PFCOUNT", "cached"], ["PFCOUNT", "cached", "nokey"],
        # hll-sparse-max-bytes decides when a sketch turns dense.
        ["CONFIG", "GET", "hll-sparse-max-bytes"], ["CONFIG", "SET", "hll-sparse-max-bytes", "40"],
        ["PFADD", "small", *elements(rng, 10)], ["PFDEBUG", "ENCODING", "small"], ["GET", "small"],
        ["CONFIG", "SET", "hll-sparse-max-bytes", "0"], ["PFADD", "zero", "a"],
        ["PFDEBUG", "ENCODING", "zero"], ["PFMERGE", "zero2", "small"],
        ["PFDEBUG", "ENCODING", "zero2"], ["CONFIG", "SET", "hll-sparse-max-bytes", "-1"],
        ["CONFIG", "SET", "hll-sparse-max-bytes", "1kb"], ["CONFIG", "GET", "hll-sparse-max-bytes"],
        ["CONFIG", "SET", "hll-sparse-max-bytes", "3000"],
        ["TYPE", "dense"], ["STRLEN", "dense"], ["OBJECT", "ENCODING", "h"],
    ]
    return cmds


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_and_bytes_match_redis(server_factory, oracle, proto):
    blinkdb = server_factory(*DEBUG)
    rng = random.Random(19 + proto)
    with blinkdb.connect() as a, oracle.connect() as b:
        if proto == 3:
            for conn in (a, b):
                assert not conn.call("HELLO", "3").is_error()
        same_all(a, b, script(rng))


def test_random_additions_give_the_same_bytes(server_factory, oracle):
    """Sketches grown in random steps across the sparse limit, with PFCOUNT, PFMERGE and
    PFDEBUG TODENSE between them: every GET the same bytes."""
    blinkdb = server_factory(*DEBUG)
    rng = random.Random(7)
    with blinkdb.connect() as a, oracle.connect() as b:
        for limit in ("3000", "200", "12000"):
            same(a, b, "CONFIG", "SET", "hll-sparse-max-bytes", limit)
            same(a, b, "FLUSHALL")
            for step in range(120):
                key = f"k{rng.randrange(6)}"
                op = rng.random()
                if op < 0.7:
                    n = rng.choice([1, 3, 10, 50, 400])
                    pool = rng.choice([50, 5000, 1 << 40])
                    same(a, b, "PFADD", key, *[str(rng.randrange(pool)) for _ in range(n)])
                elif op < 0.8:
                    same(a, b, "PFCOUNT", key)
                elif op < 0.9:
                    srcs = [f"k{rng.randrange(6)}" for _ in range(rng.randrange(1, 4))]
                    same(a, b, "PFMERGE", key, *srcs)
                elif op < 0.95:
                    same(a, b, "PFDEBUG", "TODENSE", key)
                else:
                    same(a, b, "PFCOUNT", *[f"k{i}" for i in range(6)])
                same(a, b, "GET", key)


def build_sketches(conn, rng):
    """Sketches of many sizes on one server: {key: elements}."""
    made = {}
    for i, n in enumerate([0, 1, 5, 50, 200, 700, 1500, 3000, 20000, 100000]):
        key = f"src{i}"
        items = elements(rng, n, f"x{i}-")
        conn.call("PFADD", key)
        for at in range(0, n, 2000):
            assert not conn.call("PFADD", key, *items[at:at + 2000]).is_error()
        if i % 2:
            conn.call("PFCOUNT", key)  # half of them with a fresh cache, half stale
        made[key] = items
    return made


@pytest.mark.parametrize("direction", ["redis-to-blinkdb", "blinkdb-to-redis"])
def test_sketches_copied_with_get_set_count_the_same(server_factory, oracle, direction):
    blinkdb = server_factory(*DEBUG)
    rng = random.Random(direction)
    with blinkdb.connect() as a, oracle.connect() as b:
        src, dst = (b, a) if direction == "redis-to-blinkdb" else (a, b)
        made = build_sketches(src, rng)
        for key in made:
            value = src.call("GET", key).value
            assert dst.call("SET", key, value).raw == b"+OK\r\n"
            assert dst.call("GET", key).value == value
        for key in made:
            want = src.call("PFCOUNT", key).raw
            assert dst.call("PFCOUNT", key).raw == want, key
            assert dst.call("GET", key).value == src.call("GET", key).value, key
        keys = list(made)
        assert dst.call("PFCOUNT", *keys).raw == src.call("PFCOUNT", *keys).raw
        # Growing the copies the same way keeps them identical.
        for key in keys:
            more = elements(rng, 300, "more")
            assert dst.call("PFADD", key, *more).raw == src.call("PFADD", key, *more).raw
            assert dst.call("GET", key).value == src.call("GET", key).value, key
        assert dst.call("PFMERGE", "all", *keys).raw == src.call("PFMERGE", "all", *keys).raw
        assert dst.call("GET", "all").value == src.call("GET", "all").value
        assert dst.call("PFCOUNT", "all").raw == src.call("PFCOUNT", "all").raw


def test_pfdebug_needs_enable_debug_command(server_factory, oracle):
    plain = server_factory()
    with plain.connect() as a, oracle.connect() as b:
        same(a, b, "PFADD", "h", "a")
        refused = a.call("PFDEBUG", "ENCODING", "h")
        assert refused.raw.startswith(b"-ERR PFDEBUG command not allowed. If the "
                                      b"enable-debug-command option is set to \"local\"")
        assert b.call("PFDEBUG", "ENCODING", "h").raw == b"+sparse\r\n"
        same(a, b, "PFSELFTEST")
        # COMMAND lists it as Redis does (the gate is not a flag COMMAND shows).
        same(a, b, "COMMAND", "INFO", "pfdebug", "pfselftest", "pfadd", "pfcount", "pfmerge")
        same(a, b, "COMMAND", "DOCS", "pfdebug", "pfselftest", "pfadd", "pfcount", "pfmerge")
        same(a, b, "COMMAND", "GETKEYS", "PFMERGE", "d", "s1", "s2")
        same(a, b, "COMMAND", "GETKEYS", "PFDEBUG", "GETREG", "k")


def overflow_payloads():
    """Redis's own regression payloads: runs that add up past 2^32 registers."""
    xzero = sparse_header() + bytes([0x7f, 0xff]) * (131072 + 1000) + b"\xff"
    zero = sparse_header() + b"\x3f" * (33554432 + 1000) + b"\xff"
    return [("xzero", xzero), ("zero", zero)]


def test_corrupt_payloads_answer_like_redis(server_factory, oracle):
    blinkdb = server_factory(*DEBUG)
    with blinkdb.connect() as a, oracle.connect() as b:
        same(a, b, "PFADD", "good", "a", "b")
        for name, payload in overflow_payloads():
            same(a, b, "SET", name, payload)
            for cmd in (["PFCOUNT", name], ["PFCOUNT", name, name], ["PFCOUNT", "good", name],
                        ["PFADD", name, "a"], ["PFMERGE", "dst", name],
                        ["PFDEBUG", "GETREG", name], ["PFDEBUG", "TODENSE", name],
                        ["PFDEBUG", "ENCODING", name], ["EXISTS", "dst"]):
                same(a, b, *cmd)
            same(a, b, "DEL", name)
        assert a.call("PING").raw == b"+PONG\r\n"
    assert blinkdb.rss_kb() < 600_000, blinkdb.rss_kb()


def test_random_corruption_answers_like_redis(server_factory, oracle):
    """The suite's fuzz, compared: sketches with random bytes overwritten, then every
    command on them."""
    blinkdb = server_factory(*DEBUG)
    rng = random.Random(24)
    with blinkdb.connect() as a, oracle.connect() as b:
        for _ in range(300):
            same(a, b, "DEL", "h", "d")
            same(a, b, "PFADD", "h", *elements(rng, rng.randrange(3000)))
            value = b.call("GET", "h").value
            buf = bytearray(value)
            for _ in range(rng.randrange(1, 6)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            if rng.random() < 0.2:
                buf = buf[: rng.randrange(len(buf) + 1)]
            same(a, b, "SET", "h", bytes(buf))
            for cmd in (["PFCOUNT", "h"], ["GET", "h"], ["PFCOUNT", "h", "nokey"],
                        ["PFMERGE", "d", "h"], ["GET", "d"], ["PFDEBUG", "DECODE", "h"],
                        ["PFADD", "h", *elements(rng, 5)], ["GET", "h"], ["PFCOUNT", "h"],
                        ["PFDEBUG", "TODENSE", "h"], ["GET", "h"]):
                same(a, b, *cmd)


def test_keyspace_events_and_watch_match_redis(server_factory, oracle):
    blinkdb = server_factory(*DEBUG)
    servers = [blinkdb, oracle]
    conns = [s.connect() for s in servers]
    subs = [s.connect() for s in servers]
    try:
        for c, s in zip(conns, subs):
            c.call("CONFIG", "SET", "notify-keyspace-events", "KEAmn")
            s.call("PSUBSCRIBE", "__key*__:*")
        big = [f"d{i}" for i in range(6000)]
        for cmd in (["PFADD", "h", "a"], ["PFADD", "h", "a"], ["PFCOUNT", "h"], ["PFCOUNT", "h"],
                    ["PFCOUNT", "nokey"], ["PFMERGE", "m", "h", "nokey"], ["PFMERGE", "m"],
                    ["PFCOUNT", "h", "nokey2"], ["PFDEBUG", "TODENSE", "h"], ["PFADD", "n"],
                    ["SET", "s", "x"], ["PFADD", "s", "a"],
                    # A dense sketch: additions it already holds change nothing.
                    ["PFADD", "d", *big], ["PFCOUNT", "d"], ["PFADD", "d", *big[:50]],
                    ["PFADD", "d"], ["PFCOUNT", "d"], ["PFADD", "d", *big[:50], "new"],
                    ["PFADD", "e", *big], ["PEXPIRE", "e", "1"]):
            same(conns[0], conns[1], *cmd)
        # An expired dense sketch is not answered from: the addition makes a new one.
        time.sleep(0.05)
        assert same(conns[0], conns[1], "PFADD", "e", big[0]).value == 1
        same(conns[0], conns[1], "GET", "e")
        events = []
        for s in subs:
            s.send("PING")
            got = []
            while True:
                r = s.read_reply()
                if r.value and r.value[0][1] == b"pong":
                    break
                got.append(r.raw)
            events.append(got)
        assert events[0] == events[1]
        assert any(b"pfadd" in e for e in events[0])
        # WATCH: a PFADD that changes nothing, or PFCOUNT with a fresh cache, leaves a
        # transaction alone; a PFADD that changes a register, or a PFCOUNT that stores
        # its count, aborts it.
        watchers = [s.connect() for s in servers]
        try:
            for others, changes in ((["PFADD", "h", "a"], False), (["PFCOUNT", "h"], False),
                                    (["PFADD", "h", "zz"], True), (["PFCOUNT", "h"], True),
                                    (["PFADD", "d", *big[:50]], False),
                                    (["PFADD", "d", *[f"w{i}" for i in range(100)]], True)):
                for w in watchers:
                    w.call("WATCH", others[1])
                    w.call("MULTI")
                    w.call("PING")
                same(conns[0], conns[1], *others)
                replies = [w.call("EXEC").raw for w in watchers]
                assert replies[0] == replies[1], (others, replies)
                assert (replies[0] in (b"*-1\r\n", b"_\r\n")) == changes, (others, replies)
        finally:
            for w in watchers:
                w.close()
    finally:
        for c in conns + subs:
            c.close()


def aof_commands(directory):
    """The commands (upper-cased names) of every incr file, in order."""
    out = []
    aof = os.path.join(directory, "appendonlydir")
    for name in sorted(os.listdir(aof), key=lambda n: (not n.endswith(".base.aof"), n)):
        if not name.endswith(".aof"):
            continue
        data = open(os.path.join(aof, name), "rb").read()
        pos = 0
        while pos < len(data):
            if data[pos:pos + 1] == b"#":
                pos = data.index(b"\n", pos) + 1
                continue
            end = data.index(b"\r\n", pos)
            n = int(data[pos + 1:end])
            pos = end + 2
            args = []
            for _ in range(n):
                end = data.index(b"\r\n", pos)
                size = int(data[pos + 1:end])
                args.append(data[end + 2:end + 2 + size])
                pos = end + 2 + size + 2
            out.append([args[0].upper()] + args[1:])
    return out


def redis_aof_server(directory):
    os.makedirs(directory, exist_ok=True)
    port = free_port()
    return ServerProcess(ORACLE_BIN, directory + "-log", port=port, args=[
        "--port", str(port), "--bind", "127.0.0.1", "--dir", directory,
        "--appendonly", "yes", "--save", "", "--aof-use-rdb-preamble", "no"])


PERSISTED = [
    ["PFADD", "h", "a", "b", "c"], ["PFCOUNT", "h"], ["PFCOUNT", "h"], ["PFADD", "h", "a"],
    ["PFADD", "h", "d"], ["PFADD", "big", *[f"b{i}" for i in range(8000)]], ["PFCOUNT", "big"],
    ["PFADD", "big", "b1", "b7999"], ["PFADD", "big", *[f"b{i}" for i in range(7990, 8010)]],
    ["PFMERGE", "m", "h", "big"], ["PFCOUNT", "h", "big"], ["PFADD", "s", *map(str, range(90))],
    ["PFDEBUG", "TODENSE", "s"], ["PFDEBUG", "TODENSE", "s"], ["PFADD", "g", "1"],
    ["PFDEBUG", "GETREG", "g"], ["SET", "c", sparse_header() + b"\x7f\xff\x80\x80"],
    ["PFADD", "c", "x", "y"], ["PFCOUNT", "c"], ["PFADD", "e", "x"], ["PEXPIRE", "e", "5000000"],
    ["PFADD", "e", "y"], ["PFCOUNT", "e"],
]


def test_aof_records_what_redis_propagates(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory, *DEBUG)
    rdir = str(tmp_path / "redis")
    oracle = redis_aof_server(rdir)
    try:
        with srv.connect() as a, oracle.connect() as b:
            same_all(a, b, PERSISTED)
    finally:
        srv.stop()
        oracle.stop()
    ours = [c for c in aof_commands(directory) if c[0] not in (b"SELECT",)]
    theirs = [c for c in aof_commands(rdir) if c[0] not in (b"SELECT",)]
    for c in ours + theirs:
        if c[0] == b"PFDEBUG":
            c[1] = c[1].upper()
        if c[0] == b"PEXPIRE":  # Redis logs PEXPIREAT with its own clock
            c[:] = [b"PEXPIRE"]
        if c[0] == b"PEXPIREAT":
            c[:] = [b"PEXPIRE"]
    assert ours == theirs


def values(conn, keys):
    return {k: (conn.call("GET", k).value, conn.call("PFCOUNT", k).raw) for k in keys}


def test_sketches_survive_restart_rewrite_and_load_in_redis(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    keys = ["h", "big", "m", "s", "g", "c", "e"]
    srv = start_aof_server(blinkdb_binary, directory, *DEBUG)
    try:
        with srv.connect() as conn:
            for cmd in PERSISTED:
                conn.call(*cmd)
            before = {k: conn.call("GET", k).value for k in keys}
    finally:
        srv.stop()
    srv = start_aof_server(blinkdb_binary, directory, *DEBUG)
    try:
        with srv.connect() as conn:
            assert {k: conn.call("GET", k).value for k in keys} == before
            bgrewriteaof(conn)
            assert wait_rewrite_done(conn)["aof_last_bgrewrite_status"] == "ok"
            conn.call("PFADD", "h", "after-rewrite")
            conn.call("PFCOUNT", "h")
            before = {k: conn.call("GET", k).value for k in keys}
    finally:
        srv.stop()
    srv = start_aof_server(blinkdb_binary, directory, *DEBUG)
    try:
        with srv.connect() as conn:
            assert {k: conn.call("GET", k).value for k in keys} == before
            assert conn.call("PTTL", "e").value > 0
    finally:
        srv.stop()
    check_aof(directory)
    copy = str(tmp_path / "redis-copy")
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("server.log"))
    oracle = redis_aof_server(copy)
    try:
        with oracle.connect() as conn:
            assert {k: conn.call("GET", k).value for k in keys} == before
    finally:
        oracle.stop()


def test_redis_aof_with_sketches_loads_in_blinkdb(blinkdb_binary, tmp_path):
    rdir = str(tmp_path / "redis")
    oracle = redis_aof_server(rdir)
    keys = ["h", "big", "m", "s", "g", "c", "e"]
    try:
        with oracle.connect() as conn:
            for cmd in PERSISTED:
                conn.call(*cmd)
            want = {k: conn.call("GET", k).value for k in keys}
    finally:
        oracle.stop()
    srv = start_aof_server(blinkdb_binary, rdir, log_dir=rdir + "-blinkdb-log")
    try:
        with srv.connect() as conn:
            assert {k: conn.call("GET", k).value for k in keys} == want
    finally:
        srv.stop()


def test_sketches_kept_in_the_log(blinkdb_binary, oracle, tmp_path):
    """With a small blob-threshold a dense sketch set with SET lives only in the log;
    every command reads it back, and a change keeps it in memory from then on."""
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory, "--blob-threshold", "1kb", *DEBUG)
    try:
        with srv.connect() as a, oracle.connect() as b:
            same(a, b, "PFADD", "d", *[f"v{i}" for i in range(5000)])
            dense = b.call("GET", "d").value
            assert len(dense) == DENSE_LEN
            for key in ("x", "y", "z", "w"):
                same(a, b, "SET", key, dense)
            same(a, b, "PFCOUNT", "x")
            same(a, b, "PFCOUNT", "x", "y")
            same(a, b, "PFADD", "y", "new1", "new2")
            same(a, b, "GET", "y")
            same(a, b, "PFMERGE", "z", "y", "x")
            same(a, b, "GET", "z")
            same(a, b, "PFDEBUG", "ENCODING", "w")
            same(a, b, "PFADD", "w", "v1")
            same(a, b, "GET", "w")
            want = {k: a.call("GET", k).value for k in ("x", "y", "z", "w")}
    finally:
        srv.stop()
    srv = start_aof_server(blinkdb_binary, directory, "--blob-threshold", "1kb")
    try:
        with srv.connect() as a:
            assert {k: a.call("GET", k).value for k in want} == want
    finally:
        srv.stop()


def test_dense_registers_read_back(server_factory, oracle):
    """PFDEBUG GETREG of a sketch SET with chosen registers: the 6-bit packing."""
    blinkdb = server_factory(*DEBUG)
    rng = random.Random(3)
    regs = [rng.randrange(64) for _ in range(16384)]
    bits = 0
    for i, r in enumerate(regs):
        bits |= r << (6 * i)
    dense = HEADER + b"\0" * 4 + struct.pack("<Q", 1 << 63) + bits.to_bytes(12288, "little")
    with blinkdb.connect() as a, oracle.connect() as b:
        same(a, b, "SET", "d", dense)
        reply = same(a, b, "PFDEBUG", "GETREG", "d")
        assert [v for _, v in reply.value] == regs
        same(a, b, "PFCOUNT", "d")
        same(a, b, "GET", "d")
