#!/usr/bin/env bash
# End-to-end check of the BlinkDB container image with podman + runc: build it as the README says,
# run it with a named volume, talk to it with the host's redis-cli, restart it and check the data
# survived, time `podman stop`, and try kernel-backed Bloom filters. Ends with "N passed, N failed".
#
# Env:
#   BLINKDB_IMAGE       use this already-built image instead of running docker/build.sh
#   BLINKDB_DOCKER_PORT first host port to publish on (default 17450; the kernel variant uses +1)
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
port="${BLINKDB_DOCKER_PORT:-17450}"
kernel_port=$((port + 1))
volume=blinkdb-test-data
container=blinkdb-test
kernel_container=blinkdb-test-kernel
passed=0
failed=0
skipped=0

pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
# Without systemd, podman logs an error for each periodic-healthcheck timer it cannot create; the
# health check itself is run explicitly below, so those lines are dropped and the rest kept.
podman_run() {
    local err status
    err="$(mktemp)"
    podman --runtime runc "$@" 2>"$err"
    status=$?
    grep -v 'unable to get systemd connection' "$err" >&2
    rm -f "$err"
    return $status
}
cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }

wait_for_ping() {
    for _ in $(seq 1 100); do
        [ "$(cli "$1" PING 2>/dev/null)" = "PONG" ] && return 0
        sleep 0.1
    done
    return 1
}

remove_test_state() {
    podman_run rm -f -t 0 "$container" "$kernel_container" >/dev/null 2>&1
    podman volume rm -f "$volume" >/dev/null 2>&1
}
trap remove_test_state EXIT

# --- tools --------------------------------------------------------------------------------------
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v redis-cli >/dev/null || missing+=(redis-tools)
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
        { echo "cannot install ${missing[*]}"; echo "0 passed, 1 failed"; exit 1; }
fi

# --- build --------------------------------------------------------------------------------------
if [ -n "${BLINKDB_IMAGE:-}" ]; then
    image="$BLINKDB_IMAGE"
    echo "using prebuilt image $image (BLINKDB_IMAGE); docker/build.sh not run"
else
    image=blinkdb
    if "$repo_root/docker/build.sh"; then
        pass "docker/build.sh built image $image"
    else
        fail "docker/build.sh"
        echo "$passed passed, $failed failed"
        exit 1
    fi
fi
size_bytes="$(podman image inspect "$image" --format '{{.Size}}')"
echo "image $image size: $size_bytes bytes ($((size_bytes / 1024 / 1024)) MiB)"

# --- run, data, restart -------------------------------------------------------------------------
remove_test_state
if podman_run run -d --name "$container" -p "127.0.0.1:$port:6379" -v "$volume:/data" "$image" >/dev/null &&
    wait_for_ping "$port"; then
    pass "container answers PING on 127.0.0.1:$port"
else
    fail "container did not answer PING on 127.0.0.1:$port; its log:"
    podman logs "$container" 2>&1 | tail -n 20
    # Every later check needs a running server.
    echo "$passed passed, $failed failed, $skipped skipped"
    exit 1
fi

server_pid="$(podman inspect "$container" --format '{{.State.Pid}}')"
server_uid="$(awk '/^Uid:/ {print $2}' "/proc/$server_pid/status" 2>/dev/null)"
if [ -n "$server_uid" ] && [ "$server_uid" != 0 ]; then
    pass "server runs as non-root uid $server_uid"
else
    fail "server uid is '${server_uid:-unknown}', want non-root"
fi

if podman_run healthcheck run "$container" >/dev/null 2>&1; then
    pass "HEALTHCHECK (blinkdb --ping) reports healthy"
else
    fail "HEALTHCHECK (blinkdb --ping) did not report healthy"
fi

write_ok=1
for i in $(seq 1 100); do
    [ "$(cli "$port" SET "docker:key:$i" "value-$i")" = "OK" ] || write_ok=0
done
[ "$write_ok" = 1 ] && pass "wrote 100 keys" || fail "SET replies were not all OK"

stop_start=$(date +%s%N)
podman_run stop -t 10 "$container" >/dev/null
stop_ms=$((($(date +%s%N) - stop_start) / 1000000))
if [ "$stop_ms" -le 2000 ]; then
    pass "podman stop took ${stop_ms} ms (limit 2000)"
else
    fail "podman stop took ${stop_ms} ms (limit 2000): SIGTERM not handled promptly"
fi

if podman_run start "$container" >/dev/null && wait_for_ping "$port"; then
    survived=0
    for i in $(seq 1 100); do
        [ "$(cli "$port" GET "docker:key:$i")" = "value-$i" ] && survived=$((survived + 1))
    done
    [ "$survived" = 100 ] && pass "all 100 keys survived stop/start" ||
        fail "$survived of 100 keys survived stop/start"
else
    fail "container did not come back after podman start"
fi
podman_run rm -f -t 10 "$container" >/dev/null

# Flags after the image name must override the baked-in config (here: the port).
if podman_run run -d --name "$container" -p "127.0.0.1:$port:6380" -v "$volume:/data" "$image" --port 6380 >/dev/null &&
    wait_for_ping "$port"; then
    pass "flag after the image name (--port 6380) overrides the config file"
else
    fail "container started with --port 6380 did not answer on its published port 6380"
fi
podman_run rm -f -t 10 "$container" >/dev/null

# --- kernel-backed Bloom filters ----------------------------------------------------------------
# CAP_BPF lets the server create BPF maps, but podman's default seccomp profile only lets the bpf()
# syscall through with CAP_SYS_ADMIN; lifting seccomp is the smaller grant of the two that work.
# The uid-10001 server also needs a writable place in bpffs to pin its maps.
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
# A pin root the container's user owns (as docs/docker.md tells operators to create).
pin_root=/sys/fs/bpf/blinkdb-docker-test
rm -rf "$pin_root" && mkdir -p "$pin_root" && chown 10001:10001 "$pin_root"
if podman_run run -d --name "$kernel_container" \
    --cap-add BPF --security-opt seccomp=unconfined -v /sys/fs/bpf:/sys/fs/bpf \
    -p "127.0.0.1:$kernel_port:6379" -v "$volume:/data" "$image" \
    --bpf-pin-root "$pin_root" >/dev/null &&
    wait_for_ping "$kernel_port"; then
    kernel_pid="$(podman inspect "$kernel_container" --format '{{.State.Pid}}')"
    cap_eff="$(awk '/^CapEff:/ {print $2}' "/proc/$kernel_pid/status")"
    # CAP_BPF is capability 39.
    if [ $(((16#$cap_eff >> 39) & 1)) = 1 ]; then
        pass "--cap-add BPF reaches the non-root server (CapEff $cap_eff)"
    else
        fail "server lacks CAP_BPF with --cap-add BPF (CapEff $cap_eff)"
    fi
    reserve="$(cli "$kernel_port" BF.RESERVE docker:kbloom 0.01 1000 BACKEND kernel 2>&1)"
    if [ "$reserve" = "OK" ]; then
        added="$(cli "$kernel_port" BF.ADD docker:kbloom apple)"
        present="$(cli "$kernel_port" BF.EXISTS docker:kbloom apple)"
        absent="$(cli "$kernel_port" BF.EXISTS docker:kbloom pear)"
        if [ "$added $present $absent" = "1 1 0" ]; then
            pass "kernel Bloom filter: BF.RESERVE BACKEND kernel, BF.ADD, BF.EXISTS"
        else
            fail "kernel Bloom filter replies BF.ADD=$added BF.EXISTS(apple)=$present BF.EXISTS(pear)=$absent"
        fi
        if command -v bpftool >/dev/null; then
            echo "bloom_filter maps pinned on the host: $(bpftool map show 2>/dev/null | grep -c bloom_filter)"
        fi
    elif printf '%s' "$reserve" | grep -q "kernel filters unavailable"; then
        # The server's own probe says the kernel lacks the capability or map type.
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "SKIPPED: kernel Bloom filter check: BF.RESERVE ... BACKEND kernel answered: $reserve"
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        skipped=$((skipped + 1))
    else
        fail "kernel Bloom filter: BF.RESERVE ... BACKEND kernel answered: $reserve"
    fi
else
    fail "kernel-filter container (CAP_BPF, seccomp unconfined, /sys/fs/bpf mounted) did not answer PING"
    podman logs "$kernel_container" 2>&1 | tail -n 20
fi

podman_run rm -f -t 10 "$kernel_container" >/dev/null 2>&1
rm -rf "$pin_root"
echo "image size: $size_bytes bytes"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
