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
    # ACL CAT <cat> lists the same commands (Redis in its hash order).
    for cat in ("hash", "dangerous", "pubsub", "list", "geo"):
        lists = []
        for srv in servers.values():
            with srv.connect() as c:
                lists.append(sorted(v for _, v in c.call("ACL", "CAT", cat).value))
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
        f.write("user repl on >rp +psync +replconf +ping\n")
    port = free_port()
    master = ServerProcess(binaries[master_kind], mdir, port=port,
                           args=[conf] + base_args(port, mdir))
    replica = None
    try:
        replica = start_with(binaries[replica_kind], str(tmp_path / "replica"),
                             "--replicaof", "127.0.0.1", str(master.port),
                             "--masteruser", "repl", "--masterauth", "rp")
        with master.connect() as m, replica.connect() as r:
            assert m.call("SET", "k", "v").raw == b"+OK\r\n"
            wait_for(lambda: r.call("GET", "k").raw == b"$1\r\nv\r\n", "the write on the replica")
            # The replication user may not run anything else.
            assert m.call("ACL", "DRYRUN", "repl", "get", "k").value.startswith(
                b"This user has no permissions to run the 'get' command")
    finally:
        if replica is not None:
            replica.stop()
        master.stop()
