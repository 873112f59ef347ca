#!/bin/sh
# Line coverage of the generator's input code reached by a fuzz target's
# saved corpus and its seeds (source-based coverage, llvm-cov-19):
#   scripts/fuzz-coverage.sh BUILD TARGET SEED_DIR...
set -u
build=$1 target=$2
shift 2
profile=$build/cov/$target
mkdir -p "$build/cov" "$build/corpus/$target" || exit 1
rm -f "$profile".profraw
# -runs=0: execute every input of the corpus folders once, fuzz nothing
LLVM_PROFILE_FILE="$profile.profraw" ASAN_OPTIONS=detect_leaks=0 \
    "$build/cov_$target" -runs=0 "$build/corpus/$target" "$@" >"$profile.log" 2>&1 || {
    tail -n 20 "$profile.log"
    exit 1
}
llvm-profdata-19 merge -sparse "$profile.profraw" -o "$profile.profdata" || exit 1
echo "coverage of $target ($(find "$build/corpus/$target" -type f | wc -l) corpus inputs + seeds):"
llvm-cov-19 report "$build/cov_$target" -instr-profile="$profile.profdata" \
    generator/spec.c generator/spec_schema.c generator/importhf.c generator/plan.c \
    generator/plan_decode.c generator/plan_rmsnorm.c generator/plan_overlap.c generator/plan_reduce.c \
    generator/plan_mla.c generator/plan_mla_block.c generator/decimal.c
