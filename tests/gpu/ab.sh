#!/bin/sh
# An A/B on a GPU machine of two kernel sets made by scripts/ab-build.sh:
# the test programs built here; every instance of both sets checked (quick);
# then the instances whose names match the extended regex ONLY timed in
# ROUNDS rounds by turns (A, then B, each round), every run's output and
# JSON under $OUT; last a summary on stdout and in $OUT/summary.txt: per
# instance and length, each side's median over the rounds and B / A.
#   OUT=dir A=build/ab/a B=build/ab/b ONLY='regex' [TEST=test_decode_attn]
#     [ROUNDS=2] [BENCH_OPTS=--quick] [CHECK='a b'] tests/gpu/ab.sh
# TEST: test_decode_attn, test_mla_decode or test_mla_block.  An instance
# whose name differs between the sets (a plan that changed) is listed apart.
# CHECK: the sides checked before timing (CHECK=b when A is main, checked
# already, and the device minutes are short; CHECK='' when the caller has
# checked both).  BIN_A: side A's test program, where A's kernels take other
# arguments than this tree's runtime passes (built from A's revision).
# PACK=1: the runs' logs and JSON end in one $OUT/runs.tar.gz beside
# summary.txt (a lent GPU machine sends back only a few files a call).
set -u
cd "$(dirname "$0")/../.." || exit 1
: "${OUT:?set OUT}" "${A:?set A}" "${B:?set B}" "${ONLY:?set ONLY}"
TEST=${TEST:-test_decode_attn} ROUNDS=${ROUNDS:-2} BENCH_OPTS=${BENCH_OPTS:-} CHECK=${CHECK-a b}
mkdir -p "$OUT" || exit 1
export FG_KERNELS_DIR=$A BUILD="${BUILD:-build}"
. tests/gpu/gpu-env.sh
fg_gpu_build "$TEST" >"$OUT/build.log" 2>&1 || { echo "ab: build failed"; tail -n 30 "$OUT/build.log"; exit 1; }
bin=$GPU_BUILD/$TEST bin_a=${BIN_A:-$GPU_BUILD/$TEST}
# the instances of kernel set $1 matching $2, comma-separated
names() {
    ls "$1"/*.cubin | xargs -n1 basename | sed 's/\.cubin$//' | grep -E -- "$2" |
        grep -v '_det$' | paste -sd, -
}
failed=0
for side in $CHECK; do
    if [ "$side" = a ]; then dir=$A prog=$bin_a; else dir=$B prog=$bin; fi
    timeout 900 "$prog" --kernels "$dir" --no-baseline --quick >"$OUT/check-$side.log" 2>&1
    rc=$?
    echo "ab: checks of $side ($dir): exit $rc, $(grep -E '^[0-9]+ passed, ' "$OUT/check-$side.log" | tail -n 1)"
    [ $rc = 0 ] || failed=1
done
[ $failed = 0 ] || { echo "ab: a check failed: not timed"; exit 1; }
only_a=$(names "$A" "$ONLY") only_b=$(names "$B" "$ONLY")
[ -n "$only_a" ] && [ -n "$only_b" ] || { echo "ab: no instance matches $ONLY"; exit 1; }
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for side in a b; do
        if [ "$side" = a ]; then dir=$A only=$only_a prog=$bin_a; else dir=$B only=$only_b prog=$bin; fi
        # shellcheck disable=SC2086
        timeout 600 "$prog" --kernels "$dir" --only "$only" --bench --no-baseline $BENCH_OPTS \
            --commit "$(cat "$dir/REVISION" 2>/dev/null || echo unknown)" \
            --json "$OUT/bench-$side-r$r.json" >"$OUT/bench-$side-r$r.log" 2>&1 ||
            echo "ab: bench $side round $r: exit $? (see $OUT/bench-$side-r$r.log)"
    done
    r=$((r + 1))
done
# bench lines: "NAME ... S=N [B=n] ... T us ..." -> per line key (what comes
# before T) each side's median over the rounds
for side in a b; do
    cat "$OUT"/bench-$side-r*.log | awk -v side=$side '/S= *[0-9]/ && match($0, /[0-9.]+ us/) {
        key = substr($0, 1, RSTART - 1); gsub(/ +/, " ", key); sub(/ $/, "", key)
        print side "\t" key "\t" substr($0, RSTART, RLENGTH - 3) }'
done | sort -t "$(printf '\t')" -k2,2 -k1,1 -k3,3n | awk -F '\t' '
    function med(v, n) { return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
    function flush() {
        if (key == "") return
        ma = na ? med(va, na) : 0; mb = nb ? med(vb, nb) : 0
        printf "%s  A %.2f  B %.2f  B/A %s\n", key, ma, mb,
               (na && nb) ? sprintf("%.4f", mb / ma) : "- (one side only)"
    }
    { if ($2 != key) { flush(); key = $2; na = nb = 0 }
      if ($1 == "a") va[++na] = $3; else vb[++nb] = $3 }
    END { flush() }' | tee "$OUT/summary.txt"
if [ "${PACK:-0}" = 1 ]; then
    # shellcheck disable=SC2086 # the names as words (no spaces: ours)
    (cd "$OUT" && files=$(ls -- *.log *.json 2>/dev/null) && [ -n "$files" ] &&
        tar czf runs.tar.gz $files && rm -f $files)
fi
