// The emulated side of tests/emu's MLA test: the MLA core's portable form
// (KERNEL_SRC, its `extern __shared__` line replaced by emu_dyn_smem; kernel
// KERNEL) compiled for the host with the HIP shim, and the plain-C interface
// of mla_portable_emu.h.  The test is mla_portable_emu.cpp.
#include <hip/hip_runtime.h>

#include KERNEL_SRC

#include "emu_common.h"
#include "emu_runtime.h"
#include "mla_portable_emu.h"

extern "C" const emu_mla_dims emu_mla = {
    EMU_KERNEL_NAME, EMU_F16,
    kHeads, kKvLora, kD, kMaxContext, kPage, kBmax, kSplits, kGroups, kThreads,
};

static struct Launch {
    const fg_t *q, *cache;
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
    KERNEL(a.q, a.cache, a.table, a.lengths, a.out, a.lse, a.ws, a.counters, a.batch, a.scale);
}

extern "C" void emu_mla_launch(const void *q, const void *cache, const int *table,
                               const int *lengths, void *out, float *lse, float *ws,
                               unsigned *counters, void *smem, int batch, float scale)
{
    launch_args = {(const fg_t *)q, (const fg_t *)cache, table, lengths, (fg_t *)out, lse, ws,
                   counters, batch, scale};
    emu_dyn_smem = (unsigned char *)smem;
    emu_run_grid({(unsigned)kSplits, (unsigned)kGroups, (unsigned)kBmax}, kThreads, kEmuWave, thread_body);
}
