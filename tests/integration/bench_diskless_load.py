"""One-off measure of repl-diskless-load (issue 22): a BlinkDB replica syncing N mixed keys
from a redis-server 7.0.15 master, with disabled, on-empty-db and swapdb; time from
REPLICAOF to the link up, and the replica's peak RSS (VmHWM) and its RSS before.

    BLINKDB_BIN=target/ci/blinkdb BLINKDB_TEST_PORTS=19000-19399 \\
        target/venv/bin/python tests/integration/bench_diskless_load.py [--keys 1000000]

Not a benchmark: one run each on a shared machine."""

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))

from rdb_helpers import client  # noqa: E402
from server import ORACLE_BIN, ServerProcess, blinkdb_bin  # noqa: E402


def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    return 0


def populate(c, n):
    """70% strings, then hashes, lists, sets, sorted sets of 8 small members each; 10% with
    a TTL."""
    p = c.pipeline(transaction=False)
    for i in range(n):
        k = i % 10
        if k < 7:
            p.set(f"s:{i}", f"value-{i}-" + "x" * (i % 50))
        elif k == 7:
            p.hset(f"h:{i}", mapping={f"f{j}": f"v{j}" for j in range(8)})
        elif k == 8:
            p.rpush(f"l:{i}", *[f"e{j}" for j in range(8)])
        elif i % 20 == 9:
            p.sadd(f"set:{i}", *[f"m{j}" for j in range(8)])
        else:
            p.zadd(f"z:{i}", {f"m{j}": j for j in range(8)})
        if i % 10 == 3:
            p.pexpire(f"s:{i}", 100_000_000)
        if i % 10000 == 9999:
            p.execute()
    p.execute()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dlload-bench-")
    master = ServerProcess(ORACLE_BIN, os.path.join(work, "master"),
                           ["--repl-diskless-sync", "no"])
    try:
        m = client(master.port)
        t = time.time()
        populate(m, args.keys)
        print(f"master: {m.dbsize()} keys in {time.time() - t:.1f} s", flush=True)
        rows = []
        for mode, with_data in [("disabled", False), ("on-empty-db", False),
                                ("swapdb", False), ("disabled", True), ("swapdb", True)]:
            d = os.path.join(work, f"replica-{mode}-{with_data}")
            r_srv = ServerProcess(blinkdb_bin(), d, ["--repl-diskless-load", mode])
            r = client(r_srv.port)
            if with_data:
                # The replica already holds the master's data (a second full sync).
                r.execute_command("REPLICAOF", "127.0.0.1", master.port)
                while r.info("replication").get("master_link_status") != "up":
                    time.sleep(0.05)
                r.execute_command("REPLICAOF", "NO", "ONE")
                # The peak so far is this first sync's: start the measure from here.
                with open(f"/proc/{r_srv.pid}/clear_refs", "w") as f:
                    f.write("5")
            before = status(r_srv.pid, "VmRSS")
            t = time.time()
            r.execute_command("REPLICAOF", "127.0.0.1", master.port)
            while r.info("replication").get("master_link_status") != "up":
                time.sleep(0.02)
            took = time.time() - t
            peak = status(r_srv.pid, "VmHWM")
            with open(r_srv.log_path, errors="replace") as f:
                loads = [ln for ln in f if "DB loaded from RDB" in ln]
            load_s = loads[-1].rsplit(",", 1)[-1].strip() if loads else "?"
            assert r.dbsize() == m.dbsize()
            rows.append((mode, with_data, took, before, peak))
            print(f"{mode:12} replica {'with the data' if with_data else 'empty':13} "
                  f"sync {took:5.1f} s (load: {load_s})  RSS before {before} MB  peak {peak} MB",
                  flush=True)
            r_srv.stop()
            shutil.rmtree(d, ignore_errors=True)
    finally:
        master.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
