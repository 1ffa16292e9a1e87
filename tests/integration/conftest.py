"""Fixtures: a fresh BlinkDB (BLINKDB_BIN) and a fresh oracle redis-server per test."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from server import ORACLE_BIN, ServerProcess, blinkdb_bin  # noqa: E402


@pytest.fixture(scope="session")
def blinkdb_binary():
    binary = blinkdb_bin()
    if binary is None or not os.path.exists(binary):
        pytest.fail(
            "no server binary: set BLINKDB_BIN or build target/{release,debug}/blinkdb",
            pytrace=False,
        )
    return binary


@pytest.fixture
def server_factory(blinkdb_binary, tmp_path):
    """Start BlinkDB with extra flags; every started server is stopped at teardown."""
    started = []

    def start(*extra_args, name=None, **kwargs):
        directory = str(tmp_path / (name or f"blinkdb{len(started)}"))
        srv = ServerProcess(blinkdb_binary, directory, extra_args, **kwargs)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def started():
    """Servers a test starts itself (peers, by hand): each stopped at teardown."""
    servers = []
    yield servers
    for srv in servers:
        srv.stop()


@pytest.fixture
def blinkdb(server_factory):
    return server_factory()


@pytest.fixture
def oracle(tmp_path):
    """The reference: Debian's redis-server 7 configured exactly like BlinkDB."""
    srv = ServerProcess(ORACLE_BIN, str(tmp_path / "oracle"))
    yield srv
    srv.stop()


@pytest.fixture
def servers(blinkdb, oracle):
    """BlinkDB and redis-server side by side, both without persistence."""
    return {"blinkdb": blinkdb, "redis": oracle}
