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
            # Two values above blob-threshold (16 KB), kept in the log, not in memory.
            for key, size in (("big:32k", 32 * 1024), ("big:96k", 96 * 1024)):
                value = (key.encode() * size)[:size]
                assert conn.call("SET", key, value).raw == b"+OK\r\n"
                acked[key] = value
            i = 0
            first_refusal = None
            while i < 2000:
                key = f"key:{i}"
                # Each write between two reads of large values, so the write that first
                # fails is refused inside a batch whose other replies must keep their place.
                try:
                    around = conn.pipeline([["GET", "big:32k"], ["SET", key, value_for(i)],
                                            ["GET", "big:96k"]])
                except ConnectionClosed:
                    pytest.fail(f"connection closed by a write on a full disk (write {i})")
                assert around[0].value == acked["big:32k"], f"write {i}"
                assert around[2].value == acked["big:96k"], f"write {i}"
                reply = around[1]
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
            # A pipeline mixing reads and a write: reads answer, the write is refused;
            # large values (read from the log when the replies are sent) keep their place.
            early = next(k for k in acked if k.startswith("key:"))
            replies = conn.pipeline([["GET", "big:32k"], ["GET", early],
                                     ["SET", f"key:{i}", value_for(i)], ["GET", "big:96k"],
                                     ["GET", early], ["GET", "big:32k"]])
            unacked[f"key:{i}"] = value_for(i)
            i += 1
            assert replies[0].value == acked["big:32k"]
            assert replies[1].value == acked[early]
            assert replies[2].raw == MISCONF
            assert replies[3].value == acked["big:96k"]
            assert replies[4].value == acked[early]
            assert replies[5].value == acked["big:32k"]
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
