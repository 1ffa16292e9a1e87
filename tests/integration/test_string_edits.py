"""APPEND and SETRANGE change a string in place (the key keeps its TTL, WATCH
sees the change, a large string is not copied per call), side by side with
redis-server: the same replies, values and TTLs."""

import pytest

from resp import RespConnection

CASES = [
    ("SET", "t", "hello", "EX", "1000"),
    ("APPEND", "t", "world"),
    ("SETRANGE", "t", "20", "X"),
    ("SETRANGE", "t", "0", "J"),
    ("SETRANGE", "t", "3", ""),
    ("GET", "t"),
    ("STRLEN", "t"),
    ("SET", "n", "12"),
    ("APPEND", "n", "3"),
    ("INCR", "n"),
    ("GET", "n"),
    ("SETRANGE", "n", "536870912", "x"),
    ("APPEND", "missing", "abc"),
    ("SETRANGE", "missing2", "5", "abc"),
    ("GET", "missing2"),
    ("LPUSH", "l", "a"),
    ("APPEND", "l", "x"),
    ("SETRANGE", "l", "0", "x"),
]


def test_replies_and_ttl_as_redis(servers):
    got = {}
    for name, srv in servers.items():
        with srv.connect() as c:
            c.call("FLUSHALL")
            replies = [repr(c.call(*cmd)) for cmd in CASES]
            ttl = c.call("TTL", "t").value
            got[name] = (replies, 990 <= ttl <= 1000)
    assert got["blinkdb"] == got["redis"]
    assert got["blinkdb"][1], "APPEND and SETRANGE keep the key's TTL"


@pytest.mark.parametrize("cmd", [("APPEND", "w", "x"), ("SETRANGE", "w", "1", "y")])
def test_watch_sees_an_edit_in_place(blinkdb, cmd):
    with blinkdb.connect() as c, blinkdb.connect() as other:
        c.call("SET", "w", "abc")
        c.call("WATCH", "w")
        other.call(*cmd)
        c.call("MULTI")
        c.call("GET", "w")
        assert c.call("EXEC").value is None, "the edited key aborts the transaction"


def info(c, section):
    text = c.call("INFO", section).value.decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def test_a_large_string_grows_without_copies(blinkdb):
    """10,000 APPENDs of 1 KB to one string: with a copy per call (before) the
    server copied ~50 GB, over 10 s of CPU; in place it copies what it stores
    once. Server CPU time (not wall time) with a 10x margin, so load on the
    machine does not matter."""
    chunk = b"a" * 1024
    with blinkdb.connect() as c:
        c.call("DEL", "big")
        cpu = info(c, "cpu")
        before = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
        for _ in range(20):
            for _ in range(500):
                c.send("APPEND", "big", chunk)
            for _ in range(500):
                c.read_reply()
        cpu = info(c, "cpu")
        spent = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]) - before
        assert c.call("STRLEN", "big").value == 10_000 * 1024
        assert c.call("GETRANGE", "big", "-3", "-1").value == b"aaa"
        assert spent < 1.5, f"{spent:.2f} s of server CPU for 10,000 APPENDs"
        used = int(info(c, "memory")["used_memory"])
        # Redis's greedy growth: at most 1 MB of room past the 10 MB value.
        assert used < 10_000 * 1024 + (1 << 20) + 8 * (1 << 20)
