"""Pins a server to one CPU and its load generator to another for single-client cells.

With one client every request is a wake-up of the other side. On these VMs a wake-up on
the same CPU costs ~10 us and one across CPUs ~60 us, and the scheduler picks either from
run to run, so unpinned single-client cells swung 0.8-1.5x. Pinned, every run of every
server pays the same cross-CPU wake-up."""
import contextlib
import os

SERVER_CPU = 0
CLIENT_CPU = 1


def available():
    return hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2


def _set_all_threads(pid, cpus):
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, PermissionError):
            pass  # a thread that just ended


@contextlib.contextmanager
def server_pinned(pid):
    """Every thread of `pid` on SERVER_CPU inside the block; yields the client's CPU
    (None when the machine has one CPU, and nothing is pinned)."""
    if not available():
        yield None
        return
    everything = os.sched_getaffinity(0)
    _set_all_threads(pid, {SERVER_CPU})
    try:
        yield CLIENT_CPU
    finally:
        if os.path.exists("/proc/%d" % pid):
            _set_all_threads(pid, everything)
