"""Keys found expired by a read (GET), SCAN or RANDOMKEY are deleted there and then, each
sent to replicas as its own DEL (not wrapped in MULTI/EXEC), as redis-server 7.0.15 does
(Redis's unit/expire "Lazy-expire should not be wrapped in MULTI/EXEC"): the replication
stream a SYNC connection reads, DBSIZE and INFO's expired_keys after each command,
compared with redis-server run the same way, with active expiry off."""

import time

import pytest

from resp import RespConnection
from server import ORACLE_BIN, ServerProcess

DEBUG = ("--enable-debug-command", "yes")


@pytest.fixture
def servers(blinkdb_binary, tmp_path):
    started = [
        ServerProcess(blinkdb_binary, str(tmp_path / "blinkdb"), DEBUG),
        ServerProcess(ORACLE_BIN, str(tmp_path / "redis"), DEBUG),
    ]
    yield started
    for s in started:
        s.stop()


def attach(port):
    """A SYNC connection past its RDB (the replication stream follows)."""
    c = RespConnection(port, timeout=10.0)
    c.send("SYNC")
    line = b""
    while not line.startswith(b"$"):
        line = c._line().lstrip(b"\n")
    n = int(line[1:])
    while len(c.buf) - c.pos < n:
        c._fill()
    c.pos += n
    return c


def read_commands(c, count):
    """The next `count` commands of the stream (PINGs skipped)."""
    got = []
    deadline = time.monotonic() + 10
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {got} in the stream"
        reply = c.read_reply()
        cmd = [part[1] for part in reply.value]
        if cmd[0].upper() != b"PING":
            got.append(cmd)
    return got


def expired_keys(conn):
    text = conn.call("INFO", "stats").value.decode()
    return int(text.split("expired_keys:")[1].split("\r\n")[0])


def run(port, command):
    conn = RespConnection(port)
    conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    conn.call("FLUSHALL")
    before = expired_keys(conn)
    conn.call("SET", "foo1", "bar", "PX", "1")
    conn.call("SET", "foo2", "bar", "PX", "1")
    # Past the keys' 1 ms TTL on the wall clock (a deadline, not a guess).
    deadline = time.time() + 0.005
    while time.time() < deadline:
        pass
    stream = attach(port)
    conn.call(*command)
    got = read_commands(stream, 3)
    # The DBs' SELECT, then one DEL per key, in any order.
    head, dels = got[0], sorted(got[1:])
    stream.close()
    result = (head, dels, conn.call("DBSIZE").raw, expired_keys(conn) - before)
    conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    return result


def test_expired_keys_met_are_deleted_and_propagated(servers):
    # One after the other on the same servers: each new SYNC stream starts with a SELECT,
    # though the database did not change.
    for command in [("SCAN", "0", "COUNT", "1000"), ("RANDOMKEY",)]:
        b, r = (run(s.port, command) for s in servers)
        assert r == ([b"SELECT", b"0"], [[b"DEL", b"foo1"], [b"DEL", b"foo2"]], b":0\r\n", 2)
        assert b == r, command


def test_a_read_propagates_its_lazy_expiry(servers):
    def one(port):
        conn = RespConnection(port)
        conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        conn.call("SET", "k", "v", "PX", "1")
        deadline = time.time() + 0.005
        while time.time() < deadline:
            pass
        stream = attach(port)
        assert conn.call("GET", "k").raw == b"$-1\r\n"
        got = read_commands(stream, 2)
        conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        return got, conn.call("DBSIZE").raw

    b, r = (one(s.port) for s in servers)
    assert r == ([[b"SELECT", b"0"], [b"DEL", b"k"]], b":0\r\n")
    assert b == r
