/* The interface between the emulated MLA core (mla_portable_kernel.cpp: the
 * generated .hip source of the portable form with the HIP shim) and its test
 * (mla_portable_emu.cpp, with the C reference): plain types only. */
#ifndef FG_EMU_MLA_PORTABLE_H
#define FG_EMU_MLA_PORTABLE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel's compile-time shape (the workspace, counters and LDS a launch
 * is given: the manifest's figures). */
typedef struct emu_mla_dims {
    const char *name;
    int f16;   /* storage type: 1 f16, 0 bf16 */
    int heads, kv_lora, d, max_context, page, bmax, splits, groups, threads;
} emu_mla_dims;

extern const emu_mla_dims emu_mla;

/* One launch: every workgroup of the kernel's grid, one after another. */
void emu_mla_launch(const void *q, const void *cache, const int *table, const int *lengths,
                    void *out, float *lse, float *ws, unsigned *counters, void *smem, int batch,
                    float scale);

#ifdef __cplusplus
}
#endif
#endif
