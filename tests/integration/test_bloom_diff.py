"""Randomized BF.* command sequences sent to RedisBloom 2.8 and to BlinkDB; the
replies must be identical. Sub-filters up to 64 KiB of RedisBloom bits (every filter
here) use RedisBloom's bit layout and hash, so even false positives, the item counts
they leave and the growth they cause are RedisBloom's (docs/bloom-file-format.md)."""

import os
import random

from bloom_support import differing_replies, side_by_side, start_blinkdb, start_oracle

SEEDS = [int(s) for s in os.environ.get("BLINKDB_BF_SEEDS", "1,2,3").split(",")]
KEYS = ["bf:a", "bf:b", "bf:c", "str"]


def random_command(rng, items):
    key = rng.choice(KEYS)
    pick = lambda: rng.choice(items)  # noqa: E731
    kind = rng.randrange(14)
    if kind == 0:
        opts = rng.choice([[], ["NONSCALING"], ["EXPANSION", str(rng.choice([0, 1, 1, 2, 4]))],
                           ["EXPANSION"], ["EXPANSION", "x"], ["NONSCALING", "EXPANSION", "2"]])
        return ["BF.RESERVE", key, rng.choice(["0.01", "0.1", "0", "1", "x", "0.001"]),
                rng.choice(["1", "3", "5", "20", "100", "0", "-1", "x"])] + opts
    if kind in (1, 2, 3):
        return ["BF.ADD", key, pick()]
    if kind in (4, 5):
        return ["BF.MADD", key] + [pick() for _ in range(rng.randrange(1, 6))]
    if kind in (6, 7):
        return ["BF.EXISTS", key, pick()]
    if kind == 8:
        return ["BF.MEXISTS", key] + [pick() for _ in range(rng.randrange(1, 6))]
    if kind == 9:
        opts = []
        for word, values in (("CAPACITY", ["10", "0", "x"]), ("ERROR", ["0.01", "2", "x"]),
                             ("EXPANSION", ["2", "0"]), ("NOCREATE", None), ("NONSCALING", None)):
            if rng.random() < 0.2:
                opts += [word] + ([rng.choice(values)] if values else [])
        if rng.random() < 0.05:
            opts.append("BOGUS")
        return ["BF.INSERT", key] + opts + ["ITEMS"] + [pick() for _ in range(rng.randrange(0, 5))]
    if kind == 10:
        return ["BF.INFO", key] + rng.choice([[], ["CAPACITY"], ["ITEMS"], ["FILTERS"],
                                              ["EXPANSION"], ["SIZE"], ["nope"], ["ITEMS", "x"]])
    if kind == 11:
        return rng.choice([["BF.CARD", key], ["BF.DEBUG", key], ["BF.DEBUG", key, "x"]])
    if kind == 12:
        return rng.choice([["DEL", key], ["TYPE", key], ["EXISTS", key], ["SET", "str", "v"],
                           ["GET", key], ["BF.ADD"], ["BF.EXISTS", key], ["BF.CARD"]])
    return ["BF.SCANDUMP", key, rng.choice(["x", "-1", "999999"])]


def plain_reply(r):
    from resp import plain
    if r.is_error():
        return ("error", r.value)
    return plain((r.kind, r.value))


def test_bf_commands_match_redisbloom(blinkdb_binary, tmp_path):
    oracle = start_oracle(str(tmp_path / "oracle"))
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        a, b = ours.connect(), oracle.connect()
        mismatches = []
        for seed in SEEDS:
            rng = random.Random(seed)
            items = [f"item{i}" for i in range(60)]
            for conn in (a, b):
                conn.call("FLUSHALL")
            for _ in range(1500):
                cmd = random_command(rng, items)
                x, y = plain_reply(a.call(*cmd)), plain_reply(b.call(*cmd))
                if x != y:
                    mismatches.append((seed, cmd, x, y))
        assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:5]}"
    finally:
        ours.stop()
        oracle.stop()


def test_scandump_loadchunk_round_trip(blinkdb_binary, tmp_path):
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        c = ours.connect()
        c.call("BF.RESERVE", "src", "0.01", "1000")
        c.call("BF.MADD", "src", *[f"i{i}" for i in range(3000)])
        chunks, cursor = [], 0
        while True:
            cursor, data = plain_reply(c.call("BF.SCANDUMP", "src", cursor))
            if cursor == 0:
                break
            chunks.append((cursor, data))
        for cur, data in chunks:
            assert plain_reply(c.call("BF.LOADCHUNK", "dst", cur, data)) == b"OK"
        found = plain_reply(c.call("BF.MEXISTS", "dst", *[f"i{i}" for i in range(3000)]))
        assert all(found)
        assert plain_reply(c.call("BF.CARD", "dst")) == plain_reply(c.call("BF.CARD", "src"))
        assert plain_reply(c.call("BF.INFO", "dst")) == plain_reply(c.call("BF.INFO", "src"))
    finally:
        ours.stop()


# (error rate, capacity, EXPANSION, adds): tiny links where RedisBloom's probes repeat
# and false positives are frequent, and chains that grow to many sub-filters.
SCALING = [("0.01", 4, 1, 100), ("0.01", 1, 1, 60), ("0.1", 2, 1, 80), ("0.001", 3, 1, 80),
           ("0.01", 10, 2, 3000), ("0.001", 100, 2, 4000), ("0.1", 1, 2, 2000),
           ("0.05", 3, 4, 3000), ("0.01", 5, 3, 2500)]


def scaling_stream(rate, capacity, expansion, adds, proto):
    items = [f"k{i}" for i in range(adds)]
    yield proto, ["BF.RESERVE", "bf", rate, str(capacity), "EXPANSION", str(expansion)]
    for at in range(0, adds, 50):
        # Every tenth item again: "present" answers are compared too.
        yield proto, ["BF.MADD", "bf"] + items[at:at + 50] + items[at:at + 50:10]
        yield proto, ["BF.ADD", "bf", f"k{at}"]
        yield proto, ["BF.INFO", "bf"]
    yield proto, ["BF.DEBUG", "bf"]
    yield proto, ["BF.CARD", "bf"]
    for at in range(0, 3 * adds, 200):
        yield proto, ["BF.MEXISTS", "bf"] + [f"k{i}" for i in range(at, at + 200)]
    yield proto, ["BF.RESERVE", "nb", rate, str(capacity), "NONSCALING"]
    yield proto, ["BF.MADD", "nb"] + items[:capacity + 5]
    yield proto, ["BF.MEXISTS", "nb"] + items[:50]


def test_small_and_scaling_filters_answer_exactly_as_redisbloom(blinkdb_binary, tmp_path):
    """Many adds into tiny and growing filters (EXPANSION 1, 2, 3, 4): every reply,
    false positives, BF.INFO, BF.DEBUG's counts and sub-filter count included, in RESP2
    and RESP3; then the filter DUMPed by BlinkDB and RESTOREd into redis-server answers
    as the oracle's own."""
    def dump_to_oracle(a, b):
        out = []
        restored = b.call("RESTORE", "copy", "0", a.call("DUMP", "bf").value)
        if restored.is_error():
            return [("RESTORE", restored.value)]
        for cmd in (["BF.DEBUG", "bf"], ["BF.MEXISTS", "bf"] + [f"k{i}" for i in range(600)]):
            mine = b.call(*cmd).raw
            copied = b.call(cmd[0], "copy", *cmd[2:]).raw
            if mine != copied:
                out.append((cmd[:3], copied[:300], mine[:300]))
        return out

    runs = [(f"{shape} RESP{proto}", scaling_stream(*shape, proto))
            for i, shape in enumerate(SCALING) for proto in ((2, 3)[i % 2],)]
    with side_by_side(blinkdb_binary, tmp_path) as (ours, oracle):
        differences, sent = differing_replies(ours, oracle, runs, check=dump_to_oracle)
    assert sent > 1000
    assert not differences, f"{len(differences)} differences, first: {differences[:3]}"
