"""Redis 7.0 Functions: FUNCTION LOAD/DELETE/FLUSH/LIST/STATS/KILL/DUMP/RESTORE/HELP
and FCALL/FCALL_RO, compared byte for byte with the oracle redis-server (RESP2 and
RESP3), the DUMP payload equal to Redis's for the same libraries, BUSY and
FUNCTION KILL, and the libraries' persistence in the AOF (restart, rewrite, and
redis-server 7 loading BlinkDB's AOF)."""

import threading
import time

import pytest

from aof_helpers import redis_server, start_aof_server
from test_persistence_redis_interop import check_aof

redis = pytest.importorskip("redis")

LIB1 = """#!lua name=lib1
local function get(keys, args) return redis.call('get', keys[1]) end
redis.register_function('f_get', get)
redis.register_function{function_name='f_set', callback=function(keys, args)
  return redis.call('set', keys[1], args[1]) end, description='sets a key'}
redis.register_function{function_name='f_ro', callback=function(keys, args)
  return redis.call('set', keys[1], 'x') end, flags={'no-writes', 'ALLOW-STALE'}}
redis.register_function('f_types', function(keys, args)
  return {1, 'two', {3}, {ok='fine'}, 3.9, true, false, nil, 5} end)
redis.register_function('f_err', function() return redis.call('nosuch') end)
redis.register_function('f_pcall', function() return redis.pcall('incr', 'str') end)
redis.register_function('f_global', function() return undefined_global end)
redis.register_function('f_map', function() redis.setresp(3)
  return {map={a=1}, set={b=true}, double=1.5} end)
redis.register_function('f_args', function(keys, args) return {#keys, #args, args[1]} end)
redis.register_function('f_errtable', function() return {err='MYERR custom'} end)
redis.register_function('f_raise', function() error('boom') end)
"""

SHORT = "#!lua name=s\nredis.register_function('s1', function() return 1 end)"

CALLS = [
    ["FUNCTION", "LOAD", LIB1],
    ["FUNCTION", "LOAD", LIB1],
    ["FUNCTION", "LOAD", "REPLACE", LIB1],
    ["FUNCTION", "LOAD", SHORT],
    ["SET", "str", "abc"],
    ["FCALL", "f_set", "1", "k", "v"],
    ["FCALL", "f_get", "1", "k"],
    ["FCALL", "f_types", "0"],
    ["FCALL", "f_err", "0"],
    ["FCALL", "f_pcall", "0"],
    ["FCALL", "f_global", "0"],
    ["FCALL", "f_map", "0"],
    ["FCALL", "f_args", "2", "a", "b", "c", "d"],
    ["FCALL", "f_errtable", "0"],
    ["FCALL", "f_raise", "0"],
    ["FCALL", "f_ro", "1", "k"],
    ["FCALL_RO", "f_set", "1", "k", "v"],
    ["FCALL_RO", "f_get", "1", "k"],
    ["FCALL", "nosuch", "0"],
    ["FCALL", "f_get", "x"],
    ["FCALL", "f_get", "-1"],
    ["FCALL", "f_get", "5", "a"],
    ["FCALL", "f_get", "99999999999999999999"],
    ["FCALL"],
    ["FUNCTION", "LIST", "LIBRARYNAME", "s", "WITHCODE"],
    ["FUNCTION", "LIST", "LIBRARYNAME", "nomatch*", "WITHCODE"],
    ["FUNCTION", "LIST", "LIBRARYNAME"],
    ["FUNCTION", "LIST", "BAD"],
    ["FUNCTION", "LIST", "WITHCODE", "WITHCODE"],
    ["FUNCTION", "STATS"],
    ["FUNCTION", "KILL"],
    ["SCRIPT", "KILL"],
    ["FUNCTION", "HELP"],
    ["FUNCTION", "NOSUCH"],
    ["FUNCTION", "LOAD"],
    ["FUNCTION", "LOAD", "BAD", "x"],
    ["FUNCTION", "DELETE", "nosuch"],
    ["FUNCTION", "DELETE", "s"],
    ["FUNCTION", "DELETE", "s"],
    ["FUNCTION", "FLUSH", "BAD"],
    ["FUNCTION", "FLUSH", "SYNC", "x"],
    ["FUNCTION", "RESTORE", "garbage"],
    ["FUNCTION", "RESTORE", "x", "BAD"],
    ["FUNCTION", "RESTORE", "x", "FLUSH", "y"],
    ["FUNCTION", "FLUSH"],
    ["FUNCTION", "LIST"],
    ["FCALL", "f_get", "1", "k"],
    ["FUNCTION", "FLUSH", "ASYNC"],
]

# Library code FUNCTION LOAD must refuse with Redis's exact errors.
BAD_LIBS = [
    "return 1",
    "#!lua",
    "#!lua\nreturn 1",
    "#!lua foo=bar\nreturn 1",
    "#!lua name=a name=b\nreturn 1",
    "#!lua name=\nreturn 1",
    "#!lua name=a-b\nreturn 1",
    "#!nosuch name=a\nreturn 1",
    "#!lua name=a\nreturn 1",
    "#!lua name=a\nretur 1",
    "#!lua name=a\nredis.call('ping')",
    "#!lua name=a\nredis.setresp(3)",
    "#!lua name=a\nreturn math.random()",
    "#!lua name=a\nredis.math.random()",
    "#!lua name=a\nredis.register_function()",
    "#!lua name=a\nredis.register_function('f')",
    "#!lua name=a\nredis.register_function('f', 1)",
    "#!lua name=a\nredis.register_function(nil, function() end)",
    "#!lua name=a\nredis.register_function('a-b', function() end)",
    "#!lua name=a\nredis.register_function('', function() end)",
    "#!lua name=a\nredis.register_function('f', function() end, 3)",
    "#!lua name=a\nredis.register_function('f', function() end)\n"
    "redis.register_function('f', function() end)",
    "#!lua name=a\nredis.register_function{function_name='f'}",
    "#!lua name=a\nredis.register_function{callback=function() end}",
    "#!lua name=a\nredis.register_function{function_name=function() end, callback=1}",
    "#!lua name=a\nredis.register_function{function_name='f', callback=1}",
    "#!lua name=a\nredis.register_function{function_name='f', callback=function() end, "
    "description=function() end}",
    "#!lua name=a\nredis.register_function{function_name='f', callback=function() end, bad=1}",
    "#!lua name=a\nredis.register_function{function_name='f', callback=function() end, "
    "flags='no-writes'}",
    "#!lua name=a\nredis.register_function{function_name='f', callback=function() end, "
    "flags={'bad'}}",
    "#!lua name=a\nredis.register_function{function_name='f', callback=function() end, "
    "flags={1}}",
    "#!lua name=a\nlocal r = redis\nr.x = 1",
    "#!lua name=a\nx = 1",
    "#!lua name=a\nerror('boom')",
    "#!lua name=a\nerror({err='MY custom'})",
]


def raw(conn, *args):
    return conn.call(*args).raw


def listing(conn, *extra):
    """FUNCTION LIST as sorted text (Redis lists functions in its dict's order)."""
    def norm(v):
        if isinstance(v, tuple):
            return tuple(norm(x) for x in v)
        if isinstance(v, list):
            return sorted(repr(norm(x)) for x in v)
        if isinstance(v, dict):
            return sorted((repr(k), repr(norm(x))) for k, x in v.items())
        return v
    return norm(conn.call("FUNCTION", "LIST", *extra).value)


def both(blinkdb, oracle, resp):
    b, o = blinkdb.connect(), oracle.connect()
    if resp == 3:
        b.call("HELLO", "3")
        o.call("HELLO", "3")
    o.call("FUNCTION", "FLUSH")
    return b, o


@pytest.mark.parametrize("resp", [2, 3])
def test_replies_match_redis(blinkdb, oracle, resp):
    b, o = both(blinkdb, oracle, resp)
    with b, o:
        for args in CALLS:
            if args == ["FUNCTION", "FLUSH"]:
                for extra in [[], ["WITHCODE"], ["LIBRARYNAME", "lib*"]]:
                    assert listing(b, *extra) == listing(o, *extra), extra
            assert raw(b, *args) == raw(o, *args), args
        for code in BAD_LIBS:
            args = ["FUNCTION", "LOAD", code]
            assert raw(b, *args) == raw(o, *args), code
        for extra in [[], ["WITHCODE"], ["LIBRARYNAME", "lib*"]]:
            assert listing(b, *extra) == listing(o, *extra), extra


def test_function_collisions_and_replace(blinkdb, oracle):
    b, o = both(blinkdb, oracle, 2)
    seq = [
        ["FUNCTION", "LOAD", "#!lua name=l1\nredis.register_function('f1', function() return 1 end)"],
        ["FUNCTION", "LOAD", "#!lua name=l2\nredis.register_function('f1', function() return 2 end)"],
        ["FUNCTION", "LOAD", "REPLACE",
         "#!lua name=l1\nredis.register_function('f2', function() return 2 end)"],
        ["FCALL", "f1", "0"],
        ["FCALL", "f2", "0"],
        ["FUNCTION", "LOAD", "REPLACE", "#!lua name=l1\nreturn 1"],
        ["FCALL", "f2", "0"],
        ["FUNCTION", "LOAD", "#!LUA name=l3\nredis.register_function{function_name='f3', "
         "callback=function() return 3 end, flags={'no-writes', 'allow-oom', 'allow-stale', "
         "'no-cluster', 'allow-cross-slot-keys', 'no-writes'}}"],
        ["FUNCTION", "LIST", "LIBRARYNAME", "l3"],
        ["FCALL_RO", "f3", "0"],
        ["FUNCTION", "STATS"],
    ]
    with b, o:
        for args in seq:
            assert raw(b, *args) == raw(o, *args), args


def test_dump_payload_equals_redis(blinkdb, oracle):
    b, o = both(blinkdb, oracle, 2)
    with b, o:
        for code in [SHORT, LIB1, "#!lua name=x\n" + "-- pad\n" * 3000 + SHORT[12:]]:
            for conn in (b, o):
                conn.call("FUNCTION", "FLUSH")
                conn.call("FUNCTION", "LOAD", code)
            dumped = raw(b, "FUNCTION", "DUMP")
            assert dumped == raw(o, "FUNCTION", "DUMP"), code
        # Redis's payload restores into BlinkDB and the other way round.
        payload = o.call("FUNCTION", "DUMP").value
        assert isinstance(payload, bytes)
        b.call("FUNCTION", "FLUSH")
        assert raw(b, "FUNCTION", "RESTORE", payload) == b"+OK\r\n"
        assert raw(b, "FCALL", "f_args", "1", "k", "a") == raw(o, "FCALL", "f_args", "1", "k", "a")
        mine = b.call("FUNCTION", "DUMP").value
        o.call("FUNCTION", "FLUSH")
        assert raw(o, "FUNCTION", "RESTORE", mine) == b"+OK\r\n"
        for args in [
            ["FUNCTION", "RESTORE", payload],
            ["FUNCTION", "RESTORE", payload, "APPEND"],
            ["FUNCTION", "RESTORE", payload, "REPLACE"],
            ["FUNCTION", "RESTORE", payload, "FLUSH"],
            ["FUNCTION", "RESTORE", payload[:-1] + bytes([payload[-1] ^ 1])],
            ["FUNCTION", "RESTORE", payload[:-10] + b"\x0b\x00" + payload[-8:]],
        ]:
            assert raw(b, *args) == raw(o, *args), args
        assert listing(b) == listing(o)
        # Two libraries in one payload (the listing order is Redis's dict order,
        # so only the restored result is compared).
        for conn in (b, o):
            conn.call("FUNCTION", "LOAD", SHORT)
        both_libs = b.call("FUNCTION", "DUMP").value
        for conn in (b, o):
            conn.call("FUNCTION", "FLUSH")
            assert raw(conn, "FUNCTION", "RESTORE", both_libs) == b"+OK\r\n"
            assert conn.call("FCALL", "s1", "0").value == 1


def test_fcall_ro_refuses_writes(blinkdb):
    r = redis.Redis(port=blinkdb.port)
    r.function_load("#!lua name=w\nredis.register_function('w', function(k) "
                    "return redis.call('set', k[1], '1') end)\n"
                    "redis.register_function{function_name='w_ro', callback=function(k) "
                    "return redis.call('set', k[1], '1') end, flags={'no-writes'}}")
    with pytest.raises(redis.exceptions.ResponseError,
                       match="Can not execute a script with write flag using \\*_ro command"):
        r.fcall_ro("w", 1, "a")
    with pytest.raises(redis.exceptions.ResponseError,
                       match="Write commands are not allowed from read-only scripts"):
        r.fcall_ro("w_ro", 1, "a")
    assert r.get("a") is None
    assert r.fcall("w", 1, "a") == b"OK"
    assert r.get("a") == b"1"


def test_busy_function_and_function_kill(server_factory):
    srv = server_factory("--busy-reply-threshold", "200")
    r = redis.Redis(port=srv.port)
    r.function_load("#!lua name=loop\nredis.register_function('spin', "
                    "function() while true do end end)")
    result = {}

    def run():
        try:
            result["reply"] = redis.Redis(port=srv.port).fcall("spin", 0)
        except redis.exceptions.ResponseError as e:
            result["error"] = str(e)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.6)
    with pytest.raises(redis.exceptions.ResponseError,
                       match="You can only call FUNCTION KILL or SHUTDOWN NOSAVE"):
        r.get("x")
    stats = r.execute_command("FUNCTION", "STATS")
    if isinstance(stats, list):  # redis-py versions without a parser for it
        stats = dict(zip(stats[::2], stats[1::2]))
    running = stats.get(b"running_script", stats.get("running_script"))
    if isinstance(running, list):
        running = dict(zip(running[::2], running[1::2]))
    running = {(k.decode() if isinstance(k, bytes) else k): v for k, v in running.items()}
    assert running["name"] == b"spin"
    assert running["command"] == [b"FCALL", b"spin", b"0"]
    with pytest.raises(redis.exceptions.ResponseError,
                       match="You can only call FUNCTION KILL"):
        r.script_kill()
    assert r.execute_command("FUNCTION", "KILL") == b"OK"
    t.join(5)
    assert "Script killed by user with SCRIPT KILL" in result["error"]
    assert r.ping()
    with pytest.raises(redis.exceptions.ResponseError, match="NOTBUSY"):
        r.execute_command("FUNCTION", "KILL")


def test_functions_persist_in_the_aof(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "aof")
    srv = start_aof_server(blinkdb_binary, directory)
    r = redis.Redis(port=srv.port)
    r.function_load("#!lua name=keep\nredis.register_function('keep', function() return 'kept' end)")
    r.function_load("#!lua name=gone\nredis.register_function('gone', function() return 1 end)")
    r.function_load("#!lua name=big\n" + "-- padding\n" * 2000 +
                    "redis.register_function('big', function() return 'big' end)")
    r.function_delete("gone")
    r.function_load("#!lua name=keep\nredis.register_function('keep', function() return 'v2' end)",
                    replace=True)
    payload = r.function_dump()
    r.function_flush()
    r.function_restore(payload)
    r.fcall("keep", 0)
    srv.stop()
    check_aof(directory)
    oracle = redis_server(directory, str(tmp_path / "oracle-log"))
    with oracle.connect() as c:
        assert c.call("FCALL", "keep", "0").value == b"v2"
        assert c.call("FCALL", "big", "0").value == b"big"
    oracle.stop()
    srv = start_aof_server(blinkdb_binary, directory)
    r = redis.Redis(port=srv.port)
    assert r.fcall("keep", 0) == b"v2"
    assert r.fcall("big", 0) == b"big"
    with pytest.raises(redis.exceptions.ResponseError, match="Function not found"):
        r.fcall("gone", 0)
    # A rewrite keeps the libraries (FUNCTION LOAD records at the base's head).
    r.bgrewriteaof()
    deadline = time.monotonic() + 20
    while r.info("persistence")["aof_rewrite_in_progress"] and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    srv.stop()
    check_aof(directory)
    srv = start_aof_server(blinkdb_binary, directory)
    r = redis.Redis(port=srv.port)
    with srv.connect() as c:
        names = sorted(x[1][1][1] for x in c.call("FUNCTION", "LIST").value)
    assert names == [b"big", b"keep"]
    assert r.fcall("keep", 0) == b"v2"
    assert r.fcall("big", 0) == b"big"
    srv.stop()
    oracle = redis_server(directory, str(tmp_path / "oracle-log2"))
    with oracle.connect() as c:
        assert c.call("FCALL", "keep", "0").value == b"v2"
    oracle.stop()


def test_monitor_and_commandstats(blinkdb):
    r = redis.Redis(port=blinkdb.port)
    r.function_load("#!lua name=m\nredis.register_function('m', function(k) "
                    "return redis.call('incr', k[1]) end)")
    r.config_resetstat()
    assert r.fcall("m", 1, "n") == 1
    stats = r.info("commandstats")
    assert stats["cmdstat_fcall"]["calls"] == 1
    assert stats["cmdstat_incr"]["calls"] == 1
    assert "cmdstat_function|load" not in stats
