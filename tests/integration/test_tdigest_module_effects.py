"""What RedisBloom's module API does around TDIGEST.*, compared with redis-server 7.0.15 +
RedisBloom 2.8.2 byte for byte: keyspace events (`new` on CREATE and on every MERGE, which
replaces its destination and drops its TTL), keyspace hits and misses of the keys opened for
reading, and WATCH: a write command signals its key even when it fails (the key was opened for
writing), a query does not (though it compresses the digest), nor does DUMP."""

import time

from bloom_support import start_blinkdb, start_oracle

STEPS = [
    ["TDIGEST.CREATE", "a"], ["TDIGEST.ADD", "a", "1", "2", "3"], ["TDIGEST.CREATE", "b"],
    ["TDIGEST.MERGE", "m", "2", "a", "b"], ["EXPIRE", "m", "100"], ["TDIGEST.MERGE", "m", "1", "a"],
    ["TTL", "m"], ["TDIGEST.RESET", "a"], ["TDIGEST.QUANTILE", "a", "0.5"], ["TDIGEST.MIN", "zz"],
    ["TDIGEST.MERGE", "m", "2", "a", "zz"], ["TDIGEST.ADD", "a", "x"], ["TDIGEST.INFO", "m"],
]
WATCHED = [
    ["TDIGEST.ADD", "a", "x"], ["TDIGEST.QUANTILE", "a", "0.5"], ["TDIGEST.ADD", "nokey", "1"],
    ["TDIGEST.CREATE", "a"], ["TDIGEST.MERGE", "m", "1", "zz"], ["DUMP", "a"],
    ["TDIGEST.RESET", "a"], ["TDIGEST.CDF", "a", "1"],
]


def transcript(srv):
    c, sub = srv.connect(), srv.connect()
    c.call("CONFIG", "SET", "notify-keyspace-events", "KEAn")
    sub.call("PSUBSCRIBE", "__key*__:*")
    c.call("CONFIG", "RESETSTAT")
    out = [(cmd, c.call(*cmd).raw) for cmd in STEPS]
    stats = c.call("INFO", "stats").raw.decode().split("\r\n")
    out.append([line for line in stats if line.startswith("keyspace_")])
    for cmd in WATCHED:
        w = srv.connect()
        w.call("WATCH", cmd[1])
        c.call(*cmd)
        w.call("MULTI")
        w.call("PING")
        out.append(("WATCH", cmd, w.call("EXEC").raw))
    # The events of all the above, then a marker: everything before it has arrived.
    c.call("PUBLISH", "__keyspace@0__:end", "end")
    events, deadline = b"", time.monotonic() + 10
    while b"__keyspace@0__:end" not in events and time.monotonic() < deadline:
        events += sub.read_all_available(0.1)[0]
    out.append(events)
    return out


def test_module_effects_match_redisbloom(blinkdb_binary, tmp_path):
    oracle = start_oracle(str(tmp_path / "oracle"))
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        theirs, mine = transcript(oracle), transcript(ours)
        for t, m in zip(theirs, mine):
            assert m == t
        assert b"__keyevent@0__:new" in theirs[-1]
    finally:
        ours.stop()
        oracle.stop()
