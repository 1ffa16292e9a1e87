"""RDB-preamble AOF directories (redis-server 7's default, `aof-use-rdb-preamble yes`):
an appendonlydir whose base is `appendonly.aof.<n>.base.rdb` loads in BlinkDB with the
same contents key by key over 16 databases (every type, expiries, functions, RedisBloom
filters), incr commands after the base included; a damaged RDB base loads nothing."""

import os
import shutil
import time

import pytest

from aof_helpers import aof_path, bgrewriteaof, redis_server, start_aof_server
from bloom_support import redisbloom_path
from rdb_helpers import WORKLOAD, WORKLOAD_KEYS, assert_same_keyspace, client

LIB = "#!lua name=lib\nredis.register_function('f', function() return 1 end)"


def wait_rewrite(conn):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        info = conn.info("persistence")
        if info["aof_rewrite_in_progress"] == 0 and info["aof_rewrite_scheduled"] == 0:
            return
        time.sleep(0.05)
    raise AssertionError("redis-server did not finish BGREWRITEAOF")


def fill(port, tag):
    for db in (0, 5, 15):
        conn = client(port, db)
        if tag == "base":
            for cmd in WORKLOAD:
                conn.execute_command(*cmd)
        else:
            conn.hset(f"{tag}:h", mapping={"a": 1, "b": "two"})
            conn.rpush(f"{tag}:l", *range(20))
            conn.zadd(f"{tag}:z", {"m": 1.5})
            conn.xadd(f"{tag}:x", {"f": "v"})
        conn.set(f"{tag}-in-{db}", db, px=100_000_000)


def base_name(directory):
    names = os.listdir(aof_path(directory))
    bases = [n for n in names if ".base." in n]
    assert len(bases) == 1, names
    return bases[0]


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_redis_aof_loads_in_blinkdb_which_appends_to_it(blinkdb_binary, tmp_path, preamble):
    """With `no` too: BlinkDB appending its annotated batches after redis-server's
    unannotated commands in the same incr file must keep both at the next start."""
    directory = str(tmp_path / "redis")
    oracle = redis_server(directory, directory + "-log", "--hash-max-listpack-entries", "128",
                          "--loadmodule", redisbloom_path(), "--aof-use-rdb-preamble", preamble)
    try:
        fill(oracle.port, "base")
        c = client(oracle.port)
        c.function_load(LIB)
        c.execute_command("BF.MADD", "bf", *[f"i{i}" for i in range(500)])
        c.set("large", b"L" * 100_000)
        bgrewriteaof(oracle.connect())
        wait_rewrite(c)
        assert base_name(directory).endswith(".base.rdb" if preamble == "yes" else ".base.aof")
        # Commands after the rewrite go to the incr file, after the base.
        fill(oracle.port, "incr")
        c.execute_command("BF.ADD", "bf", "after-rewrite")
        c.delete("s:raw")
        oracle_client_port = oracle.port
        # Compare against the live oracle: BlinkDB loads a copy of its directory.
        copy = str(tmp_path / "copy")
        shutil.copytree(aof_path(directory), os.path.join(copy, "appendonlydir"))
        srv = start_aof_server(blinkdb_binary, copy, log_dir=copy + "-log")
        try:
            assert assert_same_keyspace(srv.port, oracle_client_port) >= 3 * len(WORKLOAD_KEYS)
            b = client(srv.port)
            assert b.fcall("f", 0) == 1
            found = b.execute_command("BF.MEXISTS", "bf", *[f"i{i}" for i in range(500)],
                                      "after-rewrite")
            assert all(found)
            assert b.execute_command("BF.INFO", "bf") == c.execute_command("BF.INFO", "bf")
            assert b.get("large") == b"L" * 100_000
            # BlinkDB keeps appending after the RDB base, and a restart reads both.
            b.set("written-by-blinkdb", "1")
        finally:
            srv.stop()
        srv = start_aof_server(blinkdb_binary, copy, log_dir=copy + "-log2")
        try:
            b = client(srv.port)
            assert b.get("written-by-blinkdb") == b"1"
            c.set("written-by-blinkdb", "1")
            assert assert_same_keyspace(srv.port, oracle_client_port) >= 3 * len(WORKLOAD_KEYS)
        finally:
            srv.stop()
    finally:
        oracle.stop()


def test_damaged_rdb_base_loads_nothing(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "redis")
    oracle = redis_server(directory, directory + "-log")
    try:
        fill(oracle.port, "base")
        bgrewriteaof(oracle.connect())
        wait_rewrite(client(oracle.port))
    finally:
        oracle.stop()
    path = aof_path(directory, base_name(directory))
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        data[len(data) // 2] ^= 0x55
        f.seek(0)
        f.write(data)
    srv = start_aof_server(blinkdb_binary, directory, log_dir=directory + "-blinkdb-log",
                           wait=False)
    try:
        srv.proc.wait(timeout=30)
        assert srv.proc.returncode != 0
        assert "RDB base" in srv.log_text() and "checksum" in srv.log_text()
    finally:
        srv.stop()
