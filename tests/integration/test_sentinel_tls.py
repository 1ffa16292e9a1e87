"""Sentinel over TLS (issue 41): redis-sentinel 7.0.15 with tls-replication yes
monitors a BlinkDB master through its TLS port, finds the BlinkDB replicas at
the TLS ports they announce (REPLCONF listening-port is the TLS port with
tls-replication yes, as Redis's), and fails over when the master dies: one
replica promoted, the other following it over TLS."""

import time

import pytest
import redis

from server import ORACLE_BIN, ServerProcess, blinkdb_bin, free_port
from tls_util import client, make_certs


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


def tls_lines(tls, tls_port):
    return [f"tls-port {tls_port}", f"tls-cert-file {tls}/server.crt",
            f"tls-key-file {tls}/server.key", f"tls-ca-cert-file {tls}/ca.crt",
            f"tls-client-cert-file {tls}/client.crt", f"tls-client-key-file {tls}/client.key",
            "tls-replication yes"]


def start(binary, tmp_path, name, tls, extra=(), sentinel=False):
    """A server from a config file of its own (Sentinel rewrites them)."""
    d = tmp_path / name
    d.mkdir()
    port, tls_port = free_port(), free_port()
    lines = [f"port {port}", "bind 127.0.0.1", f"dir {d}", *tls_lines(tls, tls_port), *extra]
    conf = d / ("sentinel.conf" if sentinel else "server.conf")
    conf.write_text("\n".join(lines) + "\n")
    args = [str(conf), "--sentinel"] if sentinel else [str(conf)]
    srv = ServerProcess(binary, str(d), [], port=port, args=args)
    srv.tls_port = tls_port
    return srv


def wait_for(cond, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = cond()
        except (OSError, redis.RedisError):  # a connection Sentinel killed
            got = None
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def role(tls, srv):
    info = client(tls, srv.tls_port).info("replication")
    return info["role"], str(info.get("master_port")), info.get("master_link_status")


def test_sentinel_fails_over_a_blinkdb_master_over_tls(tmp_path, tls):
    procs = []
    try:
        a = start(blinkdb_bin(), tmp_path, "a", tls)
        procs.append(a)
        client(tls, a.tls_port).set("before", "failover")
        replicas = []
        for name in ("b", "c"):
            r = start(blinkdb_bin(), tmp_path, name, tls, [f"replicaof 127.0.0.1 {a.tls_port}"])
            procs.append(r)
            replicas.append(r)
        for r in replicas:
            wait_for(lambda r=r: role(tls, r) == ("slave", str(a.tls_port), "up"),
                     f"replica {r.port} linked over TLS:\n{r.log_text()[-2000:]}")
        s = start(ORACLE_BIN, tmp_path, "sentinel", tls, [
            f"sentinel monitor mymaster 127.0.0.1 {a.tls_port} 1",
            "sentinel down-after-milliseconds mymaster 1000",
            "sentinel failover-timeout mymaster 20000",
            "sentinel parallel-syncs mymaster 1"], sentinel=True)
        procs.append(s)
        sc = client(tls, s.tls_port)
        by_port = {r.tls_port: r for r in replicas}

        def replicas_seen():
            seen = sc.execute_command("SENTINEL", "REPLICAS", "mymaster")
            # redis-py parses each into a dict (keys as bytes, without decode_responses).
            ports = {int(x[b"port"]) for x in seen}
            return ports == set(by_port)
        wait_for(replicas_seen, f"Sentinel finds both replicas at their TLS ports:\n"
                 f"{s.log_text()[-3000:]}")
        assert client(tls, a.tls_port).execute_command("WAIT", 2, 5000) == 2
        a.proc.kill()
        a.proc.wait()

        def promoted():
            addr = sc.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
            port = int(addr[1]) if addr else None
            return by_port.get(port)
        new = wait_for(promoted, f"Sentinel promotes a replica:\n{s.log_text()[-3000:]}",
                       timeout=60)
        other = next(r for r in replicas if r is not new)
        wait_for(lambda: role(tls, new)[0] == "master", "the promoted replica is a master")
        wait_for(lambda: role(tls, other) == ("slave", str(new.tls_port), "up"),
                 f"the other replica follows the new master over TLS:\n"
                 f"{other.log_text()[-2000:]}", timeout=60)
        nc = client(tls, new.tls_port)
        assert nc.get("before") == b"failover"
        nc.set("after", "failover")
        wait_for(lambda: client(tls, other.tls_port).get("after") == b"failover",
                 "the write reaches the other replica")
    finally:
        for p in procs:
            p.stop()
