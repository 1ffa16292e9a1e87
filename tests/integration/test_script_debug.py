"""SCRIPT DEBUG SYNC (the Lua debugger) against redis-server 7.0.15.

redis-cli --ldb-sync-mode --eval drives a session on each server with the
same debugger commands on its stdin; the two transcripts must be equal
byte for byte (nothing is normalised: no port appears in them). Then the
command's own replies, and what BlinkDB does where it cannot do what
Redis does (YES) or where the session meets other clients.
"""

import subprocess
import time

import pytest
from resp import RespConnection
from server import require_tool

SCRIPT = b"""\
local a = {1, 2, 3}
local b = KEYS[1]
redis.debug(a, b, "x\\ny", 1.5, {k = true})
redis.call('set', b, ARGV[1])
local v = redis.call('get', b)
redis.breakpoint()
local t = {x = 1}
redis.pcall('incr', b)
redis.pcall('nosuchcmd')
redis.pcall('set', 'onlyone')
local big = string.rep("x", 300)
return redis.call('mget', b, 'missing')
"""

# Every debugger command, with good and bad arguments.
COMMANDS = [
    "s", "s", "print", "print a", "p b", "p KEYS", "p ARGV", "p nope",
    "l", "l 3 1", "l 100", "w", "b", "b 7", "b 9 10", "b foo", "b 99", "b -10", "b -5", "b",
    "c",                                   # to redis.breakpoint()'s stop
    "r incr counter", "r set", "r hgetall counter", "r nosuchcmd",
    "e a[1] + 1", "e local z = 5", "e 1 +", "e error('boom')", "e {1, 'two', {3}}",
    "e nil", "e 1e20", "e 0.1", "t", "m", "m 10", "m 0", "m -5", "m 100",
    "n", "n",                              # pcall incr on a string
    "next",                                # unknown command
    "step",                                # arity
    "s", "p big", "m 0", "p big",
    "help", "xyz", "b 0", "c",
]


def transcript(port, script_path, commands, *args):
    cli = require_tool("redis-cli")
    proc = subprocess.run(
        [cli, "-p", str(port), "--ldb-sync-mode", "--eval", str(script_path), *args],
        input=("\n".join(commands) + "\n").encode(),
        capture_output=True,
        timeout=60,
    )
    return proc.stdout + proc.stderr


@pytest.fixture
def script_file(tmp_path):
    path = tmp_path / "debug.lua"
    path.write_bytes(SCRIPT)
    return path


def test_session_transcript_matches_redis(servers, script_file):
    out = {}
    for name, srv in servers.items():
        with srv.connect() as c:
            c.call("SET", "strkey", "abc")
        out[name] = transcript(srv.port, script_file, COMMANDS, "strkey", ",", "v1", "v2")
    assert b"<endsession>" not in out["redis"]  # redis-cli consumes it
    assert b"Lua debugging session ended" in out["redis"]
    assert b"<debug> line 3:" in out["redis"], out["redis"]
    assert out["redis"].count(b"\n") > 120, out["redis"]
    assert out["blinkdb"] == out["redis"]
    # SYNC keeps the session's changes, on both.
    for srv in servers.values():
        with srv.connect() as c:
            assert c.call("GET", "counter").value == b"1"
            assert c.call("GET", "strkey").value == b"v1"


def test_abort_and_steps_through_writes(servers, tmp_path):
    path = tmp_path / "abort.lua"
    path.write_bytes(b"redis.call('set', 'ab', '1')\nlocal x = 1\nreturn x\n")
    out = {}
    for name, srv in servers.items():
        out[name] = transcript(srv.port, path, ["s", "a"])
        with srv.connect() as c:
            out[name] += c.call("GET", "ab").raw
    assert b"script aborted for user request" in out["redis"]
    assert out["blinkdb"] == out["redis"]


def test_raw_protocol_frames(servers):
    """The frames themselves: status lines in a multi-bulk per stop, the
    last one ending in <endsession>, then the reply, then the close."""
    seen = {}
    for name, srv in servers.items():
        with srv.connect() as c:
            assert c.call("SCRIPT", "DEBUG", "SYNC").value == b"OK"
            frames = [c.call("EVAL", "local x = 'a\\r\\nb'\nreturn x", "0").raw]
            frames.append(c.call("p").raw)
            c.send("c")
            frames.append(c.read_reply().raw)  # logs, <endsession>
            frames.append(c.read_reply().raw)  # the EVAL's reply
            with pytest.raises(Exception):
                c.call("PING")
            seen[name] = frames
    assert seen["blinkdb"] == seen["redis"]


def test_command_replies(servers):
    replies = {}
    for name, srv in servers.items():
        with srv.connect() as c:
            r = [
                c.call("COMMAND", "INFO", "script|debug").raw,
                c.call("COMMAND", "DOCS", "script|debug").raw,
                c.call("SCRIPT", "DEBUG", "maybe").raw,
                c.call("SCRIPT", "DEBUG").raw,
                c.call("SCRIPT", "DEBUG", "SYNC", "x").raw,
                c.pipeline([["PING"], ["SCRIPT", "DEBUG", "NO"]])[1].raw,
                c.call("MULTI").raw,
                c.call("SCRIPT", "DEBUG", "SYNC").raw,
                c.call("EXEC").raw,
                c.call("SCRIPT", "DEBUG", "SYNC").raw,
                c.call("EVALSHA", "0" * 40, "0").raw,
                c.call("EVALSHA", "0", "0").raw,
                c.call("SCRIPT", "DEBUG", "NO").raw,
                c.call("EVAL", "return 1", "0").raw,
                c.call("SCRIPT", "DEBUG", "SYNC").raw,
                c.call("SCRIPT", "DEBUG", "no").raw,
                c.call("EVAL", "return redis.breakpoint()", "0").raw,
                c.call("EVAL", "return redis.debug('x')", "0").raw,
            ]
            replies[name] = r
    assert replies["blinkdb"] == replies["redis"]


def test_yes_is_refused_naming_sync(blinkdb):
    with blinkdb.connect() as c:
        r = c.call("SCRIPT", "DEBUG", "YES")
        assert r.is_error() and b"SYNC" in r.value, r
        # Not silently in debug mode: EVAL runs as usual.
        assert c.call("EVAL", "return 7", "0").value == 7


def test_other_clients_while_stopped_and_client_gone(blinkdb):
    """While the session waits for its client, the script holds the
    keyspace: other clients get BUSY (redis-server blocks them). A client
    that goes away lets its script run to the end without stops."""
    dbg = blinkdb.connect()
    assert dbg.call("SCRIPT", "DEBUG", "SYNC").value == b"OK"
    first = dbg.call("EVAL", "redis.call('set', 'k', 'v')\nredis.breakpoint()\nreturn 1", "0")
    assert b"Stopped at 1" in first.raw
    with blinkdb.connect() as other:
        busy = other.call("GET", "k")
        assert busy.is_error() and busy.value.startswith(b"BUSY"), busy
        dbg.close()
        deadline = time.monotonic() + 20
        while True:
            r = other.call("GET", "k")
            if not r.is_error():
                break
            assert time.monotonic() < deadline, r
            time.sleep(0.05)
        assert r.value == b"v"
        assert other.call("EVAL", "return 2", "0").value == 2


def test_protocol_limits_end_the_script(servers):
    """A debugger argument over 1024 bytes is a protocol error raised in
    the script, on both."""
    out = {}
    for name, srv in servers.items():
        with srv.connect() as c:
            c.call("SCRIPT", "DEBUG", "SYNC")
            c.call("EVAL", "local x = 1\nreturn x", "0")
            c.send("e", "1" * 2000)
            out[name] = [c.read_reply().raw, c.read_reply().raw]
    assert out["blinkdb"] == out["redis"]


def test_long_running_script_stops_at_timeout(servers, tmp_path):
    out = {}
    for name, srv in servers.items():
        with srv.connect() as c:
            c.call("CONFIG", "SET", "busy-reply-threshold", "200")
            c.call("SCRIPT", "DEBUG", "SYNC")
            c.call("EVAL", "local i = 0\nwhile true do\ni = i + 1\nend", "0")
            c.send("c")
            out[name] = c.read_reply().raw
            c.send("a")
            out[name] += c.read_reply().raw + c.read_reply().raw
    assert b"timeout reached, infinite loop?" in out["redis"], out["redis"]
    assert out["blinkdb"] == out["redis"]


def test_redis_suite_debugger_cases(servers):
    """unit/scripting's two debugger tests (external:skip there): commands
    with NUL bytes are unknown debugger commands, and `redis` with 100
    arguments reports the unknown command; the server goes on."""
    out = {}
    for name, srv in servers.items():
        seen = []
        with srv.connect() as c:
            c.call("SCRIPT", "DEBUG", "SYNC")
            seen.append(c.call("EVAL", "return 'hello'", "0").raw)
            for arg in (b"hello\0world", b"hello\0", b"\0hello", b"\0hello\0"):
                seen.append(c.call(arg).raw)
        with srv.connect() as c:
            c.call("SCRIPT", "DEBUG", "SYNC")
            seen.append(c.call("EVAL", "return 'hello'", "0").raw)
            seen.append(c.call("redis", *(["test"] * 100)).raw)
        with srv.connect() as c:
            seen.append(c.call("PING").raw)
        out[name] = seen
    assert b"Unknown Redis command called from script" in out["redis"][-2]
    assert out["blinkdb"] == out["redis"]


def test_eval_inside_exec_is_not_debugged(blinkdb):
    """redis-server debugs an EVAL queued in MULTI (its EXEC reply comes
    after the session's frames); BlinkDB refuses that EVAL inside EXEC, so
    that the transaction's later commands cannot run while it is stopped."""
    with blinkdb.connect() as c:
        assert c.call("SCRIPT", "DEBUG", "SYNC").value == b"OK"
        c.call("MULTI")
        c.call("EVAL", "redis.call('set', 'm', '1')\nreturn 1", "0")
        c.call("SET", "after", "1")
        r = c.call("EXEC")
        assert b"-ERR Lua debugging is not supported inside MULTI/EXEC" in r.raw, r
        assert r.raw.endswith(b"+OK\r\n"), r
        assert c.call("EXISTS", "m").value == 0
        # The mode stays: the next EVAL outside a transaction is debugged.
        assert b"Stopped at 1" in c.call("EVAL", "return 1", "0").raw


@pytest.mark.parametrize(
    "body,commands",
    [
        # Frames: trace and print inside a function, then back at top level.
        (b"local function f(x)\n  local y = x * 2\n  return y\nend\nlocal r = f(3)\nreturn r\n",
         ["s", "s", "t", "p", "s", "t", "p", "s", "s"]),
        # A shebang line, and a runtime error ending the session.
        (b"#!lua flags=no-writes\nlocal a = 1\nlocal b = nil + a\nreturn b\n",
         ["s", "l", "s"]),
    ],
)
def test_more_transcripts(servers, tmp_path, body, commands):
    path = tmp_path / "more.lua"
    path.write_bytes(body)
    out = {name: transcript(srv.port, path, commands) for name, srv in servers.items()}
    assert b"Lua debugging session ended" in out["redis"], out["redis"]
    assert out["blinkdb"] == out["redis"]
