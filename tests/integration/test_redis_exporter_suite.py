"""redis_exporter's own tests (the Go tests of its `exporter` package, issue
44) against redis-server 7.0.15 and against BlinkDB: BlinkDB passes every
test that redis-server passes.

Each server gets the single instances the exporter's Makefile and
docker-compose.yml point its TEST_* variables at: a plain one (also named by
the Redis 6 and 7 variables: tests of another version's own replies fail on
both and so ask nothing of BlinkDB), one with `requirepass`, and one with an
ACL user `exporter`, and one over TLS, started with the same arguments on
both servers. The services the exporter's CI also runs (clusters, Sentinel,
Valkey, KeyDB, Tile38, Redis 8 modules) are not started, so their tests skip
on both.
How the exporter's source is had: exporter_util.py."""

import json
import os
import re
import shutil
import subprocess

import pytest

from exporter_util import exporter_source, exporter_test_binary
from server import ORACLE_BIN, ServerProcess, free_port

# The instances of the exporter's docker-compose.yml that one server can be:
# name -> the arguments after base_args, the variables naming it and how.
INSTANCES = {
    "plain": (["--enable-debug-command", "yes"],
              {"TEST_REDIS_URI": "redis://127.0.0.1:{port}",
               "TEST_REDIS7_URI": "redis://127.0.0.1:{port}",
               "TEST_REDIS6_URI": "redis://127.0.0.1:{port}"}),
    "pwd": (["--requirepass", "redis-password"],
            {"TEST_PWD_REDIS_URI": "redis://:redis-password@127.0.0.1:{port}"}),
    "user": (["--requirepass", "dummy", "--user", "exporter", "on", "+CLIENT", "+INFO",
              "+SELECT", "+SLOWLOG", "+LATENCY", ">exporter-password"],
             {"TEST_USER_PWD_REDIS_URI": "redis://exporter:exporter-password@127.0.0.1:{port}"}),
    # With the certificates of the exporter's gen-test-certs.sh (its client
    # certificate is an X.509 v1 one); a plain port too, to see it is up.
    "tls": (["--tls-port", "{tls_port}", "--tls-cert-file", "{certs}/redis.crt",
             "--tls-key-file", "{certs}/redis.key", "--tls-ca-cert-file", "{certs}/ca.crt"],
            {"TEST_REDIS7_TLS_URI": "rediss://127.0.0.1:{tls_port}"}),
}
# Entries of contrib/sample-pwd-file.json for our instances: the tests look up
# the instance they scrape by its address there.
PWD_FILE_ENTRIES = {
    "plain": ("redis://127.0.0.1:{port}", ""),
    "pwd": ("redis://127.0.0.1:{port}", "redis-password"),
    "user": ("redis://exporter@127.0.0.1:{port}", "exporter-password"),
}
RESULT = re.compile(r"^--- (PASS|FAIL|SKIP): (\S+) \(")
# A test of timing (TestLatencySpike allows 5 ms) can miss on a loaded box:
# one that redis-server passed and BlinkDB did not is run again this often.
RETRIES = 2


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """The test binary and a copy of the files it reads from ../contrib."""
    root = tmp_path_factory.mktemp("exporter-suite")
    binary = exporter_test_binary(str(root))
    source = exporter_source()
    # Its TLS tests read certificates made by the exporter's own script.
    certs = root / "certs"
    shutil.copytree(os.path.join(source, "contrib", "tls"), certs)
    made = subprocess.run(["bash", str(certs / "gen-test-certs.sh")], capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    return {"binary": binary, "source": source, "certs": certs, "root": root}


def layout(suite, directory, ports):
    """A working directory whose ../contrib holds what the tests read, the
    password file listing this server's instances besides the original's."""
    contrib = directory / "contrib"
    shutil.copytree(suite["certs"], contrib / "tls")
    original = os.path.join(suite["source"], "contrib", "sample-pwd-file.json")
    shutil.copy(original + "-malformed", contrib)
    with open(original) as f:
        passwords = json.load(f)
    for name, (uri, password) in PWD_FILE_ENTRIES.items():
        passwords[uri.format(port=ports[name])] = password
    with open(contrib / "sample-pwd-file.json", "w") as f:
        json.dump(passwords, f)
    (directory / "exporter").mkdir()
    return str(directory / "exporter")


def run_tests(suite, cwd, env, only=None):
    """Each top-level test's result (PASS/FAIL/SKIP) and the whole output."""
    args = [suite["binary"], "-test.v", "-test.timeout", "300s", "-test.count", "1"]
    if only:
        args += ["-test.run", "^(" + "|".join(map(re.escape, sorted(only))) + ")$"]
    got = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=400)
    results = {}
    for line in got.stdout.splitlines():
        match = RESULT.match(line)
        if match:
            results[match.group(2)] = match.group(1)
    return results, got.stdout + got.stderr


def start_instances(binary, kind, tmp_path, certs, started):
    """The instances on `binary` (appended to `started` as each starts) and
    the environment naming them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEST_")}
    ports = {}
    for name, (args, uris) in INSTANCES.items():
        password = {"pwd": "redis-password", "user": "dummy"}.get(name)
        tls_port = free_port()
        args = [a.format(tls_port=tls_port, certs=certs) for a in args]
        srv = ServerProcess(binary, str(tmp_path / kind / name), args, password=password)
        started.append(srv)
        ports[name] = srv.port
        env.update({var: uri.format(port=srv.port, tls_port=tls_port)
                    for var, uri in uris.items()})
    return ports, env


def test_exporter_suite_passes_where_redis_passes(blinkdb_binary, suite, tmp_path):
    results = {}
    started = []
    try:
        for kind, binary in (("redis", ORACLE_BIN), ("blinkdb", blinkdb_binary)):
            ports, env = start_instances(binary, kind, tmp_path, suite["certs"], started)
            cwd = layout(suite, tmp_path / kind, ports)
            results[kind], output = run_tests(suite, cwd, env)
            if kind == "redis":
                while started:
                    started.pop().stop()
        missed = {t for t, r in results["redis"].items()
                  if r == "PASS" and results["blinkdb"].get(t) != "PASS"}
        for _ in range(RETRIES):
            if not missed:
                break
            again, output = run_tests(suite, cwd, env, only=missed)
            missed = {t for t in missed if again.get(t) != "PASS"}
    finally:
        for srv in started:
            srv.stop()

    table = "\n".join(f"{t:55} {results['redis'].get(t, '-'):5} {results['blinkdb'].get(t, '-')}"
                      for t in sorted(set(results["redis"]) | set(results["blinkdb"])))
    print(f"{'test':55} redis blinkdb\n{table}")
    passed = sum(r == "PASS" for r in results["redis"].values())
    # The plain, password and ACL-user tests: some 90 pass on redis-server;
    # a broken setup would pass a handful.
    assert passed > 60, f"only {passed} tests pass on redis-server:\n{table}"
    assert not missed, (f"pass on redis-server, not on BlinkDB: {sorted(missed)}\n"
                        f"{output[-6000:]}")
