"""`tls`: clients over TLS (issue 41), BlinkDB (rustls) against redis-server (OpenSSL) in one
run, each server with a plain port and a `tls-port` and the same certificates (made here with
openssl: a CA and a server certificate it signed; clients are not asked for one). Cells:
redis-benchmark --tls SET and GET at c50 P1 and P16, and connection churn: redis-benchmark
-k 0, which opens a new connection (so a full handshake, no session resumption) for every
request, so the cell measures handshakes per second. Server CPU per request comes with every
cell, as in the other groups.

At -c 50 -P 1 the load tool is the bottleneck on 2 cores: redis-benchmark spends ~21 us of CPU
per request over TLS (its own OpenSSL), more than either server (16-18 us), so throughput there
follows the tool's CPU per request, which the server changes only through how the two wake each
other (docs/design.md, "TLS (issue 41)"). A note after each cell gives that CPU per request
against BlinkDB over against Redis, as the median of the rounds' ratios."""
import os
import statistics
import subprocess

from ..cells import alternate, median_interval, pick
from ..context import running
from ..runners import redis_benchmark

GROUP = "tls"
SECTION = "TLS, persistence off"


def make_certs(root):
    """A CA and a server certificate it signed, under `root`/tls; returns the directory."""
    d = os.path.join(root, "tls")
    os.makedirs(d, exist_ok=True)

    def ssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    ssl("req", "-x509", "-new", "-nodes", "-sha256", "-newkey", "rsa:2048", "-keyout", "ca.key",
        "-days", "2", "-subj", "/CN=bench CA", "-out", "ca.crt")
    ssl("req", "-new", "-nodes", "-sha256", "-newkey", "rsa:2048", "-keyout", "server.key",
        "-subj", "/CN=bench server", "-out", "server.csr")
    ssl("x509", "-req", "-sha256", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-out", "server.crt")
    return d


def server_flags(certs, tls_port):
    return ["--tls-port", str(tls_port), "--tls-cert-file", f"{certs}/server.crt",
            "--tls-key-file", f"{certs}/server.key", "--tls-ca-cert-file", f"{certs}/ca.crt",
            "--tls-auth-clients", "no"]


def run(ctx):
    certs = make_certs(ctx.root)
    tls_ports = {c.label: ctx.ports.take() for c in (ctx.blinkdb, ctx.redis)}
    extra = {label: server_flags(certs, port) for label, port in tls_ports.items()}
    # Persistence off on both sides: the Redis peer gets --save '' (servers.py); BlinkDB's
    # default save points (60 s and 10,000 changes) could snapshot during the SET cells.
    extra[ctx.blinkdb.label] += ["--save", ""]
    client_tls = ["--tls", "--cacert", f"{certs}/ca.crt"]
    labels = [c.label for c in (ctx.blinkdb, ctx.redis)]
    with running(ctx, [ctx.blinkdb, ctx.redis], extra=extra) as servers:
        def cell(workload, test, pipeline, requests, options=()):
            table = alternate(
                [(label, server if isinstance(server, str) else
                  (lambda server=server: redis_benchmark(
                      tls_ports[server.label], clients=50, requests=requests, pipeline=pipeline,
                      tests=[test], cpu_ports=server.port, options=client_tls + list(options))))
                 for label, server in servers],
                ctx.rounds, ctx.warmups)
            name = next((m for m in table if m != "*"), test.upper())
            added = ctx.results.add(GROUP, SECTION, workload, "req/s", "higher", ctx.redis.label,
                                    pick(table, name, labels),
                                    {"test": name, "clients": 50, "pipeline": pipeline,
                                     "keepalive": not options})
            note_client_cpu(ctx, workload, added)

        for pipeline in (1, 16):
            for test in ("set", "get"):
                cell("%s c50 P%d" % (test.upper(), pipeline), test, pipeline,
                     ctx.size("tls_requests_p%d" % pipeline))
        # A new connection and handshake per request.
        cell("SET c50 P1, a new connection each (-k 0)", "set", 1,
             ctx.size("tls_churn_requests"), ["-k", "0"])


def note_client_cpu(ctx, workload, cell):
    """A note: redis-benchmark's CPU per request against BlinkDB over against Redis (> 1: the
    tool works harder against BlinkDB), median of the rounds' ratios with its interval."""
    mine = cell["results"].get(ctx.blinkdb.label, {}).get("client_cpu_us_runs") or []
    peer = cell["results"].get(ctx.redis.label, {}).get("client_cpu_us_runs") or []
    rs = sorted(a / b for a, b in zip(mine, peer) if a and b)
    if len(rs) != len(mine) or len(rs) != len(peer) or len(rs) < 5:
        return
    text = "%s: redis-benchmark's CPU per request, against BlinkDB / against Redis: %.3f" % (
        workload, statistics.median(rs))
    if len(rs) >= 9:
        low, _ = median_interval(len(rs))
        text += " [%.2f, %.2f]" % (rs[low], rs[-1 - low])
    text += " (%.1f / %.1f us)" % (statistics.median(mine), statistics.median(peer))
    ctx.results.note(GROUP, text)
