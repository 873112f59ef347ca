/* RMSNorm planner: one block per row, the row held in registers.  The choice
 * is the block size: enough threads that each keeps about 2 16-byte loads in
 * flight without a tail, in whole warps or waves, with x loaded through the
 * caches, the rule the H200's tuning runs measured fastest (docs/performance.md;
 * the AMD targets are unmeasured and get the same).  A tuning entry for the
 * instance family replaces the choice with the block size it measured
 * fastest, and says whether x goes through the caches. */
#include <stdio.h>
#include <stdlib.h>

#include "plan.h"

#define TARGET_ITEMS 2
#define MODEL_CACHES_X true
#define MAX_ITEMS 32      /* 16-byte vectors a thread keeps in registers */
#define MAX_THREADS 1024

static unsigned pick_threads(unsigned vecs, unsigned warp, bool *tail)
{
    unsigned best = 0, best_dist = ~0u;
    for (unsigned t = warp; t <= MAX_THREADS; t += warp) {
        if (vecs % t)
            continue;
        unsigned items = vecs / t;
        unsigned dist = (unsigned)abs((int)items - TARGET_ITEMS);
        /* ties go to more threads: more parallelism for a latency-bound row */
        if (dist <= best_dist) {
            best = t;
            best_dist = dist;
        }
    }
    *tail = best == 0;
    if (best)
        return best;
    unsigned t = (vecs + TARGET_ITEMS - 1) / TARGET_ITEMS;
    t = (t + warp - 1) / warp * warp;
    return t > MAX_THREADS ? MAX_THREADS : t;
}

/* Why a block size other than the planner's does not fit a row of `vecs`
 * 16-byte vectors, or NULL: the sizes generate --candidates emits (whole
 * warps up to one thread per vector, at most MAX_ITEMS vectors a thread). */
static const char *misfit(unsigned threads, unsigned vecs, unsigned warp, char why[128])
{
    const unsigned most = (vecs + warp - 1) / warp * warp;
    if (!threads || threads % warp || threads > MAX_THREADS)
        snprintf(why, 128, "%u threads is not a whole number of %u-thread %s up to %u", threads,
                 warp, warp == 64 ? "waves" : "warps", MAX_THREADS);
    else if (threads > most)
        snprintf(why, 128, "%u threads is more than one per 16-byte vector (%u vectors a row)",
                 threads, vecs);
    else if ((vecs + threads - 1) / threads > MAX_ITEMS)
        snprintf(why, 128, "%u threads would keep %u vectors each; at most %u fit in registers",
                 threads, (vecs + threads - 1) / threads, MAX_ITEMS);
    else
        return NULL;
    return why;
}

/* One instance of tuning family `family` (hidden a whole number of 16-byte
 * vectors): the planner's block size (FG_FROM_MODEL), or `threads` with x
 * cached or streamed (a tuning entry's, or a candidate's: threads must fit,
 * misfit()).  `config` is the explain line that says where the configuration
 * came from ("" for candidates). */
static int plan_one(unsigned hidden, fg_dtype dtype, const fg_target *t, const char *family,
                    const char *why, fg_origin from, unsigned threads, bool cache_x,
                    const char *config, fg_instance *in, fg_diag *d)
{
    const unsigned elems = 16 / fg_dtype_bytes(dtype);
    const unsigned vecs = hidden / elems;
    bool tail;
    if (from == FG_FROM_MODEL)
        threads = pick_threads(vecs, t->warp_size, &tail);
    else
        tail = vecs % threads != 0;
    const bool forced = from != FG_FROM_MODEL;
    const unsigned items = (vecs + threads - 1) / threads;
    if (items > MAX_ITEMS) {
        fg_error(d, "rmsnorm over %u elements needs %u vectors per thread; at most 32 fit in "
                    "registers", hidden, items);
        return -1;
    }

    char dims[32], variant[16];
    snprintf(dims, sizeof dims, "h%u", hidden);
    snprintf(variant, sizeof variant, "t%u%s", threads, cache_x ? "c" : "");
    if (!fg_instance_name(in->name, "rmsnorm", t->arch, fg_dtype_name(dtype), dims, variant)) {
        fg_error(d, "cannot name an rmsnorm instance");
        return -1;
    }
    fg_plan_mark(in, family, from);
    in->family = "rmsnorm";
    in->op = "rmsnorm";
    in->template_name = "rmsnorm.in";
    in->target = t;
    in->dtype = dtype;
    fg_instance_add_param(in, "HIDDEN", hidden);
    in->nkey_params = 1;
    fg_instance_add_param(in, "THREADS", threads);
    fg_instance_add_param(in, "VECS", vecs);
    fg_instance_add_param(in, "ITEMS", items);
    fg_instance_add_param(in, "TAIL", tail);
    fg_instance_add_param(in, "CACHE_X", cache_x);
    in->launch = (fg_launch){.grid = FG_GRID_ROWS, .block = {threads, 1, 1}, .cluster = {1, 1, 1}};

    snprintf(in->path_key, sizeof in->path_key, "rmsnorm/%s/%s/tail%d/%s%s", fg_arch_tag(t->arch),
             fg_dtype_name(dtype), tail, threads == t->warp_size ? "onewarp" : "blocksum",
             cache_x ? "/cached" : "");
    fg_sb_printf(&in->reasons, "used for: %s\n", why);
    if (in->candidate)
        fg_sb_printf(&in->reasons, "tuning candidate (generate --candidates): %u threads, x "
                                   "%s, not the planner's choice\n",
                     threads, cache_x ? "loaded through the caches" : "streamed");
    else
        fg_sb_printf(&in->reasons, "%s\n", config);
    fg_sb_printf(&in->reasons, "16-byte vectors: %u %s elements per load, %u vectors per row\n",
                 elems, fg_dtype_name(dtype), vecs);
    if (tail && forced)
        fg_sb_printf(&in->reasons, "%u threads do not divide %u vectors: a guarded tail\n",
                     threads, vecs);
    else if (tail)
        fg_sb_printf(&in->reasons,
                     "no whole-%s block divides %u vectors: %u threads with a guarded tail\n",
                     t->warp_size == 64 ? "wave" : "warp", vecs, threads);
    else if (forced)
        fg_sb_printf(&in->reasons, "%u threads (%u %s of %u) x %u vectors each, no tail\n",
                     threads, threads / t->warp_size, t->warp_size == 64 ? "waves" : "warps",
                     t->warp_size, items);
    else
        fg_sb_printf(&in->reasons,
                     "%u threads (%u %s of %u) x %u vectors each: the split closest to %u "
                     "loads in flight per thread, no tail\n",
                     threads, threads / t->warp_size, t->warp_size == 64 ? "waves" : "warps",
                     t->warp_size, items, TARGET_ITEMS);
    fg_sb_printf(&in->reasons,
                 "row kept in registers (%u x 16 B per thread): one read of x (%s), one of "
                 "weight, fp32 sum, one rounding\n",
                 items, cache_x ? "through the caches" : "streamed: read once, evict first");
    fg_sb_printf(&in->reasons, "block sum: %s shuffles, then %u partials in shared memory\n",
                 t->warp_size == 64 ? "wave64" : "warp", threads / t->warp_size);
    return 0;
}

int fg_plan_rmsnorm(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned hidden,
                    const char *why, fg_diag *d)
{
    const fg_dtype dtype = s->model->dtype;
    const fg_target *t = ts->target;
    const unsigned warp = t->warp_size, elems = 16 / fg_dtype_bytes(dtype), vecs = hidden / elems;
    if (hidden % elems) {
        fg_error(d, "rmsnorm over %u elements: not a whole number of 16-byte vectors", hidden);
        return -1;
    }
    char family[FG_NAME_MAX], dims[32], bad[128];
    fg_strbuf config = {0};
    snprintf(dims, sizeof dims, "h%u", hidden);
    /* the family a tuning entry names: the instance name less its block size */
    fg_instance_name(family, "rmsnorm", t->arch, fg_dtype_name(dtype), dims, "");
    /* the configuration: the tuning entry's where there is one, else the model's */
    const fg_tuning_entry *e = fg_plan_tuning_entry(set, family);
    fg_instance in = {0};
    int rc;
    if (e) {
        if (misfit(e->threads, vecs, warp, bad)) {
            fg_error(d, "%s: the entry for %s (%u threads, x %s) does not plan: %s; run fusegen "
                        "tune again",
                     set->tuning->path, family, e->threads, e->cache_x ? "cached" : "streamed",
                     bad);
            return -1;
        }
        char what[64];
        snprintf(what, sizeof what, "%u threads, x %s", e->threads,
                 e->cache_x ? "loaded through the caches" : "streamed");
        fg_plan_config_line(&config, set, e, what, 2);
        rc = plan_one(hidden, dtype, t, family, why, FG_FROM_TUNING, e->threads, e->cache_x,
                      fg_sb_str(&config), &in, d);
    } else {
        fg_plan_config_line(&config, set, NULL, NULL, 2);
        rc = plan_one(hidden, dtype, t, family, why, FG_FROM_MODEL, 0, MODEL_CACHES_X,
                      fg_sb_str(&config), &in, d);
    }
    fg_sb_free(&config);
    if (rc) {
        fg_instance_free(&in);
        return -1;
    }
    const long long chosen = fg_instance_param(&in, "THREADS");
    const bool chosen_cached = fg_instance_param(&in, "CACHE_X") == 1;
    rc = fg_plan_add(set, &in, s, ts, d);
    /* tuning candidates: every whole-warp block size whose row fits the
     * registers, up to one thread per vector, x streamed or cached (the
     * model's own among them when an entry replaced it) */
    for (unsigned th = warp; set->candidates && rc == 0 && th <= MAX_THREADS; th += warp)
        for (int cached = 0; cached < 2 && rc == 0; cached++) {
            if (((long long)th == chosen && cached == chosen_cached) || misfit(th, vecs, warp, bad))
                continue;
            fg_instance c = {0};
            if (plan_one(hidden, dtype, t, family, why, FG_CANDIDATE, th, cached, "", &c, d) != 0) {
                fg_instance_free(&c);
                return -1;
            }
            rc = fg_plan_add(set, &c, s, ts, d);
        }
    return rc;
}
