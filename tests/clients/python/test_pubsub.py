"""redis-py 8 pub/sub, in both protocols: pubsub() with get_message and run_in_thread."""

import threading
import time

import pytest
import redis

from conftest import HOST, PORT

PREFIX = "clients:py:pubsub:"


@pytest.fixture(params=["default", "protocol2"])
def r(request):
    kwargs = {} if request.param == "default" else {"protocol": 2}
    client = redis.Redis(host=HOST, port=PORT, **kwargs)
    yield client
    client.close()


def next_message(ps, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = ps.get_message(ignore_subscribe_messages=True, timeout=0.2)
        if m is not None:
            return m
    pytest.fail("no message arrived")


def test_get_message_channels_and_patterns(r):
    ps = r.pubsub()
    ch = PREFIX + "news"
    ps.subscribe(ch)
    ps.psubscribe(PREFIX + "n*")
    # Wait for both confirmations before publishing.
    confirmations = []
    while len(confirmations) < 2:
        m = ps.get_message(timeout=2.0)
        assert m is not None
        confirmations.append(m["type"])
    assert confirmations == ["subscribe", "psubscribe"]
    assert r.publish(ch, "hello") == 2
    got = [(m["type"], m["data"]) for m in (next_message(ps), next_message(ps))]
    assert sorted(t for t, _ in got) == ["message", "pmessage"]
    assert all(d == b"hello" for _, d in got)
    assert r.pubsub_numsub(ch) == [(ch.encode(), 1)]
    assert r.pubsub_numpat() >= 1
    ps.unsubscribe()
    ps.punsubscribe()
    ps.close()
    deadline = time.time() + 5
    while r.pubsub_numsub(ch) != [(ch.encode(), 0)] and time.time() < deadline:
        time.sleep(0.05)
    assert r.pubsub_numsub(ch) == [(ch.encode(), 0)]


def test_run_in_thread_handler_gets_messages_in_order(r):
    received = []
    done = threading.Event()

    def handler(message):
        received.append(message["data"])
        if len(received) == 100:
            done.set()

    ps = r.pubsub()
    ch = PREFIX + "worker"
    ps.subscribe(**{ch: handler})
    thread = ps.run_in_thread(sleep_time=0.01, daemon=True)
    deadline = time.time() + 5
    while r.pubsub_numsub(ch)[0][1] == 0 and time.time() < deadline:
        time.sleep(0.01)
    for i in range(100):
        r.publish(ch, str(i))
    assert done.wait(10)
    assert received == [str(i).encode() for i in range(100)]
    thread.stop()
    thread.join(5)
    ps.close()


def test_sharded_pubsub(r):
    ps = r.pubsub()
    ch = PREFIX + "shard"
    ps.ssubscribe(ch)
    assert ps.get_sharded_message(timeout=2.0)["type"] == "ssubscribe"
    assert r.spublish(ch, "s") == 1
    deadline = time.time() + 5
    m = None
    while m is None and time.time() < deadline:
        m = ps.get_sharded_message(ignore_subscribe_messages=True, timeout=0.2)
    assert m is not None and m["type"] == "smessage" and m["data"] == b"s"
    ps.close()
