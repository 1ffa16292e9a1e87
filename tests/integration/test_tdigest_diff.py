"""Randomized TDIGEST.* command streams sent to redis-server with RedisBloom 2.8.2
and to BlinkDB, over RESP2 and RESP3: every reply must be the same bytes (the
doubles are t-digest-c's, formatted as Redis formats them; errors are RedisBloom's
texts). Streams include bad arguments, wrong types, missing keys, merges between
digests of different compressions, DUMP (RedisBloom compresses the digest in place:
its payload bytes and every later answer show whether BlinkDB did the same), and
enough samples to fill the buffers many times over, so compressions happen at the
same moments on both sides."""

import os
import random

from bloom_support import differing_replies, side_by_side

SEEDS = [int(s) for s in os.environ.get("BLINKDB_TD_SEEDS", "1,2,3").split(",")]
STEPS = int(os.environ.get("BLINKDB_TD_STEPS", "1200"))
KEYS = ["td:a", "td:b", "td:c", "td:d", "str", "nokey"]
DIGESTS = KEYS[:4]
BAD_DOUBLES = ["x", "nan", "", " 1", "1 ", "1e400", "1e-400", "0x1p3", "inf", "-inf", "+1.5",
               "1.5e", "--1"]


def sample(rng, dist):
    if dist == 0:
        return repr(rng.random())
    if dist == 1:
        return repr(rng.gauss(100, 15))
    if dist == 2:
        return str(rng.randrange(-5, 6))  # many equal values
    if dist == 3:
        return rng.choice(["0", "-0", "0.0", "-0.0", "1e-310", "-1e308", "1e308", "0x10"])
    return repr(rng.expovariate(0.01) * rng.choice([1, -1]))


def values(rng, n):
    dist = rng.randrange(5)
    out = [sample(rng, dist) for _ in range(n)]
    if rng.random() < 0.04:
        out[rng.randrange(n)] = rng.choice(BAD_DOUBLES)
    return out


def quantiles(rng):
    qs = [rng.choice([repr(rng.random()), "0", "1", "0.5", "0.99", "0.01", "1e-9"])
          for _ in range(rng.randrange(1, 6))]
    if rng.random() < 0.3:
        qs.sort()
    if rng.random() < 0.05:
        qs.append(rng.choice(["-0.1", "1.1", "x", "inf"]))
    return qs


def points(rng):
    pts = [rng.choice([repr(rng.gauss(50, 60)), str(rng.randrange(-6, 7)), "-1e308", "1e308",
                       "inf", "-inf", repr(rng.random())]) for _ in range(rng.randrange(1, 6))]
    if rng.random() < 0.05:
        pts.append(rng.choice(["x", "nan"]))
    return pts


def ranks(rng):
    rs = [rng.choice([str(rng.randrange(0, 50)), str(rng.randrange(0, 3000)), "0",
                      "9223372036854775807"]) for _ in range(rng.randrange(1, 5))]
    if rng.random() < 0.05:
        rs.append(rng.choice(["-1", "x", "1.5", "+1", "01"]))
    return rs


def compression(rng):
    return rng.choice(["10", "50", "100", "100", "200", "500", "1", "0", "-1", "x", "1.5"])


def random_command(rng):
    key = rng.choice(DIGESTS) if rng.random() < 0.85 else rng.choice(KEYS)
    kind = rng.randrange(20)
    if kind == 0:
        return rng.choice([["TDIGEST.CREATE", key],
                           ["TDIGEST.CREATE", key, "COMPRESSION", compression(rng)],
                           ["TDIGEST.CREATE", key, "compression", compression(rng)],
                           ["TDIGEST.CREATE", key, compression(rng), "COMPRESSION"],
                           ["TDIGEST.CREATE", key, "BOGUS", "100"],
                           ["TDIGEST.CREATE", key, "COMPRESSION"]])
    if kind in (1, 2, 3, 4, 5):
        n = rng.choice([1, 1, 2, 5, 20, 100, 400])
        return ["TDIGEST.ADD", key] + values(rng, n)
    if kind == 6:
        nk = rng.choice([1, 2, 3])
        srcs = [rng.choice(KEYS) for _ in range(nk)]
        numkeys = rng.choice([str(nk)] * 8 + ["0", "-1", "x", str(nk + 3)])
        opts = rng.choice([[], [], ["OVERRIDE"], ["COMPRESSION", compression(rng)],
                           ["COMPRESSION", compression(rng), "OVERRIDE"], ["override"],
                           ["COMPRESSION"], ["BOGUS"], ["OVERRIDE", "junk"]])
        return ["TDIGEST.MERGE", rng.choice(KEYS[:5] + ["td:new"]), numkeys] + srcs + opts
    if kind == 7:
        return [rng.choice(["TDIGEST.MIN", "TDIGEST.MAX"]), key]
    if kind in (8, 9):
        return ["TDIGEST.QUANTILE", key] + quantiles(rng)
    if kind == 10:
        return ["TDIGEST.CDF", key] + points(rng)
    if kind == 11:
        lo, hi = sorted([rng.random(), rng.random()])
        pair = rng.choice([[repr(lo), repr(hi)], ["0", "1"], ["0.1", "0.9"], ["0.5", "0.5"],
                           [repr(hi), repr(lo)], ["-0.1", "0.5"], ["x", "1"], ["0", "y"],
                           ["0.25", "0.75"], ["0", "0.0001"]])
        return ["TDIGEST.TRIMMED_MEAN", key] + pair
    if kind in (12, 13):
        return [rng.choice(["TDIGEST.RANK", "TDIGEST.REVRANK"]), key] + points(rng)
    if kind in (14, 15):
        return [rng.choice(["TDIGEST.BYRANK", "TDIGEST.BYREVRANK"]), key] + ranks(rng)
    if kind == 16:
        return ["TDIGEST.INFO", key]
    if kind == 17:
        # DUMP compresses the digest in place in RedisBloom: the payloads and
        # every later answer show whether BlinkDB did the same.
        return rng.choice([["TDIGEST.RESET", key], ["DEL", key], ["TYPE", key],
                           ["SET", "str", "v"], ["EXISTS", key], ["DUMP", key], ["DUMP", key]])
    if kind == 18:
        # Arity errors of every command.
        return rng.choice([["TDIGEST.CREATE"], ["TDIGEST.CREATE", key, "COMPRESSION", "1", "x"],
                           ["TDIGEST.ADD", key], ["TDIGEST.RESET"], ["TDIGEST.RESET", key, "x"],
                           ["TDIGEST.MERGE", key, "1"], ["TDIGEST.MIN"], ["TDIGEST.MAX", key, "x"],
                           ["TDIGEST.QUANTILE", key], ["TDIGEST.CDF", key], ["TDIGEST.RANK", key],
                           ["TDIGEST.BYRANK", key], ["TDIGEST.TRIMMED_MEAN", key, "0.1"],
                           ["TDIGEST.INFO"], ["TDIGEST.INFO", key, "x"]])
    return ["TDIGEST.ADD", key] + [repr(rng.random() * 1000) for _ in range(rng.randrange(1, 30))]


def test_tdigest_commands_match_redisbloom(blinkdb_binary, tmp_path):
    def stream(seed):
        rng = random.Random(seed)
        for _ in range(STEPS):
            cmd = random_command(rng)
            yield 2 + rng.randrange(2), cmd

    with side_by_side(blinkdb_binary, tmp_path) as (ours, oracle):
        mismatches, sent = differing_replies(ours, oracle, ((s, stream(s)) for s in SEEDS))
        # The streams must exercise real answers, not only errors.
        with oracle.connect() as c:
            info = c.call("INFO", "commandstats").raw.decode()
    assert not mismatches, f"{len(mismatches)} of {sent} differ, first: {mismatches[:4]}"
    assert "cmdstat_tdigest.quantile" in info, info
