"""A full disk: writes are refused with MISCONF, reads keep working, and once space is
freed writes resume and no acknowledged write is lost across a restart. A rewrite
that runs out of space fails cleanly and loses nothing."""

import os
import subprocess
import time

import pytest

from acked_writes import check_histories, read_keys, start_writers, stop_writers
from aof_helpers import (
    aof_path, bgrewriteaof, crash_seed, info, kill9, start_aof_server, wait_rewrite_done,
)

FS_SIZE = "8m"
FILLER = 2 * 1024 * 1024


@pytest.fixture
def small_fs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "small-fs"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE}", "tmpfs", str(mount_point)],
                   check=True)
    try:
        yield str(mount_point)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_full_disk_refuses_writes_then_recovers(blinkdb_binary, tmp_path, small_fs):
    seed = crash_seed()
    filler = os.path.join(small_fs, "filler")
    with open(filler, "wb") as f:
        f.write(os.urandom(FILLER))
    directory = os.path.join(small_fs, "data")
    log_dir = str(tmp_path / "log")
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always", log_dir=log_dir)
    histories = {}
    try:
        stop, writers = start_writers(srv.port, histories, 2, seed, value_size=8192,
                                      n_keys=64)
        deadline = time.monotonic() + 60
        while any(w.is_alive() for w in writers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(w.is_alive() for w in writers), "the disk never filled up"
        acked = stop_writers(stop, writers, allow_refusals=True)
        refusals = [r for w in writers for r in w.refusals]
        print(f"{acked} writes acknowledged before the disk was full; refusals: {refusals[:2]}")

        with srv.connect() as conn:
            reply = conn.call("SET", "probe", "x" * 8192)
            assert reply.raw.startswith(b"-MISCONF "), f"a write on a full disk got {reply.raw!r}"
            print(f"write on a full disk: {reply.raw!r}")
            assert info(conn)["aof_last_write_status"] == "err"
            observed = read_keys(conn, histories)
            problems, _ = check_histories(histories, observed)
            assert not problems, f"reads on a full disk: {problems[:5]}"

            os.remove(filler)
            freed_at = time.monotonic()
            deadline = freed_at + 15
            while time.monotonic() < deadline:
                reply = conn.call("SET", "after-space-freed", "yes")
                if not reply.is_error():
                    break
                time.sleep(0.2)
            assert reply.raw == b"+OK\r\n", f"writes did not resume after freeing space: {reply.raw!r}"
            assert info(conn)["aof_last_write_status"] == "ok"
            print(f"writes resumed {time.monotonic() - freed_at:.2f} s after space was freed")
        kill9(srv)  # appendfsync always: every acknowledged write is already on disk

        srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always",
                               log_dir=log_dir)
        with srv.connect() as conn:
            observed = read_keys(conn, histories)
            problems, lost = check_histories(histories, observed)
            assert not problems and lost == 0, f"acknowledged writes lost: {problems[:10]}"
            assert conn.call("GET", "after-space-freed").value == b"yes"
    finally:
        srv.stop()


def test_rewrite_out_of_space_fails_cleanly(blinkdb_binary, tmp_path, small_fs):
    directory = os.path.join(small_fs, "data")
    log_dir = str(tmp_path / "log")
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always",
                           "--auto-aof-rewrite-percentage", "0", log_dir=log_dir)
    # Incompressible: the RDB base (aof-use-rdb-preamble yes) compresses values with LZF.
    value = os.urandom(10_000)
    try:
        with srv.connect() as conn:
            # about 5 MB of live data: a second copy (the new base) cannot fit in 8 MB
            for i in range(500):
                assert conn.call("SET", f"k{i}", value).raw == b"+OK\r\n"
            bgrewriteaof(conn)
            fields = wait_rewrite_done(conn)
            assert fields["aof_last_bgrewrite_status"] == "err", (
                f"a rewrite that cannot fit reported {fields['aof_last_bgrewrite_status']}")
            leftovers = [n for n in os.listdir(aof_path(directory)) if n.startswith("temp-")]
            assert not leftovers, f"a failed rewrite left {leftovers}"
            assert conn.call("SET", "after-failed-rewrite", "1").raw == b"+OK\r\n"
        kill9(srv)
        srv = start_aof_server(blinkdb_binary, directory, log_dir=log_dir)
        with srv.connect() as conn:
            assert conn.call("DBSIZE").value == 501
            for i in range(0, 500, 50):
                assert conn.call("GET", f"k{i}").value == value
            assert conn.call("GET", "after-failed-rewrite").value == b"1"
    finally:
        srv.stop()
