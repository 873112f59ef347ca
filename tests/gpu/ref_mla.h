/* C reference of the MLA decode attention core (DeepSeek V2/V3, DESIGN.md's
 * "Kernel family 2"): absorbed queries over the latent cache.
 *
 * For request b and head h, with the cache rows c_t (width D = kv_lora +
 * rope, t < len[b]) and the query q = q_abs[b][h] (width D):
 *   s_t = scale * (q . c_t),  p = softmax(s),  o[b][h] = sum_t p_t c_t[0 : kv_lora]
 *   lse[b][h] = log(sum_t exp(s_t))   (natural log)
 * scale is the whole softmax scale (YaRN's mscale^2 included by the
 * caller).  A request with len <= 0 is inactive: o = 0, lse = -inf.
 * Double accumulation over the stored values (no roundings in between). */
#ifndef FG_GPU_REF_MLA_H
#define FG_GPU_REF_MLA_H

#include <stdint.h>

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fgh_mla_cfg {
    int batch, heads, kv_lora, rope;   /* D = kv_lora + rope */
    int max_context;                   /* rows per request in a contiguous cache */
    double scale;
    fgh_dtype dtype;                   /* of q_abs and the cache */
    int page_size;                     /* 0: contiguous cache [batch, max_context, D] */
    const int32_t *page_table;         /* paged: [batch, max_pages]; the cache is a pool
                                          [pages, page_size, D] */
    int max_pages;
} fgh_mla_cfg;

/* Element offset of request b's cache row t (contiguous or through the
 * page table). */
size_t fgh_mla_row_at(const fgh_mla_cfg *c, int b, int t);

/* q_abs [batch, heads, D]; len [batch]; o [batch, heads, kv_lora] and
 * lse [batch, heads] out. */
void fgh_ref_mla(const fgh_mla_cfg *c, const void *q_abs, const void *cache, const int *len,
                 double *o, double *lse);

/* The same for request b's heads [h0, h1) alone (the same bits as the whole):
 * o [h1 - h0, kv_lora] and lse [h1 - h0], so a test can spread a large
 * reference over threads. */
void fgh_ref_mla_heads(const fgh_mla_cfg *c, const void *q_abs, const void *cache, const int *len,
                       int b, int h0, int h1, double *o, double *lse);

/* Combines per-split results of one (request, head) as a split-KV kernel's
 * last step does: n partial (o_i, lse_i) over disjoint parts of the
 * sequence into o [kv_lora] and lse; a split with lse = -inf (no tokens)
 * counts for nothing. */
void fgh_mla_combine(int kv_lora, int n, const double *const *o_parts, const double *lse_parts,
                     double *o, double *lse);

#ifdef __cplusplus
}
#endif

#endif
