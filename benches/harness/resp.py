"""A minimal blocking RESP2 client for setup commands and readiness probes.

Written here rather than importing redis-py so the harness needs no client library and
never negotiates RESP3 (redis-py 8 sends HELLO 3, which a young server may not support).
"""
import socket


class ReplyError(Exception):
    """An error reply (`-ERR ...`); str(e) is the server's text."""


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class Client:
    def __init__(self, port, host="127.0.0.1", timeout=30.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        """Reads one reply; error replies come back as ReplyError instances, not raised."""
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ReplyError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ConnectionError("unexpected reply line %r" % line[:80])

    def call(self, *args):
        self.sock.sendall(encode(*args))
        reply = self.read()
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def pipeline(self, commands):
        """Sends all commands at once; returns the replies (errors as ReplyError values)."""
        self.sock.sendall(b"".join(encode(*c) for c in commands))
        return [self.read() for _ in commands]


def is_unsupported(error):
    """True when an error reply means the server lacks a command or option, not a bug."""
    text = str(error).lower()
    return "unknown command" in text or "unknown subcommand" in text or "unsupported" in text


def brief(error, limit=90):
    """An error's text cut to what a table cell can hold (Redis appends the arguments)."""
    text = str(error).strip().split(", with args beginning with")[0]
    return text if len(text) <= limit else text[:limit - 3] + "..."
