#!/usr/bin/env python3
"""RSS and used_memory per member of the `collections` group's 1M-member collections (hash, set,
zset, list by RPUSH, stream by XADD), BlinkDB and redis-server side by side: each collection is
built by the group's own `build()` (1000-member commands pipelined 20 at a time, XADD 1000 at a
time) on a fresh server with persistence off; VmRSS and INFO used_memory are read before and
after, and for BlinkDB also MEMORY USAGE of the collection (SAMPLES 0).

Usage: benches/collection_rss.py [--members N] [--rounds R] [--port P] [--kinds list,stream]
       [--blinkdb BIN]... (default target/ci/blinkdb; several --blinkdb compare builds)."""
import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from benches.harness.groups.collections import build  # noqa: E402
from benches.harness.groups.small_objects import used_memory  # noqa: E402
from benches.harness.servers import Contestant, Ports, Server  # noqa: E402

REDIS = "/usr/bin/redis-server"
KINDS = ("hash", "set", "zset", "list", "stream")


def measure(binary, ports, kind, members):
    # BlinkDB's snapshots off as the harness turns off Redis's (save points).
    flags = [] if binary == REDIS else ["--save", ""]
    with tempfile.TemporaryDirectory(prefix="collection_rss") as root:
        server = Server(Contestant(binary, binary, binary != REDIS, flags), ports, root)
        server.start()
        try:
            with server.client() as client:
                rss0, used0 = server.rss_kb(), used_memory(client)
                commands = list(build(kind, members))
                step = 1000 if kind == "stream" else 20
                for at in range(0, len(commands), step):
                    client.pipeline(commands[at:at + step])
                rss1, used1 = server.rss_kb(), used_memory(client)
                usage = client.call("MEMORY", "USAGE", "c", "SAMPLES", "0")
            return ((rss1 - rss0) * 1024 / members, (used1 - used0) / members,
                    (usage or 0) / members)
        finally:
            server.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--port", type=int, default=30010)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--blinkdb", action="append")
    ap.add_argument("--no-redis", action="store_true")
    args = ap.parse_args()
    builds = args.blinkdb or [os.path.join(ROOT, "target/ci/blinkdb")]
    contestants = [(b, b) for b in builds] + ([] if args.no_redis else [("redis", REDIS)])
    ports = Ports(args.port)
    print("kind     server  rss B/member  used_memory B/member  MEMORY USAGE B/member")
    for r in range(args.rounds):
        for kind in args.kinds.split(","):
            for label, binary in contestants:
                rss, used, usage = measure(binary, ports, kind, args.members)
                print(f"{kind:8} {label[-40:]:40} r{r} rss {rss:6.2f} used {used:6.2f} "
                      f"usage {usage:6.2f}", flush=True)


if __name__ == "__main__":
    main()
