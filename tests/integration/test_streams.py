"""Streams against the oracle: a scripted sequence of stream and consumer
group commands (explicit IDs, trimming, ranges, groups, claims, bad input,
WRONGTYPE) must get the same reply bytes from BlinkDB and redis-server 7 in
RESP2 and RESP3; keyspace events match; streams survive a restart and
BGREWRITEAOF, and redis-server 7 loads the AOF BlinkDB wrote."""

import re

import pytest

from aof_helpers import (
    bgrewriteaof, blinkdb_snapshot, incr_files, parse_commands, redis_server,
    redis_snapshot_of_aof, start_aof_server, wait_rewrite_done,
)
from resp import plain
from test_persistence_redis_interop import check_aof

BAD_ID = b"-ERR Invalid stream ID specified as stream command argument\r\n"


def script():
    """Deterministic commands whose replies must match byte for byte."""
    s = []
    add = s.append
    add(("XADD", "s", "1-1", "a", "1", "b", "2"))
    add(("XADD", "s", "1-*", "a", "3", "b", "4"))
    add(("XADD", "s", "2", "c", "5"))
    add(("XADD", "s", "1-5", "a", "1"))
    add(("XADD", "s", "2-0", "a", "1"))
    add(("XADD", "s", "0-0", "a", "1"))
    add(("XADD", "fresh", "0-*", "a", "1"))
    add(("XADD", "s", "abc", "a", "1"))
    add(("XADD", "s", "1-2-3", "a", "1"))
    add(("XADD", "s", "-", "a", "1"))
    add(("XADD", "s", "18446744073709551616-0", "a", "1"))
    add(("XADD", "s", "3-0", "a"))
    add(("XADD", "s", "3-0"))
    add(("XADD", "s", "MAXLEN"))
    add(("XADD", "s", "MAXLEN", "-1", "3-0", "a", "1"))
    add(("XADD", "s", "MAXLEN", "x", "3-0", "a", "1"))
    add(("XADD", "s", "MAXLEN", "5", "MINID", "1", "3-0", "a", "1"))
    add(("XADD", "s", "MAXLEN", "5", "LIMIT", "3", "3-0", "a", "1"))
    add(("XADD", "s", "LIMIT", "3", "3-0", "a", "1"))
    add(("XADD", "s", "MAXLEN", "~", "5", "LIMIT", "-1", "3-0", "a", "1"))
    add(("XADD", "nope", "NOMKSTREAM", "1-1", "a", "1"))
    add(("EXISTS", "nope"))
    for i in range(3, 40):
        add(("XADD", "s", f"{i}-0", "a", str(i), "b", "x" * (i % 5)))
    add(("XADD", "s", "40-0", "other", "field"))
    add(("XADD", "s", "MAXLEN", "=", "30", "41-0", "a", "41"))
    add(("XADD", "s", "MAXLEN", "~", "20", "42-0", "a", "42"))
    add(("XLEN", "s"))
    add(("XADD", "s", "MINID", "20", "43-0", "a", "43"))
    add(("XLEN", "s"))
    add(("XRANGE", "s", "-", "+"))
    add(("XRANGE", "s", "-", "+", "COUNT", "3"))
    add(("XRANGE", "s", "-", "+", "COUNT", "0"))
    add(("XRANGE", "s", "-", "+", "COUNT", "-5"))
    add(("XRANGE", "s", "25", "27"))
    add(("XRANGE", "s", "(25-0", "(27-0"))
    add(("XRANGE", "s", "(18446744073709551615-18446744073709551615", "+"))
    add(("XRANGE", "s", "-", "(0-0"))
    add(("XRANGE", "s", "(-", "+"))
    add(("XRANGE", "s", "x", "+"))
    add(("XRANGE", "s", "-", "+", "COUNT"))
    add(("XRANGE", "s", "-", "+", "COUNT", "x"))
    add(("XRANGE", "s", "30", "20"))
    add(("XREVRANGE", "s", "+", "-", "COUNT", "4"))
    add(("XREVRANGE", "s", "(30", "(25"))
    add(("XRANGE", "absent", "-", "+"))
    add(("XLEN", "absent"))
    add(("XDEL", "s", "25-0", "26-0", "999-0"))
    add(("XDEL", "s", "25-0"))
    add(("XDEL", "s", "bad"))
    add(("XDEL", "absent", "bad"))
    add(("XRANGE", "s", "24", "28"))
    add(("XTRIM", "s", "MAXLEN", "10"))
    add(("XTRIM", "s", "MAXLEN", "~", "2"))
    add(("XTRIM", "s", "MINID", "38"))
    add(("XTRIM", "s"))
    add(("XTRIM", "s", "FOO", "1"))
    add(("XTRIM", "s", "MAXLEN", "1", "LIMIT", "1"))
    add(("XTRIM", "absent", "MAXLEN", "1"))
    add(("XRANGE", "s", "-", "+"))
    # XREAD (non-blocking).
    add(("XREAD", "STREAMS", "s", "0"))
    add(("XREAD", "COUNT", "1", "STREAMS", "s", "fresh", "0", "0"))
    add(("XREAD", "STREAMS", "s", "$"))
    add(("XREAD", "STREAMS", "absent", "0"))
    add(("XREAD", "STREAMS", "s"))
    add(("XREAD", "STREAMS", "s", ">"))
    add(("XREAD", "STREAMS", "s", "bad"))
    add(("XREAD", "GROUP", "g", "c", "STREAMS", "s", "0"))
    add(("XREAD", "NOACK", "STREAMS", "s", "0"))
    add(("XREAD", "COUNT", "x", "STREAMS", "s", "0"))
    add(("XREAD", "s", "0"))
    # XSETID.
    add(("XSETID", "s", "1-0"))
    add(("XSETID", "s", "100-0", "ENTRIESADDED", "1"))
    add(("XSETID", "s", "100-0", "ENTRIESADDED", "-1"))
    add(("XSETID", "s", "100-0", "MAXDELETEDID", "200-0"))
    add(("XSETID", "s", "100-0", "ENTRIESADDED", "500", "MAXDELETEDID", "50-0"))
    add(("XSETID", "absent", "1-0"))
    add(("XSETID", "s", "100-0", "FOO"))
    # Consumer groups.
    add(("XGROUP", "CREATE", "s", "g1", "0"))
    add(("XGROUP", "CREATE", "s", "g1", "0"))
    add(("XGROUP", "CREATE", "s", "g2", "$"))
    add(("XGROUP", "CREATE", "s", "g3", "38-0", "ENTRIESREAD", "5"))
    add(("XGROUP", "CREATE", "s", "g4", "0", "ENTRIESREAD", "-2"))
    add(("XGROUP", "CREATE", "s", "g4", "0", "FOO"))
    add(("XGROUP", "CREATE", "absent", "g", "0"))
    add(("XGROUP", "CREATE", "mk", "g", "$", "MKSTREAM"))
    add(("XGROUP", "CREATE", "s", "g5", "bad"))
    add(("XGROUP", "SETID", "s", "nog", "0"))
    add(("XGROUP", "CREATECONSUMER", "s", "g1", "alice"))
    add(("XGROUP", "CREATECONSUMER", "s", "g1", "alice"))
    add(("XGROUP", "CREATECONSUMER", "s", "nog", "alice"))
    add(("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "2", "STREAMS", "s", ">"))
    add(("XREADGROUP", "GROUP", "g1", "bob", "STREAMS", "s", ">"))
    add(("XREADGROUP", "GROUP", "g1", "bob", "STREAMS", "s", ">"))
    add(("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "s", "0"))
    add(("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "s", "$"))
    add(("XREADGROUP", "GROUP", "nog", "alice", "STREAMS", "s", ">"))
    add(("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "absent", ">"))
    add(("XREADGROUP", "STREAMS", "s", ">"))
    add(("XREADGROUP", "GROUP", "g2", "carol", "NOACK", "STREAMS", "s", ">"))
    add(("XPENDING", "s", "g1"))
    add(("XPENDING", "s", "g2"))
    add(("XPENDING", "s", "nog"))
    add(("XPENDING", "s", "g1", "-", "+"))
    add(("XPENDING", "s", "g1", "-", "+", "x"))
    add(("XPENDING", "s", "g1", "(99", "-", "10"))
    add(("XPENDING", "s", "g1", "-", "+", "10", "nobody"))
    add(("XINFO", "GROUPS", "s"))
    add(("XINFO", "GROUPS", "absent"))
    add(("XINFO", "CONSUMERS", "s", "nog"))
    add(("XINFO", "STREAM", "s", "FOO"))
    add(("XINFO", "STREAM", "s", "FULL", "COUNT", "x"))
    add(("XACK", "s", "g1", "38-0", "39-0", "1-0"))
    add(("XACK", "s", "g1", "38-0"))
    add(("XACK", "s", "nog", "bad"))
    add(("XACK", "s", "g1", "bad"))
    add(("XPENDING", "s", "g1"))
    add(("XCLAIM", "s", "g1", "dave", "0", "40-0", "JUSTID"))
    add(("XCLAIM", "s", "g1", "dave", "0", "41-0", "FORCE", "JUSTID"))
    add(("XCLAIM", "s", "g1", "dave", "x", "40-0"))
    add(("XCLAIM", "s", "g1", "dave", "0", "40-0", "FOO"))
    add(("XCLAIM", "s", "g1", "dave", "0", "40-0", "IDLE", "x"))
    add(("XCLAIM", "s", "nog", "dave", "0", "40-0"))
    add(("XCLAIM", "s", "g1", "erin", "3600000", "40-0"))
    add(("XPENDING", "s", "g1"))
    add(("XAUTOCLAIM", "s", "g1", "frank", "0", "0", "COUNT", "1", "JUSTID"))
    add(("XAUTOCLAIM", "s", "g1", "frank", "0", "0", "COUNT", "0"))
    add(("XAUTOCLAIM", "s", "g1", "frank", "0", "0", "COUNT", "x"))
    add(("XAUTOCLAIM", "s", "g1", "frank", "x", "0"))
    add(("XAUTOCLAIM", "s", "nog", "frank", "0", "0"))
    add(("XDEL", "s", "41-0"))
    add(("XAUTOCLAIM", "s", "g1", "frank", "0", "0", "JUSTID"))
    add(("XGROUP", "DELCONSUMER", "s", "g1", "frank"))
    add(("XGROUP", "DELCONSUMER", "s", "g1", "frank"))
    add(("XGROUP", "SETID", "s", "g1", "$"))
    add(("XGROUP", "SETID", "s", "g1", "0", "ENTRIESREAD", "3"))
    add(("XINFO", "GROUPS", "s"))
    add(("XGROUP", "DESTROY", "s", "g2"))
    add(("XGROUP", "DESTROY", "s", "g2"))
    add(("XGROUP", "HELP"))
    add(("XINFO", "HELP"))
    add(("XGROUP", "FOO"))
    add(("XINFO", "FOO", "s"))
    # Wrong types.
    add(("SET", "str", "x"))
    for cmd in [
        ("XADD", "str", "*", "a", "1"), ("XRANGE", "str", "-", "+"), ("XLEN", "str"),
        ("XDEL", "str", "1"), ("XTRIM", "str", "MAXLEN", "1"), ("XREAD", "STREAMS", "str", "0"),
        ("XSETID", "str", "1"), ("XGROUP", "CREATE", "str", "g", "0"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"), ("XACK", "str", "g", "1"),
        ("XPENDING", "str", "g"), ("XCLAIM", "str", "g", "c", "0", "1"),
        ("XAUTOCLAIM", "str", "g", "c", "0", "0"), ("XINFO", "STREAM", "str"),
        ("XINFO", "GROUPS", "str"), ("TYPE", "s"), ("OBJECT", "ENCODING", "s"),
        ("RPUSH", "s", "x"),
    ]:
        add(cmd)
    # Huge counts must not allocate up front.
    add(("XRANGE", "s", "-", "+", "COUNT", "9223372036854775807"))
    add(("XREAD", "COUNT", "9223372036854775807", "STREAMS", "s", "0"))
    add(("XPENDING", "s", "g1", "-", "+", "9223372036854775807"))
    add(("XAUTOCLAIM", "s", "g1", "x", "0", "0", "COUNT", "100000000"))
    add(("XADD", "s", "MAXLEN", "9223372036854775807", "99-0", "a", "1"))
    # An empty stream stays.
    add(("XADD", "e", "5-0", "a", "1"))
    add(("XDEL", "e", "5-0"))
    add(("EXISTS", "e"))
    add(("XADD", "e", "5-0", "a", "1"))
    add(("XADD", "e", "5-*", "a", "1"))
    add(("XSETID", "e", "18446744073709551615-18446744073709551615"))
    add(("XADD", "e", "*", "a", "1"))
    # A lag below zero (ENTRIESREAD past the entries added), and after XDEL.
    add(("XADD", "lag", "1-1", "a", "1"))
    add(("XADD", "lag", "2-1", "a", "1"))
    add(("XGROUP", "CREATE", "lag", "g", "$", "ENTRIESREAD", "10"))
    add(("XGROUP", "CREATE", "lag", "h", "0"))
    add(("XINFO", "GROUPS", "lag"))
    add(("XREADGROUP", "GROUP", "h", "c", "COUNT", "1", "STREAMS", "lag", ">"))
    add(("XDEL", "lag", "2-1"))
    add(("XINFO", "GROUPS", "lag"))
    add(("XREADGROUP", "GROUP", "h", "c", "STREAMS", "lag", "0"))
    return s


def strip_nodes(raw):
    """XINFO STREAM's radix-tree-nodes counts Redis's own tree nodes."""
    marker = b"radix-tree-nodes\r\n:"
    at = raw.find(marker)
    if at < 0:
        return raw
    end = raw.index(b"\r\n", at + len(marker))
    return raw[:at + len(marker)] + b"N" + raw[end:]


def run_pair(a, b, commands, what):
    bad = []
    for cmd in commands:
        ra, rb = a.call(*cmd), b.call(*cmd)
        if strip_nodes(ra.raw) != strip_nodes(rb.raw):
            bad.append(f"{what}: {cmd[:8]}\n  oracle: {ra.raw[:300]!r}\n  blinkdb: {rb.raw[:300]!r}")
    assert not bad, "\n".join(bad[:20]) + f"\n({len(bad)} mismatches)"


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_oracle(blinkdb, oracle, proto):
    with blinkdb.connect() as b, oracle.connect() as a:
        if proto == 3:
            assert not a.call("HELLO", "3").is_error()
            assert not b.call("HELLO", "3").is_error()
        run_pair(a, b, script(), f"RESP{proto}")
        # The stream as a whole, now that the script ran.
        run_pair(a, b, [("XINFO", "STREAM", "s"), ("XINFO", "STREAM", "mk"),
                        ("XINFO", "STREAM", "e")], f"RESP{proto} info")


def test_node_limits_and_trimming(blinkdb, oracle):
    """Approximate trims remove whole nodes only, sized by
    stream-node-max-entries as in Redis."""
    with blinkdb.connect() as b, oracle.connect() as a:
        cmds = [("CONFIG", "SET", "stream-node-max-entries", "10")]
        cmds += [("XADD", "t", f"{i}-1", "f", str(i)) for i in range(1, 96)]
        cmds += [
            ("XINFO", "STREAM", "t"),
            ("XTRIM", "t", "MAXLEN", "~", "50"), ("XLEN", "t"),
            ("XTRIM", "t", "MINID", "~", "67"), ("XLEN", "t"),
            ("XTRIM", "t", "MAXLEN", "~", "0", "LIMIT", "15"), ("XLEN", "t"),
            ("XADD", "t", "MAXLEN", "~", "5", "200-0", "f", "v"), ("XLEN", "t"),
            ("XINFO", "STREAM", "t", "FULL"),
            ("CONFIG", "SET", "stream-node-max-entries", "1"),
            ("XADD", "u", "1-1", "a", "1"), ("XADD", "u", "1-2", "a", "2"),
            ("XINFO", "STREAM", "u"),
        ]
        run_pair(a, b, cmds, "nodes")


def test_keyspace_events_match(blinkdb, oracle):
    def events(srv):
        with srv.connect() as c, srv.connect() as sub:
            c.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
            sub.call("PSUBSCRIBE", "__keyevent@*__:*")
            for cmd in EVENT_SCRIPT:
                c.call(*cmd)
            c.call("SET", "end", "1")
            seen = []
            while True:
                reply = sub.read_reply()
                _, _, channel, key = plain((reply.kind, reply.value))
                seen.append((channel, key))
                if key == b"end":
                    return seen

    assert events(oracle) == events(blinkdb)


EVENT_SCRIPT = [
    ("XADD", "e", "1-1", "a", "1"), ("XADD", "e", "2-1", "a", "1"),
    ("XADD", "e", "MAXLEN", "1", "3-1", "a", "1"), ("XDEL", "e", "3-1"), ("XDEL", "e", "3-1"),
    ("XADD", "e", "4-1", "a", "1"), ("XTRIM", "e", "MAXLEN", "0"), ("XSETID", "e", "9-9"),
    ("XGROUP", "CREATE", "e", "g", "0"), ("XGROUP", "CREATECONSUMER", "e", "g", "c"),
    ("XADD", "e", "10-1", "a", "1"),
    ("XREADGROUP", "GROUP", "g", "d", "STREAMS", "e", ">"),
    ("XCLAIM", "e", "g", "x", "0", "10-1"), ("XGROUP", "DELCONSUMER", "e", "g", "x"),
    ("XGROUP", "SETID", "e", "g", "0"), ("XGROUP", "DESTROY", "e", "g"),
    ("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"), ("DEL", "m"),
]


def stream_snapshot(conn):
    keys = sorted(k for _, k in conn.call("KEYS", "*").value)
    snap = {}
    for k in keys:
        info = plain((b"*", conn.call("XINFO", "STREAM", k, "FULL").value))
        info = dict(zip(info[::2], info[1::2]))
        info.pop(b"radix-tree-nodes")
        info.pop(b"radix-tree-keys")
        snap[k] = repr(drop_seen_time(info))
    return snap


def drop_seen_time(x):
    """Consumers' seen-time is the time of loading, not of the commands."""
    if isinstance(x, list):
        out = []
        skip = False
        for i, v in enumerate(x):
            if skip:
                skip = False
                continue
            if v == b"seen-time":
                skip = True
                continue
            out.append(drop_seen_time(v))
        return out
    if isinstance(x, dict):
        return {k: drop_seen_time(v) for k, v in x.items() if k != b"seen-time"}
    return x


def stream_workload(conn):
    cmds = []
    for k in range(4):
        key = f"s{k}"
        for i in range(1, 400):
            cmds.append(("XADD", key, f"{i}-{k}", "field", f"v{i}", "n", str(i * k)))
        cmds.append(("XADD", key, "MAXLEN", "~", "300", "1000-0", "x", "y"))
        cmds.append(("XTRIM", key, "MINID", "50"))
        cmds.append(("XDEL", key, f"60-{k}", f"61-{k}"))
        cmds.append(("XGROUP", "CREATE", key, "g", "0"))
        cmds.append(("XGROUP", "CREATE", key, "h", "$", "ENTRIESREAD", "3"))
        cmds.append(("XREADGROUP", "GROUP", "g", "alice", "COUNT", "10", "STREAMS", key, ">"))
        cmds.append(("XREADGROUP", "GROUP", "g", "bob", "NOACK", "COUNT", "5", "STREAMS", key, ">"))
        cmds.append(("XACK", key, "g", f"70-{k}", f"71-{k}"))
        cmds.append(("XCLAIM", key, "g", "carol", "0", f"72-{k}", "TIME", "1000", "RETRYCOUNT", "7"))
        cmds.append(("XAUTOCLAIM", key, "g", "dave", "0", "0", "COUNT", "2"))
        cmds.append(("XGROUP", "CREATECONSUMER", key, "g", "idle"))
        cmds.append(("XDEL", key, f"74-{k}"))
    cmds.append(("XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM"))
    cmds.append(("XADD", "gone", "1-1", "a", "b"))
    cmds.append(("XDEL", "gone", "1-1"))
    cmds.append(("XSETID", "gone", "5-5", "ENTRIESADDED", "9", "MAXDELETEDID", "3-3"))
    for reply in conn.pipeline(cmds):
        assert not reply.is_error(), reply.raw


def test_persistence_restart_rewrite_and_redis_loads(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    expected = blinkdb_snapshot(blinkdb_binary, directory, stream_snapshot, stream_workload)
    assert len(expected) == 6
    assert redis_snapshot_of_aof(directory, str(tmp_path / "redis-incr"), stream_snapshot) == \
        expected, "redis-server replaying BlinkDB's records"
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            assert stream_snapshot(conn) == expected, "after a restart"
            bgrewriteaof(conn)
            assert wait_rewrite_done(conn)["aof_last_bgrewrite_status"] == "ok"
            conn.call("XADD", "after", "1-1", "x", "y")
            expected = stream_snapshot(conn)
    finally:
        srv.stop()
    assert blinkdb_snapshot(blinkdb_binary, directory, stream_snapshot) == expected, \
        "after BGREWRITEAOF and a restart"
    check_aof(directory)
    assert redis_snapshot_of_aof(directory, str(tmp_path / "redis-copy"), stream_snapshot) == \
        expected, "redis-server loading BlinkDB's rewrite"


def test_blocking_reads_are_served_by_writes(blinkdb, oracle):
    """XREAD BLOCK and XREADGROUP BLOCK wait for XADD (and end on DEL or a
    group destroyed) with the replies redis-server gives; a timeout
    answers a null array; MULTI never blocks."""
    def run(srv):
        seen = []
        with srv.connect() as c, srv.connect() as w:
            c.call("XADD", "s", "1-1", "a", "1")
            c.call("XGROUP", "CREATE", "s", "g", "$")
            seen.append(c.call("XREAD", "BLOCK", "50", "STREAMS", "s", "$").raw)
            w.send("XREAD", "BLOCK", "0", "STREAMS", "s", "other", "$", "$")
            wait_blocked(c, 1)
            c.call("XADD", "s", "2-1", "b", "2")
            seen.append(w.read_reply().raw)
            c.call("XGROUP", "SETID", "s", "g", "$")
            w.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
            wait_blocked(c, 1)
            c.call("XADD", "s", "3-1", "c", "3")
            seen.append(w.read_reply().raw)
            seen.append(c.call("XPENDING", "s", "g").raw)
            w.send("XREADGROUP", "GROUP", "g", "bob", "BLOCK", "0", "STREAMS", "s", ">")
            wait_blocked(c, 1)
            c.call("XGROUP", "DESTROY", "s", "g")
            seen.append(w.read_reply().raw)
            c.call("XGROUP", "CREATE", "s", "g", "$")
            w.send("XREADGROUP", "GROUP", "g", "bob", "BLOCK", "0", "STREAMS", "s", ">")
            wait_blocked(c, 1)
            c.call("DEL", "s")
            seen.append(w.read_reply().raw)
            c.call("MULTI")
            c.call("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
            seen.append(c.call("EXEC").raw)
        return seen

    assert run(blinkdb) == run(oracle)


def test_group_readers_blocked_together_take_new_entries_in_turn(blinkdb, oracle):
    """Readers of one group blocked on a stream: each XADD serves the first
    still waiting and leaves the others blocked; a reader of a group whose
    last ID is past the new entry stays blocked until the stream passes it."""
    def run(srv):
        seen = []
        with srv.connect() as c, srv.connect() as a, srv.connect() as b, \
                srv.connect() as d:
            c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
            c.call("XGROUP", "CREATE", "s", "ahead", "$")
            c.call("XGROUP", "SETID", "s", "ahead", "5-0")
            d.send("XREADGROUP", "GROUP", "ahead", "dan", "BLOCK", "0", "STREAMS", "s", ">")
            wait_blocked(c, 1)
            a.send("XREADGROUP", "GROUP", "g", "ann", "BLOCK", "0", "STREAMS", "s", ">")
            wait_blocked(c, 2)
            b.send("XREADGROUP", "GROUP", "g", "bob", "COUNT", "5", "BLOCK", "0",
                   "STREAMS", "s", ">")
            wait_blocked(c, 3)
            c.call("XADD", "s", "1-1", "f", "1")
            seen.append(a.read_reply().raw)
            wait_blocked(c, 2)
            c.call("XADD", "s", "2-1", "f", "2")
            seen.append(b.read_reply().raw)
            wait_blocked(c, 1)
            c.call("XADD", "s", "6-1", "f", "6")
            seen.append(d.read_reply().raw)
            wait_blocked(c, 0)
            seen.append(c.call("XINFO", "GROUPS", "s").raw)
        return seen

    assert run(blinkdb) == run(oracle)


def wait_blocked(conn, n):
    import time
    for _ in range(200):
        info = conn.call("INFO", "clients").value
        if f"blocked_clients:{n}".encode() in info:
            return
        time.sleep(0.01)
    raise AssertionError(f"no client blocked: {info!r}")


AOF_SCENARIO = [
    ("XADD", "s", "1-1", "a", "1"), ("XADD", "s", "2-1", "a", "2"), ("XADD", "s", "3-1", "a", "3"),
    ("XADD", "s", "4-1", "a", "4"), ("XADD", "s", "*", "a", "5"),
    ("XGROUP", "CREATE", "s", "g", "$"), ("XGROUP", "SETID", "s", "g", "0"),
    ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "bob", "NOACK", "COUNT", "1", "STREAMS", "s", ">"),
    ("XDEL", "s", "1-1"),
    ("XCLAIM", "s", "g", "carol", "0", "1-1", "2-1"),
    ("XCLAIM", "s", "g", "carol", "0", "3-1", "FORCE", "LASTID", "9-9"),
    ("XAUTOCLAIM", "s", "g", "dave", "0", "0"),
    ("XREADGROUP", "GROUP", "g", "erin", "STREAMS", "s", ">"),
    ("XADD", "s", "MINID", "~", "3", "*", "a", "6"),
    ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "0", "*", "a", "7"),
    ("XTRIM", "s", "MAXLEN", "~", "0"),
    ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"),
    ("XACK", "s", "g", "2-1", "4-1"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "frank"),
    ("XGROUP", "DELCONSUMER", "s", "g", "erin"),
    ("XSETID", "s", "99999999999999-0", "ENTRIESADDED", "50", "MAXDELETEDID", "3-0"),
    ("XGROUP", "DESTROY", "s", "g"),
]


def logged(directory):
    """The commands of the incr AOF files, times and generated IDs masked."""
    out = []
    for path in incr_files(directory):
        with open(path, "rb") as f:
            for _, _, args in parse_commands(f.read()):
                args = [a.upper() if i == 0 else a for i, a in enumerate(args)]
                for i in range(1, len(args)):
                    if args[i - 1] == b"TIME":
                        args[i] = b"T"
                # IDs from the clock (XADD *), 13 digits of ms in 2026.
                args = [b"ID" if re.fullmatch(rb"1\d{12}-\d+", a) else a for a in args]
                out.append(args)
    return out


def test_aof_records_match_what_redis_propagates(blinkdb_binary, tmp_path):
    """The incr AOF after XREADGROUP, XCLAIM, XAUTOCLAIM, approximate trims
    and auto IDs holds the commands redis-server's does (MULTI/EXEC around
    a command's several effects, XCLAIM ... LASTID per entry, = thresholds)."""
    directory = str(tmp_path / "blinkdb")
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            for cmd in AOF_SCENARIO:
                conn.call(*cmd)
    finally:
        srv.stop()
    odir = str(tmp_path / "oracle")
    oracle = redis_server(odir, odir + "-log")
    try:
        with oracle.connect() as conn:
            for cmd in AOF_SCENARIO:
                conn.call(*cmd)
    finally:
        oracle.stop()
    assert logged(directory) == logged(odir)


def test_watch_sees_what_redis_signals(blinkdb, oracle):
    """XADD, XDEL and XTRIM that change the stream abort a WATCH; group
    commands, XSETID and no-op deletes or trims do not, as in Redis."""
    cmds = [("XADD", "s", "1-1", "a", "1"), ("XADD", "s", "2-1", "a", "1"),
            ("XGROUP", "CREATE", "s", "g", "0")]
    for cmd in [("XDEL", "s", "9-9"), ("XDEL", "s", "2-1"), ("XTRIM", "s", "MAXLEN", "5"),
                ("XTRIM", "s", "MINID", "0"), ("XGROUP", "CREATECONSUMER", "s", "g", "c"),
                ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
                ("XACK", "s", "g", "1-1"), ("XCLAIM", "s", "g", "d", "0", "1-1", "FORCE"),
                ("XAUTOCLAIM", "s", "g", "c", "0", "0"), ("XADD", "s", "3-0", "a", "1"),
                ("XSETID", "s", "9-1"), ("XGROUP", "SETID", "s", "g", "0"),
                ("XGROUP", "DELCONSUMER", "s", "g", "c"), ("XGROUP", "CREATE", "s", "h", "$"),
                ("XGROUP", "DESTROY", "s", "h"), ("XTRIM", "s", "MAXLEN", "0")]:
        cmds += [("WATCH", "s"), cmd, ("MULTI",), ("PING",), ("EXEC",)]
    with blinkdb.connect() as b, oracle.connect() as a:
        run_pair(a, b, cmds, "watch")
