"""BlinkDB's own log options, changed by CONFIG SET while the server runs
(Redis's 'CONFIG SET sanity' sets every option CONFIG GET lists back to its
value): each takes effect from then on, observed here by what it does, not
by CONFIG GET. existence-filter-size and bpf-pin-root are fixed at start:
CONFIG SET takes their current value only."""

import os
import time

from aof_helpers import manifest_entries


def incr_paths(directory):
    aof = os.path.join(directory, "appendonlydir")
    return [os.path.join(aof, f) for f in sorted(os.listdir(aof)) if f.endswith(".incr.aof")]


def flip_in_log(directory, payload):
    """Changes one byte of `payload` where the log holds it on disk."""
    for path in incr_paths(directory):
        with open(path, "r+b") as f:
            data = f.read()
            at = data.find(payload)
            if at >= 0:
                f.seek(at + len(payload) // 2)
                f.write(b"#")
                return True
    return False


def test_segment_size_rotates_the_next_incr_file(server_factory):
    srv = server_factory("--appendonly", "yes")
    with srv.connect() as c:
        files = len(manifest_entries(srv.dir))
        c.pipeline([("SET", f"k{i}", "v" * 100) for i in range(200)])
        assert len(manifest_entries(srv.dir)) == files
        assert c.call("CONFIG", "SET", "segment-size", "4096").value == b"OK"
        c.pipeline([("SET", f"k{i}", "v" * 100) for i in range(200)])
        # 200 records of ~130 bytes at 4 KB a file.
        assert len(manifest_entries(srv.dir)) >= files + 4


def test_blob_threshold_and_verify_blobs_on_read(server_factory):
    srv = server_factory("--appendonly", "yes")
    before, after = b"a" * 300, b"b" * 300
    with srv.connect() as c:
        # 300 bytes stay in memory at the default 16kb threshold...
        c.call("SET", "before", before)
        assert c.call("CONFIG", "SET", "blob-threshold", "200").value == b"OK"
        # ...and live in the log (read back from disk) from now on.
        c.call("SET", "after", after)
        assert flip_in_log(srv.dir, before) and flip_in_log(srv.dir, after)
        assert c.call("GET", "before").value == before
        assert c.call("GET", "after").is_error()
        assert c.call("CONFIG", "SET", "verify-blobs-on-read", "no").value == b"OK"
        damaged = c.call("GET", "after").value
        assert damaged != after and len(damaged) == len(after)
        assert c.call("CONFIG", "SET", "verify-blobs-on-read", "yes").value == b"OK"
        assert c.call("GET", "after").is_error()


def test_aof_load_truncated_applies_to_the_next_load(server_factory):
    first = server_factory("--appendonly", "yes", name="shared")
    with first.connect() as c:
        c.pipeline([("SET", f"k{i}", "v") for i in range(10)])
    first.stop()
    last = incr_paths(first.dir)[-1]
    with open(last, "ab") as f:
        f.write(b"*3\r\n$3\r\nSET\r\n$2\r\nk")  # a record cut short
    again = server_factory(name="shared")  # appendonly no: nothing loaded yet
    with again.connect() as c:
        assert c.call("CONFIG", "SET", "aof-load-truncated", "no").value == b"OK"
        reply = c.call("CONFIG", "SET", "appendonly", "yes")
        assert reply.is_error() and b"Unable to turn on AOF" in reply.raw
        assert c.call("CONFIG", "SET", "aof-load-truncated", "yes").value == b"OK"
        assert c.call("CONFIG", "SET", "appendonly", "yes").value == b"OK"
        deadline = time.monotonic() + 30
        while b"aof_enabled:1" not in c.call("INFO", "persistence").value:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_start_only_options_take_their_current_value_only(blinkdb):
    with blinkdb.connect() as c:
        for name, other in (("existence-filter-size", "1mb"), ("bpf-pin-root", "/tmp/x")):
            current = c.call("CONFIG", "GET", name).value[1][1]
            assert c.call("CONFIG", "SET", name, current).value == b"OK"
            reply = c.call("CONFIG", "SET", name, other)
            assert reply.is_error() and b"takes effect at start" in reply.raw
            assert c.call("CONFIG", "GET", name).value[1][1] == current
