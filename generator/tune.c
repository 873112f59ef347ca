/* fusegen tune (see tune.h): time the compiled candidates of each instance
 * family, check the fastest, write the winners into the tuning spec. */
#include "tune.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <time.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decimal.h"
#include "diag.h"
#include "fsutil.h"
#include "instance.h"
#include "jsonget.h"
#include "report.h"
#include "spec.h"
#include "strbuf.h"

static const char usage[] =
    "usage: fusegen tune --target NAME [--filter GLOB]... [options] SPEC...\n"
    "       fusegen tune --manifest GATED.json --out TUNING.yaml [options]\n"
    "\n"
    "With --target, first generates the tuning candidates of SPEC... for that\n"
    "target (generate --candidates; --filter keeps the instances whose names\n"
    "match a glob; the checkout's specs/targets/NAME.yaml is added when no\n"
    "spec given is target NAME's) and compiles them through the resource gate\n"
    "with mk/kernels.mk (run it from a fusegen checkout; $MAKE, default make),\n"
    "showing the kernels compiled so far, into --work (default\n"
    "build/tune/NAME: generated/, kernels/, compile.log).  Then, or with a gate's\n"
    "manifest of candidates compiled before (`make candidates`):\n"
    "\n"
    "Times the configurations of each instance family in GATED.json (the gate's\n"
    "manifest: the planner's choice and its tuning\n"
    "candidates, less those discarded for spilling) with the GPU test harness of\n"
    "its kind -- the fused decode ring's (stage size, stages, stages in flight,\n"
    "threads) with test_decode_attn at S = 1K and S_max, RMSNorm's (block size,\n"
    "x streamed or cached) with test_rmsnorm at 1 and 4096 rows, the MLA core's\n"
    "(heads a block, stages, cluster size and count) with test_mla_decode at\n"
    "S = 1K and S_max, the grid form's (steps, slices, key rounds) with\n"
    "test_decode_attn, the overlap family's GEMM (stages, C rounds, tile rows a\n"
    "group) with test_gemm at M = 4096 and 16384, the whole MLA block's (ring\n"
    "slots, rows a piece and a W_uk chunk, projections on tensor cores or not)\n"
    "with test_mla_block at B = 1 and B_max, S = 4K, the overlap family's\n"
    "reduction's (threads, blocks a compute unit) with test_overlap_reduce at\n"
    "256K and 4M vectors a block -- showing the points timed as the harness\n"
    "logs them; checks the fastest against the reference in order until one\n"
    "passes (--check-all: every one); and writes it into TUNING.yaml (a tuning\n"
    "spec: specs/tuning/<target>.yaml), keeping the entries of the families\n"
    "not tuned in this run.  A family whose fastest passing configuration is\n"
    "the planner's own, or beats it by no more than the margin (timing noise:\n"
    "the best of many single timings is biased low), gets no entry.  Before it\n"
    "is checked (with --check-all, after), a configuration that beats the\n"
    "planner's is timed again, alone, by turns with the planner's (one run of\n"
    "all has the clock of its moment: a GPU's clock wanders over a long run),\n"
    "and must still beat it by the margin; the entry's times are those runs'\n"
    "medians, and its provenance says so.  The spec is rewritten only if its\n"
    "content changes; on any error it is left as it was.  Needs a GPU.\n"
    "\n"
    "options:\n"
    "  -t, --target NAME    compile the candidates of SPEC... for this target first\n"
    "  -f, --filter GLOB    with --target: only instances whose names match (repeatable)\n"
    "  -m, --manifest FILE  the gate's manifest (build/candidates/kernels/manifest.json)\n"
    "  -o, --out FILE       the tuning spec to write, merged when it exists (with\n"
    "                       --target, default specs/tuning/NAME.yaml)\n"
    "  -k, --kernels DIR    the compiled kernels (default: the manifest's folder)\n"
    "      --harness PATH   test_decode_attn (default: build/gpu/test_decode_attn)\n"
    "      --rmsnorm-harness PATH\n"
    "                       test_rmsnorm (default: test_rmsnorm in --harness's folder)\n"
    "      --mla-harness PATH\n"
    "                       test_mla_decode (default: test_mla_decode in --harness's folder)\n"
    "      --gemm-harness PATH\n"
    "                       test_gemm (default: test_gemm in --harness's folder)\n"
    "      --mla-block-harness PATH\n"
    "                       test_mla_block (default: test_mla_block in --harness's folder)\n"
    "      --reduce-harness PATH\n"
    "                       test_overlap_reduce (default: test_overlap_reduce in --harness's\n"
    "                       folder)\n"
    "      --work DIR       timings and logs (default: the kernels folder; with\n"
    "                       --target, build/tune/NAME)\n"
    "      --top N          configurations checked at most per family (default 3)\n"
    "      --margin PCT     how much faster than the planner's a configuration must\n"
    "                       be to replace it (default 1)\n"
    "      --confirm N      runs each of the winner and the planner's choice\n"
    "                       alone, by turns, before choosing (default 3; 0: the\n"
    "                       run of all decides)\n"
    "      --check-all      check every configuration timed (each in a harness run\n"
    "                       of its own), not only the fastest in order: those that\n"
    "                       fail are named and not chosen, and the planner's own\n"
    "                       failing is an error\n"
    "      --commit REV     the kernels' revision, passed to every timing run (the\n"
    "                       harness's --commit: its JSON's commit and so each\n"
    "                       entry's provenance; default: the harness's FG_COMMIT)\n"
    "  -h, --help           this text\n";

/* ---- what differs between the kinds of family ---- */

static void ring_config(json_object *params, fg_tuning_entry *e)
{
    e->threads = (uint32_t)fg_json_int(params, "threads");
    e->stage_bytes = (uint32_t)fg_json_int(params, "stage_bytes");
    e->stages = (uint32_t)fg_json_int(params, "stages");
    e->in_flight = (uint32_t)fg_json_int(params, "inflight");
    /* absent before the W_o limit existed: as in_flight (0) */
    const long long w = fg_json_int(params, "inflight3");
    e->in_flight_wo = w > 0 && (uint32_t)w != e->in_flight ? (uint32_t)w : 0;
}

static void ring_render(fg_strbuf *sb, const fg_tuning_entry *e)
{
    fg_sb_printf(sb, "      stage_bytes: %u\n      stages: %u\n      in_flight: %u\n",
                 e->stage_bytes, e->stages, e->in_flight);
    if (e->in_flight_wo)
        fg_sb_printf(sb, "      in_flight_wo: %u\n", e->in_flight_wo);
}

static void rmsnorm_config(json_object *params, fg_tuning_entry *e)
{
    e->threads = (uint32_t)fg_json_int(params, "threads");
    e->cache_x = fg_json_int(params, "cache_x") == 1;
}

static void rmsnorm_render(fg_strbuf *sb, const fg_tuning_entry *e)
{
    fg_sb_printf(sb, "      cache_x: %s\n", e->cache_x ? "true" : "false");
}

static void mla_config(json_object *params, fg_tuning_entry *e)
{
    e->threads = (uint32_t)fg_json_int(params, "threads");
    e->heads_per_block = (uint32_t)fg_json_int(params, "heads_per_block");
    e->stages = (uint32_t)fg_json_int(params, "stages");
    e->cluster = (uint32_t)fg_json_int(params, "cluster");
    e->clusters = (uint32_t)fg_json_int(params, "clusters");
}

static void mla_render(fg_strbuf *sb, const fg_tuning_entry *e)
{
    fg_sb_printf(sb, "      heads_per_block: %u\n      stages: %u\n      cluster: %u\n"
                     "      clusters: %u\n",
                 e->heads_per_block, e->stages, e->cluster, e->clusters);
}

static void grid_config(json_object *params, fg_tuning_entry *e)
{
    e->threads = (uint32_t)fg_json_int(params, "threads");
    e->step_cols = (uint32_t)fg_json_int(params, "step_cols");
    e->slices_qkv = (uint32_t)fg_json_int(params, "slices_qkv");
    e->slices_o = (uint32_t)fg_json_int(params, "slices_o");
    e->key_rounds = (uint32_t)fg_json_int(params, "unroll");
}

static void grid_render(fg_strbuf *sb, const fg_tuning_entry *e)
{
    fg_sb_printf(sb, "      step_cols: %u\n      slices_qkv: %u\n      slices_o: %u\n"
                     "      key_rounds: %u\n",
                 e->step_cols, e->slices_qkv, e->slices_o, e->key_rounds);
}

static void gemm_config(json_object *params, fg_tuning_entry *e)
{
    e->threads = (uint32_t)fg_json_int(params, "threads");
    e->stages = (uint32_t)fg_json_int(params, "stages");
    e->c_rounds = (uint32_t)fg_json_int(params, "c_rounds");
    e->group_m = (uint32_t)fg_json_int(params, "group_m");
}

static void gemm_render(fg_strbuf *sb, const fg_tuning_entry *e)
{
    fg_sb_printf(sb, "      stages: %u\n      c_rounds: %u\n      group_m: %u\n", e->stages,
                 e->c_rounds, e->group_m);
}

static void reduce_config(json_object *params, fg_tuning_entry *e)
{
    e->threads = (uint32_t)fg_json_int(params, "threads");
    e->blocks_per_cu = (uint32_t)fg_json_int(params, "blocks_per_cu");
}

static void reduce_render(fg_strbuf *sb, const fg_tuning_entry *e)
{
    fg_sb_printf(sb, "      blocks_per_cu: %u\n", e->blocks_per_cu);
}

static void block_config(json_object *params, fg_tuning_entry *e)
{
    e->threads = (uint32_t)fg_json_int(params, "threads");
    e->slots = (uint32_t)fg_json_int(params, "slots");
    e->piece_rows = (uint32_t)fg_json_int(params, "piece_rows");
    e->chunk_rows = (uint32_t)fg_json_int(params, "chunk_rows");
    e->mma_proj = fg_json_int(params, "mma_proj") == 1;
    e->absorb_apart = fg_json_int(params, "absorb_apart") > 0;   /* (the blocks kept apart) */
}

/* test_mla_block times B = 1 and B_max, once where B_max is 1 */
static unsigned block_points(json_object *params)
{
    return fg_json_int(params, "bmax") == 1 ? 1 : 2;
}

static void block_render(fg_strbuf *sb, const fg_tuning_entry *e)
{
    fg_sb_printf(sb, "      slots: %u\n      piece_rows: %u\n      chunk_rows: %u\n"
                     "      mma_proj: %s\n      absorb_apart: %s\n",
                 e->slots, e->piece_rows, e->chunk_rows, e->mma_proj ? "true" : "false",
                 e->absorb_apart ? "true" : "false");
}

/* One row per kind of family (spec.h, fg_tuning_kind): its harness, the
 * point its bench cases are timed at, how a configuration reads from the
 * manifest's params and what it adds to a tuning entry after `threads`.
 * The harnesses share a command line (--kernels, --manifest, --only; --bench
 * --quick --no-baseline --json to time) and the cases' shape (report.h,
 * fg_bench_case); each logs one line per point timed, with " POINT=" in it. */
typedef struct kind_desc {
    const char *what;         /* in messages and file names */
    const char *point;        /* "S", "rows", "M" or "B" */
    const char *points;       /* those of a --quick run, in words */
    unsigned npoints;         /* per configuration in a --quick run (at most) */
    /* NULL, or the points of the configuration of these params (fewer than npoints) */
    unsigned (*points_of)(json_object *params);
    void (*config)(json_object *params, fg_tuning_entry *e);
    void (*render)(fg_strbuf *sb, const fg_tuning_entry *e);
    const char *point_field;  /* the case's field of the point; NULL: its S or shape.rows */
} kind_desc;

#define NKINDS (FG_TUNE_REDUCE + 1)
static const kind_desc KINDS[NKINDS] = {
    [FG_TUNE_RING] = {"decode_attn", "S", "S = 1K and S_max", 2, NULL, ring_config, ring_render,
                      NULL},
    [FG_TUNE_RMSNORM] = {"rmsnorm", "rows", "rows = 1 and 4096", 2, NULL, rmsnorm_config,
                         rmsnorm_render, NULL},
    [FG_TUNE_MLA] = {"mla_decode", "S", "S = 1K and S_max", 2, NULL, mla_config, mla_render, NULL},
    /* the grid form: the decode family's harness (the same program as the ring's) */
    [FG_TUNE_GRID] = {"decode_attn", "S", "S = 1K and S_max", 2, NULL, grid_config, grid_render,
                      NULL},
    /* the overlap family's GEMM: test_gemm, beside cuBLASLt's untimed (--no-baseline) */
    [FG_TUNE_GEMM] = {"gemm", "M", "M = 4096 and 16384", 2, NULL, gemm_config, gemm_render,
                      NULL},
    /* the whole MLA block: test_mla_block, without its unfused baseline */
    [FG_TUNE_MLA_BLOCK] = {"mla_block", "B", "B = 1 and B_max at S = 4K", 2, block_points,
                           block_config, block_render, "batch"},
    /* the overlap family's reduction: test_overlap_reduce, its point the
     * 16-byte vectors of a rank's block */
    [FG_TUNE_REDUCE] = {"overlap_reduce", "vecs", "256K and 4M vectors a block", 2, NULL,
                        reduce_config, reduce_render, "vecs"},
};

/* ---- the run ---- */

#define MAX_POINTS 16   /* distinct points a family's timings name in its provenance */

typedef struct cfg {
    const char *name;          /* borrowed from the manifest */
    fg_tuning_entry conf;      /* the configuration (threads and the kind's fields) */
    bool model;                /* the planner's own choice */
    double us;                 /* sum of the medians timed; 0: not timed */
    unsigned points;           /* how many points were timed (a failed one is left out) */
    unsigned expect;           /* how many its harness run times */
} cfg;

typedef struct family {
    char key[FG_NAME_MAX];
    fg_tuning_kind kind;
    cfg *cfgs;
    size_t n;
    double seen[MAX_POINTS];   /* the points its configurations were timed at, in order */
    unsigned nseen;
    fg_strbuf measured;        /* its entry's provenance: GPU, its own points, commit */
} family;

#define MAX_FILTERS 16

typedef struct tune {
    const char *manifest_path, *out, *kernels, *work;
    const char *compile_target;          /* --target: compile the candidates of specs first */
    const char *filters[MAX_FILTERS];
    unsigned nfilters;
    char *const *specs;                  /* with --target */
    int nspecs;
    const char *harness[NKINDS];
    unsigned top;
    double margin;             /* fraction */
    unsigned confirm;          /* runs each, alone and by turns, of a winner and the planner's */
    bool check_all;            /* check every configuration timed, not the fastest in order */
    const char *commit;        /* --commit: the kernels' revision for the timing runs */
    json_object *manifest;
    char target[FG_SPEC_NAME_MAX + 1];
    family *fams;
    size_t nfam;
    fg_diag d;
} tune;

static family *family_of(tune *t, const char *key, fg_tuning_kind kind)
{
    for (size_t i = 0; i < t->nfam; i++)
        if (strcmp(t->fams[i].key, key) == 0)
            return &t->fams[i];
    t->fams = realloc(t->fams, (t->nfam + 1) * sizeof *t->fams);
    if (!t->fams)
        fg_out_of_memory();
    family *f = &t->fams[t->nfam++];
    *f = (family){.kind = kind};
    snprintf(f->key, sizeof f->key, "%s", key);
    return f;
}

/* The tunable instances of the manifest, by family: every one of a kind
 * tune knows (by its tuning family's name), compiled and gated, not
 * discarded, not a deterministic twin (the same code). */
static int collect(tune *t)
{
    json_object *insts = fg_json_get(t->manifest, "instances");
    if (!insts || !json_object_is_type(insts, json_type_array)) {
        fg_error_at(&t->d, t->manifest_path, 0, 0, "no \"instances\" array; expected a manifest");
        return -1;
    }
    for (size_t i = 0; i < json_object_array_length(insts); i++) {
        json_object *in = json_object_array_get_idx(insts, i);
        const char *name = fg_json_str(in, "name"), *key = fg_json_str(in, "tuning_family");
        json_object *params = fg_json_get(in, "params"), *targets = fg_json_get(in, "targets");
        const fg_tuning_kind kind = key ? fg_tuning_kind_of(key) : FG_TUNE_NONE;
        if (!name || kind == FG_TUNE_NONE || !params ||
            fg_json_int(params, "deterministic") > 0 || fg_json_get(in, "discarded"))
            continue;
        if (!fg_json_get(in, "resources")) {
            fg_error_at(&t->d, t->manifest_path, 0, 0, "%s has no compiler figures; expected "
                        "the gate's manifest (make candidates)", name);
            return -1;
        }
        const char *target = targets && json_object_array_length(targets) == 1
                                 ? json_object_get_string(json_object_array_get_idx(targets, 0))
                                 : NULL;
        if (!target || (*t->target && strcmp(target, t->target))) {
            fg_error_at(&t->d, t->manifest_path, 0, 0, "%s: expected every instance built for "
                        "one and the same target", name);
            return -1;
        }
        snprintf(t->target, sizeof t->target, "%s", target);
        const bool candidate = fg_json_true(in, "candidate");
        if (!candidate && fg_json_true(in, "tuned")) {
            fg_error_at(&t->d, t->manifest_path, 0, 0, "%s is a tuned configuration; generate "
                        "the candidates without a tuning spec, so that the planner's own "
                        "choice is among them", name);
            return -1;
        }
        family *f = family_of(t, key, kind);
        f->cfgs = realloc(f->cfgs, (f->n + 1) * sizeof *f->cfgs);
        if (!f->cfgs)
            fg_out_of_memory();
        cfg *c = &f->cfgs[f->n++];
        *c = (cfg){.name = name, .model = !candidate,
                   .expect = KINDS[kind].points_of ? KINDS[kind].points_of(params)
                                                   : KINDS[kind].npoints};
        KINDS[kind].config(params, &c->conf);
    }
    size_t tunable = 0;
    for (size_t i = 0; i < t->nfam; i++) {
        size_t models = 0;
        for (size_t k = 0; k < t->fams[i].n; k++)
            models += t->fams[i].cfgs[k].model;
        if (models != 1) {
            fg_error_at(&t->d, t->manifest_path, 0, 0, "family %s has %zu planner's choices; "
                        "expected exactly one beside its candidates", t->fams[i].key, models);
            return -1;
        }
        tunable += t->fams[i].n > 1;
    }
    if (!tunable) {
        fg_error_at(&t->d, t->manifest_path, 0, 0, "no family with candidates; expected the "
                    "manifest of `make candidates`");
        return -1;
    }
    return 0;
}

/* Progress of a timing run: the points the harness has logged so far (one
 * line with " POINT=" each), reported when the count moves. */
typedef struct progress {
    const char *log;
    char marker[16];      /* " S=", " rows=" */
    long offset;          /* how far the log has been read (its size when the run began) */
    unsigned timed, reported, expected;
} progress;

/* Counts the whole lines the log gained since the last call; a line still
 * being written is read again next time. */
static void report_progress(void *ctx)
{
    progress *p = ctx;
    FILE *f = fopen(p->log, "r");
    if (!f)
        return;
    char line[4096];
    if (fseek(f, p->offset, SEEK_SET) == 0)
        while (fgets(line, sizeof line, f)) {
            const size_t len = strlen(line);
            if (line[len - 1] != '\n' && len + 1 < sizeof line)
                break;   /* unfinished */
            p->offset += (long)len;
            p->timed += strstr(line, p->marker) != NULL;
        }
    fclose(f);
    if (p->timed != p->reported) {
        fprintf(stderr, "fusegen tune:   %u of %u points timed\n", p->timed, p->expected);
        p->reported = p->timed;
    }
}

/* One run of a kind's harness over the named instances (--bench ... when
 * json is set, with `expected` points, if any, reported from the log as
 * they come). */
static int harness(tune *t, fg_tuning_kind kind, const char *names, const char *json,
                   const char *log, unsigned expected)
{
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)t->harness[kind];
    argv[n++] = "--kernels";
    argv[n++] = (char *)t->kernels;
    argv[n++] = "--manifest";
    argv[n++] = (char *)t->manifest_path;
    argv[n++] = "--only";
    argv[n++] = (char *)names;
    if (json) {
        argv[n++] = "--bench";
        argv[n++] = "--quick";
        argv[n++] = "--no-baseline";
        argv[n++] = "--json";
        argv[n++] = (char *)json;
        if (t->commit) {
            argv[n++] = "--commit";
            argv[n++] = (char *)t->commit;
        }
    }
    argv[n] = NULL;
    if (!expected)
        return fg_run_logged(argv, log);
    struct stat st;
    progress p = {.log = log, .offset = stat(log, &st) == 0 ? (long)st.st_size : 0,
                  .expected = expected};
    snprintf(p.marker, sizeof p.marker, " %s=", KINDS[kind].point);
    return fg_run_logged_progress(argv, log, report_progress, &p);
}

static cfg *find_cfg(tune *t, const char *name, family **fam)
{
    for (size_t i = 0; i < t->nfam; i++)
        for (size_t k = 0; k < t->fams[i].n; k++)
            if (strcmp(t->fams[i].cfgs[k].name, name) == 0) {
                *fam = &t->fams[i];
                return &t->fams[i].cfgs[k];
            }
    return NULL;
}

/* One case of a timing run, its point read from the kind's field. */
static void read_case(json_object *one, const kind_desc *kd, fg_bench_case *c)
{
    fg_bench_case_read(one, c);
    if (kd->point_field)
        c->point = fg_json_num(one, kd->point_field);
}

/* Times every configuration of the kind's families with candidates, one
 * run of its harness (none when it has no such family). */
static int time_kind(tune *t, fg_tuning_kind kind)
{
    const kind_desc *kd = &KINDS[kind];
    fg_strbuf names = {0}, json = {0}, log = {0};
    size_t count = 0;
    unsigned expected = 0;   /* the points the run logs (fewer where S_max is 1K) */
    for (size_t i = 0; i < t->nfam; i++)
        for (size_t k = 0; t->fams[i].kind == kind && t->fams[i].n > 1 && k < t->fams[i].n;
             k++, count++) {
            fg_sb_printf(&names, "%s%s", names.len ? "," : "", t->fams[i].cfgs[k].name);
            expected += t->fams[i].cfgs[k].expect;
        }
    if (!count) {
        fg_sb_free(&names);
        return 0;
    }
    fg_sb_printf(&json, "%s/tune-bench-%s.json", t->work, kd->what);
    fg_sb_printf(&log, "%s/tune.log", t->work);
    fprintf(stderr, "fusegen tune: timing %zu %s configurations (%s; log %s)\n", count, kd->what,
            kd->points, fg_sb_str(&log));
    remove(fg_sb_str(&json));
    int rc = harness(t, kind, fg_sb_str(&names), fg_sb_str(&json), fg_sb_str(&log), expected);
    /* a harness exits non-zero when some case failed its checks: those are
     * left out of (or fail) the check runs below, the rest still count */
    json_object *doc = rc >= 0 ? json_object_from_file(fg_sb_str(&json)) : NULL;
    json_object *cases = fg_json_get(doc, "cases");
    if (rc > 0 && cases)
        fprintf(stderr, "fusegen tune: the %s harness reported failures (exit %d; %s has "
                        "them); their configurations are not chosen\n",
                kd->what, rc, fg_sb_str(&log));
    if (rc < 0 || !cases || !json_object_is_type(cases, json_type_array)) {
        fg_error(&t->d, "the %s harness's timing run failed (exit %d; %s has the output)",
                 kd->what, rc, fg_sb_str(&log));
        rc = -1;
    } else {
        rc = 0;
        /* this kind's run's GPU and commit (the harness's, where it says: FG_COMMIT) */
        const char *gpu = fg_json_str(fg_json_get(doc, "gpu"), "name");
        const char *commit = fg_json_str(doc, "commit");
        if (commit && !strcmp(commit, "unknown"))
            commit = NULL;
        /* each family's points timed, each once, in the order they first
         * appear (a configuration with a failed case has fewer; families of
         * one run may have different S_max) */
        for (size_t i = 0; i < json_object_array_length(cases); i++) {
            fg_bench_case c;
            read_case(json_object_array_get_idx(cases, i), kd, &c);
            family *f = NULL;
            cfg *k = c.instance ? find_cfg(t, c.instance, &f) : NULL;
            if (!k || !(c.median_us > 0))
                continue;
            k->us += c.median_us;
            k->points++;
            unsigned j = 0;
            while (j < f->nseen && f->seen[j] != c.point)
                j++;
            if (j == f->nseen && f->nseen < MAX_POINTS)
                f->seen[f->nseen++] = c.point;
        }
        /* an entry's provenance (spec.h): GPU, its family's points, commit */
        for (size_t i = 0; i < t->nfam; i++) {
            family *f = &t->fams[i];
            if (f->kind != kind || !f->nseen)
                continue;
            fg_sb_printf(&f->measured, "%s, %s = ", gpu ? gpu : "GPU", kd->point);
            for (unsigned j = 0; j < f->nseen; j++)
                fg_sb_printf(&f->measured, "%s%.0f", j ? " + " : "", f->seen[j]);
            fg_sb_puts(&f->measured, ", ");
            if (commit)
                fg_sb_printf(&f->measured, "commit %s, ", commit);
            fg_sb_puts(&f->measured, "fusegen tune");
        }
    }
    json_object_put(doc);
    fg_sb_free(&names);
    fg_sb_free(&json);
    fg_sb_free(&log);
    return rc;
}

/* A configuration timed in a run of its harness with only it: the sum of
 * its points' medians; 0 when the run timed fewer points than the run of
 * all did (a harness exits non-zero when a check failed: its timings still
 * count, as in the run of all). */
static double time_alone(tune *t, fg_tuning_kind kind, const cfg *c)
{
    const kind_desc *kd = &KINDS[kind];
    fg_strbuf json = {0}, log = {0};
    fg_sb_printf(&json, "%s/tune-alone-%s.json", t->work, kd->what);
    fg_sb_printf(&log, "%s/tune.log", t->work);
    remove(fg_sb_str(&json));
    json_object *doc = harness(t, kind, c->name, fg_sb_str(&json), fg_sb_str(&log), 0) >= 0
                           ? json_object_from_file(fg_sb_str(&json))
                           : NULL;
    json_object *cases = fg_json_get(doc, "cases");
    double us = 0;
    unsigned points = 0;
    for (size_t i = 0; cases && json_object_is_type(cases, json_type_array) &&
                       i < json_object_array_length(cases);
         i++) {
        fg_bench_case k;
        read_case(json_object_array_get_idx(cases, i), kd, &k);
        if (k.instance && !strcmp(k.instance, c->name) && k.median_us > 0)
            us += k.median_us, points++;
    }
    json_object_put(doc);
    fg_sb_free(&json);
    fg_sb_free(&log);
    return points == c->points ? us : 0;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)   /* sorts v */
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_CONFIRM 15

/* The candidate and the planner's choice each timed alone t->confirm times,
 * by turns, the planner's first in the first turn and then the other way
 * about (what a warming GPU times first runs cooler): their medians.  The
 * configuration whose run timed short (cand or model), or NULL. */
static const cfg *confirm(tune *t, fg_tuning_kind kind, const cfg *cand, const cfg *model,
                          double *cand_us, double *model_us)
{
    double cu[MAX_CONFIRM], mu[MAX_CONFIRM];
    for (unsigned r = 0; r < t->confirm; r++) {
        const cfg *first = r % 2 == 0 ? model : cand, *second = first == model ? cand : model;
        const double a = time_alone(t, kind, first);
        if (!(a > 0))
            return first;
        const double b = time_alone(t, kind, second);
        if (!(b > 0))
            return second;
        mu[r] = first == model ? a : b;
        cu[r] = first == model ? b : a;
    }
    *cand_us = median(cu, t->confirm);
    *model_us = median(mu, t->confirm);
    return NULL;
}

/* --check-all: every configuration of the family that was timed, checked
 * against the reference in a harness run of its own; one that fails is left
 * out (as if not timed).  -1 when the planner's own choice fails. */
static int check_every(tune *t, family *f)
{
    fg_strbuf log = {0};
    fg_sb_printf(&log, "%s/tune.log", t->work);
    unsigned checked = 0, passed = 0;
    bool model_failed = false;
    fprintf(stderr, "fusegen tune: checking every configuration of %s\n", f->key);
    for (size_t k = 0; k < f->n; k++) {
        cfg *c = &f->cfgs[k];
        if (!(c->us > 0))
            continue;
        checked++;
        if (harness(t, f->kind, c->name, NULL, fg_sb_str(&log), 0) == 0) {
            passed++;
            continue;
        }
        fprintf(stderr, "fusegen tune:   %s failed its checks: not chosen\n", c->name);
        c->us = 0;
        model_failed |= c->model;
    }
    fprintf(stderr, "fusegen tune: %s: %u of %u configurations passed their checks\n", f->key,
            passed, checked);
    if (model_failed)
        fg_error(&t->d, "%s: the planner's own choice failed its checks (%s has the output)",
                 f->key, fg_sb_str(&log));
    fg_sb_free(&log);
    return model_failed ? -1 : 0;
}

static int by_time(const void *a, const void *b)
{
    const cfg *x = a, *y = b;
    if (!x->us != !y->us)
        return x->us ? -1 : 1;   /* the untimed last */
    return x->us < y->us ? -1 : x->us > y->us ? 1 : strcmp(x->name, y->name);
}

/* The tuning entry of one family: its fastest configuration that passes the
 * checks, or none (the planner's own won, or nothing was timed).  -1: no
 * configuration passed. */
static int choose(tune *t, family *f, fg_tuning_entry *e, bool *have)
{
    *have = false;
    double model = 0, worst = 0;
    const cfg *model_cfg = NULL;
    unsigned timed = 0, full = 0;
    /* a configuration with a point left out (it failed there) is not timed:
     * its sum would be short and rank it first */
    for (size_t k = 0; k < f->n; k++)
        full = f->cfgs[k].points > full ? f->cfgs[k].points : full;
    for (size_t k = 0; k < f->n; k++)
        if (f->cfgs[k].us > 0 && f->cfgs[k].points < full) {
            fprintf(stderr, "fusegen tune: %s: %u of %u points timed: not chosen\n",
                    f->cfgs[k].name, f->cfgs[k].points, full);
            f->cfgs[k].us = 0;
        }
    for (size_t k = 0; k < f->n; k++)
        if (f->cfgs[k].model && !(f->cfgs[k].us > 0)) {
            fg_error(&t->d, "%s: the planner's choice was not timed; see the log", f->key);
            return -1;
        }
    if (t->check_all && check_every(t, f))
        return -1;
    for (size_t k = 0; k < f->n; k++) {
        if (f->cfgs[k].model)
            model = f->cfgs[k].us;
        if (f->cfgs[k].us > 0) {
            timed++;
            worst = fmax(worst, f->cfgs[k].us);
        }
    }
    qsort(f->cfgs, f->n, sizeof *f->cfgs, by_time);
    for (size_t k = 0; k < f->n; k++)
        if (f->cfgs[k].model)
            model_cfg = &f->cfgs[k];
    fg_strbuf log = {0};
    fg_sb_printf(&log, "%s/tune.log", t->work);
    for (unsigned k = 0; k < t->top && k < f->n && f->cfgs[k].us > 0; k++) {
        const cfg *c = &f->cfgs[k];
        if (!c->model && c->us > model * (1 - t->margin)) {
            fprintf(stderr, "fusegen tune: %s: %.2f us (%s) against the planner's %.2f is within "
                            "the %.3g%% margin: the planner's choice stands\n",
                    f->key, c->us, c->name, model, 100 * t->margin);
            fg_sb_free(&log);
            return 0;
        }
        double us = c->us, model_us = model;
        if (!c->model && t->confirm) {
            fprintf(stderr, "fusegen tune: timing %s and the planner's choice alone, by turns "
                            "(%u runs each)\n",
                    c->name, t->confirm);
            const cfg *short_run = confirm(t, f->kind, c, model_cfg, &us, &model_us);
            if (short_run == c) {
                fprintf(stderr, "fusegen tune:   %s timed short alone (%s has the output): not "
                                "chosen\n",
                        c->name, fg_sb_str(&log));
                continue;
            }
            if (short_run) {
                fg_error(&t->d, "%s: the planner's choice timed short alone (%s has the output)",
                         f->key, fg_sb_str(&log));
                fg_sb_free(&log);
                return -1;
            }
            if (us > model_us * (1 - t->margin)) {
                fprintf(stderr, "fusegen tune: %s: %.2f us (%s) against the planner's %.2f, "
                                "alone by turns, is within the %.3g%% margin: the planner's "
                                "choice stands\n",
                        f->key, us, c->name, model_us, 100 * t->margin);
                fg_sb_free(&log);
                return 0;
            }
        }
        if (!t->check_all) {   /* (with --check-all, every one left has passed) */
            fprintf(stderr, "fusegen tune: checking %s (%.2f us)\n", c->name, us);
            if (harness(t, f->kind, c->name, NULL, fg_sb_str(&log), 0) != 0) {
                fprintf(stderr, "fusegen tune:   failed its checks: not chosen\n");
                continue;
            }
        }
        fprintf(stderr, "fusegen tune: %s: %.2f us against the planner's %.2f (worst %.2f of "
                        "%u)%s\n",
                f->key, us, model_us, worst, timed,
                c->model ? ": the planner's choice stands" : "");
        fg_sb_free(&log);
        if (c->model)
            return 0;
        *have = true;
        *e = c->conf;
        e->family = f->key;
        if (t->confirm)   /* the entry's times are the runs alone's */
            fg_sb_printf(&f->measured, ", confirmed alone by turns (%u runs each)", t->confirm);
        e->measured = (char *)fg_sb_str(&f->measured);
        e->tuned_us = us, e->model_us = model_us, e->worst_us = worst, e->candidates = timed;
        return 0;
    }
    fg_sb_free(&log);
    fg_error(&t->d, "%s: none of the %u fastest configurations passed its checks", f->key,
             t->top);
    return -1;
}

static int by_family(const void *a, const void *b)
{
    return strcmp(((const fg_tuning_entry *)a)->family, ((const fg_tuning_entry *)b)->family);
}

/* The tuning spec's text: its entries sorted by family, one format. */
static void render(fg_strbuf *sb, const char *target, fg_tuning_entry *es, size_t n)
{
    qsort(es, n, sizeof *es, by_family);
    fg_sb_printf(sb,
                 "# Measured configurations for target %s, written by `fusegen tune` (rerun it\n"
                 "# rather than editing).  `fusegen generate` uses an entry's configuration in\n"
                 "# place of the planner's for its instance family (an instance name up to its\n"
                 "# configuration part); `fusegen explain` says which each instance got.  Times\n"
                 "# are sums of the medians over the points measured, worst_us from one run of\n"
                 "# all the family's configurations, tuned_us and model_us from that run or,\n"
                 "# where `measured` says \"confirmed alone by turns\", the medians of runs of\n"
                 "# the two alone.\n"
                 "schema_version: 1\n"
                 "tuning:\n"
                 "  target: %s\n"
                 "  entries:%s\n",
                 target, target, n ? "" : " []");
    for (size_t i = 0; i < n; i++) {
        const fg_tuning_entry *e = &es[i];
        fg_sb_printf(sb, "    - family: %s\n      threads: %u\n", e->family, e->threads);
        KINDS[fg_tuning_kind_of(e->family)].render(sb, e);
        fg_sb_printf(sb,
                     "      tuned_us: %.2f\n"
                     "      model_us: %.2f\n"
                     "      worst_us: %.2f\n"
                     "      candidates: %u\n"
                     "      measured: ",
                     e->tuned_us, e->model_us, e->worst_us, e->candidates);
        fg_sb_yaml_quoted(sb, e->measured);
        fg_sb_puts(sb, "\n");
    }
}

/* The new entries merged over those of `out` (when it exists) and written. */
static int write_spec(tune *t, fg_tuning_entry *fresh, size_t nfresh)
{
    fg_spec *old = NULL;
    if (access(t->out, F_OK) == 0) {
        old = fg_spec_load(t->out, &t->d);
        if (!old)
            return -1;
        if (old->kind != FG_SPEC_TUNING || strcmp(old->tuning->target, t->target)) {
            fg_error_at(&t->d, t->out, 0, 0, "expected the tuning spec of target '%s'",
                        t->target);
            fg_spec_free(old);
            return -1;
        }
    }
    const size_t nold = old ? old->tuning->entries_count : 0;
    fg_tuning_entry *all = calloc(nold + nfresh + 1, sizeof *all);
    if (!all)
        fg_out_of_memory();
    size_t n = 0;
    for (size_t i = 0; i < nfresh; i++)
        all[n++] = fresh[i];
    for (size_t i = 0; i < nold; i++) {
        const fg_tuning_entry *e = &old->tuning->entries[i];
        bool retuned = false;
        for (size_t k = 0; k < t->nfam; k++)
            retuned |= strcmp(t->fams[k].key, e->family) == 0 && t->fams[k].n > 1;
        if (!retuned)
            all[n++] = *e;
    }
    fg_strbuf text = {0};
    render(&text, t->target, all, n);
    bool changed;
    const int rc = fg_spec_write_checked(t->out, fg_sb_str(&text), text.len, &changed, &t->d);
    if (!rc)
        fprintf(stderr, "fusegen tune: %s %s (%zu entries)\n", t->out,
                changed ? "written" : "unchanged", n);
    fg_sb_free(&text);
    free(all);
    fg_spec_free(old);
    return rc;
}

/* Names and paths --target passes through Make and its shell: a glob of
 * instance-name characters, a path of file-name ones. */
static bool chars_in(const char *s, const char *extra)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
            return false;
    return true;
}
#define GLOB_CHARS "._-*?[]"
#define PATH_CHARS "/._-+"

/* The --target form's arguments: a target name, specs, no --manifest or
 * --kernels (it compiles into --work), names Make can take. */
static int target_args(tune *t, int argc, char **argv)
{
    const char *why = NULL, *bad = NULL;
    if (t->manifest_path)
        why = "--target compiles its own candidates: give it or --manifest, not both";
    else if (t->kernels)
        why = "--kernels is --manifest's folder; --target compiles into --work/kernels";
    else if (optind == argc)
        why = "--target needs the SPEC... whose candidates it compiles";
    else if (!fg_spec_name_ok(t->compile_target))
        why = "--target: expected a target name (lowercase letters, digits, '.', '_', '-')",
        bad = t->compile_target;
    else if (t->work && !chars_in(t->work, PATH_CHARS))
        why = "--work passes through Make: letters, digits and " PATH_CHARS " only", bad = t->work;
    for (unsigned i = 0; !why && i < t->nfilters; i++)
        if (!chars_in(t->filters[i], GLOB_CHARS))
            why = "--filter: a glob of letters, digits and " GLOB_CHARS " only", bad = t->filters[i];
    for (int i = optind; !why && i < argc; i++)
        if (!chars_in(argv[i], PATH_CHARS))
            why = "spec paths pass through Make: letters, digits and " PATH_CHARS " only",
            bad = argv[i];
    if (why) {
        fprintf(stderr, "fusegen tune: error: %s%s%s%s\n", why, bad ? " ('" : "", bad ? bad : "",
                bad ? "')" : "");
        return 2;
    }
    t->specs = argv + optind;
    t->nspecs = argc - optind;
    return 0;
}

static int parse_args(int argc, char **argv, tune *t)
{
    static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                         {"filter", required_argument, NULL, 'f'},
                                         {"manifest", required_argument, NULL, 'm'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"kernels", required_argument, NULL, 'k'},
                                         {"harness", required_argument, NULL, 'H'},
                                         {"rmsnorm-harness", required_argument, NULL, 'R'},
                                         {"mla-harness", required_argument, NULL, 'L'},
                                         {"gemm-harness", required_argument, NULL, 'G'},
                                         {"mla-block-harness", required_argument, NULL, 'B'},
                                         {"reduce-harness", required_argument, NULL, 'D'},
                                         {"work", required_argument, NULL, 'w'},
                                         {"top", required_argument, NULL, 'n'},
                                         {"margin", required_argument, NULL, 'M'},
                                         {"confirm", required_argument, NULL, 'C'},
                                         {"check-all", no_argument, NULL, 'A'},
                                         {"commit", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    t->harness[FG_TUNE_RING] = "build/gpu/test_decode_attn";
    t->top = 3;
    t->margin = 0.01;
    t->confirm = 3;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:f:m:o:k:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': t->compile_target = optarg; break;
        case 'f':
            if (t->nfilters == MAX_FILTERS) {
                fprintf(stderr, "fusegen tune: error: more than %d --filter globs\n", MAX_FILTERS);
                return 2;
            }
            t->filters[t->nfilters++] = optarg;
            break;
        case 'm': t->manifest_path = optarg; break;
        case 'o': t->out = optarg; break;
        case 'k': t->kernels = optarg; break;
        case 'H': t->harness[FG_TUNE_RING] = optarg; break;
        case 'R': t->harness[FG_TUNE_RMSNORM] = optarg; break;
        case 'L': t->harness[FG_TUNE_MLA] = optarg; break;
        case 'G': t->harness[FG_TUNE_GEMM] = optarg; break;
        case 'B': t->harness[FG_TUNE_MLA_BLOCK] = optarg; break;
        case 'D': t->harness[FG_TUNE_REDUCE] = optarg; break;
        case 'w': t->work = optarg; break;
        case 'n': {
            uint64_t v;
            if (!fg_parse_decimal(optarg, strlen(optarg), 1, 100, &v)) {
                fprintf(stderr, "fusegen tune: error: --top '%s'; expected 1 to 100\n", optarg);
                return 2;
            }
            t->top = (unsigned)v;
            break;
        }
        case 'A': t->check_all = true; break;
        case 'c':   /* (it lands in a YAML string and the harness's JSON) */
            if (strlen(optarg) > 64 || !chars_in(optarg, "._+-")) {
                fprintf(stderr, "fusegen tune: error: --commit '%s'; expected 1 to 64 letters, "
                                "digits and ._+-\n", optarg);
                return 2;
            }
            t->commit = optarg;
            break;
        case 'C': {
            uint64_t v;
            if (!fg_parse_decimal(optarg, strlen(optarg), 0, MAX_CONFIRM, &v)) {
                fprintf(stderr, "fusegen tune: error: --confirm '%s'; expected 0 to %d\n",
                        optarg, MAX_CONFIRM);
                return 2;
            }
            t->confirm = (unsigned)v;
            break;
        }
        case 'M': {
            char *end;
            const double v = strtod(optarg, &end);
            if (end == optarg || *end || !(v >= 0 && v <= 50)) {
                fprintf(stderr, "fusegen tune: error: --margin '%s'; expected a percentage "
                                "from 0 to 50\n", optarg);
                return 2;
            }
            t->margin = v / 100;
            break;
        }
        case 'h': fputs(usage, stdout); return 1;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (t->compile_target)
        return target_args(t, argc, argv);
    if (t->nfilters) {
        fprintf(stderr, "fusegen tune: error: --filter selects what --target compiles\n%s", usage);
        return 2;
    }
    if (!t->manifest_path || !t->out || optind != argc) {
        fputs(usage, stderr);
        return 2;
    }
    return 0;
}

/* ---- --target: the candidates generated and compiled first ---- */

/* --target's paths that tune uses after the compilation (freed by the caller). */
typedef struct compile_paths {
    fg_strbuf work, out, manifest;
} compile_paths;

static void compile_paths_free(compile_paths *p)
{
    fg_sb_free(&p->work);
    fg_sb_free(&p->out);
    fg_sb_free(&p->manifest);
}

typedef struct compile_progress {
    const char *gen_manifest, *kbuild;
    time_t start, manifest_time;   /* generate's manifest as last read */
    unsigned shown, selection;
} compile_progress;

/* Kernels (.cubin, .co) in dir written since `start`. */
static unsigned fresh_kernels(const char *dir, time_t start)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return 0;
    unsigned n = 0;
    char path[4096];
    for (struct dirent *e; (e = readdir(dp));) {
        const size_t len = strlen(e->d_name);
        if (!(len > 6 && !strcmp(e->d_name + len - 6, ".cubin")) &&
            !(len > 3 && !strcmp(e->d_name + len - 3, ".co")))
            continue;   /* (logs, the manifest) */
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0 && st.st_mtime >= start)
            n++;
    }
    closedir(dp);
    return n;
}

/* The kernels compiled so far, and (once generate has written its manifest)
 * how many the selection has; up-to-date ones are not compiled again. */
static void compile_tick(void *ctx)
{
    compile_progress *p = ctx;
    struct stat st;
    /* generate rewrites its manifest only when it changes: read it whenever
     * its time moves (an unchanged selection keeps the old one, still right) */
    if (stat(p->gen_manifest, &st) == 0 && st.st_mtime != p->manifest_time) {
        p->manifest_time = st.st_mtime;
        json_object *m = json_object_from_file(p->gen_manifest);
        json_object *insts = fg_json_get(m, "instances");
        if (insts && json_object_is_type(insts, json_type_array))
            p->selection = (unsigned)json_object_array_length(insts);
        json_object_put(m);
    }
    const unsigned done = fresh_kernels(p->kbuild, p->start);
    if (done != p->shown) {
        if (p->selection)
            fprintf(stderr, "fusegen tune: compiled %u kernels (%u in the selection)\n", done,
                    p->selection);
        else
            fprintf(stderr, "fusegen tune: compiled %u kernels\n", done);
        p->shown = done;
    }
}

/* Whether one of the specs is target `name`'s spec, by the name inside it
 * (a spec that does not load is not; make reports it when it runs). */
static bool gives_target(char *const *specs, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        fg_diag quiet;
        fg_diag_init(&quiet, NULL);
        fg_spec *s = fg_spec_load(specs[i], &quiet);
        const bool hit = s && s->kind == FG_SPEC_TARGET && !strcmp(s->target->name, name);
        fg_spec_free(s);
        if (hit)
            return true;
    }
    return false;
}

/* Generates the candidates of t->specs for t->compile_target and compiles
 * them through the gate (mk/kernels.mk); t->manifest_path is then the
 * gate's manifest, t->work and t->out their --target defaults where not
 * given (the paths live in `paths`). */
static void compile_candidates(tune *t, compile_paths *paths)
{
    fg_diag *d = &t->d;
    const char *name = t->compile_target;
    if (access("mk/kernels.mk", R_OK) != 0) {
        fg_error(d, "--target compiles the candidates with mk/kernels.mk, which is not here: "
                    "run fusegen tune from a fusegen checkout, or give --manifest of "
                    "candidates compiled with `make candidates`");
        return;
    }
    char self[4096];
    if (!fg_self_exe(self, sizeof self)) {
        fg_error(d, "cannot find this program's path (/proc/self/exe)");
        return;
    }
    if (t->work)
        fg_sb_puts(&paths->work, t->work);
    else
        fg_sb_printf(&paths->work, "build/tune/%s", name);
    if (t->out)
        fg_sb_puts(&paths->out, t->out);
    else
        fg_sb_printf(&paths->out, "specs/tuning/%s.yaml", name);
    t->work = fg_sb_str(&paths->work);
    t->out = fg_sb_str(&paths->out);
    fg_sb_printf(&paths->manifest, "%s/kernels/manifest.json", t->work);
    t->manifest_path = fg_sb_str(&paths->manifest);
    fg_strbuf kbuild = {0}, log = {0}, gen_manifest = {0};
    fg_sb_printf(&kbuild, "%s/kernels", t->work);
    fg_sb_printf(&log, "%s/compile.log", t->work);
    fg_sb_printf(&gen_manifest, "%s/generated/manifest.json", t->work);

    /* make's variables: the specs (and the target's shipped spec where none
     * given is target NAME's), the selection, the folders, this fusegen */
    fg_strbuf specs = {0}, opts = {0}, fusegen = {0}, gen_arg = {0}, kbuild_arg = {0};
    char shipped[FG_SPEC_NAME_MAX + 32];
    snprintf(shipped, sizeof shipped, "specs/targets/%s.yaml", name);
    fg_sb_puts(&specs, "SPECS=");
    for (int i = 0; i < t->nspecs; i++)
        fg_sb_printf(&specs, "%s%s", i ? " " : "", t->specs[i]);
    if (!gives_target(t->specs, t->nspecs, name) && access(shipped, R_OK) == 0)
        fg_sb_printf(&specs, " %s", shipped);
    fg_sb_printf(&opts, "LIST_OPTS=--candidates --target %s", name);
    for (unsigned i = 0; i < t->nfilters; i++)
        fg_sb_printf(&opts, " --filter '%s'", t->filters[i]);
    fg_sb_printf(&fusegen, "FUSEGEN=%s", self);
    fg_sb_printf(&gen_arg, "GEN_OUT=%s/generated", t->work);
    fg_sb_printf(&kbuild_arg, "KBUILD=%s", fg_sb_str(&kbuild));

    if (fg_mkdirs(t->work, d) == 0 && unlink(fg_sb_str(&log)) != 0 && errno != ENOENT)
        fg_error(d, "cannot remove the old %s: %s", fg_sb_str(&log), strerror(errno));
    if (!d->errors) {
        const char *make = getenv("MAKE"), *flags = getenv("MAKEFLAGS");
        char jobs[32];
        const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        snprintf(jobs, sizeof jobs, "-j%ld", ncpu > 0 ? ncpu : 1);
        /* under make (make tune) its jobserver sets the parallelism: a -j
         * here would override it */
        const bool jobserver = flags && strstr(flags, "--jobserver");
        char *argv[] = {(char *)(make && *make ? make : "make"), "--no-print-directory", "-f",
                        "mk/kernels.mk", (char *)fg_sb_str(&fusegen), (char *)fg_sb_str(&gen_arg),
                        (char *)fg_sb_str(&kbuild_arg), (char *)fg_sb_str(&specs),
                        (char *)fg_sb_str(&opts), "all", jobserver ? NULL : jobs, NULL};
        fprintf(stderr, "fusegen tune: generating and compiling the candidates for %s (log: %s)\n",
                name, fg_sb_str(&log));
        compile_progress p = {.gen_manifest = fg_sb_str(&gen_manifest),
                              .kbuild = fg_sb_str(&kbuild), .start = time(NULL)};
        const int rc = fg_run_logged_progress(argv, fg_sb_str(&log), compile_tick, &p);
        if (rc != 0)
            fg_error(d, "compiling the candidates failed (%s exit %d): see %s", argv[0], rc,
                     fg_sb_str(&log));
    }
    fg_strbuf *all[] = {&specs, &opts, &fusegen, &gen_arg, &kbuild_arg, &kbuild, &log, &gen_manifest};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        fg_sb_free(all[i]);
}

/* The folder of `path` ("." for none), malloc'd. */
static char *folder_of(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        fg_out_of_memory();
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    return dir;
}

int fg_cmd_tune(int argc, char **argv)
{
    tune t = {0};
    int rc = parse_args(argc, argv, &t);
    if (rc)
        return rc == 1 ? 0 : rc;
    fg_diag_init(&t.d, stderr);
    compile_paths paths = {0};
    if (t.compile_target) {
        compile_candidates(&t, &paths);
        if (t.d.errors) {
            compile_paths_free(&paths);
            return 1;
        }
    }
    char *dir = folder_of(t.manifest_path), *beside[NKINDS] = {0};
    if (!t.kernels)
        t.kernels = dir;
    if (!t.work)
        t.work = t.kernels;
    /* the grid form's harness is the ring form's program; the other
     * harnesses: test_<kind> beside test_decode_attn, as make builds them */
    t.harness[FG_TUNE_GRID] = t.harness[FG_TUNE_RING];
    char *hdir = folder_of(t.harness[FG_TUNE_RING]);
    for (int k = 0; k < NKINDS; k++)
        if (KINDS[k].what && !t.harness[k]) {
            const size_t n = strlen(hdir) + strlen(KINDS[k].what) + sizeof "/test_";
            beside[k] = malloc(n);
            if (!beside[k])
                fg_out_of_memory();
            snprintf(beside[k], n, "%s/test_%s", hdir, KINDS[k].what);
            t.harness[k] = beside[k];
        }
    free(hdir);
    /* the work folder is made here: the harness only opens files in it */
    const bool work_ok = fg_mkdirs(t.work, &t.d) == 0;
    t.manifest = json_object_from_file(t.manifest_path);
    if (work_ok && !t.manifest)
        fg_error_at(&t.d, t.manifest_path, 0, 0, "cannot read or parse: %s",
                    json_util_get_last_err());
    fg_tuning_entry *fresh = NULL;
    size_t nfresh = 0;
    if (work_ok && t.manifest && !collect(&t)) {
        for (int k = 0; k < NKINDS && !t.d.errors; k++)
            if (KINDS[k].what)
                time_kind(&t, (fg_tuning_kind)k);
        fresh = calloc(t.nfam + 1, sizeof *fresh);
        if (!fresh)
            fg_out_of_memory();
        for (size_t i = 0; i < t.nfam && !t.d.errors; i++) {
            bool have;
            if (t.fams[i].n > 1 && !choose(&t, &t.fams[i], &fresh[nfresh], &have) && have)
                nfresh++;
        }
        if (!t.d.errors)
            write_spec(&t, fresh, nfresh);
    }
    rc = t.d.errors ? 1 : 0;
    for (size_t i = 0; i < t.nfam; i++) {
        free(t.fams[i].cfgs);
        fg_sb_free(&t.fams[i].measured);
    }
    free(t.fams);
    free(fresh);
    json_object_put(t.manifest);
    for (int k = 0; k < NKINDS; k++)
        free(beside[k]);
    free(dir);
    compile_paths_free(&paths);
    return rc;
}
