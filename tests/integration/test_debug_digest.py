"""DEBUG DIGEST and DEBUG DIGEST-VALUE byte for byte against redis-server 7.0.15 (with
RedisBloom for BF.* keys): every type, each on both sides of Redis's encoding thresholds
(listpack/intset against hash table/skiplist/quicklist of several nodes), random data, a
string kept on disk (above blob-threshold), TTLs, a stream with consumer groups and
deleted entries, a HyperLogLog sparse and dense, a Bloom filter; the digests survive a
restart from the AOF; a missing key and an empty dataset give 40 zeros."""

import random

from bloom_support import port, redisbloom_path
from resp import RespConnection
from server import ORACLE_BIN, ServerProcess

DEBUG = ("--enable-debug-command", "yes")
ZERO = b"+" + b"0" * 40 + b"\r\n"


def start_pair(blinkdb_binary, tmp_path):
    ours = ServerProcess(blinkdb_binary, str(tmp_path / "blinkdb"),
                         DEBUG + ("--appendonly", "yes", "--blob-threshold", "16384"),
                         port=port())
    ref = ServerProcess(ORACLE_BIN, str(tmp_path / "oracle"),
                        DEBUG + ("--loadmodule", redisbloom_path()), port=port())
    return ours, ref


def rand_bytes(rng, n):
    return bytes(rng.randrange(256) for _ in range(n))


def rand_member(rng, big):
    """A member: an integer (Redis packs those as numbers in listpacks and intsets),
    short text, or (big) a value past the listpack's per-element limit."""
    r = rng.random()
    if r < 0.3:
        return str(rng.randrange(-10**12, 10**12)).encode()
    if big and r < 0.4:
        return rand_bytes(rng, rng.randrange(65, 300))
    return rand_bytes(rng, rng.randrange(0, 20))


def rand_score(rng):
    r = rng.random()
    if r < 0.3:
        return str(rng.randrange(-1000, 1000))
    if r < 0.35:
        return rng.choice(["inf", "-inf", "0.1", "1e300", "-2.5e-300", "3.0000000000000004"])
    return repr(rng.uniform(-1e6, 1e6))


def dataset(seed):
    """(commands, keys): the same random data for both servers."""
    rng = random.Random(seed)
    cmds, keys = [], []
    for size_name, n, big in (("small", 5, False), ("mid", 120, False),
                              ("large", 700, False), ("wide", 20, True)):
        k = f"hash:{size_name}"
        pairs = []
        for _ in range(n):
            pairs += [rand_member(rng, big), rand_member(rng, big)]
        cmds.append(("HSET", k, *pairs))
        keys.append(k)
        k = f"set:{size_name}"
        cmds.append(("SADD", k, *[rand_member(rng, big) for _ in range(n)]))
        keys.append(k)
        k = f"intset:{size_name}"
        cmds.append(("SADD", k, *[str(rng.randrange(-10**15, 10**15)) for _ in range(n)]))
        keys.append(k)
        k = f"zset:{size_name}"
        pairs = []
        for _ in range(n):
            pairs += [rand_score(rng), rand_member(rng, big)]
        cmds.append(("ZADD", k, *pairs))
        keys.append(k)
        k = f"list:{size_name}"
        cmds.append(("RPUSH", k, *[rand_member(rng, big) for _ in range(n * 10)]))
        cmds.append(("LPUSH", k, *[rand_member(rng, big) for _ in range(n)]))
        keys.append(k)
    # A hash that crossed its threshold and shrank again stays a table in both.
    cmds.append(("HSET", "hash:shrunk", *[f"f{i}" for i in range(300) for _ in (0, 1)]))
    cmds.append(("HDEL", "hash:shrunk", *[f"f{i}" for i in range(10, 300)]))
    cmds.append(("ZADD", "zset:zero", "0", "a", "-0", "b", "0.0", "c"))
    keys += ["hash:shrunk", "zset:zero"]
    strings = {
        "str:int": b"12345", "str:neg": b"-987654321012", "str:raw": b"hello world",
        "str:empty": b"", "str:bin": rand_bytes(rng, 100), "str:float": b"3.14",
        "str:big": rand_bytes(rng, 40_000), "str:huge": rand_bytes(rng, 300_000),
    }
    for k, v in strings.items():
        cmds.append(("SET", k, v))
        keys.append(k)
    cmds.append(("INCRBY", "str:counter", "41"))
    cmds.append(("APPEND", "str:appended", "abc"))
    cmds.append(("APPEND", "str:appended", "123"))
    keys += ["str:counter", "str:appended"]
    for i in range(300):
        fields = []
        for j in range(rng.randrange(1, 4)):
            fields += [f"f{j}" if rng.random() < 0.7 else rand_member(rng, False),
                       rand_member(rng, i % 50 == 0)]
        cmds.append(("XADD", "stream", f"{1000 + i * 7}-{i % 3}", *fields))
    cmds.append(("XGROUP", "CREATE", "stream", "g1", "0"))
    cmds.append(("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "20", "STREAMS", "stream", ">"))
    cmds.append(("XDEL", "stream", "1007-1", "1014-2", "1700-1"))
    cmds.append(("XADD", "stream:empty", "5-5", "a", "b"))
    cmds.append(("XDEL", "stream:empty", "5-5"))
    keys += ["stream", "stream:empty"]
    cmds.append(("PFADD", "hll:sparse", *[f"h{i}" for i in range(50)]))
    cmds.append(("PFADD", "hll:dense", *[f"h{i}" for i in range(5000)]))
    cmds.append(("PFCOUNT", "hll:dense"))
    keys += ["hll:sparse", "hll:dense"]
    cmds.append(("BF.RESERVE", "bf", "0.01", "1000"))
    cmds.append(("BF.MADD", "bf", *[f"i{i}" for i in range(2000)]))
    cmds.append(("BF.ADD", "bf:ttl", "x"))
    cmds.append(("EXPIRE", "bf:ttl", "5000"))
    keys += ["bf", "bf:ttl"]
    for k in ("str:raw", "str:big", "hash:small", "zset:large", "list:mid", "stream", "set:mid"):
        cmds.append(("PEXPIRE", k, "900000"))
    return cmds, keys


def apply(conn, cmds):
    for cmd in cmds:
        r = conn.call(*cmd)
        assert not r.is_error(), (cmd[:2], r.raw)


def digests(conn, keys):
    per_key = {k: conn.call("DEBUG", "DIGEST-VALUE", k).raw for k in keys}
    many = conn.call("DEBUG", "DIGEST-VALUE", *keys[:5], "missing").raw
    return per_key, many, conn.call("DEBUG", "DIGEST").raw


def check_same(ours, ref, keys, all_exist=True):
    with ours.connect() as a, ref.connect() as b:
        mine, theirs = digests(a, keys), digests(b, keys)
        diff = [k for k in keys if mine[0][k] != theirs[0][k]]
        assert not diff, [(k, mine[0][k], theirs[0][k]) for k in diff]
        assert mine[1:] == theirs[1:]
        for k in keys:
            assert not all_exist or mine[0][k] != b"*1\r\n" + ZERO, k
        # RESP3: the same simple strings.
        for c in (a, b):
            assert not c.call("HELLO", "3").is_error()
        assert digests(a, keys) == digests(b, keys) == mine
    return mine


def test_every_type_and_encoding_matches_redis(blinkdb_binary, tmp_path):
    ours, ref = start_pair(blinkdb_binary, tmp_path)
    try:
        with ours.connect() as a, ref.connect() as b:
            for c in (a, b):
                assert c.call("DEBUG", "DIGEST").raw == ZERO
                assert c.call("DEBUG", "DIGEST-VALUE", "nope").raw == b"*1\r\n" + ZERO
                assert c.call("DEBUG", "DIGEST-VALUE").raw == b"*0\r\n"
            assert a.call("DEBUG", "DIGEST", "x").raw == b.call("DEBUG", "DIGEST", "x").raw
            cmds, keys = dataset(23)
            apply(a, cmds)
            apply(b, cmds)
            # Each side really holds small and large values in different encodings (the
            # two may pick differently: digests must not depend on it).
            for c in (a, b):
                for small, large in (("hash:small", "hash:wide"), ("intset:small", "intset:large"),
                                     ("intset:small", "set:small"), ("zset:small", "zset:large")):
                    assert c.call("OBJECT", "ENCODING", small).raw != \
                        c.call("OBJECT", "ENCODING", large).raw, (small, large)
            # A second database counts in DEBUG DIGEST under its own number.
            for c in (a, b):
                assert not c.call("SELECT", "3").is_error()
                assert not c.call("SET", "str:raw", "elsewhere").is_error()
                assert not c.call("SELECT", "0").is_error()
        before = check_same(ours, ref, keys)
        # A TTL changes the value's digest; removing it restores the digest.
        with ours.connect() as a, ref.connect() as b:
            for c in (a, b):
                assert c.call("PERSIST", "str:raw").raw == b":1\r\n"
            assert a.call("DEBUG", "DIGEST-VALUE", "str:raw").raw == \
                b.call("DEBUG", "DIGEST-VALUE", "str:raw").raw != before[0]["str:raw"]
            for c in (a, b):
                c.call("PEXPIRE", "str:raw", "900000")
        # Restarted from its AOF (the large strings read back from disk): the same digests.
        ours.stop()
        ours = ServerProcess(blinkdb_binary, ours.dir,
                             DEBUG + ("--appendonly", "yes", "--blob-threshold", "16384"),
                             port=ours.port)
        assert check_same(ours, ref, keys) == before
    finally:
        ours.stop()
        ref.stop()


def test_random_collections_across_thresholds(blinkdb_binary, tmp_path):
    """Many random sizes around each threshold: 128 entries / 64 bytes (hash, zset), 512
    integers (intset), 8 KiB list nodes; built by adds and removals alike."""
    ours, ref = start_pair(blinkdb_binary, tmp_path)
    rng = random.Random(7)
    keys, cmds = [], []
    for i in range(40):
        n = rng.choice([1, 60, 127, 128, 129, 300, 511, 512, 513, 1000])
        big = rng.random() < 0.2
        kind = i % 4
        k = f"k{i}"
        if kind == 0:
            cmds.append(("HSET", k, *[x for _ in range(n) for x in
                                      (rand_member(rng, big), rand_member(rng, big))]))
            cmds.append(("HDEL", k, *[rand_member(rng, False) for _ in range(5)]))
        elif kind == 1:
            cmds.append(("SADD", k, *[str(rng.randrange(10**6)) if rng.random() < 0.95
                                      else rand_member(rng, big) for _ in range(n)]))
            cmds.append(("SPOP", k, "3"))
        elif kind == 2:
            cmds.append(("ZADD", k, *[x for _ in range(n) for x in
                                      (rand_score(rng), rand_member(rng, big))]))
            cmds.append(("ZREMRANGEBYRANK", k, "0", "2"))
        else:
            cmds.append(("RPUSH", k, *[rand_member(rng, big) for _ in range(n * 5)]))
            cmds.append(("LTRIM", k, "3", "-3"))
        keys.append(k)
    try:
        with ours.connect() as a, ref.connect() as b:
            for c in (a, b):
                # SPOP picks at random: seed both sides with the same remaining members.
                for cmd in cmds:
                    if cmd[0] == "SPOP":
                        continue
                    r = c.call(*cmd)
                    assert not r.is_error(), r.raw
        check_same(ours, ref, keys, all_exist=False)
    finally:
        ours.stop()
        ref.stop()
