"""GEO commands against the oracle: scripted and random commands (points
everywhere, including the latitude limits and the antimeridian) must get the
same reply bytes from BlinkDB and redis-server 7 in RESP2 and RESP3; keyspace
events match; GEOADD reaches the AOF as ZADD, the sets survive a restart,
and redis-server 7 loads the AOF."""

import os
import random

import pytest

from aof_helpers import blinkdb_snapshot, redis_snapshot_of_aof, redis_snapshot_of_run
from resp import plain
from test_persistence_redis_interop import check_aof

SICILY = ("GEOADD", "Sicily", "13.361389", "38.115556", "Palermo",
          "15.087269", "37.502669", "Catania")


def script():
    s = []
    add = s.append
    add(SICILY)
    add(("GEOADD", "Sicily", "CH", "13.361389", "38.115556", "Palermo", "1", "1", "x"))
    add(("GEOADD", "Sicily", "NX", "CH", "2", "2", "x", "3", "3", "y"))
    add(("GEOADD", "Sicily", "XX", "CH", "4", "4", "x", "5", "5", "z"))
    add(("GEOADD", "Sicily", "XX", "NX", "1", "1", "q"))
    add(("GEOADD", "Sicily", "GT", "1", "1", "q"))
    add(("GEOADD", "Sicily", "1", "1"))
    add(("GEOADD", "Sicily", "ch", "ch", "ch"))
    add(("GEOADD", "Sicily", "181", "0", "bad"))
    add(("GEOADD", "Sicily", "0", "85.06", "bad"))
    add(("GEOADD", "Sicily", "-180.0000001", "-85.06", "bad"))
    add(("GEOADD", "Sicily", "abc", "0", "bad"))
    add(("GEOADD", "Sicily", "0", "nan", "bad"))
    add(("GEOADD", "Sicily", "inf", "0", "bad"))
    add(("GEOADD", "Sicily", "1e300", "-1e300", "bad"))
    add(("GEOADD", "Sicily", "1", "1", "ok", "200", "0", "bad"))
    add(("ZRANGE", "Sicily", "0", "-1", "WITHSCORES"))
    # The limits and the antimeridian.
    add(("GEOADD", "edge", "180", "85.05112878", "ne", "-180", "-85.05112878", "sw",
         "180", "0", "e", "-180", "0", "w", "179.9999", "10", "e2", "-179.9999", "10", "w2",
         "0", "0", "origin", "0", "85.05112878", "north", "0", "-85.05112878", "south"))
    add(("ZRANGE", "edge", "0", "-1", "WITHSCORES"))
    add(("GEOPOS", "edge", "ne", "sw", "e", "w", "e2", "w2", "origin", "north", "south", "nope"))
    add(("GEOHASH", "edge", "ne", "sw", "e", "w", "e2", "w2", "origin", "north", "south", "nope"))
    add(("GEODIST", "edge", "e2", "w2"))
    add(("GEODIST", "edge", "e2", "w2", "km"))
    add(("GEODIST", "edge", "north", "south", "MI"))
    add(("GEODIST", "edge", "north", "south", "ft"))
    add(("GEODIST", "edge", "north", "south", "yd"))
    add(("GEODIST", "edge", "north", "south", "km", "extra"))
    add(("GEODIST", "edge", "north", "nope"))
    add(("GEODIST", "absent", "a", "b"))
    add(("GEODIST", "edge", "origin", "origin"))
    add(("GEOPOS", "absent", "a", "b"))
    add(("GEOHASH", "absent", "a"))
    add(("GEOPOS", "Sicily", "Palermo", "Catania"))
    add(("GEOHASH", "Sicily", "Palermo", "Catania"))
    add(("GEODIST", "Sicily", "Palermo", "Catania"))
    # Scores that are not geohashes.
    add(("ZADD", "odd", "-5", "neg", "1e20", "huge", "inf", "pinf", "-inf", "ninf",
         "4503599627370496", "bit52", "9007199254740993", "bit53"))
    add(("GEOPOS", "odd", "neg", "huge", "pinf", "ninf", "bit52", "bit53"))
    add(("GEOHASH", "odd", "neg", "huge", "pinf", "ninf", "bit52", "bit53"))
    add(("GEODIST", "odd", "neg", "huge"))
    add(("GEOSEARCH", "odd", "FROMLONLAT", "0", "0", "BYRADIUS", "20000", "km", "WITHHASH"))
    # Searches.
    for opts in [(), ("ASC",), ("DESC",), ("WITHCOORD",), ("WITHDIST",), ("WITHHASH",),
                 ("WITHCOORD", "WITHDIST", "WITHHASH", "ASC"), ("COUNT", "1"),
                 ("COUNT", "1", "DESC"), ("COUNT", "1", "ANY"), ("COUNT", "5", "ANY", "ASC")]:
        add(("GEORADIUS", "Sicily", "15", "37", "200", "km") + opts)
        add(("GEORADIUS_RO", "Sicily", "15", "37", "200", "km") + opts)
        add(("GEORADIUSBYMEMBER", "Sicily", "Palermo", "300", "km") + opts)
        add(("GEORADIUSBYMEMBER_RO", "Sicily", "Palermo", "300", "km") + opts)
        add(("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km") + opts)
        add(("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "400", "400", "km") + opts)
    add(("GEOSEARCH", "edge", "FROMLONLAT", "179.99", "10", "BYRADIUS", "100", "km",
         "WITHDIST", "WITHCOORD"))
    add(("GEOSEARCH", "edge", "FROMLONLAT", "-179.99", "10", "BYBOX", "200", "200", "km",
         "WITHDIST", "ASC"))
    add(("GEOSEARCH", "edge", "FROMLONLAT", "0", "85", "BYRADIUS", "50", "km", "WITHDIST"))
    add(("GEOSEARCH", "edge", "FROMLONLAT", "0", "0", "BYRADIUS", "30000", "km", "ASC",
         "WITHDIST"))
    add(("GEOSEARCH", "edge", "FROMLONLAT", "0", "0", "BYRADIUS", "0", "m", "WITHDIST"))
    add(("GEOSEARCH", "edge", "FROMLONLAT", "0", "0", "BYRADIUS", "inf", "m", "WITHDIST"))
    add(("GEOSEARCH", "edge", "FROMLONLAT", "0", "0", "BYBOX", "0", "0", "m"))
    # Equal distances: the whole result keeps its scan order (a stable sort),
    # a COUNT window is what Redis's partial quicksort leaves.
    add(("GEOADD", "ties", *[x for i in range(60) for x in
                             (str(10 + (i % 3) * 0.001), "20", f"t{i:02d}")]))
    for opts in [("ASC",), ("DESC",), ("COUNT", "5"), ("COUNT", "17", "DESC"),
                 ("COUNT", "59", "ASC"), ("COUNT", "60"), ("COUNT", "8", "ANY", "DESC")]:
        add(("GEOSEARCH", "ties", "FROMLONLAT", "10", "20", "BYRADIUS", "10", "km") + opts)
        add(("GEORADIUS", "ties", "10.0015", "20", "10", "km", "WITHDIST") + opts)
    # Parsing and errors, in Redis's order.
    for cmd in [
        ("GEORADIUS", "Sicily", "15", "37", "200", "yd"),
        ("GEORADIUS", "Sicily", "15", "37", "-1", "km"),
        ("GEORADIUS", "Sicily", "15", "37", "abc", "km"),
        ("GEORADIUS", "Sicily", "200", "37", "abc", "km"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "0"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "-3"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "x"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "9223372036854775807"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "9223372036854775807", "ANY"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "9223372036854775808"),
        ("GEORADIUS", "Sicily", "15", "37", "1e400", "km"),
        ("GEORADIUS", "Sicily", "15", "37", "1e308", "mi", "WITHDIST", "ASC"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1e308", "1e308", "ft",
         "WITHDIST"),
        ("GEODIST", "Sicily", "Palermo", "Catania", "m", "m"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "ANY"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "BOGUS"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d", "WITHDIST"),
        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE"),
        ("GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "d"),
        ("GEORADIUSBYMEMBER", "Sicily", "nope", "200", "km"),
        ("GEORADIUSBYMEMBER", "Sicily", "nope", "abc", "km", "BOGUS"),
        ("GEORADIUSBYMEMBER", "absent", "nope", "abc", "km"),
        ("GEORADIUSBYMEMBER", "absent", "nope", "abc", "km", "BOGUS"),
        ("GEORADIUSBYMEMBER", "absent", "nope", "abc", "km", "STORE", "d"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37"),
        ("GEOSEARCH", "Sicily", "BYRADIUS", "10", "km"),
        ("geosearch", "Sicily", "BYRADIUS", "10", "km", "ASC"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo",
         "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "FROMLONLAT", "15", "37",
         "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "FROMMEMBER", "Catania",
         "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km",
         "BYBOX", "1", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "-1", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "x", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "1", "y", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "1", "1", "parsec"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMMEMBER", "nope", "BOGUS"),
        ("GEOSEARCH", "absent", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "absent", "FROMMEMBER", "nope", "BYRADIUS", "1", "km", "ANY"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "91", "BYRADIUS", "1", "km"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STORE", "d"),
        ("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STOREDIST"),
        ("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km",
         "WITHCOORD"),
        ("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km",
         "STORE", "x"),
        ("SET", "str", "x"),
        ("GEOADD", "str", "1", "1", "a"),
        ("GEOPOS", "str", "a"), ("GEOHASH", "str", "a"), ("GEODIST", "str", "a", "b"),
        ("GEODIST", "str", "a", "b", "yd"),
        ("GEORADIUS", "str", "200", "0", "1", "km"),
        ("GEORADIUS", "str", "0", "0", "1", "km", "BOGUS"),
        ("GEOSEARCH", "str", "BOGUS"),
        ("GEOSEARCHSTORE", "d", "str", "BOGUS"),
        ("GEOSEARCHSTORE", "str", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"),
        ("TYPE", "str"),
    ]:
        add(cmd)
    # Stores.
    add(("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "r1"))
    add(("ZRANGE", "r1", "0", "-1", "WITHSCORES"))
    add(("GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "r2", "COUNT", "1"))
    add(("ZRANGE", "r2", "0", "-1", "WITHSCORES"))
    add(("GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "r3", "STORE", "r4"))
    add(("EXISTS", "r3", "r4"))
    add(("GEORADIUSBYMEMBER", "Sicily", "Palermo", "1", "m", "STORE", "r1"))
    add(("EXISTS", "r1"))
    add(("GEOSEARCHSTORE", "r5", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "700", "700",
         "km", "DESC", "COUNT", "2"))
    add(("ZRANGE", "r5", "0", "-1", "WITHSCORES"))
    add(("GEOSEARCHSTORE", "r6", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "700", "mi",
         "STOREDIST"))
    add(("ZRANGE", "r6", "0", "-1", "WITHSCORES"))
    add(("GEOSEARCHSTORE", "r6", "absent", "FROMMEMBER", "Palermo", "BYRADIUS", "700", "mi"))
    add(("EXISTS", "r6"))
    add(("GEOSEARCHSTORE", "r5", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"))
    add(("EXISTS", "r5"))
    add(("SET", "r7", "string"))
    add(("GEOSEARCHSTORE", "r7", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "7", "km"))
    add(("TYPE", "r7"))
    return s


def run_pair(a, b, commands, what):
    bad = []
    for cmd in commands:
        ra, rb = a.call(*cmd), b.call(*cmd)
        if ra.raw != rb.raw:
            bad.append(f"{what}: {cmd[:12]}\n  oracle: {ra.raw[:400]!r}\n  blinkdb: {rb.raw[:400]!r}")
    assert not bad, "\n".join(bad[:20]) + f"\n({len(bad)} mismatches)"


def hello(conns, proto):
    if proto == 3:
        for c in conns:
            assert not c.call("HELLO", "3").is_error()


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_oracle(blinkdb, oracle, proto):
    with blinkdb.connect() as b, oracle.connect() as a:
        hello((a, b), proto)
        run_pair(a, b, script(), f"RESP{proto}")


def random_point(rng):
    r = rng.random()
    if r < 0.05:
        return rng.choice([-180, 180, -179.99999, 179.99999]), rng.uniform(-85.05112878, 85.05112878)
    if r < 0.1:
        return rng.uniform(-180, 180), rng.choice([-85.05112878, 85.05112878, -85.05, 85.05])
    return rng.uniform(-180, 180), rng.uniform(-85.05112878, 85.05112878)


def random_searches(rng, key, n):
    cmds = []
    units = ["m", "km", "ft", "mi", "KM"]
    for _ in range(n):
        lon, lat = random_point(rng)
        unit = rng.choice(units)
        scale = {"m": 1, "km": 1000, "ft": 0.3048, "mi": 1609.34, "KM": 1000}[unit]
        radius = rng.choice([1e3, 5e4, 3e5, 1e6, 5e6]) * rng.random() / scale
        opts = rng.sample(["WITHCOORD", "WITHDIST", "WITHHASH"], rng.randrange(4))
        opts += rng.choice([[], ["ASC"], ["DESC"]])
        if rng.random() < 0.4:
            opts += ["COUNT", str(rng.randrange(1, 20))]
            if rng.random() < 0.3:
                opts.append("ANY")
        rlon, rlat = repr(lon), repr(lat)
        form = rng.randrange(6)
        if form == 0:
            cmds.append(("GEORADIUS", key, rlon, rlat, repr(radius), unit, *opts))
        elif form == 1:
            cmds.append(("GEOSEARCH", key, "FROMLONLAT", rlon, rlat, "BYRADIUS",
                         repr(radius), unit, *opts))
        elif form == 2:
            w, h = repr(radius * rng.uniform(0.2, 3)), repr(radius * rng.uniform(0.2, 3))
            cmds.append(("GEOSEARCH", key, "FROMLONLAT", rlon, rlat, "BYBOX", w, h, unit, *opts))
        elif form == 3:
            member = f"p{rng.randrange(400)}"
            cmds.append(("GEOSEARCH", key, "FROMMEMBER", member, "BYRADIUS",
                         repr(radius), unit, *opts))
        elif form == 4:
            member = f"p{rng.randrange(400)}"
            cmds.append(("GEORADIUSBYMEMBER", key, member, repr(radius), unit, *opts))
        else:
            plain_opts = [o for o in opts if not o.startswith("WITH")]
            if rng.random() < 0.5:
                plain_opts.append("STOREDIST")
            cmds.append(("GEOSEARCHSTORE", "dst", key, "FROMLONLAT", rlon, rlat, "BYRADIUS",
                         repr(radius), unit, *plain_opts))
            cmds.append(("ZRANGE", "dst", "0", "-1", "WITHSCORES"))
    return cmds


@pytest.mark.parametrize("proto", [2, 3])
def test_random_points_match_oracle(blinkdb, oracle, proto):
    seed = int(os.environ.get("BLINKDB_GEO_SEED", "7")) + proto
    rng = random.Random(seed)
    with blinkdb.connect() as b, oracle.connect() as a:
        hello((a, b), proto)
        for key, n in [("small", 60), ("big", 400)]:
            args = ["GEOADD", key]
            for i in range(n):
                lon, lat = random_point(rng)
                args += [repr(lon), repr(lat), f"p{i}"]
            run_pair(a, b, [tuple(args)], f"seed {seed}")
            members = [f"p{i}" for i in range(0, n, 7)]
            cmds = [("GEOPOS", key, *members), ("GEOHASH", key, *members),
                    ("ZRANGE", key, "0", "-1", "WITHSCORES")]
            for _ in range(30):
                cmds.append(("GEODIST", key, f"p{rng.randrange(n)}", f"p{rng.randrange(n)}",
                             rng.choice(["m", "km", "ft", "mi"])))
            cmds += random_searches(rng, key, 150)
            run_pair(a, b, cmds, f"seed {seed}")


def test_keyspace_events_match(blinkdb, oracle):
    def events(srv):
        with srv.connect() as c, srv.connect() as sub:
            c.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
            sub.call("PSUBSCRIBE", "__keyevent@*__:*")
            for cmd in [SICILY, ("GEOADD", "Sicily", "NX", "1", "1", "Palermo"),
                        ("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "a"),
                        ("GEORADIUS", "Sicily", "0", "0", "1", "km", "STORE", "a"),
                        ("GEOSEARCHSTORE", "b", "Sicily", "FROMMEMBER", "Palermo",
                         "BYRADIUS", "300", "km"),
                        ("GEOSEARCHSTORE", "b", "nope", "FROMMEMBER", "Palermo",
                         "BYRADIUS", "300", "km")]:
                c.call(*cmd)
            c.call("SET", "end", "1")
            seen = []
            while True:
                reply = sub.read_reply()
                _, _, channel, key = plain((reply.kind, reply.value))
                seen.append((channel, key))
                if key == b"end":
                    return seen

    assert events(oracle) == events(blinkdb)


def geo_workload(conn):
    rng = random.Random(11)
    cmds = []
    for k in range(4):
        args = ["GEOADD", f"g{k}", "CH"]
        for i in range(rng.choice([5, 200])):
            lon, lat = random_point(rng)
            args += [repr(lon), repr(lat), f"m{i}"]
        cmds.append(args)
    cmds += [
        ("GEOADD", "g0", "XX", "1", "2", "m0", "3", "4", "new"),
        ("GEOADD", "g0", "NX", "5", "6", "m1", "7", "8", "new2"),
        ("GEORADIUS", "g1", "0", "0", "20000", "km", "STORE", "s1"),
        ("GEORADIUSBYMEMBER", "g1", "m1", "5000", "km", "STOREDIST", "s2"),
        ("GEOSEARCHSTORE", "s3", "g2", "FROMLONLAT", "10", "10", "BYBOX", "9000", "9000",
         "km", "STOREDIST", "COUNT", "10"),
        ("GEOSEARCHSTORE", "s4", "g3", "FROMLONLAT", "10", "10", "BYRADIUS", "1", "m"),
    ]
    for reply in conn.pipeline(cmds):
        assert not reply.is_error(), reply.raw


def snapshot(conn):
    keys = sorted(k for _, k in conn.call("KEYS", "*").value)
    return {k: conn.call("ZRANGE", k, "0", "-1", "WITHSCORES").raw for k in keys}


def test_persistence_and_redis_loads_the_aof(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "blinkdb")
    expected = blinkdb_snapshot(blinkdb_binary, directory, snapshot, geo_workload)
    assert len(expected) >= 7
    incr = [f for f in os.listdir(os.path.join(directory, "appendonlydir")) if "incr" in f]
    text = b"".join(open(os.path.join(directory, "appendonlydir", f), "rb").read()
                    for f in incr)
    assert b"GEOADD" not in text.upper() and b"zadd" in text
    assert blinkdb_snapshot(blinkdb_binary, directory, snapshot) == expected, "after a restart"
    check_aof(directory)
    assert redis_snapshot_of_aof(directory, str(tmp_path / "redis-copy"), snapshot) == expected, \
        "redis-server loading BlinkDB's AOF"
    assert redis_snapshot_of_run(str(tmp_path / "oracle"), geo_workload, snapshot) == expected, \
        "redis-server given the same commands"
