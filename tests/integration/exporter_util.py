"""redis_exporter (the Prometheus exporter operators run, issue 44) for the
tests that use it: its Go module source, its binary and its own `exporter`
package tests, built with Go.

REDIS_EXPORTER_BIN names a built binary, or REDIS_EXPORTER_SRC a checkout of
github.com/oliver006/redis_exporter; without either, `go mod download` takes
EXPORTER_VERSION from the Go module proxy (which serves that exact version,
though it lists none). Go's module cache lives under target/go, so a clean
clone downloads the exporter itself and nothing is placed by hand on the
machine. The compiled packages go to Go's own build cache (GOCACHE as `go env`
gives it, as for the client matrix's go-redis suite, tests/clients/run.sh): the
standard-library packages both need are compiled once, not once per cache (the
exporter's go build and `go test -c` after a cold go-redis suite build: 32 CPU s,
against 87 from a cold cache of their own, 2026-12-06), and a machine that keeps
its cache compiles the exporter once. Go keys its cache by content, so a cached package is never
stale. Only when Go or the proxy is missing are the tests skipped, saying so."""

import contextlib
import fcntl
import json
import os
import shutil
import subprocess

import pytest

from server import REPO_ROOT

# The exporter release the proxy serves by exact version (it refuses listing).
EXPORTER_VERSION = "v1.88.0"

GO_ROOT = os.path.join(REPO_ROOT, "target", "go")


def go_env():
    """The environment every go command here runs with."""
    return {
        **os.environ,
        "GOMODCACHE": os.path.join(GO_ROOT, "mod"),
        # Module files writable, so a clean of target/ can remove them.
        "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -modcacherw".strip(),
    }


@contextlib.contextmanager
def build_lock():
    """One go build at a time across pytest-xdist workers: the second finds
    the first's packages in the build cache instead of compiling them too."""
    os.makedirs(GO_ROOT, exist_ok=True)
    with open(os.path.join(GO_ROOT, "build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def exporter_source():
    """The exporter's module source: REDIS_EXPORTER_SRC, else `go mod download`."""
    if os.environ.get("REDIS_EXPORTER_SRC"):
        return os.environ["REDIS_EXPORTER_SRC"]
    if not shutil.which("go"):
        pytest.skip("SKIPPED LOUDLY: no redis_exporter and no Go toolchain to build it")
    got = subprocess.run(
        ["go", "mod", "download", "-json", f"github.com/oliver006/redis_exporter@{EXPORTER_VERSION}"],
        capture_output=True, text=True, timeout=300, env=go_env())
    info = json.loads(got.stdout or "{}")
    if got.returncode != 0 or not info.get("Dir"):
        pytest.skip(f"SKIPPED LOUDLY: the Go proxy did not give redis_exporter "
                    f"{EXPORTER_VERSION}: {info.get('Error') or got.stderr.strip()}")
    return info["Dir"]


def exporter_binary(out_dir):
    """A redis_exporter binary: REDIS_EXPORTER_BIN or one on PATH, else built."""
    binary = os.environ.get("REDIS_EXPORTER_BIN") or shutil.which("redis_exporter")
    if binary:
        return binary
    out = os.path.join(out_dir, "redis_exporter")
    source = exporter_source()
    with build_lock():
        subprocess.run(["go", "build", "-o", out, "."], cwd=source, check=True,
                       timeout=900, env=go_env())
    return out


def exporter_test_binary(out_dir):
    """The exporter package's own tests (`go test -c ./exporter`), built from
    the module source in place so Go's build cache keys stay the same."""
    out = os.path.join(out_dir, "exporter.test")
    source = exporter_source()
    with build_lock():
        subprocess.run(["go", "test", "-c", "-o", out, "./exporter"], cwd=source,
                       check=True, timeout=900, env=go_env())
    return out
