// The emulated side of tests/emu's MLA core test: the generated source
// (KERNEL_SRC, its `extern __shared__` line replaced by emu_dyn_smem; kernel
// KERNEL) compiled for the host, the portable form's AMD lowering with the
// HIP shim, the sm_90a form (EMU_CUDA; run.sh put cuda_emu.h in its
// preludes' place) with the CUDA one, and the plain-C interface of
// mla_core_emu.h.  The test is mla_core_emu.cpp.
#if !defined(EMU_CUDA)
#include <hip/hip_runtime.h>
#endif

#include KERNEL_SRC

#include "emu_common.h"
#include "emu_runtime.h"
#include "mla_core_emu.h"

extern "C" const emu_mla_dims emu_mla = {
    EMU_KERNEL_NAME, EMU_F16,
    kHeads, kKvLora, kD, kMaxContext, kPage, kBmax, kThreads,
#if defined(EMU_CUDA)
    1,   // the sm_90a form: a spread merge's grid barrier, a cluster's peers
#else
    0,
#endif
};

static struct Launch {
    const fg_t *q, *cache;
    fg_tensor_map cache_map, cache_chunks;
    const int *table, *lengths;
    fg_t *out;
    float *lse, *ws;
    unsigned *counters;
    int batch;
    float scale;
} launch_args;

static void thread_body()
{
    const Launch &a = launch_args;
    KERNEL(a.q, a.cache, a.cache_map, a.cache_chunks, a.table, a.lengths, a.out, a.lse, a.ws, a.counters,
           a.batch, a.scale);
}

extern "C" void emu_mla_launch(const void *q, const void *cache, const int *table,
                               const int *lengths, void *out, float *lse, float *ws,
                               unsigned *counters, const unsigned grid[3], unsigned cluster,
                               unsigned char *const *smem, size_t smem_bytes, int batch, float scale)
{
    // the runtime's cache_map and cache_chunks (ops.c): the sm_90a form's
    // boxes of kBoxRows whole rows and of 64 rows x 64 columns, zeros for the
    // portable form
#if defined(EMU_CUDA)
    const long long rows = kPage ? INT32_MAX : (long long)batch * kMaxContext;
    const fg_tensor_map map = emu_rows_map(cache, rows, kD, kBoxRows), chunks = emu_rows_map(cache, rows, kD, 64, 64);
#else
    const fg_tensor_map map = {}, chunks = {};
#endif
    launch_args = {(const fg_t *)q, (const fg_t *)cache, map, chunks, table, lengths, (fg_t *)out, lse, ws,
                   counters, batch, scale};
    const emu_dim3 g = {grid[0], grid[1], grid[2]};
#if defined(EMU_CUDA)
    emu_run_clusters(g, cluster, kThreads, smem, smem_bytes, nullptr, 0, thread_body);
    return;
#else
    (void)cluster, (void)smem_bytes;
#endif
    emu_dyn_smem = smem[0];
    emu_run_grid(g, kThreads, kEmuWave, thread_body);
}
