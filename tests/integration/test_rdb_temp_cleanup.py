"""A BGSAVE runs in a thread of the server, so kill -9 during it leaves its
temp-<pid>.rdb in `dir`. The next start removes the temp files of writers that
are gone (and logs it), keeps one whose writer is a live process, and loads
dump.rdb whole."""

import os
import re
import time

from resp import RespConnection
from server import ServerProcess, free_port

KEYS = 300_000


def temps(directory):
    return sorted(n for n in os.listdir(directory) if re.fullmatch(r"temp-.*\.rdb", n))


def fill(port):
    with RespConnection(port, timeout=60) as c:
        for start in range(0, KEYS, 10_000):
            replies = c.pipeline([("SET", f"key:{i}", "v" * 100) for i in range(start, start + 10_000)])
            assert all(r.raw == b"+OK\r\n" for r in replies)
        assert c.call("SAVE").raw == b"+OK\r\n"


def kill_during_bgsave(srv):
    """BGSAVE, then kill -9 once its temp file is there; the file's name."""
    mine = f"temp-{srv.pid}.rdb"
    with srv.connect() as c:
        assert c.call("BGSAVE").raw == b"+Background saving started\r\n"
    deadline = time.monotonic() + 30
    while mine not in os.listdir(srv.dir):
        assert time.monotonic() < deadline, "BGSAVE made no temp file"
        time.sleep(0.001)
    srv.proc.kill()
    srv.proc.wait()
    srv.log.close()
    return mine


def test_kill_9_during_bgsave_leaves_no_temp_file(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "d")
    port = free_port()
    started = []

    def start():
        started.append(ServerProcess(blinkdb_binary, directory, port=port))
        return started[-1]

    alive = os.path.join(directory, f"temp-{os.getpid()}.rdb")
    try:
        srv = start()
        fill(port)
        left = []
        for _ in range(3):
            left.append(kill_during_bgsave(srv))
            srv = start()
            # The temp file of the save just killed is gone once the server is up.
            assert temps(directory) == [], left
        left.append(kill_during_bgsave(srv))
        assert temps(directory) == [left[-1]]
        # A temp file whose writer still runs (this test's process) is kept.
        with open(alive, "wb") as f:
            f.write(b"in progress")
        srv = start()
        assert temps(directory) == [os.path.basename(alive)]
        log = srv.log_text()
        assert f"Removed stale temp file {os.path.join(directory, left[-1])}" in log, log
        with srv.connect() as c:
            assert c.call("DBSIZE").raw == f":{KEYS}\r\n".encode()
            assert c.call("GET", f"key:{KEYS - 1}").raw == b"$100\r\n" + b"v" * 100 + b"\r\n"
    finally:
        for srv in started:
            srv.stop()
        if os.path.exists(alive):
            os.remove(alive)
