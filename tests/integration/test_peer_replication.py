"""Replication with redis-server 8.0.2 and valkey-server 8.1.1, both ways (issue 43).

BlinkDB as the replica of an 8.x master under write load: the full sync is the peer's RDB
12 (or 11), the stream of every type follows; then a restart of the replica (AOF and its
replica-checkpoint) and a restart of the master (SHUTDOWN SAVE keeps its replication ID
and offset) each end in a partial resync. A command the 8.0 master sends that BlinkDB does
not serve is reported as Redis reports it (propagation-error-behavior). And the peer as the
replica of a BlinkDB master: full sync, the stream, and a partial resync after the
replica's restart (valkey's handshake adds REPLCONF version, which BlinkDB refuses as
Redis 7.0 does, and valkey goes on)."""

import os
import threading
import time

import pytest

from peer_servers import PEERS, start_peer
from rdb_helpers import client
from resp import RespConnection
from test_replication import info, mixed_writes, replica_log, same_keyspace_but_group_counters, \
    wait_for


def linked(srv):
    r = client(srv.port)
    wait_for(lambda: info(r).get("master_link_status") == "up", timeout=60,
             what="replica link up")
    return r


def caught_up(m):
    """The master's view: its replica acknowledged the whole stream."""
    def check():
        fields = info(m)
        return f"offset={fields['master_repl_offset']}," in fields.get("slave0", "")
    wait_for(check, timeout=30, what="replica offset == master_repl_offset")


def stats(conn):
    return info(conn, "stats")


class Writer:
    """Writes to the master from a thread while the test syncs: bounded in count and time."""

    def __init__(self, port, limit=20000, seconds=20):
        self.port, self.limit, self.seconds = port, limit, seconds
        self.count = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        c = client(self.port)
        end = time.monotonic() + self.seconds
        while not self.stop.is_set() and self.count < self.limit and time.monotonic() < end:
            i = self.count
            pipe = c.pipeline(transaction=False)
            pipe.set(f"load:s{i % 500}", i)
            pipe.hset(f"load:h{i % 50}", f"f{i % 70}", i)
            pipe.rpush(f"load:l{i % 20}", i)
            pipe.zadd("load:z", {f"m{i % 300}": i})
            pipe.sadd(f"load:set{i % 10}", f"e{i % 150}")
            pipe.incr("load:n")
            pipe.execute()
            self.count += 1

    def finish(self):
        self.stop.set()
        self.thread.join()
        return self.count


def checkpoint_at(replica, offset):
    """The replica's checkpoint names `offset`: a restart can PSYNC from there."""
    path = os.path.join(replica.dir, "replica-checkpoint")
    try:
        return open(path).read().split()[1] == offset
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("kind", PEERS)
def test_blinkdb_replica_of_a_peer_master(server_factory, started, tmp_path, kind):
    master = start_peer(started, kind, tmp_path / "master",
                        ["--repl-diskless-sync", "no", "--appendonly", "no"])
    m = client(master.port)
    m.sadd("set:lp", *[f"member-{i}" for i in range(40)])
    m.hset("h:before", mapping={"a": 1, "b": 2})
    writer = Writer(master.port)
    wait_for(lambda: writer.count > 50, what="the writer going")
    replica = server_factory("--replicaof", "127.0.0.1", str(master.port),
                             "--appendonly", "yes", name="replica")
    r = linked(replica)
    wait_for(lambda: writer.count > 300 or not writer.thread.is_alive(), timeout=30,
             what="writes during and after the sync")
    assert writer.finish() > 300
    mixed_writes(m)
    caught_up(m)
    assert same_keyspace_but_group_counters(master.port, replica.port) > 100
    assert "Full resync from master" in replica_log(replica)
    assert int(stats(m)["sync_full"]) == 1

    # The replica restarts: its AOF and checkpoint make it PSYNC on.
    offset = info(m)["master_repl_offset"]
    wait_for(lambda: checkpoint_at(replica, offset), what="the replica's checkpoint")
    name, port = os.path.basename(replica.dir), replica.port
    replica.stop()
    for i in range(100):
        m.set(f"gap:{i}", i)
    replica = server_factory("--replicaof", "127.0.0.1", str(master.port),
                             "--appendonly", "yes", name=name, port=port)
    r = linked(replica)
    caught_up(m)
    assert "Successful partial resynchronization with master" in replica_log(replica)
    assert int(stats(m)["sync_partial_ok"]) == 1
    assert int(stats(m)["sync_full"]) == 1
    assert r.get("gap:99") == b"99"

    # The master restarts (SHUTDOWN SAVE keeps its history in its RDB): PSYNC again.
    try:
        m.execute_command("SHUTDOWN", "SAVE")
    except Exception:  # the connection closes
        pass
    master.proc.wait(timeout=30)
    master = start_peer(started, kind, master.dir,
                        ["--repl-diskless-sync", "no"],
                        port=master.port)
    m = client(master.port)
    m.set("after:restart", "yes")
    wait_for(lambda: r.get("after:restart") == b"yes", timeout=60,
             what="the stream after the master's restart")
    caught_up(m)
    assert int(stats(m)["sync_partial_ok"]) == 1
    assert int(stats(m)["sync_full"]) == 0
    assert replica_log(replica).count("Successful partial resynchronization with master") == 2
    assert same_keyspace_but_group_counters(master.port, replica.port) > 200


@pytest.mark.parametrize("behavior", ["ignore", "panic-on-replicas"])
def test_a_command_blinkdb_does_not_serve_is_reported(server_factory, started, tmp_path,
                                                     behavior):
    """Redis 8.0 propagates HEXPIRE as HPEXPIREAT: a replica without it logs the error as
    Redis does (== CRITICAL ==), and stops under panic-on-replicas; never silently."""
    master = start_peer(started, "redis", tmp_path / "master")
    m = client(master.port)
    replica = server_factory("--replicaof", "127.0.0.1", str(master.port),
                             "--propagation-error-behavior", behavior, name="replica")
    r = linked(replica)
    with RespConnection(replica.port) as raw:
        served = raw.call("COMMAND", "INFO", "HPEXPIREAT").raw != b"*1\r\n*-1\r\n"
    if served:
        pytest.skip("BlinkDB serves HPEXPIREAT: nothing unserved to send")
    m.hset("h", mapping={"a": 1, "b": 2})
    m.execute_command("HEXPIRE", "h", 3600, "FIELDS", 1, "a")
    m.set("after", "x")
    wait_for(lambda: "== CRITICAL ==" in replica_log(replica), what="the error logged")
    log = replica_log(replica)
    assert ("== CRITICAL == This replica is sending an error to its master: "
            "'unknown command 'HPEXPIREAT'") in log or "'hpexpireat'" in log.lower()
    if behavior == "ignore":
        wait_for(lambda: r.get("after") == b"x", what="the stream going on")
        assert replica.alive()
    else:
        wait_for(lambda: not replica.alive(), what="the replica stopping")
        assert "panicked sending an error to its master" in replica_log(replica)


@pytest.mark.parametrize("kind", PEERS)
def test_peer_replica_of_a_blinkdb_master(server_factory, started, tmp_path, kind):
    master = server_factory("--repl-diskless-sync", "no")
    m = client(master.port)
    m.sadd("set:lp", *[f"member-{i}" for i in range(40)])
    m.zadd("z:before", {"a": 1.5, "b": 2})
    replica = start_peer(started, kind, tmp_path / "replica",
                         ["--replicaof", "127.0.0.1", str(master.port)])
    r = linked(replica)
    mixed_writes(m)
    assert m.execute_command("WAIT", 1, 10000) == 1
    caught_up(m)
    assert same_keyspace_but_group_counters(master.port, replica.port) > 40
    assert r.execute_command("FUNCTION", "LIST") == m.execute_command("FUNCTION", "LIST")
    full = int(stats(m)["sync_full"])

    # The peer restarts (a replica's SHUTDOWN SAVE keeps its master's ID and offset).
    try:
        r.execute_command("SHUTDOWN", "SAVE")
    except Exception:
        pass
    replica.proc.wait(timeout=30)
    for i in range(100):
        m.set(f"gap:{i}", i)
    replica = start_peer(started, kind, replica.dir,
                         ["--replicaof", "127.0.0.1", str(master.port)], port=replica.port)
    r = linked(replica)
    caught_up(m)
    assert int(stats(m)["sync_partial_ok"]) == 1
    assert int(stats(m)["sync_full"]) == full
    assert r.get("gap:99") == b"99"
    assert same_keyspace_but_group_counters(master.port, replica.port) > 140



def test_field_ttls_replicate_from_a_redis8_master(server_factory, started, tmp_path):
    """Hash-field expiration from an 8.0.2 master: TTLs in the full sync's RDB, the command
    stream (HEXPIRE arrives as HPEXPIREAT, HSETEX EX as PXAT), and the master's HDEL when a
    field expires; the replica removes no field itself."""
    master = start_peer(started, "redis", tmp_path / "master", ["--repl-diskless-sync", "no"])
    m = client(master.port)
    m.set("plain", "v")
    m.hset("session", mapping={"user": "u1", "token": "t"})
    m.execute_command("HEXPIRE", "session", 3600, "FIELDS", 1, "token")
    replica = server_factory("--replicaof", "127.0.0.1", str(master.port), name="replica")
    r = linked(replica)
    fields = ("FIELDS", 2, "user", "token")
    wait_for(lambda: r.execute_command("HPEXPIRETIME", "session", *fields)
             == m.execute_command("HPEXPIRETIME", "session", *fields), what="the synced TTLs")
    m.execute_command("HPEXPIRE", "session", 400, "FIELDS", 1, "user")
    m.execute_command("HSETEX", "h2", "EX", 100, "FIELDS", 1, "a", "1")
    m.set("after", "x")
    wait_for(lambda: r.get("after") == b"x", what="the stream")
    assert r.execute_command("HPEXPIRETIME", "h2", "FIELDS", 1, "a") == \
        m.execute_command("HPEXPIRETIME", "h2", "FIELDS", 1, "a")
    # The master expires "user" and sends HDEL: the replica follows.
    wait_for(lambda: r.hkeys("session") == [b"token"], what="the master's HDEL")
    assert r.execute_command("HPEXPIRETIME", "session", *fields) == \
        m.execute_command("HPEXPIRETIME", "session", *fields)


def test_redis8_replica_follows_field_ttls(server_factory, started, tmp_path):
    """A BlinkDB master's field TTLs reach a Redis 8.0.2 replica, and the field its active
    cycle removes goes as HDEL (the replica, which expires nothing itself, drops it)."""
    master = server_factory("--repl-diskless-sync", "no")
    m = client(master.port)
    m.hset("h", mapping={"a": 1, "b": 2, "c": 3})
    m.execute_command("HEXPIRE", "h", 3600, "FIELDS", 1, "c")
    replica = start_peer(started, "redis", tmp_path / "replica",
                         ["--replicaof", "127.0.0.1", str(master.port)])
    r = linked(replica)
    fields = ("FIELDS", 3, "a", "b", "c")
    wait_for(lambda: r.execute_command("HPEXPIRETIME", "h", *fields)
             == m.execute_command("HPEXPIRETIME", "h", *fields), what="the synced TTL")
    m.execute_command("HPEXPIRE", "h", 300, "FIELDS", 1, "a")
    m.execute_command("HSETEX", "h3", "PX", 300, "FIELDS", 1, "x", "1")
    wait_for(lambda: m.hkeys("h") == [b"b", b"c"] and m.exists("h3") == 0,
             what="the master's active expiry")
    m.set("after", "x")
    wait_for(lambda: r.get("after") == b"x", what="the stream")
    assert sorted(r.hkeys("h")) == [b"b", b"c"]
    assert r.exists("h3") == 0
    assert r.execute_command("HPEXPIRETIME", "h", *fields) == \
        m.execute_command("HPEXPIRETIME", "h", *fields)
