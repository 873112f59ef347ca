#!/bin/sh
# Numeric GPU tests (tests/gpu/): builds the harness with nvcc and a C compiler
# only, runs every test program, and ends with the plain line
# `N passed, N failed` (`, N skipped` when any were skipped).  Exit status: the
# number of failures (at most 255).  Without a GPU it says SKIPPED and exits 0:
# that line is never a pass.  See tests/gpu/gpu-env.sh for the variables.
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/gpu/gpu-env.sh

ntests=$(echo $FG_GPU_TESTS | wc -w)
if why=$(fg_gpu_missing); then
    echo "check-gpu: SKIPPED — $why ($ntests GPU test programs not run: $FG_GPU_TESTS)"
    exit 0
fi
fg_gpu_build || { echo "0 passed, 1 failed"; exit 1; }

passed=0 failed=0 skipped=0
# Adds test program $1's closing line in log $2 (exit status $3) to the counts.
tally() {
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$2" | tail -n 1)
    if [ -z "$line" ]; then
        echo "check-gpu: $1 ended without its closing line (exit $3): counted as 1 failure"
        failed=$((failed + 1))
        return
    fi
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    s=$(echo "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + ${s:-0}))
    if [ "$f" -eq 0 ] && [ "$3" -ne 0 ]; then
        echo "check-gpu: $1 exited $3 with no failed check: counted as 1 failure"
        failed=$((failed + 1))
    fi
}
for t in $FG_GPU_TESTS; do
    echo "== $t"
    log=$GPU_BUILD/$t.log
    "$GPU_BUILD/$t" --kernels "$FG_KERNELS_DIR" "$@" >"$log" 2>&1
    rc=$?
    cat "$log"
    tally "$t" "$log" $rc
done
# The portable forms on this GPU (issue 10): the MLA core's, the MLA
# block's and the overlap GEMM's instances for an H200 without clusters
# (tests/gpu/portable/h200-portable.yaml), generated into
# FG_PORTABLE_GEN_DIR (default tests/gpu/gen_portable: by $BUILD/fusegen
# where there is one, else beforehand, as tests/gpu/device-run.sh says),
# compiled apart and checked by test_mla_decode, test_mla_block and
# test_gemm with that build's manifest, as the cluster build's are above.
pgen=${FG_PORTABLE_GEN_DIR:-tests/gpu/gen_portable}
pgen_ok=1
if [ -x "$BUILD/fusegen" ] &&
   ! "$BUILD/fusegen" generate --out "$pgen" --filter 'mla_decode*' --filter 'mla_block*' \
        --filter 'overlap_gemm*' tests/gpu/portable/h200-portable.yaml specs/models/*.yaml \
        specs/gemm/*.yaml tests/gpu/specs/*.yaml; then
    echo "check-gpu: generating the portable forms into $pgen failed: counted as 1 failure"
    failed=$((failed + 1)) pgen_ok=0
fi
if [ $pgen_ok = 0 ]; then :
elif [ -f "$pgen/manifest.json" ] && ls "$pgen"/*.cu >/dev/null 2>&1; then
    pk=$GPU_BUILD/portable-kernels
    if ! fg_compile_kernels "$pgen" "$pk"; then
        echo "check-gpu: the portable forms did not compile ($pgen): counted as 1 failure"
        failed=$((failed + 1))
    else
        for t in test_mla_decode test_mla_block test_gemm; do
            if [ ! -x "$GPU_BUILD/$t" ]; then
                echo "== $t (portable forms): SKIPPED — not built"
                skipped=$((skipped + 1))
                continue
            fi
            echo "== $t (portable forms: $pgen)"
            log=$GPU_BUILD/$t-portable.log
            "$GPU_BUILD/$t" --kernels "$pk" --manifest "$pgen/manifest.json" "$@" >"$log" 2>&1
            rc=$?
            cat "$log"
            tally "$t (portable forms)" "$log" $rc
        done
    fi
else
    echo "== portable forms: SKIPPED — no generated sources in $pgen (no $BUILD/fusegen to make" \
        "them: generate them there, see tests/gpu/device-run.sh)"
    skipped=$((skipped + 1))
fi
# The overlap executor's hierarchical plan needs 4 ranks (2 nodes of 2) and
# 6 (3 nodes of 2: two steps between nodes; 2 of 3: a copy lane a node
# peer): with fewer GPUs, that many processes share them (the plan's
# checks; the rest ran above).
gpus=$(fg_gpu_count)
for world in 4 6; do
    [ "$gpus" -lt "$world" ] && [ -x "$GPU_BUILD/test_overlap_exec" ] || continue
    echo "== test_overlap_exec --world $world (the hierarchical plan, $gpus GPU(s) shared)"
    log=$GPU_BUILD/test_overlap_exec-world$world.log
    "$GPU_BUILD/test_overlap_exec" --world "$world" --quick --no-faults \
        --kernels "$FG_KERNELS_DIR" >"$log" 2>&1
    rc=$?
    cat "$log"
    tally "test_overlap_exec-world$world" "$log" $rc
done
# Transfers between nodes through NCCL's socket transport, on one host: the
# serial_nccl checks with shared memory and peer-to-peer off; NCCL's own log
# must show the socket transport in use, or the run proves nothing.
if [ "$gpus" -ge 2 ] && [ -x "$GPU_BUILD/test_overlap" ]; then
    echo "== test_overlap --nccl-only over NCCL's socket transport"
    log=$GPU_BUILD/test_overlap-socket.log
    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_DEBUG=INFO \
        NCCL_DEBUG_SUBSYS=INIT,NET "$GPU_BUILD/test_overlap" --nccl-only >"$log" 2>&1
    rc=$?
    grep -E '^(FAIL|SKIP)|passed, ' "$log"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    s=$(echo "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
    if [ -z "$line" ] || [ $rc -ne 0 ]; then
        echo "check-gpu: the socket-transport run failed (exit $rc; $log): counted as 1 failure"
        failed=$((failed + ${f:-0} + 1))
    elif [ "${s:-0}" -gt 0 ]; then
        echo "check-gpu: the socket-transport run skipped its checks (built without NCCL)"
        skipped=$((skipped + s))
    elif ! grep -q 'NET/Socket' "$log"; then
        echo "check-gpu: NCCL's log does not show the socket transport ($log): counted as 1 failure"
        failed=$((failed + 1))
    else
        passed=$((passed + p))
    fi
else
    echo "== NCCL socket transport: SKIPPED — it needs 2 GPUs, this machine has $gpus"
    skipped=$((skipped + 1))
fi
echo "== all GPU tests"
if [ $skipped -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ $failed -gt 255 ] && exit 255
exit $failed
