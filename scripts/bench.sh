#!/bin/sh
# GPU benchmarks: builds the harness (nvcc + a C compiler only) and, per kernel
# family, measures the copy and read-only ceilings and every instance against
# its baseline in one run, writing bench/results/<date>-<gpu>-<commit>-<family>.json
# and, through `fusegen report` and gnuplot, its .md table and .png chart.
# Without a GPU
# it says SKIPPED, writes nothing and exits 0.  Exit status: failed checks.
# Environment: FG_COMMIT (default: git's short HEAD, "-dirty" if the tree is
# modified), FG_RESULTS_DIR (default bench/results), and tests/gpu/gpu-env.sh's.
# Extra arguments go to the benchmark (e.g. --quick).
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/gpu/gpu-env.sh

if why=$(fg_gpu_missing); then
    echo "bench: SKIPPED — $why (no benchmark run, no results written)"
    exit 0
fi
if [ -z "${FG_COMMIT:-}" ]; then
    FG_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    if [ "$FG_COMMIT" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        FG_COMMIT=$FG_COMMIT-dirty
    fi
fi
export FG_COMMIT
fg_gpu_build || exit 1

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 |
      tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
dir=${FG_RESULTS_DIR:-bench/results}
mkdir -p "$dir" || exit 1
stem="$dir/$(date -u +%Y-%m-%d)-${gpu:-gpu}-$FG_COMMIT"
rc=0
# The table and the chart of one family's results (the generator needs the
# Debian libraries `make` builds with; a GPU machine without them keeps the
# JSON and says so).
report() {   # FAMILY RESULTS.json
    [ -s "$2" ] || { echo "bench: no results written for $1"; rc=1; return; }
    if [ -x "$BUILD/fusegen" ] && "$BUILD/fusegen" report "$2"; then
        if command -v gnuplot >/dev/null 2>&1; then
            (cd "$(dirname "$2")" && gnuplot "$(basename "${2%.json}").gp") || rc=1
        else
            echo "bench: chart SKIPPED for $1: gnuplot is not installed (make deps)"
        fi
    else
        echo "bench: report SKIPPED for $1: no $BUILD/fusegen (run make first)"
    fi
}
# One results file per family: rmsnorm, the fused decode attention, the MLA
# decode core, the whole MLA block.  A family whose kernels this build may lack (the MLA core: a
# kernel folder from before it, or specs without it) is SKIPPED, and says so,
# when the folder holds none of its cubins.
optional="mla_decode mla_block"
for fam in rmsnorm decode_attn mla_decode mla_block; do
    case " $optional " in
        *" $fam "*)
            if ! ls "$FG_KERNELS_DIR/${fam}_"*.cubin >/dev/null 2>&1; then
                echo "bench: $fam SKIPPED — no ${fam}_*.cubin in $FG_KERNELS_DIR"
                continue
            fi ;;
    esac
    out="$stem-$fam.json"
    "$GPU_BUILD/test_$fam" --bench --kernels "$FG_KERNELS_DIR" --commit "$FG_COMMIT" \
        --json "$out" "$@" || rc=1
    report "$fam" "$out"
done
# The overlap family's fused GEMM beside cuBLASLt (one GPU), where the
# kernel folder has it.
if ls "$FG_KERNELS_DIR"/overlap_gemm_*.cubin >/dev/null 2>&1; then
    out="$stem-overlap-gemm.json"
    "$GPU_BUILD/test_gemm" --bench --kernels "$FG_KERNELS_DIR" --commit "$FG_COMMIT" \
        --json "$out" || rc=1
    report overlap_gemm "$out"
else
    echo "bench: overlap_gemm SKIPPED — no overlap_gemm_*.cubin in $FG_KERNELS_DIR"
fi
# The overlap family on the first two GPUs (its shapes and schedules are
# test_overlap's; the extra arguments are the decode harness's, not passed).
gpus=$(fg_gpu_count)
if [ "$gpus" -ge 2 ]; then
    out="$stem-x2-overlap.json"
    "$GPU_BUILD/test_overlap" --bench --json "$out" || rc=1   # (it turns NVLS off itself)
    report overlap "$out"
else
    echo "bench: overlap SKIPPED — it needs 2 GPUs, this machine has $gpus"
fi
exit $rc
