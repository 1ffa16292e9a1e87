"""redis-py's r.bf() helpers against BlinkDB (RESP3, as redis-py 8 speaks)."""

import redis

from bloom_support import start_blinkdb


def test_redis_py_bf_helpers(blinkdb_binary, tmp_path):
    srv = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        r = redis.Redis(port=srv.port, protocol=3)
        bf = r.bf()
        assert bf.reserve("users", 0.01, 1000)
        assert bf.add("users", "alice") in (1, True)
        assert bf.exists("users", "alice") in (1, True)
        assert bf.exists("users", "nobody") in (0, False)
        assert list(bf.madd("users", "bob", "carol")) in ([1, 1], [True, True])
        assert list(bf.mexists("users", "bob", "zed")) in ([1, 0], [True, False])
        assert list(bf.insert("new", ["x", "y"], capacity=50, error=0.001)) in ([1, 1], [True, True])
        assert bf.card("users") == 3
        info = bf.info("users")  # a dict under RESP3, a BFInfo object under RESP2
        info = {(k.decode() if isinstance(k, bytes) else k): v for k, v in info.items()}
        assert info["Capacity"] == 1000 and info["Number of items inserted"] == 3
        info2 = redis.Redis(port=srv.port, protocol=2).bf().info("users")
        assert info2.capacity == 1000 and info2.insertedNum == 3 and info2.filterNum == 1
        assert r.type("users") == b"MBbloom--"
        try:
            r.get("users")
            raise AssertionError("GET on a filter must fail")
        except redis.ResponseError as e:
            assert str(e).startswith("WRONGTYPE")
        r2 = redis.Redis(port=srv.port, protocol=2)
        assert r2.bf().exists("users", "alice") == 1
        assert r.copy("users", "users2") and r.bf().exists("users2", "carol") in (1, True)
        assert r.delete("users") == 1 and r.bf().exists("users2", "alice") in (1, True)
    finally:
        srv.stop()
