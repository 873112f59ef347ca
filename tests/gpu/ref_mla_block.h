/* C reference of a DeepSeek MLA attention block at decode (issue 9),
 * computed the explicit way (per-head K and V from the latent rows), so a
 * kernel that absorbs W_uk into q and W_uv after the attention is checked
 * against the algebra it relies on, not against itself.
 *
 * For request b, with x = its hidden state (RMSNorm'd by input_norm when
 * given) and the new token at position pos[b] (pos[b] past latent rows in
 * the cache before it):
 *   q = W_q x, or W_q_b rmsnorm(W_q_a x, q_a_norm) with q_lora   [heads, nope + rope]
 *   [c | k_pe] = W_kv_a x,  c = rmsnorm(c, kv_a_norm)              [kv_lora | rope]
 *   q_pe, k_pe rotated at pos[b] (pairs (2i, 2i+1), angle pos * inv_freq[i],
 *   cos and sin times cs_scale); the new latent row [c | k_pe] appended
 *   K_t = [W_uk_h c_t | k_pe_t], V_t = W_uv_h c_t for the rows t <= pos[b]
 *   o_h = softmax_t(scale * q_h . K_t) . V_t,  y = W_o [o_0 .. o_{heads-1}]
 * W_kv_b holds, per head, W_uk's nope rows then W_uv's v_dim rows.  With a
 * shard of the heads (weights offset to its rows, w_o_ld the full W_o's row
 * length), y is that shard's partial sum.  Double throughout, over the stored
 * values (f16 or bf16); the new row is rounded to the cache's type before
 * the attention when round_new_row is set (as a kernel stores it and reads it
 * back).  k_pe is stored with its pairs interleaved, as rotated (the layout
 * of vLLM's and FlashMLA's caches; Hugging Face's code reorders each rotated
 * vector into halves, which leaves the scores the same). */
#ifndef FG_GPU_REF_MLA_BLOCK_H
#define FG_GPU_REF_MLA_BLOCK_H

#include <stdbool.h>

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fgh_mla_block_cfg {
    int batch, hidden, heads;               /* heads: this shard's */
    int q_lora;                             /* 0: q = W_q x */
    int kv_lora, nope, rope, v_dim;         /* qk_nope / qk_rope / v head dims */
    int max_context;                        /* rows a request has in the cache */
    int w_o_ld;                             /* W_o's row length (0: heads x v_dim) */
    double eps;                             /* the RMSNorms' */
    double scale;                           /* softmax scale, YaRN's mscale^2 in it */
    double cs_scale;                        /* YaRN's factor on cos and sin (else 1) */
    const float *inv_freq;                  /* [rope / 2] */
    fgh_dtype dtype;                        /* x, the weights, the cache: f16 or bf16 */
    bool round_new_row;
} fgh_mla_block_cfg;

typedef struct fgh_mla_block_weights {
    const void *input_norm;                 /* [hidden], or NULL: x taken as is */
    const void *w_q;                        /* [heads (nope + rope), hidden] without q_lora */
    const void *w_q_a, *q_a_norm, *w_q_b;   /* [q_lora, hidden], [q_lora],
                                               [heads (nope + rope), q_lora] */
    const void *w_kv_a;                     /* [kv_lora + rope, hidden] */
    const void *kv_a_norm;                  /* [kv_lora] */
    const void *w_kv_b;                     /* [heads (nope + v_dim), kv_lora] */
    const void *w_o;                        /* [hidden, w_o_ld], this shard's columns */
} fgh_mla_block_weights;

/* x [batch, hidden]; cache [batch, max_context, kv_lora + rope] (rows <
 * pos[b] are request b's past); pos [batch], pos[b] < max_context.  Out:
 * y [batch, hidden], new_row [batch, kv_lora + rope] (before any rounding),
 * and, where not NULL, q_abs [batch, heads, kv_lora + rope]: the absorbed
 * query (W_uk_h^T q_nope | rotated q_pe) a fused kernel attends with. */
void fgh_ref_mla_block(const fgh_mla_block_cfg *c, const fgh_mla_block_weights *w,
                       const void *x, const void *cache, const int *pos, double *y,
                       double *new_row, double *q_abs);

#ifdef __cplusplus
}
#endif

#endif
