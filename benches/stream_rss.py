#!/usr/bin/env python3
"""RSS per stream entry, BlinkDB against redis-server 7, side by side: each server starts fresh
(persistence off), ENTRIES XADD with auto IDs are pipelined 2000 at a time into one stream, and
the growth of VmRSS (/proc/PID/status) is divided by the entries. Three shapes of small fields.

Usage: benches/stream_rss.py [ENTRIES]   (default 1000000; ports 7105-7106; BLINKDB_BIN or
target/release/blinkdb)."""
import os
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLINKDB = os.environ.get("BLINKDB_BIN", os.path.join(ROOT, "target/release/blinkdb"))
REDIS = "/usr/bin/redis-server"
BATCH = 2000

SHAPES = {
    "f v:<i>": lambda i: ["XADD", "c", "*", "f", "v:%d" % i],
    "field <i>": lambda i: ["XADD", "c", "*", "field", str(i)],
    "name user<i%1000> n <i>": lambda i: ["XADD", "c", "*", "name", "user%d" % (i % 1000), "n", str(i)],
}


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def load(port, n, make):
    with socket.create_connection(("127.0.0.1", port)) as s, s.makefile("rb") as f:
        for start in range(0, n, BATCH):
            end = min(n, start + BATCH)
            s.sendall(b"".join(encode(make(i)) for i in range(start, end)))
            for _ in range(start, end):
                line = f.readline()
                if line.startswith(b"-"):
                    raise SystemExit(line)
                if line.startswith(b"$"):
                    f.readline()


def measure(kind, port, n, make):
    directory = f"/tmp/stream_rss/{kind}{port}"
    os.makedirs(directory, exist_ok=True)
    if kind == "redis":
        cmd = [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", directory]
    else:
        cmd = [BLINKDB, "--port", str(port), "--dir", directory, "--appendonly", "no"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.7)
        before = rss_kb(proc.pid)
        load(port, n, make)
        time.sleep(0.5)
        return (rss_kb(proc.pid) - before) * 1024 / n
    finally:
        proc.terminate()
        proc.wait()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    for name, make in SHAPES.items():
        redis = measure("redis", 7105, n, make)
        blinkdb = measure("blinkdb", 7106, n, make)
        print(f"{name}: redis-server {redis:.1f} B/entry, BlinkDB {blinkdb:.1f} B/entry "
              f"({blinkdb / redis:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
