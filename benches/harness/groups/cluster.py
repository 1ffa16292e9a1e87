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
under a second only measured the timer."""
import socket
import subprocess
import time

from ..cells import alternate, pick
from ..context import each_started
from ..resp import ReplyError
from ..runners import ToolError, redis_benchmark
from ..servers import Server, StartError

GROUP = "cluster"
NODES = 3
TESTS = ["SET", "GET"]


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

    @property
    def ports(self):
        return [n.port for n in self.nodes]

    def discard(self):
        for node in self.nodes:
            node.discard()


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
        for label, cluster in started:
            if not isinstance(cluster, str):
                keys = 0
                for node in cluster.nodes:
                    with node.client() as client:
                        keys += client.call("DBSIZE")
                print("  %s: %d keys over %d nodes" % (label, keys, NODES), flush=True)
