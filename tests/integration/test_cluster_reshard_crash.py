"""A crash in the middle of a slot migration loses no key (issue 23, bad input
and faults): `redis-cli --cluster reshard` runs, the source node is killed
with -9 once part of a slot's keys have moved, it restarts from nodes.conf
and its AOF (the slot still MIGRATING), `redis-cli --cluster fix` finishes
the move, and every key is there once with its value.

A key MIGRATE had copied to the target when the source died is on both nodes
after the restart (the source's DEL never happened), as with Redis. `--cluster
fix` settles such a key alone: it compares DEBUG DIGEST-VALUE on both nodes
(enable-debug-command local, as fix needs on redis-server too) and, the values
being the same, moves on with MIGRATE REPLACE."""

import subprocess
import time

import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from cluster_util import (blinkdb_nodes, call, create, kill9, myid, redis_cli, restart,
                          state_ok, stop_all, value, wait_check_clean, wait_until)

PER_TAG = 20000


def low_slot_tags(count, below):
    tags, i = [], 0
    while len(tags) < count:
        t = f"t{i}"
        if key_slot(t.encode()) < below:
            tags.append(t)
        i += 1
    return tags


def test_kill9_source_mid_reshard_then_fix(tmp_path):
    nodes = blinkdb_nodes(tmp_path, 3, ("--appendonly", "yes", "--appendfsync", "always",
                                        "--enable-debug-command", "local"))
    try:
        create(nodes)
        wait_until(lambda: all(state_ok(s) for s in nodes), 30, "cluster ok")
        src, dst = nodes[0], nodes[1]
        assert call(src, "CLUSTER", "COUNTKEYSINSLOT", "0").value == 0
        # Two crowded slots among the first 200 (reshard moves the source's
        # lowest slots first), plus keys all over the cluster.
        tags = low_slot_tags(2, 200)
        expected = {}
        r = redis.Redis(port=src.port)
        pipe = r.pipeline(transaction=False)
        for t in tags:
            for i in range(PER_TAG):
                k = f"{{{t}}}:{i}"
                expected[k] = f"v{i}-{t}"
                pipe.set(k, expected[k])
        pipe.execute()
        r.close()
        rc = RedisCluster(host="127.0.0.1", port=src.port)
        for i in range(3000):
            k = f"spread:{i}"
            expected[k] = str(i)
            rc.set(k, expected[k])
        rc.close()
        slots = sorted({key_slot(t.encode()) for t in tags})
        reshard = subprocess.Popen(
            ["redis-cli", "--cluster", "reshard", f"127.0.0.1:{src.port}",
             "--cluster-from", myid(src), "--cluster-to", myid(dst), "--cluster-slots", "300",
             "--cluster-yes", "--cluster-pipeline", "10"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def mid_slot():
            for s in slots:
                moved = call(dst, "CLUSTER", "COUNTKEYSINSLOT", str(s)).value
                if 0 < moved < PER_TAG // 2:
                    return True
            return False
        deadline = time.monotonic() + 120
        while not mid_slot():
            assert reshard.poll() is None, reshard.stdout.read()
            assert time.monotonic() < deadline, "the reshard never reached a crowded slot"
            time.sleep(0.005)
        kill9(src)
        out = reshard.communicate(timeout=120)[0]
        assert reshard.returncode != 0, out
        nodes[0] = src = restart(src)
        wait_until(lambda: state_ok(src), 30, "the source back")
        open_slots = [s for s in slots
                      if f"[{s}->-".encode() in call(src, "CLUSTER", "NODES").value]
        assert open_slots, call(src, "CLUSTER", "NODES").value
        out = redis_cli("--cluster", "fix", f"127.0.0.1:{src.port}", "--cluster-yes",
                        timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        text = out.stdout + out.stderr
        if "Target key exists" in text:  # a key on both nodes, settled by its digests
            assert "Checking key values" in text and "different values" not in text, text
        print("fix settled keys on both nodes:", "Target key exists" in text)
        wait_check_clean(f"127.0.0.1:{src.port}")
        # Every key once, with its value.
        assert sum(call(s, "DBSIZE").value for s in nodes) == len(expected)
        rc = RedisCluster(host="127.0.0.1", port=dst.port)
        try:
            pipe = rc.pipeline()
            keys = list(expected)
            for k in keys:
                pipe.get(k)
            got = pipe.execute()
        finally:
            rc.close()
        wrong = [(k, g) for k, g in zip(keys, got) if g != expected[k].encode()]
        assert not wrong, (len(wrong), wrong[:10])
    finally:
        stop_all(nodes)
