# Sourced by the GPU scripts (scripts/check-gpu.sh, bench.sh,
# check-gpu-sanitize.sh, tests/gpu/variants.sh): GPU detection and the
# build of the GPU harness with nvcc and a C compiler alone (no Debian
# packages).  Defines: fg_gpu_missing, fg_gpu_count, fg_gpu_build,
# fg_compile_kernels.  POSIX
# sh, sourced from the repository root (every caller cds there first).
#
# Environment:
#   NVCC            nvcc to use (default /usr/local/cuda/bin/nvcc, else on PATH)
#   CC              C compiler for the harness's C files (default cc)
#   BUILD           build folder (default build); the harness goes to $BUILD/gpu
#   FG_KERNELS_DIR  folder of compiled *.cubin (default: $BUILD/kernels
#                   when it holds any, else compiled here from FG_GEN_DIR)
#   FG_GEN_DIR      generated sources to compile when there are no cubins
#                   (default: generated/ when it holds any .cu)
#   FG_PORTABLE_GEN_DIR  check-gpu.sh's portable forms (h200-portable's
#                   mla_decode and mla_block sources, checked with their own
#                   manifest; default tests/gpu/gen_portable, made by
#                   $BUILD/fusegen where there is one)
#   NVCC_ARCH       harness target (default -arch=native)
#   FG_SHARD        K/N: test_decode_attn, test_mla_decode and test_mla_block
#                   check only the instances whose name hashes to K mod N, so
#                   N runs split the suite (a lent GPU machine gives each
#                   command 10 minutes); unset: all

# Every tests/gpu/test_*.cu is a test program (check-gpu.sh runs them all:
# test_rmsnorm, test_decode_attn, test_mla_decode, the overlap tests, the
# harness self-test); every tests/gpu/*.c (harness, references) is linked into
# each.  A new kernel family adds its files there (and its name to the family
# lists of bench.sh and check-gpu-sanitize.sh).
FG_GPU_TESTS=$(for f in tests/gpu/test_*.cu; do [ -e "$f" ] && basename "${f%.cu}"; done | tr '\n' ' ' | sed 's/ $//')
BUILD=${BUILD:-build}
GPU_BUILD=$BUILD/gpu

fg_have_libcuda() {
    if command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
        return 0
    fi
    for d in $(printf '%s' "${LD_LIBRARY_PATH:-}" | tr ':' ' ') /usr/lib/x86_64-linux-gnu /usr/lib64 \
             /usr/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/wsl/lib \
             /usr/lib/aarch64-linux-gnu; do
        [ -e "$d/libcuda.so.1" ] && return 0
    done
    return 1
}

# Prints how many GPUs nvidia-smi lists (0 without it).
fg_gpu_count() {
    nvidia-smi -L 2>/dev/null | grep -c '^GPU [0-9]'
}

# Prints why there is no usable GPU and returns 0, or returns 1 if there is one.
fg_gpu_missing() {
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "no GPU on this machine (no nvidia-smi)"
    elif [ "$(fg_gpu_count)" -eq 0 ]; then
        echo "no GPU on this machine (nvidia-smi lists none)"
    elif ! fg_have_libcuda; then
        echo "no GPU driver library on this machine (no libcuda.so.1)"
    else
        return 1
    fi
    return 0
}

fg_find_nvcc() {
    if [ -n "${NVCC:-}" ]; then :
    elif [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc
    else NVCC=$(command -v nvcc 2>/dev/null || true)
    fi
    [ -n "$NVCC" ] && [ -x "$NVCC" ]
}

# The nvcc flags every generated kernel is compiled with: read from
# mk/kernel-flags.mk, the one place they are written (no make needed here).
fg_kernel_nvcc_flags() {
    sed -n 's/^FUSEGEN_KERNEL_NVCC_FLAGS[[:space:]]*:=[[:space:]]*//p' mk/kernel-flags.mk
}

# Compiles every generated .cu of $1 into $2 (only the stale ones), in parallel.
fg_compile_kernels() {
    gen=$1 out=$2
    mkdir -p "$out" || return 1
    flags=$(fg_kernel_nvcc_flags)
    [ -n "$flags" ] || { echo "check-gpu: no FUSEGEN_KERNEL_NVCC_FLAGS in mk/kernel-flags.mk"; return 1; }
    jobs=$(nproc 2>/dev/null || echo 4)
    stale=$(for src in "$gen"/*.cu; do
        [ -e "$src" ] || continue
        cub="$out/$(basename "${src%.cu}").cubin"
        if [ ! -e "$cub" ] || [ "$src" -nt "$cub" ]; then printf '%s\n' "$src"; fi
    done)
    [ -z "$stale" ] && return 0
    echo "check-gpu: compiling $(printf '%s\n' "$stale" | wc -l) kernels from $gen into $out"
    # shellcheck disable=SC2016 # expanded by the inner shell
    printf '%s\n' "$stale" | NVCC=$NVCC OUTK=$out FLAGS=$flags xargs -P "$jobs" -I{} sh -c '
        src={}; cub="$OUTK/$(basename "${src%.cu}").cubin"
        # shellcheck disable=SC2086 # the flags are words
        "$NVCC" $FLAGS -o "$cub" "$src" >"$cub.log" 2>&1 || { cat "$cub.log"; rm -f "$cub"; exit 1; }'
}

# Builds the harness and its test programs into $GPU_BUILD and sets
# FG_KERNELS_DIR.  Returns non-zero (with a message) if anything fails.
fg_gpu_build() {
    if ! fg_find_nvcc; then
        echo "check-gpu: FAILED — a GPU is present but nvcc was not found (set NVCC)"
        return 1
    fi
    CC=${CC:-cc}
    command -v "$CC" >/dev/null 2>&1 || CC=gcc
    cuda_home=$(dirname "$(dirname "$NVCC")")
    arch=${NVCC_ARCH:--arch=native}
    commit_def=""
    [ -n "${FG_COMMIT:-}" ] && commit_def="-DFG_COMMIT=\"$FG_COMMIT\""
    mkdir -p "$GPU_BUILD/obj" || return 1
    # arguments: build only these test programs (an A/B needs one), else all
    fg_programs=${*:-$FG_GPU_TESTS}
    built=1
    for t in $fg_programs; do [ -x "$GPU_BUILD/$t" ] || built=0; done
    # FG_SKIP_BUILD=1: reuse the programs an earlier step of the same run built
    if [ -z "${FG_SKIP_BUILD:-}" ] || [ $built = 0 ]; then
        fg_build_programs || return 1
    fi
    fg_find_kernels
}

fg_build_programs() {
    c_objs=""
    for c in tests/gpu/*.c; do
        o="$GPU_BUILD/obj/$(basename "${c%.c}").o"
        $CC -std=c17 -O2 -g -Wall -Wextra -I"$cuda_home/include" -Itests/gpu -Iruntime/include \
            -c "$c" -o "$o" || return 1
        c_objs="$c_objs $o"
    done
    "$NVCC" -O2 -g -std=c++17 $arch -Itests/gpu -c tests/gpu/harness_cuda.cu \
        -o "$GPU_BUILD/obj/harness_cuda.o" || return 1
    # libfgrt from its sources (plain C + libdl + pthreads), when runtime/ has it
    fgrt_objs="" fgrt_def=""
    if [ -f runtime/include/fgrt.h ] && ls runtime/src/*.c >/dev/null 2>&1; then
        fgrt_def=-DFG_HAVE_FGRT
        for c in runtime/src/*.c; do
            o="$GPU_BUILD/obj/fgrt_$(basename "${c%.c}").o"
            if $CC -std=c17 -D_GNU_SOURCE -O2 -g -Wall -Iruntime/include -Iruntime/src \
                    -I"$cuda_home/include" -c "$c" -o "$o"; then
                fgrt_objs="$fgrt_objs $o"
            else
                fgrt_def=-DFG_FGRT_BUILD_FAILED
            fi
        done
        if [ "$fgrt_def" != -DFG_HAVE_FGRT ]; then
            echo "check-gpu: libfgrt did not compile; GPU tests are built without it (and say so)"
            fgrt_objs=""
        fi
    fi
    # NCCL where nvcc finds it (the serial_nccl baseline of test_overlap; a
    # test built without it says what it skipped)
    nccl_def="" nccl_lib=""
    printf '#include <nccl.h>\nint main(void) { int v; return ncclGetVersion(&v); }\n' \
        > "$GPU_BUILD/obj/nccl_probe.cu"
    if "$NVCC" -o "$GPU_BUILD/obj/nccl_probe" "$GPU_BUILD/obj/nccl_probe.cu" -lnccl \
            >/dev/null 2>&1; then
        nccl_def=-DFG_HAVE_NCCL nccl_lib=-lnccl
    else
        echo "check-gpu: NCCL not found by nvcc; test_overlap is built without its NCCL baseline"
    fi
    for t in ${fg_programs:-$FG_GPU_TESTS}; do
        def="$fgrt_def $nccl_def" objs=$fgrt_objs
        "$NVCC" -O2 -g -std=c++17 $arch -Itests/gpu -Iruntime/include -Iruntime/src $commit_def $def \
            -c "tests/gpu/$t.cu" -o "$GPU_BUILD/obj/$t.o" || return 1
        if ! "$NVCC" $arch -o "$GPU_BUILD/$t" "$GPU_BUILD/obj/$t.o" "$GPU_BUILD/obj/harness_cuda.o" \
                $c_objs $objs $nccl_lib -lcublasLt -lcublas -ldl -lpthread -lm; then
            [ "$fgrt_def" = -DFG_HAVE_FGRT ] || return 1
            echo "check-gpu: libfgrt did not link; $t is built without it (and says so)"
            "$NVCC" -O2 -g -std=c++17 $arch -Itests/gpu -Iruntime/include -Iruntime/src $commit_def $nccl_def \
                -DFG_FGRT_BUILD_FAILED -c "tests/gpu/$t.cu" -o "$GPU_BUILD/obj/$t.o" || return 1
            "$NVCC" $arch -o "$GPU_BUILD/$t" "$GPU_BUILD/obj/$t.o" "$GPU_BUILD/obj/harness_cuda.o" \
                $c_objs $nccl_lib -lcublasLt -lcublas -ldl -lpthread -lm || return 1
        fi
    done

    return 0
}

# Kernels: given, or what `make kernels` built, or compiled here.
fg_find_kernels() {
    if [ -n "${FG_KERNELS_DIR:-}" ]; then :
    elif ls "$BUILD"/kernels/*.cubin >/dev/null 2>&1; then
        FG_KERNELS_DIR=$BUILD/kernels
    else
        gen=${FG_GEN_DIR:-generated}
        if ! ls "$gen"/*.cu >/dev/null 2>&1; then
            echo "check-gpu: FAILED — no compiled kernels in $BUILD/kernels and no generated sources" \
                 "in $gen (run \`make kernels\`, or set FG_GEN_DIR / FG_KERNELS_DIR)"
            return 1
        fi
        FG_KERNELS_DIR=$GPU_BUILD/kernels
        fg_compile_kernels "$gen" "$FG_KERNELS_DIR" || return 1
    fi
    export FG_KERNELS_DIR
    return 0
}
