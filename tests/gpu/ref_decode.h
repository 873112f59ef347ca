/* C reference of one fused decode-attention step (Llama family, MHA):
 * RMSNorm -> QKV -> RoPE -> append k, v -> attention over [0, pos] -> W_o.
 * Double accumulation; the storage roundings are the ones the contract
 * names: the normalized input, the appended cache rows and the attention
 * output o are rounded to the storage type, as an unfused block hands them
 * on; q, k, v are not rounded before use (the fused kernel keeps them in
 * fp32).  RoPE uses inv_freq = (float)(1 / theta^(2i/hd)) and the fp32 angle
 * (float)pos * inv_freq, as the generator and the kernel do. */
#ifndef FG_GPU_REF_DECODE_H
#define FG_GPU_REF_DECODE_H

#include <stdbool.h>

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fgh_decode_cfg {
    int hidden, heads, head_dim, max_context, batch;
    bool neox;            /* rotate-half RoPE; else GPT-J pairs */
    bool rmsnorm;
    double theta;
    float eps;
    fgh_dtype dtype;
} fgh_decode_cfg;

/* x [B, H], norm_w [H], w_qkv [3*NH*HD, H], w_o [H, NH*HD] in storage dtype;
 * k_cache, v_cache [B, NH, S, HD] storage dtype, updated in place (row pos);
 * pos [B] (< 0: inactive, output 0, no write); y [B, H] out (double). */
void fgh_ref_decode(const fgh_decode_cfg *c, const void *x, const void *norm_w,
                    const void *w_qkv, const void *w_o, void *k_cache, void *v_cache,
                    const int *pos, double *y);

/* The storage type's rounding of v (as bits). */
uint16_t fgh_round_to(fgh_dtype t, double v);

#ifdef __cplusplus
}
#endif

#endif
