"""Client-side caching (CLIENT TRACKING) against redis-server 7.0: one script of
tracking, redirection, BCAST, OPTIN/OPTOUT, NOLOOP, transactions, flushes and a broken
redirection, every byte each connection receives compared, with the tracking client in
RESP2 and in RESP3; then what needs time or cache mode (expiry, eviction, the tracking
table's limit), io-threads, and redis-py's own client-side cache."""

import re
import threading
import time

import pytest

from aof_helpers import start_aof_server
from resp import encode

PONGS = (b"+PONG\r\n", b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")


def drain(conn):
    """Everything `conn` received until now: a PING's reply comes after it."""
    conn.send("PING")
    got = b""
    while True:
        raw = conn.read_reply().raw
        if raw in PONGS:
            return got
        got += raw


# (connection, commands sent together). t tracks (RESP2 or RESP3), w writes, s is a
# RESP2 subscriber of __redis__:invalidate, x goes away. {s} and {x} are client ids;
# a step of "s!" runs on s without comparing what it got (HELLO lists RedisBloom).
SCRIPT = [
    ("t", [["CLIENT", "TRACKING", "on"]]),
    ("w", [["SET", "a", "1"]]),
    ("t", [["GET", "a"]]),
    ("w", [["SET", "a", "2"]]),
    ("t", [["GET", "a"]]),
    ("t", [["SET", "a", "3"]]),
    ("t", [["CLIENT", "TRACKINGINFO"]]),
    ("t", [["CLIENT", "GETREDIR"]]),
    ("t", [["CLIENT", "TRACKING", "on", "REDIRECT", "{s}"]]),
    ("t", [["MGET", "a", "b", "c"]]),
    ("w", [["MSET", "a", "1", "b", "2", "z", "3"]]),
    ("t", [["CLIENT", "GETREDIR"]]),
    ("t", [["CLIENT", "TRACKINGINFO"]]),
    ("t", [["CLIENT", "TRACKING", "on", "REDIRECT", "{s}", "REDIRECT", "{s}"]]),
    ("t", [["CLIENT", "TRACKING", "on", "REDIRECT", "99999"]]),
    ("t", [["CLIENT", "TRACKING", "on", "REDIRECT", "nan"]]),
    ("t", [["CLIENT", "TRACKING", "on", "REDIRECT", "0"]]),
    ("t", [["CLIENT", "TRACKING", "on", "PREFIX", "p:"]]),
    ("t", [["CLIENT", "TRACKING", "on", "BCAST"]]),
    ("t", [["CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"]]),
    ("t", [["CLIENT", "TRACKING", "on", "NOPE"]]),
    ("t", [["CLIENT", "TRACKING", "on", "OPTIN"]]),
    ("t", [["CLIENT", "TRACKING", "on", "OPTOUT"]]),
    ("t", [["CLIENT", "CACHING", "no"]]),
    ("t", [["GET", "d"]]),
    ("w", [["SET", "d", "1"]]),
    ("t", [["CLIENT", "CACHING", "yes"]]),
    ("t", [["CLIENT", "TRACKINGINFO"]]),
    ("t", [["GET", "d"]]),
    ("t", [["CLIENT", "TRACKINGINFO"]]),
    ("w", [["SET", "d", "2"]]),
    ("t", [["CLIENT", "CACHING", "maybe"]]),
    ("t", [["CLIENT", "CACHING"]]),
    ("t", [["CLIENT", "CACHING", "yes", "no"]]),
    ("t", [["CLIENT", "TRACKING"]]),
    ("t", [["CLIENT", "TRACKING", "foo"]]),
    ("t", [["CLIENT", "GETREDIR", "x"]]),
    ("t", [["CLIENT", "TRACKING", "off"]]),
    ("t", [["CLIENT", "CACHING", "yes"]]),
    ("t", [["CLIENT", "GETREDIR"]]),
    ("t", [["CLIENT", "TRACKINGINFO"]]),
    ("t", [["CLIENT", "TRACKING", "on", "OPTOUT", "REDIRECT", "{s}"]]),
    ("t", [["CLIENT", "CACHING", "no"], ["GET", "e"]]),
    ("w", [["SET", "e", "1"]]),
    ("t", [["GET", "e"]]),
    ("w", [["SET", "e", "2"]]),
    ("t", [["CLIENT", "TRACKING", "off"]]),
    ("t", [["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:", "PREFIX", "q:",
            "REDIRECT", "{s}"]]),
    ("w", [["MSET", "p:1", "x", "q:1", "y", "r:1", "z", "p:2", "w"]]),
    ("t", [["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:x"]]),
    ("t", [["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FOOBAR", "PREFIX", "FOO"]]),
    ("t", [["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FOO", "PREFIX", "FOOBAR"]]),
    ("t", [["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "r:", "REDIRECT", "{s}"]]),
    ("t", [["CLIENT", "TRACKINGINFO"]]),
    ("w", [["INCR", "r:9"], ["INCR", "p:9"], ["DEL", "p:9"]]),
    ("t", [["CLIENT", "TRACKING", "on", "OPTIN"]]),
    ("t", [["CLIENT", "TRACKING", "off"]]),
    ("t", [["CLIENT", "TRACKING", "on", "BCAST", "NOLOOP", "REDIRECT", "{s}"]]),
    ("t", [["SET", "own", "1"]]),
    ("w", [["SET", "other", "1"]]),
    ("t", [["CLIENT", "TRACKING", "off"]]),
    ("t", [["CLIENT", "TRACKING", "on", "NOLOOP"]]),
    ("t", [["GET", "f"]]),
    ("t", [["SET", "f", "1"]]),
    ("t", [["GET", "g"]]),
    ("w", [["SET", "g", "1"]]),
    ("t", [["CLIENT", "TRACKING", "on"]]),
    ("t", [["GET", "h"], ["GET", "h2"]]),
    ("t", [["MULTI"], ["INCR", "h"], ["GET", "h2"], ["SET", "h2", "x"], ["EXEC"]]),
    # A script makes its caller track its declared keys once it runs a read.
    ("t", [["EVAL", "redis.call('set', 'key3', 'bar')", "2", "key1", "key2"]]),
    ("w", [["MSET", "key2", "1", "key1", "2"]]),
    ("t", [["EVAL", "return redis.call('get', 'key3')", "2", "key1", "key2"]]),
    ("w", [["MSET", "key2", "2", "key1", "2"]]),
    ("t", [["EVAL_RO", "redis.call('ping')", "2", "key1", "key2"]]),
    ("w", [["MSET", "key2", "2", "key1", "2"]]),
    ("t", [["EVAL_RO", "return redis.call('get', 'key1')", "2", "key1", "key2"]]),
    ("w", [["MSET", "key2", "3", "key1", "3"]]),
    ("t", [["CLIENT", "TRACKING", "on", "NOLOOP"], ["GET", "key1"]]),
    ("t", [["EVAL", "return redis.call('set', 'key1', '2')", "1", "key1"], ["GET", "key1"]]),
    ("w", [["SET", "key1", "4"]]),
    ("t", [["CLIENT", "TRACKING", "on"]]),
    ("t", [["GET", "i"]]),
    ("w", [["DEL", "i"]]),
    ("w", [["SET", "i", "1"]]),
    ("t", [["GET", "i"]]),
    ("w", [["EXPIRE", "i", "100"]]),
    ("t", [["GET", "i"]]),
    ("w", [["RENAME", "i", "j"]]),
    ("t", [["TYPE", "j"], ["EXISTS", "k1", "k2"], ["STRLEN", "k3"]]),
    ("w", [["MSET", "j", "1", "k1", "2", "k2", "3", "k3", "4"]]),
    ("t", [["GET", "k1"]]),
    ("w", [["FLUSHDB"]]),
    ("t", [["GET", "k1"], ["MULTI"], ["FLUSHALL"], ["EXEC"]]),
    ("t", [["CLIENT", "TRACKING", "on", "REDIRECT", "{s}"]]),
    ("w", [["FLUSHALL"]]),
    ("t", [["GET", "l"]]),
    ("w", [["SELECT", "1"], ["SET", "l", "in db 1"], ["SELECT", "0"]]),
    ("t", [["BF.EXISTS", "bf", "x"], ["GET", "l"]]),
    ("w", [["BF.ADD", "bf", "x"], ["BF.ADD", "bf", "x"]]),
    ("t", [["CLIENT", "TRACKING", "on", "REDIRECT", "{x}"]]),
    ("t", [["GET", "l"]]),
    ("x", [["QUIT"]]),
    ("w", [["SET", "l", "1"]]),
    ("t", [["CLIENT", "TRACKINGINFO"]]),
    ("t", [["GET", "l"]]),
    ("w", [["SET", "l", "2"]]),
    ("t", [["RESET"]]),
    ("t", [["CLIENT", "TRACKINGINFO"]]),
    ("s", [["UNSUBSCRIBE"]]),
    ("s!", [["HELLO", "3"]]),
    ("t", [["CLIENT", "TRACKING", "on", "REDIRECT", "{s}"], ["GET", "m"]]),
    ("w", [["SET", "m", "1"]]),
    ("s", [["SUBSCRIBE", "__redis__:invalidate"]]),
    ("t", [["GET", "m"]]),
    ("w", [["SET", "m", "2"]]),
]


def normalize(data, ids):
    for name, cid in ids.items():
        data = data.replace(b":%d\r\n" % cid, b":<%s>\r\n" % name.encode())
    return data


def run_script(srv, proto, script=SCRIPT, bloom=True):
    # Ids past the small integers the script's replies hold.
    spare = [srv.connect() for _ in range(40)]
    for c in spare:
        c.call("PING")
    conns = {n: srv.connect() for n in "tswx"}
    for c in spare:
        c.close()
    ids = {n: conns[n].call("CLIENT", "ID").value for n in "tsx"}
    if proto == 3:
        conns["t"].call("HELLO", "3")
    conns["s"].call("SUBSCRIBE", "__redis__:invalidate")
    live = ["t", "s", "w", "x"]
    out = []
    try:
        for who, cmds in script:
            if not bloom and cmds[0][0].startswith("BF."):
                continue
            compared = not who.endswith("!")
            who = who.rstrip("!")
            conn = conns[who]
            # One write: the server reads the step's commands as one batch.
            conn.send_raw(b"".join(encode(*[a.format(**{k: str(v) for k, v in ids.items()})
                                            for a in cmd]) for cmd in cmds))
            if cmds[0][0] == "QUIT":
                out.append((who, cmds, conn.read_reply().raw))
                assert conn.wait_closed()
                live.remove(who)
                time.sleep(0.2)  # the server ends the connection after its reply
                continue
            got = normalize(drain(conn), ids)
            step = [(who, got if compared else None)]
            step += [(n, normalize(drain(conns[n]), ids)) for n in live if n != who and n != "x"]
            out.append((who, cmds, step))
    finally:
        for c in conns.values():
            c.close()
    return out


@pytest.fixture
def oracle_bloom(tmp_path):
    from bloom_support import start_oracle

    srv = start_oracle(str(tmp_path / "oracle"))
    yield srv
    srv.stop()


@pytest.mark.parametrize("proto", [2, 3])
def test_tracking_matches_redis(blinkdb, oracle_bloom, proto):
    ours = run_script(blinkdb, proto)
    theirs = run_script(oracle_bloom, proto)
    assert len(ours) == len(theirs)
    for mine, ref in zip(ours, theirs):
        assert mine == ref
    pushes = b"".join(d or b"" for _, _, step in ours if isinstance(step, list) for _, d in step)
    if proto == 3:
        assert b">2\r\n$10\r\ninvalidate\r\n" in pushes
        assert b"tracking-redir-broken" in pushes
    assert b"__redis__:invalidate" in pushes


def info(conn):
    text = conn.call("INFO").value
    text = text.decode() if isinstance(text, bytes) else text
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def test_info_and_client_list(blinkdb):
    with blinkdb.connect() as a, blinkdb.connect() as b, blinkdb.connect() as w:
        a.call("CLIENT", "TRACKING", "on")
        a.call("MGET", "k1", "k2", "k3")
        b.call("CLIENT", "TRACKING", "on")
        b.call("GET", "k1")
        bid = b.call("CLIENT", "ID").value
        w.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "x:", "PREFIX", "y:",
               "REDIRECT", str(bid))
        i = info(w)
        assert (i["tracking_clients"], i["tracking_total_keys"], i["tracking_total_items"],
                i["tracking_total_prefixes"]) == ("3", "3", "4", "2")
        line = w.call("CLIENT", "INFO").value.decode()
        assert " flags=tB " in line and f" redir={bid} " in line
        assert " flags=t " in a.call("CLIENT", "INFO").value.decode()
        w.call("SET", "k1", "v")
        i = info(w)
        assert (i["tracking_total_keys"], i["tracking_total_items"]) == ("2", "2")
        b.close()
        w.call("SET", "x:1", "v")  # the redirection is gone now
        deadline = time.time() + 5
        while " flags=tRB " not in w.call("CLIENT", "INFO").value.decode():
            assert time.time() < deadline
            w.call("SET", "x:1", "v")
            time.sleep(0.05)
        a.call("RESET")
        w.call("CLIENT", "TRACKING", "off")
        i = info(w)
        assert (i["tracking_clients"], i["tracking_total_keys"], i["tracking_total_items"],
                i["tracking_total_prefixes"]) == ("0", "0", "0", "0")
        assert " flags=N " in w.call("CLIENT", "INFO").value.decode()
        assert " redir=-1 " in w.call("CLIENT", "INFO").value.decode()


def test_expiry_invalidates_without_any_command(blinkdb):
    with blinkdb.connect() as t, blinkdb.connect() as w:
        t.call("HELLO", "3")
        t.call("CLIENT", "TRACKING", "on")
        w.call("SET", "soon", "v", "PX", "100")
        assert t.call("GET", "soon").value == b"v"
        # The active expiry cycle finds it; the push comes with no request.
        assert t.read_reply().raw == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nsoon\r\n"


def test_lazy_expiry_invalidation_follows_the_reply(blinkdb):
    with blinkdb.connect() as t, blinkdb.connect() as w:
        t.call("HELLO", "3")
        t.call("CLIENT", "TRACKING", "on")
        for _ in range(50):
            w.call("MSET", "x", "1", "y", "2")
            w.call("PEXPIRE", "y", "3")
            t.call("MGET", "x", "y")
            time.sleep(0.004)
            t.send("MGET", "x", "y")
            first = t.read_reply().raw
            if first == b"*2\r\n$1\r\n1\r\n_\r\n":
                # Read expired y: its invalidation comes after the reply.
                assert t.read_reply().raw == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ny\r\n"
                return
            drain(t)
        pytest.fail("y never expired lazily in 50 tries (the active cycle was always first)")


def test_eviction_invalidates(blinkdb_binary, tmp_path):
    srv = start_aof_server(blinkdb_binary, str(tmp_path / "data"), "--maxmemory-policy",
                           "allkeys-fifo", "--segment-size", "64kb")
    try:
        with srv.connect() as t, srv.connect(timeout=60.0) as w:
            # 256 KB of room over what the server holds (used_memory counts it all).
            mem = w.call("INFO", "memory").value.decode()
            used = int(re.search(r"used_memory:(\d+)", mem).group(1))
            w.call("CONFIG", "SET", "maxmemory", str(used + 256 * 1024))
            t.call("HELLO", "3")
            t.call("CLIENT", "TRACKING", "on")
            w.call("SET", "first", "v")
            assert t.call("GET", "first").value == b"v"
            for start in range(0, 6000, 500):
                w.pipeline([("SET", f"small:{i}", f"value-{i:032d}")
                            for i in range(start, start + 500)])
            assert t.read_reply().raw == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$5\r\nfirst\r\n"
            assert w.call("EXISTS", "first").value == 0
    finally:
        srv.stop()


def test_table_limit_evicts_with_invalidations(blinkdb):
    n = 250
    with blinkdb.connect() as t, blinkdb.connect() as s, blinkdb.connect() as w:
        sid = s.call("CLIENT", "ID").value
        s.call("SUBSCRIBE", "__redis__:invalidate")
        t.call("CLIENT", "TRACKING", "on", "REDIRECT", str(sid))
        w.pipeline([("SET", f"key{i}", str(i)) for i in range(n)])
        t.pipeline([("GET", f"key{i}") for i in range(n)])
        assert info(w)["tracking_total_keys"] == str(n)
        w.call("CONFIG", "SET", "tracking-table-max-keys", "1")
        keys = set()
        for _ in range(n - 1):
            reply = s.read_reply().value
            keys.add(reply[2][1][0][1])
        assert len(keys) == n - 1
        assert s.read_all_available(0.5)[0] == b""
        assert info(w)["tracking_total_keys"] == "1"
        assert w.call("CONFIG", "GET", "tracking-table-max-keys").value[1][1] == b"1"


def test_invalidations_reach_trackers_on_every_thread(server_factory):
    srv = server_factory("--io-threads", "2")
    trackers = [srv.connect() for _ in range(6)]
    for t in trackers:
        t.call("HELLO", "3")
        t.call("CLIENT", "TRACKING", "on")
        t.call("GET", "shared")
    done = threading.Event()

    def write():
        with srv.connect() as w:
            w.call("SET", "shared", "v")
        done.set()

    threading.Thread(target=write).start()
    assert done.wait(5)
    for t in trackers:
        assert t.read_reply().raw == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nshared\r\n"
        assert t.read_all_available(0.1)[0] == b""
        t.close()


@pytest.mark.parametrize("kind", ["blinkdb", "oracle"])
def test_redis_py_client_side_cache(blinkdb, oracle, kind, monkeypatch):
    """redis-py 8's own cache (RESP3 tracking, invalidations read off its connection).
    redis-py enables it only for servers announcing 7.4 or later; the protocol it uses
    is 7.0's, so the check is lowered to run it against BlinkDB and redis-server 7.0."""
    redis = pytest.importorskip("redis")
    from redis.cache import CacheConfig
    from redis.connection import CacheProxyConnection

    monkeypatch.setattr(CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    srv = blinkdb if kind == "blinkdb" else oracle
    cached = redis.Redis(port=srv.port, protocol=3, cache_config=CacheConfig())
    other = redis.Redis(port=srv.port)
    try:
        other.set("csc", "one")
        assert cached.get("csc") == b"one"
        assert cached.get_cache().size == 1, "the reply was cached"
        assert cached.get("csc") == b"one"
        other.set("csc", "two")
        deadline = time.time() + 5
        while cached.get("csc") != b"two":
            assert time.time() < deadline, "the invalidation never reached the cache"
            time.sleep(0.05)
        other.flushall()
        deadline = time.time() + 5
        while cached.get("csc") is not None:
            assert time.time() < deadline, "the flush never reached the cache"
            time.sleep(0.05)
    finally:
        cached.close()
        other.close()
