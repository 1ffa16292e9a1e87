"""redis_exporter (the Prometheus exporter operators run) scraping BlinkDB
yields every metric name it yields for redis-server 7.0.15 under the same
load (issue 44), config metrics included.

How the exporter is had: exporter_util.py."""

import re
import subprocess
import time
import urllib.request

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


def start_bare(binary, tmp_path, name):
    port = free_port()
    return ServerProcess(binary, str(tmp_path / name), port=port,
                         args=["--port", str(port), "--save", ""])


def scrape(exporter, port, tmp_path):
    """The metric names one scrape of the server on `port` yields."""
    web = free_port()
    log = open(tmp_path / f"exporter-{port}.log", "wb")
    proc = subprocess.Popen(
        [exporter, "-redis.addr", f"redis://127.0.0.1:{port}",
         "-web.listen-address", f"127.0.0.1:{web}", "-include-config-metrics"],
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
    return names


def test_exporter_metric_names_match_redis(blinkdb_binary, tmp_path, tmp_path_factory):
    exporter = exporter_binary(str(tmp_path_factory.mktemp("exporter")))
    names = {}
    for kind, binary in (("redis", ORACLE_BIN), ("blinkdb", blinkdb_binary)):
        srv = start_bare(binary, tmp_path, kind)
        try:
            with srv.connect() as conn:
                for cmd in LOAD:
                    conn.call(*cmd)
                names[kind] = scrape(exporter, srv.port, tmp_path)
        finally:
            srv.stop()
    # A scrape yields a few hundred names; a failed one would yield a handful.
    assert len(names["redis"]) > 150, sorted(names["redis"])
    missing = sorted(names["redis"] - names["blinkdb"])
    assert not missing, f"{len(missing)} metrics redis-server yields and BlinkDB not: {missing}"
