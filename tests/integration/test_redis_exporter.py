"""redis_exporter (the Prometheus exporter operators run) scraping BlinkDB
yields every metric name it yields for redis-server 7.0.15 under the same
load (issue 44), config metrics included; and so does a scrape as the
least-privilege ACL user its README recommends (issue 40), with no command of
the scrape refused.

How the exporter is had: exporter_util.py."""

import re
import subprocess
import time
import urllib.request

import pytest

from exporter_util import exporter_binary
from server import ORACLE_BIN, ServerProcess, free_port

# The same load on both: strings, each collection type, a stream group read,
# a script, a function, an error, keys with a TTL, a subscriber's channel.
LOAD = [
    ("SET", "k", "v"),
    ("GET", "k"),
    ("GET", "missing"),
    ("HSET", "h", "f", "v"),
    ("LPUSH", "l", "a"),
    ("SADD", "s", "m"),
    ("ZADD", "z", "1", "m"),
    ("XADD", "x", "1-1", "f", "v"),
    ("XGROUP", "CREATE", "x", "g", "0"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"),
    ("SET", "t", "v", "EX", "100"),
    ("EVAL", "return 1", "0"),
    ("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"),
    ("INCR", "h"),
    ("CLIENT", "SETNAME", "loader"),
]


def start_bare(binary, tmp_path, name, *extra):
    port = free_port()
    return ServerProcess(binary, str(tmp_path / name), port=port,
                         args=["--port", str(port), "--save", "", *extra])


def scrape(exporter, port, tmp_path, args=()):
    """The metric names one scrape of the server on `port` yields, and the
    exporter's log."""
    web = free_port()
    log_path = tmp_path / f"exporter-{port}.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [exporter, "-redis.addr", f"redis://127.0.0.1:{port}",
         "-web.listen-address", f"127.0.0.1:{web}", "-include-config-metrics", *args],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{web}/metrics",
                                              timeout=10).read().decode()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
    names = set()
    for line in body.splitlines():
        if line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    assert "redis_up 1" in body, body[-2000:]
    return names, log_path.read_text()


@pytest.fixture(scope="module")
def exporter(tmp_path_factory):
    return exporter_binary(str(tmp_path_factory.mktemp("exporter")))


def test_exporter_metric_names_match_redis(blinkdb_binary, exporter, tmp_path):
    names = {}
    for kind, binary in (("redis", ORACLE_BIN), ("blinkdb", blinkdb_binary)):
        srv = start_bare(binary, tmp_path, kind)
        try:
            with srv.connect() as conn:
                for cmd in LOAD:
                    conn.call(*cmd)
                names[kind], _ = scrape(exporter, srv.port, tmp_path)
        finally:
            srv.stop()
    # A scrape yields a few hundred names; a failed one would yield a handful.
    assert len(names["redis"]) > 150, sorted(names["redis"])
    missing = sorted(names["redis"] - names["blinkdb"])
    assert not missing, f"{len(missing)} metrics redis-server yields and BlinkDB not: {missing}"


# The user redis_exporter's README (v1.88.0) tells operators to create for it.
README_RULES = ("-@all +@connection +memory -readonly +strlen +config|get +xinfo +pfcount -quit "
                "+zcard +type +xlen -readwrite -command +client -wait +scard +llen +hlen +arcount "
                "+get +eval +slowlog +cluster|info +cluster|slots +cluster|nodes -hello -echo "
                "+info +latency +scan -reset -auth -asking")
# `+arcount` names Redis 8's array command, which 7.0 refuses as a rule; what
# the README leaves out and a scrape with every key option needs: `on`, a
# password, `~*` for the keys it reads, `+evalsha` (the key-group script is
# sent by EVALSHA before EVAL).
LEAST_PRIVILEGE = README_RULES.replace(" +arcount", "") + " on >exporter-pw ~* +evalsha"
# Every command the exporter sends: key, stream, key-group and script checks.
EXPORTER_ARGS = [
    "-redis.user", "exporter", "-redis.password", "exporter-pw",
    "-check-keys", "db0=k*,db1=l*", "-check-single-keys", "db0=hll",
    "-check-streams", "db0=x*", "-check-single-streams", "db0=x",
    "-count-keys", "db0=*,db1=*", "-check-key-groups", "k.*",
    "-export-client-list", "-include-system-metrics", "-ping-on-connect",
]
KEYS = [("SELECT", "1"), ("LPUSH", "l1", "a", "b"), ("SELECT", "0"), ("PFADD", "hll", "a")]
# INFO stats fields of Redis 7.2 that BlinkDB serves and 7.0.15 lacks
# (docs/compatibility.md, ACL).
BLINKDB_ONLY = {f"redis_acl_access_denied_{kind}_total" for kind in ("auth", "cmd", "key", "channel")}
# INFO stats' expired_subkeys: hash fields expired (Redis 8.0's field, which BlinkDB serves).
BLINKDB_ONLY.add("redis_expired_subkeys_total")


def test_exporter_least_privilege_user(blinkdb_binary, exporter, tmp_path):
    """Scraping as the user the exporter's README recommends yields the same
    metric names on both servers, and no command of the scrape is refused."""
    script = tmp_path / "metrics.lua"
    script.write_text('return {"answer", "42"}')
    names, refused = {}, {}
    for kind, binary in (("redis", ORACLE_BIN), ("blinkdb", blinkdb_binary)):
        # The same persistence on both, so the names compare both ways.
        srv = start_bare(binary, tmp_path, kind, "--appendonly", "no")
        try:
            with srv.connect() as conn:
                for cmd in LOAD + KEYS:
                    conn.call(*cmd)
                refused[kind] = conn.call("ACL", "SETUSER", "exporter", *README_RULES.split(),
                                          ">exporter-pw").raw
                assert conn.call("ACL", "SETUSER", "exporter", *LEAST_PRIVILEGE.split()).raw == b"+OK\r\n"
                names[kind], log = scrape(exporter, srv.port, tmp_path,
                                          EXPORTER_ARGS + ["-script", str(script)])
                denied = conn.call("ACL", "LOG").raw
        finally:
            srv.stop()
        assert "NOPERM" not in log, f"{kind}: {log[-3000:]}"
        assert denied == b"*0\r\n", f"{kind} ACL LOG: {denied!r}"
    assert refused["blinkdb"] == refused["redis"], refused
    assert b"'+arcount'" in refused["redis"], refused["redis"]
    # The key, stream, key-group and script checks all answered.
    for name in ("redis_key_size", "redis_stream_length", "redis_key_group_count",
                 "redis_script_values", "redis_keys_count"):
        assert name in names["redis"], name
    missing = sorted(names["redis"] - names["blinkdb"])
    extra = sorted(names["blinkdb"] - names["redis"] - BLINKDB_ONLY)
    assert not missing and not extra, f"BlinkDB lacks {missing}, has besides {extra}"
