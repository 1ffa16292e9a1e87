"""Starting, probing and stopping the servers under test; every process started is tracked
so a trap can kill it on Ctrl-C or error."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from . import resp

# Flags only BlinkDB understands; dropped (and noted) when a redis-server stands in for it.
BLINKDB_ONLY_FLAGS = ("--existence-filter-size", "--blob-threshold", "--bf-default-backend")

_running = []


class StartError(Exception):
    """The server exited or never answered PING; str(e) says why (its own last output)."""


def record_pid(pid):
    """Appends to $BENCH_PIDFILE so the bash wrapper can kill servers even if Python dies."""
    path = os.environ.get("BENCH_PIDFILE")
    if path:
        with open(path, "a") as f:
            f.write("%d\n" % pid)


def kill_all():
    """Kills every server this harness started and is still running."""
    for server in list(_running):
        server.stop(graceful=False)


def pid_on_port(port):
    """The pid of the running server this harness started on `port`, or None. It is the
    server process itself: a wrapper such as valgrind execs into the program it runs."""
    for server in _running:
        if server.port == port and server.proc is not None and server.proc.poll() is None:
            return server.proc.pid
    return None


class Ports:
    """Hands out free loopback ports from [base, base+span)."""

    def __init__(self, base, span=100):
        self.base, self.span, self.next = base, span, 0

    def take(self):
        for _ in range(self.span):
            port = self.base + self.next % self.span
            self.next += 1
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                    return port
                except OSError:
                    continue
        raise StartError("no free port in %d-%d" % (self.base, self.base + self.span - 1))


class Contestant:
    """One column of a table: a binary plus the flags that make it what it is."""

    def __init__(self, label, binary, is_blinkdb, flags=(), standin=False, prefix=()):
        self.label = label
        self.binary = binary
        self.is_blinkdb = is_blinkdb
        self.flags = list(flags)
        self.standin = standin
        self.prefix = list(prefix)

    def with_flags(self, label, flags):
        return Contestant(label, self.binary, self.is_blinkdb, self.flags + list(flags),
                          self.standin, self.prefix)

    def under(self, label, prefix):
        """The same server started through a wrapper command (e.g. valgrind)."""
        return Contestant(label, self.binary, self.is_blinkdb, self.flags, self.standin,
                          list(prefix) + self.prefix)

    def argv(self, port, data_dir, appendonly, appendfsync, extra=()):
        argv = self.prefix + [self.binary, "--port", str(port), "--bind", "127.0.0.1",
                              "--dir", data_dir, "--appendonly", "yes" if appendonly else "no",
                              "--appendfsync", appendfsync]
        flags = self.flags + list(extra)
        if not self.is_blinkdb or self.standin:
            argv += ["--save", ""]
        if self.standin:
            flags = drop_blinkdb_only(flags)
        return argv + flags


def drop_blinkdb_only(flags):
    kept, skip = [], False
    for flag in flags:
        if skip:
            skip = False
        elif flag in BLINKDB_ONLY_FLAGS:
            skip = True
        else:
            kept.append(flag)
    return kept


class Server:
    def __init__(self, contestant, ports, root, appendonly=False, appendfsync="everysec", extra=()):
        self.contestant = contestant
        self.port = ports.take()
        self.dir = tempfile.mkdtemp(prefix="srv-%d-" % self.port, dir=root)
        self.appendonly = appendonly
        self.appendfsync = appendfsync
        self.extra = list(extra)
        self.proc = None

    @property
    def label(self):
        return self.contestant.label

    def start(self, timeout=120.0, ready=None):
        """Spawns the server and waits until PING answers PONG and `ready(client)` (if given)
        is true. Returns seconds from spawn to ready."""
        argv = self.contestant.argv(self.port, self.dir, self.appendonly, self.appendfsync, self.extra)
        log = open(os.path.join(self.dir, "server.log"), "ab")
        began = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        _running.append(self)
        record_pid(self.proc.pid)
        while True:
            if self.proc.poll() is not None:
                self._forget()
                raise StartError("%s exited with %s: %s" % (
                    os.path.basename(argv[0]), self.proc.returncode, self.log_tail()))
            if self._answers(ready):
                return time.monotonic() - began
            if time.monotonic() - began > timeout:
                self.stop(graceful=False)
                raise StartError("no PONG within %.0f s: %s" % (timeout, self.log_tail()))
            time.sleep(0.005)

    def _answers(self, ready):
        try:
            with resp.Client(self.port, timeout=5) as client:
                if client.call("PING") != "PONG":
                    return False
                return ready is None or bool(ready(client))
        except (OSError, ConnectionError, resp.ReplyError):
            return False

    def log_tail(self, lines=3):
        try:
            with open(os.path.join(self.dir, "server.log"), "rb") as f:
                text = f.read().decode(errors="replace").strip().splitlines()
            return " | ".join(line.strip() for line in text[-lines:]) or "(no output)"
        except OSError:
            return "(no log)"

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise StartError("no VmRSS for pid %d" % self.proc.pid)

    def client(self):
        return resp.Client(self.port)

    def stop(self, graceful=True):
        """SIGTERM and wait (the server flushes its AOF); SIGKILL if it lingers or if not graceful."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
            try:
                self.proc.wait(timeout=60 if graceful else 10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._forget()

    def _forget(self):
        if self in _running:
            _running.remove(self)

    def discard(self):
        self.stop(graceful=False)
        shutil.rmtree(self.dir, ignore_errors=True)
