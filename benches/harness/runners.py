"""Runs the two load tools and turns their output into measures.

A measure is {"value": float, "p50": ms or None, "p99": ms or None}; one tool run can yield
several named measures (redis-benchmark -t set,get gives one per test).
"""
import csv
import io
import json
import os
import contextlib
import resource
import subprocess

from . import servercpu, servers
from .resp import ReplyError, brief, is_unsupported


class NotApplicable(Exception):
    """The server under test lacks what this cell needs; str(e) is the reason for the table."""


class ToolError(Exception):
    """A load tool failed for a reason other than a missing feature."""


def send_all(server, commands, step=20):
    """Sends `commands` to `server`, pipelined `step` at a time; an error reply makes the
    cell not applicable (a server without the command)."""
    try:
        with server.client() as client:
            for start in range(0, len(commands), step):
                for reply in client.pipeline(commands[start:start + step]):
                    if isinstance(reply, ReplyError):
                        raise reply
    except ReplyError as e:
        raise NotApplicable(brief(e))


def measure(value, p50=None, p99=None):
    return {"value": float(value), "p50": p50, "p99": p99}


def server_window(port):
    """A servercpu.Window on the server this harness runs on `port` (a null context for a
    server it did not start). A list of ports gives one window over all those servers (their
    CPU summed: a cluster's nodes)."""
    ports = port if isinstance(port, (list, tuple)) else [port]
    pids = [servers.pid_on_port(p) for p in ports]
    if not pids or any(pid is None for pid in pids):
        return contextlib.nullcontext(None)
    try:
        return servercpu.Window(pids[0]) if len(pids) == 1 else servercpu.Windows(pids)
    except OSError:
        return contextlib.nullcontext(None)


def run_tool(argv, timeout, cpu=None, port=None):
    """subprocess.run (on CPU `cpu` only, if given), plus the CPU seconds (user + system) the
    tool used, and (`port` given) those the server on that port used meanwhile. The tools run
    one at a time, so the growth of RUSAGE_CHILDREN across the call is this tool's."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
    with server_window(port) as window:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=pin)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc.cpu_seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    proc.server = window
    return proc


def add_server_cpu(m, window, units):
    """Server CPU per unit of the measure (request, operation or item), in microseconds."""
    if window is None or window.seconds is None or not units:
        return m
    m["server_cpu_us"] = window.seconds * 1e6 / units
    m["server_stat_cpu_us"] = window.stat_seconds * 1e6 / units
    m["server_idle_cpu_s"] = window.idle_cpu
    m["server_idle_wall_s"] = window.idle_wall
    return m


def redis_benchmark(port, clients, requests, pipeline=1, tests=None, keyspace=None,
                    value_size=None, command=None, timeout=900, cluster=False, cpu_ports=None,
                    user=None, options=()):
    """Runs redis-benchmark --csv; returns {test name: measure in requests/s}. Several tests
    run one invocation each (redis-benchmark opens its clients anew for every test anyway),
    so that each test's server CPU is its own. `cluster`: redis-benchmark --cluster, entering
    at `port`; `cpu_ports`: the servers whose CPU is summed (default: the one on `port`);
    `user`: (name, password) every client authenticates as (--user, -a); `options`: more of
    redis-benchmark's flags (--tls and its files, -k 0)."""
    out = {}
    for test in tests or [None]:
        out.update(redis_benchmark_once(port, clients, requests, pipeline, test, keyspace,
                                        value_size, command, timeout, cluster, cpu_ports, user,
                                        options))
    return out


def redis_benchmark_once(port, clients, requests, pipeline, test, keyspace, value_size, command,
                         timeout, cluster=False, cpu_ports=None, user=None, options=()):
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(clients),
            "-n", str(requests), "-P", str(pipeline), "--csv", *options]
    if user:
        argv += ["--user", user[0], "-a", user[1]]
    if cluster:
        argv.append("--cluster")
    if keyspace:
        argv += ["-r", str(keyspace)]
    if value_size:
        argv += ["-d", str(value_size)]
    if test:
        argv += ["-t", test]
    if command:
        argv += list(command)
    proc = run_tool(argv, timeout, port=cpu_ports or port)
    # --cluster prints the nodes it found before the CSV: start at the CSV's header.
    lines = proc.stdout.splitlines(keepends=True)
    header = next((i for i, line in enumerate(lines) if line.startswith('"test"')), 0)
    rows = list(csv.DictReader(io.StringIO("".join(lines[header:]))))
    problem = (proc.stderr + proc.stdout).strip()
    if not rows or proc.returncode != 0:
        if is_unsupported(problem):
            raise NotApplicable(brief(first_line_with(problem, "ERR") or problem))
        raise ToolError("redis-benchmark failed (rc %d): %s" % (proc.returncode, problem[-300:]))
    if "Error from server" in proc.stderr:
        raise NotApplicable(brief(first_line_with(proc.stderr, "ERR") or proc.stderr))
    out = {row["test"]: measure(row["rps"], float(row["p50_latency_ms"]), float(row["p99_latency_ms"]))
           for row in rows}
    for m in out.values():
        m["client_cpu_us"] = proc.cpu_seconds * 1e6 / (requests * len(rows))
        add_server_cpu(m, proc.server, requests * len(rows))
    return out


def first_line_with(text, needle):
    for line in text.splitlines():
        if needle in line:
            return line.strip()[:160]
    return None


def loadgen(binary, port, *, clients=50, pipeline=1, duration=None, requests=None, keys=None,
            value_size=None, set_ratio=None, miss_ratio=None, preload=False, commands=(),
            items=None, filters=None, seed=1, timeout=3600, allow_errors=False, cpu=None,
            subscribers=None, consumers=None, consume=None, rate=None):
    """Runs blinkdb-loadgen --json and returns its report (a dict).

    Error replies make the cell not applicable when they say a command is unknown; any
    other error reply fails the run unless allow_errors is set.
    """
    argv = [binary, "--port", str(port), "--clients", str(clients), "--pipeline", str(pipeline),
            "--seed", str(seed), "--json"]
    for flag, value in (("--duration", duration), ("--requests", requests), ("--keys", keys),
                        ("--value-size", value_size), ("--set-ratio", set_ratio),
                        ("--miss-ratio", miss_ratio), ("--items", items), ("--filters", filters),
                        ("--subscribers", subscribers), ("--consumers", consumers),
                        ("--consume", consume), ("--rate", rate)):
        if value is not None:
            argv += [flag, str(value)]
    if preload:
        argv.append("--preload")
    for template in commands:
        argv += ["--command", template]
    proc = run_tool(argv, timeout, cpu, port=port)
    if proc.returncode != 0:
        text = proc.stderr.strip()
        if is_unsupported(text):
            raise NotApplicable(brief(text))
        raise ToolError("blinkdb-loadgen failed (rc %d): %s" % (proc.returncode, text[-300:]))
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    report["client_cpu_seconds"] = proc.cpu_seconds
    report["server_window"] = proc.server
    if report["errors"]:
        if is_unsupported(report["first_error"]):
            raise NotApplicable(brief(report["first_error"]))
        if not allow_errors:
            raise ToolError("%d error replies, first: %s" % (report["errors"], report["first_error"]))
    return report


def loadgen_measure(report, per="ops"):
    """A measure from a loadgen report: ops/s or items/s, latencies converted to ms."""
    value = report["items_per_sec"] if per == "items" else report["ops_per_sec"]
    lat = report["latency_us"]
    out = measure(value, lat["p50"] / 1000.0, lat["p99"] / 1000.0)
    if report.get("ops"):
        out["client_cpu_us"] = report["client_cpu_seconds"] * 1e6 / report["ops"]
    # Per unit of the cell's throughput: per item for items/s cells, else per operation.
    add_server_cpu(out, report.get("server_window"),
                   report.get("items") if per == "items" else report.get("ops"))
    return out
