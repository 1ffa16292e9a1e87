"""Holds a process to a fixed share of one CPU with a CFS bandwidth quota (cgroup v1 `cpu`
controller, or cgroup v2 `cpu.max`), so that it, not the load generator, is the bottleneck."""
import contextlib
import os

V1_ROOT = "/sys/fs/cgroup/cpu"
V2_ROOT = "/sys/fs/cgroup"
# A short period keeps throttling smooth: the process runs PERIOD * share of every PERIOD.
PERIOD_US = 100_000


class Unavailable(Exception):
    pass


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _group_dir(name):
    if os.path.exists(os.path.join(V1_ROOT, "cpu.cfs_quota_us")):
        return os.path.join(V1_ROOT, name), "v1"
    if os.path.exists(os.path.join(V2_ROOT, "cgroup.controllers")):
        with open(os.path.join(V2_ROOT, "cgroup.controllers")) as f:
            if "cpu" in f.read().split():
                return os.path.join(V2_ROOT, name), "v2"
    raise Unavailable("no cgroup cpu controller at %s or %s" % (V1_ROOT, V2_ROOT))


def _move(pid, group, version):
    if version == "v2":
        _write(os.path.join(group, "cgroup.procs"), str(pid))
        return
    for tid in os.listdir("/proc/%d/task" % pid):  # v1's `tasks` takes threads one by one
        _write(os.path.join(group, "tasks"), tid)


@contextlib.contextmanager
def limited(pid, share):
    """Moves every thread of `pid` into a new cgroup limited to `share` (0 < share <= 1) of
    one CPU for the duration of the block. Raises Unavailable without root or cgroups."""
    if os.geteuid() != 0:
        raise Unavailable("not root: cannot create a cgroup")
    path, version = _group_dir("blinkdb-bench-%d" % pid)
    quota = max(1000, int(PERIOD_US * share))
    try:
        os.makedirs(path, exist_ok=True)
        if version == "v1":
            _write(os.path.join(path, "cpu.cfs_period_us"), str(PERIOD_US))
            _write(os.path.join(path, "cpu.cfs_quota_us"), str(quota))
        else:
            _write(os.path.join(V2_ROOT, "cgroup.subtree_control"), "+cpu")
            _write(os.path.join(path, "cpu.max"), "%d %d" % (quota, PERIOD_US))
        _move(pid, path, version)
    except OSError as e:
        raise Unavailable("cgroup %s: %s" % (path, e))
    try:
        yield
    finally:
        parent = V1_ROOT if version == "v1" else V2_ROOT
        with contextlib.suppress(OSError):  # the process may be gone
            _move(pid, parent, version)
        with contextlib.suppress(OSError):
            os.rmdir(path)
