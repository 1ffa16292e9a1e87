"""CONFIG SET appendonly at run time, as Redis 7.0 (issue 44): "yes" on a
server started without an AOF rewrites it from memory and logs from then on;
"no" stops logging; CONFIG REWRITE keeps the value, so a restart loads what
the AOF holds. Run the same way on redis-server 7.0.15 and BlinkDB."""

import os
import signal
import time

import pytest

from server import ORACLE_BIN, ServerProcess, free_port


def wait_until(pred, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def info(conn, section="persistence"):
    raw = conn.call("INFO", section).value.decode()
    return dict(line.split(":", 1) for line in raw.split("\r\n") if ":" in line)


def start(binary, directory, port):
    conf = os.path.join(directory, "server.conf")
    return ServerProcess(binary, directory, port=port, args=[conf])


def write_conf(directory, port):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "server.conf"), "w") as f:
        f.write(f'port {port}\nbind 127.0.0.1\ndir {directory}\nappendonly no\nsave ""\n')


def incr_size(directory):
    aof = os.path.join(directory, "appendonlydir")
    return sum(os.path.getsize(os.path.join(aof, n)) for n in os.listdir(aof)
               if n.endswith(".incr.aof"))


@pytest.mark.parametrize("kind", ["redis", "blinkdb"])
def test_appendonly_on_and_off_at_run_time(kind, blinkdb_binary, tmp_path):
    binary = ORACLE_BIN if kind == "redis" else blinkdb_binary
    directory, port = str(tmp_path / kind), free_port()
    write_conf(directory, port)
    srv = start(binary, directory, port)
    try:
        with srv.connect() as c:
            c.call("SET", "before", "1")
            c.call("SET", "big", "x" * 100_000)
            assert info(c)["aof_enabled"] == "0"
            assert c.call("CONFIG", "SET", "appendonly", "yes").raw == b"+OK\r\n"
            assert info(c)["aof_enabled"] == "1"
            wait_until(lambda: info(c)["aof_rewrites"] == "1"
                       and info(c)["aof_rewrite_in_progress"] == "0"
                       and info(c)["aof_rewrite_scheduled"] == "0", what="the rewrite")
            c.call("SET", "after", "2")
            assert c.call("CONFIG", "GET", "appendonly").value[1][1] == b"yes"
            assert c.call("CONFIG", "REWRITE").raw == b"+OK\r\n"
        # Killed, not shut down: only the AOF can bring the keys back.
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait()
        srv.log.close()
        srv = start(binary, directory, port)
        with srv.connect() as c:
            assert c.call("GET", "before").value == b"1"
            assert c.call("GET", "after").value == b"2"
            assert c.call("STRLEN", "big").value == 100_000
            assert info(c)["aof_enabled"] == "1"
            assert c.call("CONFIG", "SET", "appendonly", "no").raw == b"+OK\r\n"
            assert info(c)["aof_enabled"] == "0"
            size = incr_size(directory)
            c.call("SET", "unlogged", "3")
            assert incr_size(directory) == size
            # BlinkDB rewrites only while the AOF is on (docs/compatibility.md).
            assert c.call("BGREWRITEAOF").is_error() == (kind == "blinkdb")
            wait_until(lambda: info(c)["aof_rewrite_in_progress"] == "0", what="any rewrite")
            rewrites = int(info(c)["aof_rewrites"])
            # On again: the rewrite's base holds the write made while off.
            assert c.call("CONFIG", "SET", "appendonly", "yes").raw == b"+OK\r\n"
            wait_until(lambda: int(info(c)["aof_rewrites"]) == rewrites + 1
                       and info(c)["aof_rewrite_in_progress"] == "0"
                       and info(c)["aof_rewrite_scheduled"] == "0", what="the second rewrite")
            c.call("SET", "last", "4")
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait()
        srv.log.close()
        srv = start(binary, directory, port)
        with srv.connect() as c:
            assert [c.call("GET", k).value for k in ("before", "unlogged", "last")] == \
                [b"1", b"3", b"4"]
    finally:
        srv.stop()
