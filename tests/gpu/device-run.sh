#!/bin/sh
# One call on a lent GPU machine (the workplace's device tool): build, check
# and benchmark in one go, logs and results under $OUT.  Kernels are compiled
# there from pre-generated sources (FG_GEN_DIR, default tests/gpu/gen_tmp),
# since fusegen needs libcyaml, which such machines lack.
#   OUT=dir FG_COMMIT=abc tests/gpu/device-run.sh [--sanitize] [--no-bench]
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/fg-out}
mkdir -p "$OUT"
export FG_GEN_DIR=${FG_GEN_DIR:-tests/gpu/gen_tmp} FG_RESULTS_DIR="$OUT" BUILD=${BUILD:-build}
sanitize=0 bench=1
for a in "$@"; do
    case $a in --sanitize) sanitize=1 ;; --no-bench) bench=0 ;; esac
done
{
    date -u
    nvidia-smi
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,pstate --format=csv
    /usr/local/cuda/bin/nvcc --version | tail -n 2
    uname -r
} >"$OUT/machine.txt" 2>&1
t0=$(date +%s)
scripts/check-gpu.sh >"$OUT/check.log" 2>&1
check_rc=$?
t1=$(date +%s)
cat "$BUILD"/gpu/kernels/*.cubin.log >"$OUT/ptxas.txt" 2>/dev/null
if [ $sanitize = 1 ] && command -v compute-sanitizer >/dev/null 2>&1; then
    timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$BUILD/gpu/test_rmsnorm" \
        --kernels "$BUILD/gpu/kernels" --quick >"$OUT/memcheck.log" 2>&1
    echo "memcheck exit $?" >>"$OUT/memcheck.log"
fi
bench_rc=-
if [ $bench = 1 ]; then
    FG_SKIP_BUILD=1 scripts/bench.sh >"$OUT/bench.log" 2>&1
    bench_rc=$?
fi
t2=$(date +%s)
echo "---- check (exit $check_rc, $((t1 - t0)) s)"
grep -E '^(FAIL|SKIP)|passed, ' "$OUT/check.log" | tail -n 40
grep -E '^rmsnorm_|^instance|^timing|^ceilings|^  copy|^  read|^device|^fgrt|^launch' "$OUT/check.log" | head -n 50
[ -f "$OUT/memcheck.log" ] && grep -E "ERROR SUMMARY|passed, |memcheck exit|^=========" "$OUT/memcheck.log" | head -n 12
echo "---- bench (exit $bench_rc, $((t2 - t1)) s)"
[ -f "$OUT/bench.log" ] && grep -vE '^ok ' "$OUT/bench.log" | grep -vE 'warning|snprintf|\^|^ +[0-9]+ \||inlined|note:' | tail -n 80
exit 0
