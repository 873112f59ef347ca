/* The owner's reduction of a GEMM + reduce-scatter (the overlap family):
 * one streaming kernel per dtype, world size and target, launched by the
 * runtime's executor once per call after the peers' partials have landed.
 * Its configuration: threads a block and blocks a compute unit (a tuning
 * entry's, or the model's); tuning candidates over both. */
#include <stdio.h>

#include "plan.h"

#define REDUCE_THREADS 256
#define REDUCE_BLOCKS_PER_CU 16
#define MAX_THREADS 1024
#define MAX_BLOCKS_PER_CU 64

/* Why `threads` a block and `per_cu` blocks a compute unit do not plan on
 * t (into bad), or NULL. */
static const char *misfit(unsigned threads, unsigned per_cu, const fg_target *t, char bad[128])
{
    if (threads < t->warp_size || threads > MAX_THREADS || threads % t->warp_size)
        snprintf(bad, 128, "%u threads: whole %s of %u, at most %u", threads,
                 t->warp_size == 64 ? "waves" : "warps", t->warp_size, MAX_THREADS);
    else if (per_cu < 1 || per_cu > MAX_BLOCKS_PER_CU)
        snprintf(bad, 128, "%u blocks a compute unit: 1 to %u", per_cu, MAX_BLOCKS_PER_CU);
    else
        return NULL;
    return bad;
}

/* A configuration in words (explain, errors): into buf[64]. */
static void describe(unsigned threads, unsigned per_cu, char buf[64])
{
    snprintf(buf, 64, "%u threads, %u blocks a compute unit", threads, per_cu);
}

/* One instance of tuning family `family`: `threads` x `per_cu` (the model's,
 * FG_FROM_MODEL, named by the family alone; an entry's or a candidate's,
 * named by the configuration too).  `config`: explain's line of where the
 * configuration came from ("" for candidates). */
static int plan_one(fg_dtype dtype, unsigned world, const fg_target *t, const char *family,
                    const char *why, fg_origin from, unsigned threads, unsigned per_cu,
                    const char *config, fg_instance *in, fg_diag *d)
{
    char dims[32], variant[32] = "";
    snprintf(dims, sizeof dims, "w%u", world);
    if (from != FG_FROM_MODEL)
        snprintf(variant, sizeof variant, "t%ub%u", threads, per_cu);
    if (!fg_instance_name(in->name, "overlap_reduce", t->arch, fg_dtype_name(dtype), dims,
                          variant)) {
        fg_error(d, "cannot name an overlap_reduce instance for world size %u", world);
        return -1;
    }
    fg_plan_mark(in, family, from);
    in->family = "overlap_reduce";
    in->op = "overlap_reduce";
    in->template_name = "overlap_reduce.in";
    in->target = t;
    in->dtype = dtype;
    fg_instance_add_param(in, "WORLD", world);
    in->nkey_params = 1;
    fg_instance_add_param(in, "THREADS", threads);
    fg_instance_add_param(in, "BLOCKS_PER_CU", per_cu);
    const unsigned blocks = t->compute_units * per_cu;
    in->launch = (fg_launch){.grid = FG_GRID_FIXED, .grid_dims = {blocks, 1, 1},
                             .block = {threads, 1, 1}, .cluster = {1, 1, 1}};
    snprintf(in->path_key, sizeof in->path_key, "overlap_reduce/%s/%s", fg_arch_tag(t->arch),
             fg_dtype_name(dtype));
    fg_sb_printf(&in->reasons, "used for: %s\n", why);
    if (in->candidate) {
        char what[64];
        describe(threads, per_cu, what);
        fg_sb_printf(&in->reasons, "tuning candidate (generate --candidates): %s, not the "
                                   "planner's choice\n",
                     what);
    } else
        fg_sb_printf(&in->reasons, "%s\n", config);
    fg_sb_printf(&in->reasons,
                 "out = own partial + %u received, fp32 sums in rank order, one rounding\n",
                 world - 1);
    if (from == FG_FROM_MODEL)
        fg_sb_printf(&in->reasons,
                     "16-byte vectors, a grid-stride loop over %u blocks (%u per compute unit x "
                     "%u, more than are resident at once) of %u threads: streams at HBM rate "
                     "where one element per thread was latency-bound (measured in test_overlap "
                     "on the H200)\n",
                     blocks, per_cu, t->compute_units, threads);
    else
        fg_sb_printf(&in->reasons,
                     "16-byte vectors, a grid-stride loop over %u blocks (%u a compute unit x %u) "
                     "of %u threads\n",
                     blocks, per_cu, t->compute_units, threads);
    return 0;
}

int fg_plan_overlap_reduce(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, fg_dtype dtype,
                           unsigned world, const char *why, fg_diag *d)
{
    const fg_target *t = ts->target;
    char family[FG_NAME_MAX], dims[32], bad[128];
    snprintf(dims, sizeof dims, "w%u", world);
    /* the family a tuning entry names: the model's instance name */
    if (world < 2 || world > 64 ||
        !fg_instance_name(family, "overlap_reduce", t->arch, fg_dtype_name(dtype), dims, "")) {
        fg_error(d, "cannot name an overlap_reduce instance for world size %u", world);
        return -1;
    }
    /* the configuration: the tuning entry's where there is one, else the model's */
    const fg_tuning_entry *e = fg_plan_tuning_entry(set, family);
    const unsigned threads = e ? e->threads : REDUCE_THREADS;
    const unsigned per_cu = e ? e->blocks_per_cu : REDUCE_BLOCKS_PER_CU;
    char what[64];
    describe(threads, per_cu, what);
    if (e && misfit(threads, per_cu, t, bad)) {
        fg_error(d, "%s: the entry for %s (%s) does not plan: %s; run fusegen tune again",
                 set->tuning->path, family, what, bad);
        return -1;
    }
    fg_strbuf config = {0};
    fg_plan_config_line(&config, set, e, e ? what : NULL, 2);
    fg_instance in = {0};
    int rc = plan_one(dtype, world, t, family, why, e ? FG_FROM_TUNING : FG_FROM_MODEL, threads,
                      per_cu, fg_sb_str(&config), &in, d);
    fg_sb_free(&config);
    if (rc) {
        fg_instance_free(&in);
        return -1;
    }
    rc = fg_plan_add(set, &in, s, ts, d);
    /* tuning candidates: 4 block sizes x 6 grids (the model's own among
     * them when an entry replaced it) */
    static const unsigned cand_threads[] = {128, 256, 512, 1024}, cand_per_cu[] = {1, 2, 4, 8, 16, 32};
    for (size_t i = 0; set->candidates && rc == 0 && i < NELEMS(cand_threads); i++)
        for (size_t k = 0; rc == 0 && k < NELEMS(cand_per_cu); k++) {
            if ((cand_threads[i] == threads && cand_per_cu[k] == per_cu) ||
                misfit(cand_threads[i], cand_per_cu[k], t, bad))
                continue;
            fg_instance c = {0};
            if (plan_one(dtype, world, t, family, why, FG_CANDIDATE, cand_threads[i],
                         cand_per_cu[k], "", &c, d) != 0) {
                fg_instance_free(&c);
                return -1;
            }
            rc = fg_plan_add(set, &c, s, ts, d);
        }
    return rc;
}
