"""client-output-buffer-limit: syntax as Redis, and a subscriber that never reads is
dropped at the limit while the server's memory stays bounded."""

import socket
import time

LIMIT_DEFAULT = b"normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"


def config_get(conn):
    return conn.call("CONFIG", "GET", "client-output-buffer-limit").value[1][1]


def test_config_matches_redis(blinkdb, oracle):
    for srv in (blinkdb, oracle):
        with srv.connect() as c:
            assert config_get(c) == LIMIT_DEFAULT
            assert c.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 512kb 5").raw == b"+OK\r\n"
            assert config_get(c) == b"normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 5"
    for bad in ("pubsub 1 2", "master 1 2 3", "pubsub x 2 3", "pubsub 1 2 -1"):
        with blinkdb.connect() as ours, oracle.connect() as ref:
            mine = ours.call("CONFIG", "SET", "client-output-buffer-limit", bad).raw
            theirs = ref.call("CONFIG", "SET", "client-output-buffer-limit", bad).raw
            assert mine == theirs, bad


def test_non_reading_subscriber_is_dropped(server_factory):
    srv = server_factory("--client-output-buffer-limit", "pubsub 4mb 1mb 2")
    sub = srv.connect()
    sub.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sub.call("SUBSCRIBE", "flood")
    rss_before = srv.rss_kb()
    payload = "x" * 4096
    with srv.connect() as pub:
        deadline = time.time() + 30
        receivers = 1
        while receivers and time.time() < deadline:
            replies = pub.pipeline([("PUBLISH", "flood", payload)] * 256)
            receivers = replies[-1].value
        # The subscriber was dropped: nobody listens any more.
        assert receivers == 0, "subscriber never dropped"
        assert pub.call("PUBSUB", "NUMSUB", "flood").value[1][1] == 0
        # Publishing on keeps the server's memory flat (nothing queues for anyone).
        for _ in range(50):
            pub.pipeline([("PUBLISH", "flood", payload)] * 256)
        assert pub.call("PING").raw == b"+PONG\r\n"
    assert srv.rss_kb() - rss_before < 64 * 1024, "server memory grew with a dead subscriber"
    assert "overcoming of output buffer limits" in srv.log_text()
    sub.close()


def test_soft_limit_needs_its_seconds(server_factory):
    # No hard limit: only staying over the soft one for more than a second drops it.
    srv = server_factory("--client-output-buffer-limit", "pubsub 0 256kb 1")
    sub = srv.connect()
    sub.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sub.call("SUBSCRIBE", "slow")
    with srv.connect() as pub:
        start = time.time()
        receivers = 1
        while receivers and time.time() - start < 20:
            receivers = pub.pipeline([("PUBLISH", "slow", "y" * 8192)] * 16)[-1].value
            time.sleep(0.01)
        assert receivers == 0, "subscriber over the soft limit never dropped"
        assert time.time() - start > 1.0
    sub.close()


def test_reading_subscriber_is_kept(server_factory):
    srv = server_factory("--client-output-buffer-limit", "pubsub 1mb 0 0")
    with srv.connect() as sub, srv.connect() as pub:
        sub.call("SUBSCRIBE", "ok")
        for _ in range(20):
            pub.pipeline([("PUBLISH", "ok", "m" * 1000)] * 100)
            for _ in range(100):
                assert sub.read_reply().value[0][1] == b"message"
        assert pub.call("PUBSUB", "NUMSUB", "ok").value[1][1] == 1
