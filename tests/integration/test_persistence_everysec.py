"""appendfsync everysec: kill -9 under load loses at most the last ~2 s of acknowledged writes."""

import os
import random
import time

from acked_writes import check_histories, read_keys, settle, start_writers, stop_writers
from aof_helpers import crash_seed, kill9, start_aof_server

ROUNDS = int(os.environ.get("BLINKDB_EVERYSEC_ROUNDS", "3"))
WRITERS = 4
# Redis's promise for everysec: at most about one to two seconds of writes.
LOSS_WINDOW_S = 2.0


def test_kill9_loses_only_recent_writes(blinkdb_binary, tmp_path):
    seed = crash_seed()
    rng = random.Random(seed)
    directory = str(tmp_path / "data")
    histories = {}
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "everysec")
    report = []
    try:
        for round_no in range(ROUNDS):
            stop, writers = start_writers(srv.port, histories, WRITERS, seed + round_no, depths=(1, 8))
            time.sleep(rng.uniform(2.5, 3.5))
            killed_at = time.monotonic()
            kill9(srv)
            acked = stop_writers(stop, writers)
            old = sum(1 for h in histories.values() for t in h.times[1:]
                      if t < killed_at - LOSS_WINDOW_S)
            assert old > 0, "no acknowledged write is older than the loss window"
            srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "everysec")
            with srv.connect(timeout=30.0) as conn:
                observed = read_keys(conn, histories)
            problems, lost = check_histories(
                histories, observed, durable_before=killed_at - LOSS_WINDOW_S)
            assert not problems, (
                f"round {round_no}: writes acknowledged more than {LOSS_WINDOW_S} s before"
                f" the kill are missing: {problems[:10]}")
            report.append((acked, lost))
            settle(histories, observed)
        print("rounds (acknowledged, lost after kill -9):", report)
    finally:
        srv.stop()
