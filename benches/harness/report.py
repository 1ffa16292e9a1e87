"""Machine facts and the markdown report."""
import os
import platform
import socket
import subprocess

from .cells import format_cpu, format_value


def sh(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_facts():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    return {"host": socket.gethostname(), "cores": os.cpu_count(), "kernel": platform.release(),
            "cpu": cpu, "ram_gb": round(mem_kb / 1048576, 1)}


def git_rev(repo):
    rev = sh("git", "-C", repo, "rev-parse", "--short", "HEAD")
    dirty = sh("git", "-C", repo, "status", "--porcelain", "--untracked-files=no")
    return rev + ("-dirty" if dirty else "") if rev else "unknown"


def ratio_text(r):
    return "-" if r is None else "%.2fx" % r


def latency_text(result):
    if not result or "na" in result or result.get("p50") is None:
        return "-"
    return "%.3f / %.3f" % (result["p50"], result["p99"])


def value_text(result):
    if result is None:
        return "-"
    if "na" in result:
        return result["na"]
    return format_value(result["median"])


def cpu_text(result):
    if not result or "na" in result:
        return "-"
    return format_cpu(result.get("server_cpu_us"))


def unit_name(cells):
    """What one unit of these cells' throughput is: an item for items/s, else a request."""
    units = {c["unit"] for c in cells}
    return "item" if units == {"items/s"} else "op"


def idle_text(cells):
    """Server CPU while it had no load-tool run of its own (the other servers' turns, the
    harness's pauses), over every gap of the section, per column. A gap right after a run
    also holds what the server did after the tool exited (closing its connections)."""
    sums = {}
    for cell in cells:
        for label, result in cell["results"].items():
            if result.get("server_idle_wall_s"):
                cpu, wall = sums.get(label, (0.0, 0.0))
                sums[label] = (cpu + result["server_idle_cpu_s"], wall + result["server_idle_wall_s"])
    if not sums:
        return ""
    return "Server CPU between its own runs (idle, % of one core, over the section's gaps): " + \
        ", ".join("%s %.2f%% over %.0f s" % (label, 100 * c / w, w) for label, (c, w) in sums.items())


def paired_text(cell, label):
    p = cell.get("paired", {}).get(label)
    if not p:
        return "-"
    return "%.2fx [%.2f, %.2f]" % (p["median"], p["low"], p["high"])


def table(cells):
    labels = list(cells[0]["results"])
    ratio_labels = [label for label in labels if label != cells[0]["peer"]]
    with_paired = any(c.get("paired") for c in cells)
    with_latency = any(r.get("p50") is not None for c in cells for r in c["results"].values())
    with_cpu = any(r.get("server_cpu_us") is not None for c in cells for r in c["results"].values())
    peer = cells[0]["peer"]
    head = ["workload", "unit"] + labels + ["%s vs %s" % (label, peer) for label in ratio_labels]
    if with_paired:
        head += ["%s vs %s, median of rounds' ratios [interval of >= 95%%]" % (label, peer)
                 for label in ratio_labels]
    if with_cpu:
        head += ["CPU us/%s %s" % (unit_name(cells), label) for label in labels]
        head += ["CPU %s vs %s (peer us / its us)" % (label, peer) for label in ratio_labels]
    if with_latency:
        head += ["p50 / p99 ms %s" % label for label in labels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell in cells:
        row = [cell["workload"], cell["unit"]]
        row += [value_text(cell["results"].get(label)) for label in labels]
        row += [ratio_text(cell["ratios"].get(label)) for label in ratio_labels]
        if with_paired:
            row += [paired_text(cell, label) for label in ratio_labels]
        if with_cpu:
            row += [cpu_text(cell["results"].get(label)) for label in labels]
            row += [ratio_text(cell.get("cpu_ratios", {}).get(label)) for label in ratio_labels]
        if with_latency:
            row += [latency_text(cell["results"].get(label)) for label in labels]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def markdown(run):
    meta = run["meta"]
    out = ["# BlinkDB comparison, %s" % meta["started"], ""]
    out.append("- machine: %s, %d cores, %s, %.1f GB RAM, kernel %s" % (
        meta["machine"]["host"], meta["machine"]["cores"], meta["machine"]["cpu"],
        meta["machine"]["ram_gb"], meta["machine"]["kernel"]))
    for key in ("blinkdb", "redis_server", "redisbloom", "loadgen", "redis_benchmark"):
        out.append("- %s: %s" % (key.replace("_", "-"), meta["versions"].get(key, "?")))
    if any(c["group"] == "redis8" for c in run["cells"]):
        out.append("- redis8 peer: %s" % meta["versions"].get("redis8", "?"))
    out.append("- command: `%s` (mode %s, %d measured runs per cell after %d warm-up, runs "
               "alternated between servers; medians shown)" % (
                   meta["command"], "quick" if run["quick"] else "full", meta["rounds"],
                   meta["warmups"]))
    out.append("- ratio: > 1.00x means the named column beats the peer (throughput: it / peer; "
               "times and RSS: peer / it)")
    out.append("- server CPU (`CPU us/op`, `CPU us/item`): user + system time of the server "
               "process, all threads, from its CPU clock (what /proc/PID/stat sums as utime + "
               "stime, at ns resolution) around each load-tool run, divided by the requests, "
               "operations or items of that run (the cell's unit); median of the runs. It "
               "includes busy polling, time without a request in flight and the processes the "
               "server forks (redis-server's AOF rewrite and BGSAVE children: reaped ones from "
               "cutime + cstime, live ones from their own stat). CPU ratio: peer "
               "us / its us, so **> 1.00x means the named column uses less CPU per unit**")
    loads = [c["loadavg"] for c in run["cells"] if c.get("loadavg")]
    if loads:
        out.append("- machine load while measuring (1-minute load average when each cell "
                   "ended): %.2f to %.2f, median %.2f, on %d cores%s" % (
                       min(x[0] for x in loads), max(x[0] for x in loads),
                       sorted(x[0] for x in loads)[len(loads) // 2], meta["machine"]["cores"],
                       "; 1/5/15-minute averages at start %s, at end %s" % (
                           meta["loadavg_start"], meta.get("loadavg_end"))
                       if meta.get("loadavg_start") else ""))
    out.append("- total time: %.0f s" % run["elapsed_s"])
    if meta.get("standin"):
        out.append("- **BlinkDB column is a stand-in (%s), not BlinkDB**" % meta["blinkdb_bin"])
    groups = []
    for cell in run["cells"]:
        if cell["group"] not in groups:
            groups.append(cell["group"])
    for note in run["notes"]:
        if note["group"] not in groups:
            groups.append(note["group"])
    for group in groups:
        out += ["", "## %s" % group]
        sections = []
        for cell in run["cells"]:
            if cell["group"] == group and cell["section"] not in sections:
                sections.append(cell["section"])
        for section in sections:
            cells = [c for c in run["cells"] if c["group"] == group and c["section"] == section]
            # A section may mix contestant sets (e.g. validate); split where they change.
            chunk = []
            for cell in cells:
                if chunk and list(cell["results"]) != list(chunk[0]["results"]):
                    out += ["", "### %s" % section, "", table(chunk)]
                    chunk = []
                chunk.append(cell)
            if chunk:
                out += ["", "### %s" % section, "", table(chunk)]
            idle = idle_text(cells)
            if idle:
                out += ["", idle]
        notes = [n["text"] for n in run["notes"] if n["group"] == group]
        if notes:
            out += [""] + ["- " + n for n in notes]
    return "\n".join(out) + "\n"
