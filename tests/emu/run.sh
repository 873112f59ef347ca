#!/bin/sh
# Generates the kernels of the host emulation's specs (tests/emu/specs: for
# AMD the decode family's grid form, the MLA core's portable form, the whole
# MLA block's portable form, the overlap family's GEMM; for sm_90a the decode
# family's grid, register and ring forms, the MLA core and the whole MLA
# block) and runs each instance on the
# CPU against the C reference of the GPU tests, or the GEMM's double
# reference (tests/emu/*_emu.cpp): the HIP sources through
# include/hip/hip_runtime.h, the CUDA ones through include/cuda_emu.h.
# Ends with `N passed, N failed`.
#   FUSEGEN=build/fusegen BUILD=build tests/emu/run.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
fusegen=${FUSEGEN:-build/fusegen}
out=${BUILD:-build}/emu
cxx=${CLANG_CXX:-clang++-19}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
rm -rf "$out" && mkdir -p "$out/gen" "$out/src" || exit 1
# the decode grid form and the MLA block (cooperative launches: every
# workgroup at once, each on a host thread) on one CU and on four (one
# workgroup does every phase's whole work; four share it, meet at grid
# barriers, and the block's attention splits a request's keys and merges
# them), the MLA core on four and on 32 (splits merged by ticket in one
# level, and in two: workgroups that run one after another can take either),
# the GEMM on eight (its persistent grid numbered XCD-major; no grid
# barrier); the decode grid form again on one CU with 16 KB of LDS, where the
# lds16k specs' rows do not fit and the projections read x and o from the
# workspace; for sm_90a, the decode grid form (of the specs that take it)
# and the MLA block on four SMs (its CUDA-core form also with the blocks
# that absorb W_uk kept out of the projections before C, and with its
# attention's tile rows in groups of 4) and on 16 (a spec
# whose shares of W_o are 16 rows: its folded chunks), the decode register
# and ring forms on 16 (clusters of 2, one or two a head, and the register
# form's clusters of 4, 8 and 16: peers' shared memory, cluster barriers,
# remote arrivals), the MLA core on 16 (its wgmma form at 128 heads: the
# splits merged in the spread merge or in a cluster, and at B_max 8 the
# balanced deal, the tiles cut by the requests' lengths over 8 blocks a
# head group; its mma form at 16 in the spread merge, with one tile a split
# and with tiles for both teams) and on four (the mma form's clusters), and
# without clusters (the H200-portable forms: the decode grid form of every
# spec, the MLA block's portable form)
decode_specs=$(ls tests/emu/specs/emu-tiny-*.yaml | grep -v -- -mla-)
lds16k_specs=$(ls tests/emu/specs/emu-lds16k-*.yaml)
mla_specs=$(ls tests/emu/specs/emu-tiny-mla-*.yaml)
core_specs=$(ls tests/emu/specs/emu-core-mla-*.yaml)
spread_specs=$(ls tests/emu/specs/emu-spread-mla-*.yaml)   # (the mma form on 16 SMs only)
cluster_specs=$(ls tests/emu/specs/emu-clusters-*.yaml)
block_specs=$(ls tests/emu/specs/emu-block-mla-*.yaml)
block_whole_tile_specs=$(ls tests/emu/specs/emu-block-mla-*.yaml | grep -v -- '-p16\.yaml$')   # pages of whole tiles or none
gemm_specs=$(ls tests/emu/specs/emu-gemm-*.yaml)
# shellcheck disable=SC2086 # the lists are file names without spaces
if ! "$fusegen" generate --out "$out/gen/decode" --filter 'decode_attn_*' $decode_specs \
        tests/emu/specs/emu-gfx942-1cu.yaml >"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/decode-4cu" --filter 'decode_attn_*' $decode_specs \
        tests/emu/specs/emu-gfx942-4cu.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/decode-lds16k" --filter 'decode_attn_*' $lds16k_specs \
        tests/emu/specs/emu-gfx942-1cu-lds16k.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla" --filter 'mla_decode_*' $mla_specs \
        tests/emu/specs/emu-gfx942-4cu.yaml tests/emu/specs/emu-gfx942-32cu.yaml \
        >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-block" --filter 'mla_block_*' $block_specs \
        tests/emu/specs/emu-gfx942-1cu.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-block-4cu" --filter 'mla_block_*' $block_specs \
        tests/emu/specs/emu-gfx942-4cu.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/decode-sm90a" --filter 'decode_attn_sm90a*_grid_*' $decode_specs \
        $lds16k_specs tests/emu/specs/emu-sm90a-4sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-block-sm90a" --filter 'mla_block_sm90a*' $block_specs \
        tests/emu/specs/emu-sm90a-4sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/decode-sm90a-portable" --filter 'decode_attn_sm90a*' \
        $decode_specs tests/emu/specs/emu-sm90a-4sm-portable.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-block-sm90a-portable" --filter 'mla_block_sm90a*' \
        $block_specs tests/emu/specs/emu-sm90a-4sm-portable.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-block-sm90a-apart" --filter 'mla_block_sm90a*_b[12]' \
        $block_specs tests/emu/specs/emu-sm90a-4sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-block-sm90a-uvparts" --filter 'mla_block_sm90a*_b[12]' \
        $block_specs tests/emu/specs/emu-sm90a-4sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-block-sm90a-rowcopies" --filter 'mla_block_sm90a*' \
        $block_whole_tile_specs tests/emu/specs/emu-sm90a-4sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-block-sm90a-16sm" --filter 'mla_block_sm90a*' \
        tests/emu/specs/emu-fold-mla-bf16.yaml tests/emu/specs/emu-sm90a-16sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/decode-sm90a-clusters" --filter 'decode_attn_sm90a*_c[0-9]*' \
        $decode_specs $cluster_specs tests/emu/specs/emu-sm90a-16sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-sm90a-4sm" --filter 'mla_decode_sm90a*' $mla_specs \
        tests/emu/specs/emu-sm90a-4sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-sm90a-tma" --filter 'mla_decode_sm90a*' $mla_specs \
        tests/emu/specs/emu-sm90a-4sm.yaml tests/emu/specs/emu-sm90a-16sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-sm90a-groups" --filter 'mla_decode_sm90a*' $mla_specs \
        tests/emu/specs/emu-sm90a-4sm.yaml tests/emu/specs/emu-sm90a-16sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-sm90a" --filter 'mla_decode_sm90a*' \
        $mla_specs $core_specs $spread_specs tests/emu/specs/emu-sm90a-16sm.yaml \
        >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-sm90a-dealt" --filter 'mla_decode_sm90a*_d[0-9]*' \
        $core_specs tests/emu/specs/emu-sm90a-16sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/mla-sm90a-chunks" --filter 'mla_decode_sm90a*' \
        $core_specs tests/emu/specs/emu-sm90a-16sm.yaml >>"$out/generate.log" 2>&1 ||
   ! "$fusegen" generate --out "$out/gen/gemm" --filter 'overlap_gemm_*' $gemm_specs \
        tests/emu/specs/emu-gfx942-8cu.yaml >>"$out/generate.log" 2>&1; then
    cat "$out/generate.log"; echo "0 passed, 1 failed"; exit 1
fi
# A plan constant set again in every source of a copy: the line that starts
# with $2 starts with $3 instead (a copy without such a line fails the run)
set_const() {
    for f in "$out"/gen/"$1"/*.cu; do
        sed "s/^$2/$3/" "$f" >"$f.set" && mv "$f.set" "$f"
        grep -q "^$3" "$f" || { echo "FAIL $f: no line '$2' to set"; echo "0 passed, 1 failed"; exit 1; }
    done
}
# The MLA block's CUDA-core form again with the blocks that absorb W_uk kept
# out of the projections before C (ABSORB_APART: the planner allows it on
# grids of four blocks a head or more, so a 4-SM target needs it set here;
# the template takes half the grid at most, the first 2 of 4 blocks)
set_const mla-block-sm90a-apart 'constexpr int kApart = 0;$' 'constexpr int kApart = 16;'
# The MLA block's CUDA-core form again with W_uv applied to 8 parts of the
# latent columns in E (UV_PARTS: the planner's is 1 where the grid has fewer
# than two blocks a head, as on 4 SMs; the template loops over the items)
set_const mla-block-sm90a-uvparts 'constexpr int kUvParts = 1, ' 'constexpr int kUvParts = 8, '
# The MLA block's attention tiles again with a copy a row where the planner
# lands them in groups of 4 (ROW_GROUP: 4 where an SM's share of the
# target's read ceiling is more than a copy a row streams, as on the
# emulation's targets; a copy a row on an H100, and wherever pages are
# smaller than a tile), so the rows' own layout is checked with pages of
# whole tiles and the contiguous cache too
set_const mla-block-sm90a-rowcopies 'constexpr int kRowGroup = 4;$' 'constexpr int kRowGroup = 1;'
# The MLA core's balanced deal again with its runs cut anywhere (kCutTiles 0:
# the dealt runs win wherever they are shorter), since the emulation's
# requests of at most 8 tiles never outweigh a cut's charge of 8 tiles, so
# the first copy takes every request in runs of its own
set_const mla-sm90a-dealt 'constexpr int kCutTiles = 8;$' 'constexpr int kCutTiles = 0;'
# ... and each request it starts counted as 7 tiles (kRestartTiles), so that
# runs end in a request's places before its first tile (held, they would
# merge a partial of no keys: without the skip 6 checks fail)
set_const mla-sm90a-dealt 'constexpr int kRestartTiles = 3;$' 'constexpr int kRestartTiles = 7;'
# The MLA core's mma form again with its tiles as TMA boxes (TMA_TILES: the
# planner's choice from B_max 16, more than the emulation's requests), its
# cluster and spread merges (4 and 16 SMs)
set_const mla-sm90a-tma 'constexpr bool kTmaTiles = 0;' 'constexpr bool kTmaTiles = 1;'
# ... and with its tiles' rows 4 a copy (ROW_GROUP: the planner's choice
# from B_max 16 where a copy a row lags an SM's share of HBM, as on the
# emulation's targets)
set_const mla-sm90a-groups 'constexpr int kRowGroup = 1;$' 'constexpr int kRowGroup = 4;'
# The MLA core's wgmma form again with its tiles' chunks as TMA boxes
# (TMA_CHUNKS: the planner's choice from B_max 16, more than the emulation's
# requests), its spread merge and balanced deal
set_const mla-sm90a-chunks 'constexpr bool kTmaChunks = 0;' 'constexpr bool kTmaChunks = 1;'
# Built once: the emulation's runtime (its core, no CUDA headers), and the
# tests with the C references (these include the harness's CUDA runtime
# header, so they stay apart from the emulated kernels).
ok=1
"$cxx" -std=c++17 -O1 -g -Itests/emu/include -Itests/emu -c tests/emu/emu_runtime.cpp \
    -o "$out/emu_runtime.o" || ok=0
for t in decode mla_core mla_block gemm; do
    "$cxx" -std=c++17 -O2 -Itests/emu -Itests/gpu -I"$cuda_home/include" \
        -c "tests/emu/${t}_emu.cpp" -o "$out/${t}_test.o" || ok=0
done
for c in ref_decode ref_mla ref_mla_block numerics; do
    cc -std=c17 -O2 -Itests/gpu -I"$cuda_home/include" -c "tests/gpu/$c.c" -o "$out/$c.o" || ok=0
done
[ $ok = 1 ] || { echo "0 passed, 1 failed"; exit 1; }
src_dir=$(cd "$out/src" && pwd)   # (KERNEL_SRC is included by absolute path)
passed=0 failed=0
for src in "$out"/gen/*/*.hip "$out"/gen/*/*.cu; do
    [ -e "$src" ] || continue
    file=$(basename "$src") && name=${file%.*}
    tag=$(basename "${src%/*}")-$name   # (an instance has the same name on each target)
    # (the GEMM's reference is in its test; its LDS is a static array)
    lang= stat=0
    case $name in
    decode_attn_sm90a_*_grid_*) t=decode objs="$out/ref_decode.o" dyn=1 lang=-DEMU_CUDA ;;
    decode_attn_sm90a_*_ring_*) t=decode objs="$out/ref_decode.o" dyn=1 lang="-DEMU_CUDA -DEMU_STATIC_SMEM" stat=1 ;;
    decode_attn_sm90a_*) t=decode objs="$out/ref_decode.o" dyn=0 lang="-DEMU_CUDA -DEMU_DECODE_REGISTER -DEMU_STATIC_SMEM" stat=1 ;;
    decode_attn_*) t=decode objs="$out/ref_decode.o" dyn=1 ;;
    mla_decode_sm90a_*) t=mla_core objs="$out/ref_mla.o" dyn=1 lang=-DEMU_CUDA ;;
    mla_decode_*) t=mla_core objs="$out/ref_mla.o" dyn=1 ;;
    mla_block_sm90a_*) t=mla_block objs="$out/ref_mla_block.o" dyn=1 lang=-DEMU_CUDA ;;
    mla_block_*) t=mla_block objs="$out/ref_mla_block.o" dyn=1 ;;
    overlap_gemm_*) t=gemm objs= dyn=0 ;;
    *) continue ;;
    esac
    # an sm_90a source's prelude.cu.in and sm90.cu.in sections (their `#line`
    # marks name them) give way to the CUDA shim, after the instance's
    # FG_DTYPE_ define; the dynamic shared memory (`extern __shared__
    # [__align__(N)] TYPE NAME[];`) is the emulation's buffer, and so is the
    # cluster forms' `__shared__ Smem s;` (a peer maps both)
    awk '/^#line [0-9]+ "templates\// { f = $3; gsub(/"|.*\//, "", f); cut = f == "prelude.cu.in" || f == "sm90.cu.in" }
         cut && /^#define FG_DTYPE_/ { print; print "#include \"cuda_emu.h\""; next }
         !cut' "$src" |
    sed -e 's/^\( *\)extern __shared__ \(__align__([0-9]*) \)\{0,1\}\([A-Za-z_][A-Za-z_0-9 ]*\) \([A-Za-z_][A-Za-z_0-9]*\)\[\];.*$/\1\3 *\4 = reinterpret_cast<\3 *>(emu_dyn_smem);/' \
        -e 's/^\( *\)__shared__ Smem s;$/\1Smem \&s = *reinterpret_cast<Smem *>(emu_static_smem);/' \
        >"$out/src/$tag.${file##*.}"
    file=$tag.${file##*.}
    if [ $dyn = 1 ] && ! grep -q 'emu_dyn_smem' "$out/src/$file"; then
        echo "FAIL $tag: no dynamic shared memory line to replace"; failed=$((failed + 1)); continue
    fi
    if [ $stat = 1 ] && ! grep -q 'emu_static_smem' "$out/src/$file"; then
        echo "FAIL $tag: no \`__shared__ Smem s\` line to replace"; failed=$((failed + 1)); continue
    fi
    if [ -n "$lang" ] && [ "$(grep -c '^#include "cuda_emu.h"' "$out/src/$file")" != 1 ]; then
        echo "FAIL $tag: its preludes not found once to replace"; failed=$((failed + 1)); continue
    fi
    # shellcheck disable=SC2086 # $objs, $lang: words
    if ! "$cxx" -std=c++17 -O1 -g -x c++ -Itests/emu/include -Itests/emu $lang \
            -DKERNEL_SRC="\"$src_dir/$file\"" -DKERNEL="$name" \
            -c "tests/emu/${t}_kernel.cpp" -o "$out/$tag.kernel.o" >"$out/$tag.build.log" 2>&1 ||
       ! "$cxx" -o "$out/$tag" "$out/$tag.kernel.o" "$out/emu_runtime.o" "$out/${t}_test.o" \
            $objs "$out/numerics.o" -rtlib=compiler-rt -ljson-c -lpthread -lm \
            >>"$out/$tag.build.log" 2>&1; then
        cat "$out/$tag.build.log"; echo "FAIL $tag: did not build"; failed=$((failed + 1)); continue
    fi
    timeout 300 "$out/$tag" "${src%/*}/manifest.json" >"$out/$tag.log" 2>&1   # (a deadlocked emulation ends)
    echo "== $tag"
    cat "$out/$tag.log"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/$tag.log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    [ -n "$p" ] || { echo "FAIL $tag: no closing line"; failed=$((failed + 1)); continue; }
    passed=$((passed + p)) failed=$((failed + f))
done
echo "kernels on the host emulation (AMD; sm_90a: the decode grid, register and ring forms, the MLA core, the MLA block): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
