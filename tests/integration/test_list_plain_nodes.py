"""DEBUG QUICKLIST-PACKED-THRESHOLD and Redis 7.0's plain list nodes, against redis-server
7.0.15 run the same way: the command's replies and errors; then, with a low threshold, the
replies of every list command over plain nodes, DEBUG OBJECT's node counts, and DUMP's
exact bytes (plain nodes as quicklist 2's PLAIN container, LZF-compressed when deeper than
list-compress-depth), through LSET's splits, LINSERT, LTRIM, LREM, LMOVE and DEBUG RELOAD;
and RESTORE of a payload with a plain node, and of one whose plain node is empty."""

import struct

import pytest

from rdb_helpers import crc64
from resp import RespConnection, plain
from server import ORACLE_BIN, ServerProcess

DEBUG = ("--enable-debug-command", "yes")


@pytest.fixture
def pair(blinkdb_binary, tmp_path):
    servers = [
        ServerProcess(blinkdb_binary, str(tmp_path / "blinkdb"), DEBUG),
        ServerProcess(ORACLE_BIN, str(tmp_path / "redis"), DEBUG),
    ]
    yield [RespConnection(s.port) for s in servers]
    for s in servers:
        s.stop()


def node_fields(reply):
    """DEBUG OBJECT's quicklist fields that do not depend on the node format in memory
    (ql_uncompressed_size and serializedlength do)."""
    fields = dict(w.split(":", 1) for w in reply.value.decode().split() if ":" in w)
    keep = ("encoding", "ql_nodes", "ql_avg_node", "ql_listpack_max", "ql_compressed")
    return {k: fields[k] for k in keep}


def run(conn, steps):
    out = []
    for step in steps:
        reply = conn.call(*step)
        if step[:2] == ("DEBUG", "OBJECT") and not reply.is_error():
            out.append((step, node_fields(reply)))
        else:
            out.append((step, reply.raw))
    return out


def assert_same(pair, steps):
    b, r = (run(conn, steps) for conn in pair)
    for (step, got), (_, want) in zip(b, r):
        assert got == want, f"{step}: BlinkDB {got!r}, redis-server {want!r}"


THRESHOLD_ARGS = [
    "1b", "0", "5", "10KB", "4095mb", "4096mb", "4gb", "-1", "abc", "", "1 b",
    "18446744073709551616",
]


def test_threshold_replies(pair):
    steps = [("DEBUG", "QUICKLIST-PACKED-THRESHOLD", a) for a in THRESHOLD_ARGS]
    steps += [("DEBUG", "QUICKLIST-PACKED-THRESHOLD"), ("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "1", "2")]
    assert_same(pair, steps)
    for conn in pair:
        reply = conn.call("DEBUG", "HELP")
        lines = plain((reply.kind, reply.value))
        assert any(line.startswith(b"QUICKLIST-PACKED-THRESHOLD") for line in lines)


def big(ch, n=120):
    return ch * n


LSET_STEPS = [
    ("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "5b"),
    ("RPUSH", "l", "aa", "bb", "cc", "dd", "ee"),
    ("DEBUG", "OBJECT", "l"),
    # Packed -> plain in the middle: the node splits in three.
    ("LSET", "l", "2", "eeeeeeeeee"),
    ("DEBUG", "OBJECT", "l"),
    ("DUMP", "l"),
    # At a node's head: no empty node is left.
    ("LSET", "l", "0", "xxxxxxx"),
    ("DEBUG", "OBJECT", "l"),
    # Plain -> packed: joins the next node.
    ("LSET", "l", "0", "a"),
    ("DEBUG", "OBJECT", "l"),
    # Plain -> plain.
    ("LSET", "l", "2", "ffffffffff"),
    ("DEBUG", "OBJECT", "l"),
    ("LRANGE", "l", "0", "-1"),
    ("DUMP", "l"),
    ("LINSERT", "l", "BEFORE", "bb", "yyyyyyyy"),
    ("LINSERT", "l", "AFTER", "yyyyyyyy", "q"),
    ("DEBUG", "OBJECT", "l"),
    ("DUMP", "l"),
    ("LPOS", "l", "ffffffffff"),
    ("LINDEX", "l", "1"),
    ("LTRIM", "l", "1", "-1"),
    ("DEBUG", "OBJECT", "l"),
    ("LREM", "l", "0", "q"),
    ("DEBUG", "OBJECT", "l"),
    ("DUMP", "l"),
    # Plain nodes stay plain once the threshold is back to 1 GB, across a reload.
    ("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0"),
    ("DEBUG", "RELOAD"),
    ("DEBUG", "OBJECT", "l"),
    ("DUMP", "l"),
    ("RPUSH", "l", "gggggggggg"),
    ("DEBUG", "OBJECT", "l"),
    ("RPOP", "l", "2"),
    ("LPOP", "l", "2"),
    ("DEBUG", "OBJECT", "l"),
    ("LRANGE", "l", "0", "-1"),
]


def test_commands_over_plain_nodes(pair):
    assert_same(pair, LSET_STEPS)


COMPRESSED_STEPS = [
    ("CONFIG", "SET", "list-compress-depth", "1"),
    ("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "100b"),
    ("RPUSH", "c", big("a"), "x", big("b"), "y", big("c"), "z"),
    ("DEBUG", "OBJECT", "c"),
    ("DUMP", "c"),
    ("LPUSH", "c", big("d")),
    ("DUMP", "c"),
    ("LSET", "c", "3", big("e")),
    ("DEBUG", "OBJECT", "c"),
    ("LRANGE", "c", "0", "-1"),
    ("LMOVE", "c", "d", "LEFT", "RIGHT"),
    ("LPOP", "c", "3"),
    ("DEBUG", "OBJECT", "c"),
    ("DUMP", "c"),
    ("DEBUG", "RELOAD"),
    ("DUMP", "c"),
    ("DEBUG", "OBJECT", "d"),
    ("DUMP", "d"),
]


def test_plain_nodes_compressed(pair):
    assert_same(pair, COMPRESSED_STEPS)


def payload(body):
    """A RESTORE payload of RDB type 18 (quicklist 2), RDB version 10."""
    data = bytes([18]) + body + struct.pack("<H", 10)
    return data + struct.pack("<Q", crc64(data))


def test_restore_plain_nodes(pair):
    # [plain "hello-world"] [listpack "a"]
    lp = b"\x0a\x00\x00\x00\x01\x00\x81a\x02\xff"
    good = payload(b"\x02\x01\x0bhello-world\x02\x0a" + lp)
    empty = payload(b"\x01\x01\x00")
    steps = [
        ("RESTORE", "k", "0", good),
        ("DEBUG", "OBJECT", "k"),
        ("LRANGE", "k", "0", "-1"),
        ("DUMP", "k"),
        ("RESTORE", "e", "0", empty),
        ("EXISTS", "e"),
    ]
    assert_same(pair, steps)
