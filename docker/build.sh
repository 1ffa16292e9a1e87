#!/usr/bin/env bash
# Builds the BlinkDB container image `blinkdb` (override with BLINKDB_IMAGE_TAG): a static
# release binary first, then the FROM scratch image, with docker if its daemon answers, else podman.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="${BLINKDB_IMAGE_TAG:-blinkdb}"
cd "$repo_root"

# Static glibc binary: the image has no libc to link against at run time.
RUSTFLAGS='-C target-feature=+crt-static -C strip=debuginfo' \
    cargo build --release --locked --target x86_64-unknown-linux-gnu -p blinkdb-server
binary=target/x86_64-unknown-linux-gnu/release/blinkdb
# A shared-library dependency would make the binary fail inside the empty image.
if readelf -d "$binary" | grep -q '(NEEDED)'; then
    echo "build.sh: $binary needs shared libraries:" >&2
    readelf -d "$binary" | grep '(NEEDED)' >&2
    exit 1
fi

# The image's /data, empty, so that COPY --chown can give it to the non-root user.
rm -rf target/docker-rootfs
mkdir -p target/docker-rootfs/data

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    docker build -f docker/Dockerfile -t "$tag" .
elif command -v podman >/dev/null 2>&1; then
    # podman's default ulimits cannot be applied in these sandboxes; as root we can say so.
    conf=/etc/containers/containers.conf
    if [ "$(id -u)" = 0 ] && ! grep -qs '^default_ulimits' "$conf"; then
        mkdir -p "$(dirname "$conf")"
        if grep -qs '^\[containers\]' "$conf"; then
            sed -i 's/^\[containers\]$/[containers]\ndefault_ulimits = []/' "$conf"
        else
            printf '[containers]\ndefault_ulimits = []\n' >>"$conf"
        fi
    fi
    # docker format keeps HEALTHCHECK and STOPSIGNAL, which the OCI image format drops.
    podman build --format docker -f docker/Dockerfile -t "$tag" .
else
    echo "build.sh: neither a running docker nor podman found" >&2
    exit 1
fi
