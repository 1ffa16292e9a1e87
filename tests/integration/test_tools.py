"""Real tools against the server: redis-cli, redis-benchmark, redis-py, unix socket."""

import os
import stat
import subprocess

import pytest
import redis

from server import require_tool


def cli(server, *args, stdin=None, timeout=60, socket_path=None):
    where = ["-s", socket_path] if socket_path else ["-h", "127.0.0.1", "-p", str(server.port)]
    return subprocess.run(
        [require_tool("redis-cli")] + where + list(args),
        input=stdin, capture_output=True, timeout=timeout,
    )


def test_redis_cli_basic(blinkdb):
    assert cli(blinkdb, "PING").stdout == b"PONG\n"
    assert cli(blinkdb, "SET", "greeting", "hello world").stdout == b"OK\n"
    assert cli(blinkdb, "GET", "greeting").stdout == b"hello world\n"
    assert cli(blinkdb, "INCRBY", "n", "41").stdout == b"41\n"
    assert cli(blinkdb, "INCR", "n").stdout == b"42\n"
    assert cli(blinkdb, "MGET", "greeting", "nokey", "n").stdout == b"hello world\n\n42\n"
    assert cli(blinkdb, "--no-raw", "GET", "nokey").stdout == b"(nil)\n"
    assert cli(blinkdb, "--no-raw", "DBSIZE").stdout == b"(integer) 2\n"
    wrong = cli(blinkdb, "GET")
    assert b"ERR wrong number of arguments for 'get' command" in wrong.stdout + wrong.stderr


def test_redis_cli_reads_commands_from_stdin(blinkdb):
    out = cli(blinkdb, stdin=b"SET a 1\nINCR a\nGET a\n")
    assert out.returncode == 0
    assert out.stdout == b"OK\n2\n2\n"


def test_redis_cli_pipe_mass_insertion(blinkdb, tmp_path):
    payload = b"".join(
        b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v)
        for k, v in ((b"key:%d" % i, b"value:%d" % i) for i in range(100_000))
    )
    out = cli(blinkdb, "--pipe", stdin=payload, timeout=120)
    text = (out.stdout + out.stderr).decode()
    assert out.returncode == 0, text
    assert "errors: 0, replies: 100000" in text, text
    assert cli(blinkdb, "DBSIZE").stdout == b"100000\n"
    assert cli(blinkdb, "GET", "key:99999").stdout == b"value:99999\n"


def test_redis_benchmark(blinkdb):
    out = subprocess.run(
        [require_tool("redis-benchmark"), "-h", "127.0.0.1", "-p", str(blinkdb.port),
         "-t", "ping,set,get,incr,mset", "-n", "100000", "-q"],
        capture_output=True, timeout=300,
    )
    text = (out.stdout + out.stderr).decode(errors="replace")
    assert out.returncode == 0, text
    assert "Error from server" not in text, text
    for test_name in ("PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET (10 keys)"):
        assert any(line.startswith(test_name + ":") and "requests per second" in line
                   for line in text.replace("\r", "\n").splitlines()), (test_name, text)
    # the INCR run really incremented: 100000 increments of the same counter
    assert cli(blinkdb, "GET", "counter:__rand_int__").stdout == b"100000\n"


@pytest.mark.parametrize("protocol", [None, 2, 3], ids=["default", "resp2", "resp3"])
def test_redis_py(blinkdb, protocol):
    kwargs = {} if protocol is None else {"protocol": protocol}
    client = redis.Redis(host="127.0.0.1", port=blinkdb.port, **kwargs)
    try:
        assert client.ping() is True
        assert client.set("a", "1") is True
        assert client.get("a") == b"1"
        assert client.get("missing") is None
        assert client.mset({"b": "2", "c": b"\x00\xff"}) is True
        assert client.mget("a", "missing", "c") == [b"1", None, b"\x00\xff"]
        assert client.expire("a", 100) is True
        assert 99 <= client.ttl("a") <= 100
        assert client.set("f", "10.5") is True
        assert client.incrbyfloat("f", 0.1) == pytest.approx(10.6)
        assert client.get("f") == b"10.6"
        assert client.set("nx", "1", nx=True) is True
        assert client.set("nx", "2", nx=True) is None
        pipe = client.pipeline(transaction=False)
        pipe.set("p", 1).incr("p").incrby("p", 5).get("p").delete("p").exists("p")
        assert pipe.execute() == [True, 2, 7, b"7", 1, 0]
        with pytest.raises(redis.ResponseError, match="value is not an integer"):
            client.incr("c")
        conn = client.connection_pool.get_connection()
        try:
            assert conn.protocol == (3 if protocol in (None, 3) else 2)
        finally:
            client.connection_pool.release(conn)
    finally:
        client.close()


def test_unix_socket(server_factory, tmp_path):
    sock_path = str(tmp_path / "blinkdb.sock")
    server = server_factory("--unixsocket", sock_path, "--unixsocketperm", "700")
    mode = stat.S_IMODE(os.stat(sock_path).st_mode)
    assert stat.S_ISSOCK(os.stat(sock_path).st_mode)
    assert mode == 0o700, oct(mode)
    assert cli(server, "PING", socket_path=sock_path).stdout == b"PONG\n"
    assert cli(server, "SET", "via", "unix", socket_path=sock_path).stdout == b"OK\n"
    for protocol in (2, 3):
        client = redis.Redis(unix_socket_path=sock_path, protocol=protocol)
        try:
            assert client.get("via") == b"unix"
            assert client.incr("hits") == protocol - 1
        finally:
            client.close()
    # the TCP listener serves the same keyspace
    assert cli(server, "GET", "via").stdout == b"unix\n"
