"""Cache mode (maxmemory-policy allkeys-fifo): whole oldest AOF segments are dropped with the
keys whose value lives in them; a restart, redis-check-aof and redis-server 7 all see exactly
the state the server had. See docs/cache-mode.md."""

import os
import time

from aof_helpers import AOF_DIRNAME, aof_path, start_aof_server
from test_persistence_redis_interop import assert_same_data, check_aof, redis_loads, snapshot

SEGMENT = 256 * 1024
DISK_LIMIT = 2 * 1024 * 1024
BLOB = 64 * 1024


def cache_server(binary, directory, *extra):
    return start_aof_server(binary, directory, "--maxmemory-policy", "allkeys-fifo",
                            "--blob-threshold", "16kb", *extra)


def info_field(conn, section, name):
    text = conn.call("INFO", section).value
    text = text.decode() if isinstance(text, bytes) else text
    for line in text.split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    raise AssertionError(f"INFO {section} has no {name}")


def aof_dir_bytes(directory):
    path = os.path.join(directory, AOF_DIRNAME)
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
               if f.endswith(".aof"))


def blob_value(i):
    return (f"{i:08d}".encode() * (BLOB // 8))[:BLOB]


def present_indexes(conn, prefix, count):
    replies = conn.pipeline([("EXISTS", f"{prefix}{i}") for i in range(count)])
    return [i for i, r in enumerate(replies) if r.value == 1]


def restart_same(binary, srv, directory, *extra):
    """Stops the server, checks the files with redis-check-aof, restarts, and returns the
    new server and snapshots before/after."""
    with srv.connect() as conn:
        before = snapshot(conn)
    srv.stop()
    check_aof(directory)
    again = cache_server(binary, directory, *extra)
    with again.connect(timeout=60.0) as conn:
        after = snapshot(conn)
    assert_same_data(before, after, "restart after evictions")
    return again, before


def test_disk_limit_drops_oldest_blob_segments(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    extra = ("--segment-size", str(SEGMENT), "--max-disk-size", str(DISK_LIMIT))
    srv = cache_server(blinkdb_binary, directory, *extra)
    total = 300
    peak = 0
    try:
        with srv.connect(timeout=60.0) as conn:
            for i in range(total):
                assert conn.call("SET", f"blob:{i}", blob_value(i)).value in (b"OK", "OK")
                peak = max(peak, aof_dir_bytes(directory))
            time.sleep(0.5)
            # The write path evicts before each SET, so the directory never passes the
            # limit by more than the record being written plus the active file's head.
            assert peak <= DISK_LIMIT + SEGMENT + BLOB, f"AOF dir peaked at {peak}"
            assert aof_dir_bytes(directory) <= DISK_LIMIT + BLOB
            present = present_indexes(conn, "blob:", total)
            assert present, "the newest values must stay"
            oldest = present[0]
            assert oldest > 0, "nothing was evicted"
            assert present == list(range(oldest, total)), "eviction is FIFO: a suffix stays"
            for i in present:
                assert conn.call("GET", f"blob:{i}").value == blob_value(i), f"blob:{i}"
            assert int(info_field(conn, "stats", "evicted_keys")) == oldest
            assert info_field(conn, "memory", "maxmemory_policy") == "allkeys-fifo"
        srv, before = restart_same(blinkdb_binary, srv, directory, *extra)
        srv.stop()
        redis_loads(tmp_path, directory, before, "evicted blob segments")
    finally:
        srv.stop()


def test_maxmemory_drops_oldest_small_values(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    # used_memory counts the server's own ~1 MB and the key tables too (as
    # Redis's): 3 MB leaves room for part of the 30000 keys.
    limit = 3 * 1024 * 1024
    extra = ("--segment-size", "64kb", "--maxmemory", str(limit))
    srv = cache_server(blinkdb_binary, directory, *extra)
    total = 30000
    try:
        with srv.connect(timeout=60.0) as conn:
            for start in range(0, total, 500):
                replies = conn.pipeline([("SET", f"small:{i}", f"value-{i:032d}")
                                         for i in range(start, start + 500)])
                assert all(not r.is_error() for r in replies), replies[0]
                time.sleep(0.02)
            time.sleep(0.5)
            dataset = int(info_field(conn, "memory", "used_memory_dataset"))
            assert dataset <= limit, f"accounted memory {dataset} > maxmemory {limit}"
            present = present_indexes(conn, "small:", total)
            oldest = present[0]
            assert oldest > 0, "nothing was evicted"
            assert present == list(range(oldest, total)), "eviction is FIFO: a suffix stays"
            values = conn.pipeline([("GET", f"small:{i}") for i in present[-100:]])
            assert [v.value for v in values] == [f"value-{i:032d}".encode()
                                                 for i in present[-100:]]
            assert int(info_field(conn, "stats", "evicted_keys")) == oldest
            assert conn.call("CONFIG", "RESETSTAT").value in (b"OK", "OK")
            assert int(info_field(conn, "stats", "evicted_keys")) == 0
            # used_memory counts client buffers too (as Redis's): the snapshot
            # below, with its large replies, must not make the cron evict more.
            conn.call("CONFIG", "SET", "maxmemory", str(2 * limit))
        roomy = ("--segment-size", "64kb", "--maxmemory", str(2 * limit))
        srv, before = restart_same(blinkdb_binary, srv, directory, *roomy)
        srv.stop()
        redis_loads(tmp_path, directory, before, "evicted small values")
    finally:
        srv.stop()


def drop_oldest_segment(conn):
    """Sets max-disk-size just under the current size: the cron drops exactly the oldest
    segment, then the limit is lifted again."""
    evicted = int(info_field(conn, "stats", "evicted_keys"))
    size = int(info_field(conn, "persistence", "aof_current_size"))
    assert conn.call("CONFIG", "SET", "max-disk-size", str(size - 1)).value in (b"OK", "OK")
    deadline = time.monotonic() + 10
    while int(info_field(conn, "persistence", "aof_current_size")) >= size:
        assert time.monotonic() < deadline, "no segment was dropped"
        time.sleep(0.05)
    assert conn.call("CONFIG", "SET", "max-disk-size", "0").value in (b"OK", "OK")
    return int(info_field(conn, "stats", "evicted_keys")) - evicted


def test_later_records_on_keys_of_a_dropped_segment(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    extra = ("--segment-size", "4096")
    srv = cache_server(blinkdb_binary, directory, *extra)
    try:
        with srv.connect(timeout=60.0) as conn:
            # Segment 1: the keys, then filler so the next record opens segment 2.
            for k in ["app", "exp", "rng", "num", "ren", "per", "kept", "quiet"]:
                conn.call("SET", k, "0")
            conn.call("SET", "per", "1", "PX", "900000")
            conn.call("SET", "filler", "x" * 5000)
            # Segment 2: records that need the segment-1 values to be replayed right.
            conn.call("APPEND", "app", "-tail")
            conn.call("EXPIRE", "exp", "900")
            conn.call("SETRANGE", "rng", "3", "abc")
            conn.call("INCRBY", "num", "5")
            conn.call("RENAME", "ren", "ren2")
            conn.call("PERSIST", "per")
            conn.call("SET", "kept", "new")
            conn.call("SET", "fresh", "1")
            conn.call("APPEND", "fresh", "2")
            assert drop_oldest_segment(conn) == 8, "app exp rng num ren2 per quiet filler"
            keys = sorted(k for _, k in conn.call("KEYS", "*").value)
            assert keys == [b"fresh", b"kept"], keys
            assert conn.call("GET", "fresh").value == b"12"
        srv, before = restart_same(blinkdb_binary, srv, directory, *extra)
        srv.stop()
        redis_loads(tmp_path, directory, before, "evicted mixed segment")
    finally:
        srv.stop()


def test_bloom_filters_go_with_their_segment(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    extra = ("--segment-size", "4096")
    srv = cache_server(blinkdb_binary, directory, *extra)
    try:
        with srv.connect(timeout=60.0) as conn:
            conn.call("BF.ADD", "old", "a")
            conn.call("SET", "filler", "x" * 5000)
            conn.call("BF.ADD", "old", "b")
            conn.call("BF.ADD", "young", "c")
            assert drop_oldest_segment(conn) == 2, "old and filler"
            assert conn.call("EXISTS", "old").value == 0
            assert conn.call("BF.EXISTS", "young", "c").value == 1
        srv, _ = restart_same(blinkdb_binary, srv, directory, *extra)
        with srv.connect() as conn:
            assert conn.call("EXISTS", "old").value == 0
            assert conn.call("BF.EXISTS", "young", "c").value == 1
    finally:
        srv.stop()


def test_noeviction_refuses_with_redis_oom_text(blinkdb_binary, tmp_path):
    srv = start_aof_server(blinkdb_binary, str(tmp_path / "data"), "--maxmemory", "1")
    try:
        with srv.connect() as conn:
            time.sleep(0.3)
            reply = conn.call("SET", "k", "v")
            assert reply.is_error()
            assert reply.value in (b"OOM command not allowed when used memory > 'maxmemory'.",
                                   "OOM command not allowed when used memory > 'maxmemory'.")
            assert conn.call("GET", "k").value is None
            assert conn.call("DEL", "k").value == 0, "commands that free memory still run"
            assert info_field(conn, "memory", "maxmemory_policy") == "noeviction"
            bad = conn.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfru")
            text = bad.value.decode() if isinstance(bad.value, bytes) else bad.value
            assert bad.is_error() and "allkeys-random, noeviction, allkeys-fifo" in text, text
    finally:
        srv.stop()
