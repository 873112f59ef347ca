// The emulated side of tests/emu's decode test: a decode family source
// (KERNEL_SRC, its `extern __shared__` line replaced by emu_dyn_smem and, in
// the cluster forms, its `__shared__ Smem s` by emu_static_smem; kernel
// KERNEL) compiled for the host: the grid form lowered to HIP with the HIP
// shim, the sm_90a forms (EMU_CUDA; run.sh put cuda_emu.h in their
// preludes' place) with the CUDA one; and the plain-C interface of
// decode_emu.h.  The test is decode_emu.cpp.
#if !defined(EMU_CUDA)
#include <hip/hip_runtime.h>
#endif

#include KERNEL_SRC

#include <cstdio>
#include <cstdlib>

#include "decode_emu.h"
#include "emu_common.h"
#include "emu_runtime.h"

// The register form (EMU_DECODE_REGISTER: MHA, a contiguous cache, no
// biases or window) names none of the shape the other forms' do here.
// Its fast twin sums the heads' outputs into the workspace's first
// OUT_FLOATS with atomics: zeroed at bind, and left zeroed by each launch
// for the next.
#if defined(EMU_DECODE_REGISTER)
constexpr int NKV = NH, PAGE = 0, PAGES = 0, WINDOW = 0;
constexpr bool QKV_BIAS = false;
static size_t cache_row(const int *, int b, int h, int t) { return (((size_t)b * NH + h) * SMAX + t) * HD; }
constexpr size_t kWsSumBytes = DETERMINISTIC ? 0 : OUT_FLOATS * sizeof(float);
#else
constexpr size_t kWsSumBytes = 0;
#endif

// ---- the interface ----
extern "C" const emu_decode_dims emu_dims = {
    EMU_KERNEL_NAME, EMU_F16,
    H, NH, NKV, HD, SMAX, BMAX, PAGE, PAGES, QKV_BIAS, NEOX, RMSNORM, WINDOW, THREADS, c_inv_freq,
    kWsSumBytes,
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

#if defined(EMU_CUDA)
// each block's `__shared__ Smem s` (EMU_STATIC_SMEM: run.sh made it a
// reference to this buffer), the kernel's own size, on a 1024-byte boundary
#if defined(EMU_STATIC_SMEM)
constexpr size_t kStaticBytes = sizeof(Smem);
#else
constexpr size_t kStaticBytes = 0;
#endif
static std::vector<std::vector<unsigned char>> static_smem;
static std::vector<unsigned char *> static_ptrs;
#endif

static void thread_body()
{
#if defined(EMU_CUDA)
    emu_static_smem = static_ptrs[emu_block_id()];
#endif
    const Launch &a = launch_args;
    KERNEL(a.x, a.norm_w, a.w_qkv, a.b_qkv, a.w_o, a.k, a.v, a.table, a.pos, a.y, a.ws,
           a.counters, a.batch, a.eps);
}

extern "C" void emu_decode_launch(const void *x, const void *norm_w, const void *w_qkv,
                                  const void *b_qkv, const void *w_o, void *k, void *v,
                                  const int *table, const int *pos, void *y, float *ws,
                                  unsigned *counters, unsigned char *const *smem, size_t smem_bytes,
                                  unsigned workgroups, unsigned cluster, int threads, int batch,
                                  float eps)
{
    launch_args = {(const fg_t *)x, (const fg_t *)norm_w, (const fg_t *)w_qkv, (const fg_t *)b_qkv,
                   (const fg_t *)w_o, (fg_t *)k, (fg_t *)v, table, pos, (fg_t *)y, ws, counters,
                   batch, eps};
#if defined(EMU_CUDA)
    for (unsigned w = (unsigned)static_smem.size(); w < workgroups; w++) {
        static_smem.emplace_back(kStaticBytes + 1024);
        unsigned char *p = static_smem.back().data();
        static_ptrs.push_back(p + (1024 - (uintptr_t)p % 1024) % 1024);
    }
    for (unsigned w = 0; w < workgroups; w++)
        std::memset(static_ptrs[w], 0xff, kStaticBytes);   // NaN: a read before a write shows
    emu_run_clusters({workgroups, 1, 1}, cluster, threads, smem, smem_bytes, static_ptrs.data(), kStaticBytes,
                     thread_body);
#else
    (void)smem_bytes;
    if (cluster != 1) {
        std::fprintf(stderr, "not emulated: clusters on AMD\n");
        std::abort();
    }
    emu_run_cooperative({workgroups, 1, 1}, threads, kEmuWave, smem, thread_body);
#endif
}
