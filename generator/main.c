/* fusegen: the command line.  Subcommands generate, list and explain share
 * one pipeline (load specs -> plan -> filter); import-hf, gate and embed are
 * tools around it. */
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed.h"
#include "emit.h"
#include "fsutil.h"
#include "importhf.h"
#include "plan_overlap.h"
#include "report.h"
#include "shapes.h"
#include "profile.h"
#include "tune.h"
#include "resources.h"

#ifndef FG_DEFAULT_TEMPLATES
#define FG_DEFAULT_TEMPLATES "templates"
#endif

static const char main_usage[] =
    "usage: fusegen COMMAND [options] ...\n"
    "\n"
    "Ahead-of-time generator of fused GPU kernels (CUDA sm_90a, HIP gfx942/gfx90a)\n"
    "from YAML specs of models, GEMM-overlap shapes and targets.\n"
    "\n"
    "commands:\n"
    "  generate   write kernel sources, the registry source and the manifest\n"
    "  list       print the files generate would write, one per line\n"
    "  explain    print the plan chosen for each kernel and why\n"
    "  import-hf  write a model spec from a Hugging Face config.json\n"
    "  gate       check compiler resource reports (registers, spills) into the manifest\n"
    "  tune       time the compiled tuning candidates on a GPU, write the tuning spec\n"
    "  profile    measure peer copies and GEMMs on 2 GPUs into a target spec\n"
    "  embed      turn a compiled kernel image into a C source\n"
    "  report     turn benchmark results into a markdown table and a gnuplot chart\n"
    "  shapes     print the shapes of GEMM-overlap specs as test_overlap's --bench-shapes\n"
    "\n"
    "  fusegen COMMAND --help   options of one command\n"
    "  fusegen --version\n";

static const char pipeline_usage[] =
    "usage: fusegen %s [options] SPEC...\n"
    "\n"
    "%s\n"
    "\n"
    "SPEC files are model, gemm, target and tuning specs (specs/models,\n"
    "specs/gemm, specs/targets, specs/tuning); every model is planned for every\n"
    "selected target, with the configurations of that target's tuning spec\n"
    "where it has an entry (explain says which were used).\n"
    "\n"
    "options:\n"
    "  -t, --target NAME     use only this target (repeatable; default: every target spec)\n"
    "  -o, --out DIR         output folder (default: generated)\n"
    "  -f, --filter GLOB     keep only instances whose name matches GLOB (repeatable)\n"
    "      --templates DIR   template folder (default: $FUSEGEN_TEMPLATES, else %s,\n"
    "                        else share/fusegen/templates beside an installed fusegen)\n"
    "      --one-per-path    keep one instance of each distinct code path (CI compile check)\n"
    "      --candidates      add every other configuration that plans, as tuning\n"
    "                        candidates, named by it (the decode ring: ..._ring_k<stage\n"
    "                        KB>n<stages>f<in flight>; the grid form: ..._grid_t<threads>\n"
    "                        _k<step>q<slices>o<slices>u<rounds>; rmsnorm: ..._t<threads>[c],\n"
    "                        c: x through the caches; mla_decode: ..._g<heads>_c<cluster>x\n"
    "                        <clusters>_n<stages>; overlap_gemm: ..._s<stages>c<C rounds>g\n"
    "                        <tile rows>; mla_block: ..._s<slots>p<rows>c<rows>[t], t: the\n"
    "                        projections on tensor cores; overlap_reduce: ..._t<threads>b\n"
    "                        <blocks a compute unit>)\n"
    "%s"
    "  -h, --help            this text\n";

typedef enum { CMD_GENERATE, CMD_LIST, CMD_EXPLAIN } pipeline_cmd;

static const char *const pipeline_names[] = {"generate", "list", "explain"};
static const char *const pipeline_help[] = {
    "Writes one kernel source per instance, fg_registry.c and manifest.json into\n"
    "the output folder.  Files are replaced atomically and only when their\n"
    "content changes; on any error nothing is written.",
    "Prints the paths generate would write, one per line (for Make).",
    "Prints, for each instance, its parameters, launch shape and the reasons\n"
    "for each choice; with --resources, also the compiler's resource figures."};

#define MAX_LIST 64

typedef struct pipeline_opts {
    const char *targets[MAX_LIST];
    size_t ntargets;
    const char *filters[MAX_LIST];
    size_t nfilters;
    const char *out_dir;
    const char *template_dir;
    const char *resources;   /* explain: a manifest with "resources" from gate */
    bool one_per_path;
    bool candidates;
} pipeline_opts;

/* Templates: $FUSEGEN_TEMPLATES, else the source tree this binary was built
 * from, else <prefix>/share/fusegen/templates beside an installed binary. */
static const char *default_templates(void)
{
    const char *env = getenv("FUSEGEN_TEMPLATES");
    if (env && *env)
        return env;
    if (access(FG_DEFAULT_TEMPLATES, R_OK) == 0)
        return FG_DEFAULT_TEMPLATES;
    static char installed[4096];
    if (fg_self_exe(installed, sizeof installed - 64)) {
        char *slash = strrchr(installed, '/');
        if (slash) {
            strcpy(slash, "/../share/fusegen/templates");
            if (access(installed, R_OK) == 0)
                return installed;
        }
    }
    return FG_DEFAULT_TEMPLATES;
}

static int parse_pipeline_opts(pipeline_cmd cmd, int argc, char **argv, pipeline_opts *o)
{
    static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"filter", required_argument, NULL, 'f'},
                                         {"templates", required_argument, NULL, 'T'},
                                         {"resources", required_argument, NULL, 'r'},
                                         {"one-per-path", no_argument, NULL, 'P'},
                                         {"candidates", no_argument, NULL, 'C'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    *o = (pipeline_opts){.out_dir = "generated", .template_dir = default_templates()};
    const char *explain_extra =
        cmd == CMD_EXPLAIN ? "      --resources FILE  manifest written by `fusegen gate`\n" : "";
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:o:f:h", opts, NULL)) != -1) {
        switch (c) {
        case 't':
        case 'f': {
            const char **list = c == 't' ? o->targets : o->filters;
            size_t *n = c == 't' ? &o->ntargets : &o->nfilters;
            if (*n == MAX_LIST) {
                fprintf(stderr, "fusegen: error: more than %d --%s options\n", MAX_LIST,
                        c == 't' ? "target" : "filter");
                return 2;
            }
            list[(*n)++] = optarg;
            break;
        }
        case 'o': o->out_dir = optarg; break;
        case 'T': o->template_dir = optarg; break;
        case 'P': o->one_per_path = true; break;
        case 'C': o->candidates = true; break;
        case 'r':
            if (cmd != CMD_EXPLAIN) {
                fprintf(stderr, "fusegen: error: --resources applies only to explain\n");
                return 2;
            }
            o->resources = optarg;
            break;
        case 'h':
            printf(pipeline_usage, pipeline_names[cmd], pipeline_help[cmd], FG_DEFAULT_TEMPLATES,
                   explain_extra);
            return 1;
        default:
            fprintf(stderr, "Try 'fusegen %s --help'.\n", pipeline_names[cmd]);
            return 2;
        }
    }
    if (optind == argc) {
        fprintf(stderr, "fusegen %s: error: no spec files given\nTry 'fusegen %s --help'.\n",
                pipeline_names[cmd], pipeline_names[cmd]);
        return 2;
    }
    return 0;
}

typedef struct loaded {
    fg_spec **specs;
    size_t count;
} loaded;

static void free_loaded(loaded *l)
{
    for (size_t i = 0; i < l->count; i++)
        fg_spec_free(l->specs[i]);
    free(l->specs);
}

static const char *spec_name(const fg_spec *s)
{
    return s->model ? s->model->name : s->gemm ? s->gemm->name : s->target ? s->target->name
                                                                           : s->tuning->target;
}

/* Loads every spec, reporting every error, then checks names are unique. */
static int load_all(char **paths, size_t n, loaded *l, fg_diag *d)
{
    l->specs = calloc(n, sizeof *l->specs);
    l->count = 0;
    if (!l->specs)
        return -1;
    for (size_t i = 0; i < n; i++) {
        fg_spec *s = fg_spec_load(paths[i], d);
        if (s)
            l->specs[l->count++] = s;
    }
    if (d->errors)
        return -1;
    for (size_t i = 0; i < l->count; i++)
        for (size_t j = 0; j < i; j++) {
            const fg_spec *a = l->specs[i], *b = l->specs[j];
            if (a->kind != b->kind || a->kind == FG_SPEC_TUNING)
                continue;   /* tuning specs: one per target (check_tunings) */
            const char *na = spec_name(a), *nb = spec_name(b);
            if (strcmp(na, nb) == 0)
                fg_error_at(d, a->path, 0, 0, "name '%s' is also used by %s", na, b->path);
        }
    return d->errors ? -1 : 0;
}

static bool target_selected(const pipeline_opts *o, const fg_spec *s)
{
    if (o->ntargets == 0)
        return true;
    for (size_t i = 0; i < o->ntargets; i++)
        if (strcmp(o->targets[i], s->target->name) == 0)
            return true;
    return false;
}

static int check_target_names(const pipeline_opts *o, const loaded *l, fg_diag *d)
{
    size_t ntargets = 0;
    for (size_t i = 0; i < l->count; i++)
        ntargets += l->specs[i]->kind == FG_SPEC_TARGET;
    if (ntargets == 0) {
        fg_error(d, "no target spec given; add one or more of specs/targets/*.yaml");
        return -1;
    }
    for (size_t t = 0; t < o->ntargets; t++) {
        bool found = false;
        fg_strbuf known = {0};
        for (size_t i = 0; i < l->count; i++) {
            if (l->specs[i]->kind != FG_SPEC_TARGET)
                continue;
            found |= strcmp(l->specs[i]->target->name, o->targets[t]) == 0;
            fg_sb_printf(&known, "%s%s", known.len ? ", " : "", l->specs[i]->target->name);
        }
        if (!found)
            fg_error(d, "unknown target '%s'; the target specs given are: %s", o->targets[t],
                     fg_sb_str(&known));
        fg_sb_free(&known);
    }
    return d->errors ? -1 : 0;
}

/* The tuning spec given for target `ts`, or NULL.  Each tuning spec must
 * name a target spec given, and no target may have two. */
static const fg_spec *tuning_for(const loaded *l, const fg_spec *ts)
{
    for (size_t i = 0; i < l->count; i++)
        if (l->specs[i]->kind == FG_SPEC_TUNING &&
            strcmp(l->specs[i]->tuning->target, ts->target->name) == 0)
            return l->specs[i];
    return NULL;
}

static int check_tunings(const loaded *l, fg_diag *d)
{
    for (size_t i = 0; i < l->count; i++) {
        if (l->specs[i]->kind != FG_SPEC_TUNING)
            continue;
        const char *name = l->specs[i]->tuning->target;
        bool target = false;
        for (size_t j = 0; j < l->count; j++) {
            const fg_spec *o = l->specs[j];
            target |= o->kind == FG_SPEC_TARGET && strcmp(o->target->name, name) == 0;
            if (j < i && o->kind == FG_SPEC_TUNING && strcmp(o->tuning->target, name) == 0)
                fg_error(d, "%s and %s both tune target '%s'; expected one tuning file per "
                            "target", o->path, l->specs[i]->path, name);
        }
        if (!target)
            fg_error(d, "%s tunes target '%s', but no target spec of that name is given",
                     l->specs[i]->path, name);
    }
    return d->errors ? -1 : 0;
}

/* An entry's family names its architecture (rmsnorm_sm90a_...): one for
 * another architecture than its target's could never be applied. */
static int check_tuning_arch(const fg_spec *tuning, const fg_target *t, fg_diag *d)
{
    char tag[32];
    snprintf(tag, sizeof tag, "_%s_", fg_arch_tag(t->arch));
    const fg_tuning *tu = tuning->tuning;
    for (unsigned i = 0; i < tu->entries_count; i++)
        if (!strstr(tu->entries[i].family, tag))
            fg_error(d, "%s: tuning.entries[%u].family '%s' is not for %s, target %s's "
                        "architecture; expected a family with '%s' in its name",
                     tuning->path, i, tu->entries[i].family, fg_arch_tag(t->arch), t->name, tag);
    return d->errors ? -1 : 0;
}

static int plan_all(const pipeline_opts *o, const loaded *l, fg_plan_set *set, fg_diag *d)
{
    if (check_target_names(o, l, d) || check_tunings(l, d))
        return -1;
    for (size_t t = 0; t < l->count; t++) {
        const fg_spec *ts = l->specs[t];
        if (ts->kind != FG_SPEC_TARGET || !target_selected(o, ts))
            continue;
        set->tuning = tuning_for(l, ts);
        if (set->tuning && check_tuning_arch(set->tuning, ts->target, d))
            return -1;
        for (size_t i = 0; i < l->count; i++)
            if (fg_plan_spec(l->specs[i], ts, set, d))
                return -1;
    }
    set->tuning = NULL;
    if (o->nfilters)
        fg_plan_filter(set, o->filters, o->nfilters);
    fg_plan_sort(set);
    if (o->one_per_path)
        fg_plan_one_per_path(set);
    return 0;
}

/* Removes kernel sources that an earlier run wrote and this one does not. */
static void remove_stale(const char *out_dir, const fg_outputs *outs)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", out_dir);
    json_object *old = json_object_from_file(path);
    json_object *inst;
    if (!old || !json_object_object_get_ex(old, "instances", &inst)) {
        json_object_put(old);
        return;
    }
    for (size_t i = 0; i < json_object_array_length(inst); i++) {
        json_object *src;
        if (!json_object_object_get_ex(json_object_array_get_idx(inst, i), "source", &src))
            continue;
        const char *file = json_object_get_string(src);
        if (!file || strchr(file, '/'))
            continue;
        snprintf(path, sizeof path, "%s/%s", out_dir, file);
        bool still = false;
        for (size_t k = 0; k < outs->count && !still; k++)
            still = strcmp(outs->items[k].path, path) == 0;
        if (!still)
            unlink(path);
    }
    json_object_put(old);
}

static json_object *load_resources(const char *path, fg_diag *d)
{
    json_object *root = json_object_from_file(path);
    if (!root)
        fg_error_at(d, path, 0, 0, "cannot read the resource manifest: %s",
                    json_util_get_last_err());
    return root;
}

static void print_resources(json_object *res_root, const char *name)
{
    json_object *inst;
    if (!res_root || !json_object_object_get_ex(res_root, "instances", &inst))
        return;
    for (size_t i = 0; i < json_object_array_length(inst); i++) {
        json_object *e = json_object_array_get_idx(inst, i), *n, *r;
        if (!json_object_object_get_ex(e, "name", &n) ||
            strcmp(json_object_get_string(n), name) != 0 ||
            !json_object_object_get_ex(e, "resources", &r))
            continue;
        printf("  resources:");
        json_object_object_foreach(r, key, val) printf(" %s=%s", key, json_object_get_string(val));
        printf("\n");
        return;
    }
    printf("  resources: not measured (run `make kernels`)\n");
}

/* The cost model's prediction for every shape of g on t (plan_overlap.h). */
static void explain_overlap(const fg_gemm *g, const fg_target *t)
{
    for (unsigned i = 0; i < g->shapes_count; i++) {
        const fg_gemm_shape *s = &g->shapes[i];
        fg_overlap_prediction p;
        /* what stops a prediction is the target's or the world size's: the
         * first shape says it for all */
        const char *why = fg_overlap_predict(g, s, t, &p);
        if (why) {
            printf("  on %s: schedules not predicted: %s\n", t->name, why);
            return;
        }
        if (i == 0)
            printf("  on %s, predicted by the cost model from the profile (%s):\n", t->name,
                   t->interconnect->source);
        printf("    %s (%s m%u n%u k%u): gemm %.1f us (%s), copies %.1f us;", s->name,
               fg_collective_name(s->collective), s->m, s->n, s->k, p.gemm_us,
               p.gemms_measured ? "profiled" : "at the matmul ceiling: not profiled", p.comm_us);
        for (int k = 0; k < FG_SCHED_COUNT; k++) {
            if (isnan(p.us[k]))
                printf(" %s not predicted (%s)", fg_schedule_name((fg_schedule)k),
                       k == FG_SCHED_CHUNK_OVERLAP ? "no piece count divides a row block"
                       : k == FG_SCHED_CHUNK_FUSED
                           ? "sm_90a's wgmma GEMM (a target with clusters) in whole tiles only"
                           : "no NCCL fit in the profile");
            else if (k == FG_SCHED_CHUNK_FUSED)
                printf(" %s %.1f us (%u chunks; not chosen: not yet timed between GPUs)",
                       fg_schedule_name((fg_schedule)k), p.us[k], p.fused_chunks);
            else if (k == FG_SCHED_CHUNK_OVERLAP) {
                printf(" %s %.1f us (%u chunks; by pieces:", fg_schedule_name((fg_schedule)k),
                       p.us[k], p.chunks);
                for (int c = 0; c < FG_OVERLAP_NCHUNKS; c++)
                    if (!isnan(p.chunk_us[c]))
                        printf(" %u %.1f", fg_overlap_chunks[c], p.chunk_us[c]);
                printf(")");
            }
            else
                printf(" %s %.1f us", fg_schedule_name((fg_schedule)k), p.us[k]);
            printf("%s", k + 1 < FG_SCHED_COUNT ? "," : "");
        }
        printf(" -> %s, %.2fx max(gemm, copies)\n", fg_schedule_name(p.chosen),
               p.us[p.chosen] / fmax(p.gemm_us, p.comm_us));
        if (p.hier_count) {
            printf("      hierarchical (the copy engine inside nodes, NCCL between them at the "
                   "profile's NCCL fit; predicted, not chosen until timed between GPUs):");
            for (unsigned h = 0; h < p.hier_count; h++) {
                printf("%s nodes of %u %.1f us", h ? "," : "", p.hier_nodes[h], p.hier_us[h]);
                if (!isnan(p.hier_lanes_us[h]))
                    printf(" (a copy lane a node peer %.1f)", p.hier_lanes_us[h]);
            }
            printf("\n");
        }
        if (isnan(p.lanes_us[FG_SCHED_SERIAL_CE]))
            continue;
        const fg_interconnect *ic = t->interconnect;
        char rate[96];
        if (ic->copy_lanes_gbps > 0)
            snprintf(rate, sizeof rate, "the profile's lanes fit on %u GPUs", ic->copy_lanes_gpus);
        else
            snprintf(rate, sizeof rate, "%s", g->topology == FG_TOPO_FULL_MESH
                                                  ? "assumed: a link each"
                                                  : "assumed: the one-peer rate shared");
        printf("      on a copy lane a peer (2D, %u lanes, %s; predicted, not chosen until "
               "timed on more than 2 GPUs):", g->world_size - 1, rate);
        const char *sep = "";
        for (int k = 0; k < FG_SCHED_COUNT; k++) {
            if (isnan(p.lanes_us[k]))
                continue;
            printf("%s %s %.1f us", sep, fg_schedule_name((fg_schedule)k), p.lanes_us[k]);
            if (k == FG_SCHED_CHUNK_OVERLAP || k == FG_SCHED_CHUNK_FUSED)
                printf(" (%u chunks)", k == FG_SCHED_CHUNK_OVERLAP ? p.lanes_chunks
                                                                   : p.lanes_fused_chunks);
            sep = ",";
        }
        printf("\n");
    }
}

static void explain(const pipeline_opts *o, const loaded *l, const fg_plan_set *set,
                    json_object *res_root)
{
    for (size_t i = 0; i < set->count; i++) {
        const fg_instance *in = &set->items[i];
        printf("%s\n", in->name);
        printf("  target: %s (%s, %u %s, warp %u)", in->target->name,
               fg_arch_name(in->target->arch), in->target->compute_units,
               fg_arch_is_amd(in->target->arch) ? "CUs" : "SMs", in->target->warp_size);
        if (in->ntargets > 1) {
            printf("; shared by");
            for (unsigned k = 0; k < in->ntargets; k++)
                printf(" %s", in->targets[k]->name);
        }
        printf("\n  specs:");
        for (unsigned k = 0; k < in->nspecs; k++)
            printf(" %s", in->specs[k]);
        printf("\n  params:");
        for (unsigned k = 0; k < in->nparams; k++)
            printf(" %s=%lld", in->params[k].key, in->params[k].value);
        const fg_launch *la = &in->launch;
        char grid[48];
        if (la->grid == FG_GRID_ROWS)
            snprintf(grid, sizeof grid, "rows");
        else
            snprintf(grid, sizeof grid, "(%u,%u,%u)", la->grid_dims[0], la->grid_dims[1],
                     la->grid_dims[2]);
        printf("\n  launch: grid=%s block=(%u,%u,%u) cluster=(%u,%u,%u) dynamic_smem=%u%s%s\n",
               grid, la->block[0], la->block[1], la->block[2], la->cluster[0], la->cluster[1],
               la->cluster[2], la->dynamic_smem, la->cooperative ? " cooperative" : "",
               la->nonportable_cluster ? " nonportable-cluster" : "");
        printf("  why:\n");
        const char *r = fg_sb_str(&in->reasons);
        while (*r) {
            const char *nl = strchr(r, '\n');
            int len = nl ? (int)(nl - r) : (int)strlen(r);
            printf("    - %.*s\n", len, r);
            r += len + (nl ? 1 : 0);
        }
        print_resources(res_root, in->name);
    }
    for (size_t i = 0; i < l->count; i++) {
        const fg_spec *s = l->specs[i];
        if (s->kind != FG_SPEC_MODEL)
            continue;
        for (size_t t = 0; t < l->count; t++) {
            const fg_spec *ts = l->specs[t];
            if (ts->kind != FG_SPEC_TARGET || !target_selected(o, ts))
                continue;
            const char *why = s->model->family == FG_FAMILY_MLA
                                  ? fg_plan_mla_skipped(s, ts->target)
                                  : fg_plan_decode_skipped(s, ts->target);
            if (why)
                printf("%s on %s: fused attention %s: %s\n", s->model->name, ts->target->name,
                       s->model->family == FG_FAMILY_MLA ? "(MLA)" : "(decode_attn)", why);
            const char *block_why = s->model->family == FG_FAMILY_MLA
                                        ? fg_plan_mla_block_skipped(s, ts->target)
                                        : NULL;
            if (block_why)
                printf("%s on %s: the fused MLA block: %s\n", s->model->name, ts->target->name,
                       block_why);
        }
    }
    for (size_t i = 0; i < l->count; i++) {
        const fg_spec *s = l->specs[i];
        if (s->kind != FG_SPEC_GEMM)
            continue;
        printf("%s (%s): %u shapes, %s, world size %u, %s\n", s->gemm->name, s->path,
               s->gemm->shapes_count, fg_dtype_name(s->gemm->dtype), s->gemm->world_size,
               fg_topology_name(s->gemm->topology));
        for (size_t t = 0; t < l->count; t++) {
            const fg_spec *ts = l->specs[t];
            if (ts->kind == FG_SPEC_TARGET && target_selected(o, ts))
                explain_overlap(s->gemm, ts->target);
        }
        printf("  the plan table (fg_registry.c, the manifest) records each shape's chosen "
               "schedule, which the runtime's executor (fgrt_overlap.h) runs (serial_nccl: "
               "the engine's own NCCL call); a reduce-scatter under serial_ce or "
               "shard_overlap uses the owner's reduction kernel (overlap_reduce_*), "
               "chunk_overlap's ring adds in its GEMMs\n");
    }
}

static int run_pipeline(pipeline_cmd cmd, int argc, char **argv)
{
    pipeline_opts o;
    int rc = parse_pipeline_opts(cmd, argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    fg_diag d;
    fg_diag_init(&d, stderr);
    loaded l = {0};
    fg_plan_set set = {.candidates = o.candidates};
    fg_outputs outs = {0};
    json_object *res_root = NULL;
    rc = 1;
    if (load_all(argv + optind, (size_t)(argc - optind), &l, &d) || plan_all(&o, &l, &set, &d))
        goto out;
    fg_emit_ctx ctx = {.template_dir = o.template_dir, .out_dir = o.out_dir,
                       .specs = (const fg_spec *const *)l.specs, .nspecs = l.count};
    if (cmd == CMD_LIST) {
        fg_emit_paths(&ctx, &set, &outs);
        for (size_t i = 0; i < outs.count; i++)
            printf("%s\n", outs.items[i].path);
        rc = 0;
    } else if (cmd == CMD_EXPLAIN) {
        if (o.resources && !(res_root = load_resources(o.resources, &d)))
            goto out;
        explain(&o, &l, &set, res_root);
        rc = 0;
    } else {
        unsigned written;
        if (fg_emit_all(&ctx, &set, &outs, &d) || fg_mkdirs(o.out_dir, &d))
            goto out;
        remove_stale(o.out_dir, &outs);
        if (fg_outputs_write(&outs, &written, &d))
            goto out;
        fprintf(stderr, "fusegen: %zu instances, %u of %zu files written to %s\n", set.count,
                written, outs.count, o.out_dir);
        rc = 0;
    }
out:
    if (d.errors)
        fprintf(stderr, "fusegen %s: %d error%s; nothing written\n", pipeline_names[cmd],
                d.errors, d.errors == 1 ? "" : "s");
    json_object_put(res_root);
    fg_outputs_free(&outs);
    fg_plan_free(&set);
    free_loaded(&l);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(main_usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(main_usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("fusegen %s\n", FG_VERSION);
        return 0;
    }
    for (int c = CMD_GENERATE; c <= CMD_EXPLAIN; c++)
        if (!strcmp(cmd, pipeline_names[c]))
            return run_pipeline((pipeline_cmd)c, argc - 1, argv + 1);
    if (!strcmp(cmd, "import-hf"))
        return fg_cmd_import_hf(argc - 1, argv + 1);
    if (!strcmp(cmd, "tune"))
        return fg_cmd_tune(argc - 1, argv + 1);
    if (!strcmp(cmd, "profile"))
        return fg_cmd_profile(argc - 1, argv + 1);
    if (!strcmp(cmd, "gate"))
        return fg_cmd_gate(argc - 1, argv + 1);
    if (!strcmp(cmd, "embed"))
        return fg_cmd_embed(argc - 1, argv + 1);
    if (!strcmp(cmd, "report"))
        return fg_cmd_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "shapes"))
        return fg_cmd_shapes(argc - 1, argv + 1);
    fprintf(stderr, "fusegen: error: unknown command '%s'\n\n%s", cmd, main_usage);
    return 2;
}
