"""Issue 17: filters deleted before a clean shutdown (FLUSHALL, SET over the key,
DEL) must not make the restart warn that their files are unusable: their files
were removed on purpose. A surviving filter whose files really are gone still
warns, so the check below can see a warning when there is one."""

import glob
import os

import pytest

from aof_helpers import start_aof_server

ITEMS = [f"item-{i}" for i in range(300)]


def restart_log(srv):
    """The log lines written by one server run, up to "Ready to accept"."""
    text = open(srv.log_path, "rb").read().decode(errors="replace")
    lines = text.splitlines()
    ready = next(i for i, line in enumerate(lines) if "Ready to accept connections" in line)
    return lines[:ready + 1]


def fill(conn):
    for key in ("gone-flush", "gone-set", "gone-del", "keep"):
        assert not conn.call("BF.RESERVE", key, "0.01", "100").is_error()
        assert not conn.call("BF.MADD", key, *ITEMS).is_error()
    assert conn.call("SET", "s1", "v1").raw == b"+OK\r\n"
    assert conn.call("FLUSHALL").raw == b"+OK\r\n"
    # After the FLUSHALL: filters created again, then deleted two other ways.
    for key in ("gone-set", "gone-del", "keep"):
        assert not conn.call("BF.RESERVE", key, "0.01", "100").is_error()
        added = conn.call("BF.MADD", key, *ITEMS)
        assert not added.is_error()
    assert conn.call("SET", "gone-set", "now a string").raw == b"+OK\r\n"
    assert conn.call("DEL", "gone-del").value == 1
    assert conn.call("SET", "s2", "v2").raw == b"+OK\r\n"
    # Adds that met a false positive are not counted (RedisBloom's bits: one of 300 here).
    return sum(v for _, v in added.value)


def check_data(conn, card):
    assert conn.call("BF.CARD", "keep").value == card
    flags = [v for _, v in conn.call("BF.MEXISTS", "keep", *ITEMS).value]
    assert flags == [1] * len(ITEMS)
    assert conn.call("GET", "gone-set").value == b"now a string"
    assert conn.call("EXISTS", "gone-del", "gone-flush", "s1").value == 0
    assert conn.call("GET", "s2").value == b"v2"
    assert conn.call("DBSIZE").value == 3


def run(binary, directory, log_name):
    return start_aof_server(binary, directory, "--appendfsync", "always",
                            log_dir=os.path.join(directory, log_name))


@pytest.mark.parametrize("lose_survivor", [False, True])
def test_clean_restart_after_deleting_filters_logs_no_warning(blinkdb_binary, tmp_path,
                                                              lose_survivor):
    directory = str(tmp_path / "d")
    first = run(blinkdb_binary, directory, "run1")
    try:
        with first.connect() as conn:
            card = fill(conn)
    finally:
        first.stop()
    assert first.proc.returncode == 0
    # Only the surviving filter keeps files (written at the latest by the shutdown).
    assert len(glob.glob(os.path.join(directory, "bloom", "*.chain"))) == 1
    if lose_survivor:
        for path in glob.glob(os.path.join(directory, "bloom", "*.chain")):
            os.remove(path)
    second = run(blinkdb_binary, directory, "run2")
    try:
        with second.connect() as conn:
            check_data(conn, card)
            rebuilds = [line for line in conn.call("INFO", "bloom").value.decode().splitlines()
                        if line.startswith("bloom_filters_rebuilt:")]
    finally:
        second.stop()
    warnings = [line for line in restart_log(second) if " WARN " in line]
    if lose_survivor:
        # The real loss is still reported, once, for the surviving filter only.
        assert len(warnings) == 1, warnings
        assert "unusable" in warnings[0] and "MetadataMissing" in warnings[0]
        assert rebuilds == ["bloom_filters_rebuilt:1"], rebuilds
    else:
        assert warnings == [], "\n".join(restart_log(second))
        assert rebuilds == ["bloom_filters_rebuilt:0"], rebuilds
