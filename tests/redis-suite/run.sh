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
# SUITE_TLS=1 runs everything over TLS (see below).
#
# Usage: tests/redis-suite/run.sh [-j JOBS] [--with-redis] [FILE ...]   (default: every file, 2 jobs)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
here=$suite_here
root=$suite_root
work=$suite_work
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

# SUITE_SOURCE=<dir> (e.g. target/peers/redis-8.0.2) runs that tree's files and its
# redis-server instead of 7.0.15's (Redis 8.0's unit/type/hash-field-expire, issue 43).
if [ -n "${SUITE_SOURCE:-}" ]; then
    src=$(cd "$root" && realpath "$SUITE_SOURCE") || exit 1
    redis=$src/src/redis-server
else
    src=$(fetch_source) || { echo "!!!! could not get Redis 7.0.15's source package"; exit 1; }
fi

# SUITE_TLS=1: the servers listen on TLS only (port 0, tls-port) with Redis's
# test certificates (utils/gen-test-certs.sh, made once in the source tree), and
# the suite connects with --tls (Debian's tcl-tls).
tls=${SUITE_TLS:-0}
tls_dir=$src/tests/tls
if [ "$tls" = 1 ] && [ ! -f "$tls_dir/client.key" ]; then
    # An empty redis.dh makes the script skip DH parameters (half a minute; unused).
    mkdir -p "$tls_dir" && touch "$tls_dir/redis.dh"
    (cd "$src" && bash utils/gen-test-certs.sh >/dev/null 2>&1) || { echo "!!!! gen-test-certs.sh failed"; exit 1; }
fi
export tls tls_dir

start_server() { # kind port dir [option...]
    local kind=$1 port=$2 dir=$3
    shift 3
    mkdir -p "$dir"
    local bin=$blinkdb listen=(--port "$port")
    [ "$kind" = blinkdb ] || bin=$redis
    [ "$tls" = 1 ] && listen=(--port 0 --tls-port "$port" --tls-cert-file "$tls_dir/server.crt"
        --tls-key-file "$tls_dir/server.key" --tls-ca-cert-file "$tls_dir/ca.crt"
        --tls-client-cert-file "$tls_dir/client.crt" --tls-client-key-file "$tls_dir/client.key")
    "$bin" "${listen[@]}" --dir "$dir" --save '' --appendonly no "$@" >"$dir/server.log" 2>&1 &
    echo $!
}

# redis-cli's and the suite's flags for the servers' port.
client_tls() {
    [ "$tls" = 1 ] && echo --tls --cert "$tls_dir/client.crt" --key "$tls_dir/client.key" --cacert "$tls_dir/ca.crt"
}
helper_tls() {
    [ "$tls" = 1 ] && echo --tls
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
    # A file whose servers get --enable-debug-command also runs its needs:debug
    # tests (DEBUG RELOAD, DEBUG OBJECT...).
    local debug_tags=(--tags -needs:debug)
    [[ " ${opts[*]} " == *" --enable-debug-command "* ]] && debug_tags=()
    for _ in $(seq 100); do redis-cli $(client_tls) -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    (cd "$src" && timeout "${SUITE_FILE_TIMEOUT:-180}" tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$port" $(helper_tls) --single "$file" \
        --singledb --ignore-encoding --ignore-digest --durable "${debug_tags[@]}" --tags -needs:repl \
        --clients 1 --baseport $((13000 + (port - 11000) * 10 % 19000)) --portcount 40 >"$dir/test.log" 2>&1)
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    count_results "$kind" "$file" "$dir/test.log" $((SECONDS - t0))
}
export -f run_one start_server count_results client_tls helper_tls
export work blinkdb redis src with_redis here

files=("$@")
[ ${#files[@]} -eq 0 ] && mapfile -t files < <(list_files "$here/files.tsv")

# Each file gets its own ports, all below the ephemeral range (32768-60999) that
# outgoing connections take theirs from; both kinds of a file run in the same job.
i=0
for f in "${files[@]}"; do
    i=$((i + 1))
    printf '%s %s\n' "$f" $((${SUITE_PORT_BASE:-11000} + i * 10))
done | xargs -P "$jobs" -L 1 bash -c 'run_one blinkdb "$0" "$1"; [ "$with_redis" = 0 ] || run_one redis "$0" $(($1 + 1))' \
    >"$work/results.tsv"

report "$work/results.tsv" "$here/files.tsv" "${files[@]}"
status=$?
echo "logs: $work/run/<kind>/<file>/test.log"
exit $status
