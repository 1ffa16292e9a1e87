"""`aof-batch-checksums no`: the incr file is plain RESP, as Redis writes it (no `#BK` lines,
which readers such as Redis's test harness stop at), and it loads back; the default keeps them."""

import os

from aof_helpers import BK_LINE, connect_when_ready, incr_files, parse_commands, start_aof_server

WRITES = [("SET", "k", "v"), ("HSET", "h", "f", "1"), ("RPUSH", "l", "a", "b"), ("INCR", "n")]


def write_and_stop(binary, directory, *extra):
    srv = start_aof_server(binary, directory, "--appendfsync", "always", *extra)
    conn = connect_when_ready(srv)
    for cmd in WRITES:
        assert not conn.call(*cmd).is_error()
    conn.close()
    srv.stop()
    (path,) = incr_files(directory)
    with open(path, "rb") as f:
        return f.read()


def contents(conn):
    return (conn.call("GET", "k").value, conn.call("HGET", "h", "f").value,
            [v for _, v in conn.call("LRANGE", "l", 0, -1).value], conn.call("GET", "n").value)


def test_plain_resp_incr_file_loads(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "plain")
    data = write_and_stop(blinkdb_binary, directory, "--aof-batch-checksums", "no")
    assert not data.startswith(b"#") and b"\r\n#" not in data, data
    # Every byte is a whole RESP command: what a line-by-line RESP reader expects.
    commands = parse_commands(data)
    assert commands and commands[-1][1] == len(data)
    assert [c[2][0].upper() for c in commands][1:] == [w[0].encode() for w in WRITES]

    srv = start_aof_server(blinkdb_binary, directory, "--aof-batch-checksums", "no")
    conn = connect_when_ready(srv)
    try:
        assert contents(conn) == (b"v", b"1", [b"a", b"b"], b"1")
        assert [v for _, v in conn.call("CONFIG", "GET", "aof-batch-checksums").value] == [
            b"aof-batch-checksums", b"no"]
        # Taken at start: CONFIG SET of the value in force passes (Redis's "CONFIG sanity"
        # sets every option to its value), another is refused.
        assert conn.call("CONFIG", "SET", "aof-batch-checksums", "no").value == b"OK"
        refused = conn.call("CONFIG", "SET", "aof-batch-checksums", "yes").raw
        assert refused.startswith(b"-ERR CONFIG SET failed (possibly related to argument "
                                  b"'aof-batch-checksums') - can't change it at runtime"), refused
    finally:
        conn.close()
        srv.stop()


def test_default_closes_batches_with_checksums(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "default")
    data = write_and_stop(blinkdb_binary, directory)
    assert len(BK_LINE.findall(data)) >= len(WRITES)
    # A plain-RESP run afterwards appends to the same file, which still loads whole.
    srv = start_aof_server(blinkdb_binary, directory, "--aof-batch-checksums", "no")
    conn = connect_when_ready(srv)
    try:
        assert conn.call("SET", "after", "1").value == b"OK"
        assert contents(conn) == (b"v", b"1", [b"a", b"b"], b"1")
    finally:
        conn.close()
        srv.stop()
    srv = start_aof_server(blinkdb_binary, directory)
    conn = connect_when_ready(srv)
    try:
        assert conn.call("GET", "after").value == b"1"
        assert contents(conn) == (b"v", b"1", [b"a", b"b"], b"1")
    finally:
        conn.close()
        srv.stop()
    assert os.path.exists(directory)
