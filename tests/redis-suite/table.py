#!/usr/bin/env python3
"""Prints the per-file Markdown table of docs/compatibility.md from run.sh's results
(target/redis-suite/results.tsv) and the reasons in tests/redis-suite/reasons.tsv."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
results = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target/redis-suite/results.tsv")

recorded, order = {}, []
for line in open(os.path.join(here, "files.tsv")):
    if line.startswith("#") or not line.strip():
        continue
    # A fourth column, when present, holds the file's server options.
    name, _floor, redis_ok = line.rstrip("\n").split("\t")[:3]
    recorded[name] = int(redis_ok)
    order.append(name)
reasons = {}
for line in open(os.path.join(here, "reasons.tsv")):
    if line.startswith("#") or not line.strip():
        continue
    name, text = line.rstrip("\n").split("\t", 1)
    reasons[name] = text
runs = {}
for line in open(results):
    kind, name, ok, err, early, _secs = line.rstrip("\n").split("\t")
    runs[(kind, name)] = (int(ok), int(err), early == "yes")

print("| file | BlinkDB ok / err | redis-server ok | BlinkDB / Redis | what fails and why |")
print("|---|---|---|---|---|")
total_b = total_r = 0
for name in order:
    ok, err, early = runs.get(("blinkdb", name), (0, 0, True))
    r = runs.get(("redis", name), (recorded[name], 0, False))[0]
    total_b += ok
    total_r += r
    share = "%d%%" % (100 * ok // r) if r else "-"
    tail = " (ends early)" if early else ""
    print("| %s | %d / %d%s | %d | %s | %s |" % (name, ok, err, tail, r, share, reasons.get(name, "")))
print("| **all files** | **%d** | **%d** | **%d%%** | |" % (total_b, total_r, 100 * total_b // total_r))
