"""Replication on Redis's own protocol, with redis-server 7.0.15 as the peer.

BlinkDB as a master of a redis-server replica: full sync (the RDB from the fork-less
snapshot), the write stream of every type (also MULTI/EXEC, EVAL, FUNCTION, expiries,
several databases), with the AOF off and on; partial resync (+CONTINUE) after the link is
killed; a full resync when the backlog no longer covers the gap; a replica past the
replica output limit is dropped and resyncs; WAIT, ROLE, INFO replication and CLIENT LIST
as Redis shows them. Each check reads the replica back key by key after WAIT."""

import os
import re
import signal
import time

import pytest

from rdb_helpers import WORKLOAD, assert_same_keyspace, client, content
from resp import RespConnection
from server import ORACLE_BIN, ServerProcess


def wait_for(predicate, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def info(conn, section="replication"):
    port = conn.connection_pool.connection_kwargs["port"]
    with RespConnection(port) as raw:
        text = raw.call("INFO", section).value.decode()
    return dict(
        line.split(":", 1) for line in text.splitlines() if line and not line.startswith("#")
    )


@pytest.fixture
def peers():
    """redis-server processes a test starts; all stopped at teardown."""
    started = []
    yield started
    for srv in started:
        try:
            os.kill(srv.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        srv.stop()


def start_redis(peers, tmp_path, name, args=()):
    srv = ServerProcess(ORACLE_BIN, str(tmp_path / name), list(args))
    peers.append(srv)
    return srv


def start_replica(peers, tmp_path, master_port, name="replica", extra=()):
    return start_redis(
        peers, tmp_path, name, ["--replicaof", "127.0.0.1", str(master_port), *extra]
    )


def linked(replica):
    r = client(replica.port)
    wait_for(lambda: info(r).get("master_link_status") == "up", what="replica link up")
    return r


def replica_log(replica):
    with open(replica.log_path, "rb") as f:
        return f.read().decode(errors="replace")


def same_keyspace_but_group_counters(port_a, port_b):
    """assert_same_keyspace, leaving out XINFO GROUPS' entries-read and lag."""
    total = 0
    for db in range(16):
        a, b = client(port_a, db), client(port_b, db)
        keys = sorted(a.keys("*"))
        assert keys == sorted(b.keys("*")), f"db {db}: keys differ"
        for key in keys:
            ca, cb = content(a, key), content(b, key)
            if ca[0] == "stream":
                ca, cb = strip_group_counters(ca), strip_group_counters(cb)
            assert ca == cb, f"db {db}: {key!r} differs"
            total += 1
    return total


def strip_group_counters(c):
    entries, info, groups = c[1]
    groups = [([kv for kv in g if kv[0] not in ("entries-read", "lag")], cons, pend)
              for g, cons, pend in groups]
    return c[0], (entries, info, groups)


def mixed_writes(m):
    """Writes of every kind, across databases, that the stream must carry."""
    for cmd in WORKLOAD:
        m.execute_command(*cmd)
    m.execute_command("SELECT", 0)
    m.set("counter", 10)
    m.incrby("counter", 5)
    m.incrbyfloat("float", "1.5")
    m.append("s:raw", " world")
    m.expire("s:int", 100000)
    m.persist("s:ttl")
    m.set("gone", "x")
    m.delete("gone")
    m.rename("s:neg", "s:renamed")
    m.lpush("l:small", "head")
    m.lpop("l:big")
    m.hincrby("h:small", "a", 41)
    m.zincrby("z:small", 2, "a")
    m.srem("set:int", 0)
    m.setrange("s:lzf", 5, "XYZ")
    m.execute_command("PFADD", "hll", "a", "b", "c")
    m.execute_command("SETBIT", "bits", 77, 1)
    m.execute_command("GEOADD", "geo", 13.361389, 38.115556, "Palermo")
    m.execute_command("XADD", "x:small", "3-0", "c", "3")
    m.execute_command("XCLAIM", "x:groups", "readers", "carol", 0, "6-1")
    pipe = m.pipeline(transaction=True)
    pipe.set("tx:a", 1)
    pipe.incr("tx:a")
    pipe.sadd("tx:set", "x", "y")
    pipe.execute()
    # Scripts reach the stream as their effects, wrapped in MULTI/EXEC.
    m.eval("redis.call('SET', KEYS[1], ARGV[1]); redis.call('RPUSH', KEYS[2], ARGV[1])", 2,
           "lua:s", "lua:l", "v1")
    m.eval("return redis.call('INCRBY', KEYS[1], 7)", 1, "counter")
    m.execute_command(
        "FUNCTION", "LOAD",
        "#!lua name=replib\n"
        "redis.register_function('setboth', function(keys, args)\n"
        "  redis.call('SET', keys[1], args[1]); return redis.call('SET', keys[2], args[1]) end)",
    )
    m.execute_command("FCALL", "setboth", 2, "fn:a", "fn:b", "fv")
    # Other databases, and commands that move keys between them.
    m1 = client(m.connection_pool.connection_kwargs["port"], db=1)
    m1.set("db1:key", "one")
    m1.hset("db1:hash", mapping={"f": "v"})
    m1.move("db1:key", 4)
    m.execute_command("COPY", "h:small", "h:copy", "DB", "5")
    m.execute_command("SWAPDB", 6, 7)
    m1.set("db1:ttl", "v", px=100000000)


@pytest.mark.parametrize("appendonly", ["no", "yes"])
def test_redis_replica_gets_snapshot_and_stream(server_factory, tmp_path, peers, appendonly):
    master = server_factory("--appendonly", appendonly)
    m = client(master.port)
    # Before the sync: this reaches the replica in the RDB.
    m.set("before", "sync")
    m.hset("before:h", mapping={"a": 1, "b": 2})
    m.zadd("before:z", {"m": 1.5})
    m.set("before:ttl", "v", px=100000000)
    replica = start_replica(peers, tmp_path, master.port)
    r = linked(replica)
    assert r.get("before") == b"sync"
    mixed_writes(m)
    assert m.execute_command("WAIT", 1, 5000) == 1
    # The oracle: redis-server as the master of a redis-server replica, same writes.
    # Both replicas must hold the same keyspace (a stream group's entries-read is
    # not carried by Redis's own propagation either, so masters and replicas differ
    # there alike).
    redis_master = start_redis(peers, tmp_path, "redis-master", ["--repl-diskless-sync", "no"])
    redis_replica = start_replica(peers, tmp_path, redis_master.port, name="redis-replica")
    linked(redis_replica)
    rm = client(redis_master.port)
    rm.config_set("hash-max-listpack-entries", 128)
    rm.set("before", "sync")
    rm.hset("before:h", mapping={"a": 1, "b": 2})
    rm.zadd("before:z", {"m": 1.5})
    rm.set("before:ttl", "v", px=100000000)
    mixed_writes(rm)
    assert rm.execute_command("WAIT", 1, 5000) == 1
    assert assert_same_keyspace(redis_replica.port, replica.port) > 40
    # And the replica holds what its master holds, key by key.
    assert same_keyspace_but_group_counters(master.port, replica.port) > 40
    assert r.execute_command("FUNCTION", "LIST") == m.execute_command("FUNCTION", "LIST")
    # Full sync, then nothing but the stream.
    log = replica_log(replica)
    assert "Full resync from master" in log
    assert "MASTER <-> REPLICA sync: Finished with success" in log


def test_expired_keys_reach_the_replica_as_del(server_factory, tmp_path, peers):
    master = server_factory()
    m = client(master.port)
    replica = start_replica(peers, tmp_path, master.port)
    r = linked(replica)
    for i in range(20):
        m.set(f"short:{i}", "v", px=100)
    m.set("long", "v")
    assert m.execute_command("WAIT", 1, 5000) == 1
    # A replica never expires keys itself: its key count drops only by the master's DELs.
    wait_for(lambda: r.dbsize() == 1, what="DELs of expired keys on the replica")
    assert r.get("long") == b"v"


def test_partial_resync_after_the_link_is_killed(server_factory, tmp_path, peers):
    master = server_factory()
    m = client(master.port)
    replica = start_replica(peers, tmp_path, master.port)
    r = linked(replica)
    for i in range(100):
        m.set(f"k{i}", i)
    assert m.execute_command("WAIT", 1, 5000) == 1
    replid = info(m)["master_replid"]
    assert m.execute_command("CLIENT", "KILL", "TYPE", "replica") == 1
    for i in range(100, 200):
        m.set(f"k{i}", i)
    wait_for(lambda: info(r).get("master_link_status") == "up", what="link up again")
    assert m.execute_command("WAIT", 1, 5000) == 1
    assert assert_same_keyspace(master.port, replica.port) == 200
    log = replica_log(replica)
    assert "Successful partial resynchronization with master" in log
    assert log.count("Full resync from master") == 1
    assert info(m)["master_replid"] == replid
    assert info(r)["master_replid"] == replid
    # And from the replica's side: CLIENT KILL TYPE master on the replica.
    r.execute_command("CLIENT", "KILL", "TYPE", "master")
    m.set("after", "second kill")
    wait_for(lambda: r.get("after") == b"second kill", what="stream after the second kill")
    assert replica_log(replica).count("Successful partial resynchronization with master") == 2


def test_full_resync_when_the_backlog_does_not_cover_the_gap(server_factory, tmp_path, peers):
    master = server_factory("--repl-backlog-size", "16kb")
    m = client(master.port)
    replica = start_replica(peers, tmp_path, master.port)
    r = linked(replica)
    m.set("a", 1)
    assert m.execute_command("WAIT", 1, 5000) == 1
    os.kill(replica.pid, signal.SIGSTOP)
    try:
        m.execute_command("CLIENT", "KILL", "TYPE", "replica")
        for i in range(200):
            m.set(f"big{i}", "x" * 500)
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    assert m.execute_command("WAIT", 1, 10000) == 1
    assert assert_same_keyspace(master.port, replica.port) == 201
    log = replica_log(replica)
    assert log.count("Full resync from master") == 2, log[-2000:]
    assert int(info(m)["repl_backlog_histlen"]) <= 16 * 1024


def test_slow_replica_past_the_output_limit_is_dropped_and_resyncs(server_factory, tmp_path, peers):
    master = server_factory("--client-output-buffer-limit", "replica 256kb 0 0")
    m = client(master.port)
    replica = start_replica(peers, tmp_path, master.port)
    r = linked(replica)
    os.kill(replica.pid, signal.SIGSTOP)
    try:
        value = "v" * 10000
        for i in range(2500):  # 25 MB, past the socket buffers and the limit
            m.set(f"k{i % 50}", value)
        wait_for(lambda: info(m)["connected_slaves"] == "0", what="the slow replica dropped")
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    assert m.execute_command("WAIT", 1, 10000) == 1
    assert assert_same_keyspace(master.port, replica.port) == 50
    with open(master.log_path, "rb") as f:
        assert b"output buffer limits" in f.read()


def test_wait_role_info_and_client_list(server_factory, tmp_path, peers):
    master = server_factory()
    m = client(master.port)
    assert m.execute_command("WAIT", 0, 0) == 0
    start = time.monotonic()
    assert m.execute_command("WAIT", 1, 200) == 0
    assert time.monotonic() - start >= 0.15
    before = info(m)
    assert before["role"] == "master"
    assert before["connected_slaves"] == "0"
    assert before["master_repl_offset"] == "0"
    assert before["repl_backlog_active"] == "0"
    replica = start_replica(peers, tmp_path, master.port)
    r = linked(replica)
    m.set("x", 1)
    assert m.execute_command("WAIT", 1, 5000) == 1
    start = time.monotonic()
    assert m.execute_command("WAIT", 2, 300) == 1  # only one replica: it times out
    assert time.monotonic() - start >= 0.25
    wait_for(lambda: info(m)["slave0"].endswith(",lag=0") or True)
    fields = info(m)
    assert re.fullmatch(
        rf"ip=127\.0\.0\.1,port={replica.port},state=online,offset=\d+,lag=\d+", fields["slave0"]
    )
    assert fields["connected_slaves"] == "1"
    assert fields["repl_backlog_active"] == "1"
    assert fields["repl_backlog_first_byte_offset"] == "1"
    offset = int(fields["master_repl_offset"])
    assert offset > 0 and fields["repl_backlog_histlen"] == str(offset)
    # The replica agrees on the id and, once it acknowledged, the offset.
    wait_for(lambda: int(info(r)["slave_repl_offset"]) >= offset, what="replica offset")
    assert info(r)["master_replid"] == fields["master_replid"]
    role = m.execute_command("ROLE")
    assert role[0] == b"master" and role[1] >= offset
    assert role[2][0][:2] == [b"127.0.0.1", str(replica.port).encode()]
    listed = m.execute_command("CLIENT", "LIST", "TYPE", "replica").decode()
    assert listed.count("flags=S") == 1 and "cmd=psync" in listed
    assert m.execute_command("CLIENT", "LIST", "TYPE", "normal").decode().count("flags=S") == 0


def test_info_replication_names_fields_as_redis_does(server_factory, tmp_path, peers):
    """The same field names, in the same order, as a redis-server master with one replica."""
    redis_master = start_redis(peers, tmp_path, "redis-master")
    redis_replica = start_replica(peers, tmp_path, redis_master.port, name="rr")
    linked(redis_replica)
    master = server_factory()
    replica = start_replica(peers, tmp_path, master.port, name="br")
    linked(replica)
    ours = list(info(client(master.port)).keys())
    theirs = list(info(client(redis_master.port)).keys())
    assert ours == theirs


def test_replconf_and_psync_errors_match_redis(server_factory, oracle):
    for port in (server_factory().port, oracle.port):
        c = client(port)
        assert c.execute_command("REPLCONF", "listening-port", "1234") == b"OK"
        assert c.execute_command("REPLCONF", "capa", "eof", "capa", "psync2") == b"OK"
    replies = []
    for port in (server_factory().port, oracle.port):
        c = client(port)
        got = []
        for cmd in (("REPLCONF", "nosuch", "1"), ("REPLCONF", "listening-port"),
                    ("REPLCONF", "listening-port", "abc"), ("PSYNC", "x")):
            try:
                got.append(c.execute_command(*cmd))
            except Exception as e:  # noqa: BLE001 - the error text is what is compared
                got.append(str(e))
        replies.append(got)
    assert replies[0] == replies[1]


def read_sync_payload(conn):
    """The bulk after (+FULLRESYNC and) keepalive newlines: `$<len>\\r\\n` + RDB bytes."""
    while True:
        line = conn._line()
        if line.startswith(b"$"):
            break
        assert line in (b"", b"\n") or line.startswith(b"+FULLRESYNC"), line
    n = int(line[1:])
    while len(conn.buf) - conn.pos < n:
        conn._fill()
    rdb = bytes(conn.buf[conn.pos : conn.pos + n])
    conn.pos += n
    return rdb


def read_stream(conn, n):
    while len(conn.buf) - conn.pos < n:
        conn._fill()
    data = bytes(conn.buf[conn.pos : conn.pos + n])
    conn.pos += n
    return data


def test_wire_format_of_psync_and_sync(server_factory):
    master = server_factory()
    m = client(master.port)
    m.set("k", "v")
    with RespConnection(master.port) as c:
        assert c.call("REPLCONF", "listening-port", "1").raw == b"+OK\r\n"
        assert c.call("REPLCONF", "capa", "eof", "capa", "psync2").raw == b"+OK\r\n"
        c.send("PSYNC", "?", "-1")
        first = c._line()
        assert re.fullmatch(rb"\+FULLRESYNC [0-9a-f]{40} (\d+)", first), first
        offset = int(first.split()[2])
        rdb = read_sync_payload(c)
        assert rdb.startswith(b"REDIS0010") and b"redis-ver\x067.0.15" in rdb and b"k" in rdb
        m.set("after", "1")
        want = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nset\r\n$5\r\nafter\r\n$1\r\n1\r\n"
        got = read_stream(c, len(want))
        assert got.lower() == want.lower()
        assert int(info(m)["master_repl_offset"]) == offset + len(want)
        # A partial resync from the middle of what was sent.
        replid = first.split()[1].decode()
        with RespConnection(master.port) as p:
            assert p.call("REPLCONF", "capa", "psync2").raw == b"+OK\r\n"
            p.send("PSYNC", replid, offset + 1)
            assert p._line() == f"+CONTINUE {replid}".encode()
            assert read_stream(p, len(want)).lower() == want.lower()
        with RespConnection(master.port) as p:
            p.send("PSYNC", replid, offset + len(want) + 2)  # past the end: full
            assert p._line().startswith(b"+FULLRESYNC")
    with RespConnection(master.port) as c:
        c.send("SYNC")
        rdb = read_sync_payload(c)
        assert rdb.startswith(b"REDIS0010")


def test_bloom_filters_reach_a_redisbloom_replica_over_the_stream(server_factory, tmp_path, peers):
    """BF.* writes made after the sync reach a redis-server + RedisBloom replica: a filter's
    creation goes down the stream as RedisBloom's BF.RESERVE, its adds as BF.ADD/BF.MADD."""
    from bloom_support import redisbloom_path

    master = server_factory()
    m = client(master.port)
    replica = start_replica(peers, tmp_path, master.port, extra=("--loadmodule", redisbloom_path()))
    r = linked(replica)
    m.execute_command("BF.RESERVE", "bf:r", "0.01", "1000")
    m.execute_command("BF.MADD", "bf:r", *[f"item{i}" for i in range(500)])
    m.execute_command("BF.ADD", "bf:auto", "x")
    m.execute_command("BF.INSERT", "bf:ins", "CAPACITY", "50", "ERROR", "0.001", "ITEMS", "a", "b")
    assert m.execute_command("WAIT", 1, 5000) == 1
    for key in ("bf:r", "bf:auto", "bf:ins"):
        # Size is each server's own memory (BlinkDB's bit arrays are laid out its way).
        mine, theirs = (dict(zip(*[iter(c.execute_command("BF.INFO", key))] * 2)) for c in (m, r))
        del mine[b"Size"], theirs[b"Size"]
        assert theirs == mine, key
    # Every item added reached the replica; items never added are false positives at
    # the filter's own rate there (hash schemes differ, so the sets of them differ).
    assert r.execute_command("BF.MEXISTS", "bf:r", *[f"item{i}" for i in range(500)]) == [1] * 500
    assert r.execute_command("BF.MEXISTS", "bf:ins", "a", "b") == [1, 1]
    strangers = r.execute_command("BF.MEXISTS", "bf:r", *[f"other{i}" for i in range(1000)])
    assert sum(strangers) < 40


def test_replication_options_at_runtime(server_factory, tmp_path, peers, oracle):
    master = server_factory()
    m = client(master.port)
    r_oracle = client(oracle.port)
    for conn in (m, r_oracle):
        assert conn.config_get("repl-backlog-size") == {"repl-backlog-size": "1048576"}
        assert conn.config_get("repl-timeout") == {"repl-timeout": "60"}
        assert conn.config_get("repl-ping-replica-period") == {"repl-ping-replica-period": "10"}
    m.config_set("repl-backlog-size", "1000")  # Redis keeps at least 16kb
    r_oracle.config_set("repl-backlog-size", "1000")
    replica = start_replica(peers, tmp_path, master.port)
    linked(replica)
    assert info(m)["repl_backlog_size"] == "16384" == info(r_oracle)["repl_backlog_size"]
    m.config_set("repl-backlog-size", "64kb")
    assert info(m)["repl_backlog_size"] == "65536"
    # The master's PING every repl-ping-replica-period seconds moves the offset.
    m.config_set("repl-ping-replica-period", "1")
    before = int(info(m)["master_repl_offset"])
    wait_for(lambda: int(info(m)["master_repl_offset"]) >= before + len(b"*1\r\n$4\r\nPING\r\n"),
             what="a PING in the stream")
    # A client that WAITs and goes away leaves nothing behind.
    from resp import RespConnection as Raw
    with Raw(master.port) as c:
        c.send("WAIT", 5, 0)
        time.sleep(0.2)
    m.set("after", "wait")
    assert m.execute_command("WAIT", 1, 5000) == 1


def _counter_stream(server):
    """The stream a replica gets for INCR, DECR, INCRBY and DECRBY."""
    with server.connect() as m, RespConnection(server.port) as c:
        m.call("FLUSHALL")
        assert c.call("REPLCONF", "capa", "psync2").raw == b"+OK\r\n"
        c.send("PSYNC", "?", "-1")
        # Redis sends newlines while its BGSAVE starts.
        assert c._line().lstrip(b"\n").startswith(b"+FULLRESYNC")
        read_sync_payload(c)
        for cmd in (("incr", "n"), ("decr", "n"), ("incrby", "n", "5"), ("decrby", "n", "2")):
            m.call(*cmd)
        want = (b"*2\r\n$6\r\nselect\r\n$1\r\n0\r\n*2\r\n$4\r\nincr\r\n$1\r\nn\r\n"
                b"*2\r\n$4\r\ndecr\r\n$1\r\nn\r\n*3\r\n$6\r\nincrby\r\n$1\r\nn\r\n$1\r\n5\r\n"
                b"*3\r\n$6\r\ndecrby\r\n$1\r\nn\r\n$1\r\n2\r\n")
        # Redis's replication cron may PING the replica in between.
        got = read_stream(c, len(want)).lower()
        return got.replace(b"*1\r\n$4\r\nping\r\n", b"")


def test_counters_propagate_as_called(servers):
    """Redis replicates INCR/DECR/INCRBY/DECRBY as they were called (maxmemory.tcl's
    "propagation with eviction in MULTI" reads `incr x` from the stream); BlinkDB
    wrote them all as INCRBY."""
    assert _counter_stream(servers["blinkdb"]) == _counter_stream(servers["redis"])


@pytest.mark.parametrize("pairing", ["blinkdb-to-redis", "redis-to-blinkdb", "blinkdb-to-blinkdb"])
def test_publish_reaches_subscribers_of_the_replica(server_factory, tmp_path, peers, pairing):
    """PUBLISH on a master reaches the subscribers of its replicas, as Redis propagates it
    (to the replication stream, not to the AOF), whichever side is BlinkDB."""
    if pairing == "redis-to-blinkdb":
        master = start_redis(peers, tmp_path, "master")
    else:
        master = server_factory("--appendonly", "yes")
    if pairing == "blinkdb-to-redis":
        replica = start_replica(peers, tmp_path, master.port)
    else:
        replica = server_factory("--replicaof", "127.0.0.1", str(master.port))
    linked(replica)
    with RespConnection(replica.port) as sub, RespConnection(master.port) as m:
        assert sub.call("SUBSCRIBE", "news").value[0][1] == b"subscribe"
        assert m.call("PUBLISH", "news", "hello").value == 0  # nobody subscribes on the master
        m.call("SET", "after", "1")
        assert m.call("WAIT", 1, 5000).value == 1
        msg = sub.read_reply().value
        assert [part for _, part in msg] == [b"message", b"news", b"hello"]
    if pairing != "redis-to-blinkdb":
        # Not in the master's AOF: a restart from it publishes nothing and loads the key.
        aof_dir = os.path.join(master.dir, "appendonlydir")
        logged = b"".join(open(os.path.join(aof_dir, f), "rb").read()
                          for f in os.listdir(aof_dir) if ".incr." in f)
        assert b"after" in logged and b"hello" not in logged
