#!/usr/bin/env bash
# Redis 7.0.15's own test suite in its normal "own-server" mode: the TCL
# harness starts the servers itself, from a config it writes (tests/assets/
# default.conf plus each test's overrides), so tests tagged external:skip
# run too. In copies of the source tree, src/redis-server is BlinkDB (or,
# for the baseline, Debian's redis-server 7.0.15) and redis-cli,
# redis-benchmark, redis-check-aof and redis-check-rdb are Debian's.
#
# Files run in JOBS lanes (default 2) side by side; each lane has its own tree
# copy per server kind (target/redis-suite/own-<kind>-<lane>: the harness
# empties its tests/tmp when it starts) and its own range of ports,
# SUITE_OWN_BASEPORT (21000) + (lane*2 + kind) * SUITE_OWN_PORTCOUNT (100),
# below the ephemeral range: the helper's test server in its first 32, the
# servers it starts in the rest. A lane runs its files one after the other,
# BlinkDB first, then (with --with-redis) redis-server. A file's run is cut
# after SUITE_FILE_TIMEOUT seconds (300), and every server it started is
# stopped with it (the harness runs in its own process group).
#
# Counts, floors and the table are run.sh's (lib.sh); the list is
# tests/redis-suite/own-server.tsv (column 4: extra test_helper arguments;
# --tls there makes the tree's tests/tls certificates first; column 5: extra
# arguments for BlinkDB's runs only).
# Results go to target/redis-suite/own-results.tsv, logs to
# target/redis-suite/own-run/<kind>/<file>.log. Exits 1 when BlinkDB passes
# fewer tests of a file than its floor.
#
# SUITE_SOURCE=<a Redis source tree with its tests/ dir> runs that tree's
# files instead, e.g. SUITE_SOURCE=target/peers/redis-8.0.2 (built by
# tests/peers/build.sh redis) for Redis 8.0.2's unit/type/hash-field-expire:
# the list is then own-server-<tree>.tsv (own-server-redis-8.0.2.tsv), the
# lanes' copies own-<tree>-<kind>-<lane>, and --with-redis runs the tree's
# own src/redis-server.
#
# Usage: tests/redis-suite/own-server.sh [-j JOBS] [--with-redis] [FILE ...]
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
jobs=2
with_redis=0
while [ $# -gt 0 ]; do
    case $1 in
        -j) jobs=$2; shift 2 ;;
        --with-redis) with_redis=1; shift ;;
        *) break ;;
    esac
done
blinkdb=${BLINKDB_BIN:-$suite_root/target/release/blinkdb}
[ -x "$blinkdb" ] || { echo "!!!! no BlinkDB binary at $blinkdb (set BLINKDB_BIN)"; exit 1; }
if [ -n "${SUITE_SOURCE:-}" ]; then
    src=$(cd "$SUITE_SOURCE" 2>/dev/null && pwd) && [ -f "$src/tests/test_helper.tcl" ] ||
        { echo "!!!! SUITE_SOURCE=$SUITE_SOURCE holds no tests/test_helper.tcl"; exit 1; }
    tree_prefix=own-$(basename "$src")-
    list=$suite_here/own-server-$(basename "$src").tsv
    redis_server=$src/src/redis-server
else
    src=$(fetch_source) || { echo "!!!! could not get Redis 7.0.15's source package"; exit 1; }
    tree_prefix=own-
    list=$suite_here/own-server.tsv
    redis_server=$(command -v redis-server)
fi
[ -f "$list" ] || { echo "!!!! no list $list"; exit 1; }

# A lane's tree for one server kind: a copy of the source (made once) whose
# src/ links to the binaries under test.
tree() { # kind lane
    local dir=$suite_work/$tree_prefix$1-$2 t
    [ -d "$dir" ] || { mkdir -p "$suite_work" && cp -a "$src" "$dir"; } || return 1
    # unit/tls-without-cbc: unit/tls without its two tests that set CBC suites
    # (tls-ciphers, tls-prefer-server-ciphers), which rustls does not have: in
    # unit/tls the first one's refusal ends the file before the three after it.
    if [ -f "$dir/tests/unit/tls.tcl" ] && [ ! -f "$dir/tests/unit/tls-without-cbc.tcl" ]; then
        awk '!skip && /test \{TLS: Verify tls-(ciphers|prefer-server-ciphers) behaves as expected\}/ {skip = 1; depth = 0}
             skip { n = split($0, c, ""); for (i = 1; i <= n; i++) depth += (c[i] == "{") - (c[i] == "}")
                    if (depth <= 0) skip = 0; next }
             { print }' "$dir/tests/unit/tls.tcl" >"$dir/tests/unit/tls-without-cbc.tcl"
    fi
    for t in redis-cli redis-benchmark redis-check-aof redis-check-rdb; do
        ln -sfn "/usr/bin/$t" "$dir/src/$t"
    done
    if [ "$1" = blinkdb ]; then
        ln -sfn "$blinkdb" "$dir/src/redis-server"
    else
        ln -sfn "$redis_server" "$dir/src/redis-server"
    fi
    echo "$dir"
}

# One file against one kind in a lane's tree: prints run.sh's row.
run_own() { # kind lane file
    local kind=$1 lane=$2 file=$3 dir extra own pid t0=$SECONDS kind_index=0 waited=0
    [ "$kind" = redis ] && kind_index=1
    # The helper's own test server takes a port from the 32 below --baseport.
    local span=${SUITE_OWN_PORTCOUNT:-100}
    local base=$((${SUITE_OWN_BASEPORT:-21000} + (lane * 2 + kind_index) * span + 32))
    local log="$suite_work/own-run/$kind/${file//\//_}.log"
    mkdir -p "$(dirname "$log")"
    dir=$(tree "$kind" "$lane") || { echo "!!!! could not make the $kind tree" >&2; return 1; }
    read -ra extra <<<"$(awk -F'\t' -v f="$file" '$1==f {print $4}' "$list")"
    # Column 5: arguments for BlinkDB's runs only (its own options, which
    # redis-server would refuse), e.g. --config aof-batch-checksums no.
    if [ "$kind" = blinkdb ]; then
        read -ra own <<<"$(awk -F'\t' -v f="$file" '$1==f {print $5}' "$list")"
        extra+=("${own[@]}")
    fi
    # --tls (unit/tls): the harness starts its servers with Redis's test
    # certificates, made once per tree by gen-test-certs.sh. The harness
    # always names redis.dh, which redis-server must read (BlinkDB refuses
    # tls-dh-params-file: docs/compatibility.md): RFC 7919's ffdhe2048 group,
    # written at once, where the script would generate parameters for minutes.
    if [[ " ${extra[*]} " == *" --tls "* ]] && [ ! -s "$dir/tests/tls/redis.dh" ]; then
        rm -rf "$dir/tests/tls" && mkdir -p "$dir/tests/tls"
        (cd "$dir" && openssl genpkey -genparam -algorithm DH -pkeyopt group:ffdhe2048 \
            -out tests/tls/redis.dh && bash utils/gen-test-certs.sh >/dev/null 2>&1) ||
            { echo "!!!! gen-test-certs.sh failed in $dir" >&2; return 1; }
    fi
    # setsid: the harness and every server it starts share one process group,
    # stopped as a whole when the file ends or times out.
    (cd "$dir" && exec setsid tclsh tests/test_helper.tcl --single "$file" --clients 1 \
        --ignore-encoding --ignore-digest --baseport "$base" --portcount $((span - 32)) "${extra[@]}" \
        >"$log" 2>&1) &
    pid=$!
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "${SUITE_FILE_TIMEOUT:-300}" ]; do
        sleep 1
        waited=$((waited + 1))
    done
    kill -- -"$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [ "$waited" -ge "${SUITE_FILE_TIMEOUT:-300}" ] && echo "[TIMEOUT]: after ${waited} s" >>"$log"
    count_results "$kind" "$file" "$log" $((SECONDS - t0))
}

files=("$@")
# Without names, every listed file but unit/tls, whose third test ends the file
# on BlinkDB by design (CBC suites); unit/tls-without-cbc runs the rest of it.
[ ${#files[@]} -eq 0 ] &&
    mapfile -t files < <(grep -v '^#' "$list" | awk -F'\t' '$1 != "" && $1 != "unit/tls" {print $1}')

results=$suite_work/own-results.tsv
: >"$results"
# Lane l takes files l, l+JOBS, l+2*JOBS, ...
for ((lane = 0; lane < jobs; lane++)); do
    (
        for ((i = lane; i < ${#files[@]}; i += jobs)); do
            run_own blinkdb "$lane" "${files[i]}"
            [ "$with_redis" = 0 ] || run_own redis "$lane" "${files[i]}"
        done >"$results.$lane"
    ) &
done
wait
cat "$results".* >"$results" && rm -f "$results".*

report "$results" "$list" "${files[@]}"
status=$?
echo "logs: $suite_work/own-run/<kind>/<file>.log"
exit $status
