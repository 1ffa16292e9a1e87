"""Issue 17: what tools read about the server (version, CLIENT LIST fd, MODULE,
COMMAND, INFO commandstats/errorstats), compared with redis-server 7.0.15
(with RedisBloom 2.8 loaded where BF.* is concerned)."""

import os
import re
import subprocess

from server import ORACLE_BIN


def py(reply):
    """A decoded reply as plain Python: maps become dicts, strings str."""
    return _py(reply.kind, reply.value)


def _py(kind, value):
    if kind in (b"*", b"~", b">"):
        return None if value is None else [_py(k, v) for k, v in value]
    if kind == b"%":
        return {_py(*k): _py(*v) for k, v in value}
    if kind in (b"$", b"+", b"=") and value is not None:
        text = value.decode()
        return text[4:] if kind == b"=" else text
    if kind == b"-":
        return ("error", value.decode())
    return value


def info_fields(conn, section):
    text = py(conn.call("INFO", section))
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def oracle_version():
    out = subprocess.run([ORACLE_BIN, "--version"], capture_output=True, text=True).stdout
    return re.search(r"v=(\S+)", out).group(1)


def test_version_is_the_oracles(blinkdb, blinkdb_binary):
    want = oracle_version()
    assert want == "7.0.15"
    with blinkdb.connect() as c:
        assert info_fields(c, "server")["redis_version"] == want
        hello = py(c.call("HELLO", "3"))
        assert hello["version"] == want
    out = subprocess.run([blinkdb_binary, "--version"], capture_output=True, text=True).stdout
    assert f"Redis {want} compatible" in out
    log = open(blinkdb.log_path, "rb").read().decode(errors="replace")
    assert f"(Redis {want} compatible) started" in log


def test_client_list_shows_the_socket_fd(blinkdb):
    with blinkdb.connect() as a, blinkdb.connect() as b:
        fds = []
        for conn in (a, b):
            line = py(conn.call("CLIENT", "INFO"))
            fd = int(re.search(r" fd=(-?\d+) ", line).group(1))
            assert fd > 2, line
            # The descriptor really is this server's socket.
            target = os.readlink(f"/proc/{blinkdb.pid}/fd/{fd}")
            assert target.startswith("socket:"), target
            fds.append(fd)
        assert fds[0] != fds[1]
        listed = py(a.call("CLIENT", "LIST"))
        assert sorted(int(m) for m in re.findall(r" fd=(-?\d+) ", listed)) == sorted(fds)
