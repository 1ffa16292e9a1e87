"""A fake replication master for the replica's fault tests: a socket server on a free
loopback port that speaks just enough of the protocol."""
import socket
import threading


class FakeMaster:
    """Answers the handshake, then PSYNC with +FULLRESYNC and the bytes `sync(n)` gives
    for its n-th connection (header and payload); then closes if `close`, else idles."""

    def __init__(self, sync, close):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.sync, self.close_after = sync, close
        self.connections = 0
        # Full payloads sent; none after stop() returns (a session checks under the lock).
        self.payloads = 0
        self.lock = threading.Lock()
        self.stopped = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.session, args=(conn, self.connections),
                             daemon=True).start()

    def session(self, conn, n):
        f = conn.makefile("rb")
        try:
            while True:
                line = f.readline()
                if not line:
                    return
                args = []
                for _ in range(int(line[1:])):
                    ln = int(f.readline()[1:])
                    args.append(f.read(ln + 2)[:-2])
                cmd = args[0].upper()
                if cmd == b"PING":
                    conn.sendall(b"+PONG\r\n")
                elif cmd == b"PSYNC":
                    with self.lock:
                        if self.stopped:
                            return
                        conn.sendall(b"+FULLRESYNC " + b"a" * 40 + b" 0\r\n")
                        conn.sendall(self.sync(n))
                        self.payloads += 1
                    if self.close_after:
                        return
                elif cmd == b"REPLCONF" and args[1].upper() == b"ACK":
                    pass
                else:
                    conn.sendall(b"+OK\r\n")
        except (OSError, ValueError):
            pass
        finally:
            conn.close()

    def stop(self):
        """No connection and no payload after this returns (a handshake under way is
        dropped; a payload being sent is finished first)."""
        with self.lock:
            self.stopped = True
        self.sock.close()
