"""Watchdog: while one client runs the most expensive command it can, a second
client's PING must still be answered within a stated bound.

Bounds:
* A pathological KEYS pattern (many stars against long keys) is linear in
  pattern x key, so PING answers within 250 ms while it runs (Redis 7.0 also
  bounds this case).
* KEYS over 1M keys and a 512 MB SETRANGE block the connection thread for the
  command's duration, exactly as they block Redis's single thread. PING answers
  as soon as the command ends: within 10 s here (both take well under 2 s).
"""

import threading
import time

from resp import RespConnection

ERR_TOO_BIG = b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"


def ping_while(server, run, bound):
    """Runs `run(conn)` on one connection and PINGs on another meanwhile;
    returns the slowest PING round trip and run's result."""
    result = {}

    def worker():
        with RespConnection(server.port, timeout=120) as conn:
            result["value"] = run(conn)

    thread = threading.Thread(target=worker)
    slowest = 0.0
    with RespConnection(server.port, timeout=bound + 30) as pinger:
        pinger.call("PING")
        thread.start()
        while thread.is_alive():
            started = time.monotonic()
            assert pinger.call("PING").raw == b"+PONG\r\n"
            slowest = max(slowest, time.monotonic() - started)
            time.sleep(0.01)
    thread.join()
    assert server.alive(), server.log_text()
    return slowest, result.get("value")


def test_pathological_keys_pattern_does_not_wedge(blinkdb):
    with blinkdb.connect() as conn:
        long_keys = [b"a" * n for n in (100, 1000, 10_000, 100_000)]
        for key in long_keys:
            assert conn.call("SET", key, "v").raw == b"+OK\r\n"
        conn.pipeline([("SET", f"k{i}", i) for i in range(10_000)])
    # The pattern: exponential for a backtracking matcher.
    pattern = b"a*" * 16 + b"b"

    def run(conn):
        started = time.monotonic()
        for _ in range(3):
            assert conn.call("KEYS", pattern).value == []
            cursor = b"0"
            while True:
                (_, cursor), (_, found) = conn.call(
                    "SCAN", cursor, "MATCH", pattern, "COUNT", 1000
                ).value
                assert found == []
                if cursor == b"0":
                    break
        return time.monotonic() - started

    slowest, took = ping_while(blinkdb, run, bound=0.25)
    assert took < 5, f"3 KEYS + SCANs with the pathological pattern took {took:.2f}s"
    assert slowest < 0.25, f"PING took {slowest:.3f}s during the pathological KEYS"


def test_setrange_offsets_are_checked_before_allocating(blinkdb):
    with blinkdb.connect() as conn:
        for offset in ("9223372036854775807", "9223372036854775806", "536870912"):
            assert conn.call("SETRANGE", "k", offset, "A").raw == ERR_TOO_BIG
            assert conn.call("SET", "s", "x").raw == b"+OK\r\n"
            assert conn.call("SETRANGE", "s", offset, "A").raw == ERR_TOO_BIG
        assert conn.call("SETRANGE", "k", "-1", "A").raw == b"-ERR offset is out of range\r\n"
        assert conn.call("SETRANGE", "k", "9223372036854775808", "A").raw == (
            b"-ERR value is not an integer or out of range\r\n"
        )
        # Nothing set: the key does not exist, the other is unchanged.
        assert conn.call("EXISTS", "k").raw == b":0\r\n"
        assert conn.call("GET", "s").value == b"x"


def test_huge_setrange_and_keys_over_a_million_keys_block_like_redis(blinkdb):
    with blinkdb.connect() as conn:
        batch = 1000
        for start in range(0, 1_000_000, batch * 50):
            conn.pipeline([
                ["MSET"] + [x for i in range(s, s + batch) for x in (f"key:{i}", "v")]
                for s in range(start, start + batch * 50, batch)
            ])
        assert conn.call("DBSIZE").value == 1_000_000

    def keys_all(conn):
        started = time.monotonic()
        assert len(conn.call("KEYS", "key:*9").value) == 100_000
        return time.monotonic() - started

    slowest, took = ping_while(blinkdb, keys_all, bound=10)
    assert slowest < 10, f"PING took {slowest:.2f}s during KEYS over 1M keys ({took:.2f}s)"

    def huge_setrange(conn):
        started = time.monotonic()
        assert conn.call("SETRANGE", "big", 512 * 1024 * 1024 - 1, "A").value == 512 * 1024 * 1024
        took = time.monotonic() - started
        assert conn.call("DEL", "big").value == 1
        return took

    slowest, took = ping_while(blinkdb, huge_setrange, bound=10)
    assert slowest < 10, f"PING took {slowest:.2f}s during a 512 MB SETRANGE ({took:.2f}s)"
