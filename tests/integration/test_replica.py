"""BlinkDB as a replica (issue 22 stage 2), with redis-server 7.0.15 as the master.

REPLICAOF and the `replicaof` option; full sync from a disk-backed and from a diskless
(EOF-marked) master; the stream of every type applied in order (MULTI/EXEC, EVAL,
FUNCTION, expiries, several databases) and compared key by key with the master once the
master sees the replica's offset caught up; READONLY and MASTERDOWN; partial resync
(+CONTINUE) after the link is killed from either side; expiry on a replica (hidden on
read, removed by the master's DEL); REPLICAOF NO ONE keeps the old history as replid2 so
a replica of the old master continues with +CONTINUE (PSYNC2); a fake master sending a
corrupt RDB or a malformed stream: the replica refuses, retries, and serves no partial
data; a long EVAL from a fake master: BUSY for the replica's clients, SCRIPT KILL refused."""

import os
import threading
import time

import pytest
import redis

from fake_master import FakeMaster
from rdb_helpers import client
from resp import RespConnection, encode
from server import ORACLE_BIN, ServerProcess, free_port
from test_rdb_bloom import scandump
from test_replication import (
    info,
    mixed_writes,
    peers,  # noqa: F401 (fixture)
    replica_log,
    same_keyspace_but_group_counters,
    start_redis,
    wait_for,
)


def blink_replica(server_factory, master_port, *extra):
    return server_factory("--replicaof", "127.0.0.1", str(master_port), *extra)


def linked(srv):
    r = client(srv.port)
    wait_for(lambda: info(r).get("master_link_status") == "up", what="replica link up")
    return r


def caught_up(m, n=1):
    """The master's view: every replica acknowledged its whole stream."""

    def check():
        fields = info(m)
        offset = fields["master_repl_offset"]
        return all(
            f"offset={offset}," in fields.get(f"slave{i}", "") for i in range(n)
        )

    wait_for(check, what="replica offset == master_repl_offset")


def stats(conn):
    return info(conn, "stats")


@pytest.mark.parametrize("diskless,appendonly", [("no", "no"), ("yes", "yes")])
def test_replica_of_redis_gets_snapshot_and_stream(server_factory, tmp_path, peers, diskless,
                                                   appendonly):
    master = start_redis(peers, tmp_path, "redis-master",
                         ["--repl-diskless-sync", diskless, "--repl-diskless-sync-delay", "0"])
    m = client(master.port)
    m.set("before", "sync")
    m.hset("before:h", mapping={"a": 1, "b": 2})
    m.zadd("before:z", {"m": 1.5})
    m.set("before:ttl", "v", px=100000000)
    replica = blink_replica(server_factory, master.port, "--appendonly", appendonly)
    r = linked(replica)
    assert r.get("before") == b"sync"
    mixed_writes(m)
    assert m.execute_command("WAIT", 1, 5000) == 1
    caught_up(m)
    assert same_keyspace_but_group_counters(master.port, replica.port) > 40
    assert r.execute_command("FUNCTION", "LIST") == m.execute_command("FUNCTION", "LIST")
    log = replica_log(replica)
    assert "Full resync from master" in log
    if diskless == "yes":
        assert "receiving streamed RDB from master with EOF" in log
    else:
        assert "bytes from master to disk" in log
    fields = info(r)
    assert fields["role"] == "slave"
    assert fields["master_replid"] == info(m)["master_replid"]
    assert fields["slave_repl_offset"] == info(m)["master_repl_offset"]
    if appendonly == "yes":
        # The synced data and the stream are in the AOF: a restart as a master
        # (no replicaof) serves them, and redis-server 7 loads the same AOF.
        name = os.path.basename(replica.dir)
        replica.stop()
        again = server_factory("--appendonly", "yes", name=name)
        assert same_keyspace_but_group_counters(master.port, again.port) > 40
        again.stop()
        loader = start_redis(peers, tmp_path, name, ["--appendonly", "yes"])
        assert same_keyspace_but_group_counters(master.port, loader.port) > 40


def test_replicaof_command_role_and_client_list(server_factory, tmp_path, peers, oracle):
    master = start_redis(peers, tmp_path, "redis-master")
    m = client(master.port)
    m.set("k", "v")
    b = server_factory()
    c = client(b.port)
    o = client(oracle.port)
    for bad in (["127.0.0.1", "-1"], ["127.0.0.1", "70000"], ["127.0.0.1", "x"]):
        for conn in (c, o):
            with pytest.raises(Exception, match="Invalid master port"):
                conn.execute_command("REPLICAOF", *bad)
    assert c.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    assert c.execute_command("REPLICAOF", "127.0.0.1", master.port) == b"OK"
    linked(b)
    assert c.execute_command("REPLICAOF", "127.0.0.1", master.port) == \
        b"OK Already connected to specified master"
    assert c.get("k") == b"v"
    role = c.execute_command("ROLE")
    assert role[:4] == [b"slave", b"127.0.0.1", master.port, b"connected"]
    assert role[4] == int(info(c)["slave_repl_offset"])
    assert c.config_get("replicaof") == {"replicaof": f"127.0.0.1 {master.port}"}
    assert c.config_get("slaveof") == {"slaveof": f"127.0.0.1 {master.port}"}
    listed = c.execute_command("CLIENT", "LIST", "TYPE", "master").decode()
    assert listed.count("flags=M") == 1 and f"addr=127.0.0.1:{master.port}" in listed
    with pytest.raises(Exception, match="WAIT cannot be used with replica instances"):
        c.execute_command("WAIT", 1, 0)
    # The redis-server master lists us as its replica, on our listening port.
    wait_for(lambda: f"port={b.port},state=online" in info(m).get("slave0", ""),
             what="the master lists us online")
    # SLAVEOF NO ONE: a master again, with the data.
    assert c.execute_command("SLAVEOF", "NO", "ONE") is True  # redis-py reads +OK so
    assert info(c)["role"] == "master"
    assert c.config_get("replicaof") == {"replicaof": ""}
    assert c.set("k", "mine")
    assert c.execute_command("CLIENT", "LIST", "TYPE", "master") == b""


def test_read_only_and_stale_data_errors_match_redis(server_factory, tmp_path, peers):
    master = start_redis(peers, tmp_path, "redis-master")
    ours = blink_replica(server_factory, master.port)
    theirs = start_redis(peers, tmp_path, "redis-replica",
                         ["--replicaof", "127.0.0.1", str(master.port)])
    for srv in (ours, theirs):
        linked(srv)
    replies = []
    for srv in (ours, theirs):
        with RespConnection(srv.port) as raw:
            got = [raw.call("SET", "a", "1").raw, raw.call("GET", "a").raw,
                   raw.call("MULTI").raw, raw.call("INCR", "a").raw, raw.call("EXEC").raw]
            raw.call("CONFIG", "SET", "replica-read-only", "no")
            got.append(raw.call("SET", "local", "1").raw)
            raw.call("CONFIG", "SET", "replica-read-only", "yes")
            # A master that is not there: MASTERDOWN unless stale data is served.
            raw.call("CONFIG", "SET", "replica-serve-stale-data", "no")
            raw.call("REPLICAOF", "127.0.0.1", "1")
            got += [raw.call("GET", "a").raw, raw.call("PING").raw,
                    raw.call("CONFIG", "SET", "repl-diskless-load", "swapdb").raw[:60]]
            raw.call("CONFIG", "SET", "replica-serve-stale-data", "yes")
            got.append(raw.call("GET", "a").raw)
            replies.append(got)
    ours_r, theirs_r = replies
    assert ours_r[:8] == theirs_r[:8]
    assert ours_r[0] == b"-READONLY You can't write against a read only replica.\r\n"
    assert ours_r[5] == b"+OK\r\n"
    assert ours_r[6] == \
        b"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"
    # repl-diskless-load swapdb is taken, as by redis-server (test_diskless_load.py).
    assert ours_r[8] == theirs_r[8] == b"+OK\r\n"
    assert ours_r[9] == theirs_r[9]


def test_partial_resync_after_the_link_is_killed_on_either_side(server_factory, tmp_path, peers):
    master = start_redis(peers, tmp_path, "redis-master")
    m = client(master.port)
    replica = blink_replica(server_factory, master.port)
    r = linked(replica)
    for i in range(100):
        m.set(f"k{i}", i)
    caught_up(m)
    full = int(stats(m)["sync_full"])
    partial = int(stats(m)["sync_partial_ok"])
    # The replica drops its master's link.
    assert r.execute_command("CLIENT", "KILL", "TYPE", "master") == 1
    for i in range(100, 150):
        m.set(f"k{i}", i)
    wait_for(lambda: int(stats(m)["sync_partial_ok"]) == partial + 1, what="a partial resync")
    # The master drops the replica.
    assert m.execute_command("CLIENT", "KILL", "TYPE", "replica") == 1
    m.execute_command("MULTI")
    m.execute_command("INCR", "k1")
    m.execute_command("SET", "k150", "x")
    m.execute_command("EXEC")
    wait_for(lambda: int(stats(m)["sync_partial_ok"]) == partial + 2, what="a second one")
    caught_up(m)
    assert int(stats(m)["sync_full"]) == full
    assert same_keyspace_but_group_counters(master.port, replica.port) == 151
    assert r.get("k1") == b"2"
    assert replica_log(replica).count("Successful partial resynchronization with master") == 2


def test_expiry_on_a_replica_hides_keys_and_waits_for_the_masters_del(server_factory, tmp_path,
                                                                     peers):
    master = start_redis(peers, tmp_path, "redis-master", ["--enable-debug-command", "yes"])
    m = client(master.port)
    m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
    replica = blink_replica(server_factory, master.port)
    r = linked(replica)
    t0 = time.monotonic()
    m.set("short", "v", px=2500)
    m.set("long", "v")
    wait_for(lambda: r.get("long") == b"v", what="the stream")
    assert r.get("short") == b"v"
    time.sleep(max(0.0, t0 + 2.8 - time.monotonic()))
    # Logically expired: hidden from reads, still there until the master's DEL.
    assert r.get("short") is None
    assert r.exists("short") == 0
    assert r.dbsize() == 2
    time.sleep(1.2)  # our own expiry cycle would have run by now
    assert r.dbsize() == 2
    assert m.get("short") is None  # the master expires it and sends DEL
    wait_for(lambda: r.dbsize() == 1, what="the master's DEL applied")
    assert r.get("long") == b"v"


def test_promoted_replica_continues_the_old_history(server_factory, tmp_path, peers):
    """REPLICAOF NO ONE: replid2 is the old master's id, and a redis-server replica of the
    old master PSYNCs to us with it: +CONTINUE, no full sync."""
    master = start_redis(peers, tmp_path, "redis-master")
    m = client(master.port)
    ours = blink_replica(server_factory, master.port)
    b = linked(ours)
    other = start_redis(peers, tmp_path, "redis-replica",
                        ["--replicaof", "127.0.0.1", str(master.port)])
    o = linked(other)
    for i in range(50):
        m.set(f"k{i}", i)
    caught_up(m, 2)
    old_id = info(m)["master_replid"]
    offset = int(info(m)["master_repl_offset"])
    assert b.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    fields = info(b)
    assert fields["master_replid2"] == old_id
    assert fields["master_replid"] != old_id
    assert int(fields["second_repl_offset"]) == offset + 1
    b.set("new", "write")
    assert o.execute_command("REPLICAOF", "127.0.0.1", ours.port) == b"OK"
    wait_for(lambda: o.get("new") == b"write", what="the other replica follows us")
    assert "Successful partial resynchronization with master" in replica_log(other)
    assert same_keyspace_but_group_counters(ours.port, other.port) == 51


def empty_rdb(peers, tmp_path):
    """A valid empty RDB file, as redis-server writes it."""
    srv = start_redis(peers, tmp_path, "rdb-maker", ["--dbfilename", "empty.rdb"])
    c = client(srv.port)
    c.set("fake:key", "fake value")
    c.save()
    with open(os.path.join(str(tmp_path / "rdb-maker"), "empty.rdb"), "rb") as f:
        return f.read()


def test_fake_master_with_corrupt_rdb_or_stream(server_factory, tmp_path, peers):
    rdb = empty_rdb(peers, tmp_path)
    # The key's value damaged: the CRC-64 at the end no longer matches.
    corrupt = rdb.replace(b"fake value", b"fake VALUE")
    assert corrupt != rdb
    bad = FakeMaster(lambda n: b"$%d\r\n" % len(corrupt) + corrupt, False)
    replica = server_factory()
    r = client(replica.port)
    r.set("mine", "before")
    try:
        r.execute_command("REPLICAOF", "127.0.0.1", bad.port)
        wait_for(lambda: bad.connections >= 2, what="the replica retries")
        assert r.ping()
        # Nothing half-loaded is served: the dataset was dropped, and the bad file's
        # key never appears.
        assert r.dbsize() == 0
        assert info(r)["master_link_status"] == "down"
        assert "Failed trying to load the MASTER synchronization DB" in replica_log(replica)
    finally:
        bad.stop()
    # A good RDB, then a stream that is not RESP: the link drops and retries.
    stream = b"*2\r\n$3\r\nDEL\r\nxx\r\n*1\r\n$4\r\nPING\r\n"
    good = FakeMaster(lambda n: b"$%d\r\n" % len(rdb) + rdb + stream, False)
    try:
        r.execute_command("REPLICAOF", "127.0.0.1", good.port)
        wait_for(lambda: good.connections >= 2, what="the replica retries after a bad stream")
        assert r.ping()
        assert r.get("fake:key") == b"fake value"
        assert "Protocol error from MASTER" in replica_log(replica)
    finally:
        good.stop()
    r.execute_command("REPLICAOF", "NO", "ONE")
    assert r.set("after", "ok")


def busy(r):
    """Whether a GET on `r` is refused with BUSY (no other refusal but LOADING, while
    a sync's RDB loads, is expected)."""
    try:
        r.get("fake:key")
    except redis.exceptions.BusyLoadingError:
        return False
    except redis.exceptions.ResponseError as e:
        assert str(e).startswith("BUSY Redis is busy running a script."), e
        return True
    return False


# Spins about a second on the server's clock, then writes.
SPIN_THEN_WRITE = (
    "local t = redis.call('TIME') local s = t[1] * 1e6 + t[2] "
    "while true do local n = redis.call('TIME') "
    "if n[1] * 1e6 + n[2] - s > 1000000 then break end end "
    "redis.call('SET', 'scripted', 'done')")


def test_a_long_script_from_the_master_answers_busy_and_is_unkillable(server_factory, tmp_path,
                                                                        peers):
    """A master that replicates EVAL itself (Redis 6's script replication): past
    busy-reply-threshold the replica's other clients get BUSY while it runs, and SCRIPT
    KILL refuses to stop it (Redis 7.0's scriptKill), then its write lands."""
    rdb = empty_rdb(peers, tmp_path)
    master = FakeMaster(lambda n: b"$%d\r\n" % len(rdb) + rdb
                        + encode("EVAL", SPIN_THEN_WRITE, "0"), False)
    replica = server_factory("--busy-reply-threshold", "100")
    r = client(replica.port)
    try:
        r.execute_command("REPLICAOF", "127.0.0.1", master.port)

        wait_for(lambda: busy(r), 10, "BUSY while the master's script runs")
        with pytest.raises(redis.exceptions.ResponseError,
                           match="UNKILLABLE The busy script was sent by a master instance "
                                 "in the context of replication and cannot be killed."):
            r.script_kill()
        wait_for(lambda: not busy(r) and r.get("scripted") == b"done", 10,
                 "the script's write")
        assert r.get("fake:key") == b"fake value"
    finally:
        master.stop()
    r.execute_command("REPLICAOF", "NO", "ONE")


SPIN = SPIN_THEN_WRITE.replace("redis.call('SET', 'scripted', 'done')", "return 1")


def test_a_clients_long_script_on_a_replica_holds_the_stream_back(server_factory):
    """A client's read-only script past busy-reply-threshold on a replica: the master's
    stream waits for it (Redis's processInputBuffer), on the same connection thread,
    without a deadlock, then is applied."""
    master = server_factory()
    replica = blink_replica(server_factory, master.port, "--busy-reply-threshold", "100",
                            "--io-threads", "1")
    r = linked(replica)
    m = client(master.port)
    result = {}
    t = threading.Thread(target=lambda: result.update(
        spin=client(replica.port).eval(SPIN, 0)))
    t.start()
    try:
        wait_for(lambda: busy(r), 10, "the script past its threshold")
        m.set("during", "1")  # reaches the replica while the script runs
    finally:
        t.join(10)
    assert result.get("spin") == 1
    wait_for(lambda: r.get("during") == b"1", 10, "the write applied after the script")
    caught_up(m)


def same_offset(a, b):
    wait_for(lambda: info(b)["slave_repl_offset"] == info(a)["master_repl_offset"],
             what="the chained replica at its top master's offset")


def test_chained_blinkdb_replicas_and_restart_after_kill_9(server_factory, tmp_path):
    """A -> B -> C, all BlinkDB: one history (same replid and offsets down the chain);
    B killed with -9 and restarted resyncs partially when A's backlog covers the gap
    (B's replica-checkpoint matches its AOF), fully when it does not; C follows B."""
    a = server_factory("--repl-backlog-size", "64kb")
    ma = client(a.port)
    ma.set("before", "chain")
    b = blink_replica(server_factory, a.port, "--appendonly", "yes")
    linked(b)
    c = blink_replica(server_factory, b.port)
    rc = linked(c)
    mixed_writes(ma)
    same_offset(ma, rc)
    assert info(rc)["master_replid"] == info(ma)["master_replid"]
    assert same_keyspace_but_group_counters(a.port, c.port) >= 40
    # kill -9 B; A goes on with writes its backlog still holds.
    time.sleep(1.5)  # B's checkpoint for the last writes
    b_name, b_port = os.path.basename(b.dir), b.port
    b.proc.kill()
    b.proc.wait()
    for i in range(50):
        ma.set(f"gap:{i}", i)
    b = server_factory("--replicaof", "127.0.0.1", str(a.port), "--appendonly", "yes",
                       name=b_name, port=b_port)
    rb = linked(b)
    same_offset(ma, rb)
    same_offset(ma, rc)
    log = replica_log(b)
    assert "Replica checkpoint matches the AOF" in log
    assert log.count("Successful partial resynchronization with master") == 1
    assert log.count("Full resync from master") == 1
    assert same_keyspace_but_group_counters(a.port, b.port) >= 90
    assert same_keyspace_but_group_counters(a.port, c.port) >= 90
    # Again, with a gap larger than A's backlog: a full sync.
    time.sleep(1.5)
    b.proc.kill()
    b.proc.wait()
    for i in range(200):
        ma.set(f"big:{i}", "x" * 1000)
    b = server_factory("--replicaof", "127.0.0.1", str(a.port), "--appendonly", "yes",
                       name=b_name, port=b_port)
    rb = linked(b)
    same_offset(ma, rb)
    same_offset(ma, rc)
    assert replica_log(b).count("Full resync from master") == 2
    assert same_keyspace_but_group_counters(a.port, c.port) >= 290


def test_min_replicas_to_write(server_factory, tmp_path, peers, oracle):
    master = server_factory("--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")
    client(oracle.port).config_set("min-replicas-to-write", 1)
    replies = []
    for port in (master.port, oracle.port):
        with RespConnection(port) as raw:
            replies.append([raw.call("SET", "a", "1").raw, raw.call("GET", "a").raw,
                            raw.call("MULTI").raw, raw.call("SET", "a", "2").raw,
                            raw.call("EXEC").raw])
    assert replies[0] == replies[1]
    assert replies[0][0] == b"-NOREPLICAS Not enough good replicas to write.\r\n"
    m = client(master.port)
    assert info(m)["min_slaves_good_slaves"] == "0"
    replica = blink_replica(server_factory, master.port)
    linked(replica)
    wait_for(lambda: info(m)["min_slaves_good_slaves"] == "1", what="a good replica")
    assert m.set("a", "1")
    assert m.execute_command("WAIT", 1, 5000) == 1
    assert client(replica.port).get("a") == b"1"
    assert list(info(m).keys())[:3] == ["role", "connected_slaves", "min_slaves_good_slaves"]


def write_conf(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def start_sentinel(peers, tmp_path, master_port, parallel_syncs=2):
    """A redis-sentinel (redis-server --sentinel) monitoring `mymaster` at master_port
    with a quorum of 1 and a 1 s down-after; returns its port."""
    sdir = tmp_path / "sentinel"
    sdir.mkdir()
    sport = free_port()
    sconf = write_conf(str(sdir / "sentinel.conf"), [
        f"port {sport}", "bind 127.0.0.1", f"dir {sdir}",
        f"sentinel monitor mymaster 127.0.0.1 {master_port} 1",
        "sentinel down-after-milliseconds mymaster 1000",
        "sentinel failover-timeout mymaster 20000",
        f"sentinel parallel-syncs mymaster {parallel_syncs}",
    ])
    srv = ServerProcess(ORACLE_BIN, str(sdir), [], port=sport, args=[sconf, "--sentinel"])
    peers.append(srv)
    return sport


def safe_info(conn):
    try:
        return info(conn)
    except (OSError, ConnectionError):
        return {}


def test_sentinel_fails_over_a_blinkdb_master(server_factory, tmp_path, peers):
    """redis-server --sentinel monitors a BlinkDB master with two BlinkDB replicas; the
    master is killed with -9; Sentinel promotes one replica (SLAVEOF NO ONE in its
    MULTI with CONFIG REWRITE and CLIENT KILL) and points the other at it; redis-py's
    Sentinel discovers the new master and writes to it."""
    from redis.sentinel import Sentinel

    def blink(name, extra=()):
        d = tmp_path / name
        d.mkdir()
        port = free_port()
        conf = write_conf(str(d / "blinkdb.conf"), [f"port {port}", f"dir {d}", *extra])
        return server_factory(conf, name=name, port=port, args=[])

    a = blink("a")
    ma = client(a.port)
    ma.set("before", "failover")
    b = blink("b", [f"replicaof 127.0.0.1 {a.port}"])
    c = blink("c", [f"replicaof 127.0.0.1 {a.port}"])
    for srv in (b, c):
        linked(srv)
    sport = start_sentinel(peers, tmp_path, a.port, parallel_syncs=1)
    s = client(sport)
    wait_for(lambda: len(s.execute_command("SENTINEL", "REPLICAS", "mymaster")) == 2,
             timeout=30, what="Sentinel discovers both replicas")
    ma.set("acked", "yes")
    assert ma.execute_command("WAIT", 2, 5000) == 2
    start = time.monotonic()
    a.proc.kill()
    a.proc.wait()
    ports = {b.port: b, c.port: c}

    def new_master():
        addr = s.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
        return int(addr[1]) if addr and int(addr[1]) in ports else None

    promoted = wait_for(new_master, timeout=60, what="Sentinel promotes a replica")
    elapsed = time.monotonic() - start
    other = c if promoted == b.port else b
    pm = client(promoted)
    # Sentinel's CLIENT KILL TYPE normal may close our connections meanwhile.
    wait_for(lambda: safe_info(pm).get("role") == "master",
             what="the promoted replica is a master")
    ro = client(other.port)
    wait_for(lambda: safe_info(ro).get("master_port") == str(promoted)
             and safe_info(ro).get("master_link_status") == "up", timeout=60,
             what="the other replica follows the new master")
    # The promoted node's config file was rewritten without replicaof.
    with open(os.path.join(ports[promoted].dir, "blinkdb.conf")) as f:
        assert "replicaof" not in f.read()
    sentinel = Sentinel([("127.0.0.1", sport)], socket_timeout=2)

    def discovered():
        try:
            return sentinel.discover_master("mymaster")
        except Exception:
            return None

    assert wait_for(discovered, timeout=30, what="redis-py discovers the new master") == \
        ("127.0.0.1", promoted)
    new = sentinel.master_for("mymaster", socket_timeout=2)
    assert new.get("acked") == b"yes"
    assert new.set("after", "failover")

    def after_on_other():
        try:
            return ro.get("after") == b"failover"
        except Exception:  # a connection Sentinel's CLIENT KILL closed
            return False

    wait_for(after_on_other, what="the write reaches the other replica")
    assert "Successful partial resynchronization with master" in replica_log(other)
    print(f"failover: new master after {elapsed:.1f} s")


def test_blinkdb_replica_of_blinkdb_gets_bloom_filters_exactly(server_factory):
    """A BlinkDB replica's full sync carries the master's own filters bit for bit (the
    blinkdb-bf AUX field of its RDB), and later adds reach it as RedisBloom commands."""
    master = server_factory()
    m = client(master.port)
    m.execute_command("BF.RESERVE", "bf:synced", 0.001, 100_000)
    m.execute_command("BF.MADD", "bf:synced", *[f"a{i}" for i in range(5000)])
    m.execute_command("BF.INSERT", "bf:grown", "CAPACITY", 50, "ITEMS", *[f"b{i}" for i in range(400)])
    replica = blink_replica(server_factory, master.port)
    r = linked(replica)
    m.execute_command("BF.MADD", "bf:synced", *[f"c{i}" for i in range(100)])
    m.execute_command("BF.ADD", "bf:streamed", "x")
    assert m.execute_command("WAIT", 1, 5000) == 1
    probes = [f"never{i}" for i in range(3000)]
    for key in ("bf:synced", "bf:grown", "bf:streamed"):
        assert r.execute_command("BF.INFO", key) == m.execute_command("BF.INFO", key), key
        assert r.execute_command("BF.MEXISTS", key, *probes) == \
            m.execute_command("BF.MEXISTS", key, *probes), key
    # The filters synced in the snapshot are the master's bits exactly.
    for key in ("bf:synced", "bf:grown"):
        assert scandump(r, key) == scandump(m, key), key


def test_large_values_stay_on_disk_on_a_blinkdb_replica(server_factory):
    """Values of at least blob-threshold live in the log, not in memory, on the master;
    a BlinkDB replica stores them the same way whether they came with the full sync
    (loaded, then moved to the log before the AOF rewrite) or down the stream (plain SET,
    MULTI/EXEC, EVAL, with a TTL). MEMORY USAGE tells: a few dozen bytes for a value
    kept in the log. Writes of every type, Bloom filters included, read back identically
    after WAIT, and again after the replica is killed with -9 and restarted."""
    import random

    rng = random.Random(22)
    master = server_factory("--appendonly", "yes")
    m = client(master.port)
    big = {f"big:{i:02d}": rng.randbytes(rng.randint(20_000, 300_000)) for i in range(12)}
    keys = sorted(big)
    for k in keys[:4]:
        m.set(k, big[k])
    m.set(keys[4], big[keys[4]], px=100_000_000)
    m.execute_command("BF.RESERVE", "bf:full", "0.01", "1000")
    m.execute_command("BF.MADD", "bf:full", *[f"i{i}" for i in range(300)])
    replica = blink_replica(server_factory, master.port, "--appendonly", "yes")
    r = linked(replica)
    # The stream: a plain SET, MULTI/EXEC, EVAL, a TTL, and the mixed workload.
    m.set(keys[5], big[keys[5]])
    with m.pipeline(transaction=True) as p:
        p.set(keys[6], big[keys[6]])
        p.set(keys[7], big[keys[7]], ex=100_000)
        p.execute()
    m.eval("redis.call('SET', KEYS[1], ARGV[1]); return redis.call('SET', KEYS[2], ARGV[2])",
           2, keys[8], keys[9], big[keys[8]], big[keys[9]])
    m.set(keys[10], big[keys[10]])
    m.append(keys[10], b"tail")
    big[keys[10]] += b"tail"
    m.set(keys[11], big[keys[11]])
    m.execute_command("BF.ADD", "bf:full", "late")
    m.execute_command("BF.RESERVE", "bf:stream", "0.001", "500", "NONSCALING")
    m.execute_command("BF.MADD", "bf:stream", *[f"s{i}" for i in range(200)])
    mixed_writes(m)
    assert m.execute_command("WAIT", 1, 5000) == 1
    caught_up(m)

    def check(r):
        for k in keys:
            assert r.get(k) == big[k], k
            # Every large value is in the log on both sides, but the one APPEND
            # changed: a changed large value is kept in memory (engine).
            if k != keys[10]:
                assert (r.memory_usage(k) or 0) < 1024, k
                assert (m.memory_usage(k) or 0) < 1024, k
        assert 0 < r.pttl(keys[4]) <= m.pttl(keys[4]) + 5000
        assert 0 < r.pttl(keys[7])
        for key in ("bf:full", "bf:stream"):
            assert scandump(r, key) == scandump(m, key), key
        assert same_keyspace_but_group_counters(master.port, replica.port) > 40

    check(r)
    assert "large values kept in the log" in replica_log(replica)
    replica.proc.kill()
    replica.proc.wait()
    name = os.path.basename(replica.dir)
    replica = server_factory("--appendonly", "yes", "--replicaof", "127.0.0.1",
                             str(master.port), name=name)
    r = linked(replica)
    assert m.execute_command("WAIT", 1, 5000) == 1
    caught_up(m)
    check(r)


@pytest.mark.parametrize("master_kind", ["redis", "blinkdb"])
def test_full_sync_replaces_the_replicas_function_libraries(server_factory, tmp_path, peers,
                                                            master_kind):
    """As Redis's emptyData at a full sync: the replica's own libraries go, the master's
    come with the RDB (FLUSHALL alone keeps libraries)."""
    lib = ("#!lua name={0}\nredis.register_function{{function_name='{0}_fn', "
           "callback=function() return '{0}' end, flags={{'no-writes'}}}}")
    master = (start_redis(peers, tmp_path, "redis-master") if master_kind == "redis"
              else server_factory())
    client(master.port).execute_command("FUNCTION", "LOAD", lib.format("theirs"))
    b = server_factory("--appendonly", "yes")
    c = client(b.port)

    def names():
        return sorted(entry[1] for entry in c.execute_command("FUNCTION", "LIST"))

    c.execute_command("FUNCTION", "LOAD", lib.format("mine"))
    c.execute_command("FLUSHALL")
    assert names() == [b"mine"]
    c.execute_command("REPLICAOF", "127.0.0.1", master.port)
    linked(b)
    assert names() == [b"theirs"]
    assert c.execute_command("FCALL_RO", "theirs_fn", 0) == b"theirs"
    with pytest.raises(Exception, match="Function not found"):
        c.execute_command("FCALL_RO", "mine_fn", 0)
    # The AOF rewritten after the sync holds the master's libraries only.
    c.execute_command("REPLICAOF", "NO", "ONE")
    name, port = os.path.basename(b.dir), b.port
    b.stop()
    b = server_factory("--appendonly", "yes", name=name, port=port)
    c = client(b.port)
    assert names() == [b"theirs"]
