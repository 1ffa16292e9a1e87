"""Hash-field expiration (issue 43) across the AOF and its rewrite, and the active
cycle's events: field TTLs survive a restart from the log and from a rewritten base, a
field expires on its own (`hexpired`, then `del` for the hash its last field left), and
redis-server 8.0.2 loads the rewritten AOF with the same TTLs."""

import glob
import os
import shutil

from peer_servers import start_peer
from rdb_helpers import client
from test_replication import wait_for

FIELDS = ("FIELDS", 3, "a", "b", "c")


def ttls(c, key="h"):
    return c.execute_command("HPEXPIRETIME", key, *FIELDS)


def test_field_ttls_survive_the_aof_and_its_rewrite(server_factory, started, tmp_path):
    aof = ("--appendonly", "yes", "--appendfsync", "always")
    srv = server_factory(*aof, name="blinkdb")
    c = client(srv.port)
    c.hset("h", mapping={"a": 1, "b": 2, "c": 3})
    assert c.execute_command("HEXPIRE", "h", 3600, "FIELDS", 2, "a", "b") == [1, 1]
    c.execute_command("HSETEX", "h2", "EX", 3600, "FIELDS", 1, "x", "1")
    before = ttls(c)
    assert before[0] > 0 and before[2] == -1
    srv.stop()
    srv = server_factory(*aof, name="blinkdb")
    c = client(srv.port)
    assert ttls(c) == before
    assert c.object("encoding", "h") == b"listpackex"
    # Rewritten: HMSET, then HPEXPIREAT per field with a TTL.
    c.execute_command("BGREWRITEAOF")
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0
             and c.info("persistence")["aof_rewrites"] >= 1, what="the rewrite")
    c.execute_command("HPERSIST", "h", "FIELDS", 1, "b")
    after = ttls(c)
    srv.stop()
    srv = server_factory(*aof, name="blinkdb")
    c = client(srv.port)
    assert ttls(c) == after
    h2 = c.execute_command("HPEXPIRETIME", "h2", "FIELDS", 1, "x")
    srv.stop()

    # redis-server 8.0.2 loads the same AOF directory.
    peer_dir = tmp_path / "redis8"
    peer_dir.mkdir()
    src = glob.glob(os.path.join(srv.dir, "appendonlydir"))[0]
    shutil.copytree(src, peer_dir / "appendonlydir")
    peer = start_peer(started, "redis", peer_dir, ["--appendonly", "yes"])
    p = client(peer.port)
    assert ttls(p) == after
    assert p.execute_command("HPEXPIRETIME", "h2", "FIELDS", 1, "x") == h2


def test_active_expiry_of_fields_fires_events(server_factory):
    srv = server_factory()
    c = client(srv.port)
    c.config_set("notify-keyspace-events", "KEA")
    sub = c.pubsub()
    sub.psubscribe("__keyevent@0__:*")
    c.hset("h", mapping={"a": 1, "b": 2})
    c.hset("gone", mapping={"x": 1})
    c.execute_command("HPEXPIRE", "h", 200, "FIELDS", 1, "a")
    c.execute_command("HPEXPIRE", "gone", 200, "FIELDS", 1, "x")
    seen = []

    def drain():
        while (m := sub.get_message(timeout=0.1)) is not None:
            if m["type"] == "pmessage":
                seen.append((m["channel"].split(b":")[-1], m["data"]))
        return (b"hexpired", b"h") in seen and (b"del", b"gone") in seen

    wait_for(drain, what="the active cycle's events")
    assert seen.index((b"hexpired", b"gone")) < seen.index((b"del", b"gone"))
    assert c.hgetall("h") == {b"b": b"2"}
    assert c.exists("gone") == 0
    assert c.object("encoding", "h") == b"listpackex"
