"""Redis 7.0's hidden options (HIDDEN_CONFIG in config.c), side by side with
redis-server 7.0.15: absent from `CONFIG GET *`, answered when named,
written by CONFIG REWRITE only when set; and each acted on: key-load-delay
makes a load last (clients get -LOADING meanwhile), rdb-key-save-delay a
save (writers go on), use-exit-on-panic turns a panic's abort into exit 1.
watchdog-period and lua-enable-deprecated-api refuse what BlinkDB cannot
honour."""

import os
import time

import pytest

from aof_helpers import wait_exit
from resp import RespConnection, plain
from server import ORACLE_BIN, ServerProcess, base_args, free_port

HIDDEN = {
    "key-load-delay": "0",
    "rdb-key-save-delay": "0",
    "loading-process-events-interval-bytes": "2097152",
    "watchdog-period": "0",
    "use-exit-on-panic": "no",
    "lua-enable-deprecated-api": "no",
}
KINDS = ("blinkdb", "redis")


def config_get(conn, *names):
    r = conn.call("CONFIG", "GET", *names)
    reply = plain((r.kind, r.value))
    if isinstance(reply, dict):
        return {k.decode(): v.decode() for k, v in reply.items()}
    return {reply[i].decode(): reply[i + 1].decode() for i in range(0, len(reply), 2)}


def info_field(conn, section, field):
    for line in conn.call("INFO", section).value.decode().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    return None


def wait_until(check, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture
def pair(blinkdb_binary, tmp_path):
    started = []

    def make(*extra, name="", wait=True, conf=None):
        out = {}
        for kind, binary in zip(KINDS, (blinkdb_binary, ORACLE_BIN)):
            directory = str(tmp_path / f"{kind}{name}")
            os.makedirs(directory, exist_ok=True)
            port = free_port()
            args = base_args(port, directory) + list(extra)
            if conf is not None:
                path = os.path.join(directory, "server.conf")
                with open(path, "w") as f:
                    f.write(conf)
                args = [path] + args
            srv = ServerProcess(binary, directory, port=port, args=args, wait=wait)
            started.append(srv)
            out[kind] = srv
        return out

    yield make
    for srv in started:
        srv.stop()


def test_hidden_only_by_name(pair):
    for kind, srv in pair().items():
        with srv.connect() as c:
            everything = config_get(c, "*")
            assert not set(HIDDEN) & set(everything), kind
            assert config_get(c, "key-load-*", "watchdog*") == {}, kind
            for name, default in HIDDEN.items():
                assert config_get(c, name) == {name: default}, (kind, name)
            # A name without glob characters is looked up as a name, in any
            # case, and answered under the spelling given.
            assert config_get(c, "KEY-LOAD-DELAY", "key-load-*") == {"KEY-LOAD-DELAY": "0"}, kind


def test_rewrite_writes_them_only_when_set(pair):
    for kind, srv in pair(conf="# hidden\n").items():
        with srv.connect() as c:
            assert c.call("CONFIG", "SET", "key-load-delay", "-7").value == b"OK"
            assert c.call("CONFIG", "REWRITE").value == b"OK", kind
        with open(os.path.join(srv.dir, "server.conf")) as f:
            text = f.read()
        assert "key-load-delay -7" in text, (kind, text)
        for name in set(HIDDEN) - {"key-load-delay"}:
            assert name not in text, (kind, name)


def test_what_blinkdb_cannot_honour_is_refused(pair):
    servers = pair()
    with servers["redis"].connect() as r, servers["blinkdb"].connect() as b:
        # Immutable in both, refused the same way.
        same = ("CONFIG", "SET", "lua-enable-deprecated-api", "no")
        assert b.call(*same).raw == r.call(*same).raw
        assert b"can't set immutable config" in b.call(*same).raw
        # Redis starts its SIGALRM watchdog; BlinkDB has none and says so
        # rather than accept a period it would ignore.
        assert r.call("CONFIG", "SET", "watchdog-period", "100").value == b"OK"
        reply = b.call("CONFIG", "SET", "watchdog-period", "100")
        assert reply.is_error() and b"BlinkDB has no watchdog" in reply.raw
        assert config_get(b, "watchdog-period") == {"watchdog-period": "0"}
        assert b.call("CONFIG", "SET", "watchdog-period", "0").value == b"OK"


def test_lua_deprecated_api_yes_refused_at_start(blinkdb_binary, tmp_path):
    port = free_port()
    srv = ServerProcess(blinkdb_binary, str(tmp_path / "b"), port=port,
                        args=base_args(port, str(tmp_path / "b"))
                        + ["--lua-enable-deprecated-api", "yes"], wait=False)
    try:
        wait_exit(srv)
        assert srv.proc.returncode != 0
        with open(srv.log_path, errors="replace") as log:
            assert "setfenv, getfenv and newproxy" in log.read()
    finally:
        srv.stop()


def fill(conn, n):
    """n keys, one SET each (an AOF load is delayed per command)."""
    for start in range(0, n, 500):
        replies = conn.pipeline([("SET", f"key:{i}", "v" * 100)
                                 for i in range(start, min(n, start + 500))])
        assert all(r.value == b"OK" for r in replies)


def test_rdb_key_save_delay_paces_a_bgsave(pair):
    for kind, srv in pair().items():
        with srv.connect() as c:
            fill(c, 1000)
            # 1000 keys at 5 ms: 5 s, long enough to watch it run.
            c.call("CONFIG", "SET", "rdb-key-save-delay", "5000")
            assert c.call("BGSAVE").value == b"Background saving started"
            time.sleep(0.3)
            assert info_field(c, "persistence", "rdb_bgsave_in_progress") == "1", kind
            # Writers go on meanwhile.
            started = time.monotonic()
            assert c.call("SET", "key:1", "changed").value == b"OK"
            assert time.monotonic() - started < 1.0, kind
            assert c.call("GET", "key:1").value == b"changed"
            c.call("CONFIG", "SET", "rdb-key-save-delay", "0")
            wait_until(lambda: info_field(c, "persistence", "rdb_bgsave_in_progress") == "0",
                       f"{kind}: the save did not end")
            assert info_field(c, "persistence", "rdb_last_bgsave_status") == "ok", kind


def test_rdb_key_save_delay_zero_saves_at_once(blinkdb):
    with blinkdb.connect() as c:
        fill(c, 1000)
        c.call("CONFIG", "SET", "rdb-key-save-delay", "0")
        started = time.monotonic()
        assert c.call("SAVE").value == b"OK"
        fast = time.monotonic() - started
        c.call("CONFIG", "SET", "rdb-key-save-delay", "1000")
        started = time.monotonic()
        assert c.call("SAVE").value == b"OK"
        # SAVE sleeps 1 ms for each of the 1000 keys.
        assert time.monotonic() - started >= 1.0 > fast


# Redis serves clients while loading an AOF once every 1024 commands: 3000
# keys at 1 ms give it two such moments in 3 s of loading.
@pytest.mark.parametrize("appendonly,keys,delay", [("no", 500, 4000), ("yes", 3000, 1000)])
def test_key_load_delay_keeps_loading(pair, appendonly, keys, delay):
    first = pair("--appendonly", appendonly, name="first")
    for srv in first.values():
        with srv.connect() as c:
            fill(c, keys)
            if appendonly == "no":
                assert c.call("SAVE").value == b"OK"
        srv.stop()
    for kind, srv in first.items():
        port = free_port()
        # 2 to 3 s of loading.
        args = base_args(port, srv.dir) + ["--appendonly", appendonly,
                                           "--key-load-delay", str(delay),
                                           "--loading-process-events-interval-bytes", "1024"]
        binary = srv.binary
        again = ServerProcess(binary, srv.dir, port=port, args=args, wait=False)
        try:
            def loading_reply():
                try:
                    with RespConnection(port, timeout=10.0) as c:
                        return c.call("PING").raw
                except OSError:
                    return None

            wait_until(lambda: (loading_reply() or b"").startswith(b"-LOADING"),
                       f"{kind} ({appendonly}): never answered -LOADING")
            if kind == "blinkdb":
                # Served all along (redis-server's AOF load answers only at
                # its 1024-command marks, so its next reply may come after).
                with RespConnection(port) as c:
                    assert info_field(c, "persistence", "loading") == "1"
                    assert c.call("GET", "key:1").raw.startswith(b"-LOADING")
            wait_until(lambda: loading_reply() == b"+PONG\r\n",
                       f"{kind} ({appendonly}): never finished loading")
            with RespConnection(port) as c:
                assert c.call("DBSIZE").value == keys, kind
                assert config_get(c, "key-load-delay") == {"key-load-delay": str(delay)}
        finally:
            again.stop()


def write_failing_aof(directory):
    aof = os.path.join(directory, "appendonlydir")
    os.makedirs(aof, exist_ok=True)
    with open(os.path.join(aof, "appendonly.aof.1.incr.aof"), "wb") as f:
        for cmd in (["SELECT", "0"], ["SET", "k", "abc"], ["INCR", "k"]):
            f.write(f"*{len(cmd)}\r\n".encode())
            for arg in cmd:
                f.write(f"${len(arg)}\r\n{arg}\r\n".encode())
    with open(os.path.join(aof, "appendonly.aof.manifest"), "w") as f:
        f.write("file appendonly.aof.1.incr.aof seq 1 type i\n")


@pytest.mark.parametrize("exit_on_panic,status", [("yes", 1), ("no", -6)])
def test_use_exit_on_panic(blinkdb_binary, tmp_path, exit_on_panic, status):
    """A panic (the AOF loader's failed INCR under propagation-error-behavior
    panic) exits with 1 under use-exit-on-panic, else aborts (SIGABRT)."""
    for kind, binary in zip(KINDS, (blinkdb_binary, ORACLE_BIN)):
        directory = str(tmp_path / f"{kind}-{exit_on_panic}")
        write_failing_aof(directory)
        port = free_port()
        args = base_args(port, directory) + [
            "--appendonly", "yes", "--propagation-error-behavior", "panic",
            "--use-exit-on-panic", exit_on_panic]
        srv = ServerProcess(binary, directory, port=port, args=args, wait=False)
        try:
            code, text = wait_exit(srv)
            # redis-server's crash report itself sometimes ends in SIGSEGV on a loaded
            # machine (seen once in ten runs): the oracle may end that way, BlinkDB may not.
            allowed = {status, -11} if kind == "redis" else {status}
            assert code in allowed, (kind, code, text)
            assert "Guru Meditation" in open(srv.log_path, errors="replace").read()
        finally:
            srv.stop()
