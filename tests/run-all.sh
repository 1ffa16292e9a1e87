#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need
# (Debian packages and podman system-wide; Python packages into the virtual
# environment target/venv, made by tests/venv.sh), then runs, in order:
#   1. cargo fmt --check, the server crate's import layers (tools/modgraph.py)
#      and clippy -D warnings
#   2. cargo test (unit tests, engine scenario tests incl. AOF and kernel BPF)
#   3. the black-box integration suites against the ci-profile binary (three
#      pytest-xdist workers, each running whole files on its own ports)
#   4. the client-library matrix (redis-py, redis-rs, go-redis, ioredis, Jedis)
#   5. the Docker image test (podman + runc)
#   6. Redis 7.0.15's own test suite against BlinkDB (tests/redis-suite), in
#      external-server mode, then in own-server mode (own-server.sh)
#   7. the fuzz targets, each from its committed corpus for a bounded time
#      (tests/fuzz.sh: plain cargo on stable, no cargo-fuzz or nightly)
# Before the stages, redis-server 8.0.2 and valkey-server 8.1.1 (the peers of
# tests/integration/test_peer_*.py) start building in the background; the docker
# stage's static binary builds in the background, at low priority, while
# integration and clients run, and the fuzz targets likewise while redis-suite runs.
# The server binary is the one `cargo test` builds in the unit stage (build_server).
# Every stage runs even if an earlier one failed; the script exits non-zero if
# any failed and ends with a "N passed, N failed" line counting stages. Each
# stage's "stage X: ok (N s)" line is followed by the CPU seconds it used
# (its processes and the background build it waited for); the time budget per
# stage is in tests/README.md.
# Everything builds with the `ci` Cargo profile (release optimisation without LTO
# or debug info: half the CPU time of the release build) and tests target/ci/blinkdb;
# the Docker stage builds its static binary with that profile too.
# Usage: tests/run-all.sh [--only STAGE ...]   (stages: lint unit integration clients docker redis-suite fuzz)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
export BLINKDB_BIN=$root/target/ci/blinkdb
only=("$@")
[ "${only[0]:-}" = "--only" ] && only=("${only[@]:1}")

want() { [ ${#only[@]} -eq 0 ] || printf '%s\n' "${only[@]}" | grep -qx "$1"; }
say() { printf '\n==== %s ====\n' "$*"; }

install_debian_packages() {
    local pkgs=(redis-server redis-tools bpftool podman runc libcap2-bin iproute2 util-linux procps tcl tcl-tls openssl dpkg-dev make gcc g++)
    local missing=()
    for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing Debian packages: ${missing[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    # redis-server's package starts a system instance on 6379; the tests use their own.
    systemctl stop redis-server >/dev/null 2>&1 || true
}

# Sets $python to the venv's interpreter, which runs the Python suites.
install_python_packages() {
    say "installing Python packages into the virtual environment"
    python=$(tests/venv.sh -r tests/integration/requirements.txt) ||
        { echo "!!!! could not set up the Python virtual environment"; python=false; }
}

mount_bpffs() {
    if [ "$(id -u)" = 0 ] && ! mountpoint -q /sys/fs/bpf; then
        mount -t bpf bpf /sys/fs/bpf 2>/dev/null ||
            echo "!!!! could not mount bpffs at /sys/fs/bpf: kernel filter tests will report SKIPPED"
    fi
}

# redis-server 8.0.2 and valkey-server 8.1.1, the newer peers of the integration
# tests (tests/peers/build.sh), build in the background while lint and unit run;
# the tests that need one wait for its build (a lock file), or build it.
peer_build=
start_peer_build() {
    want integration || return 0
    mkdir -p target/peers
    say "building the Redis 8.0.2 and valkey 8.1.1 peers in the background (target/peers/*.log)"
    tests/peers/build.sh all >target/peers/background.log 2>&1 &
    peer_build=$!
}

# Sets $cpu to the user + system seconds of the children this shell has waited
# for. `times` must run in this shell: in a pipe or $(...) it would report the
# subshell's children, none.
cpu_file=$(mktemp)
trap 'rm -f "$cpu_file"' EXIT
cpu_now() {
    times >"$cpu_file"
    cpu=$(awk 'NR == 2 {split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2]}' "$cpu_file")
}

passed=0
failed=0
failed_stages=()
stage() {
    local name=$1
    shift
    want "$name" || return 0
    say "stage $name"
    local t0=$SECONDS c0
    cpu_now
    c0=$cpu
    if "$@"; then
        passed=$((passed + 1))
        echo "stage $name: ok ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1))
        failed_stages+=("$name")
        echo "stage $name: FAILED ($((SECONDS - t0)) s)"
    fi
    cpu_now
    echo "stage $name: $((cpu - c0)) s CPU"
}

lint() {
    # The server crate's layers (docs/design.md, "Layers"): protocol and config
    # in no import cycle, and the largest cycle no larger than reached so far
    # (issue 39 brings it to 8).
    cargo fmt --all -- --check &&
        python3 tools/modgraph.py --acyclic protocol config algo --max-cycle 6 &&
        cargo clippy --profile ci --all-targets -- -D warnings
}

unit() {
    cargo test --profile ci --workspace
}

# The binary the black-box stages test, target/ci/blinkdb, as `cargo test --workspace`
# builds it for the server's integration test: with the features of the whole workspace
# and its dev-dependencies unified. `cargo build -p blinkdb-server` resolves fewer
# (rand without small_rng, serde_core without alloc, ...: the benches crate and the
# dev-dependencies are not in its graph) and so compiled 34 crates again, the server's
# own among them, after `unit` had built them once. After `unit` this only finds
# everything up to date; it runs once per run-all.sh (the background static build of
# the docker stage holds the build directory's lock while it runs).
server_built=0
build_server() {
    [ "$server_built" = 1 ] && return 0
    cargo test --profile ci --workspace --no-run && server_built=1
}

integration() {
    # test_failover.py drives ioredis (tests/clients/node) through Sentinel.
    (cd tests/clients/node && npm ci --no-audit --no-fund --silent) &&
        build_server && start_docker_build &&
        "$python" -m pytest tests/integration -q -p no:cacheprovider -rs -n 3 --dist loadfile \
            --durations=40
}

clients() {
    build_server && BLINKDB_SERVER=blinkdb tests/clients/run.sh
}

# The docker stage's static build (compile-bound, a separate build: static glibc for the
# x86_64-unknown-linux-gnu target) runs beside `integration` and `clients` at the lowest
# priority, as the fuzz build does beside redis-suite (see there): it takes the CPU their
# servers and harnesses leave while they wait. The docker stage waits for it; its own
# docker/build.sh run then finds the binary up to date. A failed background build is
# only reported: the stage's build.sh run builds again and fails in its place.
docker_build=
start_docker_build() {
    want docker || return 0
    [ -z "$docker_build" ] || return 0
    say "building the Docker image's static binary in the background (target/docker-build.log)"
    BLINKDB_DOCKER_PROFILE=ci nice -n 19 docker/build.sh --binary-only >target/docker-build.log 2>&1 &
    docker_build=$!
}

# A background build the stage now waits for is no longer background: back to nice 0
# (on a machine shared with other work a nice-19 build would crawl while the stage waits).
# The parent first, so that the compilers it starts from then on are at nice 0 too.
unnice_tree() { # pid
    local child
    renice -n 0 -p "$1" >/dev/null 2>&1
    for child in $(pgrep -P "$1"); do unnice_tree "$child"; done
}

docker_image() {
    if [ -n "$docker_build" ]; then
        unnice_tree "$docker_build"
        wait "$docker_build" || echo "!!!! the background static build failed: see target/docker-build.log"
        tail -1 target/docker-build.log
    fi
    BLINKDB_DOCKER_PROFILE=ci tests/docker/run.sh
}

redis_suite() {
    build_server || return 1
    local status=0
    tests/redis-suite/run.sh || status=1
    # Then own-server mode, the harness starting BlinkDB itself.
    SUITE_FILE_TIMEOUT=240 tests/redis-suite/own-server.sh || status=1
    # Redis 8.0.2's unit/type/hash-field-expire, in the peer's tree (the peer's build
    # started before the stages and integration used it).
    if tests/peers/build.sh redis >/dev/null; then
        SUITE_SOURCE=target/peers/redis-8.0.2 SUITE_FILE_TIMEOUT=120 tests/redis-suite/own-server.sh ||
            status=1
    else
        echo "!!!! no redis-server 8.0.2 peer: see target/peers/redis.log"
        status=1
    fi
    return $status
}

# The fuzz targets' build (compile-bound; its log's last line gives its CPU s) runs beside
# redis-suite at the lowest priority: a nice-19 task gets about 1.5% of a core that
# a nice-0 one wants, so it takes the CPU the suite's servers and harness leave
# while they wait instead of minutes of the fuzz stage's own.
fuzz_build=
start_fuzz_build() {
    want fuzz || return 0
    say "building the fuzz targets in the background (target/fuzz-build.log)"
    FUZZ_BUILD_ONLY=1 nice -n 19 tests/fuzz.sh >target/fuzz-build.log 2>&1 &
    fuzz_build=$!
}

fuzz() {
    if [ -n "$fuzz_build" ]; then
        unnice_tree "$fuzz_build"
        wait "$fuzz_build" || { cat target/fuzz-build.log; return 1; }
        tail -1 target/fuzz-build.log
    fi
    # The build (if not done before) and the runs within 120 s: 12 targets in
    # two lanes, at least 8 s each.
    FUZZ_STAGE_SECONDS=${FUZZ_STAGE_SECONDS:-120} tests/fuzz.sh
}

install_debian_packages
install_python_packages
mount_bpffs
start_peer_build
stage lint lint
stage unit unit
stage integration integration
stage clients clients
stage docker docker_image
mkdir -p target
start_fuzz_build
stage redis-suite redis_suite
stage fuzz fuzz

if [ -n "$peer_build" ]; then
    wait "$peer_build" || echo "!!!! the peers' build failed: see target/peers/*.log"
    grep -h ': built in' target/peers/*.log 2>/dev/null
fi

say "summary"
[ ${#failed_stages[@]} -gt 0 ] && echo "failed stages: ${failed_stages[*]}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
