"""The mixed cluster (issue 23 stage 5): BlinkDB nodes in a cluster of
redis-server 7.0 nodes, speaking Redis's bus: joining with CLUSTER MEET,
taking slots through `redis-cli --cluster reshard`, and serving as the
replica of a redis-server master that is promoted when the master dies."""

import time

from redis.cluster import RedisCluster

from cluster_util import (blinkdb_nodes, call, create, kill9, myid, node_lines, nodes_text,
                          redis_cli, redis_nodes, state_ok, stop_all, wait_check_clean,
                          wait_until)


def join(ours, theirs):
    call(ours, "CLUSTER", "MEET", "127.0.0.1", str(theirs[0].port))
    me = myid(ours)
    for s in theirs:
        wait_until(lambda s=s: any(line.startswith(me) and " connected" in line
                                   for line in nodes_text(s).split("\n")),
                   what=f"redis node {s.port} sees BlinkDB")
    wait_until(lambda: nodes_text(ours).count(" connected") == len(theirs) + 1,
               what="BlinkDB sees every node")
    wait_until(lambda: state_ok(ours), what="BlinkDB's cluster state ok")


def test_blinkdb_takes_slots_from_redis_nodes(tmp_path):
    theirs = redis_nodes(tmp_path, 3)
    ours = blinkdb_nodes(tmp_path, 1)
    try:
        create(theirs)
        join(ours[0], theirs)
        first = f"127.0.0.1:{theirs[0].port}"
        wait_check_clean(first)
        rc = RedisCluster(host="127.0.0.1", port=theirs[0].port)
        for i in range(3000):
            rc.set(f"m:{i}", i)
        out = redis_cli("--cluster", "reshard", first, "--cluster-from", "all",
                        "--cluster-to", myid(ours[0]), "--cluster-slots", "600",
                        "--cluster-yes", timeout=300)
        assert out.returncode == 0 and "ERR" not in out.stdout, out.stdout + out.stderr
        wait_check_clean(first)
        wait_check_clean(f"127.0.0.1:{ours[0].port}")
        assert call(ours[0], "DBSIZE").value > 0
        assert [int(rc.get(f"m:{i}")) for i in range(3000)] == list(range(3000))
        rc.close()
    finally:
        stop_all(ours + theirs)


def replication_info(srv):
    text = call(srv, "INFO", "replication").value.decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def replica_caught_up(master):
    """The master's first replica is online and has acknowledged all it was sent."""
    info = replication_info(master)
    fields = dict(kv.split("=") for kv in info.get("slave0", "").split(",") if "=" in kv)
    return fields.get("state") == "online" and \
        fields.get("offset") == info["master_repl_offset"]


def test_blinkdb_replica_of_redis_master_is_promoted(tmp_path):
    # No 5 s wait before the master's (diskless) full sync starts.
    theirs = redis_nodes(tmp_path, 3, ("--repl-diskless-sync-delay", "0"))
    ours = blinkdb_nodes(tmp_path, 1)
    try:
        create(theirs)
        join(ours[0], theirs)
        victim = theirs[0]
        vid = myid(victim)
        wait_until(lambda: call(ours[0], "CLUSTER", "REPLICATE", vid).raw == b"+OK\r\n",
                   what="REPLICATE a redis-server master")
        wait_until(lambda: replication_info(ours[0]).get("master_link_status") == "up",
                   30, "BlinkDB's link to its redis-server master up")
        rc = RedisCluster(host="127.0.0.1", port=theirs[1].port)
        for i in range(2000):
            rc.set(f"r:{i}", i)
        # WAIT answered 0 when the replica was still in its full sync: wait on the
        # replica's acknowledged offset instead, then WAIT must count it.
        wait_until(lambda: replica_caught_up(victim), 30, "the replica caught up")
        with victim.connect() as c:
            assert c.call("WAIT", "1", "5000").value == 1
        wait_until(lambda: all(node_lines(s)[myid(ours[0])][3] == vid for s in theirs),
                   what="redis nodes see the BlinkDB replica")
        assert call(ours[0], "DBSIZE").value == call(victim, "DBSIZE").value
        kill9(victim)
        t0 = time.monotonic()
        me = myid(ours[0])
        wait_until(lambda: "master" in node_lines(ours[0])[me][2], 30, "BlinkDB promoted")
        print(f"BlinkDB replica promoted {time.monotonic() - t0:.2f} s after kill -9 "
              "of its redis-server master")
        alive = theirs[1:] + ours
        wait_until(lambda: all("master" in node_lines(s)[me][2] for s in alive), 30,
                   "redis nodes accept the new master")
        wait_until(lambda: all(state_ok(s) for s in alive), 30, "cluster ok")
        deadline = time.monotonic() + 20
        while True:
            try:
                assert [int(rc.get(f"r:{i}")) for i in range(2000)] == list(range(2000))
                break
            except Exception:  # noqa: BLE001 - the client refreshes its slots
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        rc.close()
    finally:
        stop_all(ours + theirs)


def test_announced_ports_follow_config_set(tmp_path):
    """CONFIG SET cluster-announce-port / -bus-port on a BlinkDB node reaches its own
    CLUSTER NODES and, through the bus, redis-server nodes; 0 goes back to the ports it
    serves on (Redis's clusterUpdateMyselfAnnouncedPorts)."""
    theirs = redis_nodes(tmp_path, 2)
    ours = blinkdb_nodes(tmp_path, 1)
    try:
        create(theirs + ours)
        me = myid(ours[0])
        real = f"127.0.0.1:{ours[0].port}@{ours[0].port + 10000}"

        def seen_by(srv):
            return node_lines(srv)[me][1].split(",")[0]

        assert seen_by(ours[0]) == real
        assert call(ours[0], "CONFIG", "SET", "cluster-announce-port", "7777",
                    "cluster-announce-bus-port", "17777").value == b"OK"
        for srv in ours + theirs:
            wait_until(lambda srv=srv: seen_by(srv) == "127.0.0.1:7777@17777",
                       what=f"node {srv.port} sees the announced ports")
        assert call(ours[0], "CONFIG", "SET", "cluster-announce-port", "0",
                    "cluster-announce-bus-port", "0").value == b"OK"
        for srv in ours + theirs:
            wait_until(lambda srv=srv: seen_by(srv) == real,
                       what=f"node {srv.port} sees the served ports again")
    finally:
        stop_all(ours + theirs)
