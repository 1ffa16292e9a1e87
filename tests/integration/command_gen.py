"""Seeded random generator of string/keyspace command sequences.

Every command comes with a comparison class, because a few replies are
legitimately different between two correct servers (key order, TTLs that
tick while the two servers are fed one after the other).

Expiry times are the delicate part: EXPIRE ... GT|LT and SET ... KEEPTTL
compare deadlines in milliseconds, so two deadlines must never be close
enough for the few-ms skew between the servers to flip a comparison.
Relative TTLs are therefore unique multiples of 100 s, absolute ones sit
70 s off that grid, and a seed's run is kept well under 70 s.
"""

import random
import time

EXACT = "exact"
TTL = "ttl"  # integer reply, seconds; equal within +-1 (negatives exact)
PTTL = "pttl"  # integer reply, milliseconds; equal within PTTL_TOLERANCE_MS
KEYS = "keys"  # array whose order is unspecified
SCAN = "scan"  # [cursor, keys]; only validity can be compared
RANDOMKEY = "randomkey"  # nil on both or a key on both
UNORDERED = "unordered"  # array (or set) whose order is unspecified
UNORDERED_PAIRS = "unordered-pairs"  # flat field/value array whose pair order is unspecified

PTTL_TOLERANCE_MS = 1000

KEY_ALPHABET = [b"k0", b"k1", b"k2", b"k3", b"k4", b"", b"\x00bin\r\nkey", b"\xff\xfe*?"]
DB_CHOICES = ["0", "1", "2", "3"]
BAD_INTEGERS = ["abc", "1.5", "", " 1", "1 ", "0x10", "007", "9223372036854775808",
                "-9223372036854775809", "1e3", "+1"]
EDGE_INTEGERS = ["0", "1", "-1", "9223372036854775807", "-9223372036854775808",
                 "9223372036854775806", "-9223372036854775807", "100", "-100"]
FLOATS = ["1.5", "-0.25", "3e2", "0.1", "-1.1", "10", "1e-3", "5.0e3", "0", "-0",
          "inf", "-inf", "nan", "abc", "1.5x", "", "1e400", " 1"]
PATTERNS = ["*", "k*", "k?", "k[0-2]", "k[^0]", "?", "*bin*", "\\xff*", "[", "k[1-",
            "\\*", "*\\?", "nomatch*"]
CASE_VARIANTS = [str.upper, str.lower, str.title]
MEMBERS = ["a", "b", "c", "d", "e", "", "m\x00n", "zz"]
SCORES = ["1", "2", "-1", "0", "-0", "1.5", "inf", "-inf", "+inf", "1e17", "3"]
SCORE_BOUNDS = ["-inf", "+inf", "0", "(0", "1", "(1.5", "3", "(inf", "nan", "x", "("]
GEO_COORDS = ["0", "180", "-180", "85.05112878", "-85.05112878", "90", "abc", "1e400", "nan"]
GEO_UNITS = ["m", "km", "ft", "mi", "KM", "yd"]
GEO_RADII = ["0", "100", "5000", "20000000", "-1", "x", "inf"]
LEX_BOUNDS = ["-", "+", "[a", "(a", "[c", "(zz", "[", "a", "+x"]
# Bad bit offsets and field types; no valid offset past 200000 bits (a valid one near 2^32
# makes both servers build a 512 MB string).
BAD_BIT_OFFSETS = ["-1", "4294967296", "abc", "1.5", "", "9223372036854775807", "#3", "0x10"]
FIELD_TYPES = [f"i{n}" for n in (1, 5, 8, 16, 31, 32, 63, 64)] + \
    [f"u{n}" for n in (1, 3, 8, 15, 32, 62, 63)]
BAD_FIELD_TYPES = ["u64", "i65", "i0", "u0", "x8", "I8", "8", "i", "u-1", ""]


# Commands that take one more argument since Redis 7.2 (ZRANK/ZREVRANK ... WITHSCORE), as
# BlinkDB does (issue 43): there a 7.0 oracle answers the arity error and 8.0 (and BlinkDB)
# "syntax error", so the random extra argument is not added to them.
ARITY_GREW_AFTER_7_0 = {"ZRANK", "ZREVRANK"}


class CommandGenerator:
    def __init__(self, seed, base_time=None):
        self.rng = random.Random(seed)
        self.base = int(base_time if base_time is not None else time.time())
        self.ttl_slots = list(range(1, 10000))
        self.rng.shuffle(self.ttl_slots)

    # --- building blocks ---------------------------------------------
    def key(self):
        return self.rng.choice(KEY_ALPHABET)

    def value(self):
        r = self.rng.random()
        if r < 0.3:
            return self.rng.choice(EDGE_INTEGERS)
        if r < 0.4:
            return self.rng.choice(FLOATS)
        if r < 0.5:
            return self.rng.choice(BAD_INTEGERS)
        if r < 0.55:
            # crosses any plausible inline/segment threshold
            return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(4000, 20000)))
        if r < 0.6:
            return b""
        if r < 0.7:
            return bytes(range(256))
        length = self.rng.randint(1, 40)
        return bytes(self.rng.choice(b"ab\r\n\x00\xff xyz01") for _ in range(length))

    def integer(self):
        r = self.rng.random()
        if r < 0.6:
            return str(self.rng.randint(-1000, 1000))
        if r < 0.85:
            return self.rng.choice(EDGE_INTEGERS)
        return self.rng.choice(BAD_INTEGERS)

    def _slot(self):
        return self.ttl_slots.pop()

    def rel_seconds(self):
        return str(self._slot() * 100)

    def rel_millis(self):
        return str(self._slot() * 100_000)

    def abs_seconds(self):
        return str(self.base + self._slot() * 100 + 70)

    def abs_millis(self):
        return str((self.base + self._slot() * 100 + 70) * 1000)

    def expiry_value(self, unit_ms, absolute, allow_past=True):
        """A deadline argument: mostly unique future ones, some past or invalid."""
        r = self.rng.random()
        if r < 0.08 and (allow_past or not absolute):
            return self.rng.choice(["-1", "-100", "0"]) if not absolute else "1"
        if r < 0.12:
            return self.rng.choice(["abc", "9223372036854775807", "-9223372036854775808",
                                    "1.5", "9223372036854775"])
        if absolute:
            return self.abs_millis() if unit_ms else self.abs_seconds()
        return self.rel_millis() if unit_ms else self.rel_seconds()

    def set_expiry_option(self, allow_past=True):
        """One of the SET/GETEX expiry options with its argument."""
        option = self.rng.choice(["EX", "PX", "EXAT", "PXAT"])
        unit_ms = option in ("PX", "PXAT")
        absolute = option in ("EXAT", "PXAT")
        return [option, self.expiry_value(unit_ms, absolute, allow_past)]

    # --- commands ----------------------------------------------------
    def command(self):
        """One command as (args, comparison class)."""
        maker = self.rng.choices(self._makers, weights=[w for w, _ in self._table])[0]
        args, kind = maker(self)
        args = list(args)
        # arity and case mutations exercise error paths and name handling
        r = self.rng.random()
        if r < 0.03 and len(args) > 1:
            args.pop()
        elif r < 0.05:
            extra = self.rng.choice(["extra", "NX", "EX", "1"])
            if str(args[0]).upper() not in ARITY_GREW_AFTER_7_0:
                args.append(extra)
        if isinstance(args[0], str):
            args[0] = self.rng.choice(CASE_VARIANTS)(args[0])
        return args, kind

    def batch(self, size):
        out = []
        while len(out) < size:
            if self.rng.random() < 0.04:
                out += self.transaction()
            else:
                out.append(self.command())
        return out

    def transaction(self):
        """A whole MULTI ... EXEC|DISCARD unit (never left open across batches),
        maybe after WATCH of keys that its own commands or earlier ones touch.
        Queued commands have exact replies only, so EXEC's arrays compare as bytes."""
        unit = []
        if self.rng.random() < 0.5:
            keys = self.rng.sample(KEY_ALPHABET, self.rng.randint(1, 3))
            unit.append((["WATCH", *keys], EXACT))
            for _ in range(self.rng.randint(0, 2)):
                unit.append(self.exact_command())
        if self.rng.random() < 0.1:
            unit.append((["UNWATCH"], EXACT))
        unit.append((["MULTI"], EXACT))
        for _ in range(self.rng.randint(0, 8)):
            r = self.rng.random()
            if r < 0.03:
                unit.append((["MULTI"], EXACT))  # nested: an error, not queued
            elif r < 0.06:
                unit.append((["WATCH", self.key()], EXACT))  # refused inside MULTI
            elif r < 0.08:
                unit.append((["SWAPDB", "0", self.rng.choice(DB_CHOICES)], EXACT))
            else:
                unit.append(self.exact_command())
        unit.append((["DISCARD" if self.rng.random() < 0.15 else "EXEC"], EXACT))
        return unit

    def exact_command(self):
        while True:
            args, kind = self.command()
            if kind == EXACT:
                return args, kind

    def batch_size(self):
        r = self.rng.random()
        if r < 0.4:
            return 1
        if r < 0.8:
            return self.rng.randint(2, 20)
        return self.rng.randint(21, 200)

    # each returns (args, kind)
    def _get(self):
        return ["GET", self.key()], EXACT

    def _set(self):
        args = ["SET", self.key(), self.value()]
        opts = []
        if self.rng.random() < 0.3:
            opts.append(self.rng.choice(["NX", "XX"]))
        if self.rng.random() < 0.3:
            opts.append("GET")
        r = self.rng.random()
        if r < 0.35:
            # Redis 7.0 stores SET ... EXAT <past> as an already-expired key that
            # DBSIZE counts until active expiry happens to reap it: not comparable.
            opts += self.set_expiry_option(allow_past=False)
        elif r < 0.45:
            opts.append("KEEPTTL")
        if self.rng.random() < 0.05:
            opts += self.rng.choice([["NX", "XX"], ["EX", "1", "PX", "1"], ["KEEPTTL", "EX", "5"],
                                     ["BOGUS"], ["EX"], ["GET", "GET"]])
        if self.rng.random() < 0.2:
            self.rng.shuffle(opts)
        return args + opts, EXACT

    def _setnx(self):
        return ["SETNX", self.key(), self.value()], EXACT

    def _setex(self):
        return ["SETEX", self.key(), self.expiry_value(False, False), self.value()], EXACT

    def _psetex(self):
        return ["PSETEX", self.key(), self.expiry_value(True, False), self.value()], EXACT

    def _mget(self):
        return ["MGET"] + [self.key() for _ in range(self.rng.randint(1, 6))], EXACT

    def _mset(self):
        args = ["MSET"]
        for _ in range(self.rng.randint(1, 4)):
            args += [self.key(), self.value()]
        return args, EXACT

    def _msetnx(self):
        args = ["MSETNX"]
        for _ in range(self.rng.randint(1, 4)):
            args += [self.key(), self.value()]
        return args, EXACT

    def _getset(self):
        return ["GETSET", self.key(), self.value()], EXACT

    def _getdel(self):
        return ["GETDEL", self.key()], EXACT

    def _getex(self):
        args = ["GETEX", self.key()]
        r = self.rng.random()
        if r < 0.5:
            args += self.set_expiry_option()
        elif r < 0.65:
            args.append("PERSIST")
        elif r < 0.7:
            args += self.rng.choice([["PERSIST", "EX", "10"], ["KEEPTTL"], ["EX"]])
        return args, EXACT

    def _append(self):
        return ["APPEND", self.key(), self.value()], EXACT

    def _strlen(self):
        return ["STRLEN", self.key()], EXACT

    def _getrange(self):
        name = self.rng.choice(["GETRANGE", "SUBSTR"])
        return [name, self.key(), self.integer(), self.integer()], EXACT

    def _setrange(self):
        r = self.rng.random()
        if r < 0.8:
            offset = str(self.rng.randint(0, 300))
        elif r < 0.9:
            offset = self.rng.choice(["-1", "536870912", "536870911x", "abc"])
        else:
            offset = str(self.rng.randint(1000, 20000))
        value = self.value() if self.rng.random() < 0.9 else b""
        return ["SETRANGE", self.key(), offset, value], EXACT

    def _incr_family(self):
        name = self.rng.choice(["INCR", "DECR", "INCRBY", "DECRBY", "INCRBYFLOAT"])
        if name in ("INCR", "DECR"):
            return [name, self.key()], EXACT
        if name == "INCRBYFLOAT":
            return [name, self.key(), self.rng.choice(FLOATS)], EXACT
        return [name, self.key(), self.integer()], EXACT

    def _del(self):
        name = self.rng.choice(["DEL", "UNLINK", "EXISTS"])
        return [name] + [self.key() for _ in range(self.rng.randint(1, 4))], EXACT

    def _type(self):
        return ["TYPE", self.key()], EXACT

    def _expire(self):
        name = self.rng.choice(["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
        unit_ms = name.startswith("P")
        absolute = name.endswith("AT")
        args = [name, self.key(), self.expiry_value(unit_ms, absolute)]
        if self.rng.random() < 0.5:
            args.append(self.rng.choice(["NX", "XX", "GT", "LT"]))
        if self.rng.random() < 0.05:
            args.append(self.rng.choice(["NX", "GT", "LT", "XX", "BOGUS"]))
        return args, EXACT

    def _ttl(self):
        name = self.rng.choice(["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"])
        return [name, self.key()], (PTTL if name.startswith("P") else TTL)

    def _persist(self):
        return ["PERSIST", self.key()], EXACT

    def _keys(self):
        return ["KEYS", self.rng.choice(PATTERNS)], KEYS

    def _scan(self):
        if self.rng.random() < 0.1:
            return ["SCAN", self.rng.choice(["abc", "-1x", "1.5"])], EXACT
        # Redis parses an empty cursor as 0
        args = ["SCAN", self.rng.choice(["0", "0", "0", ""])]
        if self.rng.random() < 0.5:
            args += ["MATCH", self.rng.choice(PATTERNS)]
        if self.rng.random() < 0.5:
            args += ["COUNT", self.rng.choice(["1", "10", "1000"])]
        if self.rng.random() < 0.2:
            args += ["TYPE", self.rng.choice(["string", "list", "nosuch"])]
        if self.rng.random() < 0.05:
            return args + ["COUNT", self.rng.choice(["0", "-1", "abc"])], EXACT
        return args, SCAN

    def _randomkey(self):
        return ["RANDOMKEY"], RANDOMKEY

    def _rename(self):
        name = self.rng.choice(["RENAME", "RENAMENX"])
        return [name, self.key(), self.key()], EXACT

    def _copy(self):
        args = ["COPY", self.key(), self.key()]
        if self.rng.random() < 0.4:
            args += ["DB", self.rng.choice(DB_CHOICES + ["16", "-1", "x"])]
        if self.rng.random() < 0.4:
            args.append("REPLACE")
        return args, EXACT

    def _dbsize(self):
        return ["DBSIZE"], EXACT

    def _flushdb(self):
        return ["FLUSHDB"] + self.rng.choice([[], [], ["ASYNC"], ["SYNC"]]), EXACT

    def _select(self):
        return ["SELECT", self.rng.choice(DB_CHOICES * 4 + ["16", "-1", "x", "1.0"])], EXACT

    def _move(self):
        return ["MOVE", self.key(), self.rng.choice(DB_CHOICES * 3 + ["16", "x"])], EXACT

    def _ping(self):
        return self.rng.choice([["PING"], ["PING", self.value()], ["ECHO", self.value()]]), EXACT

    def bit_offset(self, field=False):
        r = self.rng.random()
        if r < 0.75:
            return str(self.rng.randint(0, 300))
        if r < 0.85:
            return str(self.rng.randint(300, 200000))
        if field and r < 0.93:
            return "#" + str(self.rng.randint(0, 40))
        return self.rng.choice(BAD_BIT_OFFSETS + BAD_INTEGERS[:3])

    def _setbit(self):
        value = self.rng.choice(["0", "1"] * 4 + ["2", "-1", "x", ""])
        return ["SETBIT", self.key(), self.bit_offset(), value], EXACT

    def _getbit(self):
        return ["GETBIT", self.key(), self.bit_offset()], EXACT

    def bit_range(self, name, args):
        """BITCOUNT/BITPOS's optional start [end [BYTE|BIT]]."""
        r = self.rng.random()
        if r < 0.3:
            return args
        args = args + [self.integer()]
        if r < 0.45 and name == "BITPOS":
            return args
        args.append(self.integer())
        if self.rng.random() < 0.5:
            args.append(self.rng.choice(["BIT", "BYTE", "bit", "byte", "bits", "x"]))
        if self.rng.random() < 0.03:
            args.append("extra")
        return args

    def _bitcount(self):
        return self.bit_range("BITCOUNT", ["BITCOUNT", self.key()]), EXACT

    def _bitpos(self):
        bit = self.rng.choice(["0", "1"] * 5 + ["2", "-1", "x"])
        return self.bit_range("BITPOS", ["BITPOS", self.key(), bit]), EXACT

    def _bitop(self):
        op = self.rng.choice(["AND", "OR", "XOR", "NOT", "and", "NAND", "or"])
        n = 1 if op == "NOT" and self.rng.random() < 0.9 else self.rng.randint(1, 3)
        return ["BITOP", op, self.key()] + [self.key() for _ in range(n)], EXACT

    def field_type(self):
        if self.rng.random() < 0.92:
            return self.rng.choice(FIELD_TYPES)
        return self.rng.choice(BAD_FIELD_TYPES)

    def _bitfield(self):
        name = self.rng.choice(["BITFIELD"] * 4 + ["BITFIELD_RO"])
        args = [name, self.key()]
        for _ in range(self.rng.randint(0, 4)):
            r = self.rng.random()
            if r < 0.35:
                args += ["GET", self.field_type(), self.bit_offset(field=True)]
            elif r < 0.6:
                args += ["SET", self.field_type(), self.bit_offset(field=True), self.integer()]
            elif r < 0.85:
                args += ["INCRBY", self.field_type(), self.bit_offset(field=True),
                         self.integer()]
            else:
                args += ["OVERFLOW", self.rng.choice(["WRAP", "SAT", "FAIL", "fail", "nope"])]
        if self.rng.random() < 0.04:
            args.append(self.rng.choice(["GET", "SET", "INCRBY", "OVERFLOW", "BOGUS"]))
        return args, EXACT

    def _lcs(self):
        args = ["LCS", self.key(), self.key()]
        for option in self.rng.sample(["LEN", "IDX", "WITHMATCHLEN", "MINMATCHLEN"],
                                      self.rng.randint(0, 3)):
            args.append(option)
            if option == "MINMATCHLEN":
                args.append(self.rng.choice(["0", "1", "2", "4", "-3", "x"]))
        return args, EXACT

    # --- sorted sets (keys shared with strings: WRONGTYPE paths too) ---
    def member(self):
        return self.rng.choice(MEMBERS)

    def score(self):
        return self.rng.choice(SCORES if self.rng.random() < 0.9 else FLOATS)

    def _zadd(self):
        if self.rng.random() < 0.05:  # past zset-max-listpack-entries
            args = ["ZADD", self.key()]
            for i in range(self.rng.randint(129, 140)):
                args += [str(self.rng.randint(-5, 5)), "big%d" % i]
            return args, EXACT
        opts = self.rng.sample(["NX", "XX", "GT", "LT", "CH", "INCR"], self.rng.randint(0, 2))
        pairs = []
        for _ in range(self.rng.randint(1, 3)):
            pairs += [self.score(), self.member()]
        return ["ZADD", self.key(), *opts, *pairs], EXACT

    def _zincrby(self):
        return ["ZINCRBY", self.key(), self.score(), self.member()], EXACT

    def _zrem(self):
        return ["ZREM", self.key(), *[self.member() for _ in range(self.rng.randint(1, 3))]], EXACT

    def _zread(self):
        key = self.key()
        return self.rng.choice([
            ["ZCARD", key], ["ZSCORE", key, self.member()], ["ZRANK", key, self.member()],
            ["ZREVRANK", key, self.member()], ["ZMSCORE", key, self.member(), self.member()],
            ["ZCOUNT", key, self.rng.choice(SCORE_BOUNDS), self.rng.choice(SCORE_BOUNDS)],
            ["ZLEXCOUNT", key, self.rng.choice(LEX_BOUNDS), self.rng.choice(LEX_BOUNDS)],
        ]), EXACT

    def _zrange(self):
        key = self.key()
        by = self.rng.choice(["", "BYSCORE", "BYLEX"])
        if by == "BYSCORE":
            lo, hi = self.rng.choice(SCORE_BOUNDS), self.rng.choice(SCORE_BOUNDS)
        elif by == "BYLEX":
            lo, hi = self.rng.choice(LEX_BOUNDS), self.rng.choice(LEX_BOUNDS)
        else:
            lo, hi = self.rng.choice(["0", "1", "-1", "-2", "5", "x"]), self.rng.choice(["-1", "2", "0"])
        opts = [by] if by else []
        if self.rng.random() < 0.3:
            opts.append("REV")
        if self.rng.random() < 0.4:
            opts.append("WITHSCORES")
        if self.rng.random() < 0.3:
            opts += ["LIMIT", self.rng.choice(["0", "1", "-1"]), self.rng.choice(["1", "2", "-1"])]
        if self.rng.random() < 0.2:
            return ["ZRANGESTORE", self.key(), key, lo, hi, *[o for o in opts if o != "WITHSCORES"]], EXACT
        return ["ZRANGE", key, lo, hi, *opts], EXACT

    def _zremrange(self):
        key = self.key()
        return self.rng.choice([
            ["ZREMRANGEBYRANK", key, self.rng.choice(["0", "-1", "1"]), self.rng.choice(["0", "-1", "2"])],
            ["ZREMRANGEBYSCORE", key, self.rng.choice(SCORE_BOUNDS), self.rng.choice(SCORE_BOUNDS)],
            ["ZREMRANGEBYLEX", key, self.rng.choice(LEX_BOUNDS), self.rng.choice(LEX_BOUNDS)],
        ]), EXACT

    def _zpop(self):
        count = self.rng.choice([[], [], ["1"], ["2"], ["0"], ["-1"], ["x"]])
        if self.rng.random() < 0.3:
            return ["ZMPOP", "2", self.key(), self.key(), self.rng.choice(["MIN", "MAX"]),
                    *(["COUNT", self.rng.choice(["1", "3", "0"])] if count else [])], EXACT
        return [self.rng.choice(["ZPOPMIN", "ZPOPMAX"]), self.key(), *count], EXACT

    def _zsetop(self):
        op = self.rng.choice(["ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE",
                              "ZDIFFSTORE", "ZINTERCARD"])
        keys = [self.key() for _ in range(self.rng.randint(1, 3))]
        args = [op] + ([self.key()] if op.endswith("STORE") else []) + [str(len(keys)), *keys]
        if op in ("ZUNION", "ZINTER", "ZUNIONSTORE", "ZINTERSTORE") and self.rng.random() < 0.4:
            args += ["WEIGHTS", *[self.rng.choice(["1", "2", "0", "-1", "inf"]) for _ in keys]]
        if op in ("ZUNION", "ZINTER", "ZUNIONSTORE", "ZINTERSTORE") and self.rng.random() < 0.4:
            args += ["AGGREGATE", self.rng.choice(["SUM", "MIN", "MAX"])]
        if op in ("ZUNION", "ZINTER", "ZDIFF") and self.rng.random() < 0.5:
            args.append("WITHSCORES")
        return args, EXACT

    def _unknown(self):
        return [self.rng.choice(["FOO", "GETT", "SETT"]), self.key(), self.value()[:20]], EXACT

    # --- hashes and sets ----------------------------------------------
    def field(self):
        return self.rng.choice(["f0", "f1", "f2", "f3", "", "\x00f", "123"])

    def member(self):
        r = self.rng.random()
        if r < 0.5:
            return str(self.rng.choice([0, 1, -1, 7, 42, 1000, 9223372036854775807, -5]))
        if r < 0.6:
            return self.rng.choice(["01", "-0", "+1", " 1", "1.0"])
        return self.rng.choice(["a", "b", "c", "", "\xff", "x" * 70])

    def _hset(self):
        cmd = self.rng.choice(["HSET", "HSET", "HMSET", "HSETNX"])
        n = 1 if cmd == "HSETNX" else self.rng.randint(1, 4)
        args = [cmd, self.key()]
        for _ in range(n):
            args += [self.field(), self.value()]
        return args, EXACT

    def _hread(self):
        cmd = self.rng.choice(["HGET", "HEXISTS", "HSTRLEN", "HLEN", "HMGET"])
        if cmd == "HLEN":
            return [cmd, self.key()], EXACT
        if cmd == "HMGET":
            return [cmd, self.key()] + [self.field() for _ in range(self.rng.randint(1, 4))], EXACT
        return [cmd, self.key(), self.field()], EXACT

    def _hdel(self):
        return ["HDEL", self.key()] + [self.field() for _ in range(self.rng.randint(1, 3))], EXACT

    def _hincr(self):
        if self.rng.random() < 0.5:
            return ["HINCRBY", self.key(), self.field(), self.integer()], EXACT
        return ["HINCRBYFLOAT", self.key(), self.field(), self.rng.choice(FLOATS)], EXACT

    def _hgetall(self):
        cmd = self.rng.choice(["HGETALL", "HKEYS", "HVALS"])
        return [cmd, self.key()], UNORDERED_PAIRS if cmd == "HGETALL" else UNORDERED

    def _sadd(self):
        if self.rng.random() < 0.03:
            # Past set-max-intset-entries (512) in one go.
            return ["SADD", self.key()] + [str(i) for i in range(600)], EXACT
        return ["SADD", self.key()] + [self.member() for _ in range(self.rng.randint(1, 4))], EXACT

    def _srem(self):
        return ["SREM", self.key()] + [self.member() for _ in range(self.rng.randint(1, 3))], EXACT

    def _sread(self):
        cmd = self.rng.choice(["SISMEMBER", "SMISMEMBER", "SCARD"])
        if cmd == "SCARD":
            return [cmd, self.key()], EXACT
        if cmd == "SMISMEMBER":
            return [cmd, self.key()] + [self.member() for _ in range(self.rng.randint(1, 3))], EXACT
        return [cmd, self.key(), self.member()], EXACT

    def _scombine(self):
        cmd = self.rng.choice(["SMEMBERS", "SINTER", "SUNION", "SDIFF"])
        if cmd == "SMEMBERS":
            return [cmd, self.key()], UNORDERED
        return [cmd] + [self.key() for _ in range(self.rng.randint(1, 3))], UNORDERED

    def _sstore(self):
        cmd = self.rng.choice(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE", "SMOVE", "SINTERCARD"])
        if cmd == "SMOVE":
            return [cmd, self.key(), self.key(), self.member()], EXACT
        if cmd == "SINTERCARD":
            keys = [self.key() for _ in range(self.rng.randint(1, 3))]
            return [cmd, str(len(keys))] + keys + self.rng.choice([[], ["LIMIT", "1"]]), EXACT
        return [cmd] + [self.key() for _ in range(self.rng.randint(2, 4))], EXACT

    # --- streams (explicit IDs only: `*` takes the clock) ----------------
    def stream_id(self):
        return self.rng.choice(["1", "2", "3-1", "5-*", "7", "0-1", "0-0", "9-9", "x", "-", "+",
                                "(3", "18446744073709551615-18446744073709551615"])

    def _xadd(self):
        args = ["XADD", self.key()]
        r = self.rng.random()
        if r < 0.1:
            args.append("NOMKSTREAM")
        if self.rng.random() < 0.3:
            args += [self.rng.choice(["MAXLEN", "MINID"]), *self.rng.choice([[], ["="], ["~"]]),
                     self.rng.choice(["0", "2", "5", "3-0", "-1"])]
            if self.rng.random() < 0.2:
                args += ["LIMIT", self.rng.choice(["1", "0", "10"])]
        ms = self.rng.randint(1, 40)
        args.append(self.rng.choice([f"{ms}-{self.rng.randint(0, 3)}", f"{ms}-*", str(ms),
                                     self.stream_id()]))
        for _ in range(self.rng.randint(1, 3)):
            args += [self.field(), self.member()]
        return args, EXACT

    def _xread(self):
        key = self.key()
        count = self.rng.choice([[], ["COUNT", "2"], ["COUNT", "0"], ["COUNT", "x"]])
        return self.rng.choice([
            ["XLEN", key],
            ["XRANGE", key, self.stream_id(), self.stream_id(), *count],
            ["XREVRANGE", key, self.stream_id(), self.stream_id(), *count],
            ["XREAD", *count, "STREAMS", key, self.key(), self.xread_id(),
             self.rng.choice(["$", "0", "5"])],
        ]), EXACT

    def xread_id(self):
        # `+` (the last entry) is Redis 7.4's XREAD ID, which BlinkDB serves (issue 43) and a
        # 7.0 oracle refuses: `-` is sent in its place (the draws stay the same).
        chosen = self.stream_id()
        return "-" if chosen == "+" else chosen

    def _xdel_trim(self):
        key = self.key()
        if self.rng.random() < 0.5:
            return ["XDEL", key, *[self.stream_id() for _ in range(self.rng.randint(1, 3))]], EXACT
        return ["XTRIM", key, self.rng.choice(["MAXLEN", "MINID"]),
                *self.rng.choice([[], ["="], ["~"]]), self.rng.choice(["0", "2", "5-0", "x"])], EXACT

    def _xgroup(self):
        key, group = self.key(), self.rng.choice(["g1", "g2"])
        consumer = self.rng.choice(["alice", "bob"])
        return self.rng.choice([
            ["XGROUP", "CREATE", key, group, self.rng.choice(["$", "0", "3"]),
             *self.rng.choice([[], ["MKSTREAM"], ["ENTRIESREAD", "2"]])],
            ["XGROUP", "SETID", key, group, self.rng.choice(["$", "0", "4"])],
            ["XGROUP", self.rng.choice(["CREATECONSUMER", "DELCONSUMER"]), key, group, consumer],
            ["XGROUP", "DESTROY", key, group],
            ["XREADGROUP", "GROUP", group, consumer, *self.rng.choice([[], ["COUNT", "2"]]),
             *self.rng.choice([[], ["NOACK"]]), "STREAMS", key, self.rng.choice([">", "0"])],
            ["XACK", key, group, self.stream_id(), self.stream_id()],
            ["XPENDING", key, group],
            ["XCLAIM", key, group, consumer, "0", self.stream_id(), "JUSTID",
             *self.rng.choice([[], ["FORCE"]])],
            ["XAUTOCLAIM", key, group, consumer, "0", "0", "COUNT", "3", "JUSTID"],
            ["XINFO", "GROUPS", key],
            ["XSETID", key, self.rng.choice(["50-0", "1-0", "x"])],
        ]), EXACT

    def _lon_lat(self):
        if self.rng.random() < 0.1:
            return [self.rng.choice(GEO_COORDS), self.rng.choice(GEO_COORDS)]
        return [repr(self.rng.uniform(-180, 180)), repr(self.rng.uniform(-85.05112878, 85.05112878))]

    def _geoadd(self):
        opts = self.rng.sample(["NX", "XX", "CH"], self.rng.randint(0, 2))
        triples = []
        for _ in range(self.rng.randint(1, 3)):
            triples += [*self._lon_lat(), self.member()]
        return ["GEOADD", self.key(), *opts, *triples], EXACT

    def _georead(self):
        key = self.key()
        return self.rng.choice([
            ["GEOPOS", key, self.member(), self.member()],
            ["GEOHASH", key, self.member(), self.member()],
            ["GEODIST", key, self.member(), self.member()],
            ["GEODIST", key, self.member(), self.member(), self.rng.choice(GEO_UNITS)],
        ]), EXACT

    def _geosearch(self):
        key, unit = self.key(), self.rng.choice(GEO_UNITS)
        radius = self.rng.choice(GEO_RADII)
        opts = self.rng.sample(["WITHCOORD", "WITHDIST", "WITHHASH", "ASC", "DESC", "ANY"],
                               self.rng.randint(0, 3))
        if self.rng.random() < 0.4:
            opts += ["COUNT", self.rng.choice(["1", "3", "0", "-1", "x"])]
        r = self.rng.random()
        if r < 0.25:
            return ["GEORADIUS", key, *self._lon_lat(), radius, unit, *opts], EXACT
        if r < 0.4:
            return ["GEORADIUSBYMEMBER_RO", key, self.member(), radius, unit, *opts], EXACT
        center = ["FROMMEMBER", self.member()] if r < 0.6 else ["FROMLONLAT", *self._lon_lat()]
        shape = (["BYRADIUS", radius, unit] if self.rng.random() < 0.5
                 else ["BYBOX", radius, self.rng.choice(GEO_RADII), unit])
        if r < 0.85:
            return ["GEOSEARCH", key, *center, *shape, *opts], EXACT
        opts = [o for o in opts if not o.startswith("WITH")]
        if self.rng.random() < 0.5:
            opts.append("STOREDIST")
        return ["GEOSEARCHSTORE", self.key(), key, *center, *shape, *opts], EXACT

    def _sort(self):
        """SORT and SORT_RO; an order only a hash table decides (a set left
        unsorted, ties in ALPHA weights) compares as unordered, and is never stored."""
        opts, kind = [], EXACT
        by = self.rng.choice([None, None, "nosort", "*", "k*", "*->f"])
        store = self.rng.random() < 0.2
        alpha = self.rng.random() < 0.3
        if by is not None:
            opts += ["BY", by]
        if by == "nosort" and not store:
            kind = UNORDERED
        elif self.rng.random() < 0.3:
            opts += ["LIMIT", self.rng.choice(["0", "1", "-1", "x"]), self.rng.choice(["2", "-1", "0"])]
        if alpha and by not in (None, "nosort"):
            if store:
                alpha = False
            else:
                kind = UNORDERED
        if alpha:
            opts.append("ALPHA")
        if self.rng.random() < 0.3:
            opts.append(self.rng.choice(["ASC", "DESC"]))
        for _ in range(self.rng.choice([0, 0, 1, 2])):
            opts += ["GET", self.rng.choice(["#", "k*", "*->f", "nope"])]
        if store:
            return ["SORT", self.key(), *opts, "STORE", self.key()], kind
        return [self.rng.choice(["SORT", "SORT_RO"]), self.key(), *opts], kind

    # --- lists ----------------------------------------------------------
    def list_index(self):
        return self.rng.choice(["0", "1", "-1", "2", "-2", "5", "-100", "100", "x",
                                "9223372036854775807", "-9223372036854775808"])

    def _lpush(self):
        cmd = self.rng.choice(["LPUSH", "RPUSH", "LPUSH", "RPUSH", "LPUSHX", "RPUSHX"])
        if self.rng.random() < 0.03:
            # Past list-max-listpack-size (8 KB per node) in one go.
            return [cmd, self.key()] + [self.member() * 40 for _ in range(300)], EXACT
        return [cmd, self.key()] + [self.member() for _ in range(self.rng.randint(1, 5))], EXACT

    def _lpop(self):
        count = self.rng.choice([[], [], ["1"], ["3"], ["0"], ["-1"], ["x"]])
        r = self.rng.random()
        if r < 0.2:
            return ["LMPOP", self.rng.choice(["1", "2", "0", "5"]), self.key(), self.key(),
                    self.rng.choice(["LEFT", "RIGHT", "UP"]),
                    *(["COUNT", self.rng.choice(["1", "3", "0"])] if count else [])], EXACT
        if r < 0.3:
            # Served at once, or after a 10 ms timeout; never left blocked.
            return [self.rng.choice(["BLPOP", "BRPOP"]), self.key(), self.key(),
                    self.rng.choice(["0.01", "-1", "x"])], EXACT
        if r < 0.35:
            return ["BLMPOP", "0.01", "2", self.key(), self.key(), self.rng.choice(["LEFT", "RIGHT"]),
                    *(["COUNT", self.rng.choice(["1", "3", "0"])] if count else [])], EXACT
        return [self.rng.choice(["LPOP", "RPOP"]), self.key(), *count], EXACT

    def _lread(self):
        key = self.key()
        return self.rng.choice([
            ["LLEN", key], ["LINDEX", key, self.list_index()],
            ["LRANGE", key, self.list_index(), self.list_index()],
            ["LPOS", key, self.member(), *self.rng.choice([[], ["RANK", self.list_index()],
                                                           ["COUNT", "0"], ["MAXLEN", "2"],
                                                           ["RANK", "-1", "COUNT", "2"]])],
        ]), EXACT

    def _lwrite(self):
        key = self.key()
        return self.rng.choice([
            ["LSET", key, self.list_index(), self.member()],
            ["LINSERT", key, self.rng.choice(["BEFORE", "AFTER", "NEAR"]), self.member(),
             self.member()],
            ["LREM", key, self.rng.choice(["0", "1", "-1", "2", "x"]), self.member()],
            ["LTRIM", key, self.list_index(), self.list_index()],
        ]), EXACT

    def _lmove(self):
        r = self.rng.random()
        ends = [self.rng.choice(["LEFT", "RIGHT"]), self.rng.choice(["LEFT", "RIGHT", "UP"])]
        if r < 0.3:
            return ["RPOPLPUSH", self.key(), self.key()], EXACT
        if r < 0.4:
            return ["BRPOPLPUSH", self.key(), self.key(), "0.01"], EXACT
        if r < 0.5:
            return ["BLMOVE", self.key(), self.key(), *ends, "0.01"], EXACT
        return ["LMOVE", self.key(), self.key(), *ends], EXACT

    _table = [
        (10, _get), (12, _set), (2, _setnx), (2, _setex), (2, _psetex), (3, _mget),
        (3, _mset), (2, _msetnx), (2, _getset), (2, _getdel), (3, _getex), (4, _append),
        (2, _strlen), (3, _getrange), (3, _setrange), (8, _incr_family), (4, _del),
        (2, _type), (6, _expire), (5, _ttl), (2, _persist), (1, _keys), (1, _scan),
        (1, _randomkey), (3, _rename), (2, _copy), (2, _dbsize), (0.3, _flushdb),
        (2, _select), (2, _move), (2, _ping), (0.5, _unknown),
        (5, _hset), (4, _hread), (2, _hdel), (2, _hincr), (2, _hgetall),
        (5, _sadd), (2, _srem), (3, _sread), (2, _scombine), (2, _sstore),
        (3, _setbit), (2, _getbit), (2, _bitcount), (2, _bitpos), (1.5, _bitop), (3, _bitfield),
        (0.5, _lcs),
        (5, _zadd), (2, _zincrby), (2, _zrem), (4, _zread), (4, _zrange), (2, _zremrange),
        (2, _zpop), (3, _zsetop),
        (4, _xadd), (3, _xread), (2, _xdel_trim), (4, _xgroup),
        (3, _geoadd), (2, _georead), (3, _geosearch), (3, _sort),
        (5, _lpush), (3, _lpop), (4, _lread), (3, _lwrite), (2, _lmove),
    ]
    _makers = [f for _, f in _table]

    # --- expiry scenario ----------------------------------------------
    def short_expiry_setup(self):
        """Commands giving some keys of the current db deadlines of 10-150 ms."""
        cmds = []
        for key in self.rng.sample(KEY_ALPHABET, self.rng.randint(2, 5)):
            ms = str(self.rng.randint(10, 150))
            cmds.append(self.rng.choice([
                ["SET", key, self.value(), "PX", ms],
                ["PSETEX", key, ms, self.value()],
                ["PEXPIRE", key, ms],
                ["GETEX", key, "PX", ms],
                ["SET", key, b"v", "PXAT", str(int(time.time() * 1000) + int(ms))],
            ]))
        return cmds

    @staticmethod
    def short_expiry_check():
        """Touch every key (so lazy expiry has happened) before counting."""
        cmds = []
        for key in KEY_ALPHABET:
            cmds += [(["EXISTS", key], EXACT), (["GET", key], EXACT), (["PTTL", key], PTTL)]
        cmds.append((["DBSIZE"], EXACT))
        return cmds
