"""The cluster bus over TLS (tls-cluster yes, issue 41): nodes announce their
TLS port and talk to each other through TLS sessions on the bus port, as
redis-server 7.0.15 does, so BlinkDB and redis-server nodes make one cluster.
`redis-cli --cluster create --tls` and `--cluster check --tls` drive it, and
replicas follow their masters over TLS (tls-replication yes) both ways."""

import socket

import pytest

from cluster_util import TIMEOUT_MS, redis_cli, wait_until
from server import ORACLE_BIN, ServerProcess, blinkdb_bin, free_port
from tls_util import client, make_certs, server_flags, wait_log


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


def tls_node(binary, directory, tls):
    """A cluster node with a plain port (for the test's own checks), a TLS
    port its clients and peers use, and a bus port in the test's range."""
    tls_port, bus_port = free_port(), free_port()
    flags = server_flags(tls, tls_port, **{
        "tls-cluster": "yes", "tls-replication": "yes", "cluster-enabled": "yes",
        "cluster-node-timeout": TIMEOUT_MS, "cluster-port": bus_port})
    srv = ServerProcess(binary, directory, flags)
    srv.tls_port, srv.bus_port = tls_port, bus_port
    return srv


def cli_tls(tls):
    return ("--tls", "--cacert", f"{tls}/ca.crt", "--cert", f"{tls}/client.crt",
            "--key", f"{tls}/client.key")


def cli_text(tls, srv, *cmd):
    """A reply as redis-cli prints it, over TLS."""
    return redis_cli("-p", str(srv.tls_port), *cli_tls(tls), *cmd).stdout


def call(srv, *cmd):
    with srv.connect() as c:
        return c.call(*cmd)


def text(srv, *cmd):
    return call(srv, *cmd).value.decode()


def myid(srv):
    return text(srv, "CLUSTER", "MYID")


def check_clean(tls, srv):
    out = redis_cli("--cluster", "check", f"127.0.0.1:{srv.tls_port}", *cli_tls(tls))
    ok = ("[ERR]" not in out.stdout and "[WARNING]" not in out.stdout
          and "[OK] All 16384 slots covered." in out.stdout
          and "[OK] All nodes agree about slots configuration." in out.stdout)
    return ok, out.stdout + out.stderr


def wait_check_clean(tls, srv, timeout=40.0):
    last = [""]

    def clean():
        ok, last[0] = check_clean(tls, srv)
        return ok
    try:
        wait_until(clean, timeout, "a clean --cluster check --tls")
    except AssertionError:
        raise AssertionError(last[0]) from None


def create_tls(tls, nodes):
    out = redis_cli("--cluster", "create", *[f"127.0.0.1:{s.tls_port}" for s in nodes],
                    "--cluster-replicas", "0", "--cluster-yes", *cli_tls(tls))
    assert "[OK] All 16384 slots covered." in out.stdout, (
        out.stdout + out.stderr + "".join(s.log_text()[-2000:] for s in nodes))


def add_replica(tls, replica, master, entry):
    out = redis_cli("--cluster", "add-node", f"127.0.0.1:{replica.tls_port}",
                    f"127.0.0.1:{entry.tls_port}", "--cluster-slave",
                    "--cluster-master-id", myid(master), *cli_tls(tls))
    assert out.returncode == 0 and "[OK] New node added correctly." in out.stdout, (
        out.stdout + out.stderr)


def follows(replica, master, key, value):
    """The replica's data link to its master is up and carries `key`."""
    info = text(replica, "INFO", "replication")
    if "master_link_status:up" not in info or f"master_port:{master.tls_port}" not in info:
        return False
    with replica.connect() as c:
        c.call("READONLY")
        return c.call("GET", key).value == value


def owner_of(nodes, key):
    slot = call(nodes[0], "CLUSTER", "KEYSLOT", key).value
    for s in nodes:
        for line in text(s, "CLUSTER", "NODES").splitlines():
            f = line.split(" ")
            if "myself" in f[2] and "master" in f[2]:
                for r in f[8:]:
                    lo, _, hi = r.partition("-")
                    if int(lo) <= slot <= int(hi or lo):
                        return s
    raise AssertionError(f"no owner of slot {slot}")


def test_blinkdb_cluster_over_tls(tmp_path, tls):
    nodes = [tls_node(blinkdb_bin(), str(tmp_path / f"n{i}"), tls) for i in range(4)]
    masters, replica = nodes[:3], nodes[3]
    try:
        create_tls(tls, masters)
        # Each node announces its TLS port and the bus port it was given, and
        # the plaintext port beside them, which plain clients are told.
        for view, port in ((cli_text(tls, masters[0], "CLUSTER", "NODES"), masters[0].tls_port),
                           (text(masters[0], "CLUSTER", "NODES"), masters[0].port)):
            line = next(ln for ln in view.splitlines() if "myself" in ln)
            assert f" 127.0.0.1:{port}@{masters[0].bus_port} " in line, view
        wait_check_clean(tls, masters[0])
        add_replica(tls, replica, masters[1], masters[0])
        wait_check_clean(tls, masters[0])
        rc = client(tls, masters[1].tls_port)
        key = next(f"k{i}" for i in range(1000) if owner_of(nodes, f"k{i}") is masters[1])
        rc.set(key, "over-tls")
        wait_until(lambda: follows(replica, masters[1], key, b"over-tls"), 30,
                   f"the replica following its master:\n{replica.log_text()[-3000:]}")
        # A plaintext peer on the bus port gets no session: the node logs the
        # refused handshake and keeps serving its cluster.
        with socket.create_connection(("127.0.0.1", masters[2].bus_port), timeout=10) as s:
            s.sendall(b"RCmb" + b"\x00" * 2252)
            s.settimeout(10)
            try:
                assert s.recv(4096)[:1] in (b"", b"\x15")  # nothing, or a TLS alert
            except ConnectionResetError:
                pass
        wait_log(masters[2], "Error accepting a cluster bus connection")
        wait_check_clean(tls, masters[0])
    finally:
        for s in nodes:
            s.stop()


def test_mixed_cluster_over_tls(tmp_path, tls):
    """Three redis-server and two BlinkDB nodes: masters created by redis-cli
    over TLS, a BlinkDB replica of a redis-server master and the other way round."""
    theirs = [tls_node(ORACLE_BIN, str(tmp_path / f"r{i}"), tls) for i in range(3)]
    ours = [tls_node(blinkdb_bin(), str(tmp_path / f"b{i}"), tls) for i in range(2)]
    try:
        masters = [theirs[0], ours[0], theirs[1]]
        create_tls(tls, masters)
        wait_check_clean(tls, ours[0])
        add_replica(tls, ours[1], theirs[0], ours[0])
        add_replica(tls, theirs[2], ours[0], theirs[0])
        wait_check_clean(tls, theirs[0])
        wait_check_clean(tls, ours[0])
        for master, replica in ((theirs[0], ours[1]), (ours[0], theirs[2])):
            key = next(f"m{i}" for i in range(1000) if owner_of(masters, f"m{i}") is master)
            client(tls, master.tls_port).set(key, f"from-{master.port}")
            wait_until(lambda: follows(replica, master, key, f"from-{master.port}".encode()),
                       30, f"replica {replica.port} following {master.port}:\n"
                       + replica.log_text()[-3000:])
        # Both kinds show every node at its TLS port to a TLS client, at the
        # plaintext port it gossips beside it to a plain one.
        for srv in (theirs[0], ours[0]):
            seen = cli_text(tls, srv, "CLUSTER", "NODES")
            plain = text(srv, "CLUSTER", "NODES")
            for s in ours + theirs:
                assert f"{myid(s)} 127.0.0.1:{s.tls_port}@{s.bus_port}" in seen, seen
                assert f"{myid(s)} 127.0.0.1:{s.port}@{s.bus_port}" in plain, plain
        # And a redirection names the port for the client's kind, as Redis's.
        key = next(f"r{i}" for i in range(1000) if owner_of(masters, f"r{i}") is theirs[0])
        slot = call(ours[0], "CLUSTER", "KEYSLOT", key).value
        for srv in (theirs[1], ours[0]):
            assert call(srv, "GET", key).raw == \
                f"-MOVED {slot} 127.0.0.1:{theirs[0].port}\r\n".encode()
            assert cli_text(tls, srv, "GET", key).strip() == \
                f"MOVED {slot} 127.0.0.1:{theirs[0].tls_port}"
        # CLUSTER SHARDS: a node's "port" is its plaintext one, "tls-port" its TLS one.
        for srv in (theirs[0], ours[0]):
            shards = cli_text(tls, srv, "CLUSTER", "SHARDS")
            for s in ours + theirs:
                at = shards.index(myid(s))
                assert shards[at:at + 200].split("\n")[1:5] == [
                    "port", str(s.port), "tls-port", str(s.tls_port)], shards[at:at + 200]
    finally:
        for s in ours + theirs:
            s.stop()
