"""Helpers shared by the test_cluster_*.py files: cluster nodes of BlinkDB
and redis-server, redis-cli, waiting."""

import subprocess
import time

from resp import plain
from server import ORACLE_BIN, ServerProcess, blinkdb_bin

CLUSTER = ("--cluster-enabled", "yes")
TIMEOUT_MS = 3000


def start_retrying(binary, directory, extra):
    """A cluster node: retry on another port when the bus port is taken."""
    for attempt in range(5):
        try:
            return ServerProcess(binary, f"{directory}-{attempt}", extra)
        except RuntimeError as err:
            if "in use" not in str(err):
                raise
    raise RuntimeError("no free bus port")


def node_args(extra=()):
    return CLUSTER + ("--cluster-node-timeout", str(TIMEOUT_MS)) + tuple(extra)


def blinkdb_nodes(base, count, extra=()):
    return [start_retrying(blinkdb_bin(), f"{base}/node{i}", node_args(extra))
            for i in range(count)]


def redis_nodes(base, count, extra=()):
    return [start_retrying(ORACLE_BIN, f"{base}/redis{i}", node_args(extra))
            for i in range(count)]


def restart(srv, binary=None):
    """Starts a stopped node again on its port and directory (nodes.conf, AOF)."""
    return ServerProcess(binary or srv.binary, srv.dir, port=srv.port, args=srv.args)


def kill9(srv):
    srv.proc.kill()
    srv.proc.wait()


def stop_all(nodes):
    for s in nodes:
        s.stop()


def redis_cli(*args, stdin=None, timeout=120):
    return subprocess.run(["redis-cli", *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout)


def cli_failure(out, nodes=()):
    """redis-cli's output without its per-slot progress lines (a reshard prints
    one per slot, which buries the error), then the tail of each node's log."""
    keep = [line for line in (out.stdout + out.stderr).splitlines()
            if not line.lstrip().startswith("Moving slot") and line.strip(".")]
    text = f"exit {out.returncode}\n" + "\n".join(keep[-60:])
    for s in nodes:
        text += f"\n--- node {s.port} log ---\n" + s.log_text()[-1500:]
    return text


def wait_until(pred, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if pred():
                return
        except (OSError, ConnectionError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def call(srv, *cmd):
    with srv.connect() as c:
        return c.call(*cmd)


def value(srv, *cmd):
    """A reply as plain Python values (lists, bytes, ints)."""
    r = call(srv, *cmd)
    return plain((r.kind, r.value))


def nodes_text(srv):
    return call(srv, "CLUSTER", "NODES").value.decode()


def node_lines(srv):
    """CLUSTER NODES as {name: fields}."""
    out = {}
    for line in nodes_text(srv).strip().split("\n"):
        f = line.split(" ")
        out[f[0]] = f
    return out


def myid(srv):
    return call(srv, "CLUSTER", "MYID").value.decode()


def state_ok(srv):
    return b"cluster_state:ok" in call(srv, "CLUSTER", "INFO").raw


def check_clean(addr):
    out = redis_cli("--cluster", "check", addr)
    ok = ("[ERR]" not in out.stdout and "[WARNING]" not in out.stdout
          and "[OK] All 16384 slots covered." in out.stdout
          and "[OK] All nodes agree about slots configuration." in out.stdout)
    return ok, out.stdout + out.stderr


def wait_check_clean(addr, timeout=30.0):
    last = [""]

    def clean():
        ok, text = check_clean(addr)
        last[0] = text
        return ok
    try:
        wait_until(clean, timeout, "a clean --cluster check")
    except AssertionError:
        raise AssertionError(last[0]) from None


def create(nodes, replicas=0):
    addrs = [f"127.0.0.1:{s.port}" for s in nodes]
    out = redis_cli("--cluster", "create", *addrs, "--cluster-replicas", str(replicas),
                    "--cluster-yes")
    assert "[OK] All 16384 slots covered." in out.stdout, out.stdout + out.stderr
    return out.stdout
