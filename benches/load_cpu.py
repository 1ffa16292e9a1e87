#!/usr/bin/env python3
"""Server CPU seconds (user + system, /proc/PID/stat) from spawn until a dataset is loaded, for
BlinkDB builds compared on one machine: the load of a dump.rdb and the replay of an AOF
(issue 42: "RDB and AOF load of the small-object datasets is not slower"). CPU time, not wall
time: other work on the machine stretches the wall clock but not the server's own CPU much.

The dataset is the small-objects group's 8 workloads, KEYS/8 keys each (key prefixes apart),
written once by redis-server 7 (the oracle, so neither build wrote the files) with
`--appendonly yes --aof-use-rdb-preamble no`, then SAVEd: the same dump.rdb and RESP AOF for
every build. Builds alternate (A B, B A, ...) for --rounds rounds.

Usage: benches/load_cpu.py [--keys 1000000] [--rounds 3] [--port 33400] [--work DIR]
       LABEL=BIN LABEL=BIN..."""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.groups.small_objects import WORKLOADS  # noqa: E402
from harness.resp import encode  # noqa: E402

REDIS = "/usr/bin/redis-server"
TICK = os.sysconf("SC_CLK_TCK")


def call(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port)] + list(args), capture_output=True,
                         text=True, timeout=60)
    return out.stdout.strip()


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.01)
    raise RuntimeError("timed out waiting for " + what)


def write_dataset(port, work, keys):
    d = os.path.join(work, "oracle")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                             "--save", "", "--appendonly", "yes", "--appendfsync", "no",
                             "--aof-use-rdb-preamble", "no"], stdout=subprocess.DEVNULL)
    try:
        wait_for(lambda: call(port, "PING") == "PONG", 30, "redis-server")
        per = keys // len(WORKLOADS)
        with socket.create_connection(("127.0.0.1", port)) as s, s.makefile("rb") as f:
            for w, (_, command) in enumerate(WORKLOADS):
                for start in range(0, per, 1000):
                    batch = []
                    for i in range(start, min(per, start + 1000)):
                        args = list(command(i))
                        args[1] = b"w%d:" % w + args[1]
                        batch.append(encode(*args))
                    s.sendall(b"".join(batch))
                    for _ in batch:
                        if f.readline().startswith(b"-"):
                            raise RuntimeError("error reply")
        assert call(port, "DBSIZE") == str(per * len(WORKLOADS))
        assert call(port, "SAVE") == "OK"
        wait_for(lambda: "aof_rewrite_in_progress:0" in call(port, "INFO", "persistence"), 60,
                 "no rewrite")
    finally:
        proc.terminate()
        proc.wait()
    return d, per * len(WORKLOADS)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def load_once(binary, port, work, source, kind, keys):
    d = os.path.join(work, "run")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    if kind == "rdb":
        shutil.copy(os.path.join(source, "dump.rdb"), d)
        flags = ["--appendonly", "no"]
    else:
        shutil.copytree(os.path.join(source, "appendonlydir"), os.path.join(d, "appendonlydir"))
        flags = ["--appendonly", "yes", "--appendfsync", "no"]
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                             "--save", ""] + flags, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        start = time.monotonic()
        wait_for(lambda: call(port, "DBSIZE") == str(keys), 600, "the load")
        return cpu_seconds(proc.pid), time.monotonic() - start
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--port", type=int, default=33400)
    ap.add_argument("--work", default="/tmp/load_cpu")
    ap.add_argument("builds", nargs="+")
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    source, keys = write_dataset(args.port, args.work, args.keys)
    print("dataset: %d keys, dump.rdb %.1f MB, AOF %.1f MB" % (
        keys, os.path.getsize(os.path.join(source, "dump.rdb")) / 1e6,
        sum(os.path.getsize(os.path.join(source, "appendonlydir", f))
            for f in os.listdir(os.path.join(source, "appendonlydir"))) / 1e6), flush=True)
    for kind in ("rdb", "aof"):
        for r in range(args.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for label, binary in order:
                cpu, wall = load_once(binary, args.port, args.work, source, kind, keys)
                print("%s r%d %-8s cpu %.2f s  wall %.2f s  load %.1f" % (
                    kind, r, label, cpu, wall, os.getloadavg()[0]), flush=True)
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
