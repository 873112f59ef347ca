/* fusegen profile (profile.h). */
#include "profile.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "plan_overlap.h"
#include "fsutil.h"
#include "jsonget.h"
#include "spec.h"
#include "strbuf.h"

static const char usage[] =
    "usage: fusegen profile --target TARGET.yaml [options] GEMM_SPEC...\n"
    "\n"
    "Measures, on this machine's first two GPUs, what the overlap cost model\n"
    "reads: peer copies over the copy engine (64 KB to 256 MB, one way and both\n"
    "ways at once), fitted as latency + bytes / rate from 1 MB up; the time of\n"
    "every GEMM the schedules of the GEMM specs run (each shape whole, split\n"
    "over its world size, and in chunk-overlap's 2, 4 and 8 pieces of a split);\n"
    "how much a GEMM slows while copies stream into its\n"
    "GPU; the executor's fixed cost per call; where the harness has NCCL, its\n"
    "all-gather and reduce-scatter alone (1-128 MB), for serial NCCL; and copy\n"
    "lanes (the executor's 2D order): every GPU of the machine pushing to every\n"
    "other at once, a lane a peer (2 GPUs: two lanes each), 1-64 MB a copy.\n"
    "Writes them into TARGET.yaml's `interconnect:` block (with the\n"
    "comment lines right above it), keeping every other byte of the file; the\n"
    "raw curve stays in the work folder.  On any error the spec is left as it\n"
    "was.  Needs 2 GPUs.\n"
    "\n"
    "options:\n"
    "  -t, --target FILE    the target spec to update (specs/targets/h200.yaml)\n"
    "      --harness PATH   test_overlap (default: build/gpu/test_overlap)\n"
    "      --work DIR       profile.json and profile.log (default: build/profile)\n"
    "  -h, --help           this text\n";

typedef struct profile {
    const char *target_path, *harness, *work;
    char **gemm_paths;
    int ngemm;
    fg_diag d;
} profile;

static int parse_args(int argc, char **argv, profile *p)
{
    static const struct option opts[] = {{"target", required_argument, NULL, 't'},
                                         {"harness", required_argument, NULL, 'H'},
                                         {"work", required_argument, NULL, 'w'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    p->harness = "build/gpu/test_overlap";
    p->work = "build/profile";
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': p->target_path = optarg; break;
        case 'H': p->harness = optarg; break;
        case 'w': p->work = optarg; break;
        case 'h': fputs(usage, stdout); return 1;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (!p->target_path || optind == argc) {
        fputs(usage, stderr);
        return 2;
    }
    p->gemm_paths = argv + optind;
    p->ngemm = argc - optind;
    return 0;
}

/* Appends "MxNxK" to the list unless it is there already. */
static void add_shape(fg_strbuf *list, unsigned m, unsigned n, unsigned k)
{
    char one[64];
    snprintf(one, sizeof one, "%ux%ux%u", m, n, k);
    const char *s = fg_sb_str(list);
    const size_t len = strlen(one);
    for (const char *at = s; (at = strstr(at, one)); at += len)
        if ((at == s || at[-1] == ',') && (at[len] == ',' || at[len] == '\0'))
            return;
    fg_sb_printf(list, "%s%s", list->len ? "," : "", one);
}

/* The GEMMs of every shape's schedules: whole, a shard of m / world, and
 * chunk_overlap's pieces of a shard. */
static int collect_shapes(profile *p, fg_strbuf *list)
{
    for (int i = 0; i < p->ngemm; i++) {
        fg_spec *s = fg_spec_load_gemm(p->gemm_paths[i], &p->d);
        if (!s)
            return -1;
        const fg_gemm *g = s->gemm;
        for (unsigned k = 0; k < g->shapes_count; k++) {
            const fg_gemm_shape *sh = &g->shapes[k];
            add_shape(list, sh->m, sh->n, sh->k);
            if (g->world_size > 1 && sh->m % g->world_size == 0)
                add_shape(list, sh->m / g->world_size, sh->n, sh->k);
            for (int c = 0; c < FG_OVERLAP_NCHUNKS; c++)
                if (g->world_size > 1 && sh->m % (g->world_size * fg_overlap_chunks[c]) == 0)
                    add_shape(list, sh->m / (g->world_size * fg_overlap_chunks[c]), sh->n,
                              sh->k);
        }
        fg_spec_free(s);
    }
    return 0;
}

static bool positive(double v) { return isfinite(v) && v > 0; }

/* The new interconnect block from the harness's JSON, or -1 (reported). */
static int render_block(profile *p, json_object *doc, const char *json_path, fg_strbuf *out)
{
    json_object *fit = fg_json_get(doc, "fit"), *slow = fg_json_get(doc, "gemm_slowdown");
    const double lat = fg_json_num(fit, "both_ways_latency_us");
    const double one = fg_json_num(fit, "one_way_gbps");
    const double each = fg_json_num(fit, "both_ways_gbps_each");
    const double slowdown = fg_json_num(slow, "fraction");
    const double call = fg_json_num(fg_json_get(doc, "call_overhead"), "us");
    json_object *gemms = fg_json_get(doc, "gemms");
    if (!isfinite(lat) || !positive(one) || !positive(each) || !isfinite(slowdown) ||
        !isfinite(call) || !gemms || !json_object_is_type(gemms, json_type_array)) {
        fg_error_at(&p->d, json_path, 0, 0, "expected fit.{both_ways_latency_us, one_way_gbps, "
                    "both_ways_gbps_each}, gemm_slowdown.fraction, call_overhead.us and gemms[] "
                    "with finite values");
        return -1;
    }
    /* a negative fit intercept, slowdown or overhead is timing noise around zero */
    const double latency = fmax(lat, 0), slowed = fmax(slowdown, 0), fixed = fmax(call, 0);
    const char *gpu = fg_json_str(fg_json_get(doc, "gpu"), "name");
    const char *date = fg_json_str(doc, "date_utc"), *commit = fg_json_str(doc, "commit");
    /* NCCL's fits, when the harness was built with NCCL */
    json_object *nccl = fg_json_get(doc, "nccl");
    const double ag_lat = fg_json_num(fg_json_get(nccl, "all_gather"), "latency_us");
    const double ag_bw = fg_json_num(fg_json_get(nccl, "all_gather"), "gbps");
    const double rs_lat = fg_json_num(fg_json_get(nccl, "reduce_scatter"), "latency_us");
    const double rs_bw = fg_json_num(fg_json_get(nccl, "reduce_scatter"), "gbps");
    const bool have_nccl = nccl && isfinite(ag_lat) && positive(ag_bw) && isfinite(rs_lat) &&
                           positive(rs_bw);
    if (nccl && !have_nccl) {
        fg_error_at(&p->d, json_path, 0, 0, "expected nccl.{all_gather, reduce_scatter}."
                    "{latency_us, gbps} with finite values");
        return -1;
    }
    /* the copy lanes' fit, where the harness measured it */
    json_object *lanes = fg_json_get(doc, "lanes");
    const double lanes_lat = fg_json_num(lanes, "latency_us"), lanes_bw = fg_json_num(lanes, "gbps");
    const long long lanes_gpus = fg_json_int(lanes, "gpus");
    if (lanes && (!isfinite(lanes_lat) || !positive(lanes_bw) || lanes_gpus < 2 ||
                  lanes_gpus > 64)) {
        fg_error_at(&p->d, json_path, 0, 0, "expected lanes.{latency_us, gbps, gpus} with finite "
                    "values, gbps above 0 and 2 to 64 GPUs");
        return -1;
    }
    fg_sb_printf(out,
                 "  # Written by `fusegen profile` (rerun it rather than editing): peer copies\n"
                 "  # between two GPUs of the node over the copy engine, fitted as latency +\n"
                 "  # bytes / rate from 1 MB to 256 MB (one way %.0f GB/s; both ways at once\n"
                 "  # %.0f GB/s each, %.1f us); the bf16 GEMMs of the overlap specs, whole and\n"
                 "  # split; a GEMM's slowdown while copies stream into its GPU (%+.2f%%); the\n"
                 "  # executor's fixed cost per call (test_overlap's, one process).\n"
                 "  interconnect:\n"
                 "    peer_copy_latency_us: %.2f\n"
                 "    peer_copy_gbps: %.0f\n"
                 "    peer_copy_bidir_gbps: %.0f\n"
                 "    gemm_slowdown: %.4f\n"
                 "    call_overhead_us: %.1f\n",
                 one, each, lat, 100 * slowdown, latency, one, 2 * each, slowed, fixed);
    if (have_nccl)   /* NCCL alone, 1-128 MB into each rank; serial NCCL's prediction */
        fg_sb_printf(out,
                     "    nccl_ag_latency_us: %.2f\n"
                     "    nccl_ag_gbps: %.0f\n"
                     "    nccl_rs_latency_us: %.2f\n"
                     "    nccl_rs_gbps: %.0f\n",
                     fmax(ag_lat, 0), ag_bw, fmax(rs_lat, 0), rs_bw);
    if (lanes)   /* every GPU pushing to every other at once, a lane a peer */
        fg_sb_printf(out,
                     "    copy_lanes_latency_us: %.2f\n"
                     "    copy_lanes_gbps: %.0f\n"
                     "    copy_lanes_gpus: %lld\n",
                     fmax(lanes_lat, 0), lanes_bw, lanes_gpus);
    const size_t n = json_object_array_length(gemms);
    if (n)
        fg_sb_puts(out, "    gemm_times:\n");
    for (size_t i = 0; i < n; i++) {
        json_object *g = json_object_array_get_idx(gemms, i);
        const long long m = fg_json_int(g, "m"), nn = fg_json_int(g, "n"), k = fg_json_int(g, "k");
        const double us = fg_json_num(g, "us");
        if (m <= 0 || nn <= 0 || k <= 0 || !positive(us)) {
            fg_error_at(&p->d, json_path, 0, 0, "gemms[%zu]: expected m, n, k and us above 0",
                        i);
            return -1;
        }
        fg_sb_printf(out, "      - {m: %lld, n: %lld, k: %lld, us: %.1f}\n", m, nn, k, us);
    }
    fg_strbuf source = {0};
    fg_sb_printf(&source, "fusegen profile, %s x2, %s, %s", gpu ? gpu : "GPU",
                 date ? date : "date unknown", commit ? commit : "commit unknown");
    fg_sb_puts(out, "    source: ");
    fg_sb_yaml_quoted(out, fg_sb_str(&source));
    fg_sb_puts(out, "\n");
    fg_sb_free(&source);
    return 0;
}

static bool starts(const char *line, const char *prefix)
{
    return strncmp(line, prefix, strlen(prefix)) == 0;
}

/* text with its interconnect block (the "  #" comment lines right above it,
 * the key, every line below indented deeper or blank) replaced by `block`,
 * or `block` appended where there is none. */
static void splice(const char *text, const char *block, fg_strbuf *out)
{
    const char *key = NULL;
    for (const char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "")
        if (starts(line, "  interconnect:")) {
            key = line;
            break;
        }
    if (!key) {
        fg_sb_puts(out, text);
        if (*text && text[strlen(text) - 1] != '\n')
            fg_sb_puts(out, "\n");
        fg_sb_puts(out, block);
        return;
    }
    /* back over the comment lines right above the key */
    const char *begin = key;
    while (begin > text) {
        const char *prev = begin - 1;   /* the '\n' ending the line above */
        while (prev > text && prev[-1] != '\n')
            prev--;
        if (!starts(prev, "  #"))
            break;
        begin = prev;
    }
    const char *end = strchr(key, '\n') ? strchr(key, '\n') + 1 : key + strlen(key);
    while (*end && (starts(end, "    ") || *end == '\n')) {
        const char *nl = strchr(end, '\n');
        end = nl ? nl + 1 : end + strlen(end);
    }
    fg_sb_printf(out, "%.*s%s%s", (int)(begin - text), text, block, end);
}

int fg_cmd_profile(int argc, char **argv)
{
    profile p = {0};
    int rc = parse_args(argc, argv, &p);
    if (rc)
        return rc == 1 ? 0 : rc;
    fg_diag_init(&p.d, stderr);
    fg_strbuf shapes = {0}, json = {0}, log = {0}, block = {0}, text = {0};
    char *old = NULL;
    json_object *doc = NULL;
    size_t len = 0;
    /* read once: checked now, spliced after the run */
    old = fg_read_all(p.target_path, &len);
    if (!old)
        fg_error_at(&p.d, p.target_path, 0, 0, "cannot open: %s", strerror(errno));
    fg_spec *target = old ? fg_spec_load_text(p.target_path, old, len, &p.d) : NULL;
    if (target && target->kind != FG_SPEC_TARGET)
        fg_error_at(&p.d, p.target_path, 0, 0, "expected a target spec (target:)");
    if (p.d.errors || collect_shapes(&p, &shapes) || fg_mkdirs(p.work, &p.d))
        goto done;
    fg_sb_printf(&json, "%s/profile.json", p.work);
    fg_sb_printf(&log, "%s/profile.log", p.work);
    remove(fg_sb_str(&json));   /* a stale one must not pass for this run's */
    char *hargv[] = {(char *)p.harness, "--profile", "--json", (char *)fg_sb_str(&json),
                     "--gemm-shapes", (char *)fg_sb_str(&shapes), NULL};
    unsigned ngemms = 1;
    for (const char *c = fg_sb_str(&shapes); *c; c++)
        ngemms += *c == ',';
    fprintf(stderr, "fusegen profile: peer copies and %u GEMMs for %s (log %s)\n", ngemms,
            p.target_path, fg_sb_str(&log));
    const int st = fg_run_logged(hargv, fg_sb_str(&log));
    if (st != 0) {
        fg_error(&p.d, "the harness's profile run failed (exit %d; %s has the output)", st,
                 fg_sb_str(&log));
        goto done;
    }
    doc = json_object_from_file(fg_sb_str(&json));
    if (!doc) {
        fg_error_at(&p.d, fg_sb_str(&json), 0, 0, "cannot read or parse: %s",
                    json_util_get_last_err());
        goto done;
    }
    if (render_block(&p, doc, fg_sb_str(&json), &block))
        goto done;
    splice(old, fg_sb_str(&block), &text);
    bool changed;
    if (!fg_spec_write_checked(p.target_path, fg_sb_str(&text), text.len, &changed, &p.d))
        fprintf(stderr, "fusegen profile: %s %s\n", p.target_path,
                changed ? "written" : "unchanged");
done:
    rc = p.d.errors ? 1 : 0;
    fg_spec_free(target);
    json_object_put(doc);
    free(old);
    fg_sb_free(&shapes), fg_sb_free(&json), fg_sb_free(&log), fg_sb_free(&block);
    fg_sb_free(&text);
    return rc;
}
