"""ACL users (issue 40) against redis-server 7.0.15 run the same way: the
rule language and its replies (SETUSER errors, GETUSER, LIST, DRYRUN),
AUTH user pass, NOPERM refusals and ACL LOG entries, a bad SETUSER that
changes nothing, the checks inside MULTI/EXEC and scripts, disconnections
on DELUSER and lost channel rights, ACL SAVE/LOAD, CONFIG REWRITE of `user`
lines and a malformed aclfile refusing to start."""

import hashlib
import os
import time

import pytest

from resp import plain
from server import ORACLE_BIN, ServerProcess, base_args, free_port


def run(srv, *cmds):
    """The raw replies of commands sent on one new connection."""
    with srv.connect() as c:
        return [c.call(*cmd).raw for cmd in cmds]


def same(servers, *cmds):
    got = {name: run(srv, *cmds) for name, srv in servers.items()}
    for i, cmd in enumerate(cmds):
        assert got["blinkdb"][i] == got["redis"][i], cmd
    return got["blinkdb"]


def test_rules_getuser_list_and_errors_match_redis(servers):
    same(
        servers,
        ("ACL", "SETUSER", "alice", "on", ">p1", ">p2", "<p1", "~obj:*", "%R~ro:*",
         "%W~wo:*", "&chan:*", "+@hash", "-hdel"),
        ("ACL", "GETUSER", "alice"),
        ("ACL", "SETUSER", "bob", "reset", "nopass", "allkeys", "allchannels", "+@all",
         "-@dangerous"),
        ("ACL", "SETUSER", "carol", "on", "#" + "a" * 64, "(+get ~x*)", "(+set", "%W~y*)"),
        ("ACL", "GETUSER", "carol"),
        ("ACL", "SETUSER", "carol", "clearselectors", "resetpass", "off"),
        ("ACL", "LIST"),
        ("ACL", "USERS"),
        ("ACL", "GETUSER", "nobody"),
        ("ACL", "WHOAMI"),
        ("ACL", "CAT"),
        ("ACL", "CAT", "nosuchcat"),
        ("ACL", "SETUSER", "x", "+nosuchcommand"),
        ("ACL", "SETUSER", "x", "+@nosuchcat"),
        ("ACL", "SETUSER", "x", "bogus"),
        ("ACL", "SETUSER", "x", "allkeys", "~foo"),
        ("ACL", "SETUSER", "x", "allchannels", "&foo"),
        ("ACL", "SETUSER", "x", "<notthere"),
        ("ACL", "SETUSER", "x", "#tooshort"),
        ("ACL", "SETUSER", "x", "+config|get|x"),
        ("ACL", "SETUSER", "x", "(+get ~a"),
        ("ACL", "SETUSER", "x", "%X~a"),
        ("ACL", "SETUSER", "with space"),
        ("ACL", "DELUSER", "default"),
        ("ACL", "DELUSER", "bob", "nobody"),
        ("ACL", "GENPASS", "0"),
        ("ACL", "GENPASS", "x"),
        ("ACL", "LOG", "x"),
        ("ACL", "SAVE"),
        ("ACL", "LOAD"),
        ("ACL", "HELP"),
        ("ACL", "NOSUCH"),
        ("ACL", "DRYRUN", "nobody", "get", "x"),
        ("ACL", "DRYRUN", "alice", "nosuch"),
        ("ACL", "DRYRUN", "alice", "get"),
        ("ACL", "DRYRUN", "alice", "hset", "obj:1", "f", "v"),
        ("ACL", "DRYRUN", "alice", "hset", "other", "f", "v"),
        ("ACL", "DRYRUN", "alice", "hget", "wo:1", "f"),
        ("ACL", "DRYRUN", "alice", "hdel", "obj:1", "f"),
        ("ACL", "DRYRUN", "alice", "client", "list"),
        ("ACL", "USERS"),
    )
    # Single commands come in the command table's order, Redis's in its hash
    # table's (seeded at random per start): the same rules.
    rules = []
    for srv in servers.values():
        with srv.connect() as c:
            c.call("ACL", "SETUSER", "alice", "+client|id", "+get", "-hget")
            assert c.call("ACL", "DRYRUN", "alice", "client", "id").raw == b"+OK\r\n"
            words = plain((b"*", c.call("ACL", "GETUSER", "alice").value))[5].split()
            rules.append((words[:2], sorted(words[2:])))
    assert rules[0] == rules[1] == rules[0]
    assert rules[0][0] == [b"-@all", b"+@hash"]
    for srv in servers.values():
        with srv.connect() as c:
            bits = len(c.call("ACL", "GENPASS", "10").value)
            assert bits == 3
    # ACL CAT <cat> lists the same commands (Redis in its hash order), of those 7.0.15
    # has: the Redis 7.2-8.0 commands BlinkDB serves (HEXPIRE..., issue 43) are 8.0's.
    with servers["redis"].connect() as c:
        known = {v for _, v in c.call("COMMAND", "LIST").value}
    for cat in ("hash", "dangerous", "pubsub", "list", "geo"):
        lists = []
        for srv in servers.values():
            with srv.connect() as c:
                lists.append(sorted(v for _, v in c.call("ACL", "CAT", cat).value
                                    if v.split(b"|")[0] in known))
        assert lists[0] == lists[1], cat


def test_bad_setuser_changes_nothing(servers):
    for srv in servers.values():
        with srv.connect() as c:
            c.call("ACL", "SETUSER", "dave", "on", ">pw", "~k*", "+get")
            before = c.call("ACL", "GETUSER", "dave").raw
            assert c.call("ACL", "SETUSER", "dave", "+set", "off", "+nosuch").is_error()
            assert c.call("ACL", "GETUSER", "dave").raw == before
            assert c.call("ACL", "SETUSER", "newbie", "on", "bogus").is_error()
            assert c.call("ACL", "GETUSER", "newbie").value is None


def test_auth_noperm_and_log_match_redis(servers):
    cmds = (
        ("ACL", "SETUSER", "eve", "on", ">secret", "~k*", "&ch", "+get", "+set",
         "+publish", "+subscribe", "+multi", "+exec", "+eval", "+acl|whoami"),
        ("AUTH", "eve", "wrong"),
        ("AUTH", "nobody", "x"),
        ("AUTH", "eve", "secret"),
        ("ACL", "WHOAMI"),
        ("SET", "k1", "v"),
        ("GET", "x1"),
        ("DEL", "k1"),
        ("PUBLISH", "ch", "m"),
        ("PUBLISH", "other", "m"),
        ("MULTI",),
        ("GET", "k1"),
        ("GET", "nope"),
        ("EXEC",),
        ("EVAL", "return redis.call('get','nope')", "0"),
        ("AUTH", "default", "x"),
    )
    same(servers, *cmds)
    # Entries: the same reasons, contexts, objects and users, newest first.
    logs = {}
    for name, srv in servers.items():
        with srv.connect() as c:
            logs[name] = shape(c.call("ACL", "LOG").value)
    assert logs["blinkdb"] == logs["redis"]
    assert len(logs["blinkdb"]) >= 6
    for name, srv in servers.items():
        with srv.connect() as c:
            assert c.call("ACL", "LOG", "RESET").raw == b"+OK\r\n"
            assert c.call("ACL", "LOG").raw == b"*0\r\n"


def shape(entries):
    """An ACL LOG reply without its times and client details."""
    out = []
    for e in entries:
        fields = decode_map(e)
        assert set(fields) == {"count", "reason", "context", "object", "username",
                               "age-seconds", "client-info"}
        assert b"user=" in fields["client-info"]
        out.append(tuple(fields[k] for k in ("count", "reason", "context", "object",
                                             "username")))
    return out


def decode_map(e):
    kind, items = e
    assert kind == b"*"
    flat = [v for _, v in items]
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def test_exec_time_check_and_deleted_user(servers):
    for srv in servers.values():
        with srv.connect() as admin, srv.connect() as c, srv.connect() as other:
            admin.call("ACL", "SETUSER", "frank", "on", "nopass", "~*", "+@all")
            assert c.call("AUTH", "frank", "x").raw == b"+OK\r\n"
            assert other.call("AUTH", "frank", "y").raw == b"+OK\r\n"
            c.call("MULTI")
            c.call("SET", "a", "1")
            c.call("GET", "a")
            admin.call("ACL", "SETUSER", "frank", "-set")
            reply = c.call("EXEC")
            assert reply.value[0][1].startswith(
                b"NOPERM ACLs rules changed between the moment the transaction was "
                b"accumulated and the EXEC call. This command is no longer allowed for "
                b"the following reason: no permission to execute the command or subcommand")
            assert reply.value[1][1] is None
            assert admin.call("ACL", "DELUSER", "frank").raw == b":1\r\n"
            other.wait_closed()
            c.wait_closed()


def test_lost_channel_rights_disconnect_subscribers(servers):
    for srv in servers.values():
        with srv.connect() as admin, srv.connect() as sub, srv.connect() as keep:
            admin.call("ACL", "SETUSER", "gina", "on", "nopass", "+@all", "&news", "&sport")
            assert sub.call("AUTH", "gina", "x").raw == b"+OK\r\n"
            assert keep.call("AUTH", "gina", "x").raw == b"+OK\r\n"
            sub.call("SUBSCRIBE", "news")
            keep.call("SUBSCRIBE", "sport")
            # Adding a channel keeps everyone; removing `news` drops its subscriber.
            admin.call("ACL", "SETUSER", "gina", "&weather")
            assert plain((b"*", keep.call("PING").value)) == [b"pong", b""]
            admin.call("ACL", "SETUSER", "gina", "resetchannels", "&sport")
            sub.wait_closed()
            assert plain((b"*", keep.call("PING").value)) == [b"pong", b""]
            assert admin.call("CLIENT", "KILL", "USER", "gina").raw == b":1\r\n"
            keep.wait_closed()
            assert admin.call("CLIENT", "KILL", "USER", "nosuch").raw == \
                b"-ERR No such user 'nosuch'\r\n"


def test_script_acl_check_cmd_answers_for_the_callers_user(servers):
    """redis.acl_check_cmd checks the calling user's command, key and
    subcommand rights, and raises Redis's errors for no arguments, an
    unknown command and a table argument."""
    script = "return redis.acl_check_cmd(unpack(ARGV))"
    same(
        servers,
        ("ACL", "SETUSER", "sam", "on", ">pw", "~x*", "+@scripting", "+set",
         "+config|get"),
        ("AUTH", "sam", "pw"),
        ("EVAL", script, "0", "set", "xx", "1"),
        ("EVAL", script, "0", "set", "yy", "1"),
        ("EVAL", script, "0", "hset", "xx", "f", "1"),
        ("EVAL", script, "0", "config", "get", "maxmemory"),
        ("EVAL", script, "0", "config", "set", "maxmemory", "1"),
        ("EVAL", script, "0", "nosuchcommand"),
        ("EVAL", script, "0", "config", "nosuchsub"),
        ("EVAL", "return redis.acl_check_cmd()", "0"),
        ("EVAL", "return redis.acl_check_cmd('set', {})", "0"),
        ("EVAL", "return redis.acl_check_cmd('set', 'xx', 1)", "0"),
    )


def test_requirepass_is_the_default_users_password(servers):
    for srv in servers.values():
        with srv.connect() as c, srv.connect() as fresh:
            # A connection served before the password was set stays in.
            assert fresh.call("PING").raw == b"+PONG\r\n"
            assert c.call("CONFIG", "SET", "requirepass", "pw").raw == b"+OK\r\n"
            with srv.connect() as new:
                assert new.call("PING").raw.startswith(b"-NOAUTH")
                assert new.call("AUTH", "default", "pw").raw == b"+OK\r\n"
            pw_hash = hashlib.sha256(b"pw").hexdigest().encode()
            users = plain((b"*", c.call("ACL", "LIST").value))
            assert b"user default on #" + pw_hash + b" ~* &* +@all" in users
            assert c.call("CONFIG", "SET", "requirepass", "").raw == b"+OK\r\n"
            reply = fresh.call("ACL", "GETUSER", "default")
            assert not reply.is_error(), (srv.binary, reply)
            user = plain((b"*", reply.value))
            assert user[1] == [b"on", b"nopass"] and user[3] == []


def read_to_close(conn, timeout=10.0):
    """Every byte the server sends until it closes the connection."""
    data = bytearray(conn.buf[conn.pos:])
    conn.sock.settimeout(timeout)
    try:
        while chunk := conn.sock.recv(1 << 16):
            data += chunk
    except ConnectionResetError:
        pass
    return bytes(data)


def test_unauthenticated_client_limits_match_redis(servers):
    """Redis 7.0 (networking.c) caps a client that must still authenticate:
    at most 10 arguments of at most 16 KB each, and 16 KB of unsent replies;
    the caps go when the default user needs no password."""
    noauth = b"-NOAUTH Authentication required.\r\n"
    for srv in servers.values():
        with srv.connect() as admin:
            assert admin.call("CONFIG", "SET", "requirepass", "pw").raw == b"+OK\r\n"
            with srv.connect() as c:
                assert c.call(*["DEL"] * 10).raw == noauth
                assert c.call("ECHO", "x" * 16384).raw == noauth
                c.send(*["DEL"] * 11)
                assert read_to_close(c) == \
                    b"-ERR Protocol error: unauthenticated multibulk length\r\n", srv.binary
            with srv.connect() as c:
                c.send("ECHO", "x" * 16385)
                assert read_to_close(c) == \
                    b"-ERR Protocol error: unauthenticated bulk length\r\n", srv.binary
            # 400 refusals (13.6 KB) in one read fit the reply buffer; 600 (20.4 KB)
            # close the connection before any is sent.
            with srv.connect() as c:
                c.send_raw(b"PING\r\n" * 400)
                assert [c.read_reply().raw for _ in range(400)] == [noauth] * 400
                assert c.call("PING").raw == noauth
                c.send_raw(b"PING\r\n" * 600)
                assert read_to_close(c) == b"", srv.binary
            # Without a password for the default user, a client that never
            # logged in is served (caps lifted), until a password comes back.
            with srv.connect() as c:
                assert c.call("PING").raw == noauth
                assert admin.call("CONFIG", "SET", "requirepass", "").raw == b"+OK\r\n"
                assert c.call("PING").raw == b"+PONG\r\n"
                assert c.call("DEL", *["k"] * 11).raw == b":0\r\n"
                assert admin.call("CONFIG", "SET", "requirepass", "pw").raw == b"+OK\r\n"
                assert c.call("PING").raw == noauth


def test_acl_denied_counters_survive_resetstat(blinkdb):
    """INFO's acl_access_denied_* (Redis 7.2's fields; 7.0.15 has none) count
    each kind of refusal, and CONFIG RESETSTAT leaves them, as in 7.2, where
    only initServer zeroes them."""
    def counters(c):
        info = c.call("INFO", "stats").value.decode()
        return {k: int(v) for k, v in (l.split(":") for l in info.split("\r\n")
                                       if l.startswith("acl_access_denied_"))}
    with blinkdb.connect() as admin, blinkdb.connect() as c:
        admin.call("ACL", "SETUSER", "fay", "on", ">pw", "~k*", "&ch", "+get", "+publish")
        assert c.call("AUTH", "fay", "wrong").is_error()
        assert c.call("AUTH", "fay", "pw").raw == b"+OK\r\n"
        assert c.call("SET", "k", "v").is_error()
        assert c.call("GET", "other").is_error()
        assert c.call("GET", "other2").is_error()
        assert c.call("PUBLISH", "other", "m").is_error()
        want = {"acl_access_denied_auth": 1, "acl_access_denied_cmd": 1,
                "acl_access_denied_key": 2, "acl_access_denied_channel": 1}
        assert counters(admin) == want
        assert admin.call("CONFIG", "RESETSTAT").raw == b"+OK\r\n"
        assert counters(admin) == want


def start_with(binary, directory, *extra, wait=True):
    os.makedirs(directory, exist_ok=True)
    port = free_port()
    return ServerProcess(binary, directory, port=port,
                         args=base_args(port, directory) + list(extra), wait=wait)


def test_acl_file_save_load_and_malformed_refuses_start(blinkdb_binary, tmp_path):
    texts = {}
    for name, binary in (("blinkdb", blinkdb_binary), ("redis", ORACLE_BIN)):
        d = str(tmp_path / name)
        os.makedirs(d)
        with open(os.path.join(d, "users.acl"), "w") as f:
            f.write("user default on nopass ~* &* +@all\nuser hank on >pw ~h:* +get\n")
        srv = start_with(binary, d, "--aclfile", "users.acl")
        try:
            with srv.connect() as c:
                assert c.call("AUTH", "hank", "pw").raw == b"+OK\r\n"
                assert c.call("GET", "h:1").raw == b"$-1\r\n"
                c.call("AUTH", "default", "x")
                c.call("ACL", "SETUSER", "ivy", "on", ">pw2", "+ping")
                assert c.call("ACL", "SAVE").raw == b"+OK\r\n"
                texts[name] = open(os.path.join(d, "users.acl")).read()
                # A bad file changes nothing: its errors name the lines.
                with open(os.path.join(d, "users.acl"), "w") as f:
                    f.write("user ok on +get\nuser bad on +nosuch\nuser worse on bogus\n")
                err = c.call("ACL", "LOAD")
                assert err.raw == (
                    b"-ERR users.acl:2: Error in applying operation '+nosuch': Unknown command"
                    b" or category name in ACL. users.acl:3: Syntax error. WARNING: ACL errors"
                    b" detected, no change to the previously active ACL rules was performed\r\n"
                )
                assert c.call("ACL", "GETUSER", "ivy").value is not None
                with open(os.path.join(d, "users.acl"), "w") as f:
                    f.write("user jo on nopass +@all ~*\n")
                assert c.call("ACL", "LOAD").raw == b"+OK\r\n"
                assert c.call("ACL", "USERS").value == [(b"$", b"default"), (b"$", b"jo")]
        finally:
            srv.stop()
        # A malformed file: the server does not start, and says where.
        with open(os.path.join(d, "users.acl"), "w") as f:
            f.write("user ok on\nnotauser x\n")
        bad = start_with(binary, d, "--aclfile", "users.acl", wait=False)
        try:
            assert bad.proc.wait(timeout=10) != 0
            log = bad.log_text()
            assert ("Aborting Redis startup because of ACL errors: users.acl:2 should start "
                    "with user keyword followed by the username.") in log
        finally:
            bad.stop()
    assert texts["blinkdb"].splitlines()[0] == texts["redis"].splitlines()[0]
    assert len(texts["blinkdb"].splitlines()) == 3


@pytest.mark.parametrize("content", [
    "user alice on >pw +get\nuser alice on +set\n",
    "user ok on\nuser bob on +nosuch\n",
    "user eve on >pw\nuser default bogus\n",
    # redis-server 7.0.15 crashes on this one (ACLLoadFromFile); BlinkDB names it.
    "user dan on ~k* (+get\n",
])
def test_malformed_aclfile_refuses_start_with_line_and_reason(blinkdb_binary, tmp_path, content):
    crashes_redis = "(" in content
    found = {}
    for name, binary in (("blinkdb", blinkdb_binary), ("redis", ORACLE_BIN)):
        if crashes_redis and name == "redis":
            continue
        d = str(tmp_path / name)
        os.makedirs(d)
        with open(os.path.join(d, "users.acl"), "w") as f:
            f.write(content)
        bad = start_with(binary, d, "--aclfile", "users.acl", wait=False)
        try:
            assert bad.proc.wait(timeout=10) != 0
            line = next(l for l in bad.log_text().splitlines() if "Aborting Redis startup" in l)
            found[name] = line[line.index("Aborting"):]
        finally:
            bad.stop()
    if crashes_redis:
        assert found["blinkdb"] == (
            "Aborting Redis startup because of ACL errors: users.acl:1: Unmatched parenthesis"
            " in selector definition.WARNING: ACL errors detected, no change to the"
            " previously active ACL rules was performed")
    else:
        assert found["blinkdb"] == found["redis"]
        assert "line 2" in found["blinkdb"] or "users.acl:2" in found["blinkdb"]


def test_user_directive_and_config_rewrite(blinkdb_binary, tmp_path):
    for name, binary in (("blinkdb", blinkdb_binary), ("redis", ORACLE_BIN)):
        d = str(tmp_path / name)
        os.makedirs(d)
        conf = os.path.join(d, "test.conf")
        with open(conf, "w") as f:
            f.write("user kim on >pw ~k:* +get\n")
        port = free_port()
        srv = ServerProcess(binary, d, port=port, args=[conf] + base_args(port, d))
        try:
            with srv.connect() as c:
                assert c.call("AUTH", "kim", "pw").raw == b"+OK\r\n"
                assert c.call("SET", "k:1", "v").raw == (
                    b"-NOPERM this user has no permissions to run the 'set' command\r\n")
                c.call("AUTH", "default", "x")
                c.call("ACL", "SETUSER", "lee", "on", "nopass", "+ping")
                assert c.call("CONFIG", "REWRITE").raw == b"+OK\r\n"
            lines = [l for l in open(conf).read().splitlines() if l.startswith("user ")]
            assert [l.split()[1] for l in lines] == ["default", "kim", "lee"], name
        finally:
            srv.stop()
        # A bad rule in a `user` line refuses to start, as a config error.
        with open(conf, "w") as f:
            f.write("user kim on bogus\n")
        port = free_port()
        bad = ServerProcess(binary, d, port=port, args=[conf] + base_args(port, d), wait=False)
        try:
            assert bad.proc.wait(timeout=10) != 0
            assert "Error in user declaration 'kim': Syntax error" in bad.log_text()
        finally:
            bad.stop()


def wait_for(cond, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("master_kind", ["blinkdb", "redis"])
def test_replica_logs_in_with_masteruser(blinkdb_binary, tmp_path, master_kind):
    """A least-privilege replication user, both ways with redis-server."""
    binaries = {"blinkdb": blinkdb_binary, "redis": ORACLE_BIN}
    replica_kind = "redis" if master_kind == "blinkdb" else "blinkdb"
    mdir = str(tmp_path / "master")
    os.makedirs(mdir)
    conf = os.path.join(mdir, "m.conf")
    with open(conf, "w") as f:
        # `default` is off: only a named user gets in.
        f.write("user default off\nuser admin on >ap ~* &* +@all\n"
                "user repl on >rp +psync +replconf +ping\n")
    port = free_port()
    master = ServerProcess(binaries[master_kind], mdir, port=port,
                           args=[conf] + base_args(port, mdir), password=("admin", "ap"))
    replica = None
    try:
        replica = start_with(binaries[replica_kind], str(tmp_path / "replica"),
                             "--replicaof", "127.0.0.1", str(master.port),
                             "--masteruser", "repl", "--masterauth", "rp")
        with master.connect() as m, replica.connect() as r:
            assert m.call("PING").raw == b"-NOAUTH Authentication required.\r\n"
            assert m.call("AUTH", "admin", "ap").raw == b"+OK\r\n"
            assert m.call("SET", "k", "v").raw == b"+OK\r\n"
            wait_for(lambda: r.call("GET", "k").raw == b"$1\r\nv\r\n", "the write on the replica")
            replicas = [line for line in m.call("CLIENT", "LIST").value.decode().splitlines()
                        if " flags=S " in line]
            assert len(replicas) == 1 and " user=repl " in replicas[0], replicas
            # The replication user may not run anything else.
            assert m.call("ACL", "DRYRUN", "repl", "get", "k").value.startswith(
                b"This user has no permissions to run the 'get' command")
    finally:
        if replica is not None:
            replica.stop()
        master.stop()


# Sentinel's rights on the servers it watches, as Redis's Sentinel docs list them.
SENTINEL_USER = ("user sentinel on >sp allchannels +multi +slaveof +ping +exec +subscribe "
                 "+config|rewrite +role +publish +info +client|setname +client|kill "
                 "+script|kill")


def test_sentinel_with_auth_user_fails_over_a_blinkdb_master(blinkdb_binary, tmp_path):
    """redis-sentinel logs in with `sentinel auth-user/auth-pass` to a BlinkDB master
    whose default user is off and to its BlinkDB replica (which logs in with
    masteruser); it sees both, and after kill -9 of the master promotes the replica
    with that user's rights alone."""
    users = ["user default off", "user admin on >ap ~* &* +@all", SENTINEL_USER,
             "user repl on >rp +psync +replconf +ping"]
    nodes = []

    def blink(name, *extra):
        d = tmp_path / name
        d.mkdir()
        port = free_port()
        conf = d / "blinkdb.conf"
        conf.write_text("\n".join(users + list(extra)) + "\n")
        srv = ServerProcess(blinkdb_binary, str(d), port=port, password=("admin", "ap"),
                            args=[str(conf)] + base_args(port, str(d)))
        nodes.append(srv)
        return srv

    def admin(srv):
        c = srv.connect()
        assert c.call("AUTH", "admin", "ap").raw == b"+OK\r\n"
        return c

    try:
        master = blink("master")
        replica = blink("replica", f"replicaof 127.0.0.1 {master.port}", "masteruser repl",
                        "masterauth rp")
        with admin(master) as m:
            m.call("SET", "k", "v")
        sdir = tmp_path / "sentinel"
        sdir.mkdir()
        sport = free_port()
        (sdir / "sentinel.conf").write_text("\n".join([
            f"port {sport}", "bind 127.0.0.1", f"dir {sdir}",
            f"sentinel monitor mymaster 127.0.0.1 {master.port} 1",
            "sentinel auth-user mymaster sentinel", "sentinel auth-pass mymaster sp",
            "sentinel down-after-milliseconds mymaster 1000",
            "sentinel failover-timeout mymaster 20000"]) + "\n")
        sentinel = ServerProcess(ORACLE_BIN, str(sdir), port=sport,
                                 args=[str(sdir / "sentinel.conf"), "--sentinel"])
        nodes.append(sentinel)

        def fields(reply):
            flat = plain((reply.kind, reply.value))
            return dict(zip(flat[::2], flat[1::2]))

        with sentinel.connect() as s:
            def watching():
                m = fields(s.call("SENTINEL", "MASTER", "mymaster"))
                reps = plain((b"*", s.call("SENTINEL", "REPLICAS", "mymaster").value))
                return m[b"flags"] == b"master" and len(reps) == 1 and \
                    dict(zip(reps[0][::2], reps[0][1::2]))[b"flags"] == b"slave"
            wait_for(watching, "Sentinel sees the master and its replica", timeout=30)
            with admin(master) as m:
                lines = m.call("CLIENT", "LIST").value.decode().splitlines()
            assert any(" user=sentinel " in line for line in lines), lines
            master.proc.kill()
            master.proc.wait()
            wait_for(lambda: s.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").value
                     == [(b"$", b"127.0.0.1"), (b"$", str(replica.port).encode())],
                     "Sentinel promotes the replica", timeout=60)
        with admin(replica) as r:
            wait_for(lambda: b"role:master" in r.call("INFO", "replication").value,
                     "the replica is a master")
            assert r.call("GET", "k").raw == b"$1\r\nv\r\n"
    finally:
        for srv in nodes:
            srv.stop()


@pytest.mark.parametrize("master_kind,replica_kind",
                         [("blinkdb", "blinkdb"), ("redis", "blinkdb"), ("blinkdb", "redis")])
def test_cluster_replica_logs_in_with_masteruser(blinkdb_binary, tmp_path, master_kind,
                                                 replica_kind):
    """A cluster replica (CLUSTER REPLICATE) logs in to its master with masteruser,
    a user with replication rights only, BlinkDB and redis-server either side."""
    from cluster_util import myid, node_args, start_retrying, state_ok, wait_until
    binaries = {"blinkdb": blinkdb_binary, "redis": ORACLE_BIN}
    nodes = []
    try:
        master = start_retrying(binaries[master_kind], str(tmp_path / "master"), node_args())
        nodes.append(master)
        replica = start_retrying(binaries[replica_kind], str(tmp_path / "replica"),
                                 node_args(("--masteruser", "repl", "--masterauth", "rp")))
        nodes.append(replica)
        with master.connect() as m, replica.connect() as r:
            m.call("ACL", "SETUSER", "repl", "on", ">rp", "+psync", "+replconf", "+ping")
            assert m.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383").raw == b"+OK\r\n"
            m.call("CLUSTER", "MEET", "127.0.0.1", str(replica.port))
            mid = myid(master)
            wait_until(lambda: r.call("CLUSTER", "REPLICATE", mid).raw == b"+OK\r\n",
                       what="CLUSTER REPLICATE")
            wait_until(lambda: state_ok(master) and state_ok(replica), what="cluster ok")
            assert m.call("SET", "k", "v").raw == b"+OK\r\n"
            r.call("READONLY")
            wait_until(lambda: r.call("GET", "k").raw == b"$1\r\nv\r\n",
                       what="the write on the replica")
            replicas = [line for line in m.call("CLIENT", "LIST").value.decode().splitlines()
                        if " flags=S " in line]
            assert len(replicas) == 1 and " user=repl " in replicas[0], replicas
    finally:
        for srv in nodes:
            srv.stop()
