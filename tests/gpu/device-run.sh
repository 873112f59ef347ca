#!/bin/sh
# One call on a lent GPU machine (the workplace's device tool): build, check
# and benchmark in one go, logs and results under $OUT.  Kernels are compiled
# there from pre-generated sources (FG_GEN_DIR, default tests/gpu/gen_tmp),
# since fusegen needs libcyaml, which such machines lack; so are the portable
# forms' (the MLA core and block and the overlap GEMM for an H200 without
# clusters, which check-gpu.sh checks apart), from FG_PORTABLE_GEN_DIR
# (default tests/gpu/gen_portable), made beforehand by
#   build/fusegen generate --out tests/gpu/gen_portable --filter 'mla_decode*' \
#       --filter 'mla_block*' --filter 'overlap_gemm*' tests/gpu/portable/h200-portable.yaml \
#       specs/models/*.yaml specs/gemm/*.yaml tests/gpu/specs/*.yaml
#   OUT=dir FG_COMMIT=abc tests/gpu/device-run.sh [--sanitize] [--no-bench] [--timeline INSTANCE]
# --sanitize: scripts/check-gpu-sanitize.sh (memcheck, synccheck, racecheck);
# --timeline: INSTANCE once more with the template's timeline hook on
# (TIMELINE; kTimeline in the MLA core's; tests/gpu/variants.sh), printing
# each step's time (and the ring's waits, the MLA merge's steps).
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/fg-out}
mkdir -p "$OUT"
export FG_GEN_DIR="${FG_GEN_DIR:-tests/gpu/gen_tmp}" FG_RESULTS_DIR="$OUT" BUILD="${BUILD:-build}" \
    FG_PORTABLE_GEN_DIR="${FG_PORTABLE_GEN_DIR:-tests/gpu/gen_portable}"
sanitize=0 bench=1 timeline=""
while [ $# -gt 0 ]; do
    case $1 in
        --sanitize) sanitize=1 ;;
        --no-bench) bench=0 ;;
        --timeline) timeline=${2:-}; shift ;;
    esac
    shift
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
if [ $sanitize = 1 ]; then
    FG_SKIP_BUILD=1 scripts/check-gpu-sanitize.sh >"$OUT/sanitize.log" 2>&1
    echo "check-gpu-sanitize exit $?" >>"$OUT/sanitize.log"
fi
if [ -n "$timeline" ]; then
    # the hook: kTimeline in the MLA core's template, TIMELINE in the
    # others' (the instance's source has one of them)
    on='s/constexpr bool kTimeline = false/constexpr bool kTimeline = true/'
    on="$on;s/constexpr bool TIMELINE = false/constexpr bool TIMELINE = true/"
    FG_SKIP_BUILD=1 INSTANCE=$timeline tests/gpu/variants.sh "timeline:$on" >"$OUT/timeline.log" 2>&1
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
[ -f "$OUT/sanitize.log" ] && grep -E "check-gpu-sanitize|passed, " "$OUT/sanitize.log" | head -n 12
[ -f "$OUT/timeline.log" ] && grep -E "^(mla )?timeline|^==|S=" "$OUT/timeline.log" | head -n 40
echo "---- bench (exit $bench_rc, $((t2 - t1)) s)"
[ -f "$OUT/bench.log" ] && grep -vE '^ok ' "$OUT/bench.log" | grep -vE 'warning|snprintf|\^|^ +[0-9]+ \||inlined|note:' | tail -n 80
exit 0
