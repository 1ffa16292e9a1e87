"""DEBUG POPULATE as redis-server 7.0.15 answers it (Redis's own suite builds its datasets with
it): keys `<prefix>:<n>` holding `value:<n>` cut or zero-padded to a size, existing keys left
alone, Redis's errors, and the keys neither logged nor replicated."""

from server import ORACLE_BIN, ServerProcess
from resp import RespConnection

DEBUG = ["--enable-debug-command", "yes"]


def replies(port):
    out = []
    with RespConnection(port) as c:
        def call(*args):
            out.append(c.call(*args).raw)
        call("SET", "key:3", "mine")
        for args in (["100"], ["10", "p", "3"], ["3", "q", "12"], ["2", "r", "0"], ["-1"],
                     ["x"], ["1", "k", "-5"], ["1", "k", "y"], ["0"], ["1", "a", "2", "extra"]):
            call("DEBUG", "POPULATE", *args)
        call("DBSIZE")
        for key in ("key:0", "key:3", "key:99", "key:100", "p:1", "q:2", "r:1"):
            call("GET", key)
        call("STRLEN", "q:0")
        call("TYPE", "key:7")
    return out


def test_populate_answers_as_redis(blinkdb_binary, tmp_path):
    mine = ServerProcess(blinkdb_binary, str(tmp_path / "blinkdb"), DEBUG)
    theirs = ServerProcess(ORACLE_BIN, str(tmp_path / "redis"), DEBUG)
    try:
        assert replies(mine.port) == replies(theirs.port)
    finally:
        mine.stop()
        theirs.stop()


def test_populated_keys_are_not_logged(blinkdb_binary, tmp_path):
    """With the AOF on, a restart brings back what was written, not what DEBUG POPULATE made
    (as redis-server: DEBUG POPULATE is not propagated)."""
    directory = str(tmp_path / "aof")
    args = DEBUG + ["--appendonly", "yes"]
    srv = ServerProcess(blinkdb_binary, directory, args)
    try:
        with RespConnection(srv.port) as c:
            c.call("SET", "written", "1")
            assert c.call("DEBUG", "POPULATE", "1000", "big", "5000").raw == b"+OK\r\n"
            assert c.call("DBSIZE").value == 1001
            assert c.call("STRLEN", "big:999").value == 5000
    finally:
        srv.stop()
    srv = ServerProcess(blinkdb_binary, directory, args, port=srv.port)
    try:
        with RespConnection(srv.port) as c:
            assert c.call("DBSIZE").value == 1
            assert c.call("GET", "written").value == b"1"
    finally:
        srv.stop()
