"""maxmemory-clients (Redis 7.0's client eviction): the option's forms and errors, and the
largest evictable client closed when the clients' memory reaches the limit, compared with
redis-server 7.0.15 run the same way. BlinkDB checks every 100 ms, Redis around each
command, so the test waits for the outcome instead of expecting it at once."""

import time

from resp import ConnectionClosed


def _py_text(reply):
    return reply.value.decode() if isinstance(reply.value, bytes) else reply.value


def _until(check, timeout=10.0):
    deadline = time.time() + timeout
    while not check():
        assert time.time() < deadline, "condition never held"
        time.sleep(0.05)


def _config_replies(server):
    out = []
    with server.connect() as c:
        for value in ("110%", "-5%", "abc", "10%", "0%", "3mb", "0"):
            reply = c.call("CONFIG", "SET", "maxmemory-clients", value)
            got = c.call("CONFIG", "GET", "maxmemory-clients").value
            out.append((value, reply.kind, _py_text(reply), got))
    return out


def test_option_forms_and_errors_match_redis(blinkdb, oracle):
    assert _config_replies(blinkdb) == _config_replies(oracle)


def _stats(conn):
    text = conn.call("INFO", "stats").value.decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _alive(conn):
    try:
        return conn.call("PING").kind in (b"+", b"-")
    except (ConnectionClosed, OSError):
        return False


def _evict_largest(server):
    """Two subscribers that do not read, one of them NO-EVICT, each sent 20 MB: the other
    is closed, the NO-EVICT one stays although the total stays over the limit."""
    with server.connect() as admin:
        admin.call("CLIENT", "NO-EVICT", "on")
        admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 0 0")
        admin.call("CONFIG", "SET", "maxmemory-clients", "1mb")
        kept, dropped = server.connect(), server.connect()
        kept.call("CLIENT", "NO-EVICT", "on")
        for sub in (kept, dropped):
            sub.call("SUBSCRIBE", "ch")
        for _ in range(2000):
            admin.send("PUBLISH", "ch", "x" * 10000)
        for _ in range(2000):
            admin.read_reply()
        _until(lambda: _stats(admin)["evicted_clients"] == "1")
        time.sleep(0.3)  # a second eviction would come within the next checks
        assert _stats(admin)["evicted_clients"] == "1"
        listed = admin.call("CLIENT", "LIST").value.decode()
        assert listed.count("flags=P") == 1 and "flags=P" in listed
        # The NO-EVICT subscriber still gets its messages once it reads.
        kept.sock.settimeout(5)
        assert kept.read_reply().value[0][1] == b"message"
        admin.call("CONFIG", "SET", "maxmemory-clients", "0")
        dropped.close()
        kept.close()
    with open(server.log_path, "rb") as f:
        return f.read().decode(errors="replace")


def test_largest_evictable_client_closed_as_redis_does(blinkdb, oracle):
    ours = _evict_largest(blinkdb)
    theirs = _evict_largest(oracle)
    for log in (ours, theirs):
        assert "Evicting client: " in log
        assert "Over client maxmemory after evicting all evictable clients" in log


def _closed_after(conn, command, limit=50000):
    """Sends `command(j)` for j = 0, 1, ... until the server closes the connection;
    how many it answered (None if it never did within `limit`)."""
    for j in range(limit):
        try:
            conn.call(*command(j))
        except (ConnectionClosed, OSError):
            return j
    return None


def _piled_up_state_evicts(server):
    """WATCHed keys, subscriptions and tracking prefixes count in a client's memory: a
    client piling them up past a 200 KB limit is evicted (Redis's getClientMemoryUsage)."""
    commands = {
        "watch": lambda j: ("WATCH", str(j)),
        "psubscribe": lambda j: ("PSUBSCRIBE", str(j)),
        "subscribe": lambda j: ("SUBSCRIBE", str(j)),
        "ssubscribe": lambda j: ("SSUBSCRIBE", str(j)),
        "prefix": lambda j: ("CLIENT", "TRACKING", "on", "PREFIX", "%012d" % j, "BCAST"),
    }
    evicted = {}
    with server.connect() as admin:
        admin.call("CLIENT", "NO-EVICT", "on")
        admin.call("CONFIG", "SET", "maxmemory-clients", "200000")
        for kind, command in commands.items():
            with server.connect() as c:
                evicted[kind] = _closed_after(c, command) is not None
        admin.call("CONFIG", "SET", "maxmemory-clients", "0")
    return evicted


def test_watched_keys_subscriptions_and_prefixes_count_as_redis(blinkdb, oracle):
    ours = _piled_up_state_evicts(blinkdb)
    assert ours == _piled_up_state_evicts(oracle)
    assert all(ours.values()), ours


def _large_argv(server):
    """A command whose arguments take the client over the limit evicts it before it
    runs: the key it would set is not there."""
    with server.connect() as admin:
        admin.call("CLIENT", "NO-EVICT", "on")
        admin.call("FLUSHALL")
        admin.call("CONFIG", "SET", "maxmemory-clients", "3000000")
        c = server.connect()
        first = c.call("MSET", "k", "v", "k2", "v" * 1000000).kind
        try:
            c.call("MSET", "k", "v", "k3", "v" * 3000000)
            closed = False
        except (ConnectionClosed, OSError):
            closed = True
        c.close()
        ran = admin.call("EXISTS", "k3").value
        admin.call("CONFIG", "SET", "maxmemory-clients", "0")
    return first, closed, ran


def test_large_argv_evicts_before_the_command_runs(blinkdb, oracle):
    ours = _large_argv(blinkdb)
    assert ours == _large_argv(oracle)
    assert ours == (b"+", True, 0)


def _lowered_limit(server):
    """CONFIG SET lowering maxmemory-clients evicts at once (no waiting for a cron):
    ten clients holding 200 KB of unfinished command each, limit 4 MB then 1 MB. (Redis
    sizes a large argument's read buffer to it, BlinkDB grows its by doubling: the sizes
    leave room for both.)"""
    with server.connect() as admin:
        admin.call("CLIENT", "NO-EVICT", "on")
        admin.call("CONFIG", "SET", "maxmemory-clients", "4mb")
        size = 200 * 1024
        clients = []
        for j in range(10):
            c = server.connect()
            c.call("CLIENT", "SETNAME", "client%d" % j)
            c.sock.sendall(b"*2\r\n$%d\r\n" % size + b"v" * size)
            clients.append(c)

            def filled(name="client%d" % j):
                listed = admin.call("CLIENT", "LIST").value.decode()
                line = [x for x in listed.splitlines() if "name=%s " % name in x][0]
                return int(line.split(" qbuf=")[1].split(" ")[0]) >= size

            _until(filled)
        before = admin.call("CLIENT", "LIST").value.decode().count("name=client")
        admin.call("CONFIG", "SET", "maxmemory-clients", "1mb")
        after = admin.call("CLIENT", "LIST").value.decode().count("name=client")
        admin.call("CONFIG", "SET", "maxmemory-clients", "0")
        for c in clients:
            c.close()
    return before, 0 < after < before


def test_lowering_the_limit_evicts_at_once(blinkdb, oracle):
    ours = _lowered_limit(blinkdb)
    assert ours == _lowered_limit(oracle)
    assert ours == (10, True)


def _debug_switches(server):
    with server.connect() as c:
        return [
            _py_text(c.call("DEBUG", *args))
            for args in (
                ("PAUSE-CRON", "1"),
                ("PAUSE-CRON", "0"),
                ("REPLYBUFFER", "RESIZING", "0"),
                ("REPLYBUFFER", "RESIZING", "1"),
            )
        ]


def test_debug_pause_cron_and_replybuffer_resizing_as_redis(blinkdb, oracle):
    assert _debug_switches(blinkdb) == _debug_switches(oracle)


def _partial_request(server):
    """A large argument being received: CLIENT LIST shows its bytes so far as qbuf and
    the arguments complete before it as argv-mem (Redis moves them out of the query
    buffer), and the read buffer is sized to the argument (tot-mem stays near it)."""
    with server.connect() as admin, server.connect() as c:
        c.call("CLIENT", "SETNAME", "partial")
        c.sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n" + b"v" * 50000)

        def line():
            listed = admin.call("CLIENT", "LIST").value.decode()
            text = [x for x in listed.splitlines() if "name=partial " in x][0]
            return dict(f.split("=", 1) for f in text.split(" ") if "=" in f)

        _until(lambda: line()["qbuf"] == "50000")
        fields = line()
        return fields["qbuf"], fields["argv-mem"], int(fields["tot-mem"]) < 1300000


def test_partial_large_argument_in_client_list_as_redis(blinkdb, oracle):
    ours = _partial_request(blinkdb)
    assert ours == _partial_request(oracle)
    assert ours == ("50000", "4", True)


def _late_last_bytes(server):
    """client-eviction.tcl's "client evicted due to percentage of maxmemory" sends a
    220,200-byte argument that must leave the client under 440,400 bytes; when its last
    bytes came late (a loaded machine), the read buffer sized to the argument was doubled
    before the last read and the client was evicted. Here the last bytes come in two late
    steps; tot-mem stays near the argument."""
    n = 220200
    with server.connect() as admin, server.connect() as c:
        c.call("CLIENT", "SETNAME", "late")
        head = b"*1\r\n$%d\r\n" % n

        def tot_mem_and_qbuf():
            listed = admin.call("CLIENT", "LIST").value.decode()
            text = [x for x in listed.splitlines() if "name=late " in x][0]
            f = dict(kv.split("=", 1) for kv in text.split(" ") if "=" in kv)
            return int(f["tot-mem"]), int(f["qbuf"])

        c.sock.sendall(head + b"v" * (n - 1000))
        _until(lambda: tot_mem_and_qbuf()[1] >= n - 1000)
        c.sock.sendall(b"v" * 500)
        _until(lambda: tot_mem_and_qbuf()[1] >= n - 500)
        return tot_mem_and_qbuf()[0] < n * 3 // 2


def test_a_large_argument_whose_last_bytes_come_late_keeps_its_size(blinkdb, oracle):
    assert _late_last_bytes(oracle)
    assert _late_last_bytes(blinkdb)


def _half_of_equal_clients(server):
    """client-eviction.tcl's "evict clients only until below limit": ten clients of the
    same size (a 256 KB unfinished argument each), then a limit of five of them plus the
    NO-EVICT caller as CLIENT LIST measured it. Exactly five go: the caller counts
    without the CONFIG SET it runs (a longer command than the CLIENT LIST it was measured
    in), as Redis's figures are updated after each command, not during it."""
    size = 256 * 1024

    def field(admin, name, f):
        listed = admin.call("CLIENT", "LIST").value.decode()
        text = [x for x in listed.splitlines() if "name=%s " % name in x][0]
        return int(text.split(" %s=" % f)[1].split(" ")[0])

    with server.connect() as admin:
        admin.call("DEBUG", "REPLYBUFFER", "RESIZING", "0")
        admin.call("CONFIG", "SET", "maxmemory-clients", "0")
        admin.call("CLIENT", "SETNAME", "control")
        admin.call("CLIENT", "NO-EVICT", "on")
        clients, largest = [], 0
        for j in range(10):
            c = server.connect()
            c.call("CLIENT", "SETNAME", "client%d" % j)
            c.sock.sendall(b"*2\r\n$%d\r\n" % size + b"v" * size)
            clients.append(c)
            _until(lambda name="client%d" % j: field(admin, name, "qbuf") >= size)
            largest = max(largest, field(admin, "client%d" % j, "tot-mem"))
        limit = largest * 10 // 2 + field(admin, "control", "tot-mem")
        admin.call("CONFIG", "SET", "maxmemory-clients", str(limit))
        listed = admin.call("CLIENT", "LIST").value.decode()
        left = listed.count("name=client")
        total = sum(int(x.split(" tot-mem=")[1].split(" ")[0]) for x in listed.splitlines())
        admin.call("CONFIG", "SET", "maxmemory-clients", "0")
        admin.call("DEBUG", "REPLYBUFFER", "RESIZING", "1")
        for c in clients:
            c.close()
    return left, total <= limit


def test_evicts_only_until_below_the_limit(blinkdb, oracle):
    ours = _half_of_equal_clients(blinkdb)
    assert ours == _half_of_equal_clients(oracle)
    assert ours == (5, True)


def _dead_clients_before_keys(server):
    """maxmemory.tcl's "eviction due to input buffer of a dead client, client eviction:
    true": 5 MB of keys under maxmemory 11mb, maxmemory-clients 3mb, then 30 clients each
    sending 249 KB of a command they never finish, one right after the other. Clients are
    evicted, no key: the clients' running total reaches the limit at the read that passes
    it (BlinkDB summed the clients only in its 100 ms cron, or when one client alone
    passed the limit, so their 7 MB had maxmemory evict keys first)."""
    with server.connect() as admin:
        admin.call("FLUSHALL")
        admin.call("CONFIG", "SET", "maxmemory", "11mb")
        admin.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
        admin.call("CONFIG", "SET", "maxmemory-clients", "3mb")
        admin.call("CLIENT", "NO-EVICT", "on")
        admin.call("CONFIG", "RESETSTAT")
        for j in range(50):
            admin.call("SETRANGE", str(j), "100000", "x")
        clients = []
        try:
            for _ in range(30):
                c = server.connect()
                clients.append(c)
                try:
                    c.sock.sendall(b"*250\r\n")
                    for _ in range(249):
                        c.sock.sendall(b"$1000\r\n" + b"x" * 1000 + b"\r\n")
                except OSError:
                    pass  # evicted while sending
            stats = _stats(admin)
            return (int(stats["evicted_clients"]) > 0, int(stats["evicted_keys"]),
                    admin.call("DBSIZE").value)
        finally:
            for c in clients:
                c.close()
            for name, value in (("maxmemory-clients", "0"), ("maxmemory", "0"),
                                ("maxmemory-policy", "noeviction")):
                admin.call("CONFIG", "SET", name, value)


def test_clients_evicted_before_keys(blinkdb, oracle):
    assert _dead_clients_before_keys(blinkdb) == (True, 0, 50)
    # redis-server keeps every key too; whether it evicted a client by the time INFO is
    # read depends on when its cron ran (on a loaded machine, sometimes not yet).
    assert _dead_clients_before_keys(oracle)[1:] == (0, 50)


def _unfinished_large_argument(server):
    """client-eviction.tcl's "avoid client eviction when client is freed by output buffer
    limit" leaves a 6 MB argument unfinished and expects the client to stay under 10 MB.
    BlinkDB sizes the read buffer to the argument; once full, the next read (here one byte
    of the CRLF) doubled it, and the client held twice the argument."""
    size = 2 * 1024 * 1024
    with server.connect() as admin, server.connect() as c:
        c.call("CLIENT", "SETNAME", "big")
        c.sock.sendall(b"*1\r\n$%d\r\n" % size + b"v" * size)

        def line():
            listed = admin.call("CLIENT", "LIST").value.decode()
            text = [x for x in listed.splitlines() if "name=big " in x][0]
            return dict(f.split("=", 1) for f in text.split(" ") if "=" in f)

        _until(lambda: int(line()["qbuf"]) >= size)
        c.sock.sendall(b"\r")
        _until(lambda: int(line()["qbuf"]) >= size + 1)
        return int(line()["tot-mem"]) < size * 3 // 2


def test_unfinished_large_argument_does_not_double_its_buffer(blinkdb, oracle):
    ours = _unfinished_large_argument(blinkdb)
    assert ours == _unfinished_large_argument(oracle)
    assert ours
