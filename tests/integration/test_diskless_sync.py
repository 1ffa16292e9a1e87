"""The diskless full sync of a BlinkDB master (repl-diskless-sync yes), as Redis 7.0:
`+FULLRESYNC`, `$EOF:<40 chars>`, the RDB, the same 40 chars; the stream only after the
replica's first REPLCONF ACK; replicas arriving within repl-diskless-sync-delay share
one snapshot, a replica arriving once the transfer began waits for the next one; a
redis-server 7.0 replica and a BlinkDB replica load it (large values kept on disk and
Bloom filters included); a replica that goes away during the transfer does not hurt the
others or the master."""

import random
import re
import threading
import time

from rdb_helpers import client
from resp import RespConnection
from test_rdb_bloom import scandump
from test_replica import blink_replica, caught_up
from test_replica import linked as blink_linked
from test_replication import (  # noqa: F401  (peers is a fixture)
    info,
    linked,
    peers,
    replica_log,
    same_keyspace_but_group_counters,
    start_replica,
    wait_for,
)


def diskless_master(server_factory, delay=0, max_replicas=0, *extra):
    return server_factory(
        "--repl-diskless-sync", "yes",
        "--repl-diskless-sync-delay", str(delay),
        "--repl-diskless-sync-max-replicas", str(max_replicas),
        *extra,
    )


def fill(m, n, size, seed=1):
    """n keys of `size` random (incompressible) bytes."""
    rng = random.Random(seed)
    pipe = m.pipeline(transaction=False)
    for i in range(n):
        pipe.set(f"fill:{i}", rng.randbytes(size))
        if i % 500 == 499:
            pipe.execute()
    pipe.execute()


def raw_psync(port):
    c = RespConnection(port, timeout=30.0)
    assert c.call("REPLCONF", "listening-port", "1").raw == b"+OK\r\n"
    assert c.call("REPLCONF", "capa", "eof", "capa", "psync2").raw == b"+OK\r\n"
    c.send("PSYNC", "?", "-1")
    return c


def read_head(c):
    """+FULLRESYNC (after keepalive newlines) and the $EOF line: (offset, mark)."""
    line = c._line().lstrip(b"\n")
    m = re.fullmatch(rb"\+FULLRESYNC ([0-9a-f]{40}) (\d+)", line)
    assert m, line
    eof = c._line()
    assert re.fullmatch(rb"\$EOF:[0-9a-f]{40}", eof), eof
    return int(m.group(2)), eof[5:]


def read_rdb(c, mark):
    """Everything up to the mark, which must be the last bytes sent (nothing follows it
    until the replica ACKs)."""
    while True:
        data = bytes(c.buf[c.pos:])
        if data.endswith(mark):
            c.pos = len(c.buf)
            return data[: -len(mark)]
        c._fill()


def drain(c, wait=0.5):
    """What arrives within `wait` seconds (kept in c's buffer for later reads)."""
    got = b""
    deadline = time.monotonic() + wait
    try:
        while (left := deadline - time.monotonic()) > 0:
            c.sock.settimeout(left)
            chunk = c.sock.recv(1 << 16)
            if not chunk:
                break
            got += chunk
    except TimeoutError:
        pass
    finally:
        c.sock.settimeout(30.0)
    c.buf += got
    return got


def test_wire_format_and_stream_after_the_first_ack(server_factory):
    master = diskless_master(server_factory)
    m = client(master.port)
    m.set("k", "v")
    with raw_psync(master.port) as c:
        offset, mark = read_head(c)
        rdb = read_rdb(c, mark)
        assert rdb.startswith(b"REDIS0010") and b"redis-ver\x067.0.15" in rdb
        assert rdb[-9] == 0xFF  # EOF opcode, then the 8-byte checksum
        m.set("after", "1")
        # The stream waits for the replica's first ACK.
        assert drain(c) == b""
        assert "state=online" in info(m)["slave0"]
        c.send("REPLCONF", "ACK", offset)
        want = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nset\r\n$5\r\nafter\r\n$1\r\n1\r\n"
        while len(c.buf) - c.pos < len(want):
            c._fill()
        assert bytes(c.buf[c.pos:c.pos + len(want)]).lower() == want.lower()
    # A replica without `capa eof` gets the disk form.
    with RespConnection(master.port) as c:
        c.send("PSYNC", "?", "-1")
        assert c._line().lstrip(b"\n").startswith(b"+FULLRESYNC")
        assert re.fullmatch(rb"\$\d+", c._line().lstrip(b"\n"))
    assert "replicas sockets" in master.log_text()


def test_replicas_within_the_delay_share_a_snapshot_a_late_one_waits(server_factory):
    master = diskless_master(server_factory, delay=2)
    m = client(master.port)
    fill(m, 4000, 8192)  # 32 MB: more than the socket buffers and the fan-out queue
    started = time.monotonic()
    a = raw_psync(master.port)
    time.sleep(0.5)
    b = raw_psync(master.port)
    off_a, mark_a = read_head(a)
    assert time.monotonic() - started >= 1.5  # the delay, from the first arrival
    off_b, mark_b = read_head(b)
    assert (off_a, mark_a) == (off_b, mark_b)  # one snapshot
    # a reads, b does not: the transfer is stuck in the middle. A late replica waits.
    a._fill()
    c = raw_psync(master.port)
    m.set("late", "x")
    time.sleep(2.5)  # past the delay: still waiting for the running transfer
    states = [info(m)[f"slave{i}"] for i in range(3)]
    assert sum("state=wait_bgsave" in s for s in states) == 1, states
    assert sum("state=send_bulk" in s for s in states) == 2, states
    assert drain(c, 1.2).strip(b"\n") == b""  # keepalive newlines only
    rdb_a = [None]
    t = threading.Thread(target=lambda: rdb_a.__setitem__(0, read_rdb(a, mark_a)))
    t.start()
    rdb_b = read_rdb(b, mark_b)
    t.join(30)
    assert rdb_a[0] == rdb_b and len(rdb_b) > 32_000_000
    assert b"late" not in rdb_b
    # Now c's own snapshot: a new mark, a later offset, the late key in it.
    off_c, mark_c = read_head(c)
    assert mark_c != mark_a and off_c > off_a
    rdb_c = read_rdb(c, mark_c)
    assert b"late" in rdb_c
    for conn in (a, b, c):
        conn.close()


def test_redis_and_blinkdb_replicas_load_one_diskless_snapshot(server_factory, tmp_path, peers):
    from bloom_support import redisbloom_path

    rng = random.Random(7)
    master = diskless_master(server_factory, 2, 2, "--appendonly", "yes")
    m = client(master.port)
    big = {f"big:{i}": rng.randbytes(rng.randint(20_000, 300_000)) for i in range(6)}
    for k, v in big.items():
        m.set(k, v)
    assert (m.memory_usage("big:0") or 0) < 1024  # kept on disk on the master
    m.execute_command("BF.RESERVE", "bf:a", "0.01", "1000")
    m.execute_command("BF.MADD", "bf:a", *[f"i{i}" for i in range(300)])
    m.execute_command("BF.ADD", "bf:auto", "x")
    m.hset("h", mapping={"a": 1, "b": 2})
    m.zadd("z", {"m": 1.5})
    m.set("ttl", "v", px=100_000_000)
    fill(m, 2000, 100)
    redis = start_replica(peers, tmp_path, master.port,
                          extra=("--loadmodule", redisbloom_path()))
    blink = blink_replica(server_factory, master.port, "--appendonly", "yes")
    r, b = linked(redis), blink_linked(blink)
    m.set("after", "sync")
    assert m.execute_command("WAIT", 2, 5000) == 2
    caught_up(m, 2)
    # One snapshot for both (max-replicas 2 started it), with the EOF framing.
    assert master.log_text().count("target: replicas sockets (2 replicas)") == 1
    assert "receiving streamed RDB from master with EOF" in replica_log(redis)
    assert info(m)["slave0"].split(",")[2] == "state=online"
    assert info(m)["slave1"].split(",")[2] == "state=online"
    for rep in (r, b):
        assert info(rep)["master_link_status"] == "up"
        for k, v in big.items():
            assert rep.get(k) == v, k
        assert rep.get("after") == b"sync"
        assert rep.hgetall("h") == {b"a": b"1", b"b": b"2"}
        assert 0 < rep.pttl("ttl") <= 100_000_000
        assert rep.dbsize() == m.dbsize()
    assert (b.memory_usage("big:0") or 0) < 1024  # on disk on the BlinkDB replica too
    for key in ("bf:a", "bf:auto"):
        assert scandump(b, key) == scandump(m, key), key
    assert r.execute_command("BF.MEXISTS", "bf:a", *[f"i{i}" for i in range(300)]) == [1] * 300
    assert same_keyspace_but_group_counters(master.port, blink.port) > 2000


def test_a_replica_gone_mid_transfer_does_not_hurt_the_others(server_factory, tmp_path, peers):
    master = diskless_master(server_factory, 2, 3)
    m = client(master.port)
    fill(m, 4000, 8192)
    quitter = raw_psync(master.port)
    redis = start_replica(peers, tmp_path, master.port)
    blink = blink_replica(server_factory, master.port)
    read_head(quitter)
    quitter._fill()  # the transfer is under way
    quitter.close()
    r, b = linked(redis), blink_linked(blink)
    assert m.execute_command("WAIT", 2, 5000) == 2
    for rep in (r, b):
        assert rep.dbsize() == 4000
    assert r.get("fill:3999") == m.get("fill:3999") == b.get("fill:3999")
    assert m.ping()
    wait_for(lambda: info(m)["connected_slaves"] == "2", what="the quitter dropped")
    # Both replicas follow the stream.
    m.set("later", "1")
    assert m.execute_command("WAIT", 2, 5000) == 2
    assert r.get("later") == b"1" == b.get("later")
    # A later full sync works as well.
    with raw_psync(master.port) as c:
        _, mark = read_head(c)
        assert read_rdb(c, mark).startswith(b"REDIS0010")


def test_diskless_options_as_redis(server_factory, oracle):
    master = server_factory()
    for conn in (client(master.port), client(oracle.port)):
        conn.config_set("repl-diskless-sync-delay", "0")
        conn.config_set("repl-diskless-sync-max-replicas", "3")
        got = conn.config_get("repl-diskless-sync-*")
        assert got == {"repl-diskless-sync-delay": "0",
                       "repl-diskless-sync-max-replicas": "3"}, got
    for args in (("repl-diskless-sync", "maybe"), ("repl-diskless-sync-delay", "-1"),
                 ("repl-diskless-sync-max-replicas", "x")):
        with RespConnection(master.port) as a, RespConnection(oracle.port) as o:
            assert a.call("CONFIG", "SET", *args).raw == o.call("CONFIG", "SET", *args).raw
