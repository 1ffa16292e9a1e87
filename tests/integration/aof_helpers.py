"""Helpers for the persistence suites: AOF-enabled servers, kill -9, AOF files."""

import os
import re
import shutil
import signal
import subprocess
import time

from resp import RespConnection
from server import ORACLE_BIN, ServerProcess, free_port

AOF_DIRNAME = "appendonlydir"
MANIFEST = "appendonly.aof.manifest"


def aof_args(port, directory, *extra):
    """BlinkDB with its AOF on; `extra` flags come last so they win."""
    return [
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--dir", directory,
        "--appendonly", "yes",
        "--save", "",
        *extra,
    ]


def start_aof_server(binary, directory, *extra, wait=True, log_dir=None):
    """A server persisting into `directory`; its log goes to `log_dir` (default: directory)."""
    port = free_port()
    os.makedirs(directory, exist_ok=True)
    return ServerProcess(
        binary,
        log_dir or directory,
        port=port,
        args=aof_args(port, directory, *extra),
        wait=wait,
    )


def kill9(srv):
    """SIGKILL: no shutdown code runs, unsent buffers are lost."""
    if srv.proc.poll() is None:
        srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    srv.log.close()


def wait_exit(srv, timeout=20.0):
    """For a server expected to refuse to start: its exit code and log."""
    try:
        code = srv.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill9(srv)
        raise AssertionError(f"server did not exit:\n{srv.log_text()}") from None
    text = srv.log_text()
    srv.log.close()
    return code, text


def aof_path(directory, name=""):
    return os.path.join(directory, AOF_DIRNAME, name)


def manifest_entries(directory):
    """[(file name, seq, type)] in manifest order."""
    entries = []
    with open(aof_path(directory, MANIFEST)) as manifest:
        for line in manifest:
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split()
            pairs = dict(zip(fields[0::2], fields[1::2]))
            entries.append((pairs["file"], int(pairs["seq"]), pairs["type"]))
    return entries


def incr_files(directory):
    """Paths of the live incr files, oldest first."""
    return [aof_path(directory, name) for name, _, kind in manifest_entries(directory)
            if kind == "i"]


def aof_bytes(directory):
    """Total size of every file in the AOF directory."""
    folder = aof_path(directory)
    return sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))


def info(conn, section="persistence"):
    reply = conn.call("INFO", section)
    assert not reply.is_error(), reply.raw
    fields = {}
    for line in reply.value.decode().splitlines():
        if ":" in line and not line.startswith("#"):
            key, value = line.split(":", 1)
            fields[key] = value
    return fields


def bgrewriteaof(conn):
    reply = conn.call("BGREWRITEAOF")
    assert not reply.is_error(), reply.raw
    return reply


def wait_rewrite_done(conn, timeout=120.0):
    """Waits for the running rewrite to end; returns INFO persistence afterwards."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fields = info(conn)
        if fields.get("aof_rewrite_in_progress") == "0":
            return fields
        time.sleep(0.05)
    raise AssertionError("BGREWRITEAOF did not finish")


BK_LINE = re.compile(rb"#BK:(\d+):([0-9a-f]{16})\r\n")


def parse_commands(data):
    """[(start, end, [args])] for every complete RESP command in `data`; `#` lines skipped.

    Stops at the first incomplete command (a torn tail).
    """
    commands = []
    pos = 0
    while pos < len(data):
        if data[pos:pos + 1] == b"#":
            end = data.find(b"\r\n", pos)
            if end < 0:
                break
            pos = end + 2
            continue
        start = pos
        parsed = _parse_array(data, pos)
        if parsed is None:
            break
        args, pos = parsed
        commands.append((start, pos, args))
    return commands


def _parse_array(data, pos):
    end = data.find(b"\r\n", pos)
    if end < 0 or data[pos:pos + 1] != b"*":
        return None
    argc = int(data[pos + 1:end])
    pos = end + 2
    args = []
    for _ in range(argc):
        end = data.find(b"\r\n", pos)
        if end < 0 or data[pos:pos + 1] != b"$":
            return None
        length = int(data[pos + 1:end])
        pos = end + 2
        if pos + length + 2 > len(data):
            return None
        args.append(data[pos:pos + length])
        pos += length + 2
    return args, pos


def connect_when_ready(srv, timeout=30.0):
    """A connection once the server answers PING (after any LOADING)."""
    srv.wait_ready(timeout=timeout)
    return RespConnection(srv.port, timeout=30.0)


def crash_seed():
    """BLINKDB_CRASH_SEED replays a run; otherwise a fresh seed, printed for failures."""
    seed = int(os.environ.get("BLINKDB_CRASH_SEED") or int.from_bytes(os.urandom(4), "big"))
    print(f"BLINKDB_CRASH_SEED={seed}")
    return seed


def redis_server(directory, log_dir, *extra):
    """redis-server 7 with the AOF on, in `directory` (loading what it holds)."""
    os.makedirs(directory, exist_ok=True)
    port = free_port()
    return ServerProcess(ORACLE_BIN, log_dir, port=port, args=[
        "--port", str(port), "--bind", "127.0.0.1", "--dir", directory,
        "--appendonly", "yes", "--save", "", *extra])


def _snapshot_of(srv, snapshot, workload=None):
    try:
        with srv.connect() as conn:
            if workload is not None:
                workload(conn)
            return snapshot(conn)
    finally:
        srv.stop()


def blinkdb_snapshot(binary, directory, snapshot, workload=None):
    """What BlinkDB holds once (re)started on `directory` (after `workload(conn)` if given)."""
    return _snapshot_of(start_aof_server(binary, directory), snapshot, workload)


def redis_snapshot_of_aof(directory, copy, snapshot):
    """What redis-server 7 holds after loading a copy (at `copy`) of BlinkDB's `directory`."""
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("server.log"))
    return _snapshot_of(redis_server(copy, copy + "-log"), snapshot)


def redis_snapshot_of_run(directory, workload, snapshot):
    """What redis-server 7 holds after running `workload(conn)` itself, in `directory`."""
    return _snapshot_of(redis_server(directory, directory + "-log"), snapshot, workload)
