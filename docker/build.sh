#!/usr/bin/env bash
# Builds the BlinkDB container image `blinkdb` (override with BLINKDB_IMAGE_TAG): first checks that
# a container engine works (docker if its daemon answers, else podman, which must be able to start
# a container), then compiles a static release binary, builds the FROM scratch image and prints
# the size of the image it built. Fails before compiling when no engine works.
# Usage: docker/build.sh [--binary-only]
#   --binary-only  only compiles the static binary (target/docker-bin/blinkdb), with no engine
#                  check and no image: tests/run-all.sh starts it early in the background, and
#                  the docker stage's own build.sh run then finds it up to date
set -euo pipefail

binary_only=0
case "${1:-}" in
    --binary-only) binary_only=1 ;;
    "") ;;
    *) echo "usage: docker/build.sh [--binary-only]" >&2; exit 2 ;;
esac

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="${BLINKDB_IMAGE_TAG:-blinkdb}"
conf=/etc/containers/containers.conf
cd "$repo_root"

die() {
    echo "build.sh: $*" >&2
    exit 1
}

# Runs /bin/true in a container whose root file system is a directory holding /bin/true and the
# libraries it links: a check that the runtime can start a container, with no image to pull.
probe_dir=""
trap '[ -z "$probe_dir" ] || rm -rf "$probe_dir"' EXIT
make_probe_dir() {
    probe_dir="$(mktemp -d /tmp/blinkdb-podman-probe.XXXXXX)"
    local f
    for f in /bin/true $(ldd /bin/true | grep -oE '/[^ ]+'); do
        mkdir -p "$probe_dir$(dirname "$f")" && cp -L "$f" "$probe_dir$f"
    done
}
podman_probe() {
    podman "${runtime_flag[@]}" run --rm --rootfs "$probe_dir" /bin/true 2>&1
}

# --- container engine, before anything is compiled ---------------------------------------------
engine=""
if [ "$binary_only" = 1 ]; then
    : # no image, so no engine to check
elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    engine=docker
elif command -v podman >/dev/null 2>&1; then
    engine=podman
    # Debian's default runtime (crun) fails in the sandboxes we build in; runc works.
    runtime_flag=()
    command -v runc >/dev/null 2>&1 && runtime_flag=(--runtime runc)
    make_probe_dir
    if ! probe_out="$(podman_probe)"; then
        if grep -q 'error setting rlimit' <<<"$probe_out"; then
            # podman gives every container its own RLIMIT_NOFILE and RLIMIT_NPROC unless
            # containers.conf says otherwise, and this machine refuses to change those limits
            # even for root. With an empty default_ulimits, containers keep podman's own limits.
            echo "build.sh: podman cannot start a container here:" >&2
            echo "  $probe_out" >&2
            echo "build.sh: podman sets open-file and process limits (rlimits) in every container," >&2
            echo "  and this machine does not let them be changed. The fix is to set, in $conf:" >&2
            echo "      [containers]" >&2
            echo "      default_ulimits = []" >&2
            echo "  so that containers keep podman's own limits instead of setting new ones." >&2
            [ "$(id -u)" = 0 ] || die "run as root to let build.sh make this change, or make it yourself"
            if grep -qs '^[[:space:]]*default_ulimits' "$conf"; then
                die "$conf already sets default_ulimits; not changing it (edit it yourself)"
            fi
            echo "build.sh: changing $conf as shown above" >&2
            mkdir -p "$(dirname "$conf")"
            if grep -qs '^\[containers\]' "$conf"; then
                sed -i 's/^\[containers\]$/[containers]\ndefault_ulimits = []/' "$conf"
            else
                printf '[containers]\ndefault_ulimits = []\n' >>"$conf"
            fi
            probe_out="$(podman_probe)" ||
                die "podman still cannot start a container after that change: $probe_out"
        else
            die "podman ${runtime_flag[*]} cannot start a container: $probe_out"
        fi
    fi
    echo "build.sh: using podman ${runtime_flag[*]} (a test container started)"
else
    die "no container engine: neither a docker whose daemon answers nor podman was found.
  Install one (Debian: apt-get install podman runc) and run docker/build.sh again."
fi

# --- static binary ------------------------------------------------------------------------------
# Static glibc binary: the image has no libc to link against at run time.
# BLINKDB_DOCKER_PROFILE picks the Cargo profile (default release; the test suite uses ci).
profile="${BLINKDB_DOCKER_PROFILE:-release}"
RUSTFLAGS='-C target-feature=+crt-static -C strip=debuginfo' \
    cargo build --profile "$profile" --locked --target x86_64-unknown-linux-gnu -p blinkdb-server
binary=target/x86_64-unknown-linux-gnu/$profile/blinkdb
# A shared-library dependency would make the binary fail inside the empty image.
if readelf -d "$binary" | grep -q '(NEEDED)'; then
    echo "build.sh: $binary needs shared libraries:" >&2
    readelf -d "$binary" | grep '(NEEDED)' >&2
    exit 1
fi

# The image's /data, empty, so that COPY --chown can give it to the non-root user.
rm -rf target/docker-rootfs target/docker-bin
mkdir -p target/docker-rootfs/data target/docker-bin
cp "$binary" target/docker-bin/blinkdb
if [ "$binary_only" = 1 ]; then
    echo "build.sh: static binary $binary (--binary-only: no image built)"
    exit 0
fi

# --- image --------------------------------------------------------------------------------------
if [ "$engine" = docker ]; then
    docker build -f docker/Dockerfile -t "$tag" .
else
    # docker format keeps HEALTHCHECK and STOPSIGNAL, which the OCI image format drops.
    podman build --format docker -f docker/Dockerfile -t "$tag" .
fi
size="$("$engine" image inspect --format '{{.Size}}' "$tag")"
echo "build.sh: built image $tag with $engine: $size bytes ($(awk -v b="$size" 'BEGIN {printf "%.2f", b / 1e6}') MB)"
