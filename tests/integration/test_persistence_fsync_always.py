"""appendfsync always: kill -9 at random moments under concurrent writes loses no acknowledged
write; CONFIG SET appendfsync switches the running log's policy."""

import os
import random
import time

from acked_writes import (check_histories, read_keys, settle, start_writers, stop_writers,
                          wait_for_first_ack)
from aof_helpers import crash_seed, kill9, start_aof_server

ROUNDS = int(os.environ.get("BLINKDB_CRASH_ROUNDS", "20"))
WRITERS = 4
# Small incr files: many kills land during a rotation (new file + manifest replace).
SEGMENT_SIZE = os.environ.get("BLINKDB_CRASH_SEGMENT_SIZE", "256kb")
FLAGS = ("--appendfsync", "always", "--segment-size", SEGMENT_SIZE)


def test_kill9_keeps_every_acknowledged_write(blinkdb_binary, tmp_path):
    seed = crash_seed()
    rng = random.Random(seed)
    directory = str(tmp_path / "data")
    histories = {}
    total_acked = 0
    srv = start_aof_server(blinkdb_binary, directory, *FLAGS)
    try:
        for round_no in range(ROUNDS):
            stop, writers = start_writers(srv.port, histories, WRITERS, seed + round_no, depths=(1, 8))
            wait_for_first_ack(writers)
            time.sleep(rng.uniform(0.0, 0.65))
            kill9(srv)
            acked = stop_writers(stop, writers)
            total_acked += acked
            # the same directory every round: each restart also replays earlier crashes' tails
            srv = start_aof_server(blinkdb_binary, directory, *FLAGS)
            with srv.connect(timeout=30.0) as conn:
                observed = read_keys(conn, histories)
            problems, lost = check_histories(histories, observed)
            assert not problems and lost == 0, (
                f"round {round_no}: acknowledged writes missing after kill -9: {problems[:10]}")
            settle(histories, observed)
        files = len(os.listdir(os.path.join(directory, "appendonlydir")))
        print(f"{ROUNDS} rounds, {total_acked} acknowledged writes, 0 lost, {files} AOF files")
    finally:
        srv.stop()



def test_config_set_appendfsync_at_runtime(blinkdb_binary, tmp_path):
    """CONFIG SET appendfsync changes the policy of the running log: under `no` writes make
    no fdatasync, under `always` each write of a lone client waits for one, and `everysec`
    syncs by itself again (INFO persistence's aof_fsyncs counts them)."""
    srv = start_aof_server(blinkdb_binary, str(tmp_path / "data"), "--appendfsync", "no")

    def fsyncs(conn):
        info = conn.call("INFO", "persistence").value.decode()
        return int(info.split("aof_fsyncs:")[1].split()[0])

    def writes(conn, n, prefix):
        for i in range(n):
            assert conn.call("SET", f"{prefix}{i}", "v").raw == b"+OK\r\n"

    try:
        with srv.connect() as conn:
            before = fsyncs(conn)
            writes(conn, 50, "no")
            time.sleep(1.2)
            assert fsyncs(conn) == before, "`no` made an fdatasync"
            assert conn.call("CONFIG", "SET", "appendfsync", "always").raw == b"+OK\r\n"
            assert b"always" in conn.call("CONFIG", "GET", "appendfsync").raw
            before = fsyncs(conn)
            writes(conn, 50, "always")
            assert fsyncs(conn) - before >= 50, "a lone client's write under `always` waits for its own sync"
            assert conn.call("CONFIG", "SET", "appendfsync", "no").raw == b"+OK\r\n"
            time.sleep(0.2)  # the change's one sync
            before = fsyncs(conn)
            writes(conn, 50, "no2")
            time.sleep(1.2)
            assert fsyncs(conn) == before
            assert conn.call("CONFIG", "SET", "appendfsync", "everysec").raw == b"+OK\r\n"
            time.sleep(0.2)  # the change's one sync
            before = fsyncs(conn)
            writes(conn, 5, "everysec")
            time.sleep(2.5)
            assert fsyncs(conn) > before, "everysec syncs within a second"
            assert conn.call("CONFIG", "SET", "appendfsync", "sometimes").raw.startswith(
                b"-ERR CONFIG SET failed (possibly related to argument 'appendfsync')")
    finally:
        srv.stop()
