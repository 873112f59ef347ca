/* fusegen GPU harness: checks and timings shared by every kernel family.
 *
 * Plain C17 + the CUDA runtime API; no Debian packages (no YAML, JSON or test
 * libraries): it must build with nvcc and a C compiler alone.
 *
 *   harness.c       host side: test registry, counter-based inputs, f16/bf16
 *                   conversions, relative L2 error, statistics, GPU clock and
 *                   driver (NVML by dlopen, nvidia-smi as fallback), JSON.
 *   harness_cuda.cu device side: input generation and poisoning on the GPU,
 *                   the copy and read-only ceilings, CUDA-graph timing.
 *   numerics.c      storage conversions, inputs, error measures (no CUDA calls).
 *   names.c         instance names as the tests read them (no CUDA calls).
 *
 * Conventions: every function that talks to the GPU returns 0 on success and
 * a negative value after printing what failed (file:line, the CUDA error);
 * tests turn that into a failed CHECK.  Nothing here aborts. */
#ifndef FG_GPU_HARNESS_H
#define FG_GPU_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ tests */

/* CHECK(name, cond): records one pass or failure; on failure prints the name,
 * the condition text and the place.  Returns cond, so a test can stop early:
 *     if (!CHECK("alloc", fgh_ok(cudaMalloc(...)))) return;
 * CHECKF adds a printf-style detail line on failure. */
#define CHECK(name, cond) fgh_check_((cond) ? 1 : 0, (name), #cond, __FILE__, __LINE__, NULL)
#define CHECKF(name, cond, ...) \
    fgh_check_((cond) ? 1 : 0, (name), #cond, __FILE__, __LINE__, __VA_ARGS__)
int fgh_check_(int ok, const char *name, const char *expr, const char *file, int line,
               const char *fmt, ...);
/* A check that could not run here (e.g. no image for this GPU); counted apart. */
void fgh_skip(const char *name, const char *why);
/* With verbose on, passing checks are printed too (`--verbose`). */
void fgh_set_verbose(bool on);
/* Prints the closing line `N passed, N failed` (`, N skipped` when any were
 * skipped) and returns the number of failures (0..INT_MAX). */
int fgh_summary(void);
int fgh_failed_count(void);
int fgh_passed_count(void);
int fgh_skipped_count(void);
/* Adds another process's counts (a test that forks one process per GPU). */
void fgh_add_counts(int passed, int failed, int skipped);

/* ---------------------------------------------------------------- dtypes */

typedef enum { FGH_F32, FGH_F16, FGH_BF16 } fgh_dtype;
size_t fgh_dtype_size(fgh_dtype t);
const char *fgh_dtype_name(fgh_dtype t);
/* Round-to-nearest-even conversions, identical to __float2half_rn /
 * __float2bfloat16_rn (subnormals, overflow to inf, NaN kept). */
uint16_t fgh_f32_to_f16(float f);
float fgh_f16_to_f32(uint16_t h);
uint16_t fgh_f32_to_bf16(float f);
float fgh_bf16_to_f32(uint16_t h);
/* Element i of a host buffer of dtype t, as float. */
float fgh_get(const void *buf, fgh_dtype t, size_t i);
/* The storage type's rounding of v (f16 or bf16): as bits, and as its value. */
uint16_t fgh_round_to(fgh_dtype t, double v);
double fgh_rounded(fgh_dtype t, double v);
/* v[0..n) = v / sqrt(mean(v^2) + eps) * w (w: n storage values), in place,
 * in double: the references' one RMSNorm. */
void fgh_rmsnorm_row(double *v, int n, const void *w, fgh_dtype t, double eps);
/* RoPE on v [dim] at position pos: pair p is (p, p + dim/2) with neox, else
 * (2p, 2p+1), rotated by the fp32 angle (float)pos * inv_freq[p] (as the
 * kernels form it), cos and sin times cs_scale (YaRN's; else 1). */
void fgh_rope_rotate(double *v, int dim, int pos, const float *inv_freq, bool neox,
                     double cs_scale);

/* ----------------------------------------------------------------- inputs */

/* Counter-based generator: element i of stream `seed` is
 *     z = splitmix64(seed + (i + 1) * 0x9E3779B97F4A7C15)
 *     u = (float)(z >> 40) * 2^-23 - 1        exactly, in [-1, 1)
 *     v = u * scale                           one fp32 rounding
 * then rounded once to the storage type.  The device fill produces the same
 * bits (checked by the harness self-test). */
uint64_t fgh_splitmix64(uint64_t x);
float fgh_uniform(uint64_t seed, uint64_t i, float scale);
void fgh_fill_host(void *dst, fgh_dtype t, size_t n, uint64_t seed, float scale);
/* Same values, made on the device into device memory (async on stream). */
int fgh_fill_device(void *dptr, fgh_dtype t, size_t n, uint64_t seed, float scale,
                    cudaStream_t s);
/* A fresh seed for every check: a counter mixed with the run's base seed. */
void fgh_set_base_seed(uint64_t seed);
uint64_t fgh_base_seed(void);
uint64_t fgh_next_seed(void);

/* Poison: 0xFF bytes, a NaN in f16, bf16 and f32, so an unwritten element can
 * never pass.  fgh_poison_device is async on the stream. */
#define FGH_POISON_BYTE 0xFF
int fgh_poison_device(void *dptr, size_t bytes, cudaStream_t s);
/* The SMs' shared memory poisoned (async on the stream): a kernel on every
 * SM with the largest dynamic shared memory a block may have.  A kernel
 * launched next that reads shared memory it never wrote sees NaN, not
 * whatever finite values the SM held (the hardware does not clear it;
 * best effort: the scheduler is not bound to give every SM a block). */
int fgh_poison_shared(cudaStream_t s);

/* Host to device, landed on return (0; -1 on an error, reported).  A plain
 * cudaMemcpy from pageable memory may return once the bytes are staged,
 * before its DMA (on the legacy stream) has written them, and the tests
 * launch on non-blocking streams, which do not wait for that stream: a
 * small kernel launched next could read the old contents. */
int fgh_upload(void *dptr, const void *host, size_t bytes);

/* -------------------------------------------------------------- accuracy */

typedef struct fgh_err {
    double rel_l2;        /* ||out - ref|| / ||ref||; +inf if anything is non-finite */
    double max_abs;       /* largest |out - ref| over finite elements */
    size_t nonfinite;     /* NaN/inf elements of out (unwritten ones are NaN) */
    size_t first_bad;     /* index of the first non-finite element, or SIZE_MAX */
} fgh_err;
/* out: host copy of a device output of dtype t; ref: double reference. */
fgh_err fgh_compare(const void *out, fgh_dtype t, const double *ref, size_t n);
/* Bytes of buf equal to the poison pattern in whole elements (unwritten). */
size_t fgh_count_poisoned(const void *buf, fgh_dtype t, size_t n);

/* ------------------------------------------------------------------ device */

typedef struct fgh_device {
    int ordinal;
    char name[256];
    char pci_bus_id[32];
    int sms, cc_major, cc_minor;
    size_t l2_bytes, global_mem;
    int driver_version, runtime_version;   /* CUDA versions, e.g. 13000 */
    char driver[64];                       /* kernel driver, e.g. 580.159.04 */
} fgh_device;
/* Sets the device, creates its primary context, fills d.  Returns -1 with a
 * message if there is no usable device. */
int fgh_device_open(int ordinal, fgh_device *d);

/* SM and memory clock in MHz right now (NVML via dlopen of libnvidia-ml.so.1,
 * else nvidia-smi).  Returns -1 if neither works. */
int fgh_clock_sm_mhz(void);
int fgh_clock_mem_mhz(void);
/* Every clock reading taken during the run (by fgh_time_graph and the
 * ceilings), for the results file. */
typedef struct fgh_clock_stats {
    int samples, min, median, max;
    const char *source;                    /* "nvml", "nvidia-smi" or "none" */
} fgh_clock_stats;
fgh_clock_stats fgh_clock_summary(void);
int fgh_clock_sample(void);                /* reads, records and returns one */

/* ------------------------------------------------------------------ timing */

/* Enqueues launch number `i` (0-based) of a timed graph on stream s; the
 * callee picks its buffer set, usually i % nsets. */
typedef void (*fgh_enqueue_fn)(void *ctx, int i, cudaStream_t s);

typedef struct fgh_timing {
    double med_us, min_us, max_us;   /* per launch: graph replay time / launches */
    int reps, launches;
    int sm_clock_mhz;                /* median reading taken while it ran, -1 if none */
} fgh_timing;

/* Buffer sets needed so a set is reused only after >= 2 x L2 bytes of other
 * traffic: 1 + ceil(2 * l2 / bytes_per_launch). */
int fgh_rotation_sets(size_t bytes_per_launch, size_t l2_bytes);

/* Captures `launches` calls of fn into one CUDA graph, replays it twice to warm
 * up, then `reps` times back to back (events between replays), and reports
 * per-launch times (replay / launches; launch gaps included).  Reads the SM
 * clock while the replays run. */
int fgh_time_graph(cudaStream_t s, fgh_enqueue_fn fn, void *ctx, int launches, int reps,
                   fgh_timing *out);

/* The same measurement without a graph: each rep enqueues fn `launches` times
 * directly on the stream between two events (for work a graph changes, such
 * as memcpy nodes, which may go to the copy engines). */
int fgh_time_stream(cudaStream_t s, fgh_enqueue_fn fn, void *ctx, int launches, int reps,
                    fgh_timing *out);

/* The policy used by benchmarks: launches = a multiple of nsets long enough
 * that one replay takes >= target_ms (at most 65536, never fewer
 * than nsets; a set that alone takes target_ms is timed one set a
 * replay), calibrated from a replay of one set; reps >= 5. */
int fgh_bench(cudaStream_t s, fgh_enqueue_fn fn, void *ctx, int nsets, double target_ms,
              int reps, fgh_timing *out);

/* ---------------------------------------------------------------- ceilings */

typedef struct fgh_ceiling_variant {
    char name[64];
    double gbps;
    fgh_timing t;
} fgh_ceiling_variant;

typedef struct fgh_ceilings {
    size_t bytes;               /* buffer size (>= 1 GiB) */
    double copy_gbps;           /* best D2D copy variant: 2 x bytes / time */
    int ncopy;                  /* cudaMemcpyAsync on a stream, in a graph; a copy kernel */
    fgh_ceiling_variant copy[4];
    double read_gbps;           /* best read-only streaming variant: bytes / time */
    int nread;
    fgh_ceiling_variant read[8];
    double best_gbps;           /* max(copy, read): the ceiling fractions use this */
} fgh_ceilings;
int fgh_measure_ceilings(cudaStream_t s, size_t bytes, fgh_ceilings *c);

/* ------------------------------------------------------------------- stats */

double fgh_median(double *v, int n);   /* sorts v */
/* Least squares of us = t0 + bytes / rate over the points with bytes >=
 * min_bytes and a finite us: t0 in us, rate in GB/s.  False, both NaN, with
 * fewer than two such points or a slope that is not positive. */
bool fgh_fit_line(const double *bytes, const double *us, int n, double min_bytes, double *t0_us,
                  double *gbps);
/* fgh_fit_line over all n points, with their count: an instance's fit as
 * the benchmarks report it (NaN figures with fewer than two points). */
typedef struct fgh_fit {
    double t0_us, bw_gbps;
    int points;
} fgh_fit;
fgh_fit fgh_fit_points(const double *bytes, const double *us, int n);
/* The first error of a CUDA call, printed with the place; 0 / -1. */
int fgh_cuda_ok_(cudaError_t e, const char *what, const char *file, int line);
#define fgh_ok(call) (fgh_cuda_ok_((call), #call, __FILE__, __LINE__) == 0)

/* A whole file into malloc'd memory (cubins for test registries); NULL if
 * it cannot be read. */
void *fgh_read_file(const char *path, size_t *len);
/* The same, NUL-terminated (a manifest to scan); NULL if it cannot be read. */
char *fgh_read_text(const char *path);
/* The manifest a test program reads: `given` (--manifest) if set, else the
 * kernel folder's manifest.json (the gate's, which `make kernels` and
 * mk/kernels.mk write beside the cubins) where there is one, else the
 * generator's own (for cubins compiled elsewhere): $FG_GEN_DIR/manifest.json,
 * or generated/manifest.json where FG_GEN_DIR is unset or empty.  Its text
 * (free() it), NULL if it cannot be read; *path (given, or buf of n bytes)
 * the file chosen. */
char *fgh_open_manifest(const char *given, const char *kernels, char *buf, size_t n,
                        const char **path);
/* The names (without ".cubin") of the files prefix*.cubin in dir, sorted,
 * in one malloc'd block (free() it); *n their count.  NULL with *n = -1 if
 * dir cannot be opened or memory runs out. */
char **fgh_list_cubins(const char *dir, const char *prefix, int *n);

/* The generator's manifest.json, read by a plain text scan (the harness has
 * no JSON library).  `key` is looked for inside instance `name`'s entry (from
 * its "name" to the next instance's); a dotted key ("launch.grid") looks for
 * each part after the one before, so "launch.cluster" is the launch's even
 * where "params" has a "cluster" too. */
/* The number of "key" (an array gives its first element, true/false 1/0);
 * -1 if absent. */
long long fgh_manifest_value(const char *manifest, const char *name, const char *key);
/* Up to n numbers of "key" (an array's elements in order, or the one
 * number) into out; how many were read, -1 if absent. */
int fgh_manifest_ints(const char *manifest, const char *name, const char *key, long long *out,
                      int n);
/* The string value of "key" (e.g. "texts.softmax_scale", "dtype") into
 * out[n]; its length, or -1 if absent, not a string or longer than n - 1. */
int fgh_manifest_text(const char *manifest, const char *name, const char *key, char *out,
                      size_t n);
/* The n floats of a text value "key" written as a C list ("1.0e+00f,
 * 5.0e-01f, ..."): a table the kernel was compiled with; false if absent or
 * short. */
bool fgh_manifest_floats(const char *manifest, const char *name, const char *key, float *out,
                         int n);

/* ------------------------------------------------------ instance selection */

/* FG_SHARD=K/N (environment, so check-gpu.sh passes it to every program
 * untouched): a run takes the instances whose name hashes (FNV-1a) to K mod
 * N, so N runs of a suite split it without overlap whatever the kernel folder
 * holds (a lent GPU machine gives each command 10 minutes).  Unset, "" or
 * 0/1: all.  Reads it once, says which shard runs when there are several;
 * false (a message on stderr, no change) if it is not K/N with K < N. */
bool fgh_shard_from_env(void);
bool fgh_in_shard(const char *name);
/* A run's instances among `names` (all of them), into chosen[]: those in
 * this run's shard that --only chooses (fgh_names_chosen; only NULL: all). */
void fgh_select(const char *only, const char *const *names, size_t count, bool *chosen);

/* A seeded permutation of 0..n-1 (Fisher-Yates over splitmix64(seed + i)):
 * scattered page tables, shuffled orders. */
void fgh_permutation(int *perm, int n, uint64_t seed);

/* --------------------------------------------------------- instance names */

/* The options every GPU test takes (names.c): --kernels DIR, --manifest FILE,
 * --only A,B, --seed N, --verbose, --bench, --json FILE, --commit C, --quick,
 * --no-baseline.  fgh_args_init: kernels from $FG_KERNELS_DIR else
 * build/kernels, commit from $FG_COMMIT, the baseline on. */
typedef struct fgh_args {
    const char *kernels, *manifest, *only, *json, *commit;
    unsigned long long seed;   /* with seed_set: fgh_set_base_seed's */
    bool seed_set, verbose, bench, quick, baseline;
} fgh_args;
void fgh_args_init(fgh_args *a);
/* argv[*i], if it is one of them: taken with its value (*i moves past it),
 * true; false for anything else (the test's own options, or a usage error). */
bool fgh_common_arg(fgh_args *a, int argc, char **argv, int *i);
/* The parsed --seed and --verbose, set, and stdout line-buffered (harness.c). */
void fgh_args_apply(const fgh_args *a);

/* names.c: plain C17, no CUDA calls (unit-tested on the CPU:
 * tests/unit/test_harness_names.c). */

/* Whether `name` is one of the whole names in `list` (comma-separated, as
 * --only gives them; compared in place, so a list of hundreds is never cut). */
bool fgh_name_listed(const char *list, const char *name);

/* --only A,B,... over instances `names` (all of them), into chosen[]: a part
 * that is an instance's whole name chooses that instance alone, another part
 * the names containing it (so a tuning run's list of whole names selects
 * those alone, though one may begin another, and "_g64_" still selects a
 * form).  Each part is classified once. */
void fgh_names_chosen(const char *list, const char *const *names, size_t count, bool *chosen);

/* The parts of --only's list that choose none of `names` (a stale name, a
 * part that no longer matches a tuned instance's): their count, and the
 * parts comma-separated into out[size] (cut at size). */
size_t fgh_names_unmatched(const char *list, const char *const *names, size_t count, char *out,
                           size_t size);

/* An RMSNorm kernel file, rmsnorm_<arch>_<dtype>_h<hidden>_t<threads>[c].cubin
 * (c: x loaded through the caches, a tuning candidate or a tuned choice). */
typedef struct fgh_rmsnorm_file {
    char name[160];   /* the instance: the file name less .cubin */
    char arch[32];
    fgh_dtype dt;
    int hidden, threads;
    bool cache_x;
} fgh_rmsnorm_file;
/* Reads a file name (no folder) as one; false for any other file. */
bool fgh_rmsnorm_parse(const char *file, fgh_rmsnorm_file *out);

/* -------------------------------------------------------------------- JSON */

/* A small streaming writer: it tracks nesting and commas.  Keys are ignored
 * inside arrays (pass NULL). */
typedef struct fgh_json {
    FILE *f;
    int depth;
    bool first[32];
    bool in_array[32];
} fgh_json;
void fgh_json_init(fgh_json *j, FILE *f);
void fgh_json_obj_begin(fgh_json *j, const char *key);
void fgh_json_obj_end(fgh_json *j);
void fgh_json_arr_begin(fgh_json *j, const char *key);
void fgh_json_arr_end(fgh_json *j);
void fgh_json_str(fgh_json *j, const char *key, const char *v);
void fgh_json_num(fgh_json *j, const char *key, double v);   /* non-finite -> null */
void fgh_json_int(fgh_json *j, const char *key, long long v);
void fgh_json_bool(fgh_json *j, const char *key, bool v);
void fgh_json_null(fgh_json *j, const char *key);
void fgh_json_timing(fgh_json *j, const char *key, const fgh_timing *t);
/* The header every results file starts with: schema, date (UTC), commit, GPU;
 * the clocks summary is written by fgh_json_clocks. */
void fgh_json_header(fgh_json *j, const fgh_device *d, const char *commit, const char *tool);
void fgh_json_ceilings(fgh_json *j, const fgh_ceilings *c);
void fgh_json_clocks(fgh_json *j);
/* An instance's fit T = t0 + bytes / bw_eff over its timed points (over:
 * which), the fused kernel's and its baseline's (none: NaN figures):
 * printed on a line, with the fraction of the read ceiling, and written as
 * an element of a "fits" array (a fit without a positive slope printed as
 * none, its figures null).  Nothing where the kernel has fewer than two
 * points. */
void fgh_report_fit(fgh_json *j, const char *name, const char *over, const fgh_fit *fused,
                    const fgh_fit *base, double read_gbps);
/* A bench results file: opened at path (stdout when NULL), the outer object
 * begun and the header written (fgh_json_header), *f its stream; -1 (and
 * why, on stderr) when it cannot be opened.  fgh_bench_doc_end writes the
 * clocks, ends the object and closes what begin opened. */
int fgh_bench_doc_begin(fgh_json *j, FILE **f, const char *path, const fgh_device *d,
                        const char *commit, const char *tool);
void fgh_bench_doc_end(fgh_json *j, FILE *f, const char *path);
void fgh_utc_now(char *buf, size_t n);   /* 2026-11-20T12:34:56Z */

#ifdef __cplusplus
}
#endif

#endif
