#!/bin/sh
# Runs one libFuzzer target for FUZZ_SECONDS (default 600):
#   scripts/fuzz-run.sh BUILD TARGET SEED_DIR...
# The corpus grows in BUILD/corpus/TARGET (kept between runs; the seed
# folders are only read), a crashing input lands in BUILD/crashes/TARGET/,
# the whole log in BUILD/TARGET.log.  Prints executions per second and the
# coverage libFuzzer reached; exits non-zero on a crash, leak or timeout.
set -u
build=$1 target=$2
shift 2
seconds=${FUZZ_SECONDS:-600}
corpus=$build/corpus/$target
crashes=$build/crashes/$target
log=$build/$target.log
mkdir -p "$corpus" "$crashes" || exit 1
echo "fuzz: $target for ${seconds} s (corpus $corpus; seeds $*)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/$target" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$crashes/" "$corpus" "$@" >"$log" 2>&1
rc=$?
grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log"
if [ $rc != 0 ]; then
    tail -n 40 "$log"
    echo "fuzz: $target FAILED (exit $rc); the input is in $crashes/"
    exit 1
fi
