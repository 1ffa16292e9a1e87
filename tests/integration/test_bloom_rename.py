"""Issue #6: a Bloom filter follows its key through RENAME, RENAMENX and MOVE.
Kernel filters: the pin moves to `<pin root>/<db>/k<hex key>` (old path gone, same
map id), a restart reopens it there without a rebuild, and a pin removed after the
rename is rebuilt under the new name. User filters: files are named by filter id,
so they do not move, and a restart after RENAME/MOVE finds every item."""

import os
import time

import pytest

from aof_helpers import kill9
from bloom_support import start_blinkdb
from test_bloom_kernel import map_show, pin_root  # noqa: F401  (fixture)


def info_field(conn, key, name):
    flat = [v for _, v in conn.call("BF.INFO", key).value]
    return flat[flat.index(name) + 1]


def server_info(conn, field):
    for line in conn.call("INFO", "all").value.decode().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    raise KeyError(field)


def pin_path(root, db, key):
    return os.path.join(root, str(db), "k" + key.encode().hex())


def start(binary, directory, root):
    return start_blinkdb(binary, directory, "--appendonly", "yes", "--bpf-pin-root", root)


def all_present(conn, key, items):
    return all(v for _, v in conn.call("BF.MEXISTS", key, *items).value)


def test_kernel_pin_follows_rename_renamenx_and_move(blinkdb_binary, tmp_path, pin_root):  # noqa: F811
    directory = str(tmp_path / "d")
    items = [f"item{i}" for i in range(2000)]
    other = [f"other{i}" for i in range(100)]
    srv = start(blinkdb_binary, directory, pin_root)
    try:
        c = srv.connect()
        r = c.call("BF.RESERVE", "a", "0.01", "5000", "BACKEND", "kernel")
        if r.is_error():
            pytest.skip(f"KERNEL BLOOM TESTS SKIPPED: {r.value!r}")
        for i in range(0, len(items), 500):
            c.call("BF.MADD", "a", *items[i:i + 500])
        map_id = info_field(c, "a", b"Map id")

        assert c.call("RENAME", "a", "b").raw == b"+OK\r\n"
        assert not os.path.exists(pin_path(pin_root, 0, "a"))
        assert map_show(pin_path(pin_root, 0, "b"))["id"] == map_id
        assert info_field(c, "b", b"Pinned path").decode() == pin_path(pin_root, 0, "b")
        assert all_present(c, "b", items)

        # RENAME over an existing kernel filter: its pin now serves our map.
        assert c.call("BF.RESERVE", "c", "0.01", "5000", "BACKEND", "kernel").raw == b"+OK\r\n"
        c.call("BF.MADD", "c", *other)
        replaced_id = info_field(c, "c", b"Map id")
        assert map_show(pin_path(pin_root, 0, "c"))["id"] == replaced_id
        assert c.call("RENAME", "b", "c").raw == b"+OK\r\n"
        assert not os.path.exists(pin_path(pin_root, 0, "b"))
        assert map_show(pin_path(pin_root, 0, "c"))["id"] == map_id
        assert all_present(c, "c", items)

        assert c.call("RENAMENX", "c", "d").value == 1
        assert not os.path.exists(pin_path(pin_root, 0, "c"))
        assert map_show(pin_path(pin_root, 0, "d"))["id"] == map_id

        assert c.call("MOVE", "d", "1").value == 1
        assert not os.path.exists(pin_path(pin_root, 0, "d"))
        final = pin_path(pin_root, 1, "d")
        assert map_show(final)["id"] == map_id
        c.call("SELECT", "1")
        assert info_field(c, "d", b"Pinned path").decode() == final
        assert all_present(c, "d", items)
        assert sorted(os.listdir(os.path.join(pin_root, "0"))) == []
    finally:
        srv.stop()

    # Restart: the log says a → b → c → d → db 1; the pin is reopened there.
    srv = start(blinkdb_binary, directory, pin_root)
    try:
        c = srv.connect()
        c.call("SELECT", "1")
        assert info_field(c, "d", b"Map id") == map_id
        assert server_info(c, "bloom_filters_rebuilt") == "0"
        assert all_present(c, "d", items)
        assert map_show(final)["id"] == map_id
        for key in "abc":
            assert not os.path.exists(pin_path(pin_root, 0, key))
        # The rewritten base binds the filter at its current pin.
        assert c.call("BGREWRITEAOF").raw.startswith(b"+")
        for _ in range(100):
            if server_info(c, "aof_rewrite_in_progress") == "0":
                break
            time.sleep(0.1)
    finally:
        srv.stop()

    srv = start(blinkdb_binary, directory, pin_root)
    try:
        c = srv.connect()
        c.call("SELECT", "1")
        assert info_field(c, "d", b"Map id") == map_id
        assert server_info(c, "bloom_filters_rebuilt") == "0"
    finally:
        srv.stop()

    # The pin removed after the renames: rebuilt from the log under the new name.
    os.unlink(final)
    srv = start(blinkdb_binary, directory, pin_root)
    try:
        c = srv.connect()
        c.call("SELECT", "1")
        rebuilt_id = info_field(c, "d", b"Map id")
        assert rebuilt_id != map_id
        assert server_info(c, "bloom_filters_rebuilt") == "1"
        assert map_show(final)["id"] == rebuilt_id
        assert all_present(c, "d", items), "an item was lost in the rebuild"
        for key in "abc":
            assert not os.path.exists(pin_path(pin_root, 0, key))
        assert c.call("FLUSHDB").raw == b"+OK\r\n"
        assert not os.path.exists(final)
    finally:
        srv.stop()


def test_kernel_rename_then_kill9_restart(blinkdb_binary, tmp_path, pin_root):  # noqa: F811
    directory = str(tmp_path / "d")
    items = [f"k9-{i}" for i in range(500)]
    srv = start(blinkdb_binary, directory, pin_root)
    c = srv.connect()
    r = c.call("BF.RESERVE", "src", "0.01", "1000", "BACKEND", "kernel")
    if r.is_error():
        srv.stop()
        pytest.skip(f"KERNEL BLOOM TESTS SKIPPED: {r.value!r}")
    c.call("BF.MADD", "src", *items)
    map_id = info_field(c, "src", b"Map id")
    assert c.call("RENAME", "src", "dst").raw == b"+OK\r\n"
    kill9(srv)
    srv = start(blinkdb_binary, directory, pin_root)
    try:
        c = srv.connect()
        assert info_field(c, "dst", b"Map id") == map_id
        assert server_info(c, "bloom_filters_rebuilt") == "0"
        assert all_present(c, "dst", items)
        assert not os.path.exists(pin_path(pin_root, 0, "src"))
    finally:
        srv.stop()


def test_user_filter_survives_rename_and_move_restart(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "d")
    items = [f"u{i}" for i in range(3000)]
    srv = start_blinkdb(blinkdb_binary, directory, "--appendonly", "yes")
    try:
        c = srv.connect()
        assert c.call("BF.RESERVE", "a", "0.01", "1000", "BACKEND", "user").raw == b"+OK\r\n"
        for i in range(0, len(items), 500):
            c.call("BF.MADD", "a", *items[i:i + 500])
        # A new filter gets its files at the next periodic flush (once a second).
        deadline = time.monotonic() + 10
        while not {".chain", ".bloom"} <= {os.path.splitext(f)[1]
                                            for f in os.listdir(os.path.join(directory, "bloom"))}:
            assert time.monotonic() < deadline, "the filter's files never appeared"
            time.sleep(0.05)
        time.sleep(0.2)  # the flush that created them has finished
        files = sorted(os.listdir(os.path.join(directory, "bloom")))
        renamed_id = int(files[0][:16], 16)
        c.call("BF.RESERVE", "b", "0.01", "100", "BACKEND", "user")
        c.call("BF.ADD", "b", "x")
        assert c.call("RENAME", "a", "b").raw == b"+OK\r\n"
        assert c.call("RENAMENX", "b", "c").value == 1
        assert c.call("MOVE", "c", "2").value == 1
        # Files are named by filter id: the renamed filter's files did not change.
        now = sorted(os.listdir(os.path.join(directory, "bloom")))
        assert now == files, (files, now)
    finally:
        srv.stop()
    srv = start_blinkdb(blinkdb_binary, directory, "--appendonly", "yes")
    try:
        c = srv.connect()
        c.call("SELECT", "2")
        assert all_present(c, "c", items)
        # (The overwritten filter "b" counts as rebuilt at replay: its files were
        # deleted by the RENAME, as for any filter deleted later in the log.)
        assert f"id={renamed_id} " not in srv.log_text(), srv.log_text()
        c.call("SELECT", "0")
        assert c.call("EXISTS", "a", "b", "c").value == 0
    finally:
        srv.stop()
