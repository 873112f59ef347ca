/* The GEMM of the overlap family's fused form (issue 7): a persistent,
 * warp-specialized wgmma kernel for sm_90a, one instance per (n, k) of a
 * GEMM spec (m is the call's: the rows of a shard or a piece).  The tiles
 * and stages are fixed here; the wait on each piece's flag is the next
 * step (docs/performance.md). */
#include <stdio.h>

#include "plan.h"

#define GEMM_BM 128u
#define GEMM_BN 256u
#define GEMM_BK 64u
/* 4 stages and a C buffer of half a tile's columns (its stores in 2 rounds)
 * fit in 227 KB; measured against 3 stages and a whole-tile buffer on one
 * H200 (each beside cuBLASLt): 0.97-1.09 of cuBLASLt's rate against
 * 0.91-1.06, the stage most at K >= 8192 */
#define GEMM_STAGES 4u
#define GEMM_C_ROUNDS 2u   /* the C buffer: the tile's columns in this many rounds */
#define GEMM_GROUP_M 8u
#define GEMM_THREADS 384u

const char *fg_plan_overlap_gemm_skipped(const fg_gemm_shape *sh, const fg_target *t)
{
    static char why[160];
    if (t->arch != FG_ARCH_SM90A)
        return "the fused GEMM is emitted for sm_90a only (wgmma, TMA) so far";
    if (sh->n % GEMM_BN || sh->k % GEMM_BK) {
        snprintf(why, sizeof why, "n %lld and k %lld must be multiples of %u and %u (whole tiles)",
                 (long long)sh->n, (long long)sh->k, GEMM_BN, GEMM_BK);
        return why;
    }
    return NULL;
}

int fg_plan_overlap_gemm(fg_dtype dtype, const fg_gemm_shape *sh, const fg_target *t,
                         const char *why, fg_instance *in, fg_diag *d)
{
    char dims[64];
    snprintf(dims, sizeof dims, "n%lld_k%lld", (long long)sh->n, (long long)sh->k);
    if (!fg_instance_name(in->name, "overlap_gemm", t->arch, fg_dtype_name(dtype), dims, "")) {
        fg_error(d, "cannot name an overlap_gemm instance for n %lld, k %lld", (long long)sh->n,
                 (long long)sh->k);
        return -1;
    }
    const unsigned stage = (GEMM_BM + GEMM_BN) * GEMM_BK * 2;
    /* the stages and the consumers' C buffers (bf16 rows of the tile),
     * 1024-byte aligned (the swizzle's period) in dynamic shared memory whose
     * base is only 16-byte aligned, then 2 barriers a stage */
    const unsigned cbuf = GEMM_BM * GEMM_BN * 2 / GEMM_C_ROUNDS;
    const unsigned smem = GEMM_STAGES * stage + cbuf + GEMM_STAGES * 16 + 1024;
    if (smem > t->shared_mem_per_block) {
        fg_error(d, "%s: %u stages of %u B need %u B of shared memory; %s has %u", in->name,
                 GEMM_STAGES, stage, smem, t->name, t->shared_mem_per_block);
        return -1;
    }
    in->family = "overlap_gemm";
    in->op = "overlap_gemm";
    in->template_name = "overlap_gemm.in";
    in->target = t;
    in->dtype = dtype;
    fg_instance_add_param(in, "N", sh->n);
    fg_instance_add_param(in, "K", sh->k);
    in->nkey_params = 2;
    fg_instance_add_param(in, "BM", GEMM_BM);
    fg_instance_add_param(in, "BN", GEMM_BN);
    fg_instance_add_param(in, "BK", GEMM_BK);
    fg_instance_add_param(in, "STAGES", GEMM_STAGES);
    fg_instance_add_param(in, "STAGE_BYTES", stage);
    fg_instance_add_param(in, "GROUP_M", GEMM_GROUP_M);
    fg_instance_add_param(in, "SMEM_BYTES", smem);
    /* C's TMA boxes: a consumer warpgroup's 64 rows x one 128-byte swizzle row */
    fg_instance_add_param(in, "CBOX_ROWS", GEMM_BM / 2);
    fg_instance_add_param(in, "CBOX_COLS", 64);
    fg_instance_add_param(in, "C_ROUNDS", GEMM_C_ROUNDS);
    fg_instance_add_param(in, "THREADS", GEMM_THREADS);
    /* persistent: one CTA per SM (fewer where a call has fewer tiles) */
    in->launch = (fg_launch){.grid = FG_GRID_FIXED, .grid_dims = {t->compute_units, 1, 1},
                             .block = {GEMM_THREADS, 1, 1}, .cluster = {1, 1, 1},
                             .dynamic_smem = smem};
    snprintf(in->path_key, sizeof in->path_key, "overlap_gemm/%s/%s", fg_arch_tag(t->arch),
             fg_dtype_name(dtype));
    fg_sb_printf(&in->reasons, "used for: %s\n", why);
    fg_sb_printf(&in->reasons,
                 "C[m, %lld] = A[m, %lld] . W[%lld, %lld]^T (W in nn.Linear's layout), fp32 sums; "
                 "m a multiple of %u, the call's\n",
                 (long long)sh->n, (long long)sh->k, (long long)sh->n, (long long)sh->k, GEMM_BM);
    fg_sb_printf(&in->reasons,
                 "persistent: %u CTAs (one per SM) of %u threads take %u x %u tiles in groups of "
                 "%u tile rows; warpgroup 0 loads by TMA (128-byte swizzle) into %u stages of %u "
                 "B, warpgroups 1 and 2 multiply 64 rows each (wgmma m64n256k16, fp32 in "
                 "registers), registers moved to them by setmaxnreg (40 / 232); C out through "
                 "%u B of shared memory in %u rounds a tile by TMA stores that overlap the "
                 "next tile (stores from registers left the tensor cores idle: 0.74-0.92 of "
                 "cuBLASLt at K <= 4096, measured)\n",
                 t->compute_units, GEMM_THREADS, GEMM_BM, GEMM_BN, GEMM_GROUP_M, GEMM_STAGES,
                 stage, cbuf, GEMM_C_ROUNDS);
    return 0;
}
