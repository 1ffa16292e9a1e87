"""Values of 1 KB - 4 MB: byte for byte after kill -9 + restart and after BGREWRITEAOF + restart,
with RSS far below the data size (values >= blob-threshold stay in the log).

BLINKDB_LARGE_TOTAL_MB sets the data size: 200 by default (CI), 1024 for the full run.
"""

import hashlib
import math
import os
import random

from aof_helpers import (
    aof_bytes, bgrewriteaof, crash_seed, kill9, start_aof_server, wait_rewrite_done,
)

TOTAL = int(os.environ.get("BLINKDB_LARGE_TOTAL_MB", "200")) * 1024 * 1024
MIN_SIZE = 1024
MAX_SIZE = 4 * 1024 * 1024


def value_sizes(rng):
    """Log-uniform sizes: as many small values as large ones per size decade."""
    sizes = []
    while sum(sizes) < TOTAL:
        sizes.append(int(math.exp(rng.uniform(math.log(MIN_SIZE), math.log(MAX_SIZE)))))
    return sizes


def make_value(seed, i, size):
    return random.Random(seed * 1_000_003 + i).randbytes(size)


def digest_all(conn, count):
    """sha256 of every value in key order, and the combined checksum."""
    total = hashlib.sha256()
    digests = []
    for i in range(count):
        reply = conn.call("GET", f"big:{i}")
        assert reply.value is not None, f"big:{i} is missing"
        digest = hashlib.sha256(reply.value).digest()
        digests.append(digest)
        total.update(digest)
    return total.hexdigest(), digests


def test_large_values_survive_restart_and_rewrite(blinkdb_binary, tmp_path):
    seed = crash_seed()
    rng = random.Random(seed)
    sizes = value_sizes(rng)
    directory = str(tmp_path / "data")
    expected = []
    combined = hashlib.sha256()
    srv = start_aof_server(blinkdb_binary, directory)
    try:
        with srv.connect(timeout=60.0) as conn:
            for i, size in enumerate(sizes):
                value = make_value(seed, i, size)
                digest = hashlib.sha256(value).digest()
                expected.append(digest)
                combined.update(digest)
                assert conn.call("SET", f"big:{i}", value).raw == b"+OK\r\n"
            checksum, _ = digest_all(conn, len(sizes))
            assert checksum == combined.hexdigest(), "values differ before any restart"
        # acknowledged means written (everysec): a kill must not lose any of it
        kill9(srv)
    finally:
        srv.stop()
    data_kb = sum(sizes) // 1024
    print(f"{len(sizes)} values, {data_kb} KiB, AOF {aof_bytes(directory) // 1024} KiB")

    rss = []
    for phase in ("restart", "rewrite + restart"):
        srv = start_aof_server(blinkdb_binary, directory)
        try:
            with srv.connect(timeout=60.0) as conn:
                checksum, digests = digest_all(conn, len(sizes))
                wrong = [i for i, (a, b) in enumerate(zip(digests, expected)) if a != b]
                assert not wrong, f"after {phase}: values differ: big:{wrong[:10]}"
                assert checksum == combined.hexdigest()
                rss.append(srv.rss_kb())
                assert rss[-1] < data_kb / 3, (
                    f"after {phase}: RSS {rss[-1]} KiB is not far below the data size"
                    f" {data_kb} KiB")
                if phase == "restart":
                    before = aof_bytes(directory)
                    bgrewriteaof(conn)
                    fields = wait_rewrite_done(conn, timeout=300.0)
                    assert fields["aof_last_bgrewrite_status"] == "ok", fields
                    checksum, _ = digest_all(conn, len(sizes))
                    assert checksum == combined.hexdigest(), "values differ after the rewrite"
                    print(f"rewrite: AOF {before // 1024} KiB -> {aof_bytes(directory) // 1024} KiB")
        finally:
            srv.stop()
    print(f"RSS after reading every value: {rss} KiB for {data_kb} KiB of data")
