"""A tiny raw RESP2/RESP3 client used to compare servers byte for byte.

Written here rather than using redis-py because redis-py decodes and
normalises replies; the differential test needs the exact bytes.
"""

import socket
import time


class Reply:
    """One reply: the exact bytes on the wire plus a decoded value."""

    __slots__ = ("raw", "kind", "value")

    def __init__(self, raw, kind, value):
        self.raw = raw
        self.kind = kind  # the RESP type byte, e.g. b"+", b"$", b"*"
        self.value = value

    def is_error(self):
        return self.kind in (b"-", b"!")

    def __repr__(self):
        return f"Reply({self.raw!r})"


class ConnectionClosed(Exception):
    pass


def encode(*args):
    """Encode one command as a RESP array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, str):
            arg = arg.encode()
        elif isinstance(arg, int):
            arg = str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(parts)


class RespConnection:
    def __init__(self, port=None, host="127.0.0.1", unix_path=None, timeout=10.0, rcvbuf=None):
        """rcvbuf: SO_RCVBUF set before connecting, so that the window the
        server sees stays that small (set later, the kernel has already
        scaled it)."""
        if rcvbuf is not None:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.settimeout(timeout)
            self.sock.connect((host, port))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        elif unix_path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(unix_path)
        else:
            self.sock = socket.create_connection((host, port), timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        self.reads = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- sending -------------------------------------------------------
    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, *args):
        self.sock.sendall(encode(*args))

    def call(self, *args):
        self.send(*args)
        return self.read_reply()

    def pipeline(self, commands):
        """Send all commands in one write, then read one reply per command."""
        self.sock.sendall(b"".join(encode(*c) for c in commands))
        return [self.read_reply() for _ in commands]

    # --- receiving -----------------------------------------------------
    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        self.reads += 1
        if not chunk:
            raise ConnectionClosed("server closed the connection")
        self.buf += chunk

    def _line(self):
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = bytes(self.buf[self.pos : end])
                self.pos = end + 2
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos : self.pos + n])
        if self.buf[self.pos + n : self.pos + n + 2] != b"\r\n":
            raise ValueError("bulk payload not terminated by CRLF")
        self.pos += n + 2
        return data

    def read_reply(self):
        # compact only between replies so `start` stays valid while parsing
        if self.pos > (1 << 20):
            del self.buf[: self.pos]
            self.pos = 0
        start = self.pos
        kind, value = self._read_value()
        return Reply(bytes(self.buf[start : self.pos]), kind, value)

    def _read_value(self):
        line = self._line()
        if not line:
            raise ValueError("empty reply line")
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return kind, rest
        if kind == b":":
            return kind, int(rest)
        if kind == b",":
            return kind, rest
        if kind == b"(":
            return kind, int(rest)
        if kind == b"#":
            return kind, rest == b"t"
        if kind == b"_":
            return kind, None
        if kind in (b"$", b"!", b"="):
            n = int(rest)
            if n < 0:
                return kind, None
            return kind, self._exact(n)
        if kind in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return kind, None
            return kind, [self._read_value() for _ in range(n)]
        if kind in (b"%", b"|"):
            n = int(rest)
            return kind, [(self._read_value(), self._read_value()) for _ in range(n)]
        raise ValueError(f"unknown RESP type byte in {line!r}")

    def read_all_available(self, wait=0.3):
        """Read whatever arrives within `wait` seconds (for protocol tests)."""
        self.sock.settimeout(wait)
        data = bytearray(self.buf[self.pos :])
        self.buf.clear()
        self.pos = 0
        try:
            while True:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    return bytes(data), True
                data += chunk
        except (socket.timeout, BlockingIOError):
            return bytes(data), False
        except ConnectionResetError:
            return bytes(data), True
        finally:
            self.sock.settimeout(10.0)

    def wait_closed(self, timeout=5.0):
        """True once the server has closed this connection (EOF or reset)."""
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.2)
        try:
            while time.monotonic() < deadline:
                try:
                    chunk = self.sock.recv(1 << 16)
                except socket.timeout:
                    continue
                except ConnectionResetError:
                    return True
                if not chunk:
                    return True
            return False
        finally:
            self.sock.settimeout(10.0)


def plain(kind_value):
    """Strip type tags from a nested (kind, value) structure."""
    kind, value = kind_value
    if kind in (b"*", b"~", b">") and value is not None:
        return [plain(v) for v in value]
    if kind in (b"%", b"|"):
        return {plain(k): plain(v) for k, v in value}
    return value
