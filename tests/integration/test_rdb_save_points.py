"""`save` points: CONFIG SET/GET as redis-server 7.0.15 answers them, a BGSAVE started
by the cron once a point is reached (INFO persistence's rdb_* fields tell it), none
without points, and SHUTDOWN saving when points are set."""

import os
import time

from rdb_helpers import client
from resp import ConnectionClosed, RespConnection


def raw(port, *args):
    with RespConnection(port) as c:
        return c.call(*args).raw


def test_config_matches_redis(blinkdb, oracle):
    for value in ["3600 1 300 100 60 10000", "", "1", "0 1", "1 -1", "a b", "1 2 3",
                  " 5   7 ", "10 0", "5 ", "+5 1", "5  1"]:
        got = raw(blinkdb.port, "CONFIG", "SET", "save", value)
        assert got == raw(oracle.port, "CONFIG", "SET", "save", value), value
        assert raw(blinkdb.port, "CONFIG", "GET", "save") == raw(oracle.port, "CONFIG", "GET", "save"), value


def shutdown(port, *args):
    """SHUTDOWN closes the connection without a reply when it goes ahead."""
    try:
        raw(port, "SHUTDOWN", *args)
    except ConnectionClosed:
        pass


def wait_for(cond, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_points_start_a_bgsave(server_factory):
    srv = server_factory("--save", "1 3")
    c = client(srv.port)
    path = os.path.join(srv.dir, "dump.rdb")
    assert c.config_get("save") == {"save": "1 3"}
    c.set("a", 1)
    c.set("b", 2)
    time.sleep(1.5)
    # Two changes: under the point's three.
    info = c.info("persistence")
    assert info["rdb_saves"] == 0 and info["rdb_changes_since_last_save"] == 2
    assert not os.path.exists(path)
    c.xadd("s", {"f": "v"})
    assert wait_for(lambda: c.info("persistence")["rdb_saves"] == 1)
    info = c.info("persistence")
    assert info["rdb_changes_since_last_save"] == 0
    assert info["rdb_last_bgsave_status"] == "ok"
    assert info["rdb_bgsave_in_progress"] == 0
    assert info["rdb_last_bgsave_time_sec"] >= 0
    assert abs(info["rdb_last_save_time"] - time.time()) < 5
    assert os.path.exists(path)
    # No points: writes stay unsaved.
    c.config_set("save", "")
    c.set("c", 3)
    time.sleep(1.5)
    assert c.info("persistence")["rdb_saves"] == 1


def test_sigterm_saves_with_points(server_factory):
    srv = server_factory("--save", "3600 1", "--appendonly", "no")
    c = client(srv.port)
    c.set("k", "v")
    path = os.path.join(srv.dir, "dump.rdb")
    assert not os.path.exists(path)
    srv.stop()
    assert os.path.exists(path)
    back = server_factory("--appendonly", "no", "--dbfilename", "dump.rdb",
                          "--load-rdb", path, name="back")
    assert client(back.port).get("k") == b"v"


def test_shutdown_with_and_without_save(server_factory):
    for args, saved in [((), True), (("NOSAVE",), False)]:
        srv = server_factory("--save", "3600 1", "--appendonly", "no")
        client(srv.port).set("k", "v")
        shutdown(srv.port, *args)
        srv.proc.wait(timeout=10)
        srv.stop()
        assert os.path.exists(os.path.join(srv.dir, "dump.rdb")) == saved, args
    # SAVE without points.
    srv = server_factory("--appendonly", "no")
    client(srv.port).set("k", "v")
    shutdown(srv.port, "SAVE")
    srv.proc.wait(timeout=10)
    srv.stop()
    assert os.path.exists(os.path.join(srv.dir, "dump.rdb"))


def test_flushall_with_points_saves_the_empty_dataset(blinkdb_binary, tmp_path):
    """As redis-server 7.0.15's flushAllDataAndResetRDB: with save points set, FLUSHALL writes
    dump.rdb at once, so rdb_changes_since_last_save is 0 and a crash right after it does not
    bring the flushed keys back from the last save."""
    from server import ORACLE_BIN, ServerProcess
    for name, binary in (("blinkdb", blinkdb_binary), ("redis", ORACLE_BIN)):
        directory = str(tmp_path / name)
        srv = ServerProcess(binary, directory, ["--save", "3600 1 300 100 60 10000"])
        try:
            c = client(srv.port)
            c.set("kept", "v")
            assert c.save()
            c.set("key", "value")
            assert c.info("persistence")["rdb_changes_since_last_save"] == 1, name
            assert c.flushall()
            assert c.info("persistence")["rdb_changes_since_last_save"] == 0, name
            srv.proc.kill()
            srv.proc.wait()
            srv.stop()
            srv = ServerProcess(binary, directory, ["--save", "3600 1 300 100 60 10000"],
                                port=srv.port)
            assert client(srv.port).dbsize() == 0, name
        finally:
            srv.stop()
    # Without save points the counter is not reset (unit/other's test before this one), and
    # FLUSHALL adds the keys it removed, as Redis's does.
    srv = ServerProcess(blinkdb_binary, str(tmp_path / "nosave"))
    try:
        c = client(srv.port)
        c.set("key", "value")
        c.set("other", "value")
        c.flushall()
        assert c.info("persistence")["rdb_changes_since_last_save"] == 4
    finally:
        srv.stop()


def test_flushall_aborts_a_bgsave(blinkdb_binary, tmp_path):
    """Redis's integration/rdb "Test FLUSHALL aborts bgsave", on both servers: a BGSAVE slowed
    by rdb-key-save-delay is aborted by FLUSHALL (its file would hold the flushed keys), which
    is not a failed save; the changes stay counted. With save points, the FLUSHALL's own save
    then writes the empty dataset."""
    from server import ORACLE_BIN, ServerProcess
    for name, binary in (("blinkdb", blinkdb_binary), ("redis", ORACLE_BIN)):
        for points in ("", "3600 1"):
            directory = str(tmp_path / ("%s-%s" % (name, "points" if points else "none")))
            srv = ServerProcess(binary, directory, ["--save", points])
            try:
                c = client(srv.port)
                c.config_set("rdb-key-save-delay", 1000)  # µs a key: 5 s for 5000 keys
                c.mset({"key:%d" % i: i for i in range(5000)})
                c.bgsave()
                assert c.info("persistence")["rdb_bgsave_in_progress"] == 1, name
                c.flushall()
                assert wait_for(lambda: c.info("persistence")["rdb_bgsave_in_progress"] == 0,
                                timeout=3), name
                info = c.info("persistence")
                assert info["rdb_last_bgsave_status"] == "ok", (name, info)
                path = os.path.join(directory, "dump.rdb")
                if points:
                    assert info["rdb_changes_since_last_save"] == 0, (name, info)
                    assert os.path.exists(path)
                else:
                    assert info["rdb_changes_since_last_save"] >= 1, (name, info)
                    assert not os.path.exists(path), name
                c.config_set("rdb-key-save-delay", 0)
                assert c.set("x", "xx")
            finally:
                srv.stop()
