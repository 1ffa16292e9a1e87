"""The single-item writes of CF, CMS, TOPK and TDIGEST, each found, refused and missing, against
redis-server 7.0.15 + RedisBloom 2.8.2 byte for byte: the reply, whether a client WATCHing the key
sees its EXEC fail, and the keyspace hit/miss counters. These commands find and change their
structure with one lookup (commands/sketch/mod.rs, `update`); which outcomes signal the key is
RedisBloom's: CF, TOPK and TDIGEST writes open the key for writing and signal it whatever they
find; CMS.INCRBY opens it for reading (so it counts a keyspace hit or miss, as the queries do)
and signals nothing when refused. Where it changes the sketch BlinkDB signals WATCH and 2.8.2 does
not (docs/compatibility.md, count-min: as RedisBloom 8 does)."""

from bloom_support import start_blinkdb, start_oracle

SETUP = [
    ["CF.RESERVE", "cf", "1000"], ["CMS.INITBYDIM", "cms", "100", "4"],
    ["TOPK.RESERVE", "tk", "3"], ["TDIGEST.CREATE", "td"], ["SET", "str", "x"],
    ["CF.RESERVE", "cftiny", "2", "EXPANSION", "0"], ["CF.ADD", "cftiny", "a"],
    ["CF.ADD", "cftiny", "b"], ["CF.ADD", "cftiny", "c"],
]
# (command, key watched)
WRITES = [
    ["CF.ADD", "cf", "a"], ["CF.ADD", "cf", "a"], ["CF.ADDNX", "cf", "a"], ["CF.ADD", "str", "a"],
    ["CF.ADD", "cfnew", "a"], ["CF.INSERT", "cf", "ITEMS", "b", "c"],
    ["CF.INSERT", "cfnone", "NOCREATE", "ITEMS", "b"], ["CF.INSERT", "str", "ITEMS", "b"],
    ["CF.INSERTNX", "cf", "ITEMS", "b", "z"], ["CF.ADD", "cftiny", "d"],
    ["CMS.INCRBY", "cms", "a", "1", "b", "2"], ["CMS.INCRBY", "cms", "a", "x"],
    ["CMS.INCRBY", "cms", "a", "-1"], ["CMS.INCRBY", "cms", "a", "1", "b", "x"],
    ["CMS.INCRBY", "nocms", "a", "1"], ["CMS.INCRBY", "nocms", "a", "x"],
    ["CMS.INCRBY", "str", "a", "1"], ["CMS.INCRBY", "str", "a", "x"],
    ["CMS.INCRBY", "cms", "a", "4294967295"],
    ["TOPK.ADD", "tk", "a", "b"], ["TOPK.ADD", "notk", "a"], ["TOPK.ADD", "str", "a"],
    ["TOPK.INCRBY", "tk", "a", "3"], ["TOPK.INCRBY", "tk", "a", "x"],
    ["TOPK.INCRBY", "notk", "a", "1"],
    ["TDIGEST.ADD", "td", "1", "2.5"], ["TDIGEST.ADD", "td", "1", "x"],
    ["TDIGEST.ADD", "td", "inf"], ["TDIGEST.ADD", "notd", "1"], ["TDIGEST.ADD", "notd", "x"],
    ["TDIGEST.ADD", "str", "1"], ["TDIGEST.ADD", "str", "x"],
]
PROBES = [
    ["CF.COUNT", "cf", "a"], ["CF.EXISTS", "cfnew", "a"], ["CMS.QUERY", "cms", "a", "b"],
    ["TOPK.LIST", "tk", "WITHCOUNT"], ["TDIGEST.INFO", "td"], ["CF.INFO", "cftiny"],
]


def transcript(srv):
    c = srv.connect()
    for cmd in SETUP:
        c.call(*cmd)
    c.call("CONFIG", "RESETSTAT")
    out = []
    for cmd in WRITES:
        w = srv.connect()
        w.call("WATCH", cmd[1])
        reply = c.call(*cmd).raw
        w.call("MULTI")
        w.call("PING")
        out.append((cmd, reply, w.call("EXEC").raw))
    stats = c.call("INFO", "stats").raw.decode().split("\r\n")
    out.append([line for line in stats if line.startswith("keyspace_")])
    out += [(cmd, c.call(*cmd).raw) for cmd in PROBES]
    return out


def changes_cms(step):
    return step[0][0] == "CMS.INCRBY" and step[1].startswith(b"*")


def test_sketch_writes_signal_as_redisbloom(blinkdb_binary, tmp_path):
    oracle = start_oracle(str(tmp_path / "oracle"))
    ours = start_blinkdb(blinkdb_binary, str(tmp_path / "blinkdb"))
    try:
        theirs, mine = transcript(oracle), transcript(ours)
        assert len(mine) == len(theirs)
        for t, m in zip(theirs, mine):
            if isinstance(t, tuple) and len(t) == 3 and changes_cms(t):
                assert m[:2] == t[:2] and (t[2], m[2]) == (b"*1\r\n+PONG\r\n", b"*-1\r\n")
            else:
                assert m == t
        assert sum(map(changes_cms, [t for t in theirs[:len(WRITES)]])) == 2
    finally:
        ours.stop()
        oracle.stop()
