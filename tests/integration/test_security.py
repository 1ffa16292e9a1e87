"""Authentication, protected mode, CONFIG and shutdown behaviour."""

import ast
import os
import signal
import subprocess
import sys
import time

import pytest

from resp import ConnectionClosed, RespConnection, plain
from server import ServerProcess, free_port

PASSWORD = "s3cret-pass"
NOAUTH = b"-NOAUTH Authentication required.\r\n"
WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"


# --- requirepass ---------------------------------------------------------

@pytest.fixture
def protected(server_factory):
    return server_factory("--requirepass", PASSWORD, password=PASSWORD)


def test_commands_need_auth(protected):
    with protected.connect() as conn:
        for command in (["PING"], ["GET", "a"], ["SET", "a", "b"], ["DBSIZE"],
                        ["CONFIG", "GET", "port"]):
            assert conn.call(*command).raw == NOAUTH, command
        assert conn.call("AUTH", "wrong").raw == WRONGPASS
        assert conn.call("AUTH", "default", "wrong").raw == WRONGPASS
        assert conn.call("GET", "a").raw == NOAUTH
        assert conn.call("AUTH", PASSWORD).raw == b"+OK\r\n"
        assert conn.call("SET", "a", "b").raw == b"+OK\r\n"
        assert conn.call("GET", "a").raw == b"$1\r\nb\r\n"
    # authentication is per connection
    with protected.connect() as conn:
        assert conn.call("GET", "a").raw == NOAUTH
        assert conn.call("AUTH", "default", PASSWORD).raw == b"+OK\r\n"
        assert conn.call("GET", "a").raw == b"$1\r\nb\r\n"


def test_hello_auth(protected):
    with protected.connect() as conn:
        # Redis 7.0 wording of the unauthenticated HELLO refusal
        assert conn.call("HELLO", "3").raw == (
            b"-NOAUTH HELLO must be called with the client already authenticated, otherwise "
            b"the HELLO AUTH <user> <pass> option can be used to authenticate the client and "
            b"select the RESP protocol version at the same time\r\n")
        assert conn.call("HELLO", "3", "AUTH", "default", "wrong").raw == WRONGPASS
        assert conn.call("GET", "a").raw == NOAUTH
        reply = conn.call("HELLO", "3", "AUTH", "default", PASSWORD)
        assert reply.kind == b"%"
        assert plain((reply.kind, reply.value))[b"proto"] == 3
        assert conn.call("GET", "a").raw == b"_\r\n"


def test_auth_without_password_configured(blinkdb):
    with blinkdb.connect() as conn:
        assert conn.call("AUTH", "x").raw == (
            b"-ERR AUTH <password> called without any password configured for the default "
            b"user. Are you sure your configuration is correct?\r\n")


# --- protected mode, from a client in another network namespace -----------

NETNS_CLIENT = r"""
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
if len(sys.argv) > 3:
    s.sendall(sys.argv[3].encode().decode("unicode_escape").encode("latin-1"))
data = b""
s.settimeout(1.0)
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            data += b"<EOF>"
            break
        data += chunk
except socket.timeout:
    pass
print(repr(data))
"""


class NetnsPeer:
    """A veth pair with one end in a private namespace: a non-loopback client
    that exists only inside this machine."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.ns = f"bdbdiff{tag}"
        self.host_if, self.peer_if = f"bdd{tag}a", f"bdd{tag}b"
        third = 77 + tag % 100
        self.host_ip, self.peer_ip = f"10.231.{third}.1", f"10.231.{third}.2"
        steps = [
            ["ip", "netns", "add", self.ns],
            ["ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.peer_if],
            ["ip", "link", "set", self.peer_if, "netns", self.ns],
            ["ip", "addr", "add", f"{self.host_ip}/30", "dev", self.host_if],
            ["ip", "link", "set", self.host_if, "up"],
            ["ip", "netns", "exec", self.ns, "ip", "addr", "add", f"{self.peer_ip}/30",
             "dev", self.peer_if],
            ["ip", "netns", "exec", self.ns, "ip", "link", "set", self.peer_if, "up"],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True)
            if done.returncode != 0:
                self.close()
                raise OSError(f"{' '.join(step)}: {done.stderr.decode().strip()}")

    def exchange(self, port, send=None):
        args = ["ip", "netns", "exec", self.ns, sys.executable, "-c", NETNS_CLIENT,
                self.host_ip, str(port)]
        if send is not None:
            args.append(send)
        done = subprocess.run(args, capture_output=True, timeout=20)
        assert done.returncode == 0, done.stderr.decode()
        return ast.literal_eval(done.stdout.decode().strip())

    def close(self):
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


@pytest.fixture(scope="module")
def netns_peer():
    try:
        peer = NetnsPeer()
    except OSError as err:
        pytest.skip(f"PROTECTED MODE NOT TESTED: cannot build a network namespace: {err}")
    yield peer
    peer.close()


def start_on_veth(server_factory, netns_peer, *extra, **kwargs):
    """Listen on loopback and the veth address only: the brief's `bind 0.0.0.0`
    would also expose the test server on the machine's real interface."""
    return server_factory(*extra, bind=("127.0.0.1", netns_peer.host_ip), **kwargs)


def test_protected_mode_denies_remote_client_without_password(server_factory, netns_peer):
    srv = start_on_veth(server_factory, netns_peer)
    reply = netns_peer.exchange(srv.port, "PING\r\n")
    # the DENIED explanation text is Redis's own; only its start is portable
    assert reply.startswith(b"-DENIED "), reply
    assert b"protected mode" in reply
    assert reply.endswith(b"\r\n<EOF>"), reply
    with srv.connect() as local:
        assert local.call("PING").raw == b"+PONG\r\n"


def test_remote_client_allowed_with_password(server_factory, netns_peer):
    srv = start_on_veth(server_factory, netns_peer, "--requirepass", PASSWORD, password=PASSWORD)
    reply = netns_peer.exchange(srv.port, f"PING\r\nAUTH {PASSWORD}\r\nPING\r\n")
    assert reply == NOAUTH + b"+OK\r\n+PONG\r\n", reply


def test_remote_client_allowed_without_protected_mode(server_factory, netns_peer):
    srv = start_on_veth(server_factory, netns_peer, "--protected-mode", "no")
    assert netns_peer.exchange(srv.port, "PING\r\n") == b"+PONG\r\n"


# --- CONFIG ---------------------------------------------------------------

def config_get(conn, pattern):
    reply = conn.call("CONFIG", "GET", pattern)
    assert reply.kind == b"*", reply.raw
    flat = [v for _, v in reply.value]
    return dict(zip(flat[0::2], flat[1::2]))


def test_config_get_glob(blinkdb):
    with blinkdb.connect() as conn:
        found = config_get(conn, "*max*")
        assert b"maxclients" in found and b"maxmemory" in found, found
        assert all(b"max" in name for name in found), found
        assert found[b"maxclients"] == b"10000"
        assert config_get(conn, "maxclient?") == {b"maxclients": b"10000"}
        assert config_get(conn, "port") == {b"port": str(blinkdb.port).encode()}
        assert config_get(conn, "nosuchoption*") == {}
        both = config_get(conn, "appendonly")
        assert both == {b"appendonly": b"no"}


def test_config_set_then_get(blinkdb):
    with blinkdb.connect() as conn:
        assert conn.call("CONFIG", "SET", "timeout", "300").raw == b"+OK\r\n"
        assert config_get(conn, "timeout") == {b"timeout": b"300"}
        assert conn.call("CONFIG", "SET", "maxmemory", "10mb").raw == b"+OK\r\n"
        assert config_get(conn, "maxmemory") == {b"maxmemory": b"10485760"}
        assert conn.call("CONFIG", "SET", "nosuch", "1").raw == (
            b"-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n")
        assert conn.call("CONFIG", "SET", "maxmemory", "abc").raw == (
            b"-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - "
            b"argument must be a memory value\r\n")
        assert config_get(conn, "maxmemory") == {b"maxmemory": b"10485760"}


def info_fields(conn, section):
    text = conn.call("INFO", section).value.decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def test_config_resetstat(blinkdb):
    with blinkdb.connect() as conn:
        conn.call("SET", "a", "1")
        for _ in range(5):
            conn.call("GET", "a")
            conn.call("GET", "missing")
        before = info_fields(conn, "stats")
        assert int(before["keyspace_hits"]) == 5
        assert int(before["keyspace_misses"]) == 5
        assert conn.call("CONFIG", "RESETSTAT").raw == b"+OK\r\n"
        after = info_fields(conn, "stats")
        assert after["keyspace_hits"] == "0"
        assert after["keyspace_misses"] == "0"
        assert int(after["total_commands_processed"]) < int(before["total_commands_processed"])


def test_config_rewrite_without_file(blinkdb):
    with blinkdb.connect() as conn:
        assert conn.call("CONFIG", "REWRITE").raw == (
            b"-ERR The server is running without a config file\r\n")


def test_config_rewrite_keeps_changes_across_restart(blinkdb_binary, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    conf = tmp_path / "blinkdb.conf"
    port = free_port()
    conf.write_text(
        "# test configuration\n"
        f"port {port}\nbind 127.0.0.1\ndir {data_dir}\nappendonly no\nsave \"\"\n"
        "timeout 0\n"
    )
    srv = ServerProcess(blinkdb_binary, str(tmp_path / "run1"), port=port, args=[str(conf)])
    try:
        with srv.connect() as conn:
            assert conn.call("CONFIG", "SET", "timeout", "123").raw == b"+OK\r\n"
            assert conn.call("CONFIG", "SET", "maxclients", "321").raw == b"+OK\r\n"
            assert conn.call("CONFIG", "REWRITE").raw == b"+OK\r\n"
    finally:
        srv.stop()
    lines = conf.read_text().splitlines()
    assert "timeout 123" in lines, lines
    assert "maxclients 321" in lines, lines
    assert f"port {port}" in lines, lines
    assert "timeout 0" not in lines
    again = ServerProcess(blinkdb_binary, str(tmp_path / "run2"), port=port, args=[str(conf)])
    try:
        with again.connect() as conn:
            assert config_get(conn, "timeout") == {b"timeout": b"123"}
            assert config_get(conn, "maxclients") == {b"maxclients": b"321"}
    finally:
        again.stop()


# --- shutdown ----------------------------------------------------------------

def wait_exit(srv, timeout=10):
    try:
        return srv.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail("server did not exit")


def test_shutdown_command_exits_zero(blinkdb):
    conn = blinkdb.connect()
    conn.send("SHUTDOWN")
    try:
        data = conn.read_reply().raw
        pytest.fail(f"SHUTDOWN should not reply on success, got {data!r}")
    except (ConnectionClosed, ConnectionResetError):
        pass
    finally:
        conn.close()
    assert wait_exit(blinkdb) == 0
    with pytest.raises(OSError):
        RespConnection(blinkdb.port, timeout=1).close()


def test_shutdown_requires_auth(protected):
    with protected.connect() as conn:
        assert conn.call("SHUTDOWN").raw == NOAUTH
    assert protected.alive()


def test_sigterm_exits_gracefully(blinkdb):
    with blinkdb.connect() as conn:
        assert conn.call("SET", "a", "1").raw == b"+OK\r\n"
        idle = blinkdb.connect()
        os.kill(blinkdb.pid, signal.SIGTERM)
        started = time.monotonic()
        assert wait_exit(blinkdb) == 0
        assert time.monotonic() - started < 5
        assert idle.wait_closed(timeout=2)
        idle.close()
