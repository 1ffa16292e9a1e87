"""dump.rdb between BlinkDB and redis-server 7.0.15, compared key by key over 16
databases: BlinkDB's SAVE passes redis-check-rdb and loads in redis-server; a
redis-server SAVE loads in BlinkDB (into its AOF, so a restart keeps it); an RDB 9
file with the encodings of Redis 6 loads the same in both; a damaged file is refused."""

import os
import shutil
import subprocess

from rdb_helpers import (DEBUG, WORKLOAD, WORKLOAD_KEYS, assert_same_digests,
                         assert_same_keyspace, client, legacy_rdb)
from server import ORACLE_BIN, ServerProcess, require_tool

LIB = "#!lua name=lib\nredis.register_function('f', function() return 1 end)"


def fill(port):
    for db in (0, 3, 15):
        conn = client(port, db)
        for cmd in WORKLOAD:
            conn.execute_command(*cmd)
        conn.set(f"only-in-{db}", db)
    # Above BlinkDB's 16kb blob-threshold: kept in its log, read back for SAVE.
    client(port).set("large", b"L" * 100_000, px=100_000_000)
    client(port).function_load(LIB)


def test_blinkdb_save_loads_in_redis(server_factory, tmp_path):
    srv = server_factory("--appendonly", "yes", "--hash-max-listpack-entries", "128", *DEBUG)
    fill(srv.port)
    conn = client(srv.port)
    before = conn.lastsave()
    assert conn.save()
    assert conn.lastsave() >= before
    info = conn.info("persistence")
    assert info["rdb_changes_since_last_save"] == 0
    assert info["rdb_saves"] == 1
    path = os.path.join(srv.dir, "dump.rdb")
    check = subprocess.run([require_tool("redis-check-rdb"), path], capture_output=True, text=True)
    assert "RDB looks OK" in check.stdout, check.stdout + check.stderr
    redis_dir = tmp_path / "redis"
    redis_dir.mkdir()
    shutil.copy(path, redis_dir / "dump.rdb")
    oracle = ServerProcess(ORACLE_BIN, str(redis_dir),
                           ["--hash-max-listpack-entries", "128", *DEBUG])
    try:
        assert assert_same_keyspace(srv.port, oracle.port) > 3 * len(WORKLOAD_KEYS)
        assert_same_digests(srv.port, oracle.port)
        assert client(oracle.port).fcall("f", 0) == 1
        # The encodings survive too.
        for key in ("h:small", "h:big", "set:int", "set:str", "z:small", "z:big", "l:big"):
            assert client(oracle.port).object("encoding", key) == conn.object("encoding", key)
    finally:
        oracle.stop()


def test_redis_save_loads_in_blinkdb_and_stays_in_its_aof(server_factory, tmp_path):
    redis_dir = tmp_path / "redis"
    oracle = ServerProcess(ORACLE_BIN, str(redis_dir),
                           ["--hash-max-listpack-entries", "128", *DEBUG])
    try:
        fill(oracle.port)
        assert client(oracle.port).save()
        data_dir = tmp_path / "blinkdb-data"
        data_dir.mkdir()
        shutil.copy(redis_dir / "dump.rdb", data_dir / "dump.rdb")
        srv = server_factory("--appendonly", "yes", "--dir", str(data_dir), *DEBUG)
        assert assert_same_keyspace(srv.port, oracle.port) > 3 * len(WORKLOAD_KEYS)
        assert_same_digests(srv.port, oracle.port)
        assert client(srv.port).fcall("f", 0) == 1
        srv.stop()
        # The AOF now holds the data: without the RDB file, a restart has it all.
        os.remove(data_dir / "dump.rdb")
        again = server_factory("--appendonly", "yes", "--dir", str(data_dir), *DEBUG,
                               name="again")
        assert assert_same_keyspace(again.port, oracle.port) > 3 * len(WORKLOAD_KEYS)
        assert_same_digests(again.port, oracle.port)
        assert client(again.port).fcall("f", 0) == 1
    finally:
        oracle.stop()


def test_load_rdb_flag_imports_once(server_factory, tmp_path):
    redis_dir = tmp_path / "redis"
    oracle = ServerProcess(ORACLE_BIN, str(redis_dir))
    try:
        client(oracle.port).set("from-rdb", "1")
        client(oracle.port).save()
    finally:
        oracle.stop()
    data_dir = tmp_path / "data"
    first = server_factory("--appendonly", "yes", "--dir", str(data_dir))
    client(first.port).set("from-aof", "2")
    client(first.port).set("from-rdb", "old")
    first.stop()
    srv = server_factory("--appendonly", "yes", "--dir", str(data_dir),
                         "--load-rdb", str(redis_dir / "dump.rdb"), name="import")
    assert client(srv.port).mget("from-rdb", "from-aof") == [b"1", b"2"]
    srv.stop()
    again = server_factory("--appendonly", "yes", "--dir", str(data_dir), name="again")
    assert client(again.port).mget("from-rdb", "from-aof") == [b"1", b"2"]


def test_redis_6_encodings_load_as_in_redis(server_factory, tmp_path):
    data = legacy_rdb()
    for name in ("redis", "blinkdb"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "dump.rdb").write_bytes(data)
    oracle = ServerProcess(ORACLE_BIN, str(tmp_path / "redis"), DEBUG)
    try:
        srv = server_factory("--dir", str(tmp_path / "blinkdb"), *DEBUG)
        assert assert_same_keyspace(srv.port, oracle.port) == 8
        assert_same_digests(srv.port, oracle.port)
    finally:
        oracle.stop()


def test_damaged_files_are_refused(server_factory, tmp_path):
    redis_dir = tmp_path / "redis"
    oracle = ServerProcess(ORACLE_BIN, str(redis_dir))
    try:
        fill(oracle.port)
        client(oracle.port).save()
    finally:
        oracle.stop()
    good = (redis_dir / "dump.rdb").read_bytes()
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x10
    damaged = {
        "bit-flip": bytes(flipped),
        "truncated": good[: len(good) // 2],
        "version-11": b"REDIS0011" + good[9:],
        "not-rdb": b"hello world",
    }
    for name, data in damaged.items():
        data_dir = tmp_path / name
        data_dir.mkdir()
        (data_dir / "dump.rdb").write_bytes(data)
        try:
            server_factory("--dir", str(data_dir), name=name)
        except RuntimeError as e:
            assert "RDB" in str(e), str(e)
        else:
            raise AssertionError(f"{name}: the server started on a damaged file")


def test_truncated_file_is_reported_as_redis_reports_it(blinkdb_binary, tmp_path):
    """A dump.rdb cut short fails on the short read, as in redis-server (which checks
    the checksum only after the last record), not as a wrong checksum."""
    redis_dir = tmp_path / "redis"
    oracle = ServerProcess(ORACLE_BIN, str(redis_dir))
    try:
        fill(oracle.port)
        client(oracle.port).save()
    finally:
        oracle.stop()
    good = (redis_dir / "dump.rdb").read_bytes()
    for cut in (len(good) // 2, len(good) - 9):
        logs = {}
        for binary in (blinkdb_binary, ORACLE_BIN):
            data_dir = tmp_path / f"{os.path.basename(binary)}-{cut}"
            data_dir.mkdir()
            (data_dir / "dump.rdb").write_bytes(good[:cut])
            try:
                ServerProcess(binary, str(data_dir)).stop()
            except RuntimeError as e:
                logs[binary] = str(e)
            else:
                raise AssertionError(f"{binary} started on a file cut at {cut}")
        for binary, log in logs.items():
            assert "Short read or OOM loading DB. Unrecoverable error, aborting now." in log, log
            assert "Unexpected EOF reading RDB file" in log, log
            assert "Wrong RDB checksum" not in log, log


def test_bgsave_is_one_point_in_time_while_writers_run(server_factory, tmp_path):
    """Rounds of INCR over keys spread on every shard, in a fixed order, while BGSAVE
    runs: in the file every key holds the round of one single cut (the keys before the
    writer's position at the cut one more than those after it)."""
    import threading

    srv = server_factory("--appendonly", "yes")
    conn = client(srv.port)
    keys = [f"k{i}" for i in range(2000)]
    conn.mset({k: 0 for k in keys})
    for i in range(200):
        conn.hset(f"h{i}", mapping={f"f{j}": j for j in range(50)})
    stop = threading.Event()

    def writer():
        w = client(srv.port)
        while not stop.is_set():
            pipe = w.pipeline(transaction=False)
            for k in keys:
                pipe.incr(k)
            pipe.execute()

    t = threading.Thread(target=writer)
    t.start()
    try:
        import time
        time.sleep(0.3)
        assert conn.bgsave() in (True, b"Background saving started")
        deadline = time.monotonic() + 30
        while conn.info("persistence")["rdb_bgsave_in_progress"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        stop.set()
        t.join()
    info = conn.info("persistence")
    assert info["rdb_last_bgsave_status"] == "ok"
    redis_dir = tmp_path / "redis"
    redis_dir.mkdir()
    shutil.copy(os.path.join(srv.dir, "dump.rdb"), redis_dir / "dump.rdb")
    oracle = ServerProcess(ORACLE_BIN, str(redis_dir))
    try:
        values = [int(v) for v in client(oracle.port).mget(keys)]
        assert all(a >= b for a, b in zip(values, values[1:])), "not one point in time"
        assert values[0] - values[-1] <= 1 and values[0] > 0
        assert client(oracle.port).hlen("h199") == 50
    finally:
        oracle.stop()
