"""DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE] against redis-server 7.0.15 run the same way: replies
and DEBUG DIGEST of every step (every type, TTLs, function libraries, the options and their
errors, MULTI and scripts), WATCH and keyspace events across a reload, and, on BlinkDB, the
AOF after a reload (appendonly yes with either preamble, and no): the same dataset after a
restart, large values still on disk, Bloom filters and sketches answering the same, a BGSAVE
running meanwhile, and a replica that stays consistent."""

import os
import time

import pytest

from resp import plain
from server import ORACLE_BIN, ServerProcess

DEBUG = ("--enable-debug-command", "yes")


@pytest.fixture
def spawn():
    """ServerProcess, each stopped at teardown (also one started before another failed to)."""
    started = []

    def start(*args, **kwargs):
        started.append(ServerProcess(*args, **kwargs))
        return started[-1]

    yield start
    for srv in started:
        srv.stop()


def wait_for(cond, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def info(conn, section):
    text = conn.call("INFO", section).value.decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def fill(c):
    """Keys of every type, some expiring, and a function library."""
    c.call("SET", "str", "hello")
    c.call("SET", "num", "12345")
    c.call("SET", "ttl", "v", "EX", "1000")
    c.call("RPUSH", "list", *[str(i) for i in range(200)])
    c.call("HSET", "hash", *sum(([f"f{i}", f"v{i}"] for i in range(50)), []))
    c.call("SADD", "intset", *[str(i) for i in range(20)])
    c.call("SADD", "set", *[f"m{i}" for i in range(300)])
    c.call("ZADD", "zset", *sum(([str(i), f"z{i}"] for i in range(150)), []))
    c.call("XADD", "stream", "1-1", "a", "1")
    c.call("XGROUP", "CREATE", "stream", "g", "0")
    c.call("PFADD", "hll", "a", "b", "c")
    c.call("SELECT", "3")
    c.call("SET", "other-db", "x", "PX", "5000000")
    c.call("SELECT", "0")
    code = "#!lua name=lib\nredis.register_function('f', function() return 'hi' end)"
    assert c.call("FUNCTION", "LOAD", code).raw == b"$3\r\nlib\r\n"


STEPS = [
    ("DEBUG", "RELOAD"),
    ("DEBUG", "DIGEST"),
    ("TTL", "ttl"),
    ("FCALL", "f", "0"),
    ("OBJECT", "ENCODING", "intset"),
    ("DEBUG", "RELOAD", "NOFLUSH"),  # the library exists: refused
    ("DEBUG", "RELOAD", "NOFLUSH", "MERGE"),
    ("DEBUG", "DIGEST"),
    ("DEBUG", "RELOAD", "nosave", "noflush", "merge"),
    ("DEBUG", "RELOAD", "BOGUS"),
    ("DEBUG", "RELOAD", "MERGE", "x"),
    ("SET", "after", "1"),
    ("DEBUG", "RELOAD", "NOSAVE"),  # the file of before "after": it goes
    ("EXISTS", "after"),
    ("DBSIZE",),
    ("MULTI",),
    ("SET", "in-multi", "1"),
    ("DEBUG", "RELOAD"),
    ("GET", "in-multi"),
    ("EXEC",),
    ("EVAL", "return redis.call('DEBUG', 'RELOAD')", "0"),
    ("DEBUG", "DIGEST"),
    ("SELECT", "3"),
    ("GET", "other-db"),
    ("SELECT", "0"),
    ("FUNCTION", "DELETE", "lib"),
    ("DEBUG", "RELOAD", "NOSAVE"),  # the library comes back from the file
    ("FCALL", "f", "0"),
]


def run_steps(srv):
    with srv.connect() as c:
        fill(c)
        return [c.call(*step).raw for step in STEPS]


def test_replies_and_digests_as_redis(blinkdb_binary, tmp_path, spawn):
    for appendonly in ("yes", "no"):
        ours = spawn(blinkdb_binary, str(tmp_path / f"b-{appendonly}"),
                             DEBUG + ("--appendonly", appendonly))
        ref = spawn(ORACLE_BIN, str(tmp_path / f"r-{appendonly}"),
                            DEBUG + ("--appendonly", appendonly))
        try:
            got, want = run_steps(ours), run_steps(ref)
            for step, g, w in zip(STEPS, got, want):
                assert g == w, (appendonly, step, g, w)
        finally:
            ours.stop()
            ref.stop()


def test_help_and_missing_file(blinkdb_binary, tmp_path, spawn):
    ours = spawn(blinkdb_binary, str(tmp_path / "b"), DEBUG)
    ref = spawn(ORACLE_BIN, str(tmp_path / "r"), DEBUG)
    try:
        replies = []
        for srv in (ours, ref):
            with srv.connect() as c:
                help_text = c.call("DEBUG", "HELP").value
                assert (b"+", b"RELOAD [option ...]") in help_text
                c.call("SET", "k", "v")
                replies.append(c.call("DEBUG", "RELOAD", "NOSAVE").raw)
        assert replies[0] == replies[1] == b"-ERR Error trying to load the RDB dump\r\n"
        # Redis is left with an empty dataset; BlinkDB keeps what it had (the AOF and any
        # replica still hold it): docs/compatibility.md, DEBUG.
        with ours.connect() as c:
            assert c.call("GET", "k").raw == b"$1\r\nv\r\n"
    finally:
        ours.stop()
        ref.stop()


def test_watch_and_keyspace_events_as_redis(blinkdb_binary, tmp_path, spawn):
    results = []
    for name, binary in (("b", blinkdb_binary), ("r", ORACLE_BIN)):
        srv = spawn(binary, str(tmp_path / name), DEBUG)
        try:
            with srv.connect() as a, srv.connect() as b, srv.connect() as sub:
                a.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
                a.call("SET", "present", "1")
                sub.call("PSUBSCRIBE", "__key*__:*")
                sub.call("SUBSCRIBE", "marker")
                out = []
                # A watched key that exists is touched by the flush; a missing one is not.
                for key in ("present", "missing"):
                    a.call("WATCH", key)
                    assert b.call("DEBUG", "RELOAD").raw == b"+OK\r\n"
                    a.call("MULTI")
                    a.call("PING")
                    out.append(a.call("EXEC").raw)
                b.call("PUBLISH", "marker", "end")
                events = []
                while True:
                    reply = sub.read_reply()
                    msg = plain((reply.kind, reply.value))
                    if msg[0] == b"message":
                        break
                    events.append(tuple(msg))
                out.append(events)
                results.append(out)
        finally:
            srv.stop()
    assert results[0] == results[1], results
    assert results[0][0] == b"*-1\r\n" and results[0][1] == b"*1\r\n+PONG\r\n"


def aof_files(directory):
    d = os.path.join(directory, "appendonlydir")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


@pytest.mark.parametrize("appendonly,preamble", [("yes", "yes"), ("yes", "no"), ("no", "no")])
def test_dataset_after_reload_and_restart(server_factory, appendonly, preamble):
    args = DEBUG + ("--appendonly", appendonly, "--aof-use-rdb-preamble", preamble,
                    "--blob-threshold", "4096")
    srv = server_factory(*args, name="node")
    big = b"x" * (3 << 20)
    with srv.connect() as c:
        fill(c)
        c.call("SET", "big", big)
        c.call("SET", "big-ttl", b"y" * 10000, "EX", "5000")
        c.call("BF.RESERVE", "bf", "0.01", "1000")
        c.call("BF.MADD", "bf", *[f"item{i}" for i in range(500)])
        c.call("CF.ADD", "cf", "c1")
        c.call("CMS.INITBYDIM", "cms", "100", "5")
        c.call("CMS.INCRBY", "cms", "a", "7")
        c.call("TOPK.RESERVE", "topk", "3")
        c.call("TOPK.ADD", "topk", "a", "b", "a")
        c.call("TDIGEST.CREATE", "td")
        c.call("TDIGEST.ADD", "td", "1", "2", "3", "40")
        probes = [("BF.MEXISTS", "bf", "item1", "item499", "nope"), ("CF.EXISTS", "cf", "c1"),
                  ("CMS.QUERY", "cms", "a"), ("TOPK.LIST", "topk"), ("TDIGEST.MAX", "td"),
                  ("TDIGEST.QUANTILE", "td", "0.5"), ("STRLEN", "big"), ("GETRANGE", "big", "-3", "-1"),
                  ("STRLEN", "big-ttl")]
        before = [c.call(*p).raw for p in probes]
        digest = c.call("DEBUG", "DIGEST").raw
        rewrites = int(info(c, "persistence").get("aof_rewrites", "0"))
        used = int(info(c, "memory")["used_memory"])
        assert c.call("DEBUG", "RELOAD").raw == b"+OK\r\n"
        assert c.call("DEBUG", "DIGEST").raw == digest
        assert [c.call(*p).raw for p in probes] == before
        ttl = c.call("TTL", "big-ttl").value
        assert 4900 < ttl <= 5000
        if appendonly == "yes":
            # The rewrite that puts the reloaded filters in the AOF's base.
            wait_for(lambda: int(info(c, "persistence")["aof_rewrites"]) > rewrites
                     and info(c, "persistence")["aof_rewrite_in_progress"] == "0", "the rewrite")
            # The large value stayed in the log, not in memory (3 MB). The old
            # dataset is freed by the rewrite's thread just after it reports done.
            wait_for(lambda: int(info(c, "memory")["used_memory"]) < used + (1 << 20),
                     "the set-aside dataset freed")
        c.call("SET", "written-after", "1")
        digest = c.call("DEBUG", "DIGEST").raw
        before = [c.call(*p).raw for p in probes]
        if appendonly == "no":
            c.call("SAVE")
    srv.stop()
    srv2 = server_factory(*args, name="node")
    with srv2.connect() as c:
        assert c.call("DEBUG", "DIGEST").raw == digest
        assert [c.call(*p).raw for p in probes] == before
        assert c.call("FCALL", "f", "0").raw == b"$2\r\nhi\r\n"
        # A second reload, then a restart from what it left.
        rewrites = int(info(c, "persistence")["aof_rewrites"])
        assert c.call("DEBUG", "RELOAD").raw == b"+OK\r\n"
        if appendonly == "yes":
            wait_for(lambda: int(info(c, "persistence")["aof_rewrites"]) > rewrites
                     and info(c, "persistence")["aof_rewrite_in_progress"] == "0"
                     and info(c, "persistence")["aof_last_bgrewrite_status"] == "ok", "the rewrite")
    srv2.stop()
    srv3 = server_factory(*args, name="node")
    with srv3.connect() as c:
        if appendonly == "yes":
            assert c.call("DEBUG", "DIGEST").raw == digest
            assert [c.call(*p).raw for p in probes] == before


def test_reload_beside_bgsave_and_rewrite(server_factory):
    srv = server_factory(*DEBUG, "--appendonly", "yes", name="node")
    with srv.connect() as c, srv.connect() as d:
        for i in range(200):
            c.call("SET", f"k{i}", str(i))
        digest = c.call("DEBUG", "DIGEST").raw
        rewrites = int(info(c, "persistence")["aof_rewrites"])
        # 200 keys at 5 ms each: the BGSAVE and the rewrite run for about a second.
        c.call("CONFIG", "SET", "rdb-key-save-delay", "5000")
        assert c.call("BGSAVE").raw == b"+Background saving started\r\n"
        assert d.call("DEBUG", "RELOAD").raw == b"+OK\r\n"
        c.call("CONFIG", "SET", "rdb-key-save-delay", "0")
        assert c.call("DEBUG", "DIGEST").raw == digest
        # The reload's own rewrite, then a BGREWRITEAOF slowed the same way.
        wait_for(lambda: int(info(c, "persistence")["aof_rewrites"]) > rewrites
                 and info(c, "persistence")["aof_rewrite_in_progress"] == "0", "the rewrite")
        c.call("CONFIG", "SET", "rdb-key-save-delay", "5000")
        assert c.call("BGREWRITEAOF").raw.startswith(b"+Background append only file")
        assert info(c, "persistence")["aof_rewrite_in_progress"] == "1"
        assert d.call("DEBUG", "RELOAD").raw == b"+OK\r\n"
        c.call("CONFIG", "SET", "rdb-key-save-delay", "0")
        c.call("SET", "k0", "changed")
        digest = c.call("DEBUG", "DIGEST").raw
        wait_for(lambda: info(c, "persistence")["aof_rewrite_in_progress"] == "0"
                 and info(c, "persistence")["rdb_bgsave_in_progress"] == "0", "both saves")
    srv.stop()
    srv2 = server_factory(*DEBUG, "--appendonly", "yes", name="node")
    with srv2.connect() as c:
        assert c.call("DEBUG", "DIGEST").raw == digest


def test_replica_stays_consistent(server_factory):
    master = server_factory(*DEBUG, "--appendonly", "yes", name="master")
    replica = server_factory(*DEBUG, name="replica")
    with master.connect() as m, replica.connect() as r:
        fill(m)
        r.call("REPLICAOF", "127.0.0.1", str(master.port))
        wait_for(lambda: info(r, "replication").get("master_link_status") == "up", "the link")
        assert m.call("DEBUG", "RELOAD").raw == b"+OK\r\n"
        m.call("SET", "after", "1")
        m.call("DEL", "list")
        want = m.call("DEBUG", "DIGEST").raw
        wait_for(lambda: r.call("DEBUG", "DIGEST").raw == want, "the replica's dataset")


def test_loadaof_as_redis(blinkdb_binary, tmp_path, spawn):
    """DEBUG LOADAOF replays the AOF into an emptied dataset: the same replies and digests as
    redis-server, writes after it logged once (a restart gives the same dataset); with
    appendonly no BlinkDB answers Redis 7.2's error where 7.0.15 exits."""
    steps = [("DEBUG", "LOADAOF"), ("DEBUG", "DIGEST"), ("TTL", "ttl"), ("FCALL", "f", "0"),
             ("XADD", "s", "MAXLEN", "2", "1-1", "a", "1"), ("XADD", "s", "MAXLEN", "2", "1-2", "a", "2"),
             ("XADD", "s", "MAXLEN", "2", "1-3", "a", "3"), ("DEBUG", "LOADAOF"), ("XLEN", "s"),
             ("SET", "k", "v", "KEEPTTL"), ("DEBUG", "LOADAOF"), ("DEBUG", "DIGEST")]
    results = []
    for name, binary in (("b", blinkdb_binary), ("r", ORACLE_BIN)):
        srv = spawn(binary, str(tmp_path / name), DEBUG + ("--appendonly", "yes"))
        try:
            with srv.connect() as c:
                fill(c)
                results.append([c.call(*s).raw for s in steps])
                digest = c.call("DEBUG", "DIGEST").raw
            if name == "b":
                srv.stop()
                srv = spawn(binary, str(tmp_path / name), DEBUG + ("--appendonly", "yes"))
                with srv.connect() as c:
                    assert c.call("DEBUG", "DIGEST").raw == digest
        finally:
            srv.stop()
    for step, got, want in zip(steps, *results):
        assert got == want, (step, got, want)
    srv = spawn(blinkdb_binary, str(tmp_path / "off"), DEBUG)
    try:
        with srv.connect() as c:
            c.call("SET", "k", "v")
            assert c.call("DEBUG", "LOADAOF").raw == \
                b"-ERR Error loading the AOF, check server logs.\r\n"
            assert c.call("GET", "k").raw == b"$1\r\nv\r\n"
    finally:
        srv.stop()
