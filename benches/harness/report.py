"""Machine facts and the markdown report."""
import os
import platform
import socket
import subprocess

from .cells import format_value


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


def table(cells):
    labels = list(cells[0]["results"])
    ratio_labels = [label for label in labels if label != cells[0]["peer"]]
    with_latency = any(r.get("p50") is not None for c in cells for r in c["results"].values())
    head = ["workload", "unit"] + labels + ["%s vs %s" % (label, cells[0]["peer"]) for label in ratio_labels]
    if with_latency:
        head += ["p50 / p99 ms %s" % label for label in labels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell in cells:
        row = [cell["workload"], cell["unit"]]
        row += [value_text(cell["results"].get(label)) for label in labels]
        row += [ratio_text(cell["ratios"].get(label)) for label in ratio_labels]
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
    out.append("- command: `%s` (mode %s, %d measured runs per cell after %d warm-up, runs "
               "alternated between servers; medians shown)" % (
                   meta["command"], "quick" if run["quick"] else "full", meta["rounds"],
                   meta["warmups"]))
    out.append("- ratio: > 1.00x means the named column beats the peer (throughput: it / peer; "
               "times and RSS: peer / it)")
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
        notes = [n["text"] for n in run["notes"] if n["group"] == group]
        if notes:
            out += [""] + ["- " + n for n in notes]
    return "\n".join(out) + "\n"
