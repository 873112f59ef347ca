/* The whole MLA attention block at decode (templates/mla_block.in): the
 * projections, the latent RMSNorm and RoPE, the append, W_uk absorbed into
 * q, the attention over the latent cache, W_uv and W_o in one cooperative
 * launch, its phases meeting at grid barriers.  One block per SM, 256
 * threads; what a block reads from HBM streams through a ring of shared-memory
 * slots in the order the phases take it, so later phases' bytes are in flight
 * during earlier phases and barriers.  The attention takes heads in groups of
 * 16 on tensor cores. */
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

static unsigned block_heads(const fg_mla *a) { return a->heads / a->tensor_parallel; }

/* Why this spec and target get no fused block, or NULL. */
static const char *unsupported(const fg_model *m, const fg_target *t)
{
    const fg_mla *a = m->mla;
    if (t->arch != FG_ARCH_SM90A)
        return "the fused MLA block is emitted for sm_90a only so far";
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
 * probabilities, the attention's statistics, then the slots. */
static unsigned smem_bytes(unsigned bmax, unsigned d, unsigned slots, unsigned slot)
{
    const unsigned warps = BLOCK_THREADS / 32;
    unsigned b = slots * 16 + bmax * 4 + warps * 4 + warps * bmax * 4 + BLOCK_GROUP * d * 4 +
                 3 * BLOCK_GROUP * 4 + 16 /* q's alignment */;
    return (b + 127) / 128 * 128 + slots * slot;
}

static int plan_one(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned bmax,
                    fg_diag *d)
{
    const fg_model *m = s->model;
    const fg_target *t = ts->target;
    const fg_mla *a = m->mla;
    const unsigned heads = block_heads(a), kv = a->kv_lora_rank, rope = a->qk_rope_head_dim;
    const unsigned nope = a->qk_nope_head_dim, vdim = a->v_head_dim, ql = a->q_lora_rank;
    const unsigned width = kv + rope, qrows = heads * (nope + rope);
    const unsigned page = m->kv_cache->layout == FG_KV_PAGED ? m->kv_cache->page_size : 0;
    const unsigned elem = fg_dtype_bytes(m->dtype), grid = t->compute_units;
    const unsigned slot = slot_bytes(m, elem);
    unsigned slots = 0;   /* as many as fit, two at least */
    while (slots < BLOCK_MAX_SLOTS &&
           smem_bytes(bmax, width, slots + 1, slot) <= t->shared_mem_per_block)
        slots++;
    if (slots < 2) {
        fg_error(d, "mla_block: two slots of %u bytes need %u bytes of shared memory; %s allows %u",
                 slot, smem_bytes(bmax, width, 2, slot), t->name, t->shared_mem_per_block);
        return -1;
    }
    const unsigned smem = smem_bytes(bmax, width, slots, slot);
    char dims[96], paged[16] = "";
    if (page)
        snprintf(paged, sizeof paged, "_p%u", page);
    snprintf(dims, sizeof dims, "h%u_nh%u_q%u_kv%u_r%u_s%u%s_b%u", m->hidden, heads, ql, kv,
             rope, m->max_context, paged, bmax);
    fg_instance in = {0};
    if (!fg_instance_name(in.name, "mla_block", t->arch, fg_dtype_name(m->dtype), dims, "")) {
        fg_error(d, "cannot name an mla_block instance");
        return -1;
    }
    in.family = "mla_block";
    in.op = "mla_block";
    in.template_name = "mla_block.in";
    in.target = t;
    in.dtype = m->dtype;
    fg_instance_add_param(&in, "HIDDEN", m->hidden);
    fg_instance_add_param(&in, "HEADS", heads);
    fg_instance_add_param(&in, "Q_LORA", ql);
    fg_instance_add_param(&in, "KV_LORA", kv);
    fg_instance_add_param(&in, "ROPE_DIM", rope);
    fg_instance_add_param(&in, "NOPE", nope);
    fg_instance_add_param(&in, "V_DIM", vdim);
    fg_instance_add_param(&in, "W_O_LD", a->heads * vdim);   /* all heads' columns (TP: more) */
    fg_instance_add_param(&in, "MAX_CONTEXT", m->max_context);
    fg_instance_add_param(&in, "PAGE_SIZE", page);
    fg_instance_add_param(&in, "BMAX", bmax);
    in.nkey_params = 11;
    in.key_max_mask = 1u << 10;   /* a call's batch may be below B_max */
    fg_instance_add_param(&in, "THREADS", BLOCK_THREADS);
    fg_instance_add_param(&in, "SMEM_BYTES", smem);
    fg_instance_add_param(&in, "SLOTS", slots);
    fg_instance_add_param(&in, "SLOT_BYTES", slot);
    fg_instance_add_param(&in, "PIECE_ROWS", BLOCK_PIECE_ROWS);
    fg_instance_add_param(&in, "CHUNK_ROWS", BLOCK_CHUNK);
    const bool mma = bmax >= BLOCK_MMA_BATCH;
    fg_instance_add_param(&in, "MMA_PROJ", mma);
    float inv[BLOCK_MAX_ROPE / 2];
    fg_rope_inv_freq(m->rope, rope, inv);   /* unsupported() checked that it gives one */
    fg_strbuf *tab = fg_instance_add_text(&in, "INV_FREQ");
    for (unsigned i = 0; i < rope / 2; i++)
        fg_sb_printf(tab, "%s%.9ef", i ? ", " : "", (double)inv[i]);
    fg_sb_printf(fg_instance_add_text(&in, "CS_SCALE"), "%.9ef",
                 fg_rope_cos_sin_scale(m->rope));
    in.launch = (fg_launch){.grid = FG_GRID_FIXED,
                            .grid_dims = {grid, 1, 1},
                            .block = {BLOCK_THREADS + 32, 1, 1},   /* a producer warp besides */
                            .cluster = {1, 1, 1},
                            .cooperative = true,
                            .dynamic_smem = smem};
    /* attention items: the kernel cuts each request's keys into grid / (batch x
     * head groups) splits, at least one */
    const unsigned long long groups = heads / BLOCK_GROUP,
                             items = grid > bmax * groups ? grid : bmax * groups;
    const unsigned long long floats =
        (unsigned long long)bmax * (ql + qrows + 2 * width) + (unsigned long long)bmax * heads * kv +
        (unsigned long long)bmax * heads * (kv + vdim) +
        (unsigned long long)items * BLOCK_GROUP * (2 + kv);
    in.workspace_bytes = (unsigned)(floats * 4);
    in.counter_count = 1;   /* the grid barrier's count */
    snprintf(in.path_key, sizeof in.path_key, "mla_block/%s/%s/%s/%s", fg_arch_tag(t->arch),
             fg_dtype_name(m->dtype), ql ? "q_lora" : "q", page ? "paged" : "contiguous");

    /* explain: what it is for, how it runs, what it moves */
    const unsigned long long weights =
        ((unsigned long long)(ql ? ql * m->hidden + qrows * ql + ql : qrows * m->hidden) +
         (unsigned long long)width * m->hidden + kv +
         (unsigned long long)heads * (nope + vdim) * kv + (unsigned long long)m->hidden * heads * vdim) *
        elem;
    fg_sb_printf(&in.reasons, "used for: the whole MLA attention block of %s at decode (%u heads "
                              "per GPU at tensor parallel %u%s), batch up to %u\n",
                 m->name, heads, a->tensor_parallel,
                 a->tensor_parallel > 1 ? ": y is this GPU's partial sum" : "", bmax);
    fg_sb_printf(&in.reasons,
                 "one launch: a cooperative grid of %u blocks (one per SM) x %u threads, %u grid "
                 "barriers between its phases (projections%s, the new latent row and W_uk "
                 "absorbed into q, attention, the splits' merge, W_uv, W_o)\n",
                 grid, BLOCK_THREADS, ql ? 6 : 5, ql ? ", q_lora's second projection" : "");
    fg_sb_printf(&in.reasons,
                 "weights read once a step: %.1f MB (%.1f us at %s's %.0f GB/s read ceiling), "
                 "plus each request's latent rows\n",
                 weights / 1e6, t->ceilings ? weights / (t->ceilings->read_gbps * 1e3) : 0.0,
                 t->name, t->ceilings ? t->ceilings->read_gbps : 0.0);
    fg_sb_printf(&in.reasons,
                 "attention on tensor cores (mma.sync m16n8k16, a group's %u heads the rows), "
                 "tiles of %u keys; a request's keys cut into splits over the grid at run time "
                 "(SMs / (batch x head groups))\n",
                 BLOCK_GROUP, BLOCK_TILE);
    if (mma) {
        fg_sb_printf(&in.reasons,
                     "projections and W_uk's absorption on tensor cores (B_max %u >= %u; mma.sync "
                     "m16n8k16, a piece's weight rows the M, the requests the N): pieces of up to "
                     "32 rows x 512 columns at a padded stride, each warp loading its slice of the "
                     "requests' input vectors for those columns into registers a chunk ahead\n",
                     bmax, BLOCK_MMA_BATCH);
    } else {
        /* the projections' input vectors staged in shared memory where every
         * request's fits the attention's scratch (the template's kStageFloats) */
        const unsigned long long stage = (unsigned long long)BLOCK_GROUP * width;
        const unsigned long long lens[4] = {m->hidden, ql, (unsigned long long)heads * kv,
                                            (unsigned long long)heads * vdim};
        const char *const names[4] = {"q/kv projection", "q_lora's second", "W_uv", "W_o"};
        char staged[96] = "";
        for (unsigned i = 0; i < 4; i++)
            if (lens[i] && bmax * lens[i] <= stage)
                snprintf(staged + strlen(staged), sizeof staged - strlen(staged), "%s%s",
                         *staged ? ", " : "", names[i]);
        fg_sb_printf(&in.reasons,
                     "projections on CUDA cores (B_max %u < %u): a piece's rows shared evenly by "
                     "the %u consumer warps; every "
                     "request's input vector staged in shared memory where B_max x its length fits "
                     "%llu floats (here: %s), else read from global memory at each step\n",
                     bmax, BLOCK_MMA_BATCH, BLOCK_THREADS / 32, stage, *staged ? staged : "none");
    }
    fg_sb_printf(&in.reasons,
                 "a block's weight rows and latent rows stream in by bulk copies through a ring "
                 "of %u slots of %u bytes (as many as fit), in the order the phases take them, "
                 "so the next phases' bytes are in flight during a phase and its barrier\n",
                 slots, slot);
    fg_sb_printf(&in.reasons, "RoPE on q_pe and k_pe in interleaved pairs, YaRN's cos/sin factor "
                              "%.9f; %s; %u bytes of shared memory\n",
                 fg_rope_cos_sin_scale(m->rope),
                 page ? "paged cache through the block table" : "contiguous cache", smem);
    return fg_plan_add(set, &in, s, ts, d);
}

int fg_plan_mla_block(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, fg_diag *d)
{
    const fg_model *m = s->model;
    if (unsupported(m, ts->target))
        return 0;   /* fg_plan_mla_block_skipped() says why in explain */
    for (unsigned i = 0; i < m->batch_sizes_count; i++)
        if (m->batch_sizes[i] <= BLOCK_MAX_BATCH && plan_one(set, s, ts, m->batch_sizes[i], d))
            return -1;
    return 0;
}

const char *fg_plan_mla_block_skipped(const fg_spec *s, const fg_target *t)
{
    return unsupported(s->model, t);
}
