// The emulated side of tests/emu's GEMM test: the overlap family's GEMM for
// AMD (KERNEL_SRC, from templates/overlap_gemm_hip.in; kernel KERNEL; its
// LDS a static array, which the shim makes a static) compiled for the host
// with the HIP shim, and the plain-C interface of gemm_emu.h.  The test is
// gemm_emu.cpp.
#include <hip/hip_runtime.h>

#include KERNEL_SRC

#include "emu_common.h"
#include "emu_runtime.h"
#include "gemm_emu.h"

extern "C" const emu_gemm_dims emu_gemm = {
    EMU_KERNEL_NAME, EMU_F16,
    N, K, BM, BN, BK, GROUP_M, XCDS, GRID, THREADS,
};

extern "C" int emu_gemm_lds_at(int row, int c) { return lds_at(row, c); }

static struct Launch {
    const fg_t *a, *w;
    fg_t *c;
    int m_rows;
} launch_args;

static void thread_body()
{
    const Launch &l = launch_args;
    KERNEL(l.a, l.w, l.c, l.m_rows);
}

extern "C" void emu_gemm_launch(const void *a, const void *w, void *c, int m_rows, int grid)
{
    launch_args = {(const fg_t *)a, (const fg_t *)w, (fg_t *)c, m_rows};
    emu_run_grid({(unsigned)grid, 1, 1}, THREADS, thread_body);
}
