"""redis-server 8.0.2 and valkey-server 8.1.1, the newer peers (issue 43), built from Debian
13's source packages by tests/peers/build.sh (once: a lock file makes every caller wait for
the one build; tests/run-all.sh starts it in the background before the test stages)."""

import os
import subprocess

import pytest

from server import REPO_ROOT, ServerProcess

BUILD = os.path.join(REPO_ROOT, "tests", "peers", "build.sh")
PEERS = ["redis", "valkey"]
# What each writes: Redis 8.0 RDB 12, valkey 8.1 RDB 11.
RDB_VERSION = {"redis": 12, "valkey": 11}

_built = {}


def peer_binary(kind):
    """The peer's server binary, built now if no run built it yet (up to 20 minutes on a
    loaded 2-core machine; about 2 when idle)."""
    if kind not in _built:
        done = subprocess.run([BUILD, kind], capture_output=True, text=True, timeout=1200)
        if done.returncode != 0:
            pytest.fail(f"building the {kind} peer failed:\n{done.stderr}", pytrace=False)
        _built[kind] = done.stdout.strip().splitlines()[-1]
    return _built[kind]


def start_peer(started, kind, directory, args=(), port=None):
    """A peer server without persistence unless `args` asks, DEBUG enabled."""
    srv = ServerProcess(peer_binary(kind), str(directory),
                        ["--enable-debug-command", "yes", *args], port=port)
    started.append(srv)
    return srv
