"""Kernel filters across server restarts (run as root): a restart reopens the
pinned map (same map id, nothing rebuilt); a pin removed by hand is rebuilt
from the log with every item present, even after an AOF rewrite and with the
filter's side log gone too; DEL after that unpins."""

import glob
import os

import pytest

from aof_helpers import bgrewriteaof, wait_rewrite_done
from bloom_support import start_blinkdb
from test_bloom_kernel import map_show, pin_root  # noqa: F401  (fixture)


def info_field(conn, key, name):
    flat = [v for _, v in conn.call("BF.INFO", key).value]
    return flat[flat.index(name) + 1]


def start(binary, directory, root):
    return start_blinkdb(binary, directory, "--appendonly", "yes", "--bpf-pin-root", root)


def test_restart_reuses_pin_and_missing_pin_is_rebuilt(blinkdb_binary, tmp_path, pin_root):  # noqa: F811
    directory = str(tmp_path / "d")
    items = [f"item{i}" for i in range(3000)]
    srv = start(blinkdb_binary, directory, pin_root)
    try:
        c = srv.connect()
        r = c.call("BF.RESERVE", "k", "0.01", "5000", "BACKEND", "kernel")
        if r.is_error():
            pytest.skip(f"KERNEL BLOOM TESTS SKIPPED: {r.value!r}")
        for i in range(0, len(items), 500):
            c.call("BF.MADD", "k", *items[i:i + 500])
        first_id = info_field(c, "k", b"Map id")
        pinned = info_field(c, "k", b"Pinned path").decode()
    finally:
        srv.stop()

    # Restart: the pin outlived the process and is reopened as it is.
    assert map_show(pinned)["id"] == first_id
    srv = start(blinkdb_binary, directory, pin_root)
    try:
        c = srv.connect()
        assert info_field(c, "k", b"Map id") == first_id
        assert all(v for _, v in c.call("BF.MEXISTS", "k", *items).value)
        # The rewritten base must carry every stored value (three records' worth).
        bgrewriteaof(c)
        assert wait_rewrite_done(c)["aof_last_bgrewrite_status"] == "ok"
    finally:
        srv.stop()

    # A pin removed by hand (as after a reboot), and the side log with it:
    # rebuilt from the rewritten AOF.
    os.unlink(pinned)
    side_logs = glob.glob(os.path.join(directory, "**", "*.klog"), recursive=True)
    assert side_logs, "no kernel side log found"
    for path in side_logs:
        os.unlink(path)
    srv = start(blinkdb_binary, directory, pin_root)
    try:
        c = srv.connect()
        rebuilt_id = info_field(c, "k", b"Map id")
        assert rebuilt_id != first_id
        assert map_show(pinned)["id"] == rebuilt_id
        assert all(v for _, v in c.call("BF.MEXISTS", "k", *items).value), "an item was lost"
        assert c.call("BF.CARD", "k").value >= len(items) * 0.99
        assert c.call("DEL", "k").value == 1
        assert not os.path.exists(pinned)
    finally:
        srv.stop()
