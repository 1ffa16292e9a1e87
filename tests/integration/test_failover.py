"""FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms] (issue 22), as Redis 7.0.

The scenarios of Redis's tests/integration/failover.tcl on three BlinkDB nodes (to a
given replica under a write load, to any replica, FORCE past a timeout, a timeout that
aborts, FAILOVER ABORT, a target that refuses PSYNC), every error reply byte-compared
with redis-server 7.0.15 in the same topology, and both mixed directions: a BlinkDB
master handing over to a redis-server replica, and a redis-server master handing over
to a BlinkDB replica (which must accept `PSYNC <replid> <offset> FAILOVER`)."""

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from rdb_helpers import client
from resp import RespConnection
from server import ORACLE_BIN, ServerProcess, blinkdb_bin, free_port
from test_replica import start_sentinel, write_conf
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

    # redis-server marks a diskless-synced replica online only when its cron reaps
    # the RDB child, which can be after the replica reports its link up.
    def online():
        rep = info(master, "replication")
        return all("state=online" in str(v) for k, v in rep.items() if k.startswith("slave"))

    wait_for(online, what="master lists its replicas online")


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


# --- Sentinel: mixed topologies, acknowledged writes lost, time to a new master ---------

NODE_DIR = os.path.join(os.path.dirname(__file__), "..", "clients", "node")


class Node:
    """A redis-server or BlinkDB process started from a config file of its own (Sentinel
    rewrites it), restartable after kill -9."""

    def __init__(self, peers, tmp_path, name, kind, extra=()):
        self.kind, self.peers = kind, peers
        self.dir = str(tmp_path / name)
        os.makedirs(self.dir)
        self.port = free_port()
        lines = [f"port {self.port}", "bind 127.0.0.1", f"dir {self.dir}", "save \"\"",
                 "appendonly no", *extra]
        self.conf = write_conf(os.path.join(self.dir, "node.conf"), lines)
        self.start()

    def start(self):
        binary = ORACLE_BIN if self.kind == "redis" else blinkdb_bin()
        self.srv = ServerProcess(binary, self.dir, [], port=self.port, args=[self.conf])
        self.peers.append(self.srv)

    def kill9(self):
        self.srv.proc.kill()
        self.srv.proc.wait()

    def client(self, **kw):
        return client(self.port, **kw)


def quiet_info(port, section="replication"):
    try:
        with RespConnection(port, timeout=2) as c:
            text = c.call("INFO", section).value.decode()
        return dict(line.split(":", 1) for line in text.splitlines()
                    if line and not line.startswith("#"))
    except Exception:  # noqa: BLE001 - Sentinel's CLIENT KILL, a node down
        return {}


class AckedWriter:
    """A steady writer on the master: counts the writes it saw acknowledged. mode: "none"
    (SET's +OK), "wait" (SET then WAIT 1 100 answering 1), "min-replicas" (SET's +OK on
    a master with min-replicas-to-write 1)."""

    def __init__(self, port, mode):
        self.port, self.mode = port, mode
        self.acked = []
        self.refused = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            c = RespConnection(self.port, timeout=2)
            i = 0
            while not self.stop.is_set():
                key = f"w:{i}"
                i += 1
                reply = c.call("SET", key, i)
                if reply.is_error():
                    self.refused += 1
                    continue
                if self.mode == "wait" and c.call("WAIT", 1, 100).value != 1:
                    continue
                self.acked.append(key)
        except Exception:  # noqa: BLE001 - the master was killed
            pass

    def end(self):
        self.stop.set()
        self.thread.join(10)


@pytest.mark.parametrize("topology,mode", [
    ("redis-master", "none"),
    ("blinkdb-master", "none"),
    ("blinkdb-all", "none"),
    ("blinkdb-all", "wait"),
    ("blinkdb-all", "min-replicas"),
])
def test_sentinel_failover_under_write_load(tmp_path, peers, topology, mode):
    """redis-sentinel promotes a replica when the master is killed with -9 under a steady
    write load: the other replica and the restarted old master follow the new master; the
    test prints how many acknowledged writes the new master lacks and the time to a new
    master. Mixed: a redis-server master with BlinkDB replicas, and the reverse. In the
    all-BlinkDB run without WAIT, ioredis (the Node client of tests/clients/) finds the
    master through Sentinel and keeps writing across the failover."""
    master_kind = "redis" if topology == "redis-master" else "blinkdb"
    replica_kind = "redis" if topology == "blinkdb-master" else "blinkdb"
    extra = ["min-replicas-to-write 1"] if mode == "min-replicas" else []
    old = Node(peers, tmp_path, "old-master", master_kind, extra)
    replicas = [Node(peers, tmp_path, f"replica{i}", replica_kind,
                     [f"replicaof 127.0.0.1 {old.port}", *extra]) for i in range(2)]
    m = old.client()
    if mode == "min-replicas":
        # Writes are refused (NOREPLICAS) until a replica has acknowledged.
        wait_for(lambda: int(m.info("replication").get("min_slaves_good_slaves", 0)) >= 1,
                 timeout=30, what="a good replica")
    for i in range(100):
        m.set(f"pre:{i}", i)
    for r in replicas:
        synced_with(r.client(), m)
    sport = start_sentinel(peers, tmp_path, old.port)
    s = client(sport)
    wait_for(lambda: len(s.execute_command("SENTINEL", "REPLICAS", "mymaster")) == 2,
             timeout=30, what="Sentinel discovers both replicas")
    node = None
    use_node = topology == "blinkdb-all" and mode == "none"
    if use_node:
        if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "ioredis")):
            pytest.fail("ioredis is not installed: run `npm ci` in tests/clients/node")
        node = subprocess.Popen(["node", "sentinel_failover.js", str(sport), "mymaster"],
                                cwd=NODE_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
        assert node.stdout.readline().strip() == "ready"
    writer = AckedWriter(old.port, mode)
    wait_for(lambda: len(writer.acked) > 2000, timeout=30, what="writes acknowledged")
    start = time.monotonic()
    old.kill9()
    writer.end()
    by_port = {r.port: r for r in replicas}

    def new_master():
        try:
            addr = s.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
        except Exception:  # noqa: BLE001
            return None
        port = int(addr[1]) if addr else None
        if port in by_port and quiet_info(port).get("role") == "master":
            return port
        return None

    promoted = wait_for(new_master, timeout=60, what="Sentinel promotes a replica")
    elapsed = time.monotonic() - start
    new = client(promoted)
    missing = 0
    for i in range(0, len(writer.acked), 1000):
        batch = writer.acked[i:i + 1000]
        missing += sum(1 for v in new.mget(batch) if v is None)
    print(f"\nSentinel failover, {topology}, writes acknowledged with {mode}: "
          f"{len(writer.acked)} acknowledged, {missing} missing on the new master "
          f"({promoted}, {by_port[promoted].kind}); new master after {elapsed:.1f} s")
    if mode == "wait":
        # Every acknowledged write reached a replica, and Sentinel promotes the
        # replica with the greatest offset.
        assert missing == 0
    # The old master comes back as a master and Sentinel turns it into a replica.
    # (With down-after-milliseconds 1000 on a loaded machine Sentinel may fail
    # over once more: what must hold is that everyone follows its master.)
    old.start()
    everyone = [old, *replicas]

    def current():
        try:
            addr = s.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
        except Exception:  # noqa: BLE001
            return None
        port = int(addr[1]) if addr else None
        return port if port and quiet_info(port).get("role") == "master" else None

    def all_follow():
        master = current()
        if master is None:
            return None
        for n in everyone:
            if n.port == master:
                continue
            fields = quiet_info(n.port)
            if fields.get("master_port") != str(master) or \
                    fields.get("master_link_status") != "up":
                return None
        return master

    final = wait_for(all_follow, timeout=90,
                     what="the other replica and the restarted old master follow the master")
    client(final).set("after", "failover")
    for n in everyone:
        wait_for(lambda n=n: _get(n.port, "after") == b"failover",
                 what="the master's write on every node")
    if node is not None:
        node.stdin.write("stop\n")
        node.stdin.flush()
        result = json.loads(node.stdout.readline())
        node.wait(10)
        assert result["final"] == "ok", result
        assert result["port"] == current(), result
        assert result["acked"] > 0
        assert client(final).get("ioredis:final") == b"ok"
        print(f"ioredis through Sentinel: {result['acked']} writes, {result['errors']} "
              f"errors, ends on port {result['port']}")


def _get(port, key):
    try:
        with RespConnection(port, timeout=2) as c:
            return c.call("GET", key).value
    except Exception:  # noqa: BLE001
        return None
