/* fusegen report: benchmark results as a table and a chart (report.h).
 *
 * Every family's harness writes schema fusegen-bench/1 with its own case
 * fields.  For rmsnorm and decode a case is read into one row here: the
 * instance, the point on the x axis (decode: cached tokens S; rmsnorm:
 * rows), the median time with its spread, the bytes moved, and the
 * baseline's median time where one ran.  The overlap family's cases (one per
 * GEMM shape, each part's time) get a table and a chart of their own. */
#include "report.h"

#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "instance.h"
#include "jsonget.h"

typedef struct report_row {
    const char *instance;
    long long x;           /* S (decode) or rows (rmsnorm) */
    long long batch;       /* decode; 0 for rmsnorm */
    double us, us_min, us_max;
    double bytes;
    double base_us;        /* 0: no baseline in this case */
} report_row;

void fg_bench_case_read(json_object *c, fg_bench_case *out)
{
    *out = (fg_bench_case){0};
    out->instance = fg_json_str(c, "instance") ? fg_json_str(c, "instance") : fg_json_str(c, "name");
    json_object *shape = fg_json_get(c, "shape");
    out->point = shape ? fg_json_num(shape, "rows") : fg_json_num(c, "S");
    out->time = fg_json_get(c, "time") ? fg_json_get(c, "time") : fg_json_get(c, "us");
    out->median_us = fg_json_num(out->time, "median");
    out->baseline = fg_json_get(c, "baseline_unfused_cublas");
    json_object *list = fg_json_get(c, "baselines");
    if (!out->baseline && list && json_object_is_type(list, json_type_array) &&
        json_object_array_length(list) > 0) {
        json_object *first = json_object_array_get_idx(list, 0);
        out->baseline = fg_json_get(first, "time") ? fg_json_get(first, "time")
                                                   : fg_json_get(first, "us");
    }
}

/* One case as a row; NULL if it lacks what a row needs. */
static const char *read_row(json_object *c, report_row *r)
{
    *r = (report_row){0};
    fg_bench_case bc;
    fg_bench_case_read(c, &bc);
    r->instance = bc.instance;
    r->us = bc.median_us, r->us_min = fg_json_num(bc.time, "min"),
    r->us_max = fg_json_num(bc.time, "max");
    r->bytes = fg_json_num(c, "bytes");
    if (!r->instance || isnan(bc.point) || isnan(r->us) || isnan(r->bytes) || r->us <= 0)
        return "a case without its instance, S or rows, median time or bytes";
    r->x = (long long)bc.point;
    r->batch = isnan(fg_json_num(c, "batch")) ? 0 : (long long)fg_json_num(c, "batch");
    if (fg_json_num(bc.baseline, "median") > 0)
        r->base_us = fg_json_num(bc.baseline, "median");
    return NULL;
}

static double gbps(double bytes, double us) { return bytes / (us * 1e3); }

/* A chart label: the instance name without its family and arch prefix
 * (decode_attn_sm90a_f16_... -> f16_...), which every line of a chart shares. */
static const char *short_name(const char *instance)
{
    const char *arch = strstr(instance, "_sm");
    if (!arch)
        arch = strstr(instance, "_gfx");
    const char *rest = arch ? strchr(arch + 1, '_') : NULL;
    return rest ? rest + 1 : instance;
}

/* The overlap family's parts, as test_overlap --bench names them. */
#define OVERLAP_PARTS 8
static const char *const OVERLAP_PART[OVERLAP_PARTS] = {
    "gemm",          "comm",             "serial_nccl",      "serial_ce",
    "shard_overlap", "chunk_overlap_c2", "chunk_overlap_c4", "chunk_overlap_c8"};
static const char *const OVERLAP_TITLE[OVERLAP_PARTS] = {
    "T_gemm",        "T_comm (copy engine)", "serial NCCL",     "serial CE",
    "shard-overlap", "chunk-overlap, 2",     "chunk-overlap, 4", "chunk-overlap, 8"};

/* An overlap results document (test_overlap --bench): per shape, each part's
 * median with its spread and each schedule's time over max(T_gemm, T_comm);
 * the chart draws those ratios.  A part not run (null) shows as "-". */
static int render_overlap(json_object *doc, json_object *cases, const char *source,
                          const char *png_name, const char *const *globs, size_t nglobs,
                          fg_strbuf *md, fg_strbuf *gp, fg_diag *d)
{
    const size_t n = json_object_array_length(cases);
    const char *gpu = fg_json_str(fg_json_get(doc, "gpu"), "name");
    const char *commit = fg_json_str(doc, "commit"), *date = fg_json_str(doc, "date_utc");
    const double world = fg_json_num(doc, "world");
    fg_strbuf m = {0}, g = {0}, data = {0};
    fg_sb_printf(&m, "# %s\n\n%.0f x %s, commit %s, %s. Per call, us: median (min-max); in "
                     "brackets, a schedule's time over max(T_gemm, T_comm).\n\n"
                     "| shape | collective | m | n | k |",
                 source, world, gpu ? gpu : "unknown GPU", commit ? commit : "unknown",
                 date ? date : "unknown");
    for (int p = 0; p < OVERLAP_PARTS; p++)
        fg_sb_printf(&m, " %s |", OVERLAP_TITLE[p]);
    fg_sb_puts(&m, "\n|---|---|---|---|---|");   /* shape, collective, m, n, k */
    for (int p = 0; p < OVERLAP_PARTS; p++)
        fg_sb_puts(&m, "---|");
    fg_sb_puts(&m, "\n");
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        const char *name = fg_json_str(c, "name"), *coll = fg_json_str(c, "collective");
        double med[OVERLAP_PARTS], lo[OVERLAP_PARTS], hi[OVERLAP_PARTS];
        for (int p = 0; p < OVERLAP_PARTS; p++) {
            json_object *t = fg_json_get(c, OVERLAP_PART[p]);
            med[p] = fg_json_num(t, "median_us"), lo[p] = fg_json_num(t, "min_us");
            hi[p] = fg_json_num(t, "max_us");
        }
        if (!name || !coll || !(med[0] > 0) || !(med[1] > 0)) {
            fg_error_at(d, source, 0, 0, "case %zu: an overlap case without its name, "
                        "collective, gemm or comm time", i);
            fg_sb_free(&m), fg_sb_free(&g), fg_sb_free(&data);
            return -1;
        }
        if (nglobs && !fg_name_matches(name, globs, nglobs))
            continue;
        kept++;
        const double ideal = fmax(med[0], med[1]);
        fg_sb_printf(&m, "| %s | %s | %lld | %lld | %lld |", name, coll, fg_json_int(c, "m"),
                     fg_json_int(c, "n"), fg_json_int(c, "k"));
        fg_sb_printf(&data, "\"%s\"", name);
        for (int p = 0; p < OVERLAP_PARTS; p++) {
            if (!(med[p] > 0)) {
                fg_sb_puts(&m, " - |");
                if (p >= 2)
                    fg_sb_puts(&data, " NaN");
                continue;
            }
            fg_sb_printf(&m, " %.1f (%.1f-%.1f)", med[p], lo[p], hi[p]);
            if (p >= 2) {
                fg_sb_printf(&m, " [%.2f]", med[p] / ideal);
                fg_sb_printf(&data, " %.3f", med[p] / ideal);
            }
            fg_sb_puts(&m, " |");
        }
        fg_sb_puts(&m, "\n");
        fg_sb_puts(&data, "\n");
    }
    if (!kept) {
        fg_error_at(d, source, 0, 0, "no case's shape matches the filters");
        fg_sb_free(&m), fg_sb_free(&g), fg_sb_free(&data);
        return -1;
    }
    fg_sb_printf(&g, "# gnuplot script written by fusegen report from %s\n"
                     "set terminal png size 1100,700\nset output '%s'\n"
                     "set title \"%s x%.0f, %s (commit %s): time over max(T_gemm, T_comm)\" "
                     "noenhanced\n"
                     "set style data histograms\nset style histogram clustered gap 1\n"
                     "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset grid ytics\n"
                     "set yrange [0:*]\nset xtics rotate by -35 noenhanced\nset rmargin 10\n"
                     "set key below noenhanced\n$d << EOD\n%sEOD\nplot",
                 source, png_name, gpu ? gpu : "GPU", world, date ? date : "", commit ? commit : "",
                 fg_sb_str(&data));
    for (int p = 2; p < OVERLAP_PARTS; p++)   /* every schedule, a column of the data */
        fg_sb_printf(&g, " %s using %d%s title '%s',", p == 2 ? "$d" : "''", p,
                     p == 2 ? ":xtic(1)" : "", OVERLAP_TITLE[p]);
    fg_sb_puts(&g, " 1 with lines lw 2 lc rgb 'black' title 'max(T_gemm, T_comm)'\n");
    fg_sb_puts(md, fg_sb_str(&m));
    fg_sb_puts(gp, fg_sb_str(&g));
    fg_sb_free(&m), fg_sb_free(&g), fg_sb_free(&data);
    return 0;
}

/* A fused-GEMM results document (test_gemm --bench): per (m, n, k) the
 * fused kernel's and cuBLASLt's medians, TFLOP/s and the fused kernel's
 * share of cuBLASLt's rate; the chart draws both rates per shape. */
static int render_gemm(json_object *doc, json_object *cases, const char *source,
                       const char *png_name, const char *const *globs, size_t nglobs,
                       fg_strbuf *md, fg_strbuf *gp, fg_diag *d)
{
    const size_t n = json_object_array_length(cases);
    const char *gpu = fg_json_str(fg_json_get(doc, "gpu"), "name");
    const char *commit = fg_json_str(doc, "commit"), *date = fg_json_str(doc, "date_utc");
    fg_strbuf m = {0}, data = {0};
    fg_sb_printf(&m, "# %s\n\n%s, commit %s, %s. Per call, us (medians); TFLOP/s = 2 m n k / "
                     "time; cuBLASLt's same product (TN) in the same run.\n\n"
                     "| instance | m | n | k | fused us | fused TFLOP/s | cuBLASLt us | "
                     "cuBLASLt TFLOP/s | fused rate / cuBLASLt's |\n"
                     "|---|---|---|---|---|---|---|---|---|\n",
                 source, gpu ? gpu : "unknown GPU", commit ? commit : "unknown",
                 date ? date : "unknown");
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *c = json_object_array_get_idx(cases, i);
        const char *name = fg_json_str(c, "name");
        const double fused = fg_json_num(c, "fused_us"), base = fg_json_num(c, "cublaslt_us");
        const double mm = fg_json_num(c, "m"), nn = fg_json_num(c, "n"), kk = fg_json_num(c, "k");
        if (!name || !(fused > 0) || !(mm > 0) || !(nn > 0) || !(kk > 0)) {
            fg_error_at(d, source, 0, 0, "case %zu: a GEMM case without its name, m, n, k or "
                        "fused time", i);
            fg_sb_free(&m), fg_sb_free(&data);
            return -1;
        }
        if (nglobs && !fg_name_matches(name, globs, nglobs))
            continue;
        kept++;
        const double flop = 2.0 * mm * nn * kk;
        fg_sb_printf(&m, "| %s | %.0f | %.0f | %.0f | %.1f | %.1f |", name, mm, nn, kk, fused,
                     flop / fused * 1e-6);
        if (base > 0)   /* (a run with --no-baseline has no cuBLASLt time) */
            fg_sb_printf(&m, " %.1f | %.1f | %.3f |\n", base, flop / base * 1e-6, base / fused);
        else
            fg_sb_puts(&m, " - | - | - |\n");
        fg_sb_printf(&data, "\"m%.0f n%.0f k%.0f\" %.1f ", mm, nn, kk, flop / fused * 1e-6);
        if (base > 0)
            fg_sb_printf(&data, "%.1f\n", flop / base * 1e-6);
        else
            fg_sb_puts(&data, "NaN\n");
    }
    if (!kept) {
        fg_error_at(d, source, 0, 0, "no case's instance matches the filters");
        fg_sb_free(&m), fg_sb_free(&data);
        return -1;
    }
    fg_sb_printf(gp, "# gnuplot script written by fusegen report from %s\n"
                     "set terminal png size 1100,700\nset output '%s'\n"
                     "set title \"%s, %s (commit %s): GEMM TFLOP/s\" noenhanced\n"
                     "set style data histograms\nset style histogram clustered gap 1\n"
                     "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset grid ytics\n"
                     "set yrange [0:*]\nset ylabel 'TFLOP/s'\nset xtics rotate by -35 noenhanced\n"
                     "set key below noenhanced\n$d << EOD\n%sEOD\n"
                     "plot $d using 2:xtic(1) title 'fused (overlap_gemm)', '' using 3 title "
                     "'cuBLASLt'\n",
                 source, png_name, gpu ? gpu : "GPU", date ? date : "", commit ? commit : "",
                 fg_sb_str(&data));
    fg_sb_puts(md, fg_sb_str(&m));
    fg_sb_free(&m), fg_sb_free(&data);
    return 0;
}

int fg_report_render(json_object *doc, const char *source, const char *png_name,
                     const char *const *globs, size_t nglobs, fg_strbuf *md, fg_strbuf *gp,
                     fg_diag *d)
{
    const char *schema = fg_json_str(doc, "schema");
    if (!schema || strcmp(schema, "fusegen-bench/1")) {
        fg_error_at(d, source, 0, 0, "not a fusegen-bench/1 results document (schema %s)",
                    schema ? schema : "missing");
        return -1;
    }
    json_object *cases = fg_json_get(doc, "cases");
    const char *tool = fg_json_str(doc, "tool");
    if (tool && !strcmp(tool, "test_overlap --bench") && cases &&
        json_object_is_type(cases, json_type_array) && json_object_array_length(cases))
        return render_overlap(doc, cases, source, png_name, globs, nglobs, md, gp, d);
    if (tool && !strcmp(tool, "test_gemm --bench") && cases &&
        json_object_is_type(cases, json_type_array) && json_object_array_length(cases))
        return render_gemm(doc, cases, source, png_name, globs, nglobs, md, gp, d);
    size_t n = cases && json_object_is_type(cases, json_type_array)
                   ? json_object_array_length(cases)
                   : 0;
    if (!n) {
        fg_error_at(d, source, 0, 0, "no cases");
        return -1;
    }
    report_row *rows = calloc(n, sizeof *rows);
    if (!rows)
        fg_out_of_memory();
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const char *why = read_row(json_object_array_get_idx(cases, i), &rows[kept]);
        if (why) {
            fg_error_at(d, source, 0, 0, "case %zu: %s", i, why);
            free(rows);
            return -1;
        }
        kept += nglobs == 0 || fg_name_matches(rows[kept].instance, globs, nglobs);
    }
    if (!kept) {
        fg_error_at(d, source, 0, 0, "no case's instance matches the filters");
        free(rows);
        return -1;
    }
    n = kept;
    json_object *gpu = fg_json_get(doc, "gpu"), *ceil = fg_json_get(doc, "ceilings");
    const char *gpu_name = fg_json_str(gpu, "name") ? fg_json_str(gpu, "name") : "unknown GPU";
    const char *commit = fg_json_str(doc, "commit") ? fg_json_str(doc, "commit") : "unknown";
    const char *date = fg_json_str(doc, "date_utc") ? fg_json_str(doc, "date_utc") : "unknown";
    const double read = fg_json_num(ceil, "read_gbps"), copy = fg_json_num(ceil, "copy_gbps");
    const bool decode = rows[0].batch > 0;
    const char *xname = decode ? "S" : "rows";

    fg_strbuf m = {0}, g = {0};
    fg_sb_printf(&m, "# %s\n\n%s, commit %s, %s. Ceilings measured in the same run: read-only "
                     "%.0f GB/s, device-to-device copy %.0f GB/s. Times are medians (min-max) per "
                     "launch; GB/s counts the bytes each launch must move.\n\n",
                 source, gpu_name, commit, date, read, copy);
    fg_sb_printf(&m, "| instance | %s | batch | us (min-max) | GB/s | %% of read | baseline us | "
                     "speed-up |\n|---|---|---|---|---|---|---|---|\n",
                 xname);
    for (size_t i = 0; i < n; i++) {
        const report_row *r = &rows[i];
        const double bw = gbps(r->bytes, r->us);
        char batch[24] = "-";
        if (r->batch)
            snprintf(batch, sizeof batch, "%lld", r->batch);
        fg_sb_printf(&m, "| %s | %lld | %s | %.2f (%.2f-%.2f) | %.0f | %.1f |", r->instance, r->x,
                     batch, r->us, r->us_min, r->us_max, bw, read > 0 ? 100.0 * bw / read : NAN);
        if (r->base_us > 0)
            fg_sb_printf(&m, " %.2f | %.2fx |\n", r->base_us, r->base_us / r->us);
        else
            fg_sb_puts(&m, " - | - |\n");
    }

    /* the chart: one line per instance, its baseline dashed, the ceilings flat */
    fg_sb_printf(&g, "# gnuplot script written by fusegen report from %s\n"
                     "set terminal png size 1100,900\nset output '%s'\n"
                     "set title \"%s, %s (commit %s)\" noenhanced\n"
                     "set xlabel '%s'\nset ylabel 'GB/s'\nset logscale x 2\nset xtics 2\n"
                     "set format x '%%.0f'\nset grid\nset key below left Left reverse noenhanced height 2\n"
                     "set yrange [0:*]\n",
                 source, png_name, gpu_name, date, commit, decode ? "cached tokens S" : "rows");
    size_t series = 0;
    for (size_t i = 0; i < n; i++) {
        bool first = true;   /* an instance's rows, in file order */
        for (size_t k = 0; k < i; k++)
            first &= strcmp(rows[k].instance, rows[i].instance) != 0;
        if (!first)
            continue;
        for (int base = 0; base < 2; base++) {
            fg_sb_printf(&g, "$s%zu << EOD\n", series++);
            for (size_t k = i; k < n; k++)
                if (!strcmp(rows[k].instance, rows[i].instance) && (!base || rows[k].base_us > 0))
                    fg_sb_printf(&g, "%lld %.1f\n", rows[k].x,
                                 gbps(rows[k].bytes, base ? rows[k].base_us : rows[k].us));
            fg_sb_puts(&g, "EOD\n");
        }
    }
    fg_sb_puts(&g, "plot ");
    series = 0;
    for (size_t i = 0; i < n; i++) {
        bool first = true;
        for (size_t k = 0; k < i; k++)
            first &= strcmp(rows[k].instance, rows[i].instance) != 0;
        if (!first)
            continue;
        bool has_base = false;
        for (size_t k = i; k < n; k++)
            has_base |= !strcmp(rows[k].instance, rows[i].instance) && rows[k].base_us > 0;
        const char *label = short_name(rows[i].instance);
        fg_sb_printf(&g, "$s%zu with linespoints lw 2 lc %zu title '%s', \\\n     ", series,
                     series / 2 + 1, label);
        if (has_base)
            fg_sb_printf(&g, "$s%zu with lines dt 2 lc %zu title 'baseline of %s', \\\n     ",
                         series + 1, series / 2 + 1, label);
        series += 2;
    }
    fg_sb_printf(&g, "%.1f with lines lw 3 lc rgb 'black' title 'read ceiling (%.0f GB/s)', \\\n"
                     "     %.1f with lines dt 3 lc rgb 'gray40' title 'copy ceiling (%.0f GB/s)'\n",
                 read, read, copy, copy);
    free(rows);
    fg_sb_puts(md, fg_sb_str(&m));
    fg_sb_puts(gp, fg_sb_str(&g));
    fg_sb_free(&m);
    fg_sb_free(&g);
    return 0;
}

static const char usage[] =
    "usage: fusegen report [-o DIR] [-f GLOB]... [-s WORD] RESULTS.json...\n"
    "\n"
    "Writes, for each benchmark results file (bench/results/*.json, schema\n"
    "fusegen-bench/1), NAME.md (a markdown table: time, GB/s, fraction of the\n"
    "read ceiling, baseline and speed-up per case) and NAME.gp (a gnuplot script:\n"
    "`gnuplot NAME.gp` run in its folder draws NAME.png, each instance's GB/s\n"
    "against the measured ceilings and its baseline).  Overlap results\n"
    "(test_overlap --bench) get each shape's parts in the table and each\n"
    "schedule's time over max(T_gemm, T_comm) in the chart; --filter then\n"
    "matches shape names.  Fused-GEMM results (test_gemm --bench) get each\n"
    "shape's times, TFLOP/s and share of cuBLASLt's rate, and a chart of both\n"
    "rates.  On any error nothing is written.\n"
    "\n"
    "options:\n"
    "  -o, --out DIR       output folder (default: beside each results file)\n"
    "  -f, --filter GLOB   only the cases whose instance matches (repeatable)\n"
    "  -s, --suffix WORD   write NAME-WORD.md and NAME-WORD.gp (which draws NAME-WORD.png),\n"
    "                      so a filtered view leaves the full one alone\n"
    "  -h, --help          this text\n";

int fg_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                         {"filter", required_argument, NULL, 'f'},
                                         {"suffix", required_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    const char *out_dir = NULL, *suffix = NULL;
    const char *globs[32];
    size_t nglobs = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:f:s:h", opts, NULL)) != -1) {
        if (c == 'o') {
            out_dir = optarg;
        } else if (c == 'f') {
            if (nglobs == sizeof globs / sizeof globs[0]) {
                fprintf(stderr, "fusegen report: error: more than %zu --filter options\n", nglobs);
                return 2;
            }
            globs[nglobs++] = optarg;
        } else if (c == 's') {
            if (!*optarg || strspn(optarg, "abcdefghijklmnopqrstuvwxyz0123456789-_") !=
                                strlen(optarg)) {
                fprintf(stderr, "fusegen report: error: --suffix '%s'; expected lowercase "
                                "letters, digits, '-' or '_'\n", optarg);
                return 2;
            }
            suffix = optarg;
        } else if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fputs(usage, stderr);
        return 2;
    }
    fg_diag d;
    fg_diag_init(&d, stderr);
    const int nfiles = argc - optind;
    fg_strbuf *md = calloc((size_t)nfiles, sizeof *md), *gp = calloc((size_t)nfiles, sizeof *gp);
    char **stems = calloc((size_t)nfiles, sizeof *stems);
    if (!md || !gp || !stems)
        fg_out_of_memory();
    int rc = 0;
    for (int i = 0; !rc && i < nfiles; i++) {
        const char *path = argv[optind + i];
        const size_t len = strlen(path);
        if (len < 5 || strcmp(path + len - 5, ".json")) {
            fg_error_at(&d, path, 0, 0, "expected a .json results file");
            rc = 1;
            break;
        }
        /* DIR/NAME without .json, DIR the output folder or the file's own */
        char *dup = strdup(path), *dup2 = strdup(path);
        if (!dup || !dup2)
            fg_out_of_memory();
        const char *base = basename(dup2), *dir = out_dir ? out_dir : dirname(dup);
        if (strlen(base) <= 5) {   /* ".json" alone names no output */
            fg_error_at(&d, path, 0, 0, "expected a .json results file");
            free(dup), free(dup2);
            rc = 1;
            break;
        }
        const char *sep = suffix ? "-" : "", *suf = suffix ? suffix : "";
        const size_t n = strlen(dir) + strlen(base) + strlen(suf) + 3;
        stems[i] = malloc(n);
        if (!stems[i])
            fg_out_of_memory();
        snprintf(stems[i], n, "%s/%.*s%s%s", dir, (int)(strlen(base) - 5), base, sep, suf);
        json_object *doc = json_object_from_file(path);
        if (!doc) {
            fg_error_at(&d, path, 0, 0, "cannot read or parse: %s", json_util_get_last_err());
            rc = 1;
        } else {
            char png[512];   /* beside the script: gnuplot runs in its folder */
            snprintf(png, sizeof png, "%.*s%s%s.png", (int)(strlen(base) - 5), base, sep, suf);
            rc = fg_report_render(doc, path, png, globs, nglobs, &md[i], &gp[i], &d) ? 1 : 0;
            json_object_put(doc);
        }
        free(dup), free(dup2);
    }
    if (!rc && out_dir)
        rc = fg_mkdirs(out_dir, &d) ? 1 : 0;
    for (int i = 0; !rc && i < nfiles; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s.md", stems[i]);
        rc = fg_write_if_changed(path, fg_sb_str(&md[i]), md[i].len, NULL, &d) ? 1 : 0;
        snprintf(path, sizeof path, "%s.gp", stems[i]);
        if (!rc)
            rc = fg_write_if_changed(path, fg_sb_str(&gp[i]), gp[i].len, NULL, &d) ? 1 : 0;
    }
    for (int i = 0; i < nfiles; i++) {
        if (md)
            fg_sb_free(&md[i]);
        if (gp)
            fg_sb_free(&gp[i]);
        if (stems)
            free(stems[i]);
    }
    free(md), free(gp), free(stems);
    return rc;
}
