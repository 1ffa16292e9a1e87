"""RDB-preamble AOF directories (redis-server 7's default, `aof-use-rdb-preamble yes`):
an appendonlydir whose base is `appendonly.aof.<n>.base.rdb` loads in BlinkDB with the
same contents key by key over 16 databases (every type, expiries, functions, RedisBloom
filters), incr commands after the base included; a damaged RDB base loads nothing."""

import os
import subprocess
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
        # Under everysec redis-server postpones its write while a background
        # fsync is slow (a loaded machine): copy once its buffer is written.
        deadline = time.monotonic() + 30
        while c.info("persistence")["aof_buffer_length"] != 0:
            assert time.monotonic() < deadline, "redis-server's AOF buffer never emptied"
            time.sleep(0.05)
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


# BlinkDB's own rewrite with `aof-use-rdb-preamble yes` (its default): the base is an RDB
# file written by the BGSAVE writer; large values stay on disk inside it, filters made by
# BlinkDB come back exact (the `blinkdb-bf` AUX field), and redis-server 7 and
# redis-check-aof read the directory.

BIG = b"B" * 200_000  # past blob-threshold (16kb): kept on disk, in the base
NOT_ADDED = [f"absent-{i}" for i in range(10_000)]


def fill_blinkdb(port):
    fill(port, "base")
    c = client(port)
    c.function_load(LIB)
    c.set("large", BIG)
    c.set("large-ttl", BIG + b"t", px=100_000_000)
    client(port, 9).set("large-db9", BIG + b"9")
    # User-backend filters: one link, and a scaled one with several links.
    c.execute_command("BF.RESERVE", "bf1", "0.01", "1000")
    c.execute_command("BF.MADD", "bf1", *[f"a{i}" for i in range(700)])
    c.execute_command("BF.RESERVE", "bf3", "0.001", "100", "EXPANSION", "2")
    c.execute_command("BF.MADD", "bf3", *[f"b{i}" for i in range(900)])
    assert c.execute_command("BF.INFO", "bf3", "FILTERS")[-1] >= 3


def filter_answers(port):
    c = client(port)
    return {key: c.execute_command("BF.MEXISTS", key, *items, *NOT_ADDED)
            for key, items in (("bf1", [f"a{i}" for i in range(700)]),
                               ("bf3", [f"b{i}" for i in range(900)]))}


def check_aof(directory):
    manifest = aof_path(directory, "appendonly.aof.manifest")
    out = subprocess.run(["redis-check-aof", manifest], capture_output=True, timeout=60)
    text = (out.stdout + out.stderr).decode(errors="replace")  # it prints AUX bytes
    assert out.returncode == 0, text
    assert "All AOF files and manifest are valid" in text, text


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_blinkdb_rewrite_base_format(blinkdb_binary, tmp_path, preamble):
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory, "--aof-use-rdb-preamble", preamble)
    try:
        fill_blinkdb(srv.port)
        before = filter_answers(srv.port)
        c = client(srv.port)
        assert c.config_get("aof-use-rdb-preamble") == {"aof-use-rdb-preamble": preamble}
        bgrewriteaof(srv.connect())
        wait_rewrite(c)
        name = base_name(directory)
        assert name.endswith(".base.rdb" if preamble == "yes" else ".base.aof"), name
        if preamble == "yes":
            with open(aof_path(directory, name), "rb") as f:
                head = f.read(9)
            assert head == b"REDIS0010", head
        # After the base: incr commands.
        fill(srv.port, "incr")
        c.execute_command("BF.ADD", "bf1", "after-rewrite")
        before["bf1"] = client(srv.port).execute_command(
            "BF.MEXISTS", "bf1", *[f"a{i}" for i in range(700)], *NOT_ADDED)
        c.delete("s:raw")
    finally:
        srv.stop()
    check_aof(directory)
    srv = start_aof_server(blinkdb_binary, directory, log_dir=directory + "-log2")
    oracle = None
    if preamble == "yes":
        # A RESP base re-binds BlinkDB's filters to their files with BlinkDB-only records
        # (redis-server refuses them); the RDB base holds them as RedisBloom values.
        copy = str(tmp_path / "redis")
        shutil.copytree(aof_path(directory), os.path.join(copy, "appendonlydir"))
        oracle = redis_server(copy, copy + "-log", "--loadmodule", redisbloom_path())
    try:
        b = client(srv.port)
        if oracle is not None:
            assert assert_same_keyspace(srv.port, oracle.port) >= 3 * len(WORKLOAD_KEYS)
            assert client(oracle.port).fcall("f", 0) == 1
            assert client(oracle.port).get("large") == BIG
            # Saturated there (docs/rdb-format.md), but no false negative.
            assert all(client(oracle.port).execute_command(
                "BF.MEXISTS", "bf3", *[f"b{i}" for i in range(900)]))
        assert b.fcall("f", 0) == 1
        assert b.get("large") == BIG and client(srv.port, 9).get("large-db9") == BIG + b"9"
        assert b.pttl("large-ttl") > 0
        # Exact: every added item and 10k others answer as before the restart.
        assert filter_answers(srv.port) == before
        assert b.execute_command("BF.EXISTS", "bf1", "after-rewrite") == 1
        # A second rewrite reads the large values back from the RDB base.
        bgrewriteaof(srv.connect())
        wait_rewrite(b)
        b.set("after-second", "1")
    finally:
        if oracle is not None:
            oracle.stop()
        srv.stop()
    filter_files = []
    for n in (3, 4, 5):
        srv = start_aof_server(blinkdb_binary, directory, log_dir=directory + f"-log{n}")
        try:
            b = client(srv.port)
            assert b.get("large") == BIG and b.get("after-second") == b"1"
            assert filter_answers(srv.port) == before
        finally:
            srv.stop()
        # Restarts rebuild the filters from the base without leaving the old files behind.
        filter_files.append(len(os.listdir(os.path.join(directory, "bloom"))))
    assert filter_files[0] == filter_files[1] == filter_files[2], filter_files


def test_damaged_blinkdb_rdb_base_loads_nothing(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        fill(srv.port, "base")
        bgrewriteaof(srv.connect())
        wait_rewrite(client(srv.port))
    finally:
        srv.stop()
    name = base_name(directory)
    assert name.endswith(".base.rdb")
    with open(aof_path(directory, name), "r+b") as f:
        data = bytearray(f.read())
        data[len(data) // 2] ^= 0x55
        f.seek(0)
        f.write(data)
    srv = start_aof_server(blinkdb_binary, directory, log_dir=directory + "-log2", wait=False)
    try:
        srv.proc.wait(timeout=30)
        assert srv.proc.returncode != 0
        text = srv.log_text()
        assert name in text and "RDB base" in text and "checksum" in text, text[-2000:]
    finally:
        srv.stop()
