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
