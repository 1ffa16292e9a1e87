#!/usr/bin/env bash
# The fuzz stage of tests/run-all.sh (docs/fuzzing.md): builds the libFuzzer
# targets of fuzz/ and runs each one from a temporary copy of its committed
# corpus (fuzz/corpus/<target>, never written to), failing on any crash,
# timeout, out-of-memory or leak report. The whole stage stays within
# FUZZ_STAGE_SECONDS (default 600, build included): what the build leaves is
# shared by the targets, run in FUZZ_LANES (2) lanes side by side, between 8
# and FUZZ_SECONDS (default 45) s each.
# A failing input is kept in target/fuzz-artifacts/<target>/ and printed in
# base64, so it can be replayed from the log alone:
#   base64 -d > crash && target/fuzz/x86_64-unknown-linux-gnu/release/<target> crash
#
# The build is plain cargo on the stable toolchain with the flags
# `cargo fuzz build --sanitizer none --codegen-units 16` passes (cargo-fuzz
# 0.13.2's project.rs): without a sanitizer every flag is a stable -C one, so
# neither cargo-fuzz (minutes of compiling on a clean machine) nor the nightly
# toolchain is needed here. The long ASan runs of docs/fuzzing.md still use
# cargo-fuzz on nightly.
# FUZZ_BUILD_ONLY=1 only builds (run-all.sh starts the build early, beside a
# stage that mostly waits).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
stage_start=$SECONDS
budget=${FUZZ_STAGE_SECONDS:-600}
per_target_max=${FUZZ_SECONDS:-45}
per_target_min=8
lanes=${FUZZ_LANES:-2}
triple=x86_64-unknown-linux-gnu

# cargo-fuzz's instrumentation: libFuzzer's coverage counters, PC table and
# comparison tracing, stack depth, no branch folding, `cfg(fuzzing)`, debug
# assertions (overflow checks follow them), and 16 codegen units instead of
# its release default of 1 (half the build time on 2 cores). --target keeps
# build scripts and proc-macros uninstrumented, as cargo-fuzz does; its own
# target directory keeps the ASan build in fuzz/target as it is.
rustflags=(-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing
    -Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Cllvm-args=-sanitizer-coverage-stack-depth
    -Cdebug-assertions -Ccodegen-units=16)
target_dir=${FUZZ_TARGET_DIR:-$root/target/fuzz}
bin_dir=$target_dir/$triple/release
# cargo-fuzz's release builds take line tables only (file:line in a panic's
# backtrace), whatever fuzz/Cargo.toml says.
build=(cargo build --manifest-path fuzz/Cargo.toml --target "$triple" --release --bins
    --config 'profile.release.debug="line-tables-only"' --target-dir "$target_dir")
echo "building the fuzz targets: RUSTFLAGS='${rustflags[*]}' ${build[*]}"
RUSTFLAGS="${rustflags[*]}" "${build[@]}" || exit 1
# Its CPU seconds from `times`, run in this shell (in a pipe it would count none).
times >"$root/target/fuzz-build.times"
echo "fuzz build: $((SECONDS - stage_start)) s, $(awk 'NR == 2 {split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2]}' "$root/target/fuzz-build.times") s CPU"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

# The targets are fuzz/Cargo.toml's [[bin]]s (what `cargo fuzz list` prints).
mapfile -t targets < <(awk '/^\[\[bin\]\]/ {b = 1} b && /^name *=/ {gsub(/[" ]/, "", $0); sub(/^name=/, ""); print; b = 0}' fuzz/Cargo.toml)
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets found"; exit 1; }
for t in "${targets[@]}"; do
    [ -x "$bin_dir/$t" ] || { echo "!!!! no fuzz binary $bin_dir/$t"; exit 1; }
done
rounds=$(((${#targets[@]} + lanes - 1) / lanes))
left=$((budget - (SECONDS - stage_start) - 15))
per=$((left / rounds))
[ "$per" -gt "$per_target_max" ] && per=$per_target_max
[ "$per" -lt "$per_target_min" ] && per=$per_target_min
echo "${#targets[@]} targets in $lanes lanes, $per s each"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One target: its report lines (crash inputs in base64) on stdout; exit 1 if it failed.
fuzz_one() { # target
    local t=$1 log="$work/$1.log" rc runs cov crash
    mkdir -p "$work/$t" "$root/target/fuzz-artifacts/$t"
    cp -r "fuzz/corpus/$t/." "$work/$t/" 2>/dev/null
    "$bin_dir/$t" "$work/$t" -max_total_time="$per" -timeout=10 -rss_limit_mb=2560 \
        -print_final_stats=1 -artifact_prefix="$root/target/fuzz-artifacts/$t/" >"$log" 2>&1
    rc=$?
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$')
    cov=$(grep -o 'DONE *cov: [0-9]*' "$log" | grep -o '[0-9]*$')
    if [ "$rc" -eq 0 ]; then
        echo "fuzz $t: ok, ${runs:-?} inputs in $per s, coverage ${cov:-?}"
        return 0
    fi
    echo "!!!! fuzz $t: FAILED (exit $rc) after ${runs:-?} inputs"
    grep -E 'panicked|ERROR|SUMMARY|==[0-9]+==' "$log" | head -20
    for crash in $(grep -o "Test unit written to [^ ]*" "$log" | awk '{print $5}'); do
        echo "---- $crash (base64):"
        base64 "$crash"
    done
    return 1
}

# Lane l runs targets l, l+lanes, ...; each lane's report goes to its own file,
# printed whole at the end so that lines of the lanes do not interleave.
for ((lane = 0; lane < lanes; lane++)); do
    (
        status=0
        for ((i = lane; i < ${#targets[@]}; i += lanes)); do
            fuzz_one "${targets[i]}" || { status=1; echo "${targets[i]}" >>"$work/failed"; }
        done >"$work/lane$lane.out"
        exit $status
    ) &
done
wait
cat "$work"/lane*.out
echo "fuzz stage: $((SECONDS - stage_start)) s"
[ -s "$work/failed" ] && { echo "failed fuzz targets: $(sort "$work/failed" | tr '\n' ' ')"; exit 1; }
exit 0
