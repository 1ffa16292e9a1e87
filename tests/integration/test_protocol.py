"""Wire protocol: inline commands, pipelining, protocol errors, HELLO and RESP3."""

import re

import pytest

from resp import encode, plain


def raw_exchange(server, data, wait=0.5):
    """Send raw bytes; return (everything the server wrote, whether it closed)."""
    with server.connect() as conn:
        conn.send_raw(data)
        return conn.read_all_available(wait)


def assert_still_serving(server):
    with server.connect() as conn:
        assert conn.call("PING").raw == b"+PONG\r\n"


# --- inline commands ---------------------------------------------------

def test_inline_ping(blinkdb):
    with blinkdb.connect() as conn:
        conn.send_raw(b"PING\r\n")
        assert conn.read_reply().raw == b"+PONG\r\n"
        conn.send_raw(b"ping hello\n")  # a bare LF also ends an inline command
        assert conn.read_reply().raw == b"$5\r\nhello\r\n"


def test_inline_quoting(blinkdb):
    with blinkdb.connect() as conn:
        conn.send_raw(b'SET a "b c"\r\nGET a\r\n')
        assert conn.read_reply().raw == b"+OK\r\n"
        assert conn.read_reply().raw == b"$3\r\nb c\r\n"
        conn.send_raw(b"SET b 'x\\' y'\r\nGET b\r\n")
        assert conn.read_reply().raw == b"+OK\r\n"
        assert conn.read_reply().raw == b"$4\r\nx' y\r\n"
        conn.send_raw(b'SET c "\\x41\\n\\t\\"q"\r\nGET c\r\n')
        assert conn.read_reply().raw == b"+OK\r\n"
        assert conn.read_reply().raw == b'$5\r\nA\n\t"q\r\n'
        conn.send_raw(b"   SET   d    e   \r\nGET d\r\n")
        assert conn.read_reply().raw == b"+OK\r\n"
        assert conn.read_reply().raw == b"$1\r\ne\r\n"


def test_inline_empty_lines_are_ignored(blinkdb):
    with blinkdb.connect() as conn:
        conn.send_raw(b"\r\n\r\n\nPING\r\n")
        assert conn.read_reply().raw == b"+PONG\r\n"


def test_inline_unbalanced_quotes_closes_connection(blinkdb):
    data, closed = raw_exchange(blinkdb, b'SET a "b c\r\n')
    assert data == b"-ERR Protocol error: unbalanced quotes in request\r\n"
    assert closed
    assert_still_serving(blinkdb)


def test_inline_unknown_command(blinkdb):
    data, closed = raw_exchange(blinkdb, b"foo a b\r\n")
    assert data == b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"
    assert not closed


# --- pipelining --------------------------------------------------------

def test_pipeline_of_1000_commands_in_one_write(blinkdb):
    commands = []
    for i in range(500):
        commands += [("SET", f"key:{i}", f"value:{i}"), ("GET", f"key:{i}")]
    with blinkdb.connect() as conn:
        replies = conn.pipeline(commands)
        for i in range(500):
            assert replies[2 * i].raw == b"+OK\r\n"
            assert replies[2 * i + 1].value == f"value:{i}".encode()
        # replies to one write should be batched, not flushed one by one
        assert conn.reads <= len(commands) // 10, f"{conn.reads} reads for 1000 replies"


def test_pipeline_mixed_inline_and_multibulk(blinkdb):
    payload = b"".join([
        b"SET x 1\r\n", encode("INCR", "x"), b"INCR x\r\n", encode("GET", "x"), b"PING\r\n",
    ])
    with blinkdb.connect() as conn:
        conn.send_raw(payload)
        assert [conn.read_reply().raw for _ in range(5)] == [
            b"+OK\r\n", b":2\r\n", b":3\r\n", b"$1\r\n3\r\n", b"+PONG\r\n"]


def test_pipeline_split_across_writes_byte_by_byte(blinkdb):
    payload = encode("SET", "k", "hello\r\nworld") + encode("GET", "k")
    with blinkdb.connect() as conn:
        for i in range(len(payload)):
            conn.send_raw(payload[i : i + 1])
        assert conn.read_reply().raw == b"+OK\r\n"
        assert conn.read_reply().raw == b"$12\r\nhello\r\nworld\r\n"


def test_empty_and_negative_multibulk_are_skipped(blinkdb):
    # Redis treats *0 and *-N as no command at all.
    data, closed = raw_exchange(blinkdb, b"*0\r\n*-1\r\n*-5\r\nPING\r\n")
    assert data == b"+PONG\r\n"
    assert not closed


# --- protocol errors close the connection -----------------------------

PROTOCOL_ERRORS = [
    (b"*x\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*2147483648\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*99999999999\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\n$x\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$536870913\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$2147483647\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\nx\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n"),
    (b"*2\r\n$4\r\nECHO\r\n:5\r\n", b"-ERR Protocol error: expected '$', got ':'\r\n"),
    (b'ECHO "a\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
]


@pytest.mark.parametrize("data,expected", PROTOCOL_ERRORS,
                         ids=[repr(d) for d, _ in PROTOCOL_ERRORS])
def test_protocol_error_text_then_close(blinkdb, data, expected):
    reply, closed = raw_exchange(blinkdb, data)
    assert reply == expected
    assert closed, "connection must be closed after a protocol error"
    assert_still_serving(blinkdb)


def test_replies_before_a_protocol_error_are_delivered(blinkdb):
    reply, closed = raw_exchange(blinkdb, b"PING\r\n*1\r\n$x\r\nPING\r\n")
    assert reply == b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"
    assert closed


# --- HELLO and RESP3 -----------------------------------------------------

def hello_map(reply):
    assert reply.kind == b"%", reply.raw
    return plain((reply.kind, reply.value))


def test_hello_3_fields(blinkdb):
    with blinkdb.connect() as conn:
        fields = hello_map(conn.call("HELLO", "3"))
    assert set(fields) == {b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"}
    # server name and version are the implementation's own: check shape only
    assert isinstance(fields[b"server"], bytes) and fields[b"server"]
    assert re.fullmatch(rb"\d+\.\d+\.\d+", fields[b"version"]), fields[b"version"]
    assert fields[b"proto"] == 3
    assert isinstance(fields[b"id"], int) and fields[b"id"] > 0
    assert fields[b"mode"] == b"standalone"
    assert fields[b"role"] == b"master"
    assert isinstance(fields[b"modules"], list)


def test_hello_without_version_answers_in_resp2(blinkdb):
    with blinkdb.connect() as conn:
        reply = conn.call("HELLO")
    assert reply.kind == b"*" and len(reply.value) == 14
    flat = [v for _, v in reply.value]
    assert flat[0::2] == [b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"]
    assert flat[5] == 2


def test_hello_ids_differ_per_connection(blinkdb):
    with blinkdb.connect() as one, blinkdb.connect() as two:
        assert hello_map(one.call("HELLO", "3"))[b"id"] != hello_map(two.call("HELLO", "3"))[b"id"]


def test_hello_4_is_noproto(blinkdb):
    with blinkdb.connect() as conn:
        assert conn.call("HELLO", "4").raw == b"-NOPROTO unsupported protocol version\r\n"
        assert conn.call("HELLO", "x").raw == (
            b"-ERR Protocol version is not an integer or out of range\r\n")
        # the failed HELLO left the connection in RESP2
        assert conn.call("GET", "nokey").raw == b"$-1\r\n"


def test_hello_setname(blinkdb):
    with blinkdb.connect() as conn:
        fields = hello_map(conn.call("HELLO", "3", "SETNAME", "myclient"))
        assert fields[b"proto"] == 3
        assert conn.call("CLIENT", "GETNAME").raw == b"$8\r\nmyclient\r\n"
        assert conn.call("HELLO", "3", "SETNAME", "a b").raw == (
            b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n")


def test_hello_auth_without_password_configured(blinkdb):
    # the default user has no password: any password is accepted
    with blinkdb.connect() as conn:
        fields = hello_map(conn.call("HELLO", "3", "AUTH", "default", "whatever"))
        assert fields[b"proto"] == 3


def test_resp3_reply_types(blinkdb):
    with blinkdb.connect() as conn:
        conn.call("HELLO", "3")
        assert conn.call("GET", "nokey").raw == b"_\r\n"
        assert conn.call("SET", "z", "1").raw == b"+OK\r\n"
        assert conn.call("MGET", "z", "nokey").raw == b"*2\r\n$1\r\n1\r\n_\r\n"
        assert conn.call("SET", "z", "2", "GET").raw == b"$1\r\n1\r\n"
        assert conn.call("SET", "y", "2", "NX", "GET").raw == b"_\r\n"
        assert conn.call("SET", "y", "3", "NX").raw == b"_\r\n"
        # Redis 7.0 returns INCRBYFLOAT as a bulk string even in RESP3
        assert conn.call("INCRBYFLOAT", "f", "1.5").raw == b"$3\r\n1.5\r\n"
        assert conn.call("EXISTS", "z").raw == b":1\r\n"
        assert conn.call("TTL", "z").raw == b":-1\r\n"
        assert conn.call("RANDOMKEY").kind == b"$"
        config = conn.call("CONFIG", "GET", "maxclients")
        assert config.kind == b"%"
        assert plain((config.kind, config.value)) == {b"maxclients": b"10000"}
        assert conn.call("FLUSHDB").raw == b"+OK\r\n"
        assert conn.call("RANDOMKEY").raw == b"_\r\n"
        assert conn.call("GETDEL", "z").raw == b"_\r\n"


def test_back_to_resp2_with_hello_2(blinkdb):
    with blinkdb.connect() as conn:
        conn.call("HELLO", "3")
        assert conn.call("GET", "nokey").raw == b"_\r\n"
        assert conn.call("HELLO", "2").kind == b"*"
        assert conn.call("GET", "nokey").raw == b"$-1\r\n"
        assert conn.call("CONFIG", "GET", "maxclients").raw == (
            b"*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n")
