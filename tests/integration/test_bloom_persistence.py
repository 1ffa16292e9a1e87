"""BF.* filters survive restart and kill -9; corrupt lines cause no false
negatives; a missing filter file is rebuilt from the AOF. Needs `--appendonly yes`."""

import glob
import os
import random
import signal

import pytest

from bloom_support import start_blinkdb


def start(binary, directory):
    srv = start_blinkdb(binary, directory, "--appendonly", "yes", "--appendfsync", "always")
    return srv


@pytest.fixture
def aof_server(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    try:
        srv = start(blinkdb_binary, directory)
    except RuntimeError as e:
        pytest.skip(f"server rejects --appendonly yes (AOF not integrated yet): {e}")
    return blinkdb_binary, directory, srv


def items(n):
    return [f"item:{i}" for i in range(n)]


def check_all_present(conn, key, expected):
    found = conn.call("BF.MEXISTS", key, *expected).value
    missing = [x for x, (k, v) in zip(expected, found) if v in (0, False)]
    assert not missing, f"{len(missing)} false negatives, e.g. {missing[:3]}"


def test_restart_and_kill9_keep_every_item(aof_server):
    binary, directory, srv = aof_server
    c = srv.connect()
    c.call("BF.RESERVE", "f", "0.01", "500")
    c.call("BF.MADD", "f", *items(2000))
    card = c.call("BF.CARD", "f").value
    srv.stop()
    srv = start(binary, directory)
    c = srv.connect()
    check_all_present(c, "f", items(2000))
    assert c.call("BF.CARD", "f").value == card
    c.call("BF.MADD", "f", *items(2500)[2000:])
    card = c.call("BF.CARD", "f").value
    os.kill(srv.pid, signal.SIGKILL)
    srv.proc.wait()
    srv = start(binary, directory)
    c = srv.connect()
    check_all_present(c, "f", items(2500))
    assert c.call("BF.CARD", "f").value == card
    srv.stop()


def test_corrupt_lines_and_missing_file(aof_server):
    binary, directory, srv = aof_server
    c = srv.connect()
    c.call("BF.RESERVE", "a", "0.01", "5000")
    c.call("BF.MADD", "a", *items(3000))
    c.call("BF.RESERVE", "b", "0.01", "5000")
    c.call("BF.MADD", "b", *items(3000))
    srv.stop()
    files = sorted(glob.glob(os.path.join(directory, "bloom", "*.0.bloom")))
    assert len(files) == 2
    rng = random.Random(7)
    with open(files[0], "r+b") as f:
        lines = (os.path.getsize(files[0]) - 64) // 64
        for line in rng.sample(range(lines), max(1, lines // 50)):
            f.seek(64 + line * 64 + rng.randrange(60))
            f.write(bytes([rng.randrange(256)]))
    for path in glob.glob(files[1].replace(".0.bloom", ".*")):
        os.remove(path)
    srv = start(binary, directory)
    c = srv.connect()
    check_all_present(c, "a", items(3000))
    check_all_present(c, "b", items(3000))
    info = c.call("INFO", "bloom").value.decode()
    assert "bloom_filters_rebuilt:1" in info, info
    assert "bloom_corrupt_lines_at_start:0" not in info, info
    srv.stop()


def bloom_files(directory):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(directory, "bloom", "*")))


def test_filters_younger_than_a_flush_survive_kill9(aof_server):
    """A new filter lives in memory until the periodic flush writes its files: a kill -9
    before that rebuilds it from the AOF, COPY writes the copy's files at once, and
    RESERVE + DEL never touches the disk."""
    binary, directory, srv = aof_server
    c = srv.connect()
    for i in range(50):
        c.call("BF.RESERVE", f"tmp:{i}", "0.01", "1000")
        c.call("DEL", f"tmp:{i}")
    assert bloom_files(directory) == []
    c.call("BF.RESERVE", "young", "0.01", "300")
    c.call("BF.MADD", "young", *items(1000))  # grows the chain in memory
    card = c.call("BF.CARD", "young").value
    _, filters = c.call("BF.INFO", "young", "FILTERS").value[0]
    assert filters >= 2
    c.call("COPY", "young", "copied")
    assert any(name.endswith(".chain") for name in bloom_files(directory)), \
        "COPY must write the copy's files at once"
    os.kill(srv.pid, signal.SIGKILL)
    srv.proc.wait()
    srv = start(binary, directory)
    c = srv.connect()
    for key in ("young", "copied"):
        check_all_present(c, key, items(1000))
        assert c.call("BF.CARD", key).value == card
    assert c.call("EXISTS", "tmp:0").value == 0
    srv.stop()
