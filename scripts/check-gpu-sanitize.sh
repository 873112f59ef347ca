#!/bin/sh
# compute-sanitizer over every kernel family at small dims (issue 12):
# memcheck and synccheck on every family, racecheck on the families that
# use shared memory (all but the overlap family's reduction): rmsnorm, the
# fused decode attention, the MLA decode core and block, the overlap
# family's fused GEMM, its reduction alone and its executor.  Each tool runs
# the family's test program, which checks results as usual; a sanitizer
# error or a failed check fails.
# Without a GPU or compute-sanitizer it says SKIPPED and exits 0 (never a pass).
#   BUILD=build [FG_SANITIZE_TOOLS="memcheck synccheck racecheck"] scripts/check-gpu-sanitize.sh
# FG_SANITIZE_TOOLS: the tools to run (default all three; a lent machine's
# 10-minute command takes one or two at a time).
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
tools=${FG_SANITIZE_TOOLS:-memcheck synccheck racecheck}
ntools=0
for tool in $tools; do
    case $tool in
        memcheck | synccheck | racecheck) ntools=$((ntools + 1)) ;;
        *) echo "check-gpu-sanitize: FAILED — unknown tool '$tool' in FG_SANITIZE_TOOLS"; exit 1 ;;
    esac
done
if [ $ntools = 0 ]; then
    echo "check-gpu-sanitize: FAILED — FG_SANITIZE_TOOLS names no tool"
    exit 1
fi
# wanted TOOL: whether TOOL is among those to run
wanted() {
    for w in $tools; do [ "$w" = "$1" ] && return 0; done
    return 1
}
# every instance the lists below name, whatever shard a caller's FG_SHARD asks for
unset FG_SHARD
fg_gpu_build || { echo "check-gpu-sanitize: FAILED — build"; exit 1; }
# the smallest instances of each code path: rmsnorm's quick set; the decode
# family at S_max 4K (every cluster size of the register form, the ring form
# with one and two clusters per head, batch 4, hidden 5120), the GQA ring
# and the grid form at batch 16 (Llama-2-7B; Qwen2-7B: GQA 7:1, biases, pages)
decode_only=s4096_b1_c2_,s4096_b1_c4_,s4096_b1_c8_,s4096_b1_c16_,s4096_b1_c2x2_,s4096_b4_c2x2_t512_ring,kv8_hd128_s8192_rt500000_b1_c2x2_,h4096_nh32_hd128_s4096_b16_grid_t512_norm_det,p16_bias_b16_grid_t512_norm_det
# racecheck: the register form and the grid form (its shared memory: the
# staged rows between block barriers), without the cuBLAS baseline.  It reports
# a potential WAR hazard on every handoff of a TMA (cp.async.bulk) ring slot
# from the consumers' reads to the producer's next copy, ordered by
# __syncwarp and one mbarrier arrive per warp; it reports the same on
# cuBLAS's own TMA kernels (docs/reliability.md), so the ring form is
# skipped there, and says so.
race_only=s4096_b1_c2_t512_norm,s4096_b1_c4_,s4096_b1_c8_,s4096_b1_c16_,s4096_b1_c2x2_t512_norm,h4096_nh32_hd128_s4096_b16_grid_t512_norm_det
# the whole MLA block: the shipped V2-Lite (no q_lora) and V3 TP=8 (q_lora)
# kernels of batch 1, every phase's path among them
block_only=mla_block_sm90a_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1,mla_block_sm90a_bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b1
passed=0 failed=0 skipped=0
# One tool over one test program: ok, SKIPPED when the program checked
# nothing (its closing line says 0 passed), or FAILED.
#   sanitize TOOL TEST "SANITIZER OPTIONS" "TEST ARGUMENTS"
# with the kernels from $san_kernels (default FG_KERNELS_DIR), its log and
# result line named with $san_tag.
san_kernels="" san_tag=""
sanitize() {
    log=$GPU_BUILD/sanitize-$1-$2$san_tag.log
    # shellcheck disable=SC2086 # $3 and $4 are lists of words
    timeout 1800 "$sanitizer" --tool "$1" $3 --print-limit 20 --error-exitcode 99 \
        "$GPU_BUILD/test_$2" --kernels "${san_kernels:-$FG_KERNELS_DIR}" $4 >"$log" 2>&1
    rc=$?
    summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed, ' "$log" | tr '\n' ' ')
    if [ $rc = 0 ] && grep -qE '^0 passed' "$log"; then
        echo "check-gpu-sanitize: $1 $2$san_tag: SKIPPED (it checked nothing: $summary)"
        skipped=$((skipped + 1))
    elif [ $rc = 0 ]; then
        echo "check-gpu-sanitize: $1 $2$san_tag: ok ($summary)"
        passed=$((passed + 1))
    else
        echo "check-gpu-sanitize: $1 $2$san_tag: FAILED (exit $rc; $summary); log $log"
        grep -E '^========= ' "$log" | head -n 20
        failed=$((failed + 1))
    fi
}
for tool in $tools; do
    for t in rmsnorm decode_attn mla_decode mla_block gemm overlap_reduce; do
        case $t/$tool in
            rmsnorm/*) args="--quick" ;;
            # the MLA core: one instance per code path (dtype, cache layout,
            # heads per block; one split, one cluster, several clusters), short
            # lengths, 2 replays; racecheck without the plain baseline (not the
            # kernel under test), on the one-team form (32 heads a block) only:
            # on the wgmma form (64) racecheck reports hazards on a correct
            # named-barrier handoff as on a racy one
            # (tests/gpu/probe_racecheck_handoff.cu), and on the two-team form
            # (16) it pairs a block's stores after its block barrier with its
            # cluster peer's reads of the peer's own memory (a cluster barrier
            # there makes it quiet; docs/reliability.md); so they, the
            # 1-token-page gather path among them, go without it.
            # Without mla_decode cubins the program says SKIP ("checked
            # nothing"); without any of 32 heads a block, racecheck of the core
            # is skipped and says so.
            mla_decode/racecheck)
                echo "check-gpu-sanitize: racecheck mla_decode two-team and wgmma forms" \
                     "(16 and 64 heads a block, the 1-token-page path among them): SKIPPED" \
                     "(hazards reported on their named-barrier handoffs; on the wgmma form's" \
                     "racecheck does the same with the ordering removed:" \
                     "tests/gpu/probe_racecheck_handoff.cu; on the two-team form it pairs a block's" \
                     "stores with its cluster peer's reads of the peer's own memory:" \
                     "docs/reliability.md)"
                skipped=$((skipped + 1))
                if ! ls "$FG_KERNELS_DIR"/mla_decode_*_g32_*.cubin >/dev/null 2>&1; then
                    echo "check-gpu-sanitize: racecheck mla_decode: SKIPPED (no instance of" \
                         "32 heads a block in $FG_KERNELS_DIR)"
                    skipped=$((skipped + 1))
                    continue
                fi
                args="--smallest --quick --no-baseline --only _g32_" ;;
            mla_decode/*) args="--smallest --quick" ;;
            # the decode family: its three code-path cases (--quick: not the
            # input-scale ones, 2 deterministic launches; check-gpu runs the 1000)
            decode_attn/racecheck) args="--quick --no-baseline --only $race_only"
                echo "check-gpu-sanitize: racecheck decode_attn ring form: SKIPPED (potential" \
                     "WAR reports on TMA ring handoffs, as on cuBLAS's TMA kernels and on a correct" \
                     "handoff alone: tests/gpu/probe_racecheck_handoff.cu mode 16)"
                skipped=$((skipped + 1)) ;;
            decode_attn/*) args="--quick --only $decode_only" ;;
            mla_block/racecheck)
                echo "check-gpu-sanitize: racecheck mla_block: SKIPPED (potential WAR reports on" \
                     "its ring's handoffs from the consumers' reads to the producer warp's next" \
                     "bulk copy, ordered by a named barrier and an mbarrier, as on the decode" \
                     "ring form, cuBLAS's TMA kernels and the probe's mode 16)"
                skipped=$((skipped + 1))
                continue ;;
            mla_block/*) args="--quick --only $block_only" ;;
            # the overlap family's fused GEMM: every instance at M = 128 and
            # 1152, 2 launches for determinism (check-gpu runs the 1000);
            # racecheck without the cuBLASLt comparison (cuBLAS's own TMA
            # kernels report hazards, as in the decode runs)
            gemm/racecheck) args="--quick --no-baseline" ;;
            gemm/*) args="--quick" ;;
            # the overlap family's reduction alone (every instance, every
            # check size, 2 launches for determinism): no shared memory, so
            # no racecheck
            overlap_reduce/racecheck) continue ;;
            overlap_reduce/*) args="--quick" ;;
        esac
        sanitize "$tool" "$t" "" "$args"
    done
done
# The overlap GEMM's portable form (issue 10: the AMD algorithm on this
# GPU, as check-gpu's portable pass generates it into FG_PORTABLE_GEN_DIR),
# every instance under all three tools: no TMA or wgmma in it, so racecheck
# tracks its shared memory (ldmatrix reads, cp.async writes) without the
# wgmma form's false reports.
pgen=${FG_PORTABLE_GEN_DIR:-tests/gpu/gen_portable}
if ! ls "$pgen"/overlap_gemm_*.cu >/dev/null 2>&1; then
    echo "check-gpu-sanitize: the portable GEMM: SKIPPED — no overlap_gemm sources in $pgen" \
         "(check-gpu generates them)"
    skipped=$((skipped + 1))
elif ! fg_compile_kernels "$pgen" "$GPU_BUILD/portable-kernels"; then
    echo "check-gpu-sanitize: the portable GEMM: FAILED — its kernels did not compile ($pgen)"
    failed=$((failed + 1))
else
    san_kernels=$GPU_BUILD/portable-kernels san_tag=-portable
    for tool in $tools; do
        args="--quick --manifest $pgen/manifest.json"
        [ $tool = racecheck ] && args="$args --no-baseline"
        sanitize "$tool" gemm "" "$args"
    done
    san_kernels="" san_tag=""
fi
# The overlap family's executor (one process per GPU, so the sanitizer
# follows every process; on one GPU its 2 ranks share it) with the
# generated reduction where FG_KERNELS_DIR has it; memcheck and synccheck
# (the reduction uses no shared memory, so racecheck has nothing to check).
# No launch timeout: the test forks its ranks (and counts the GPUs in a child)
# before any of them touches CUDA, and with the default 10 s the sanitizer
# gave up attaching and the run hung (measured on one H200).
# Without the injected failures (--no-faults): under compute-sanitizer
# rank 1 stalls for good once rank 0's start flag has come and its first
# piece never does (measured on one H200; check-gpu runs them).
for tool in memcheck synccheck; do
    wanted $tool || continue
    echo "check-gpu-sanitize: $tool overlap_exec injected failures: SKIPPED (rank 1 stalls" \
         "under compute-sanitizer once rank 0's start came and its piece never does;" \
         "check-gpu runs them)"
    skipped=$((skipped + 1))
    sanitize "$tool" overlap_exec "--target-processes all --launch-timeout 0" "--quick --no-faults"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed = 0 ]
