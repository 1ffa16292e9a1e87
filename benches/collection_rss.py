#!/usr/bin/env python3
"""The `collections` group's memory cells alone, printed as they come: RSS, used_memory and
MEMORY USAGE per member of a 1M-member hash, set, zset, list (RPUSH) and stream (XADD), each
built by the group on a fresh server with persistence off (`memory_per_member`), BlinkDB and
redis-server in turn. For a look between harness runs; the figures that count come from
`compare.py --only collections`.

Usage: benches/collection_rss.py [--members N] [--rounds R] [--port P] [--kinds list,stream]
       [--blinkdb BIN]... (default target/ci/blinkdb; several --blinkdb compare builds)."""
import argparse
import os
import sys
import tempfile
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
from harness.groups.collections import KINDS, fresh, memory_per_member  # noqa: E402
from harness.servers import Contestant, Ports  # noqa: E402

REDIS = "/usr/bin/redis-server"


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
    contestants = [Contestant(b, b, True) for b in builds]
    if not args.no_redis:
        contestants.append(Contestant("redis", REDIS, False))
    print("kind     server  RSS / used_memory / MEMORY USAGE, bytes per member")
    with tempfile.TemporaryDirectory(prefix="collection_rss") as root:
        ctx = SimpleNamespace(ports=Ports(args.port), root=root)
        for r in range(args.rounds):
            for kind in args.kinds.split(","):
                for c in contestants:
                    server = fresh(ctx, c)
                    try:
                        m = memory_per_member(server, kind, args.members)
                    finally:
                        server.discard()
                    usage = m.get("usage", {}).get("value", float("nan"))
                    print(f"{kind:8} {c.label[-40:]:40} r{r} rss {m['rss']['value']:6.2f} "
                          f"used {m['used']['value']:6.2f} usage {usage:6.2f}", flush=True)


if __name__ == "__main__":
    main()
