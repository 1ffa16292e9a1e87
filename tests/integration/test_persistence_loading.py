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


def check_progress(samples, aof_size):
    """Every loading:1 sample carries Redis's progress fields with sane values."""
    now = time.time()
    loaded = [int(f["loading_loaded_bytes"]) for f in samples]
    totals = [int(f["loading_total_bytes"]) for f in samples]
    for fields, done, total in zip(samples, loaded, totals):
        started = int(fields["loading_start_time"])
        assert now - 300 <= started <= now + 5, f"loading_start_time is not now: {fields}"
        assert 0 <= done <= total, f"loaded bytes outside 0..total: {fields}"
        assert 0.0 <= float(fields["loading_loaded_perc"]) <= 100.0, fields
        assert int(fields["loading_eta_seconds"]) >= 0, fields
    assert loaded == sorted(loaded), f"loading progress went backwards: {loaded}"
    # Before the AOF's files are opened the total is not known yet (0/0); from then on
    # it must be their size. (Redis opens them before it shows loading:1 at all.)
    unknown = next((i for i, t in enumerate(totals) if t != 0), len(totals))
    assert all(d == 0 for d in loaded[:unknown]), f"bytes loaded of an unknown total: {loaded}"
    assert unknown < len(totals), "loading_total_bytes stayed 0 during the whole load"
    assert all(t >= aof_size * 0.9 for t in totals[unknown:]), (
        f"loading_total_bytes {sorted(set(totals))} is not the AOF size {aof_size}")
    return unknown


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
            samples = []
            while True:
                fields = info(conn)
                if fields["loading"] == "0":
                    break
                samples.append(fields)
                time.sleep(0.02)
            load_s = time.monotonic() - started
            assert samples, "INFO never showed loading:1"
            unknown = check_progress(samples, aof_bytes(directory))
            print(f"during load: {reply.raw!r}; {len(samples)} INFO samples ({unknown} before"
                  " the total was known), first"
                  f" {samples[0]['loading_loaded_bytes']}/{samples[0]['loading_total_bytes']},"
                  f" last {samples[-1]['loading_loaded_bytes']}/{samples[-1]['loading_total_bytes']}")
            assert conn.call("DBSIZE").value == KEYS
            for i in range(0, KEYS, KEYS // 1000):
                assert conn.call("GET", f"key:{i}").value == value_of(i)
            assert conn.call("SET", "after-load", "1").raw == b"+OK\r\n"
        print(f"start-up with {KEYS} keys took {load_s:.2f} s")
    finally:
        srv.stop()
