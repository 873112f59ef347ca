/* The interface between the emulated MLA core (mla_core_kernel.cpp: a
 * generated source of the portable form lowered to HIP, or of the sm_90a
 * form, with its shim) and its test (mla_core_emu.cpp, with the C
 * reference): plain types only. */
#ifndef FG_EMU_MLA_CORE_H
#define FG_EMU_MLA_CORE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel's compile-time shape. */
typedef struct emu_mla_dims {
    const char *name;
    int f16;   /* storage type: 1 f16, 0 bf16 */
    int heads, kv_lora, d, max_context, page, bmax, threads;
    int cooperative;   /* 1: every block at once, each its own shared memory (sm_90a); 0: in turn */
} emu_mla_dims;

extern const emu_mla_dims emu_mla;

/* One launch of `grid` in clusters of `cluster` along x (the manifest's):
 * smem[w] the dynamic shared memory (smem_bytes) of block w (x-major) where
 * cooperative (every block at once, as the sm_90a form runs), else smem[0]
 * for each in turn. */
void emu_mla_launch(const void *q, const void *cache, const int *table, const int *lengths,
                    void *out, float *lse, float *ws, unsigned *counters, const unsigned grid[3],
                    unsigned cluster, unsigned char *const *smem, size_t smem_bytes, int batch,
                    float scale);

#ifdef __cplusplus
}
#endif
#endif
