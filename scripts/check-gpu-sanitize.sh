#!/bin/sh
# compute-sanitizer over every kernel family at small dims (issue 12):
# memcheck and synccheck on every family, racecheck on the families that use
# shared memory (all of them).  Each tool runs the family's test program,
# which checks results as usual; a sanitizer error or a failed check fails.
# Without a GPU or compute-sanitizer it says SKIPPED and exits 0 (never a pass).
#   BUILD=build scripts/check-gpu-sanitize.sh
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/gpu/gpu-env.sh
if why=$(fg_gpu_missing); then
    echo "check-gpu-sanitize: SKIPPED — $why"
    exit 0
fi
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [ ! -x "$sanitizer" ]; then
    echo "check-gpu-sanitize: SKIPPED — compute-sanitizer not found"
    exit 0
fi
fg_gpu_build || { echo "check-gpu-sanitize: FAILED — build"; exit 1; }
# the smallest instances of each code path: rmsnorm's quick set; the decode
# family at S_max 4K (every cluster size of the register form, both ring forms)
decode_only=s4096_b1_c2_,s4096_b1_c4_,s4096_b1_c8_,s4096_b1_c16_,s4096_b1_c2x2_
failed=0 runs=0
for tool in memcheck synccheck racecheck; do
    for t in rmsnorm decode_attn; do
        case $t in
            rmsnorm) args="--quick" ;;
            decode_attn) args="--only $decode_only" ;;
        esac
        log=$GPU_BUILD/sanitize-$tool-$t.log
        runs=$((runs + 1))
        # shellcheck disable=SC2086 # $args is a list of words
        timeout 1800 "$sanitizer" --tool "$tool" --print-limit 20 --error-exitcode 99 \
            "$GPU_BUILD/test_$t" --kernels "$FG_KERNELS_DIR" $args >"$log" 2>&1
        rc=$?
        summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed, ' "$log" | tr '\n' ' ')
        if [ $rc = 0 ]; then
            echo "check-gpu-sanitize: $tool $t: ok ($summary)"
        else
            echo "check-gpu-sanitize: $tool $t: FAILED (exit $rc; $summary); log $log"
            grep -E '^========= ' "$log" | head -n 20
            failed=$((failed + 1))
        fi
    done
done
echo "$((runs - failed)) passed, $failed failed"
[ $failed = 0 ]
