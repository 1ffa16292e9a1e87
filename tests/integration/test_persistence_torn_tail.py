"""A torn last incr file (truncated or zero-filled tail) loads as a prefix of the history."""

import os
import random
import shutil

from aof_helpers import (
    BK_LINE, aof_path, crash_seed, incr_files, parse_commands, start_aof_server, wait_exit,
)

STEPS = 300
CUTS = 8
ZERO_FILLS = 4
BLOB = 20_000  # above the default 16kb blob-threshold: such values stay in the log only


def history_commands():
    """Step i: SET item:i, SET last i, INCR counter; every 25th step also a large value."""
    commands = []
    for i in range(STEPS):
        commands.append((b"SET", b"item:%d" % i, b"%d" % i))
        if i % 25 == 0:
            commands.append((b"SET", b"blob:%d" % i, (b"%d:" % i) * (BLOB // 4)))
        commands.append((b"SET", b"last", b"%d" % i))
        commands.append((b"INCR", b"counter"))
    return commands


def state_after(commands):
    state = {}
    for name, key, *rest in commands:
        if name == b"SET":
            state[key] = rest[0]
        else:
            state[key] = b"%d" % (int(state.get(key, b"0")) + 1)
    return state


def keys_of(commands):
    return sorted({c[1] for c in commands})


def logged_commands(path):
    """The data commands of an AOF file (SELECT and MULTI/EXEC left out)."""
    with open(path, "rb") as f:
        data = f.read()
    return [(s, e, a) for s, e, a in parse_commands(data)
            if a[0].upper() not in (b"SELECT", b"MULTI", b"EXEC")]


def last_good_batch_end(data, cut):
    """End of the last #BK line that lies wholly before `cut`."""
    good = 0
    for match in BK_LINE.finditer(data[:cut]):
        good = match.end()
    return good


def observed_state(srv, keys):
    with srv.connect(timeout=30.0) as conn:
        replies = conn.pipeline([(b"GET", k) for k in keys])
    return {k: r.value for k, r in zip(keys, replies) if r.value is not None}


def test_torn_tail_loads_a_prefix(blinkdb_binary, tmp_path):
    rng = random.Random(crash_seed())
    history = history_commands()
    keys = keys_of(history)
    pristine = str(tmp_path / "pristine")
    # appendfsync always with one client: every command is its own batch
    srv = start_aof_server(blinkdb_binary, pristine, "--appendfsync", "always")
    with srv.connect() as conn:
        for command in history:
            assert not conn.call(*command).is_error()
    srv.stop()

    files = incr_files(pristine)
    earlier = sum(len(logged_commands(f)) for f in files[:-1])
    last_file = files[-1]
    with open(last_file, "rb") as f:
        data = f.read()
    in_last = logged_commands(last_file)
    assert earlier + len(in_last) == len(history), "the AOF does not hold one record per write"
    assert len(BK_LINE.findall(data)) >= len(in_last), "expected one batch per acknowledged write"

    low = in_last[0][0]
    cuts = [rng.randrange(low, len(data)) for _ in range(CUTS - 2)]
    cuts += [len(data) - rng.randrange(1, 40), len(data) - 1]
    cases = [("truncate", c) for c in cuts]
    cases += [("zero-fill", rng.randrange(low, len(data))) for _ in range(ZERO_FILLS)]

    summary = []
    for n, (kind, cut) in enumerate(cases):
        directory = str(tmp_path / f"case{n}")
        shutil.copytree(pristine, directory, ignore=shutil.ignore_patterns("server.log"))
        target = aof_path(directory, os.path.basename(last_file))
        with open(target, "r+b") as f:
            if kind == "truncate":
                f.truncate(cut)
            else:
                f.seek(cut)
                f.write(bytes(len(data) - cut))
        good_end = last_good_batch_end(data, cut)
        prefix = earlier + sum(1 for _, end, _ in in_last if end <= good_end)
        expected = state_after(history[:prefix])
        summary.append(f"{kind}@{cut}->{prefix}/{len(history)}")

        srv = start_aof_server(blinkdb_binary, directory)
        try:
            got = observed_state(srv, keys)
            assert got == expected, (
                f"{kind} at {cut}/{len(data)}: loaded state is not the first {prefix} writes;"
                f" differing keys: {sorted(set(got.items()) ^ set(expected.items()))[:6]}")
            # appends after the repaired tail must load again
            with srv.connect() as conn:
                assert conn.call("SET", "after-repair", str(n)).raw == b"+OK\r\n"
        finally:
            srv.stop()
        srv = start_aof_server(blinkdb_binary, directory)
        try:
            expected[b"after-repair"] = b"%d" % n
            got = observed_state(srv, keys + [b"after-repair"])
            assert got == expected, f"{kind} at {cut}: a write after the repair was lost"
        finally:
            srv.stop()
    print(f"last incr file {len(data)} bytes; loaded prefixes: {', '.join(summary)}")


def test_torn_tail_refused_without_load_truncated(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always")
    with srv.connect() as conn:
        for i in range(50):
            assert conn.call("SET", f"item:{i}", str(i)).raw == b"+OK\r\n"
    srv.stop()
    last_file = incr_files(directory)[-1]
    size = os.path.getsize(last_file)
    with open(last_file, "r+b") as f:
        f.truncate(size - 7)  # inside the last command or its #BK line

    log_dir = str(tmp_path / "log")
    srv = start_aof_server(blinkdb_binary, directory, "--aof-load-truncated", "no",
                           wait=False, log_dir=log_dir)
    code, log = wait_exit(srv)
    assert code != 0, f"started on a torn AOF with aof-load-truncated no:\n{log}"
    assert os.path.basename(last_file) in log, f"the error does not name the file:\n{log}"
    assert os.path.getsize(last_file) == size - 7, "a refused start must not modify the file"
