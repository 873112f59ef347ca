/* Host side of the GPU harness (see harness.h).  Plain C17 + libdl. */
#define _GNU_SOURCE
#include "harness.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ tests */

static int g_passed, g_failed, g_skipped;
static bool g_verbose;

void fgh_set_verbose(bool on) { g_verbose = on; }

void fgh_args_apply(const fgh_args *a)
{
    /* A line at a time: fusegen tune follows a run's log as it grows, and a
     * run killed at its time limit (a sanitizer's) shows how far it got. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (a->seed_set)
        fgh_set_base_seed(a->seed);
    fgh_set_verbose(a->verbose);
}

int fgh_check_(int ok, const char *name, const char *expr, const char *file, int line,
               const char *fmt, ...)
{
    if (ok) {
        g_passed++;
        if (g_verbose)
            printf("ok   %s\n", name);
        return 1;
    }
    g_failed++;
    printf("FAIL %s: %s (%s:%d)", name, expr, file, line);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        printf(": ");
        vprintf(fmt, ap);
        va_end(ap);
    }
    printf("\n");
    fflush(stdout);
    return 0;
}

void fgh_skip(const char *name, const char *why)
{
    g_skipped++;
    printf("SKIP %s: %s\n", name, why);
}

int fgh_failed_count(void) { return g_failed; }
int fgh_passed_count(void) { return g_passed; }
int fgh_skipped_count(void) { return g_skipped; }

void fgh_add_counts(int passed, int failed, int skipped)
{
    g_passed += passed, g_failed += failed, g_skipped += skipped;
}

int fgh_summary(void)
{
    if (g_skipped)
        printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
    else
        printf("%d passed, %d failed\n", g_passed, g_failed);
    fflush(stdout);
    return g_failed;
}

int fgh_cuda_ok_(cudaError_t e, const char *what, const char *file, int line)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, "%s:%d: %s: %s (%s)\n", file, line, what, cudaGetErrorString(e),
            cudaGetErrorName(e));
    return -1;
}

/* ------------------------------------------------------------------- stats */

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double fgh_median(double *v, int n)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ------------------------------------------------------- clocks and driver */

typedef int (*nvml_fn_void)(void);
typedef int (*nvml_fn_handle_str)(const char *, void **);
typedef int (*nvml_fn_handle_idx)(unsigned, void **);
typedef int (*nvml_fn_clock)(void *, int, unsigned *);
typedef int (*nvml_fn_drv)(char *, unsigned);

static struct {
    int tried, ok;
    void *dev;
    nvml_fn_clock clock;
    nvml_fn_drv drv;
    char bus[32];
    int ordinal;
} g_nvml;

static void nvml_open(void)
{
    if (g_nvml.tried)
        return;
    g_nvml.tried = 1;
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    nvml_fn_void init = (nvml_fn_void)dlsym(h, "nvmlInit_v2");
    nvml_fn_handle_str by_bus = (nvml_fn_handle_str)dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_fn_handle_idx by_idx = (nvml_fn_handle_idx)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    g_nvml.clock = (nvml_fn_clock)dlsym(h, "nvmlDeviceGetClockInfo");
    g_nvml.drv = (nvml_fn_drv)dlsym(h, "nvmlSystemGetDriverVersion");
    if (!init || !g_nvml.clock || init() != 0)
        return;
    if (!(by_bus && g_nvml.bus[0] && by_bus(g_nvml.bus, &g_nvml.dev) == 0) &&
        !(by_idx && by_idx((unsigned)g_nvml.ordinal, &g_nvml.dev) == 0))
        return;
    g_nvml.ok = 1;
}

static int smi_query(const char *field)
{
    char cmd[256], line[128];
    snprintf(cmd, sizeof cmd, "nvidia-smi --query-gpu=%s --format=csv,noheader,nounits%s%s 2>/dev/null",
             field, g_nvml.bus[0] ? " -i " : "", g_nvml.bus);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int v = -1;
    if (fgets(line, sizeof line, p))
        v = atoi(line) > 0 ? atoi(line) : -1;
    pclose(p);
    return v;
}

static const char *g_clock_source = "none";

static int clock_read(int which /* 1 sm, 2 mem */)
{
    nvml_open();
    if (g_nvml.ok) {
        unsigned mhz = 0;
        if (g_nvml.clock(g_nvml.dev, which, &mhz) == 0) {
            g_clock_source = "nvml";
            return (int)mhz;
        }
    }
    int v = smi_query(which == 1 ? "clocks.sm" : "clocks.mem");
    if (v > 0)
        g_clock_source = "nvidia-smi";
    return v;
}

int fgh_clock_sm_mhz(void) { return clock_read(1); }
int fgh_clock_mem_mhz(void) { return clock_read(2); }

#define MAX_CLOCK_SAMPLES 65536
static int g_clock[MAX_CLOCK_SAMPLES], g_nclock;

int fgh_clock_sample(void)
{
    const int v = fgh_clock_sm_mhz();
    if (v > 0 && g_nclock < MAX_CLOCK_SAMPLES)
        g_clock[g_nclock++] = v;
    return v;
}

fgh_clock_stats fgh_clock_summary(void)
{
    fgh_clock_stats s = {g_nclock, -1, -1, -1, g_clock_source};
    if (!g_nclock)
        return s;
    double *v = malloc(sizeof *v * (size_t)g_nclock);
    if (!v)
        return s;
    for (int i = 0; i < g_nclock; i++)
        v[i] = g_clock[i];
    s.median = (int)fgh_median(v, g_nclock);
    s.min = (int)v[0];
    s.max = (int)v[g_nclock - 1];
    free(v);
    return s;
}

int fgh_device_open(int ordinal, fgh_device *d)
{
    memset(d, 0, sizeof *d);
    d->ordinal = ordinal;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= ordinal) {
        fprintf(stderr, "no CUDA device %d (%s)\n", ordinal,
                e != cudaSuccess ? cudaGetErrorString(e) : "not enough devices");
        return -1;
    }
    if (!fgh_ok(cudaSetDevice(ordinal)) || !fgh_ok(cudaFree(0)))
        return -1;
    struct cudaDeviceProp p;
    if (!fgh_ok(cudaGetDeviceProperties(&p, ordinal)))
        return -1;
    snprintf(d->name, sizeof d->name, "%s", p.name);
    d->sms = p.multiProcessorCount;
    d->cc_major = p.major;
    d->cc_minor = p.minor;
    d->l2_bytes = (size_t)p.l2CacheSize;
    d->global_mem = p.totalGlobalMem;
    cudaDriverGetVersion(&d->driver_version);
    cudaRuntimeGetVersion(&d->runtime_version);
    cudaDeviceGetPCIBusId(d->pci_bus_id, sizeof d->pci_bus_id, ordinal);
    snprintf(g_nvml.bus, sizeof g_nvml.bus, "%s", d->pci_bus_id);
    g_nvml.ordinal = ordinal;
    nvml_open();
    snprintf(d->driver, sizeof d->driver, "unknown");
    if (g_nvml.ok && g_nvml.drv && g_nvml.drv(d->driver, sizeof d->driver) == 0) {
        /* got it */
    } else {
        FILE *p2 = popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null", "r");
        char line[64];
        if (p2 && fgets(line, sizeof line, p2)) {
            line[strcspn(line, "\r\n")] = 0;
            if (line[0])
                snprintf(d->driver, sizeof d->driver, "%s", line);
        }
        if (p2)
            pclose(p2);
    }
    return 0;
}

/* -------------------------------------------------------------------- JSON */

void fgh_json_init(fgh_json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->first[0] = true;
}

static void json_indent(fgh_json *j)
{
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

static void json_escape(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_key(fgh_json *j, const char *key)
{
    if (j->depth > 0) {
        if (!j->first[j->depth])
            fputc(',', j->f);
        json_indent(j);
    }
    j->first[j->depth] = false;
    if (key && j->depth > 0 && !j->in_array[j->depth]) {
        json_escape(j->f, key);
        fputs(": ", j->f);
    }
}

static void json_open(fgh_json *j, const char *key, char c, bool arr)
{
    json_key(j, key);
    fputc(c, j->f);
    j->depth++;
    j->first[j->depth] = true;
    j->in_array[j->depth] = arr;
}

static void json_close(fgh_json *j, char c)
{
    const bool empty = j->first[j->depth];
    j->depth--;
    if (!empty)
        json_indent(j);
    fputc(c, j->f);
    if (j->depth == 0)
        fputc('\n', j->f);
}

void fgh_json_obj_begin(fgh_json *j, const char *key) { json_open(j, key, '{', false); }
void fgh_json_obj_end(fgh_json *j) { json_close(j, '}'); }
void fgh_json_arr_begin(fgh_json *j, const char *key) { json_open(j, key, '[', true); }
void fgh_json_arr_end(fgh_json *j) { json_close(j, ']'); }

void fgh_json_str(fgh_json *j, const char *key, const char *v)
{
    json_key(j, key);
    if (v)
        json_escape(j->f, v);
    else
        fputs("null", j->f);
}

void fgh_json_num(fgh_json *j, const char *key, double v)
{
    json_key(j, key);
    if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0)
        fprintf(j->f, "%.0f", v);   /* whole numbers (bytes, FLOPs) exactly */
    else if (isfinite(v))
        fprintf(j->f, "%.6g", v);
    else
        fputs("null", j->f);
}

void fgh_json_int(fgh_json *j, const char *key, long long v)
{
    json_key(j, key);
    fprintf(j->f, "%lld", v);
}

void fgh_json_bool(fgh_json *j, const char *key, bool v)
{
    json_key(j, key);
    fputs(v ? "true" : "false", j->f);
}

void fgh_json_null(fgh_json *j, const char *key)
{
    json_key(j, key);
    fputs("null", j->f);
}

void fgh_json_timing(fgh_json *j, const char *key, const fgh_timing *t)
{
    fgh_json_obj_begin(j, key);
    fgh_json_num(j, "median", t->med_us);
    fgh_json_num(j, "min", t->min_us);
    fgh_json_num(j, "max", t->max_us);
    fgh_json_int(j, "reps", t->reps);
    fgh_json_int(j, "launches_per_graph", t->launches);
    if (t->sm_clock_mhz > 0)
        fgh_json_int(j, "sm_clock_mhz", t->sm_clock_mhz);
    else
        fgh_json_null(j, "sm_clock_mhz");
    fgh_json_obj_end(j);
}

void fgh_utc_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void fgh_json_header(fgh_json *j, const fgh_device *d, const char *commit, const char *tool)
{
    char date[32];
    fgh_utc_now(date, sizeof date);
    fgh_json_str(j, "schema", "fusegen-bench/1");
    fgh_json_str(j, "tool", tool);
    fgh_json_str(j, "date_utc", date);
    fgh_json_str(j, "commit", commit && commit[0] ? commit : "unknown");
    fgh_json_obj_begin(j, "gpu");
    fgh_json_str(j, "name", d->name);
    fgh_json_str(j, "pci_bus_id", d->pci_bus_id);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
    fgh_json_str(j, "compute_capability", cc);
    fgh_json_int(j, "sms", d->sms);
    fgh_json_int(j, "l2_bytes", (long long)d->l2_bytes);
    fgh_json_int(j, "global_mem_bytes", (long long)d->global_mem);
    fgh_json_str(j, "driver", d->driver);
    fgh_json_int(j, "cuda_driver_api", d->driver_version);
    fgh_json_int(j, "cuda_runtime", d->runtime_version);
    fgh_json_obj_end(j);
}

void fgh_report_fit(fgh_json *j, const char *name, const char *over, const fgh_fit *fused,
                    const fgh_fit *base, double read_gbps)
{
    if (fused->points < 2)
        return;
    if (isfinite(fused->bw_gbps))
        printf("%s: fit over %d points (%s): T = %.2f us + bytes / %.0f GB/s (%.1f%% of read)", name,
               fused->points, over, fused->t0_us, fused->bw_gbps, 100 * fused->bw_gbps / read_gbps);
    else   // (fgh_fit_line's NaNs: the time does not grow with the bytes)
        printf("%s: no fit over %d points (%s): the time does not grow with the bytes counted", name,
               fused->points, over);
    if (isfinite(base->t0_us))
        printf(" | baseline %.2f us + bytes / %.0f GB/s", base->t0_us, base->bw_gbps);
    if (fused->t0_us < 0)   // (e.g. the MLA block at 128 heads: each head group reads the rows again)
        printf(" (T0 < 0: the time grows faster than the bytes counted, so the kernel moves "
               "bytes they leave out and the fit says little)");
    printf("\n");
    char model[200];
    snprintf(model, sizeof model, "T = t0_us + bytes / bw_eff, least squares over %s", over);
    fgh_json_obj_begin(j, NULL);
    fgh_json_str(j, "name", name);
    fgh_json_str(j, "model", model);
    fgh_json_int(j, "points", fused->points);
    fgh_json_num(j, "t0_us", fused->t0_us);
    fgh_json_num(j, "bw_eff_gbps", fused->bw_gbps);
    fgh_json_num(j, "baseline_t0_us", base->t0_us);
    fgh_json_num(j, "baseline_bw_eff_gbps", base->bw_gbps);
    fgh_json_obj_end(j);
}

void fgh_json_ceilings(fgh_json *j, const fgh_ceilings *c)
{
    fgh_json_obj_begin(j, "ceilings");
    fgh_json_int(j, "buffer_bytes", (long long)c->bytes);
    fgh_json_num(j, "copy_gbps", c->copy_gbps);
    fgh_json_num(j, "read_gbps", c->read_gbps);
    fgh_json_num(j, "best_gbps", c->best_gbps);
    fgh_json_str(j, "copy_method", "device-to-device copy of buffer_bytes, bytes = read + written; "
                                   "copy_gbps is the best variant");
    fgh_json_arr_begin(j, "copy_variants");
    for (int i = 0; i < c->ncopy; i++) {
        fgh_json_obj_begin(j, NULL);
        fgh_json_str(j, "name", c->copy[i].name);
        fgh_json_int(j, "bytes", (long long)(2 * c->bytes));
        fgh_json_num(j, "gbps", c->copy[i].gbps);
        fgh_json_timing(j, "us", &c->copy[i].t);
        fgh_json_obj_end(j);
    }
    fgh_json_arr_end(j);
    fgh_json_arr_begin(j, "read_variants");
    for (int i = 0; i < c->nread; i++) {
        fgh_json_obj_begin(j, NULL);
        fgh_json_str(j, "name", c->read[i].name);
        fgh_json_int(j, "bytes", (long long)c->bytes);
        fgh_json_num(j, "gbps", c->read[i].gbps);
        fgh_json_timing(j, "us", &c->read[i].t);
        fgh_json_obj_end(j);
    }
    fgh_json_arr_end(j);
    fgh_json_obj_end(j);
}

void fgh_json_clocks(fgh_json *j)
{
    const fgh_clock_stats s = fgh_clock_summary();
    fgh_json_obj_begin(j, "sm_clock_mhz");
    fgh_json_str(j, "source", s.source);
    fgh_json_str(j, "when", "read while timed work ran (clocks not locked)");
    fgh_json_int(j, "samples", s.samples);
    if (s.samples) {
        fgh_json_int(j, "median", s.median);
        fgh_json_int(j, "min", s.min);
        fgh_json_int(j, "max", s.max);
    }
    fgh_json_obj_end(j);
}

int fgh_bench_doc_begin(fgh_json *j, FILE **f, const char *path, const fgh_device *d,
                        const char *commit, const char *tool)
{
    *f = path ? fopen(path, "w") : stdout;
    if (!*f) {
        fprintf(stderr, "%.*s: cannot write %s: %s\n", (int)strcspn(tool, " "), tool, path,
                strerror(errno));
        return -1;
    }
    fgh_json_init(j, *f);
    fgh_json_obj_begin(j, NULL);
    fgh_json_header(j, d, commit ? commit : "unknown", tool);
    return 0;
}

void fgh_bench_doc_end(fgh_json *j, FILE *f, const char *path)
{
    fgh_json_clocks(j);
    fgh_json_obj_end(j);
    fputc('\n', f);
    if (path)
        fclose(f);
}

void *fgh_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = buf ? (size_t)n : 0;
    return buf;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The length of name without ".cubin" if it is prefix*.cubin, else 0. */
static size_t cubin_stem(const char *name, const char *prefix)
{
    const size_t len = strlen(name), plen = strlen(prefix);
    return len > plen + 6 && !strncmp(name, prefix, plen) && !strcmp(name + len - 6, ".cubin") ? len - 6 : 0;
}

char **fgh_list_cubins(const char *dir, const char *prefix, int *n)
{
    *n = -1;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    /* two passes over the folder: the count and the names' bytes, then the names */
    size_t count = 0, bytes = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const size_t stem = cubin_stem(e->d_name, prefix);
        if (stem)
            count++, bytes += stem + 1;
    }
    char **names = malloc((count + 1) * sizeof *names + bytes);
    if (!names) {
        closedir(d);
        return NULL;
    }
    char *text = (char *)(names + count + 1);
    size_t k = 0;
    rewinddir(d);
    for (struct dirent *e; (e = readdir(d)) != NULL && k < count;) {
        const size_t stem = cubin_stem(e->d_name, prefix);
        if (stem) {
            memcpy(text, e->d_name, stem);
            text[stem] = '\0';
            names[k++] = text;
            text += stem + 1;
        }
    }
    closedir(d);
    names[k] = NULL;
    qsort(names, k, sizeof *names, name_cmp);
    *n = (int)k;
    return names;
}

char *fgh_read_text(const char *path)
{
    size_t len;
    char *buf = fgh_read_file(path, &len);
    char *text = buf ? realloc(buf, len + 1) : NULL;
    if (!text) {
        free(buf);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

char *fgh_open_manifest(const char *given, const char *kernels, char *buf, size_t n,
                        const char **path)
{
    const char *chosen = given ? given : buf;
    if (!given) {
        snprintf(buf, n, "%s/manifest.json", kernels ? kernels : ".");
        if (access(buf, R_OK) != 0) {
            const char *gen = getenv("FG_GEN_DIR");
            snprintf(buf, n, "%s/manifest.json", gen && *gen ? gen : "generated");
        }
    }
    if (path)
        *path = chosen;
    return fgh_read_text(chosen);
}

/* Where the value of `key` (dotted parts, each after the one before) starts
 * in instance `name`'s entry, past its ": "; NULL if absent. */
static const char *manifest_at(const char *manifest, const char *name, const char *key)
{
    char pat[256];
    snprintf(pat, sizeof pat, "\"name\": \"%s\"", name);
    const char *at = manifest ? strstr(manifest, pat) : NULL;
    if (!at)
        return NULL;
    const char *end = strstr(at + strlen(pat), "\"name\": ");
    for (const char *part = key; *part;) {
        const size_t n = strcspn(part, ".");
        snprintf(pat, sizeof pat, "\"%.*s\": ", (int)n, part);
        at = strstr(at, pat);
        if (!at || (end && at > end))
            return NULL;
        at += strlen(pat);
        part += n + (part[n] == '.');
    }
    return at;
}

long long fgh_manifest_value(const char *manifest, const char *name, const char *key)
{
    const char *k = manifest_at(manifest, name, key);
    if (!k)
        return -1;
    while (*k == '[' || *k == ' ' || *k == '\n')   /* an array: its first element */
        k++;
    if (!strncmp(k, "true", 4))
        return 1;
    if (!strncmp(k, "false", 5))
        return 0;
    return strtoll(k, NULL, 10);
}

int fgh_manifest_ints(const char *manifest, const char *name, const char *key, long long *out,
                      int n)
{
    const char *k = manifest_at(manifest, name, key);
    if (!k)
        return -1;
    k += strspn(k, " \n");
    const bool array = *k == '[';
    if (array)
        k++;
    int got = 0;
    while (got < n) {
        k += strspn(k, " \n\t\r");
        char *next;
        const long long v = strtoll(k, &next, 10);
        if (next == k)
            break;
        out[got++] = v;
        if (!array)
            break;
        k = next + strspn(next, " \n\t\r");
        if (*k != ',')
            break;
        k++;
    }
    return got;
}

int fgh_manifest_text(const char *manifest, const char *name, const char *key, char *out,
                      size_t n)
{
    const char *k = manifest_at(manifest, name, key);
    if (!k || *k != '"' || n == 0)
        return -1;
    size_t len = 0;
    for (k++; *k && *k != '"'; k++) {
        if (*k == '\\' && k[1])   /* \" and \\ (the generator writes no others here) */
            k++;
        if (len + 1 >= n)
            return -1;
        out[len++] = *k;
    }
    if (*k != '"')
        return -1;
    out[len] = '\0';
    return (int)len;
}

bool fgh_manifest_floats(const char *manifest, const char *name, const char *key, float *out,
                         int n)
{
    const char *k = manifest_at(manifest, name, key);
    if (!k || *k != '"')
        return false;
    k++;
    for (int i = 0; i < n; i++) {
        char *next;
        out[i] = strtof(k, &next);
        if (next == k)
            return false;
        k = next + strspn(next, "f, ");
    }
    return true;
}

/* ------------------------------------------------------ instance selection */

static unsigned g_shard = 0, g_shards = 1;

bool fgh_shard_from_env(void)
{
    const char *spec = getenv("FG_SHARD");
    unsigned k, n;
    char end;
    if (!spec || !*spec)
        return true;
    if (sscanf(spec, "%u/%u%c", &k, &n, &end) != 2 || n == 0 || k >= n) {
        fprintf(stderr, "FG_SHARD=%s: expected K/N with K < N\n", spec);
        return false;
    }
    g_shard = k, g_shards = n;
    if (n > 1)
        printf("shard %u of %u (FG_SHARD): the instances whose name hashes to it\n", k, n);
    return true;
}

bool fgh_in_shard(const char *name)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    return h % g_shards == g_shard;
}

void fgh_select(const char *only, const char *const *names, size_t count, bool *chosen)
{
    if (only) {
        fgh_names_chosen(only, names, count, chosen);
        char parts[512];
        const size_t n = fgh_names_unmatched(only, names, count, parts, sizeof parts);
        if (n)   /* said, not refused: a list may name instances of several kernel sets */
            printf("--only: %zu part(s) match no instance here: %s\n", n, parts);
    }
    for (size_t k = 0; k < count; k++)
        chosen[k] = (!only || chosen[k]) && fgh_in_shard(names[k]);
}
