"""DEBUG PROTOCOL <type> as redis-server 7.0.15 answers it (unit/protocol's RESP3 tests and client
libraries' parser tests use it): the same bytes for every type in RESP2 and RESP3, attributes and
pushes followed by their real reply, and the same errors."""

from server import ORACLE_BIN, ServerProcess
from resp import RespConnection

DEBUG = ["--enable-debug-command", "yes"]
TYPES = ("string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib",
         "push", "verbatim", "true", "false", "TRUE", "bogus")


def replies(port):
    out = []
    with RespConnection(port) as c:
        for proto in ("2", "3"):
            c.call("HELLO", proto)
            for name in TYPES:
                c.send("DEBUG", "PROTOCOL", name)
                reply = c.read_reply()
                # An attribute or a push comes before the reply it goes with.
                if reply.raw[:1] in (b"|", b">"):
                    reply = type(reply)(reply.raw + c.read_reply().raw, None, None)
                out.append((proto, name, reply.raw))
            out.append((proto, "arity", c.call("DEBUG", "PROTOCOL").raw))
            # The connection still answers in step after the pushes and attributes.
            out.append((proto, "ping", c.call("PING").raw))
    return out


def test_protocol_replies_as_redis(blinkdb_binary, tmp_path):
    mine = ServerProcess(blinkdb_binary, str(tmp_path / "blinkdb"), DEBUG)
    theirs = ServerProcess(ORACLE_BIN, str(tmp_path / "redis"), DEBUG)
    try:
        ours, redis = replies(mine.port), replies(theirs.port)
        for a, b in zip(ours, redis):
            assert a == b
        assert len(ours) == len(redis)
        # Not vacuous: the RESP3 types are there.
        assert ("3", "bignum", b"(1234567999999999999999999999999999999\r\n") in ours
        assert ("3", "verbatim", b"=29\r\ntxt:This is a verbatim\nstring\r\n") in ours
    finally:
        mine.stop()
        theirs.stop()
