#!/usr/bin/env python3
"""Draws a compare.py result file: throughput by workload, server CPU per operation (or item)
by workload, and throughput by client count.

usage: chart.py RESULTS.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RATE_UNITS = ("req/s", "ops/s", "items/s", "cycles/s")


def rate_cells(run):
    return [c for c in run["cells"] if c["unit"] in RATE_UNITS
            and any("median" in r for r in c["results"].values())]


def by_workload(ax, cells, key="median", xlabel="median throughput (log scale)",
                title="Throughput by workload"):
    labels = []
    for cell in cells:
        for label in cell["results"]:
            if label not in labels:
                labels.append(label)
    colors = {label: "C%d" % (i % 10) for i, label in enumerate(labels)}
    seen = set()
    for row, cell in enumerate(cells):
        present = [(label, r[key]) for label, r in cell["results"].items() if r.get(key)]
        height = 0.8 / max(1, len(cell["results"]))
        for i, (label, value) in enumerate(present):
            ax.barh(row - 0.4 + height * (i + 0.5), value, height=height, color=colors[label],
                    label=None if label in seen else label)
            seen.add(label)
    ax.set_yticks(range(len(cells)))
    ax.set_yticklabels(["%s: %s [%s] (%s)" % (c["group"], c["workload"], c["section"], c["unit"])
                        for c in cells], fontsize=7)
    ax.set_ylim(len(cells) - 0.5, -0.5)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")


def by_clients(ax, run):
    series = {}
    for cell in run["cells"]:
        p = cell["params"]
        if cell["group"] != "strings" or p.get("headline") or "clients" not in p:
            continue
        for label, result in cell["results"].items():
            if "median" in result:
                key = "%s %s P%d %dB%s" % (label, p["test"], p["pipeline"], p.get("value_size", 3),
                                          " AOF" if p.get("appendonly") else "")
                series.setdefault(key, []).append((p["clients"], result["median"]))
    for key, points in sorted(series.items()):
        points.sort()
        ax.plot([x for x, _ in points], [y for _, y in points], marker="o", label=key)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("clients")
    ax.set_ylabel("req/s (median)")
    ax.set_title("strings: throughput by client count")
    if series:
        ax.legend(fontsize=6, ncol=2)
    else:
        ax.text(0.5, 0.5, "no strings results", ha="center", transform=ax.transAxes)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        run = json.load(f)
    cells = rate_cells(run)
    cpu_cells = [c for c in cells if any(r.get("server_cpu_us") for r in c["results"].values())]
    rows = [max(len(cells), 4) * 0.28] + ([max(len(cpu_cells), 4) * 0.28] if cpu_cells else [])
    fig, axes = plt.subplots(len(rows) + 1, 1, figsize=(12, 4 + sum(rows) + 5),
                             gridspec_kw={"height_ratios": rows + [5]})
    top, bottom = axes[0], axes[-1]
    if cells:
        by_workload(top, cells)
    else:
        top.text(0.5, 0.5, "no throughput results", ha="center", transform=top.transAxes)
    if cpu_cells:
        by_workload(axes[1], cpu_cells, "server_cpu_us",
                    "median server CPU, us per op (per item in items/s cells; log scale, "
                    "shorter is cheaper)", "Server CPU per operation by workload")
    by_clients(bottom, run)
    meta = run["meta"]
    fig.suptitle("BlinkDB comparison %s on %s (%d cores)%s" % (
        meta["started"], meta["machine"]["host"], meta["machine"]["cores"],
        " [BlinkDB = stand-in]" if meta.get("standin") else ""))
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
