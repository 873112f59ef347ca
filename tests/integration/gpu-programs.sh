#!/bin/sh
# The GPU test programs (tests/gpu/test_*.cu) compiled and linked as
# check-gpu builds them, for sm_90a, on any machine with nvcc: an interface
# of libfgrt or the harness that changed under them fails here, not first on
# a GPU machine.  Nothing is run (check-gpu runs them, or says it skipped).
# Prints `built N of N GPU test programs (not run here)` and exits non-zero
# when one does not build.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
. tests/gpu/gpu-env.sh
if ! fg_find_nvcc; then
    echo "gpu-programs: nvcc not found: the GPU test programs were not built"
    exit 1
fi
CC=${CC:-cc}
cuda_home=$(dirname "$(dirname "$NVCC")")
arch=-arch=sm_90a
commit_def=""
GPU_BUILD=${BUILD:-build}/gpu-programs
mkdir -p "$GPU_BUILD/obj" || exit 1
log=$GPU_BUILD/build.log
n=$(echo $FG_GPU_TESTS | wc -w)
if ! fg_build_programs > "$log" 2>&1 || grep -q "libfgrt did not" "$log"; then
    cat "$log"
    echo "gpu-programs: FAILED to build the GPU test programs (log above)"
    exit 1
fi
built=0
for t in $FG_GPU_TESTS; do [ -x "$GPU_BUILD/$t" ] && built=$((built + 1)); done
echo "built $built of $n GPU test programs (not run here)"
[ "$built" -eq "$n" ]
