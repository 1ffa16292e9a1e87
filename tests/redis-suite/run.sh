#!/usr/bin/env bash
# Redis 7.0.15's own test suite, in external-server mode, against BlinkDB and
# against redis-server 7 run the same way. The source comes from Debian's
# source package (a deb-src entry is added when none is configured) and is
# unpacked under target/redis-suite; nothing of it is committed.
#
# For every file in tests/redis-suite/files.tsv it starts a fresh BlinkDB on a
# loopback port, runs the file, and counts [ok] and [err] lines and whether the
# run ended early (an exception, or the per-file timeout SUITE_FILE_TIMEOUT,
# 180 s; SUITE_PORT_BASE, default 11000, moves its ports for runs side by side).
# With --with-redis it runs redis-server the same way too; otherwise it
# shows the redis-server counts recorded in files.tsv. Results go to
# target/redis-suite/results.tsv. A file may name server options in
# files.tsv's fourth column; both servers get them. The stage fails when
# BlinkDB passes fewer tests of a file than the floor recorded in files.tsv
# (a regression).
#
# Usage: tests/redis-suite/run.sh [-j JOBS] [--with-redis] [FILE ...]   (default: every file, 2 jobs)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$root/target/redis-suite
jobs=2
with_redis=0
while [ $# -gt 0 ]; do
    case $1 in
        -j) jobs=$2; shift 2 ;;
        --with-redis) with_redis=1; shift ;;
        *) break ;;
    esac
done
mkdir -p "$work"
blinkdb=${BLINKDB_BIN:-$root/target/release/blinkdb}
redis=$(command -v redis-server)

fetch_source() {
    local src
    src=$(ls -d "$work"/redis-7.0.15 2>/dev/null) && { echo "$src"; return 0; }
    if ! grep -rqs '^Types: deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
            >/etc/apt/sources.list.d/blinkdb-deb-src.sources
        apt-get update -qq >&2
    fi
    (cd "$work" && apt-get source --download-only redis >&2 && dpkg-source -x redis_7.0.15*.dsc redis-7.0.15 >&2) ||
        return 1
    # Harmless now that FUNCTION FLUSH is served: a server without it must not fail every test's cleanup.
    sed -i 's/^\(\s*\)r function flush$/\1catch {r function flush}/' "$work/redis-7.0.15/tests/support/server.tcl"
    echo "$work/redis-7.0.15"
}

src=$(fetch_source) || { echo "!!!! could not get Redis 7.0.15's source package"; exit 1; }

start_server() { # kind port dir [option...]
    local kind=$1 port=$2 dir=$3
    shift 3
    mkdir -p "$dir"
    if [ "$kind" = blinkdb ]; then
        "$blinkdb" --port "$port" --dir "$dir" --save '' --appendonly no "$@" \
            >"$dir/server.log" 2>&1 &
    else
        "$redis" --port "$port" --dir "$dir" --save '' --appendonly no "$@" \
            >"$dir/server.log" 2>&1 &
    fi
    echo $!
}

# One file against one server kind: prints "kind file ok err exception seconds".
run_one() { # kind file port
    local kind=$1 file=$2 port=$3
    local dir="$work/run/$kind/${file//\//_}"
    rm -rf "$dir"
    local pid t0=$SECONDS opts
    # The file's server options (files.tsv's fourth column), given to both servers.
    read -ra opts <<<"$(awk -F'\t' -v f="$file" '$1==f {print $4}' "$here/files.tsv")"
    pid=$(start_server "$kind" "$port" "$dir" "${opts[@]}")
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    (cd "$src" && timeout "${SUITE_FILE_TIMEOUT:-180}" tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$port" --single "$file" \
        --singledb --ignore-encoding --ignore-digest --durable --tags -needs:debug --tags -needs:repl \
        --clients 1 --baseport $((13000 + (port - 11000) * 10 % 19000)) --portcount 40 >"$dir/test.log" 2>&1)
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    local ok err exc=no
    sed -i 's/\x1b\[[0-9;]*m//g' "$dir/test.log" # the helper colours its output even into a file
    ok=$(grep -c '^\[ok\]' "$dir/test.log")
    err=$(grep -c '^\[err\]' "$dir/test.log")
    grep -q '^\[exception\]\|Killing still running\|^\[TIMEOUT\]' "$dir/test.log" && exc=yes
    grep -q 'All tests passed\|The following tests failed' "$dir/test.log" || exc=yes
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$file" "$ok" "$err" "$exc" "$((SECONDS - t0))"
}
export -f run_one start_server
export work blinkdb redis src with_redis here

files=("$@")
[ ${#files[@]} -eq 0 ] && mapfile -t files < <(grep -v '^#' "$here/files.tsv" | cut -f1 | grep .)

# Each file gets its own ports, all below the ephemeral range (32768-60999) that
# outgoing connections take theirs from; both kinds of a file run in the same job.
i=0
for f in "${files[@]}"; do
    i=$((i + 1))
    printf '%s %s\n' "$f" $((${SUITE_PORT_BASE:-11000} + i * 10))
done | xargs -P "$jobs" -L 1 bash -c 'run_one blinkdb "$0" "$1"; [ "$with_redis" = 0 ] || run_one redis "$0" $(($1 + 1))' \
    >"$work/results.tsv"

status=0
printf '\n%-28s %14s %14s %6s\n' file "blinkdb ok/err" "redis ok" floor
for f in "${files[@]}"; do
    b=$(awk -F'\t' -v f="$f" '$1=="blinkdb" && $2==f' "$work/results.tsv")
    r=$(awk -F'\t' -v f="$f" '$1=="redis" && $2==f' "$work/results.tsv")
    floor=$(awk -F'\t' -v f="$f" '$1==f {print $2}' "$here/files.tsv")
    bok=$(cut -f3 <<<"$b"); berr=$(cut -f4 <<<"$b"); bexc=$(cut -f5 <<<"$b")
    if [ -n "$r" ]; then
        rok=$(cut -f3 <<<"$r"); rexc=$(cut -f5 <<<"$r")
    else
        rok="$(awk -F'\t' -v f="$f" '$1==f {print $3}' "$here/files.tsv") (recorded)"; rexc=no
    fi
    mark=""
    [ "$bexc" = yes ] && mark="$mark (blinkdb run ended early)"
    [ "$rexc" = yes ] && mark="$mark (redis run ended early)"
    if [ -z "$bok" ] || [ "${bok:-0}" -lt "${floor:-0}" ]; then
        mark="$mark  !!!! below the floor"
        status=1
    fi
    printf '%-28s %14s %14s %6s%s\n' "$f" "${bok:-?}/${berr:-?}" "${rok:-?}" "${floor:-0}" "$mark"
done
echo "logs: $work/run/<kind>/<file>/test.log"
exit $status
