#!/bin/sh
# Generates the decode family's grid form for the host emulation's AMD target
# (tests/emu/specs) and runs each instance on the CPU against the C reference
# (tests/emu/decode_grid_emu.cpp).  Ends with `N passed, N failed`.
#   FUSEGEN=build/fusegen BUILD=build tests/emu/run.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
fusegen=${FUSEGEN:-build/fusegen}
out=${BUILD:-build}/emu
cxx=${CLANG_CXX:-clang++-19}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
rm -rf "$out" && mkdir -p "$out/gen" "$out/src" || exit 1
if ! "$fusegen" generate --out "$out/gen" --filter 'decode_attn_*' tests/emu/specs/*.yaml >"$out/generate.log" 2>&1; then
    cat "$out/generate.log"; echo "0 passed, 1 failed"; exit 1
fi
# the test's side, once: the C reference (it includes the harness's CUDA
# runtime header, so it stays apart from the emulated kernel)
if ! "$cxx" -std=c++17 -O2 -Itests/emu -Itests/gpu -I"$cuda_home/include" \
        -c tests/emu/decode_grid_emu.cpp -o "$out/test.o" ||
   ! cc -std=c17 -O2 -Itests/gpu -I"$cuda_home/include" -c tests/gpu/ref_decode.c -o "$out/ref_decode.o" ||
   ! cc -std=c17 -O2 -Itests/gpu -I"$cuda_home/include" -c tests/gpu/numerics.c -o "$out/numerics.o"; then
    echo "0 passed, 1 failed"; exit 1
fi
src_dir=$(cd "$out/src" && pwd)   # (KERNEL_SRC is included by absolute path)
passed=0 failed=0
for hip in "$out"/gen/*.hip; do
    name=$(basename "$hip" .hip)
    # the dynamic LDS is the emulation's buffer
    sed 's/^ *extern __shared__ .* smem\[\];$/    unsigned char *smem = emu_dyn_smem;/' "$hip" >"$out/src/$name.hip"
    if ! grep -q 'smem = emu_dyn_smem' "$out/src/$name.hip"; then
        echo "FAIL $name: no dynamic shared memory line to replace"; failed=$((failed + 1)); continue
    fi
    # the emulated kernel: the HIP shim, no CUDA headers
    if ! "$cxx" -std=c++17 -O1 -g -x c++ -Itests/emu/include -Itests/emu \
            -DKERNEL_SRC="\"$src_dir/$name.hip\"" -DKERNEL="$name" \
            -c tests/emu/decode_grid_kernel.cpp -o "$out/$name.kernel.o" >"$out/$name.build.log" 2>&1 ||
       ! "$cxx" -o "$out/$name" "$out/$name.kernel.o" "$out/test.o" "$out/ref_decode.o" "$out/numerics.o" \
            -rtlib=compiler-rt -lpthread -lm >>"$out/$name.build.log" 2>&1; then
        cat "$out/$name.build.log"; echo "FAIL $name: did not build"; failed=$((failed + 1)); continue
    fi
    timeout 300 "$out/$name" >"$out/$name.log" 2>&1   # (a deadlocked emulation ends)
    cat "$out/$name.log"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/$name.log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    [ -n "$p" ] || { echo "FAIL $name: no closing line"; failed=$((failed + 1)); continue; }
    passed=$((passed + p)) failed=$((failed + f))
done
echo "decode grid form, HIP on the host emulation: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
