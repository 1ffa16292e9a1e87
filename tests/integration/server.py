"""Starting and stopping server processes (BlinkDB or the redis-server oracle)."""

import os
import shutil
import signal
import socket
import subprocess
import time

from resp import ConnectionClosed, RespConnection

ORACLE_BIN = "/usr/bin/redis-server"


def _port_range():
    """BLINKDB_TEST_PORTS=LOW-HIGH (inclusive) lets parallel runs use their own ports.
    Under pytest-xdist each worker (gwN) takes its own equal slice of that range."""
    spec = os.environ.get("BLINKDB_TEST_PORTS", "17500-17699")
    low, high = (int(part) for part in spec.split("-"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if worker.startswith("gw") and workers > 1:
        size = (high + 1 - low) // workers
        low += int(worker[2:]) * size
        high = low + size - 1
    return range(low, high + 1)


PORT_RANGE = _port_range()
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def blinkdb_bin():
    """The binary under test: $BLINKDB_BIN, else the newest cargo build."""
    explicit = os.environ.get("BLINKDB_BIN")
    if explicit:
        return explicit
    for profile in ("release", "debug"):
        candidate = os.path.join(REPO_ROOT, "target", profile, "blinkdb")
        if os.path.exists(candidate):
            return candidate
    return None


_next_port = [PORT_RANGE.start]


def free_port():
    """A port from our assigned range that nothing is listening on right now."""
    for _ in range(len(PORT_RANGE)):
        port = _next_port[0]
        _next_port[0] = port + 1 if port + 1 < PORT_RANGE.stop else PORT_RANGE.start
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # As the servers bind (both set SO_REUSEADDR): a port whose closed
        # connections linger in TIME_WAIT is free to them, so to us too.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            probe.close()
    raise RuntimeError(f"no free port in {PORT_RANGE.start}-{PORT_RANGE.stop - 1}")


def base_args(port, directory, bind=("127.0.0.1",)):
    return [
        "--port", str(port),
        "--bind", *bind,
        "--dir", directory,
        "--appendonly", "no",
        "--save", "",
    ]


class ServerProcess:
    def __init__(self, binary, directory, extra_args=(), port=None, args=None, wait=True,
                 password=None, bind=("127.0.0.1",)):
        self.binary = binary
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.port = port if port is not None else free_port()
        self.args = list(args) if args is not None else base_args(self.port, directory, bind)
        self.args += list(extra_args)
        self.password = password
        self.log_path = os.path.join(directory, "server.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [binary] + self.args, stdout=self.log, stderr=subprocess.STDOUT, cwd=directory
        )
        self.pid = self.proc.pid
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"server exited with {self.proc.returncode}:\n{self.log_text()}"
                )
            try:
                with RespConnection(self.port, timeout=2.0) as conn:
                    if self.password is not None:
                        # A password, or (user, password) when `default` is off.
                        conn.call("AUTH", *((self.password,) if isinstance(self.password, str)
                                            else self.password))
                    reply = conn.call("PING")
                    if reply.raw == b"+PONG\r\n":
                        return
                    last = reply.raw
            except (OSError, ConnectionClosed) as err:
                last = err
            time.sleep(0.05)
        raise RuntimeError(f"server did not answer PING ({last!r}):\n{self.log_text()}")

    def connect(self, **kwargs):
        return RespConnection(self.port, **kwargs)

    def rss_kb(self):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def anon_kb(self):
        """The process's anonymous resident memory (RssAnon): its heap, stacks and mappings,
        without the binary's code pages, which count in VmRSS as they are first run and vary
        with the paths a run takes (0.3-0.8 MB over one fill of small keys, more under load)."""
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
        raise RuntimeError("no RssAnon")

    def alive(self):
        return self.proc.poll() is None

    def log_text(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def require_tool(name):
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found on PATH")
    return path
