/* The GEMM of the overlap family's fused form (issues 7 and 10), one
 * instance per (n, k) of a GEMM spec (m is the call's: the rows of a shard
 * or a piece).  On sm_90a a persistent, warp-specialized wgmma kernel
 * (overlap_gemm.in) whose configuration (stages, the C buffer's rounds, the
 * tile rows a group) is the model's below, a tuning entry's, or with
 * `generate --candidates` every one that fits as a tuning candidate (issue
 * 11).  On targets without clusters (gfx942 / gfx90a, and an sm_90a target
 * that says it has none, to run the AMD algorithm on an H200) the portable
 * form: a persistent kernel staged through registers and LDS, MFMA on AMD
 * and mma.sync on sm_90 (overlap_gemm_portable.in), its tiles fixed here
 * (not tuned).  Both are fed as their rows land (the fused AG+GEMM: a tile
 * waits for the flags of the pieces its rows lie in; gemm_tiles.in) and
 * drained as their rows are written (the fused GEMM+RS's counters). */
#include <stdio.h>

#include "plan.h"

#define GEMM_THREADS 384u
#define GEMM_STAGE_BYTES ((GEMM_BM + GEMM_BN) * GEMM_BK * 2)

/* The portable form (overlap_gemm_portable.in): 256 threads a block, each
 * wave a 64 x 64 sub-tile, 2 x (waves / 2) of them: AMD's 4 waves of 64 a
 * 128 x 128 tile of 4 x 4 MFMA 16x16x16 tiles a wave; sm_90's 8 warps of 32
 * a 128 x 256 tile of 4 x 8 mma.sync m16n8k16 a warp.  K blocks in LDS
 * stages of A's and W's rows: AMD's of 32 (a lane's 16-byte vector of a
 * 64-byte row), 2 stages through registers; sm_90's of 64 (half the block
 * barriers of 32: 364-388 TFLOP/s against 283-304 on an H200), 4 stages by
 * cp.async (three blocks in flight while one multiplies, 192 KB). */
#define PORT_BM 128u
#define PORT_WN 64u
#define PORT_BK_AMD 32u
#define PORT_BK_SM90 64u
#define PORT_THREADS 256u
#define PORT_GROUP_M 8u
#define PORT_STAGES_SM90 4u
/* AMD's workgroups a CU at most: 2 (8 waves, 2 a SIMD) keeps each lane's
 * registers within 256 (VGPRs and AGPRs together: 512 / 2) */
#define PORT_MAX_PER_CU_AMD 2u
/* Both forms' last round split over K (gemm_tiles.in's rounds_of): where
 * its tiles would leave half the grid or more idle, each in up to 4 pieces
 * of at least 2 K blocks, one a block, their fp32 partial sums through a
 * workspace of a tile's sums a block of the grid, the last piece to arrive
 * summing them in piece order (a counter a tile). */
#define GEMM_SPLIT_MAX 4u
#define GEMM_PIECE_KBLOCKS 2u

/* The split's parameters on a grid of `grid` blocks of tiles of tile_elems
 * outputs: the template's GRID, SPLIT_MAX and PIECE_KBLOCKS, the workspace
 * and the tickets' counters. */
static void split_params(fg_instance *in, unsigned grid, unsigned tile_elems)
{
    fg_instance_add_param(in, "GRID", grid);
    fg_instance_add_param(in, "SPLIT_MAX", GEMM_SPLIT_MAX);
    fg_instance_add_param(in, "PIECE_KBLOCKS", GEMM_PIECE_KBLOCKS);
    in->workspace_bytes = grid * tile_elems * 4u;
    in->counter_count = grid / 2;   /* a split round has at most half the grid's tiles */
}

/* explain's line for the split: `unit` a block of the form's, `sums` whose
 * fp32 sums go through the workspace, `tail` what the line ends with. */
static void split_reason(fg_instance *in, unsigned grid, const char *unit, const char *sums,
                         const char *tail)
{
    fg_sb_printf(&in->reasons,
                 "the last round split over K where its tiles would leave half the grid or more "
                 "idle (m's tiles mod %u: 1 to %u): each of those tiles in min(%u / their "
                 "number, %u, K blocks / %u) pieces, one a %s, %s fp32 sums through the "
                 "workspace (%u B: a tile's sums for each %s) and summed in piece order by "
                 "the last to arrive (a ticket on one of %u counters, reset by it): bitwise "
                 "the same every launch%s\n",
                 grid, grid / 2, grid, GEMM_SPLIT_MAX, GEMM_PIECE_KBLOCKS, unit, sums,
                 in->workspace_bytes, unit, in->counter_count, tail);
}

/* The portable form's shape on a target. */
typedef struct port_gemm {
    unsigned bn;       /* the tile's columns: 64 a wave, waves / 2 across */
    unsigned bk;       /* a K block's columns */
    unsigned stages;   /* LDS buffers of a K block's A and W rows */
    unsigned lds;      /* their bytes */
    unsigned per_cu;   /* blocks a CU / SM (the launch bounds' second figure) */
    unsigned xcds;     /* MI300X's XCDs (the blocks' numbering), else 1 */
} port_gemm;

/* The targets that take the portable form: no thread-block clusters. */
bool fg_plan_gemm_portable(const fg_target *t)
{
    return fg_arch_is_amd(t->arch) || t->max_cluster_size == 0;
}

static port_gemm port_shape(const fg_target *t)
{
    port_gemm p = {0};
    p.bn = PORT_THREADS / t->warp_size / 2 * PORT_WN;
    p.bk = fg_arch_is_amd(t->arch) ? PORT_BK_AMD : PORT_BK_SM90;
    p.stages = fg_arch_is_amd(t->arch) ? 2u : PORT_STAGES_SM90;
    p.lds = p.stages * (PORT_BM + p.bn) * p.bk * 2u;
    if (fg_arch_is_amd(t->arch)) {
        p.per_cu = t->shared_mem_per_cu / p.lds;
        if (p.per_cu > PORT_MAX_PER_CU_AMD)
            p.per_cu = PORT_MAX_PER_CU_AMD;
    } else {
        /* sm_90: a warp's 128 accumulators and its fragments take ~200
         * registers a thread, so one block of 256 an SM (65536 registers) */
        p.per_cu = 1;
    }
    if (p.per_cu == 0)
        p.per_cu = 1;
    /* MI300X (gfx942, 8 XCDs of 38 CUs) hands workgroup i to XCD i % 8 */
    p.xcds = t->arch == FG_ARCH_GFX942 && t->compute_units % 8 == 0 ? 8 : 1;
    return p;
}

typedef struct gemm_cfg {
    unsigned stages;     /* TMA stages of A's and W's boxes */
    unsigned c_rounds;   /* the C buffer holds 1 / c_rounds of a tile's columns */
    unsigned group_m;    /* tile rows a group (the grid's order, for L2) */
} gemm_cfg;

/* 4 stages and a C buffer of half a tile's columns (its stores in 2 rounds)
 * fit in 227 KB; measured against 3 stages and a whole-tile buffer on one
 * H200 (each beside cuBLASLt): 0.97-1.09 of cuBLASLt's rate against
 * 0.91-1.06, the stage most at K >= 8192.  8 tile rows a group: not tuned. */
static const gemm_cfg MODEL = {.stages = 4, .c_rounds = 2, .group_m = 8};

/* What the candidates range over (each combination whose shared memory fits). */
static const unsigned CAND_STAGES[] = {2, 3, 4, 5};
static const unsigned CAND_C_ROUNDS[] = {1, 2, 4};
static const unsigned CAND_GROUP_M[] = {2, 4, 8, 16, 32};

/* Dynamic shared memory of a configuration: the stages and the consumers'
 * C buffers, 1024-byte aligned (the swizzle's period) in memory whose base
 * is only 16-byte aligned, then 2 barriers a stage and a split tile's
 * ticket (padded to 16 bytes). */
static unsigned gemm_smem(const gemm_cfg *c)
{
    return c->stages * GEMM_STAGE_BYTES + GEMM_BM * GEMM_BN * 2 / c->c_rounds + c->stages * 16 +
           16 + 1024;
}

/* Why configuration c does not plan on target t, or NULL. */
static const char *gemm_misfit(const gemm_cfg *c, const fg_target *t, char why[160])
{
    if (c->stages < 2 || c->stages > 8)
        snprintf(why, 160, "%u stages: 2 to 8 (one K block in flight beside the one read)",
                 c->stages);
    else if (c->c_rounds != 1 && c->c_rounds != 2 && c->c_rounds != 4)
        snprintf(why, 160, "C in %u rounds: 1, 2 or 4 (whole 64-column boxes of a 256-column "
                 "tile)", c->c_rounds);
    else if (c->group_m < 1 || c->group_m > 64)
        snprintf(why, 160, "%u tile rows a group: 1 to 64", c->group_m);
    else if (gemm_smem(c) > t->shared_mem_per_block)
        snprintf(why, 160, "%u stages of %u B and a C buffer of %u B need %u B of shared memory; "
                 "%s has %u", c->stages, GEMM_STAGE_BYTES, GEMM_BM * GEMM_BN * 2 / c->c_rounds,
                 gemm_smem(c), t->name, t->shared_mem_per_block);
    else
        return NULL;
    return why;
}

const char *fg_plan_overlap_gemm_skipped(const fg_gemm_shape *sh, const fg_target *t)
{
    static char why[160];
    if (t->arch != FG_ARCH_SM90A && !fg_arch_is_amd(t->arch))
        return "the fused GEMM is emitted for sm_90a, gfx942 and gfx90a only";
    /* (the spec loader holds each arch to its warp size: 64 on AMD, 32 on sm_90a) */
    const bool portable = fg_plan_gemm_portable(t);
    const port_gemm p = portable ? port_shape(t) : (port_gemm){.bn = GEMM_BN, .bk = GEMM_BK};
    const unsigned bn = p.bn, bk = p.bk;
    if (sh->n % bn || sh->k % bk) {
        snprintf(why, sizeof why, "n %lld and k %lld must be multiples of %u and %u (whole tiles)",
                 (long long)sh->n, (long long)sh->k, bn, bk);
        return why;
    }
    if (!portable && gemm_misfit(&MODEL, t, why))
        return why;
    return NULL;
}

/* What every overlap_gemm instance has: its family and op, the template,
 * its key dims (n, k) and its tile. */
static void gemm_instance(fg_instance *in, const char *template_name, fg_dtype dtype,
                          const fg_gemm_shape *sh, const fg_target *t, unsigned bm, unsigned bn,
                          unsigned bk)
{
    in->family = "overlap_gemm";
    in->op = "overlap_gemm";
    in->template_name = template_name;
    in->target = t;
    in->dtype = dtype;
    fg_instance_add_param(in, "N", sh->n);
    fg_instance_add_param(in, "K", sh->k);
    in->nkey_params = 2;
    fg_instance_add_param(in, "BM", bm);
    fg_instance_add_param(in, "BN", bn);
    fg_instance_add_param(in, "BK", bk);
}

/* Targets without clusters: overlap_gemm_portable.in. */
static int plan_portable(fg_plan_set *set, const fg_spec *s, const fg_spec *ts,
                         const fg_gemm_shape *sh, const char *family, const char *why, fg_diag *d)
{
    const fg_target *t = ts->target;
    const fg_dtype dtype = s->gemm->dtype;
    const bool amd = fg_arch_is_amd(t->arch);
    if (fg_plan_tuning_entry(set, family)) {
        fg_error(d, "%s: an entry for %s: the portable GEMM takes no tuning entries (its tiles "
                    "are fixed; no candidates are emitted for it)", set->tuning->path, family);
        return -1;
    }
    fg_instance inst = {0}, *in = &inst;
    snprintf(in->name, sizeof in->name, "%s", family);
    const port_gemm p = port_shape(t);
    if (p.lds > t->shared_mem_per_block) {
        fg_error(d, "%s: needs %u B of LDS a block; %s has %u B", in->name, p.lds, t->name,
                 t->shared_mem_per_block);
        fg_instance_free(in);
        return -1;
    }
    const unsigned waves = PORT_THREADS / t->warp_size, grid = t->compute_units * p.per_cu;
    gemm_instance(in, "overlap_gemm_portable.in", dtype, sh, t, PORT_BM, p.bn, p.bk);
    /* its own op: its arguments are plain pointers, where the runtime's
     * overlap_gemm binds the wgmma form's tensor maps (a lookup of that op
     * must never find this one) */
    in->op = "overlap_gemm_portable";
    fg_instance_add_param(in, "WN", PORT_WN);
    fg_instance_add_param(in, "GROUP_M", PORT_GROUP_M);
    fg_instance_add_param(in, "THREADS", PORT_THREADS);
    fg_instance_add_param(in, "STAGES", p.stages);
    fg_instance_add_param(in, "LDS_BYTES", p.lds);
    /* __launch_bounds__'s second figure: blocks an SM on CUDA; on AMD waves
     * a SIMD (EU), the same figure, a workgroup's 4 waves taking one of each
     * CU's 4 SIMDs */
    fg_instance_add_param(in, "MIN_BLOCKS", p.per_cu);
    fg_instance_add_param(in, "XCDS", p.xcds);
    split_params(in, grid, PORT_BM * p.bn);
    in->launch = (fg_launch){.grid = FG_GRID_FIXED, .grid_dims = {grid, 1, 1},
                             .block = {PORT_THREADS, 1, 1}, .cluster = {1, 1, 1},
                             .dynamic_smem = amd ? 0 : p.lds};
    snprintf(in->path_key, sizeof in->path_key, "overlap_gemm/%s/%s", fg_arch_tag(t->arch),
             fg_dtype_name(dtype));
    fg_sb_printf(&in->reasons, "used for: %s\n", why);
    if (amd)
        fg_sb_printf(&in->reasons, "configuration: fixed (not tuned: no AMD GPU has timed it)\n");
    else
        fg_sb_printf(&in->reasons,
                     "the portable form: %s has no thread-block clusters (max_cluster_size 0), "
                     "so the AMD algorithm (no TMA, wgmma or clusters) lowered to warps of 32 "
                     "and mma.sync, to check it on this GPU; configuration fixed (not tuned)\n",
                     t->name);
    fg_sb_printf(&in->reasons,
                 "C[m, %lld] = A[m, %lld] . W[%lld, %lld]^T (W in nn.Linear's layout), fp32 sums; "
                 "m a multiple of %u, the call's\n",
                 (long long)sh->n, (long long)sh->k, (long long)sh->n, (long long)sh->k, PORT_BM);
    fg_sb_printf(&in->reasons,
                 "persistent: %u blocks (%u a %s: %u B of LDS each, %u B a %s) of %u threads "
                 "(%u %s of %u) take %u x %u tiles in groups of %u tile rows%s; persistent "
                 "rather than a block a tile because the launch's grid is fixed while m is "
                 "the call's, and so that the K pipeline runs on across tiles%s\n",
                 grid, p.per_cu, amd ? "CU" : "SM", p.lds, t->shared_mem_per_cu,
                 amd ? "CU" : "SM", PORT_THREADS, waves, amd ? "waves" : "warps", t->warp_size,
                 PORT_BM, p.bn, PORT_GROUP_M,
                 p.xcds > 1 ? ", numbered XCD-major (workgroup i runs on XCD i % 8, whose L2 is "
                              "private): an XCD's workgroups take consecutive tiles"
                            : "",
                 p.xcds > 1 ? " and each XCD keeps its run of tiles" : "");
    if (amd) {
        fg_sb_printf(&in->reasons,
                     "K blocks of %u double-buffered through registers (each thread's %u 16-byte "
                     "loads of the next block in flight while this one multiplies) and 2 LDS "
                     "buffers (one barrier a block); rows of 64 B, two a 128-byte line, "
                     "XOR-swizzled: the 16-byte fragment reads and writes are free of bank "
                     "conflicts without padding (padding would take %u B and one workgroup a "
                     "CU)\n",
                     p.bk, (PORT_BM + p.bn) * p.bk / 8 / PORT_THREADS, p.lds * 5 / 4);
        /* a wave's K block: 4 x 4 tiles x 2 MFMA 16x16x16; 16 cycles each on
         * gfx942 (1307 TFLOP/s dense at 2.1 GHz, 304 CUs), 32 on gfx90a */
        const unsigned mfma_cycles = t->arch == FG_ARCH_GFX942 ? 16 : 32;
        const unsigned mfmas = 4 * 4 * 2, lds_read = (4 + 4) * 16 * 64;
        fg_sb_printf(&in->reasons,
                     "each wave a 64 x 64 sub-tile: 4 x 4 MFMA 16x16x16 tiles, 64 fp32 "
                     "accumulators a lane, both operands in the free K order (a lane's 16-byte "
                     "vector: 2 MFMA); a K block is %u MFMA a wave (%u cycles of its SIMD's "
                     "matrix core at %u a MFMA) against %u B of LDS reads (%u cycles of the CU's "
                     "128 B a clock for its 4 waves: the LDS keeps up) and %u B a workgroup from "
                     "L2 (64 flop a byte)\n",
                     mfmas, mfmas * mfma_cycles, mfma_cycles, lds_read, 4 * lds_read / 128,
                     p.lds / 2);
    } else {
        fg_sb_printf(&in->reasons,
                     "K blocks of %u by cp.async (each thread's %u 16-byte copies a block) into "
                     "%u LDS stages of %u B (dynamic shared memory), %u blocks in flight while "
                     "one multiplies, one barrier a block, at its last k-step, with each "
                     "k-step's operands loaded during the one before (1.09-1.17x on an H200, "
                     "0.60-0.69 of the wgmma form's rate on its large shapes against 0.51-0.58, "
                     "with the barrier and the operand loads at a block's start): through "
                     "registers, as on AMD, the tensor cores waited on L2 (233-274 TFLOP/s "
                     "measured on an H200) and no registers are left for a second block in flight; blocks of 64 columns "
                     "rather than AMD's 32 halve the barriers (364-388 TFLOP/s against "
                     "283-304); rows of 128 B, a line each, XOR-swizzled by row ^ row / 4: "
                     "ldmatrix's 8-row reads and the copies are free of bank conflicts "
                     "without padding\n",
                     p.bk, (PORT_BM + p.bn) * p.bk / 8 / PORT_THREADS, p.stages,
                     p.lds / p.stages, p.stages - 1);
        /* a warp's K block: 4 x 8 tiles a k-step; a k-step's ldmatrix.x4:
         * 4 of A (an m-tile each), 4 of W (n-tiles in pairs), 512 B each */
        const unsigned ksteps = p.bk / 16, mmas = 4 * 8 * ksteps, lds_read = 8 * 512 * ksteps;
        fg_sb_printf(&in->reasons,
                     "each warp a 64 x 64 sub-tile: 4 x 8 mma.sync m16n8k16 tiles, 128 fp32 "
                     "accumulators a thread, operands by ldmatrix.x4 (W's rows taken as columns "
                     "4c + j within each 32, as on AMD, so that a lane's 8 columns of a row are "
                     "contiguous: "
                     "16-byte stores); a K block is %u mma.sync a warp against %u B of LDS "
                     "reads (%u B a block: %u cycles of the SM's 128 B a clock, against %u "
                     "mma.sync) and %u B a block from L2 (%u flop a byte)\n",
                     mmas, lds_read, waves * lds_read, waves * lds_read / 128, waves * mmas,
                     p.lds / p.stages, 2 * PORT_BM * p.bn * p.bk / (p.lds / p.stages));
    }
    fg_sb_printf(&in->reasons,
                 "fed as its rows land (flags given): thread 0 waits for the flags of the pieces "
                 "a tile's %u rows lie in (acquire at system scope%s), then a block barrier "
                 "before the tile's loads: a barrier a tile and a poll a piece more; drained "
                 "(done given): a barrier a tile and thread 0's release at system scope of 2 "
                 "for each 256 columns of the tile (a tile row counts n / 128 on every form); "
                 "neither: no barrier\n",
                 PORT_BM, amd ? "; s_memrealtime taken as 100 MHz for the time limit" : "");
    split_reason(in, grid, "block", "their", "; the full rounds before it keep the grouped order");
    return fg_plan_add(set, in, s, ts, d);
}

/* One instance of configuration c (from: the model's, a tuning entry's or
 * a candidate; `config` the explain line of the first two). */
static int plan_one(fg_dtype dtype, const fg_gemm_shape *sh, const fg_target *t,
                    const char *family, const char *why, const gemm_cfg *c, fg_origin from,
                    const char *config, fg_instance *in, fg_diag *d)
{
    char dims[64], variant[32];
    snprintf(dims, sizeof dims, "n%lld_k%lld", (long long)sh->n, (long long)sh->k);
    /* the model's instance is named by its shape alone; a candidate's or a
     * tuned one's by its configuration too */
    snprintf(variant, sizeof variant, "s%uc%ug%u", c->stages, c->c_rounds, c->group_m);
    if (!fg_instance_name(in->name, "overlap_gemm", t->arch, fg_dtype_name(dtype), dims,
                          from == FG_FROM_MODEL ? "" : variant)) {
        fg_error(d, "cannot name an overlap_gemm instance for n %lld, k %lld", (long long)sh->n,
                 (long long)sh->k);
        return -1;
    }
    fg_plan_mark(in, family, from);
    const unsigned smem = gemm_smem(c), cbuf = GEMM_BM * GEMM_BN * 2 / c->c_rounds;
    gemm_instance(in, "overlap_gemm.in", dtype, sh, t, GEMM_BM, GEMM_BN, GEMM_BK);
    fg_instance_add_param(in, "STAGES", c->stages);
    fg_instance_add_param(in, "STAGE_BYTES", GEMM_STAGE_BYTES);
    fg_instance_add_param(in, "GROUP_M", c->group_m);
    fg_instance_add_param(in, "SMEM_BYTES", smem);
    /* C's TMA boxes: a consumer warpgroup's 64 rows x one 128-byte swizzle row */
    fg_instance_add_param(in, "CBOX_ROWS", GEMM_BM / 2);
    fg_instance_add_param(in, "CBOX_COLS", 64);
    fg_instance_add_param(in, "C_ROUNDS", c->c_rounds);
    fg_instance_add_param(in, "THREADS", GEMM_THREADS);
    split_params(in, t->compute_units, GEMM_BM * GEMM_BN);
    /* persistent: one CTA per SM, the whole grid at every m (the last round's
     * split counts it) */
    in->launch = (fg_launch){.grid = FG_GRID_FIXED, .grid_dims = {t->compute_units, 1, 1},
                             .block = {GEMM_THREADS, 1, 1}, .cluster = {1, 1, 1},
                             .dynamic_smem = smem};
    snprintf(in->path_key, sizeof in->path_key, "overlap_gemm/%s/%s", fg_arch_tag(t->arch),
             fg_dtype_name(dtype));
    fg_sb_printf(&in->reasons, "used for: %s\n", why);
    if (from == FG_CANDIDATE)
        fg_sb_printf(&in->reasons, "tuning candidate (generate --candidates): %u stages, C in "
                                   "%u round(s), %u tile rows a group; not the planner's "
                                   "choice\n",
                     c->stages, c->c_rounds, c->group_m);
    else
        fg_sb_printf(&in->reasons, "%s\n", config);
    fg_sb_printf(&in->reasons,
                 "C[m, %lld] = A[m, %lld] . W[%lld, %lld]^T (W in nn.Linear's layout), fp32 sums; "
                 "m a multiple of %u, the call's\n",
                 (long long)sh->n, (long long)sh->k, (long long)sh->n, (long long)sh->k, GEMM_BM);
    fg_sb_printf(&in->reasons,
                 "persistent: %u CTAs (one per SM) of %u threads take %u x %u tiles in groups of "
                 "%u tile rows; warpgroup 0 loads by TMA (128-byte swizzle) into %u stages of %u "
                 "B, warpgroups 1 and 2 multiply 64 rows each (wgmma m64n256k16, fp32 in "
                 "registers), registers moved to them by setmaxnreg (40 / 232); C out through "
                 "%u B of shared memory in %u round(s) a tile by TMA stores that overlap the "
                 "next tile (stores from registers left the tensor cores idle: 0.74-0.92 of "
                 "cuBLASLt at K <= 4096, measured)\n",
                 t->compute_units, GEMM_THREADS, GEMM_BM, GEMM_BN, c->group_m, c->stages,
                 GEMM_STAGE_BYTES, cbuf, c->c_rounds);
    split_reason(in, t->compute_units, "CTA", "the consumers'",
                 " (n 2560 at m 4096: 320 tiles, a third round of 56, ran at 0.85 of cuBLASLt's "
                 "rate unsplit)");
    return 0;
}

int fg_plan_overlap_gemm(fg_plan_set *set, const fg_spec *s, const fg_spec *ts,
                         const fg_gemm_shape *sh, const char *why, fg_diag *d)
{
    const fg_target *t = ts->target;
    const fg_dtype dtype = s->gemm->dtype;
    char family[FG_NAME_MAX], dims[64], bad[160];
    snprintf(dims, sizeof dims, "n%lld_k%lld", (long long)sh->n, (long long)sh->k);
    /* the family a tuning entry names: the instance name less its
     * configuration; the portable form on sm_90a is named apart from the
     * wgmma form (both may be generated for one GPU) */
    const char *form = fg_plan_gemm_portable(t) && !fg_arch_is_amd(t->arch) ? "portable" : "";
    if (!fg_instance_name(family, "overlap_gemm", t->arch, fg_dtype_name(dtype), dims, form)) {
        fg_error(d, "cannot name an overlap_gemm instance for n %lld, k %lld", (long long)sh->n,
                 (long long)sh->k);
        return -1;
    }
    if (fg_plan_gemm_portable(t))
        return plan_portable(set, s, ts, sh, family, why, d);
    const fg_tuning_entry *e = fg_plan_tuning_entry(set, family);
    gemm_cfg chosen = MODEL;
    fg_strbuf config = {0};
    if (e) {
        chosen = (gemm_cfg){.stages = e->stages, .c_rounds = e->c_rounds, .group_m = e->group_m};
        if (e->threads != GEMM_THREADS || gemm_misfit(&chosen, t, bad)) {
            if (e->threads != GEMM_THREADS)
                snprintf(bad, sizeof bad, "%u threads: the form has %u", e->threads, GEMM_THREADS);
            fg_error(d, "%s: the entry for %s (%u stages, C in %u rounds, %u tile rows a group) "
                        "does not plan: %s; run fusegen tune again",
                     set->tuning->path, family, e->stages, e->c_rounds, e->group_m, bad);
            return -1;
        }
        char what[96];
        snprintf(what, sizeof what, "%u stages, C in %u round(s), %u tile rows a group",
                 chosen.stages, chosen.c_rounds, chosen.group_m);
        fg_plan_config_line(&config, set, e, what, 2);
    } else {
        fg_plan_config_line(&config, set, NULL, NULL, 2);
    }
    fg_instance in = {0};
    int rc = plan_one(dtype, sh, t, family, why, &chosen, e ? FG_FROM_TUNING : FG_FROM_MODEL,
                      fg_sb_str(&config), &in, d);
    fg_sb_free(&config);
    if (rc) {
        fg_instance_free(&in);
        return -1;
    }
    rc = fg_plan_add(set, &in, s, ts, d);
    /* tuning candidates: every combination that fits but the one chosen */
    for (size_t i = 0; set->candidates && rc == 0 && i < NELEMS(CAND_STAGES); i++)
        for (size_t j = 0; rc == 0 && j < NELEMS(CAND_C_ROUNDS); j++)
            for (size_t k = 0; rc == 0 && k < NELEMS(CAND_GROUP_M); k++) {
                const gemm_cfg c = {.stages = CAND_STAGES[i], .c_rounds = CAND_C_ROUNDS[j],
                                    .group_m = CAND_GROUP_M[k]};
                if ((c.stages == chosen.stages && c.c_rounds == chosen.c_rounds &&
                     c.group_m == chosen.group_m) ||
                    gemm_misfit(&c, t, bad))
                    continue;
                fg_instance cand = {0};
                if (plan_one(dtype, sh, t, family, why, &c, FG_CANDIDATE, "", &cand, d) != 0) {
                    fg_instance_free(&cand);
                    return -1;
                }
                rc = fg_plan_add(set, &cand, s, ts, d);
            }
    return rc;
}
