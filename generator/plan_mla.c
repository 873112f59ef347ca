/* MLA decode planner, the latent attention core (templates/mla_decode.in).
 *
 * Every head reads the same latent cache, so a block takes a group of heads
 * and reads each cache tile once for all of them: heads per block, a
 * multiple of 16 (an mma tile's rows), 32 where the heads allow (half the
 * cache re-reads of 16 at 128 heads, and the output held in registers still
 * fits), else 16.  The grid (splits, head groups, B_max) should cover the
 * SMs: the request's keys are cut into splits at run time, as many as it
 * takes to give every SM a block at B_max, at most MAX_SPLITS; the last
 * split to finish combines, so one launch does it all. */
#include <math.h>
#include <stdio.h>

#include "plan.h"

#define TILE 32        /* keys per tile: 4 warps x 8 (the template's layout) */
#define STAGES 2
#define MAX_SPLITS 32     /* the combine keeps a weight per split in registers */
#define MAX_BATCH 256
#define MAX_KV_LORA 512   /* each thread holds kv_lora / 8 fp32 outputs in registers */
#define REGS_PER_THREAD 168   /* what the template takes at sm_90a (140-152), with margin */

/* The softmax scale of the model: 1 / sqrt(qk head dim), times YaRN's
 * mscale^2 where the RoPE scaling is YaRN (mscale = 0.1 mscale_all_dim
 * ln(factor) + 1 for factor > 1), as DeepSeek's attention applies it. */
static double softmax_scale(const fg_model *m)
{
    double scale = 1.0 / sqrt((double)m->mla->qk_nope_head_dim + m->mla->qk_rope_head_dim);
    const fg_rope_scaling_spec *y = m->rope ? m->rope->scaling : NULL;
    if (y && y->type == FG_SCALING_YARN && y->factor > 1) {
        const double ms = 0.1 * y->mscale_all_dim * log(y->factor) + 1.0;
        scale *= ms * ms;
    }
    return scale;
}

/* Bytes of the template's Smem struct (rounded up to 16). */
static unsigned smem_bytes(unsigned hpb, unsigned d, unsigned elem)
{
    const unsigned stride = d + 8, pstride = TILE + 8;
    const unsigned bytes = hpb * stride * elem + STAGES * TILE * stride * elem +
                           hpb * pstride * elem + hpb * TILE * 4 + 3 * hpb * 4 + 4;
    return (bytes + 15) / 16 * 16;
}

/* The cache's page size; 0: contiguous. */
static unsigned page_size(const fg_model *m)
{
    return m->kv_cache && m->kv_cache->layout == FG_KV_PAGED ? m->kv_cache->page_size : 0;
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
    if (a->kv_lora_rank % 64 || a->kv_lora_rank > MAX_KV_LORA || d % 16) {
        snprintf(buf, sizeof buf,
                 "kv_lora %u and a row of %u: the core needs kv_lora a multiple of 64 up to %u "
                 "(its output is held in registers) and the row a multiple of 16",
                 a->kv_lora_rank, d, MAX_KV_LORA);
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
    const unsigned hpb = heads % 32 == 0 ? 32 : 16, groups = heads / hpb;
    const unsigned threads = hpb / 16 * 4 * 32;
    const unsigned smem = smem_bytes(hpb, width, elem);
    if (smem > t->shared_mem_per_block) {
        fg_error(d, "mla_decode: %u heads per block need %u bytes of shared memory; %s allows %u",
                 hpb, smem, t->name, t->shared_mem_per_block);
        return -1;
    }
    /* blocks resident per SM: shared memory (1 KB of it the system's per
     * block) and registers decide */
    unsigned per_sm = t->shared_mem_per_cu / (smem + 1024);
    const unsigned by_regs = t->registers_per_cu / (threads * REGS_PER_THREAD);
    per_sm = per_sm < by_regs ? per_sm : by_regs;
    per_sm = per_sm ? per_sm : 1;
    /* as many splits as fill the resident slots once, rounded down: a
     * partial second wave would cost a whole one */
    const unsigned slots = t->compute_units * per_sm;
    unsigned splits = slots / (bmax * groups);
    splits = splits ? splits : 1;
    if (splits > MAX_SPLITS)
        splits = MAX_SPLITS;
    if (splits > smax / TILE)
        splits = smax / TILE ? smax / TILE : 1;

    fg_instance in = {0};
    char dims[96], variant[32], paged[16] = "";
    if (page)
        snprintf(paged, sizeof paged, "_p%u", page);
    snprintf(dims, sizeof dims, "nh%u_kv%u_r%u_s%u%s_b%u", heads, kv, rope, smax, paged, bmax);
    snprintf(variant, sizeof variant, "g%u_sp%u", hpb, splits);
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
    fg_instance_add_param(&in, "TILE", TILE);
    fg_instance_add_param(&in, "STAGES", STAGES);
    fg_instance_add_param(&in, "THREADS", threads);
    fg_instance_add_param(&in, "COLS_PER_WARP", kv / 4);
    fg_instance_add_param(&in, "BLOCKS_PER_SM", per_sm);
    const double scale = softmax_scale(m);   /* the model's, a launch argument */
    in.launch = (fg_launch){.grid = FG_GRID_FIXED,
                            .grid_dims = {splits, groups, bmax},
                            .block = {threads, 1, 1},
                            .cluster = {1, 1, 1},
                            .dynamic_smem = smem};
    if (splits > 1) {
        in.workspace_bytes = bmax * groups * splits * hpb * (kv + 4) * 4;
        in.counter_count = bmax * groups;
    }
    snprintf(in.path_key, sizeof in.path_key, "mla_decode/%s/%s/hpb%u/%s/%s",
             fg_arch_tag(t->arch), fg_dtype_name(m->dtype), hpb, page ? "paged" : "contiguous",
             splits > 1 ? "splits" : "one-split");

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
                 hpb, hpb == 32 ? "two mma row tiles, the output in registers still fits"
                                : "one mma row tile",
                 TILE, width, groups, groups == 1 ? "" : "s (each reads the cache)");
    fg_sb_printf(&in.reasons,
                 "%u splits of each request's keys (cut by its length at run time): %u x %u "
                 "x %u blocks for %u SMs at %u resident each (no partial second wave)%s\n",
                 splits, splits, groups, bmax, t->compute_units, per_sm,
                 splits > 1 ? "; the last split to finish combines them in split order "
                              "(deterministic), one launch"
                            : "; one split, no combine");
    fg_sb_printf(&in.reasons,
                 "%u threads (%u warps: %u head tile%s x 4 column groups), %u cp.async stages, "
                 "%u bytes of shared memory\n",
                 threads, threads / 32, hpb / 16, hpb == 16 ? "" : "s", STAGES, smem);
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
