"""While a large AOF loads, commands answer -LOADING and INFO persistence shows
loading:1 with progress; afterwards every key is there.

BLINKDB_LOADING_KEYS sets the key count (default 1,500,000, written with redis-cli --pipe).
"""

import os
import subprocess
import time

from aof_helpers import aof_bytes, info, start_aof_server
from resp import RespConnection, encode
from server import require_tool

KEYS = int(os.environ.get("BLINKDB_LOADING_KEYS", "1500000"))


def value_of(i):
    return b"v%d" % (i * 7919)


def write_pipe_input(path):
    with open(path, "wb") as f:
        for start in range(0, KEYS, 100_000):
            f.write(b"".join(encode(b"SET", b"key:%d" % i, value_of(i))
                             for i in range(start, min(start + 100_000, KEYS))))


def connect_early(port, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return RespConnection(port, timeout=10.0)
        except OSError:
            time.sleep(0.002)
    raise AssertionError("could not connect while the server started")


def test_clients_get_loading_during_startup(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    pipe_input = str(tmp_path / "commands.resp")
    write_pipe_input(pipe_input)
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with open(pipe_input, "rb") as stdin:
            result = subprocess.run(
                [require_tool("redis-cli"), "-p", str(srv.port), "--pipe"],
                stdin=stdin, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0 and f"replies: {KEYS}" in result.stdout, result.stdout
    finally:
        srv.stop()
    os.remove(pipe_input)
    print(f"AOF of {KEYS} keys: {aof_bytes(directory) // 1024} KiB")

    started = time.monotonic()
    srv = start_aof_server(blinkdb_binary, directory, wait=False)
    try:
        conn = connect_early(srv.port)
        with conn:
            reply = conn.call("GET", "key:1")
            assert reply.raw.startswith(b"-LOADING "), (
                f"GET during start-up answered {reply.raw!r}: the load was not observed")
            fields = info(conn)
            assert fields["loading"] == "1", fields
            total = int(fields["loading_total_bytes"])
            loaded = int(fields["loading_loaded_bytes"])
            assert total >= aof_bytes(directory) * 0.9 and 0 <= loaded <= total, fields
            assert 0.0 <= float(fields["loading_loaded_perc"]) <= 100.0, fields
            int(fields["loading_eta_seconds"])
            int(fields["loading_start_time"])
            print(f"during load: {reply.raw!r}, loaded {loaded}/{total} bytes")

            progress = [loaded]
            while True:
                fields = info(conn)
                if fields["loading"] == "0":
                    break
                progress.append(int(fields["loading_loaded_bytes"]))
                time.sleep(0.05)
            load_s = time.monotonic() - started
            assert progress == sorted(progress), f"loading progress went backwards: {progress}"
            assert conn.call("DBSIZE").value == KEYS
            for i in range(0, KEYS, KEYS // 1000):
                assert conn.call("GET", f"key:{i}").value == value_of(i)
            assert conn.call("SET", "after-load", "1").raw == b"+OK\r\n"
        print(f"start-up with {KEYS} keys took {load_s:.2f} s; {len(progress)} progress samples")
    finally:
        srv.stop()
