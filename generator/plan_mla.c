/* MLA decode planner, the latent attention core (templates/mla_decode.in).
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
 * whose slices the last cluster merges, so one launch does it all. */
#include <math.h>
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
 * P, three row arrays and the ticket, rounded up to its 1024-byte
 * alignment) and 1024 for aligning the dynamic shared memory to it. */
static unsigned smem_bytes_wgmma(unsigned d, unsigned elem)
{
    const unsigned region = WG_HEADS * d * elem;
    const unsigned bytes = 3 * region + WG_HEADS * 64 * elem + 3 * WG_HEADS * 4 + 4;
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

/* The cache's page size; 0: contiguous. */
static unsigned page_size(const fg_model *m)
{
    return m->kv_cache && m->kv_cache->layout == FG_KV_PAGED ? m->kv_cache->page_size : 0;
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

static block_shape shape_of(unsigned heads, unsigned kv_lora)
{
    if (heads % WG_HEADS == 0 && kv_lora == WG_KV_LORA)
        return (block_shape){.hpb = WG_HEADS, .teams = 1, .threads = 256, .min_stages = 2,
                             .tile = WG_HEADS, .wgmma = 1};
    block_shape b = {.hpb = heads % 32 == 0 ? 32 : 16, .tile = TILE};
    b.teams = b.hpb == 16 ? 2 : 1;
    b.threads = b.teams * b.hpb / 16 * 4 * 32;
    b.min_stages = b.teams + 1;
    return b;
}

/* The shared memory of a block of shape b with `stages` stages. */
static unsigned shape_smem(block_shape b, unsigned d, unsigned elem, unsigned stages)
{
    return b.wgmma ? smem_bytes_wgmma(d, elem) : smem_bytes(b.hpb, d, elem, stages, b.teams);
}

/* Why the core is not emitted for model m on target t, or NULL. */
static const char *unsupported(const fg_model *m, const fg_target *t)
{
    static char buf[200];
    const fg_mla *a = m->mla;
    const unsigned heads = a->heads / a->tensor_parallel, d = a->kv_lora_rank + a->qk_rope_head_dim;
    if (t->arch != FG_ARCH_SM90A)
        return "the HIP lowering of the MLA family is not emitted yet (issue 10)";
    if (heads % 16) {
        snprintf(buf, sizeof buf, "%u heads per GPU: the core takes heads in groups of 16", heads);
        return buf;
    }
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
    const unsigned page = page_size(m);
    if (page && m->max_context % page) {
        snprintf(buf, sizeof buf, "max_context %u is not a whole number of %u-token pages",
                 m->max_context, page);
        return buf;
    }
    return NULL;
}

static int plan_one(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                    fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_mla *a = m->mla;
    const unsigned heads = a->heads / a->tensor_parallel;
    const unsigned kv = a->kv_lora_rank, rope = a->qk_rope_head_dim, width = kv + rope;
    const unsigned page = page_size(m), smax = m->max_context;
    const unsigned elem = fg_dtype_bytes(m->dtype);
    const block_shape shape = shape_of(heads, kv);
    const unsigned hpb = shape.hpb, teams = shape.teams, threads = shape.threads;
    const unsigned groups = heads / hpb, tile = shape.tile;
    /* one block per SM: as many stages as fit, at most MAX_STAGES (each
     * team's tiles have their own mbarriers, so any count above the teams
     * will do; the wgmma form has room for 2); unsupported() has checked
     * that the fewest fit.  1 KB of an SM's shared memory is the system's
     * per block */
    unsigned stages = shape.wgmma ? shape.min_stages : MAX_STAGES;
    while (stages > shape.min_stages &&
           shape_smem(shape, width, elem, stages) > t->shared_mem_per_block)
        stages--;
    const unsigned smem = shape_smem(shape, width, elem, stages);
    if (smem > t->shared_mem_per_block || smem + 1024 > t->shared_mem_per_cu) {
        fg_error(d, "mla_decode: %u heads per block need %u bytes of shared memory; %s allows %u",
                 hpb, smem, t->name, t->shared_mem_per_block);
        return -1;
    }
    const unsigned per_sm = 1;
    /* the splits: clusters of c (a power of two up to MAX_CLUSTER) times
     * clusters per request p (up to MAX_CLUSTERS), chosen for the most blocks
     * resident at once at B_max (a partial second wave would cost a whole
     * one), no more splits than the longest request has tiles, and a last
     * cluster's merge of at most MAX_TAIL_ROW_BYTES per head row; ties to the
     * larger cluster (more of the merge on chip) */
    const unsigned pairs = bmax * groups, max_splits = smax / tile ? smax / tile : 1;
    unsigned cluster = 1, clusters = 1, best = 0;
    for (unsigned c = 1; c <= MAX_CLUSTER && c <= max_splits; c *= 2) {
        /* rank j merges a slice of kv / c columns, a row's threads (threads /
         * hpb of them) a float4 each per step */
        if (c > 1 && (c > t->max_cluster_size || kv % (c * 4 * (threads / hpb))))
            break;
        unsigned p = clusters_resident(t, c) / pairs;
        p = p > MAX_CLUSTERS ? MAX_CLUSTERS : p;
        p = p > max_splits / c ? max_splits / c : p;
        while (p > 1 && (size_t)p * (kv / c) * 4 > MAX_TAIL_ROW_BYTES)
            p--;
        if (p >= 1 && c * p * pairs >= best) {
            best = c * p * pairs;
            cluster = c, clusters = p;
        }
    }
    const unsigned splits = cluster * clusters;

    fg_instance in = {0};
    char dims[96], variant[32], paged[16] = "";
    if (page)
        snprintf(paged, sizeof paged, "_p%u", page);
    snprintf(dims, sizeof dims, "nh%u_kv%u_r%u_s%u%s_b%u", heads, kv, rope, smax, paged, bmax);
    snprintf(variant, sizeof variant, "g%u_c%ux%u", hpb, cluster, clusters);
    if (!fg_instance_name(in.name, "mla_decode", t->arch, fg_dtype_name(m->dtype), dims,
                          variant)) {
        fg_error(d, "cannot name an mla_decode instance");
        return -1;
    }
    in.family = "mla_decode";
    in.op = "mla_decode";
    in.template_name = "mla_decode.in";
    in.target = t;
    in.dtype = m->dtype;
    fg_instance_add_param(&in, "HEADS", heads);
    fg_instance_add_param(&in, "KV_LORA", kv);
    fg_instance_add_param(&in, "ROPE_DIM", rope);
    fg_instance_add_param(&in, "MAX_CONTEXT", smax);
    fg_instance_add_param(&in, "PAGE_SIZE", page);
    fg_instance_add_param(&in, "BMAX", bmax);
    in.nkey_params = 6;
    in.key_max_mask = 1u << 5;   /* a call's batch may be below B_max */
    fg_instance_add_param(&in, "D", width);
    fg_instance_add_param(&in, "HEADS_PER_BLOCK", hpb);
    fg_instance_add_param(&in, "HEAD_GROUPS", groups);
    fg_instance_add_param(&in, "SPLITS", splits);
    fg_instance_add_param(&in, "CLUSTER", cluster);
    fg_instance_add_param(&in, "CLUSTERS", clusters);
    fg_instance_add_param(&in, "TILE", tile);
    fg_instance_add_param(&in, "WGMMA", (unsigned)shape.wgmma);
    fg_instance_add_param(&in, "STAGES", stages);
    fg_instance_add_param(&in, "TEAMS", teams);
    fg_instance_add_param(&in, "THREADS", threads);
    fg_instance_add_param(&in, "COLS_PER_WARP", kv / 4);
    fg_instance_add_param(&in, "BLOCKS_PER_SM", per_sm);
    const double scale = softmax_scale(m);   /* the model's, a launch argument */
    in.launch = (fg_launch){.grid = FG_GRID_FIXED,
                            .grid_dims = {splits, groups, bmax},
                            .block = {threads, 1, 1},
                            .cluster = {cluster, 1, 1},
                            .dynamic_smem = smem};
    if (clusters > 1) {   /* the clusters' merged slices, each slice's (max, sum) */
        in.workspace_bytes = bmax * groups * clusters * hpb * (kv * 4 + cluster * 8);
        in.counter_count = bmax * groups * cluster;
    }
    snprintf(in.path_key, sizeof in.path_key, "mla_decode/%s/%s/hpb%u/%s/%s",
             fg_arch_tag(t->arch), fg_dtype_name(m->dtype), hpb, page ? "paged" : "contiguous",
             clusters > 1 ? "clusters" : splits > 1 ? "cluster" : "one-split");

    fg_sb_printf(&in.reasons, "used for: the latent attention core of %s (%u heads per GPU at "
                              "tensor parallel %u), batch up to %u\n",
                 m->name, heads, a->tensor_parallel, bmax);
    fg_sb_printf(&in.reasons, "%s's softmax scale (the launch's `scale`) %.9g: 1/sqrt(%u + %u)%s\n",
                 m->name, scale,
                 a->qk_nope_head_dim, rope,
                 scale * sqrt((double)a->qk_nope_head_dim + rope) > 1.0 + 1e-12
                     ? ", times YaRN's mscale^2 (0.1 mscale_all_dim ln(factor) + 1, squared)"
                     : "");
    fg_sb_printf(&in.reasons,
                 "%u heads per block (%s): each %u-key tile of the %u-wide latent rows is read "
                 "once for them all, %u head group%s\n",
                 hpb, shape.wgmma ? "wgmma's 64 rows: the scores and P.V on warpgroup tensor-core instructions"
                      : hpb == 32 ? "two mma row tiles, the output in registers still fits"
                                  : "one mma row tile",
                 tile, width, groups, groups == 1 ? "" : "s (each reads the cache)");
    const unsigned blocks = splits * groups * bmax;
    fg_sb_printf(&in.reasons,
                 "%u splits of each request's keys (cut by its length at run time): %u x %u "
                 "x %u blocks for %u SMs at one each (%s)\n",
                 splits, splits, groups, bmax, t->compute_units,
                 blocks <= t->compute_units ? "one wave, if the GPCs hold the clusters"
                                            : "more blocks than SMs at B_max: waves of them");
    if (splits > 1)
        fg_sb_printf(&in.reasons,
                     "clusters of %u splits merge their partial outputs in shared memory, rank j "
                     "column slice j%s; deterministic (fixed merge orders), one launch\n",
                     cluster, clusters > 1 ? ", then the last of the request's clusters to finish "
                                              "a slice merges that slice of all of them"
                                            : "");
    if (shape.wgmma)
        fg_sb_printf(&in.reasons,
                     "%u threads (2 warpgroups: the first computes the scores and the softmax, "
                     "each adds P.V for half of the %u output columns), %u cp.async stages of %u "
                     "keys in wgmma's 128-byte swizzle, %u bytes of shared memory\n",
                     threads, kv, stages, tile, smem);
    else
        fg_sb_printf(&in.reasons,
                     "%u threads (%u warps: %u team%s taking tiles in turn, each %u head tile%s x "
                     "4 column groups), %u bulk-copy stages of %u keys, %u bytes of shared "
                     "memory\n",
                     threads, threads / 32, teams, teams == 1 ? "" : "s", hpb / 16,
                     hpb == 16 ? "" : "s", stages, tile, smem);
    if (page)
        fg_sb_printf(&in.reasons, "paged cache: %u-token pages through the block table, row "
                                  "by row\n", page);
    return fg_plan_add(set, &in, s, ts, d);
}

int fg_plan_mla(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, fg_diag *d)
{
    const fg_model *m = s->model;
    if (unsupported(m, ts->target))
        return 0;   /* fg_plan_mla_skipped() says why in explain */
    for (unsigned i = 0; i < m->batch_sizes_count; i++)
        if (m->batch_sizes[i] <= MAX_BATCH && plan_one(set, s, ts, m->batch_sizes[i], d) != 0)
            return -1;
    return 0;
}

const char *fg_plan_mla_skipped(const fg_spec *s, const fg_target *t)
{
    return unsupported(s->model, t);
}
