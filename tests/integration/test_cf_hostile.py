"""Hostile cuckoo-filter input: CF.LOADCHUNK headers and chunks, and RESTORE payloads of
module type `MBbloomCF` built or mutated to lie about their sizes. Each gets an error
(RedisBloom's text where RedisBloom has one), never a crash or an allocation the input does
not pay for: the server's RSS stays small and it answers afterwards."""

import random
import struct

from rdb_helpers import crc64, rdb_len

CHARSET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def module_id(name, encver):
    v = 0
    for c in name.encode():
        v = (v << 6) | CHARSET.index(c)
    return (v << 10) | encver


def rdb_uint(v):
    return b"\x02" + rdb_len(v) if v < 2**32 else b"\x02\x81" + struct.pack(">Q", v)


def payload(body):
    data = body + struct.pack("<H", 10)
    return data + struct.pack("<Q", crc64(data))


def cf_value(nfilters, buckets, items, deletes, bs, mi, exp, subs):
    """A MODULE_2 MBbloomCF value: the header fields, then (sub-buckets, slots) per
    sub-filter, then the module EOF."""
    mid = module_id("MBbloomCF", 4)
    body = b"\x07\x81" + struct.pack(">Q", mid)
    for v in (nfilters, buckets, items, deletes, bs, mi, exp):
        body += rdb_uint(v)
    for sub_buckets, slots in subs:
        body += rdb_uint(sub_buckets) + b"\x05" + rdb_len(len(slots)) + slots
    return body + b"\x00"


def header(items, buckets, deletes, nfilters, bs, mi, exp):
    return struct.pack("<QQQQHHH", items, buckets, deletes, nfilters, bs, mi, exp)


def test_hostile_loadchunk(blinkdb, tmp_path):
    from bloom_support import start_oracle

    redis = start_oracle(str(tmp_path / "redisbloom"))
    try:
        c, o = blinkdb.connect(), redis.connect()
        rss_before = blinkdb.rss_kb()
        # Shapes RedisBloom would abort on (allocation) or divide by zero with later: BlinkDB
        # refuses them with RedisBloom's creation error.
        for h in (header(0, 1 << 40, 0, 1, 2, 20, 1),       # 2 TB of slots
                  header(0, 1 << 20, 0, 40, 2, 20, 32768),  # sub-filters growing 32768x each
                  header(0, 64, 0, 2, 2, 20, 0)):           # a second sub-filter of no bucket
            r = c.call("CF.LOADCHUNK", "k", "1", h)
            assert r.is_error() and r.value == b"Couldn't create filter!", (h, r)
            assert c.call("EXISTS", "k").value == 0
        # Shapes RedisBloom refuses itself: the same replies.
        for h in (header(0, 0, 0, 1, 2, 20, 1), header(0, 48, 0, 1, 2, 20, 1),
                  header(0, 64, 0, 1, 0, 20, 1), header(0, 64, 0, 1, 256, 20, 1),
                  header(0, 64, 0, 1, 2, 0, 1), header(0, 64, 0, 65536, 2, 20, 1), b"short"):
            assert c.call("CF.LOADCHUNK", "k", "1", h).raw == o.call("CF.LOADCHUNK", "k", "1", h).raw
        # A legal shape, then chunks anywhere (RedisBloom takes a position past the last
        # sub-filter's start inside the last one): the same replies and the same bytes.
        for conn in (c, o):
            assert conn.call("CF.LOADCHUNK", "k", "1", header(3, 64, 0, 3, 2, 20, 2)).value == b"OK"
        size = 64 * 2 + 128 * 2 + 256 * 2
        rng = random.Random(7)
        taken = 0
        for _ in range(400):
            pos = rng.choice([rng.randrange(-5, 2 * size + 50), 2**63 - 1, -2**63, size + 1])
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
            ours = c.call("CF.LOADCHUNK", "k", str(pos), data)
            assert ours.raw == o.call("CF.LOADCHUNK", "k", str(pos), data).raw, (pos, len(data))
            taken += ours.value == b"OK"
        assert 20 < taken < 380
        for pos in range(0, size + 10, 5):
            assert c.call("CF.SCANDUMP", "k", pos).raw == o.call("CF.SCANDUMP", "k", pos).raw
        for item in ("x", "y", "z"):
            assert c.call("CF.ADD", "k", item).raw == o.call("CF.ADD", "k", item).raw
        assert c.call("PING").value == b"PONG"
        assert blinkdb.rss_kb() - rss_before < 64 * 1024
    finally:
        redis.stop()


def test_hostile_restore(blinkdb):
    c = blinkdb.connect()
    rss_before = blinkdb.rss_kb()
    good = cf_value(1, 4, 1, 0, 2, 20, 1, [(4, b"\x00" * 8)])
    assert c.call("RESTORE", "ok", "0", payload(good)).value == b"OK"
    assert c.call("CF.DEBUG", "ok").value == \
        b"bktsize:2 buckets:4 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
    lies = [
        cf_value(2**40, 4, 1, 0, 2, 20, 1, [(4, b"\x00" * 8)]),     # sub-filters past the bytes
        cf_value(1, 4, 1, 0, 2, 20, 1, [(4, b"\x00" * 7)]),         # slots short of the buckets
        cf_value(1, 4, 1, 0, 2, 20, 1, [(2**50, b"\x00" * 8)]),     # buckets past the slots
        cf_value(1, 4, 1, 0, 2, 20, 1, [(0, b"")]),                 # no bucket
        cf_value(1, 0, 1, 0, 2, 20, 1, [(4, b"\x00" * 8)]),         # no bucket in the header
        cf_value(1, 4, 1, 0, 0, 20, 1, [(4, b"")]),                 # bucket size 0
        cf_value(1, 4, 1, 0, 2**20, 20, 1, [(4, b"\x00" * 8)]),     # bucket size past 16 bits
        cf_value(0, 4, 1, 0, 2, 20, 1, []),                         # no sub-filter
        cf_value(1, 4, 1, 0, 2, 20, 1, [(4, b"\x00" * 8)])[:-1],    # no module EOF
    ]
    for body in lies:
        r = c.call("RESTORE", "bad", "0", payload(body))
        assert r.is_error() and r.value.startswith(b"ERR Bad data format"), (body, r)
    # Random mutations of a real filter's DUMP: an error or a filter, never a crash.
    c.call("CF.RESERVE", "src", "64", "EXPANSION", "2")
    c.call("CF.INSERT", "src", "ITEMS", *[f"i{i}" for i in range(300)])
    dump = c.call("DUMP", "src").value
    body = bytearray(dump[:-10])
    rng = random.Random(11)
    for i in range(500):
        mutated = bytearray(body)
        for _ in range(rng.randrange(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        r = c.call("RESTORE", f"m{i}", "0", payload(bytes(mutated)))
        if not r.is_error():
            # What loaded answers like any filter.
            for cmd in (("CF.ADD", f"m{i}", "x"), ("CF.EXISTS", f"m{i}", "i1"),
                        ("CF.DEL", f"m{i}", "i2"), ("CF.COMPACT", f"m{i}"),
                        ("CF.SCANDUMP", f"m{i}", "1"), ("CF.INFO", f"m{i}")):
                c.call(*cmd)
    assert c.call("PING").value == b"PONG"
    assert blinkdb.rss_kb() - rss_before < 64 * 1024


def test_sketch_max_memory_caps_one_filter(blinkdb):
    """Where RedisBloom would abort on an allocation it cannot make, BlinkDB refuses past
    sketch-max-memory (a runtime option) with RedisBloom's creation and allocation errors."""
    c = blinkdb.connect()
    assert c.call("CONFIG", "SET", "sketch-max-memory", "1mb").value == b"OK"
    try:
        assert c.call("CF.RESERVE", "big", "10000000").value == b"Couldn't create Cuckoo Filter"
        assert c.call("CF.INSERT", "big", "CAPACITY", "10000000", "ITEMS", "a").value == \
            b"Could not create filter"
        assert c.call("EXISTS", "big").value == 0
        # 128 KB, then 512 KB (EXPANSION 4); the next sub-filter (2 MB) would pass the cap.
        assert c.call("CF.RESERVE", "g", "100000", "EXPANSION", "4").value == b"OK"
        out = c.call("CF.INSERT", "g", "ITEMS", *range(700000)).value
        failed = [v for kind, v in out if kind == b"-"]
        assert failed and set(failed) == {b"Memory allocation failure"}
        assert len(failed) + sum(v == 1 for kind, v in out if kind == b":") == 700000
        assert c.call("CF.ADD", "g", "x").value == b"Memory allocation failure"
        assert b"filters:2 " in c.call("CF.DEBUG", "g").value
        assert c.call("CONFIG", "SET", "sketch-max-memory", "1gb").value == b"OK"
        assert c.call("CF.ADD", "g", "x").value == 1
        assert b"filters:3 " in c.call("CF.DEBUG", "g").value
    finally:
        c.call("CONFIG", "SET", "sketch-max-memory", "1gb")
