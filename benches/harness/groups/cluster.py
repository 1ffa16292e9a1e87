"""`cluster` (issue 23): a 3-master Redis Cluster on one machine per side, BlinkDB nodes
against redis-server nodes, all started with `--cluster-enabled yes` (persistence off, each in
its own directory, so its own nodes.conf; bus port = data port + 10000), slots assigned by
`redis-cli --cluster create A B C --cluster-replicas 0 --cluster-yes`, ready once every node's
CLUSTER INFO says `cluster_state:ok` and knows 3 nodes. Then `redis-benchmark --cluster -c 50
-t set,get -r 1000000` at -P 1 and -P 16, entering at the first node (redis-benchmark spreads
its 50 clients over the masters and sends each key to its slot's owner). CPU us/op is the
three nodes' CPU summed, per request; the idle line sums the nodes too (% of one core).

redis-benchmark --cluster runs one thread per master, and then only its 250 ms throughput
timer stops the run (redis-benchmark.c, showThroughput: `if (config.num_threads &&
requests_finished >= config.requests) aeStop`), so each run's time is rounded up to the next
250 ms step, for both columns alike. The cells are sized to take about 5 s or more (quick:
200k requests at -P 1, 1.5M at -P 16), which keeps that rounding under about 5%; cells of well
under a second only measured the timer.

Resharding under load (a second section, same clusters): FLUSHALL, then N keys (quick: 200k)
with 100-byte values, each written to its slot's owner; then `redis-cli --cluster reshard` of
a third of one master's slots (1820, --cluster-pipeline 10, its default) from one master to another,
while one thread runs a cluster-aware client (redis-py RedisCluster: 50% GET, 50% SET of
those keys, one at a time, following MOVED and ASK). The cells: keys moved per second of the
reshard's wall time (the destination's DBSIZE gained), and the p99 latency in ms of the
client's requests issued during the reshard. Each run moves the slots back the other way, so
every run moves the same keys."""
import random
import socket
import subprocess
import threading
import time

from ..cells import alternate, pick
from ..context import each_started
from ..resp import ReplyError
from ..runners import ToolError, measure, redis_benchmark
from ..servers import Server, StartError

GROUP = "cluster"
NODES = 3
TESTS = ["SET", "GET"]
# A third of one master's slots: a master emptied of its slots turns into a replica of the
# node that took the last one in redis-server 7.0 (cluster-allow-replica-migration), and the
# next run could not move them back.
RESHARD_SLOTS = 16384 // 9
VALUE = b"v" * 100


class Cluster:
    def __init__(self, ctx, contestant):
        self.nodes = []
        try:
            while len(self.nodes) < NODES:
                node = Server(contestant, ctx.ports, ctx.root,
                              extra=["--cluster-enabled", "yes"])
                if not port_free(node.port + 10000):
                    node.discard()  # its cluster bus port is taken; try the next port
                    continue
                self.nodes.append(node)
                node.start()
            create = subprocess.run(
                ["redis-cli", "--cluster", "create"]
                + ["127.0.0.1:%d" % n.port for n in self.nodes]
                + ["--cluster-replicas", "0", "--cluster-yes"],
                capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
            if create.returncode != 0:
                raise ToolError("redis-cli --cluster create failed (rc %d): %s" % (
                    create.returncode, (create.stdout + create.stderr).strip()[-300:]))
            self.wait_ok()
        except Exception:
            self.discard()
            raise

    def wait_ok(self, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            states = []
            for node in self.nodes:
                with node.client() as client:
                    states.append(info_of(client.call("CLUSTER", "INFO")))
            if all(s.get("cluster_state") == "ok" and s.get("cluster_known_nodes") == str(NODES)
                   for s in states):
                return
            if time.monotonic() > deadline:
                raise ToolError("cluster not ok within %d s: %s" % (timeout, states))
            time.sleep(0.1)

    def node_id(self, node):
        with node.client() as client:
            return client.call("CLUSTER", "MYID").decode()

    def fill(self, keys):
        """FLUSHALL, then `keys` keys k:<n> of 100 bytes, each sent to its slot's owner."""
        from redis.crc import key_slot
        owner = {}
        with self.nodes[0].client() as client:
            for start, end, master, *_ in client.call("CLUSTER", "SLOTS"):
                port = master[1]
                for slot in range(start, end + 1):
                    owner[slot] = port
        by_port = {}
        for i in range(keys):
            k = b"k:%d" % i
            by_port.setdefault(owner[key_slot(k)], []).append(k)
        for node in self.nodes:
            with node.client() as client:
                client.call("FLUSHALL")
                batch = by_port.get(node.port, [])
                for i in range(0, len(batch), 2000):
                    for r in client.pipeline([("SET", k, VALUE) for k in batch[i:i + 2000]]):
                        if isinstance(r, ReplyError):
                            raise r
        self.keys = keys
        self.direction = (self.nodes[0], self.nodes[1])

    def reshard(self):
        """One reshard of RESHARD_SLOTS slots under the client load; flips the direction."""
        src, dst = self.direction
        with dst.client() as client:
            before = client.call("DBSIZE")
        load = Load(self.nodes[0].port, self.keys)
        load.start()
        started = time.monotonic()
        out = subprocess.run(
            ["redis-cli", "--cluster", "reshard", "127.0.0.1:%d" % src.port,
             "--cluster-from", self.node_id(src), "--cluster-to", self.node_id(dst),
             "--cluster-slots", str(RESHARD_SLOTS), "--cluster-yes",
             "--cluster-pipeline", "10"],
            capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
        ended = time.monotonic()
        latencies, errors = load.stop(started, ended)
        if out.returncode != 0:
            raise ToolError("redis-cli --cluster reshard failed (rc %d): %s" % (
                out.returncode, (out.stdout + out.stderr).strip()[-300:]))
        with dst.client() as client:
            moved = client.call("DBSIZE") - before
        self.direction = (dst, src)
        latencies.sort()
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000.0
        p50 = latencies[len(latencies) // 2] * 1000.0
        print("    reshard: %d keys in %.2f s, %d requests during it (p50 %.3f ms, p99 %.3f "
              "ms), %d errors" % (moved, ended - started, len(latencies), p50, p99, errors),
              flush=True)
        return {"keys": measure(moved / (ended - started)), "p99": measure(p99, p50, p99)}

    @property
    def ports(self):
        return [n.port for n in self.nodes]

    def discard(self):
        for node in self.nodes:
            node.discard()


class Load:
    """One thread of redis-py RedisCluster requests (GET or SET of a random key, half and
    half), each timed; stop() returns the latencies of those issued in [started, ended]."""

    def __init__(self, port, keys):
        from redis.cluster import RedisCluster
        self.client = RedisCluster(host="127.0.0.1", port=port)
        self.keys = keys
        self.samples = []
        self.errors = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self):
        self.thread.start()
        time.sleep(0.2)  # connections to every master opened before the reshard starts

    def run(self):
        rng = random.Random(23)
        clock = time.monotonic
        while not self.done.is_set():
            key = "k:%d" % rng.randrange(self.keys)
            t0 = clock()
            try:
                if rng.random() < 0.5:
                    self.client.get(key)
                else:
                    self.client.set(key, VALUE)
            except Exception:  # counted: a reshard must not make requests fail
                self.errors += 1
            self.samples.append((t0, clock() - t0))

    def stop(self, started, ended):
        self.done.set()
        self.thread.join()
        self.client.close()
        return [d for t, d in self.samples if started <= t <= ended], self.errors


def port_free(port):
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def info_of(text):
    text = text.decode() if isinstance(text, bytes) else text
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def clusters(ctx, contestants):
    """[(label, Cluster | "n/a (reason)")], one per contestant."""
    return each_started(contestants, lambda c: Cluster(ctx, c), "cluster",
                        (StartError, ReplyError, OSError, ToolError))


def run(ctx):
    contestants = [ctx.blinkdb, ctx.redis]
    labels = [c.label for c in contestants]
    section = "3 masters, redis-benchmark --cluster (persistence off)"
    with clusters(ctx, contestants) as started:
        for pipeline in (1, 16):
            requests = ctx.size("cluster_requests_p%d" % pipeline)

            def fn(cluster, pipeline=pipeline, requests=requests):
                return redis_benchmark(cluster.ports[0], clients=50, requests=requests,
                                       pipeline=pipeline, tests=TESTS, keyspace=1_000_000,
                                       cluster=True, cpu_ports=cluster.ports)

            table = alternate([(label, c if isinstance(c, str) else (lambda c=c: fn(c)))
                               for label, c in started], ctx.rounds, ctx.warmups)
            for test in TESTS:
                ctx.results.add(GROUP, section, "%s c50 P%d, 3 masters" % (test, pipeline),
                                "req/s", "higher", ctx.redis.label, pick(table, test, labels),
                                {"test": test, "clients": 50, "pipeline": pipeline, "nodes": NODES,
                                 "requests": requests})
        keys = ctx.size("reshard_keys")
        reshard_section = ("3 masters, redis-cli --cluster reshard of %d slots (%d keys of "
                           "100 bytes in all) under a RedisCluster GET/SET load" % (
                               RESHARD_SLOTS, keys))
        for label, cluster in started:
            if not isinstance(cluster, str):
                cluster.fill(keys)
        table = alternate([(label, c if isinstance(c, str) else c.reshard)
                           for label, c in started], ctx.rounds, ctx.warmups)
        params = {"keys": keys, "slots": RESHARD_SLOTS, "pipeline": 10, "nodes": NODES}
        ctx.results.add(GROUP, reshard_section, "keys moved per second", "keys/s", "higher",
                        ctx.redis.label, pick(table, "keys", labels), params)
        ctx.results.add(GROUP, reshard_section, "client p99 during the reshard", "ms", "lower",
                        ctx.redis.label, pick(table, "p99", labels), params)
        for label, cluster in started:
            if not isinstance(cluster, str):
                keys = 0
                for node in cluster.nodes:
                    with node.client() as client:
                        keys += client.call("DBSIZE")
                print("  %s: %d keys over %d nodes" % (label, keys, NODES), flush=True)
