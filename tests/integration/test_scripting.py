"""Lua scripting: EVAL/EVALSHA/_RO and SCRIPT with Redis 7.0's replies (compared
with the oracle redis-server), redis-py's Script and Lock, atomicity across
connection threads, BUSY and SCRIPT KILL, memory limit, and the AOF."""

import hashlib
import threading
import time

import pytest

from aof_helpers import incr_files, redis_server, start_aof_server
from test_persistence_redis_interop import check_aof

redis = pytest.importorskip("redis")

# Scripts whose replies (or errors) must be byte-for-byte Redis's.
SCRIPTS = [
    ("return {1,2,3,'ciao',{1,2}}", []),
    ("return redis.call('set',KEYS[1],ARGV[1])", ["k", "v"]),
    ("return redis.call('get',KEYS[1])", ["k"]),
    ("return redis.call('incr',KEYS[1])", ["k"]),
    ("return redis.pcall('incr',KEYS[1])", ["k"]),
    ("return a", []),
    ("a = 1", []),
    ("return redis.call('nosuch')", []),
    ("return redis.call('set','x')", []),
    ("return redis.call()", []),
    ("return redis.call({})", []),
    ("return redis.call('multi')", []),
    ("retur 1", []),
    ("return 3.99", []),
    ("return -3.99", []),
    ("return {1,2,nil,4}", []),
    ("return {true,false,nil}", []),
    ("return true", []),
    ("return false", []),
    ("return nil", []),
    ("return {err='My Error'}", []),
    ("return {ok='FINE'}", []),
    ("return redis.error_reply('CODE some text')", []),
    ("return redis.status_reply('GOOD')", []),
    ("return redis.sha1hex('Pizza & Mandolino')", []),
    ("return {double=3.5}", []),
    ("return {big_number='123456789012345678901234567890'}", []),
    # A verbatim string's fields are read from its table (reading "string" from the format
    # crashed the server).
    ("return {verbatim_string={format='txt', string='Hello'}}", []),
    ("return {verbatim_string={format='markdown', string='x'}}", []),
    ("return {verbatim_string={format='t', string='x'}}", []),
    ("return {verbatim_string={string='x'}}", []),
    ("return {verbatim_string={format='txt'}}", []),
    ("return {verbatim_string={format='txt', string={1}}}", []),
    ("return {verbatim_string='x'}", []),
    ("redis.setresp(3); return {map={a=1}}", []),
    ("redis.setresp(3); return {set={a=true}}", []),
    ("redis.setresp(3); return redis.call('get','nokey')", []),
    ("redis.setresp(3); return type(redis.call('get','nokey'))", []),
    ("return type(redis.call('get','nokey'))", []),
    ("return redis.setresp(4)", []),
    ("return redis.log()", []),
    ("error('boom')", []),
    ("error({err='CUSTOM failure'})", []),
    ("return pcall(redis.call, 'nosuch')", []),
    ("return {pcall(function() error({err='X y'}) end)}", []),
    ("return redis.call('echo', 0.1)", []),
    ("return redis.call('echo', 1e20)", []),
    ("return redis.call('echo', 2^62)", []),
    ("return redis.call('echo', -0.0)", []),
    ("return redis.call('echo', 99999999999999999)", []),
    ("return {redis.call('echo', -12345), redis.call('echo', 7.0)}", []),
    ("return print", []),
    ("return os", []),
    ("setmetatable(_G, {})", []),
    ("redis.call = function() return 1 end", []),
    ("getmetatable('').__index = function() return 1 end", []),
    ("return loadstring(string.dump(function() return 1 end))()", []),
    ("return redis.REDIS_VERSION", []),
    ("return cjson.encode({a='x/y', b={1,2,{c=true}}})", []),
    ("return cjson.decode('[1,2,\"x\"]')", []),
    ("return cjson.decode('bad')", []),
    ("return bit.tohex(65535, -2147483648)", []),
    ("return {bit.band(7,3), bit.bor(1,2,4), bit.lshift(1,31), bit.bnot(0)}", []),
    ("local e = cmsgpack.pack({1,'a',{x=1}}, -1099511627776, 0.1) "
     "local h = '' for i=1,#e do h = h .. string.format('%02x', string.byte(e,i)) end "
     "return h", []),
    ("local t = cmsgpack.unpack(cmsgpack.pack({1,2,'abc'})) return t", []),
    ("#!lua flags=no-writes\nreturn redis.call('set','a','b')", []),
    ("#!lua flags=bad\nreturn 1", []),
    ("#!lua flags=\nreturn 1", []),
    ("local m = {} for i = 1, 100000 do m[tostring(i)] = i end "
     "return #cmsgpack.pack(m)", []),
    ("local a = {} for i = 1, 7999 do a[i] = 1 end "
     "return redis.call('lpush', KEYS[1], unpack(a))", ["biglist"]),
    ("local t = {}; for i = 1, 100 do t[i] = i end return t", []),
]


def raw(conn, *args):
    return conn.call(*args).raw


@pytest.mark.parametrize("resp", [2, 3])
def test_replies_match_redis(blinkdb, oracle, resp):
    with blinkdb.connect() as b, oracle.connect() as o:
        if resp == 3:
            b.call("HELLO", "3")
            o.call("HELLO", "3")
        for body, rest in SCRIPTS:
            keys = [a for a in rest[:1]]
            args = ["EVAL", body, str(len(keys)), *rest]
            assert raw(b, *args) == raw(o, *args), body


BAD_INPUT = [
    ["EVAL", "return 1", "5"],
    ["EVAL", "return 1", "-1"],
    ["EVAL", "return 1", "x"],
    ["EVAL", "return 1", "99999999999999999999999"],
    ["EVAL", "return 1"],
    ["EVALSHA", "a" * 40, "0"],
    ["EVALSHA", "abc", "0"],
    ["EVALSHA", "a" * 40, "7"],
    ["EVAL_RO", "return redis.call('set','a','b')", "0"],
    ["EVAL_RO", "#!lua\nreturn 1", "0"],
    ["SCRIPT", "LOAD"],
    ["SCRIPT", "FOO"],
    ["SCRIPT", "EXISTS"],
    ["SCRIPT", "FLUSH", "BAD"],
    ["SCRIPT", "KILL"],
    ["SCRIPT", "LOAD", "return 1"],
    ["SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "ffff"],
    ["EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"],
    ["SCRIPT", "FLUSH", "ASYNC"],
    ["SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"],
    # Lua 5.1.5's own unpack would overflow its stack check and crash.
    ["EVAL", "return {unpack({1,2,3}, -2, 2147483647)}", "0"],
    ["EVAL", "return {unpack({1,2,3}, -2147483648, -2)}", "0"],
    ["EVAL", "return {unpack({1,2,3}, -1, -2)}", "0"],
    ["EVAL", "local a = {} for i=1,7999 do a[i] = 1 end return #{unpack(a)}", "0"],
]


def test_bad_input_and_script_command_match_redis(blinkdb, oracle):
    with blinkdb.connect() as b, oracle.connect() as o:
        for args in BAD_INPUT:
            assert raw(b, *args) == raw(o, *args), args


# Each pair: a script that changes KEYS and ARGV, then one that looks at
# them. The second must see only its own keys and arguments, as with Redis.
KEYS_ARGV_CHANGES = [
    ("KEYS.x = 1; ARGV[5] = 'e'; return 1", ["k1", "k2", "a1"]),
    ("setmetatable(KEYS, {__index = function() return 'meta' end}); return 1", ["k1", "a1"]),
    ("KEYS[1] = nil; ARGV[1] = 7; return 1", ["k1", "a1"]),
    ("table.insert(KEYS, 'more'); KEYS[2.5] = 'half'; return 1", ["k1", "a1"]),
    ("KEYS[1] = nil; KEYS[2] = nil; return 1", ["k1", "a1"]),
]
LOOK = ("return {#KEYS, #ARGV, tostring(KEYS.x), tostring(KEYS[3]), tostring(ARGV[5]),"
        " tostring(getmetatable(KEYS)), tostring(KEYS[2.5]), KEYS[1] or 'nil',"
        " KEYS[2] or 'nil', ARGV[1] or 'nil'}")


def test_keys_and_argv_start_fresh_after_a_script_changed_them(blinkdb, oracle):
    with blinkdb.connect() as b, oracle.connect() as o:
        for change, rest in KEYS_ARGV_CHANGES:
            for conn in (b, o):
                raw(conn, "EVAL", change, "1", *rest)
            for numkeys, look in [("2", ["p", "q", "r"]), ("1", ["p"]), ("0", [])]:
                args = ["EVAL", LOOK, numkeys, *look]
                assert raw(b, *args) == raw(o, *args), (change, numkeys)


def test_redis_py_register_script_and_lock(blinkdb):
    r = redis.Redis(port=blinkdb.port)
    incr_by = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    assert incr_by(keys=["n"], args=[5]) == 5  # EVALSHA fails with NOSCRIPT, then EVAL
    r.script_flush()
    assert incr_by(keys=["n"], args=[2]) == 7
    assert r.script_exists(incr_by.sha) == [True]

    lock = r.lock("resource", timeout=10)
    assert lock.acquire(blocking=False)
    assert not r.lock("resource").acquire(blocking=False)
    assert lock.extend(5)
    assert lock.owned()
    lock.release()
    assert r.get("resource") is None
    with pytest.raises(redis.exceptions.LockError):
        lock.release()


def test_scripts_are_atomic_across_connection_threads(server_factory):
    srv = server_factory("--io-threads", "2")
    script = ("local v = tonumber(redis.call('get', KEYS[1]) or '0') "
              "for i = 1, 200 do redis.call('set', KEYS[2], i) end "
              "redis.call('set', KEYS[1], v + 1) return v")
    stop = time.monotonic() + 3
    seen = []

    def writer():
        r = redis.Redis(port=srv.port)
        s = r.register_script(script)
        while time.monotonic() < stop:
            s(keys=["counter", "scratch"])

    def reader():
        r = redis.Redis(port=srv.port)
        while time.monotonic() < stop:
            # The scratch key is always 200 between scripts, never midway.
            v = r.get("scratch")
            seen.append(v)

    threads = [threading.Thread(target=writer) for _ in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r = redis.Redis(port=srv.port)
    assert set(seen) <= {None, b"200"}
    assert int(r.get("counter")) > 0


def test_busy_script_and_script_kill(server_factory):
    srv = server_factory("--busy-reply-threshold", "200")
    r = redis.Redis(port=srv.port)
    result = {}

    def run(body):
        try:
            result["reply"] = redis.Redis(port=srv.port).eval(body, 0)
        except redis.exceptions.ResponseError as e:
            result["error"] = str(e)
        except redis.exceptions.ConnectionError as e:  # SHUTDOWN NOSAVE
            result["closed"] = str(e)

    t = threading.Thread(target=run, args=("while true do end",))
    t.start()
    time.sleep(0.6)
    with pytest.raises(redis.exceptions.ResponseError,
                       match="BUSY Redis is busy running a script"):
        r.get("x")
    assert r.script_kill()
    t.join(5)
    assert not t.is_alive()
    assert result["error"].startswith("Script killed by user with SCRIPT KILL...")
    assert r.ping()
    with pytest.raises(redis.exceptions.ResponseError, match="NOTBUSY"):
        r.script_kill()

    # A script that wrote can't be killed; SHUTDOWN NOSAVE is the way out.
    result.clear()
    t = threading.Thread(target=run, args=("redis.call('set','w','1') while true do end",))
    t.start()
    time.sleep(0.6)
    with pytest.raises(redis.exceptions.ResponseError, match="UNKILLABLE"):
        r.script_kill()
    with pytest.raises(redis.exceptions.ResponseError, match="BUSY"):
        r.shutdown()  # without NOSAVE
    try:
        r.shutdown(nosave=True)
    except redis.exceptions.ConnectionError:
        pass
    srv.proc.wait(10)
    t.join(5)


def test_killed_busy_script_counts_its_whole_run(blinkdb, oracle):
    """A script past busy-reply-threshold, then killed: INFO commandstats counts one failed
    EVAL with its whole time and the slow log has it, as in Redis (whose call() returns
    only at the script's end; BlinkDB's pauses the script to serve BUSY replies)."""
    for srv in (blinkdb, oracle):
        r = redis.Redis(port=srv.port)
        r.config_set("busy-reply-threshold", 100)
        r.config_resetstat()
        r.slowlog_reset()
        errors = []

        def run():
            try:
                redis.Redis(port=srv.port).eval("while true do end", 0)
            except redis.exceptions.ResponseError as e:
                errors.append(str(e))

        t = threading.Thread(target=run)
        t.start()
        deadline = time.monotonic() + 10
        busy_since = None
        # BUSY for at least 0.4 s, so the run is well past the pause at 0.1 s.
        while busy_since is None or time.monotonic() - busy_since < 0.4:
            assert time.monotonic() < deadline
            try:
                r.ping()
            except redis.exceptions.ResponseError as e:
                assert str(e).startswith("BUSY")
                busy_since = busy_since or time.monotonic()
        assert r.script_kill()
        t.join(5)
        assert errors and errors[0].startswith("Script killed by user with SCRIPT KILL")
        stats = r.info("commandstats")["cmdstat_eval"]
        assert (stats["calls"], stats["failed_calls"], stats["rejected_calls"]) == (1, 1, 0), srv
        assert stats["usec"] >= 450_000, (srv, stats)
        entry = r.slowlog_get(1)[0]
        assert entry["command"].lower().startswith(b"eval"), srv
        assert entry["duration"] >= 450_000, (srv, entry)


# Loops SCRIPT KILL must stop although they catch errors (Redis's unit/scripting
# "Timedout script does not cause a false dead client" family): their periodic checks
# can all land in the sandbox's Lua code, and the last one spends its time in commands
# rather than in Lua instructions.
KILL_RESISTANT_LOOPS = [
    "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end",
    "local f = function() while 1 do redis.pcall('ping') end end while 1 do pcall(f) end",
    "local f = function() while 1 do redis.call('keys','*nomatch*') end end "
    "while 1 do pcall(f) end",
]


@pytest.mark.parametrize("io_threads", ["1", "2"])
def test_script_kill_stops_loops_that_catch_errors(server_factory, io_threads):
    srv = server_factory("--io-threads", io_threads)
    r = redis.Redis(port=srv.port, socket_timeout=2)
    for i in range(0, 50000, 1000):
        r.mset({f"k{j}": j for j in range(i, i + 1000)})
    assert r.config_set("lua-time-limit", 10)
    for body in KILL_RESISTANT_LOOPS:
        result = {}

        def run(body=body, result=result):
            try:
                result["reply"] = redis.Redis(port=srv.port).eval(body, 0)
            except redis.exceptions.ResponseError as e:
                result["error"] = str(e)

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.3)
        third = redis.Redis(port=srv.port, socket_timeout=2)
        with pytest.raises(redis.exceptions.ResponseError, match="BUSY"):
            third.ping()
        assert redis.Redis(port=srv.port, socket_timeout=2).script_kill()
        t.join(5)
        assert not t.is_alive()
        sha = hashlib.sha1(body.encode()).hexdigest()
        # Redis 7.0.15's reply, byte for byte.
        assert result == {
            "error": f"Script killed by user with SCRIPT KILL... script: {sha}, "
                     "on @user_script:1."
        }
        assert third.ping()
        assert r.ping()


def test_exec_during_a_busy_script_is_aborted(server_factory):
    # Redis's multi.tcl 'EXEC and script timeout': a command queued while a script is busy
    # gets BUSY and dooms the transaction; EXEC then answers EXECABORT ... BUSY and leaves
    # MULTI, and nothing of the transaction runs.
    srv = server_factory("--busy-reply-threshold", "10")
    r = redis.Redis(port=srv.port)
    r.set("xx", 1)
    tx = srv.connect()
    assert raw(tx, "MULTI") == b"+OK\r\n"
    assert raw(tx, "INCR", "xx") == b"+QUEUED\r\n"
    t = threading.Thread(target=lambda: _eval_until_killed(srv.port))
    t.start()
    time.sleep(0.3)
    assert raw(tx, "INCR", "xx").startswith(b"-BUSY")
    assert raw(tx, "EXEC").startswith(b"-EXECABORT Transaction discarded because of: BUSY")
    assert r.script_kill()
    t.join(5)
    assert r.get("xx") == b"1"
    assert raw(tx, "PING", "asdf") == b"$4\r\nasdf\r\n"
    tx.close()


def _eval_until_killed(port):
    with pytest.raises(redis.exceptions.ResponseError, match="Script killed"):
        redis.Redis(port=port).eval("while true do end", 0)


def test_pcall_cannot_swallow_script_kill(server_factory):
    srv = server_factory("--busy-reply-threshold", "100")
    out = {}

    def run():
        try:
            redis.Redis(port=srv.port).eval(
                "while true do pcall(function() while true do end end) end", 0)
        except redis.exceptions.ResponseError as e:
            out["error"] = str(e)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.4)
    assert redis.Redis(port=srv.port).script_kill()
    t.join(5)
    assert "Script killed by user" in out["error"]


def test_unbounded_allocation_gets_an_error(server_factory):
    srv = server_factory("--lua-memory-limit", "64mb")
    r = redis.Redis(port=srv.port)
    with pytest.raises(redis.exceptions.ResponseError, match="not enough memory"):
        r.eval("local s = 'x' while true do s = s .. s end", 0)
    with pytest.raises(redis.exceptions.ResponseError, match="not enough memory"):
        r.eval("local t = {} local i = 0 while true do i = i + 1 t[i] = {i} end", 0)
    assert r.eval("return 1", 0) == 1
    assert srv.alive()


def test_error_halfway_keeps_earlier_writes(blinkdb):
    r = redis.Redis(port=blinkdb.port)
    with pytest.raises(redis.exceptions.ResponseError):
        r.eval("redis.call('set','a','1') redis.call('incr','nokey', 'x') "
               "redis.call('set','b','2')", 0)
    assert r.get("a") == b"1" and r.get("b") is None


def test_select_inside_script_leaves_caller_db(blinkdb):
    r = redis.Redis(port=blinkdb.port)
    assert r.eval("redis.call('select', 5) redis.call('set','x','5') return 1", 0) == 1
    assert r.get("x") is None
    assert redis.Redis(port=blinkdb.port, db=5).get("x") == b"5"


def test_eval_inside_multi(blinkdb):
    r = redis.Redis(port=blinkdb.port)
    with r.pipeline() as p:
        p.set("m", 1).eval("return redis.call('incr', KEYS[1])", 1, "m")
        assert p.execute() == [True, 2]


def test_aof_records_script_effects_in_multi_exec(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "aof")
    srv = start_aof_server(blinkdb_binary, directory)
    r = redis.Redis(port=srv.port)
    r.set("before", 1)
    r.eval("redis.call('set','s1','1') redis.call('incr','s2') "
           "redis.call('select', 2) redis.call('set','s3','x') return 1", 0)
    r.eval("return redis.call('get', 'before')", 0)  # no write: nothing logged
    srv.stop()
    check_aof(directory)
    data = open(incr_files(directory)[-1], "rb").read()
    assert data.count(b"*1\r\n$5\r\nMULTI\r\n") == 1
    multi, exec_ = data.index(b"*1\r\n$5\r\nMULTI\r\n"), data.index(b"*1\r\n$4\r\nEXEC\r\n")
    assert multi < data.index(b"s1") < data.index(b"s2") < data.index(b"s3") < exec_
    oracle = redis_server(directory, str(tmp_path / "oracle-log"))
    with oracle.connect() as c:
        assert c.call("MGET", "before", "s1", "s2").value == [(b"$", b"1")] * 3
    oracle.stop()
    srv = start_aof_server(blinkdb_binary, directory)
    r = redis.Redis(port=srv.port, db=2)
    assert r.get("s3") == b"x"
    srv.stop()


# The `struct` library (pack, unpack, size): values, endianness, alignment, sizes past 8
# bytes, and its error texts, as Redis's bundled lua_struct.c gives them.
STRUCT_SCRIPTS = [
    "return struct.pack('>I2', 258)", "return struct.pack('<i4hbB', -2, -3, 65, 200)",
    "return struct.pack('!4 b i', 1, 2)", "return struct.pack('c3', 'abcdef')",
    "return struct.pack('c0s', 'xyz', 'q')", "return struct.pack('d', 1.5)",
    "return struct.pack('>f', 1.5)", "return struct.pack('i9', -1)", "return struct.pack('I16', 1)",
    "return {struct.unpack('<i4hbB', struct.pack('<i4hbB', -2, -3, 65, 200))}",
    "return {struct.unpack('b c0', struct.pack('b c0', 3, 'abc'))}",
    "return {struct.unpack('s', 'ab\\0cd')}", "return {struct.unpack('s', 'abcd')}",
    "return {struct.unpack('i', 'ab')}", "return {struct.unpack('i', 'abcdabcd', 5)}",
    "return {struct.unpack('i', 'abcd', 0)}", "return struct.size('!8 b d i')",
    "return struct.size('s')", "return struct.size('c0')", "return struct.size('bz')",
    "return struct.pack('z', 1)", "return struct.pack('!3', 1)", "return struct.pack('i33', 1)",
    "return struct.pack('i', 'x')", "return struct.pack('i')", "return struct.pack('ii', 1)",
    "return struct.pack('iii', 1)", "return struct.pack('c5', 'ab')",
    "return {struct.unpack('>d', struct.pack('>d', -0.25))}",
    "return {struct.unpack('i16', struct.pack('i16', -5))}",
    "return {struct.unpack('l', struct.pack('l', 123456789012))}",
    "return {struct.unpack('c0', 'abc')}", "return struct.pack('b', '12')",
]


def test_struct_library_matches_redis(blinkdb, oracle):
    with blinkdb.connect() as ours, oracle.connect() as theirs:
        for script in STRUCT_SCRIPTS:
            got, want = ours.call("EVAL", script, "0").raw, theirs.call("EVAL", script, "0").raw
            assert got == want, f"{script}: {got!r} != redis {want!r}"


def test_set_repl_keeps_writes_out_of_the_aof(tmp_path, blinkdb_binary, oracle):
    """redis.set_repl: REPL_NONE/REPL_REPLICA writes apply but stay out of the AOF (a restart
    does not bring them back); its errors are Redis's."""
    script = ("redis.call('set','a','1'); redis.set_repl(redis.REPL_NONE); "
              "redis.call('set','b','2'); redis.set_repl(redis.REPL_AOF); "
              "redis.call('set','c','3'); redis.set_repl(redis.REPL_REPLICA); "
              "redis.call('set','d','4'); redis.set_repl(redis.REPL_ALL); redis.call('set','e','5')")
    directory = str(tmp_path / "data")
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as c, oracle.connect() as o:
            for s in ("redis.set_repl(12345)", "redis.set_repl()", "redis.set_repl(1, 2)",
                      "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, "
                      "redis.REPL_REPLICA, redis.REPL_ALL}"):
                assert c.call("EVAL", s, "0").raw == o.call("EVAL", s, "0").raw, s
            c.call("EVAL", script, "0")
            assert [v for _, v in c.call("MGET", "a", "b", "c", "d", "e").value] == \
                [b"1", b"2", b"3", b"4", b"5"]
    finally:
        srv.stop()
    check_aof(directory)
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as c:
            assert [v for _, v in c.call("MGET", "a", "b", "c", "d", "e").value] == \
                [b"1", None, b"3", None, b"5"]
    finally:
        srv.stop()


def test_info_memory_scripting_fields(blinkdb, oracle):
    """INFO memory names every scripting field Redis 7.0 names; counts follow the cache."""
    fields = ["used_memory_lua", "used_memory_vm_eval", "used_memory_scripts_eval",
              "number_of_cached_scripts", "number_of_functions", "used_memory_vm_functions",
              "used_memory_vm_total", "used_memory_functions", "used_memory_scripts"]
    lib = "#!lua name=infolib\nredis.register_function('f1', function() return 1 end)"
    infos = []
    for srv in (blinkdb, oracle):
        r = redis.Redis(port=srv.port)
        r.script_load("return 1")
        r.script_load("return 2")
        r.function_load(lib)
        infos.append(r.info("memory"))
    ours, theirs = infos
    assert set(fields) <= set(theirs) and set(fields) <= set(ours)
    assert ours["number_of_cached_scripts"] == theirs["number_of_cached_scripts"] == 2
    assert ours["number_of_functions"] == theirs["number_of_functions"] == 1
    assert ours["used_memory_lua"] > 0 and ours["used_memory_vm_functions"] > 0
    assert ours["used_memory_vm_total"] == ours["used_memory_lua"] + ours["used_memory_vm_functions"]


@pytest.mark.parametrize("depth", [128, 129, 1000, 1001, 3000])
def test_cjson_decode_nesting_as_redis(blinkdb, oracle, depth):
    """lua_cjson decodes up to decode_max_depth (1000) levels; serde_json alone stopped at
    128. Past the limit the error names the depth and the character, as Redis's."""
    for text in ["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth,
                 '["[{",' * depth + '"x"' + "]" * depth]:
        script = "return #cjson.encode(cjson.decode(ARGV[1]))"
        with blinkdb.connect() as b, oracle.connect() as o:
            ours, theirs = raw(b, "EVAL", script, "0", text), raw(o, "EVAL", script, "0", text)
        # The error names the script by its sha and the call site, the same in both.
        assert ours == theirs, (ours[:200], theirs[:200])


def errorstats(conn):
    text = conn.call("INFO", "errorstats").value.decode()
    return [line for line in text.splitlines() if line.startswith("errorstat_")]


def test_oom_refused_inside_a_script_counts_once(blinkdb, oracle):
    """Redis's "Consistent eval error reporting": a command a script runs that maxmemory
    refuses counts one OOM error and one rejected call of the command, whether the
    script raises it (redis.call), catches it (redis.pcall) or returns it; the EVAL
    fails (failed_calls) when its reply is that error."""
    cases = [
        "return redis.call('set','x','y')",
        "local t = redis.pcall('set','x','y') if t['err'] then return 1 end return 0",
        "return redis.pcall('set','x','y')",
    ]
    with blinkdb.connect() as b, oracle.connect() as o:
        for script in cases:
            seen = []
            for c in (b, o):
                assert raw(c, "CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
                raw(c, "CONFIG", "RESETSTAT")
                reply = raw(c, "EVAL", script, "1", "x")
                stats = errorstats(c)
                info = c.call("INFO", "stats").value.decode()
                total = [ln for ln in info.splitlines() if ln.startswith("total_error_replies")]
                # calls, rejected_calls and failed_calls of SET and EVAL (not the times).
                cmds = c.call("INFO", "commandstats").value.decode()
                calls = sorted(
                    (ln.split(":")[0], [f for f in ln.split(",") if "calls=" in f])
                    for ln in cmds.splitlines()
                    if ln.startswith(("cmdstat_set:", "cmdstat_eval:")))
                assert raw(c, "CONFIG", "SET", "maxmemory", "0") == b"+OK\r\n"
                seen.append((reply, stats, total, calls))
            assert seen[0] == seen[1], script
            assert seen[0][1] == ["errorstat_OOM:count=1"], script


def test_shutdown_nosave_during_an_unkillable_script_is_prompt(blinkdb_binary, tmp_path):
    """SHUTDOWN NOSAVE while a script that wrote is past busy-reply-threshold: redis-server
    exits at once; BlinkDB waited 2 s for the script's connection to finish its batch."""
    from server import ORACLE_BIN, ServerProcess
    for binary in (blinkdb_binary, ORACLE_BIN):
        srv = ServerProcess(binary, str(tmp_path / binary.replace("/", "_")),
                            ["--busy-reply-threshold", "100"])
        try:
            runner = srv.connect()
            runner.send("EVAL", "redis.call('set','x','y') while true do end", "0")
            with srv.connect() as c:
                deadline = time.monotonic() + 10
                while not raw(c, "PING").startswith(b"-BUSY"):
                    assert time.monotonic() < deadline, "the script never got busy"
                    time.sleep(0.01)
                assert raw(c, "SCRIPT", "KILL").startswith(b"-UNKILLABLE")
                start = time.monotonic()
                try:
                    raw(c, "SHUTDOWN", "NOSAVE")
                except Exception:
                    pass  # the server closes the connection as it exits
                srv.proc.wait(timeout=10)
                took = time.monotonic() - start
            runner.close()
            assert took < 1.0, f"{binary}: exited {took:.2f} s after SHUTDOWN NOSAVE"
        finally:
            srv.stop()


def test_shutdown_past_a_busy_script_is_a_failed_call_as_in_redis(blinkdb, oracle):
    # Redis's shutdownCommand refuses itself (BUSY) without NOSAVE while a script
    # is past its busy threshold: a failed call of SHUTDOWN, not a rejected one.
    stats = {}
    for name, srv in (("blinkdb", blinkdb), ("redis", oracle)):
        r = redis.Redis(port=srv.port)
        r.config_set("busy-reply-threshold", 50)
        t = threading.Thread(target=lambda: _eval_until_killed(srv.port))
        t.start()
        c = srv.connect()
        deadline = time.time() + 10
        while not raw(c, "PING").startswith(b"-BUSY"):
            assert time.time() < deadline, "the script never got busy"
        assert raw(c, "SHUTDOWN").startswith(b"-BUSY Redis is busy running a script.")
        assert raw(c, "SHUTDOWN", "SAVE").startswith(b"-BUSY")
        assert r.script_kill()
        t.join(5)
        stats[name] = r.info("commandstats")["cmdstat_shutdown"]
        c.close()
    for s in stats.values():
        s.pop("usec"), s.pop("usec_per_call")
    assert stats["blinkdb"] == stats["redis"] == {"calls": 2, "rejected_calls": 0, "failed_calls": 2}
