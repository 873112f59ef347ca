/* MLA decode planner, the latent attention core (templates/mla_decode.in,
 * and templates/mla_decode_portable.in on targets without clusters).
 *
 * Every head reads the same latent cache, so a block takes a group of heads
 * and reads each cache tile once for all of them: 64 heads per block on
 * wgmma where the heads and a kv_lora of 512 allow (the wgmma form), else a
 * multiple of 16 on mma.sync (an mma tile's rows), 32 where the heads allow
 * (half the cache re-reads of 16, and the output held in registers still
 * fits), else 16.  One block per SM, with as many bulk-copy stages as its
 * shared memory holds (at most MAX_STAGES): the stages in flight are what
 * reach the read ceiling.  The grid (splits, head groups, B_max) should
 * cover the SMs: the request's keys are cut into splits at run time, as many
 * as it takes to give every SM a block at B_max, as clusters of up to
 * MAX_CLUSTER splits that merge on chip, and up to MAX_CLUSTERS of those
 * whose slices the last cluster merges, so one launch does it all.
 *
 * The portable form (plan_portable; AMD, and sm_90 targets that say they
 * have no clusters): on sm_90 64 heads a workgroup where the heads allow (a
 * tile then serves 64 heads: the cache is read a quarter as often as at
 * 16), with the cluster form's wgmma main loop where the cluster planner
 * would run it (kv_lora 512: 256 threads, tiles of 64 keys in two stages),
 * else 512 threads on mma.sync; else 32, else 16 a workgroup of 256 on
 * mma.sync; on AMD 16 heads a workgroup of 4 waves (MFMA's 16 columns; the
 * 64 KB LDS).  On mma.sync and MFMA tiles of 32 keys (16 where 32 overflow
 * the shared memory), by cp.async into several buffers on sm_90, through
 * registers on AMD, fp32 sums; the splits that fill the workgroups the GPU
 * holds at once in the fewest waves (portable_splits, up to 64), merged in
 * global memory in one level or two (portable_split_group). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "plan.h"
#include "rope.h"

#define TILE 32        /* keys per tile: a row per lane of the loading warp (mma form) */
#define WG_HEADS 64    /* the wgmma form: heads per block (wgmma's 64 rows), keys per tile */
#define WG_KV_LORA 512 /* its accumulators: 2 warpgroups x 2 x n128 columns */
#define MAX_STAGES 6      /* 5 tiles in flight, 185 KB: past what an SM needs at the read
                           * ceiling (4.5 TB/s x ~2 us of loaded latency / 132 SMs, ~68 KB) */
#define MAX_CLUSTER 8     /* the portable cluster size */
#define MAX_CLUSTERS 16   /* the last cluster's merge reads this many slices per column */
#define MAX_TAIL_ROW_BYTES 4096u   /* what the last cluster's merge reads per head row */
#define CANDIDATE_WAVES 2u          /* the waves a tuning candidate or entry may take at B_max */
#define MAX_BATCH 256
#define MAX_KV_LORA 512   /* each thread holds kv_lora / 8 fp32 outputs in registers */

/* The softmax scale of the model: 1 / sqrt(qk head dim), times YaRN's
 * mscale^2 where the RoPE scaling is YaRN, as DeepSeek's attention applies it. */
static double softmax_scale(const fg_model *m)
{
    const double scale = 1.0 / sqrt((double)m->mla->qk_nope_head_dim + m->mla->qk_rope_head_dim);
    return m->rope ? scale * fg_rope_softmax_mscale2(m->rope) : scale;
}

/* Bytes of the wgmma form's SmemWg (Q and two stages of 64 swizzled rows,
 * P, three row arrays, an mbarrier a stage's chunk and the ticket, rounded
 * up to its 1024-byte alignment) and 1024 for aligning the dynamic shared
 * memory to it. */
static unsigned smem_bytes_wgmma(unsigned d, unsigned elem)
{
    const unsigned region = WG_HEADS * d * elem;
    const unsigned bytes = 3 * region + WG_HEADS * 64 * elem + 3 * WG_HEADS * 4 + 2 * (d / 64) * 8 + 4;
    return (bytes + 1023) / 1024 * 1024 + 1024;
}

/* Bytes of the mma form's Smem struct (rounded up to 16). */
static unsigned smem_bytes(unsigned hpb, unsigned d, unsigned elem, unsigned stages,
                           unsigned teams)
{
    const unsigned stride = d + 8, pstride = TILE + 8, sstride = TILE + 8;
    const unsigned team = hpb * pstride * elem + 4 * hpb * sstride * 4 + 3 * hpb * 4;
    unsigned bytes = hpb * stride * elem + stages * TILE * stride * elem + teams * team;
    bytes = (bytes + 7) / 8 * 8 + stages * teams * 8 + 4;   /* the mbarriers, the ticket */
    return (bytes + 15) / 16 * 16;
}

/* Clusters of c blocks resident at once at one block per SM.  A GPC holds
 * whole clusters, and the H200's GPCs (14 to 18 SMs) held 30 clusters of 4
 * at one block per SM (132 SMs; docs/performance.md), which GPC sizes such
 * as 4 x 18 + 2 x 16 + 2 x 14 give; those sizes give 14 clusters of 8.
 * Other sm_90a parts are scaled by their SM count; 2 SMs share a TPC, so
 * clusters of 2 reach every SM. */
static unsigned clusters_resident(const fg_target *t, unsigned c)
{
    const unsigned sms = t->compute_units;
    return c <= 2 ? sms / c : c == 4 ? sms * 30 / 132 : sms * 14 / 132 * 8 / c;
}

/* A block's shape for `heads` heads per GPU: heads per block, a multiple of
 * 16 (32 where the heads allow: half the cache re-reads of 16 at 128 heads);
 * two teams of warps taking tiles in turn where the registers allow (16
 * heads: 2 x 4 warps), so one's softmax overlaps the other's mma; the fewest
 * stages the teams need (one more than they read at once). */
typedef struct {
    unsigned hpb, teams, threads, min_stages, tile;
    int wgmma;
} block_shape;

/* The block of `hpb` heads, if `heads` heads per GPU and kv_lora allow it:
 * 64 only on wgmma (its rows; kv_lora 512 fills its accumulators), 32 and 16
 * on mma.sync. */
static bool shape_for(unsigned heads, unsigned kv_lora, unsigned hpb, block_shape *b)
{
    if (hpb == WG_HEADS) {
        *b = (block_shape){.hpb = WG_HEADS, .teams = 1, .threads = 256, .min_stages = 2,
                           .tile = WG_HEADS, .wgmma = 1};
        return heads % WG_HEADS == 0 && kv_lora == WG_KV_LORA;
    }
    *b = (block_shape){.hpb = hpb, .tile = TILE};
    b->teams = hpb == 16 ? 2 : 1;
    b->threads = b->teams * hpb / 16 * 4 * 32;
    b->min_stages = b->teams + 1;
    return (hpb == 16 || hpb == 32) && heads % hpb == 0;
}

/* Heads per block, most first: the planner takes the first the heads allow,
 * the tuning candidates every one. */
static const unsigned BLOCK_HEADS[] = {WG_HEADS, 32, 16};
#define NBLOCK_HEADS (sizeof BLOCK_HEADS / sizeof BLOCK_HEADS[0])

/* The planner's shape: the most heads per block the heads allow. */
static block_shape shape_of(unsigned heads, unsigned kv_lora)
{
    block_shape b;
    for (size_t i = 0; i < NBLOCK_HEADS; i++)
        if (shape_for(heads, kv_lora, BLOCK_HEADS[i], &b))
            return b;
    shape_for(heads, kv_lora, 16, &b);   /* unsupported() has checked whole groups of 16 */
    return b;
}

/* The shared memory of a block of shape b with `stages` stages. */
static unsigned shape_smem(block_shape b, unsigned d, unsigned elem, unsigned stages)
{
    return b.wgmma ? smem_bytes_wgmma(d, elem) : smem_bytes(b.hpb, d, elem, stages, b.teams);
}

/* An instance's workspace of `bytes`, worked out in 64 bits: past the
 * registry's 32-bit field it is refused, and `in` freed.  (The splits fill
 * the GPU's workgroups once, so a workspace stays near slots x rows, about
 * 10^8 bytes at the spec rules' largest target: this guards the arithmetic
 * against a rule that changes, as plan_decode does.) */
static int set_workspace(fg_instance *in, unsigned long long bytes, fg_diag *d)
{
    if (bytes > UINT32_MAX) {
        fg_error(d, "%s: a workspace of %llu bytes does not fit the registry's 32-bit field", in->name,
                 bytes);
        fg_instance_free(in);
        return -1;
    }
    in->workspace_bytes = (unsigned)bytes;
    return 0;
}

/* The instance dimensions in every mla_decode name: heads, kv_lora, rope,
 * S_max, the page size where paged, B_max. */
static void mla_dims(const fg_model *m, unsigned bmax, char dims[96])
{
    const fg_mla *a = m->mla;
    char paged[16] = "";
    if (fg_kv_page(m))
        snprintf(paged, sizeof paged, "_p%u", fg_kv_page(m));
    snprintf(dims, 96, "nh%u_kv%u_r%u_s%u%s_b%u", a->heads / a->tensor_parallel, a->kv_lora_rank,
             a->qk_rope_head_dim, m->max_context, paged, bmax);
}

/* An mla_decode instance of template tmpl named by dims and variant, with
 * what every form shares: its key parameters (a call's batch may be below
 * B_max) and the row width D. */
static int mla_instance_init(fg_instance *in, const fg_model *m, const fg_target *t,
                             unsigned bmax, const char *dims, const char *variant,
                             const char *tmpl, fg_diag *d)
{
    const fg_mla *a = m->mla;
    if (!fg_instance_name(in->name, "mla_decode", t->arch, fg_dtype_name(m->dtype), dims,
                          variant)) {
        fg_error(d, "cannot name an mla_decode instance");
        return -1;
    }
    in->family = "mla_decode";
    in->op = "mla_decode";
    in->template_name = tmpl;
    in->target = t;
    in->dtype = m->dtype;
    fg_instance_add_param(in, "HEADS", a->heads / a->tensor_parallel);
    fg_instance_add_param(in, "KV_LORA", a->kv_lora_rank);
    fg_instance_add_param(in, "ROPE_DIM", a->qk_rope_head_dim);
    fg_instance_add_param(in, "MAX_CONTEXT", m->max_context);
    fg_instance_add_param(in, "PAGE_SIZE", fg_kv_page(m));
    fg_instance_add_param(in, "BMAX", bmax);
    in->nkey_params = 6;
    in->key_max_mask = 1u << 5;   /* a call's batch may be below B_max */
    fg_instance_add_param(in, "D", a->kv_lora_rank + a->qk_rope_head_dim);
    return 0;
}

/* explain's first line, what the instance is for: the same for every form. */
static void used_for_reason(fg_instance *in, const fg_model *m, unsigned bmax)
{
    const fg_mla *a = m->mla;
    fg_sb_printf(&in->reasons, "used for: the latent attention core of %s (%u heads per GPU at "
                               "tensor parallel %u), batch up to %u\n",
                 m->name, a->heads / a->tensor_parallel, a->tensor_parallel, bmax);
}

/* explain's line on the softmax scale, a launch argument: the same for
 * every form. */
static void scale_reason(fg_instance *in, const fg_model *m)
{
    const fg_mla *a = m->mla;
    const double scale = softmax_scale(m);
    fg_sb_printf(&in->reasons, "%s's softmax scale (the launch's `scale`) %.9g: 1/sqrt(%u + %u)%s\n",
                 m->name, scale, a->qk_nope_head_dim, a->qk_rope_head_dim,
                 scale * sqrt((double)a->qk_nope_head_dim + a->qk_rope_head_dim) > 1.0 + 1e-12
                     ? ", times YaRN's mscale^2 (0.1 mscale_all_dim ln(factor) + 1, squared)"
                     : "");
}

/* explain's line on a paged cache: where pages are whole tiles (a tile
 * starts on a whole number of tiles, so it lies in one page), a block-table
 * lookup a tile (the mma form's producers look up a window of 32 tiles'
 * pages ahead), else a row at a time. */
static void paged_reason(fg_instance *in, unsigned page, unsigned tile, bool windowed)
{
    if (page)
        fg_sb_printf(&in->reasons, "paged cache: %u-token pages through the block table, %s\n",
                     page, page % tile ? "row by row"
                           : windowed ? "a lookup a tile (it lies in one page), 32 tiles' "
                                        "pages looked up ahead"
                                      : "a lookup a tile (it lies in one page)");
}

/* ---- the portable form (templates/mla_decode_portable.in) ----
 * For targets without thread-block clusters (max_cluster_size 0: the AMD
 * GPUs, and sm_90 where a target says so, to check the same algorithm on an
 * H200): a workgroup takes a group of heads of one request over one split of
 * its keys, tiles of PORTABLE_TILE keys in shared memory; the scores and P.V
 * on the matrix units (mma.sync m16n8k16 / MFMA 16x16x16), fp32 sums; the
 * splits merge in global memory in up to two levels of tickets.  The shape
 * (portable_shape) is the planner's: heads a workgroup, threads, the parts
 * of the row the scores are split over, tile, stages, workgroups a CU; the
 * template static_asserts each. */
#define PORTABLE_TILE 32       /* 2 key blocks of 16, or 1 where the LDS needs (AMD: 64 keys' rows
                                * overflow its 64 KB) */
#define PORTABLE_MAX_SPLITS 64 /* 8 groups of 8 at the most: each merge reads 8 partials a head */
#define PORTABLE_ONE_LEVEL 4   /* splits up to this many merge in one level */
#define PORTABLE_WGMMA_FEW_SPLIT_TILES 4 /* the wgmma form: a request of at most this many tiles
                                          * a split over one merge level's splits takes just those
                                          * (a split's partial is 64 heads x 512 columns, 64 KB, and
                                          * one SM merges a group's): at 128 heads B = 1 S = 1K on
                                          * an H200 4 splits of 4 tiles took 24.5 us against 28.5
                                          * for 16 of 1 in two levels; at S = 4K 16 splits of 4
                                          * took 36.3 against 33.0 for 64 of 1, so longer requests
                                          * keep the usual cut */
/* The wgmma form's splits meet at a barrier and each merges a slice of the
 * heads over every split's partial (one level, spread over the splits)
 * where the two-level merge would run and the whole grid is resident at
 * once (a cooperative launch, so the barrier cannot wait on a workgroup
 * that never starts): at 128 heads B = 1 S = 4K on an H200 each level of 8
 * partials, 512 KB read by one SM, took most of the 34 us.  Not on AMD: the
 * host emulation runs workgroups one after another (no barrier between
 * them), and no AMD GPU has timed it. */
#define PORTABLE_WGMMA_COOP_MERGE 1
#define PORTABLE_MAX_STAGES 4  /* sm_90: 3 tiles in flight, 112 KB at DeepSeek's row: past the ~68 KB
                                * an SM needs at the read ceiling (MAX_STAGES above) */
#define PORTABLE_CUDA_BLOCKS 2 /* workgroups an SM at most (256 threads at <= 128 registers) */
#define PORTABLE_REGS_BASE 40  /* registers past O's and the P.V fragments: the scores' sums,
                                * addresses, the softmax's, loop state */

/* A shape of the portable form on a target. */
typedef struct {
    unsigned hpb, threads, parts, tile, stages, per_cu, smem, regs;
    bool q_lds;   /* Q's rows in shared memory (sm_90), not its fragments in registers (AMD) */
    bool wgmma;   /* sm_90: the cluster form's wgmma main loop (mla_wgmma.in) */
} portable_shape;

/* Why the cluster form's wgmma main loop (mla_wgmma.in) does not take
 * model m on sm_90 target t at 64 heads a block, or NULL with its block
 * shape in *b: what the cluster planner checks before it runs that loop
 * (shape_for's 64 heads and kv_lora 512, unsupported()'s row of whole
 * 64-column chunks and the shared memory of its stages). */
static const char *wgmma_misfit(const fg_model *m, const fg_target *t, block_shape *b, char why[160])
{
    const fg_mla *a = m->mla;
    const unsigned heads = a->heads / a->tensor_parallel, kv = a->kv_lora_rank;
    const unsigned d = kv + a->qk_rope_head_dim;
    const bool fits = shape_for(heads, kv, WG_HEADS, b);
    const unsigned smem = shape_smem(*b, d, fg_dtype_bytes(m->dtype), b->min_stages);
    if (!fits)
        snprintf(why, 160, "%u heads per GPU and kv_lora %u: it takes a multiple of %u heads and "
                           "kv_lora %u", heads, kv, WG_HEADS, WG_KV_LORA);
    else if (d % 64)
        snprintf(why, 160, "a row of %u: it takes whole 64-column chunks", d);
    else if (smem > t->shared_mem_per_block || smem + 1024 > t->shared_mem_per_cu)
        snprintf(why, 160, "its %u bytes of shared memory: %s allows %u a block", smem, t->name,
                 t->shared_mem_per_block);
    else
        return NULL;
    return why;
}

/* Bytes of the portable form's Smem: Q's rows (sm_90's; AMD holds Q in
 * registers) and the tile buffers' (8 elements apart, 16-byte aligned), the
 * partial scores, P, three row arrays and the ticket (rounded up to 16). */
static unsigned portable_smem(const portable_shape *p, unsigned d, unsigned elem)
{
    const unsigned rows = (p->q_lds ? p->hpb : 0) + p->stages * p->tile;
    const unsigned bytes = rows * (d + 8) * elem + p->parts * p->hpb * (p->tile + 4) * 4 +
                           p->hpb * (p->tile + 8) * elem + 3 * p->hpb * 4 + 4;
    return (bytes + 15) / 16 * 16;
}

/* The shape for hpb heads a workgroup on target t, model m; false if the
 * matrix products or the shared memory do not take it.  sm_90: 8 warps at
 * 16 heads, else 16 (a tile then serves 32 or 64 heads), the warps over
 * m-tiles x parts of the row for the scores; Q's rows in shared memory
 * (the registers are O's: 64 a thread at 64 heads); tiles by cp.async into
 * 2 .. PORTABLE_MAX_STAGES buffers, the most whose shared memory fits the
 * workgroups an SM its registers allow (at most PORTABLE_CUDA_BLOCKS).
 * AMD: 4 waves and 16 heads (MFMA's N), the key blocks of a tile x parts of
 * the row, Q's fragments in registers; one tile buffer (the next tile in
 * registers); the workgroups a CU its LDS allows (at most 2). */
static bool portable_shape_for(const fg_model *m, const fg_target *t, unsigned hpb, portable_shape *p)
{
    const fg_mla *a = m->mla;
    const unsigned kv = a->kv_lora_rank, d = kv + a->qk_rope_head_dim, elem = fg_dtype_bytes(m->dtype);
    const bool amd = fg_arch_is_amd(t->arch);
    char why[160];
    block_shape wg;
    if (!amd && hpb == WG_HEADS && !wgmma_misfit(m, t, &wg, why)) {
        /* the cluster form's loop and layout (its block shape): warpgroup 0
         * scoring the whole row (one part) */
        *p = (portable_shape){.hpb = wg.hpb, .threads = wg.threads, .parts = 1, .tile = wg.tile,
                              .stages = wg.min_stages, .per_cu = 1,
                              .smem = shape_smem(wg, d, elem, wg.min_stages), .q_lds = true,
                              .wgmma = true};
        return true;
    }
    const unsigned threads = amd || hpb == 16 ? 256 : 512, waves = threads / t->warp_size;
    /* P.V: a wave's output columns whole 16-byte vectors a lane (AMD),
     * n-tile pairs (sm_90) */
    if ((amd && hpb != 16) || hpb % 16 || kv % (amd ? waves * 128 : waves * 16) || d % (amd ? 32 : 16))
        return false;
    for (unsigned tile = PORTABLE_TILE; tile >= 16; tile /= 2) {
        *p = (portable_shape){.hpb = hpb, .threads = threads, .tile = tile, .q_lds = !amd};
        p->parts = amd ? waves / (tile / 16) : waves / (hpb / 16);
        if (amd) {
            p->stages = 1;
            p->smem = portable_smem(p, d, elem);
            if (p->smem > t->shared_mem_per_block)
                continue;
            p->per_cu = t->shared_mem_per_cu / (p->smem + 1024);
            p->per_cu = p->per_cu > 2 ? 2 : p->per_cu ? p->per_cu : 1;
            return true;
        }
        /* a thread's registers across the tile loop: O (hpb x kv over the
         * threads), 16 keys' V fragments of its columns and P's of an
         * m-tile, and the rest */
        p->regs = hpb * kv / threads + 4 * (kv / waves / 16) + 4 + PORTABLE_REGS_BASE;
        unsigned per_cu = t->registers_per_cu / (threads * p->regs);
        per_cu = per_cu > PORTABLE_CUDA_BLOCKS ? PORTABLE_CUDA_BLOCKS : per_cu ? per_cu : 1;
        for (; per_cu >= 1; per_cu--) {
            for (p->stages = PORTABLE_MAX_STAGES; p->stages >= 2; p->stages--) {
                p->smem = portable_smem(p, d, elem);
                if (p->smem <= t->shared_mem_per_block && per_cu * (p->smem + 1024) <= t->shared_mem_per_cu)
                    break;
            }
            if (p->stages >= 2) {
                p->per_cu = per_cu;
                return true;
            }
        }
    }
    return false;
}

/* The portable form's shape for model m on target t: the most heads a
 * workgroup (64, 32, 16 on sm_90; 16 on AMD) that divide the heads and fit;
 * false if none does. */
static bool portable_shape_of(const fg_model *m, const fg_target *t, portable_shape *p)
{
    const unsigned heads = m->mla->heads / m->mla->tensor_parallel;
    for (unsigned hpb = 64; hpb >= 16; hpb /= 2)
        if (heads % hpb == 0 && portable_shape_for(m, t, hpb, p))
            return true;
    return false;
}

/* Why the portable form does not fit model m on target t, or NULL (past
 * the checks every form makes, in unsupported()): its 16-head shape is the
 * least it needs. */
static const char *portable_unsupported(const fg_model *m, const fg_target *t)
{
    static char buf[240];
    const fg_mla *a = m->mla;
    const unsigned d = a->kv_lora_rank + a->qk_rope_head_dim;
    const bool amd = fg_arch_is_amd(t->arch);
    /* P.V: a warp's columns whole n-tile pairs (8 warps x 16); a wave's
     * lanes whole 16-byte vectors of V (4 waves x 16 lanes x 8); the
     * scores: the row in k-steps of 16 (sm_90), chunks of 32 (AMD) */
    const unsigned kv_unit = amd ? 256 / t->warp_size * 16 * 8 : 256 / 32 * 16;
    portable_shape p;
    if (amd && t->warp_size != 64)
        snprintf(buf, sizeof buf, "waves of %u: the portable form's AMD matrix products take waves "
                                  "of 64", t->warp_size);
    else if (a->kv_lora_rank % kv_unit || a->kv_lora_rank > MAX_KV_LORA || d % 32)
        snprintf(buf, sizeof buf, "kv_lora %u and a row of %u: the portable form's matrix products "
                                  "need kv_lora a multiple of %u and at most %u (O in registers), and the "
                                  "row a multiple of 32 on %s",
                 a->kv_lora_rank, d, kv_unit, MAX_KV_LORA, t->name);
    else if (!portable_shape_for(m, t, 16, &p)) {
        p = (portable_shape){.hpb = 16, .threads = 256, .tile = 16, .stages = amd ? 1 : 2, .q_lds = !amd};
        p.parts = amd ? 256 / t->warp_size : 8;
        snprintf(buf, sizeof buf, "a row of %u: 16 keys and 16 heads need %u bytes of shared "
                                  "memory; %s allows %u", d,
                 portable_smem(&p, d, fg_dtype_bytes(m->dtype)), t->name, t->shared_mem_per_block);
    } else
        return NULL;
    return buf;
}

/* Why the core is not emitted for model m on target t, or NULL. */
static const char *unsupported(const fg_model *m, const fg_target *t)
{
    static char buf[200];
    const fg_mla *a = m->mla;
    const unsigned heads = a->heads / a->tensor_parallel, d = a->kv_lora_rank + a->qk_rope_head_dim;
    const unsigned page = fg_kv_page(m);
    if (heads % 16) {   /* (every form: the matrix products' 16 rows) */
        snprintf(buf, sizeof buf, "%u heads per GPU: the core takes heads in groups of 16", heads);
        return buf;
    }
    if (page && m->max_context % page) {
        snprintf(buf, sizeof buf, "max_context %u is not a whole number of %u-token pages",
                 m->max_context, page);
        return buf;
    }
    if (t->max_cluster_size == 0)
        return portable_unsupported(m, t);
    if (t->arch != FG_ARCH_SM90A)
        return "clusters on a target that is not sm_90a: the cluster forms are CUDA";
    if (a->kv_lora_rank % 64 || a->kv_lora_rank > MAX_KV_LORA || d % 64) {
        snprintf(buf, sizeof buf,
                 "kv_lora %u and a row of %u: the core needs kv_lora a multiple of 64 up to %u "
                 "(its output is held in registers) and the row a multiple of 64 (a warp's "
                 "quarter of it in mma steps)",
                 a->kv_lora_rank, d, MAX_KV_LORA);
        return buf;
    }
    const block_shape b = shape_of(heads, a->kv_lora_rank);
    const unsigned least = shape_smem(b, d, fg_dtype_bytes(m->dtype), b.min_stages);
    if (least > t->shared_mem_per_block) {
        snprintf(buf, sizeof buf,
                 "a row of %u: %u stages of %u keys and %u heads a block need %u bytes of shared "
                 "memory; %s allows %u",
                 d, b.min_stages, b.tile, b.hpb, least, t->name, t->shared_mem_per_block);
        return buf;
    }
    return NULL;
}

/* One configuration of the core for a model and B_max: the block's shape,
 * its stages, and the splits (clusters of `cluster` blocks, `clusters` of
 * them per request and head group). */
typedef struct {
    block_shape shape;
    unsigned stages, cluster, clusters;
    bool spread;   /* no clusters: `clusters` splits meet at a barrier and each merges pieces
                    * (the planner's choice only: tuning entries and candidates are clusters) */
    bool balanced; /* spread, and the requests' tiles cut by their lengths at run time over
                    * the `clusters` blocks of each head group (BALANCED in mla_decode.in) */
} mla_cfg;

/* The spread merge (SPREAD in mla_decode.in) where every (request, head
 * group) pair at B_max gets at least SPREAD_MIN_SPLITS splits with all of
 * them on the SMs at once: a cooperative launch of one block per SM, the
 * splits' partials merged in one level spread over them all.  At 16 heads
 * B = 1 the clusters' two levels (112 splits, clusters of 8, then a tail
 * over 14 slices) took ~4.9 of the 10 us at S = 1K; on an H200 the spread
 * merge was 7-28% faster at B_max 1, 2 and 4, and at B = 16 (4 and 8
 * splits) 2.5% faster at 128 heads S = 16K and 5% at 16 heads S = 1K, but
 * with 2 splits (16 heads B = 64) 1.4-4.7% slower than a cluster of 2
 * merging over DSMEM (docs/performance.md, issue 8). */
#define SPREAD_MIN_SPLITS 4

/* The balanced deal (BALANCED in mla_decode.in): the wgmma form's blocks
 * (every SM a block, so a cooperative launch) take the requests' tiles cut
 * at run time by the lengths: each request in even runs on blocks of its
 * own, or, where many short requests would each hold a block, the whole
 * sequence cut evenly; so that no SM waits on a longer request's splits.
 * Up to 64 requests (a lane or two of a warp each), and more than half as
 * many as a head group's blocks: then at uniform lengths each request is a
 * block's whole run, as the fixed splits have it (128 heads B = 64 on an
 * H100: level at uniform lengths, 35% faster on --ramp at 16K at stop 65;
 * stop 70's last-holder merge and restart charge took the ramp from 291 to
 * 263 us there, 118 to 92 at 4K), while with
 * fewer the deal cuts requests at uniform lengths too and its merge costs
 * 3-4 us more than the fixed splits' (B = 16) or 2x (B = 1). */
#define BALANCED_MAX_BATCH 64u
#define SPREAD_FEW_SPLITS 8   /* up to here each thread merges whole vectors (mla_decode.in's kFewSplits) */

/* Splits per pair for the spread merge at B_max, or 0 where it does not
 * apply (fewer than SPREAD_MIN_SPLITS per pair, or more than the tiles of
 * S_max: a split without a tile does nothing). */
static unsigned spread_splits(const fg_model *m, const fg_target *t, block_shape b, unsigned bmax)
{
    const unsigned pairs = bmax * (m->mla->heads / m->mla->tensor_parallel / b.hpb);
    const unsigned splits = t->compute_units / pairs, tiles = m->max_context / b.tile;
    if (splits < SPREAD_MIN_SPLITS || splits > tiles)
        return 0;
    /* past SPREAD_FEW_SPLITS the merge's pieces are a head's run of v 16-byte
     * vectors, the fewest that give each split at most one (mla_decode.in's
     * piece_vecs): whole runs of a row, and whole vectors' threads */
    const unsigned vecs = m->mla->kv_lora_rank / 8;
    unsigned v = 1;
    while (v < vecs && b.hpb * (vecs / v) > splits)
        v *= 2;
    return splits <= SPREAD_FEW_SPLITS || (vecs % v == 0 && b.threads % v == 0) ? splits : 0;
}

/* The most stages (at most MAX_STAGES) of shape b whose shared memory fits
 * a block, at least the shape's fewest (the wgmma form has room for 2). */
static unsigned most_stages(block_shape b, unsigned width, unsigned elem, const fg_target *t)
{
    unsigned stages = b.wgmma ? b.min_stages : MAX_STAGES;
    while (stages > b.min_stages && shape_smem(b, width, elem, stages) > t->shared_mem_per_block)
        stages--;
    return stages;
}

/* Why splits in clusters of c blocks do not fit a block of shape b, or
 * NULL: c a power of two up to MAX_CLUSTER and the target's, no more splits
 * than the longest request has tiles, and (c > 1) rank j merges a slice of
 * kv / c columns, a row's threads (threads / hpb of them) a float4 each per
 * step. */
static const char *cluster_misfit(const fg_model *m, const fg_target *t, block_shape b,
                                  unsigned c, char why[200])
{
    const unsigned kv = m->mla->kv_lora_rank, max_splits = m->max_context / b.tile;
    if (!c || c & (c - 1) || c > MAX_CLUSTER || c > (max_splits ? max_splits : 1))
        snprintf(why, 200, "a cluster of %u is not a power of two up to %u and the %u tiles of "
                           "S_max", c, MAX_CLUSTER, max_splits);
    else if (c > 1 && c > t->max_cluster_size)
        snprintf(why, 200, "a cluster of %u is more than %s's %u", c, t->name,
                 t->max_cluster_size);
    else if (c > 1 && kv % (c * 4 * (b.threads / b.hpb)))
        snprintf(why, 200, "kv_lora %u does not split into %u slices of whole float4 steps for "
                           "%u threads a head row", kv, c, b.threads / b.hpb);
    else
        return NULL;
    return why;
}

/* Why `p` clusters of c per request and head group do not fit B_max, or
 * NULL: no more splits than the longest request has tiles, a last
 * cluster's merge of at most MAX_TAIL_ROW_BYTES per head row, and, where
 * the keys are split, every block in at most `waves` waves at B_max (the
 * planner's own: one, past which the SMs are full and more splits only add
 * merges; a tuning candidate or entry: CANDIDATE_WAVES, for the timings to
 * say whether finer splits balance the load better than they cost). */
static const char *clusters_misfit(const fg_model *m, const fg_target *t, block_shape b,
                                   unsigned bmax, unsigned c, unsigned p, unsigned waves,
                                   char why[200])
{
    const unsigned kv = m->mla->kv_lora_rank, max_splits = m->max_context / b.tile;
    const unsigned pairs = bmax * (m->mla->heads / m->mla->tensor_parallel / b.hpb);
    if (!p || p > MAX_CLUSTERS || c * p > (max_splits ? max_splits : 1))
        snprintf(why, 200, "%u clusters of %u: expected 1 to %u, at most the %u tiles of S_max "
                           "in all", p, c, MAX_CLUSTERS, max_splits);
    else if (c * p > 1 && (size_t)p * pairs > (size_t)waves * clusters_resident(t, c))
        snprintf(why, 200, "%u x %u clusters of %u at B_max %u: more than %u wave%s of the %u %s "
                           "holds at once", p, pairs, c, bmax, waves, waves == 1 ? "" : "s",
                 clusters_resident(t, c), t->name);
    else if (p > 1 && (size_t)p * (kv / c) * 4 > MAX_TAIL_ROW_BYTES)
        snprintf(why, 200, "the last cluster's merge would read %zu bytes a head row; at most "
                           "%u", (size_t)p * (kv / c) * 4, MAX_TAIL_ROW_BYTES);
    else
        return NULL;
    return why;
}

/* The planner's configuration: the shape of shape_of(), as many stages as
 * fit, and the splits that put the most blocks on the SMs at once at B_max
 * (a partial second wave would cost a whole one; ties to the larger
 * cluster: more of the merge on chip). */
static mla_cfg model_cfg(const fg_model *m, const fg_target *t, unsigned bmax)
{
    const fg_mla *a = m->mla;
    const unsigned width = a->kv_lora_rank + a->qk_rope_head_dim, heads = a->heads / a->tensor_parallel;
    mla_cfg cf = {.shape = shape_of(heads, a->kv_lora_rank)};
    cf.stages = most_stages(cf.shape, width, fg_dtype_bytes(m->dtype), t);
    const unsigned groups = heads / cf.shape.hpb, pairs = bmax * groups;
    unsigned best = 0;
    char why[200];
    cf.cluster = cf.clusters = 1;
    const unsigned blocks = t->compute_units / groups;
    if (cf.shape.wgmma && bmax <= BALANCED_MAX_BATCH && blocks >= 2 && 2 * bmax > blocks) {
        cf.spread = cf.balanced = true, cf.clusters = blocks;
        return cf;
    }
    const unsigned spread = spread_splits(m, t, cf.shape, bmax);
    if (spread) {
        cf.spread = true, cf.clusters = spread;
        return cf;
    }
    for (unsigned c = 1; c <= MAX_CLUSTER; c *= 2) {
        if (cluster_misfit(m, t, cf.shape, c, why))
            break;
        unsigned p = MAX_CLUSTERS;   /* the most that fit (every limit tightens with p) */
        while (p >= 1 && clusters_misfit(m, t, cf.shape, bmax, c, p, 1, why))
            p--;
        if (p >= 1 && c * p * pairs >= best) {
            best = c * p * pairs;
            cf.cluster = c, cf.clusters = p;
        }
    }
    return cf;
}

/* Why configuration cf does not plan for the model at B_max, or NULL. */
static const char *cfg_misfit(const fg_model *m, const fg_target *t, unsigned bmax,
                              const mla_cfg *cf, char why[200])
{
    const fg_mla *a = m->mla;
    const unsigned width = a->kv_lora_rank + a->qk_rope_head_dim;
    const unsigned elem = fg_dtype_bytes(m->dtype);
    const unsigned most = most_stages(cf->shape, width, elem, t);
    const unsigned smem = shape_smem(cf->shape, width, elem, cf->stages);
    if (cf->stages < cf->shape.min_stages || cf->stages > most) {
        snprintf(why, 200, "%u stages: %u heads a block take %u to %u (shared memory)",
                 cf->stages, cf->shape.hpb, cf->shape.min_stages, most);
        return why;
    }
    if (smem > t->shared_mem_per_block || smem + 1024 > t->shared_mem_per_cu) {
        snprintf(why, 200, "%u heads a block at %u stages need %u bytes of shared memory; %s "
                           "allows %u", cf->shape.hpb, cf->stages, smem, t->name,
                 t->shared_mem_per_block);
        return why;
    }
    if (cluster_misfit(m, t, cf->shape, cf->cluster, why))
        return why;
    return clusters_misfit(m, t, cf->shape, bmax, cf->cluster, cf->clusters, CANDIDATE_WAVES, why);
}

bool fg_mla_row_copies_lag(const fg_target *t)
{
    return t->ceilings && t->ceilings->read_gbps / t->compute_units > FG_MLA_ROW_COPY_GBPS;
}

/* How the mma form's tiles land where a tile lies in one page, or in its
 * request's rows of a contiguous cache, at B_max of TMA_MIN_BMAX or more
 * (where the stream is the time): on a target where a copy a row lags an
 * SM's share of HBM (the H200), as bulk copies of 4 whole rows
 * (mla_decode.in's kRowGroup): 16 heads at B = 16 and 64, S = 16K, ran
 * 2.5% and 1.9% faster there than with TMA boxes (stop 80), now ahead of
 * FlashMLA in the same run; else (the H100) as 4 TMA boxes of 8 whole rows
 * (kTmaTiles), 1-2% faster there than a copy a row (stop 67; the groups
 * not timed on an H100).  Below B_max 16, where a split takes few tiles,
 * both lost to a copy a row (boxes 1-6% on both GPUs, groups level to 2%
 * on the H200; docs/performance.md). */
#define TMA_MIN_BMAX 16
static bool streamed_tiles(const block_shape *b, unsigned page, unsigned max_context, unsigned bmax)
{
    return !b->wgmma && page % TILE == 0 && max_context % TILE == 0 && bmax >= TMA_MIN_BMAX;
}

/* The wgmma form's tiles as TMA boxes, a 64 x 64 chunk each (mla_wgmma.in's
 * kTmaChunks; a tile lies in one page, or in its request's rows of a
 * contiguous cache): warpgroup 1 then issues 9 boxes a tile from one thread
 * instead of 36 cp.async a thread.  From B_max TMA_MIN_BMAX, as the mma
 * form's boxes: 128 heads at B = 64 ran 1.1-1.3% faster at S = 4K and 16K,
 * B = 16 level, but B_max 1 and 2 level to 2.5% slower (H100, stop 68). */
static bool tma_chunks(const block_shape *b, unsigned page, unsigned max_context, unsigned bmax)
{
    return b->wgmma && page % b->tile == 0 && max_context % b->tile == 0 && bmax >= TMA_MIN_BMAX;
}

/* The instance of configuration cf: named by its heads per block and
 * splits (a candidate or a tuned one also by its stages: the tuned instance
 * is the candidate that won), with `config` its explain line of where the
 * configuration came from. */
static int emit(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                const mla_cfg *cf, fg_origin from, const char *family, const char *dims,
                const char *config, fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_mla *a = m->mla;
    const unsigned heads = a->heads / a->tensor_parallel;
    const unsigned kv = a->kv_lora_rank, rope = a->qk_rope_head_dim, width = kv + rope;
    const unsigned page = fg_kv_page(m);
    const unsigned elem = fg_dtype_bytes(m->dtype);
    const block_shape shape = cf->shape;
    const unsigned hpb = shape.hpb, teams = shape.teams, threads = shape.threads;
    const unsigned groups = heads / hpb, tile = shape.tile, stages = cf->stages;
    const unsigned cluster = cf->cluster, clusters = cf->clusters;
    const unsigned smem = shape_smem(shape, width, elem, stages);
    /* a streamed tile's rows 4 a copy or as TMA boxes (streamed_tiles), else a copy a row */
    const bool streamed = streamed_tiles(&shape, page, m->max_context, bmax);
    const bool in_groups = streamed && fg_mla_row_copies_lag(t), tma = streamed && !in_groups;
    const unsigned rows_a_copy = in_groups ? 4 : 1;
    const bool chunks = tma_chunks(&shape, page, m->max_context, bmax);
    if (smem > t->shared_mem_per_block || smem + 1024 > t->shared_mem_per_cu) {
        fg_error(d, "mla_decode: %u heads per block need %u bytes of shared memory; %s allows %u",
                 hpb, smem, t->name, t->shared_mem_per_block);
        return -1;
    }
    const unsigned per_sm = 1;
    const unsigned splits = cluster * clusters;

    fg_instance in = {0};
    char variant[32];
    if (cf->balanced)
        snprintf(variant, sizeof variant, "g%u_d%u", hpb, clusters);
    else if (cf->spread)
        snprintf(variant, sizeof variant, "g%u_s%u", hpb, clusters);
    else if (from != FG_FROM_MODEL)   /* a measured configuration names its stages too */
        snprintf(variant, sizeof variant, "g%u_c%ux%u_n%u", hpb, cluster, clusters, stages);
    else
        snprintf(variant, sizeof variant, "g%u_c%ux%u", hpb, cluster, clusters);
    /* the boxes' form differs from the groups' a target of the same SMs and
     * faster HBM takes (the H200), so it is named apart ("_tb") and ranked
     * below it on a device of neither target (as the MLA block's "_rc") */
    char named[112];
    snprintf(named, sizeof named, "%s%s", dims, tma ? "_tb" : "");
    if (mla_instance_init(&in, m, t, bmax, named, variant, "mla_decode.in", d) != 0)
        return -1;
    if (tma)
        in.priority = FG_PRIORITY_TARGET_FORM;
    fg_plan_mark(&in, family, from);
    fg_instance_add_param(&in, "HEADS_PER_BLOCK", hpb);
    fg_instance_add_param(&in, "HEAD_GROUPS", groups);
    fg_instance_add_param(&in, "SPLITS", splits);
    fg_instance_add_param(&in, "CLUSTER", cluster);
    fg_instance_add_param(&in, "CLUSTERS", clusters);
    fg_instance_add_param(&in, "SPREAD", (unsigned)cf->spread);
    fg_instance_add_param(&in, "BALANCED", (unsigned)cf->balanced);
    fg_instance_add_param(&in, "TILE", tile);
    fg_instance_add_param(&in, "WGMMA", (unsigned)shape.wgmma);
    fg_instance_add_param(&in, "STAGES", stages);
    fg_instance_add_param(&in, "TMA_TILES", (unsigned)tma);
    fg_instance_add_param(&in, "TMA_CHUNKS", (unsigned)chunks);
    fg_instance_add_param(&in, "ROW_GROUP", rows_a_copy);
    fg_instance_add_param(&in, "TEAMS", teams);
    fg_instance_add_param(&in, "THREADS", threads);
    fg_instance_add_param(&in, "COLS_PER_WARP", kv / 4);
    fg_instance_add_param(&in, "BLOCKS_PER_SM", per_sm);
    in.launch = (fg_launch){.grid = FG_GRID_FIXED,
                            .grid_dims = {cf->balanced ? groups : splits, cf->balanced ? splits : groups,
                                          cf->balanced ? 1 : bmax},
                            .block = {threads, 1, 1},
                            .cluster = {cluster, 1, 1},
                            .dynamic_smem = smem,
                            .cooperative = cf->spread};
    if (cf->balanced) {   /* a partial of each (request, block) a run cuts; a ticket and a count of the
                           * partials written a (group, request) */
        const unsigned long long entries = bmax + splits - 1;
        if (set_workspace(&in, (unsigned long long)groups * entries * hpb * (kv * elem + 8), d))
            return -1;
        in.counter_count = 2 * groups * bmax;
    } else if (clusters > 1) {   /* the clusters' merged slices (normalized, stored type), their (max, sum) */
        if (set_workspace(&in, (unsigned long long)bmax * groups * clusters * hpb * (kv * elem + cluster * 8), d))
            return -1;
        /* a ticket a slice, or the spread merge's barrier a pair */
        in.counter_count = bmax * groups * cluster;
    }
    snprintf(in.path_key, sizeof in.path_key, "mla_decode/%s/%s/hpb%u/%s/%s",
             fg_arch_tag(t->arch), fg_dtype_name(m->dtype), hpb, page ? "paged" : "contiguous",
             cf->balanced ? "balanced" : cf->spread ? "spread" : clusters > 1 ? "clusters"
                                                          : splits > 1 ? "cluster" : "one-split");

    used_for_reason(&in, m, bmax);
    if (from == FG_CANDIDATE)
        fg_sb_printf(&in.reasons, "tuning candidate (generate --candidates): %u heads a block, "
                                  "%u stages, %u cluster%s of %u, not the planner's choice\n",
                     hpb, stages, clusters, clusters == 1 ? "" : "s", cluster);
    else
        fg_sb_printf(&in.reasons, "%s\n", config);
    scale_reason(&in, m);
    fg_sb_printf(&in.reasons,
                 "%u heads per block (%s): each %u-key tile of the %u-wide latent rows is read "
                 "once for them all, %u head group%s\n",
                 hpb, shape.wgmma ? "wgmma's 64 rows: the scores and P.V on warpgroup tensor-core instructions"
                      : hpb == 32 ? "two mma row tiles, the output in registers still fits"
                                  : "one mma row tile",
                 tile, width, groups, groups == 1 ? "" : "s (each reads the cache)");
    const unsigned blocks = splits * groups * bmax;
    if (cf->balanced)
        fg_sb_printf(&in.reasons,
                     "the requests' tiles cut by their lengths at run time over each head "
                     "group's %u blocks (%u x %u for %u SMs at one each: a cooperative launch), "
                     "so that no SM idles or waits on a longer request's splits: each request in "
                     "even runs on blocks of its own (at uniform lengths, fixed splits of each), "
                     "or the whole sequence cut into %u even runs, each request a run starts "
                     "counted as a few tiles more (its loop's drain and refill), where that is "
                     "shorter by more than a cut's cost (many short requests); a request wholly "
                     "in a run is written straight out, one cut over several is merged by the "
                     "last of them to finish, its own partial with the others' (a ticket: no "
                     "block waits on another's run); deterministic (fixed merge orders), one "
                     "launch\n",
                     splits, splits, groups, t->compute_units, splits);
    else {   /* fixed splits, and how they merge (the balanced deal's line says its own) */
        fg_sb_printf(&in.reasons,
                     "%u splits of each request's keys (cut by its length at run time): %u x %u "
                     "x %u blocks for %u SMs at one each (%s)\n",
                     splits, splits, groups, bmax, t->compute_units,
                     cf->spread ? "one wave: a cooperative launch"
                     : blocks <= t->compute_units ? "one wave, if the GPCs hold the clusters"
                                                  : "more blocks than SMs at B_max: waves of them");
        if (cf->spread)
            fg_sb_printf(&in.reasons,
                         "no clusters (%u or more splits a request and head group fill the SMs): "
                         "each split leaves its partial output in global memory, the %u meet at a "
                         "barrier, then each merges its pieces (a head's run of columns) over the "
                         "partials with keys into the output; deterministic (fixed merge orders), "
                         "one launch\n",
                         SPREAD_MIN_SPLITS, splits);
        else if (splits > 1)
            fg_sb_printf(&in.reasons,
                         "clusters of %u splits merge their partial outputs in shared memory, rank j "
                         "column slice j%s; deterministic (fixed merge orders), one launch\n",
                         cluster, clusters > 1 ? ", then the last of the request's clusters to finish "
                                                  "a slice merges that slice of all of them"
                                                : "");
    }
    if (shape.wgmma) {
        char fill[96];   /* what fills the stages, and why */
        if (chunks)
            snprintf(fill, sizeof fill, "TMA boxes of 64 keys x 64 columns, a chunk each (a tile lies in "
                                        "one page or request)");
        else if (page % tile || m->max_context % tile)
            snprintf(fill, sizeof fill, "cp.async (a tile spans pages)");
        else
            snprintf(fill, sizeof fill, "cp.async (TMA boxes from B_max %u: slower below)", TMA_MIN_BMAX);
        fg_sb_printf(&in.reasons,
                     "%u threads (2 warpgroups: the first computes the scores and the softmax, "
                     "each adds P.V for half of the %u output columns), %u stages of %u keys in "
                     "wgmma's 128-byte swizzle, filled by %s, %u bytes of shared memory\n",
                     threads, kv, stages, tile, fill, smem);
    } else
        fg_sb_printf(&in.reasons,
                     "%u threads (%u warps: %u team%s taking tiles in turn, each %u head tile%s x "
                     "4 column groups), %u stages of %u keys (%s), %u bytes of shared memory\n",
                     threads, threads / 32, teams, teams == 1 ? "" : "s", hpb / 16,
                     hpb == 16 ? "" : "s", stages, tile,
                     tma ? "a tile 4 TMA boxes of 8 whole rows, 128-byte swizzled: at B_max 16 "
                           "or more the stream is the time, and a copy a row keeps up with this "
                           "target's share of HBM, where the boxes stream faster than the rows' "
                           "copies (named _tb; where a build has the groups' form of the same "
                           "instance too, the runtime takes each target's own, and the groups' on a "
                           "device of neither target)"
                     : rows_a_copy > 1 ? "a bulk copy 4 whole rows a group, spread over the warps: at "
                                         "B_max 16 or more the stream is the time, and a copy a row "
                                         "lags this target's share of HBM"
                     : bmax < TMA_MIN_BMAX ? "a bulk copy a row into padded rows, spread over the warps: "
                                             "below B_max 16 a split takes few tiles, and the rows' "
                                             "copies land them soonest"
                                           : "a bulk copy a row into padded rows, spread over the warps: "
                                             "a tile spans pages",
                     smem);
    paged_reason(&in, page, tile, !shape.wgmma);
    if (!shape.wgmma && groups == 1)   /* main_loop_mma's bulk_copy_once_if */
        fg_sb_printf(&in.reasons, "cache rows copied with an L2 evict-first hint: one head group "
                                  "reads each row once a launch\n");
    return fg_plan_add(set, &in, s, ts, d);
}


static int plan_one(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                    fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_mla *a = m->mla;
    const unsigned heads = a->heads / a->tensor_parallel, kv = a->kv_lora_rank;
    char family[FG_NAME_MAX], dims[96], why[200];
    mla_dims(m, bmax, dims);
    /* the family a tuning entry names: the instance name less its configuration */
    if (!fg_instance_name(family, "mla_decode", t->arch, fg_dtype_name(m->dtype), dims, "")) {
        fg_error(d, "cannot name an mla_decode instance");
        return -1;
    }
    const fg_tuning_entry *e = fg_plan_tuning_entry(set, family);
    mla_cfg cf;
    fg_strbuf config = {0};
    int rc;
    if (e) {
        cf = (mla_cfg){.stages = e->stages, .cluster = e->cluster, .clusters = e->clusters};
        const char *bad = NULL;
        if (!shape_for(heads, kv, e->heads_per_block, &cf.shape)) {
            block_shape other;
            snprintf(why, sizeof why, "%u heads a block: %u heads per GPU and kv_lora %u take "
                                      "16%s%s", e->heads_per_block, heads, kv,
                     shape_for(heads, kv, 32, &other) ? ", 32" : "",
                     shape_for(heads, kv, WG_HEADS, &other) ? " or 64" : "");
            bad = why;
        } else if (e->threads != cf.shape.threads) {
            snprintf(why, sizeof why, "%u threads: %u heads a block run %u", e->threads,
                     cf.shape.hpb, cf.shape.threads);
            bad = why;
        } else {
            bad = cfg_misfit(m, t, bmax, &cf, why);
        }
        if (bad) {
            fg_error(d, "%s: the entry for %s (%u heads a block, %u stages, %u clusters of "
                        "%u) does not plan: %s; run fusegen tune again",
                     set->tuning->path, family, e->heads_per_block, e->stages, e->clusters,
                     e->cluster, bad);
            return -1;
        }
        char what[96];
        snprintf(what, sizeof what, "%u heads a block, %u stages, %u cluster%s of %u",
                 cf.shape.hpb, cf.stages, cf.clusters, cf.clusters == 1 ? "" : "s", cf.cluster);
        fg_plan_config_line(&config, set, e, what, 2);
        rc = emit(set, s, ts, bmax, &cf, FG_FROM_TUNING, family, dims, fg_sb_str(&config), d);
    } else {
        cf = model_cfg(m, t, bmax);
        fg_plan_config_line(&config, set, NULL, NULL, 2);
        rc = emit(set, s, ts, bmax, &cf, FG_FROM_MODEL, family, dims, fg_sb_str(&config), d);
    }
    fg_sb_free(&config);
    /* tuning candidates: every shape the heads allow, every stage count
     * that fits, every cluster size and count that plans (the model's own
     * among them when an entry replaced it); cfg_misfit decides, the loops
     * only skip what it would refuse whatever the inner choices */
    const unsigned width = kv + a->qk_rope_head_dim, elem = fg_dtype_bytes(m->dtype);
    for (size_t h = 0; set->candidates && rc == 0 && h < NBLOCK_HEADS; h++) {
        mla_cfg c = {0};
        if (!shape_for(heads, kv, BLOCK_HEADS[h], &c.shape))
            continue;
        const unsigned most = most_stages(c.shape, width, elem, t);
        for (c.stages = c.shape.min_stages; rc == 0 && c.stages <= most; c.stages++)
            for (c.cluster = 1; rc == 0 && c.cluster <= MAX_CLUSTER; c.cluster *= 2) {
                if (cluster_misfit(m, t, c.shape, c.cluster, why))
                    continue;
                for (c.clusters = 1; rc == 0 && c.clusters <= MAX_CLUSTERS; c.clusters++) {
                    const bool chosen = c.shape.hpb == cf.shape.hpb && c.stages == cf.stages &&
                                        c.cluster == cf.cluster && c.clusters == cf.clusters;
                    if (!chosen && !cfg_misfit(m, t, bmax, &c, why))
                        rc = emit(set, s, ts, bmax, &c, FG_CANDIDATE, family, dims, "", d);
                }
            }
    }
    return rc;
}

/* The splits of each of `items` (request, head group) pairs at B_max, for
 * `slots` workgroups resident at once, a request of S_max being `tiles`
 * tiles: the kernel cuts a request's keys into splits of whole tiles, so a
 * split takes ceil(tiles / splits) tiles, and the grid runs in
 * ceil(items x splits / slots) waves of them; the fewest splits (each one
 * more partial to merge) within 10% of the least time any count up to
 * PORTABLE_MAX_SPLITS (and `tiles`) gives.  (Counting a split's time as
 * 1 / splits, not in whole tiles, chose 59 splits of 16K keys in tiles of
 * 64, which the kernel cuts into 52 of 5 tiles: 64 take 4.) */
static unsigned portable_splits(unsigned items, unsigned slots, unsigned tiles)
{
    const unsigned most = tiles < 1 ? 1 : tiles > PORTABLE_MAX_SPLITS ? PORTABLE_MAX_SPLITS : tiles;
    unsigned long long time[PORTABLE_MAX_SPLITS + 1], best = ~0ull;
    for (unsigned s = 1; s <= most; s++) {
        time[s] = (unsigned long long)(((unsigned long long)items * s + slots - 1) / slots) *
                  ((tiles + s - 1) / s);
        if (time[s] < best)
            best = time[s];
    }
    for (unsigned s = 1; s < most; s++)
        if (time[s] * 10 <= best * 11)
            return s;
    return most;
}

/* Splits a first-level merge takes: all of them up to PORTABLE_ONE_LEVEL
 * (one level), else ceil(sqrt(splits)), so that each merge, the groups' in
 * parallel and then the last one, reads about sqrt(splits) partials. */
static unsigned portable_split_group(unsigned splits)
{
    if (splits <= PORTABLE_ONE_LEVEL)
        return splits;
    unsigned g = 1;
    while (g * g < splits)
        g++;
    return g;
}

/* The portable form at B_max: the shape portable_shape_of() gives, and the
 * splits of each request's keys portable_splits() has for the workgroups the
 * GPU holds at once. */
static int plan_portable(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                         fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_mla *a = m->mla;
    const bool amd = fg_arch_is_amd(t->arch);
    const unsigned heads = a->heads / a->tensor_parallel, kv = a->kv_lora_rank;
    const unsigned rope = a->qk_rope_head_dim, width = kv + rope, page = fg_kv_page(m);
    portable_shape p;
    if (!portable_shape_of(m, t, &p))
        return 0;   /* (portable_unsupported() refused what has no shape) */
    const unsigned hpb = p.hpb, groups = heads / hpb, tile = p.tile, elem = fg_dtype_bytes(m->dtype);
    const unsigned slots = t->compute_units * p.per_cu, items = groups * bmax;
    const unsigned splits = portable_splits(items, slots, m->max_context / tile);
    const unsigned group = portable_split_group(splits), nsg = (splits + group - 1) / group;
    const unsigned entries = splits + (nsg > 1 ? nsg : 0), tickets = nsg + (nsg > 1);
    /* a request of few tiles on the splits of one merge level: the wgmma
     * form's, where the usual cut would merge more than PORTABLE_ONE_LEVEL */
    const unsigned few_splits = group < PORTABLE_ONE_LEVEL ? group : PORTABLE_ONE_LEVEL;
    const unsigned few_tiles =
        p.wgmma && splits > PORTABLE_ONE_LEVEL ? few_splits * PORTABLE_WGMMA_FEW_SPLIT_TILES : 0;
    const unsigned waves = p.threads / t->warp_size, grid_waves = (items * splits + slots - 1) / slots;
    const bool coop = PORTABLE_WGMMA_COOP_MERGE && p.wgmma && nsg > 1 && grid_waves == 1;

    char dims[96], variant[32];
    mla_dims(m, bmax, dims);
    snprintf(variant, sizeof variant, "g%u_s%u_portable", hpb, splits);
    fg_instance in = {0};
    if (mla_instance_init(&in, m, t, bmax, dims, variant, "mla_decode_portable.in", d) != 0)
        return -1;
    if (splits > 1) {   /* each partial's rows (storage type) and log-sum-exps; the tickets */
        if (set_workspace(&in, (unsigned long long)bmax * groups * entries * hpb * (kv * elem + 4), d))
            return -1;
        in.counter_count = bmax * groups * (tickets + coop);   /* (and the splits' barrier) */
    }
    fg_instance_add_param(&in, "HEADS_PER_BLOCK", hpb);
    fg_instance_add_param(&in, "HEAD_GROUPS", groups);
    fg_instance_add_param(&in, "SPLITS", splits);
    fg_instance_add_param(&in, "SPLIT_GROUP", group);
    fg_instance_add_param(&in, "FEW_TILES", few_tiles);
    fg_instance_add_param(&in, "FEW_SPLITS", few_splits);
    fg_instance_add_param(&in, "COOP_MERGE", (unsigned)coop);
    fg_instance_add_param(&in, "CLUSTER", 1);
    fg_instance_add_param(&in, "CLUSTERS", splits);
    fg_instance_add_param(&in, "TILE", tile);
    fg_instance_add_param(&in, "STAGES", p.stages);
    fg_instance_add_param(&in, "THREADS", p.threads);
    fg_instance_add_param(&in, "PARTS", p.parts);
    fg_instance_add_param(&in, "WGMMA", (unsigned)p.wgmma);
    /* __launch_bounds__'s second figure: the blocks an SM (workgroups a CU,
     * one wave a SIMD each on AMD) the splits were counted for */
    fg_instance_add_param(&in, "MIN_BLOCKS", p.per_cu);
    fg_instance_add_param(&in, "SMEM_BYTES", p.smem);
    fg_instance_add_param(&in, "WORKSPACE_BYTES", (long long)in.workspace_bytes);
    fg_instance_add_param(&in, "COUNTERS", in.counter_count);
    in.launch = (fg_launch){.grid = FG_GRID_FIXED,
                            .grid_dims = {splits, groups, bmax},
                            .block = {p.threads, 1, 1},
                            .cluster = {1, 1, 1},
                            .dynamic_smem = p.smem,
                            .cooperative = coop};
    snprintf(in.path_key, sizeof in.path_key, "mla_decode/%s/%s/portable%s/%s/%s",
             fg_arch_tag(t->arch), fg_dtype_name(m->dtype), p.wgmma ? "-wgmma" : "",
             page ? "paged" : "contiguous",
             splits == 1 ? "one-split" : coop ? "spread" : nsg > 1 ? "two-level" : "merged");
    used_for_reason(&in, m, bmax);
    fg_sb_printf(&in.reasons,
                 "the portable form: %s has no thread-block clusters (max_cluster_size 0), so no "
                 "merge in distributed shared memory; %s; the scores and P.V on the matrix units "
                 "(%s), fp32 sums\n", t->name,
                 amd ? "16-byte loads, the next tile's in registers while one is computed"
                 : p.wgmma ? "tiles copied by cp.async into wgmma's 128-byte swizzle, the next in "
                             "flight while one is computed"
                           : "tiles copied by cp.async, several in flight while one is computed",
                 amd ? "MFMA 16x16x16: the scores in the free K order, P.V as O^T = V^T P^T with "
                       "the heads as N"
                 : p.wgmma ? "wgmma: m64n64k16 for the scores, m64n128k16 for P.V, the heads as M"
                           : "mma.sync m16n8k16 with ldmatrix, the heads as M");
    /* which main loop, and why */
    char why[160];
    block_shape wg;
    if (amd)
        fg_sb_printf(&in.reasons, "main loop: this template's MFMA form (AMD has no wgmma)\n");
    else if (p.wgmma)
        fg_sb_printf(&in.reasons,
                     "main loop: the cluster form's wgmma loop (mla_wgmma.in), which the cluster "
                     "planner runs for these heads and this row (a multiple of %u heads, kv_lora "
                     "%u, whole 64-column chunks, its shared memory fits): only the merge differs "
                     "from the cluster form's\n",
                     WG_HEADS, WG_KV_LORA);
    else   /* (64 heads a workgroup come first: the wgmma loop's, wherever it fits) */
        fg_sb_printf(&in.reasons,
                     "main loop: this template's mma.sync form; the cluster form's wgmma loop does "
                     "not take %s\n",
                     wgmma_misfit(m, t, &wg, why) ? why : "this shape");
    scale_reason(&in, m);
    if (p.wgmma)
        fg_sb_printf(&in.reasons,
                     "%u heads a workgroup (wgmma's 64 rows), %u head group%s: each cache tile is "
                     "read by %u workgroup%s of a request; %u threads (2 warpgroups: the first "
                     "computes the scores over the whole row and the softmax, each adds P.V for "
                     "half of the %u output columns), O in registers\n",
                     hpb, groups, groups == 1 ? "" : "s", groups, groups == 1 ? "" : "s", p.threads, kv);
    else
        fg_sb_printf(&in.reasons,
                     "%u heads a workgroup (%s), %u head group%s: each cache tile is read by %u "
                     "workgroup%s of a request; %u threads (%u %s): the scores over %u part%s of the "
                     "row (%u columns each, summed in order by the softmax)%s, P.V %u output columns "
                     "a wave for all %u heads, O in registers\n",
                     hpb,
                     amd ? "MFMA's 16 columns"
                         : hpb == 64 ? "the most, 4 mma m-tiles: a tile serves 4 times the heads of 16"
                                     : "whole mma m-tiles of 16, the most that divide the heads",
                     groups, groups == 1 ? "" : "s", groups, groups == 1 ? "" : "s", p.threads, waves,
                     amd ? "waves of 64" : "warps", p.parts, p.parts == 1 ? "" : "s", width / p.parts,
                     amd ? ", key blocks of 16 each" : hpb > 16 ? ", a warp an m-tile each" : "",
                     kv / waves, hpb);
    if (p.wgmma)
        fg_sb_printf(&in.reasons,
                     "tiles of %u keys in %u cp.async stages (one in flight while one is computed; "
                     "%u bytes of shared memory: the loop's, whose stages hold the merge's arrays "
                     "after it), %u block%s an SM\n",
                     tile, p.stages, p.smem, p.per_cu, p.per_cu == 1 ? "" : "s");
    else if (amd)
        fg_sb_printf(&in.reasons,
                     "tiles of %u keys in one LDS buffer (%u bytes of LDS), %u workgroup%s a CU by "
                     "the LDS\n",
                     tile, p.smem, p.per_cu, p.per_cu == 1 ? "" : "s");
    else
        fg_sb_printf(&in.reasons,
                     "tiles of %u keys in %u cp.async buffers (%u in flight while one is computed; "
                     "%u bytes of shared memory), %u block%s an SM: about %u registers a thread "
                     "(O, the P.V fragments and %u more; Q's rows in shared memory) of the %u an SM "
                     "has for %u threads\n",
                     tile, p.stages, p.stages - 1, p.smem, p.per_cu, p.per_cu == 1 ? "" : "s", p.regs,
                     PORTABLE_REGS_BASE, t->registers_per_cu, p.threads);
    fg_sb_printf(&in.reasons,
                 "%u split%s of each request's keys (cut by its length at run time): %u x %u x %u "
                 "workgroups for %u %s holding %u each, %u wave%s of them (the fewest splits within "
                 "10%% of the best waves-per-split, at most %u)\n",
                 splits, splits == 1 ? "" : "s", splits, groups, bmax, t->compute_units,
                 amd ? "CUs" : "SMs", p.per_cu, grid_waves, grid_waves == 1 ? "" : "s",
                 PORTABLE_MAX_SPLITS);
    if (few_tiles)
        fg_sb_printf(&in.reasons,
                     "a request of at most %u tiles (%u keys) takes at most %u splits, merged in one "
                     "level (the others leave at once): a split's partial is %u heads' rows, %u KB, "
                     "and one workgroup merges a group's, so at few keys the merges, not the tiles, "
                     "take the time; longer requests are cut over all %u splits\n",
                     few_tiles, few_tiles * tile, few_splits, hpb, hpb * kv * elem / 1024, splits);
    if (coop)
        fg_sb_printf(&in.reasons,
                     "the splits merge in global memory in one level spread over them: each leaves "
                     "its rows normalized, in %s, and their log-sum-exp, the %u splits of a "
                     "request's head group meet at a barrier (device-scope release/acquire), and "
                     "each then merges a slice of the %u heads (at most %u) over all %u partials "
                     "into the output: a cooperative launch, the grid's %u workgroups all "
                     "resident (one wave), so the barrier waits on none that has not started; two "
                     "levels through one workgroup each (%u partials of %u KB a level) were the "
                     "time at 128 heads B = 1 S = 4K on an H200\n",
                     fg_dtype_name(m->dtype), splits, hpb, (hpb + splits - 1) / splits, splits,
                     splits * groups * bmax, group, hpb * kv * elem / 1024);
    else if (nsg > 1)
        fg_sb_printf(&in.reasons,
                     "the splits merge in global memory in two levels (device-scope release/acquire "
                     "tickets, as the %s need): each leaves its rows normalized, in %s, and their "
                     "log-sum-exp; the last of each group of %u splits merges the group (%u groups, "
                     "in parallel), the last of those merges the groups\n",
                     amd ? "XCDs' L2 caches" : "SMs' L1 caches", fg_dtype_name(m->dtype), group, nsg);
    else if (splits > 1)
        fg_sb_printf(&in.reasons,
                     "the splits merge in global memory: each leaves its rows normalized, in %s, and "
                     "their log-sum-exp; the last to take its ticket (device-scope release/acquire, "
                     "as the %s need) merges them in split order (%u splits: one level up to %u)\n",
                     fg_dtype_name(m->dtype), amd ? "XCDs' L2 caches" : "SMs' L1 caches", splits,
                     PORTABLE_ONE_LEVEL);
    else
        fg_sb_printf(&in.reasons, "one split: the workgroup writes its heads' output itself\n");
    paged_reason(&in, page, tile, false);
    return fg_plan_add(set, &in, s, ts, d);
}

int fg_plan_mla(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, fg_diag *d)
{
    const fg_model *m = s->model;
    if (unsupported(m, ts->target))
        return 0;   /* fg_plan_mla_skipped() says why in explain */
    const bool portable = ts->target->max_cluster_size == 0;
    for (unsigned i = 0; i < m->batch_sizes_count; i++)
        if (m->batch_sizes[i] <= MAX_BATCH &&
            (portable ? plan_portable(set, s, ts, m->batch_sizes[i], d)
                      : plan_one(set, s, ts, m->batch_sizes[i], d)) != 0)
            return -1;
    return 0;
}

const char *fg_plan_mla_skipped(const fg_spec *s, const fg_target *t)
{
    return unsupported(s->model, t);
}

const char *fg_plan_mla_portable16(const fg_model *m, const fg_target *t, fg_mla_portable_shape *out)
{
    const char *why = portable_unsupported(m, t);   /* (its checks are the 16-head shape's) */
    portable_shape p;
    if (why)
        return why;
    if (!portable_shape_for(m, t, 16, &p))   /* (portable_unsupported() refused that) */
        return "the portable form has no 16-head shape";
    *out = (fg_mla_portable_shape){.threads = p.threads, .tile = p.tile, .stages = p.stages,
                                   .parts = p.parts, .smem = p.smem};
    return NULL;
}
