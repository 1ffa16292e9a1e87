"""What Redis 8.0.2's own unit/type/hash-field-expire reads of a hash with field TTLs
besides the commands' replies, reply for reply against redis-server 8.0.2: HLEN counts a
field past its TTL that nothing removed yet, DEBUG DIGEST-VALUE marks the fields with a TTL,
INFO's expired_subkeys counts the fields the active cycle removed (CONFIG RESETSTAT zeroes
it), and DEBUG LISTPACK answers for a listpack-encoded hash only."""


import pytest

from peer_servers import start_peer
from test_introspection import py
from test_redis8_commands import wait_for


@pytest.fixture
def redis8(tmp_path):
    started = []
    yield start_peer(started, "redis", tmp_path / "redis8")
    for srv in started:
        srv.stop()


def expired_subkeys(c):
    info = py(c.call("INFO", "stats"))
    return int(info.split("expired_subkeys:")[1].split("\r\n")[0])


def scenario(srv):
    seen = []
    with srv.connect() as c:
        def see(*cmd):
            seen.append((cmd, c.call(*cmd).raw))

        assert c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0").raw == b"+OK\r\n"
        # A field past its TTL, not removed: HLEN still counts it.
        c.call("HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3")
        c.call("HPEXPIRE", "h", 1, "FIELDS", 1, "f1")
        wait_for(lambda: py(c.call("HPTTL", "h", "FIELDS", 1, "f1")) == [-2], "f1 past its TTL")
        see("HLEN", "h")
        see("EXISTS", "h")
        # Digests: pending TTLs, in both encodings, and after HPERSIST.
        c.call("DEL", "h")
        for key, n in (("small", 3), ("large", 200)):
            c.call("HSET", key, *[x for i in range(n) for x in (f"f{i}", f"v{i}")])
            see("DEBUG", "DIGEST-VALUE", key)
            c.call("HEXPIRE", key, 100000, "FIELDS", 2, "f0", "f1")
            see("OBJECT", "ENCODING", key)
            see("DEBUG", "DIGEST-VALUE", key)
            c.call("HPERSIST", key, "FIELDS", 1, "f0")
            see("DEBUG", "DIGEST-VALUE", key)
        see("DEBUG", "LISTPACK", "small")
        see("DEBUG", "LISTPACK", "large")
        see("DEBUG", "LISTPACK", "nokey")
        c.call("HSET", "plain", "a", "b")
        see("DEBUG", "LISTPACK", "plain")
        # The active cycle removes two fields: INFO counts them.
        c.call("FLUSHALL")
        c.call("CONFIG", "RESETSTAT")
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        c.call("HSET", "e", "a", 1, "b", 2, "c", 3)
        c.call("HPEXPIRE", "e", 1, "FIELDS", 2, "a", "b")
        wait_for(lambda: expired_subkeys(c) == 2, f"expired_subkeys 2 on {srv}")
        see("HLEN", "e")
        c.call("CONFIG", "RESETSTAT")
        seen.append(("expired_subkeys after RESETSTAT", expired_subkeys(c)))
    return seen


def test_hfe_introspection_matches_redis8(server_factory, redis8):
    ours = scenario(server_factory("--enable-debug-command", "yes"))
    theirs = scenario(redis8)
    for a, b in zip(ours, theirs):
        assert a == b
    assert len(ours) == len(theirs)


def subexpiry(c):
    """Each database line's subexpiry, or the line itself when it has none."""
    info = py(c.call("INFO", "keyspace"))
    out = {}
    for line in info.split("\r\n"):
        if line.startswith("db"):
            db, fields = line.split(":")
            kv = dict(f.split("=") for f in fields.split(","))
            out[db] = int(kv["subexpiry"]) if "subexpiry" in kv else line
    return out


def subexpiry_scenario(srv):
    """INFO keyspace's subexpiry (hashes with field TTLs) through what adds and drops
    one: the first TTL of a small and a large hash, more TTLs on it, HDEL and HGETDEL of
    the last field with a TTL, DEL, RENAME, MOVE, the active cycle removing the last
    TTL'd fields (the hash stays), FLUSHALL."""
    seen = []
    with srv.connect() as c:
        def see(label):
            seen.append((label, subexpiry(c)))

        big = [x for i in range(600) for x in (f"f{i}", "v")]
        c.call("HSET", "small", "f1", "v", "f2", "v", "f3", "v")
        c.call("HSET", "big", *big)
        c.call("SET", "s", "v")
        see("no TTL")
        c.call("HPEXPIRE", "small", 100000, "FIELDS", 2, "f1", "f2")
        c.call("HPEXPIRE", "big", 100000, "FIELDS", 1, "f1")
        c.call("HPEXPIRE", "big", 200000, "FIELDS", 1, "f2")
        see("two hashes")
        c.call("HDEL", "big", "f1")
        see("one TTL left in big")
        c.call("HDEL", "big", "f2")
        see("HDEL of big's last")
        c.call("HGETDEL", "small", "FIELDS", 2, "f1", "f2")
        see("HGETDEL of small's last")
        for key in ("a", "b", "c"):
            c.call("HSET", key, "x", "1", "y", "2")
            c.call("HPEXPIRE", key, 100000, "FIELDS", 1, "x")
        see("three more")
        c.call("DEL", "a")
        c.call("RENAME", "b", "b2")
        c.call("MOVE", "c", 1)
        see("DEL, RENAME, MOVE")
        c.call("HSET", "e", "x", "1", "y", "2")
        c.call("HPEXPIRE", "e", 1, "FIELDS", 1, "x")
        wait_for(lambda: py(c.call("HLEN", "e")) == 1, f"the active cycle on {srv}")
        see("active expiry of e's last TTL")
        c.call("FLUSHALL")
        see("FLUSHALL")
    return seen


def test_subexpiry_matches_redis8(server_factory, redis8):
    ours = subexpiry_scenario(server_factory("--announce-redis-version", "8.0.2"))
    theirs = subexpiry_scenario(redis8)
    for a, b in zip(ours, theirs):
        assert a == b
    assert len(ours) == len(theirs)


def test_no_subexpiry_as_redis_7(server_factory):
    """Announcing 7.0.15 (the default), a database line has 7.0's three fields."""
    srv = server_factory()
    with srv.connect() as c:
        c.call("HSET", "h", "f", "v")
        c.call("HEXPIRE", "h", 100, "FIELDS", 1, "f")
        assert subexpiry(c) == {"db0": "db0:keys=1,expires=0,avg_ttl=0"}
        c.call("CONFIG", "SET", "announce-redis-version", "8.0.2")
        assert subexpiry(c) == {"db0": 1}
