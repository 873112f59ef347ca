#!/bin/sh
# The AMD code objects kernels-ci compiled use the matrix cores where the
# CUDA form of their family uses tensor cores (issue 10): every fused decode
# (decode_attn, the grid form) object, every MLA core (mla_decode, the
# portable form: its scores and P.V) object, every MLA block (mla_block, the
# portable form: its projections and attention) object and every overlap GEMM
# (overlap_gemm, issue 7's) object for gfx942 and gfx90a must contain MFMA
# instructions (llvm-objdump-19), and each family must have one.  Prints, for each AMD object,
# its MFMA count and the gate's occupancy (waves a SIMD).
#   tests/integration/matrix-units.sh [KERNELS_DIR]   (default build/ci/kernels)
set -u
cd "$(dirname "$0")/../.." || exit 1
dir=${1:-build/ci/kernels}
objdump=${LLVM_OBJDUMP:-llvm-objdump-19}
manifest=$dir/manifest.json
if ! command -v "$objdump" >/dev/null 2>&1; then
    echo "matrix-units: FAILED: $objdump not found"
    exit 1
fi
[ -f "$manifest" ] || { echo "matrix-units: FAILED: no $manifest (run make kernels-ci)"; exit 1; }
failed=0 checked=0
for co in "$dir"/*.co; do
    [ -e "$co" ] || continue
    name=$(basename "$co" .co)
    # an object the gate's manifest does not list is left from an earlier
    # build of another generation (renamed instances): not this build's
    grep -q "\"name\": \"$name\"" "$manifest" || continue
    mfma=$("$objdump" -d "$co" | grep -c 'v_mfma')
    # the gate's occupancy for this instance (the manifest's resources block)
    occ=$(awk -v n="\"$name\"" 'index($0, "\"name\": " n) { f = 1 } f && /"occupancy"/ {
            gsub(/[^0-9]/, "", $0); print; exit }' "$manifest")
    case $name in
    decode_attn_* | mla_decode_* | mla_block_* | overlap_gemm_*)
        checked=$((checked + 1))
        if [ "$mfma" -eq 0 ]; then
            echo "matrix-units: FAILED: $name has no MFMA instruction"
            failed=$((failed + 1))
        else
            echo "matrix-units: $name: $mfma MFMA, occupancy ${occ:-?} waves a SIMD"
        fi ;;
    *)
        echo "matrix-units: $name: $mfma MFMA (no tensor cores in its CUDA form), occupancy ${occ:-?}" ;;
    esac
done
# this build's objects of a family (the manifest lists them)
count() {
    for co in "$dir"/"$1"_*.co; do [ -e "$co" ] &&
        grep -q "\"name\": \"$(basename "$co" .co)\"" "$manifest" && echo; done | wc -l
}
dec=$(count decode_attn) mla=$(count mla_decode) blk=$(count mla_block) gemm=$(count overlap_gemm)
if [ "$dec" -eq 0 ] || [ "$mla" -eq 0 ] || [ "$blk" -eq 0 ] || [ "$gemm" -eq 0 ]; then
    echo "matrix-units: FAILED: no decode_attn, mla_decode, mla_block or overlap_gemm code object" \
        "in $dir ($dec, $mla, $blk, $gemm)"
    exit 1
fi
echo "matrix-units: $checked decode_attn, mla_decode, mla_block and overlap_gemm code objects ($dec," \
    "$mla, $blk, $gemm) checked, $failed without MFMA"
[ "$failed" -eq 0 ]
