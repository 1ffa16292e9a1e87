# Sourced by tests/peers/build.sh and tests/redis-suite/lib.sh: which Debian
# source package version to ask apt for. Several releases' deb-src entries
# may be configured at once (bookworm for 7.0.15, trixie for 8.0.2), so
# `apt-get source redis` alone would fetch whichever is newest.

# The source package's newest version of upstream release $2 (e.g. 5:8.0.2-3+deb13u3).
debian_version() { # package upstream
    apt-cache showsrc "$1" 2>/dev/null | awk -v up="$2" '
        /^Version: / { v = $2; u = v; sub(/^[0-9]+:/, "", u); sub(/[-+].*$/, "", u);
                       if (u == up) print v }' | sort -V | tail -1
}
