"""Files Redis can read: redis-check-aof accepts BlinkDB's AOF, redis-server 7 loads it
(every string key with its TTL), and BlinkDB loads an AOF written by redis-server."""

import os
import shutil
import subprocess
import time

from aof_helpers import (
    MANIFEST, aof_path, bgrewriteaof, redis_server, start_aof_server, wait_rewrite_done,
)
from server import require_tool

PTTL_SLACK_MS = 1500


def string_workload(conn, tag):
    """SET/SET EX/PX/MSET/INCR/APPEND/DEL/EXPIRE/PERSIST, some large values."""
    commands = []
    for i in range(200):
        commands.append(("SET", f"{tag}:s:{i}", f"value-{i}"))
        commands.append(("SET", f"{tag}:t:{i}", f"ttl-{i}", "EX", str(1000 + i)))
        commands.append(("SET", f"{tag}:p:{i}", f"pttl-{i}", "PX", str(500_000 + i)))
        commands.append(("INCR", f"{tag}:n:{i % 17}"))
        commands.append(("APPEND", f"{tag}:s:{i // 2}", "+a"))
    commands.append(("MSET", *[x for i in range(30) for x in (f"{tag}:m:{i}", f"m{i}")]))
    for i in range(0, 200, 7):
        commands.append(("DEL", f"{tag}:s:{i}"))
        commands.append(("EXPIRE", f"{tag}:s:{i + 1}", str(3000 + i)))
        commands.append(("PERSIST", f"{tag}:t:{i}"))
    for i in range(6):  # above the 16kb blob-threshold: kept only in BlinkDB's log
        commands.append(("SET", f"{tag}:big:{i}", bytes([65 + i]) * (20_000 + 30_000 * i)))
    commands.append(("SET", f"{tag}:big-ttl", b"T" * 40_000, "EX", "4000"))
    for reply in conn.pipeline(commands):
        assert not reply.is_error(), reply.raw


def snapshot(conn):
    """{key: (value, pttl)} of every key, with the time it was taken."""
    keys = [key for _, key in conn.call("KEYS", "*").value]
    values = conn.pipeline([("GET", k) for k in keys])
    ttls = conn.pipeline([("PTTL", k) for k in keys])
    return {k: (v.value, t.value) for k, v, t in zip(keys, values, ttls)}, time.monotonic()


def assert_same_data(expected, got, what):
    (want, want_at), (have, have_at) = expected, got
    assert set(have) == set(want), (
        f"{what}: keys differ: missing {sorted(set(want) - set(have))[:8]},"
        f" extra {sorted(set(have) - set(want))[:8]}")
    elapsed_ms = (have_at - want_at) * 1000
    for key, (value, pttl) in want.items():
        got_value, got_pttl = have[key]
        assert got_value == value, f"{what}: {key!r} is {got_value[:40]!r}, expected {value[:40]!r}"
        if pttl < 0:
            assert got_pttl == pttl, f"{what}: {key!r} PTTL {got_pttl}, expected {pttl}"
        else:
            assert pttl - elapsed_ms - PTTL_SLACK_MS <= got_pttl <= pttl + PTTL_SLACK_MS, (
                f"{what}: {key!r} PTTL {got_pttl}, expected about {pttl - elapsed_ms:.0f}")
    with_ttl = sum(1 for _, pttl in want.values() if pttl >= 0)
    print(f"{what}: {len(want)} keys ({with_ttl} with a TTL) identical")


def check_aof(directory):
    tool = require_tool("redis-check-aof")
    result = subprocess.run([tool, aof_path(directory, MANIFEST)], capture_output=True,
                            text=True, timeout=60)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "All AOF files and manifest are valid" in output, (
        f"redis-check-aof rejects BlinkDB's AOF:\n{output}")


def redis_loads(tmp_path, directory, expected, what):
    """redis-server 7 started on a copy of `directory` has exactly `expected`."""
    copy = str(tmp_path / f"redis-{what.replace(' ', '-')}")
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("server.log"))
    oracle = redis_server(copy, copy + "-log")
    try:
        with oracle.connect() as conn:
            assert_same_data(expected, snapshot(conn), f"redis-server loading {what}")
    finally:
        oracle.stop()


def test_redis_reads_blinkdb_aof(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            string_workload(conn, "a")
            expected = snapshot(conn)
    finally:
        srv.stop()
    check_aof(directory)
    redis_loads(tmp_path, directory, expected, "after writes")

    # The RESP base (the RDB base: test_rdb_preamble.py).
    srv = start_aof_server(blinkdb_binary, directory, "--aof-use-rdb-preamble", "no")
    try:
        with srv.connect() as conn:
            bgrewriteaof(conn)
            assert wait_rewrite_done(conn)["aof_last_bgrewrite_status"] == "ok"
            string_workload(conn, "b")
            expected = snapshot(conn)
    finally:
        srv.stop()
    assert any(n.endswith(".base.aof") for n in os.listdir(aof_path(directory)))
    check_aof(directory)
    redis_loads(tmp_path, directory, expected, "after a rewrite")


def test_blinkdb_reads_redis_aof(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "redis")
    oracle = redis_server(directory, directory + "-log", "--aof-use-rdb-preamble", "no")
    try:
        with oracle.connect() as conn:
            string_workload(conn, "a")
            bgrewriteaof(conn)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                fields = conn.call("INFO", "persistence").value.decode()
                if "aof_rewrite_in_progress:0" in fields and "aof_rewrite_scheduled:0" in fields:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("redis-server did not finish BGREWRITEAOF")
            string_workload(conn, "b")
            expected = snapshot(conn)
    finally:
        oracle.stop()
    names = os.listdir(aof_path(directory))
    assert any(n.endswith(".base.aof") for n in names), names
    with open(aof_path(directory, [n for n in names if n.endswith(".base.aof")][0]), "rb") as f:
        assert f.read(1) == b"*", "redis wrote an RDB preamble despite aof-use-rdb-preamble no"

    srv = start_aof_server(blinkdb_binary, directory, log_dir=directory + "-blinkdb-log")
    try:
        with srv.connect() as conn:
            assert_same_data(expected, snapshot(conn), "BlinkDB loading redis-server's AOF")
    finally:
        srv.stop()


def test_what_redis_server_loads_of_an_aof_with_filters(blinkdb_binary, tmp_path):
    """What README and docs/compatibility.md say of filters in the AOF: BlinkDB logs a
    new filter as its own BLINKDB.BFBIND record, which redis-server refuses (the whole
    file); once BGREWRITEAOF has put the filters in the RDB base (as RedisBloom's
    MBbloom-- values), redis-server with RedisBloom loads the AOF, later BF.ADDs to those
    filters included, with the same BF.EXISTS answers."""
    from bloom_support import redisbloom_path
    module = ("--loadmodule", redisbloom_path())
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            assert conn.call("BF.RESERVE", "f", "0.001", "5000", "EXPANSION", "4").raw == b"+OK\r\n"
            conn.pipeline([("BF.ADD", "f", f"a{i}") for i in range(300)])
            conn.call("SET", "k", "v")
    finally:
        srv.stop()
    check_aof(directory)
    copy = str(tmp_path / "refused")
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("server.log"))
    try:
        redis_server(copy, copy + "-log", *module).stop()
    except RuntimeError as e:
        assert "Unknown command 'BLINKDB.BFBIND' reading the append only file" in str(e), str(e)
    else:
        raise AssertionError("redis-server loaded an AOF with a BLINKDB.BFBIND record")

    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            bgrewriteaof(conn)
            assert wait_rewrite_done(conn)["aof_last_bgrewrite_status"] == "ok"
            conn.pipeline([("BF.ADD", "f", f"b{i}") for i in range(300)])
            probes = [f"a{i}" for i in range(300)] + [f"b{i}" for i in range(300)] + \
                [f"absent{i}" for i in range(2000)]
            expected = conn.call("BF.MEXISTS", "f", *probes).raw
            info = conn.call("BF.INFO", "f").raw
    finally:
        srv.stop()
    check_aof(directory)
    copy = str(tmp_path / "loaded")
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("server.log"))
    oracle = redis_server(copy, copy + "-log", *module)
    try:
        with oracle.connect() as conn:
            assert conn.call("BF.MEXISTS", "f", *probes).raw == expected
            assert conn.call("BF.INFO", "f").raw == info
            assert conn.call("GET", "k").raw == b"$1\r\nv\r\n"
    finally:
        oracle.stop()
