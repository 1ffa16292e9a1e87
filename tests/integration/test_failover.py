"""FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms] (issue 22), as Redis 7.0.

The scenarios of Redis's tests/integration/failover.tcl on three BlinkDB nodes (to a
given replica under a write load, to any replica, FORCE past a timeout, a timeout that
aborts, FAILOVER ABORT, a target that refuses PSYNC), every error reply byte-compared
with redis-server 7.0.15 in the same topology, and both mixed directions: a BlinkDB
master handing over to a redis-server replica, and a redis-server master handing over
to a BlinkDB replica (which must accept `PSYNC <replid> <offset> FAILOVER`)."""

import os
import signal
import threading
import time

import pytest

from rdb_helpers import client
from resp import RespConnection
from test_replication import (
    info,
    peers,  # noqa: F401 (fixture)
    replica_log,
    same_keyspace_but_group_counters,
    start_redis,
    wait_for,
)

HOST = "127.0.0.1"


def s(conn, field, section="replication"):
    return info(conn, section).get(field)


def stat(conn, field):
    return int(s(conn, field, "stats"))


def role(conn):
    return conn.execute_command("ROLE")[0]


def synced_with(replica, master):
    wait_for(lambda: s(replica, "master_link_status") == "up", what="link up")

    def same():
        return s(master, "master_repl_offset") == s(replica, "slave_repl_offset")

    wait_for(same, what="replica offset == master offset")


def failover_done(conn, timeout=10.0):
    wait_for(lambda: s(conn, "master_failover_state") == "no-failover", timeout=timeout,
             what="master_failover_state:no-failover")


def raw(port, *args):
    with RespConnection(port) as c:
        return c.call(*args).raw


def raw3(port, *args):
    with RespConnection(port) as c:
        c.call("HELLO", "3")
        return c.call(*args).raw


class WriteLoad:
    """A client writing as fast as it can; counts what was acknowledged."""

    def __init__(self, port):
        self.port = port
        self.stop = threading.Event()
        self.acked = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        c = client(self.port)
        i = 0
        while not self.stop.is_set():
            try:
                c.set(f"load:{i}", i)
                self.acked += 1
            except Exception:  # noqa: BLE001 - READONLY once the failover is over
                time.sleep(0.01)
            i += 1

    def end(self):
        self.stop.set()
        self.thread.join(10)


def three_blinkdb(server_factory):
    nodes = [server_factory() for _ in range(3)]
    conns = [client(n.port) for n in nodes]
    return nodes, conns


def test_failover_errors_match_redis(server_factory, tmp_path, peers):
    """Each error FAILOVER, PSYNC FAILOVER and REPLICAOF give, against redis-server
    in the same topology (a master with one replica), RESP2 and RESP3."""
    bm = server_factory()
    rm = start_redis(peers, tmp_path, "rm")
    pairs = [(bm.port, rm.port)]
    # Without replicas.
    no_replica = [
        ("FAILOVER",),
        ("FAILOVER", "ABORT"),
        ("FAILOVER", "TO", HOST, "1"),
    ]
    for cmd in no_replica:
        for b, r in pairs:
            assert raw(b, *cmd) == raw(r, *cmd), cmd
            assert raw3(b, *cmd) == raw3(r, *cmd), cmd
    br = server_factory("--replicaof", HOST, str(bm.port))
    rr = start_redis(peers, tmp_path, "rr", ["--replicaof", HOST, str(rm.port)])
    b_m, r_m = client(bm.port), client(rm.port)
    b_r, r_r = client(br.port), client(rr.port)
    synced_with(b_r, b_m)
    synced_with(r_r, r_m)
    cases = [
        ("FAILOVER", "TIMEOUT", "0"),
        ("FAILOVER", "TIMEOUT", "-5"),
        ("FAILOVER", "TIMEOUT", "abc"),
        ("FAILOVER", "TIMEOUT", "10", "TIMEOUT", "10"),
        ("FAILOVER", "TO", HOST, "abc"),
        ("FAILOVER", "TO", HOST),
        ("FAILOVER", "TO", "invalidhost", "1"),
        ("FAILOVER", "FORCE"),
        ("FAILOVER", "FORCE", "TIMEOUT", "100"),
        ("FAILOVER", "FORCE", "FORCE"),
        ("FAILOVER", "NOSUCH"),
        ("FAILOVER", "ABORT"),
        ("FAILOVER", "ABORT", "TIMEOUT", "5"),
        ("PSYNC", "?", "-1", "FAILOVER"),
    ]
    for cmd in cases:
        assert raw(bm.port, *cmd) == raw(rm.port, *cmd), cmd
        assert raw3(bm.port, *cmd) == raw3(rm.port, *cmd), cmd
    # TO the replica, FORCE without a timeout; and the replica's own port.
    assert raw(bm.port, "FAILOVER", "TO", HOST, str(br.port), "FORCE") == \
        raw(rm.port, "FAILOVER", "TO", HOST, str(rr.port), "FORCE")
    assert raw(bm.port, "FAILOVER", "TO", HOST, str(bm.port)) == \
        raw(rm.port, "FAILOVER", "TO", HOST, str(rm.port))
    # On a replica.
    for cmd in (("FAILOVER",), ("FAILOVER", "TO", HOST, "1"),
                ("PSYNC", "0" * 40, "1", "FAILOVER")):
        assert raw(br.port, *cmd) == raw(rr.port, *cmd), cmd
    # While waiting for a stopped replica: the state, and what is refused.
    os.kill(br.pid, signal.SIGSTOP)
    os.kill(rr.pid, signal.SIGSTOP)
    try:
        b_m.set("k", "v")
        r_m.set("k", "v")
        for port, rep in ((bm.port, br.port), (rm.port, rr.port)):
            assert raw(port, "FAILOVER", "TO", HOST, str(rep), "TIMEOUT", "60000") == b"+OK\r\n"
        assert s(b_m, "master_failover_state") == "waiting-for-sync"
        assert s(r_m, "master_failover_state") == "waiting-for-sync"
        for cmd in (("FAILOVER",), ("FAILOVER", "TO", HOST, str(br.port)),
                    ("REPLICAOF", "NO", "ONE"), ("REPLICAOF", HOST, "1"),
                    ("PSYNC", "?", "-1"), ("SYNC",), ("GET", "k")):
            b, r = raw(bm.port, *cmd), raw(rm.port, *cmd)
            if cmd[0] == "FAILOVER" and len(cmd) > 1:
                r = raw(rm.port, "FAILOVER", "TO", HOST, str(rr.port))
            assert b == r, cmd
        # Writes wait (the pause); CLIENT UNPAUSE does not lift FAILOVER's.
        for port in (bm.port, rm.port):
            with RespConnection(port) as c:
                c.call("CLIENT", "UNPAUSE")
                c.send("SET", "held", "1")
                assert c.read_all_available(0.3)[0] == b""
                assert raw(port, "FAILOVER", "ABORT") == b"+OK\r\n"
                assert c.read_reply().raw == b"+OK\r\n"
        assert s(b_m, "master_failover_state") == "no-failover"
    finally:
        os.kill(br.pid, signal.SIGCONT)
        os.kill(rr.pid, signal.SIGCONT)
    assert role(b_m) == b"master"
    synced_with(b_r, b_m)
    assert b_r.get("held") == b"1"


def test_failover_scenarios_on_three_blinkdb_nodes(server_factory):
    """failover.tcl's scenarios, in its order, on three BlinkDB servers."""
    nodes, (n0, n1, n2) = three_blinkdb(server_factory)
    p0, p1, p2 = (n.port for n in nodes)
    with pytest.raises(Exception, match="^FAILOVER requires connected replicas"):
        n0.execute_command("FAILOVER", "TO", HOST, p1)
    n1.execute_command("REPLICAOF", HOST, p0)
    n2.execute_command("REPLICAOF", HOST, p0)
    synced_with(n1, n0)
    synced_with(n2, n0)

    # To a specific replica, with a delta under a write load.
    psyncs, fulls = stat(n1, "sync_partial_ok"), stat(n1, "sync_full")
    load = WriteLoad(p0)
    os.kill(nodes[1].pid, signal.SIGSTOP)
    wait_for(lambda: load.acked > 100, what="writes accepted")
    os.kill(nodes[1].pid, signal.SIGCONT)
    t = time.monotonic()
    assert n0.execute_command("FAILOVER", "TO", HOST, p1) == b"OK"
    failover_done(n0)
    print(f"\nFAILOVER TO a replica behind by a write load: {time.monotonic() - t:.2f} s")
    load.end()
    n2.execute_command("REPLICAOF", HOST, p1)
    synced_with(n0, n1)
    synced_with(n2, n1)
    assert [role(n0), role(n1), role(n2)] == [b"slave", b"master", b"slave"]
    assert stat(n1, "sync_partial_ok") - psyncs == 2
    assert stat(n1, "sync_full") - fulls == 0
    assert same_keyspace_but_group_counters(p0, p1) >= 100
    assert same_keyspace_but_group_counters(p1, p2) >= 100
    # Every write the old master acknowledged is on the new one.
    assert n1.dbsize() >= load.acked

    # To any replica: node 0 stopped, so node 2 is the one synced.
    psyncs = stat(n2, "sync_partial_ok")
    os.kill(nodes[0].pid, signal.SIGSTOP)
    n1.set("CASE", 1)
    assert n1.execute_command("FAILOVER") == b"OK"
    failover_done(n1)
    os.kill(nodes[0].pid, signal.SIGCONT)
    n0.execute_command("REPLICAOF", HOST, p2)
    synced_with(n0, n2)
    synced_with(n1, n2)
    assert [role(n0), role(n1), role(n2)] == [b"slave", b"slave", b"master"]
    assert stat(n2, "sync_partial_ok") - psyncs == 2
    assert n0.get("CASE") == b"1"
    same_keyspace_but_group_counters(p0, p2)
    same_keyspace_but_group_counters(p1, p2)

    # FORCE: node 0 never acknowledges, the timeout hands over anyway.
    psyncs, fulls = stat(n0, "sync_partial_ok"), stat(n0, "sync_full")
    os.kill(nodes[0].pid, signal.SIGSTOP)
    n2.set("case", 2)
    assert n2.execute_command("FAILOVER", "TO", HOST, p0, "TIMEOUT", 100, "FORCE") == b"OK"
    wait_for(lambda: s(n2, "master_failover_state") == "failover-in-progress",
             what="failover-in-progress")
    assert role(n1) == b"slave" and role(n2) == b"slave"
    os.kill(nodes[0].pid, signal.SIGCONT)
    failover_done(n2)
    n1.execute_command("REPLICAOF", HOST, p0)
    synced_with(n1, n0)
    synced_with(n2, n0)
    assert [role(n0), role(n1), role(n2)] == [b"master", b"slave", b"slave"]
    assert replica_log(nodes[2]).count("time out exceeded, failing over.") == 1
    assert stat(n0, "sync_partial_ok") - psyncs == 2
    assert stat(n0, "sync_full") - fulls == 0
    assert n0.get("case") == b"2"
    same_keyspace_but_group_counters(p0, p1)
    same_keyspace_but_group_counters(p0, p2)

    # A timeout without FORCE aborts: node 0 stays the master, nobody resyncs.
    psyncs, fulls = stat(n0, "sync_partial_ok"), stat(n0, "sync_full")
    os.kill(nodes[1].pid, signal.SIGSTOP)
    n0.set("CASE", 1)
    assert n0.execute_command("FAILOVER", "TO", HOST, p1, "TIMEOUT", 500) == b"OK"
    failover_done(n0, timeout=3)
    os.kill(nodes[1].pid, signal.SIGCONT)
    synced_with(n1, n0)
    synced_with(n2, n0)
    assert [role(n0), role(n1), role(n2)] == [b"master", b"slave", b"slave"]
    assert stat(n0, "sync_partial_ok") - psyncs == 0
    assert stat(n0, "sync_full") - fulls == 0
    assert "Replica never caught up before timeout" in replica_log(nodes[0])

    # FAILOVER ABORT while waiting; reads still served.
    os.kill(nodes[1].pid, signal.SIGSTOP)
    n0.set("CASE", 2)
    assert n0.execute_command("FAILOVER", "TO", HOST, p1, "TIMEOUT", 60000) == b"OK"
    assert s(n0, "master_failover_state") == "waiting-for-sync"
    assert n0.get("CASE") == b"2"
    assert n0.execute_command("FAILOVER", "ABORT") == b"OK"
    assert s(n0, "master_failover_state") == "no-failover"
    os.kill(nodes[1].pid, signal.SIGCONT)
    synced_with(n1, n0)
    synced_with(n2, n0)
    assert stat(n0, "sync_partial_ok") - psyncs == 0
    assert stat(n0, "sync_full") - fulls == 0

    # A target that refuses PSYNC (failover.tcl takes +psync away with ACL;
    # here a password node 0 does not know: -NOAUTH): the failover aborts,
    # node 0 is a master again (a new history), its replicas resync partially.
    admin = RespConnection(p1)
    admin.call("CONFIG", "SET", "requirepass", "secret")
    admin.call("AUTH", "secret")
    os.kill(nodes[1].pid, signal.SIGSTOP)
    with RespConnection(p0) as c:
        c.send("SET", "FOO", "BAR")
        assert n0.execute_command("FAILOVER", "TO", HOST, p1) == b"OK"
        os.kill(nodes[1].pid, signal.SIGCONT)
        failover_done(n0)
        assert c.read_reply().raw == b"+OK\r\n"
    admin.call("CONFIG", "SET", "requirepass", "")
    admin.close()
    synced_with(n1, n0)
    synced_with(n2, n0)
    assert [role(n0), role(n1), role(n2)] == [b"master", b"slave", b"slave"]
    assert stat(n0, "sync_partial_ok") - psyncs == 2
    assert stat(n0, "sync_full") - fulls == 0
    assert replica_log(nodes[0]).count("Failover target rejected psync request") == 1
    assert n1.get("FOO") == b"BAR"
    same_keyspace_but_group_counters(p0, p1)
    same_keyspace_but_group_counters(p0, p2)


def test_blinkdb_master_fails_over_to_a_redis_replica(server_factory, tmp_path, peers):
    bm = server_factory()
    m = client(bm.port)
    for i in range(200):
        m.set(f"k{i}", i)
    m.hset("h", mapping={"a": 1})
    rr = start_redis(peers, tmp_path, "rr", ["--replicaof", HOST, str(bm.port)])
    r = client(rr.port)
    synced_with(r, m)
    load = WriteLoad(bm.port)
    wait_for(lambda: load.acked > 100, what="writes accepted")
    assert m.execute_command("FAILOVER", "TO", HOST, rr.port, "TIMEOUT", 5000) == b"OK"
    failover_done(m)
    load.end()
    assert role(r) == b"master" and role(m) == b"slave"
    assert stat(r, "sync_partial_ok") == 1
    synced_with(m, r)
    assert same_keyspace_but_group_counters(bm.port, rr.port) >= 200 + load.acked
    assert "Failover request received" in replica_log(rr)
    with pytest.raises(Exception, match="read only replica"):
        m.set("x", 1)
    r.set("after", "failover")
    wait_for(lambda: m.get("after") == b"failover", what="the new master's write")


def test_redis_master_fails_over_to_a_blinkdb_replica(server_factory, tmp_path, peers):
    rm = start_redis(peers, tmp_path, "rm")
    m = client(rm.port)
    for i in range(200):
        m.set(f"k{i}", i)
    br = server_factory("--replicaof", HOST, str(rm.port))
    rr = start_redis(peers, tmp_path, "rr", ["--replicaof", HOST, str(rm.port)])
    b, r = client(br.port), client(rr.port)
    synced_with(b, m)
    synced_with(r, m)
    load = WriteLoad(rm.port)
    wait_for(lambda: load.acked > 100, what="writes accepted")
    assert m.execute_command("FAILOVER", "TO", HOST, br.port) == b"OK"
    failover_done(m)
    load.end()
    assert role(b) == b"master" and role(m) == b"slave"
    assert "MASTER MODE enabled (failover request from" in replica_log(br)
    synced_with(m, b)
    assert stat(b, "sync_partial_ok") == 1
    assert stat(b, "sync_full") == 0
    # The other redis-server replica moves to the new BlinkDB master, partially.
    r.execute_command("REPLICAOF", HOST, br.port)
    synced_with(r, b)
    assert stat(b, "sync_partial_ok") == 2
    assert same_keyspace_but_group_counters(br.port, rm.port) >= 200 + load.acked
    assert same_keyspace_but_group_counters(br.port, rr.port) >= 200 + load.acked
    b.set("after", "failover")
    wait_for(lambda: m.get("after") == b"failover", what="the new master's write")
