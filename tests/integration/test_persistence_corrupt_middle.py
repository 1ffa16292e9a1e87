"""A flipped byte early in a multi-file AOF: refuse to start naming file and offset,
unless aof-load-corrupt yes, which starts and keeps everything outside the damaged part."""

import os
import re
import shutil

from aof_helpers import (
    BK_LINE, aof_path, incr_files, parse_commands, start_aof_server, wait_exit,
)

KEYS = 400
VALUE = 150


def value_of(i):
    return (b"%d:" % i).ljust(VALUE, b"x")


def write_history(binary, directory):
    srv = start_aof_server(binary, directory, "--segment-size", "8kb", "--appendfsync", "no")
    try:
        with srv.connect() as conn:
            for i in range(KEYS):
                assert conn.call("SET", f"key:{i}", value_of(i)).raw == b"+OK\r\n"
    finally:
        srv.stop()


def key_locations(files):
    """{key index: (file index, command end offset)} from the AOF itself."""
    where = {}
    for file_index, path in enumerate(files):
        with open(path, "rb") as f:
            for _, end, args in parse_commands(f.read()):
                if args[0].upper() == b"SET":
                    where[int(args[1].split(b":")[1])] = (file_index, end)
    return where


def batch_bounds(data, position):
    """(start, end) of the annotated batch holding byte `position`."""
    start = 0
    for match in BK_LINE.finditer(data):
        if match.end() > position:
            return start, match.end()
        start = match.end()
    raise AssertionError("position after the last batch")


def corrupt(directory, file_name, position):
    path = aof_path(directory, file_name)
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0x20]))


def early_command(path):
    """The file's bytes and a command a quarter of the way in, with batches after it."""
    with open(path, "rb") as f:
        data = f.read()
    commands = parse_commands(data)
    return data, commands[len(commands) // 4]


def test_corruption_before_the_tail_is_refused_or_skipped(blinkdb_binary, tmp_path):
    pristine = str(tmp_path / "pristine")
    write_history(blinkdb_binary, pristine)
    files = incr_files(pristine)
    assert len(files) >= 3, f"expected several incr files with segment-size 8kb, got {files}"
    where = key_locations(files)
    targets = []
    for file_index, kind in ((0, "first file"), (len(files) - 1, "last file")):
        data, (start, end, args) = early_command(files[file_index])
        value_byte = end - 2 - len(args[-1]) // 2
        targets.append((f"{kind} value byte", file_index, data, value_byte))
        targets.append((f"{kind} RESP framing", file_index, data, start))  # the '*'

    for label, file_index, data, position in targets:
        slug = label.replace(" ", "-")
        name = os.path.basename(files[file_index])
        directory = str(tmp_path / slug)
        shutil.copytree(pristine, directory, ignore=shutil.ignore_patterns("server.log"))
        corrupt(directory, name, position)
        batch_start, batch_end = batch_bounds(data, position)

        srv = start_aof_server(blinkdb_binary, directory, wait=False,
                               log_dir=str(tmp_path / f"log-{slug}"))
        code, log = wait_exit(srv)
        assert code != 0, f"{label}: started on a corrupt AOF:\n{log}"
        match = re.search(re.escape(name) + r"\D{0,40}?offset (\d+)", log)
        assert match, f"{label}: the refusal does not name file {name} and an offset:\n{log}"
        offset = int(match.group(1))
        print(f"{label} flipped at {position}: {match.group(0)!r}")
        assert batch_start <= offset <= batch_end, (
            f"{label}: offset {offset} is not in the damaged batch {batch_start}..{batch_end}")

        srv = start_aof_server(blinkdb_binary, directory, "--aof-load-corrupt", "yes",
                               log_dir=str(tmp_path / f"log-{slug}"))
        try:
            with srv.connect() as conn:
                for i in range(KEYS):
                    key_file, end = where[i]
                    kept = key_file != file_index or end <= batch_start
                    reply = conn.call("GET", f"key:{i}")
                    if kept:
                        assert reply.value == value_of(i), (
                            f"{label}: key:{i} outside the damaged part is {reply.raw[:40]!r}")
                    else:
                        assert reply.value in (None, value_of(i)), (
                            f"{label}: key:{i} has a value that was never written")
        finally:
            srv.stop()
