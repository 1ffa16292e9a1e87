#!/usr/bin/env bash
# The fuzz stage of tests/run-all.sh (docs/fuzzing.md): builds the cargo-fuzz
# targets of fuzz/ and runs each one from a temporary copy of its committed
# corpus (fuzz/corpus/<target>, never written to), failing on any crash,
# timeout, out-of-memory or leak report. The whole stage stays within
# FUZZ_STAGE_SECONDS (default 600, build included): what the build leaves is
# shared by the targets, between 8 and FUZZ_SECONDS (default 45) each.
# A failing input is kept in target/fuzz-artifacts/<target>/ and printed in
# base64, so it can be replayed from the log alone:
#   base64 -d > crash && target/fuzz/x86_64-unknown-linux-gnu/release/<target> crash
# Installs the nightly toolchain and cargo-fuzz if they are missing.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
stage_start=$SECONDS
budget=${FUZZ_STAGE_SECONDS:-600}
per_target_max=${FUZZ_SECONDS:-45}
per_target_min=8

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "installing the nightly toolchain (cargo-fuzz needs -Z flags)"
    rustup toolchain install nightly --profile minimal || exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install cargo-fuzz --locked || exit 1
fi

# No sanitizer and 16 codegen units: a build from scratch fits the stage's
# budget on 2 cores (ASan builds are for the long runs, docs/fuzzing.md);
# debug assertions and overflow checks stay on, as in every cargo-fuzz build.
# Its own target directory: the ASan build in fuzz/target stays as it is.
target_dir=${FUZZ_TARGET_DIR:-$root/target/fuzz}
build_flags=(--sanitizer none --codegen-units 16 --target-dir "$target_dir")
echo "building the fuzz targets: cargo +nightly fuzz build ${build_flags[*]}"
cargo +nightly fuzz build "${build_flags[@]}" || exit 1
bin_dir=$target_dir/x86_64-unknown-linux-gnu/release

mapfile -t targets < <(cargo +nightly fuzz list)
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets found"; exit 1; }
left=$((budget - (SECONDS - stage_start) - 15))
per=$((left / ${#targets[@]}))
[ "$per" -gt "$per_target_max" ] && per=$per_target_max
[ "$per" -lt "$per_target_min" ] && per=$per_target_min
echo "build took $((SECONDS - stage_start)) s; ${#targets[@]} targets, $per s each"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
for t in "${targets[@]}"; do
    mkdir -p "$work/$t" "$root/target/fuzz-artifacts/$t"
    cp -r "fuzz/corpus/$t/." "$work/$t/" 2>/dev/null
    log="$work/$t.log"
    "$bin_dir/$t" "$work/$t" -max_total_time="$per" -timeout=10 -rss_limit_mb=2560 \
        -print_final_stats=1 -artifact_prefix="$root/target/fuzz-artifacts/$t/" >"$log" 2>&1
    rc=$?
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$')
    cov=$(grep -o 'DONE *cov: [0-9]*' "$log" | grep -o '[0-9]*$')
    if [ "$rc" -eq 0 ]; then
        echo "fuzz $t: ok, ${runs:-?} inputs in $per s, coverage ${cov:-?}"
    else
        failed+=("$t")
        echo "!!!! fuzz $t: FAILED (exit $rc) after ${runs:-?} inputs"
        grep -E 'panicked|ERROR|SUMMARY|==[0-9]+==' "$log" | head -20
        for crash in $(grep -o "Test unit written to [^ ]*" "$log" | awk '{print $5}'); do
            echo "---- $crash (base64):"
            base64 "$crash"
        done
    fi
done
echo "fuzz stage: $((SECONDS - stage_start)) s"
[ ${#failed[@]} -eq 0 ] || { echo "failed fuzz targets: ${failed[*]}"; exit 1; }
