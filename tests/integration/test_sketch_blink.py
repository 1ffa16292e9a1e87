"""BlinkDB's own commands on RedisBloom's structures (issue 45, beyond RedisBloom):
BLINK.CFMERGE (cuckoo filters of the same shape merged) and BLINK.CMSDECAY (an aging
count-min sketch). Checked: no false negatives after a merge (grown sources included), item
counts, the refusals (which leave the destination byte for byte as it was), answers of a
decayed sketch computed from the counters before, replay from the AOF to the same bytes,
and that RedisBloom 2.8.2 loads the results (DUMP/RESTORE: the module types are RedisBloom's)."""

import pytest
import redis as redis_py

from bloom_support import start_oracle
from rdb_helpers import client
from resp import plain
from server import ServerProcess, blinkdb_bin

A = [f"a:{i}" for i in range(400)]
B = [f"b:{i}" for i in range(400)]


def chunks(conn, key):
    """A filter's SCANDUMP chunks: its header and every slot."""
    out, pos = [], 0
    while True:
        pos, data = conn.execute_command("CF.SCANDUMP", key, pos)
        if pos == 0:
            return out
        out.append((pos, data))


def info(conn, key):
    reply = conn.execute_command("CF.INFO", key)
    return dict(zip(reply[0::2], reply[1::2]))


def exists_all(conn, key, items):
    return all(conn.execute_command("CF.MEXISTS", key, *items))


def test_cfmerge_keeps_every_item(blinkdb):
    b = client(blinkdb.port)
    # Several sub-filters each (EXPANSION 1: all of 32 buckets).
    for key, items in (("cf:a", A), ("cf:b", B)):
        b.execute_command("CF.RESERVE", key, 64)
        b.execute_command("CF.INSERT", key, "ITEMS", *items)
    assert info(b, "cf:a")[b"Number of filters"] > 2
    before_a, before_b = chunks(b, "cf:a"), chunks(b, "cf:b")
    # Into a new key: made in the first source's shape.
    assert b.execute_command("BLINK.CFMERGE", "cf:c", "cf:a", "cf:b") == b"OK"
    assert exists_all(b, "cf:c", A + B)
    got = info(b, "cf:c")
    assert got[b"Number of items inserted"] == 800
    assert got[b"Number of buckets"] == info(b, "cf:a")[b"Number of buckets"]
    assert got[b"Expansion rate"] == 1 and got[b"Max iterations"] == 20
    assert b.type("cf:c") == b"MBbloomCF"
    # The sources are left alone.
    assert chunks(b, "cf:a") == before_a and chunks(b, "cf:b") == before_b
    # Into an existing filter, which may be a source too.
    assert b.execute_command("BLINK.CFMERGE", "cf:a", "cf:b", "cf:a") == b"OK"
    assert exists_all(b, "cf:a", A + B)
    assert info(b, "cf:a")[b"Number of items inserted"] == 1200
    # Each copy counts: an item of A is now there twice.
    assert b.execute_command("CF.COUNT", "cf:a", A[0]) >= 2
    # The merged filter is a cuckoo filter like any other: deletes and adds work.
    assert b.execute_command("CF.DEL", "cf:c", A[0]) == 1
    assert b.execute_command("CF.ADD", "cf:c", "new") == 1
    assert b.execute_command("CF.EXISTS", "cf:c", "new") == 1


def test_cfmerge_of_growing_sub_filters(blinkdb):
    """EXPANSION 2: a fingerprint can only move to a sub-filter no larger than its own
    (its bucket is all that is left of its hash), so one source is copied level by level,
    but the first levels of two full sources do not fit one filter's: refused, no key made."""
    b = client(blinkdb.port)
    for key, items in (("g:a", A), ("g:b", B)):
        b.execute_command("CF.RESERVE", key, 16, "EXPANSION", 2)
        b.execute_command("CF.INSERT", key, "ITEMS", *items)
    assert info(b, "g:a")[b"Number of filters"] > 2
    assert b.execute_command("BLINK.CFMERGE", "g:copy", "g:a") == b"OK"
    assert exists_all(b, "g:copy", A)
    assert info(b, "g:copy")[b"Number of filters"] == info(b, "g:a")[b"Number of filters"]
    with pytest.raises(redis_py.ResponseError, match="^Filter is full$"):
        b.execute_command("BLINK.CFMERGE", "g:both", "g:a", "g:b")
    assert not b.exists("g:both")


def test_cfmerge_refusals_change_nothing(blinkdb):
    b = client(blinkdb.port)
    b.execute_command("CF.RESERVE", "small", 8, "EXPANSION", 0)
    b.execute_command("CF.INSERT", "small", "ITEMS", *A[:6])
    b.execute_command("CF.RESERVE", "big", 64, "EXPANSION", 0)
    b.execute_command("CF.INSERT", "big", "ITEMS", *B[:60])
    b.execute_command("CF.RESERVE", "bs4", 64, "BUCKETSIZE", 4)
    b.execute_command("CF.RESERVE", "dest", 8, "EXPANSION", 0)
    b.execute_command("CF.INSERT", "dest", "ITEMS", *A[100:106])
    assert info(b, "dest")[b"Number of buckets"] == 4  # 8 slots
    b.set("str", "x")
    b.execute_command("CMS.INITBYDIM", "cms", 10, 2)
    before = chunks(b, "dest")

    def refused(*args):
        with pytest.raises(redis_py.ResponseError) as e:
            b.execute_command("BLINK.CFMERGE", *args)
        assert chunks(b, "dest") == before
        return str(e.value)

    assert refused("dest", "big") == "cuckoo filters differ in bucket size, buckets or expansion"
    assert refused("dest", "small", "bs4") == \
        "cuckoo filters differ in bucket size, buckets or expansion"
    assert refused("dest", "small", "nosuch") == "not found"
    assert "wrong kind of value" in refused("dest", "small", "str")
    assert "wrong kind of value" in refused("dest", "cms")
    assert refused("dest").startswith("wrong number of arguments for 'blink.cfmerge'")
    # 8 slots hold 6, not 6 + 6: EXPANSION 0 cannot grow, and the fingerprints that fitted
    # are taken back with the rest.
    assert refused("dest", "small") == "Filter is full"
    with pytest.raises(redis_py.ResponseError, match="wrong kind of value"):
        b.execute_command("BLINK.CFMERGE", "str", "small")
    assert b.get("str") == b"x"
    with pytest.raises(redis_py.ResponseError, match="not found"):
        b.execute_command("BLINK.CFMERGE", "nothing", "nosuch")
    assert not b.exists("nothing")


def test_cmsdecay(blinkdb):
    b = client(blinkdb.port)
    b.execute_command("CMS.INITBYDIM", "cms", 50, 4)
    pairs = [x for i in range(300) for x in (f"i:{i}", i * 7 + 1)]
    b.execute_command("CMS.INCRBY", "cms", *pairs)
    items = [f"i:{i}" for i in range(300)] + ["never"]
    counts = b.execute_command("CMS.QUERY", "cms", *items)
    total = dict(zip(*[iter(b.execute_command("CMS.INFO", "cms"))] * 2))[b"count"]
    assert b.execute_command("BLINK.CMSDECAY", "cms", "0.5") == b"OK"
    # Rounding down is monotone, so the smallest counter halves too.
    assert b.execute_command("CMS.QUERY", "cms", *items) == [c // 2 for c in counts]
    assert dict(zip(*[iter(b.execute_command("CMS.INFO", "cms"))] * 2))[b"count"] == total // 2
    assert b.execute_command("BLINK.CMSDECAY", "cms", "1") == b"OK"
    assert b.execute_command("CMS.QUERY", "cms", *items) == [c // 2 for c in counts]
    b.set("str", "x")
    b.execute_command("CF.ADD", "cf", "x")
    for args, text in ((("cms", "1.5"), "CMS: invalid decay factor (a number from 0 to 1)"),
                       (("cms", "-0.1"), "CMS: invalid decay factor (a number from 0 to 1)"),
                       (("cms", "nan"), "CMS: invalid decay factor (a number from 0 to 1)"),
                       (("cms", "half"), "CMS: invalid decay factor (a number from 0 to 1)"),
                       (("nosuch", "0.5"), "CMS: key does not exist"),
                       (("str", "0.5"), "WRONGTYPE Operation against a key holding the wrong kind"),
                       (("cf", "0.5"), "WRONGTYPE Operation against a key holding the wrong kind"),
                       (("cms",), "wrong number of arguments for 'blink.cmsdecay' command")):
        with pytest.raises(redis_py.ResponseError) as e:
            b.execute_command("BLINK.CMSDECAY", *args)
        assert str(e.value).startswith(text), args
    assert b.execute_command("CMS.QUERY", "cms", *items) == [c // 2 for c in counts]
    assert b.execute_command("BLINK.CMSDECAY", "cms", "0") == b"OK"
    assert set(b.execute_command("CMS.QUERY", "cms", *items)) == {0}


def test_replayed_from_the_aof_and_loaded_by_redisbloom(tmp_path):
    """The commands are logged as sent and replay to the same bytes; the results are
    RedisBloom's module values, which redis-server + RedisBloom restores and answers alike."""
    bdir = tmp_path / "blinkdb"
    srv = ServerProcess(blinkdb_bin(), str(bdir), ["--appendonly", "yes"])
    try:
        b = client(srv.port)
        for key, items in (("cf:a", A), ("cf:b", B)):
            b.execute_command("CF.RESERVE", key, 64)
            b.execute_command("CF.INSERT", key, "ITEMS", *items)
        b.execute_command("BLINK.CFMERGE", "cf:m", "cf:a", "cf:b")
        b.execute_command("BLINK.CFMERGE", "cf:a", "cf:b")
        b.execute_command("CMS.INITBYDIM", "cms", 64, 3)
        b.execute_command("CMS.INCRBY", "cms", *[x for i in range(100) for x in (f"i:{i}", i)])
        b.execute_command("BLINK.CMSDECAY", "cms", "0.3")
        want = {k: b.dump(k) for k in ("cf:a", "cf:m", "cms")}
    finally:
        srv.stop()
    srv = ServerProcess(blinkdb_bin(), str(bdir), ["--appendonly", "yes"])
    try:
        b = client(srv.port)
        assert {k: b.dump(k) for k in want} == want
    finally:
        srv.stop()
    redis = start_oracle(str(tmp_path / "redisbloom"))
    srv = ServerProcess(blinkdb_bin(), str(tmp_path / "fresh"), [])
    try:
        r, b = client(redis.port), client(srv.port)
        for key, payload in want.items():
            assert r.restore(key, 0, payload) and b.restore(key, 0, payload)
        probes = A + B + [f"probe:{i}" for i in range(200)]
        for key in ("cf:a", "cf:m"):
            assert r.execute_command("CF.MEXISTS", key, *probes) == \
                b.execute_command("CF.MEXISTS", key, *probes)
            assert r.execute_command("CF.INFO", key) == b.execute_command("CF.INFO", key)
        assert all(r.execute_command("CF.MEXISTS", "cf:m", *(A + B)))
        items = [f"i:{i}" for i in range(100)]
        assert r.execute_command("CMS.QUERY", "cms", *items) == \
            b.execute_command("CMS.QUERY", "cms", *items)
        assert r.execute_command("CMS.INFO", "cms") == b.execute_command("CMS.INFO", "cms")
    finally:
        srv.stop()
        redis.stop()


def test_listed_as_write_commands(blinkdb):
    """Ordinary commands, not the module's: COMMAND INFO's flags and key range, @write @slow,
    DOCS; an ACL user without @write cannot run them."""
    b = client(blinkdb.port)
    with blinkdb.connect() as raw:
        merge, decay = plain((lambda x: (x.kind, x.value))(
            raw.call("COMMAND", "INFO", "blink.cfmerge", "blink.cmsdecay")))
        docs = plain((lambda x: (x.kind, x.value))(raw.call("COMMAND", "DOCS", "blink.cfmerge")))
        writes = plain((lambda x: (x.kind, x.value))(
            raw.call("COMMAND", "LIST", "FILTERBY", "ACLCAT", "write")))
    assert merge[0] == b"blink.cfmerge" and merge[1] == -3
    assert set(merge[2]) == {b"write", b"denyoom"} and merge[3:6] == [1, -1, 1]
    assert set(merge[6]) == {b"@write", b"@slow"}
    assert decay[0] == b"blink.cmsdecay" and decay[1] == 3 and decay[3:6] == [1, 1, 1]
    assert set(decay[6]) == {b"@write", b"@slow"}
    docs = dict(zip(docs[1][0::2], docs[1][1::2]))
    assert docs[b"summary"].startswith(b"Merges cuckoo filters") and b"module" not in docs
    assert b"blink.cfmerge" in writes and b"blink.cmsdecay" in writes
    b.execute_command("ACL", "SETUSER", "ro", "on", "nopass", "+@all", "-@write", "~*")
    ro = redis_py.Redis(port=blinkdb.port, username="ro", password="x", protocol=2)
    b.execute_command("CMS.INITBYDIM", "cms", 10, 2)
    with pytest.raises(redis_py.exceptions.NoPermissionError):
        ro.execute_command("BLINK.CMSDECAY", "cms", "0.5")
