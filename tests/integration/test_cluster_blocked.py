"""Blocked clients and slots that move (issue 23, resharding), each run on
BlinkDB and on redis-server 7.0 (the oracle) with the same steps:

- a client blocked (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK) on a key whose slot
  moves to another node gets `-MOVED slot host:port`; on a slot no longer
  served `-CLUSTERDOWN Hash slot not served` (Redis's
  clusterRedirectBlockedClientIfNeeded);
- a master turned replica (CLUSTER FAILOVER of its replica, REPLICAOF out of
  cluster mode) ends its blocked clients with `-UNBLOCKED ...` and closes
  their connections (disconnectAllBlockedClients);
- a master that loses a slot it holds keys in to a newer config epoch
  deletes those keys; BlinkDB logs them as DELs (the AOF, its replica) as
  Redis 7.2 does, where 7.0 leaves its replica and AOF holding them."""

import time

import pytest

from cluster_util import (blinkdb_nodes, call, myid, redis_nodes, restart, stop_all,
                          wait_until)
from resp import RespConnection

KINDS = ["blinkdb", "redis"]
UNBLOCKED = (b"-UNBLOCKED force unblock from blocking operation, instance state changed "
             b"(master -> replica?)\r\n")


def make_nodes(kind, base, count, extra=()):
    make = blinkdb_nodes if kind == "blinkdb" else redis_nodes
    return make(base, count, extra)


def two_masters(nodes, split=8191):
    """nodes[0] serves 0..split, nodes[1] the rest (distinct config epochs)."""
    a, b = nodes[0], nodes[1]
    call(a, "CLUSTER", "SET-CONFIG-EPOCH", "1")
    call(b, "CLUSTER", "SET-CONFIG-EPOCH", "2")
    call(a, "CLUSTER", "ADDSLOTSRANGE", "0", str(split))
    if split < 16383:
        call(b, "CLUSTER", "ADDSLOTSRANGE", str(split + 1), "16383")
    for n in nodes[1:]:
        call(a, "CLUSTER", "MEET", "127.0.0.1", str(n.port))
    wait_until(lambda: all(b"cluster_state:ok" in call(n, "CLUSTER", "INFO").raw
                           and len(call(n, "CLUSTER", "NODES").value.split(b"\n")) > len(nodes)
                           for n in nodes), 30, "cluster ok")


BLOCKERS = [
    ("BLPOP", "{b}list", "0"),
    ("BLMOVE", "{b}from", "{b}to", "LEFT", "RIGHT", "0"),
    ("BZPOPMIN", "{b}zset", "0"),
    ("XREAD", "BLOCK", "0", "STREAMS", "{b}stream", "$"),
]


def block_all(node, blockers):
    conns = []
    for cmd in blockers:
        c = RespConnection(node.port, timeout=10)
        c.send(*cmd)
        conns.append(c)
    wait_until(lambda: b"blocked_clients:%d" % len(conns) in call(node, "INFO", "clients").raw,
               10, "clients blocked")
    return conns


def read_reply(c):
    return c.read_reply().raw


@pytest.mark.parametrize("kind", KINDS)
def test_blocked_clients_moved_when_their_slot_moves(kind, tmp_path):
    nodes = make_nodes(kind, tmp_path, 2, ("--cluster-require-full-coverage", "no"))
    try:
        a, b = nodes
        two_masters(nodes, split=16383)
        slot = call(a, "CLUSTER", "KEYSLOT", "{b}").value
        conns = block_all(a, BLOCKERS)
        for n in (b, a):
            assert call(n, "CLUSTER", "SETSLOT", str(slot), "NODE", myid(b)).raw == b"+OK\r\n"
        want = f"-MOVED {slot} 127.0.0.1:{b.port}\r\n".encode()
        for c in conns:
            assert read_reply(c) == want
            assert c.call("PING").raw == b"+PONG\r\n"  # the connection goes on
            c.close()
        assert b"blocked_clients:0" in call(a, "INFO", "clients").raw
        # Blocked on b, then the slot is no longer served by anyone.
        conns = block_all(b, BLOCKERS[:2])
        assert call(b, "CLUSTER", "DELSLOTS", str(slot)).raw == b"+OK\r\n"
        for c in conns:
            assert read_reply(c) == b"-CLUSTERDOWN Hash slot not served\r\n"
            c.close()
        # A client blocked (after ASKING) on a slot being imported waits on.
        call(b, "CLUSTER", "ADDSLOTS", str(slot))
        wait_until(lambda: call(a, "GET", "{b}list").raw == want, 20, "a knows b's slot")
        call(a, "CLUSTER", "SETSLOT", str(slot), "IMPORTING", myid(b))
        c = RespConnection(a.port, timeout=10)
        assert c.call("ASKING").raw == b"+OK\r\n"
        c.send("BLPOP", "{b}list", "0")
        wait_until(lambda: b"blocked_clients:1" in call(a, "INFO", "clients").raw, 10, "blocked")
        time.sleep(1.5)
        with a.connect() as w:
            w.call("ASKING")
            assert w.call("RPUSH", "{b}list", "v").value == 1
        assert read_reply(c) == b"*2\r\n$7\r\n{b}list\r\n$1\r\nv\r\n"
        c.close()
    finally:
        stop_all(nodes)


@pytest.mark.parametrize("kind", KINDS)
def test_blocked_clients_unblocked_when_master_turns_replica(kind, tmp_path):
    nodes = make_nodes(kind, tmp_path, 2)
    try:
        a, b = nodes
        two_masters(nodes, split=16383)
        assert call(b, "CLUSTER", "REPLICATE", myid(a)).raw == b"+OK\r\n"
        wait_until(lambda: b"master_link_status:up" in call(b, "INFO", "replication").raw,
                   30, "replica in sync")
        wait_until(lambda: len(call(a, "CLUSTER", "REPLICAS", myid(a)).value) == 1, 10,
                   "a knows its replica")
        conns = block_all(a, BLOCKERS + [("WAIT", "5", "0")])

        def offset(srv, field):
            info = call(srv, "INFO", "replication").value.decode()
            return int(info.split(f"{field}:")[1].split()[0])
        wait_until(lambda: offset(a, "master_repl_offset") == offset(b, "slave_repl_offset"),
                   10, "the replica caught up")
        assert call(b, "CLUSTER", "FAILOVER").raw == b"+OK\r\n"
        for c in conns:
            assert read_reply(c) == UNBLOCKED
            assert c.wait_closed()
            c.close()
        wait_until(lambda: b"role:slave" in call(a, "INFO", "replication").raw, 30, "a replica")
    finally:
        stop_all(nodes)


def test_blocked_clients_unblocked_by_replicaof(blinkdb, oracle):
    """Out of cluster mode: REPLICAOF ends the blocked clients as Redis does."""
    got = {}
    for name, srv in (("blinkdb", blinkdb), ("redis", oracle)):
        conns = block_all(srv, BLOCKERS[:3] + [("WAIT", "1", "0")])
        with srv.connect() as c:
            assert c.call("REPLICAOF", "127.0.0.1", "1").raw.startswith(b"+OK")
        got[name] = []
        for c in conns:
            got[name].append((read_reply(c), c.wait_closed()))
            c.close()
        with srv.connect() as c:
            c.call("REPLICAOF", "NO", "ONE")
    assert got["blinkdb"] == got["redis"]
    assert got["blinkdb"][0] == (UNBLOCKED, True)


@pytest.mark.parametrize("kind", KINDS)
def test_master_losing_a_slot_deletes_its_keys(kind, tmp_path):
    aof = ("--appendonly", "yes")
    nodes = make_nodes(kind, tmp_path, 3, aof)
    try:
        a, b, r = nodes
        two_masters(nodes)
        assert call(r, "CLUSTER", "REPLICATE", myid(a)).raw == b"+OK\r\n"
        wait_until(lambda: b"master_link_status:up" in call(r, "INFO", "replication").raw,
                   30, "replica in sync")
        lost = call(a, "CLUSTER", "KEYSLOT", "{lost}").value
        kept = call(a, "CLUSTER", "KEYSLOT", "{kept}").value
        assert lost <= 8191 and kept <= 8191
        with a.connect() as c:
            for i in range(50):
                c.call("SET", f"{{lost}}{i}", i)
                c.call("RPUSH", f"{{kept}}{i}", i)
            assert c.call("WAIT", "1", "5000").value == 1
        assert call(r, "DBSIZE").value == 100
        # b claims the slot with a newer config epoch (as after a reshard
        # that a crashed a never heard of): a gives it up and its keys go.
        assert call(b, "CLUSTER", "SETSLOT", str(lost), "NODE", myid(b)).raw == b"+OK\r\n"
        call(b, "CLUSTER", "BUMPEPOCH")
        wait_until(lambda: call(a, "CLUSTER", "COUNTKEYSINSLOT", str(lost)).value == 0,
                   20, "the keys of the lost slot deleted")
        assert call(a, "DBSIZE").value == 50
        assert call(a, "CLUSTER", "COUNTKEYSINSLOT", str(kept)).value == 50
        assert b"myself,master" in call(a, "CLUSTER", "NODES").value
        with a.connect() as c:
            r2 = c.call("GET", "{lost}1").raw
            assert r2 == f"-MOVED {lost} 127.0.0.1:{b.port}\r\n".encode()
        if kind == "redis":
            return  # 7.0 does not propagate these deletions (7.2 does, as BlinkDB)
        wait_until(lambda: call(r, "DBSIZE").value == 50, 10, "the replica follows")
        # The deletions are in a's AOF.
        a.stop()
        nodes[0] = a = restart(a)
        wait_until(lambda: call(a, "DBSIZE").value == 50, 10, "a reloaded")
        assert call(a, "CLUSTER", "COUNTKEYSINSLOT", str(lost)).value == 0
    finally:
        stop_all(nodes)
