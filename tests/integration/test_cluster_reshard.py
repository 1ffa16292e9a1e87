"""Resharding (issue 23 stage 3, docs/cluster.md): `redis-cli --cluster
reshard` and `rebalance` under a steady load of redis-py RedisCluster
writer and reader threads (no acknowledged write lost, no wrong read), the
per-slot key index, MIGRATE with RESTORE-ASKING for every type, and
`--cluster add-node` / `del-node`."""

import random
import threading
import time

import redis
from redis.cluster import RedisCluster

from cluster_util import (blinkdb_nodes, call, cli_failure, create, myid, node_lines, nodes_text,
                          redis_cli, state_ok, stop_all, value, wait_check_clean, wait_until)


class Load:
    """A writer (SET k:i i, one new key per op) and a reader (GET of a key
    already acknowledged) through RedisCluster, until stopped."""

    def __init__(self, port):
        self.port = port
        self.acked = []
        self.latencies = []
        self.wrong = []
        self.errors = []
        self.reads = 0
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.write), threading.Thread(target=self.read)]

    def client(self):
        return RedisCluster(host="127.0.0.1", port=self.port)

    def write(self):
        rc = self.client()
        i = 0
        while not self.stop.is_set():
            t = time.monotonic()
            try:
                rc.set(f"k:{i}", i)
            except redis.RedisError as e:
                self.errors.append(repr(e))
                time.sleep(0.05)
                continue
            self.latencies.append(time.monotonic() - t)
            self.acked.append(i)
            i += 1
        rc.close()

    def read(self):
        rc = self.client()
        while not self.stop.is_set():
            if not self.acked:
                time.sleep(0.01)
                continue
            i = random.choice(self.acked)
            try:
                got = rc.get(f"k:{i}")
            except redis.RedisError as e:
                self.errors.append(repr(e))
                continue
            self.reads += 1
            if got != str(i).encode():
                self.wrong.append((i, got))
        rc.close()

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()

    def p99_ms(self, since=0):
        lat = sorted(self.latencies[since:])
        return lat[int(len(lat) * 0.99)] * 1000 if lat else 0.0


def test_reshard_and_rebalance_under_load(tmp_path):
    nodes = blinkdb_nodes(tmp_path, 3)
    try:
        create(nodes)
        wait_until(lambda: all(state_ok(s) for s in nodes), 30, "cluster ok")
        src, dst = nodes[0], nodes[1]
        with Load(src.port) as load:
            wait_until(lambda: len(load.acked) > 3000, 60, "some load")
            before = call(dst, "DBSIZE").value
            start_lat = len(load.latencies)
            t0 = time.monotonic()
            out = redis_cli("--cluster", "reshard", f"127.0.0.1:{src.port}",
                            "--cluster-from", myid(src), "--cluster-to", myid(dst),
                            "--cluster-slots", "1000", "--cluster-yes",
                            "--cluster-pipeline", "100", timeout=300)
            took = time.monotonic() - t0
            assert out.returncode == 0 and "ERR" not in out.stdout, cli_failure(out, nodes)
            moved = call(dst, "DBSIZE").value - before
            print(f"reshard: 1000 slots, {moved} keys in {took:.2f} s "
                  f"({moved / took:.0f} keys/s, {1000 / took:.0f} slots/s); "
                  f"client p99 during the reshard {load.p99_ms(start_lat):.2f} ms, "
                  f"{len(load.acked)} writes, {load.reads} reads so far")
            wait_check_clean(f"127.0.0.1:{src.port}")
            start_lat = len(load.latencies)
            t0 = time.monotonic()
            out = redis_cli("--cluster", "rebalance", f"127.0.0.1:{src.port}",
                            "--cluster-threshold", "1", "--cluster-pipeline", "100", timeout=300)
            took = time.monotonic() - t0
            assert out.returncode == 0 and "ERR" not in out.stdout, cli_failure(out, nodes)
            print(f"rebalance in {took:.2f} s, client p99 {load.p99_ms(start_lat):.2f} ms")
            wait_check_clean(f"127.0.0.1:{src.port}")
        assert not load.wrong, load.wrong[:10]
        # Every acknowledged write is there, key by key.
        rc = RedisCluster(host="127.0.0.1", port=src.port)
        try:
            pipe = rc.pipeline()
            for i in load.acked:
                pipe.get(f"k:{i}")
            got = pipe.execute()
        finally:
            rc.close()
        lost = [i for i, g in zip(load.acked, got) if g != str(i).encode()]
        assert not lost, (len(lost), lost[:10])
        total = sum(call(s, "DBSIZE").value for s in nodes)
        assert total == len(load.acked) or total == len(load.acked) + 1  # one write in flight
        # The slot index agrees with the keyspace on every node.
        for s in nodes:
            r = redis.Redis(port=s.port)
            pipe = r.pipeline(transaction=False)
            for slot in range(16384):
                pipe.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
            assert sum(pipe.execute()) == r.dbsize()
            r.close()
    finally:
        stop_all(nodes)


def test_slot_index_follows_writes_deletes_and_expiry(tmp_path):
    nodes = blinkdb_nodes(tmp_path, 1)
    try:
        n = nodes[0]
        call(n, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        wait_until(lambda: state_ok(n), what="ok")
        slot = call(n, "CLUSTER", "KEYSLOT", "t").value
        with n.connect() as c:
            for i in range(100):
                c.call("SET", f"{{t}}{i}", i)
            c.call("PEXPIRE", "{t}0", "50")
            c.call("DEL", "{t}1")
            c.call("RENAME", "{t}2", "{t}two")
            assert c.call("CLUSTER", "COUNTKEYSINSLOT", str(slot)).value == 99
            time.sleep(0.3)
            c.call("GET", "{t}0")
            assert c.call("CLUSTER", "COUNTKEYSINSLOT", str(slot)).value == 98
            keys = sorted(value(n, "CLUSTER", "GETKEYSINSLOT", str(slot), "1000"))
            assert len(keys) == 98 and b"{t}two" in keys and b"{t}1" not in keys
            assert len(value(n, "CLUSTER", "GETKEYSINSLOT", str(slot), "5")) == 5
            c.call("FLUSHALL")
            assert c.call("CLUSTER", "COUNTKEYSINSLOT", str(slot)).value == 0
            c.call("SET", "{t}x", "1")
            assert c.call("CLUSTER", "COUNTKEYSINSLOT", str(slot)).value == 1
    finally:
        stop_all(nodes)


def test_add_node_and_del_node(tmp_path):
    nodes = blinkdb_nodes(tmp_path, 5)
    try:
        create(nodes[:3])
        wait_until(lambda: all(state_ok(s) for s in nodes[:3]), 30, "cluster ok")
        first = f"127.0.0.1:{nodes[0].port}"
        new_master, new_replica = nodes[3], nodes[4]
        # Asked before the replica syncs: while it loads, CLUSTER MYID and NODES answer
        # -LOADING (as redis-server's do: their command flags have no `loading`).
        master_id, replica_id = myid(new_master), myid(new_replica)
        out = redis_cli("--cluster", "add-node", f"127.0.0.1:{new_master.port}", first)
        assert "[OK] New node added correctly." in out.stdout, cli_failure(out, nodes)
        wait_until(lambda: len(node_lines(nodes[0])) == 4, what="new master known")
        wait_check_clean(first)
        out = redis_cli("--cluster", "add-node", f"127.0.0.1:{new_replica.port}", first,
                        "--cluster-slave", "--cluster-master-id", master_id)
        assert "[OK] New node added correctly." in out.stdout, cli_failure(out, nodes)

        def replica_known(s):
            fields = node_lines(s).get(replica_id)  # None while s answers -LOADING
            return fields is not None and fields[3] == master_id
        wait_until(lambda: all(replica_known(s) for s in nodes), 30,
                   "the replica known everywhere")
        wait_check_clean(first)
        # A joining master answers CLUSTERDOWN (so MIGRATE to it fails) until it
        # has seen the majority for the rejoin delay, as redis-server's does.
        wait_until(lambda: all(state_ok(s) for s in nodes), 30, "cluster ok on the new nodes")
        # The new master takes slots with data, then gives them back.
        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        for i in range(2000):
            rc.set(f"d:{i}", i)
        out = redis_cli("--cluster", "reshard", first, "--cluster-from", "all",
                        "--cluster-to", myid(new_master), "--cluster-slots", "300",
                        "--cluster-yes", timeout=300)
        assert out.returncode == 0, cli_failure(out, nodes)
        wait_check_clean(first)
        assert call(new_master, "DBSIZE").value > 0
        with new_master.connect() as c:
            assert c.call("WAIT", "1", "5000").value == 1
        assert call(new_replica, "DBSIZE").value == call(new_master, "DBSIZE").value
        out = redis_cli("--cluster", "rebalance", first, "--cluster-weight",
                        f"{myid(new_master)}=0", timeout=300)
        assert out.returncode == 0, cli_failure(out, nodes)
        wait_check_clean(first)
        # Emptied of its last slot, the master turns into a replica of that slot's
        # new owner (redis-server 7.0's SETSLOT NODE), and its replica follows.
        assert node_lines(nodes[0])[master_id][8:] == [], cli_failure(out, nodes)
        wait_until(lambda: b"myself,slave" in call(new_master, "CLUSTER", "NODES").raw, 30,
                   "the emptied master a replica")
        assert [int(rc.get(f"d:{i}")) for i in range(2000)] == list(range(2000))
        rc.close()
        for gone, gone_id in ((new_replica, replica_id), (new_master, master_id)):
            out = redis_cli("--cluster", "del-node", first, gone_id)
            assert out.returncode == 0 and "RESET SOFT" in out.stdout, cli_failure(out, nodes)
            wait_until(lambda gone=gone, gone_id=gone_id: list(node_lines(gone)) == [gone_id]
                       and "myself,master" in nodes_text(gone), what="the node reset")
            assert call(gone, "DBSIZE").value == 0  # a replica's reset flushes
        wait_until(lambda: all(len(node_lines(s)) == 3 for s in nodes[:3]), 30,
                   "the nodes are forgotten")
        wait_check_clean(first)
    finally:
        stop_all(nodes)
