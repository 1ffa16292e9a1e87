"""HRANDFIELD, SRANDMEMBER and ZRANDMEMBER with a huge negative count (repeats
allowed) to a client with a hard output limit, as obuf-limits.tcl's "HRANDFIELD
with huge count stopped mid-run": Redis accepts the count and closes the client
once its reply passes the limit, having stopped building it early. BlinkDB must
do the same (not refuse the count, nor build 999999999 picks first)."""

import time

import pytest


CASES = {
    "hrandfield": (("HSET", "k", "a", "b"), ("HRANDFIELD", "k", "-999999999")),
    "hrandfield-withvalues": (("HSET", "k", "a", "b"),
                              ("HRANDFIELD", "k", "-999999999", "WITHVALUES")),
    "srandmember": (("SADD", "k", "a"), ("SRANDMEMBER", "k", "-999999999")),
    "zrandmember": (("ZADD", "k", "1", "a"), ("ZRANDMEMBER", "k", "-999999999", "WITHSCORES")),
}


def read_until_closed(conn, deadline):
    """The first bytes the server sent, and whether it closed the connection
    before the deadline."""
    head = b""
    while time.monotonic() < deadline:
        data, closed = conn.read_all_available(wait=0.5)
        head = (head + data)[:256]
        if closed:
            return head, True
    return head, False


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("which", ["blinkdb", "redis"])
def test_huge_count_closes_the_client_at_its_limit(servers, which, case):
    srv = servers[which]
    fill, command = CASES[case]
    with srv.connect() as admin:
        assert admin.call("CONFIG", "SET", "client-output-buffer-limit",
                          "normal 1000000 0 0").raw == b"+OK\r\n"
        admin.call(*fill)
        started = time.monotonic()
        with srv.connect() as c:
            c.send(*command)
            # Closed without an error reply: the reply stopped at the limit.
            head, closed = read_until_closed(c, deadline=time.monotonic() + 60.0)
            assert closed
            assert not head.startswith(b"-"), head[:80]
        # Stopped early: far from the time 999999999 picks would take.
        assert time.monotonic() - started < 30.0
        assert admin.call("PING").raw == b"+PONG\r\n"
        assert admin.call("CLIENT", "LIST").value.count(b"\n") == 1
