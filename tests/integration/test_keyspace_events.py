"""Keyspace notifications (notify-keyspace-events) against redis-server 7.0 with
RedisBloom 2.8: the same command script, every event byte for byte, for several flag
sets and in RESP2 and RESP3; then what only BlinkDB can show (module events of BF.*
writes, evictions of cache mode) and what needs time (expiry)."""

import re
import threading
import time

import pytest

from aof_helpers import start_aof_server
from bloom_support import start_blinkdb, start_oracle

# Writes and reads of every kind of command BlinkDB serves, in several databases.
SCRIPT = [
    ["EXISTS", "nokey"], ["TYPE", "nokey"], ["TTL", "nokey"], ["STRLEN", "nokey"],
    ["GETRANGE", "nokey", "0", "1"], ["MGET", "a", "b"], ["GET", "nokey"],
    ["GETDEL", "nokey"], ["GETEX", "nokey"], ["SET", "nk", "v", "GET"],
    ["GETSET", "nk2", "v"], ["EXPIRE", "nokey", "10"], ["PERSIST", "nokey"],
    ["APPEND", "ap", "x"], ["APPEND", "ap", "y"], ["SETRANGE", "sr", "0", ""],
    ["SETRANGE", "sr", "2", "x"], ["SETRANGE", "sr", "0", ""], ["INCR", "i"],
    ["DECRBY", "i", "3"], ["INCRBYFLOAT", "f", "1.5"], ["INCR", "ap"],
    ["SET", "k", "v", "EX", "100"], ["SET", "k", "v", "KEEPTTL"], ["SET", "k", "v", "NX"],
    ["SET", "k2", "v", "XX"], ["SET", "k", "w", "XX", "PX", "50000"], ["SETNX", "k", "v"],
    ["SETNX", "k3", "v"], ["SETEX", "k", "10", "v"], ["PSETEX", "k", "10000", "v"],
    ["MSET", "m1", "a", "m2", "b"], ["MSETNX", "m1", "a", "m3", "c"],
    ["MSETNX", "m4", "a", "m5", "c"], ["GETEX", "k", "PERSIST"], ["GETEX", "k", "PERSIST"],
    ["GETEX", "k", "EX", "100"], ["GETEX", "k", "PXAT", "1"], ["GETDEL", "m1"],
    ["DEL", "m2", "m3", "m4", "nokey"], ["UNLINK", "m5"], ["EXPIRE", "i", "100"],
    ["EXPIRE", "i", "100", "NX"], ["PEXPIRE", "i", "-1"], ["SET", "r1", "v"],
    ["RENAME", "r1", "r2"], ["SET", "r3", "v"], ["RENAME", "r2", "r3"],
    ["RENAMENX", "r3", "r4"], ["RENAMENX", "r4", "r4"], ["RENAME", "r4", "r4"],
    ["MOVE", "r4", "1"], ["SET", "c1", "v"], ["COPY", "c1", "c2"],
    ["COPY", "c1", "c2", "REPLACE"], ["COPY", "c1", "c2"], ["COPY", "c1", "c5", "DB", "2"],
    ["SET", "e1", "v"], ["PERSIST", "e1"], ["EXPIRE", "e1", "100"], ["PERSIST", "e1"],
    ["SELECT", "1"], ["SET", "r4", "again"], ["DEL", "r4"], ["SELECT", "0"],
    ["BF.RESERVE", "b1", "0.01", "100"], ["BF.ADD", "b1", "x"], ["BF.ADD", "b1", "x"],
    ["BF.MADD", "b1", "x", "y"], ["BF.INSERT", "b2", "ITEMS", "a"],
    ["BF.INSERT", "nob", "NOCREATE", "ITEMS", "a"], ["BF.ADD", "b3", "a"],
    ["BF.EXISTS", "nob", "a"], ["BF.MEXISTS", "nob", "a"], ["BF.INFO", "nob"],
    ["BF.CARD", "nob"], ["BF.EXISTS", "b1", "x"], ["DEL", "b1"], ["RENAME", "b2", "b4"],
    ["SETBIT", "sb", "7", "1"], ["SETBIT", "sb", "7", "1"], ["SETBIT", "sb", "100", "0"],
    ["SETBIT", "sb", "x", "1"], ["GETBIT", "nokey", "1"], ["BITCOUNT", "nokey"],
    ["BITPOS", "nokey", "1"], ["BITFIELD", "bd", "SET", "u8", "0", "1"],
    ["BITFIELD", "bd", "SET", "u8", "0", "1"], ["BITFIELD", "nokey", "GET", "u8", "0"],
    ["BITFIELD_RO", "nokey", "GET", "u8", "0"],
    ["BITFIELD", "bn", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "5"],
    ["BITOP", "AND", "bo", "sb", "nokey"], ["BITOP", "OR", "bo", "nokey"],
    ["BITOP", "OR", "bo", "nokey"], ["LCS", "sb", "nokey"],
    ["MEMORY", "USAGE", "nokey"], ["SWAPDB", "0", "1"], ["SWAPDB", "0", "1"],
    ["FLUSHDB"], ["SET", "after", "flush"], ["FLUSHALL"],
]

# Flag sets both servers must agree on for the whole script. The module class (d,
# part of A) is left out here: RedisBloom publishes no module events, BlinkDB does
# (test_module_events_of_bloom_writes).
FLAG_SETS = ["KEg$xenm", "Kg", "E$", "KEn", "Em", "Kx", "g$", "K", ""]


PONGS = (b"*2\r\n$4\r\npong\r\n$0\r\n\r\n", b"+PONG\r\n")


def drain(sub):
    """What `sub` received until now: a PING's reply follows everything sent before it
    (the servers publish an event before they reply to the command that caused it)."""
    sub.send("PING")
    got = b""
    while True:
        raw = sub.read_reply().raw
        if raw in PONGS:
            return got
        got += raw


def transcript(srv, flags, proto, script):
    with srv.connect() as sub, srv.connect() as c:
        assert not c.call("CONFIG", "SET", "notify-keyspace-events", flags).is_error()
        if proto == 3:
            sub.call("HELLO", "3")
        sub.call("PSUBSCRIBE", "__key*__:*")
        seen = []
        for cmd in script:
            c.call(*cmd)
            seen.append((cmd, drain(sub)))
        c.call("CONFIG", "SET", "notify-keyspace-events", "")
        return seen


@pytest.fixture
def pair(blinkdb_binary, tmp_path):
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    theirs = start_oracle(str(tmp_path / "oracle"))
    yield ours, theirs
    ours.stop()
    theirs.stop()


@pytest.mark.parametrize("flags", FLAG_SETS)
def test_events_match_redis(pair, flags):
    ours, theirs = pair
    mine = transcript(ours, flags, 2, SCRIPT)
    ref = transcript(theirs, flags, 2, SCRIPT)
    for (cmd, got), (_, want) in zip(mine, ref):
        assert got == want, f"{flags} {cmd}"


def test_resp3_subscriber_gets_pushes(pair):
    ours, theirs = pair
    mine = transcript(ours, "KEg$xenm", 3, SCRIPT[:40])
    ref = transcript(theirs, "KEg$xenm", 3, SCRIPT[:40])
    assert any(data.startswith(b">4\r\n$8\r\npmessage") for _, data in mine)
    assert mine == ref


def test_module_events_of_bloom_writes(blinkdb):
    script = [
        ["BF.RESERVE", "b", "0.01", "100"], ["BF.ADD", "b", "x"], ["BF.ADD", "b", "x"],
        ["BF.MADD", "b", "x", "y"], ["BF.INSERT", "c", "ITEMS", "a"], ["BF.EXISTS", "b", "x"],
    ]
    seen = transcript(blinkdb, "Ed", 2, script)
    events = [data for _, data in seen]

    def msg(event, key):
        chan = f"__keyevent@0__:{event}".encode()
        return (b"*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                % (len(chan), chan, len(key), key.encode()))

    assert events == [msg("bf.reserve", "b"), msg("bf.add", "b"), b"", msg("bf.madd", "b"),
                      msg("bf.insert", "c"), b""]


def test_config_get_and_set_as_redis(pair):
    ours, theirs = pair
    for flags in ["gKE", "$lshzxeKE", "KA", "EA", "AKEmn", "Ed", "nE", "KEg$lshzxetd", "mK",
                  "", "Kq", "A", "xyz"]:
        replies = []
        for srv in (ours, theirs):
            with srv.connect() as c:
                set_reply = c.call("CONFIG", "SET", "notify-keyspace-events", flags).raw
                got = c.call("CONFIG", "GET", "notify-keyspace-events").raw
                replies.append((set_reply, got))
        assert replies[0] == replies[1], flags


def test_no_events_while_off(blinkdb):
    with blinkdb.connect() as sub, blinkdb.connect() as c:
        sub.call("PSUBSCRIBE", "*")
        for cmd in SCRIPT:
            c.call(*cmd)
        # K or E is needed for anything to be published.
        c.call("CONFIG", "SET", "notify-keyspace-events", "A")
        c.call("SET", "x", "1")
        c.call("PUBLISH", "marker", "m")
        data, _ = sub.read_all_available(0.3)
        assert data == b"*4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$6\r\nmarker\r\n$1\r\nm\r\n"


def test_expired_events_active_and_lazy(blinkdb):
    with blinkdb.connect() as sub, blinkdb.connect() as c:
        c.call("CONFIG", "SET", "notify-keyspace-events", "Exm")
        sub.call("PSUBSCRIBE", "*")
        # Active expiry: nobody touches the key.
        c.call("PSETEX", "foo", "100", "1")
        reply = sub.read_reply()
        assert reply.raw.endswith(b"$22\r\n__keyevent@0__:expired\r\n$3\r\nfoo\r\n")
        # Lazy expiry from a read: expired, then the miss.
        for _ in range(20):
            c.call("SET", "bar", "1", "PX", "1")
            time.sleep(0.005)
            c.call("GET", "bar")
            data, _ = sub.read_all_available(0.2)
            if b"keymiss" in data:
                break
        assert data.index(b"__keyevent@0__:expired") < data.index(b"__keyevent@0__:keymiss")
        assert data.count(b"expired") == 1


def test_events_of_a_transaction_reach_subscribers_on_every_thread(server_factory, oracle):
    script = [["SET", "a", "1"], ["INCR", "n"], ["RENAME", "a", "b"], ["DEL", "b", "n"]]

    def run(srv, subscribers):
        subs = [srv.connect() for _ in range(subscribers)]
        try:
            for s in subs:
                s.call("PSUBSCRIBE", "__key*__:*")
            with srv.connect() as c:
                c.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
                c.pipeline([["MULTI"]] + script + [["EXEC"]])
            return [s.read_all_available(0.3)[0] for s in subs]
        finally:
            for s in subs:
                s.close()

    ours = run(server_factory("--io-threads", "2"), 4)
    theirs = run(oracle, 1)
    assert theirs[0].count(b"pmessage") == 12
    assert ours == theirs * 4


def test_events_in_publish_order_under_concurrent_writers(server_factory):
    srv = server_factory("--io-threads", "2")
    n = 500
    with srv.connect() as c:
        c.call("CONFIG", "SET", "notify-keyspace-events", "K$")
    subs = [srv.connect() for _ in range(3)]
    for s in subs:
        s.call("SUBSCRIBE", "__keyspace@0__:counter")

    def writer():
        with srv.connect() as w:
            w.pipeline([("INCR", "counter") for _ in range(n)])

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in subs:
        for _ in range(2 * n):
            assert s.read_reply().value[2][1] == b"incrby"
        assert s.read_all_available(0.1)[0] == b""
        s.close()


def test_evicted_events_in_cache_mode(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    srv = start_aof_server(blinkdb_binary, directory, "--maxmemory-policy", "allkeys-fifo",
                           "--segment-size", "64kb", "--notify-keyspace-events", "Ee")
    try:
        with srv.connect() as sub, srv.connect(timeout=60.0) as c:
            # 256 KB of room over what the server holds (used_memory counts it all).
            mem = c.call("INFO", "memory").value.decode()
            used = int(re.search(r"used_memory:(\d+)", mem).group(1))
            c.call("CONFIG", "SET", "maxmemory", str(used + 256 * 1024))
            sub.call("SUBSCRIBE", "__keyevent@0__:evicted")
            total = 6000
            for start in range(0, total, 500):
                c.pipeline([("SET", f"small:{i}", f"value-{i:032d}")
                            for i in range(start, start + 500)])
                time.sleep(0.02)
            time.sleep(0.5)
            evicted = int([line for line in c.call("INFO", "stats").value.decode().split("\r\n")
                           if line.startswith("evicted_keys:")][0].split(":")[1])
            assert evicted > 0
            keys = [sub.read_reply().value[2][1].decode() for _ in range(evicted)]
            assert keys == [f"small:{i}" for i in range(evicted)] or \
                sorted(keys) == sorted(f"small:{i}" for i in range(evicted))
            assert all(r.value == 0 for r in c.pipeline([("EXISTS", k) for k in keys[:50]]))
            assert sub.read_all_available(0.1)[0] == b""
    finally:
        srv.stop()


def test_active_expiry_reaches_every_database_each_cycle(blinkdb):
    """An untouched key is reclaimed within a few expire cycles (hz 10), wherever its shard
    and database sit in the cycle's walk, as Redis's active expiry does (unit/latency-monitor
    waits 500 ms for it)."""
    with blinkdb.connect() as c:
        for db in ("0", "9", "15"):
            c.call("SELECT", db)
            for i in range(20):
                c.call("SET", f"k{i}", "v", "PX", "50")
        start = time.time()
        left = None
        while time.time() - start < 0.6:
            left = 0
            for db in ("0", "9", "15"):
                c.call("SELECT", db)
                left += c.call("DBSIZE").value
            if left == 0:
                break
            time.sleep(0.05)
        assert left == 0, f"{left} keys still there 600 ms after their 50 ms TTL"
