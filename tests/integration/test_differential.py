"""Differential test: the same random command stream goes to the oracle
redis-server 7 and to BLINKDB_BIN over raw RESP; every reply must match.
"""

import os
import time

import pytest

import command_gen as gen
from resp import RespConnection, encode

# BLINKDB_DIFF_SEEDS="1 2 3" replays or explores other seeds
SEEDS = [int(s) for s in os.environ.get("BLINKDB_DIFF_SEEDS", "11 23 37 41 59 67 73 89").split()]
COMMANDS_PER_SEED = 3000
SYNC_EVERY_BATCHES = 15
EXPIRY_SCENARIO_EVERY_BATCHES = 40
MAX_REPORTED = 15


def describe(args):
    shown = []
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        shown.append(repr(b[:40]) + ("..." if len(b) > 40 else ""))
    return " ".join(shown)


def mismatch(kind, a, b):
    """None when oracle reply `a` and BlinkDB reply `b` agree under `kind`."""
    if a.raw == b.raw:
        return None
    if a.is_error() or b.is_error() or kind == gen.EXACT:
        at = next((i for i, (x, y) in enumerate(zip(a.raw, b.raw)) if x != y),
                  min(len(a.raw), len(b.raw)))
        return (f"bytes differ from byte {at}: oracle {a.raw[max(0, at - 40):at + 60]!r}, "
                f"tested {b.raw[max(0, at - 40):at + 60]!r}")
    if kind in (gen.TTL, gen.PTTL):
        if a.kind != b":" or b.kind != b":":
            return "not integers"
        if a.value < 0 or b.value < 0:
            return "negative TTL codes differ"
        tolerance = 1 if kind == gen.TTL else gen.PTTL_TOLERANCE_MS
        return None if abs(a.value - b.value) <= tolerance else "TTL outside tolerance"
    if kind == gen.KEYS:
        if a.kind != b.kind or a.kind != b"*":
            return "not arrays"
        return None if sorted(a.value) == sorted(b.value) else "key sets differ"
    if kind == gen.SCAN:
        return scan_mismatch(a, b)
    if kind in (gen.UNORDERED, gen.UNORDERED_PAIRS):
        if a.kind != b.kind or not isinstance(a.value, list) or not isinstance(b.value, list):
            return "not arrays of the same type"
        items = [a.value, b.value]
        if kind == gen.UNORDERED_PAIRS and a.kind == b"*":
            items = [list(zip(v[::2], v[1::2])) for v in items]
        elif kind == gen.UNORDERED_PAIRS:
            items = [list(v.items()) if isinstance(v, dict) else v for v in items]
        return None if sorted(map(repr, items[0])) == sorted(map(repr, items[1])) else \
            "members differ"
    if kind == gen.RANDOMKEY:
        if (a.value is None) != (b.value is None) or a.kind != b.kind:
            return "one empty keyspace, one not"
        return None
    return "bytes differ"


def scan_items(reply):
    cursor_kv, items_kv = reply.value
    cursor = int(cursor_kv[1])
    return cursor, [v for _, v in items_kv[1]]


def scan_mismatch(a, b):
    if a.kind != b"*" or b.kind != b"*" or len(b.value) != 2:
        return "SCAN reply shape differs"
    a_cursor, a_items = scan_items(a)
    b_cursor, b_items = scan_items(b)
    if len(set(b_items)) != len(b_items):
        return "SCAN returned a key twice in one call"
    # a finished iteration (cursor 0) has seen every matching key
    if a_cursor == 0 and b_cursor == 0 and set(a_items) != set(b_items):
        return "complete SCANs returned different key sets"
    if a_cursor == 0 and not set(b_items) <= set(a_items):
        return "SCAN returned a key the oracle does not have"
    if b_cursor == 0 and not set(a_items) <= set(b_items):
        return "SCAN finished without a key the oracle has"
    return None


class Pair:
    """The oracle and the server under test, fed identical bytes."""

    def __init__(self, oracle, blinkdb):
        self.a = RespConnection(oracle.port, timeout=30)
        self.b = RespConnection(blinkdb.port, timeout=30)
        self.failures = []
        self.compared = 0

    def close(self):
        self.a.close()
        self.b.close()

    def run(self, batch, where):
        """Send the batch in one write to each server and compare every reply."""
        payload = b"".join(encode(*args) for args, _ in batch)
        self.a.send_raw(payload)
        self.b.send_raw(payload)
        queued = []
        for args, kind in batch:
            ra = self.a.read_reply()
            rb = self.b.read_reply()
            self.compared += 1
            name = str(args[0]).upper()
            queued = [] if name == "MULTI" else queued + [args]
            why = mismatch(kind, ra, rb)
            if why and len(self.failures) < MAX_REPORTED:
                # An EXEC's mismatch names the commands it ran.
                shown = "; ".join(map(describe, queued)) if name == "EXEC" else describe(args)
                self.failures.append(
                    f"{where}: {shown}\n  {why}\n  oracle: {ra.raw[:200]!r}\n"
                    f"  tested: {rb.raw[:200]!r}"
                )
        return self

    def full_scan(self, conn, pattern):
        seen, cursor, calls = set(), b"0", 0
        while True:
            reply = conn.call("SCAN", cursor, "MATCH", pattern, "COUNT", "3")
            cursor, items = reply.value[0][1], [v for _, v in reply.value[1][1]]
            seen.update(items)
            calls += 1
            if cursor == b"0" or calls > 10_000:
                return seen

    def sync_checks(self, where):
        """Order-free checks that need whole-keyspace knowledge."""
        for pattern in ("*", "k*"):
            keys_a = set(v for _, v in self.a.call("KEYS", pattern).value)
            keys_b = set(v for _, v in self.b.call("KEYS", pattern).value)
            scan_b = self.full_scan(self.b, pattern)
            if keys_a != keys_b:
                self.failures.append(f"{where}: KEYS {pattern}: {keys_a} vs {keys_b}")
            if scan_b != keys_b:
                self.failures.append(f"{where}: full SCAN {pattern} {scan_b} != KEYS {keys_b}")
        random_key = self.b.call("RANDOMKEY")
        all_b = set(v for _, v in self.b.call("KEYS", "*").value)
        if random_key.value is None:
            if all_b:
                self.failures.append(f"{where}: RANDOMKEY nil on a non-empty db")
        elif random_key.value not in all_b:
            self.failures.append(f"{where}: RANDOMKEY {random_key.value!r} is not a key")

    def final_state(self, where):
        for db in gen.DB_CHOICES:
            check = [(["SELECT", db], gen.EXACT), (["DBSIZE"], gen.EXACT),
                     (["KEYS", "*"], gen.KEYS)]
            for key in gen.KEY_ALPHABET:
                check += [(["GET", key], gen.EXACT), (["PTTL", key], gen.PTTL)]
            self.run(check, f"{where} final db {db}")


@pytest.fixture
def pair(oracle, blinkdb):
    p = Pair(oracle, blinkdb)
    yield p
    p.close()


def assert_no_failures(pair):
    assert not pair.failures, (
        f"{len(pair.failures)}+ mismatches after {pair.compared} replies:\n"
        + "\n".join(pair.failures)
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_random_command_stream(pair, seed):
    started = time.monotonic()
    g = gen.CommandGenerator(seed)
    sent, batch_no = 0, 0
    while sent < COMMANDS_PER_SEED:
        batch = g.batch(g.batch_size())
        pair.run(batch, f"seed {seed} batch {batch_no}")
        sent += len(batch)
        batch_no += 1
        if batch_no % SYNC_EVERY_BATCHES == 0:
            pair.sync_checks(f"seed {seed} batch {batch_no}")
        if batch_no % EXPIRY_SCENARIO_EVERY_BATCHES == 0:
            setup = [(c, gen.EXACT) for c in g.short_expiry_setup()]
            pair.run([(["SELECT", "0"], gen.EXACT)] + setup, f"seed {seed} expiry setup")
            time.sleep(0.3)
            pair.run(g.short_expiry_check(), f"seed {seed} expiry check")
        if pair.failures:
            break
    pair.final_state(f"seed {seed}")
    assert_no_failures(pair)
    # the generator's expiry grid assumes a seed finishes well inside 70 s
    assert time.monotonic() - started < 60


def test_short_expiry_with_sleeps(pair):
    """Keys with 20-80 ms deadlines are gone after 200 ms on both servers."""
    setup = []
    for i, key in enumerate(gen.KEY_ALPHABET):
        ms = str(20 + 10 * i)
        setup += [(["SET", key, b"v%d" % i, "PX", ms], gen.EXACT), (["PTTL", key], gen.PTTL)]
    setup += [(["SET", "stay", "1", "PX", "100000"], gen.EXACT), (["DBSIZE"], gen.EXACT)]
    pair.run(setup, "setup")
    time.sleep(0.25)
    pair.run(gen.CommandGenerator.short_expiry_check()
             + [(["TTL", "stay"], gen.TTL), (["EXISTS", "stay"], gen.EXACT)], "after sleep")
    assert_no_failures(pair)
    # and not merely "equal": the keys really are gone on the tested server
    assert pair.b.call("DBSIZE").raw == b":1\r\n"


def test_all_byte_values_in_keys_and_values(pair):
    batch = []
    for i in range(256):
        key = bytes([i]) + b"\r\n\x00" + bytes([255 - i])
        value = bytes((i + j) % 256 for j in range(300)) + b"\r\n$5\r\n*1\r\n"
        batch += [(["SET", key, value], gen.EXACT), (["GET", key], gen.EXACT),
                  (["STRLEN", key], gen.EXACT), (["APPEND", key, b"\x00\r\n"], gen.EXACT)]
    batch += [(["DBSIZE"], gen.EXACT), (["KEYS", "*"], gen.KEYS),
              (["MGET"] + [bytes([i]) + b"\r\n\x00" + bytes([255 - i]) for i in range(256)],
               gen.EXACT)]
    pair.run(batch, "binary")
    assert_no_failures(pair)
    key = b"\x07\r\n\x00\xf8"
    assert pair.b.call("GETRANGE", key, "0", "2").raw == b"$3\r\n\x07\x08\x09\r\n"


@pytest.mark.parametrize("size", [1, 2, 17, 64, 199, 200])
def test_pipelined_batches(pair, size):
    g = gen.CommandGenerator(size * 1000 + 7)
    for round_no in range(4):
        pair.run(g.batch(size), f"pipeline {size} round {round_no}")
    assert_no_failures(pair)


# Exact error texts, checked literally on both servers so the expectation
# itself is proven against Redis 7.
ERROR_CASES = [
    ([["foo", "a", "b"]],
     b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"),
    ([["GET"]], b"-ERR wrong number of arguments for 'get' command\r\n"),
    ([["set", "x"]], b"-ERR wrong number of arguments for 'set' command\r\n"),
    ([["SET", "n", "9223372036854775807"], ["INCR", "n"]],
     b"-ERR increment or decrement would overflow\r\n"),
    ([["SET", "n", "-9223372036854775808"], ["DECRBY", "n", "1"]],
     b"-ERR increment or decrement would overflow\r\n"),
    ([["DECRBY", "n", "-9223372036854775808"]], b"-ERR decrement would overflow\r\n"),
    ([["SET", "s", "abc"], ["INCR", "s"]], b"-ERR value is not an integer or out of range\r\n"),
    ([["INCRBY", "n", "1.5"]], b"-ERR value is not an integer or out of range\r\n"),
    ([["SET", "k", "v", "BOGUS"]], b"-ERR syntax error\r\n"),
    ([["SET", "k", "v", "NX", "XX"]], b"-ERR syntax error\r\n"),
    ([["INCRBYFLOAT", "f", "abc"]], b"-ERR value is not a valid float\r\n"),
    ([["SET", "f", "1"], ["INCRBYFLOAT", "f", "inf"]],
     b"-ERR increment would produce NaN or Infinity\r\n"),
    ([["SET", "k", "v", "EX", "0"]], b"-ERR invalid expire time in 'set' command\r\n"),
    ([["SETEX", "k", "-5", "v"]], b"-ERR invalid expire time in 'setex' command\r\n"),
    ([["SET", "k", "v"], ["EXPIRE", "k", "9223372036854775807"]],
     b"-ERR invalid expire time in 'expire' command\r\n"),
    ([["EXPIRE", "k", "10", "NX", "XX"]],
     b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"),
    ([["EXPIRE", "k", "10", "GT", "LT"]],
     b"-ERR GT and LT options at the same time are not compatible\r\n"),
    ([["SELECT", "16"]], b"-ERR DB index is out of range\r\n"),
    ([["SELECT", "x"]], b"-ERR value is not an integer or out of range\r\n"),
    ([["SETRANGE", "k", "-1", "x"]], b"-ERR offset is out of range\r\n"),
    ([["SETRANGE", "k", "536870912", "x"]],
     b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"),
    ([["RENAME", "nosuchkey", "x"]], b"-ERR no such key\r\n"),
    ([["SET", "k", "v"], ["MOVE", "k", "0"]],
     b"-ERR source and destination objects are the same\r\n"),
    ([["SCAN", "abc"]], b"-ERR invalid cursor\r\n"),
    ([["GETEX", "k", "PERSIST", "EX", "10"]], b"-ERR syntax error\r\n"),
    ([["MSET", "a", "1", "b"]], b"-ERR wrong number of arguments for 'mset' command\r\n"),
    ([["COPY", "a", "b", "DB", "99"]], b"-ERR DB index is out of range\r\n"),
    # WRONGTYPE is not checked: BlinkDB has no list/hash types to create one with.
]


@pytest.mark.parametrize("commands,expected", ERROR_CASES,
                         ids=[" ".join(c[-1]) for c, _ in ERROR_CASES])
def test_exact_error_text(oracle, blinkdb, commands, expected):
    for srv, name in ((oracle, "oracle"), (blinkdb, "tested")):
        with RespConnection(srv.port) as conn:
            replies = conn.pipeline(commands)
        assert replies[-1].raw == expected, f"{name} replied {replies[-1].raw!r}"
        # every setup command before the failing one succeeded
        assert all(not r.is_error() for r in replies[:-1]), name
