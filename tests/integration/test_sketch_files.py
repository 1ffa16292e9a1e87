"""Count-min sketches persisted without replay (issue 45): a restart binds each sketch's
file and skips its AOF records up to the file's checkpoint; a torn page, a damaged
header, a deleted file or a file of the wrong shape is detected and the key rebuilt from
the AOF; records of other commands naming the key before the checkpoint (MERGE, RENAME,
PEXPIRE, FLUSHALL) still see the state they had. Answers are compared before and after."""

import glob
import os
import random
import signal
import time

import pytest

from bloom_support import start_blinkdb

ITEMS = [f"item:{i}" for i in range(300)]


def start(binary, directory, *extra):
    return start_blinkdb(binary, directory, "--appendonly", "yes", "--appendfsync", "always",
                         *extra)


def info(c):
    text = c.call("INFO", "persistence").value
    if isinstance(text, bytes):
        text = text.decode()
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def wait_checkpoint(c, after, field="sketch_checkpoints", timeout=20):
    """Waits until `field` (a count in INFO) is past `after`: a checkpoint ran."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if int(info(c)[field]) > after:
            return
        time.sleep(0.05)
    raise AssertionError("no sketch checkpoint within %ss: %r" % (timeout, info(c)))


def wait_idle(c, timeout=20):
    """Waits until no key waits for a checkpoint and none is under way: every file then
    holds its key as of its last write, and a kill -9 finds whole files (one during a
    checkpoint finds pages newer than their header: the file is rebuilt, as designed)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if info(c)["sketch_checkpoint_busy"] == "0":
            return
        time.sleep(0.05)
    raise AssertionError("checkpoints still busy after %ss: %r" % (timeout, info(c)))


def answers(c, keys):
    out = {}
    for db, key in keys:
        c.call("SELECT", db)
        out[(db, key)] = (c.call("CMS.QUERY", key, *ITEMS).value,
                          c.call("CMS.INFO", key).value)
    c.call("SELECT", 0)
    return out


def fill(c, key, width=1000, depth=5, seed=1, records=100):
    rng = random.Random(seed)
    c.call("CMS.INITBYDIM", key, width, depth)
    for _ in range(records):
        args = []
        for _ in range(5):
            args += [rng.choice(ITEMS), rng.randrange(1, 1000)]
        c.call("CMS.INCRBY", key, *args)


def sketch_files(directory):
    return sorted(glob.glob(os.path.join(directory, "sketch", "*.sketch")))


def kill9(srv):
    os.kill(srv.pid, signal.SIGKILL)
    srv.proc.wait()


@pytest.fixture
def started(blinkdb_binary, tmp_path):
    directory = str(tmp_path / "data")
    servers = []

    def go(*extra):
        srv = start(blinkdb_binary, directory, *extra)
        servers.append(srv)
        return srv, srv.connect()

    yield directory, go
    for srv in servers:
        if srv.alive():
            kill9(srv)


def test_restart_skips_the_records_a_file_covers(started):
    directory, go = started
    srv, c = go()
    fill(c, "a", seed=1)
    c.call("SELECT", 3)
    fill(c, "b", width=3000, depth=2, seed=2, records=50)
    c.call("SELECT", 0)
    keys = [(0, "a"), (3, "b")]
    before = answers(c, keys)
    srv.stop()  # the shutdown checkpoint
    assert len(sketch_files(directory)) == 2
    srv, c = go()
    i = info(c)
    assert i["sketch_files_bound_at_start"] == "2"
    # INITBYDIM + 100 INCRBY, INITBYDIM + 50 INCRBY: none of them ran again.
    assert i["sketch_records_not_replayed"] == "152"
    assert "152 AOF records not replayed" in srv.log_text()
    assert answers(c, keys) == before

    # Writes after the last checkpoint are replayed onto the file's counters
    # (kill -9: no shutdown checkpoint), and only they.
    n = int(info(c)["sketch_pages_written"])
    c.call("CMS.INCRBY", "a", "item:1", 5)
    wait_checkpoint(c, n, "sketch_pages_written")
    c.call("CMS.INCRBY", "a", "item:1", 7, "item:2", 1)
    c.call("SELECT", 3)
    c.call("CMS.INCRBY", "b", "item:9", 3)
    c.call("SELECT", 0)
    before = answers(c, keys)
    kill9(srv)
    srv, c = go()
    assert answers(c, keys) == before
    assert int(info(c)["sketch_records_not_replayed"]) >= 153


@pytest.mark.parametrize("damage", ["torn page", "header", "deleted", "wrong shape",
                                    "unfinished checkpoint"])
def test_a_damaged_file_is_detected_and_rebuilt(started, damage):
    directory, go = started
    srv, c = go()
    fill(c, "a", width=5000, depth=4, seed=3)
    before = answers(c, [(0, "a")])
    if damage == "torn page":
        # A torn page comes from a crash during a checkpoint's writes, which
        # only follow a header without the clean flag: kill -9 after a
        # periodic checkpoint (the shutdown's would mark the file clean).
        wait_checkpoint(c, 0)
        kill9(srv)
    else:
        srv.stop()
    [path] = sketch_files(directory)
    with open(path, "rb") as f:
        f.seek(60)
        assert f.read(4) == (b"\0\0\0\0" if damage == "torn page" else b"\1\0\0\0")
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        if damage == "torn page":
            # Half of a counter page as an older write left it.
            f.seek(size - 3 * 4096 + 2048)
            f.write(b"\x5a" * 2048)
        elif damage == "header":
            f.seek(30)
            f.write(b"\xff")
        elif damage == "wrong shape":
            f.truncate(size + 4096)
        elif damage == "unfinished checkpoint":
            # A page table entry written by a checkpoint whose header never came.
            f.seek(4096)
            entry = bytearray(f.read(8))
            entry[0:4] = (int.from_bytes(entry[0:4], "little") + 1).to_bytes(4, "little")
            f.seek(4096)
            f.write(bytes(entry))
    if damage == "deleted":
        os.remove(path)
    srv, c = go()
    i = info(c)
    assert i["sketch_files_bound_at_start"] == "0"
    assert i["sketch_records_not_replayed"] == "0"
    assert i["sketch_files_rebuilt_at_start"] == ("0" if damage == "deleted" else "1")
    if damage != "deleted":
        assert "its key is rebuilt from the AOF" in srv.log_text()
    assert answers(c, [(0, "a")]) == before
    # The rebuilt key gets a good file again (here the shutdown's checkpoint),
    # which the next restart binds.
    srv.stop()
    srv, c = go()
    assert info(c)["sketch_files_bound_at_start"] == "1"
    assert answers(c, [(0, "a")]) == before


def test_other_commands_before_the_checkpoint_see_their_state(started):
    """MERGE reads a sketch whose records are held back, RENAME/PEXPIRE name it, FLUSHALL
    clears a db: each runs on the state the key had when it was logged."""
    directory, go = started
    srv, c = go()
    fill(c, "a", seed=4, records=30)
    c.call("CMS.INITBYDIM", "m", 1000, 5)
    c.call("CMS.MERGE", "m", 1, "a")          # reads a as it was here
    fill(c, "x", seed=5, records=10)
    c.call("CMS.INCRBY", "a", "item:3", 100)  # after the merge: not in m
    c.call("RENAME", "a", "r")
    c.call("PEXPIRE", "r", 10_000_000)
    c.call("CMS.INCRBY", "r", "item:4", 1)
    c.call("SELECT", 2)
    fill(c, "gone", seed=6, records=5)
    c.call("FLUSHDB")
    fill(c, "gone", width=700, depth=3, seed=7, records=5)
    c.call("SELECT", 0)
    keys = [(0, "m"), (0, "x"), (0, "r"), (2, "gone")]
    before = answers(c, keys)
    n = int(info(c)["sketch_checkpoints"])
    wait_checkpoint(c, n)
    srv.stop()
    srv, c = go()
    assert answers(c, keys) == before
    assert c.call("EXISTS", "a").value == 0
    assert 0 < c.call("PTTL", "r").value <= 10_000_000
    assert int(info(c)["sketch_files_bound_at_start"]) >= 3


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_aof_rewrite_keeps_the_sketches_and_the_files(started, preamble):
    directory, go = started
    srv, c = go("--aof-use-rdb-preamble", preamble)
    fill(c, "a", seed=8)
    before = answers(c, [(0, "a")])
    n = int(info(c)["sketch_checkpoints"])
    c.call("BGREWRITEAOF")
    deadline = time.time() + 30
    while info(c)["aof_rewrite_in_progress"] != "0" or info(c)["aof_rewrites"] == "0":
        assert time.time() < deadline
        time.sleep(0.05)
    # After the rewrite the file's checkpoint moves past the new base.
    wait_checkpoint(c, n)
    c.call("CMS.INCRBY", "a", "item:5", 2)
    before = answers(c, [(0, "a")])
    srv.stop()
    srv, c = go("--aof-use-rdb-preamble", preamble)
    i = info(c)
    assert i["sketch_files_bound_at_start"] == "1"
    if preamble == "no":
        # The base's RESTORE record is covered too: not decoded again.
        assert int(i["sketch_records_not_replayed"]) >= 2
    assert answers(c, [(0, "a")]) == before
    # Without the files the AOF alone gives the same answers.
    srv.stop()
    for path in sketch_files(directory):
        os.remove(path)
    srv, c = go("--aof-use-rdb-preamble", preamble)
    assert info(c)["sketch_files_bound_at_start"] == "0"
    assert answers(c, [(0, "a")]) == before


def test_without_the_aof_nothing_is_written(started):
    directory, go = started
    srv, c = go("--appendonly", "no")
    fill(c, "a", seed=9, records=5)
    c.call("CONFIG", "SET", "save", "")
    srv.stop()  # its checkpoint finds no log: there is nothing to skip
    assert sketch_files(directory) == []


def test_a_deleted_sketch_loses_its_file(started):
    directory, go = started
    srv, c = go()
    fill(c, "a", seed=10, records=3)
    fill(c, "b", seed=11, records=3)
    deadline = time.time() + 20
    while len(sketch_files(directory)) < 2:
        assert time.time() < deadline, info(c)
        time.sleep(0.05)
    c.call("DEL", "a")
    c.call("RENAME", "b", "c")
    # The sweep (every 10 s) notes both; the next pass removes their files.
    deadline = time.time() + 40
    while info(c)["sketch_files"] != "0" or sketch_files(directory):
        assert time.time() < deadline, (info(c), sketch_files(directory))
        time.sleep(0.1)
    before = answers(c, [(0, "c")])
    srv.stop()
    srv, c = go()
    assert answers(c, [(0, "c")]) == before
    assert c.call("EXISTS", "a", "b").value == 0


def test_a_bound_sketch_reaches_a_replica_by_full_sync(started, blinkdb_binary, tmp_path):
    directory, go = started
    srv, c = go()
    fill(c, "a", seed=12, records=20)
    srv.stop()
    srv, c = go()  # "a" is now mapped from its file
    assert info(c)["sketch_files_bound_at_start"] == "1"
    c.call("CMS.INCRBY", "a", "item:7", 3)
    replica_answers_as(srv, c, blinkdb_binary, tmp_path, lambda conn: answers(conn, [(0, "a")]))


def replica_answers_as(srv, c, blinkdb_binary, tmp_path, ask):
    """A new replica of `srv` syncs, then answers `ask` as the master (`c`) does."""
    before = ask(c)
    replica = start_blinkdb(blinkdb_binary, str(tmp_path / "replica"), "--replicaof", "127.0.0.1",
                            str(srv.port))
    try:
        r = replica.connect()
        deadline = time.time() + 30
        while "master_link_status:up" not in str(r.call("INFO", "replication").value):
            assert time.time() < deadline
            time.sleep(0.05)
        while ask(r) != before:
            assert time.time() < deadline
            time.sleep(0.05)
    finally:
        kill9(replica)


def header_flags(path):
    with open(path, "rb") as f:
        f.seek(60)
        return int.from_bytes(f.read(4), "little")


def test_a_clean_shutdown_lets_the_restart_skip_the_page_checks(started):
    """The shutdown marks each file clean; a restart binds it without re-reading its
    pages, the first page write after clears the flag on disk first, and a crash then
    leaves a file that is verified whole (so a torn page is still found)."""
    directory, go = started
    srv, c = go()
    fill(c, "a", width=5000, depth=4, seed=13, records=40)
    wait_checkpoint(c, 0)
    [path] = sketch_files(directory)
    assert header_flags(path) == 0  # a periodic checkpoint's header
    srv.stop()
    assert header_flags(path) == 1
    srv, c = go()
    i = info(c)
    assert (i["sketch_files_bound_at_start"], i["sketch_files_clean_at_start"]) == ("1", "1")
    assert "(1 marked clean, their pages not re-read)" in srv.log_text()
    # The restart's own checkpoint (every file's moves to the log's end)
    # writes no page: the flag stays, and a kill -9 still finds it clean.
    wait_checkpoint(c, 0)
    assert header_flags(path) == 1
    before = answers(c, [(0, "a")])
    kill9(srv)
    srv, c = go()
    assert info(c)["sketch_files_clean_at_start"] == "1"
    assert answers(c, [(0, "a")]) == before
    # A write: its page goes to the file only after the flag is cleared.
    n = int(info(c)["sketch_pages_written"])
    c.call("CMS.INCRBY", "a", "item:1", 9)
    wait_checkpoint(c, n, "sketch_pages_written")
    assert header_flags(path) == 0
    before = answers(c, [(0, "a")])
    kill9(srv)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size - 2 * 4096 + 1024)
        f.write(b"\x5a" * 1024)
    srv, c = go()
    i = info(c)
    assert (i["sketch_files_rebuilt_at_start"], i["sketch_files_clean_at_start"]) == ("1", "0")
    assert "fails its checksum" in srv.log_text()
    assert answers(c, [(0, "a")]) == before


# --- Cuckoo filters, top-k and t-digests: the same files, bodies encoded --------------------

FAMILY_ITEMS = [f"f:{i}" for i in range(400)]


def fill_family(c, seed, suffix="", records=60):
    """A cuckoo filter (grown past one sub-filter), a top-k with decay < 1 (its draws
    matter) and a t-digest; returns the number of records each took."""
    rng = random.Random(seed)
    cf, tk, td = "cf" + suffix, "tk" + suffix, "td" + suffix
    c.call("CF.RESERVE", cf, 64, "BUCKETSIZE", 2, "EXPANSION", 2)
    c.call("TOPK.RESERVE", tk, 5, 20, 4, "0.8")
    c.call("TDIGEST.CREATE", td, "COMPRESSION", 50)
    for _ in range(records):
        c.call("CF.ADD", cf, rng.choice(FAMILY_ITEMS))
        c.call("TOPK.ADD", tk, *[rng.choice(FAMILY_ITEMS[:60]) for _ in range(8)])
        c.call("TDIGEST.ADD", td, *[str(rng.gauss(100, 20)) for _ in range(10)])
    c.call("CF.ADD", cf, "deleted")
    c.call("CF.DEL", cf, "deleted")
    return 3 + 3 * records + 2


def family_answers(c, suffix="", db=0):
    """The structures' answers after a first round of them: a t-digest query compresses
    the digest in place (as RedisBloom's do), so the second round's TDIGEST.INFO is the
    one every later round gives (the compressed digest reaches the file)."""
    family_round(c, suffix, db)
    return family_round(c, suffix, db)


def family_round(c, suffix="", db=0):
    cf, tk, td = "cf" + suffix, "tk" + suffix, "td" + suffix
    c.call("SELECT", db)
    out = (c.call("CF.MEXISTS", cf, *FAMILY_ITEMS).value, c.call("CF.INFO", cf).value,
           c.call("CF.SCANDUMP", cf, 0).value,
           c.call("TOPK.LIST", tk, "WITHCOUNT").value, c.call("TOPK.INFO", tk).value,
           c.call("TDIGEST.INFO", td).value,
           c.call("TDIGEST.QUANTILE", td, "0.01", "0.5", "0.99").value,
           c.call("TDIGEST.CDF", td, 80, 100, 120).value)
    c.call("SELECT", 0)
    return out


def test_cuckoo_topk_tdigest_survive_restart_without_replay(started):
    directory, go = started
    srv, c = go()
    n = fill_family(c, seed=20)
    before = family_answers(c)
    srv.stop()
    assert len(sketch_files(directory)) == 3
    srv, c = go()
    i = info(c)
    assert i["sketch_files_bound_at_start"] == "3"
    # Every record of the three keys was covered by its file: none ran.
    assert i["sketch_records_not_replayed"] == str(n)
    assert f"{n} AOF records not replayed" in srv.log_text()
    assert family_answers(c) == before

    # Writes after the last checkpoint replay onto the files' state (kill -9).
    pages = int(info(c)["sketch_pages_written"])
    c.call("CF.ADD", "cf", "late:1")
    c.call("TOPK.ADD", "tk", *FAMILY_ITEMS[:30])
    c.call("TDIGEST.ADD", "td", 1, 2, 3)
    wait_checkpoint(c, pages, "sketch_pages_written")
    c.call("CF.ADD", "cf", "late:2")
    c.call("TOPK.ADD", "tk", *FAMILY_ITEMS[10:40])
    c.call("TDIGEST.ADD", "td", 500)
    before = family_answers(c)
    # The compression the queries made reaches the file; the kill must not come during
    # a checkpoint (waiting for one more checkpoint, as before, returned mid-pass: the
    # next file's pages were written, its header not, and the kill found it unfinished).
    wait_idle(c)
    kill9(srv)
    srv, c = go()
    assert info(c)["sketch_files_bound_at_start"] == "3"
    assert family_answers(c) == before


def test_topk_decay_draws_after_a_restart_are_the_replays(started):
    """The generator's state is in the file: adds after a restart (bound from the file)
    draw what a server replaying the whole AOF draws."""
    directory, go = started
    srv, c = go()
    fill_family(c, seed=21)
    srv.stop()
    srv, c = go()
    assert info(c)["sketch_files_bound_at_start"] == "3"
    rng = random.Random(22)
    for _ in range(40):
        c.call("TOPK.ADD", "tk", *[rng.choice(FAMILY_ITEMS[:80]) for _ in range(10)])
    bound = c.call("TOPK.LIST", "tk", "WITHCOUNT").value
    srv.stop()
    for path in sketch_files(directory):
        os.remove(path)
    srv, c = go()
    assert info(c)["sketch_files_bound_at_start"] == "0"
    assert c.call("TOPK.LIST", "tk", "WITHCOUNT").value == bound


@pytest.mark.parametrize("kind", ["cf", "tk", "td"])
@pytest.mark.parametrize("damage", ["torn page", "header", "unfinished checkpoint"])
def test_a_damaged_family_file_is_detected_and_rebuilt(started, kind, damage):
    directory, go = started
    srv, c = go()
    fill_family(c, seed=23, records=30)
    before = family_answers(c)
    if damage == "torn page" and kind != "td":
        # A filter's slots and a top-k's buckets are mapped, so their pages are checked
        # only when the header is not clean, as a count-min sketch's: a torn page comes
        # from a crash during a checkpoint, after a header without the flag (kill -9
        # once the checkpoints are done; the shutdown's would mark the files clean). A
        # t-digest is read whole: its pages are checked even in a clean file.
        wait_idle(c)
        kill9(srv)
    else:
        srv.stop()
    [path] = [p for p in sketch_files(directory) if kind_of(p) == kind]
    with open(path, "r+b") as f:
        if damage == "torn page":
            # In the body's first page (after the header and a one-page table): pages
            # past a body's end are never read (a t-digest's file has room for more).
            f.seek(2 * 4096 + 100)
            f.write(b"\x5a" * 1000)
        elif damage == "header":
            f.seek(33)
            f.write(b"\x7f")
        else:
            # A page table entry written by a checkpoint whose header never came.
            f.seek(4096)
            entry = bytearray(f.read(8))
            entry[0:4] = (int.from_bytes(entry[0:4], "little") + 1).to_bytes(4, "little")
            f.seek(4096)
            f.write(bytes(entry))
    srv, c = go()
    i = info(c)
    assert (i["sketch_files_bound_at_start"], i["sketch_files_rebuilt_at_start"]) == ("2", "1")
    assert "its key is rebuilt from the AOF" in srv.log_text()
    assert family_answers(c) == before


def test_multi_page_family_files_get_only_their_changed_pages(started):
    """A cuckoo filter and a top-k of 17 body pages each: after a restart binds them, a
    checkpoint writes the pages a few adds changed, not the bodies; a kill -9 then leaves
    files that, with the records after their checkpoint, give every answer as before."""
    directory, go = started
    srv, c = go()
    rng = random.Random(60)
    # 32768 buckets of 2 slots (64 KB of slots); 2000 x 4 buckets of 8 bytes, k 50.
    c.call("CF.RESERVE", "bigcf", 65536, "BUCKETSIZE", 2)
    c.call("TOPK.RESERVE", "bigtk", 50, 2000, 4, "0.9")
    for _ in range(40):
        c.call("CF.INSERT", "bigcf", "ITEMS", *[rng.choice(FAMILY_ITEMS) for _ in range(20)])
        c.call("TOPK.ADD", "bigtk", *[rng.choice(FAMILY_ITEMS[:120]) for _ in range(20)])

    def answers():
        return (c.call("CF.MEXISTS", "bigcf", *FAMILY_ITEMS, "late:1", "late:2").value,
                c.call("CF.INFO", "bigcf").value, c.call("CF.SCANDUMP", "bigcf", 0).value,
                c.call("TOPK.LIST", "bigtk", "WITHCOUNT").value,
                c.call("TOPK.COUNT", "bigtk", *FAMILY_ITEMS[:150]).value)

    srv.stop()
    srv, c = go()
    assert info(c)["sketch_files_bound_at_start"] == "2"
    pages = int(info(c)["sketch_pages_written"])
    c.call("CF.ADD", "bigcf", "late:1")
    c.call("TOPK.ADD", "bigtk", "late:1")
    wait_checkpoint(c, pages, "sketch_pages_written")
    # Both keys' checkpoints (one pass, or two if the pass began between the adds).
    wait_idle(c)
    written = int(info(c)["sketch_pages_written"]) - pages
    # The filter: a slot's page and the header's; the top-k: up to 8 bucket pages, page 0,
    # the heap's; each at most twice (two passes). The bodies are 34 pages.
    assert 1 <= written <= 24, written
    c.call("CF.ADD", "bigcf", "late:2")
    c.call("TOPK.ADD", "bigtk", *FAMILY_ITEMS[:30])
    c.call("CF.DEL", "bigcf", FAMILY_ITEMS[0])
    before = answers()
    kill9(srv)
    srv, c = go()
    assert info(c)["sketch_files_bound_at_start"] == "2"
    assert answers() == before


KINDS = {2: "cf", 3: "tk", 4: "td"}


def kind_of(path):
    with open(path, "rb") as f:
        f.seek(12)
        return KINDS.get(int.from_bytes(f.read(4), "little"))


def test_a_multi_page_tdigest_is_checked_to_its_last_body_page(started):
    """A t-digest's body is read at start with one read of the pages it takes and every
    one checked, clean flag or not: damage in its last page (of 12) after a clean
    shutdown is found and the key rebuilt from the AOF, answering as an undamaged twin
    bound from its own file does."""
    directory, go = started
    srv, c = go()
    rng = random.Random(61)
    # Compression 1000: room for 6010 nodes (24 pages); 3000 buffered samples, no query
    # (a query would compress them): a body of 80 + 16 * 3000 bytes, 12 pages.
    samples = [str(rng.gauss(100, 20)) for _ in range(3000)]
    for key in ("tdbig", "tdtwin"):
        c.call("TDIGEST.CREATE", key, "COMPRESSION", 1000)
        for at in range(0, len(samples), 500):
            c.call("TDIGEST.ADD", key, *samples[at:at + 500])
    srv.stop()
    paths = {}
    for path in sketch_files(directory):
        with open(path, "rb") as f:
            head = f.read(4096)
        paths[head[64:64 + int.from_bytes(head[56:60], "little")].decode()] = (path, head)
    path, head = paths["tdbig"]
    assert int.from_bytes(head[60:64], "little") == 1  # clean
    width = int.from_bytes(head[32:40], "little")
    depth = int.from_bytes(head[40:48], "little")
    assert width == 80 + 16 * 3000
    last = (width + 4095) // 4096 - 1
    table = (8 * depth + 4095) // 4096 * 4096
    with open(path, "r+b") as f:
        f.seek(4096 + table + last * 4096 + 200)
        f.write(b"\x5a" * 100)
    srv, c = go()
    i = info(c)
    assert (i["sketch_files_bound_at_start"], i["sketch_files_rebuilt_at_start"]) == ("1", "1")
    assert f"page {last} fails its checksum" in srv.log_text()

    def answers(key):
        return (c.call("TDIGEST.QUANTILE", key, "0.01", "0.5", "0.99").value,
                c.call("TDIGEST.CDF", key, 80, 100, 120).value,
                c.call("TDIGEST.INFO", key).value)

    assert answers("tdbig") == answers("tdtwin")


def test_keyspace_commands_move_or_remove_family_files(started):
    """DEL, RENAME, MOVE, SWAPDB, FLUSHDB, RESTORE and DEBUG RELOAD / LOADAOF change the
    keys the files name: a restart still has every key as it was, and the files of keys
    that are gone are removed."""
    directory, go = started
    srv, c = go("--enable-debug-command", "yes")
    for s in ("1", "2", "3", "4", "5", "6"):
        fill_family(c, seed=30 + int(s), suffix=s, records=10)
    srv.stop()
    srv, c = go("--enable-debug-command", "yes")
    assert info(c)["sketch_files_bound_at_start"] == "18"
    dump = c.call("DUMP", "tk6").value
    c.call("DEL", "cf1", "tk1", "td1")
    c.call("RENAME", "cf2", "cf2r")
    c.call("MOVE", "tk3", 5)
    c.call("SWAPDB", 0, 7)
    c.call("SELECT", 7)
    c.call("SWAPDB", 7, 0)           # back: db 0 is db 0 again
    c.call("SELECT", 0)
    c.call("RESTORE", "tk6", 0, dump, "REPLACE")
    c.call("TDIGEST.ADD", "td4", 7)
    assert c.call("DEBUG", "RELOAD").value in ("OK", b"OK")
    c.call("TDIGEST.ADD", "td5", 8)
    assert c.call("DEBUG", "LOADAOF").value in ("OK", b"OK")
    c.call("SELECT", 9)
    fill_family(c, seed=40, suffix="9", records=5)
    c.call("FLUSHDB")
    c.call("SELECT", 0)

    def everything():
        return (family_answers(c, "4"), family_answers(c, "5"),
                c.call("CF.INFO", "cf2r").value, c.call("TOPK.INFO", "tk6").value,
                c.call("SELECT", 5).value, c.call("TOPK.LIST", "tk3").value,
                c.call("SELECT", 0).value, sorted(c.call("KEYS", "*").value))

    before = everything()
    # The sweep (every 10 s) finds the keys that are gone; their files go.
    deadline = time.time() + 40
    while int(info(c)["sketch_files"]) != 13:
        assert time.time() < deadline, info(c)
        time.sleep(0.1)
    srv.stop()
    srv, c = go("--enable-debug-command", "yes")
    assert everything() == before
    assert c.call("EXISTS", "cf1", "tk1", "td1", "cf2", "tk3").value == 0
    assert len(sketch_files(directory)) == int(info(c)["sketch_files"])


def test_family_keys_bound_from_files_reach_a_replica(started, blinkdb_binary, tmp_path):
    directory, go = started
    srv, c = go()
    fill_family(c, seed=50, records=20)
    srv.stop()
    srv, c = go()
    assert info(c)["sketch_files_bound_at_start"] == "3"
    c.call("CF.ADD", "cf", "after")
    replica_answers_as(srv, c, blinkdb_binary, tmp_path, family_answers)
