#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fg_instance *find(fg_plan_set *set, const char *name)
{
    for (size_t i = 0; i < set->count; i++)
        if (strcmp(set->items[i].name, name) == 0)
            return &set->items[i];
    return NULL;
}

/* Notes item in list once; false when it is new and the list is full. */
static bool note(const char **list, unsigned *n, const char *item)
{
    for (unsigned i = 0; i < *n; i++)
        if (strcmp(list[i], item) == 0)
            return true;
    if (*n == FG_MAX_SPECS_PER_INSTANCE)
        return false;
    list[(*n)++] = item;
    return true;
}

/* The specs and the target an instance serves, noted once each: the
 * manifest lists the specs, and the registry entry the targets, which the
 * runtime reads up to FG_REG_MAX_TARGETS of.  More is refused rather than
 * dropped (the manifest would not say what the instance serves; the
 * runtime would refuse the entry at fg_init). */
static int note_users(fg_instance *in, const fg_spec *s, const fg_spec *ts, fg_diag *d)
{
    if (!note(in->specs, &in->nspecs, s->path) || !note(in->specs, &in->nspecs, ts->path)) {
        fg_error(d, "%s: serves more than %d specs, more than its manifest entry lists; "
                    "generate from fewer specs at once",
                 in->name, FG_MAX_SPECS_PER_INSTANCE);
        return -1;
    }
    for (unsigned i = 0; i < in->ntargets; i++)
        if (strcmp(in->targets[i]->name, ts->target->name) == 0)
            return 0;
    if (in->ntargets == FG_REG_MAX_TARGETS) {
        fg_error(d, "%s: planned alike for more than %d targets (%s among them), more than "
                    "its registry entry lists; generate for fewer targets at once",
                 in->name, FG_REG_MAX_TARGETS, ts->target->name);
        return -1;
    }
    in->targets[in->ntargets++] = ts->target;
    return 0;
}

unsigned fg_kv_page(const fg_model *m)
{
    return m->kv_cache && m->kv_cache->layout == FG_KV_PAGED ? m->kv_cache->page_size : 0;
}

/* What two instances of one name differ in that changes their code, or NULL. */
static const char *code_difference(const fg_instance *a, const fg_instance *b)
{
    if (strcmp(a->template_name, b->template_name) || a->nparams != b->nparams ||
        a->ntexts != b->ntexts)
        return "template";
    for (unsigned i = 0; i < a->nparams; i++)
        if (strcmp(a->params[i].key, b->params[i].key) || a->params[i].value != b->params[i].value)
            return a->params[i].key;
    for (unsigned i = 0; i < a->ntexts; i++)
        if (strcmp(fg_sb_str(&a->text_values[i]), fg_sb_str(&b->text_values[i])))
            return a->text_keys[i];
    return NULL;
}

int fg_plan_add(fg_plan_set *set, fg_instance *in, const fg_spec *s, const fg_spec *ts,
                fg_diag *d)
{
    if (in->nkey_params > FG_REG_MAX_DIMS) {   /* (the registry entry's dims; a planner's slip) */
        fg_error(d, "internal error: %s: %u key dims, more than a registry entry holds (%d)", in->name,
                 in->nkey_params, FG_REG_MAX_DIMS);
        fg_instance_free(in);
        return -1;
    }
    fg_instance *old = find(set, in->name);
    if (old) {
        /* Same name must mean same code; keep the first reasons. */
        const char *diff = code_difference(old, in);
        if (diff)
            fg_error(d, "internal error: %s: two specs need different code under this name "
                        "(%s differs; %s)",
                     in->name, diff, s->path);
        fg_instance_free(in);
        return diff || note_users(old, s, ts, d) ? -1 : 0;
    }
    if (set->count == set->cap) {
        set->cap = set->cap ? set->cap * 2 : 16;
        fg_instance *p = realloc(set->items, set->cap * sizeof *p);
        if (!p)
            fg_out_of_memory();
        set->items = p;
    }
    if (note_users(in, s, ts, d)) {
        fg_instance_free(in);
        return -1;
    }
    set->items[set->count++] = *in;
    return 0;
}

static int add_rmsnorm(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned hidden,
                       const char *what, fg_diag *d)
{
    char why[128];
    snprintf(why, sizeof why, "%s of %s", what, s->model->name);
    return fg_plan_rmsnorm(set, s, ts, hidden, why, d);
}

/* The overlap plan table's rows of a GEMM-overlap spec: every shape the cost
 * model can predict on this target (one with an interconnect profile). */
static void add_overlap_plans(fg_plan_set *set, const fg_spec *s, const fg_target *t)
{
    for (unsigned i = 0; i < s->gemm->shapes_count; i++) {
        fg_overlap_plan row = {.gemm = s->gemm, .shape = &s->gemm->shapes[i], .target = t};
        if (fg_overlap_predict(s->gemm, row.shape, t, &row.prediction))
            continue;   /* explain says why */
        set->overlap = realloc(set->overlap, (set->noverlap + 1) * sizeof *set->overlap);
        if (!set->overlap)
            fg_out_of_memory();
        set->overlap[set->noverlap++] = row;
    }
}

/* The owner's reduction kernel, where the spec has a reduce-scatter shape
 * (one per dtype and world size: the shapes differ only at run time). */
static int add_overlap_reduce(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, fg_diag *d)
{
    const fg_gemm *g = s->gemm;
    bool rs = false;
    for (unsigned i = 0; i < g->shapes_count; i++)
        rs |= g->shapes[i].collective == FG_COLL_REDUCE_SCATTER;
    if (!rs)
        return 0;
    char why[200];
    snprintf(why, sizeof why, "the reduce-scatter shapes of %s", g->name);
    int rc = fg_plan_overlap_reduce(set, s, ts, g->dtype, g->world_size, why, d);
    /* the hierarchical plan sums a node's partials (fgrt_overlap_args.node_ranks) and
     * then the nodes' sums: every node size, and so every count of nodes */
    unsigned nodes[FG_OVERLAP_MAX_NODE_SIZES];
    const unsigned count = fg_overlap_node_sizes(g->world_size, nodes);
    for (unsigned i = 0; rc == 0 && i < count; i++) {
        snprintf(why, sizeof why,
                 "the sums of %s's reduce-scatter shapes under the hierarchical plan (a node's "
                 "partials with nodes of %u, the nodes' sums with %u nodes)",
                 g->name, nodes[i], nodes[i]);
        rc = fg_plan_overlap_reduce(set, s, ts, g->dtype, nodes[i], why, d);
    }
    return rc;
}

/* The fused GEMM, one instance per (n, k) of the spec's shapes (m is the
 * call's), where the target has one. */
static int add_overlap_gemm(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, fg_diag *d)
{
    const fg_gemm *g = s->gemm;
    for (unsigned i = 0; i < g->shapes_count; i++) {
        const fg_gemm_shape *sh = &g->shapes[i];
        bool seen = false;
        for (unsigned j = 0; j < i && !seen; j++)
            seen = g->shapes[j].n == sh->n && g->shapes[j].k == sh->k;
        if (seen || fg_plan_overlap_gemm_skipped(sh, ts->target))
            continue;
        char why[200];
        snprintf(why, sizeof why, "the shapes of %s with n %u, k %u (%s first)", g->name, sh->n,
                 sh->k, sh->name);
        if (fg_plan_overlap_gemm(set, s, ts, sh, why, d) != 0)
            return -1;
    }
    return 0;
}

int fg_plan_spec(const fg_spec *s, const fg_spec *t, fg_plan_set *set, fg_diag *d)
{
    if (s->kind == FG_SPEC_GEMM) {
        add_overlap_plans(set, s, t->target);
        const int rc = add_overlap_reduce(set, s, t, d);
        return rc ? rc : add_overlap_gemm(set, s, t, d);
    }
    if (s->kind != FG_SPEC_MODEL)
        return 0;
    const fg_model *m = s->model;
    int rc = add_rmsnorm(set, s, t, m->hidden, "input RMSNorm", d);
    if (m->family == FG_FAMILY_LLAMA && rc == 0)
        rc = fg_plan_decode(set, s, t, d);
    if (m->family == FG_FAMILY_MLA) {
        rc |= fg_plan_mla(set, s, t, d);
        rc |= fg_plan_mla_block(set, s, t, d);
        rc |= add_rmsnorm(set, s, t, m->mla->kv_lora_rank, "latent (kv_lora) RMSNorm", d);
        if (m->mla->q_lora_rank)
            rc |= add_rmsnorm(set, s, t, m->mla->q_lora_rank, "q_lora RMSNorm", d);
    }
    return rc;
}

void fg_plan_filter(fg_plan_set *set, const char *const *globs, size_t nglobs)
{
    size_t kept = 0;
    for (size_t i = 0; i < set->count; i++) {
        if (fg_name_matches(set->items[i].name, globs, nglobs))
            set->items[kept++] = set->items[i];
        else
            fg_instance_free(&set->items[i]);
    }
    set->count = kept;
}

void fg_plan_one_per_path(fg_plan_set *set)
{
    size_t kept = 0;
    for (size_t i = 0; i < set->count; i++) {
        bool seen = false;
        for (size_t j = 0; j < kept && !seen; j++)
            seen = strcmp(set->items[j].path_key, set->items[i].path_key) == 0;
        if (seen)
            fg_instance_free(&set->items[i]);
        else
            set->items[kept++] = set->items[i];
    }
    set->count = kept;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const fg_instance *)a)->name, ((const fg_instance *)b)->name);
}

void fg_plan_sort(fg_plan_set *set)
{
    if (set->count)
        qsort(set->items, set->count, sizeof *set->items, by_name);
}

void fg_plan_free(fg_plan_set *set)
{
    for (size_t i = 0; i < set->count; i++)
        fg_instance_free(&set->items[i]);
    free(set->items);
    free(set->overlap);
    *set = (fg_plan_set){0};
}

const fg_tuning_entry *fg_plan_tuning_entry(const fg_plan_set *set, const char *family)
{
    if (!set->tuning)
        return NULL;
    const fg_tuning *tu = set->tuning->tuning;
    for (unsigned i = 0; i < tu->entries_count; i++)
        if (strcmp(tu->entries[i].family, family) == 0)
            return &tu->entries[i];
    return NULL;
}

void fg_plan_mark(fg_instance *in, const char *family, fg_origin from)
{
    snprintf(in->tuning_family, sizeof in->tuning_family, "%s", family);
    in->candidate = from == FG_CANDIDATE;
    in->tuned = from == FG_FROM_TUNING;
}

void fg_plan_config_line(fg_strbuf *sb, const fg_plan_set *set, const fg_tuning_entry *e,
                         const char *what, int decimals)
{
    if (!e)
        fg_sb_printf(sb, "configuration: the model's (%s%s)",
                     set->tuning ? "no entry for this family in " : "no tuning file given",
                     set->tuning ? set->tuning->path : "");
    else
        fg_sb_printf(sb,
                     "configuration: tuned (%s): %s: %.*f us against the model's %.*f (worst "
                     "%.*f of %u candidates; %s)",
                     set->tuning->path, what, decimals, e->tuned_us, decimals, e->model_us,
                     decimals, e->worst_us, e->candidates, e->measured);
}
