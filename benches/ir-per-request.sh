#!/bin/bash
# Instructions per request under callgrind, for one redis-benchmark test:
# load-independent, so two builds compare on a busy box where wall-clock
# benchmarks swing more than they differ (docs/design.md, "Memory per small
# key": the key table's CPU). Usage:
#   benches/ir-per-request.sh BIN TAG PORT TEST P N
# TEST is a redis-benchmark test name (-t), or a command with its arguments
# ("HGET myhash element:000000000000", "XADD s * f v") for commands -t has
# not; IR_SETUP (optional) is a command redis-cli sends first (word-split:
# "HSET myhash element:000000000000 v" for the HGET above; several are
# separated by ";"). No -r is passed unless IR_BENCH_ARGS gives one (extra
# redis-benchmark arguments, word-split: "-r 1000000"), so redis-benchmark
# sends `__rand_int__` as it is: name the key the setup made. It
# prints "TAG TEST P<P> <Ir per request> <of which in the connections>"; the
# profile stays in
# $IR_DIR/TAG-TEST-P<P>/cg.out.1 (IR_DIR defaults to /tmp/ir-per-request) for
# callgrind_annotate. The server runs `--save "" --appendonly no`; 3000
# requests warm it up uninstrumented, then N are counted.
set -u
BIN=$1 TAG=$2 PORT=$3 T=$4 P=$5 N=$6
d=${IR_DIR:-/tmp/ir-per-request}/$TAG-${T%% *}-P$P
rm -rf "$d"
mkdir -p "$d"
cd "$d" || exit 1
valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" --instr-atstart=no \
    "$BIN" --port "$PORT" --save "" --appendonly no --dir "$d" >/dev/null 2>"$d/vg.log" &
vg=$!
for _ in $(seq 200); do
    redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
    sleep 0.5
done
case $T in
*" "*) read -r -a test <<<"$T" ;;
*) test=(-t "$T") ;;
esac
if [ -n "${IR_SETUP:-}" ]; then
    IFS=';' read -r -a setups <<<"$IR_SETUP"
    for s in "${setups[@]}"; do
        read -r -a setup <<<"$s"
        redis-cli -p "$PORT" "${setup[@]}" >/dev/null
    done
fi
read -r -a extra <<<"${IR_BENCH_ARGS:-}"
redis-benchmark -p "$PORT" -P "$P" -n 3000 -q "${extra[@]}" "${test[@]}" >/dev/null 2>&1
callgrind_control -i on "$vg" >/dev/null 2>&1
redis-benchmark -p "$PORT" -P "$P" -n "$N" -q "${extra[@]}" "${test[@]}" >/dev/null 2>&1
callgrind_control -d "$vg" >/dev/null 2>&1
redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1
wait "$vg"
ann=$(callgrind_annotate --inclusive=yes "$d/cg.out.1" 2>/dev/null)
ir=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}' <<<"$ann")
# The connections' share alone (parsing, commands, replies): the timers'
# (the expiry cycle, cron) grow with the run's wall-clock time, which a
# loaded box stretches.
conn=$(awk '/connection::serve::\{\{closure\}\}/ {gsub(",", "", $1); print $1; exit}' <<<"$ann")
echo "$TAG ${T%% *} P$P $((ir / N)) $((${conn:-0} / N))"
