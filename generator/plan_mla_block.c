/* The whole MLA attention block at decode (templates/mla_block.in): the
 * projections, the latent RMSNorm and RoPE, the append, W_uk absorbed into
 * q, the attention over the latent cache, W_uv and W_o in one cooperative
 * launch, its phases meeting at grid barriers.  One block per SM, 256
 * threads; what a block reads from HBM streams through a ring of shared-memory
 * slots in the order the phases take it, so later phases' bytes are in flight
 * during earlier phases and barriers.  The attention takes heads in groups of
 * 16 on tensor cores.  Its configuration (the ring's slots, the rows a
 * piece, the W_uk rows a chunk, the projections on tensor cores or not) is
 * the model's below, a tuning entry's, or with `generate --candidates`
 * every one that plans as a tuning candidate (issue 11).
 *
 * The portable form (templates/mla_block_portable.in; plan_portable): for
 * targets without clusters (max_cluster_size 0: gfx942, gfx90a, and sm_90a
 * where a target says so, as the MLA core's planner chooses its portable
 * form), the same phases at the same grid barriers with agent-scope
 * release/acquire, no bulk copies, ring or producer warp: every thread
 * loads, the projections' weights straight into matrix-unit fragments, and
 * the attention is the MLA core's portable loop at 16 heads a workgroup
 * (its shape: fg_plan_mla_portable16). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "rope.h"

#define BLOCK_THREADS 256   /* consumers: two of kv_lora's 512 output columns a thread */
#define BLOCK_GROUP 16      /* heads an attention item takes */
#define BLOCK_TILE 32       /* keys a tile */
#define BLOCK_CHUNK 32      /* W_uk rows a piece of the absorption holds */
#define BLOCK_MAX_BATCH 16
#define BLOCK_MMA_BATCH 4    /* from this B_max on, the projections and W_uk's absorption
                              * run on tensor cores (below, a multiply-add a weight a request
                              * on CUDA cores is cheaper than feeding mma's 8-request tiles) */
#define BLOCK_MAX_ROPE 128   /* the frequency table's room */
#define BLOCK_PIECE_ROWS 16  /* weight rows a ring slot holds at most */
#define BLOCK_MAX_SLOTS 8
#define BLOCK_MAX_SPLIT_KEYS 4096   /* the sm_90a form's longest split (long_splits) */
#define PORTABLE_OWN_SMEM 4096   /* the portable form's shared memory past the MLA core loop's */
#define PORTABLE_UNIT_ROWS 16    /* weight rows a unit of its projections (the matrix units' M) */
#define PORTABLE_ABSORB_COLS 128 /* output columns an item of W_uk's absorption */

static unsigned block_heads(const fg_mla *a) { return a->heads / a->tensor_parallel; }

/* The portable form is for targets without clusters (plan_mla.c's rule for
 * the MLA core's portable form). */
static bool portable_target(const fg_target *t) { return t->max_cluster_size == 0; }

/* Why this spec and target get no fused block, or NULL. */
static const char *unsupported(const fg_model *m, const fg_target *t)
{
    static char buf[512];
    const fg_mla *a = m->mla;
    if (!portable_target(t) && t->arch != FG_ARCH_SM90A)
        return "the fused MLA block is emitted for sm_90a, and in its portable form for targets "
               "without clusters (max_cluster_size 0)";
    if (t->compute_units > 1024)
        return "the fused MLA block's merge weighs at most 1024 splits a request (one a block)";
    if (m->kv_cache->layout == FG_KV_PAGED && m->max_context % m->kv_cache->page_size)
        return "the fused MLA block takes a paged cache of whole pages (max_context a multiple "
               "of page_size)";
    if (a->kv_lora_rank != 2 * BLOCK_THREADS)
        return "the fused MLA block takes kv_lora 512 (two output columns a thread)";
    if (block_heads(a) % BLOCK_GROUP)
        return "the fused MLA block takes heads per GPU in groups of 16";
    if (a->qk_nope_head_dim % BLOCK_CHUNK || a->qk_rope_head_dim % 64 || m->hidden % 256 ||
        a->q_lora_rank % 256 || (block_heads(a) * a->v_head_dim) % 256)
        return "the fused MLA block takes weight rows of whole warps of 16-byte vectors (hidden, "
               "q_lora and heads x v_head_dim multiples of 256), qk_nope_head_dim a multiple of 32 "
               "and rope of 64 (the attention's column quarters are whole mma k-steps)";
    if (m->rope->layout != FG_ROPE_GPTJ)
        return "the fused MLA block turns k_pe and q_pe in interleaved pairs (the GPT-J layout, "
               "DeepSeek's): the NeoX layout is not emitted";
    float inv[BLOCK_MAX_ROPE / 2];
    if (a->qk_rope_head_dim > BLOCK_MAX_ROPE || !fg_rope_inv_freq(m->rope, a->qk_rope_head_dim, inv))
        return "the spec's RoPE scaling gives no frequency table";
    fg_mla_portable_shape p;
    const char *why;
    if (portable_target(t) && a->v_head_dim % PORTABLE_UNIT_ROWS)
        return "the fused MLA block's portable form takes v_head_dim a multiple of 16 (W_uv's "
               "units of 16 rows within one head)";
    if (portable_target(t) && (why = fg_plan_mla_portable16(m, t, &p)) != NULL) {
        snprintf(buf, sizeof buf, "the fused MLA block's portable form (%s has no clusters: "
                                  "max_cluster_size 0) runs the MLA core's portable loop at 16 heads "
                                  "a workgroup, which does not fit: %s", t->name, why);
        return buf;
    }
    return NULL;
}

/* The ring's slot: a tile of keys (rows padded by 16 bytes), a W_uk chunk or
 * a weight row, whichever is largest, in 128-byte units. */
static unsigned slot_bytes(const fg_model *m, unsigned elem)
{
    const fg_mla *a = m->mla;
    const unsigned d = a->kv_lora_rank + a->qk_rope_head_dim;
    unsigned b = BLOCK_TILE * (d + 8) * elem;
    const unsigned rows[] = {BLOCK_CHUNK * a->kv_lora_rank, m->hidden, a->q_lora_rank,
                             block_heads(a) * a->v_head_dim};
    for (unsigned i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i] * elem > b)
            b = rows[i] * elem;
    return (b + 127) / 128 * 128;
}

/* Shared memory of the kernel's Smem with `slots` slots (an upper bound; the
 * template checks): the barriers, the reductions' sums, the scratch of the
 * projections' vectors and the attention's queries, scores and
 * probabilities, the attention's rescale of each head, then the slots. */
static unsigned smem_bytes(unsigned bmax, unsigned d, unsigned slots, unsigned slot)
{
    const unsigned warps = BLOCK_THREADS / 32;
    unsigned b = slots * 16 + bmax * 4 + warps * 4 + warps * bmax * 4 + BLOCK_GROUP * d * 4 +
                 BLOCK_GROUP * 4 + 16 /* q's alignment */;
    return (b + 127) / 128 * 128 + slots * slot;
}

/* D's tile rows in groups of 4, one bulk copy a group (the template's
 * kRowGroup), or a copy a row.  A copy of one 1152-byte row holds a block's
 * attention to ~26 GB/s on an H100 at 64, 96 and 132 blocks (stop 76),
 * under an H200 SM's share of its read ceiling (4450 / 132 = 34 GB/s);
 * with 4 rows a copy it streamed 44 GB/s a block at 64 blocks, where HBM
 * let it (V3 at TP = 8, B = 16, S = 16K: 0.73x; stop 77).  Where an SM's
 * share is below that rate (an H100: 24 GB/s) D cannot gain, and the
 * groups measured level to 2% slower (V2-Lite up to 8.6%) with one head
 * group; from 8 head groups (every row read by 8 items) they won there too
 * (V2, 128 heads, B = 1, S = 16K: 0.91x).  The groups need a tile's rows
 * contiguous: a page of whole tiles or the contiguous cache. */
#define ROW_GROUP_HEAD_GROUPS 8
static unsigned row_group(const fg_model *m, const fg_target *t, char why[160])
{
    const unsigned page = fg_kv_page(m);
    if (page % BLOCK_TILE) {
        snprintf(why, 160, "a copy a row: pages of %u rows, smaller than a tile", page);
        return 1;
    }
    if (block_heads(m->mla) / BLOCK_GROUP >= ROW_GROUP_HEAD_GROUPS) {
        snprintf(why, 160, "4 rows a copy: %u head groups read each row", block_heads(m->mla) / BLOCK_GROUP);
        return 4;
    }
    const double share = t->ceilings ? t->ceilings->read_gbps / t->compute_units : 0.0;
    const bool fast = fg_mla_row_copies_lag(t);
    snprintf(why, 160, "%s: an SM's share of the read ceiling is %.1f GB/s, and a copy a row holds a "
                       "block's attention to ~%.0f GB/s", fast ? "4 rows a copy" : "a copy a row", share,
             FG_MLA_ROW_COPY_GBPS);
    return fast ? 4 : 1;
}

/* Whether the sm_90a form's tiles land a copy a row where they could land
 * in groups (a target whose SMs' share of HBM is less, as the H100's): code
 * that differs from the same block's on a target of the same SMs and more
 * HBM (the H200), so it is named apart ("_rc"); ranked below it only on a
 * device of neither target (the runtime knows each by its SMs and L2). */
static bool row_copies_by_target(const fg_model *m, const fg_target *t)
{
    const unsigned page = fg_kv_page(m);
    char why[160];
    return !portable_target(t) && page % BLOCK_TILE == 0 && row_group(m, t, why) == 1;
}

/* The name of an mla_block instance at B_max: the block's dimensions, then
 * `variant` ("": the planner's sm_90a form, and its tuning family); -1
 * (reported) if it does not fit; "_rc" after the dimensions where
 * row_copies_by_target. */
static int block_name(char name[FG_NAME_MAX], const fg_model *m, const fg_target *t, unsigned bmax,
                      const char *variant, fg_diag *d)
{
    const fg_mla *a = m->mla;
    const unsigned page = fg_kv_page(m);
    char dims[96], paged[16] = "";
    if (page)
        snprintf(paged, sizeof paged, "_p%u", page);
    const bool row_copies = row_copies_by_target(m, t);
    snprintf(dims, sizeof dims, "h%u_nh%u_q%u_kv%u_r%u_s%u%s_b%u%s", m->hidden, block_heads(a),
             a->q_lora_rank, a->kv_lora_rank, a->qk_rope_head_dim, m->max_context, paged, bmax,
             row_copies ? "_rc" : "");
    if (!fg_instance_name(name, "mla_block", t->arch, fg_dtype_name(m->dtype), dims, variant)) {
        fg_error(d, "cannot name an mla_block instance");
        return -1;
    }
    return 0;
}

/* An mla_block instance of template tmpl named by the block's dimensions and
 * variant, with what both forms share: the 11 key parameters (a call's
 * batch may be below B_max). */
static int block_instance_init(fg_instance *in, const fg_model *m, const fg_target *t,
                               unsigned bmax, const char *variant, const char *tmpl, fg_diag *d)
{
    const fg_mla *a = m->mla;
    const unsigned page = fg_kv_page(m);
    if (block_name(in->name, m, t, bmax, variant, d) != 0)
        return -1;
    in->family = "mla_block";
    in->op = "mla_block";
    in->template_name = tmpl;
    in->target = t;
    in->dtype = m->dtype;
    fg_instance_add_param(in, "HIDDEN", m->hidden);
    fg_instance_add_param(in, "HEADS", block_heads(a));
    fg_instance_add_param(in, "Q_LORA", a->q_lora_rank);
    fg_instance_add_param(in, "KV_LORA", a->kv_lora_rank);
    fg_instance_add_param(in, "ROPE_DIM", a->qk_rope_head_dim);
    fg_instance_add_param(in, "NOPE", a->qk_nope_head_dim);
    fg_instance_add_param(in, "V_DIM", a->v_head_dim);
    fg_instance_add_param(in, "W_O_LD", a->heads * a->v_head_dim);   /* all heads' columns (TP: more) */
    fg_instance_add_param(in, "MAX_CONTEXT", m->max_context);
    fg_instance_add_param(in, "PAGE_SIZE", page);
    fg_instance_add_param(in, "BMAX", bmax);
    in->nkey_params = 11;
    in->key_max_mask = 1u << 10;   /* a call's batch may be below B_max */
    return 0;
}

/* The texts both forms take: the RoPE frequency table and YaRN's cos/sin
 * factor. */
static void rope_texts(fg_instance *in, const fg_model *m)
{
    const unsigned rope = m->mla->qk_rope_head_dim;
    float inv[BLOCK_MAX_ROPE / 2];
    fg_rope_inv_freq(m->rope, rope, inv);   /* unsupported() checked that it gives one */
    fg_strbuf *tab = fg_instance_add_text(in, "INV_FREQ");
    for (unsigned i = 0; i < rope / 2; i++)
        fg_sb_printf(tab, "%s%.9ef", i ? ", " : "", (double)inv[i]);
    fg_sb_printf(fg_instance_add_text(in, "CS_SCALE"), "%.9ef", fg_rope_cos_sin_scale(m->rope));
}

/* Both forms' fp32 workspace for a grid of `grid` blocks at B_max, and
 * `counters` counters (the grid barrier's first): the projections'
 * outputs, q absorbed, the attention's outputs, and per attention item
 * (the kernel cuts each request's keys into grid / (batch x head groups)
 * splits, at least one) a group's rows and statistics.  Worked out in 64
 * bits and refused past the registry's 32-bit field (in freed), as
 * plan_mla.c's set_workspace. */
static int block_workspace(fg_instance *in, const fg_model *m, unsigned grid, unsigned bmax,
                           unsigned counters, fg_diag *d)
{
    const fg_mla *a = m->mla;
    const unsigned heads = block_heads(a), kv = a->kv_lora_rank, ql = a->q_lora_rank;
    const unsigned width = kv + a->qk_rope_head_dim, vdim = a->v_head_dim;
    const unsigned qrows = heads * (a->qk_nope_head_dim + a->qk_rope_head_dim);
    const unsigned long long groups = heads / BLOCK_GROUP,
                             items = grid > bmax * groups ? grid : bmax * groups;
    const unsigned long long floats =
        (unsigned long long)bmax * (ql + qrows + 2 * width) + (unsigned long long)bmax * heads * kv +
        (unsigned long long)bmax * heads * (kv + vdim) +
        (unsigned long long)items * BLOCK_GROUP * (2 + kv);
    if (floats * 4 > UINT32_MAX) {
        fg_error(d, "%s: a workspace of %llu bytes does not fit the registry's 32-bit field", in->name,
                 floats * 4);
        fg_instance_free(in);
        return -1;
    }
    in->workspace_bytes = (unsigned)(floats * 4);
    in->counter_count = counters;
    return 0;
}

/* explain's lines both forms share: what the instance is for (first), and
 * the weights a step reads at the target's read ceiling. */
static void used_for_reason(fg_instance *in, const fg_model *m, unsigned bmax)
{
    const fg_mla *a = m->mla;
    fg_sb_printf(&in->reasons, "used for: the whole MLA attention block of %s at decode (%u heads "
                               "per GPU at tensor parallel %u%s), batch up to %u\n",
                 m->name, block_heads(a), a->tensor_parallel,
                 a->tensor_parallel > 1 ? ": y is this GPU's partial sum" : "", bmax);
}

static void weights_reason(fg_instance *in, const fg_model *m, const fg_target *t)
{
    const fg_mla *a = m->mla;
    const unsigned heads = block_heads(a), kv = a->kv_lora_rank, ql = a->q_lora_rank;
    const unsigned nope = a->qk_nope_head_dim, vdim = a->v_head_dim;
    const unsigned width = kv + a->qk_rope_head_dim, qrows = heads * (nope + a->qk_rope_head_dim);
    const unsigned long long weights =
        ((unsigned long long)(ql ? ql * m->hidden + qrows * ql + ql : qrows * m->hidden) +
         (unsigned long long)width * m->hidden + kv +
         (unsigned long long)heads * (nope + vdim) * kv + (unsigned long long)m->hidden * heads * vdim) *
        fg_dtype_bytes(m->dtype);
    fg_sb_printf(&in->reasons,
                 "weights read once a step: %.1f MB (%.1f us at %s's %.0f GB/s read ceiling), "
                 "plus each request's latent rows\n",
                 weights / 1e6, t->ceilings ? weights / (t->ceilings->read_gbps * 1e3) : 0.0,
                 t->name, t->ceilings ? t->ceilings->read_gbps : 0.0);
}

/* explain's last line: RoPE, the cache, the shared memory. */
static void rope_reason(fg_instance *in, const fg_model *m, unsigned page, const char *smem)
{
    fg_sb_printf(&in->reasons, "RoPE on q_pe and k_pe in interleaved pairs, YaRN's cos/sin factor "
                               "%.9f; %s; %s\n",
                 fg_rope_cos_sin_scale(m->rope),
                 page ? "paged cache through the block table" : "contiguous cache", smem);
}

/* A configuration of the sm_90a form: the ring's slots, the weight rows a
 * piece holds at most (the CUDA-core projections'), the W_uk rows a chunk
 * of the absorption, the projections on tensor cores or not, and the
 * blocks that absorb W_uk kept out of the projections before it or not. */
typedef struct block_cfg {
    unsigned slots, piece_rows, chunk_rows;
    bool mma, apart;
} block_cfg;

/* What the candidates range over (each combination that plans); the
 * tensor-core projections take no piece_rows (their pieces are kMmaRows). */
static const unsigned CAND_PIECE_ROWS[] = {4, 8, 16, 32};
static const unsigned CAND_CHUNK_ROWS[] = {8, 16, 32};

/* The most slots of `slot` bytes the target's shared memory holds at B_max
 * (BLOCK_MAX_SLOTS at most). */
static unsigned most_slots(unsigned bmax, unsigned width, unsigned slot, const fg_target *t)
{
    unsigned slots = 0;
    while (slots < BLOCK_MAX_SLOTS &&
           smem_bytes(bmax, width, slots + 1, slot) <= t->shared_mem_per_block)
        slots++;
    return slots;
}

/* Whether the blocks that absorb W_uk into q (the first, a head each) take
 * no rows of the projections before C by the planner's rule, so that their
 * W_uk chunks stream from the launch rather than behind a share of those:
 * where a head's W_uk is at least half of what a block reads of the
 * projections on average (V2-Lite: 128 of 113 KB, 2.0% faster at B = 1 and
 * 1.2% at B = 16 on an H100; V3 at TP = 8, 128 of 300 KB: 2.0% slower at
 * B = 1).  Only where the grid has four blocks a head or more (apart_fits). */
static bool apart_fits(const fg_model *m, unsigned grid) { return block_heads(m->mla) * 4 <= grid; }
static bool absorb_apart(const fg_model *m, unsigned grid)
{
    const fg_mla *a = m->mla;
    const unsigned heads = block_heads(a), ql = a->q_lora_rank;
    const double qrows = (double)heads * (a->qk_nope_head_dim + a->qk_rope_head_dim);
    const double before_c = (ql ? (double)ql * m->hidden + qrows * ql : qrows * m->hidden) +
                            (double)(a->kv_lora_rank + a->qk_rope_head_dim) * m->hidden;
    const double w_uk = (double)a->qk_nope_head_dim * a->kv_lora_rank;
    return apart_fits(m, grid) && 2.0 * w_uk * grid >= before_c;
}

/* The model's: as many slots as fit, pieces of BLOCK_PIECE_ROWS, chunks of
 * BLOCK_CHUNK, tensor cores from BLOCK_MMA_BATCH requests on, the absorbing
 * blocks apart by absorb_apart's rule. */
static block_cfg model_cfg(const fg_model *m, unsigned grid, unsigned bmax, unsigned most)
{
    return (block_cfg){.slots = most, .piece_rows = BLOCK_PIECE_ROWS, .chunk_rows = BLOCK_CHUNK,
                       .mma = bmax >= BLOCK_MMA_BATCH, .apart = absorb_apart(m, grid)};
}

/* Why configuration c does not plan for this model at B_max (the
 * template's static_asserts on it), or NULL. */
static const char *cfg_misfit(const fg_model *m, unsigned grid, unsigned most, unsigned slot,
                              const block_cfg *c, char *why, size_t n)
{
    const fg_mla *a = m->mla;
    const unsigned elem = fg_dtype_bytes(m->dtype), kv = a->kv_lora_rank;
    if (c->slots < 2 || c->slots > most)
        snprintf(why, n, "%u slots: 2 to %u slots of %u bytes fit", c->slots, most, slot);
    else if (c->piece_rows < 1 || c->piece_rows > 64)
        snprintf(why, n, "%u rows a piece: 1 to 64", c->piece_rows);
    else if (c->mma && c->piece_rows != BLOCK_PIECE_ROWS)
        snprintf(why, n, "%u rows a piece with the projections on tensor cores: their pieces are "
                         "their own (32 rows); piece_rows is %u there", c->piece_rows,
                 BLOCK_PIECE_ROWS);
    else if (c->chunk_rows < 4 || c->chunk_rows % 4 || a->qk_nope_head_dim % c->chunk_rows ||
             c->chunk_rows * kv * elem > slot)
        snprintf(why, n, "%u W_uk rows a chunk: a multiple of 4 dividing qk_nope_head_dim %u, "
                         "%u bytes at most", c->chunk_rows, a->qk_nope_head_dim, slot);
    else if (c->mma && (c->chunk_rows % 16 || c->chunk_rows * (kv + 8) * elem > slot))
        snprintf(why, n, "%u W_uk rows a chunk on tensor cores: whole k-steps of 16 at a padded "
                         "stride within %u bytes", c->chunk_rows, slot);
    else if (c->apart && !apart_fits(m, grid))
        snprintf(why, n, "the absorbing blocks apart: %u heads need four blocks a head, the grid "
                         "has %u", block_heads(m->mla), grid);
    else
        return NULL;
    return why;
}

/* A configuration in words (explain): into buf[160]. */
static void describe(const block_cfg *c, char buf[160])
{
    snprintf(buf, 160,
             "%u slots, pieces of up to %u rows, W_uk chunks of %u rows, projections on %s%s",
             c->slots, c->piece_rows, c->chunk_rows, c->mma ? "tensor cores" : "CUDA cores",
             c->apart ? ", absorbing blocks apart" : "");
}

/* Whether the CUDA-core form stages B_max input vectors of `len` values in
 * shared memory: they fit the attention's scratch of BLOCK_GROUP rows of
 * `width` floats (the template's kStageFloats). */
static bool staged_fits(unsigned bmax, unsigned long long len, unsigned width)
{
    return bmax * len <= (unsigned long long)BLOCK_GROUP * width;
}

/* The sm_90a form's instance of configuration c at B_max, from `from` (a
 * measured one named by it too: the tuned instance is the candidate that
 * won), with `config` explain's line of where the configuration came from. */
static int emit(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                const block_cfg *c, fg_origin from, const char *family, const char *config,
                fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_mla *a = m->mla;
    const unsigned heads = block_heads(a), kv = a->kv_lora_rank, rope = a->qk_rope_head_dim;
    const unsigned vdim = a->v_head_dim, ql = a->q_lora_rank;
    const unsigned width = kv + rope;
    const unsigned page = fg_kv_page(m);
    const unsigned elem = fg_dtype_bytes(m->dtype), grid = t->compute_units;
    const unsigned slot = slot_bytes(m, elem), slots = c->slots;
    const unsigned smem = smem_bytes(bmax, width, slots, slot);
    char variant[32] = "";
    if (from != FG_FROM_MODEL)
        snprintf(variant, sizeof variant, "s%up%uc%u%s%s", slots, c->piece_rows, c->chunk_rows,
                 c->mma ? "t" : "", c->apart ? "a" : "");
    fg_instance in = {0};
    if (block_instance_init(&in, m, t, bmax, variant, "mla_block.in", d) != 0)
        return -1;
    fg_plan_mark(&in, family, from);
    fg_instance_add_param(&in, "THREADS", BLOCK_THREADS);
    fg_instance_add_param(&in, "SMEM_BYTES", smem);
    fg_instance_add_param(&in, "SLOTS", slots);
    fg_instance_add_param(&in, "SLOT_BYTES", slot);
    fg_instance_add_param(&in, "PIECE_ROWS", c->piece_rows);
    fg_instance_add_param(&in, "CHUNK_ROWS", c->chunk_rows);
    fg_instance_add_param(&in, "MMA_PROJ", c->mma);
    /* W_o's chunks folded (the template's fold_cols) only where every
     * block's share of its rows is 16 or fewer: the fold's code in the phase
     * after the attention holds values through it, which spilled V3's 168
     * registers where it would never fold */
    const bool fold_wo = c->mma && m->hidden <= 16 * grid && heads * vdim > 512;
    fg_instance_add_param(&in, "FOLD_WO", fold_wo);
    rope_texts(&in, m);
    in.launch = (fg_launch){.grid = FG_GRID_FIXED,
                            .grid_dims = {grid, 1, 1},
                            .block = {BLOCK_THREADS + 32, 1, 1},   /* a producer warp besides */
                            .cluster = {1, 1, 1},
                            .cooperative = true,
                            .dynamic_smem = smem};
    /* the counters: the grid barrier's; in the CUDA-core form, for C's waits
     * on its heads' producers, one a head for q_nope's producers and one for
     * the kv rows'; then each request's and head's largest split maximum
     * (D's atomicMax, E's reference).  Where the grid has two blocks a head
     * or more, the CUDA-core form's E applies W_uv in its items (the
     * template's kUvInMerge), each a head's part of the latent columns: as
     * many parts as keep the grid busy at B = 1, one (E, then F) where W_o's
     * phase cannot stage o to add them (B_max x heads x v_dim past its
     * scratch of 16 x (kv_lora + rope) floats) */
    fg_instance_add_param(&in, "HEAD_WAITS", !c->mma);
    const unsigned fill = !c->mma && staged_fits(bmax, (unsigned long long)heads * vdim, width)
                              ? grid / heads : 1;
    const unsigned uv_parts = fill >= 8 ? 8 : fill >= 4 ? 4 : fill >= 2 ? 2 : 1;
    fg_instance_add_param(&in, "UV_PARTS", uv_parts);
    const unsigned apart = c->apart ? heads : 0;
    fg_instance_add_param(&in, "ABSORB_APART", apart);
    char row_group_why[160];
    const unsigned rows_a_copy = row_group(m, t, row_group_why);
    fg_instance_add_param(&in, "ROW_GROUP", rows_a_copy);
    /* (a build for several targets of one arch has both forms: the runtime
     * takes the one planned for the device's target, which it knows by its
     * SMs and L2 (fg_device_info.target); on a device of no target of the
     * build, the groups', which the faster HBM needs and the slower loses at
     * most a few % to) */
    const bool row_copies = row_copies_by_target(m, t);
    if (row_copies)
        in.priority = FG_PRIORITY_TARGET_FORM;
    if (block_workspace(&in, m, grid, bmax, (c->mma ? 1 : 2 + heads) + bmax * heads, d) != 0)
        return -1;
    snprintf(in.path_key, sizeof in.path_key, "mla_block/%s/%s/%s/%s", fg_arch_tag(t->arch),
             fg_dtype_name(m->dtype), ql ? "q_lora" : "q", page ? "paged" : "contiguous");

    /* explain: what it is for, where its configuration comes from, how it
     * runs, what it moves */
    used_for_reason(&in, m, bmax);
    if (from == FG_CANDIDATE) {
        char what[160];
        describe(c, what);
        fg_sb_printf(&in.reasons, "tuning candidate (generate --candidates): %s, not the "
                                  "planner's choice\n",
                     what);
    } else
        fg_sb_printf(&in.reasons, "%s\n", config);
    fg_sb_printf(&in.reasons,
                 "one launch: a cooperative grid of %u blocks (one per SM) x %u threads, %u grid "
                 "barriers between its phases (projections%s, the new latent row and W_uk "
                 "absorbed into q, attention, the splits' merge, W_uv, W_o)%s%s\n",
                 grid, BLOCK_THREADS, (ql ? 6 : 5) - !c->mma - (uv_parts > 1), ql ? ", q_lora's second projection" : "",
                 c->mma ? "" : "; the absorption and the new latent row wait on their own "
                               "producers' rows (counters), not on a barrier",
                 uv_parts > 1 ? "; the merge applies W_uv in its items (a head's part of the latent "
                                "columns each; W_o's phase adds the parts)" : "");
    if (apart)
        fg_sb_printf(&in.reasons,
                     "the %u blocks that absorb W_uk into q (a head each) take no rows of the "
                     "projections before the absorption: their W_uk chunks stream from the "
                     "launch\n",
                     apart);
    weights_reason(&in, m, t);
    fg_sb_printf(&in.reasons,
                 "attention on tensor cores (mma.sync m16n8k16, a group's %u heads the rows), "
                 "tiles of %u keys; a request's keys cut into splits over the grid at run time "
                 "(SMs / (batch x head groups))\n",
                 BLOCK_GROUP, BLOCK_TILE);
    fg_sb_printf(&in.reasons, "the attention's tiles land %s%s\n", row_group_why,
                 row_copies ? " (named _rc; where a build has the groups' form of the same block too, "
                              "the runtime takes each target's own, and the groups' on a device of "
                              "neither target)"
                            : "");
    char basis[64];
    if (from == FG_FROM_MODEL)
        snprintf(basis, sizeof basis, "B_max %u %s %u", bmax, c->mma ? ">=" : "<", BLOCK_MMA_BATCH);
    else
        snprintf(basis, sizeof basis, "%s", from == FG_CANDIDATE ? "this candidate's"
                                                                 : "the tuning entry's");
    if (c->mma) {
        fg_sb_printf(&in.reasons,
                     "projections and W_uk's absorption on tensor cores (%s; mma.sync "
                     "m16n8k16, a piece's weight rows the M, the requests the N): pieces of up to "
                     "32 rows x 512 columns at a padded stride, each warp loading its slice of the "
                     "requests' input vectors for those columns into registers a chunk ahead%s\n",
                     basis, fold_wo ? "; W_o's pieces hold a block's rows twice, 1024 columns "
                                      "(every share of W_o is 16 rows or fewer)"
                                    : "");
    } else {
        const unsigned long long stage = (unsigned long long)BLOCK_GROUP * width;
        /* (W_uv's phase only where E does not apply it: uv_parts 1) */
        const unsigned long long lens[4] = {m->hidden, ql,
                                            uv_parts > 1 ? 0 : (unsigned long long)heads * kv,
                                            (unsigned long long)heads * vdim};
        const char *const names[4] = {"q/kv projection", "q_lora's second", "W_uv", "W_o"};
        char staged[96] = "";
        for (unsigned i = 0; i < 4; i++)
            if (lens[i] && staged_fits(bmax, lens[i], width))
                snprintf(staged + strlen(staged), sizeof staged - strlen(staged), "%s%s",
                         *staged ? ", " : "", names[i]);
        fg_sb_printf(&in.reasons,
                     "projections on CUDA cores (%s): a piece's rows (up to %u) shared evenly by "
                     "the %u consumer warps; every "
                     "request's input vector staged in shared memory where B_max x its length fits "
                     "%llu floats (here: %s), else read from global memory at each step\n",
                     basis, c->piece_rows, BLOCK_THREADS / 32, stage, *staged ? staged : "none");
    }
    fg_sb_printf(&in.reasons,
                 "a block's weight rows and latent rows stream in by bulk copies through a ring "
                 "of %u slots of %u bytes%s, in the order the phases take them, "
                 "so the next phases' bytes are in flight during a phase and its barrier, "
                 "the weights%s with an L2 evict-first hint (read once a step)\n",
                 slots, slot, from == FG_FROM_MODEL ? " (as many as fit)" : "",
                 heads / BLOCK_GROUP == 1 ? " and the latent rows (one head group)" : "");
    char smem_text[64];
    snprintf(smem_text, sizeof smem_text, "%u bytes of shared memory", smem);
    rope_reason(&in, m, page, smem_text);
    return fg_plan_add(set, &in, s, ts, d);
}

static int plan_one(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                    fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_mla *a = m->mla;
    const unsigned width = a->kv_lora_rank + a->qk_rope_head_dim;
    const unsigned slot = slot_bytes(m, fg_dtype_bytes(m->dtype));
    const unsigned most = most_slots(bmax, width, slot, t), grid = t->compute_units;
    if (most < 2) {
        fg_error(d, "mla_block: two slots of %u bytes need %u bytes of shared memory; %s allows %u",
                 slot, smem_bytes(bmax, width, 2, slot), t->name, t->shared_mem_per_block);
        return -1;
    }
    /* the family a tuning entry names: the instance name less its configuration */
    char family[FG_NAME_MAX], why[200];
    if (block_name(family, m, t, bmax, "", d) != 0)
        return -1;
    const fg_tuning_entry *e = fg_plan_tuning_entry(set, family);
    block_cfg chosen = model_cfg(m, grid, bmax, most);
    fg_strbuf config = {0};
    if (e) {
        chosen = (block_cfg){.slots = e->slots, .piece_rows = e->piece_rows,
                             .chunk_rows = e->chunk_rows, .mma = e->mma_proj,
                             .apart = e->absorb_apart};
        const char *bad = why;
        if (e->threads != BLOCK_THREADS)
            snprintf(why, sizeof why, "%u threads: the form has %u", e->threads, BLOCK_THREADS);
        else
            bad = cfg_misfit(m, grid, most, slot, &chosen, why, sizeof why);
        char what[160];
        describe(&chosen, what);
        if (bad) {
            fg_error(d, "%s: the entry for %s (%s) does not plan: %s; run fusegen tune again",
                     set->tuning->path, family, what, bad);
            return -1;
        }
        fg_plan_config_line(&config, set, e, what, 2);
    } else {
        fg_plan_config_line(&config, set, NULL, NULL, 2);
    }
    int rc = emit(set, s, ts, bmax, &chosen, e ? FG_FROM_TUNING : FG_FROM_MODEL, family,
                  fg_sb_str(&config), d);
    fg_sb_free(&config);
    /* tuning candidates: every combination that plans (cfg_misfit decides)
     * but the one chosen, its absorbing blocks as the chosen's; then the
     * chosen with them the other way (one candidate more, not twice the
     * candidates: the ring's shape and the blocks apart barely interact) */
    for (unsigned slots = 2; set->candidates && rc == 0 && slots <= most; slots++)
        for (int mma = 0; rc == 0 && mma <= 1; mma++)
            for (size_t i = 0; rc == 0 && i < NELEMS(CAND_PIECE_ROWS); i++)
                for (size_t j = 0; rc == 0 && j < NELEMS(CAND_CHUNK_ROWS); j++) {
                    const block_cfg c = {.slots = slots,
                                         .piece_rows = CAND_PIECE_ROWS[i],
                                         .chunk_rows = CAND_CHUNK_ROWS[j],
                                         .mma = mma,
                                         .apart = chosen.apart};
                    const bool same = c.slots == chosen.slots && c.piece_rows == chosen.piece_rows &&
                                      c.chunk_rows == chosen.chunk_rows && c.mma == chosen.mma;
                    if (!same && !cfg_misfit(m, grid, most, slot, &c, why, sizeof why))
                        rc = emit(set, s, ts, bmax, &c, FG_CANDIDATE, family, "", d);
                }
    block_cfg flipped = chosen;
    flipped.apart = !chosen.apart;
    if (set->candidates && rc == 0 && !cfg_misfit(m, grid, most, slot, &flipped, why, sizeof why))
        rc = emit(set, s, ts, bmax, &flipped, FG_CANDIDATE, family, "", d);
    return rc;
}

/* Bytes of the portable form's phases' shared memory at B_max, beside the
 * MLA core loop's (the template's union): the absorption's (every request's
 * q_nope_h and the row groups' sums), the merge's (a weight and a sum a
 * split, 4 floats a thread), the projections' (each wave's sums and
 * squares); the template checks its own figure against SMEM_BYTES. */
static unsigned portable_phase_smem(unsigned bmax, unsigned nope, unsigned threads, unsigned waves,
                                    unsigned ntile)
{
    const unsigned groups = threads / (PORTABLE_ABSORB_COLS / 2), padded = (bmax + ntile - 1) / ntile * ntile;
    const unsigned absorb = bmax * (nope + groups * PORTABLE_ABSORB_COLS) * 4;
    const unsigned merge = 2 * 1024 * 4 + threads * 4 * 4;
    const unsigned proj = waves * (PORTABLE_UNIT_ROWS + 1) * padded * 4;
    unsigned b = absorb > merge ? absorb : merge;
    return b > proj ? b : proj;
}

/* The portable form at B_max (templates/mla_block_portable.in): one
 * workgroup of the MLA core's 16-head portable shape's threads a CU (SM),
 * its shared memory the largest of the loop's and the other phases' and
 * PORTABLE_OWN_SMEM more. */
static int plan_portable(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                         fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_mla *a = m->mla;
    const bool amd = fg_arch_is_amd(t->arch);
    const unsigned heads = block_heads(a), kv = a->kv_lora_rank, ql = a->q_lora_rank;
    const unsigned page = fg_kv_page(m);
    const unsigned grid = t->compute_units;
    fg_mla_portable_shape p;
    if (fg_plan_mla_portable16(m, t, &p) != NULL)
        return 0;   /* (unsupported() refused what has no shape) */
    const unsigned phases = portable_phase_smem(bmax, a->qk_nope_head_dim, p.threads,
                                                p.threads / t->warp_size, amd ? 16 : 8);
    const unsigned smem = (phases > p.smem ? phases : p.smem) + PORTABLE_OWN_SMEM;
    if (smem > t->shared_mem_per_block) {
        fg_error(d, "mla_block: the portable form needs %u bytes of shared memory at B_max %u (the "
                    "MLA core loop's %u at 16 heads, tiles of %u keys in %u stage%s, or its other "
                    "phases' %u, and %u of its own); %s allows %u",
                 smem, bmax, p.smem, p.tile, p.stages, p.stages == 1 ? "" : "s", phases,
                 PORTABLE_OWN_SMEM, t->name, t->shared_mem_per_block);
        return -1;
    }
    fg_instance in = {0};
    if (block_instance_init(&in, m, t, bmax, "portable", "mla_block_portable.in", d) != 0)
        return -1;
    if (fg_plan_tuning_entry(set, in.name)) {
        fg_error(d, "%s: an entry for %s: the portable MLA block takes no tuning entries (no "
                    "candidates are emitted for it)", set->tuning->path, in.name);
        fg_instance_free(&in);
        return -1;
    }
    fg_instance_add_param(&in, "THREADS", p.threads);
    fg_instance_add_param(&in, "SMEM_BYTES", smem);
    fg_instance_add_param(&in, "TILE", p.tile);
    fg_instance_add_param(&in, "STAGES", p.stages);
    fg_instance_add_param(&in, "PARTS", p.parts);
    rope_texts(&in, m);
    in.launch = (fg_launch){.grid = FG_GRID_FIXED,
                            .grid_dims = {grid, 1, 1},
                            .block = {p.threads, 1, 1},   /* no producer warp: every thread loads */
                            .cluster = {1, 1, 1},
                            .cooperative = true,
                            .dynamic_smem = smem};
    if (block_workspace(&in, m, grid, bmax, 1, d) != 0)   /* the grid barrier's count */
        return -1;
    snprintf(in.path_key, sizeof in.path_key, "mla_block/%s/%s/portable/%s/%s", fg_arch_tag(t->arch),
             fg_dtype_name(m->dtype), ql ? "q_lora" : "q", page ? "paged" : "contiguous");

    /* explain: what it is for, why this form, how it runs, what it moves */
    const unsigned waves = p.threads / t->warp_size, ntile = amd ? 16 : 8;
    const unsigned ntiles = (bmax + ntile - 1) / ntile;
    const char *unit = amd ? "CU" : "SM";
    used_for_reason(&in, m, bmax);
    fg_sb_printf(&in.reasons,
                 "the portable form: %s has no thread-block clusters (max_cluster_size 0), so no "
                 "bulk copies, no mbarrier ring and no producer warp: every thread loads what its "
                 "wave computes on\n",
                 t->name);
    fg_sb_printf(&in.reasons,
                 "one launch: a cooperative grid of %u workgroups (one per %s) x %u threads (%u %s), "
                 "%u grid barriers between its phases (projections%s, the new latent row and W_uk "
                 "absorbed into q, attention, the splits' merge, W_uv, W_o; one fewer where a "
                 "request's keys are one split: the attention writes o_lat itself) with %s\n",
                 grid, unit, p.threads, waves, amd ? "waves of 64" : "warps", ql ? 6 : 5,
                 ql ? ", q_lora's second projection" : "",
                 amd ? "agent-scope release/acquire (MI300X's XCD L2 caches are not coherent "
                       "with each other)"
                     : "device-scope release/acquire (agent scope on AMD, where MI300X's XCD L2 "
                       "caches are not coherent with each other)");
    weights_reason(&in, m, t);
    fg_sb_printf(&in.reasons,
                 "projections on the matrix units, the weights loaded straight from HBM into "
                 "fragments (%s, K in the free order): units of %u weight rows a workgroup, its "
                 "%u %s splitting the columns and their sums added in %s order; the requests as "
                 "N (%u n-tile%s of %u for B_max %u); a step's weights, input vectors and norm "
                 "weights loaded a step ahead; the RMSNorms' 1/rms from the squares of every "
                 "workgroup's first unit's loads\n",
                 amd ? "MFMA 16x16x16" : "mma.sync m16n8k16", PORTABLE_UNIT_ROWS, waves,
                 amd ? "waves" : "warps", amd ? "wave" : "warp", ntiles, ntiles == 1 ? "" : "s",
                 ntile, bmax);
    fg_sb_printf(&in.reasons,
                 "W_uk's absorption into q on the vector units: items of (head, %u output "
                 "columns), %u of them\n",
                 PORTABLE_ABSORB_COLS, heads * (kv / PORTABLE_ABSORB_COLS));
    fg_sb_printf(&in.reasons,
                 "attention: the MLA core's portable loop at %u heads a group (%u group%s), tiles "
                 "of %u keys in %u stage%s, the scores over %u parts of the row, on %s; a "
                 "request's keys cut into splits over the grid at run time (%ss / (batch x head "
                 "groups)); the splits merged after a grid barrier, items (request, head, a part of "
                 "the columns)\n",
                 BLOCK_GROUP, heads / BLOCK_GROUP, heads / BLOCK_GROUP == 1 ? "" : "s", p.tile,
                 p.stages, p.stages == 1 ? "" : "s", p.parts,
                 amd ? "MFMA 16x16x16" : "mma.sync m16n8k16", unit);
    char smem_text[128];
    snprintf(smem_text, sizeof smem_text,
             "%u bytes of shared memory (the largest of the loop's %u and the other phases' %u, "
             "and %u of the block's own)", smem, p.smem, phases, PORTABLE_OWN_SMEM);
    rope_reason(&in, m, page, smem_text);
    return fg_plan_add(set, &in, s, ts, d);
}

/* Keys a split of the sm_90a form's attention holds at B_max and the
 * longest context: the grid cut over (request, head group) items. */
static unsigned split_keys(const fg_model *m, const fg_target *t, unsigned bmax)
{
    const unsigned items = bmax * (block_heads(m->mla) / BLOCK_GROUP);
    const unsigned per_req = items < t->compute_units ? t->compute_units / items : 1;
    return (m->max_context + per_req - 1) / per_req;
}

/* Whether the sm_90a form is left out at this B_max: where a split would
 * hold more than BLOCK_MAX_SPLIT_KEYS keys, a block walks that many rows
 * for one head group at the tile rate of one block, and every group reads
 * them again (V2's 128 heads at B_max 16: one split of 16K keys a request
 * and group; on an H100 at B = 16 the block took 917 us at S = 16K and 350
 * at 4K against 295 and 206 for the MLA core and cuBLAS, stop 61).  Those
 * batches are the MLA core's (mla_decode), with the engine's projections. */
static bool long_splits(const fg_model *m, const fg_target *t, unsigned bmax)
{
    return !portable_target(t) && split_keys(m, t, bmax) > BLOCK_MAX_SPLIT_KEYS;
}

int fg_plan_mla_block(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, fg_diag *d)
{
    const fg_model *m = s->model;
    if (unsupported(m, ts->target))
        return 0;   /* fg_plan_mla_block_skipped() says why in explain */
    const bool portable = portable_target(ts->target);
    for (unsigned i = 0; i < m->batch_sizes_count; i++)
        if (m->batch_sizes[i] <= BLOCK_MAX_BATCH && !long_splits(m, ts->target, m->batch_sizes[i]) &&
            (portable ? plan_portable(set, s, ts, m->batch_sizes[i], d)
                      : plan_one(set, s, ts, m->batch_sizes[i], d)) != 0)
            return -1;
    return 0;
}

const char *fg_plan_mla_block_skipped(const fg_spec *s, const fg_target *t)
{
    const char *why = unsupported(s->model, t);
    if (why)
        return why;
    static char buf[512];
    const fg_model *m = s->model;
    int n = 0;
    for (unsigned i = 0; i < m->batch_sizes_count && n < (int)sizeof buf - 160; i++) {
        const unsigned b = m->batch_sizes[i];
        if (b <= BLOCK_MAX_BATCH && long_splits(m, t, b))
            n += snprintf(buf + n, sizeof buf - n,
                          "%snot at B_max %u (a split of the attention would hold %u keys of one head "
                          "group, more than %u: those batches are the MLA core's)",
                          n ? "; " : "", b, split_keys(m, t, b), BLOCK_MAX_SPLIT_KEYS);
    }
    return n ? buf : NULL;
}
