"""Hash-field expiration (issue 43) against redis-server 8.0.2: random streams of HEXPIRE
and its family, HTTL and its family, HPERSIST, HGETEX, HSETEX, HGETDEL and the hash
commands around them, bad arguments included, in RESP2 and RESP3: identical replies.

Times are chosen so that both servers answer alike although they run a few ms apart:
keys `a:*` only get absolute times (read back with H[P]EXPIRETIME), keys `r:*` only
relative ones of a whole second plus 500 ms (read back with HTTL, and HPTTL in seconds)."""

import os
import random
import time

from aof_helpers import parse_commands
from peer_servers import start_peer
from resp import plain
from server import ServerProcess

SEEDS = [int(s) for s in os.environ.get("BLINKDB_HFE_SEEDS", "1,2,3,4").split(",")]
FIELDS = ["f1", "f2", "f3", "f4", "", "long" * 20]
VALUES = ["v", "1", "-3", "x" * 70, "12.5"]
ABS_MS = ["1", "4102444800123", "4102444801999", "4102444802000", "0", "281474976710655"]
ABS_S = ["1", "4102444800", "4102444801", "0", "70368744177"]
REL_MS = ["100500", "200500", "0", "-1", "x"]
REL_S = ["100", "200", "0", "-5"]
CONDS = [[], [], [], ["NX"], ["XX"], ["GT"], ["LT"], ["nx"], ["BAD"]]
TTL_CMDS = {"r": ["HTTL", "HPTTL"], "a": ["HEXPIRETIME", "HPEXPIRETIME"]}


def fields_arg(rng, fields=None):
    fields = fields or [rng.choice(FIELDS) for _ in range(rng.randrange(1, 4))]
    n = str(len(fields))
    r = rng.random()
    if r < 0.04:
        n = rng.choice(["0", "-1", "x", str(len(fields) + 1)])
    elif r < 0.06:
        return ["FIELD", n] + fields
    return ["FIELDS", n] + fields


def random_command(rng):
    group = rng.choice(["a", "r"])
    key = rng.choice([f"{group}:1", f"{group}:2", "str"])
    kind = rng.randrange(14)
    if kind in (0, 1):
        pairs = []
        for _ in range(rng.randrange(1, 4)):
            pairs += [rng.choice(FIELDS), rng.choice(VALUES)]
        return ["HSET", key] + pairs
    if kind in (2, 3):
        if group == "a":
            cmd = rng.choice([["HPEXPIREAT", key, rng.choice(ABS_MS)],
                              ["HEXPIREAT", key, rng.choice(ABS_S)]])
        else:
            cmd = rng.choice([["HPEXPIRE", key, rng.choice(REL_MS)],
                              ["HEXPIRE", key, rng.choice(REL_S)]])
        return cmd + rng.choice(CONDS) + fields_arg(rng)
    if kind == 4:
        return [rng.choice(TTL_CMDS[group]), key] + fields_arg(rng)
    if kind == 5:
        return ["HPERSIST", key] + fields_arg(rng)
    if kind == 6:
        if group == "a":
            opt = rng.choice([[], ["PERSIST"], ["PXAT", rng.choice(ABS_MS)],
                              ["EXAT", rng.choice(ABS_S)], ["BAD"], ["EX"]])
        else:
            opt = rng.choice([[], ["PERSIST"], ["PX", rng.choice(REL_MS)],
                              ["EX", rng.choice(REL_S)]])
        return ["HGETEX", key] + opt + fields_arg(rng)
    if kind == 7:
        fv = []
        for _ in range(rng.randrange(1, 3)):
            fv += [rng.choice(FIELDS), rng.choice(VALUES)]
        cond = rng.choice([[], [], ["FNX"], ["FXX"], ["FNX", "FXX"]])
        if group == "a":
            exp = rng.choice([[], ["PXAT", rng.choice(ABS_MS)], ["EXAT", rng.choice(ABS_S)],
                              ["KEEPTTL"], ["KEEPTTL", "PXAT", "4102444800123"]])
        else:
            exp = rng.choice([[], ["PX", rng.choice(REL_MS)], ["EX", rng.choice(REL_S)],
                              ["KEEPTTL"]])
        if rng.random() < 0.5:
            opts = cond + exp
        else:
            opts = exp + cond
        n = str(len(fv) // 2)
        if rng.random() < 0.05:
            n = rng.choice(["0", "x", "3", "-1"])
        tail = ["FIELDS", n] + fv
        if rng.random() < 0.03:
            tail = tail[:-1]
        return ["HSETEX", key] + opts + tail
    if kind == 8:
        return ["HGETDEL", key] + fields_arg(rng)
    if kind == 9:
        return rng.choice([["HGETALL", key], ["HLEN", key], ["HKEYS", key], ["HVALS", key],
                           ["HGET", key, rng.choice(FIELDS)],
                           ["HMGET", key, rng.choice(FIELDS), rng.choice(FIELDS)],
                           ["HEXISTS", key, rng.choice(FIELDS)],
                           ["HSTRLEN", key, rng.choice(FIELDS)]])
    if kind == 10:
        return rng.choice([["HINCRBY", key, rng.choice(FIELDS), "2"],
                           ["HSETNX", key, rng.choice(FIELDS), "n"],
                           ["HDEL", key, rng.choice(FIELDS)],
                           ["HINCRBYFLOAT", key, rng.choice(FIELDS), "1.5"]])
    if kind == 11:
        return rng.choice([["OBJECT", "ENCODING", key], ["TYPE", key], ["EXISTS", key],
                           ["DEL", key], ["SET", "str", "v"]])
    if kind == 12:
        # Short or odd argument lists.
        name = rng.choice(["HEXPIRE", "HPEXPIREAT", "HTTL", "HPERSIST", "HGETEX", "HSETEX",
                           "HGETDEL"])
        tails = [[], ["FIELDS"], ["FIELDS", "1"], ["10"], ["10", "FIELDS", "1"],
                 ["FIELDS", "1", "f1", "f2"]]
        if name != "HGETEX":
            # Redis 8.0.2 reads past its arguments on `HGETEX key EX 10 FIELDS` (and
            # asserts): not sent to it.
            tails.append(["EX", "10", "FIELDS"])
        return [name, key] + rng.choice(tails)
    return ["HGETALL", key] if rng.random() < 0.5 else ["HSCAN", key, "0"]


def normalize(cmd, reply):
    """HPTTL of a relative time in whole seconds (both servers run some ms apart); the
    order of a whole hash's fields is the encoding's (a table's differs)."""
    value = plain((reply.kind, reply.value))
    if cmd[0] == "HPTTL" and isinstance(value, list):
        return [v if v < 0 else (v + 500) // 1000 for v in value]
    if cmd[0] in ("HGETALL", "HKEYS", "HVALS") and not reply.is_error():
        items = value.items() if isinstance(value, dict) else value
        return (reply.kind, sorted(map(repr, items)))
    if cmd[0] == "HSCAN" and not reply.is_error():
        return sorted(map(repr, value[1]))
    return reply.raw


def test_hfe_commands_match_redis8(blinkdb_binary, tmp_path):
    started = []
    oracle = start_peer(started, "redis", tmp_path / "redis8")
    ours = ServerProcess(blinkdb_binary, str(tmp_path / "blinkdb"), [])
    started.append(ours)
    try:
        mismatches = []
        for seed in SEEDS:
            a, b = ours.connect(), oracle.connect()
            proto = 3 if seed % 2 == 0 else 2
            for conn in (a, b):
                conn.call("HELLO", str(proto))
                conn.call("FLUSHALL")
            rng = random.Random(seed)
            for _ in range(1500):
                cmd = random_command(rng)
                x, y = a.call(*cmd), b.call(*cmd)
                if normalize(cmd, x) != normalize(cmd, y):
                    mismatches.append((seed, cmd, x.raw[:200], y.raw[:200]))
            a.close()
            b.close()
        assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:8]}"
    finally:
        for s in started:
            s.stop()


# Redis 8.0's lazy field expiry, with active expiry off on both: a command that meets a field
# past its TTL removes that one field (HDEL propagated, expired_subkeys counted); HLEN counts
# fields not yet removed; HDEL and HSET take such a field as present; HRANDFIELD removes all.
LAZY_SCENARIO = [
    (["HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3"], ["HPEXPIRE", "h", "1", "FIELDS", "3",
                                                          "f1", "f2", "f3"]),
    ["HLEN", "h"], ["HEXISTS", "h", "f1"], ["HLEN", "h"], ["HGET", "h", "f2"], ["HLEN", "h"],
    ["HSTRLEN", "h", "f3"], ["EXISTS", "h"],
    (["HSET", "h2", "a", "1", "b", "2", "c", "3", "d", "4"],
     ["HPEXPIRE", "h2", "1", "FIELDS", "3", "a", "b", "c"]),
    ["HDEL", "h2", "a"], ["HSET", "h2", "b", "9"], ["HPTTL", "h2", "FIELDS", "1", "b"],
    ["HLEN", "h2"], ["HMGET", "h2", "c", "d", "x"], ["HLEN", "h2"], ["HGETALL", "h2"],
    (["HSET", "h3", "n", "5", "m", "1"], ["HPEXPIRE", "h3", "1", "FIELDS", "1", "n"]),
    ["HINCRBY", "h3", "n", "2"], ["HLEN", "h3"],
    (["HSET", "h4", "x", "1"], ["HPEXPIRE", "h4", "1", "FIELDS", "1", "x"]),
    ["HSETNX", "h4", "x", "2"], ["HGET", "h4", "x"],
    (["HSET", "h5", "p", "1", "q", "2", "r", "3"], ["HPEXPIRE", "h5", "1", "FIELDS", "2", "p", "q"]),
    ["HRANDFIELD", "h5", "5"], ["HLEN", "h5"],
    (["HSET", "h6", "x", "1"], ["HPEXPIRE", "h6", "1", "FIELDS", "1", "x"]),
    ["HMGET", "h6", "x", "x"], ["EXISTS", "h6"],
    ["HSET", "h7", "x", "1", "y", "2", "z", "3"], ["HEXPIREAT", "h7", "1", "FIELDS", "2", "x", "y"],
    ["HLEN", "h7"],
    ["HSETEX", "h8", "PXAT", "1", "FIELDS", "2", "x", "1", "y", "2"], ["EXISTS", "h8"],
    ["HSET", "h9", "x", "1", "y", "2"], ["HGETEX", "h9", "PXAT", "1", "FIELDS", "1", "x"],
    ["HLEN", "h9"],
    # The HFE commands touch only the fields they name (8.0.2's t_hash.c): HGETEX and
    # HGETDEL remove a named field past its TTL (HDEL, in MULTI/EXEC with their own
    # record) and leave the others; HSETEX FNX/FXX removes those it checks, up to the
    # first that fails it; HPERSIST answers -2 and removes nothing; HPEXPIRE sets a new
    # time on a field past its old one (NX still sees the old one).
    (["HSET", "h10", "a", "1", "b", "2", "c", "3", "d", "4"],
     ["HPEXPIRE", "h10", "1", "FIELDS", "2", "a", "b"]),
    ["HGETEX", "h10", "PX", "100000", "FIELDS", "2", "a", "c"], ["HLEN", "h10"],
    ["HGETEX", "h10", "FIELDS", "1", "b"], ["HLEN", "h10"],
    (["HSET", "h11", "x", "1", "y", "2", "z", "3"],
     ["HPEXPIRE", "h11", "1", "FIELDS", "2", "x", "y"]),
    ["HGETDEL", "h11", "FIELDS", "2", "x", "z"], ["HLEN", "h11"],
    (["HSET", "h12", "p", "1", "q", "2", "r", "3", "s", "4"],
     ["HPEXPIRE", "h12", "1", "FIELDS", "3", "p", "q", "s"]),
    ["HSETEX", "h12", "FNX", "FIELDS", "3", "p", "1", "r", "2", "s", "3"], ["HLEN", "h12"],
    ["HSETEX", "h12", "FXX", "FIELDS", "2", "q", "5", "r", "6"], ["HLEN", "h12"],
    ["HSETEX", "h12", "EX", "100", "FIELDS", "1", "s", "7"], ["HLEN", "h12"],
    (["HSET", "h13", "s", "1", "t", "2"], ["HPEXPIRE", "h13", "1", "FIELDS", "1", "s"]),
    ["HPERSIST", "h13", "FIELDS", "2", "s", "t"], ["HLEN", "h13"],
    ["HPEXPIRE", "h13", "100000", "NX", "FIELDS", "1", "s"],
    ["HPEXPIRE", "h13", "100000", "FIELDS", "1", "s"], ["HGET", "h13", "s"],
    (["HSET", "h14", "only", "1"], ["HPEXPIRE", "h14", "1", "FIELDS", "1", "only"]),
    ["HGETDEL", "h14", "FIELDS", "1", "only"], ["EXISTS", "h14"],
]


def wait_past(conn, ms_from_now):
    """Until the server's clock is `ms_from_now` ms past the moment of the call."""
    def now():
        secs, micros = plain((lambda r: (r.kind, r.value))(conn.call("TIME")))
        return int(secs) * 1000 + int(micros) // 1000
    until = now() + ms_from_now
    deadline = time.time() + 10
    while now() <= until:
        assert time.time() < deadline, "the server's clock did not move"


def incr_records(directory):
    """The commands of the AOF's incr files (`#` lines skipped), long numbers masked."""
    folder = os.path.join(directory, "appendonlydir")
    out = []
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".incr.aof")):
        with open(os.path.join(folder, name), "rb") as f:
            for _, _, args in parse_commands(f.read()):
                out.append([b"*" if a.isdigit() and len(a) > 9 else a for a in args])
    out = [[args[0].lower()] + args[1:] for args in out]
    # Inside one MULTI/EXEC, the HDELs of fields with one TTL come in the encoding's order.
    i = 0
    while i < len(out):
        if out[i] == [b"multi"]:
            j = out.index([b"exec"], i)
            out[i + 1:j] = sorted(out[i + 1:j])
            i = j
        i += 1
    return out


def test_lazy_field_expiry_matches_redis8(blinkdb_binary, tmp_path):
    started = []
    aof = ["--appendonly", "yes", "--appendfsync", "always"]
    oracle = start_peer(started, "redis", tmp_path / "redis8", aof)
    ours = ServerProcess(blinkdb_binary, str(tmp_path / "blinkdb"),
                         ["--enable-debug-command", "yes", *aof])
    started.append(ours)
    try:
        replies = []
        for srv in (ours, oracle):
            conn = srv.connect()
            assert conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "0").value == b"OK"
            got = []
            for step in LAZY_SCENARIO:
                if isinstance(step, tuple):
                    for cmd in step:
                        got.append(normalize(cmd, conn.call(*cmd)))
                    wait_past(conn, 2)
                    continue
                got.append((step, normalize(step, conn.call(*step))))
            got.append(info_field(conn, "expired_subkeys"))
            replies.append(got)
            conn.close()
        assert replies[0] == replies[1]
        ours.stop()
        oracle.stop()
        ours_log, redis_log = incr_records(ours.dir), incr_records(oracle.dir)
        assert ours_log == redis_log, "\n".join(map(repr, zip(ours_log, redis_log)))
    finally:
        for s in started:
            s.stop()


def info_field(conn, name):
    for line in conn.call("INFO", "stats").value.decode().splitlines():
        if line.startswith(name + ":"):
            return line
    return None
