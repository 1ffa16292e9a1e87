"""MULTI/EXEC/DISCARD/WATCH: Redis 7.0's replies, WATCH invalidation from other
connections, atomicity across connection threads, and the AOF's MULTI ... EXEC."""

import re
import threading
import time

import pytest

from aof_helpers import incr_files, redis_server, start_aof_server
from test_persistence_redis_interop import check_aof

EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"


def test_queue_exec_and_errors(blinkdb):
    with blinkdb.connect() as c:
        assert c.call("MULTI").raw == b"+OK\r\n"
        assert c.call("SET", "a", "x").raw == b"+QUEUED\r\n"
        assert c.call("INCR", "a").raw == b"+QUEUED\r\n"  # fails when run
        assert c.call("SET", "b", "1").raw == b"+QUEUED\r\n"
        reply = c.call("EXEC")
        assert reply.raw == (b"*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n"
                             b"+OK\r\n")
        assert c.call("GET", "b").value == b"1"
        # Errors at queue time abort the whole transaction.
        c.call("MULTI")
        c.call("SET", "c", "1")
        assert c.call("NOSUCH", "x").raw.startswith(b"-ERR unknown command 'NOSUCH'")
        assert c.call("GET").raw == b"-ERR wrong number of arguments for 'get' command\r\n"
        assert c.call("EXEC").raw == EXECABORT
        assert c.call("EXISTS", "c").value == 0
        # Redis's texts for misuse.
        assert c.call("EXEC").raw == b"-ERR EXEC without MULTI\r\n"
        assert c.call("DISCARD").raw == b"-ERR DISCARD without MULTI\r\n"
        c.call("MULTI")
        assert c.call("MULTI").raw == b"-ERR MULTI calls can not be nested\r\n"
        assert c.call("WATCH", "a").raw == b"-ERR WATCH inside MULTI is not allowed\r\n"
        assert c.call("SET", "d", "1").raw == b"+QUEUED\r\n"
        assert c.call("DISCARD").raw == b"+OK\r\n"
        assert c.call("EXISTS", "d").value == 0
        c.call("MULTI")
        assert c.call("SHUTDOWN").raw == b"-ERR Command not allowed inside a transaction\r\n"
        assert c.call("EXEC").raw == EXECABORT
        # An empty transaction, and RESP3's null for an aborted EXEC.
        c.call("MULTI")
        assert c.call("EXEC").raw == b"*0\r\n"
        c.call("HELLO", "3")
        c.call("WATCH", "a")
        c.call("SET", "a", "changed")
        c.call("MULTI")
        assert c.call("EXEC").raw == b"_\r\n"


def exec_after(c, other, change, key="w"):
    """WATCH `key`, let `change` run on the other connection, then MULTI/EXEC."""
    c.call("WATCH", key)
    change(other)
    c.call("MULTI")
    c.call("PING")
    return c.call("EXEC").raw


CHANGES = {
    "set": lambda o: o.call("SET", "w", "2"),
    "del": lambda o: o.call("DEL", "w"),
    "expire": lambda o: o.call("EXPIRE", "w", "100"),
    "persist-noop-vs-incr": lambda o: o.call("INCR", "n"),  # a different key: no change
    "flushdb": lambda o: o.call("FLUSHDB"),
    "flushall": lambda o: o.call("FLUSHALL"),
    "swapdb": lambda o: o.call("SWAPDB", "0", "1"),
    "rename": lambda o: o.call("RENAME", "w", "w2"),
    "move": lambda o: o.call("MOVE", "w", "3"),
    "append": lambda o: o.call("APPEND", "w", "x"),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_watch_sees_changes_from_other_connections(blinkdb, name):
    with blinkdb.connect() as c, blinkdb.connect() as other:
        other.call("FLUSHALL")
        other.call("SET", "w", "1")
        reply = exec_after(c, other, CHANGES[name])
        if name == "persist-noop-vs-incr":
            assert reply == b"*1\r\n+PONG\r\n"
        else:
            assert reply == b"*-1\r\n", name


def test_watch_bloom_writes_expiry_and_stale_keys(blinkdb):
    with blinkdb.connect() as c, blinkdb.connect() as other:
        other.call("BF.RESERVE", "bf", "0.01", "100")
        assert exec_after(c, other, lambda o: o.call("BF.ADD", "bf", "x"), key="bf") == b"*-1\r\n"
        # A key that expires after WATCH fails EXEC, even before anything deletes it.
        other.call("SET", "w", "1", "PX", "50")
        c.call("WATCH", "w")
        time.sleep(0.1)
        c.call("MULTI")
        assert c.call("EXEC").raw == b"*-1\r\n"
        # A key already expired when watched: deleting it is no change.
        other.call("SET", "s", "1", "PX", "1")
        time.sleep(0.05)
        c.call("WATCH", "s")
        other.call("DEL", "s")
        c.call("MULTI")
        assert c.call("EXEC").raw == b"*0\r\n"
        # UNWATCH, DISCARD and EXEC forget the watched keys.
        other.call("SET", "w", "1")
        c.call("WATCH", "w")
        c.call("UNWATCH")
        other.call("SET", "w", "2")
        c.call("MULTI")
        assert c.call("EXEC").raw == b"*0\r\n"
        c.call("WATCH", "w")
        c.call("MULTI")
        c.call("DISCARD")
        other.call("SET", "w", "3")
        c.call("MULTI")
        assert c.call("EXEC").raw == b"*0\r\n"
        # WATCH remembers the database of a key.
        c.call("SELECT", "5")
        c.call("WATCH", "w")
        other.call("SET", "w", "4")  # db 0: not the watched key
        c.call("MULTI")
        assert c.call("EXEC").raw == b"*0\r\n"


def test_exec_is_atomic_across_connection_threads(server_factory):
    srv = server_factory("--io-threads", "2")
    stop = threading.Event()

    def writer():
        with srv.connect() as o:
            while not stop.is_set():
                o.pipeline([("SET", "k", "intruder")] * 20)

    writers = [threading.Thread(target=writer) for _ in range(3)]
    for t in writers:
        t.start()
    try:
        conns = [srv.connect() for _ in range(4)]  # spread over both threads
        for i in range(300):
            c = conns[i % len(conns)]
            c.call("MULTI")
            for n in range(5):
                c.call("SET", "k", f"mine{n}")
                c.call("GET", "k")
            reply = c.call("EXEC").value
            gets = [v for _, v in reply[1::2]]
            assert gets == [f"mine{n}".encode() for n in range(5)], gets
        for c in conns:
            c.close()
    finally:
        stop.set()
        for t in writers:
            t.join()


def test_aof_records_transactions_and_never_applies_half_of_one(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "aof")
    srv = start_aof_server(blinkdb_binary, directory)
    with srv.connect() as c:
        c.call("SET", "before", "1")
        c.call("MULTI")
        c.call("SET", "t1", "1")
        c.call("INCR", "t2")
        c.call("EXEC")
    srv.stop()
    check_aof(directory)
    data = open(incr_files(directory)[-1], "rb").read()
    multi, exec_ = data.index(b"*1\r\n$5\r\nMULTI\r\n"), data.index(b"*1\r\n$4\r\nEXEC\r\n")
    assert multi < data.index(b"t1") < data.index(b"t2") < exec_
    # redis-server 7 loads the file with the transaction.
    oracle = redis_server(directory, str(tmp_path / "oracle-log"))
    with oracle.connect() as c:
        assert c.call("MGET", "before", "t1", "t2").value == [(b"$", b"1")] * 3
    oracle.stop()
    # Cut the file inside the transaction: BlinkDB loads what preceded it only.
    with open(incr_files(directory)[-1], "r+b") as f:
        f.truncate(data.index(b"t2"))
    srv = start_aof_server(blinkdb_binary, directory)
    with srv.connect() as c:
        assert c.call("GET", "before").value == b"1"
        assert c.call("EXISTS", "t1", "t2").value == 0
    srv.stop()


def test_redis_py_transactions(blinkdb):
    redis = pytest.importorskip("redis")
    r = redis.Redis(port=blinkdb.port)
    with r.pipeline() as p:  # transaction=True by default
        p.set("x", 1).incr("x").get("x")
        assert p.execute() == [True, 2, b"2"]

    attempts = []

    def bump(pipe):
        value = int(pipe.get("x"))
        attempts.append(value)
        if len(attempts) == 1:
            redis.Redis(port=blinkdb.port).set("x", 100)  # forces one retry
        pipe.multi()
        pipe.set("x", value + 1)

    r.transaction(bump, "x")
    assert r.get("x") == b"101" and len(attempts) == 2
    with r.pipeline() as p:
        p.set("y", 1)
        p.execute_command("NOSUCHCMD")
        with pytest.raises(redis.exceptions.ResponseError):
            p.execute()
    assert r.exists("y") == 0


def test_refused_exec_is_aborted_as_in_redis(servers):
    # Redis's rejectCommand: an EXEC refused by any admission check discards the
    # transaction and answers EXECABORT with the reason (without the ERR of a
    # reason that has no code), and counts a rejected call.
    def run(srv):
        replies = []
        with srv.connect() as a, srv.connect() as b:
            for cmd in (("EXEC", "x"), ("MULTI",), ("SET", "a", "1"), ("EXEC", "x"), ("EXEC",),
                        ("MULTI",), ("SET", "a", "1")):
                replies.append(a.call(*cmd).raw)
            # A replica refuses the queued write at EXEC time.
            replies.append(b.call("REPLICAOF", "127.0.0.1", "1").raw)
            replies.append(a.call("EXEC").raw)
            replies.append(a.call("EXEC").raw)
            replies.append(b.call("REPLICAOF", "NO", "ONE").raw)
            stats = b.call("INFO", "commandstats").value.decode()
            replies.append(re.search(r"cmdstat_exec:calls=\d+,.*?(rejected_calls=\d+,failed_calls=\d+)", stats).group(1))
        return replies

    ours, theirs = run(servers["blinkdb"]), run(servers["redis"])
    assert ours == theirs
    assert theirs[3].startswith(b"-EXECABORT Transaction discarded because of: wrong number")
    assert theirs[8].startswith(b"-EXECABORT Transaction discarded because of: READONLY")
