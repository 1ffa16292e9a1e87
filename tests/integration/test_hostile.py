"""Hostile input: after each attack the server must still answer PING."""

import random
import resource
import socket
import time

import pytest

from resp import RespConnection, encode

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
