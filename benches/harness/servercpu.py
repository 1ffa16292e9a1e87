"""CPU time of a server process around one load-tool run (issue 17: cost per operation).

The reading is the process's CPU clock (clock_gettime on the clock id of another process,
what clock_getcpuclockid(3) returns): user plus system time of every thread the process has
or had, in nanoseconds. It is the same sum the kernel reports in /proc/PID/stat as utime +
stime, which that file rounds to clock ticks (10 ms); a 0.2 s quick run would read to 5%.
Busy polling is CPU time like any other, so it counts; so does whatever the server spends
while no request is in flight (its timers, its background threads).

Work a server hands to processes it forks (redis-server's AOF rewrite and BGSAVE children)
counts too: the children it has reaped (cutime + cstime in its /proc/PID/stat) and those still
running (each live child's utime + stime + its own reaped children), so a fork's CPU is not free
where BlinkDB does the same work in a thread of its own process. Children are read at clock-tick
resolution; a child that spans a window's edge is split at the edge.

Each window also reports the server's CPU and the wall time since the previous window of
the same process (the other servers' runs, the harness's own pauses), so idle cost is visible
on its own; a cell sums them over its runs (a median of per-gap shares would be skewed by the
back-to-back runs that alternation gives the last server of a round).
"""
import os
import time

# Per (pid, start time): (CPU seconds, monotonic seconds) at the end of the last window.
_last = {}


def _clock_id(pid):
    # The kernel's encoding of "process-wide scheduler clock of pid" (CPUCLOCK_SCHED = 2).
    return ((~pid) << 3) | 2


def _stat(pid):
    with open("/proc/%d/stat" % pid) as f:
        # Fields after the command name, which is in parentheses and may hold spaces.
        return f.read().rsplit(")", 1)[1].split()


def start_time(pid):
    return int(_stat(pid)[19])


def _stat_own_seconds(pid):
    """utime + stime from /proc/PID/stat (whole process, clock-tick resolution)."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_seconds(pid):
    try:
        return time.clock_gettime(_clock_id(pid))
    except OSError:
        return _stat_own_seconds(pid)


def children_seconds(pid):
    """CPU seconds of pid's children: reaped ones (its cutime + cstime) and live ones (their
    utime + stime + cutime + cstime), at clock-tick resolution."""
    tick = os.sysconf("SC_CLK_TCK")
    fields = _stat(pid)
    ticks = int(fields[13]) + int(fields[14])
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == pid:
            continue
        try:
            f = _stat(int(name))
        except OSError:
            continue  # gone meanwhile: reaped, so in the parent's cutime from now on
        if int(f[1]) == pid:
            ticks += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
    return ticks / tick


def cpu_seconds(pid):
    """The process's own CPU (every thread) plus its children's."""
    own = _own_seconds(pid)
    try:
        return own + children_seconds(pid)
    except OSError:
        return own


def _readings(pid):
    """(cpu_seconds, stat_seconds) of pid, its children read once for both."""
    children = children_seconds(pid)
    return _own_seconds(pid) + children, _stat_own_seconds(pid) + children


class Window:
    """`with Window(pid) as w:` ... then w.seconds (CPU used inside), w.idle_cpu and
    w.idle_wall (CPU and wall seconds since the previous window of this process, None on the
    first one) and w.stat_seconds (the same window read from /proc/PID/stat, a cross-check)."""

    def __init__(self, pid):
        self.pid = pid
        self.seconds = self.idle_cpu = self.idle_wall = self.stat_seconds = None

    def __enter__(self):
        self.key = (self.pid, start_time(self.pid))
        (self.cpu0, self.stat0), self.wall0 = _readings(self.pid), time.monotonic()
        last = _last.get(self.key)
        if last:
            self.idle_cpu, self.idle_wall = self.cpu0 - last[0], self.wall0 - last[1]
        return self

    def __exit__(self, *exc):
        try:
            (cpu, stat), wall = _readings(self.pid), time.monotonic()
        except OSError:
            return False  # the server died; the tool's own error says why
        self.seconds = cpu - self.cpu0
        self.stat_seconds = stat - self.stat0
        _last[self.key] = (cpu, wall)
        return False


class Windows:
    """Window over several processes (a cluster's nodes): the same attributes, summed."""

    def __init__(self, pids):
        self.windows = [Window(pid) for pid in pids]
        self.seconds = self.idle_cpu = self.idle_wall = self.stat_seconds = None

    def __enter__(self):
        for w in self.windows:
            w.__enter__()
        return self

    def __exit__(self, *exc):
        for w in self.windows:
            w.__exit__(*exc)
        for name in ("seconds", "stat_seconds", "idle_cpu"):
            values = [getattr(w, name) for w in self.windows]
            setattr(self, name, None if None in values else sum(values))
        # Wall time is shared, not summed: the nodes' idle CPU is over the same gap.
        walls = [w.idle_wall for w in self.windows]
        self.idle_wall = None if None in walls else max(walls)
        return False
