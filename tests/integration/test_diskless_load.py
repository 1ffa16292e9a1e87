"""repl-diskless-load on a BlinkDB replica (issue 22): disabled, on-empty-db and swapdb.

Each mode syncs from redis-server 7.0.15 and from BlinkDB, each with repl-diskless-sync
no (`$<len>` payload) and yes (`$EOF:<mark>`), into a replica holding data and into an
empty one; DEBUG DIGEST of the replica equals the master's afterwards, and the log says
whether the RDB went to disk or to the parser. A fake master then sends truncated or
corrupt RDBs in both forms: with swapdb the replica keeps its old data (DEBUG DIGEST
unchanged) and retries; with on-empty-db nothing half-loaded is served; the server stays
up. CONFIG SET of a bad value answers as redis-server does."""

import os

import pytest

from rdb_helpers import DEBUG, assert_same_digests, client
from resp import RespConnection
from fake_master import FakeMaster
from server import base_args, free_port
from test_replication import info, peers, replica_log, start_redis, wait_for  # noqa: F401

MODES = ["disabled", "on-empty-db", "swapdb"]


def fill(c, prefix, n=300):
    """Every type, expiries, a big string, several databases."""
    p = c.pipeline(transaction=False)
    for i in range(n):
        p.set(f"{prefix}:s:{i}", f"v{i}" * (i % 7 + 1))
        if i % 10 == 0:
            p.hset(f"{prefix}:h:{i}", mapping={f"f{j}": j for j in range(i % 40 + 1)})
            p.rpush(f"{prefix}:l:{i}", *[f"e{j}" for j in range(i % 30 + 1)])
            p.sadd(f"{prefix}:set:{i}", *[j for j in range(i % 25 + 1)])
            p.zadd(f"{prefix}:z:{i}", {f"m{j}": j / 3 for j in range(i % 50 + 1)})
            p.set(f"{prefix}:ttl:{i}", "t", px=10_000_000)
            p.xadd(f"{prefix}:x:{i}", {"a": i})
    p.set(f"{prefix}:big", "B" * 300_000)
    p.execute()
    c3 = client(c.connection_pool.connection_kwargs["port"], 3)
    c3.set(f"{prefix}:db3", "three")
    c3.sadd(f"{prefix}:db3:set", "a", "b")


def replica_of(server_factory, master_port, mode, with_data, name):
    srv = server_factory(*DEBUG, "--repl-diskless-load", mode, name=name)
    r = client(srv.port)
    if with_data:
        fill(r, "old", 100)
    r.execute_command("REPLICAOF", "127.0.0.1", master_port)
    return srv, r


def synced(r):
    wait_for(lambda: info(r).get("master_link_status") == "up", timeout=30,
             what="replica link up")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("master_kind,diskless", [
    ("redis", "no"), ("redis", "yes"), ("blinkdb", "no"), ("blinkdb", "yes")])
def test_sync_in_each_mode_from_each_master(server_factory, tmp_path, peers, mode,
                                            master_kind, diskless):
    sync_args = ["--repl-diskless-sync", diskless, "--repl-diskless-sync-delay", "0"]
    if master_kind == "redis":
        master = start_redis(peers, tmp_path, "master", [*DEBUG, *sync_args])
    else:
        master = server_factory(*DEBUG, *sync_args, name="master")
    m = client(master.port)
    fill(m, "new")
    full, _ = replica_of(server_factory, master.port, mode, True, "full")
    empty, _ = replica_of(server_factory, master.port, mode, False, "empty")
    for srv in (full, empty):
        r = client(srv.port)
        synced(r)
        m.set("after:sync", srv.port)
        wait_for(lambda: r.get("after:sync") == str(srv.port).encode(),
                 what="the stream after the sync")
        assert_same_digests(master.port, srv.port)
        assert r.get("old:s:1") is None
        log = replica_log(srv)
        parser = "from master to parser" in log or "with EOF to parser" in log
        disk = "from master to disk" in log or "with EOF to disk" in log
        to_parser = mode == "swapdb" or (mode == "on-empty-db" and srv is empty)
        assert (parser, disk) == (to_parser, not to_parser), log[-3000:]
        assert info(r, "persistence")["loading"] == "0"
        assert info(r, "persistence")["async_loading"] == "0"
        assert info(r)["master_sync_in_progress"] == "0"
        if mode == "swapdb":
            assert "Setting the current data aside (swapdb)" in log
        # No temp file left behind.
        assert not [f for f in os.listdir(srv.dir) if f.startswith("temp-")]


def rdb_of_many_keys(peers, tmp_path):
    """A redis-server RDB with 2000 keys (a stream cut at half still holds whole keys)."""
    srv = start_redis(peers, tmp_path, "rdb-maker", ["--dbfilename", "many.rdb"])
    c = client(srv.port)
    fill(c, "fake", 2000)
    c.save()
    with open(os.path.join(str(tmp_path / "rdb-maker"), "many.rdb"), "rb") as f:
        return f.read()


MARK = b"0123456789abcdef0123456789abcdef01234567"


def faults(rdb):
    """name -> (bytes after +FULLRESYNC, whether the master then closes the link)."""
    half = rdb[: len(rdb) // 2]
    corrupt = bytearray(rdb)
    # A value's byte (past the first keys): only the CRC-64 tells.
    at = rdb.index(b"fake:s:1500")
    corrupt[at + 20] ^= 0x01
    corrupt = bytes(corrupt)
    garbage = rdb[: len(rdb) // 2] + b"\xee" * 64 + rdb[len(rdb) // 2 + 64:]
    return {
        "len-truncated": (b"$%d\r\n" % len(rdb) + half, True),
        "len-corrupt-crc": (b"$%d\r\n" % len(rdb) + corrupt, False),
        "len-bad-opcode": (b"$%d\r\n" % len(rdb) + garbage, False),
        "eof-truncated": (b"$EOF:" + MARK + b"\r\n" + half, True),
        "eof-corrupt-crc": (b"$EOF:" + MARK + b"\r\n" + corrupt + MARK, False),
        "eof-bad-mark": (b"$EOF:" + MARK + b"\r\n" + rdb + MARK[:-1] + b"X", True),
        # The link kept open: the bytes after the RDB are not the mark, found at once.
        "eof-bad-mark-open": (b"$EOF:" + MARK + b"\r\n" + rdb + b"Y" + MARK[1:], False),
        "eof-cut-in-mark": (b"$EOF:" + MARK + b"\r\n" + rdb + MARK[:20], True),
    }


def count_failed_loads(srv):
    with open(srv.log_path, "rb") as f:
        text = f.read().decode(errors="replace")
    return (text.count("MASTER <-> REPLICA sync: Discarding temporary DB")
            + text.count("MASTER <-> REPLICA sync: Discarding the half-loaded data"))


@pytest.mark.parametrize("mode", ["on-empty-db", "swapdb"])
def test_fake_master_faults_leave_nothing_half_loaded(server_factory, tmp_path, peers, mode):
    rdb = rdb_of_many_keys(peers, tmp_path)
    srv = server_factory(*DEBUG, "--repl-diskless-load", mode)
    r = client(srv.port)
    if mode == "swapdb":
        fill(r, "mine", 200)
    before = r.execute_command("DEBUG", "DIGEST")
    keys_before = r.dbsize()
    failed_loads = 0
    for name, (payload, close) in faults(rdb).items():
        fake = FakeMaster(lambda n, p=payload: p, close)
        try:
            r.execute_command("REPLICAOF", "127.0.0.1", fake.port)
            wait_for(lambda: fake.connections >= 2, timeout=30,
                     what=f"{name}: the replica retries")
            # No attempt after these; every payload sent was loaded and refused (one
            # log line each) before the data is compared: a handshake that passed
            # before the stop and a payload still unread would otherwise start a load
            # after an INFO that said none was under way.
            fake.stop()
            failed_loads += fake.payloads
            wait_for(lambda: count_failed_loads(srv) >= failed_loads, timeout=30,
                     what=f"{name}: every payload refused")
            wait_for(lambda: info(r)["master_sync_in_progress"] == "0"
                     and info(r, "persistence")["loading"] == "0", timeout=30,
                     what=f"{name}: no load under way")
            assert r.ping()
            # Between attempts: the old data (swapdb) or nothing (on-empty-db).
            assert r.execute_command("DEBUG", "DIGEST") == before, name
            assert r.dbsize() == keys_before, name
            assert r.get("fake:s:1") is None
            assert info(r)["master_link_status"] == "down"
        finally:
            r.execute_command("REPLICAOF", "NO", "ONE")
            fake.stop()
    log = replica_log(srv)
    assert "Failed trying to load the MASTER synchronization DB from socket" in log
    assert "Wrong RDB checksum" in log
    if mode == "swapdb":
        assert "Discarding temporary DB in background (the old data restored" in log
    # Then a good sync in the same form replaces the data.
    good = FakeMaster(lambda n: b"$EOF:" + MARK + b"\r\n" + rdb + MARK, False)
    try:
        r.execute_command("REPLICAOF", "127.0.0.1", good.port)
        synced(r)
        assert r.get("fake:s:1") is not None
        assert r.get("mine:s:1") is None
        assert r.dbsize() > 2000
    finally:
        r.execute_command("REPLICAOF", "NO", "ONE")
        good.stop()


def test_a_fault_then_a_good_sync_on_the_next_attempt(server_factory, tmp_path, peers):
    """swapdb, $len form: the first attempt is cut, the replica retries by itself and the
    second one loads."""
    rdb = rdb_of_many_keys(peers, tmp_path)
    srv = server_factory(*DEBUG, "--repl-diskless-load", "swapdb")
    r = client(srv.port)
    fill(r, "mine", 50)
    fake = FakeMaster(lambda n: b"$%d\r\n" % len(rdb) + (rdb[:1000] if n == 1 else rdb), False)
    # The first attempt stalls on its cut payload until repl-timeout: a short one.
    r.config_set("repl-timeout", 2)
    try:
        r.execute_command("REPLICAOF", "127.0.0.1", fake.port)
        synced(r)
        assert fake.connections >= 2
        assert r.get("mine:s:1") is None
        assert r.get("fake:s:1") is not None
    finally:
        r.execute_command("REPLICAOF", "NO", "ONE")
        fake.stop()


def test_config_values_and_errors_match_redis(server_factory, oracle):
    srv = server_factory()
    for port in (srv.port, oracle.port):
        with RespConnection(port) as c:
            assert c.call("CONFIG", "GET", "repl-diskless-load").raw == (
                b"*2\r\n$18\r\nrepl-diskless-load\r\n$8\r\ndisabled\r\n")
    replies = []
    for port in (srv.port, oracle.port):
        with RespConnection(port) as c:
            got = []
            for value in ("on-empty-db", "swapdb", "SWAPDB", "bogus", "", "disabled"):
                got.append(c.call("CONFIG", "SET", "repl-diskless-load", value).raw)
                got.append(c.call("CONFIG", "GET", "repl-diskless-load").raw)
            replies.append(got)
    assert replies[0] == replies[1]
    assert b"must be one of the following: disabled, on-empty-db, swapdb" in b"".join(
        replies[0])


def test_option_on_the_command_line_and_in_the_config_file(server_factory, tmp_path):
    srv = server_factory("--repl-diskless-load", "swapdb")
    assert client(srv.port).config_get("repl-diskless-load") == {
        "repl-diskless-load": "swapdb"}
    conf = tmp_path / "dl.conf"
    conf.write_text("repl-diskless-load on-empty-db\n")
    port = free_port()
    srv2 = server_factory(port=port, args=[str(conf), *base_args(port, str(tmp_path / "ff"))],
                          name="fromfile")
    assert client(srv2.port).config_get("repl-diskless-load") == {
        "repl-diskless-load": "on-empty-db"}


def test_swapdb_with_large_values_blooms_and_the_aof(server_factory, tmp_path, peers):
    """A BlinkDB master's large values (kept in the log) and Bloom filters reach a swapdb
    replica with appendonly yes through the socket as through a file; a failed swapdb
    sync then leaves that data, on-disk values included, readable, and the AOF still
    holds it: the replica killed with -9 restarts with the same data."""
    import random

    from test_rdb_bloom import scandump

    rng = random.Random(7)
    master = server_factory(*DEBUG, "--appendonly", "yes", "--repl-diskless-sync", "yes",
                            "--repl-diskless-sync-delay", "0", name="master")
    m = client(master.port)
    big = {f"big:{i}": rng.randbytes(rng.randint(20_000, 200_000)) for i in range(6)}
    for k, v in big.items():
        m.set(k, v)
    m.pexpire("big:0", 100_000_000)
    m.execute_command("BF.RESERVE", "bf", "0.01", "1000")
    m.execute_command("BF.MADD", "bf", *[f"i{i}" for i in range(300)])
    fill(m, "new", 200)
    replica = server_factory(*DEBUG, "--appendonly", "yes", "--repl-diskless-load", "swapdb",
                             name="replica")
    r = client(replica.port)
    fill(r, "mine", 50)
    r.execute_command("REPLICAOF", "127.0.0.1", master.port)
    synced(r)
    assert r.get("mine:s:1") is None

    def check(r):
        for k, v in big.items():
            assert r.get(k) == v, k
            assert (r.memory_usage(k) or 0) < 1024, k
        assert 0 < r.pttl("big:0")
        assert scandump(r, "bf") == scandump(m, "bf")

    check(r)
    assert_same_digests(master.port, replica.port)
    log = replica_log(replica)
    assert "with EOF to parser" in log and "large values kept in the log" in log
    digest = r.execute_command("DEBUG", "DIGEST")
    rdb = rdb_of_many_keys(peers, tmp_path)
    bad = FakeMaster(lambda n: b"$%d\r\n" % len(rdb) + rdb[:-3] + b"zzz", False)
    try:
        r.execute_command("REPLICAOF", "127.0.0.1", bad.port)
        wait_for(lambda: bad.connections >= 2, timeout=30, what="the replica retries")
        check(r)
        assert r.execute_command("DEBUG", "DIGEST") == digest
    finally:
        r.execute_command("REPLICAOF", "NO", "ONE")
        bad.stop()
    replica.proc.kill()
    replica.proc.wait()
    again = server_factory(*DEBUG, "--appendonly", "yes", name="replica")
    r2 = client(again.port)
    check(r2)
    assert r2.execute_command("DEBUG", "DIGEST") == digest
