#!/usr/bin/env bash
# The peers BlinkDB is tested against beside Debian's redis-server 7.0.15:
# redis-server 8.0.2 and valkey-server 8.1.1, built from Debian 13's source
# packages (issue 43). Only the server binary is built, with libc's malloc
# (jemalloc's own build would double the time) and -O2 without LTO, into
# target/peers/:
#   target/peers/redis-8.0.2/src/redis-server
#   target/peers/valkey-8.1.1/src/valkey-server
# Nothing is cached by hand: a fresh clone builds them once per CI run
# (tests/run-all.sh starts this script in the background early); a tree that
# already holds a binary reuses it. Callers that need a peer run this script
# with its name and wait: a lock file makes concurrent callers wait for one
# build instead of starting their own. Prints the binary's path.
#
# Usage: tests/peers/build.sh redis|valkey|all   (log: target/peers/<peer>.log)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$root/target/peers
mkdir -p "$work"
. "$root/tests/debian-source.sh"

# name  source-package  version (Debian's, without revision)  tree  binary
peer_info() {
    case $1 in
        redis) echo "redis 8.0.2 redis-8.0.2 redis-server" ;;
        valkey) echo "valkey 8.1.1 valkey-8.1.1 valkey-server" ;;
        *) return 1 ;;
    esac
}

# A deb-src entry for Debian 13 (trixie), whose archive holds both sources.
add_trixie_sources() {
    local list=/etc/apt/sources.list.d/blinkdb-trixie-src.sources
    grep -rqs '^Suites:.*\btrixie\b' /etc/apt/sources.list.d/ && grep -qs '^Types: deb-src' "$list" &&
        return 0
    printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' 'Suites: trixie' \
        'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' >"$list"
    apt-get update -qq -o DPkg::Lock::Timeout=300
}

build_one() { # peer
    local pkg up tree bin info ver orig
    info=$(peer_info "$1") || { echo "unknown peer: $1" >&2; return 2; }
    read -r pkg up tree bin <<<"$info"
    local out=$work/$tree/src/$bin
    [ -x "$out" ] && { echo "$out"; return 0; }
    (
        flock 9
        [ -x "$out" ] && exit 0
        local t0=$SECONDS
        {
            echo "== $pkg $up: fetching Debian 13's source package"
            ver=$(debian_version "$pkg" "$up")
            if [ -z "$ver" ]; then
                add_trixie_sources
                ver=$(debian_version "$pkg" "$up")
            fi
            [ -n "$ver" ] || { echo "no source package $pkg $up in the apt lists"; exit 1; }
            # The upstream tarball is what is built; a missing .dsc or Debian
            # patch set (a mirror may lag on the revision) does not matter.
            (cd "$work" && apt-get source --download-only "$pkg=$ver") || true
            orig=$(ls "$work/${pkg}_${up}"*.orig.tar.* 2>/dev/null | head -1)
            [ -n "$orig" ] || { echo "no ${pkg}_${up} upstream tarball fetched"; exit 1; }
            rm -rf "${work:?}/$tree.tmp" && mkdir "$work/$tree.tmp" &&
                tar -xf "$orig" -C "$work/$tree.tmp" --strip-components=1 || exit 1
            rm -rf "${work:?}/$tree" && mv "$work/$tree.tmp" "$work/$tree"
            echo "== $pkg $up: building $bin (MALLOC=libc)"
            # -O2 without the Makefiles' -flto: the link-time optimisation
            # alone took minutes on a busy 2-core machine.
            nice make -C "$work/$tree/src" -j"$(nproc)" MALLOC=libc BUILD_TLS=no OPTIMIZATION=-O2 \
                "$bin" >/dev/null ||
                exit 1
            # CPU seconds too (on a busy machine the wall time says little),
            # from `times` run in this subshell: in a pipe it would count none.
            times >"$work/$1.times"
            echo "== $pkg $up: built in $((SECONDS - t0)) s, $(awk 'NR == 2 {split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2]}' "$work/$1.times") s CPU"
        } >>"$work/$1.log" 2>&1
    ) 9>"$work/$1.lock"
    [ -x "$out" ] || { echo "!!!! building $bin failed: see $work/$1.log" >&2; return 1; }
    echo "$out"
}

case ${1:-all} in
    all)
        status=0
        for p in redis valkey; do build_one "$p" || status=1; done
        exit $status
        ;;
    *) build_one "$1" ;;
esac
