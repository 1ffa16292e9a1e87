"""appendfsync always: kill -9 at random moments under concurrent writes loses no acknowledged write."""

import os
import random
import time

from acked_writes import check_histories, read_keys, settle, start_writers, stop_writers
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
            time.sleep(rng.uniform(0.15, 0.8))
            kill9(srv)
            acked = stop_writers(stop, writers)
            assert acked > 0, f"round {round_no}: no write was acknowledged before the kill"
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
