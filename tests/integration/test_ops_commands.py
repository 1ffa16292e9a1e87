"""Issue 18's introspection and operations commands (SLOWLOG, LATENCY, OBJECT,
MONITOR, CLIENT PAUSE/REPLY/NO-EVICT, WAIT, ROLE, DEBUG, MODULE) and
`blinkdb --help`, side by side with redis-server 7.0.15 where the reply is
deterministic."""

import os
import re
import subprocess
import threading
import time

from resp import RespConnection, plain
from server import ORACLE_BIN, REPO_ROOT, ServerProcess


def py(reply):
    value = plain((reply.kind, reply.value))
    if reply.kind == b"-":
        return ("error", value.decode())
    return _decode(value)


def _decode(v):
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if isinstance(v, dict):
        return {_decode(k): _decode(x) for k, x in v.items()}
    return v


def both(blinkdb, oracle_debug, *cmds, proto=2):
    """Runs the same commands on both servers; returns the two reply lists."""
    out = []
    for srv in (blinkdb, oracle_debug):
        with srv.connect() as c:
            if proto == 3:
                c.call("HELLO", "3")
            out.append([py(c.call(*cmd)) for cmd in cmds])
    return out


def start_pair(server_factory, tmp_path, *extra):
    ours = server_factory("--enable-debug-command", "yes", *extra)
    redis = ServerProcess(ORACLE_BIN, str(tmp_path / "oracle"),
                          ["--enable-debug-command", "yes", *extra])
    return ours, redis


DETERMINISTIC = [
    ("ROLE",), ("WAIT", "0", "0"), ("WAIT", "x", "0"), ("WAIT", "0", "-1"),
    ("WAIT", "0", "x"), ("SET", "i", "123"), ("OBJECT", "ENCODING", "i"),
    ("OBJECT", "REFCOUNT", "i"), ("OBJECT", "FREQ", "i"), ("OBJECT", "ENCODING", "nokey"),
    ("OBJECT", "REFCOUNT", "nokey"), ("OBJECT", "FREQ", "nokey"), ("SET", "big", "12345"),
    ("OBJECT", "REFCOUNT", "big"), ("SET", "e", "hello"), ("OBJECT", "ENCODING", "e"),
    ("SET", "r", "x" * 45), ("OBJECT", "ENCODING", "r"), ("SET", "m", "-0"),
    ("OBJECT", "ENCODING", "m"), ("OBJECT", "NOPE"), ("OBJECT",),
    ("SLOWLOG", "GET", "-2"), ("SLOWLOG", "GET", "x"), ("SLOWLOG", "GET", "1", "2"),
    ("SLOWLOG", "LEN", "x"), ("SLOWLOG", "HELP"), ("SLOWLOG", "RESET"), ("SLOWLOG", "LEN"),
    ("LATENCY", "RESET"), ("LATENCY", "LATEST"), ("LATENCY", "HISTORY", "command"),
    ("LATENCY", "GRAPH", "nope"), ("LATENCY", "HELP"), ("LATENCY", "HELP", "x"),
    ("LATENCY", "RESET", "nope"),
    ("CLIENT", "PAUSE", "x"), ("CLIENT", "PAUSE", "-1"), ("CLIENT", "PAUSE", "10", "bad"),
    ("CLIENT", "PAUSE", "10", "WRITE", "x"), ("CLIENT", "UNPAUSE"),
    ("CLIENT", "NO-EVICT", "maybe"), ("CLIENT", "NO-EVICT", "on"), ("CLIENT", "REPLY", "bad"),
    ("CLIENT", "KILL", "TYPE", "wrong"), ("CLIENT", "KILL", "USER", "nobody"),
    ("DEBUG", "nope"), ("DEBUG", "SLEEP", "0"), ("DEBUG", "OBJECT", "nokey"),
    ("DEBUG", "SET-ACTIVE-EXPIRE", "1"), ("DEBUG",),
    ("MODULE", "nope"), ("MONITOR", "x"),
    ("MULTI",), ("MONITOR",), ("WAIT", "1", "0"), ("EXEC",),
]


def test_replies_match_redis(server_factory, tmp_path):
    ours, redis = start_pair(server_factory, tmp_path)
    try:
        for proto in (2, 3):
            a, b = both(ours, redis, *DETERMINISTIC, proto=proto)
            for cmd, x, y in zip(DETERMINISTIC, a, b):
                assert x == y, (proto, cmd)
    finally:
        redis.stop()


def test_object_help_lists_what_is_served(blinkdb):
    with blinkdb.connect() as c:
        lines = py(c.call("OBJECT", "HELP"))
        assert lines[0].startswith("OBJECT <subcommand>")
        assert "ENCODING <key>" in lines and "REFCOUNT <key>" in lines
        assert lines[-2:] == ["HELP", "    Prints this help."]
        assert "IDLETIME <key>" in lines and "FREQ <key>" in lines
        assert py(c.call("OBJECT", "IDLETIME", "k")) is None  # test_access_clock.py has more
        c.call("BF.ADD", "bf", "x")
        assert py(c.call("OBJECT", "ENCODING", "bf")) == "raw"  # as RedisBloom's type
        assert py(c.call("OBJECT", "REFCOUNT", "bf")) == 1


def slowlog_args(conn):
    return [e[3] for e in py(conn.call("SLOWLOG", "GET", "-1"))]


def test_slowlog_entries_match_redis(server_factory, tmp_path):
    ours, redis = start_pair(server_factory, tmp_path)
    script = [
        ("CONFIG", "SET", "slowlog-log-slower-than", "0"),
        ("SLOWLOG", "RESET"),
        ("CLIENT", "SETNAME", "slowpoke"),
        ("MSET", *[str(i) for i in range(40)]),
        ("SET", "k", "A" * 129),
        ("AUTH", "x"),
        ("AUTH", "u", "p"),
        ("HELLO", "2", "AUTH", "default", "wrong"),
        ("CONFIG", "SET", "requirepass", "s3cret", "maxclients", "100"),
        ("CONFIG", "SET", "requirepass", ""),
        ("MULTI",), ("SET", "a", "1"), ("EXEC",),
        ("CONFIG", "SET", "slowlog-log-slower-than", "-1"),
    ]
    try:
        logs = []
        for srv in (ours, redis):
            with srv.connect() as c:
                for cmd in script:
                    c.call(*cmd)
                entries = py(c.call("SLOWLOG", "GET", "-1"))
                # Named after it ran: all but SLOWLOG RESET, which came before SETNAME.
                assert [e[5] for e in entries][-2:] == ["slowpoke", ""]
                assert all(re.fullmatch(r"127\.0\.0\.1:\d+", e[4]) for e in entries)
                ids = [e[0] for e in entries]
                assert ids == sorted(ids, reverse=True)
                logs.append([e[3] for e in entries])
                assert py(c.call("SLOWLOG", "LEN")) == len(entries)
                assert len(py(c.call("SLOWLOG", "GET"))) == min(10, len(entries))
                assert len(py(c.call("SLOWLOG", "GET", "0"))) == 0
        assert logs[0] == logs[1]
        mset = [e for e in logs[0] if e[0] == "MSET"][0]
        assert len(mset) == 32 and mset[-1] == "... (10 more arguments)"
        assert ["SET", "k", "A" * 128 + "... (1 more bytes)"] in logs[0]
        assert ["AUTH", "(redacted)", "(redacted)"] in logs[0]
        assert ["CONFIG", "SET", "requirepass", "(redacted)", "maxclients", "100"] in logs[0]
        assert ["EXEC"] not in logs[0]  # EXEC is not logged, the commands it ran are
    finally:
        redis.stop()


def test_slowlog_threshold_and_max_len(server_factory):
    srv = server_factory("--enable-debug-command", "yes", "--slowlog-log-slower-than", "100000")
    with srv.connect() as c:
        c.call("PING")
        assert py(c.call("SLOWLOG", "LEN")) == 0
        c.call("DEBUG", "SLEEP", "0.15")
        entry = py(c.call("SLOWLOG", "GET"))[0]
        assert entry[3] == ["DEBUG", "SLEEP", "0.15"] and entry[2] >= 150000
        assert abs(entry[1] - time.time()) < 5
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "3")
        for i in range(10):
            c.call("PING", str(i))
        assert py(c.call("SLOWLOG", "LEN")) == 3
        c.call("CONFIG", "SET", "slowlog-max-len", "0")
        c.call("SLOWLOG", "RESET")
        c.call("PING")
        assert py(c.call("SLOWLOG", "LEN")) == 0


def test_latency_monitor(server_factory):
    srv = server_factory("--enable-debug-command", "yes")
    with srv.connect() as c:
        c.call("DEBUG", "SLEEP", "0.05")
        assert py(c.call("LATENCY", "LATEST")) == []  # the monitor is off by default
        assert "latency-monitor-threshold" in py(c.call("LATENCY", "DOCTOR"))
        c.call("CONFIG", "SET", "latency-monitor-threshold", "20")
        c.call("DEBUG", "SLEEP", "0.05")
        c.call("PING")
        latest = py(c.call("LATENCY", "LATEST"))
        assert [e[0] for e in latest] == ["command"]
        name, when, last, worst = latest[0]
        assert 50 <= last <= 500 and worst >= last and abs(when - time.time()) < 5
        history = py(c.call("LATENCY", "HISTORY", "command"))
        assert history and history[-1][1] == last
        graph = py(c.call("LATENCY", "GRAPH", "command"))
        assert graph.startswith("command - high") and "#" in graph
        assert "command" in py(c.call("LATENCY", "DOCTOR"))
        assert py(c.call("LATENCY", "RESET", "command", "nope")) == 1
        assert py(c.call("LATENCY", "LATEST")) == []
        assert py(c.call("LATENCY", "GRAPH", "command")) == (
            "error", "ERR No samples available for event 'command'")


def test_latency_expire_cycle_event(server_factory):
    srv = server_factory("--latency-monitor-threshold", "1", "--hz", "100")
    with srv.connect() as c:
        c.call("MSET", *[x for i in range(50000) for x in (f"k{i}", "v")])
        # Every key expires at once: the background cycle reclaims them.
        c.pipeline([("PEXPIRE", f"k{i}", "1") for i in range(50000)])
        deadline = time.time() + 10
        while py(c.call("DBSIZE")) > 0 and time.time() < deadline:
            time.sleep(0.05)
        assert py(c.call("DBSIZE")) == 0
        events = [e[0] for e in py(c.call("LATENCY", "LATEST"))]
        # A cycle of 256-key rounds seldom lasts 1 ms on a fast machine: only
        # check that what is recorded is a known event.
        assert set(events) <= {"expire-cycle", "command", "fast-command"}


def read_monitor(conn, n, timeout=5.0):
    lines = []
    deadline = time.time() + timeout
    while len(lines) < n and time.time() < deadline:
        lines.append(py(conn.read_reply()))
    return lines


def test_monitor_lines_match_redis(server_factory, tmp_path):
    ours, redis = start_pair(server_factory, tmp_path)
    script = [
        ("SET", "foo", b'b"a\nr\x00\xff'), ("GET", "foo"), ("SELECT", "3"), ("SET", "x", "1"),
        ("MULTI",), ("SET", "y", "2"), ("EXEC",), ("MULTI",), ("NOSUCH",), ("EXEC",),
        ("AUTH", "secret"), ("HELLO", "2", "AUTH", "u", "p"), ("CONFIG", "GET", "port"),
        # Port 1 refuses: MIGRATE fails, and its secrets are hidden all the same.
        ("MIGRATE", "127.0.0.1", "1", "key", "9", "5000", "AUTH", "pw"),
        ("MIGRATE", "127.0.0.1", "1", "", "9", "5000", "COPY", "AUTH2", "u", "pw", "KEYS", "a"),
        ("EVAL", "redis.call('set', KEYS[1], ARGV[1]) return redis.call('get', KEYS[1])",
         "1", "k", "v"),
        ("PING",),
    ]
    try:
        seen = []
        for srv in (ours, redis):
            with srv.connect() as m, srv.connect() as c:
                assert py(m.call("MONITOR")) == "OK"
                for cmd in script:
                    c.call(*cmd)
                lines = read_monitor(m, 17)
                port = str(c.sock.getsockname()[1])
                shown = []
                for line in lines:
                    found = re.fullmatch(r"\d{10}\.\d{6} \[(\d+) (?:127\.0\.0\.1:(\d+)|lua)\] (.*)", line)
                    assert found and found[2] in (port, None), line
                    shown.append(f"{found[1]} {'lua ' if found[2] is None else ''}{found[3]}")
                seen.append(shown)
                # A monitor may not read or write keys; MONITOR again is ignored.
                assert py(m.call("GET", "foo"))[1] == "ERR Replica can't interact with the keyspace"
                m.send("MONITOR")
                assert py(m.call("PING")) == "PONG"
        assert seen[0] == seen[1]
        assert '0 "SET" "foo" "b\\"a\\nr\\x00\\xff"' in seen[0]
        assert '3 "AUTH" "(redacted)"' in seen[0]
        assert '3 "HELLO" "2" "AUTH" "(redacted)" "(redacted)"' in seen[0]
        assert '3 "MIGRATE" "127.0.0.1" "1" "key" "9" "5000" "AUTH" "(redacted)"' in seen[0]
        assert ('3 "MIGRATE" "127.0.0.1" "1" "" "9" "5000" "COPY" "AUTH2" "(redacted)" '
                '"(redacted)" "KEYS" "a"') in seen[0]
        # A script's commands follow it, from `lua`.
        at = [i for i, line in enumerate(seen[0]) if line.startswith('3 "EVAL"')][0]
        assert seen[0][at + 1:at + 3] == ['3 lua "set" "k" "v"', '3 lua "get" "k"']
    finally:
        redis.stop()


def test_monitor_over_unix_socket_and_reset(server_factory, tmp_path):
    sock = str(tmp_path / "b.sock")
    srv = server_factory("--unixsocket", sock)
    with RespConnection(unix_path=sock) as m, RespConnection(unix_path=sock) as c:
        m.call("MONITOR")
        c.call("PING")
        assert f"[0 unix:{sock}] \"PING\"" in py(m.read_reply())
        assert "flags=O" in py(c.call("CLIENT", "LIST"))
        assert py(m.call("RESET")) == "RESET"
        c.call("PING")
        assert py(m.call("ECHO", "x")) == "x"  # no monitor line came first
        assert "flags=O" not in py(c.call("CLIENT", "LIST"))


def test_client_pause(blinkdb, oracle):
    for srv in (blinkdb, oracle):
        with srv.connect() as a, srv.connect() as b:
            assert py(a.call("CLIENT", "PAUSE", "300", "WRITE")) == "OK"
            t = time.time()
            assert py(b.call("GET", "nope")) is None
            assert time.time() - t < 0.2  # reads run
            b.send("SET", "k", "v")
            t = time.time()
            assert py(b.read_reply()) == "OK"
            assert time.time() - t > 0.2  # the write waited
            b.call("MULTI")
            a.call("CLIENT", "PAUSE", "300", "ALL")
            t = time.time()
            assert py(b.call("PING")) == "QUEUED"
            assert time.time() - t > 0.2
            b.call("DISCARD")
            a.call("CLIENT", "PAUSE", "5000", "WRITE")
            threading.Timer(0.3, lambda: srv.connect().call("CLIENT", "UNPAUSE")).start()
            t = time.time()
            # A pipeline: the read before the write answers at once, the write
            # and what follows it after UNPAUSE, in order.
            b.send("GET", "k")
            b.send("INCR", "n")
            b.send("GET", "n")
            assert py(b.read_reply()) == "v"
            assert time.time() - t < 0.2
            assert py(b.read_reply()) == 1
            assert py(b.read_reply()) == "1"
            assert 0.25 < time.time() - t < 3


def test_client_pause_holds_a_client_that_then_disconnects(blinkdb):
    with blinkdb.connect() as a:
        a.call("CLIENT", "PAUSE", "400")
        b = blinkdb.connect()
        b.send("PING")
        b.close()
        time.sleep(0.6)
        assert py(a.call("PING")) == "PONG"


def test_client_reply(blinkdb, oracle):
    for srv in (blinkdb, oracle):
        with srv.connect() as c:
            c.send_raw(b"CLIENT REPLY SKIP\r\nPING a\r\nPING b\r\nCLIENT REPLY OFF\r\n"
                       b"PING c\r\nSET k v\r\nCLIENT REPLY ON\r\nPING d\r\n")
            assert [py(c.read_reply()) for _ in range(3)] == ["b", "OK", "d"]
            c.send_raw(b"CLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nPING\r\n")
            assert [py(c.read_reply()) for _ in range(2)] == ["OK", "PONG"]
            # Errors are silenced too.
            c.send_raw(b"CLIENT REPLY OFF\r\nNOSUCH\r\nCLIENT REPLY ON\r\n")
            assert py(c.read_reply()) == "OK"


def test_client_reply_off_keeps_pubsub_frames(blinkdb, oracle):
    # Subscribe confirmations and messages are not replies: REPLY OFF keeps
    # them, in RESP2 and RESP3 alike.
    for srv in (blinkdb, oracle):
        for proto in (2, 3):
            with srv.connect() as c, srv.connect() as p:
                c.call("HELLO", str(proto))
                c.send_raw(b"CLIENT REPLY OFF\r\nSUBSCRIBE ch\r\nPSUBSCRIBE c*\r\n")
                assert py(c.read_reply()) == ["subscribe", "ch", 1]
                assert py(c.read_reply()) == ["psubscribe", "c*", 2]
                assert py(p.call("PUBLISH", "ch", "hi")) == 2
                assert py(c.read_reply()) == ["message", "ch", "hi"]
                assert py(c.read_reply()) == ["pmessage", "c*", "ch", "hi"]
                # CLIENT is refused in a RESP2 subscriber, silently; RESET
                # turns replies on again and answers.
                c.send_raw(b"CLIENT REPLY ON\r\nRESET\r\n")
                assert py(c.read_reply()) == ("OK" if proto == 3 else "RESET")


def test_client_no_evict_and_list(blinkdb):
    with blinkdb.connect() as c:
        assert py(c.call("CLIENT", "NO-EVICT", "ON")) == "OK"
        info = py(c.call("CLIENT", "INFO"))
        assert " flags=e " in info and " cmd=client|info " in info
        assert " qbuf=26 " in info
        c.call("CLIENT", "NO-EVICT", "off")
        assert " flags=N " in py(c.call("CLIENT", "INFO"))


def test_wait_without_replicas(blinkdb):
    with blinkdb.connect() as c:
        t = time.time()
        assert py(c.call("WAIT", "0", "0")) == 0
        assert py(c.call("WAIT", "1", "200")) == 0
        assert 0.18 < time.time() - t < 2
        # WAIT 1 0 waits for ever; the client can go away meanwhile.
        d = blinkdb.connect()
        d.send("WAIT", "1", "0")
        time.sleep(0.2)
        d.close()
        clients = py(c.call("CLIENT", "LIST"))
        deadline = time.time() + 5
        while clients.count("\n") > 1 and time.time() < deadline:
            time.sleep(0.05)
            clients = py(c.call("CLIENT", "LIST"))
        assert clients.count("\n") == 1
        # Killed while waiting.
        d = blinkdb.connect()
        d.send("WAIT", "1", "0")
        time.sleep(0.1)
        assert py(c.call("CLIENT", "KILL", "SKIPME", "yes")) == 1
        assert d.wait_closed()


def test_debug_needs_enable_debug_command(server_factory):
    default = server_factory()
    with default.connect() as c:
        err = py(c.call("DEBUG", "SLEEP", "0"))
        assert err[1].startswith("ERR DEBUG command not allowed. If the enable-debug-command")
        assert "cmdstat_debug:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1" in py(
            c.call("INFO", "commandstats"))
    local = server_factory("--enable-debug-command", "local")
    with local.connect() as c:
        assert py(c.call("DEBUG", "SLEEP", "0")) == "OK"
        c.call("SET", "s", "hello")
        line = py(c.call("DEBUG", "OBJECT", "s"))
        assert re.fullmatch(r"Value at:0x[0-9a-f]+ refcount:1 encoding:embstr serializedlength:6"
                            r" lru:\d+ lru_seconds_idle:0", line)
        assert py(c.call("DEBUG", "OBJECT", "nope")) == ("error", "ERR no such key")
        help_lines = py(c.call("DEBUG", "HELP"))
        assert "SLEEP <seconds>" in help_lines and help_lines[-1] == "    Prints this help."


def test_debug_set_active_expire(server_factory):
    srv = server_factory("--enable-debug-command", "yes", "--hz", "100")
    with srv.connect() as c:
        assert py(c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")) == "OK"
        c.call("SET", "k", "v", "PX", "10")
        time.sleep(0.3)
        assert py(c.call("DBSIZE")) == 1  # expired, but nothing reclaimed it
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        deadline = time.time() + 5
        while py(c.call("DBSIZE")) and time.time() < deadline:
            time.sleep(0.02)
        assert py(c.call("DBSIZE")) == 0


def test_help_lists_every_option_of_the_shipped_config(blinkdb_binary):
    out = subprocess.run([blinkdb_binary, "--help"], capture_output=True, text=True, check=True).stdout
    conf = open(os.path.join(REPO_ROOT, "config", "blinkdb.conf")).read()
    documented = re.findall(r"^# ([a-z][a-z-]+) (.+)$", conf, re.M)
    names = {name for name, _ in documented if f"  --{name} " in out}
    for name in names:
        # One of its lines (the others are prose that looks like one) is in --help.
        assert any(f"  --{name} {default}" in out for n, default in documented if n == name), name
    assert len(names) >= 45


def test_help_text_of_each_option_is_its_own(blinkdb_binary):
    """Each option's --help text is the first sentence of its own block of
    config/blinkdb.conf: not another block's (an indented line naming the option),
    not cut at a wrapped line that starts with an option's name, no section banner."""
    out = subprocess.run([blinkdb_binary, "--help"], capture_output=True, text=True, check=True).stdout
    text = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"  --([a-z-]+) ", line)
        if m:
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            text[m.group(1)] = nxt.strip() if nxt.startswith("      ") else ""
    assert "only 0" not in text["list-compress-depth"]
    assert text["maxmemory-samples"].startswith("Keys each eviction samples"), text
    assert "min-replicas-max-lag seconds" in text["min-replicas-to-write"]
    assert not any("---" in t or "###" in t for t in text.values())
    for policy in ["noeviction", "allkeys-fifo", "allkeys-lru", "volatile-lru", "allkeys-lfu",
                   "volatile-lfu", "allkeys-random", "volatile-random", "volatile-ttl"]:
        assert policy in text["maxmemory-policy"], text["maxmemory-policy"]
