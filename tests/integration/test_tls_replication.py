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


@pytest.mark.parametrize("master_kind", ["redis", "blinkdb"])
def test_blinkdb_replica_over_tls(blinkdb_binary, tmp_path, tls, master_kind):
    """A BlinkDB replica with tls-replication yes follows redis-server 7.0.15 or
    BlinkDB through the master's TLS port."""
    master_tls = free_port()
    binary = ORACLE_BIN if master_kind == "redis" else blinkdb_binary
    master = ServerProcess(binary, str(tmp_path / "master"),
                           server_flags(tls, master_tls, **{"tls-replication": "yes"}))
    m = master.connect()
    for i in range(500):
        m.call("SET", f"before:{i}", "y" * (i % 70))
    replica = ServerProcess(blinkdb_binary, str(tmp_path / "replica"),
                            server_flags(tls, free_port(), **{"tls-replication": "yes"}))
    try:
        r = replica.connect()
        assert r.call("REPLICAOF", "127.0.0.1", str(master_tls)).raw == b"+OK\r\n"
        wait_for(lambda: b"master_link_status:up" in r.call("INFO", "replication").raw,
                 f"link up:\n{replica.log_text()}")
        for i in range(300):
            m.call("INCR", "counter")
        m.call("SET", "last", "done")
        wait_for(lambda: r.call("GET", "last").raw == b"$4\r\ndone\r\n", "the stream")
        assert r.call("GET", "counter").raw == b"$3\r\n300\r\n"
        assert r.call("DBSIZE").raw == m.call("DBSIZE").raw
        assert r.call("GET", "before:69").raw == m.call("GET", "before:69").raw
    finally:
        replica.stop()
        master.stop()


def test_replica_refused_without_a_certificate_from_the_ca(blinkdb_binary, tmp_path, tls):
    """The master asks for a client certificate (tls-auth-clients yes): a replica
    presenting one from another CA never gets its link up, and the master logs why."""
    master_tls = free_port()
    master = ServerProcess(blinkdb_binary, str(tmp_path / "master"),
                           server_flags(tls, master_tls, **{"tls-replication": "yes"}))
    flags = server_flags(tls, free_port(), **{
        "tls-replication": "yes",
        "tls-client-cert-file": f"{tls}/other/client.crt",
        "tls-client-key-file": f"{tls}/other/client.key",
    })
    replica = ServerProcess(blinkdb_binary, str(tmp_path / "replica"), flags)
    try:
        r = replica.connect()
        r.call("REPLICAOF", "127.0.0.1", str(master_tls))
        wait_log(master, "Error accepting a client connection")
        assert b"master_link_status:down" in r.call("INFO", "replication").raw
        assert master.connect().call("PING").raw == b"+PONG\r\n"
    finally:
        replica.stop()
        master.stop()


@pytest.mark.parametrize("replica_kind", ["redis", "blinkdb"])
def test_replica_of_a_master_with_a_v1_certificate(blinkdb_binary, tmp_path, tls, replica_kind):
    """A master whose certificate has no extensions (X.509 v1, as
    gen-test-certs.sh's redis.crt) is followed over TLS by redis-server and by
    BlinkDB alike: OpenSSL takes such a certificate, webpki alone would not."""
    master_tls = free_port()
    master = ServerProcess(ORACLE_BIN, str(tmp_path / "master"), server_flags(
        tls, master_tls, **{"tls-replication": "yes", "tls-cert-file": f"{tls}/redis.crt",
                            "tls-key-file": f"{tls}/redis.key"}))
    binary = ORACLE_BIN if replica_kind == "redis" else blinkdb_binary
    replica = ServerProcess(binary, str(tmp_path / "replica"),
                            server_flags(tls, free_port(), **{"tls-replication": "yes"}))
    try:
        m, r = master.connect(), replica.connect()
        m.call("SET", "k", "v1-master")
        assert r.call("REPLICAOF", "127.0.0.1", str(master_tls)).raw == b"+OK\r\n"
        wait_for(lambda: b"master_link_status:up" in r.call("INFO", "replication").raw,
                 f"link up:\n{replica.log_text()}")
        wait_for(lambda: r.call("GET", "k").raw == b"$9\r\nv1-master\r\n", "the key")
    finally:
        replica.stop()
        master.stop()
