"""Client threads that write and record exactly which writes were acknowledged.

Each writer owns its keys, so per key the order of its writes is the order of
the acknowledgements; a crash leaves at most one write per writer in flight.
"""

import random
import threading
import time

from resp import ConnectionClosed, RespConnection, encode


class KeyHistory:
    """Every acknowledged value of one key, oldest first, with its ack time."""

    __slots__ = ("values", "times", "pending")

    def __init__(self, value=None, at=0.0):
        self.values = [value]
        self.times = [at]
        self.pending = []  # values of writes sent but not acknowledged

    def latest(self):
        """The value once every write sent so far has been applied."""
        return self.pending[-1] if self.pending else self.values[-1]

    def ack(self, at):
        self.values.append(self.pending.pop(0))
        self.times.append(at)


class AckedWriter(threading.Thread):
    """SET with unique values, INCR and DEL on its own keys until stopped, cut off or
    refused; `depth` commands are pipelined (sent in one write) at a time."""

    def __init__(self, port, writer_id, histories, seed, stop, n_keys=16, n_counters=4,
                 value_size=24, depth=1):
        super().__init__(daemon=True)
        self.port = port
        self.id = writer_id
        self.histories = histories  # shared dict key -> KeyHistory, keys owned by this writer
        self.rng = random.Random(seed)
        self.stop = stop
        self.keys = [f"w{writer_id}:k{i}" for i in range(n_keys)]
        self.counters = [f"w{writer_id}:c{i}" for i in range(n_counters)]
        for key in self.keys + self.counters:
            histories.setdefault(key, KeyHistory())
        self.value_size = value_size
        self.depth = depth
        self.seq = 0
        self.acked = 0
        self.errors = []  # replies that contradict the model
        self.refusals = []  # error replies (e.g. MISCONF); the writer stops at the first

    def _next_command(self):
        roll = self.rng.random()
        if roll < 0.55:
            key = self.rng.choice(self.keys)
            self.seq += 1
            value = f"{self.id}:{self.seq}:".encode().ljust(self.value_size, b"v")
            return ("SET", key, value), key, value
        if roll < 0.85:
            key = self.rng.choice(self.counters)
            current = self.histories[key].latest()
            value = str(int(current or b"0") + 1).encode()
            return ("INCR", key), key, value
        key = self.rng.choice(self.keys)
        return ("DEL", key), key, None

    def _expected_reply(self, command, key, value):
        if command[0] == "SET":
            return b"+OK\r\n"
        if command[0] == "INCR":
            return b":" + value + b"\r\n"
        return b":1\r\n" if self.histories[key].latest() is not None else b":0\r\n"

    def run(self):
        try:
            conn = RespConnection(self.port, timeout=30.0)
        except OSError:
            return
        try:
            while not self.stop.is_set():
                batch = []
                for _ in range(self.depth):
                    command, key, value = self._next_command()
                    batch.append((command, key, self._expected_reply(command, key, value)))
                    self.histories[key].pending.append(value)
                try:
                    conn.send_raw(b"".join(encode(*command) for command, _, _ in batch))
                    for command, key, expected in batch:
                        reply = conn.read_reply()
                        if reply.is_error():
                            self.refusals.append(reply.raw)
                            return  # this and later writes of the batch stay pending
                        if reply.raw != expected:
                            self.errors.append((command, expected, reply.raw))
                        self.histories[key].ack(time.monotonic())
                        self.acked += 1
                except (ConnectionClosed, OSError):
                    return  # the server died: unanswered writes stay pending
        finally:
            conn.close()


def start_writers(port, histories, count, seed, prefix="", depths=(1,), **kwargs):
    """`count` writers on keys w{prefix}0.. (the same prefix overwrites the same keys);
    writer i pipelines depths[i % len(depths)] commands at a time."""
    stop = threading.Event()
    writers = [AckedWriter(port, f"{prefix}{i}", histories, seed * 1000 + i, stop,
                           depth=depths[i % len(depths)], **kwargs)
               for i in range(count)]
    for writer in writers:
        writer.start()
    return stop, writers


def wait_for_first_ack(writers, timeout=15.0):
    """Waits until some writer had a write acknowledged: on a loaded machine the first
    `appendfsync always` ack after a restart can take longer than a kill's random delay."""
    deadline = time.monotonic() + timeout
    while not any(w.acked for w in writers):
        assert time.monotonic() < deadline, "no write was acknowledged"
        time.sleep(0.01)


def stop_writers(stop, writers, allow_refusals=False):
    stop.set()
    for writer in writers:
        writer.join(timeout=30)
        assert not writer.is_alive(), "a writer is stuck"
    errors = [e for w in writers for e in w.errors]
    assert not errors, f"replies that contradict the model: {errors[:5]}"
    refusals = [r for w in writers for r in w.refusals]
    assert allow_refusals or not refusals, f"writes were refused: {refusals[:3]}"
    return sum(w.acked for w in writers)


def read_keys(conn, keys, batch=2000):
    """GET of every key, pipelined: {key: value or None}."""
    observed = {}
    keys = list(keys)
    for i in range(0, len(keys), batch):
        chunk = keys[i:i + batch]
        for key, reply in zip(chunk, conn.pipeline([("GET", k) for k in chunk])):
            assert not reply.is_error(), (key, reply.raw)
            observed[key] = reply.value
    return observed


def check_histories(histories, observed, durable_before=None):
    """Compares what the server has with what was acknowledged.

    A key must hold a value acknowledged at or after its last write acknowledged
    before `durable_before` (monotonic time; None: every acknowledged write must
    be there), or the value of the write in flight. Returns (problems, lost):
    `lost` counts acknowledged writes that are missing (only allowed after the
    horizon).
    """
    problems = []
    lost = 0
    for key, history in histories.items():
        value = observed.get(key)
        last = len(history.values) - 1
        if durable_before is None:
            oldest_allowed = last
        else:
            oldest_allowed = 0
            for index, at in enumerate(history.times):
                if at < durable_before:
                    oldest_allowed = index
        if value in history.pending:
            continue
        allowed = history.values[oldest_allowed:]
        if value not in allowed:
            problems.append(
                f"{key}: server has {value!r}, acknowledged {history.values[-1]!r}"
                f" (allowed {allowed[-3:]!r}, in flight {history.pending!r})")
            continue
        # the most recent matching index: values are unique except None/counter repeats
        position = max(i for i in range(oldest_allowed, last + 1) if history.values[i] == value)
        lost += last - position
    return problems, lost


def settle(histories, observed):
    """After a check: the server's state becomes the model's starting point."""
    now = time.monotonic()
    for key, history in histories.items():
        history.values = [observed.get(key)]
        history.times = [now]
        history.pending = []
