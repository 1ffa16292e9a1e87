"""BF.DEBUG, BF.INFO Size and growth as RedisBloom 2.8 reports them (issue 45), side by side
with redis-server + RedisBloom: the same sub-filters (capacity, error, RedisBloom's bytes,
bits and hashes for them), the same Size, and BF.DEBUG's errors. Only the items counted
into each sub-filter may differ, where an add met a false positive on one server and not
on the other (the bit layouts differ: BlinkDB's lines are blocked and checksummed)."""

import re

from bloom_support import start_blinkdb, start_oracle
from resp import plain

# (BF.RESERVE arguments, items added): the flow tests' shapes and a few more.
SCENARIOS = [
    (["0.01", "10"], 100),  # test_debug
    (["0.001", "100"], 4000),  # test_debug
    (["0.001", "100"], 0),  # test_info_size: Size 296
    (["0.01", "4", "EXPANSION", "1"], 60),
    (["0.01", "4", "EXPANSION", "4"], 100),
    (["0.05", "1000"], 3),
    (["0.1", "3", "NONSCALING"], 3),  # test_nonscaling_err shape: Size 104 at 0.01
    (["0.01", "3", "NONSCALING"], 3),
    (["0.5", "7", "EXPANSION", "3"], 500),
    (["0.000001", "1000"], 2500),
]

SIZE_FIELD = re.compile(rb" size:\d+ ")


def value(reply):
    if reply.is_error():
        return ("error", reply.value)
    return plain((reply.kind, reply.value))


def fill(conn, key, args, count):
    assert value(conn.call("BF.RESERVE", key, *args)) == b"OK"
    for start in range(0, count, 500):
        conn.call("BF.MADD", key, *[str(i) for i in range(start, min(count, start + 500))])


def test_debug_and_info_are_redisbloom_s(blinkdb_binary, tmp_path):
    oracle = start_oracle(str(tmp_path / "oracle"))
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        a, b = ours.connect(), oracle.connect()
        for n, (args, count) in enumerate(SCENARIOS):
            key = f"bf{n}"
            for conn in (a, b):
                fill(conn, key, args, count)
            mine, theirs = value(a.call("BF.DEBUG", key)), value(b.call("BF.DEBUG", key))
            # Every line but the item counts, which follow each server's false positives; a
            # chain that counted fewer items may have fewer sub-filters, each as the other's.
            strip = lambda lines: [SIZE_FIELD.sub(b" size:- ", x) for x in lines[1:]]  # noqa: E731
            shorter = min(len(mine), len(theirs)) - 1
            assert strip(mine)[:shorter] == strip(theirs)[:shorter], (args, mine, theirs)
            # size:N is the sum of the sub-filters' items, and BF.CARD.
            total = sum(int(re.search(rb" size:(\d+) ", x).group(1)) for x in mine[1:])
            assert mine[0] == b"size:%d" % total == b"size:%d" % value(a.call("BF.CARD", key))
            info_a, info_b = value(a.call("BF.INFO", key)), value(b.call("BF.INFO", key))
            if len(mine) == len(theirs):
                # The same sub-filters: the same Capacity and Size.
                items = info_a.index(b"Number of items inserted") + 1
                assert info_a[:items] + info_a[items + 1:] == \
                    info_b[:items] + info_b[items + 1:], (args, info_a, info_b)
                for field in ("SIZE", "CAPACITY", "FILTERS"):
                    assert value(a.call("BF.INFO", key, field)) == \
                        value(b.call("BF.INFO", key, field))
            else:
                assert info_a[7] != info_b[7], (args, info_a, info_b)  # the items counted
        # Few items in large filters meet no false positive on either server: whole replies.
        for n in (2, 5, 7):
            assert value(a.call("BF.DEBUG", f"bf{n}")) == value(b.call("BF.DEBUG", f"bf{n}"))
        # Errors: arity, missing key, wrong type.
        a.call("SET", "str", "x")
        b.call("SET", "str", "x")
        for cmd in (["BF.DEBUG"], ["BF.DEBUG", "bf0", "extra"], ["BF.DEBUG", "missing"],
                    ["BF.DEBUG", "str"]):
            x, y = value(a.call(*cmd)), value(b.call(*cmd))
            assert x == y and x[0] == "error", (cmd, x, y)
        # RESP3: still an array of bulk strings.
        for conn in (a, b):
            conn.call("HELLO", "3")
        x, y = a.call("BF.DEBUG", "bf2"), b.call("BF.DEBUG", "bf2")
        assert x.raw == y.raw, (x.raw, y.raw)
    finally:
        ours.stop()
        oracle.stop()


def test_bf_max_memory_defaults_to_no_cap_of_its_own(blinkdb_binary, tmp_path):
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        c = ours.connect()
        assert value(c.call("CONFIG", "GET", "bf-max-memory")) == [b"bf-max-memory", b"0"]
        # An explicit cap still refuses, before anything is allocated.
        assert value(c.call("CONFIG", "SET", "bf-max-memory", "4096")) == b"OK"
        err = value(c.call("BF.RESERVE", "big", "0.01", "100000"))
        assert err[0] == "error" and b"over bf-max-memory 4096" in err[1], err
        assert value(c.call("EXISTS", "big")) == 0
    finally:
        ours.stop()
