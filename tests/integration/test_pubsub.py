"""Pub/Sub against redis-server 7.0: every reply byte for byte, in RESP2 and RESP3."""

import threading
import time

import pytest

# Each step: (connection name, command). Replies of every connection are compared
# in full after each step, so a message that arrives where Redis sends none (or
# the reverse) fails the test.
SCRIPT = [
    ("a", ["SUBSCRIBE", "ch1", "ch2", "ch1"]),
    ("b", ["PUBLISH", "ch1", "hello"]),
    ("b", ["PUBSUB", "NUMSUB", "ch1", "ch2", "nope"]),
    ("b", ["PUBSUB", "CHANNELS", "ch1"]),
    ("a", ["PSUBSCRIBE", "c*", "x?"]),
    ("b", ["PUBLISH", "ch2", "two"]),
    ("b", ["PUBLISH", "xy", "pat"]),
    ("b", ["PUBSUB", "NUMPAT"]),
    ("a", ["PING"]),
    ("a", ["PING", "hi"]),
    ("a", ["GET", "k"]),
    ("a", ["CONFIG", "GET", "maxclients"]),
    # A refused subcommand is named in full, whatever its container
    # (xgroup|create as config|get).
    ("a", ["XGROUP", "CREATE", "s", "g", "$"]),
    ("a", ["XGROUP", "NOPE"]),
    ("a", ["UNSUBSCRIBE", "ch1"]),
    ("a", ["UNSUBSCRIBE", "never"]),
    ("a", ["PUNSUBSCRIBE", "x?"]),
    ("a", ["SSUBSCRIBE", "s1"]),
    ("b", ["SPUBLISH", "s1", "shard"]),
    ("b", ["PUBLISH", "s1", "not-shard"]),
    ("b", ["PUBSUB", "SHARDCHANNELS"]),
    ("b", ["PUBSUB", "SHARDNUMSUB", "s1", "s2"]),
    ("a", ["SUNSUBSCRIBE"]),
    ("a", ["SUNSUBSCRIBE"]),
    ("a", ["PUNSUBSCRIBE"]),
    ("a", ["UNSUBSCRIBE"]),
    ("a", ["UNSUBSCRIBE"]),
    ("a", ["PING"]),
    ("a", ["GET", "k"]),
    ("b", ["PUBSUB", "HELP"]),
    ("b", ["PUBSUB", "NUMPAT", "x"]),
    ("b", ["PUBSUB", "FOO"]),
    ("b", ["PUBSUB", "CHANNELS", "a", "b"]),
    ("b", ["PUBLISH", "x"]),
    ("b", ["SUBSCRIBE"]),
]


def run_script(server, proto):
    conns = {"a": server.connect(), "b": server.connect()}
    transcript = []
    try:
        for c in conns.values():
            c.send(*(["HELLO", "3"] if proto == 3 else ["PING"]))
            c.read_all_available(0.2)
        for name, cmd in SCRIPT:
            conns[name].send(*cmd)
            time.sleep(0.02)
            for who in ("a", "b"):
                data, _ = conns[who].read_all_available(0.1)
                transcript.append((name, cmd, who, data))
    finally:
        for c in conns.values():
            c.close()
    return transcript


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_redis(blinkdb, oracle, proto):
    ours = run_script(blinkdb, proto)
    theirs = run_script(oracle, proto)
    for mine, ref in zip(ours, theirs):
        assert mine == ref


def test_resp3_push_and_reply_on_one_connection(blinkdb):
    with blinkdb.connect() as c:
        c.call("HELLO", "3")
        c.send("SUBSCRIBE", "me")
        assert c.read_reply().raw == b">3\r\n$9\r\nsubscribe\r\n$2\r\nme\r\n:1\r\n"
        # Any command is allowed; a message to ourselves comes before the reply.
        c.send("PUBLISH", "me", "m")
        assert c.read_reply().raw == b">3\r\n$7\r\nmessage\r\n$2\r\nme\r\n$1\r\nm\r\n"
        assert c.read_reply().raw == b":1\r\n"
        assert c.call("SET", "k", "v").raw == b"+OK\r\n"


def test_order_per_publisher_across_threads(server_factory):
    srv = server_factory("--io-threads", "2")
    subs = [srv.connect() for _ in range(4)]
    for s in subs:
        s.call("SUBSCRIBE", "ord")
    n = 2000

    def publish(tag):
        with srv.connect() as p:
            p.pipeline([("PUBLISH", "ord", f"{tag}:{i}") for i in range(n)])

    threads = [threading.Thread(target=publish, args=(t,)) for t in ("p", "q")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in subs:
        seen = {"p": -1, "q": -1}
        for _ in range(2 * n):
            reply = s.read_reply()
            tag, i = reply.value[2][1].decode().split(":")
            assert int(i) == seen[tag] + 1
            seen[tag] = int(i)
        s.close()


def test_reset_and_disconnect_leave_nothing(blinkdb):
    with blinkdb.connect() as a, blinkdb.connect() as b:
        a.send("SUBSCRIBE", "x", "y")
        a.send("PSUBSCRIBE", "p*")
        a.send("SSUBSCRIBE", "s")
        for _ in range(4):
            a.read_reply()
        info = b.call("CLIENT", "LIST", "TYPE", "pubsub").value.decode()
        assert "flags=P" in info and "sub=2 psub=1 ssub=1" in info
        assert a.call("RESET").raw == b"+RESET\r\n"
        assert b.call("PUBSUB", "NUMPAT").value == 0
        assert b.call("PUBSUB", "CHANNELS").value == []
        assert b.call("PUBSUB", "SHARDCHANNELS").value == []
        a.call("SUBSCRIBE", "z")
    with blinkdb.connect() as b:
        deadline = time.time() + 5
        while b.call("PUBSUB", "CHANNELS").value and time.time() < deadline:
            time.sleep(0.05)
        assert b.call("PUBSUB", "CHANNELS").value == []
        assert b.call("PUBLISH", "z", "m").value == 0
