"""Kernel-backed BF.* filters (BACKEND kernel): pinned bloom maps seen by bpftool,
RAW width, DEL unpins, EXPANSION refused, and a clear error without CAP_BPF."""

import json
import os
import shutil
import subprocess
import uuid

import pytest

from bloom_support import port, start_blinkdb
from server import ServerProcess, base_args


def kernel_or_skip():
    if os.geteuid() != 0:
        pytest.skip("KERNEL BLOOM TESTS SKIPPED: not root (need CAP_BPF and CAP_SYS_ADMIN)")
    if shutil.which("bpftool") is None:
        pytest.skip("KERNEL BLOOM TESTS SKIPPED: bpftool not installed")


@pytest.fixture
def pin_root():
    kernel_or_skip()
    root = f"/sys/fs/bpf/blinkdb-test-{uuid.uuid4().hex[:8]}"
    yield root
    shutil.rmtree(root, ignore_errors=True)


def map_show(path):
    out = subprocess.run(["bpftool", "-j", "map", "show", "pinned", path],
                         capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def test_kernel_filter_lifecycle(blinkdb_binary, tmp_path, pin_root):
    srv = start_blinkdb(blinkdb_binary, str(tmp_path / "d"), "--bpf-pin-root", pin_root)
    try:
        c = srv.connect()
        r = c.call("BF.RESERVE", "k", "0.01", "10000", "BACKEND", "kernel")
        if r.is_error():
            pytest.skip(f"KERNEL BLOOM TESTS SKIPPED: {r.value!r}")
        info = c.call("BF.INFO", "k").value
        flat = [v for _, v in info]
        pinned = flat[flat.index(b"Pinned path") + 1].decode()
        shown = map_show(pinned)
        assert shown and shown["type"] == "bloom_filter" and shown["max_entries"] == 10000
        assert flat[flat.index(b"Map id") + 1] == shown["id"]
        items = [f"x{i}" for i in range(10000)]
        for i in range(0, 10000, 500):
            c.call("BF.MADD", "k", *items[i:i + 500])
        assert all(v for _, v in c.call("BF.MEXISTS", "k", *items[:2000]).value)
        probes = [f"absent{i}" for i in range(20000)]
        fps = sum(v for _, v in c.call("BF.MEXISTS", "k", *probes).value)
        assert fps / len(probes) <= 0.01, fps
        err = c.call("BF.RESERVE", "e", "0.01", "100", "EXPANSION", "2", "BACKEND", "kernel")
        assert err.is_error() and b"EXPANSION" in err.value
        assert c.call("BF.SCANDUMP", "k", "0").is_error()
        assert c.call("BF.RESERVE", "raw", "0.01", "100", "BACKEND", "kernel", "RAW", "4").value == b"OK"
        assert c.call("BF.ADD", "raw", "abcd").value in (1, True)
        bad = c.call("BF.ADD", "raw", "abcde")
        assert bad.is_error() and b"RAW 4-byte" in bad.value
        assert c.call("DEL", "k").value == 1
        assert map_show(pinned) is None and not os.path.exists(pinned)
    finally:
        srv.stop()


def test_without_cap_bpf_clear_error_and_strings_work(blinkdb_binary, tmp_path, pin_root):
    if shutil.which("setpriv") is None:
        pytest.skip("KERNEL BLOOM TESTS SKIPPED: setpriv missing")
    p = port()
    directory = str(tmp_path / "nocap")
    os.makedirs(directory, exist_ok=True)
    args = ["--inh-caps=-bpf,-sys_admin", "--bounding-set=-bpf,-sys_admin", blinkdb_binary]
    srv = ServerProcess("setpriv", directory,
                        args=args + base_args(p, directory) + ["--bpf-pin-root", pin_root], port=p)
    try:
        c = srv.connect()
        r = c.call("BF.RESERVE", "k", "0.01", "100", "BACKEND", "kernel")
        assert r.is_error() and b"kernel filters unavailable" in r.value, r.value
        assert c.call("SET", "a", "1").value == b"OK" and c.call("GET", "a").value == b"1"
        assert c.call("BF.ADD", "user", "x").value in (1, True)
        assert b"kernel_filters_available:no" in c.call("INFO", "bloom").value
    finally:
        srv.stop()
