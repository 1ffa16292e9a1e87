"""Clients that send before they read: a whole pipeline sent with one write
(redis-py's pipeline().execute(), bulk loaders), clients that never read, and
blocked clients with replies still queued. The server keeps reading and running
commands while replies wait for the socket; the wait is bounded by
client-output-buffer-limit and maxmemory-clients, as in Redis, and never holds
up other clients."""

import socket
import time

import redis

from resp import ConnectionClosed

VALUE = b"v" * 100


def _until(check, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what} never held"
        time.sleep(0.05)


def _client_line(conn, name):
    for line in conn.call("CLIENT", "LIST").value.decode().splitlines():
        if f" name={name} " in line:
            return dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
    return None


def _raw_client(port, name):
    """A socket that names itself, then is only written to."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"CLIENT SETNAME {name}\r\n".encode())
    assert s.recv(5) == b"+OK\r\n"
    return s


def _send_gets(sock, key, count):
    sock.sendall(f"GET {key}\r\n".encode() * count)


def _closed_by_server(sock, timeout=30.0):
    """Reads (and drops) until the server closes the socket."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(1 << 20):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


def test_whole_pipelines_complete_three_times_and_at_a_million(blinkdb):
    r = redis.Redis(port=blinkdb.port, socket_timeout=120)
    r.set("k", VALUE)
    for n in (300_000, 300_000, 300_000, 1_000_000):
        p = r.pipeline(transaction=False)
        for _ in range(n):
            p.get("k")
        got = p.execute()
        assert len(got) == n and got[0] == VALUE and got[-1] == VALUE
    assert r.ping()


def test_non_reading_client_is_closed_at_the_hard_limit_as_in_redis(blinkdb, oracle):
    outcomes = []
    for server in (blinkdb, oracle):
        with server.connect() as admin:
            admin.call("SET", "big", "x" * 1000)
            admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0")
            sock = _raw_client(server.port, "hog")
            _send_gets(sock, "big", 20_000)  # 20 MB of replies
            # Other clients are served while it does not read, and it is closed.
            _until(lambda: _client_line(admin, "hog") is None, what="hog closed")
            assert admin.call("PING").value == b"PONG"
            outcomes.append(_closed_by_server(sock))
            sock.close()
    assert outcomes == [True, True]
    assert "scheduled to be closed ASAP for overcoming of output buffer limits" in (
        blinkdb.log_text())


def test_unlimited_client_keeps_its_replies_and_gets_them_all(blinkdb):
    """normal 0 0 0 (the default): the replies wait, CLIENT LIST and INFO show
    them, and the client that reads at last gets every one, in order."""
    with blinkdb.connect() as admin:
        admin.call("SET", "big", "x" * 1000)
        sock = _raw_client(blinkdb.port, "late")
        n = 30_000
        _send_gets(sock, "big", n)
        sock.sendall(b"ECHO last\r\n")
        line = _until(lambda: (l := _client_line(admin, "late")) and
                      int(l["omem"]) > 8 << 20 and l, what="replies queued")
        assert line["events"] == "rw" and int(line["oll"]) >= 1
        assert int(line["tot-mem"]) >= int(line["omem"])
        info = admin.call("INFO", "clients").value.decode()
        fields = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
        assert int(fields["client_recent_max_output_buffer"]) > 8 << 20
        assert admin.call("PING").value == b"PONG"
        reply = b"$1000\r\n" + b"x" * 1000 + b"\r\n"
        expected = reply * n + b"$4\r\nlast\r\n"
        got = bytearray()
        sock.settimeout(30)
        while len(got) < len(expected):
            chunk = sock.recv(1 << 20)
            assert chunk, "closed before every reply came"
            got += chunk
        assert bytes(got) == expected
        line = _until(lambda: (l := _client_line(admin, "late")) and
                      l["omem"] == "0" and l, what="queue drained")
        assert line["events"] == "r" and line["oll"] == "0"
        sock.close()


def test_soft_limit_closes_after_its_seconds(blinkdb):
    with blinkdb.connect() as admin:
        admin.call("SET", "big", "x" * 1000)
        admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 512kb 1")
        sock = _raw_client(blinkdb.port, "slow")
        _send_gets(sock, "big", 20_000)  # 20 MB: over the soft limit, never over a hard one
        start = time.monotonic()
        # The limit is checked as replies are added, as in Redis: keep adding.
        while _client_line(admin, "slow") is not None:
            assert time.monotonic() - start < 20, "never closed"
            try:
                sock.sendall(b"PING\r\n")
            except OSError:
                break
            time.sleep(0.1)
        assert time.monotonic() - start >= 1.0
        sock.close()


def test_soft_limit_closes_a_client_that_sends_nothing_more_as_in_redis(blinkdb, oracle):
    """Over the soft limit once, then silent: Redis's clientsCron closes it when the
    seconds pass, although no reply is added."""
    for server in (blinkdb, oracle):
        with server.connect() as admin:
            admin.call("SET", "big", "x" * 1000)
            admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 512kb 1")
            sock = _raw_client(server.port, "quiet")
            _send_gets(sock, "big", 20_000)
            start = time.monotonic()
            _until(lambda: _client_line(admin, "quiet") is None, timeout=20,
                   what="quiet client closed")
            assert time.monotonic() - start >= 1.0
            assert _closed_by_server(sock)
            sock.close()


def test_client_eviction_counts_queued_replies(blinkdb):
    with blinkdb.connect() as admin:
        admin.call("CLIENT", "NO-EVICT", "on")
        admin.call("SET", "big", "x" * 1000)
        admin.call("CONFIG", "SET", "maxmemory-clients", "4mb")
        sock = _raw_client(blinkdb.port, "evictme")
        _send_gets(sock, "big", 20_000)
        _until(lambda: _client_line(admin, "evictme") is None, what="client evicted")
        stats = admin.call("INFO", "stats").value.decode()
        assert "evicted_clients:1" in stats
        assert _closed_by_server(sock)
        sock.close()
    # Checked after each batch, as Redis checks before each command, not only by
    # the 100 ms cron: evicted within a batch or two (a 16-32 KB read: 2.3-4.6 MB of replies)
    # of the limit, not once all 20 MB were queued.
    line = next(l for l in blinkdb.log_text().splitlines() if "Evicting client" in l)
    tot_mem = int(line.split(" tot-mem=")[1].split()[0])
    assert tot_mem < 12 << 20, line


def test_blocked_client_gets_the_replies_queued_before_it(blinkdb):
    """A pipeline whose last command blocks: the replies before it are written
    while it waits, and it is served after them."""
    with blinkdb.connect() as admin:
        admin.call("SET", "big", "x" * 1000)
        sock = _raw_client(blinkdb.port, "waiter")
        n = 20_000
        _send_gets(sock, "big", n)
        sock.sendall(b"BLPOP jobs 0\r\n")
        _until(lambda: (l := _client_line(admin, "waiter")) and "blpop" in l["cmd"],
               what="client blocked")
        reply = b"$1000\r\n" + b"x" * 1000 + b"\r\n"
        got = bytearray()
        sock.settimeout(30)
        while len(got) < len(reply) * n:
            chunk = sock.recv(1 << 20)
            assert chunk
            got += chunk
        assert bytes(got) == reply * n
        admin.call("RPUSH", "jobs", "j1")
        want = b"*2\r\n$4\r\njobs\r\n$2\r\nj1\r\n"
        got = bytearray()
        while len(got) < len(want):
            chunk = sock.recv(1024)
            assert chunk
            got += chunk
        assert bytes(got) == want
        sock.close()


def test_pipelined_large_values_from_the_log_complete(server_factory):
    """Values kept in the log (over blob-threshold) are read near the head of the
    queue only, however long the pipeline sent before reading."""
    srv = server_factory("--appendonly", "yes", "--blob-threshold", "16kb")
    r = redis.Redis(port=srv.port, socket_timeout=120)
    value = bytes(range(256)) * 1024  # 256 KB
    r.set("blob", value)
    r.set("small", "s")
    p = r.pipeline(transaction=False)
    for _ in range(400):  # 100 MB of replies
        p.get("blob")
        p.get("small")
    got = p.execute()
    assert got == [value, b"s"] * 400
    with srv.connect() as c:
        assert c.call("PING").value == b"PONG"


def test_killed_client_with_queued_replies_goes_at_once(blinkdb):
    with blinkdb.connect() as admin:
        admin.call("SET", "big", "x" * 1000)
        sock = _raw_client(blinkdb.port, "victim")
        _send_gets(sock, "big", 20_000)
        line = _until(lambda: (l := _client_line(admin, "victim")) and
                      int(l["omem"]) > 0 and l, what="replies queued")
        admin.call("CLIENT", "KILL", "ID", line["id"])
        _until(lambda: _client_line(admin, "victim") is None, what="client gone")
        assert _closed_by_server(sock)
        sock.close()
        try:
            admin.call("PING")
        except ConnectionClosed:
            raise AssertionError("the admin connection was closed")
