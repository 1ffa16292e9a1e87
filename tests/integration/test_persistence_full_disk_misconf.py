"""Issue #4: a write that hits a full disk gets the MISCONF reply and the connection
stays open; reads keep working; once space is freed writes succeed again; a restart
has every acknowledged key with its exact value. For appendfsync always and everysec."""

import os
import subprocess
import time

import pytest

from aof_helpers import kill9, start_aof_server
from resp import ConnectionClosed

FS_SIZE = "2m"
FILLER = 1024 * 1024
VALUE_SIZE = 4096
MISCONF = b"-MISCONF Errors writing to the AOF file: No space left on device\r\n"


@pytest.fixture
def tiny_fs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "tiny-fs"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE}", "tmpfs", str(mount_point)],
                   check=True)
    try:
        yield str(mount_point)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def value_for(i):
    head = f"value-{i}-".encode()
    return head + bytes((i * 7 + j) % 251 for j in range(VALUE_SIZE - len(head)))


@pytest.mark.parametrize("fsync", ["always", "everysec"])
def test_full_disk_write_gets_misconf_and_connection_stays(blinkdb_binary, tmp_path, tiny_fs,
                                                          fsync):
    filler = os.path.join(tiny_fs, "filler")
    with open(filler, "wb") as f:
        f.write(b"\0" * FILLER)
    directory = os.path.join(tiny_fs, "data")
    log_dir = str(tmp_path / "log")
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", fsync, log_dir=log_dir)
    acked = {}
    unacked = {}  # written but refused: may or may not survive, never with another value
    try:
        with srv.connect(timeout=30.0) as conn:
            i = 0
            first_refusal = None
            while i < 2000:
                key = f"key:{i}"
                try:
                    reply = conn.call("SET", key, value_for(i))
                except ConnectionClosed:
                    pytest.fail(f"connection closed by a write on a full disk (write {i})")
                if reply.is_error():
                    first_refusal = reply.raw
                    unacked[key] = value_for(i)
                    i += 1
                    break
                assert reply.raw == b"+OK\r\n"
                acked[key] = value_for(i)
                i += 1
            assert first_refusal is not None, "the disk never filled up"
            assert first_refusal == MISCONF, f"the failing write got {first_refusal!r}"
            print(f"{fsync}: {len(acked)} writes acknowledged, then {first_refusal!r}")

            # Later writes are refused the same way, on the same connection.
            for _ in range(5):
                reply = conn.call("SET", f"key:{i}", value_for(i))
                unacked[f"key:{i}"] = value_for(i)
                i += 1
                assert reply.raw == MISCONF, reply.raw
            # A pipeline mixing reads and a write: reads answer, the write is refused.
            early = next(iter(acked))
            replies = conn.pipeline([["GET", early], ["SET", f"key:{i}", value_for(i)],
                                     ["GET", early]])
            unacked[f"key:{i}"] = value_for(i)
            i += 1
            assert replies[0].value == acked[early]
            assert replies[1].raw == MISCONF
            assert replies[2].value == acked[early]
            for key, value in acked.items():
                assert conn.call("GET", key).value == value, key

            os.remove(filler)
            deadline = time.monotonic() + 15
            while True:
                reply = conn.call("SET", f"key:{i}", value_for(i))
                if not reply.is_error():
                    break
                assert reply.raw == MISCONF, reply.raw
                unacked[f"key:{i}"] = value_for(i)
                i += 1
                assert time.monotonic() < deadline, "writes did not resume after freeing space"
                time.sleep(0.2)
            acked[f"key:{i}"] = value_for(i)
            i += 1
            for _ in range(20):
                assert conn.call("SET", f"key:{i}", value_for(i)).raw == b"+OK\r\n"
                acked[f"key:{i}"] = value_for(i)
                i += 1
        kill9(srv)  # kill -9 keeps the page cache: everything write()n survives

        srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", fsync,
                               log_dir=log_dir)
        with srv.connect(timeout=30.0) as conn:
            for key, value in acked.items():
                assert conn.call("GET", key).value == value, f"acknowledged {key} lost or changed"
            survived = 0
            for key, value in unacked.items():
                got = conn.call("GET", key).value
                assert got in (None, value), f"refused {key} came back with another value"
                survived += got is not None
            print(f"{fsync}: after restart all {len(acked)} acknowledged keys exact; "
                  f"{survived} of {len(unacked)} refused writes landed once space was back")
    finally:
        srv.stop()
