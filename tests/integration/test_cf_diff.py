"""Randomized CF.* command streams sent to redis-server with RedisBloom 2.8 and
to BlinkDB, in RESP2 and RESP3: every reply must be the same bytes. The
cuckoo filter is RedisBloom's algorithm exactly (same fingerprints, buckets,
kick-out walk and growth), so there is no false-positive slack: CF.EXISTS,
CF.COUNT, CF.INFO, CF.SCANDUMP chunks and DUMP payloads all match.

The streams stay inside what RedisBloom survives: no capacity or header
that would make it allocate gigabytes (it aborts), no header whose
sub-filters would have no bucket (it divides by zero later)."""

import os
import random
import struct

from bloom_support import differing_replies, side_by_side

SEEDS = [int(s) for s in os.environ.get("BLINKDB_CF_SEEDS", "1,2,3").split(",")]
KEYS = ["cf:a", "cf:b", "cf:c", "str"]


def header(rng):
    """A CF.LOADCHUNK header of a small shape, or one RedisBloom refuses."""
    buckets = rng.choice([1, 2, 4, 8, 16, 64, 0, 3])
    return struct.pack("<QQQQHHH", rng.randrange(0, 50), buckets, rng.randrange(0, 5),
                       rng.choice([1, 2, 3, 0, 65537]), rng.choice([1, 2, 4, 0, 256]),
                       rng.choice([1, 20, 0]), rng.choice([1, 2]))


def reserve(rng, key):
    """Mostly small valid filters (so they fill, kick out, grow, compact and reach the
    32-sub-filter limit), sometimes RedisBloom's argument errors."""
    if rng.random() < 0.7:
        cmd = ["CF.RESERVE", key, rng.choice(["4", "8", "10", "16", "64"])]
        for word, values in (("BUCKETSIZE", ["1", "2", "4"]), ("MAXITERATIONS", ["1", "5", "500"]),
                             ("EXPANSION", ["0", "1", "2", "4"])):
            if rng.random() < 0.5:
                cmd += [word, rng.choice(values)]
        if cmd[2] == "4" and "BUCKETSIZE" in cmd and cmd[cmd.index("BUCKETSIZE") + 1] == "4":
            cmd[2] = "8"
        return cmd
    cmd = ["CF.RESERVE", key, rng.choice(["4", "1000", "3", "0", "-1", "x", "7"])]
    for word, values in (("BUCKETSIZE", ["1", "2", "4", "0", "256", "x", "-1"]),
                         ("MAXITERATIONS", ["1", "5", "20", "500", "0", "x", "65536"]),
                         ("EXPANSION", ["0", "1", "2", "3", "4", "x", "-1", "32769"]),
                         ("bogus", ["1"])):
        if rng.random() < 0.3:
            cmd += [rng.choice([word, word.lower()]), rng.choice(values)]
    if rng.random() < 0.03:
        cmd.append("EXPANSION")  # an even count: wrong arity
    return cmd


def insert(rng, key, pick):
    cmd = [rng.choice(["CF.INSERT", "CF.INSERTNX", "cf.insert"]), key]
    for _ in range(rng.randrange(0, 3)):
        r = rng.random()
        if r < 0.4:
            cmd += [rng.choice(["CAPACITY", "cap", "c"]),
                    rng.choice(["4", "10", "100", "3", "x", "-1"])]
        elif r < 0.8:
            cmd.append(rng.choice(["NOCREATE", "nope"]))
        else:
            cmd.append(rng.choice(["BOGUS", ""]))
    if rng.random() < 0.95:
        cmd.append(rng.choice(["ITEMS", "items", "i"]))
    return cmd + [pick() for _ in range(rng.randrange(0, 6))]


def random_command(rng, items):
    key = rng.choice(KEYS)
    pick = lambda: rng.choice(items)  # noqa: E731
    kind = rng.randrange(22)
    if kind in (0, 20):
        return reserve(rng, key)
    if kind == 21:
        return ["DEL", key] if rng.random() < 0.3 else ["CF.INSERT", key, "ITEMS"] + \
            [pick() for _ in range(rng.randrange(1, 40))]
    if kind in (1, 2, 3, 4):
        return ["CF.ADD", key, pick()]
    if kind == 5:
        return ["CF.ADDNX", key, pick()]
    if kind == 6:
        return insert(rng, key, pick)
    if kind in (7, 8):
        return ["CF.EXISTS", key, pick()]
    if kind == 9:
        return ["CF.MEXISTS", key] + [pick() for _ in range(rng.randrange(0, 5))]
    if kind == 10:
        return ["CF.COUNT", key, pick()]
    if kind in (11, 12):
        return ["CF.DEL", key, pick()]
    if kind == 13:
        return rng.choice([["CF.COMPACT", key], ["CF.COMPACT"], ["CF.COMPACT", key, "x"]])
    if kind == 14:
        return rng.choice([["CF.INFO", key], ["CF.DEBUG", key], ["CF.INFO"], ["CF.DEBUG", key, "x"]])
    if kind == 15:
        return ["CF.SCANDUMP", key, rng.choice(["0", "1", "2", "5", "9", "17", "x", "-1", "999999"])]
    if kind == 16:
        pos = rng.choice(["1", "1", "2", "5", "9", "17", "33", "0", "-3", "x"])
        data = header(rng) if pos == "1" and rng.random() < 0.7 else \
            bytes(rng.randrange(256) for _ in range(rng.randrange(0, 20)))
        return ["CF.LOADCHUNK", key, pos, data]
    if kind == 17:
        return ["DUMP", key]
    if kind == 18:
        return rng.choice([["TYPE", key], ["OBJECT", "ENCODING", key], ["EXISTS", key]])
    return rng.choice([["DEL", key], ["SET", "str", "v"], ["CF.ADD"], ["CF.ADD", key],
                       ["CF.EXISTS", key], ["CF.COUNT", key, "a", "b"], ["CF.INSERT", key],
                       ["CF.SCANDUMP", key], ["CF.LOADCHUNK", key, "1"], ["CF.RESERVE", key]])


def directed(items):
    """Paths random streams reach rarely: one command growing past the 32-sub-filter limit
    (checked only before it starts), the limit's error, deletes compacting many
    sub-filters, CF.COMPACT, then SCANDUMP across them."""
    many = items[:200]
    cmds = [["CF.RESERVE", "cf:b", "4", "BUCKETSIZE", "1"], ["CF.INSERT", "cf:b", "ITEMS", *many],
            ["CF.ADD", "cf:b", "one-more"], ["CF.DEBUG", "cf:b"]]
    cmds += [["CF.DEL", "cf:b", item] for item in many[:150]]
    cmds += [["CF.DEBUG", "cf:b"], ["CF.COMPACT", "cf:b"], ["CF.INFO", "cf:b"],
             ["CF.MEXISTS", "cf:b", *many]]
    cmds += [["CF.SCANDUMP", "cf:b", str(pos)] for pos in range(0, 200, 7)]
    return cmds + [["DEL", "cf:b"]]


def scandump(conn, key):
    chunks, pos = [], 0
    while True:
        reply = conn.call("CF.SCANDUMP", key, pos)
        if reply.is_error():
            return reply.raw
        pos = reply.value[0][1]
        if pos == 0:
            return chunks
        chunks.append((pos, reply.value[1][1]))


def test_cf_commands_match_redisbloom(blinkdb_binary, tmp_path):
    def stream(seed, proto):
        rng = random.Random(seed * 10 + proto)
        items = [f"item{i}" for i in range(rng.choice([30, 300, 3000]))]
        for cmd in directed([f"d{i}" for i in range(300)]):
            yield proto, cmd
        for _ in range(1500):
            yield proto, random_command(rng, items)

    def same_dumps(a, b):
        return [("SCANDUMP", key) for key in KEYS if scandump(a, key) != scandump(b, key)]

    runs = (((proto, seed), stream(seed, proto)) for proto in (2, 3) for seed in SEEDS)
    with side_by_side(blinkdb_binary, tmp_path) as (ours, oracle):
        mismatches, sent = differing_replies(ours, oracle, runs, check=same_dumps)
    assert not mismatches, f"{len(mismatches)} of {sent} differ, first: {mismatches[:5]}"
