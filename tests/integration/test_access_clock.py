"""The per-key access clock (issues 18/21): OBJECT IDLETIME and FREQ, TOUCH, the
lookups that leave the clock alone, CLIENT NO-TOUCH (Redis 7.2's, absent from
7.0.15), RESTORE IDLETIME/FREQ, DEBUG OBJECT's lru fields, RDB files carrying
idle times and counters, and the sampled maxmemory policies that read the
clocks; compared with redis-server 7.0.15 where the reply is deterministic."""

import os
import re
import shutil
import subprocess
import time

import pytest

from server import ORACLE_BIN, ServerProcess, require_tool

LFU_ERR = (b"-ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that "
           b"when switching between policies at runtime LRU and LFU data will take some time to "
           b"adjust.\r\n")
NOT_LFU_ERR = (b"-ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
               b"Please note that when switching between policies at runtime LRU and LFU data "
               b"will take some time to adjust.\r\n")


OPEN = []


def connect(srv):
    """A connection closed before its server stops (see `closes`), so that no
    port is left in TIME_WAIT for the next test."""
    conn = srv.connect()
    OPEN.append(conn)
    return conn


def both(blinkdb, oracle):
    return [connect(blinkdb), connect(oracle)]


@pytest.fixture
def closes():
    yield
    while OPEN:
        OPEN.pop().close()


def same(conns, *args):
    """The same exact reply bytes from every connection; returns them."""
    replies = [c.call(*args).raw for c in conns]
    assert replies[0] == replies[1], (args, replies)
    return replies[0]


def integer(conn, *args):
    reply = conn.call(*args)
    assert reply.raw.startswith(b":"), (args, reply.raw)
    return int(reply.raw[1:-2])


def wait_into_next_second():
    """Sleeps to just past a second boundary, so the clocks read the same second."""
    time.sleep(1.05 - (time.time() % 1.0))


@pytest.fixture
def debug_pair(server_factory, tmp_path):
    """BlinkDB and the oracle, both with DEBUG enabled."""
    blinkdb = server_factory("--enable-debug-command", "yes")
    oracle = ServerProcess(ORACLE_BIN, str(tmp_path / "oracle-debug"),
                           ["--enable-debug-command", "yes"])
    yield blinkdb, oracle
    while OPEN:
        OPEN.pop().close()
    oracle.stop()


def test_idletime_touch_and_no_touch_lookups(debug_pair):
    conns = both(*debug_pair)
    wait_into_next_second()
    same(conns, "SET", "k", "v")
    same(conns, "RPUSH", "l", "a")
    assert same(conns, "OBJECT", "IDLETIME", "k") == b":0\r\n"
    assert same(conns, "OBJECT", "IDLETIME", "nokey") == b"$-1\r\n"
    assert same(conns, "OBJECT", "FREQ", "k") == NOT_LFU_ERR
    same(conns, "OBJECT", "IDLETIME")
    same(conns, "OBJECT", "IDLETIME", "k", "extra")
    time.sleep(2.2)
    # Lookups Redis makes with LOOKUP_NOTOUCH (or no lookup at all).
    for args in (("EXISTS", "k"), ("TYPE", "k"), ("TTL", "k"), ("PTTL", "k"),
                 ("EXPIRETIME", "k"), ("PEXPIRETIME", "k"), ("OBJECT", "ENCODING", "k"),
                 ("OBJECT", "REFCOUNT", "l"), ("OBJECT", "FREQ", "k"), ("KEYS", "*"),
                 ("SCAN", "0", "TYPE", "string"), ("RANDOMKEY",)):
        for c in conns:
            c.call(*args)
    for c in conns:
        c.call("DEBUG", "OBJECT", "k")
        c.call("MEMORY", "USAGE", "k")
    for c in conns:
        assert integer(c, "OBJECT", "IDLETIME", "k") >= 2
        line = c.call("DEBUG", "OBJECT", "k").raw.decode()
        m = re.search(r" lru:(\d+) lru_seconds_idle:(\d+)", line)
        assert m and int(m.group(2)) >= 2, line
    # A read resets it; TOUCH too, counting existing keys (repeats included).
    same(conns, "GET", "k")
    assert same(conns, "OBJECT", "IDLETIME", "k") == b":0\r\n"
    assert integer(conns[0], "OBJECT", "IDLETIME", "l") >= 2
    assert same(conns, "TOUCH", "l", "nokey", "l") == b":2\r\n"
    assert same(conns, "OBJECT", "IDLETIME", "l") == b":0\r\n"
    same(conns, "TOUCH")
    assert same(conns, "TOUCH", "nokey") == b":0\r\n"
    for args in (("COMMAND", "INFO", "touch", "object|idletime", "object|freq"),
                 ("COMMAND", "DOCS", "touch", "object|idletime")):
        same(conns, *args)
    for c in conns:
        c.call("HELLO", "3")
    same(conns, "OBJECT", "IDLETIME", "nokey")
    same(conns, "TOUCH", "k", "l")
    same(conns, "OBJECT", "HELP")


def test_writes_and_scripts_update_the_clock(blinkdb, oracle, closes):
    conns = both(blinkdb, oracle)
    wait_into_next_second()
    for c in conns:
        c.call("SET", "s", "1")
        c.call("SET", "t", "1")
        c.call("HSET", "h", "f", "v")
    time.sleep(2.2)
    for c in conns:
        c.call("APPEND", "s", "x")
        c.call("HSET", "h", "g", "w")
        c.call("EVAL", "return redis.call('GET', KEYS[1])", "1", "t")
    for key in ("s", "h", "t"):
        assert same(conns, "OBJECT", "IDLETIME", key) == b":0\r\n"
    # Inside MULTI too; EXISTS inside a script leaves it.
    time.sleep(1.1)
    for c in conns:
        c.call("MULTI")
        c.call("GET", "s")
        c.call("EXISTS", "t")
        c.call("EXEC")
        c.call("EVAL", "return redis.call('EXISTS', KEYS[1])", "1", "h")
    assert same(conns, "OBJECT", "IDLETIME", "s") == b":0\r\n"
    for c in conns:
        assert integer(c, "OBJECT", "IDLETIME", "t") >= 1
        assert integer(c, "OBJECT", "IDLETIME", "h") >= 1


def test_client_no_touch(blinkdb, oracle, closes):
    # Redis 7.2's subcommand: 7.0.15 does not know it.
    with oracle.connect() as o:
        assert o.call("CLIENT", "NO-TOUCH", "ON").raw == (
            b"-ERR unknown subcommand 'NO-TOUCH'. Try CLIENT HELP.\r\n")
    c = connect(blinkdb)
    other = connect(blinkdb)
    assert c.call("CLIENT", "NO-TOUCH", "maybe").raw == b"-ERR syntax error\r\n"
    assert c.call("CLIENT", "NO-TOUCH").raw.startswith(b"-ERR wrong number of arguments")
    c.call("SET", "k", "v")
    c.call("SET", "j", "v")
    assert c.call("CLIENT", "NO-TOUCH", "on").raw == b"+OK\r\n"
    assert "flags=T " in c.call("CLIENT", "INFO").value.decode()
    time.sleep(2.2)
    c.call("GET", "k")
    c.call("EVAL", "return redis.call('GET', KEYS[1])", "1", "k")
    c.call("MULTI")
    c.call("GET", "k")
    c.call("EXEC")
    assert integer(c, "OBJECT", "IDLETIME", "k") >= 2, "a NO-TOUCH client's reads leave it"
    # IDLETIME counts whole seconds of an LRU clock with 1 s resolution (as Redis's): a
    # key just read shows 1 when the clock ticks between the read and the IDLETIME, so
    # "touched" is <= 1, and "left alone" is >= 2 after 2.2 s.
    # TOUCH still touches, alone or in a transaction.
    assert c.call("TOUCH", "k").raw == b":1\r\n"
    assert integer(c, "OBJECT", "IDLETIME", "k") <= 1
    c.call("MULTI")
    c.call("TOUCH", "j")
    c.call("EXEC")
    assert integer(c, "OBJECT", "IDLETIME", "j") <= 1
    # Another client's reads touch as usual.
    time.sleep(2.2)
    other.call("GET", "k")
    assert integer(c, "OBJECT", "IDLETIME", "k") <= 1
    assert c.call("CLIENT", "NO-TOUCH", "OFF").raw == b"+OK\r\n"
    assert "flags=N " in c.call("CLIENT", "INFO").value.decode()
    time.sleep(2.2)
    c.call("GET", "k")
    assert integer(c, "OBJECT", "IDLETIME", "k") <= 1
    help_lines = [v.decode() for _, v in c.call("CLIENT", "HELP").value]
    i = help_lines.index("NO-TOUCH (ON|OFF)")
    assert help_lines[i + 1] == "    Will not touch LRU/LFU stats when this mode is on."


def test_restore_idletime_and_freq(blinkdb, oracle, closes):
    conns = both(blinkdb, oracle)
    same(conns, "SET", "src", "payload")
    payload = conns[1].call("DUMP", "src").value
    wait_into_next_second()
    same(conns, "RESTORE", "a", "0", payload, "IDLETIME", "1000")
    assert same(conns, "OBJECT", "IDLETIME", "a") == b":1000\r\n"
    same(conns, "RESTORE", "b", "0", payload, "IDLETIME", "99999999999")
    same(conns, "OBJECT", "IDLETIME", "b")
    same(conns, "RESTORE", "c", "0", payload, "FREQ", "100")
    assert same(conns, "OBJECT", "IDLETIME", "c") == b":0\r\n"
    for bad in (("IDLETIME", "-1"), ("FREQ", "256"), ("IDLETIME", "x"), ("FREQ", "1", "IDLETIME", "1")):
        same(conns, "RESTORE", "d", "0", payload, *bad)
    same(conns, "CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    same(conns, "CONFIG", "SET", "lfu-decay-time", "0")
    same(conns, "RESTORE", "e", "0", payload, "FREQ", "100")
    assert same(conns, "OBJECT", "FREQ", "e") == b":100\r\n"
    assert same(conns, "OBJECT", "IDLETIME", "e") == LFU_ERR
    same(conns, "RESTORE", "f", "0", payload, "IDLETIME", "50")
    assert same(conns, "OBJECT", "FREQ", "f") == b":5\r\n", "a new key starts at LFU_INIT_VAL"
    same(conns, "SET", "g", "v")
    assert same(conns, "OBJECT", "FREQ", "g") == b":5\r\n"
    # The first access past LFU_INIT_VAL always counts.
    same(conns, "GET", "g")
    assert same(conns, "OBJECT", "FREQ", "g") == b":6\r\n"
    # Overwriting keeps the counter (dbOverwrite under LFU).
    same(conns, "SET", "e", "other")
    assert integer(conns[0], "OBJECT", "FREQ", "e") >= 100
    same(conns, "CONFIG", "GET", "lfu-log-factor")
    same(conns, "CONFIG", "GET", "lfu-decay-time")
    same(conns, "CONFIG", "GET", "maxmemory-samples")
    # BlinkDB's list ends with its cache mode.
    mine, theirs = (c.call("CONFIG", "SET", "maxmemory-policy", "lru").raw for c in conns)
    assert mine == theirs[:-2] + b", allkeys-fifo\r\n"
    same(conns, "CONFIG", "SET", "lfu-log-factor", "-1")
    same(conns, "CONFIG", "SET", "maxmemory-policy", "noeviction")


def test_rdb_files_carry_idle_times_and_counters(server_factory, tmp_path, closes):
    check = require_tool("redis-check-rdb")
    for policy, option, value, reading in (("allkeys-lru", "IDLETIME", "5000", "IDLETIME"),
                                           ("volatile-lfu", "FREQ", "77", "FREQ")):
        srv = server_factory("--maxmemory-policy", policy, "--lfu-decay-time", "0",
                             name=f"{policy}-a")
        with srv.connect() as c:
            c.call("SET", "src", "x")
            payload = c.call("DUMP", "src").value
            assert c.call("RESTORE", "k", "0", payload, option, value).raw == b"+OK\r\n"
            assert c.call("SAVE").raw == b"+OK\r\n"
        path = os.path.join(srv.dir, "dump.rdb")
        out = subprocess.run([check, path], capture_output=True, text=True)
        assert "RDB looks OK" in out.stdout, out.stdout + out.stderr
        srv.stop()
        # redis-server reads the same figure back...
        redis_dir = tmp_path / f"redis-{policy}"
        redis_dir.mkdir()
        shutil.copy(path, redis_dir / "dump.rdb")
        oracle = ServerProcess(ORACLE_BIN, str(redis_dir), ["--maxmemory-policy", policy,
                                                           "--lfu-decay-time", "0"])
        try:
            with oracle.connect() as o:
                got = integer(o, "OBJECT", reading, "k")
                assert int(value) <= got <= int(value) + 2, got
                # ...and BlinkDB loads what redis-server writes.
                o.call("RESTORE", "r", "0", payload, option, value)
                assert o.call("SAVE").raw == b"+OK\r\n"
            data = tmp_path / f"blinkdb-{policy}"
            data.mkdir()
            shutil.copy(redis_dir / "dump.rdb", data / "dump.rdb")
            again = server_factory("--maxmemory-policy", policy, "--lfu-decay-time", "0",
                                   "--dir", str(data), name=f"{policy}-b")
            with again.connect() as c:
                for key in ("k", "r"):
                    got = integer(c, "OBJECT", reading, key)
                    assert int(value) <= got <= int(value) + 3, (key, got)
        finally:
            oracle.stop()
    # Under noeviction the file records nothing, as Redis's: a reload starts afresh.
    srv = server_factory(name="plain")
    with srv.connect() as c:
        c.call("SET", "src", "x")
        payload = c.call("DUMP", "src").value
        c.call("RESTORE", "k", "0", payload, "IDLETIME", "5000")
        assert c.call("SAVE").raw == b"+OK\r\n"
    redis_dir = tmp_path / "redis-plain"
    redis_dir.mkdir()
    shutil.copy(os.path.join(srv.dir, "dump.rdb"), redis_dir / "dump.rdb")
    oracle = ServerProcess(ORACLE_BIN, str(redis_dir), ["--maxmemory-policy", "allkeys-lru"])
    try:
        with oracle.connect() as o:
            assert integer(o, "OBJECT", "IDLETIME", "k") < 100
    finally:
        oracle.stop()


def fill(conn, prefix, n, size=1000, **kw):
    value = "x" * size
    for i in range(n):
        args = ["SET", f"{prefix}{i}", value]
        if kw.get("ex"):
            args += ["EX", str(kw["ex"] + i)]
        conn.call(*args)


def test_allkeys_lru_evicts_the_idle_keys(blinkdb, closes):
    c = connect(blinkdb)
    c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    c.call("CONFIG", "SET", "maxmemory-samples", "10")
    fill(c, "old:", 2000)
    time.sleep(2.1)
    fill(c, "hot:", 200)
    mem = dict(line.split(":", 1) for line in c.call("INFO", "memory").value.decode().split("\r\n")
               if ":" in line)
    # Room for half the data (used_memory counts the server's own memory too).
    limit = int(mem["used_memory"]) - int(mem["used_memory_dataset"]) // 2
    assert c.call("CONFIG", "SET", "maxmemory", str(limit)).raw == b"+OK\r\n"
    for i in range(200):
        for _ in range(3):
            c.call("GET", f"hot:{i}")
        c.call("SET", f"new:{i}", "x" * 1000)
    stats = c.call("INFO", "stats").value.decode()
    evicted = int(re.search(r"evicted_keys:(\d+)", stats).group(1))
    assert evicted > 500, stats
    hot = sum(integer(c, "EXISTS", f"hot:{i}") for i in range(200))
    old = sum(integer(c, "EXISTS", f"old:{i}") for i in range(2000))
    assert hot >= 190, (hot, old)
    assert old < 1500


def test_volatile_policies_and_oom(blinkdb, oracle, closes):
    c = connect(blinkdb)
    c.call("CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
    fill(c, "keep:", 300)
    fill(c, "ttl:", 300, ex=1000)
    c.call("CONFIG", "SET", "maxmemory", "1")
    time.sleep(0.3)
    # Every volatile key goes, nearest expiry first, then nothing is left.
    reply = c.call("SET", "new", "v")
    assert reply.raw == b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    assert integer(c, "DBSIZE") == 300
    assert integer(c, "EXISTS", "keep:7") == 1
    assert c.call("GET", "keep:7").raw.startswith(b"$1000")
    c.call("CONFIG", "SET", "maxmemory", "0")
    with oracle.connect() as o:
        for p in ("volatile-lru", "allkeys-random", "volatile-random", "allkeys-fifo"):
            mine = c.call("CONFIG", "SET", "maxmemory-policy", p).raw
            assert mine == b"+OK\r\n", (p, mine)
            if p != "allkeys-fifo":
                assert o.call("CONFIG", "SET", "maxmemory-policy", p).raw == mine
            assert c.call("CONFIG", "GET", "maxmemory-policy").value[1][1] == p.encode()


def test_evictions_reach_the_aof_and_the_event_stream(server_factory, closes):
    srv = server_factory("--appendonly", "yes", "--maxmemory-policy", "allkeys-random")
    c = connect(srv)
    c.call("CONFIG", "SET", "notify-keyspace-events", "Ee")
    sub = connect(srv)
    sub.call("PSUBSCRIBE", "__keyevent@*__:evicted")
    fill(c, "k:", 500)
    c.call("CONFIG", "SET", "maxmemory", "100000")
    time.sleep(0.3)
    c.call("SET", "trigger", "1")
    left = integer(c, "DBSIZE")
    assert left < 500
    msg = sub.read_reply()
    assert msg.value[2][1] == b"__keyevent@0__:evicted"
    c.call("CONFIG", "SET", "maxmemory", "0")
    keys = sorted(v for _, v in c.call("KEYS", "*").value)
    while OPEN:
        OPEN.pop().close()
    srv.stop()
    again = server_factory("--appendonly", "yes", "--dir", srv.dir, name="again")
    with again.connect() as c2:
        assert sorted(v for _, v in c2.call("KEYS", "*").value) == keys


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu"])
def test_policy_from_the_command_line(server_factory, policy, closes):
    srv = server_factory("--maxmemory-policy", policy)
    with srv.connect() as c:
        c.call("SET", "k", "v")
        if policy == "allkeys-lfu":
            assert c.call("OBJECT", "FREQ", "k").raw == b":5\r\n"
            assert c.call("OBJECT", "IDLETIME", "k").raw == LFU_ERR
        else:
            assert c.call("OBJECT", "IDLETIME", "k").raw == b":0\r\n"
            assert c.call("OBJECT", "FREQ", "k").raw == NOT_LFU_ERR
