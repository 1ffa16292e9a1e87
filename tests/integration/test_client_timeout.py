"""The idle client timeout (`timeout`): an idle connection is closed, a busy one
is not however long it lives, and subscribers and blocked clients never time
out. Run against BlinkDB and against redis-server 7 alike (Redis checks in its
once-a-second client cron, with whole seconds, so the bounds are loose)."""

import time

import pytest

from resp import plain


def value(reply):
    return plain((reply.kind, reply.value))


@pytest.fixture(params=["blinkdb", "oracle"])
def server(request):
    srv = request.getfixturevalue(request.param)
    with srv.connect() as admin:
        assert admin.call("CONFIG", "SET", "timeout", "1").raw == b"+OK\r\n"
    return srv


def test_idle_client_is_closed_after_the_timeout(server):
    with server.connect() as conn:
        assert conn.call("PING").raw == b"+PONG\r\n"
        start = time.monotonic()
        assert conn.wait_closed(timeout=5.0), "idle client not closed"
        assert time.monotonic() - start >= 0.9, "closed before the timeout"


def test_a_busy_client_outlives_the_timeout_then_times_out_when_idle(server):
    with server.connect() as conn:
        start = time.monotonic()
        # Three timeouts long, never idle for half of one.
        while time.monotonic() - start < 3.0:
            assert conn.call("PING").raw == b"+PONG\r\n"
            time.sleep(0.3)
        assert conn.call("SET", "k", "v").raw == b"+OK\r\n"
        idle_from = time.monotonic()
        assert conn.wait_closed(timeout=5.0), "idle client not closed"
        assert time.monotonic() - idle_from >= 0.9


def test_subscribers_and_blocked_clients_never_time_out(server):
    with server.connect() as sub, server.connect() as blocked:
        assert value(sub.call("SUBSCRIBE", "ch"))[0] == b"subscribe"
        blocked.send("BLPOP", "q", "0")
        time.sleep(3.0)
        other = server.connect()
        assert other.call("PUBLISH", "ch", "hi").raw == b":1\r\n"
        assert value(sub.read_reply()) == [b"message", b"ch", b"hi"]
        assert other.call("RPUSH", "q", "x").raw == b":1\r\n"
        assert value(blocked.read_reply()) == [b"q", b"x"]
        other.close()


def test_a_timeout_set_while_connected_applies_from_the_next_wait(server):
    with server.connect() as conn:
        assert conn.call("CONFIG", "SET", "timeout", "0").raw == b"+OK\r\n"
        time.sleep(1.5)
        assert conn.call("PING").raw == b"+PONG\r\n"
        assert conn.call("CONFIG", "SET", "timeout", "1").raw == b"+OK\r\n"
        assert conn.wait_closed(timeout=5.0), "idle client not closed"
