"""TOPK.* against redis-server with RedisBloom 2.8.2, compared as RedisBloom's own
tests compare top-k: exactly where no random decay is drawn, statistically where
it is.

- Sketches made with decay 1 decrement a colliding bucket on every draw (but for
  a 2^-31 chance), so random streams of every command, in RESP2 and RESP3, must
  give the same bytes.
- With decay < 1 RedisBloom draws rand() from a clock-seeded generator: the
  probability that one occurrence decays a bucket of count c (decay^c) is
  measured on both servers and compared, and a skewed stream must find the
  same heavy hitters."""

import math
import os
import random

from bloom_support import differing_replies, side_by_side, start_blinkdb

SEEDS = [int(s) for s in os.environ.get("BLINKDB_TOPK_SEEDS", "1,2,3,4").split(",")]
KEYS = ["topk:a", "topk:b", "topk:c", "str"]
INCRS = ["1", "2", "5", "30", "0", "100000"]
BAD_INCRS = ["-1", "100001", "x", "1.5", "9223372036854775808"]


def random_command(rng, items):
    key = rng.choice(KEYS)
    pick = lambda: rng.choice(items)  # noqa: E731
    kind = rng.randrange(16)
    if kind == 0:
        k = rng.choice(["1", "2", "3", "5", "10"] * 3 + ["0", "-1", "x", "1.5"])
        width = rng.choice(["1", "3", "8", "50"] * 3 + ["0", "x", "4294967296"])
        depth = rng.choice(["1", "3", "5"] * 3 + ["0", "-2", "4294967296"])
        decay = rng.choice(["1"] * 12 + ["0", "1.5", "x", "-0.5"])
        return ["TOPK.RESERVE", key, k, width, depth, decay][:rng.choice([2, 4, 5, 6, 6, 6, 6, 7])]
    if kind == 1:
        # The default decay (0.9) would draw: only on a key nothing is added to.
        return ["TOPK.RESERVE", "topk:dflt", rng.choice(["3", "7", "0", "x"])]
    if kind in (2, 3, 4, 5):
        return ["TOPK.ADD", key] + [pick() for _ in range(rng.randrange(1, 8))]
    if kind in (6, 7):
        cmd = ["TOPK.INCRBY", key]
        for _ in range(rng.randrange(1, 4)):
            cmd += [pick(), rng.choice(INCRS)]
        # RedisBloom stops at a bad increment inside an array it declared whole:
        # only the last pair may be bad here (see test_incrby_bad_pair).
        if rng.random() < 0.1:
            cmd[-1] = rng.choice(BAD_INCRS)
        if rng.random() < 0.03:
            cmd.pop()
        return cmd
    if kind in (8, 9):
        return ["TOPK.QUERY", key] + [pick() for _ in range(rng.randrange(0, 5))]
    if kind in (10, 11):
        return ["TOPK.COUNT", key] + [pick() for _ in range(rng.randrange(0, 5))]
    if kind == 12:
        return ["TOPK.LIST", rng.choice([key, "topk:dflt"])] + rng.choice(
            [[], [], ["WITHCOUNT"], ["withcount"], ["WITH"], [""], ["WITHCOUNTS"], ["x"],
             ["WITHCOUNT", "x"]])
    if kind == 13:
        return ["TOPK.INFO", rng.choice([key, "topk:dflt"])] + rng.choice([[], [], ["x"]])
    return rng.choice([["DEL", key], ["TYPE", key], ["EXISTS", key], ["SET", "str", "v"],
                       ["GET", key], ["TOPK.ADD", key], ["TOPK.LIST"], ["TOPK.INFO"],
                       ["TOPK.QUERY", "topk:dflt", pick()], ["TOPK.COUNT", "topk:dflt", pick()],
                       ["DEL", "topk:dflt"], ["TOPK.INCRBY", key, pick()]])


def items_for(rng):
    # A skewed pool, so that heavy items exist and buckets collide.
    base = [f"i{n}" for n in range(30)] + ["", "a\x00b", "x" * 40]
    return base[:5] * 6 + base


def test_topk_commands_match_redisbloom(blinkdb_binary, tmp_path):
    def stream(seed):
        rng = random.Random(seed)
        items = items_for(rng)
        proto = 3 if seed % 2 == 0 else 2
        for _ in range(2000):
            yield proto, random_command(rng, items)

    with side_by_side(blinkdb_binary, tmp_path) as (ours, oracle):
        mismatches, sent = differing_replies(ours, oracle, ((s, stream(s)) for s in SEEDS))
    assert not mismatches, f"{len(mismatches)} of {sent} differ, first: {mismatches[:5]}"


def decay_rate(server, count, trials, decay):
    """The share of trials where one other item decayed a bucket holding `count`."""
    c = server.connect()
    hits = 0
    batch = 200
    for start in range(0, trials, batch):
        cmds = []
        for t in range(start, min(trials, start + batch)):
            key = f"d{t}"
            cmds += [["TOPK.RESERVE", key, "1", "1", "1", decay],
                     ["TOPK.INCRBY", key, "a", str(count)],
                     ["TOPK.ADD", key, "b"],
                     ["TOPK.COUNT", key, "a"],
                     ["DEL", key]]
        replies = c.pipeline(cmds)
        for i in range(3, len(replies), 5):
            # Decayed below the heap's minimum (a itself), a's count reads 0.
            hits += replies[i].value[0][1] != count
    c.close()
    return hits / trials


def test_decay_probability_matches_redisbloom(blinkdb_binary, tmp_path):
    with side_by_side(blinkdb_binary, tmp_path) as (ours, oracle):
        trials = 3000
        for count, decay in ((5, "0.9"), (300, "0.995"), (2, "0.5")):
            expect = float(decay) ** count
            p_ours = decay_rate(ours, count, trials, decay)
            p_theirs = decay_rate(oracle, count, trials, decay)
            sd = math.sqrt(expect * (1 - expect) / trials)
            # Each within 4.5 standard deviations of decay^count, and of each other.
            assert abs(p_ours - expect) < 4.5 * sd, (count, decay, p_ours, expect)
            assert abs(p_theirs - expect) < 4.5 * sd, (count, decay, p_theirs, expect)
            assert abs(p_ours - p_theirs) < 4.5 * sd * math.sqrt(2), (p_ours, p_theirs)


def test_heavy_hitters_match_redisbloom(blinkdb_binary, tmp_path):
    """A Zipf-like stream with the default decay: both find the same heavy items."""
    with side_by_side(blinkdb_binary, tmp_path) as (ours, oracle):
        rng = random.Random(45)
        population = [f"user:{n}" for n in range(2000)]
        weights = [1 / (n + 1) ** 1.1 for n in range(len(population))]
        stream = rng.choices(population, weights, k=30000)
        lists = []
        for server in (ours, oracle):
            c = server.connect()
            assert c.call("TOPK.RESERVE", "hh", "10", "200", "5", "0.9").raw == b"+OK\r\n"
            cmds = [["TOPK.ADD", "hh"] + stream[i:i + 100] for i in range(0, len(stream), 100)]
            c.pipeline(cmds)
            lists.append([v[1] for v in c.call("TOPK.LIST", "hh").value])
            c.close()
        truth = [p.encode() for p in population[:5]]
        for found in lists:
            assert len(found) == 10
            assert all(t in found for t in truth), (found, truth)
        assert len(set(lists[0]) & set(lists[1])) >= 8, lists


def test_incrby_bad_pair(blinkdb_binary, tmp_path):
    """RedisBloom declares an array of every pair, then stops at a bad increment
    (its reply is short: the connection desynchronizes). BlinkDB answers a
    well-formed array of the pairs it handled and the error, and logs the command
    as sent (RedisBloom replicates it verbatim too)."""
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        c = ours.connect()
        c.call("TOPK.RESERVE", "t", "3", "10", "3", "1")
        r = c.call("TOPK.INCRBY", "t", "a", "2", "b", "-1", "c", "3")
        assert r.raw == (b"*2\r\n$-1\r\n-TopK: increment must be an integer greater or equal "
                         b"to 0                            and smaller or equal to 100,000\r\n")
        assert c.call("TOPK.COUNT", "t", "a", "b", "c").raw == b"*3\r\n:2\r\n:0\r\n:0\r\n"
        assert c.call("PING").raw == b"+PONG\r\n"
    finally:
        ours.stop()


def test_topk_limits(blinkdb_binary, tmp_path):
    """RedisBloom 2.8.2 truncates k to 32 bits (k 2^32 + 3 makes k 3; 2^32 makes 0 and
    aborts); BlinkDB refuses it as RedisBloom 8 does. A size too large to allocate
    aborts redis-server 7.0 with RedisBloom; here past sketch-max-memory it is refused
    with RedisBloom's text for a failed allocation, nothing allocated."""
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        c = ours.connect()
        before = ours.rss_kb()
        for args, text in (
                (["4294967296"], b"-TopK: invalid k\r\n"),
                (["4294967299"], b"-TopK: invalid k\r\n"),
                (["10", "4294967296", "5", "0.9"], b"-TopK: invalid width\r\n"),
                (["10", "5", "4294967296", "0.9"], b"-TopK: invalid depth\r\n"),
                (["4294967295", "4294967295", "4294967295", "0.9"],
                 b"-ERR Insufficient memory to create topk data structure\r\n"),
                (["100000", "100000", "100000", "0.9"],
                 b"-ERR Insufficient memory to create topk data structure\r\n"),
                (["1000000000"], b"-ERR Insufficient memory to create topk data structure\r\n"),
        ):
            assert c.call("TOPK.RESERVE", "t", *args).raw == text, args
        assert c.call("EXISTS", "t").raw == b":0\r\n"
        assert ours.rss_kb() < before + 100_000
    finally:
        ours.stop()
