/* C reference of one fused decode-attention step (Llama family, MHA or GQA):
 * RMSNorm -> QKV (+ bias) -> RoPE -> append k, v -> attention over
 * [max(0, pos - W + 1), pos] -> W_o.
 * Double accumulation; the storage roundings are the ones the contract
 * names: the normalized input, the appended cache rows and the attention
 * output o are rounded to the storage type, as an unfused block hands them
 * on; q, k, v are not rounded before use (the fused kernel keeps them in
 * fp32).  RoPE uses inv_freq computed in double and rounded once to float
 * (fgh_rope_inv_freq) and the fp32 angle (float)pos * inv_freq, as the
 * generator and the kernel do.
 *
 * Every field added after `dtype` means "off" when zero, so older
 * initializers keep their meaning. */
#ifndef FG_GPU_REF_DECODE_H
#define FG_GPU_REF_DECODE_H

#include <stdbool.h>

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    FGH_ROPE_SCALING_NONE,
    FGH_ROPE_SCALING_LINEAR,   /* inv_freq / factor */
    FGH_ROPE_SCALING_LLAMA3    /* Llama 3.1's per-frequency rule */
} fgh_rope_scaling_type;

/* The meaning of generator/spec.h's fg_rope_scaling_spec (and of
 * transformers' rope_scaling); only the fields of `type` are read. */
typedef struct fgh_rope_scaling {
    fgh_rope_scaling_type type;
    double factor;                              /* linear, llama3 */
    double low_freq_factor, high_freq_factor;   /* llama3 */
    uint32_t original_max_position;             /* llama3 */
} fgh_rope_scaling;

typedef struct fgh_decode_cfg {
    int hidden, heads, head_dim, max_context, batch;
    bool neox;            /* rotate-half RoPE; else GPT-J pairs */
    bool rmsnorm;
    double theta;
    float eps;
    fgh_dtype dtype;
    int kv_heads;         /* 0: == heads (MHA); must divide heads */
    int sliding_window;   /* W; 0: full attention */
    fgh_rope_scaling rope_scaling;
    const float *inv_freq; /* [head_dim / 2] as a kernel was built with; NULL: from
                              theta and rope_scaling (fgh_rope_inv_freq) */
} fgh_decode_cfg;

/* Where the cache rows live.  page_size 0: contiguous, k and v are
 * [B, NKV, S, HD] with S = max_context.  Otherwise paged as the README's
 * contract has it: k and v are pools [num_pages, NKV, page_size, HD] and
 * page_table [B, max_pages] (int32) gives the physical page that holds
 * tokens [i * page_size, (i + 1) * page_size) of request b at
 * page_table[b * max_pages + i]; pos must be < max_pages * page_size. */
typedef struct fgh_kv_view {
    void *k, *v;
    int page_size;
    const int32_t *page_table;
    int max_pages;
} fgh_kv_view;

/* x [B, H], norm_w [H], w_qkv [(NH + 2*NKV)*HD, H] (rows Q, K, V),
 * w_o [H, NH*HD] in storage dtype; query head h reads KV head
 * h / (NH / NKV).  qkv_bias [(NH + 2*NKV)*HD] storage dtype (Q, K, V, as the
 * rows of w_qkv), added after the projection and before RoPE, or NULL.
 * The cache is updated in place (row pos); pos [B] (< 0: inactive, output 0,
 * no write); y [B, H] out (double). */
void fgh_ref_decode_kv(const fgh_decode_cfg *c, const void *x, const void *norm_w,
                       const void *w_qkv, const void *qkv_bias, const void *w_o,
                       const fgh_kv_view *kv, const int *pos, double *y);

/* inv_freq[i] for i < head_dim / 2, as RoPE here uses it: the scaled
 * frequency computed in double, rounded once to float.  scaling NULL: none. */
void fgh_rope_inv_freq(double theta, int head_dim, const fgh_rope_scaling *scaling,
                       float *inv_freq);

#ifdef __cplusplus
}
#endif

#endif
