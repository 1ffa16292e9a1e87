#!/usr/bin/env bash
# Runs the client-library compatibility matrix: installs each suite's pinned packages from its
# registry (Python's into the project's venv, target/venv; npm's into node/node_modules; Go's,
# Cargo's and Maven's into their per-user caches; nothing system-wide), runs the five suites one
# after another against one server, and prints a result table (plain and markdown) and a closing
# "N passed, N failed" line. Exits non-zero if any suite fails.
#
# Env (see server.sh for the server ones):
#   BLINKDB_SERVER       blinkdb (default) or redis: which server server.sh starts
#   BLINKDB_HOST/PORT    server address (default 127.0.0.1:17400)
#   BLINKDB_TLS_PORT     the server's TLS port (default: port + 1), its files in BLINKDB_TLS_DIR
#                        (ca.crt, client.crt, client.key; server.sh makes them)
#   BLINKDB_RESTART_CMD  if set, the caller runs the server and this command restarts it;
#                        if unset, run.sh starts the server with server.sh and stops it at the end
#   BLINKDB_SUITES       which suites to run (default "python rust go node java")
set -uo pipefail

clients_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export BLINKDB_HOST="${BLINKDB_HOST:-127.0.0.1}"
export BLINKDB_PORT="${BLINKDB_PORT:-17400}"
export BLINKDB_TLS_PORT="${BLINKDB_TLS_PORT:-$((BLINKDB_PORT + 1))}"
suites="${BLINKDB_SUITES:-python rust go node java}"
work_dir="$(mktemp -d /tmp/blinkdb-clients-run.XXXXXX)"
managed_server=0

cleanup() {
    if [ "$managed_server" = 1 ]; then
        "$clients_dir/server.sh" stop
        rm -rf "${BLINKDB_DATA_DIR:?}"
    fi
    rm -rf "$work_dir"
}
trap cleanup EXIT

if [ -z "${BLINKDB_RESTART_CMD:-}" ]; then
    export BLINKDB_DATA_DIR="${BLINKDB_DATA_DIR:-$work_dir/data}"
    export BLINKDB_TLS_DIR="${BLINKDB_TLS_DIR:-$work_dir/tls}"
    export BLINKDB_RESTART_CMD="$clients_dir/server.sh restart"
    managed_server=1
    "$clients_dir/server.sh" start || exit 1
fi
echo "client matrix against ${BLINKDB_SERVER:-blinkdb} at $BLINKDB_HOST:$BLINKDB_PORT (restart: $BLINKDB_RESTART_CMD)"

# Each suite_* function installs, runs, and sets: library, version, passed, failed.
suite_python() {
    library="redis-py (RESP3 default, protocol=2, asyncio)"
    # The project's virtual environment (target/venv), never the system's site-packages.
    local python
    python="$("$clients_dir/../venv.sh" -r python/requirements.txt)" || return 1
    version="$("$python" -c 'import redis; print(redis.__version__)')"
    (cd python && "$python" -m pytest -p no:cacheprovider -v)
}

suite_rust() {
    library="redis-rs (sync, tokio)"
    version="$(grep -A1 '^name = "redis"$' rust/Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')"
    (cd rust && cargo test --locked --no-fail-fast)
}

suite_go() {
    library="go-redis v9"
    (cd go && go mod download) || return 1
    version="$(cd go && go list -m -f '{{.Version}}' github.com/redis/go-redis/v9)"
    (cd go && go test -count=1 -v ./...)
}

suite_node() {
    library="ioredis"
    (cd node && npm ci --no-audit --no-fund) || return 1
    version="$(cd node && node -p 'require("ioredis/package.json").version')"
    (cd node && node --test)
}

suite_java() {
    library="Jedis"
    version="$(sed -n '/<artifactId>jedis<\/artifactId>/{n;s/.*<version>\(.*\)<\/version>.*/\1/p}' java/pom.xml)"
    (cd java && mvn -B test)
}

# Reads the runner's own summary lines from a suite's log; prints "passed failed".
count_results() {
    local suite="$1" log="$2"
    case "$suite" in
    python)
        local line
        line="$(grep -E '^=+ .* in [0-9.]+s' "$log" | tail -n1)"
        echo "$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+' || echo 0)" \
            "$(($(grep -oE '[0-9]+ (failed|error)' <<<"$line" | grep -oE '[0-9]+' | paste -sd+ - || true) + 0))"
        ;;
    rust)
        grep -E '^test result:' "$log" |
            sed -E 's/.* ([0-9]+) passed; ([0-9]+) failed.*/\1 \2/' |
            awk '{p += $1; f += $2} END {print p + 0, f + 0}'
        ;;
    go)
        echo "$(grep -c -- '^--- PASS' "$log")" "$(grep -c -- '^--- FAIL' "$log")"
        ;;
    node)
        echo "$(sed -n 's/^# pass //p' "$log" | tail -n1)" "$(sed -n 's/^# fail //p' "$log" | tail -n1)"
        ;;
    java)
        grep -E '^\[[A-Z]+\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' "$log" |
            tail -n1 |
            sed -E 's/.*Tests run: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+), Skipped: ([0-9]+)/\1 \2 \3 \4/' |
            awk '{print $1 - $2 - $3 - $4, $2 + $3}'
        ;;
    esac
}

rows=()
total_passed=0
total_failed=0
failed_suites=0
cd "$clients_dir" || exit 1
for suite in $suites; do
    library="$suite" version="?"
    log="$work_dir/$suite.log"
    echo
    echo "=== $suite ==="
    start=$(date +%s)
    "suite_$suite" > >(tee "$log") 2>&1
    status=$?
    wait
    seconds=$(($(date +%s) - start))
    read -r passed failed < <(count_results "$suite" "$log")
    passed="${passed:-0}" failed="${failed:-0}"
    # A suite that failed before its runner reported anything still counts as a failure.
    if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
    if [ "$status" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]; then
        result=PASS
    else
        result=FAIL
        failed_suites=$((failed_suites + 1))
    fi
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    rows+=("$library|$version|$passed|$failed|$result|${seconds}s")
done

echo
echo "Client compatibility against ${BLINKDB_SERVER:-blinkdb} at $BLINKDB_HOST:$BLINKDB_PORT"
echo
echo "| library | version | tests passed | tests failed | result | time |"
echo "|---|---|---|---|---|---|"
for row in "${rows[@]}"; do
    echo "| ${row//|/ | } |"
done
echo
echo "matrix: $total_passed passed, $total_failed failed"
[ "$failed_suites" -eq 0 ]
