"""TLS on client connections (issue 41), side by side with redis-server 7.0.15
over TLS where behaviour should match, and bad input on the TLS port."""

import os
import resource
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time

import pytest
import redis

from server import ORACLE_BIN, ServerProcess, free_port
from tls_util import (client, context, make_certs, make_expired_client, server_flags, start_pair,
                      tls_socket, wait_log)


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


@pytest.fixture
def pair(blinkdb_binary, tmp_path, tls):
    srvs = start_pair(blinkdb_binary, ORACLE_BIN, tmp_path, tls)
    yield srvs
    for s in srvs.values():
        s.stop()


def scenario(tls, port):
    """Plain commands, a pipeline, a large value, pub/sub, a blocked BLPOP,
    MONITOR and RESP3, all over TLS; returns what the clients saw."""
    seen = []
    r = client(tls, port)
    seen.append(r.set("k", "v"))
    seen.append(r.get("k"))
    p = r.pipeline(transaction=False)
    for i in range(2000):
        p.set(f"key:{i}", i)
        p.get(f"key:{i}")
    replies = p.execute()
    seen.append(replies[-1])
    seen.append(len(replies))
    # Larger than any TLS record or socket buffer: the session's pending
    # records must all go out.
    big = os.urandom(3 << 20)
    r.set("big", big)
    seen.append(r.get("big") == big)
    seen.append(r.strlen("big"))

    sub = client(tls, port).pubsub()
    sub.subscribe("ch")
    assert sub.get_message(timeout=5)["type"] == "subscribe"
    seen.append(r.publish("ch", "hello"))
    msg = sub.get_message(timeout=5)
    seen.append((msg["type"], msg["data"]))

    blocked = client(tls, port)
    result = {}
    t = threading.Thread(target=lambda: result.update(v=blocked.blpop("list", timeout=10)))
    t.start()
    deadline = time.monotonic() + 10
    while r.info("clients")["blocked_clients"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    r.lpush("list", "x")
    t.join(10)
    seen.append(result.get("v"))

    mon = tls_socket(tls, port)
    mon.sendall(b"MONITOR\r\n")
    assert mon.recv(100) == b"+OK\r\n"
    r.get("watched")
    data = b""
    while b"watched" not in data:
        data += mon.recv(4096)
    seen.append(b'"get" "watched"' in data.lower())
    mon.close()

    r3 = tls_socket(tls, port)
    r3.sendall(b"HELLO 3\r\n")
    data = b""
    while b"proto" not in data:
        data += r3.recv(4096)
    seen.append(data[:1])
    r3.sendall(b"HGETALL nothing\r\n")
    seen.append(r3.recv(100))
    r3.close()
    return seen


def test_clients_over_tls_as_redis(pair, tls):
    got = {name: scenario(tls, s.tls_port) for name, s in pair.items()}
    assert got["blinkdb"] == got["redis"]
    assert got["blinkdb"][0] is True and got["blinkdb"][4] is True


def test_tls_only_with_port_zero(blinkdb_binary, tmp_path, tls):
    port = free_port()
    args = ["--port", "0", "--bind", "127.0.0.1", "--dir", str(tmp_path),
            "--appendonly", "no", "--save", ""] + server_flags(tls, port)
    srv = ServerProcess(blinkdb_binary, str(tmp_path), args=args, wait=False)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                assert client(tls, port).ping()
                break
            except (redis.ConnectionError, ConnectionRefusedError):
                assert time.monotonic() < deadline, srv.log_text()
                time.sleep(0.05)
        assert client(tls, port).config_get("port") == {"port": "0"}
    finally:
        srv.stop()


@pytest.mark.parametrize("mode", ["yes", "optional", "no"])
def test_auth_clients(pair, tls, mode):
    for name, s in pair.items():
        s.connect().call("CONFIG", "SET", "tls-auth-clients", mode)
        # A certificate from the CA is always fine.
        assert client(tls, s.tls_port).ping(), name
        # A certificate from another CA is refused unless none is asked for.
        if mode == "no":
            assert client(tls, s.tls_port, cert="other/client").ping(), name
        else:
            with pytest.raises((ssl.SSLError, OSError, redis.ConnectionError)):
                client(tls, s.tls_port, cert="other/client").ping()
        # Without one: only with "no" or "optional".
        if mode == "yes":
            with pytest.raises((ssl.SSLError, OSError, redis.ConnectionError)):
                client(tls, s.tls_port, cert=None).ping()
        else:
            assert client(tls, s.tls_port, cert=None).ping(), name
    if mode == "yes":
        wait_log(pair["blinkdb"], "Error accepting a client connection")


def peer_cn(tls, port):
    with tls_socket(tls, port) as s:
        subject = dict(x[0] for x in s.getpeercert()["subject"])
        return subject["commonName"]


def test_certificate_reload(pair, tls):
    for name, s in pair.items():
        conn = s.connect()
        old = tls_socket(tls, s.tls_port)
        assert peer_cn(tls, s.tls_port) == "Server-only"
        bad = conn.call("CONFIG", "SET", "tls-cert-file", f"{tls}/nonexistent.crt")
        assert bad.raw == (
            b"-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
            b"Unable to update TLS configuration. Check server logs.\r\n"
        ), name
        assert f"{tls}/server.crt".encode() in conn.call("CONFIG", "GET", "tls-cert-file").raw
        assert peer_cn(tls, s.tls_port) == "Server-only"
        ok = conn.call("CONFIG", "SET", "tls-cert-file", f"{tls}/redis.crt",
                       "tls-key-file", f"{tls}/redis.key")
        assert ok.raw == b"+OK\r\n", name
        assert peer_cn(tls, s.tls_port) == "Generic-cert", name
        # The session opened before goes on.
        old.sendall(b"PING\r\n")
        assert old.recv(100) == b"+PONG\r\n"
        old.close()


def test_unsupported_values_refused(blinkdb_binary, tmp_path, tls):
    port = free_port()
    srv = ServerProcess(blinkdb_binary, str(tmp_path), server_flags(tls, port))
    try:
        conn = srv.connect()
        for option, value, text in [
            ("tls-protocols", "TLSv1.1", b"TLSv1.1 is not supported"),
            ("tls-protocols", "SSLv3", b"Invalid tls-protocols specified"),
            ("tls-ciphers", "AES128-SHA256", b"cipher 'AES128-SHA256' is not available"),
            ("tls-dh-params-file", f"{tls}/ca.crt", b"Unable to update TLS configuration"),
            ("tls-dh-params-file", f"{tls}/none.dh", b"Unable to update TLS configuration"),
        ]:
            r = conn.call("CONFIG", "SET", option, value)
            assert r.is_error and text in r.raw, r.raw
            assert f"argument '{option}'".encode() in r.raw
        # DH parameters are read and checked (Redis's log texts), then unused
        # (ECDHE suites only).
        wait_log(srv, f"{tls}/ca.crt: failed to read DH params.")
        wait_log(srv, f"Failed to load {tls}/none.dh: No such file")
        r = conn.call("CONFIG", "SET", "tls-dh-params-file", f"{tls}/redis.dh")
        assert r.raw == b"+OK\r\n", r.raw
        wait_log(srv, "DH parameters read, not used")
        assert conn.call("CONFIG", "SET", "tls-protocols", "TLSv1.2").raw == b"+OK\r\n"
        ctx = context(tls)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        with pytest.raises(ssl.SSLError):
            ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5))
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5)) as s:
            assert s.version() == "TLSv1.2"
    finally:
        srv.stop()


def test_encrypted_key_file(pair, tls):
    """An encrypted private key (PKCS#8, as OpenSSL 3 writes it) is refused
    without tls-key-file-pass and taken with it, by both servers (Redis's
    unit/tls 'Working with an encrypted keyfile')."""
    subprocess.run(["openssl", "rsa", "-in", "server.key", "-out", "server.key.enc", "-aes256",
                    "-passout", "pass:1234"], cwd=tls, check=True, capture_output=True)
    for name, srv in pair.items():
        with srv.connect() as c:
            r = c.call("CONFIG", "SET", "tls-key-file", f"{tls}/server.key.enc")
            assert r.is_error and b"Unable to update TLS" in r.raw, (name, r.raw)
            assert c.call("CONFIG", "SET", "tls-key-file-pass", "1234").raw == b"+OK\r\n", name
            r = c.call("CONFIG", "SET", "tls-key-file", f"{tls}/server.key.enc")
            assert r.raw == b"+OK\r\n", (name, r.raw)
        # New connections get the certificate with the decrypted key.
        assert client(tls, srv.tls_port).ping(), name


def test_bad_input_on_the_tls_port(blinkdb_binary, tmp_path, tls):
    port = free_port()
    srv = ServerProcess(blinkdb_binary, str(tmp_path),
                        server_flags(tls, port, **{"tls-handshake-timeout": 5}))
    try:
        good = client(tls, port)
        assert good.ping()
        # A plaintext client: reset without an alert, as redis-server (OpenSSL)
        # does, so that it sees an I/O error rather than a reply to parse.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"PING\r\n")
            try:
                data = s.recv(100)
            except ConnectionResetError:
                data = b""
            assert data == b""
        wait_log(srv, "Error accepting a client connection: wrong version number")
        # Garbage that looks like a record header.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"\x16\x03\x01\x00\x05garbagegarbage")
            while s.recv(100):
                pass
        # Half-open handshakes: a partial ClientHello each, then silence.
        stalled = []
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", port), timeout=20)
            s.sendall(b"\x16\x03\x01\x02\x00\x01")
            stalled.append(s)
        # Others are served meanwhile, over TLS and in plaintext, while the
        # stalled handshakes are all still open.
        assert client(tls, port).ping()
        assert srv.connect().call("PING").raw == b"+PONG\r\n"
        assert "handshake timed out" not in srv.log_text()
        # Each stalled one is dropped at the timeout, with a log line.
        for s in stalled:
            try:
                assert s.recv(100) == b""
            except ConnectionResetError:
                pass
            s.close()
        wait_log(srv, "handshake timed out after 5 s")
        assert good.ping()
        assert srv.alive()
    finally:
        srv.stop()


def test_half_open_handshakes_count_against_maxclients(blinkdb_binary, tmp_path, tls):
    port = free_port()
    srv = ServerProcess(blinkdb_binary, str(tmp_path),
                        server_flags(tls, port, maxclients=20, **{"tls-handshake-timeout": 30}))
    try:
        stalled = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
        wait_log(srv, "max number of clients reached")
        for s in stalled:
            s.close()
        # Once they are gone, clients get in again.
        deadline = time.monotonic() + 15
        while True:
            try:
                assert client(tls, port).ping()
                break
            except (redis.ConnectionError, ssl.SSLError, OSError):
                assert time.monotonic() < deadline, srv.log_text()
                time.sleep(0.1)
    finally:
        srv.stop()


def test_request_in_the_same_flight_as_the_handshake(blinkdb_binary, tmp_path, tls):
    """A client's first request sent together with its last handshake
    message is decrypted during the handshake: it must be answered, not left
    in the session while the server waits for the socket."""
    port = free_port()
    srv = ServerProcess(blinkdb_binary, str(tmp_path), server_flags(tls, port))
    try:
        for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
            ctx = context(tls)
            ctx.maximum_version = version
            incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            tls_obj = ctx.wrap_bio(incoming, outgoing)
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            while True:
                try:
                    tls_obj.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    sock.sendall(outgoing.read())
                    data = sock.recv(65536)
                    assert data, srv.log_text()
                    incoming.write(data)
            # The client's Finished and the request leave in one send.
            tls_obj.write(b"PING\r\n")
            sock.sendall(outgoing.read())
            reply = b""
            while b"\r\n" not in reply:
                data = sock.recv(65536)
                assert data, srv.log_text()
                incoming.write(data)
                try:
                    reply += tls_obj.read(100)
                except ssl.SSLWantReadError:
                    pass
            assert reply == b"+PONG\r\n", version
            sock.close()
    finally:
        srv.stop()


def test_v1_client_certificate(pair, tls):
    """A client certificate without extensions (X.509 v1: gen-test-certs.sh's
    redis.crt, which redis_exporter's TLS tests present) is taken from the CA
    over TLS 1.2 and 1.3, as OpenSSL takes it; an expired one, or one signed by
    another key under the CA's name, is refused."""
    subprocess.run(["openssl", "req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout",
                    "expired.key", "-subj", "/O=Redis Test/CN=Expired", "-out", "expired.csr"],
                   cwd=tls, check=True, capture_output=True)
    subprocess.run(["openssl", "x509", "-req", "-in", "expired.csr", "-CA", "ca.crt", "-CAkey",
                    "ca.key", "-CAserial", "ca.txt", "-days", "-1", "-out", "expired.crt"],
                   cwd=tls, check=True, capture_output=True)
    # Signed by another key under the CA's very name: only the signature tells.
    subprocess.run(["openssl", "req", "-x509", "-new", "-nodes", "-newkey", "rsa:2048",
                    "-keyout", "forger.key", "-subj", "/O=Redis Test/CN=Certificate Authority",
                    "-out", "forger.crt"], cwd=tls, check=True, capture_output=True)
    subprocess.run(["openssl", "x509", "-req", "-in", "expired.csr", "-CA", "forger.crt",
                    "-CAkey", "forger.key", "-CAcreateserial", "-days", "30",
                    "-out", "forged.crt"], cwd=tls, check=True, capture_output=True)
    shutil.copy(f"{tls}/expired.key", f"{tls}/forged.key")

    def ping(port, cert, version):
        ctx = context(tls, cert)
        ctx.minimum_version = ctx.maximum_version = version
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10)) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64)

    for name, s in pair.items():
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            assert ping(s.tls_port, "redis", version) == b"+PONG\r\n", (name, version)
            # TLS 1.3 sends the client's certificate after the server's
            # Finished: the refusal comes with the first read.
            for cert in ("expired", "forged"):
                try:
                    reply = ping(s.tls_port, cert, version)
                except (ssl.SSLError, OSError) as err:
                    reply = err
                assert not isinstance(reply, bytes) or reply == b"", (name, cert, version, reply)


def test_expired_and_wrong_ca_client_certificates(pair, tls):
    """tls-auth-clients yes (the default): a client certificate signed by the
    CA but expired, or valid but from another CA, is refused at the handshake
    by both servers; BlinkDB logs why and serves the next client."""
    expired = make_expired_client(tls)
    for name, s in pair.items():
        for cert in (expired, "other/client"):
            with pytest.raises((ssl.SSLError, OSError, redis.ConnectionError)):
                client(tls, s.tls_port, cert=cert).ping()
        assert client(tls, s.tls_port).ping(), name
    wait_log(pair["blinkdb"], "invalid peer certificate: certificate expired")
    wait_log(pair["blinkdb"], "invalid peer certificate: UnknownIssuer")


def client_hello(tls):
    """A real client's first flight (a whole ClientHello), made without a socket."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = context(tls).wrap_bio(incoming, outgoing)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return outgoing.read()


def test_client_that_stops_mid_handshake(blinkdb_binary, tmp_path, tls):
    """A client sends its ClientHello, gets the server's flight, and answers
    nothing: dropped at tls-handshake-timeout with a log line, while another
    client is served."""
    port = free_port()
    srv = ServerProcess(blinkdb_binary, str(tmp_path),
                        server_flags(tls, port, **{"tls-handshake-timeout": 3}))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(client_hello(tls))
            assert s.recv(5)[:1] == b"\x16"  # the server's handshake records
            assert client(tls, port).ping()
            assert "handshake timed out" not in srv.log_text()
            try:
                while s.recv(4096):
                    pass
            except ConnectionResetError:
                pass
        wait_log(srv, "handshake timed out after 3 s")
        assert client(tls, port).ping()
    finally:
        srv.stop()


def test_ten_thousand_half_open_handshakes(blinkdb_binary, tmp_path, tls):
    """Twice 10,000 connections to the TLS port at once, half sending a partial
    ClientHello and half nothing: other clients, TLS and plain, are served
    throughout; memory is bounded: the second wave, once the first is closed
    and dropped, takes the memory the first freed rather than as much again
    (the allocator keeps freed pages, so RSS does not fall back by itself)."""
    count = 10_000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < count + 500:
        pytest.skip(f"needs {count + 500} descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, count + 500), hard))
    port = free_port()
    srv = ServerProcess(blinkdb_binary, str(tmp_path), server_flags(
        tls, port, maxclients=count + 100, **{"tls-handshake-timeout": 120}))
    fds = lambda: len(os.listdir(f"/proc/{srv.pid}/fd"))  # noqa: E731
    stalled = []
    try:
        good = client(tls, port)
        assert good.ping()
        base_fds, before = fds(), srv.rss_kb()
        held = []
        for wave in range(2):
            for i in range(count):
                s = socket.create_connection(("127.0.0.1", port), timeout=30)
                if i % 2:
                    s.sendall(b"\x16\x03\x01\x02\x00\x01")
                stalled.append(s)
                if i % 2000 == 1999:
                    assert good.ping() and srv.connect().call("PING").raw == b"+PONG\r\n", i
            # Every one accepted (a descriptor in the server) and waiting in
            # its handshake, while new clients keep being served.
            deadline = time.monotonic() + 60
            while fds() < base_fds + count:
                assert time.monotonic() < deadline, fds()
                assert client(tls, port).ping()
                time.sleep(0.2)
            held.append(srv.rss_kb())
            assert client(tls, port).set("k", wave)
            assert good.get("k") == str(wave).encode()
            assert srv.connect().call("GET", "k").raw == f"$1\r\n{wave}\r\n".encode()
            for s in stalled:
                # A reset, not a FIN: 10,000 client ports left in TIME_WAIT
                # for a minute could keep other tests' servers off them.
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
            stalled.clear()
            # The server sees each close, logs it and drops the handshake.
            deadline = time.monotonic() + 60
            while fds() > base_fds + 50:
                assert time.monotonic() < deadline, fds()
                time.sleep(0.2)
            wait_log(srv, "Error accepting a client connection", timeout=30)
        per_wave = held[0] - before
        assert per_wave < 200 * 1024, (before, held)
        assert held[1] - held[0] < per_wave // 3, (before, held)
        assert good.ping() and srv.alive()
        print(f"\n10,000 half-open TLS handshakes: RSS {before} kB before, {held} kB held "
              f"(two waves)")
    finally:
        for s in stalled:
            s.close()
        srv.stop()


def test_session_cache_timeout(blinkdb_binary, tmp_path, tls):
    """tls-session-cache-timeout: a session resumes within the timeout and
    not after it, on both servers (rustls' cache has no lifetime of its own:
    net/tls/sessions.rs)."""
    pair = start_pair(blinkdb_binary, ORACLE_BIN, tmp_path, tls,
                      **{"tls-session-cache-timeout": 2})
    try:
        for name, srv in pair.items():
            ctx = context(tls)

            def connect(session=None):
                s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.tls_port),
                                                             timeout=10), session=session)
                s.sendall(b"PING\r\n")  # the reply comes after the session tickets
                assert s.recv(100) == b"+PONG\r\n"
                return s
            with connect() as s:
                first = s.session
            with connect(first) as s:
                assert s.session_reused, name
                again = s.session
            # The timeout is about time itself: wait it out.
            time.sleep(3)
            with connect(again) as s:
                assert not s.session_reused, name
    finally:
        for s in pair.values():
            s.stop()
