"""Randomized CMS.* command streams sent to redis-server with RedisBloom 2.8.2 and
to BlinkDB, in RESP2 and RESP3: every reply must be the same bytes (a count-min
sketch is deterministic: the same MurmurHash2 rows give the same counters).

Dimensions too large to allocate abort redis-server 7.0 with RedisBloom (it has no
TryCalloc): they are left out here and checked on BlinkDB alone in test_cms_limits."""

import os
import random

from bloom_support import differing_replies, side_by_side, start_blinkdb

SEEDS = [int(s) for s in os.environ.get("BLINKDB_CMS_SEEDS", "1,2,3,4").split(",")]
KEYS = ["cms:a", "cms:b", "cms:c", "cms:d", "str"]
DIMS = ["1", "2", "5", "20", "0", "-1", "x", "1.5", "", "9223372036854775807"]
ERRORS = ["0.001", "0.01", "0.1", "0.5", "0.9", "0", "1", "-0.1", "x", "1e-2"]
PROBS = ["0.01", "0.1", "0.5", "0.9", "0.001", "0", "1", "x", "nan", "0.99999999"]
VALUES = ["1", "2", "5", "100", "0", "-1", "x", "4294967295", "2147483647", "4294967296",
          "9223372036854775807", "9223372036854775808", "1.0", " 1"]
WEIGHTS = ["1", "2", "-1", "0", "3", "-2", "x", "4000000000", "-9223372036854775808"]


def random_command(rng, items):
    key = rng.choice(KEYS)
    pick = lambda: rng.choice(items)  # noqa: E731
    kind = rng.randrange(16)
    if kind == 0:
        return ["CMS.INITBYDIM", key, rng.choice(DIMS[:4] * 3 + DIMS),
                rng.choice(DIMS[:4] * 3 + DIMS)][:rng.choice([2, 3, 4, 4, 4, 4, 5])]
    if kind == 1:
        return ["CMS.INITBYPROB", key, rng.choice(ERRORS), rng.choice(PROBS)][
            :rng.choice([3, 4, 4, 4, 4, 5])]
    if kind in (2, 3, 4, 5):
        cmd = ["CMS.INCRBY", key]
        for _ in range(rng.randrange(1, 5)):
            cmd += [pick(), rng.choice(VALUES[:4] * 8 + VALUES)]
        if rng.random() < 0.05:
            cmd.pop()
        return cmd
    if kind in (6, 7, 8):
        return ["CMS.QUERY", key] + [pick() for _ in range(rng.randrange(0, 5))]
    if kind in (9, 10):
        srcs = [rng.choice(KEYS) for _ in range(rng.randrange(1, 4))]
        n = len(srcs)
        numkeys = str(n) if rng.random() < 0.85 else rng.choice(
            [str(n + 1), str(n - 1), "x", "0", "-1", "-9223372036854775808", "1099511627776"])
        cmd = ["CMS.MERGE", key, numkeys] + srcs
        if rng.random() < 0.5:
            cmd += [rng.choice(["WEIGHTS", "weights", "WEIGHT"])]
            cmd += [rng.choice(WEIGHTS[:3] * 4 + WEIGHTS) for _ in range(n + rng.choice([0, 0, 0, 1, -1]))]
        return cmd
    if kind == 11:
        return ["CMS.INFO", key] + rng.choice([[], [], [], ["x"]])
    if kind == 12:
        return rng.choice([["DEL", key], ["TYPE", key], ["EXISTS", key], ["SET", "str", "v"],
                           ["GET", key], ["CMS.INFO"], ["CMS.QUERY"], ["CMS.INCRBY", key],
                           ["CMS.MERGE", key], ["CMS.MERGE", key, "1"], ["CMS.INITBYDIM"]])
    if kind == 13:
        # No source at all (the tag v2.8.2 zeroed the destination; the release refuses).
        return ["CMS.MERGE", key, "0", "WEIGHTS"]
    return ["CMS.QUERY", key, pick(), pick()]


def sequence(rng, count):
    items = [f"item{i}" for i in range(40)] + ["", "a\x00b", "\u00e9t\u00e9"]
    return [random_command(rng, items) for _ in range(count)]


def test_cms_commands_match_redisbloom(blinkdb_binary, tmp_path):
    runs = ((seed, ((3 if seed % 2 == 0 else 2, cmd) for cmd in sequence(random.Random(seed), 1500)))
            for seed in SEEDS)
    with side_by_side(blinkdb_binary, tmp_path) as (ours, oracle):
        mismatches, sent = differing_replies(ours, oracle, runs)
    assert not mismatches, f"{len(mismatches)} of {sent} differ, first: {mismatches[:5]}"


def test_cms_saturation_and_merge_corners_match(blinkdb_binary, tmp_path):
    """Counters near u32::MAX, merges near the i64 limits: every reply the same."""
    with side_by_side(blinkdb_binary, tmp_path) as (ours, oracle):
        cmds = [["CMS.INITBYDIM", "x", "3", "2"], ["CMS.INITBYDIM", "y", "3", "2"],
                ["CMS.INITBYDIM", "z", "4", "2"]]
        rng = random.Random(7)
        big = ["4294967295", "4294967294", "2147483648", "4000000000", "1", "0",
               "9223372036854775807", "4294967296"]
        for _ in range(300):
            k = rng.choice(["x", "y"])
            cmds.append(["CMS.INCRBY", k] + sum(([rng.choice("abcdefg"), rng.choice(big)]
                                                 for _ in range(3)), []))
            cmds.append(["CMS.QUERY", k] + list("abcdefg"))
            w = [rng.choice(["1", "-1", "2", "0", "9223372036854775807", "-9223372036854775807",
                             "3037000499", "-4294967295"]) for _ in range(2)]
            cmds.append(["CMS.MERGE", rng.choice(["x", "y"]), "2", "x", "y", "WEIGHTS"] + w)
            cmds.append(["CMS.INFO", rng.choice(["x", "y"])])
            if rng.random() < 0.1:
                cmds.append(["CMS.MERGE", "x", "2", "x", "z"])
                cmds.append(["DEL", "y"])
                cmds.append(["CMS.INITBYDIM", "y", "3", "2"])
        mismatches, sent = differing_replies(ours, oracle, [(0, ((2, c) for c in cmds))])
    assert not mismatches, f"{len(mismatches)} of {sent} differ, first: {mismatches[:5]}"


def test_cms_limits(blinkdb_binary, tmp_path):
    """A sketch too large to allocate aborts redis-server 7.0 with RedisBloom 2.8.2 ("Redis
    aborting for OUT OF MEMORY"); here counters past sketch-max-memory are refused with
    RedisBloom's text for a failed allocation, and nothing is allocated."""
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        c = ours.connect()
        before = ours.rss_kb()
        for cmd, text in (
                (["CMS.INITBYDIM", "k", "1000000000000", "1000"],
                 b"-CMS: Insufficient memory to create the key\r\n"),
                (["CMS.INITBYPROB", "k", "1e-12", "0.5"],
                 b"-CMS: Insufficient memory to create the key\r\n"),
                # As RedisBloom: a product past LLONG_MAX, a width past size_t.
                (["CMS.INITBYDIM", "k", "9223372036854775807", "2"],
                 b"-CMS: invalid init arguments\r\n"),
                (["CMS.INITBYPROB", "k", "1e-300", "0.5"], b"-CMS: invalid init arguments\r\n"),
        ):
            assert c.call(*cmd).raw == text, cmd
        assert c.call("EXISTS", "k").raw == b":0\r\n"
        assert ours.rss_kb() < before + 100_000
    finally:
        ours.stop()
