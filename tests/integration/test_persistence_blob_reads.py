"""GET of large values (read from the log when the replies are sent): pipelined with
small values, in RESP2 and RESP3, from the page cache and from the disk (read on a
blocking thread), and with a corrupted payload, which must give an error reply in its
place while the replies around it and the connection stay intact."""

import os
import shutil
import socket
import subprocess
import time

from aof_helpers import incr_files, start_aof_server

BIG = 64 * 1024


def big_value(tag):
    return (tag * (BIG // len(tag) + 1))[:BIG]


def test_pipelined_blob_gets_in_resp2_and_resp3(blinkdb_binary, tmp_path):
    srv = start_aof_server(blinkdb_binary, str(tmp_path / "data"))
    try:
        with srv.connect(timeout=30.0) as conn:
            a, b = big_value(b"alpha-"), big_value(b"beta--")
            assert conn.call("SET", "a", a).value == b"OK"
            assert conn.call("SET", "b", b).value == b"OK"
            assert conn.call("SET", "s", "small").value == b"OK"
            for proto in (2, 3):
                if proto == 3:
                    conn.call("HELLO", "3")
                replies = conn.pipeline([("GET", "a"), ("GET", "s"), ("GET", "b"),
                                         ("GET", "missing"), ("GET", "a")])
                assert [r.value for r in replies] == [a, b"small", b, None, a]
                # The bytes on the wire are a plain bulk string in both protocols.
                assert replies[0].raw == b"$%d\r\n%s\r\n" % (BIG, a)
                assert replies[3].raw == (b"$-1\r\n" if proto == 2 else b"_\r\n")
    finally:
        srv.stop()


def test_corrupt_blob_is_an_error_reply_between_good_ones(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always")
    try:
        with srv.connect(timeout=30.0) as conn:
            good, bad = big_value(b"good-"), big_value(b"bad--")
            assert conn.call("SET", "good", good).value == b"OK"
            assert conn.call("SET", "bad", bad).value == b"OK"
            # Flip one byte inside bad's payload in the log file (the server keeps
            # reading it from there: it is not held in memory).
            path = incr_files(directory)[-1]
            with open(path, "r+b") as f:
                data = f.read()
                at = data.index(bad) + BIG // 2
                f.seek(at)
                f.write(bytes([data[at] ^ 0xFF]))
                f.flush()
                os.fsync(f.fileno())
            replies = conn.pipeline([("GET", "good"), ("GET", "bad"), ("GET", "good")])
            assert replies[0].value == good and replies[2].value == good
            assert replies[1].raw.startswith(b"-ERR reading a large value from the log failed")
            assert conn.call("PING").value == b"PONG"
    finally:
        srv.stop()


def thread_count(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def evict_from_page_cache(path):
    """Drops the file's clean pages from the page cache; True if none are left
    (checked with fincore where util-linux has it)."""
    with open(path, "rb") as f:
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    if shutil.which("fincore") is None:
        return False
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path],
                         capture_output=True, text=True, check=True).stdout.strip()
    return out == "0"


def test_values_read_from_the_disk_keep_their_place_and_are_checked(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    # One connection thread: the reads that wait for the disk go to its blocking pool.
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always",
                           "--io-threads", "1")
    try:
        with srv.connect(timeout=30.0) as conn:
            size = 256 * 1024
            values = {k: (k.encode() * size)[:size] for k in ("c1", "c2", "c3", "bad")}
            mid = (b"m" * 20000)  # a large value under the blocking-read size
            for k, v in values.items():
                assert conn.call("SET", k, v).value == b"OK"
            assert conn.call("SET", "mid", mid).value == b"OK"
            assert conn.call("SET", "s", "small").value == b"OK"
            path = incr_files(directory)[-1]
            with open(path, "r+b") as f:
                data = f.read()
                at = data.index(values["bad"]) + size // 3
                f.seek(at)
                f.write(bytes([data[at] ^ 0x01]))
            threads_before = thread_count(srv.pid)
            all_evicted = evict_from_page_cache(path)
            replies = conn.pipeline([("GET", "c1"), ("SET", "x", "1"), ("GET", "s"),
                                     ("GET", "bad"), ("GET", "mid"), ("GET", "c2"),
                                     ("PING",), ("GET", "c3"), ("GET", "c1")])
            assert [r.value for r in replies[:3]] == [values["c1"], b"OK", b"small"]
            assert replies[3].raw.startswith(b"-ERR reading a large value from the log failed")
            assert [r.value for r in replies[4:]] == [mid, values["c2"], b"PONG",
                                                      values["c3"], values["c1"]]
            if all_evicted:
                # The uncached reads ran on the connection thread's blocking pool.
                assert thread_count(srv.pid) > threads_before
            # Read again, now from the page cache, on the connection thread.
            again = conn.pipeline([("GET", "c2"), ("GET", "bad"), ("GET", "c3")])
            assert again[0].value == values["c2"] and again[2].value == values["c3"]
            assert again[1].raw.startswith(b"-ERR reading a large value from the log failed")
    finally:
        srv.stop()


def peak_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_pipeline_of_large_gets_holds_a_bounded_window_in_memory(blinkdb_binary, tmp_path):
    # 100 GETs of a 4 MB value are 400 MB of replies. The server reads values at most
    # 32 MB ahead of the socket, so while the client reads nothing its peak RSS grows
    # by tens of MB, not by the 400 MB that reading every value up front would take.
    srv = start_aof_server(blinkdb_binary, str(tmp_path / "data"), "--io-threads", "1")
    try:
        size, count = 4 * 1024 * 1024, 100
        value = bytes(range(256)) * (size // 256)
        with srv.connect(timeout=60.0) as conn:
            assert conn.call("SET", "big", value).value == b"OK"
            assert conn.call("GET", "big").value == value
        before = peak_rss_kb(srv.pid)
        with socket.create_connection(("127.0.0.1", srv.port), timeout=60.0) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            sock.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * count)
            time.sleep(1.5)  # the server reads ahead until its window is full, then waits
            stalled = peak_rss_kb(srv.pid)
            reply = b"$%d\r\n%s\r\n" % (size, value)
            received = bytearray()
            for _ in range(count):
                while len(received) < len(reply):
                    chunk = sock.recv(1 << 20)
                    assert chunk, "server closed the connection"
                    received += chunk
                assert received[:len(reply)] == reply
                del received[:len(reply)]
            assert not received
        grown_mb = (stalled - before) / 1024
        print("peak RSS grew by %.0f MB while the client read nothing" % grown_mb)
        assert grown_mb < 120, "peak RSS grew by %.0f MB" % grown_mb
    finally:
        srv.stop()
