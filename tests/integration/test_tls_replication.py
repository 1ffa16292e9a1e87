"""Replication over TLS (tls-replication yes, issue 41): a redis-server 7.0.15
replica follows a BlinkDB master through the master's TLS port, full sync
then the stream. (A BlinkDB replica's own link is still plaintext.)"""

import time

import pytest

from server import ORACLE_BIN, ServerProcess, free_port
from tls_util import make_certs, server_flags, wait_log


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


def wait_for(cond, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_redis_replica_of_blinkdb_master_over_tls(blinkdb_binary, tmp_path, tls):
    master_tls = free_port()
    master = ServerProcess(blinkdb_binary, str(tmp_path / "master"),
                           server_flags(tls, master_tls, **{"tls-replication": "yes"}))
    m = master.connect()
    for i in range(500):
        m.call("SET", f"before:{i}", "x" * (i % 50))
    m.call("RPUSH", "list", "a", "b", "c")
    replica = ServerProcess(ORACLE_BIN, str(tmp_path / "replica"),
                            server_flags(tls, free_port(), **{"tls-replication": "yes"}))
    try:
        r = replica.connect()
        assert r.call("REPLICAOF", "127.0.0.1", str(master_tls)).raw == b"+OK\r\n"
        wait_log(replica, "MASTER <-> REPLICA sync: Finished with success", timeout=30)
        for i in range(200):
            m.call("SET", f"after:{i}", i)
        m.call("LPUSH", "list", "z")
        wait_for(lambda: r.call("DBSIZE").raw == m.call("DBSIZE").raw
                 and r.call("GET", "after:199").raw == b"$3\r\n199\r\n", "the stream")
        assert r.call("LRANGE", "list", "0", "-1").raw == m.call("LRANGE", "list", "0", "-1").raw
        assert r.call("GET", "before:49").raw == m.call("GET", "before:49").raw
        info = r.call("INFO", "replication").raw
        assert b"master_link_status:up" in info
        # The master sees its replica, whose link is the TLS session.
        wait_for(lambda: b"connected_slaves:1" in m.call("INFO", "replication").raw, "replica seen")
    finally:
        replica.stop()
        master.stop()
