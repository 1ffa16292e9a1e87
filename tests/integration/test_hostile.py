"""Hostile input: after each attack the server must still answer PING."""

import random
import resource
import socket
import time

import pytest

from resp import ConnectionClosed, RespConnection, encode

RSS_GROWTH_LIMIT_KB = 8 * 1024


def assert_serving(server, within=2.0):
    assert server.alive(), server.log_text()
    started = time.monotonic()
    with RespConnection(server.port, timeout=within + 5) as conn:
        assert conn.call("PING").raw == b"+PONG\r\n"
    elapsed = time.monotonic() - started
    assert elapsed < within, f"PING took {elapsed:.2f}s"


def send_and_drop(server, data, linger=0.05):
    """Send bytes, give the server a moment to chew, then hang up."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        sock.sendall(data)
    except OSError:
        pass  # the server may already have hung up on us
    time.sleep(linger)
    sock.close()


def test_random_byte_garbage(blinkdb):
    rng = random.Random(1234)
    for i in range(150):
        length = rng.choice([1, 7, 64, 1000, 20000])
        prefix = rng.choice([b"", b"*", b"$", b"*3\r\n", b"*1\r\n$", b"+", b":"])
        garbage = prefix + bytes(rng.getrandbits(8) for _ in range(length))
        send_and_drop(blinkdb, garbage, linger=0.005)
        if i % 25 == 0:
            assert_serving(blinkdb)
    assert_serving(blinkdb)


MALFORMED = [
    b"*-5\r\n$-5\r\n",
    b"*1\r\n$-5\r\n",
    b"*1\r\n$-1\r\n",
    b"*abc\r\n",
    b"*1\r\n$abc\r\n",
    b"*1\r\n$3\r\nGETX\r\n",  # payload longer than declared length
    b"*1\r\n$5\r\nGET\r\n",  # payload shorter than declared, then stall
    b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n",  # truncated array, then hang up
    b"*\r\n",
    b"$\r\n",
    b"*1\r\n$\r\n",
    b"*1\r\n$1\r\n\xff\r\n\r\n\r\n",
    b"*99999999999999999999999\r\n",
    b"*1\r\n$99999999999999999999999\r\n",
    b"*0x10\r\n",
    b"*1\r\n$+5\r\nhello\r\n",
    b"\x00" * 100 + b"\r\n",
    b"*1\r\n" * 1000,
    b"\r\n" * 10000,
    b"A" * 70000,  # inline request without a newline, longer than 64 KB
]


@pytest.mark.parametrize("data", MALFORMED, ids=[repr(d[:24]) for d in MALFORMED])
def test_malformed_frame(blinkdb, data):
    send_and_drop(blinkdb, data)
    assert_serving(blinkdb)


def stall_with_header(server, header, connections):
    socks = []
    for _ in range(connections):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        sock.sendall(header)
        socks.append(sock)
    return socks


@pytest.mark.parametrize("header", [
    b"*1\r\n$2147483647\r\n",  # beyond proto-max-bulk-len: rejected
    b"*1\r\n$536870912\r\nabc",  # exactly proto-max-bulk-len (512 MB): accepted, then stalls
    b"*1048576\r\n",  # a huge argument count, then stalls
    b"*2\r\n$3\r\nGET\r\n$536870000\r\n",
])
def test_huge_length_header_does_not_allocate(blinkdb, header):
    assert_serving(blinkdb)
    before = blinkdb.rss_kb()
    socks = stall_with_header(blinkdb, header, connections=20)
    time.sleep(0.5)
    assert_serving(blinkdb)
    after = blinkdb.rss_kb()
    for sock in socks:
        sock.close()
    growth = after - before
    assert growth < RSS_GROWTH_LIMIT_KB, f"RSS grew by {growth} KB for 20 stalled headers"


def test_bulk_length_beyond_limit_is_rejected(blinkdb):
    with blinkdb.connect() as conn:
        conn.send_raw(b"*1\r\n$536870913\r\n")
        data, closed = conn.read_all_available(1.0)
    assert data == b"-ERR Protocol error: invalid bulk length\r\n"
    assert closed
    assert_serving(blinkdb)


def raise_fd_limit(needed):
    """Lift the soft fd limit as far as allowed; skip loudly if that is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, needed)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if target < needed:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {needed} needed for this test")


def test_ten_thousand_idle_connections(server_factory):
    # raised before the server starts so it inherits room for its own fds
    raise_fd_limit(10_200)
    server = server_factory("--maxclients", "20000")
    idle = []
    try:
        for i in range(10_000):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
            if i % 2500 == 2499:
                assert_serving(server, within=5.0)
        time.sleep(0.5)
        assert_serving(server, within=5.0)
        # some of the idle ones are still usable
        for sock in idle[::1000]:
            sock.sendall(b"PING\r\n")
            assert sock.recv(64) == b"+PONG\r\n"
        with server.connect() as conn:
            clients = conn.call("INFO", "clients").value
        assert b"connected_clients:10001" in clients, clients
    finally:
        for sock in idle:
            sock.close()
    assert_serving(server)


def test_maxclients_exceeded(server_factory):
    server = server_factory("--maxclients", "5")
    held = []
    try:
        for _ in range(5):
            conn = server.connect()
            assert conn.call("PING").raw == b"+PONG\r\n"
            held.append(conn)
        with server.connect() as extra:
            data, closed = extra.read_all_available(1.0)
        assert data == b"-ERR max number of clients reached\r\n"
        assert closed
    finally:
        for conn in held:
            conn.close()
    time.sleep(0.2)
    assert_serving(server)


def test_disconnect_mid_pipeline(blinkdb):
    payload = b"".join(encode("INCR", "counter") for _ in range(1000))
    payload += b"".join(encode("SET", f"k{i}", "x" * 1000) for i in range(1000))
    for _ in range(20):
        send_and_drop(blinkdb, payload, linger=0)
    assert_serving(blinkdb)
    with blinkdb.connect() as conn:
        count = int(conn.call("GET", "counter").value)
    # whatever was read before the hang-up ran; nothing ran twice
    assert 0 < count <= 20_000


def test_client_that_never_reads_does_not_block_others(blinkdb):
    with blinkdb.connect() as conn:
        assert conn.call("SET", "big", b"x" * (512 * 1024)).raw == b"+OK\r\n"
    hog = socket.create_connection(("127.0.0.1", blinkdb.port), timeout=10)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        hog.sendall(b"".join(encode("GET", "big") for _ in range(100)))
        time.sleep(0.5)
        for _ in range(5):
            assert_serving(blinkdb, within=2.0)
        with blinkdb.connect() as conn:
            assert conn.call("STRLEN", "big").raw == b":524288\r\n"
    finally:
        hog.close()
    time.sleep(0.2)
    assert_serving(blinkdb)


def test_timeout_closes_idle_clients(server_factory):
    server = server_factory("--timeout", "1")
    idle = server.connect()
    busy = server.connect()
    try:
        assert idle.call("PING").raw == b"+PONG\r\n"
        started = time.monotonic()
        closed_at = None
        while time.monotonic() - started < 6:
            assert busy.call("PING").raw == b"+PONG\r\n"
            if closed_at is None:
                if idle.wait_closed(timeout=0.3):
                    closed_at = time.monotonic() - started
            else:
                time.sleep(0.3)
            if closed_at is not None and time.monotonic() - started > closed_at + 1.5:
                break
        assert closed_at is not None, "idle client was not closed by --timeout 1"
        assert 0.9 <= closed_at <= 4.0, f"closed after {closed_at:.2f}s"
        # the client that kept talking survived the whole time
        assert busy.call("PING").raw == b"+PONG\r\n"
    finally:
        idle.close()
        busy.close()


# Arithmetic on client-supplied integers and numbers at their limits (the audit
# in docs/fuzzing.md). Every expected reply is redis-server 7.0.15's: run this
# file with BLINKDB_BIN=/usr/bin/redis-server to check the expectations.

I64_MAX = "9223372036854775807"
I64_MIN = "-9223372036854775808"
BAD_EXPIRE = "-ERR invalid expire time in '{}' command\r\n"


def replies(server, *commands):
    with server.connect() as conn:
        return [conn.call(*c).raw for c in commands]


def test_expire_arithmetic_overflow_is_an_error(blinkdb):
    got = replies(
        blinkdb,
        ("SET", "k", "v"),
        ("EXPIRE", "k", I64_MAX),
        ("EXPIRE", "missing", I64_MAX),
        ("EXPIRE", "k", I64_MIN),
        ("PEXPIRE", "k", I64_MAX),
        ("EXPIREAT", "k", I64_MAX),
        ("SET", "k", "v", "EX", I64_MAX),
        ("SET", "k", "v", "EX", "9223372036854775"),
        ("SET", "k", "v", "PX", I64_MAX),
        ("SETEX", "k", I64_MAX, "v"),
        ("PSETEX", "k", I64_MAX, "v"),
        ("GETEX", "k", "EX", I64_MAX),
        ("TTL", "k"),
    )
    assert got == [
        b"+OK\r\n",
        BAD_EXPIRE.format("expire").encode(),
        BAD_EXPIRE.format("expire").encode(),
        BAD_EXPIRE.format("expire").encode(),
        BAD_EXPIRE.format("pexpire").encode(),
        BAD_EXPIRE.format("expireat").encode(),
        BAD_EXPIRE.format("set").encode(),
        BAD_EXPIRE.format("set").encode(),
        BAD_EXPIRE.format("set").encode(),
        BAD_EXPIRE.format("setex").encode(),
        BAD_EXPIRE.format("psetex").encode(),
        BAD_EXPIRE.format("getex").encode(),
        b":-1\r\n",
    ]


def test_expire_time_at_the_largest_timestamp(blinkdb):
    # ttl + 500 overflowed when rounding to seconds (EXPIRETIME answered negative).
    got = replies(
        blinkdb,
        ("SET", "k", "v", "PXAT", I64_MAX),
        ("EXPIRETIME", "k"),
        ("PEXPIRETIME", "k"),
        ("PEXPIREAT", "k", I64_MAX),
        ("EXPIRETIME", "k"),
    )
    assert got == [b"+OK\r\n", b":9223372036854776\r\n", b":" + I64_MAX.encode() + b"\r\n",
                   b":1\r\n", b":9223372036854776\r\n"]


def test_counters_refuse_to_overflow(blinkdb):
    got = replies(
        blinkdb,
        ("SET", "n", I64_MAX),
        ("INCR", "n"),
        ("INCRBY", "n", "1"),
        ("DECRBY", "n", I64_MIN),
        ("SET", "n", I64_MIN),
        ("DECR", "n"),
        ("DECRBY", "n", I64_MAX),
        ("INCRBY", "n", "9223372036854775808"),
        ("INCRBY", "n", "+1"),
        ("SET", "f", "1e4932"),
        ("INCRBYFLOAT", "f", "1e4932"),
        ("INCRBYFLOAT", "f", "inf"),
        ("GET", "f"),
    )
    overflow = b"-ERR increment or decrement would overflow\r\n"
    not_int = b"-ERR value is not an integer or out of range\r\n"
    assert got == [
        b"+OK\r\n", overflow, overflow, b"-ERR decrement would overflow\r\n",
        b"+OK\r\n", overflow, overflow, not_int, not_int,
        b"+OK\r\n", b"-ERR increment would produce NaN or Infinity\r\n",
        b"-ERR increment would produce NaN or Infinity\r\n", b"$6\r\n1e4932\r\n",
    ]


def test_string_ranges_at_the_limits(blinkdb):
    too_big = b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
    got = replies(
        blinkdb,
        ("SET", "s", "hello"),
        ("GETRANGE", "s", "0", I64_MAX),
        ("GETRANGE", "s", I64_MIN, "-1"),
        ("GETRANGE", "s", I64_MAX, "0"),
        ("GETRANGE", "s", I64_MIN, I64_MIN),
        ("SETRANGE", "s", I64_MAX, "x"),
        ("SETRANGE", "s", "536870912", "x"),
        ("SETRANGE", "s", "-1", "x"),
        ("SETRANGE", "new", I64_MAX, ""),
        ("EXISTS", "new"),
    )
    assert got == [
        b"+OK\r\n", b"$5\r\nhello\r\n", b"$5\r\nhello\r\n", b"$0\r\n\r\n", b"$1\r\nh\r\n",
        too_big, too_big, b"-ERR offset is out of range\r\n", b":0\r\n", b":0\r\n",
    ]


def test_database_indexes_past_int_range(blinkdb):
    out_of_range = b"-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"
    got = replies(
        blinkdb,
        ("SET", "k", "v"),
        ("SELECT", "2147483648"),
        ("SELECT", I64_MAX),
        ("SELECT", "-1"),
        ("MOVE", "k", "2147483648"),
        ("COPY", "k", "k2", "DB", I64_MAX),
        ("SWAPDB", "0", I64_MAX),
    )
    assert got == [
        b"+OK\r\n", out_of_range, out_of_range, b"-ERR DB index is out of range\r\n",
        out_of_range, out_of_range, b"-ERR invalid second DB index\r\n",
    ]


def test_counts_cursors_and_ids_at_the_limits(blinkdb):
    got = replies(
        blinkdb,
        ("SET", "k", "v"),
        ("SCAN", "0", "COUNT", I64_MAX),
        ("SCAN", "0", "COUNT", "0"),
        ("SCAN", "18446744073709551616"),
        ("CLIENT", "LIST", "ID", "-1", "0", I64_MAX),
        ("CLIENT", "KILL", "ID", "0"),
        ("MEMORY", "USAGE", "k", "SAMPLES", "-1"),
        ("MEMORY", "USAGE", "k", "SAMPLES", "9223372036854775808"),
    )
    assert got == [
        b"+OK\r\n", b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n", b"-ERR syntax error\r\n",
        b"-ERR invalid cursor\r\n", b"$0\r\n\r\n", b"-ERR client-id should be greater than 0\r\n",
        b"-ERR syntax error\r\n", b"-ERR value is not an integer or out of range\r\n",
    ]


def test_config_set_numbers_at_the_limits(blinkdb):
    def failed(name, why):
        return f"-ERR CONFIG SET failed (possibly related to argument '{name}') - {why}\r\n".encode()

    got = replies(
        blinkdb,
        ("CONFIG", "SET", "proto-max-bulk-len", "0"),
        ("CONFIG", "SET", "proto-max-bulk-len", "9223372036854775808"),
        ("CONFIG", "SET", "client-query-buffer-limit", "18446744073709551615"),
        ("CONFIG", "SET", "hz", "100000"),
        ("CONFIG", "GET", "hz"),
        ("CONFIG", "SET", "hz", "+5"),
        ("CONFIG", "SET", "maxmemory", "18446744073709551616"),
        ("CONFIG", "GET", "maxmemory"),
        ("CONFIG", "SET", "maxmemory", " 5mb"),
        ("CONFIG", "SET", "maxmemory", "0"),
        ("CONFIG", "SET", "timeout", "2147483648"),
        ("SET", "k", "still serving"),
    )
    bulk_range = "argument must be between 1048576 and 9223372036854775807 inclusive"
    assert got == [
        failed("proto-max-bulk-len", bulk_range),
        failed("proto-max-bulk-len", bulk_range),
        failed("client-query-buffer-limit", bulk_range),
        b"+OK\r\n",
        b"*2\r\n$2\r\nhz\r\n$3\r\n500\r\n",
        failed("hz", "argument couldn't be parsed into an integer"),
        b"+OK\r\n",
        b"*2\r\n$9\r\nmaxmemory\r\n$20\r\n18446744073709551615\r\n",
        failed("maxmemory", "argument must be a memory value"),
        b"+OK\r\n",
        failed("timeout", "argument must be between 0 and 2147483647 inclusive"),
        b"+OK\r\n",
    ]


def test_protocol_numbers_and_inline_escapes_like_redis(blinkdb):
    # "-0" is not a length (string2ll): the connection closes on the error.
    for request, reply in [
        (b"*-0\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\n$-0\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ]:
        with blinkdb.connect() as conn:
            conn.send_raw(request)
            data, closed = conn.read_all_available(1.0)
            assert (data, closed) == (reply, True)
    # In an inline command, `\x` without two hex digits is an escaped x.
    with blinkdb.connect() as conn:
        conn.send_raw(b'ECHO "\\xZZ"\r\nECHO "\\x4"\r\nECHO "\\x41"\r\n')
        got = [conn.read_reply().raw for _ in range(3)]
    assert got == [b"$3\r\nxZZ\r\n", b"$2\r\nx4\r\n", b"$1\r\nA\r\n"]
    assert_serving(blinkdb)


def test_glob_ranges_compare_signed_chars(blinkdb):
    # Redis on x86-64 compares range ends as signed chars: [a-\xff] is -1..'a'.
    with blinkdb.connect() as conn:
        for key in (b"A", b"b", b"\xfe", b"\xff"):
            assert conn.call("SET", key, "1").raw == b"+OK\r\n"
        found = conn.call("KEYS", b"[a-\xff]").value
    assert sorted(v for _, v in found) == [b"A", b"\xff"]


def test_huge_reply_to_client_is_bounded_by_output_limit(blinkdb):
    """LRANGE of a 200k-element list with a 1 MB normal hard limit: the reply stops growing at
    the limit and the client is closed (as Redis does), the server and the list are intact."""
    with blinkdb.connect() as c:
        for _ in range(20):
            c.call("RPUSH", "big", *[b"x" * 100] * 10000)
        c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0")
        rss_before = blinkdb.rss_kb()
        with blinkdb.connect() as reader:
            reader.send("LRANGE", "big", "0", "-1")
            with pytest.raises((ConnectionClosed, ConnectionResetError)):
                reader.read_reply()
        # The 25 MB reply was never built (slack for allocator noise).
        assert blinkdb.rss_kb() - rss_before < 8 * 1024
        c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
        assert c.call("LLEN", "big").value == 200_000
        assert len(c.call("LRANGE", "big", "0", "-1").value) == 200_000
