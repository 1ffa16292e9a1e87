"""Redis Cluster, the client side (docs/cluster.md): slots, redirections,
CLUSTER commands and nodes.conf, compared byte for byte with redis-server
7.0.15 started with --cluster-enabled yes, and redis-py's RedisCluster routed
through BlinkDB nodes."""

import os
import time

import pytest
import redis
from redis.cluster import RedisCluster

from cluster_util import nodes_text, redis_cli, start_retrying, stop_all, wait_until
from resp import plain
from server import ORACLE_BIN, ServerProcess, blinkdb_bin, free_port

CLUSTER = ("--cluster-enabled", "yes")


def val(reply):
    return plain((reply.kind, reply.value))


def wait_ok(srv, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with srv.connect() as c:
            if b"cluster_state:ok" in c.call("CLUSTER", "INFO").raw:
                return
        time.sleep(0.1)
    raise AssertionError("cluster state never became ok")


@pytest.fixture
def cluster_oracle(tmp_path):
    srv = start_retrying(ORACLE_BIN, str(tmp_path / "oracle"), CLUSTER)
    yield srv
    srv.stop()


def same(a, b, *cmds, proto=2):
    with a.connect() as ca, b.connect() as cb:
        if proto == 3:
            ca.call("HELLO", "3")
            cb.call("HELLO", "3")
        for cmd in cmds:
            ra, rb = ca.call(*cmd).raw, cb.call(*cmd).raw
            assert ra == rb, (cmd, ra, rb)


def test_disabled_by_default(blinkdb, oracle):
    same(blinkdb, oracle, ("CLUSTER", "INFO"), ("CLUSTER", "KEYSLOT", "a"), ("ASKING",),
         ("READONLY",), ("READWRITE",), ("CLUSTER", "NOPE"), ("SELECT", "3"), ("SET", "a", "1"))


def test_info_server_mode_and_os_match_redis(blinkdb, oracle, server_factory, cluster_oracle):
    """INFO server's redis_mode (standalone or cluster) and os (uname's name, release and
    machine) are redis-server's."""
    node = server_factory(*CLUSTER)
    for ours, theirs in ((blinkdb, oracle), (node, cluster_oracle)):
        fields = []
        for srv in (ours, theirs):
            with srv.connect() as c:
                text = c.call("INFO", "server").value.decode()
            fields.append([line for line in text.split("\r\n")
                           if line.startswith(("redis_mode:", "os:"))])
        assert fields[0] == fields[1] and len(fields[0]) == 2, fields


@pytest.mark.parametrize("proto", [2, 3])
def test_admin_replies_match_redis(server_factory, cluster_oracle, proto):
    node = server_factory(*CLUSTER)
    cmds = [
        ("CLUSTER", "KEYSLOT", "{user1000}.following"), ("CLUSTER", "KEYSLOT", "foo{}{bar}"),
        ("CLUSTER", "ADDSLOTSRANGE", "0", "100", "200", "300"),
        ("CLUSTER", "ADDSLOTS", "100"), ("CLUSTER", "ADDSLOTS", "5000", "5000"),
        ("CLUSTER", "ADDSLOTS", "16384"), ("CLUSTER", "ADDSLOTS", "x"),
        ("CLUSTER", "ADDSLOTSRANGE", "5", "1"), ("CLUSTER", "ADDSLOTSRANGE", "1", "2", "3"),
        ("CLUSTER", "DELSLOTS", "101"), ("CLUSTER", "DELSLOTSRANGE", "0", "9"),
        ("CLUSTER", "SETSLOT", "1", "MIGRATING", "nobody"), ("CLUSTER", "SETSLOT", "1", "BOGUS"),
        ("CLUSTER", "SETSLOT", "999", "STABLE"), ("CLUSTER", "SETSLOT", "99999", "STABLE"),
        ("CLUSTER", "COUNTKEYSINSLOT", "16384"), ("CLUSTER", "COUNTKEYSINSLOT", "x"),
        ("CLUSTER", "GETKEYSINSLOT", "1", "-1"), ("CLUSTER", "GETKEYSINSLOT", "1", "0"),
        ("CLUSTER", "COUNT-FAILURE-REPORTS", "x"), ("CLUSTER", "FORGET", "x"),
        ("CLUSTER", "REPLICAS", "x"), ("CLUSTER", "RESET", "x"),
        ("CLUSTER", "SET-CONFIG-EPOCH", "-1"), ("CLUSTER", "SET-CONFIG-EPOCH", "x"),
        ("CLUSTER", "BUMPEPOCH"), ("CLUSTER", "BUMPEPOCH"), ("CLUSTER", "SET-CONFIG-EPOCH", "5"),
        ("CLUSTER", "LINKS"), ("CLUSTER", "HELP"), ("CLUSTER", "SAVECONFIG"),
        ("SELECT", "1"), ("SELECT", "0"), ("SELECT", "x"), ("ASKING",), ("READONLY",),
        ("READWRITE",), ("SET", "foo", "1"), ("MSET", "a", "1", "b", "2"),
    ]
    same(node, cluster_oracle, *cmds, proto=proto)
    # A master waits 2 s after its start before it declares the state ok.
    time.sleep(2.2)
    same(node, cluster_oracle, ("CLUSTER", "DELSLOTSRANGE", "0", "100"), ("CLUSTER", "INFO"),
         ("CLUSTER", "FLUSHSLOTS"), ("CLUSTER", "INFO"), proto=proto)


def test_own_id_in_nodes_slots_shards(server_factory):
    node = server_factory(*CLUSTER)
    with node.connect() as c:
        me = c.call("CLUSTER", "MYID").value
        assert c.call("CLUSTER", "ADDSLOTSRANGE", "0", "8000", "8002", "16383").raw == b"+OK\r\n"
        c.call("CLUSTER", "SETSLOT", "5", "MIGRATING", me.decode())
        line = c.call("CLUSTER", "NODES").value.decode()
        assert line == f"{me.decode()} :{node.port}@{node.port + 10000} myself,master - 0 0 0 connected 0-8000 8002-16383 [5->-{me.decode()}]\n"
        slots = val(c.call("CLUSTER", "SLOTS"))
        assert [s[:2] for s in slots] == [[0, 8000], [8002, 16383]]
        assert slots[0][2][:3] == [b"", node.port, me]
        shards = val(c.call("CLUSTER", "SHARDS"))
        assert shards[0][1] == [0, 8000, 8002, 16383]


def test_single_node_serves_and_refuses_like_redis(server_factory, cluster_oracle):
    node = server_factory(*CLUSTER)
    for srv in (node, cluster_oracle):
        with srv.connect() as c:
            c.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        wait_ok(srv)
    same(node, cluster_oracle,
         ("SET", "{u}a", "1"), ("MSET", "{u}a", "1", "{u}b", "2"), ("MGET", "{u}a", "{u}b"),
         ("MSET", "a", "1", "b", "2"), ("MGET", "a", "b"), ("DEL", "a", "a"),
         ("EVAL", "return redis.call('get', KEYS[1])", "2", "{u}a", "x"),
         ("EVAL", "return redis.call('get', KEYS[1])", "1", "{u}a"),
         ("SUNIONSTORE", "d", "a", "b"), ("CLUSTER", "COUNTKEYSINSLOT", "0"),
         ("MULTI",), ("SET", "a", "1"), ("SET", "b", "2"), ("EXEC",), ("EXEC",),
         ("MULTI",), ("SET", "{t}a", "1"), ("GET", "{t}b"), ("EXEC",),
         ("SELECT", "2"), ("PING",))
    with node.connect() as c:
        for i in range(50):
            c.call("SET", f"{{tag}}k{i}", "v")
        slot = c.call("CLUSTER", "KEYSLOT", "tag").value
        assert c.call("CLUSTER", "COUNTKEYSINSLOT", str(slot)).value == 50
        keys = c.call("CLUSTER", "GETKEYSINSLOT", str(slot), "10").raw
        assert keys.startswith(b"*10\r\n") and keys.count(b"{tag}k") == 10
        assert c.call("CLUSTER", "RESET").raw.startswith(b"-ERR CLUSTER RESET can't")


def conf_line(name, port, flags, slots="", epoch=1):
    return f"{name} 127.0.0.1:{port}@{port + 10000} {flags} - 0 0 {epoch} connected {slots}".rstrip()


def test_moved_ask_and_nodes_conf(tmp_path):
    """Two nodes told the topology through nodes.conf (Redis's format): the
    one owning nothing redirects, ASK follows a migrating slot."""
    a_name, b_name = "a" * 40, "b" * 40
    a_port, b_port = free_port(), free_port()
    for d, me, other in (("a", (a_name, a_port, "0-16383", 1), (b_name, b_port, "", 2)),
                         ("b", (b_name, b_port, "", 2), (a_name, a_port, "0-16383", 1))):
        os.makedirs(tmp_path / d)
        with open(tmp_path / d / "nodes.conf", "w") as f:
            f.write(conf_line(me[0], me[1], "myself,master", me[2], me[3]) + "\n")
            f.write(conf_line(other[0], other[1], "master", other[2], other[3]) + "\n")
            f.write("vars currentEpoch 2 lastVoteEpoch 0\n")
    a = ServerProcess(blinkdb_bin(), str(tmp_path / "a"), CLUSTER, port=a_port)
    try:
        b = ServerProcess(blinkdb_bin(), str(tmp_path / "b"), CLUSTER, port=b_port)
        try:
            wait_ok(a)
            wait_ok(b)
            with b.connect() as c:
                assert c.call("CLUSTER", "MYID").value == b_name.encode()
                slot = c.call("CLUSTER", "KEYSLOT", "foo").value
                assert c.call("GET", "foo").raw == f"-MOVED {slot} 127.0.0.1:{a_port}\r\n".encode()
                assert c.call("PING").raw == b"+PONG\r\n"
                assert c.call("MULTI").raw == b"+OK\r\n"
                assert c.call("GET", "foo").raw.startswith(b"-MOVED")
                assert c.call("EXEC").raw.startswith(b"-EXECABORT")
                assert c.call("CLUSTER", "SETSLOT", str(slot), "IMPORTING", a_name).raw == b"+OK\r\n"
                assert c.call("GET", "foo").raw.startswith(b"-MOVED")
                c.call("ASKING")
                assert c.call("GET", "foo").raw == b"$-1\r\n"
                assert c.call("GET", "foo").raw.startswith(b"-MOVED")
            with a.connect() as c:
                c.call("SET", "{foo}1", "x")
                assert c.call("CLUSTER", "SETSLOT", str(slot), "MIGRATING", b_name).raw == b"+OK\r\n"
                assert c.call("GET", "{foo}1").raw == b"$1\r\nx\r\n"
                assert c.call("GET", "foo").raw == f"-ASK {slot} 127.0.0.1:{b.port}\r\n".encode()
                assert c.call("MGET", "foo", "{foo}1").raw == b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
                nodes = c.call("CLUSTER", "NODES").value.decode()
                assert f"[{slot}->-{b_name}]" in nodes
            # nodes.conf survives a restart with the open slot
            a.stop()
            a = ServerProcess(a.binary, str(tmp_path / "a"), CLUSTER, port=a_port)
            with a.connect() as c:
                assert f"[{slot}->-{b_name}]" in c.call("CLUSTER", "NODES").value.decode()
                assert c.call("CLUSTER", "INFO").value.split(b"\r\n")[7] == b"cluster_current_epoch:2"
        finally:
            b.stop()
    finally:
        a.stop()


def test_corrupt_nodes_conf_refuses_to_start(server_factory, tmp_path):
    d = tmp_path / "bad"
    os.makedirs(d)
    (d / "nodes.conf").write_text("this is not a nodes file\n")
    with pytest.raises(RuntimeError, match="corrupted cluster config file"):
        ServerProcess(blinkdb_bin(), str(d), CLUSTER)


def test_redis_py_cluster_client_routes(server_factory):
    node = server_factory(*CLUSTER)
    with node.connect() as c:
        c.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    wait_ok(node)
    rc = RedisCluster(host="127.0.0.1", port=node.port)
    try:
        for i in range(100):
            rc.set(f"k{i}", i)
        assert [int(rc.get(f"k{i}")) for i in range(100)] == list(range(100))
        assert rc.mget_nonatomic([f"k{i}" for i in range(10)]) == [str(i).encode() for i in range(10)]
        assert rc.execute_command("BF.ADD", "bloom", "x") == 1
        assert rc.execute_command("BF.EXISTS", "bloom", "x") == 1
        assert rc.mset({"{u}a": 1, "{u}b": 2}) is True
        assert rc.mget("{u}a", "{u}b") == [b"1", b"2"]
        node_conn = rc.get_default_node().redis_connection
        with pytest.raises(redis.exceptions.ResponseError, match="hash to the same slot"):
            node_conn.execute_command("SUNIONSTORE", "{u}d", "{u}a", "{v}b")
    finally:
        rc.close()


# --- the bus (stage 2) ------------------------------------------------------

import socket  # noqa: E402


def cluster_nodes(n, count, timeout=20.0):
    """`count` BlinkDB cluster nodes with a short node timeout."""
    return [start_retrying(blinkdb_bin(), f"{n}/node{i}", CLUSTER + ("--cluster-node-timeout", "3000"))
            for i in range(count)]




def test_redis_cli_cluster_create_and_check(tmp_path):
    """3 BlinkDB masters (replicas need BlinkDB-as-replica, not merged yet)."""
    nodes = cluster_nodes(tmp_path, 3)
    try:
        addrs = [f"127.0.0.1:{s.port}" for s in nodes]
        out = redis_cli("--cluster", "create", *addrs, "--cluster-replicas", "0", "--cluster-yes")
        assert "[OK] All 16384 slots covered." in out.stdout, out.stdout + out.stderr
        assert "[OK] All nodes agree about slots configuration." in out.stdout
        for s in nodes:
            wait_ok(s)
        check = redis_cli("--cluster", "check", addrs[1])
        assert "[ERR]" not in check.stdout and "[WARNING]" not in check.stdout, check.stdout
        assert "[OK] All 16384 slots covered." in check.stdout
        for s in nodes:
            lines = nodes_text(s).strip().split("\n")
            assert len(lines) == 3 and all(" connected" in line for line in lines), lines
        # Cluster-aware clients route across the three masters.
        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        try:
            for i in range(200):
                rc.set(f"key:{i}", i)
            assert [int(rc.get(f"key:{i}")) for i in range(200)] == list(range(200))
            assert rc.execute_command("BF.ADD", "bf{1}", "a") == 1
            with nodes[0].connect() as c:
                counts = [c.call("DBSIZE").value]
            assert 0 < counts[0] < 201
        finally:
            rc.close()
        # PUBLISH reaches subscribers on another node through the bus.
        sub = redis.Redis(port=nodes[2].port)
        p = sub.pubsub()
        p.subscribe("news")
        p.get_message(timeout=2)
        with nodes[0].connect() as c:
            c.call("PUBLISH", "news", "hello")
        msg = p.get_message(timeout=5)
        assert msg and msg["data"] == b"hello", msg
        p.close()
        # nodes.conf brings a restarted node back into the cluster.
        port, directory = nodes[1].port, nodes[1].dir
        nodes[1].stop()
        nodes[1] = ServerProcess(blinkdb_bin(), directory, CLUSTER + ("--cluster-node-timeout", "3000"), port=port)
        wait_ok(nodes[1])
        wait_until(lambda: nodes_text(nodes[1]).count(" connected") == 3, what="links after restart")
    finally:
        stop_all(nodes)


def test_blinkdb_joins_a_redis_cluster(tmp_path):
    """The proof the bus is Redis's: CLUSTER MEET into redis-server 7.0 nodes."""
    redis_nodes = [start_retrying(ORACLE_BIN, str(tmp_path / f"redis{i}"),
                                  CLUSTER + ("--cluster-node-timeout", "3000")) for i in range(3)]
    ours = cluster_nodes(tmp_path, 1)
    try:
        addrs = [f"127.0.0.1:{s.port}" for s in redis_nodes]
        out = redis_cli("--cluster", "create", *addrs, "--cluster-replicas", "0", "--cluster-yes")
        assert "[OK] All 16384 slots covered." in out.stdout, out.stdout + out.stderr
        with ours[0].connect() as c:
            assert c.call("CLUSTER", "MEET", "127.0.0.1", str(redis_nodes[0].port)).raw == b"+OK\r\n"
            me = c.call("CLUSTER", "MYID").value.decode()
        for s in redis_nodes:
            wait_until(lambda s=s: any(line.startswith(me) and " connected" in line
                                       for line in nodes_text(s).split("\n")),
                       what=f"redis node {s.port} sees BlinkDB connected")
        wait_until(lambda: nodes_text(ours[0]).count(" connected") == 4, what="BlinkDB sees all")
        wait_ok(ours[0])
        check = redis_cli("--cluster", "check", f"127.0.0.1:{ours[0].port}")
        assert "[OK] All nodes agree about slots configuration." in check.stdout, check.stdout
        assert "[ERR]" not in check.stdout
        # BlinkDB redirects to the redis-server that owns the slot.
        with ours[0].connect() as c:
            assert c.call("GET", "foo").raw.startswith(b"-MOVED 12182 127.0.0.1:")
    finally:
        stop_all(ours)
        stop_all(redis_nodes)


def test_bus_rejects_malformed_messages(tmp_path):
    nodes = cluster_nodes(tmp_path, 1)
    try:
        bus = nodes[0].port + 10000
        header = bytearray(2256)
        header[0:4] = b"RCmb"
        bad = [
            b"XXXX" + (2256).to_bytes(4, "big") + bytes(2248),    # wrong signature
            b"RCmb" + (16).to_bytes(4, "big"),                    # too short
            b"RCmb" + (2256).to_bytes(4, "big") + bytes(100),     # truncated, then closed
            bytes(header[:4]) + (2256).to_bytes(4, "big") + (7).to_bytes(2, "big") + bytes(2246),  # version 7
            bytes(header[:4]) + (2256).to_bytes(4, "big") + (1).to_bytes(2, "big") + bytes(2)
            + (0).to_bytes(2, "big") + (500).to_bytes(2, "big") + bytes(2240),  # 500 gossip entries missing
        ]
        for payload in bad:
            s = socket.create_connection(("127.0.0.1", bus), timeout=5)
            s.sendall(payload)
            if payload[4:8] == (2256).to_bytes(4, "big") and len(payload) < 2256:
                s.shutdown(socket.SHUT_WR)
            try:
                assert s.recv(10) == b""  # the node closes the link, no reply
            except ConnectionResetError:
                pass
            s.close()
        assert nodes[0].alive()
        with nodes[0].connect() as c:
            assert c.call("PING").raw == b"+PONG\r\n"
            assert b"cluster_known_nodes:1" in c.call("CLUSTER", "INFO").raw
        log = nodes[0].log_text()
        assert "Bad message length or signature" in log
        assert "protocol version 7" in log
    finally:
        stop_all(nodes)
