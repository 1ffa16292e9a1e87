"""GET of large values (read from the log straight into the reply buffer): pipelined with
small values, in RESP2 and RESP3, and with a corrupted payload, which must give an error
reply in its place while the replies around it and the connection stay intact."""

import os

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
