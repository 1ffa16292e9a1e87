"""Commands that read a value kept only in the log (at least blob-threshold bytes) and
change it, replayed at restart: the replay reads the value from the log being loaded.
(They used to find no log while loading, fail, and lose the change.)"""

from aof_helpers import start_aof_server


def test_edits_of_large_values_survive_restart(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    big = bytes(range(256)) * 100  # 25,600 bytes: above the 16kb threshold
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            for key in ("a", "r", "g"):
                assert conn.call("SET", key, big).raw == b"+OK\r\n"
            assert conn.call("APPEND", "a", "tail").value == len(big) + 4
            assert conn.call("SETRANGE", "r", "100", "middle").value == len(big)
            assert conn.call("GETDEL", "g").value == big
            want = {k: conn.call("GET", k).value for k in ("a", "r", "g")}
    finally:
        srv.stop()
    assert want["a"] == big + b"tail"
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect() as conn:
            assert {k: conn.call("GET", k).value for k in want} == want
    finally:
        srv.stop()
