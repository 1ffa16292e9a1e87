# Shared by run.sh (external-server mode) and own-server.sh (the harness
# starts the servers itself): getting Redis 7.0.15's source, counting one
# file's results from the helper's log, and the table that compares the
# counts with the floors. Sourced, not run.

suite_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
suite_root=$(cd "$suite_here/../.." && pwd)
suite_work=$suite_root/target/redis-suite
. "$suite_root/tests/debian-source.sh"

# Prints the unpacked source's directory, fetching Debian's source package
# first if needed (a deb-src entry for this machine's release is added when
# apt knows no 7.0.15 source).
fetch_source() {
    local src
    src=$(ls -d "$suite_work"/redis-7.0.15 2>/dev/null) && { echo "$src"; return 0; }
    local ver
    ver=$(debian_version redis 7.0.15)
    if [ -z "$ver" ]; then
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
            >/etc/apt/sources.list.d/blinkdb-deb-src.sources
        apt-get update -qq -o DPkg::Lock::Timeout=300 >&2
        ver=$(debian_version redis 7.0.15)
    fi
    [ -n "$ver" ] || { echo "no source package redis 7.0.15 in the apt lists" >&2; return 1; }
    (cd "$suite_work" && apt-get source --download-only "redis=$ver" >&2 &&
        dpkg-source -x "redis_${ver#*:}.dsc" redis-7.0.15 >&2) ||
        return 1
    # Harmless now that FUNCTION FLUSH is served: a server without it must not fail every test's cleanup.
    sed -i 's/^\(\s*\)r function flush$/\1catch {r function flush}/' "$suite_work/redis-7.0.15/tests/support/server.tcl"
    echo "$suite_work/redis-7.0.15"
}

# One file's row from the helper's log: "kind file ok err exception seconds".
# A run ended early when it raised an exception, timed out, or never printed
# its closing summary.
count_results() { # kind file log seconds
    local kind=$1 file=$2 log=$3 secs=$4 ok err exc=no
    sed -i 's/\x1b\[[0-9;]*m//g' "$log" # the helper colours its output even into a file
    ok=$(grep -c '^\[ok\]' "$log")
    err=$(grep -c '^\[err\]' "$log")
    grep -q '^\[exception\]\|Killing still running\|^\[TIMEOUT\]' "$log" && exc=yes
    grep -q 'All tests passed\|The following tests failed' "$log" || exc=yes
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$file" "$ok" "$err" "$exc" "$secs"
}

# The files a list names (column 1, comments skipped).
list_files() { # files.tsv
    grep -v '^#' "$1" | cut -f1 | grep .
}

# Prints BlinkDB's and redis-server's counts per file against the list's
# floors (column 2) and recorded redis-server counts (column 3, shown when
# this run did not measure redis-server); returns 1 when BlinkDB scored
# below a floor.
report() { # results.tsv files.tsv file...
    local results=$1 list=$2 status=0 f b r floor bok berr bexc rok rexc mark
    shift 2
    printf '\n%-28s %14s %14s %6s\n' file "blinkdb ok/err" "redis ok" floor
    for f in "$@"; do
        b=$(awk -F'\t' -v f="$f" '$1=="blinkdb" && $2==f' "$results")
        r=$(awk -F'\t' -v f="$f" '$1=="redis" && $2==f' "$results")
        floor=$(awk -F'\t' -v f="$f" '$1==f {print $2}' "$list")
        bok=$(cut -f3 <<<"$b"); berr=$(cut -f4 <<<"$b"); bexc=$(cut -f5 <<<"$b")
        if [ -n "$r" ]; then
            rok=$(cut -f3 <<<"$r"); rexc=$(cut -f5 <<<"$r")
        else
            rok="$(awk -F'\t' -v f="$f" '$1==f {print $3}' "$list") (recorded)"; rexc=no
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
    return $status
}
