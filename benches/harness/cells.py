"""Alternated runs, medians and the result cells that tables and charts are built from."""
import os
import statistics

from .runners import NotApplicable


class Results:
    """Every cell of a run, in the order measured."""

    def __init__(self):
        self.cells = []
        self.notes = []

    def note(self, group, text):
        print("  note: %s" % text, flush=True)
        self.notes.append({"group": group, "text": text})

    def add(self, group, section, workload, unit, better, peer, per_contestant, params=None):
        """per_contestant: label -> list of measures, or a NotApplicable reason string."""
        results = {}
        for label, runs in per_contestant.items():
            if isinstance(runs, str):
                results[label] = {"na": runs}
                continue
            values = [r["value"] for r in runs]
            entry = {"median": statistics.median(values), "runs": values}
            cpu = [r.get("server_cpu_us") for r in runs]
            if any(c is not None for c in cpu):
                entry["server_cpu_us_runs"] = cpu
            # The load tool's CPU per unit, per run: where it is the bottleneck (redis-benchmark
            # at -c 50 -P 1 over TLS), throughput follows it (groups/tls.py).
            client = [r.get("client_cpu_us") for r in runs]
            if any(c is not None for c in client):
                entry["client_cpu_us_runs"] = client
            # The server's CPU share while it had no run of its own, over all its gaps.
            gaps = [(r["server_idle_cpu_s"], r["server_idle_wall_s"]) for r in runs
                    if r.get("server_idle_wall_s")]
            if gaps and sum(w for _, w in gaps) > 0:
                entry["server_idle_cpu_s"] = sum(c for c, _ in gaps)
                entry["server_idle_wall_s"] = sum(w for _, w in gaps)
                entry["server_idle_cpu"] = entry["server_idle_cpu_s"] / entry["server_idle_wall_s"]
            for key in ("p50", "p99", "client_cpu_us", "server_cpu_us", "server_stat_cpu_us"):
                lat = [r[key] for r in runs if r.get(key) is not None]
                entry[key] = statistics.median(lat) if lat else None
            results[label] = entry
        cell = {"group": group, "section": section, "workload": workload, "unit": unit,
                "better": better, "peer": peer, "params": params or {}, "results": results,
                "loadavg": list(os.getloadavg())}
        cell["ratios"] = ratios(cell)
        cell["cpu_ratios"] = cpu_ratios(cell)
        cell["paired"] = paired_ratios(cell)
        self.cells.append(cell)
        shown = ", ".join("%s %s%s" % (label, short(r), cpu_short(r))
                          for label, r in results.items())
        print("  %-44s %s" % (workload, shown), flush=True)
        return cell


def short(result):
    if "na" in result:
        return "n/a"
    return format_value(result["median"])


def cpu_short(result):
    cpu = result.get("server_cpu_us")
    return "" if cpu is None else " (%s us)" % format_cpu(cpu)


def format_cpu(us):
    """Server CPU microseconds per unit, to three significant digits."""
    if us is None:
        return "-"
    return "{:,.0f}".format(us) if us >= 100 else "{:.3g}".format(us)


def format_value(v):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return "{:,.0f}".format(v)
    return "{:.2f}".format(v)


def ratios(cell):
    """label -> ratio against the peer, oriented so that > 1 means that contestant is better."""
    peer = cell["results"].get(cell["peer"], {})
    out = {}
    for label, result in cell["results"].items():
        if label == cell["peer"]:
            continue
        if "median" not in result or "median" not in peer or not peer["median"] or not result["median"]:
            out[label] = None
        elif cell["better"] == "higher":
            out[label] = result["median"] / peer["median"]
        else:
            out[label] = peer["median"] / result["median"]
    return out


def cpu_ratios(cell):
    """label -> peer's server CPU per unit / this contestant's: > 1 means it costs less."""
    peer = cell["results"].get(cell["peer"], {}).get("server_cpu_us")
    out = {}
    for label, result in cell["results"].items():
        if label != cell["peer"]:
            mine = result.get("server_cpu_us")
            out[label] = peer / mine if peer and mine else None
    return out


# Rounds from which a cell also gets paired ratios (below).
PAIRED_MIN_ROUNDS = 9


def paired_ratios(cell):
    """label -> the median of per-round ratios against the peer, with a distribution-free
    interval of at least 95% for it, when both have the same number (>= PAIRED_MIN_ROUNDS) of
    runs. alternate() keeps runs in round order and runs a round's servers back to back, so a
    round's ratio cancels what drifts slower than a round (the machine's fast and slow
    phases), which a ratio of the two medians does not."""
    peer = cell["results"].get(cell["peer"], {}).get("runs")
    out = {}
    for label, result in cell["results"].items():
        mine = result.get("runs")
        if label == cell["peer"] or not peer or not mine or len(mine) != len(peer) \
                or len(mine) < PAIRED_MIN_ROUNDS or not all(peer) or not all(mine):
            continue
        pairs = zip(mine, peer) if cell["better"] == "higher" else zip(peer, mine)
        rs = sorted(a / b for a, b in pairs)
        low, confidence = median_interval(len(rs))
        out[label] = {"median": statistics.median(rs), "low": rs[low], "high": rs[-1 - low],
                      "confidence": confidence, "rounds": len(rs)}
    return out


def median_interval(n):
    """(k, confidence): the sorted sample's k-th smallest and k-th largest values (0-based)
    bound its population median with `confidence` >= 0.95, from the binomial(n, 1/2) count
    of values below the median (the sign test's interval)."""
    # The r-th smallest value (1-based) is above the median when fewer than r values are
    # below it: probability tail[r]. The interval of the r-th smallest to the r-th largest
    # misses with 2 * tail[r].
    tail = [0.0]  # tail[r] = P(fewer than r of n values fall below the median)
    term = 0.5 ** n
    for j in range(n + 1):
        tail.append(tail[-1] + term)
        term = term * (n - j) / (j + 1)
    r = max(j for j in range(1, n // 2 + 1) if tail[j] <= 0.025)
    return r - 1, 1 - 2 * tail[r]


def alternate(runners, rounds, warmups=1):
    """Calls each runner in turn, alternating A B / B A, discarding the first `warmups` rounds.

    runners: list of (label, fn) where fn() returns {metric: measure}. A runner that raises
    NotApplicable is not called again; a runner given as a
    reason string is reported as such. Returns {metric: {label: [measures] | reason}}.
    """
    kept = {label: [] for label, _ in runners}
    # A runner given as a string is a contestant already known to be not applicable.
    failed = {label: fn for label, fn in runners if isinstance(fn, str)}
    for round_no in range(warmups + rounds):
        # Odd rounds run in reverse (A B, B A, A B ...) so no server always goes first.
        order = runners if round_no % 2 == 0 else runners[::-1]
        for label, fn in order:
            if label in failed:
                continue
            try:
                sample = fn()
            except NotApplicable as e:
                failed[label] = "n/a (%s)" % e
                continue
            if round_no >= warmups:
                kept[label].append(sample)
    metrics = []
    for samples in kept.values():
        for sample in samples:
            for metric in sample:
                if metric not in metrics:
                    metrics.append(metric)
    out = {}
    for metric in metrics or ["*"]:
        out[metric] = {}
        for label, _ in runners:
            if label in failed:
                out[metric][label] = failed[label]
            else:
                runs = [s[metric] for s in kept[label] if metric in s]
                out[metric][label] = runs if runs else "n/a (no %s result)" % metric
    return out


def pick(table, metric, labels):
    """The {label: runs | reason} row for one metric of an alternate() table."""
    row = table.get(metric) or table.get("*") or {}
    return {label: row.get(label, "n/a (no %s result)" % metric) for label in labels}
