/* Fused decode attention planner (Llama family, sm_90a, batch <= 16).
 *
 * Three forms.  Above batch 4 the grid form (decode_attn_grid.in, below).
 * Up to 4: the register form (decode_attn.in) in every feasible cluster
 * shape (one cluster of 2, 4, 8 or 16 per head, two per SM at 256 threads,
 * two clusters of 2 per head, the latter with 8 W_o rows in flight), so each
 * collective size is compiled and tested inside the whole kernel; and the ring
 * form (decode_attn_ring.in), two clusters of 2 per head and one cluster of 2.
 * Priorities rank them in the order measured on the H200 (docs/performance.md)
 * and the runtime's lookup takes the highest.  Features the family does not
 * cover yet are refused by name. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "rope.h"

#define FG_MAX_HEAD_DIM 256   /* unsupported() refuses larger heads */

#define MAX_BATCH 4

/* A CTA shape: threads, what each keeps in flight, CTAs meant per SM. */
typedef struct cta_shape {
    unsigned threads, unroll, loads1, min_blocks;
    unsigned unroll3;  /* W_o rows in flight per lane group (phase 3) */
} cta_shape;

/* One 512-thread CTA per SM, 8 loads of 16 B in flight per lane (64 KB per SM). */
static const cta_shape WIDE = {512, 4, 8, 1, 4};
/* Two 256-thread CTAs per SM (at most 128 registers), 16 loads per lane in
 * phase 1: the same bytes in flight per SM, but clusters of C CTAs can then
 * share SMs, so more clusters fit at once when a GPC has SMs left over. */
static const cta_shape PAIRED = {256, 8, 16, 2, 8};
/* Batches above 1 keep B x slices in registers: 256 threads, one per SM. */
static const cta_shape BATCHED = {256, 4, 8, 1, 4};
/* WIDE with 8 W_o rows in flight: 64 KB per SM in phase 3 as in the others
 * (by Little's law 32 KB cannot stream W_o at the ceiling); measured 0.7-1.7 us
 * faster than WIDE. */
static const cta_shape WIDE_DEEP3 = {512, 4, 8, 1, 8};

/* The ring form (decode_attn_ring.in): one producer warp streams every byte
 * the CTA reads through a shared-memory ring of bulk copies; `threads`
 * consumer threads compute.  Stage size and count are fixed by the plan. */
typedef struct ring_cfg {
    unsigned threads, stage_bytes, stages, rows1, inflight;
    unsigned inflight3;     /* stages in flight while W_o streams; 0: as inflight */
    unsigned static_smem;   /* estimate of the template's Smem struct */
    bool share;             /* GQA: a KV group's CTAs share its K/V (SHARE_KV) */
    unsigned gsq, rq;       /* query heads a CTA attends for; W_qkv rows a CTA owns (the
                               template's GSQ, RQ) */
    unsigned gct, grid;     /* CTAs that split a KV stream (a head's, or with sharing a
                               group's: GROUP_CTAS), and the grid's CTAs */
    unsigned tok;           /* tokens a stage holds (the template's TOK) */
    fg_origin from;         /* the model's, a tuning entry's or a tuning candidate */
} ring_cfg;

/* Whether a GQA group's attention fits gqa_mma.in (and the HIP twin): the
 * group's heads as mma N (at most 8), head_dim a multiple of 64. */
static bool gqa_mma_shape(const fg_attention *a)
{
    return a->heads / a->kv_heads <= 8 && a->head_dim % 64 == 0;
}

/* Whether the ring shares a KV group's tiles (decode_attn_ring.in's
 * SHARE_KV): its GROUP_CTAS CTAs (ring_cfg.gct, at least GS*CPH) split the
 * group's (GS + 2) x head_dim projection rows and its tokens, each CTA
 * attending for all GS query heads
 * on tensor cores, so each K/V byte streams into one SM, not GS.  Larger
 * groups: each query head's CTAs stream it. */
static bool ring_shares(const fg_model *m)
{
    return m->attention->heads > m->attention->kv_heads && gqa_mma_shape(m->attention);
}

/* Consumer threads, in order of preference: 512 measured; 448 (14 warps)
 * tiles hidden sizes of 7 x 512 (Qwen2-7B's 3584), whose rows split evenly
 * over 7 warps but not over 8 or 16.  Where a GQA group attends on tensor
 * cores (sharing), 256 before them: 8 attention warps hold a group's o
 * fragments, K and V blocks and q (about 110 registers), which spilled under
 * the 96 that 17 warps leave; 9 warps leave 168.  Without sharing 256 is
 * skipped. */
#define RING_SHARE_THREADS 256u
static const unsigned RING_THREADS[] = {RING_SHARE_THREADS, 512u, 448u};
#define NRING_THREADS (sizeof RING_THREADS / sizeof RING_THREADS[0])
/* Stage sizes in order of preference.  16 KB first, at most RING_MAX_STAGES
 * of them: the tuning candidates (generate --candidates, H200, Llama-2-7B
 * f16 batch 1, S = 1K and 4K) put 16 KB x 8 stages (128 KB in flight) 3-6%
 * ahead of the 32 KB x 6 planned before, and on shapes not tuned (bf16, batch
 * 2 and 4, S to 16K, pages of 16, Llama-3-8B GQA) it measured 1-7% faster at
 * S = 1K (batch 4: 1-2%) and level to 2% faster at 16K, except Llama-3-8B
 * batch 1 at 8K (4% slower): fewer bytes queued ahead of the consumers' own global round trips
 * (head and grid barriers, exchanges) shorten the chain, and 128 KB still
 * keeps HBM streaming.  40 KB serves hidden 5120, whose rows are 10 KB and
 * split over 16 warps only four at a time. */
static const unsigned RING_STAGE_SIZES[] = {16384u, 40960u, 32768u};
#define RING_MAX_STAGES 8u
/* Stages in flight per CTA: 0 = the whole ring.  Capping it at 4 or 8 of 13
 * stages (64-128 KB per SM) measured no faster on the H200 (47.2 / 47.0 /
 * 47.3 us at S = 1K), so the ring is not capped; the knob stays for tuning. */
#define RING_INFLIGHT 0u
/* Every ring stage is one or two bulk copies of whole rows or token runs:
 * each bulk copy has a fixed cost (measured on the H200: 256-B W_o pieces by
 * bulk copy streamed at 2.6 TB/s, and W_qkv by 16-byte cp.async took 11 us
 * longer than by bulk copies, while runs of 8 KB and more streamed KV at
 * 4.3-4.7 TB/s). */

/* The warps a ring CTA is charged registers for: threads + 1 producer warp,
 * in groups of 4 (17 warps are charged as 20). */
static unsigned ring_warps_charged(unsigned threads)
{
    return ((threads + 32) / 32 + 3) / 4 * 4;
}

/* A ring thread's register cap: one CTA per SM. */
static unsigned ring_registers(const fg_target *t, unsigned threads)
{
    return t->registers_per_cu / (ring_warps_charged(threads) * 32) / 8 * 8;
}

/* Why the ring's stage count does not serve, or NULL.  The template's first
 * stages hold the RMSNorm weight and x's rows (the same count as its XST). */
static const char *ring_check_stages(const fg_model *m, unsigned bmax, const ring_cfg *r)
{
    if (r->stages < 4)
        return "fewer than 4 ring stages fit in shared memory";
    if ((1 + bmax) * m->hidden * 2 / r->stage_bytes + 1 > r->stages)
        return "x and the RMSNorm weight do not fit in the ring's stages";
    if (r->inflight < 1 || r->inflight > r->stages)
        return "stages in flight must be 1 to the ring's stage count";
    return NULL;
}

/* Plans the ring for a head split over c*p CTAs (with sharing: a KV group
 * over GCT, see below) with stages of stage_bytes; returns why it cannot,
 * or NULL. */
static const char *ring_plan_stage(const fg_model *m, const fg_target *t, unsigned c, unsigned p,
                                   unsigned bmax, unsigned threads, unsigned stage_bytes,
                                   ring_cfg *r)
{
    const unsigned hd = m->attention->head_dim, cph = c * p, e = 2;
    const unsigned warps = threads / 32, groups = threads / (hd / 8);
    const bool share = ring_shares(m);
    const unsigned gsq = share ? m->attention->heads / m->attention->kv_heads : 1;
    const unsigned qkv = (gsq + 2) * hd, qd = m->attention->heads * hd;   /* as the template's QKV */
    if (cph > t->max_cluster_size * p)
        return "larger than the target's largest cluster";
    /* CTAs a KV stream's tokens and rows split over: a head's c*p, or with
     * sharing a group's, GS*c*p; with two clusters a head (the preferred
     * split) a group takes its share of every SM instead, since nothing of
     * a group passes between its CTAs over DSMEM: Qwen2-7B's 4 groups fill
     * 132 SMs with 33 CTAs each where 7 x 4 left 20 idle (the grid a whole
     * number of clusters) */
    unsigned gct = gsq * cph;
    if (share && p > 1) {
        unsigned fill = t->compute_units / m->attention->kv_heads;
        while (fill * m->attention->kv_heads % c)
            fill--;
        if (fill > gct)
            gct = fill;
    }
    const unsigned grid = share ? m->attention->kv_heads * gct : m->attention->heads * cph;
    if (grid > t->compute_units)
        return "a cooperative grid of one CTA per SM must be resident at once";
    *r = (ring_cfg){.threads = threads, .stage_bytes = stage_bytes, .share = share, .gsq = gsq,
                    .gct = gct, .grid = grid};
    /* phase 1: each CTA owns qkv/cph whole rows of W_qkv (with sharing, the
     * group's rows over its CTAs, rounded up to whole stages), rows1 per
     * stage; warps/rows1 warps share a row, each over whole 256-column steps */
    r->rows1 = r->stage_bytes / (m->hidden * e);
    if (!r->rows1)
        return "a W_qkv row does not fit in a stage";
    const unsigned rq = share ? ((qkv + gct - 1) / gct + r->rows1 - 1) / r->rows1 * r->rows1
                              : qkv / cph;
    r->rq = rq;
    if ((!share && qkv % cph) || warps % r->rows1 || hd % r->rows1 || rq % r->rows1 ||
        (m->hidden / (warps / r->rows1)) % 256)
        return "W_qkv rows do not split evenly over the CTAs, stages and warps";
    /* phase 2: a stage's tokens (K, then V), in whole blocks of 16 keys on
     * tensor cores (sharing), else in whole rounds of the CTA's lane groups
     * (the template's TOK) */
    r->tok = r->stage_bytes / (2 * hd * e);
    if (r->tok < groups)   /* (the CUDA-core path's bound, kept for the tensor cores' too) */
        return "a stage holds fewer tokens than the CTA has lane groups";
    r->tok = share ? r->tok / 16 * 16 : r->tok / groups * groups;
    /* phase 3: each CTA owns whole W_o rows (hidden/grid, rounded either way),
     * rows3 per stage */
    const unsigned rows3 = r->stage_bytes / (qd * e);
    if (!rows3 || warps % rows3 || (qd / (warps / rows3)) % 256)
        return "W_o rows do not split evenly over the stages and warps";
    /* the batch's x slices (phase 1) and o slices (phase 3) in registers:
     * at most the per-thread cap less 32 (64 floats at 512 threads' 96
     * registers, which the 4-batch MHA ring measured; 136 at 256 threads',
     * where the 4-batch GQA ring's 128 compile without spills) */
    const unsigned regs = ring_registers(t, threads), vec_floats = regs - 32;
    if (bmax * (qd / (warps / rows3) / 256) * 8 > vec_floats)
        return "the attention outputs of the batch would not fit in registers";
    if (bmax * (m->hidden / (warps / r->rows1) / 256) * 8 > vec_floats)
        return "the x slices of the batch would not fit in registers (the thread's cap less 32)";
    const unsigned wpr = warps / r->rows1;
    /* per-warp softmax states: with tensor cores, per attention warp (8 at
     * most) and head */
    const unsigned wst = share ? (warps < 8 ? warps : 8) * gsq : warps;
    /* (q's fragments with tensor cores; the cluster's received states
     * without sharing) */
    r->static_smem = 16 * 16 + 16 + (share ? 16 * 32 * (hd / 32) : 0) +
                     4 * (wpr * bmax * rq + bmax * qkv + warps + 3 * wst + wst * hd +
                          bmax * gsq * (hd + 2) + (share ? 1 : c) * bmax * (hd + 2) +
                          (warps / rows3) * bmax * ((m->hidden + grid - 1) / grid) +
                          2 * bmax + (m->attention->qkv_bias ? rq : 1));
    const unsigned budget = t->shared_mem_per_block - r->static_smem - 1024;
    r->stages = budget / r->stage_bytes;
    if (r->stages > 16)
        r->stages = 16;   /* the barriers' estimate above assumes at most 16 */
    r->inflight = RING_INFLIGHT ? RING_INFLIGHT : r->stages;
    return ring_check_stages(m, bmax, r);
}

/* The ring with these threads and stage size and exactly `stages` stages,
 * `inflight` of them in flight (0: all): the model's choice, a tuning entry's
 * or a candidate's.  Why it cannot, or NULL. */
static const char *ring_plan_exact(const fg_model *m, const fg_target *t, unsigned c, unsigned p,
                                   unsigned bmax, unsigned threads, unsigned stage_bytes,
                                   unsigned stages, unsigned inflight, ring_cfg *r)
{
    const char *why = ring_plan_stage(m, t, c, p, bmax, threads, stage_bytes, r);
    if (why)
        return why;
    if (stages > r->stages)
        return "more stages than fit in shared memory";
    r->stages = stages;
    r->inflight = inflight ? inflight : stages;
    return ring_check_stages(m, bmax, r);
}

/* The ring with the preferred thread count, then the preferred stage size,
 * that plans, at most RING_MAX_STAGES stages; the first reason otherwise. */
static const char *ring_plan(const fg_model *m, const fg_target *t, unsigned c, unsigned p,
                             unsigned bmax, ring_cfg *r)
{
    const char *first = NULL;
    const bool share = ring_shares(m);
    for (size_t k = 0; k < NRING_THREADS; k++)
        for (size_t i = 0; i < sizeof RING_STAGE_SIZES / sizeof RING_STAGE_SIZES[0]; i++) {
            if ((bmax > 1 && RING_STAGE_SIZES[i] > 16384u) ||
                (RING_THREADS[k] == RING_SHARE_THREADS && !share))
                continue;
            const char *why = ring_plan_stage(m, t, c, p, bmax, RING_THREADS[k],
                                              RING_STAGE_SIZES[i], r);
            if (!why)
                return ring_plan_exact(m, t, c, p, bmax, RING_THREADS[k], RING_STAGE_SIZES[i],
                                       r->stages < RING_MAX_STAGES ? r->stages : RING_MAX_STAGES,
                                       RING_INFLIGHT, r);
            if (!first)
                first = why;
        }
    return first;
}

/* The cluster sizes of the register form's single-cluster shapes. */
static const unsigned CLUSTER_SIZES[] = {2, 4, 8, 16};
#define NCLUSTER_SIZES (sizeof CLUSTER_SIZES / sizeof CLUSTER_SIZES[0])

/* Why a model, on target t, cannot use this family yet, or NULL. */
static const char *unsupported(const fg_model *m, const fg_target *t)
{
    if (m->family != FG_FAMILY_LLAMA)
        return "family mla has its own kernels";
    const fg_attention *a = m->attention;
    if (m->rope->scaling && m->rope->scaling->type == FG_SCALING_YARN)
        return "YaRN RoPE scaling belongs to the MLA family";
    if (m->kv_cache->layout == FG_KV_PAGED && m->max_context % m->kv_cache->page_size)
        return "max_context must be a whole number of pages (the block table's row)";
    if (a->head_dim % 8 || a->head_dim < 8 || a->head_dim > FG_MAX_HEAD_DIM ||
        t->warp_size % (a->head_dim / 8))
        return "head_dim must be 8 to 256 with head_dim/8 dividing the warp size";
    return NULL;
}

/* Why the register form cannot compute this model (it is MHA over [0, pos]
 * with plain RoPE), or NULL; the ring form covers GQA, windows and scaling. */
static const char *register_form_unsupported(const fg_model *m)
{
    const fg_attention *a = m->attention;
    if (a->kv_heads != a->heads)
        return "the register form is MHA only (GQA runs in the ring form)";
    if (a->sliding_window)
        return "the register form has no sliding window (the ring form does)";
    if (m->rope->scaling && m->rope->scaling->type != FG_SCALING_NONE)
        return "the register form has no RoPE scaling (the ring form does)";
    if (m->kv_cache->layout == FG_KV_PAGED)
        return "the register form reads contiguous caches only (paged runs in the ring form)";
    if (a->qkv_bias)
        return "the register form has no q/k/v biases (the ring form does)";
    return NULL;
}

/* Why cluster size c does not fit, or NULL. */
static const char *infeasible(const fg_model *m, const fg_target *t, unsigned c, unsigned p,
                              const cta_shape *cs, unsigned bmax)
{
    const unsigned hidden = m->hidden, hd = m->attention->head_dim;
    if (p > 1 && m->attention->heads * c * p > t->compute_units * cs->min_blocks)
        return "a cooperative grid must be resident at once";
    c *= p; /* the head's CTAs split the work */
    if (c > t->max_cluster_size)
        return "larger than the target's largest cluster";
    if (hidden % (c * 256))
        return "hidden/C is not a multiple of 256 (one warp's 16-byte loads)";
    /* each lane keeps bmax x (hidden/c/256) x 8 floats of x in registers */
    if (bmax * (hidden / c / 256) * 8 > 64)
        return "the x slices of the batch would not fit in registers (more than 64 floats)";
    unsigned groups = cs->threads / (hd / 8);
    if ((hidden / c) % (groups * cs->unroll3))
        return "hidden/C output rows do not split evenly over the CTA's row groups";
    return NULL;
}

/* Preferred cluster size: the largest whose grid (one CTA per SM) fits in
 * one wave, so every head streams at once with the most parallelism per
 * head; if none fits, the smallest. */
static unsigned preferred_cluster(const fg_model *m, const fg_target *t, const cta_shape *cs,
                                  unsigned bmax, const unsigned *sizes, unsigned n)
{
    unsigned best = 0, smallest = 0;
    for (unsigned i = 0; i < n; i++) {
        if (infeasible(m, t, sizes[i], 1, cs, bmax))
            continue;
        if (!smallest)
            smallest = sizes[i];
        if (m->attention->heads * sizes[i] <= t->compute_units)
            best = sizes[i];
    }
    return best ? best : smallest;
}

/* The kernel's inv_freq table as C initializers (fg_rope_inv_freq: the one
 * definition, shared in meaning with the C reference).  The family refuses
 * the scalings it does not implement before it gets here. */
static void inv_freq_table(fg_strbuf *sb, const fg_rope *rope, unsigned hd)
{
    float inv[FG_MAX_HEAD_DIM / 2];
    if (hd > FG_MAX_HEAD_DIM || !fg_rope_inv_freq(rope, hd, inv))
        return;
    for (unsigned i = 0; i < hd / 2; i++)
        fg_sb_printf(sb, "%s%.9ef", i ? ", " : "", (double)inv[i]);
}

/* Every model property that changes the code, in instance-name form: the
 * shapes, then (when not the Llama-2 defaults) KV heads, window, RoPE base
 * and layout, scaling, pages and biases. */
static void decode_dims(fg_strbuf *dims, const fg_model *m)
{
    const fg_attention *a = m->attention;
    fg_sb_printf(dims, "h%u_nh%u", m->hidden, a->heads);
    if (a->kv_heads != a->heads)
        fg_sb_printf(dims, "_kv%u", a->kv_heads);
    fg_sb_printf(dims, "_hd%u_s%u", a->head_dim, m->max_context);
    if (a->sliding_window)
        fg_sb_printf(dims, "_win%u", a->sliding_window);
    if (m->rope->theta != 10000.0)
        fg_sb_printf(dims, "_rt%.0f", m->rope->theta);
    if (m->rope->layout != FG_ROPE_NEOX)
        fg_sb_puts(dims, "_gptj");
    const fg_rope_scaling_spec *sc = m->rope->scaling;
    if (sc && sc->type != FG_SCALING_NONE)
        fg_sb_printf(dims, "_rs%s%g", fg_scaling_name(sc->type), sc->factor);
    if (sc && sc->type == FG_SCALING_LLAMA3)   /* its bands and original context too */
        fg_sb_printf(dims, "l%gh%go%u", sc->low_freq_factor, sc->high_freq_factor,
                     sc->original_max_position);
    if (m->kv_cache->layout == FG_KV_PAGED)
        fg_sb_printf(dims, "_p%u", m->kv_cache->page_size);
    if (a->qkv_bias)
        fg_sb_puts(dims, "_bias");
}

/* The head split in instance-name form: batch, then p clusters of c. */
static void head_split(char out[32], unsigned bmax, unsigned c, unsigned p)
{
    if (p > 1)
        snprintf(out, 32, "b%u_c%ux%u", bmax, c, p);
    else
        snprintf(out, 32, "b%u_c%u", bmax, c);
}

/* The instance family's name: an instance name up to its head split (the
 * key of tuning entries), from decode_dims() and head_split().  False if it
 * cannot be named. */
static bool decode_family(char out[FG_NAME_MAX], const fg_model *m, const fg_target *t,
                          const char *dims, const char *split)
{
    return fg_instance_name(out, "decode_attn", t->arch, fg_dtype_name(m->dtype), dims, split);
}

/* What every form's instance starts with: family, template, and the
 * registry key in fgrt.h's order (shapes, then the 0/1 flags). */
static void decode_key(fg_instance *in, const fg_model *m, const fg_target *t,
                       const char *template_name, unsigned bmax, bool det)
{
    const fg_attention *a = m->attention;
    in->family = "decode_attn";
    in->op = "decode_attn";
    in->template_name = template_name;
    in->target = t;
    in->dtype = m->dtype;
    fg_instance_add_param(in, "HIDDEN", m->hidden);
    fg_instance_add_param(in, "HEADS", a->heads);
    fg_instance_add_param(in, "KV_HEADS", a->kv_heads);
    fg_instance_add_param(in, "HEAD_DIM", a->head_dim);
    fg_instance_add_param(in, "MAX_CONTEXT", m->max_context);
    fg_instance_add_param(in, "WINDOW", a->sliding_window);
    fg_instance_add_param(in, "PAGE_SIZE", fg_kv_page(m));
    fg_instance_add_param(in, "BMAX", bmax);
    fg_instance_add_param(in, "QKV_BIAS", a->qkv_bias);
    fg_instance_add_param(in, "RMSNORM", 1);
    fg_instance_add_param(in, "NEOX", m->rope->layout == FG_ROPE_NEOX);
    fg_instance_add_param(in, "DETERMINISTIC", det);
    in->nkey_params = 12;
    in->key_max_mask = 1u << 7; /* a call's batch may be below B_max */
}

/* The RoPE table and the softmax scale every form renders. */
static void decode_rope_texts(fg_instance *in, const fg_model *m)
{
    const unsigned hd = m->attention->head_dim;
    inv_freq_table(fg_instance_add_text(in, "INV_FREQ"), m->rope, hd);
    fg_sb_printf(fg_instance_add_text(in, "SOFTMAX_SCALE_LOG2"), "%.9ef",
                 (double)(float)(1.4426950408889634 / sqrt((double)hd)));
}

static int plan_one(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                    unsigned c, unsigned p, const cta_shape *cs, const ring_cfg *ring, bool det,
                    int priority, const char *choice, fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_attention *a = m->attention;
    const unsigned threads = ring ? ring->threads : cs->threads;
    fg_instance in = {0};
    char variant[96];
    fg_strbuf dims = {0};
    decode_dims(&dims, m);
    const unsigned page = fg_kv_page(m);
    char split[32];
    head_split(split, bmax, c, p);
    const char *cl = strchr(split, '_') + 1;   /* the cluster part, for the path key */
    char deep[32] = "";
    /* a configuration other than the model's carries it in the name (stage
     * KB, stages, stages in flight): targets tuned differently, or not at
     * all, share specs but not code */
    if (ring && ring->from != FG_FROM_MODEL && ring->inflight3)
        snprintf(deep, sizeof deep, "_ring_k%un%uf%uw%u", ring->stage_bytes / 1024, ring->stages,
                 ring->inflight, ring->inflight3);
    else if (ring && ring->from != FG_FROM_MODEL)
        snprintf(deep, sizeof deep, "_ring_k%un%uf%u", ring->stage_bytes / 1024, ring->stages,
                 ring->inflight);
    else if (ring)
        snprintf(deep, sizeof deep, "_ring");
    else if (cs == &WIDE_DEEP3)
        snprintf(deep, sizeof deep, "_w%u", cs->unroll3);
    snprintf(variant, sizeof variant, "%s_t%u%s_norm%s", split, threads, deep,
             det ? "_det" : "");
    char family[FG_NAME_MAX];
    const bool named = fg_instance_name(in.name, "decode_attn", t->arch, fg_dtype_name(m->dtype),
                                        fg_sb_str(&dims), variant) &&
                       (!ring || decode_family(family, m, t, fg_sb_str(&dims), split));
    fg_sb_free(&dims);
    if (!named) {
        fg_error(d, "cannot name a decode_attn instance");
        return -1;
    }
    decode_key(&in, m, t, ring ? "decode_attn_ring.in" : "decode_attn.in", bmax, det);
    fg_instance_add_param(&in, "CLUSTER", c);
    fg_instance_add_param(&in, "CLUSTERS_PER_HEAD", p);
    fg_instance_add_param(&in, "THREADS", threads);
    if (ring) {
        fg_instance_add_param(&in, "STAGE_BYTES", ring->stage_bytes);
        fg_instance_add_param(&in, "STAGES", ring->stages);
        fg_instance_add_param(&in, "INFLIGHT", ring->inflight);
        fg_instance_add_param(&in, "INFLIGHT3", ring->inflight3 ? ring->inflight3 : ring->inflight);
        /* One CTA per SM: ptxas derives the cap (ring_registers) from
         * __launch_bounds__ (at 512 threads a cap of 120 compiled but could
         * not be resident).  The x slices are kept in the storage type to fit
         * batch 4. */
        fg_sb_printf(fg_instance_add_text(&in, "LAUNCH_ATTR"), "__launch_bounds__(%u, 1)",
                     threads + 32);
        fg_sb_printf(&in.reasons,
                     "registers: __launch_bounds__(%u, 1): one CTA per SM, at most %u per "
                     "thread (registers are allocated for %u warps)\n",
                     threads + 32, ring_registers(t, threads), ring_warps_charged(threads));
        fg_instance_add_param(&in, "ROWS1", ring->rows1);
        fg_instance_add_param(&in, "SHARE_KV", ring->share);
        fg_instance_add_param(&in, "GROUP_CTAS", ring->gct);
    } else {
        fg_instance_add_param(&in, "UNROLL", cs->unroll);
        fg_instance_add_param(&in, "UNROLL3", cs->unroll3);
        fg_instance_add_param(&in, "LOADS1", cs->loads1);
        fg_instance_add_param(&in, "MIN_BLOCKS", cs->min_blocks);
    }
    decode_rope_texts(&in, m);
    const unsigned ctas = ring ? ring->grid : a->heads * c * p;
    in.launch = (fg_launch){.grid = FG_GRID_FIXED,
                            .grid_dims = {ctas, 1, 1},
                            .block = {threads + (ring ? 32 : 0), 1, 1},
                            .dynamic_smem = ring ? ring->stages * ring->stage_bytes : 0,
                            .cluster = {c, 1, 1},
                            .nonportable_cluster = c > 8,
                            .cooperative = p > 1 || ring};
    /* byte counts in 64 bits, checked against the registry's 32-bit fields */
    const uint64_t qkv = 3ull * a->head_dim, heads = a->heads;
    uint64_t ws_floats;
    if (ring) {
        /* as the template's workspace: the rows exchanged through global
         * memory (per head with P > 1; sharing: per group), the softmax
         * states (NPUB per head: one a cluster; sharing: one a CTA of the
         * group), with sharing o in the storage type; barrier counters of
         * the heads (or groups) and of the grid */
        const uint64_t rows = (ring->gsq + 2ull) * a->head_dim;
        const uint64_t npub = ring->share ? ring->gct : p;
        ws_floats = ring->share ? a->kv_heads * bmax * rows : p > 1 ? heads * bmax * rows : 0;
        ws_floats += heads * npub * bmax * (a->head_dim + 4ull);
        if (ring->share)
            ws_floats += (bmax * heads * a->head_dim * 2 + 3) / 4;
        in.counter_count = a->heads + 1;
    } else {
        ws_floats = (det ? heads : 1) * bmax * m->hidden +
                    (p > 1 ? heads * p * bmax * (qkv + a->head_dim + 2) : 0);
        in.counter_count = c * p + (p > 1 ? a->heads : 0);
    }
    if (ws_floats * sizeof(float) > UINT32_MAX) {
        fg_error(d, "%s: a workspace of %llu bytes does not fit the registry's 32-bit field",
                 in.name, (unsigned long long)(ws_floats * sizeof(float)));
        fg_instance_free(&in);
        return -1;
    }
    in.workspace_bytes = (unsigned)(ws_floats * sizeof(float));
    in.priority = priority;
    if (ring)
        fg_plan_mark(&in, family, ring->from);
    snprintf(in.path_key, sizeof in.path_key, "decode_attn/%s/%s/b%u/t%u%s/%s%s%s%s%s",
             fg_dtype_name(m->dtype), cl, bmax, threads, deep, det ? "det" : "fast",
             m->rope->layout == FG_ROPE_NEOX ? "" : "/gptj", page ? "/paged" : "",
             a->qkv_bias ? "/bias" : "", ring && ring->share ? "/shared-kv" : "");

    fg_sb_printf(&in.reasons, "used for: %s, batch up to %u, one launch per decode step\n",
                 m->name, bmax);
    if (ring && ring->share)
        fg_sb_printf(&in.reasons,
                     "%u KV groups of %u CTAs (clusters of %u; nothing passes over DSMEM): %u CTAs "
                     "on %u SMs; a group's CTAs exchange through global memory behind group "
                     "barriers (cooperative launch, every wait has a time limit)\n",
                     a->kv_heads, ring->gct, c, ctas, t->compute_units);
    else if (p > 1)
        fg_sb_printf(&in.reasons,
                     "%u clusters of %u CTAs per head: %u CTAs on %u SMs; the head's clusters "
                     "exchange through global memory behind head barriers (cooperative launch, "
                     "every wait has a time limit)\n",
                     p, c, ctas, t->compute_units);
    else
        fg_sb_printf(&in.reasons, "one cluster of %u CTAs per head: %u CTAs on %u SMs (%s)%s\n",
                     c, ctas, t->compute_units,
                     ctas <= t->compute_units ? "one wave if the GPCs hold the clusters"
                                              : "more CTAs than SMs",
                     c > 8 ? "; 16 needs the non-portable cluster attribute" : "");
    fg_sb_printf(&in.reasons, "%s\n", choice);
    if (ring)
        fg_sb_printf(&in.reasons,
                     "%u consumer threads + 1 producer warp, one CTA per SM: every byte streams "
                     "through a ring of %u stages of %u B (%u KB ahead of the consumers, %u "
                     "stages in flight); %u "
                     "whole W_qkv rows or %u tokens per stage, by bulk copies (W_qkv, W_o%s "
                     "with an L2 evict-first hint: read once a step)\n",
                     threads, ring->stages, ring->stage_bytes,
                     ring->stages * ring->stage_bytes / 1024, ring->inflight, ring->rows1,
                     ring->tok,
                     a->heads == a->kv_heads || ring->share ? " and K, V" : "");
    else
        fg_sb_printf(&in.reasons,
                     "%u threads, %u CTA(s) per SM meant: %u weight loads of 16 B in flight per "
                     "lane in the projections, %u tokens or rows per lane group after\n",
                     threads, cs->min_blocks, cs->loads1, cs->unroll);
    if (page)
        fg_sb_printf(&in.reasons,
                     "KV cache: pages of %u tokens (K and V pools [pages, %u, %u, %u], block "
                     "table [batch, %u] int32): one bulk copy per page and head (the gather of "
                     "a page of 1 token is a copy per token), table entries loaded a stage "
                     "ahead\n",
                     page, a->kv_heads, page, a->head_dim, m->max_context / page);
    if (ring && ring->share) {
        const unsigned gs = ring->gsq, gct = ring->gct;
        fg_sb_printf(&in.reasons,
                     "KV groups: the %u CTAs of a group (its %u query heads) split its %u q, k, v "
                     "rows (%u each, whole stages, the last CTAs fewer or none; k and v computed "
                     "once) and exchange them "
                     "through global memory behind a group barrier; each attends over 1/%u of "
                     "the group's tokens for all %u heads (on tensor cores: mma.sync m16n8k16, "
                     "the heads as N, blocks of 16 keys over 8 warps), so each K and V byte "
                     "streams into one SM a step; each CTA publishes its states and the group "
                     "merges its %u states per head into o before the grid barrier\n",
                     gct, gs, (gs + 2) * a->head_dim, ring->rq, gct, gs, gct);
    } else if (ring)
        fg_sb_printf(&in.reasons, "QKV: rank r computes %u whole rows of the head's %u; the rows "
                                  "are gathered over DSMEM in the cluster%s\n",
                     ring->rq, 3 * a->head_dim,
                     p > 1 ? " and through global memory between the head's clusters" : "");
    else
        fg_sb_printf(&in.reasons, "QKV: rank r reduces K slice of %u; partials summed in rank "
                                  "order over DSMEM (deterministic)\n",
                     m->hidden / (c * p));
    if (!ring)
        fg_sb_printf(&in.reasons, "attention: %u tokens in flight per group of %u lanes, online "
                                  "softmax, states merged over DSMEM\n",
                     cs->unroll, a->head_dim / 8);
    if (ring)
        fg_sb_printf(&in.reasons,
                     "output: after one grid barrier each CTA owns %u%s whole rows of W_o, %u "
                     "rows apart (the CTAs stream neighbouring rows), and writes those rows of y "
                     "from partials summed in a fixed order: no atomics, bitwise reproducible%s\n",
                     (m->hidden + ctas - 1) / ctas, m->hidden % ctas ? " (or one fewer)" : "", ctas,
                     det ? " (this twin serves calls that ask for determinism: same code)" : "");
    else
    fg_sb_printf(&in.reasons, "output: %s\n",
                 det ? "per-head fp32 partials summed in head order by the last head to "
                       "finish (bitwise reproducible)"
                     : "fp32 red.add across heads; the last head to finish converts and "
                       "clears (fast, order of fp32 adds varies)");
    return fg_plan_add(set, &in, s, ts, d);
}

/* Tuning candidates of the ring form (issue 11): every configuration of
 * these knobs that plans, beside the planner's choice.  Stage counts: 0 is
 * as many as fit; in flight: 0 is the whole ring. */
static const unsigned CAND_THREADS[] = {512u, 448u, 384u, 256u};
static const unsigned CAND_STAGE_BYTES[] = {8192u,  10240u, 16384u, 20480u, 24576u,
                                            32768u, 40960u, 49152u, 65536u};
static const unsigned CAND_STAGES[] = {0u, 10u, 8u, 6u, 5u, 4u};
static const unsigned CAND_INFLIGHT[] = {0u, 6u, 4u, 3u};
/* Fewer bytes in flight per SM cannot keep HBM busy: capping the ring at 2
 * stages of 16 KB measured slower, 4 (64 KB) no slower than 13 (H200, S =
 * 1K; docs/performance.md).  Such configurations are not emitted. */
#define RING_MIN_INFLIGHT_BYTES 65536u


static bool same_ring(const ring_cfg *a, const ring_cfg *b)
{
    return a->threads == b->threads && a->stage_bytes == b->stage_bytes &&
           a->stages == b->stages && a->inflight == b->inflight &&
           a->inflight3 == b->inflight3;
}

/* W_o stages in flight tried beside the rest's (0: the same). */
static const unsigned CAND_INFLIGHT3[] = {0u, 4u, 2u};

/* The ring configuration of a head split in p clusters of 2: the tuning
 * entry of its instance family where there is one, else the model's (which
 * must plan: the caller asked ring_plan first).  Appends to `why` a line
 * that says which, with the figures.  -1 (reported) when an entry does not
 * plan: the tuning file is stale. */
static int ring_choose(const fg_plan_set *set, const fg_model *m, const fg_target *t,
                       unsigned bmax, unsigned p, ring_cfg *r, fg_strbuf *why, fg_diag *d)
{
    char family[FG_NAME_MAX], split[32];
    fg_strbuf dims = {0};
    decode_dims(&dims, m);
    head_split(split, bmax, 2, p);
    const bool named = decode_family(family, m, t, fg_sb_str(&dims), split);
    fg_sb_free(&dims);
    if (!named) {
        fg_error(d, "cannot name a decode_attn instance family");
        return -1;
    }
    const fg_tuning_entry *e = fg_plan_tuning_entry(set, family);
    if (!e) {
        fg_sb_puts(why, "\n");
        fg_plan_config_line(why, set, NULL, NULL, 1);
        return 0;
    }
    ring_cfg tr;
    const char *bad = ring_plan_exact(m, t, 2, p, bmax, e->threads, e->stage_bytes, e->stages,
                                      e->in_flight, &tr);
    if (bad) {
        fg_error(d, "%s: the entry for %s (%u threads, %u stages of %u B) does not plan: %s; "
                    "run fusegen tune again",
                 set->tuning->path, family, e->threads, e->stages, e->stage_bytes, bad);
        return -1;
    }
    *r = tr;
    r->from = FG_FROM_TUNING;
    r->inflight3 = e->in_flight_wo == r->inflight ? 0 : e->in_flight_wo;
    char what[128];
    snprintf(what, sizeof what, "%u threads, %u stages of %u B, %u in flight (%u while W_o "
             "streams)", e->threads, e->stages, e->stage_bytes, e->in_flight,
             r->inflight3 ? r->inflight3 : r->inflight);
    fg_sb_puts(why, "\n");
    fg_plan_config_line(why, set, e, what, 1);
    return 0;
}

static int plan_ring_candidates(fg_plan_set *set, const fg_spec *s, const fg_spec *ts,
                                unsigned bmax, unsigned p, const ring_cfg *chosen, fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    for (size_t ti = 0; ti < NELEMS(CAND_THREADS); ti++)
        for (size_t si = 0; si < NELEMS(CAND_STAGE_BYTES); si++) {
            ring_cfg base;
            if (ring_plan_stage(m, t, 2, p, bmax, CAND_THREADS[ti], CAND_STAGE_BYTES[si], &base))
                continue;
            const unsigned fit = base.stages;
            for (size_t ni = 0; ni < NELEMS(CAND_STAGES); ni++) {
                const unsigned n = CAND_STAGES[ni] ? CAND_STAGES[ni] : fit;
                if (n > fit || (CAND_STAGES[ni] && n == fit))
                    continue;   /* does not fit, or "as many as fit" already */
                for (size_t fi = 0; fi < NELEMS(CAND_INFLIGHT); fi++) {
                    ring_cfg r;
                    if ((CAND_INFLIGHT[fi] && CAND_INFLIGHT[fi] >= n) ||
                        ring_plan_exact(m, t, 2, p, bmax, CAND_THREADS[ti], CAND_STAGE_BYTES[si],
                                        n, CAND_INFLIGHT[fi], &r) ||
                        r.inflight * r.stage_bytes < RING_MIN_INFLIGHT_BYTES)
                        continue;
                    r.from = FG_CANDIDATE;
                    for (size_t wi = 0; wi < NELEMS(CAND_INFLIGHT3); wi++) {
                        r.inflight3 = CAND_INFLIGHT3[wi];
                        if ((r.inflight3 && r.inflight3 >= r.inflight) || same_ring(&r, chosen))
                            continue;
                        if (plan_one(set, s, ts, bmax, 2, p, NULL, &r, false, 0,
                                     "tuning candidate (generate --candidates): a configuration "
                                     "the planner did not choose",
                                     d))
                            return -1;
                    }
                }
            }
        }
    return 0;
}

/* The grid form (decode_attn_grid.in) serves batches above MAX_BATCH: one
 * cooperative CTA of GRID_THREADS per SM, phases between grid barriers, the
 * projections on tensor cores with the batch as mma's N (the register and
 * ring forms keep B x slices of x in registers, which stops at batch 4).
 * Having no cluster collectives, it is also the family's portable form: on a
 * target without clusters it serves every batch (issue 10). */
#define GRID_MAX_BATCH 16u
#define GRID_THREADS 512u
/* Columns a lane's weight loads cover at once (2 rows x step / 32 x 16 B in
 * flight a lane; 1 row on AMD): 128 (8 loads, 64 KB an SM), or 256 where a
 * GQA group's attention runs on tensor cores (and on AMD, where it runs on
 * matrix cores: the H200's rule, not measured there).  Steps of 256 everywhere were the rule
 * until tuning showed 128 faster (issue 11: Llama-2-7B and -13B B = 16,
 * f16), and on shapes not tuned (one H200, two interleaved rounds) 128 was
 * 0.3-1.5% faster at every S for Llama-2-7B B = 16 S_max 16K and the
 * portable form's B = 1 and 4 (2-3% at S = 1K), but 1-2% slower at S >= 8K
 * for Qwen2-7B's groups of 7 on tensor cores (Llama-3-8B's tune: level).
 * Issuing the next step's loads before the mma (two steps in registers)
 * was no faster at either step, or spilled. */
#define GRID_STEP 128u
#define GRID_STEP_ATT_MMA 256u
/* Slices are cut from whole 256-column pieces all the same: steps of 128
 * let the rule below take 40 slices for Llama-2-13B and 28 for Qwen2-7B's
 * W_o, where the tuning runs found fewer, longer units faster. */
#define GRID_SLICE_COLS 256u
/* Attention runs per (request, KV head) at most (the states' workspace):
 * 64, or where a GQA group's attention runs on tensor or matrix cores (its
 * runs merged in a phase of their own, warps taking a head's columns in
 * runs of MERGE_COLS) up to 256, as many as give every warp an item at
 * B_max: few KV heads at small batches left most warps idle (Qwen2-7B B = 1,
 * one H200: 4 KV heads x 64 runs = 256 items for 2112 warps, the keys at
 * ~1 TB/s).  512 runs of 64 keys, an item a warp, were slower at S = 32K
 * than 256 of 128 (81.5-81.8 against 67.4-67.8 us) and level below 16K. */
#define GRID_MAX_SPLITS 64u
#define GRID_MAX_SPLITS_MMA 256u

/* Keys an attention run has at least: 64 at batches up to 4 (the portable
 * form; Llama-2-7B B = 1, one H200: S = 2K 81.4 -> 74.1 us, 8K 116.7 ->
 * 113.7, the others within 1 us of 32; 128 cost S = 1K 6%), else 32. */
static unsigned grid_min_run(unsigned bmax)
{
    return bmax <= MAX_BATCH ? 64u : 32u;
}

typedef struct grid_cfg {
    unsigned step;                   /* columns a lane's weight loads cover at once */
    unsigned slices_qkv, slices_o;   /* column slices of the projections' units */
    unsigned heads_per_item;         /* query heads of a GQA group an attention item serves */
    unsigned unroll;                 /* key rounds a warp has in flight */
    unsigned max_splits;             /* attention runs per (request, KV head) at most */
    unsigned merge_cols;             /* a head's columns a merge item covers (a warp's step on
                                        the one-warp ticket merge) */
    unsigned batch_tile;             /* requests a matrix-product n-tile (mma 8, MFMA 16) */
    unsigned staged_rows;            /* rows of x (then o) in shared memory; 0 (AMD): none,
                                        read from the workspace */
    unsigned smem;                   /* dynamic shared memory: the staged rows */
    unsigned long long staged_need;  /* what staging the rows would take (B), with 1 KB spare */
    unsigned long long ws_floats;
    fg_origin from;                  /* the model's, a tuning entry's or a tuning candidate */
} grid_cfg;

/* W_qkv's rows: the query heads', then the KV heads' k and v. */
static unsigned grid_qkv_rows(const fg_attention *a)
{
    return (a->heads + 2 * a->kv_heads) * a->head_dim;
}

/* The warps of the grid: one CTA of GRID_THREADS per SM. */
static unsigned grid_warps(const fg_target *t)
{
    return t->compute_units * (GRID_THREADS / t->warp_size);
}

/* Whether a GQA group's attention runs on tensor cores (sm_90: mma.sync
 * m16n8k16) or matrix cores (gfx942, gfx90a: MFMA 16x16x16 on waves of 64;
 * issue 10): groups of 4 to 8 query heads (mma's N of 8; MFMA's 16 half
 * used; Llama-3-8B's and Mistral-7B's 4, Qwen2-7B's 7), where CUDA cores
 * re-reading each K and V byte for every head or two were the bound
 * (measured on the H200: Qwen2-7B B = 16 at 19-22% of the read ceiling; on
 * AMD the same reads, not measured). */
static bool grid_att_mma(const fg_attention *a, const fg_target *t)
{
    const unsigned gs = a->heads / a->kv_heads;
    const bool unit = t->arch == FG_ARCH_SM90A || (fg_arch_is_amd(t->arch) && t->warp_size == 64);
    return unit && gs >= 4 && gqa_mma_shape(a);
}

/* Query heads of a GQA group an attention item serves: on tensor or matrix
 * cores the whole group; else a lane keeps 8 q and 8 o values a head, and two heads
 * fit beside the key rounds. */
static unsigned grid_heads_per_item(const fg_attention *a, const fg_target *t)
{
    if (grid_att_mma(a, t))
        return a->heads / a->kv_heads;
    return (a->heads / a->kv_heads) % 2 == 0 ? 2 : 1;
}

/* The attention's runs and their merge: on tensor or matrix cores, runs
 * enough for an item a warp at B_max (powers of two, GRID_MAX_SPLITS to
 * GRID_MAX_SPLITS_MMA), and each head's columns cut into parts so that the
 * merge phase's (request, head, part) items fill the warps; else 64 runs and
 * a head merged by the warp that ends its last (4 x warp-size columns at
 * once).  A lane merges 4 columns, a part's columns x 4 lanes a power of two
 * that divides the warp. */
static const char *grid_runs(const fg_attention *a, const fg_target *t, unsigned bmax, grid_cfg *g)
{
    const unsigned warps = grid_warps(t), hd = a->head_dim, ws = t->warp_size;
    const bool mma = grid_att_mma(a, t);
    g->max_splits = GRID_MAX_SPLITS;
    unsigned parts = 1;
    if (mma) {
        const unsigned items = bmax * a->kv_heads * (a->heads / a->kv_heads / g->heads_per_item);
        while (g->max_splits < GRID_MAX_SPLITS_MMA && items * g->max_splits < warps)
            g->max_splits *= 2;
        while (hd % (2 * parts) == 0 && hd / (2 * parts) >= 4 && bmax * a->heads * 2 * parts <= warps)
            parts *= 2;
    }
    while (hd % parts == 0 && hd / parts > 4 * ws)
        parts *= 2;
    g->merge_cols = hd % parts ? 0 : hd / parts;
    const unsigned lanes = g->merge_cols / 4;
    if (!lanes || g->merge_cols % 4 || ws % lanes || (lanes & (lanes - 1)))
        return "the attention's merge takes a head's columns 4 a lane, in parts whose lanes "
               "divide the warp";
    return NULL;
}

/* The share of the warps' last round of units busy: (rows / 16) x slices
 * units over `warps`. */
static double grid_round_use(unsigned rows, unsigned slices, unsigned warps)
{
    const unsigned units = rows / 16 * slices, rounds = (units + warps - 1) / warps;
    return (double)units / ((double)rounds * warps);
}

/* Whether `slices` cut `cols` into whole steps. */
static bool grid_slices_fit(unsigned cols, unsigned slices, unsigned step)
{
    return slices >= 1 && slices <= 64 && cols % slices == 0 && (cols / slices) % step == 0;
}

/* The column slices that spread (rows / 16) x s units over `warps` with the
 * least idle in the last round; the fewest slices on a tie (each slice adds
 * a partial to sum).  Any count that cuts whole steps, not only powers of
 * 2: Qwen2-7B's 3584 columns are 7 x 512 (2 slices leave 73% of the warps
 * idle in QKV, 7 keep 95% busy).  0: no slicing into whole steps. */
static unsigned grid_slices(unsigned rows, unsigned cols, unsigned warps, unsigned step)
{
    unsigned best = 0;
    double best_use = 0;
    for (unsigned sl = 1; sl <= 64; sl++) {
        if (!grid_slices_fit(cols, sl, step))
            continue;
        const double use = grid_round_use(rows, sl, warps);
        if (use > best_use + 0.01)
            best = sl, best_use = use;
    }
    return best;
}

/* The slice counts next to `chosen` that cut `cols` into whole steps of
 * `step` (the one below, `chosen` itself, the one above; 0 where none). */
static void grid_slice_neighbours(unsigned cols, unsigned step, unsigned chosen, unsigned out[3])
{
    out[0] = out[2] = 0;
    out[1] = grid_slices_fit(cols, chosen, step) ? chosen : 0;
    for (unsigned sl = 1; sl < chosen; sl++)
        if (grid_slices_fit(cols, sl, step))
            out[0] = sl;
    for (unsigned sl = 64; sl > chosen; sl--)
        if (grid_slices_fit(cols, sl, step))
            out[2] = sl;
}

/* The grid form with its knobs set (g's step, slices and unroll); why it
 * cannot, or NULL.  Fills in the rest of g. */
static const char *grid_plan_exact(const fg_model *m, const fg_target *t, unsigned bmax,
                                   grid_cfg *g)
{
    const fg_attention *a = m->attention;
    const unsigned qd = a->heads * a->head_dim, rows1 = grid_qkv_rows(a);
    if (bmax > GRID_MAX_BATCH)
        return "batch sizes above 16 are not planned";
    if (a->head_dim < 32)
        return "the grid form needs head_dim >= 32 (its attention lanes take 8 columns each, "
               "at most 4 keys a warp)";
    if (!g->step || g->step % 32)
        return "a step must be whole 32-column chunks";
    if (!grid_slices_fit(m->hidden, g->slices_qkv, g->step) ||
        !grid_slices_fit(qd, g->slices_o, g->step))
        return "hidden and heads x head_dim must split into 1-64 slices of whole steps (a "
               "lane's weight loads)";
    if (g->unroll < 1 || g->unroll > 16)
        return "key rounds in flight must be 1 to 16";
    if (grid_att_mma(a, t) && g->unroll != 1)
        return fg_arch_is_amd(t->arch)
                   ? "a GQA group's attention on matrix cores has one block of 16 keys in "
                     "flight (key rounds 1)"
                   : "a GQA group's attention on tensor cores has one block of 16 keys in flight "
                     "(key rounds 1)";
    if (a->head_dim % t->warp_size)
        return "head_dim must be a multiple of the warp size (the grid form's template "
               "asserts it; no other head_dim has been run)";
    g->heads_per_item = grid_heads_per_item(a, t);
    const char *runs = grid_runs(a, t, bmax, g);
    if (runs)
        return runs;
    /* the batch padded to the matrix product's n-tiles (mma.sync's 8
     * requests, MFMA's 16), and the rows staged: every padded one on sm_90,
     * the batch's alone on AMD (the rest are zeros in registers), or on AMD
     * where those do not fit in the LDS none: phase 0 writes x's rows once to
     * the workspace (a grid barrier more) and the projections read x's and
     * o's fragments from there (rows every workgroup reads: L2 holds them) */
    const bool amd = fg_arch_is_amd(t->arch);
    g->batch_tile = amd ? 16 : 8;
    const unsigned long long bp = (bmax + g->batch_tile - 1) / g->batch_tile * g->batch_tile;
    g->staged_rows = amd ? bmax : (unsigned)bp;
    const unsigned long long xw = m->hidden > qd ? m->hidden : qd;
    const unsigned long long smem = g->staged_rows * (xw + 32) * 2;
    g->staged_need = smem + 1024;
    if (smem + 1024 > t->shared_mem_per_block) {
        if (!amd)
            return "the batch's staged rows (x, then o) do not fit in shared memory";
        g->staged_rows = 0;
    }
    g->smem = g->staged_rows ? (unsigned)smem : 0;
    g->ws_floats = (unsigned long long)g->slices_qkv * bp * rows1 + bp * qd +
                   (unsigned long long)bmax * a->heads * g->max_splits * (a->head_dim + 4ull) + bp * qd / 2 +
                   (unsigned long long)g->slices_o * bp * m->hidden +
                   (g->staged_rows ? 0 : (unsigned long long)bmax * m->hidden / 2);
    return NULL;
}

/* The model's grid form; why it cannot, or NULL. */
static const char *grid_plan(const fg_model *m, const fg_target *t, unsigned bmax, grid_cfg *g)
{
    const fg_attention *a = m->attention;
    const unsigned qd = a->heads * a->head_dim, warps = grid_warps(t);
    *g = (grid_cfg){.step = grid_att_mma(a, t) ? GRID_STEP_ATT_MMA : GRID_STEP,
                    .from = FG_FROM_MODEL};
    g->slices_qkv = grid_slices(grid_qkv_rows(a), m->hidden, warps, GRID_SLICE_COLS);
    g->slices_o = grid_slices(m->hidden, qd, warps, GRID_SLICE_COLS);
    /* two heads an item leave room for 4 key rounds of K and V (16-byte
     * loads) in 128 registers; one head for 8, or 6 where the next round's
     * rows come from a block table (Qwen2's paged form with biases spilled
     * at 8) */
    g->unroll = grid_att_mma(a, t)                    ? 1
                : grid_heads_per_item(a, t) == 2      ? 4
                : m->kv_cache->layout == FG_KV_PAGED ? 6
                                                   : 8;
    return grid_plan_exact(m, t, bmax, g);
}

/* The grid form's instance family (a tuning entry's key): the instance
 * name up to its configuration.  False if it cannot be named. */
static bool grid_family(char out[FG_NAME_MAX], const fg_model *m, const fg_target *t, unsigned bmax)
{
    fg_strbuf dims = {0};
    decode_dims(&dims, m);
    char split[32];
    snprintf(split, sizeof split, "b%u_grid", bmax);
    const bool named = decode_family(out, m, t, fg_sb_str(&dims), split);
    fg_sb_free(&dims);
    return named;
}

/* Whether batch bmax takes the grid form on t: above the ring's batches,
 * and at any batch where t has no thread-block clusters.  GQA at batch 4 and
 * below stays in the ring, which shares a group's K and V tiles on tensor
 * cores as the grid form does (SHARE_KV; one H200, S = 1K .. S_max, ring
 * against grid: Qwen2-7B B = 2 34.6 / 70.2 us against 50.1 / 99.1 at 1K /
 * 32K, B = 3 43.0 / 96.5 against 52.1 / 104.2; Llama-3-8B B = 3 45.8 / 61.9
 * against 57.5 / 82.4 at 1K / 8K, B = 4 55.9 / 82.3 against 58.4 / 92.2;
 * Qwen2-7B B = 4 level at first, 52.9 / 124.6 against 53.7 / 124.1, and
 * since its groups fill the SMs (4096188) 45.2 / 107.0 against the grid's
 * 52.4 / 125.0 at stop 53).  Before the ring shared them, the grid form
 * served GQA from 12 streams (group size x B_max). */
static bool grid_serves(const fg_target *t, unsigned bmax)
{
    return bmax > MAX_BATCH || t->max_cluster_size == 0;
}

static int plan_grid_one(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                         const grid_cfg *g, bool det, int priority, const char *choice,
                         fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_attention *a = m->attention;
    const bool att_mma = grid_att_mma(a, t), amd = fg_arch_is_amd(t->arch);
    fg_instance in = {0};
    fg_strbuf dims = {0};
    decode_dims(&dims, m);
    /* a configuration other than the model's carries it in the name */
    char variant[96], config[48] = "", family[FG_NAME_MAX];
    if (g->from != FG_FROM_MODEL)
        snprintf(config, sizeof config, "_k%uq%uo%uu%u", g->step, g->slices_qkv, g->slices_o,
                 g->unroll);
    snprintf(variant, sizeof variant, "b%u_grid_t%u%s_norm%s", bmax, GRID_THREADS, config,
             det ? "_det" : "");
    const bool named = fg_instance_name(in.name, "decode_attn", t->arch, fg_dtype_name(m->dtype),
                                        fg_sb_str(&dims), variant) &&
                       grid_family(family, m, t, bmax);
    fg_sb_free(&dims);
    if (!named) {
        fg_error(d, "cannot name a decode_attn instance");
        return -1;
    }
    if (g->ws_floats * sizeof(float) > UINT32_MAX) {
        fg_error(d, "%s: a workspace of %llu bytes does not fit the registry's 32-bit field",
                 in.name, g->ws_floats * sizeof(float));
        return -1;
    }
    decode_key(&in, m, t, "decode_attn_grid.in", bmax, det);
    fg_instance_add_param(&in, "THREADS", GRID_THREADS);
    fg_instance_add_param(&in, "SLICES_QKV", g->slices_qkv);
    fg_instance_add_param(&in, "SLICES_O", g->slices_o);
    fg_instance_add_param(&in, "STEP_COLS", g->step);
    fg_instance_add_param(&in, "MAX_SPLITS", g->max_splits);
    fg_instance_add_param(&in, "MERGE_COLS", g->merge_cols);
    fg_instance_add_param(&in, "MIN_RUN", grid_min_run(bmax));
    fg_instance_add_param(&in, "UNROLL", g->unroll);
    fg_instance_add_param(&in, "HEADS_PER_ITEM", g->heads_per_item);
    fg_instance_add_param(&in, "ATT_MMA", att_mma);
    fg_instance_add_param(&in, "BATCH_TILE", g->batch_tile);
    fg_instance_add_param(&in, "STAGED_ROWS", g->staged_rows);
    if (amd)   /* (HIP's second bound is waves a SIMD, not blocks an SM) */
        fg_sb_printf(fg_instance_add_text(&in, "LAUNCH_ATTR"), "__launch_bounds__(%u)",
                     GRID_THREADS);
    else
        fg_sb_printf(fg_instance_add_text(&in, "LAUNCH_ATTR"), "__launch_bounds__(%u, 1)",
                     GRID_THREADS);
    decode_rope_texts(&in, m);
    in.launch = (fg_launch){.grid = FG_GRID_FIXED,
                            .grid_dims = {t->compute_units, 1, 1},
                            .block = {GRID_THREADS, 1, 1},
                            .dynamic_smem = g->smem,
                            .cluster = {1, 1, 1},
                            .cooperative = true};
    in.workspace_bytes = (unsigned)(g->ws_floats * sizeof(float));
    /* the grid barrier, the attention items, and where the warp that ends a
     * head group's last run merges it, a ticket per request and head group
     * (a group on tensor cores is merged after a grid barrier: no tickets) */
    in.counter_count = 2 + (att_mma ? 0 : bmax * a->heads / g->heads_per_item);
    in.priority = priority;
    fg_plan_mark(&in, family, g->from);
    snprintf(in.path_key, sizeof in.path_key, "decode_attn/%s/grid/b%u/t%u%s/%s%s%s%s%s",
             fg_dtype_name(m->dtype), bmax, GRID_THREADS, config, det ? "det" : "fast",
             m->rope->layout == FG_ROPE_NEOX ? "" : "/gptj",
             m->kv_cache->layout == FG_KV_PAGED ? "/paged" : "", a->qkv_bias ? "/bias" : "",
             att_mma ? "/gqa-mma" : "");
    const unsigned rows1 = grid_qkv_rows(a), qd = a->heads * a->head_dim, warps = grid_warps(t);
    const char *unit = amd ? "matrix cores (MFMA 16x16x16" : "tensor cores (mma.sync m16n8k16",
               *wave = amd ? "wave" : "warp";
    fg_sb_printf(&in.reasons, "used for: %s, batch up to %u, one launch per decode step\n",
                 m->name, bmax);
    fg_sb_printf(&in.reasons, "%s\n", choice);
    /* the grid barriers (decode_attn_grid.in's grid_sync calls): after phases
     * 1 to 4, one more after the runs' merge where a group's attention runs on
     * tensor or matrix cores (a phase of its own), one more after phase 0
     * where no rows are staged (AMD) */
    const unsigned barriers = 4u + (att_mma ? 1u : 0u) + (g->staged_rows ? 0u : 1u);
    if (amd)
        fg_sb_printf(&in.reasons,
                     "grid form: one cooperative workgroup of %u threads per CU (%u workgroups, "
                     "%u waves of %u), %u grid barriers at agent scope between the phases; "
                     "__launch_bounds__(%u)\n",
                     GRID_THREADS, t->compute_units, warps, t->warp_size, barriers, GRID_THREADS);
    else
        fg_sb_printf(&in.reasons,
                     "grid form: one cooperative CTA of %u threads per SM (%u CTAs, %u warps), "
                     "%u grid barriers between the phases; registers: __launch_bounds__(%u, 1), "
                     "at most %u per thread\n",
                     GRID_THREADS, t->compute_units, warps, barriers, GRID_THREADS,
                     t->registers_per_cu / GRID_THREADS / 8 * 8);
    fg_sb_printf(&in.reasons,
                 "QKV: %u units of 16 W_qkv rows x %u columns (%u slices; %.0f%% of the warps' "
                 "last round busy) on %s, the batch as N), weights loaded straight into "
                 "fragments, steps of %u columns (%u loads of 16 B in flight a lane%s); x ",
                 rows1 / 16 * g->slices_qkv, m->hidden / g->slices_qkv, g->slices_qkv,
                 100.0 * grid_round_use(rows1, g->slices_qkv, warps),
                 unit, g->step, (amd ? 1 : 2) * g->step / 32,
                 g->from != FG_FROM_MODEL ? ""
                 : amd                    ? "; the H200's measured step, not measured here"
                 : att_mma                ? "; 256 measured faster than 128 beside a GQA "
                                            "group's attention on tensor cores"
                                          : "; 128 measured faster than 256");
    if (g->staged_rows)
        fg_sb_printf(&in.reasons, "normalized and staged in shared memory (%u B%s)\n", g->smem,
                     amd ? "; the batch's rows only, the padding to 16 zeros in registers" : "");
    else
        fg_sb_printf(&in.reasons,
                     "normalized once into the workspace (%u rows x %u x 2 B = %u B), no rows "
                     "staged: staging the batch's rows (x, then o) would take %llu B with 1 KB "
                     "spare, over the %u B of LDS a workgroup has; x's fragments (then o's, "
                     "from the workspace's o rows) are read from global memory, %u KB that "
                     "every workgroup reads and L2 holds, the padding to 16 zeros in "
                     "registers; one grid barrier more (after phase 0) publishes x\n",
                     bmax, m->hidden, bmax * m->hidden * 2, g->staged_need,
                     t->shared_mem_per_block,
                     (bmax * (m->hidden > qd ? m->hidden : qd) * 2 + 1023) / 1024);
    if (att_mma)   /* 16 keys of K and V in flight */
        fg_sb_printf(&in.reasons,
                     "attention: items of (request, KV head, its %u query heads, a run of >= %u "
                     "keys, at most %u runs) from a counter, on %s, the group's heads as N: "
                     "S^T = K q^T, o^T += V^T p^T%s), 16 keys (%u KB) in flight a %s, each K "
                     "and V byte loaded once for the group (runs: as many as give each %s an item "
                     "at B_max, up to %u); then, after a grid barrier, each head's runs merged "
                     "by %ss taking %u of its columns, in a fixed order\n",
                     g->heads_per_item, grid_min_run(bmax), g->max_splits, unit,
                     amd ? ", p^T being the S^T a lane holds: no exchange but the 4 lanes' max"
                         : "",
                     16 * 2 * a->head_dim * fg_dtype_bytes(m->dtype) / 1024, wave, wave, GRID_MAX_SPLITS_MMA,
                     wave, g->merge_cols);
    else
        fg_sb_printf(&in.reasons,
                     "attention: items of (request, KV head, %u query head%s, a run of >= %u "
                     "keys, at most %u runs) from a counter, %u lanes a key, %u key rounds in "
                     "flight; a head's runs merged in a fixed order by the warp that ends its last\n",
                     g->heads_per_item, g->heads_per_item > 1 ? "s" : "", grid_min_run(bmax),
                     g->max_splits, a->head_dim / 8, g->unroll);
    fg_sb_printf(&in.reasons,
                 "output: %u units of 16 W_o rows x %u columns, partials summed in slice order: "
                 "no atomics, bitwise reproducible%s\n",
                 m->hidden / 16 * g->slices_o, qd / g->slices_o,
                 det ? " (this twin serves calls that ask for determinism: same code)" : "");
    return fg_plan_add(set, &in, s, ts, d);
}

/* Tuning candidates of the grid form (issue 11): steps; for each step the
 * slice counts of each projection next to the model's (below, the same,
 * above); key rounds; every combination that plans, beside the chosen one.
 * The gate discards those that spill. */
static const unsigned GRID_CAND_STEPS[] = {128u, 256u};
static const unsigned GRID_CAND_ROUNDS[] = {2u, 4u, 6u, 8u};

static int plan_grid(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                     fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    grid_cfg g;
    if (grid_plan(m, t, bmax, &g))
        return 0;   /* fg_plan_decode_skipped() says why */
    const grid_cfg model = g;
    char family[FG_NAME_MAX];
    if (!grid_family(family, m, t, bmax)) {
        fg_error(d, "cannot name a decode_attn instance family");
        return -1;
    }
    fg_strbuf choice = {0}, twin = {0};
    if (bmax > MAX_BATCH)
        fg_sb_puts(&choice, "preferred: the only form above batch 4");
    else
        fg_sb_printf(&choice, "the portable form: %s has no thread-block clusters, so grid "
                              "barriers and global memory take the cluster collectives' place "
                              "(one cooperative launch; issue 10)",
                     t->name);
    const fg_tuning_entry *e = fg_plan_tuning_entry(set, family);
    if (e) {
        g = (grid_cfg){.step = e->step_cols, .slices_qkv = e->slices_qkv,
                       .slices_o = e->slices_o, .unroll = e->key_rounds, .from = FG_FROM_TUNING};
        const char *bad = e->threads != GRID_THREADS ? "the grid form runs 512 threads"
                                                     : grid_plan_exact(m, t, bmax, &g);
        if (bad) {
            fg_error(d, "%s: the entry for %s (%u threads, steps of %u columns, %u and %u "
                        "slices, %u key rounds) does not plan: %s; run fusegen tune again",
                     set->tuning->path, family, e->threads, e->step_cols, e->slices_qkv,
                     e->slices_o, e->key_rounds, bad);
            fg_sb_free(&choice);
            return -1;
        }
        char what[128];
        snprintf(what, sizeof what, "steps of %u columns, %u and %u slices, %u key rounds",
                 g.step, g.slices_qkv, g.slices_o, g.unroll);
        fg_sb_puts(&choice, "\n");
        fg_plan_config_line(&choice, set, e, what, 1);
    } else {
        fg_sb_puts(&choice, "\n");
        fg_plan_config_line(&choice, set, NULL, NULL, 1);
    }
    fg_sb_puts(&twin, "deterministic twin of the grid form (same code: the grid form is "
                      "reproducible by construction)");
    fg_sb_puts(&twin, strchr(fg_sb_str(&choice), '\n'));
    int rc = plan_grid_one(set, s, ts, bmax, &g, false, 3, fg_sb_str(&choice), d);
    if (!rc)
        rc = plan_grid_one(set, s, ts, bmax, &g, true, 1, fg_sb_str(&twin), d);
    fg_sb_free(&choice);
    fg_sb_free(&twin);
    const unsigned qd = m->attention->heads * m->attention->head_dim;
    /* (a GQA group on tensor cores has no key rounds to vary) */
    const bool mma = grid_att_mma(m->attention, t);
    const size_t rounds = mma ? 1 : NELEMS(GRID_CAND_ROUNDS);
    for (size_t si = 0; rc == 0 && set->candidates && si < NELEMS(GRID_CAND_STEPS); si++) {
        const unsigned step = GRID_CAND_STEPS[si];
        unsigned qs[3], os[3];
        grid_slice_neighbours(m->hidden, step, model.slices_qkv, qs);
        grid_slice_neighbours(qd, step, model.slices_o, os);
        for (int qi = 0; rc == 0 && qi < 3; qi++)
            for (int oi = 0; rc == 0 && oi < 3; oi++)
                for (size_t ri = 0; rc == 0 && ri < rounds; ri++) {
                    const unsigned q = qs[qi], o = os[oi];
                    grid_cfg c = {.step = step, .slices_qkv = q, .slices_o = o,
                                  .unroll = mma ? 1 : GRID_CAND_ROUNDS[ri], .from = FG_CANDIDATE};
                    if (!q || !o || grid_plan_exact(m, t, bmax, &c) ||
                        (c.step == g.step && q == g.slices_qkv && o == g.slices_o &&
                         c.unroll == g.unroll))
                        continue;
                    rc = plan_grid_one(set, s, ts, bmax, &c, false, 0,
                                       "tuning candidate (generate --candidates): a "
                                       "configuration the planner did not choose",
                                       d);
                }
    }
    return rc;
}

int fg_plan_decode(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    if (unsupported(m, t))
        return 0; /* fg_plan_decode_skipped() says why in explain */

    const unsigned *sizes = CLUSTER_SIZES, ns = NCLUSTER_SIZES;
    for (unsigned bi = 0; bi < m->batch_sizes_count; bi++) {
        const unsigned bmax = m->batch_sizes[bi];
        if (grid_serves(t, bmax)) {
            if (plan_grid(set, s, ts, bmax, d))
                return -1;
            continue;
        }
        const cta_shape *cs = bmax == 1 ? &WIDE : &BATCHED;
        /* register forms: only for what they compute (best = 0 skips them) */
        const unsigned best =
            register_form_unsupported(m) ? 0 : preferred_cluster(m, t, cs, bmax, sizes, ns);
        /* The order of preference comes from measurements on the H200
         * (docs/performance.md): the ring form (priority 3) where it plans;
         * of the register forms, pairs of clusters of 2 per head, one CTA per
         * SM; else 256-thread CTAs two per SM; else 512 threads. */
        const bool split = best && !infeasible(m, t, 2, 2, cs, bmax);
        const bool paired = best && bmax == 1 && !infeasible(m, t, best, 1, &PAIRED, bmax);
        const char *alt =
            "alternative, emitted to test this collective size and to measure the choice";
        for (unsigned i = 0; i < ns && best; i++) {
            const unsigned c = sizes[i];
            if (infeasible(m, t, c, 1, cs, bmax))
                continue;
            const bool pref = c == best && !split && !paired;
            if (plan_one(set, s, ts, bmax, c, 1, cs, NULL, false, pref ? 2 : 1,
                         !pref ? alt
                         : m->attention->heads * c <= t->compute_units
                             ? "preferred: the largest cluster whose grid fits the SMs"
                             : "preferred: no cluster size fits the SMs at one CTA each; the "
                               "smallest grid",
                         d) ||
                (pref && plan_one(set, s, ts, bmax, c, 1, cs, NULL, true, 0,
                                  "deterministic twin of the register form's choice", d)))
                return -1;
        }
        if (paired) {
            const bool pref = !split;
            const char *why = pref ? "the register form's choice: 256-thread CTAs, two per "
                                     "SM, keep more SMs streaming than one 512-thread CTA per "
                                     "SM (measured; the ring form outranks it where it plans)"
                                   : "two CTAs per SM at the single-cluster size, measured "
                                     "against the split";
            if (plan_one(set, s, ts, bmax, best, 1, &PAIRED, NULL, false, pref ? 2 : 1, why, d) ||
                (pref && plan_one(set, s, ts, bmax, best, 1, &PAIRED, NULL, true, 0,
                                  "deterministic twin of the register form's choice", d)))
                return -1;
        }
        if (split) {
            const char *why = "register form, two clusters of 2 per head, one CTA per SM: "
                              "clusters of 2 reach every SM, larger ones leave SMs of odd GPCs "
                              "idle (the fastest register form measured; the ring form is "
                              "preferred where it plans)";
            if (plan_one(set, s, ts, bmax, 2, 2, cs, NULL, false, 2, why, d) ||
                plan_one(set, s, ts, bmax, 2, 2, cs, NULL, true, 0,
                         "deterministic twin of the register form's choice", d))
                return -1;
            if (cs == &WIDE && !infeasible(m, t, 2, 2, &WIDE_DEEP3, bmax) &&
                plan_one(set, s, ts, bmax, 2, 2, &WIDE_DEEP3, NULL, false, 1,
                         "the split with 8 W_o rows in flight per lane group (64 KB per SM "
                         "in phase 3): measured 0.7-1.7 us faster than 4 rows, still behind "
                         "the ring form",
                         d))
                return -1;
        }
        /* The ring form, preferred: the head split as pairs of clusters of 2
         * where the cooperative grid fits, and one cluster of 2 (no head
         * barriers) so both exchange paths are compiled and tested.
         *
         * One cluster of 2 per head.  Where pairs of pairs need more CTAs than
         * SMs (Llama-2-13B: 40 heads x 4 > 132) it is the preferred form: a
         * cluster of 3 per head (120 CTAs) cannot be co-resident (the H200
         * holds 117 CTAs in clusters of 3), and at 80 CTAs it measured ahead
         * of the register form (13B, B = 1: 69.9 / 84.5 / 143.7 us against
         * 70.9 / 95.0 / 189.7 at S = 1K / 4K / 16K).  Elsewhere it is kept
         * so the single-cluster exchange is compiled and tested. */
        ring_cfg rc;
        const bool mha = m->attention->kv_heads == m->attention->heads;
        bool pairs = false;   /* two clusters per head plan (known before p = 1) */
        for (unsigned p = 2; p >= 1; p--) {
            if (ring_plan(m, t, 2, p, bmax, &rc))
                continue;
            pairs |= p == 2;
            const bool preferred = p == 2 || !pairs;
            const bool share = rc.share;
            const char *what =
                p == 2 ? (mha ? "preferred: two clusters of 2 per head streamed through a "
                                "shared-memory ring (measured fastest at batch 1, 2 and 4: "
                                "8-14% ahead of the best register form at batch 1, 1.2-1.7x "
                                "the unfused cuBLAS baseline)"
                          : share ? "preferred: the KV groups' CTAs fill the SMs, streamed "
                                    "through a shared-memory ring (at batch 1 1.9-4.7x faster "
                                    "than the unfused baseline; to batch 4 ahead of the grid "
                                    "form)"
                                  : "preferred: two clusters of 2 per query head streamed through "
                                    "a shared-memory ring; the query heads of a group read their "
                                    "K/V rows and cache where the group's first head brought them "
                                    "into L2")
                : pairs ? (share ? "groups of 2 CTAs per query head streamed through a "
                                   "shared-memory ring (fewer SMs; tests a group of whole "
                                   "clusters)"
                                 : "one cluster of 2 per head streamed through a shared-memory "
                                   "ring (half the SMs; tests the single-cluster exchange)")
                        : "preferred: one cluster of 2 per head streamed through a "
                          "shared-memory ring (two clusters of 2 per head would need more "
                          "CTAs than SMs; measured ahead of the register form)";
            fg_strbuf choice = {0}, twin = {0};
            fg_sb_puts(&choice, what);
            fg_sb_puts(&twin, "deterministic twin of the ring form (same code: the ring form is "
                              "reproducible by construction)");
            int rc_plan = ring_choose(set, m, t, bmax, p, &rc, &choice, d);
            if (!rc_plan) {
                fg_sb_puts(&twin, strchr(fg_sb_str(&choice), '\n'));
                rc_plan = plan_one(set, s, ts, bmax, 2, p, NULL, &rc, false,
                                   preferred ? 3 : 1, fg_sb_str(&choice), d);
            }
            if (!rc_plan && preferred)
                rc_plan = plan_one(set, s, ts, bmax, 2, p, NULL, &rc, true, 1, fg_sb_str(&twin), d);
            if (!rc_plan && set->candidates)
                rc_plan = plan_ring_candidates(set, s, ts, bmax, p, &rc, d);
            fg_sb_free(&choice);
            fg_sb_free(&twin);
            if (rc_plan)
                return -1;
        }
    }
    return 0;
}

const char *fg_plan_decode_skipped(const fg_spec *s, const fg_target *t)
{
    const char *why = unsupported(s->model, t);
    if (why)
        return why;
    static char buf[256];
    buf[0] = '\0';
    size_t len = 0;
    for (unsigned i = 0; i < s->model->batch_sizes_count; i++) {
        const unsigned bmax = s->model->batch_sizes[i];
        const char *reason = NULL;
        grid_cfg g;
        if (grid_serves(t, bmax)) {
            reason = grid_plan(s->model, t, bmax, &g);
        } else {
            const cta_shape *cs = bmax == 1 ? &WIDE : &BATCHED;
            ring_cfg rc;
            const char *ring_why = ring_plan(s->model, t, 2, 2, bmax, &rc);
            const char *reg_why = register_form_unsupported(s->model);
            if (ring_why && reg_why)
                reason = ring_why;   /* the ring is the only form, and it does not plan */
            else if (ring_why && !preferred_cluster(s->model, t, cs, bmax, CLUSTER_SIZES, NCLUSTER_SIZES))
                reason = "no cluster size fits: the x slices of the batch would not fit in "
                         "registers";
        }
        if (reason && len < sizeof buf - 1)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%sbatch %u: %s",
                                    len ? "; " : "", bmax, reason);
    }
    return len ? buf : NULL;
}
