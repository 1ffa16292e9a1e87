"""BGREWRITEAOF under write load: kill -9 at random points during the rewrite loses
no acknowledged write (appendfsync always); a completed rewrite keeps everything and
shrinks the AOF."""

import hashlib
import os
import random
import time

from acked_writes import check_histories, read_keys, settle, start_writers, stop_writers
from aof_helpers import (
    aof_bytes, aof_path, bgrewriteaof, crash_seed, kill9, start_aof_server, wait_rewrite_done,
)

ROUNDS = int(os.environ.get("BLINKDB_REWRITE_CRASH_ROUNDS", "12"))
SMALL_KEYS = 300_000
BLOBS = 60
BLOB_SIZE = 256 * 1024
WRITERS = 3


def blob(i):
    return hashlib.sha256(b"%d" % i).digest() * (BLOB_SIZE // 32)


def small(i, generation=0):
    return b"%d:%d:" % (i, generation) + b"s" * 60


def preload(conn, generation=0, keys=SMALL_KEYS):
    for start in range(0, keys, 5000):
        replies = conn.pipeline([("SET", f"pre:{i}", small(i, generation))
                                 for i in range(start, min(start + 5000, keys))])
        assert all(r.raw == b"+OK\r\n" for r in replies)
    for i in range(BLOBS):
        assert conn.call("SET", f"blob:{i}", blob(i)).raw == b"+OK\r\n"


def check_preloaded(conn, rng, generation=0, keys=SMALL_KEYS):
    sample = rng.sample(range(keys), 3000)
    replies = conn.pipeline([("GET", f"pre:{i}") for i in sample])
    for i, reply in zip(sample, replies):
        assert reply.value == small(i, generation), f"pre:{i} is {reply.raw[:40]!r}"
    for i in range(BLOBS):
        value = conn.call("GET", f"blob:{i}").value
        assert value == blob(i), f"blob:{i} differs after restart"


def rewrite_temp_files(directory):
    return sum(1 for name in os.listdir(aof_path(directory)) if name.startswith("temp-rewrite"))


def live_writer_keys(observed):
    return sum(1 for v in observed.values() if v is not None)


def test_kill9_during_rewrite_keeps_acknowledged_writes(blinkdb_binary, tmp_path):
    seed = crash_seed()
    rng = random.Random(seed)
    directory = str(tmp_path / "data")
    always = ("--appendfsync", "always", "--auto-aof-rewrite-percentage", "0")
    srv = start_aof_server(blinkdb_binary, directory, *always)
    histories = {}
    interrupted = 0
    total_acked = 0
    try:
        with srv.connect() as conn:
            preload(conn)
            started = time.monotonic()
            bgrewriteaof(conn)
            fields = wait_rewrite_done(conn)
            rewrite_s = time.monotonic() - started
            assert fields["aof_last_bgrewrite_status"] == "ok", fields
        print(f"an idle rewrite of {SMALL_KEYS} keys + {BLOBS} blobs took {rewrite_s:.2f} s")

        for round_no in range(ROUNDS):
            stop, writers = start_writers(srv.port, histories, WRITERS, seed + round_no, depths=(1, 8))
            time.sleep(0.05)
            with srv.connect() as conn:
                bgrewriteaof(conn)
                time.sleep(rng.uniform(0.0, rewrite_s * 0.9))
                kill9(srv)
            # the temporary base exists from the rewrite's start until its rename
            in_progress = rewrite_temp_files(directory) > 0
            interrupted += in_progress
            total_acked += stop_writers(stop, writers)
            srv = start_aof_server(blinkdb_binary, directory, *always)
            with srv.connect(timeout=60.0) as conn:
                observed = read_keys(conn, histories)
                problems, lost = check_histories(histories, observed)
                assert not problems and lost == 0, (
                    f"round {round_no} (rewrite running at kill: {in_progress}):"
                    f" acknowledged writes missing: {problems[:10]}")
                check_preloaded(conn, rng)
                dbsize = conn.call("DBSIZE").value
                assert dbsize == SMALL_KEYS + BLOBS + live_writer_keys(observed)
            settle(histories, observed)
        print(f"{ROUNDS} rounds, {interrupted} killed mid-rewrite, {total_acked} acknowledged"
              " writes, 0 lost")
        assert interrupted >= 1, "no kill landed while the rewrite was running"
    finally:
        srv.stop()


def test_rewrite_under_load_keeps_data_and_shrinks(blinkdb_binary, tmp_path):
    seed = crash_seed()
    rng = random.Random(seed)
    directory = str(tmp_path / "data")
    always = ("--appendfsync", "always", "--auto-aof-rewrite-percentage", "0")
    srv = start_aof_server(blinkdb_binary, directory, *always)
    histories = {}
    keys = 50_000
    try:
        with srv.connect() as conn:
            for generation in range(4):  # overwrites: a compact base is much smaller
                preload(conn, generation, keys)
        before = aof_bytes(directory)
        stop, writers = start_writers(srv.port, histories, WRITERS, seed)
        # Large values overwritten and deleted while the rewrite copies the old ones.
        big_stop, big_writers = start_writers(srv.port, histories, 2, seed, prefix="big",
                                              value_size=20_000, n_keys=4)
        time.sleep(0.2)
        with srv.connect() as conn:
            bgrewriteaof(conn)
            fields = wait_rewrite_done(conn)
        time.sleep(0.2)
        acked = stop_writers(stop, writers) + stop_writers(big_stop, big_writers)
        assert fields["aof_last_bgrewrite_status"] == "ok", fields
        after = aof_bytes(directory)
        print(f"AOF {before} bytes before the rewrite, {after} after; {acked} writes during it")
        assert after < before * 0.5, f"the rewrite did not shrink the AOF: {before} -> {after}"

        kill9(srv)
        srv = start_aof_server(blinkdb_binary, directory, *always)
        with srv.connect(timeout=60.0) as conn:
            observed = read_keys(conn, histories)
            problems, lost = check_histories(histories, observed)
            assert not problems and lost == 0, f"writes during the rewrite lost: {problems[:10]}"
            check_preloaded(conn, rng, generation=3, keys=keys)
            assert conn.call("DBSIZE").value == keys + BLOBS + live_writer_keys(observed)
        settle(histories, observed)
    finally:
        srv.stop()
