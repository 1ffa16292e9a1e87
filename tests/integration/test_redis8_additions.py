"""The small Redis 7.2-7.4 additions clients send (issue 43), reply for reply against
redis-server 8.0.2 in RESP2 and RESP3: ZRANK/ZREVRANK ... WITHSCORE, HSCAN ... NOVALUES (and
the error SSCAN/ZSCAN give it), with their errors; their COMMAND INFO entries are 8.0's."""

import pytest

from peer_servers import start_peer
from test_introspection import py

CASES = [
    ("ZADD", "z", 1, "a", "2.5", "b", "inf", "c"),
    ("ZRANK", "z", "b"),
    ("ZRANK", "z", "b", "WITHSCORE"),
    ("ZRANK", "z", "c", "withscore"),
    ("ZREVRANK", "z", "a", "WITHSCORE"),
    ("ZREVRANK", "z", "a"),
    ("ZRANK", "z", "nosuch", "WITHSCORE"),
    ("ZRANK", "z", "nosuch"),
    ("ZRANK", "nokey", "a", "WITHSCORE"),
    ("ZREVRANK", "nokey", "a", "WITHSCORE"),
    ("ZRANK", "z", "a", "WITHSCORES"),
    ("ZRANK", "z", "a", "WITHSCORE", "extra"),
    ("ZREVRANK", "z", "a", "WITHSCORE", "extra"),
    ("SET", "str", "x"),
    ("ZRANK", "str", "a", "WITHSCORE"),
    ("ZRANK", "str", "a", "bad"),
    ("HSET", "h", "f1", "v1", "f2", "v2", "f3", 3),
    ("HSCAN", "h", 0, "NOVALUES"),
    ("HSCAN", "h", 0, "novalues", "COUNT", 100),
    ("HSCAN", "h", 0, "MATCH", "f[12]", "NOVALUES"),
    ("HSCAN", "h", 0),
    ("HSCAN", "nokey", 0, "NOVALUES"),
    ("HSCAN", "h", 0, "NOVALUES", "COUNT"),
    ("SADD", "s", "a", "b"),
    ("SSCAN", "s", 0, "NOVALUES"),
    ("SSCAN", "nokey", 0, "NOVALUES"),
    ("ZSCAN", "z", 0, "NOVALUES"),
    ("ZSCAN", "nokey", 0, "NOVALUES"),
]


@pytest.fixture
def redis8(tmp_path):
    started = []
    yield start_peer(started, "redis", tmp_path / "redis8")
    for srv in started:
        srv.stop()


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_redis8(blinkdb, redis8, proto):
    with blinkdb.connect() as ours, redis8.connect() as theirs:
        if proto == 3:
            ours.call("HELLO", "3")
            theirs.call("HELLO", "3")
        for cmd in CASES:
            # (A small hash scans in insertion order on both.)
            a, b = ours.call(*cmd), theirs.call(*cmd)
            assert a.raw == b.raw, (cmd, a.raw, b.raw)


def test_command_info_is_redis8s(blinkdb, redis8):
    with blinkdb.connect() as ours, redis8.connect() as theirs:
        for name in ("zrank", "zrevrank", "hscan"):
            a = ours.call("COMMAND", "INFO", name).raw
            b = theirs.call("COMMAND", "INFO", name).raw
            assert a == b, (name, a, b)
            # The arguments and the history Redis 8.0 documents.
            da = py(ours.call("COMMAND", "DOCS", name))
            db = py(theirs.call("COMMAND", "DOCS", name))
            fa, fb = dict(zip(da[1][0::2], da[1][1::2])), dict(zip(db[1][0::2], db[1][1::2]))
            # (7.2+ gives every argument a display_text, 7.0 and BlinkDB none.)
            def args(d):
                return [[x for i, x in enumerate(a) if not (a[i - (i % 2)] == "display_text")]
                        for a in d["arguments"]]
            assert args(fa) == args(fb), name
            assert fa.get("history") == fb.get("history"), name
