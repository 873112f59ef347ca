/* A peer's MLA decode, timed and checked beside fusegen's by
 * `test_mla_decode --bench --peer LIB`.
 *
 * The project ships no peer and commits none of a peer's code: LIB is a
 * shared library built elsewhere from the peer's own sources (for example
 * FlashMLA's dense decode kernels) that exports the four functions below with
 * C linkage.  The test loads it with dlopen, runs it on the same buffer sets
 * as fusegen's kernel (outputs poisoned first), checks its output against the
 * same reference, and times it the same way (CUDA-graph replays, sets
 * rotated), so the two numbers of a case are comparable.
 *
 * Layouts are the test's own:
 *   q            [batch][heads][kv_lora + rope], storage type
 *   cache        a pool of pool_pages pages [page][kv_lora + rope]
 *   block_table  [batch][pages_per_request] int32, page indices into the pool
 *   lens         [batch] int32 on the device: request b attends to rows [0, lens[b])
 *   out          [batch][heads][kv_lora], storage type
 *   lse          [batch][heads] fp32, natural log of the sum of exp(scale x score)
 * The scores are scale x (q . row) over all kv_lora + rope columns; the
 * values are the rows' first kv_lora columns. */
#ifndef FG_PEER_MLA_H
#define FG_PEER_MLA_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_peer_mla_shape {
    int batch, heads, kv_lora, rope;
    int page;                /* tokens a page (the test passes paged caches only) */
    int pages_per_request;   /* the block table's row length */
    int pool_pages;          /* pages in the cache's pool */
    int max_context;
    float scale;
    int f16;                 /* storage type: 1 fp16, 0 bf16 */
    const int *lens;         /* device: every step of this shape uses these lengths */
} fg_peer_mla_shape;

/* The peer's name and version, for the results (a static string). */
const char *fg_peer_mla_name(void);
/* Prepares the peer for one shape (scheduling metadata, scratch).  0 on
 * success; otherwise the shape is one the peer does not run, and *why (a
 * static string) says why. */
int fg_peer_mla_init(const fg_peer_mla_shape *shape, void **state, const char **why);
/* Enqueues one decode step on s (no synchronization: it is captured into a
 * CUDA graph).  0 on success. */
int fg_peer_mla_step(void *state, const void *q, const void *cache, const int *block_table,
                     const int *lens, void *out, float *lse, cudaStream_t s);
void fg_peer_mla_free(void *state);

#ifdef __cplusplus
}
#endif

#endif
