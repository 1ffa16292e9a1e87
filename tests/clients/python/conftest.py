"""Where the server under test is, and how to restart it; shared by every test module."""

import os
import shlex
import subprocess

import pytest

HOST = os.environ.get("BLINKDB_HOST", "127.0.0.1")
PORT = int(os.environ.get("BLINKDB_PORT", "6379"))
RESTART_CMD = os.environ.get("BLINKDB_RESTART_CMD", "")


def restart_server():
    if not RESTART_CMD:
        pytest.fail("BLINKDB_RESTART_CMD is not set; the reconnection test needs it")
    subprocess.run(shlex.split(RESTART_CMD), check=True, timeout=60)


ALL_BYTES = bytes(range(256))
# A value with every byte, and the framing bytes RESP must not trip over.
BINARY_VALUE = ALL_BYTES + b"\r\n\x00\r\n$-1\r\n" + ALL_BYTES
