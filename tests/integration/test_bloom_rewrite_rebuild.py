"""Issue #5: after BGREWRITEAOF a user-backend filter whose files are lost (or have
more than 5% of lines corrupt) is rebuilt from the AOF with every item ever added:
the rewrite keeps the items' digests (not the filter bits) in the base."""

import glob
import os
import random

import pytest

from aof_helpers import aof_path, bgrewriteaof, kill9, start_aof_server, wait_rewrite_done

# These tests are about the RESP base, which re-binds a filter to its files (an RDB base
# holds the filter's bits: test_rdb_preamble.py).
RESP_BASE = ("--aof-use-rdb-preamble", "no")

BEFORE = [f"before-{i}" for i in range(4000)]
AFTER = [f"after-{i}" for i in range(1500)]


def add_all(conn, key, items):
    for i in range(0, len(items), 500):
        reply = conn.call("BF.MADD", key, *items[i:i + 500])
        assert not reply.is_error(), reply.raw


def missing(conn, key, items):
    flags = [v for _, v in conn.call("BF.MEXISTS", key, *items).value]
    return [item for item, present in zip(items, flags) if not present]


def bloom_info(conn):
    text = conn.call("INFO", "bloom").value.decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def lose_files(directory, how):
    bloom = os.path.join(directory, "bloom")
    if how == "delete":
        for path in glob.glob(os.path.join(bloom, "*.bloom")) + \
                glob.glob(os.path.join(bloom, "*.chain")):
            os.remove(path)
    elif how == "delete-all":  # item logs too: only the AOF is left
        for path in glob.glob(os.path.join(bloom, "*")):
            os.remove(path)
    else:  # corrupt more than 5% of the lines of every sub-filter file
        rng = random.Random(5)
        for path in glob.glob(os.path.join(bloom, "*.bloom")):
            lines = (os.path.getsize(path) - 64) // 64
            with open(path, "r+b") as f:
                for line in rng.sample(range(lines), lines // 10 + 1):
                    f.seek(64 + line * 64 + rng.randrange(60))
                    f.write(bytes([rng.randrange(256)]))


@pytest.mark.parametrize("stop", ["shutdown", "kill9"])
@pytest.mark.parametrize("how", ["delete", "delete-all", "corrupt"])
def test_user_filter_rebuilt_after_rewrite(blinkdb_binary, tmp_path, stop, how):
    directory = str(tmp_path / "d")
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always", *RESP_BASE)
    try:
        c = srv.connect()
        # Small capacity: the filter scales to several sub-filters.
        assert c.call("BF.RESERVE", "f", "0.01", "1000", "BACKEND", "user").raw == b"+OK\r\n"
        add_all(c, "f", BEFORE)
        card_before = c.call("BF.CARD", "f").value
        bgrewriteaof(c)
        wait_rewrite_done(c)
        base = [n for n in os.listdir(aof_path(directory)) if n.endswith(".base.aof")]
        base_size = os.path.getsize(aof_path(directory, base[0]))
        add_all(c, "f", AFTER)
        card = c.call("BF.CARD", "f").value
        print(f"{how}/{stop}: card {card_before} at rewrite, base {base_size} bytes "
              f"({base_size / card_before:.1f} B/item), card {card} at stop")
    finally:
        if stop == "kill9":
            kill9(srv)
        else:
            srv.stop()

    lose_files(directory, how)
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always", *RESP_BASE)
    try:
        c = srv.connect()
        lost = missing(c, "f", BEFORE + AFTER)
        assert not lost, f"{len(lost)} items lost, e.g. {lost[:5]}"
        assert c.call("BF.CARD", "f").value == card
        assert bloom_info(c)["bloom_filters_rebuilt"] == "1"
        # And once more, after the rebuilt filter was itself rewritten.
        bgrewriteaof(c)
        wait_rewrite_done(c)
    finally:
        srv.stop()
    lose_files(directory, "delete-all")
    srv = start_aof_server(blinkdb_binary, directory, "--appendfsync", "always", *RESP_BASE)
    try:
        c = srv.connect()
        assert not missing(c, "f", BEFORE + AFTER)
        assert c.call("BF.CARD", "f").value == card
    finally:
        srv.stop()
