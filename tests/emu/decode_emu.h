/* The interface between the emulated kernel (decode_kernel.cpp, one
 * translation unit with a generated decode source and its shim) and the
 * test (decode_emu.cpp, with the C reference): plain types only. */
#ifndef FG_EMU_DECODE_H
#define FG_EMU_DECODE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel's compile-time shape, as its template computed it (the
 * workspace, counters and LDS a launch is given: the manifest's figures). */
typedef struct emu_decode_dims {
    const char *name;
    int f16;                 /* storage type: 1 f16, 0 bf16 */
    int hidden, heads, kv_heads, head_dim, max_context, bmax, page, pages;
    int qkv_bias, neox, rmsnorm, window, threads;
    const float *inv_freq;   /* [head_dim / 2], the kernel's table */
    size_t ws_sum_bytes;     /* the workspace's first bytes: sums zeroed at bind (not poisoned) */
} emu_decode_dims;

extern const emu_decode_dims emu_dims;

/* The element offset of token t's row (KV head h, request b): the kernel's
 * own cache_row. */
size_t emu_cache_row(const int *block_table, int b, int h, int t);

/* One launch of `workgroups` blocks of `threads` (the planned grid and
 * block) in clusters of `cluster` along it, every workgroup at once, each on
 * a host thread of its own with the dynamic LDS smem[w] of `smem_bytes`. */
void emu_decode_launch(const void *x, const void *norm_w, const void *w_qkv, const void *b_qkv,
                       const void *w_o, void *k, void *v, const int *table, const int *pos,
                       void *y, float *ws, unsigned *counters, unsigned char *const *smem,
                       size_t smem_bytes, unsigned workgroups, unsigned cluster, int threads,
                       int batch, float eps);

#ifdef __cplusplus
}
#endif
#endif
