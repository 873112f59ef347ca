#!/bin/sh
# Timing experiments on a GPU machine: variants of one generated kernel, each
# made by a sed expression over its source (the templates' measurement hooks,
# e.g. DROP_MASK and TIMELINE in decode_attn_ring.in, kTimeline in
# mla_decode.in, or a plan constant), compiled, and timed by its family's
# test program (`test_decode_attn`, `test_mla_decode` or `test_mla_block`,
# from the instance's name) with `--bench` and BENCH_OPTS (e.g.
# --no-baseline).  Results (one bench JSON per variant, concatenated) go to
# $OUT/variants.jsonl, each variant's whole output to $OUT/variant-<name>.log; a
# summary goes to stdout.
#
#   OUT=dir INSTANCE=decode_attn_sm90a_..._ring_norm [BENCH_OPTS=...] \
#     tests/gpu/variants.sh 'name:sed-expr' ['name:sed-expr' ...]
#
# Quote each argument.  A variant whose name starts with "plain" is launched without the cooperative
# attribute; "nosmem" also without dynamic shared memory (for kernels made
# to return at once: launch-cost measurements).  Optional: CHECK=a,b runs
# the correctness checks of those instances first and stops on a failure.
# Kernel sources come from FG_GEN_DIR (default tests/gpu/gen_tmp).
set -u
cd "$(dirname "$0")/../.." || exit 1
: "${OUT:?set OUT}" "${INSTANCE:?set INSTANCE}"
export FG_GEN_DIR="${FG_GEN_DIR:-tests/gpu/gen_tmp}" BUILD="${BUILD:-build}"
. tests/gpu/gpu-env.sh
fg_gpu_build >"$OUT/build.log" 2>&1 || { echo "variants: build failed"; tail -n 30 "$OUT/build.log"; exit 1; }
case $INSTANCE in
    mla_decode_*) test_bin=$GPU_BUILD/test_mla_decode ;;
    mla_block_*) test_bin=$GPU_BUILD/test_mla_block ;;
    *) test_bin=$GPU_BUILD/test_decode_attn ;;
esac
if [ -n "${CHECK:-}" ]; then
    timeout 120 "$test_bin" --kernels "$FG_KERNELS_DIR" --only "$CHECK" >"$OUT/check.log" 2>&1
    rc=$?
    echo "check exit $rc: $(grep -E 'passed, ' "$OUT/check.log" | tail -n 1)"
    [ $rc = 0 ] || { grep -B2 -A8 FAIL "$OUT/check.log" | head -n 40; exit 1; }
fi
src=$FG_GEN_DIR/$INSTANCE.cu
[ -f "$src" ] || { echo "variants: no $src"; exit 1; }
work=${TMPDIR:-/tmp}/fg-variants
rm -rf "$work" && mkdir -p "$work" || exit 1
# the manifest's launch facts, optionally without the cooperative attribute
# and the dynamic shared memory
sed 's/"cooperative": true/"cooperative": false/' "$FG_GEN_DIR/manifest.json" >"$work/plain.json"
sed 's/"cooperative": true/"cooperative": false/; s/"dynamic_smem": [0-9]*/"dynamic_smem": 0/' \
    "$FG_GEN_DIR/manifest.json" >"$work/nosmem.json"
for spec in "$@"; do
    name=${spec%%:*}
    mkdir -p "$work/$name" && sed "${spec#*:}" "$src" >"$work/$name/$INSTANCE.cu" || exit 1
    # the flags every kernel is compiled with (gpu-env.sh), one variant per job
    ( fg_compile_kernels "$work/$name" "$work/$name" ||
          echo "variants: $name did not compile" ) &
done
wait
for spec in "$@"; do
    name=${spec%%:*}
    manifest=""
    case $name in
        plain*) manifest="--manifest $work/plain.json" ;;
        nosmem*) manifest="--manifest $work/nosmem.json" ;;
    esac
    # shellcheck disable=SC2086 # $manifest and BENCH_OPTS: words or none
    timeout 90 "$test_bin" --kernels "$work/$name" $manifest --only "$INSTANCE" --bench ${BENCH_OPTS:-} \
        --json "$work/$name/bench.json" >"$work/$name/bench.log" 2>&1
    echo "== $name (exit $?)"
    cp "$work/$name/bench.log" "$OUT/variant-$name.log"   # (every block's timeline line, where the hook prints)
    grep -E '^(mla )?timeline' "$work/$name/bench.log" | head -n 12
    grep 'S=' "$work/$name/bench.log" | sed 's/^[a-z_]*_sm90a_[^ ]* *//; s/| unfused baseline/| baseline/'
    cat "$work/$name/bench.json" >>"$OUT/variants.jsonl" 2>/dev/null
done
