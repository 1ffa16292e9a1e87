"""redis-py 8 synchronous client, in both protocols: default settings (RESP3, HELLO 3) and protocol=2."""

import time

import pytest
import redis

from conftest import BINARY_VALUE, HOST, PORT, restart_server

PREFIX = "clients:py:"


@pytest.fixture(params=["default", "protocol2"])
def client(request):
    kwargs = {} if request.param == "default" else {"protocol": 2}
    r = redis.Redis(host=HOST, port=PORT, **kwargs)
    prefix = f"{PREFIX}{request.param}:"
    yield r, prefix
    keys = r.keys(prefix + "*")
    if keys:
        r.delete(*keys)
    r.close()


def test_default_settings_negotiate_expected_protocol(client):
    r, prefix = client
    hello = r.execute_command("HELLO")
    expected = 2 if prefix.endswith("protocol2:") else 3
    proto = hello[b"proto"] if isinstance(hello, dict) else dict(zip(hello[::2], hello[1::2]))[b"proto"]
    # HELLO with no version reports the connection's current protocol.
    assert proto == expected


def test_binary_values_round_trip(client):
    r, p = client
    assert r.set(p + "bin", BINARY_VALUE) is True
    assert r.get(p + "bin") == BINARY_VALUE
    for b in range(256):
        r.set(p + f"byte:{b}", bytes([b]))
    assert r.mget([p + f"byte:{b}" for b in range(256)]) == [bytes([b]) for b in range(256)]
    binary_key = p.encode() + b"\x00\r\nkey\xff"
    r.set(binary_key, b"\r\n")
    assert r.get(binary_key) == b"\r\n"


def test_mset_mget(client):
    r, p = client
    assert r.mset({p + "a": b"1", p + "b": b"", p + "c": b"\x00"}) is True
    assert r.mget([p + "a", p + "b", p + "missing", p + "c"]) == [b"1", b"", None, b"\x00"]


def test_expire_ttl_and_pexpire(client):
    r, p = client
    r.set(p + "ttl", "v")
    assert r.ttl(p + "ttl") == -1
    assert r.ttl(p + "missing") == -2
    assert r.expire(p + "ttl", 100) is True
    assert 99 <= r.ttl(p + "ttl") <= 100
    r.set(p + "short", "v")
    assert r.pexpire(p + "short", 100) is True
    assert r.exists(p + "short") == 1
    time.sleep(0.25)
    assert r.get(p + "short") is None
    assert r.exists(p + "short") == 0


def test_pipeline_of_1000_commands(client):
    r, p = client
    with r.pipeline(transaction=False) as pipe:
        for i in range(500):
            pipe.set(p + f"pipe:{i}", i)
        for i in range(500):
            pipe.incr(p + f"pipe:{i}")
        replies = pipe.execute()
    assert len(replies) == 1000
    assert replies[:500] == [True] * 500
    assert replies[500:] == [i + 1 for i in range(500)]


def test_incr(client):
    r, p = client
    assert r.incr(p + "n") == 1
    assert r.incr(p + "n") == 2
    assert r.incrby(p + "n", -5) == -3
    assert r.get(p + "n") == b"-3"


def test_errors_surface_as_response_error(client):
    r, p = client
    r.set(p + "text", "abc")
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        r.incr(p + "text")
    with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'get' command$"):
        r.execute_command("GET")
    # The connection stays usable after an error reply.
    assert r.get(p + "text") == b"abc"


def test_bloom_commands_through_bf_helper(client):
    r, p = client
    bf = r.bf()
    key = p + "bloom"
    assert bf.reserve(key, 0.01, 1000) in (True, b"OK", "OK")
    assert bf.add(key, "apple") == 1
    assert bf.add(key, "apple") == 0
    assert bf.exists(key, "apple") == 1
    assert bf.exists(key, "pear") == 0
    assert bf.madd(key, "x", "y") == [1, 1]
    assert bf.mexists(key, "x", "y", "z") == [1, 1, 0]
    info = bf.info(key)
    assert info.capacity == 1000
    assert info.insertedNum == 3
    assert info.filterNum == 1
    assert info.expansionRate == 2
    assert info.size > 0
    with pytest.raises(redis.ResponseError, match="^item exists$"):
        bf.reserve(key, 0.01, 1000)


def test_transactional_pipeline_and_watch(client):
    r, prefix = client
    key = prefix + "tx"
    with r.pipeline() as p:  # transaction=True: MULTI ... EXEC
        assert p.set(key, 10).incr(key).execute() == [True, 11]
    other = redis.Redis(host=HOST, port=PORT)
    calls = []

    def bump(pipe):
        value = int(pipe.get(key))
        calls.append(value)
        if len(calls) == 1:
            other.set(key, 100)  # the first attempt must fail and retry
        pipe.multi()
        pipe.set(key, value + 1)

    r.transaction(bump, key)
    other.close()
    assert calls == [11, 100] and r.get(key) == b"101"


def test_reconnects_after_server_restart(client):
    r, p = client
    r.set(p + "durable", "kept")
    assert r.ping() is True
    restart_server()
    # Default settings retry a command on a dropped connection, so this must not raise.
    assert r.ping() is True
    assert r.get(p + "durable") == b"kept"


def test_collections_round_trip(client):
    """Hashes, sets, sorted sets and lists through redis-py's own API, blocking pop included."""
    r, p = client
    assert r.hset(p + "h", mapping={"a": "1", "b": b"\x00\xff"}) == 2
    assert r.hgetall(p + "h") == {b"a": b"1", b"b": b"\x00\xff"}
    assert r.hincrby(p + "h", "a", 41) == 42
    assert r.hincrbyfloat(p + "h", "f", 0.5) == 0.5
    assert r.sadd(p + "s", "x", "y", 3) == 3
    assert r.smembers(p + "s") == {b"x", b"y", b"3"}
    assert r.sismember(p + "s", "y") in (True, 1)
    assert r.zadd(p + "z", {"m1": 1.5, "m2": -2, "m3": float("inf")}) == 3
    assert r.zrange(p + "z", 0, -1, withscores=True) == [(b"m2", -2.0), (b"m1", 1.5),
                                                         (b"m3", float("inf"))]
    assert r.zscore(p + "z", "m1") == 1.5
    assert r.zpopmin(p + "z") == [(b"m2", -2.0)]
    assert r.rpush(p + "l", "a", "b", "c") == 3
    assert r.lrange(p + "l", 0, -1) == [b"a", b"b", b"c"]
    assert r.blpop([p + "none", p + "l"], timeout=1) == (p.encode() + b"l", b"a")
    assert r.blmove(p + "l", p + "l2", 1, "RIGHT", "LEFT") == b"c"
    assert r.bzpopmax(p + "z", timeout=1) == (p.encode() + b"z", b"m3", float("inf"))
    assert r.blpop([p + "empty"], timeout=0.05) is None


@pytest.mark.parametrize("protocol", [3, 2])
def test_acl_user_with_username(protocol):
    """An ACL user through redis-py's username= (HELLO 3 AUTH in RESP3, AUTH
    user pass in RESP2): its key pattern and command rules apply."""
    admin = redis.Redis(host=HOST, port=PORT)
    user = f"clients-py-{protocol}"
    admin.acl_setuser(user, enabled=True, passwords=["+secret"], keys=[f"{PREFIX}acl:*"],
                      commands=["+get", "+set", "+ping"], reset=True)
    try:
        r = redis.Redis(host=HOST, port=PORT, username=user, password="secret",
                        protocol=protocol)
        assert r.ping()
        assert r.set(f"{PREFIX}acl:k", b"v")
        assert r.get(f"{PREFIX}acl:k") == b"v"
        with pytest.raises(redis.exceptions.NoPermissionError):
            r.get("outside")
        with pytest.raises(redis.exceptions.NoPermissionError):
            r.delete(f"{PREFIX}acl:k")
        with pytest.raises(redis.exceptions.AuthenticationError):
            redis.Redis(host=HOST, port=PORT, username=user, password="wrong",
                        protocol=protocol).ping()
        r.close()
    finally:
        admin.delete(f"{PREFIX}acl:k")
        admin.acl_deluser(user)
        admin.close()
