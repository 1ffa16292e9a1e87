"""maxmemory over small objects (issue 42): with the issue's eight small-key workloads written to
twice a 1 MB limit and more under allkeys-lru, used_memory ends under the limit as Redis's
maxmemory.tcl bounds it (limit + 4096) on both servers, and the process's anonymous RSS grows by
about the room, as redis-server's does: used_memory counts what the keys really take (an
under-count would let RSS run past the limit). Anonymous, because the code pages a fill first runs
add 0.3-0.8 MB to VmRSS, more under load (this test failed 1 run in 3 on a loaded CI machine on
them). Each workload runs on a fresh pair of servers.

Measured (2026-12-06, 1 MB limit): anonymous RSS grows 1.34-1.46 MB for BlinkDB (VmRSS 1.7-2.2),
1.00-1.10 MB for redis-server. In that little room BlinkDB keeps fewer keys than Redis
(0.55-0.8x at 1-4 MB: the first pages of 256 shards' tables are a fixed cost that 300,000 keys
amortise, docs/design.md "Memory per small key")."""
from server import ORACLE_BIN, ServerProcess
from test_maxmemory import SLACK, info, used

ROOM = 1024 * 1024
# Redis keeps about 13,400 integer strings in 1 MB, its cheapest key here; 32,000 are over
# twice that.
KEYS = 32_000
BATCH = 500

WORKLOADS = [
    lambda i: ("SET", "key:%08d" % i, "val12345"),
    lambda i: ("SET", "key:%08d" % i, str(10_000_000 + i)),
    lambda i: ("HSET", "h:%08d" % i, "name", "alice"),
    lambda i: ("HSET", "h:%08d" % i, "name", "alice", "age", "33", "city", "paris", "lang", "en",
               "tier", "gold"),
    lambda i: ("SADD", "s:%08d" % i, "1", "2", "3", "4", "5"),
    lambda i: ("ZADD", "z:%08d" % i, "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
    lambda i: ("RPUSH", "l:%08d" % i, "a", "bb", "ccc"),
    lambda i: ("SET", "key:%08d" % i, "val12345", "EX", "100000"),
]


def fill(srv, command):
    """Writes KEYS keys over a limit of ROOM above the empty server's used_memory; returns
    (limit, used_memory at the end, its peak, RSS growth in bytes, keys kept, evicted)."""
    with srv.connect(timeout=60) as c:
        limit = used(c) + ROOM
        assert c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru").raw == b"+OK\r\n"
        assert c.call("CONFIG", "SET", "maxmemory", str(limit)).raw == b"+OK\r\n"
        rss0, peak = srv.anon_kb(), 0
        for start in range(0, KEYS, BATCH):
            replies = c.pipeline([command(i) for i in range(start, start + BATCH)])
            assert not any(r.is_error() for r in replies), replies[0].raw
            peak = max(peak, used(c))
        rss = (srv.anon_kb() - rss0) * 1024
        return (limit, used(c), peak, rss, c.call("DBSIZE").value,
                int(info(c, "stats")["evicted_keys"]))


def test_small_objects_under_maxmemory_as_redis(server_factory, started, tmp_path):
    for n, command in enumerate(WORKLOADS):
        what = command(0)[0] + " " + " ".join(command(0)[2:])
        mine = fill(server_factory("--appendonly", "no"), command)
        redis = ServerProcess(ORACLE_BIN, str(tmp_path / ("redis%d" % n)))
        started.append(redis)
        theirs = fill(redis, command)
        for who, (limit, after, peak, rss, kept, evicted) in (("blinkdb", mine),
                                                              ("redis", theirs)):
            assert after < limit + SLACK, (what, who, after, limit)
            assert peak < limit + 256 * 1024, (what, who, peak, limit)
            assert evicted > 0 and 0 < kept < KEYS, (what, who, kept, evicted)
            # RSS grows by the room plus allocator slack (a quarter and 768 KB at most).
            assert rss <= 1.25 * ROOM + 768 * 1024, (what, who, rss)
        # And no more than redis-server's beyond 1 MB: used_memory did not leave bytes out.
        assert mine[3] <= theirs[3] + 1024 * 1024, (what, mine[3], theirs[3])
