"""Debian's stock /etc/redis/redis.conf (redis 7.0.15) loads in BlinkDB, and
its options behave as in redis-server, run the same way side by side."""

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from resp import ConnectionClosed, RespConnection
from server import ORACLE_BIN, ServerProcess, free_port

STOCK = "/etc/redis/redis.conf"

NEW_OPTIONS = [
    "daemonize", "always-show-logo", "set-proc-title", "proc-title-template",
    "stop-writes-on-bgsave-error", "rdb-del-sync-files", "repl-disable-tcp-nodelay",
    "acllog-max-len", "lazyfree-lazy-eviction", "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del", "replica-lazy-flush", "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush", "oom-score-adj", "oom-score-adj-values", "disable-thp",
    "no-appendfsync-on-rewrite", "aof-timestamp-enabled", "activerehashing",
    "dynamic-hz", "aof-rewrite-incremental-fsync", "rdb-save-incremental-fsync",
    "jemalloc-bg-thread",
]

pytestmark = pytest.mark.skipif(not os.path.exists(STOCK), reason="no Debian redis.conf")


def stock_copy(tmp_path):
    path = tmp_path / "redis.conf"
    shutil.copy(STOCK, path)
    return str(path)


def start(binary, conf, directory, *extra):
    """The stock file, with the machine-wide paths and the port overridden."""
    os.makedirs(directory, exist_ok=True)
    port = free_port()
    args = [conf, "--port", str(port), "--dir", directory, "--daemonize", "no",
            "--logfile", os.path.join(directory, "log"),
            "--pidfile", os.path.join(directory, "pid"), *extra]
    return ServerProcess(binary, directory, port=port, args=args)


@pytest.fixture
def pair(blinkdb_binary, tmp_path):
    conf = stock_copy(tmp_path)
    servers = [start(blinkdb_binary, conf, str(tmp_path / "blinkdb")),
               start(ORACLE_BIN, conf, str(tmp_path / "oracle"))]
    yield servers
    for srv in servers:
        srv.stop()


def both(pair, *cmd):
    out = []
    for srv in pair:
        with srv.connect() as c:
            out.append(c.call(*cmd).raw)
    return out


def test_stock_file_serves_and_shows_redis_values(pair):
    blink, _ = pair
    with blink.connect() as c:
        assert c.call("SET", "k", "v").raw == b"+OK\r\n"
        assert c.call("GET", "k").raw == b"$1\r\nv\r\n"
    for name in NEW_OPTIONS:
        ours, theirs = both(pair, "CONFIG", "GET", name)
        assert ours == theirs, name


@pytest.mark.parametrize("name,value", [
    ("daemonize", "yes"), ("disable-thp", "no"), ("always-show-logo", "yes"),
    ("set-proc-title", "no"),
    ("stop-writes-on-bgsave-error", "maybe"), ("activerehashing", "1"),
    ("jemalloc-bg-thread", "on"), ("lazyfree-lazy-user-del", ""),
    ("acllog-max-len", "-1"), ("acllog-max-len", "x"),
    ("oom-score-adj", "sometimes"), ("oom-score-adj-values", "1 2"),
    ("oom-score-adj-values", "1 2 3000"), ("oom-score-adj-values", "a 2 3"),
    ("oom-score-adj-values", "1 2 3 4"),
    ("proc-title-template", ""), ("proc-title-template", "{nope}"),
    ("proc-title-template", "{title"), ("proc-title-template", "{port} {{x"),
    ("oom-score-adj", "relative"), ("oom-score-adj", "absolute"), ("oom-score-adj", "no"),
    ("acllog-max-len", "9223372036854775807"), ("dynamic-hz", "NO"),
])
def test_config_set_as_redis(pair, name, value):
    assert both(pair, "CONFIG", "SET", name, value) == both(pair, "CONFIG", "SET", name, value)
    ours, theirs = both(pair, "CONFIG", "SET", name, value)
    assert ours == theirs
    assert both(pair, "CONFIG", "GET", name)[0] == both(pair, "CONFIG", "GET", name)[1]


def test_oom_score_adj_writes_proc(pair):
    blink, _ = pair
    path = f"/proc/{blink.pid}/oom_score_adj"
    with open(path) as f:
        base = int(f.read())
    with blink.connect() as c:
        assert c.call("CONFIG", "SET", "oom-score-adj-values", "0 345 800").raw == b"+OK\r\n"
        assert c.call("CONFIG", "SET", "oom-score-adj", "absolute").raw == b"+OK\r\n"
        assert c.call("CONFIG", "SET", "oom-score-adj-values", "123 345 800").raw == b"+OK\r\n"
        with open(path) as f:
            assert int(f.read()) == 123
        assert c.call("CONFIG", "SET", "oom-score-adj", "relative").raw == b"+OK\r\n"
        with open(path) as f:
            assert int(f.read()) == min(base + 123, 1000)
        assert c.call("CONFIG", "SET", "oom-score-adj", "no").raw == b"+OK\r\n"
        with open(path) as f:
            assert int(f.read()) == base


def test_config_set_rolls_back_applied_steps(pair):
    """A CONFIG SET whose port cannot be bound leaves the OOM score it had
    already written as it was (unit/introspection's rollback test)."""
    blink, _ = pair
    path = f"/proc/{blink.pid}/oom_score_adj"
    with open(path) as f:
        base = int(f.read())
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        with blink.connect() as c:
            reply = c.call("CONFIG", "SET", "oom-score-adj", "yes", "oom-score-adj-values", "1 1 1",
                           "maxmemory", "10000001", "port", str(taken.getsockname()[1]))
            assert reply.raw.startswith(
                b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port")
            with open(path) as f:
                assert int(f.read()) == base
            assert c.call("CONFIG", "GET", "oom-score-adj").raw.endswith(b"$2\r\nno\r\n")
            assert c.call("CONFIG", "GET", "maxmemory").raw.endswith(b"$1\r\n0\r\n")
            assert c.call("PING").raw == b"+PONG\r\n"
    finally:
        taken.close()


def test_oom_score_adj_from_the_file(blinkdb_binary, tmp_path):
    conf = stock_copy(tmp_path)
    srv = start(blinkdb_binary, conf, str(tmp_path / "b"),
                "--oom-score-adj", "absolute", "--oom-score-adj-values", "17 200 800")
    try:
        with open(f"/proc/{srv.pid}/oom_score_adj") as f:
            assert int(f.read()) == 17
    finally:
        srv.stop()


def test_failed_bgsave_stops_writes_as_redis(pair):
    # Only with save points (Redis's default has some, BlinkDB's none).
    assert both(pair, "CONFIG", "SET", "save", "3600 1") == [b"+OK\r\n"] * 2
    for srv in pair:
        with srv.connect() as c:
            assert c.call("SET", "k", "v").raw == b"+OK\r\n"
            # Saving into a directory that is gone fails.
            shutil.rmtree(srv.dir)
            c.call("BGSAVE")
            deadline = time.monotonic() + 10
            while b"rdb_bgsave_in_progress:0" not in c.call("INFO", "persistence").raw:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert b"rdb_last_bgsave_status:err" in c.call("INFO", "persistence").raw
    ours, theirs = both(pair, "SET", "k", "w")
    assert ours.startswith(b"-MISCONF")
    assert ours == theirs
    # PING is refused too, and MULTI queues nothing; scripts get their own texts.
    conns = [srv.connect() for srv in pair]
    try:
        for cmd in (("PING",), ("MULTI",), ("SET", "k", "w"), ("EXEC",),
                    ("EVAL", "#!lua\nreturn redis.call('SET', KEYS[1], 'w')", "1", "k"),
                    ("EVAL", "return redis.pcall('SET', KEYS[1], 'w')", "1", "k"),
                    ("EVAL", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", "1",
                     "k")):
            ours, theirs = [c.call(*cmd).raw for c in conns]
            assert ours == theirs, (cmd, ours)
    finally:
        for c in conns:
            c.close()
    assert both(pair, "GET", "k") == [b"$1\r\nv\r\n"] * 2
    both(pair, "CONFIG", "SET", "stop-writes-on-bgsave-error", "no")
    assert both(pair, "SET", "k", "w") == [b"+OK\r\n"] * 2
    # The directory is gone: with save points, SIGTERM's save on shutdown fails and both
    # servers (as Redis does) keep running, so the teardown waited 10 s for each before
    # SIGKILL. Without them they stop at once.
    assert both(pair, "CONFIG", "SET", "save", "") == [b"+OK\r\n"] * 2


def test_lazy_user_flush_keeps_flush_semantics(pair):
    for srv in pair:
        with srv.connect() as c:
            assert c.call("CONFIG", "SET", "lazyfree-lazy-user-flush", "yes").raw == b"+OK\r\n"
            c.call("SET", "a", "1")
            assert c.call("FLUSHALL").raw == b"+OK\r\n"
            assert c.call("DBSIZE").raw == b":0\r\n"


def test_whole_stock_file_daemonizes(blinkdb_binary, tmp_path):
    """The stock file as is (daemonize yes): the launcher returns at once and
    the daemon answers, with its own pid in the pidfile."""
    conf = stock_copy(tmp_path)
    directory = tmp_path / "d"
    directory.mkdir()
    pidfile = directory / "pid"
    port = free_port()
    launcher = subprocess.run(
        [blinkdb_binary, conf, "--port", str(port), "--dir", str(directory),
         "--logfile", str(directory / "log"), "--pidfile", str(pidfile)],
        timeout=10, capture_output=True)
    assert launcher.returncode == 0, launcher.stderr
    pid = None
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with RespConnection(port, timeout=2.0) as c:
                    assert c.call("PING").raw == b"+PONG\r\n"
                    info = c.call("INFO", "server").raw.decode()
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        served_by = int(info.split("process_id:")[1].split()[0])
        pid = int(pidfile.read_text())
        assert pid == served_by
        with open(f"/proc/{pid}/status") as f:
            ppid = int(next(line for line in f if line.startswith("PPid:")).split()[1])
        assert ppid != os.getpid()
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
                time.sleep(0.05)
    assert not pidfile.exists()


def test_rewrite_keeps_the_new_options(blinkdb_binary, tmp_path):
    conf = stock_copy(tmp_path)
    srv = start(blinkdb_binary, conf, str(tmp_path / "b"))
    try:
        with srv.connect() as c:
            for name, value in [("jemalloc-bg-thread", "no"), ("acllog-max-len", "7"),
                                ("oom-score-adj-values", "1 2 3"),
                                ("proc-title-template", "{title} {port}")]:
                assert c.call("CONFIG", "SET", name, value).raw == b"+OK\r\n"
            assert c.call("CONFIG", "REWRITE").raw == b"+OK\r\n"
    finally:
        srv.stop()
    text = open(conf).read()
    assert "\njemalloc-bg-thread no\n" in text
    assert "\nacllog-max-len 7\n" in text
    assert '\noom-score-adj-values "1 2 3"\n' in text
    again = start(blinkdb_binary, conf, str(tmp_path / "b2"))
    try:
        with again.connect() as c:
            assert c.call("CONFIG", "GET", "proc-title-template").raw.endswith(
                b"$14\r\n{title} {port}\r\n")
            assert c.call("CONFIG", "GET", "acllog-max-len").raw.endswith(b"$1\r\n7\r\n")
    finally:
        again.stop()


def test_unopenable_log_file_fails_before_daemonizing(blinkdb_binary, tmp_path):
    """As redis-server: the error reaches the terminal, not /dev/null."""
    conf = stock_copy(tmp_path)
    for binary in (blinkdb_binary, ORACLE_BIN):
        run = subprocess.run(
            [binary, conf, "--port", str(free_port()), "--dir", str(tmp_path),
             "--logfile", str(tmp_path / "missing" / "log")],
            timeout=10, capture_output=True)
        assert run.returncode == 1, binary
        output = (run.stdout + run.stderr).decode()
        assert "Can't open the log file: No such file or directory" in output, binary


def test_config_set_port_and_bind_as_redis(pair):
    """CONFIG SET port moves the listener (a connected client stays), a port in use is
    refused with Redis's text and nothing changes, and so is a bind address that cannot be."""
    import socket
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        for srv in pair:
            with srv.connect() as c:
                old, new = srv.port, free_port()
                assert c.call("CONFIG", "SET", "port", str(new)).raw == b"+OK\r\n"
                srv.port = new
                with srv.connect() as moved:
                    assert moved.call("PING").raw == b"+PONG\r\n"
                with pytest.raises(OSError):
                    socket.create_connection(("127.0.0.1", old), timeout=1).close()
                # The client that sent it is still served.
                assert str(new).encode() in c.call("CONFIG", "GET", "port").raw
        replies = both(pair, "CONFIG", "SET", "port", str(busy.getsockname()[1]),
                       "maxmemory", "12345")
        assert replies[0] == replies[1]
        assert replies[0].startswith(b"-ERR CONFIG SET failed (possibly related to argument "
                                     b"'port') - Unable to listen on this port")
        assert both(pair, "CONFIG", "GET", "maxmemory")[0] == \
            both(pair, "CONFIG", "GET", "maxmemory")[1]
        ours, theirs = both(pair, "CONFIG", "SET", "bind", "999.999.999.999")
        assert ours == theirs and b"Failed to bind to specified addresses" in ours
        ours, theirs = both(pair, "CONFIG", "GET", "bind")
        assert ours == theirs
        assert both(pair, "PING") == [b"+PONG\r\n"] * 2
    finally:
        busy.close()


def test_protected_configs_as_redis(blinkdb_binary, tmp_path):
    """dir and dbfilename are protected: refused with Redis's text unless
    enable-protected-configs allows them; allowed, dbfilename moves SAVE's file, and dir,
    which BlinkDB fixes at start, says so."""
    conf = stock_copy(tmp_path)
    for allow in ("no", "yes"):
        servers = [start(binary, conf, str(tmp_path / f"{name}-{allow}"),
                         "--enable-protected-configs", allow)
                   for name, binary in (("blinkdb", blinkdb_binary), ("oracle", ORACLE_BIN))]
        try:
            assert both(servers, "CONFIG", "GET", "enable-protected-configs") == \
                [b"*2\r\n$24\r\nenable-protected-configs\r\n$%d\r\n%s\r\n" % (len(allow), allow.encode())] * 2
            ours, theirs = both(servers, "CONFIG", "SET", "dbfilename", "other.rdb")
            assert ours == theirs
            if allow == "no":
                assert ours == b"-ERR CONFIG SET failed (possibly related to argument " \
                    b"'dbfilename') - can't set protected config\r\n"
                assert both(servers, "CONFIG", "SET", "dir", "/tmp")[0] == ours.replace(
                    b"dbfilename", b"dir")
                continue
            assert ours == b"+OK\r\n"
            assert both(servers, "SET", "k", "v") == [b"+OK\r\n"] * 2
            assert both(servers, "SAVE") == [b"+OK\r\n"] * 2
            for srv in servers:
                assert os.path.exists(os.path.join(srv.dir, "other.rdb"))
            mine = both(servers, "CONFIG", "SET", "dir", "/tmp")[0]
            assert mine == b"-ERR CONFIG SET failed (possibly related to argument 'dir') - " \
                b"can't set immutable config\r\n"
        finally:
            for srv in servers:
                srv.stop()


@pytest.mark.parametrize("how", ["SHUTDOWN", "SIGTERM"])
def test_stock_file_keeps_writes_across_restart(blinkdb_binary, tmp_path, how):
    """Debian's redis.conf sets `appendonly no` and leaves its `save` lines commented:
    redis-server falls back to its built-in save points, so SHUTDOWN (and SIGTERM)
    write dump.rdb and a restart finds the data. BlinkDB must do the same."""
    conf = stock_copy(tmp_path)
    for binary, name in [(blinkdb_binary, "blinkdb"), (ORACLE_BIN, "oracle")]:
        directory = str(tmp_path / name)
        port = free_port()
        args = [conf, "--port", str(port), "--dir", directory, "--daemonize", "no",
                "--logfile", "", "--pidfile", os.path.join(directory, "pid")]
        os.makedirs(directory)
        srv = ServerProcess(binary, directory, port=port, args=args)
        try:
            with srv.connect() as c:
                assert c.call("CONFIG", "GET", "save").raw == \
                    b"*2\r\n$4\r\nsave\r\n$23\r\n3600 1 300 100 60 10000\r\n", name
                assert c.call("SET", "k", "v").raw == b"+OK\r\n"
                if how == "SHUTDOWN":
                    try:
                        c.call("SHUTDOWN")
                    except (ConnectionClosed, OSError):
                        pass
            if how == "SIGTERM":
                srv.proc.send_signal(signal.SIGTERM)
            assert srv.proc.wait(timeout=30) == 0, name
        finally:
            srv.stop()
        assert os.path.exists(os.path.join(directory, "dump.rdb")), name
        again = ServerProcess(binary, directory, port=port, args=args)
        try:
            with again.connect() as c:
                assert c.call("GET", "k").raw == b"$1\r\nv\r\n", name
        finally:
            again.stop()


def test_config_set_bind_over_the_address_listened_on(pair):
    """CONFIG SET bind 0.0.0.0 while listening on 127.0.0.1 at the same port: Redis closes
    the old listeners before binding the new ones (and binds `::` IPv6-only), so each
    change is accepted and the server keeps answering; a bad address changes nothing."""
    for value in ["0.0.0.0", "127.0.0.1", "0.0.0.0 ::", "127.0.0.1 -::1", "0.0.0.0",
                  "999.999.999.999", "127.0.0.1"]:
        ours, theirs = both(pair, "CONFIG", "SET", "bind", value)
        assert ours == theirs, value
        assert both(pair, "CONFIG", "GET", "bind")[0] == both(pair, "CONFIG", "GET", "bind")[1]
        assert both(pair, "PING") == [b"+PONG\r\n"] * 2, value
