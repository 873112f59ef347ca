// The emulated side of tests/emu's MLA block test: the block's source
// (KERNEL_SRC, its `extern __shared__` line replaced by emu_dyn_smem; kernel
// KERNEL) compiled for the host, the portable form with the HIP shim, the
// sm_90a form (EMU_CUDA; run.sh put cuda_emu.h in its preludes' place) with
// the CUDA one, and the plain-C interface of mla_block_emu.h.  The test is
// mla_block_emu.cpp.
#if !defined(EMU_CUDA)
#include <hip/hip_runtime.h>
#endif

#include KERNEL_SRC

#include "emu_common.h"
#include "emu_runtime.h"
#include "mla_block_emu.h"

extern "C" const emu_mla_block_dims emu_mla_block = {
    EMU_KERNEL_NAME, EMU_F16, kHidden, kHeads, kQLora, kKvLora, kNope, kRope, kVDim, kMaxContext,
    kPage, kBmax, kWoLd, kThreads, c_inv_freq, kCsScale,
};

static emu_mla_block_args launch_args;

static void thread_body()
{
    const emu_mla_block_args &a = launch_args;
    const auto in = [](const void *p) { return static_cast<const fg_t *>(p); };
    KERNEL(in(a.x), in(a.input_norm), in(a.w_q), in(a.w_q_a), in(a.q_a_norm), in(a.w_q_b), in(a.w_kv_a),
           in(a.kv_a_norm), in(a.w_kv_b), in(a.w_o), static_cast<fg_t *>(a.cache), a.block_table,
           a.positions, static_cast<fg_t *>(a.y), a.ws, a.counters, a.batch, a.eps, a.scale);
}

extern "C" void emu_mla_block_launch(const emu_mla_block_args *a)
{
    launch_args = *a;
    emu_run_cooperative({a->workgroups, 1, 1}, a->threads, kEmuWave, a->smem, thread_body);
}
