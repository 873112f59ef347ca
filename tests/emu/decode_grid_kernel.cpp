// The emulated side of tests/emu's decode test: the grid form's generated
// source (KERNEL_SRC, its `extern __shared__` line replaced by emu_dyn_smem;
// kernel KERNEL) compiled for the host, the AMD one with the HIP shim, the
// sm_90a one (EMU_CUDA; run.sh put cuda_emu.h in its preludes' place) with
// the CUDA one, and the plain-C interface of decode_grid_emu.h.  The test is
// decode_grid_emu.cpp.
#if !defined(EMU_CUDA)
#include <hip/hip_runtime.h>
#endif

#include KERNEL_SRC

#include "decode_grid_emu.h"
#include "emu_common.h"
#include "emu_runtime.h"

// ---- the interface ----
extern "C" const emu_decode_dims emu_dims = {
    EMU_KERNEL_NAME, EMU_F16,
    H, NH, NKV, HD, SMAX, BMAX, PAGE, PAGES, QKV_BIAS, NEOX, RMSNORM, WINDOW, THREADS, c_inv_freq,
};

extern "C" size_t emu_cache_row(const int *block_table, int b, int h, int t)
{
    return cache_row(block_table, b, h, t);
}

static struct Launch {
    const fg_t *x, *norm_w, *w_qkv, *b_qkv, *w_o;
    fg_t *k, *v;
    const int *table, *pos;
    fg_t *y;
    float *ws;
    unsigned *counters;
    int batch;
    float eps;
} launch_args;

static void thread_body()
{
    const Launch &a = launch_args;
    KERNEL(a.x, a.norm_w, a.w_qkv, a.b_qkv, a.w_o, a.k, a.v, a.table, a.pos, a.y, a.ws,
           a.counters, a.batch, a.eps);
}

extern "C" void emu_decode_launch(const void *x, const void *norm_w, const void *w_qkv,
                                  const void *b_qkv, const void *w_o, void *k, void *v,
                                  const int *table, const int *pos, void *y, float *ws,
                                  unsigned *counters, unsigned char *const *smem,
                                  unsigned workgroups, int threads, int batch, float eps)
{
    launch_args = {(const fg_t *)x, (const fg_t *)norm_w, (const fg_t *)w_qkv, (const fg_t *)b_qkv,
                   (const fg_t *)w_o, (fg_t *)k, (fg_t *)v, table, pos, (fg_t *)y, ws, counters,
                   batch, eps};
    emu_run_cooperative({workgroups, 1, 1}, threads, kEmuWave, smem, thread_body);
}
