// RMSNorm instances on the GPU: numerics against the C reference, every
// element written, nothing written past the rows, CUDA-graph replay bitwise
// equal to a direct launch; with --bench, timings against a plain baseline
// kernel and the copy/read ceilings measured in the same run.
//
//   test_rmsnorm [--kernels DIR] [--manifest FILE] [--only A,B] [--seed N] [--verbose]
//                [--quick] [--no-baseline]
//   test_rmsnorm --bench [--json FILE] [--commit C] [--kernels DIR] [--manifest FILE]
//                [--only A,B] [--quick] [--no-baseline]
//
// Kernels: DIR/rmsnorm_<arch>_<dtype>_h<HIDDEN>_t<THREADS>[c].cubin (what
// `make kernels` writes to build/kernels/; `c`: x loaded through the caches,
// a tuning candidate or a tuned choice).  Everything comes from the name;
// with --manifest (the generator's or the gate's manifest.json) each instance
// it lists is also checked to have the block size and x path its name says.
// --only A,B,...: those instances alone, by whole name (block sizes are
// prefixes of one another: t32 of t320 and t32c); a selection that runs
// nothing fails.  fusegen tune runs this program as test_decode_attn: --only
// with --bench --quick --no-baseline to time, --only alone to check.
// --no-baseline: the instances alone (no baseline kernel checked or timed).
// --quick: checks at hidden 4096 and 512 only, and the benchmark at 1 and 4096
// rows (and, without --only, hidden 4096 only).
// Two launch paths, each checked:
//   drv   the CUDA driver API directly (libcuda.so.1 by dlopen, primary
//         context): cuModuleLoadData + cuLaunchKernel;
//   fgrt  libfgrt (runtime/include/fgrt.h), when built with -DFG_HAVE_FGRT: a
//         registry made from the same images, fg_init, fg_context_lookup,
//         fg_rmsnorm_bind with the instance named (block sizes of one hidden
//         size share the registry key), fg_launch.  The benchmark launches
//         through fgrt when it is there.
// Signature: extern "C" __global__ void NAME(const T* x, const T* w, T* y,
// int rows, float eps); grid = rows, block = THREADS.
//
// --bench JSON (schema fusegen-bench/1), one case per instance and row count:
// "name" (INSTANCE/rowsN), "instance", "shape" {rows, hidden}, "threads",
// "cache_x", "time" (the timing: median, min, max, ... in us, as
// test_decode_attn's cases), bytes, rates, rel_l2, and "baselines" unless
// --no-baseline.  Each point timed is also logged as "INSTANCE rows=N ...".
#include "device_convert.cuh"
#include "harness.h"
#include "ref.h"
#ifdef FG_HAVE_FGRT
#include "fgrt.h"
#endif

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------- loader

typedef CUresult (*pfn_init)(unsigned);
typedef CUresult (*pfn_load)(CUmodule *, const void *);
typedef CUresult (*pfn_getfn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*pfn_launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*pfn_errstr)(CUresult, const char **);

static struct {
    pfn_init init;
    pfn_load load;
    pfn_getfn getfn;
    pfn_launch launch;
    pfn_errstr errstr;
} drv;

static int driver_open(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
        return -1;
    }
    drv.init = (pfn_init)dlsym(h, "cuInit");
    drv.load = (pfn_load)dlsym(h, "cuModuleLoadData");
    drv.getfn = (pfn_getfn)dlsym(h, "cuModuleGetFunction");
    drv.launch = (pfn_launch)dlsym(h, "cuLaunchKernel");
    drv.errstr = (pfn_errstr)dlsym(h, "cuGetErrorString");
    if (!drv.init || !drv.load || !drv.getfn || !drv.launch || !drv.errstr)
        return -1;
    return drv.init(0) == CUDA_SUCCESS ? 0 : -1;
}

static const char *cu_err(CUresult r)
{
    const char *s = NULL;
    if (drv.errstr)
        drv.errstr(r, &s);
    return s ? s : "unknown CUDA driver error";
}

typedef struct inst {
    char name[160];
    char path[1024];
    fgh_dtype dt;
    int hidden, threads;
    bool cache_x;           // x through the caches (name suffix c); the launch is the same
    CUfunction fn;
    char load_error[256];   // non-empty: could not be loaded here (skip)
    void *image;            // the cubin, kept for the fgrt registry
    size_t image_size;
    int reg_index;          // its fgrt registry entry, -1 if none
} inst;

#define MAX_INSTS 256
static inst g_inst[MAX_INSTS];
static int g_ninst;

// dtype, then hidden, then name: one order whatever the folder's
static int cmp_inst(const void *a, const void *b)
{
    const inst *x = (const inst *)a, *y = (const inst *)b;
    if (x->dt != y->dt)
        return (int)x->dt - (int)y->dt;
    if (x->hidden != y->hidden)
        return x->hidden - y->hidden;
    return strcmp(x->name, y->name);
}

// The rmsnorm cubins of `dir` (those --only names, when given), loaded.
// Each name --only gives that is not there is reported as skipped.
static int discover(const char *dir, const char *only)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "cannot open kernel folder %s\n", dir);
        return -1;
    }
    struct dirent *e;
    int overflow = 0;   /* instances past the table: a failure, never a silent skip */
    while ((e = readdir(d))) {
        fgh_rmsnorm_file f;
        if (!fgh_rmsnorm_parse(e->d_name, &f) || (only && !fgh_name_listed(only, f.name)))
            continue;
        if (g_ninst == MAX_INSTS) {
            overflow++;
            continue;
        }
        inst *in = &g_inst[g_ninst++];
        memset(in, 0, sizeof *in);
        snprintf(in->name, sizeof in->name, "%s", f.name);
        snprintf(in->path, sizeof in->path, "%s/%s", dir, e->d_name);
        in->dt = f.dt;
        in->hidden = f.hidden;
        in->threads = f.threads;
        in->cache_x = f.cache_x;
        in->reg_index = -1;
    }
    closedir(d);
    CHECKF("rmsnorm: kernel folder", overflow == 0,
           "%d instances past the %d this program holds were not tested", overflow, MAX_INSTS);
    qsort(g_inst, (size_t)g_ninst, sizeof g_inst[0], cmp_inst);
    for (const char *part = only; part && *part;) {
        const size_t n = strcspn(part, ",");
        bool found = n == 0;
        for (int i = 0; i < g_ninst && !found; i++)
            found = strlen(g_inst[i].name) == n && !strncmp(g_inst[i].name, part, n);
        if (!found) {
            char name[200];
            snprintf(name, sizeof name, "%.*s", (int)(n < 160 ? n : 160), part);
            fgh_skip(name, "--only names it, but the kernel folder has no such rmsnorm cubin");
        }
        part += n + (part[n] == ',');
    }
    for (int i = 0; i < g_ninst; i++) {
        inst *in = &g_inst[i];
        size_t n = 0;
        void *img = fgh_read_file(in->path, &n);
        if (!img) {
            snprintf(in->load_error, sizeof in->load_error, "cannot read %s", in->path);
            continue;
        }
        in->image = img;
        in->image_size = n;
        CUmodule m;
        CUresult r = drv.load(&m, img);
        if (r == CUDA_SUCCESS)
            r = drv.getfn(&in->fn, m, in->name);
        if (r != CUDA_SUCCESS)
            snprintf(in->load_error, sizeof in->load_error, "load: %s", cu_err(r));
    }
    return 0;
}

// How many instances can run here (found, loaded).
static int runnable(void)
{
    int n = 0;
    for (int i = 0; i < g_ninst; i++)
        n += !g_inst[i].load_error[0];
    return n;
}

// With a manifest: each instance it lists has the block size and x path its
// name says (the name is what this program reads them from).
static void check_manifest(const char *manifest)
{
    int listed = 0, wrong = 0;
    for (int i = 0; i < g_ninst; i++) {
        const inst *in = &g_inst[i];
        const long long threads = fgh_manifest_value(manifest, in->name, "threads");
        const long long cached = fgh_manifest_value(manifest, in->name, "cache_x");
        if (threads < 0)
            continue;   // not in this manifest: the name says it all
        listed++;
        if (threads != in->threads || (cached >= 0 && cached != (long long)in->cache_x)) {
            printf("manifest: %s has threads %lld, cache_x %lld; its name says %d, %d\n",
                   in->name, threads, cached, in->threads, (int)in->cache_x);
            wrong++;
        }
    }
    CHECKF("rmsnorm: names agree with the manifest", wrong == 0, "%d of %d listed differ", wrong,
           listed);
}

static const float kEps = 1e-6f;

// --only (NULL: every instance found) and --no-baseline
static const char *g_only;
static bool g_baseline = true;

enum { PATH_DRV, PATH_FGRT };
static const char *path_name(int p) { return p == PATH_DRV ? "drv" : "fgrt"; }
static int g_paths[2] = {PATH_DRV}, g_npaths = 1;
static int g_bench_path = PATH_DRV;

#ifdef FG_HAVE_FGRT
static fg_context *g_fg;
static fg_kernel_entry g_reg[MAX_INSTS];
static size_t g_reg_size[MAX_INSTS];
static size_t g_nreg;
#endif

// One kernel call on fixed buffers: prepared once (fgrt: bound), enqueued
// as often as needed, released.
typedef struct rms_call {
    const inst *in;
    int path;
    const void *x, *w;
    void *y;
    int rows;
#ifdef FG_HAVE_FGRT
    fg_binding *b;
#endif
} rms_call;

static int rms_prepare(rms_call *c, int path, const inst *in, const void *x, const void *w, void *y,
                       int rows, char *err, size_t errn)
{
    memset(c, 0, sizeof *c);
    c->in = in;
    c->path = path;
    c->x = x;
    c->w = w;
    c->y = y;
    c->rows = rows;
    if (path == PATH_DRV)
        return 0;
#ifdef FG_HAVE_FGRT
    fg_rmsnorm_args a;
    memset(&a, 0, sizeof a);
    a.dtype = in->dt == FGH_F16 ? FG_REG_F16 : FG_REG_BF16;
    a.hidden = in->hidden;
    a.rows = rows;
    a.x = x;
    a.weight = w;
    a.y = y;
    a.eps = kEps;
    a.instance = in->name;   // this block size, not the lookup's pick among its hidden size's
    const fg_status st = fg_rmsnorm_bind(g_fg, &a, &c->b);
    if (st != FG_OK) {
        snprintf(err, errn, "fg_rmsnorm_bind: %s (%s)", fg_status_string(st), fg_last_error());
        return -1;
    }
    fg_binding_info bi;
    memset(&bi, 0, sizeof bi);
    if (fg_binding_get_info(c->b, &bi) == FG_OK && bi.entry && !strcmp(bi.entry->name, in->name))
        return 0;
    snprintf(err, errn, "fg_rmsnorm_bind bound %s, not %s", bi.entry ? bi.entry->name : "?",
             in->name);
    fg_binding_free(c->b);
    c->b = NULL;
    return -1;
#else
    snprintf(err, errn, "libfgrt not built in");
    return -1;
#endif
}

static int rms_enqueue(const rms_call *c, cudaStream_t s, char *err, size_t errn)
{
    if (c->path == PATH_DRV) {
        const void *x = c->x, *w = c->w;
        void *y = c->y;
        int rows = c->rows;
        float eps = kEps;
        void *args[] = {(void *)&x, (void *)&w, (void *)&y, (void *)&rows, (void *)&eps};
        const CUresult r = drv.launch(c->in->fn, (unsigned)rows, 1, 1, (unsigned)c->in->threads, 1, 1,
                                      0, (CUstream)s, args, NULL);
        if (r == CUDA_SUCCESS)
            return 0;
        if (err)
            snprintf(err, errn, "cuLaunchKernel: %s", cu_err(r));
        return -1;
    }
#ifdef FG_HAVE_FGRT
    const fg_status st = fg_launch(c->b, (void *)s);
    if (st == FG_OK)
        return 0;
    if (err)
        snprintf(err, errn, "fg_launch: %s (%s)", fg_status_string(st), fg_last_error());
#endif
    return -1;
}

static void rms_release(rms_call *c)
{
#ifdef FG_HAVE_FGRT
    fg_binding_free(c->b);
    c->b = NULL;
#endif
    (void)c;
}

// --------------------------------------------------------------- baseline

// The plain way: one warp per row, two passes over x (sum of squares, then
// scale), 16-byte loads, fp32 sum.  Four rows per 128-thread block.

template <typename T>
__global__ void __launch_bounds__(128) baseline_rmsnorm(const T *__restrict__ x, const T *__restrict__ w,
                                                        T *__restrict__ y, int rows, int hidden, float eps)
{
    const int row = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows)
        return;
    const uint4 *xr = reinterpret_cast<const uint4 *>(x + (size_t)row * hidden);
    const uint4 *wr = reinterpret_cast<const uint4 *>(w);
    uint4 *yr = reinterpret_cast<uint4 *>(y + (size_t)row * hidden);
    const int nv = hidden / 8;
    float ss = 0.f;
    for (int i = lane; i < nv; i += 32) {
        const uint4 v = xr[i];
        const T *e = reinterpret_cast<const T *>(&v);
        for (int j = 0; j < 8; j++)
            ss += fgh_to_f(e[j]) * fgh_to_f(e[j]);
    }
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float scale = rsqrtf(ss / hidden + eps);
    for (int i = lane; i < nv; i += 32) {
        const uint4 v = xr[i], wv = wr[i];
        const T *e = reinterpret_cast<const T *>(&v), *we = reinterpret_cast<const T *>(&wv);
        uint4 o;
        T *oe = reinterpret_cast<T *>(&o);
        for (int j = 0; j < 8; j++)
            oe[j] = fgh_from_f<T>(fgh_to_f(e[j]) * scale * fgh_to_f(we[j]));
        yr[i] = o;
    }
}

static int launch_baseline(fgh_dtype t, const void *x, const void *w, void *y, int rows, int hidden,
                           float eps, cudaStream_t s)
{
    const unsigned blocks = (unsigned)((rows + 3) / 4);
    if (t == FGH_F16)
        baseline_rmsnorm<__half><<<blocks, 128, 0, s>>>((const __half *)x, (const __half *)w,
                                                        (__half *)y, rows, hidden, eps);
    else
        baseline_rmsnorm<__nv_bfloat16><<<blocks, 128, 0, s>>>(
            (const __nv_bfloat16 *)x, (const __nv_bfloat16 *)w, (__nv_bfloat16 *)y, rows, hidden, eps);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

// ------------------------------------------------------------------ checks

static const int kGuard = 4096;   // poisoned elements after y that must stay poisoned

static double tolerance(fgh_dtype t) { return t == FGH_F16 ? 2e-3 : 1e-2; }

typedef struct dev_bufs {
    void *x, *w, *y;
    size_t max_elems;
} dev_bufs;

// One check: fresh inputs of `scale`, poisoned output, launch (kernel or
// baseline), compare.  Returns rel_l2 (inf when anything is off).
static double check_once(const inst *in, int path /* -1: baseline */, dev_bufs *b, int rows,
                         float scale, cudaStream_t s, const char *label)
{
    const fgh_dtype t = in->dt;
    const size_t es = fgh_dtype_size(t), n = (size_t)rows * in->hidden;
    const uint64_t sx = fgh_next_seed(), sw = fgh_next_seed();
    void *hx = malloc(n * es), *hw = malloc((size_t)in->hidden * es),
         *hy = malloc((n + kGuard) * es);
    double *ref = (double *)malloc(n * sizeof(double));
    double rel = INFINITY;
    char name[320];
    if (!hx || !hw || !hy || !ref)
        goto out;
    snprintf(name, sizeof name, "%s rows=%d scale=%g: launch", label, rows, (double)scale);
    {
        bool ok = fgh_fill_device(b->x, t, n, sx, scale, s) == 0 &&
                  fgh_fill_device(b->w, t, (size_t)in->hidden, sw, 1.0f, s) == 0 &&
                  fgh_poison_device(b->y, (n + kGuard) * es, s) == 0;
        char err[512] = "";
        rms_call c;
        memset(&c, 0, sizeof c);
        if (ok && path < 0)
            ok = launch_baseline(t, b->x, b->w, b->y, rows, in->hidden, kEps, s) == 0;
        else if (ok) {
            ok = rms_prepare(&c, path, in, b->x, b->w, b->y, rows, err, sizeof err) == 0 &&
                 rms_enqueue(&c, s, err, sizeof err) == 0;
        }
        ok = ok && fgh_ok(cudaStreamSynchronize(s)) && fgh_ok(cudaGetLastError()) &&
             fgh_ok(cudaMemcpy(hy, b->y, (n + kGuard) * es, cudaMemcpyDeviceToHost));
        if (path >= 0)
            rms_release(&c);
        if (!CHECKF(name, ok, "%s", err))
            goto out;
    }
    fgh_fill_host(hx, t, n, sx, scale);
    fgh_fill_host(hw, t, (size_t)in->hidden, sw, 1.0f);
    fgh_ref_rmsnorm(hx, hw, t, rows, in->hidden, kEps, ref);
    {
        const fgh_err e = fgh_compare(hy, t, ref, n);
        snprintf(name, sizeof name, "%s rows=%d scale=%g: every element written", label, rows,
                 (double)scale);
        CHECKF(name, e.nonfinite == 0, "%zu of %zu non-finite (first at row %zu col %zu)", e.nonfinite,
               n, e.first_bad / in->hidden, e.first_bad % in->hidden);
        snprintf(name, sizeof name, "%s rows=%d scale=%g: rel L2 <= %g", label, rows, (double)scale,
                 tolerance(t));
        CHECKF(name, e.rel_l2 <= tolerance(t), "rel_l2 %.3g, max |err| %.3g", e.rel_l2, e.max_abs);
        snprintf(name, sizeof name, "%s rows=%d scale=%g: nothing written past the rows", label, rows,
                 (double)scale);
        const size_t guard_ok = fgh_count_poisoned((char *)hy + n * es, t, kGuard);
        CHECKF(name, guard_ok == (size_t)kGuard, "%zu of %d guard elements overwritten",
               (size_t)kGuard - guard_ok, kGuard);
        rel = e.rel_l2;
    }
out:
    free(hx);
    free(hw);
    free(hy);
    free(ref);
    return rel;
}

// A direct launch, then a graph of [poison y, launch] x 8 replayed 125 times
// (1000 launches): the result must be bitwise the direct one.
static void check_graph(const inst *in, int path, dev_bufs *b, int rows, cudaStream_t s)
{
    const fgh_dtype t = in->dt;
    const size_t es = fgh_dtype_size(t), n = (size_t)rows * in->hidden;
    void *y1 = malloc(n * es), *y2 = malloc(n * es);
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    char name[320], err[512] = "";
    rms_call c;
    snprintf(name, sizeof name,
             "%s [%s] rows=%d: graph of 8 launches x 125 replays == direct launch (bitwise)", in->name,
             path_name(path), rows);
    const bool bound = rms_prepare(&c, path, in, b->x, b->w, b->y, rows, err, sizeof err) == 0;
    bool ok = bound && y1 && y2 && fgh_fill_device(b->x, t, n, fgh_next_seed(), 1.0f, s) == 0 &&
              fgh_fill_device(b->w, t, (size_t)in->hidden, fgh_next_seed(), 1.0f, s) == 0 &&
              fgh_poison_device(b->y, n * es, s) == 0 && rms_enqueue(&c, s, err, sizeof err) == 0 &&
              fgh_ok(cudaStreamSynchronize(s)) &&
              fgh_ok(cudaMemcpy(y1, b->y, n * es, cudaMemcpyDeviceToHost));
    if (ok && fgh_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal))) {
        for (int i = 0; i < 8; i++) {
            fgh_poison_device(b->y, n * es, s);
            ok = ok && rms_enqueue(&c, s, err, sizeof err) == 0;
        }
        ok = fgh_ok(cudaStreamEndCapture(s, &g)) && ok;
    } else
        ok = false;
    ok = ok && fgh_ok(cudaGraphInstantiate(&ge, g, 0));   // the graph poisons y itself
    for (int r = 0; ok && r < 125; r++)
        ok = fgh_ok(cudaGraphLaunch(ge, s));
    ok = ok && fgh_ok(cudaStreamSynchronize(s)) &&
         fgh_ok(cudaMemcpy(y2, b->y, n * es, cudaMemcpyDeviceToHost));
    if (CHECKF(name, ok, "%s", err)) {
        const size_t pois = fgh_count_poisoned(y2, t, n);
        const size_t pois1 = fgh_count_poisoned(y1, t, n);
        CHECKF(name, pois == 0 && pois1 == 0 && memcmp(y1, y2, n * es) == 0,
               "%zu / %zu unwritten, bytes %s", pois1, pois, memcmp(y1, y2, n * es) ? "differ" : "equal");
    }
    if (bound)
        rms_release(&c);
    if (ge)
        cudaGraphExecDestroy(ge);
    if (g)
        cudaGraphDestroy(g);
    free(y1);
    free(y2);
}

static void run_checks(cudaStream_t s, bool quick)
{
    const int rows_list[] = {1, 4, 16, 64};
    const float scales[] = {1e-2f, 1.0f, 30.0f};
    printf("\n%-34s %10s %10s %10s\n", "instance", "max rel_l2", "tolerance", "baseline");
    for (int i = 0; i < g_ninst; i++) {
        inst *in = &g_inst[i];
        if (in->load_error[0]) {
            fgh_skip(in->name, in->load_error);
            continue;
        }
        if (quick && !g_only && in->hidden != 4096 && in->hidden != 512)
            continue;
        dev_bufs b = {NULL, NULL, NULL, (size_t)64 * in->hidden};
        const size_t es = fgh_dtype_size(in->dt);
        if (!CHECK(in->name, fgh_ok(cudaMalloc(&b.x, b.max_elems * es)) &&
                                 fgh_ok(cudaMalloc(&b.w, (size_t)in->hidden * es)) &&
                                 fgh_ok(cudaMalloc(&b.y, (b.max_elems + kGuard) * es))))
            return;
        double worst = 0, worst_base = 0;
        for (int p = 0; p < g_npaths; p++) {
            char label[200];
            snprintf(label, sizeof label, "%.160s [%s]", in->name, path_name(g_paths[p]));
            for (int r = 0; r < 4; r++)
                for (int k = 0; k < 3; k++) {
                    const double e = check_once(in, g_paths[p], &b, rows_list[r], scales[k], s, label);
                    worst = e > worst || isnan(e) ? e : worst;
                }
        }
        char label[200];
        snprintf(label, sizeof label, "baseline %s h%d", fgh_dtype_name(in->dt), in->hidden);
        for (int k = 0; g_baseline && k < 3; k++) {
            const double e = check_once(in, -1, &b, 16, scales[k], s, label);
            worst_base = e > worst_base || isnan(e) ? e : worst_base;
        }
        for (int p = 0; p < g_npaths; p++) {
            check_graph(in, g_paths[p], &b, 64, s);
            check_graph(in, g_paths[p], &b, 1, s);
        }
        if (g_baseline)
            printf("%-34s %10.3g %10.3g %10.3g\n", in->name, worst, tolerance(in->dt), worst_base);
        else
            printf("%-34s %10.3g %10.3g %10s\n", in->name, worst, tolerance(in->dt), "-");
        cudaFree(b.x);
        cudaFree(b.w);
        cudaFree(b.y);
    }
    printf("\n");
}

// ------------------------------------------------------------------- bench

typedef struct bench_ctx {
    const inst *in;
    bool baseline;
    const char *x, *w;
    char *y;
    size_t xs, ws;   // bytes per set
    int rows, nsets;
    rms_call *calls; // one prepared call per set
    int errors;
    char err[512];
} bench_ctx;

static void enqueue_bench(void *c, int i, cudaStream_t s)
{
    bench_ctx *b = (bench_ctx *)c;
    const int set = i % b->nsets;
    const void *x = b->x + (size_t)set * b->xs, *w = b->w + (size_t)set * b->ws;
    void *y = b->y + (size_t)set * b->xs;
    int rc;
    if (b->baseline)
        rc = launch_baseline(b->in->dt, x, w, y, b->rows, b->in->hidden, kEps, s);
    else
        rc = rms_enqueue(&b->calls[set], s, b->err, sizeof b->err);
    b->errors += rc != 0;
}

// rel L2 of set 0's output (inputs regenerated on the host from the seeds).
static double verify_set0(const inst *in, const bench_ctx *b, uint64_t sx, uint64_t sw)
{
    const size_t es = fgh_dtype_size(in->dt), n = (size_t)b->rows * in->hidden;
    void *hx = malloc(n * es), *hw = malloc((size_t)in->hidden * es), *hy = malloc(n * es);
    double *ref = (double *)malloc(n * sizeof(double));
    double rel = INFINITY;
    if (hx && hw && hy && ref && fgh_ok(cudaMemcpy(hy, b->y, n * es, cudaMemcpyDeviceToHost))) {
        fgh_fill_host(hx, in->dt, n, sx, 1.0f);
        fgh_fill_host(hw, in->dt, (size_t)in->hidden, sw, 1.0f);
        fgh_ref_rmsnorm(hx, hw, in->dt, b->rows, in->hidden, kEps, ref);
        rel = fgh_compare(hy, in->dt, ref, n).rel_l2;
    }
    free(hx);
    free(hw);
    free(hy);
    free(ref);
    return rel;
}

typedef struct bench_row {
    const inst *in;
    int rows, nsets;
    double bytes, flops;
    fgh_timing k, base;
    double rel_k, rel_base;
    bool ok;
} bench_row;

static int run_bench(cudaStream_t s, const fgh_device *dev, const char *json_path, const char *commit,
                     bool quick)
{
    fgh_ceilings c;
    printf("measuring ceilings (1 GiB buffers)...\n");
    if (!CHECK("bench: ceilings measured", fgh_measure_ceilings(s, (size_t)1 << 30, &c) == 0))
        return -1;
    printf("copy ceiling %.0f GB/s (D2D, read+written), read-only ceiling %.0f GB/s\n", c.copy_gbps,
           c.read_gbps);
    for (int i = 0; i < c.ncopy; i++)
        printf("  copy %-40s %7.0f GB/s  %8.1f us\n", c.copy[i].name, c.copy[i].gbps, c.copy[i].t.med_us);
    for (int i = 0; i < c.nread; i++)
        printf("  read %-40s %7.0f GB/s  %8.1f us\n", c.read[i].name, c.read[i].gbps, c.read[i].t.med_us);
    // --quick: the ends (a decode step's row, a prefill's), as test_decode_attn's 1K and S_max
    static const int all_rows[] = {1, 16, 256, 4096}, quick_rows[] = {1, 4096};
    const int *rows_list = quick ? quick_rows : all_rows;
    const int nrows = quick ? 2 : 4;
    bench_row *res = (bench_row *)calloc((size_t)g_ninst * nrows, sizeof *res);
    int nres = 0;
    for (int i = 0; i < g_ninst; i++) {
        const inst *in = &g_inst[i];
        if (in->load_error[0]) {
            fgh_skip(in->name, in->load_error);
            continue;
        }
        if (quick && !g_only && in->hidden != 4096)
            continue;
        for (int r = 0; r < nrows; r++) {
            bench_row *br = &res[nres++];
            br->in = in;
            br->rows = rows_list[r];
            const size_t es = fgh_dtype_size(in->dt);
            const size_t xs = (size_t)br->rows * in->hidden * es, ws = (size_t)in->hidden * es;
            br->bytes = 2.0 * xs + ws;
            br->flops = 4.0 * br->rows * in->hidden;
            br->nsets = fgh_rotation_sets(2 * xs + ws, dev->l2_bytes);
            bench_ctx b;
            memset(&b, 0, sizeof b);
            b.in = in;
            b.xs = xs;
            b.ws = ws;
            b.rows = br->rows;
            b.nsets = br->nsets;
            int nprepared = 0;
            void *px = NULL, *pw = NULL, *py = NULL;
            const uint64_t sx = fgh_next_seed(), sw = fgh_next_seed();
            char name[400];
            snprintf(name, sizeof name, "bench %.160s rows=%d", in->name, br->rows);
            bool ok = fgh_ok(cudaMalloc(&px, xs * br->nsets)) && fgh_ok(cudaMalloc(&pw, ws * br->nsets)) &&
                      fgh_ok(cudaMalloc(&py, xs * br->nsets)) &&
                      fgh_fill_device(px, in->dt, xs / es * br->nsets, sx, 1.0f, s) == 0 &&
                      fgh_fill_device(pw, in->dt, ws / es * br->nsets, sw, 1.0f, s) == 0 &&
                      fgh_poison_device(py, xs * br->nsets, s) == 0 && fgh_ok(cudaStreamSynchronize(s));
            b.x = (const char *)px;
            b.w = (const char *)pw;
            b.y = (char *)py;
            b.calls = (rms_call *)calloc((size_t)br->nsets, sizeof *b.calls);
            ok = ok && b.calls;
            for (int k = 0; ok && k < br->nsets; k++, nprepared++)
                ok = rms_prepare(&b.calls[k], g_bench_path, in, b.x + (size_t)k * xs, b.w + (size_t)k * ws,
                                 b.y + (size_t)k * xs, br->rows, b.err, sizeof b.err) == 0;
            ok = ok && fgh_bench(s, enqueue_bench, &b, br->nsets, 2.0, 7, &br->k) == 0 && !b.errors;
            if (ok)
                br->rel_k = verify_set0(in, &b, sx, sw);
            b.baseline = true;
            if (g_baseline) {
                ok = ok && fgh_poison_device(py, xs * br->nsets, s) == 0 &&
                     fgh_bench(s, enqueue_bench, &b, br->nsets, 2.0, 7, &br->base) == 0 && !b.errors;
                if (ok)
                    br->rel_base = verify_set0(in, &b, sx, sw);
            }
            br->ok = CHECKF(name, ok, "%s", b.err);
            if (ok) {
                // one line per point as it is timed (fusegen tune counts the " rows=")
                const double gbps = br->bytes / (br->k.med_us * 1e-6) / 1e9;
                printf("%-34s rows=%5d  %8.2f us  %6.0f GB/s  %5.1f%% of read", in->name, br->rows,
                       br->k.med_us, gbps, 100 * gbps / c.read_gbps);
                if (g_baseline)
                    printf("  | baseline %8.2f us", br->base.med_us);
                printf("\n");
                fflush(stdout);
                snprintf(name, sizeof name, "bench %.160s rows=%d: output of the timed graph correct",
                         in->name, br->rows);
                const double tol = tolerance(in->dt);
                // a case whose timed output is wrong is not written (nor tuned on)
                br->ok = CHECKF(name, br->rel_k <= tol && (!g_baseline || br->rel_base <= tol),
                                "kernel %.3g baseline %.3g", br->rel_k, br->rel_base);
            }
            for (int k = 0; k < nprepared; k++)
                rms_release(&b.calls[k]);
            free(b.calls);
            cudaFree(px);
            cudaFree(pw);
            cudaFree(py);
        }
    }

    // table (printed last, so the end of the output carries it)
    printf("\n%-34s %5s %6s %9s %9s %9s %8s %6s %6s %7s\n", "instance", "rows", "sets", "us", "min",
           "base_us", "GB/s", "%read", "%copy", "speedup");
    for (int i = 0; i < nres; i++) {
        const bench_row *br = &res[i];
        if (!br->ok)
            continue;
        const double gbps = br->bytes / (br->k.med_us * 1e-6) / 1e9;
        printf("%-34s %5d %6d %9.2f %9.2f ", br->in->name, br->rows, br->nsets, br->k.med_us,
               br->k.min_us);
        if (g_baseline)
            printf("%9.2f", br->base.med_us);
        else
            printf("%9s", "-");
        printf(" %8.0f %5.1f%% %5.1f%% ", gbps, 100 * gbps / c.read_gbps, 100 * gbps / c.copy_gbps);
        if (g_baseline)
            printf("%6.2fx\n", br->base.med_us / br->k.med_us);
        else
            printf("%7s\n", "-");
    }
    const fgh_clock_stats cs = fgh_clock_summary();
    printf("SM clock during the run: median %d MHz (min %d, max %d, %d samples, %s)\n", cs.median, cs.min,
           cs.max, cs.samples, cs.source);
    printf("ceilings: copy %.0f GB/s, read-only %.0f GB/s\n", c.copy_gbps, c.read_gbps);

    if (json_path) {
        FILE *f = fopen(json_path, "w");
        if (!CHECKF("bench: results file written", f != NULL, "%s", json_path)) {
            free(res);
            return -1;
        }
        fgh_json j;
        fgh_json_init(&j, f);
        fgh_json_obj_begin(&j, NULL);
        fgh_json_header(&j, dev, commit, "tests/gpu/test_rmsnorm --bench");
        fgh_json_clocks(&j);
        fgh_json_int(&j, "mem_clock_mhz", fgh_clock_mem_mhz());
        fgh_json_ceilings(&j, &c);
        fgh_json_obj_begin(&j, "method");
        fgh_json_str(&j, "timing", "CUDA graph of N launches, replay time / N (launch gaps included); "
                                   "median, min, max over reps replays after 2 warm-up replays");
        fgh_json_str(&j, "rotation", "buffer sets (x, weight, y) rotated so a set is reused only after "
                                     ">= 2 x L2 bytes of other traffic");
        fgh_json_str(&j, "bytes", "x read + y written + weight read, once each");
        fgh_json_str(&j, "flops", "4 per element (square, add, two multiplies)");
        fgh_json_str(&j, "fraction", "achieved bytes/s over the ceiling; fraction_of_ceiling uses the "
                                     "larger of copy and read-only");
        fgh_json_str(&j, "baseline", g_baseline ? "baseline_warp_per_row: one warp per row, two passes "
                                                 "over x, 16-byte loads, fp32 sum "
                                                 "(tests/gpu/test_rmsnorm.cu)"
                                               : "none (--no-baseline)");
        fgh_json_num(&j, "eps", kEps);
        fgh_json_str(&j, "launch_path", g_bench_path == PATH_FGRT
                                            ? "libfgrt: fg_rmsnorm_bind once per buffer set, fg_launch"
                                            : "CUDA driver API: cuModuleLoadData, cuLaunchKernel");
        fgh_json_obj_end(&j);
        fgh_json_arr_begin(&j, "cases");
        for (int i = 0; i < nres; i++) {
            const bench_row *br = &res[i];
            if (!br->ok)
                continue;
            const double gbps = br->bytes / (br->k.med_us * 1e-6) / 1e9;
            const double bgbps = br->bytes / (br->base.med_us * 1e-6) / 1e9;
            char cname[256];
            snprintf(cname, sizeof cname, "%s/rows%d", br->in->name, br->rows);
            fgh_json_obj_begin(&j, NULL);
            fgh_json_str(&j, "name", cname);
            fgh_json_str(&j, "family", "rmsnorm");
            fgh_json_str(&j, "instance", br->in->name);
            fgh_json_str(&j, "dtype", fgh_dtype_name(br->in->dt));
            fgh_json_obj_begin(&j, "shape");
            fgh_json_int(&j, "rows", br->rows);
            fgh_json_int(&j, "hidden", br->in->hidden);
            fgh_json_obj_end(&j);
            fgh_json_int(&j, "threads", br->in->threads);
            fgh_json_bool(&j, "cache_x", br->in->cache_x);
            fgh_json_timing(&j, "time", &br->k);
            fgh_json_num(&j, "bytes", br->bytes);
            fgh_json_num(&j, "flops", br->flops);
            fgh_json_int(&j, "buffer_sets", br->nsets);
            fgh_json_num(&j, "gbps", gbps);
            fgh_json_num(&j, "fraction_of_read_ceiling", gbps / c.read_gbps);
            fgh_json_num(&j, "fraction_of_copy_ceiling", gbps / c.copy_gbps);
            fgh_json_num(&j, "fraction_of_ceiling", gbps / c.best_gbps);
            fgh_json_num(&j, "rel_l2", br->rel_k);
            if (g_baseline) {
                fgh_json_arr_begin(&j, "baselines");
                fgh_json_obj_begin(&j, NULL);
                fgh_json_str(&j, "name", "baseline_warp_per_row");
                fgh_json_timing(&j, "time", &br->base);
                fgh_json_num(&j, "gbps", bgbps);
                fgh_json_num(&j, "fraction_of_ceiling", bgbps / c.best_gbps);
                fgh_json_num(&j, "rel_l2", br->rel_base);
                fgh_json_obj_end(&j);
                fgh_json_arr_end(&j);
                fgh_json_num(&j, "speedup_vs_baseline", br->base.med_us / br->k.med_us);
            }
            fgh_json_obj_end(&j);
        }
        fgh_json_arr_end(&j);
        // T(bytes) = T0 + bytes / BW_eff per instance, over its row counts
        fgh_json_arr_begin(&j, "fits");
        for (int i = 0; i + nrows <= nres; i += nrows) {
            double xs[4], ys[4], t0, bw;
            bool all = true;
            for (int r = 0; r < nrows; r++) {
                all = all && res[i + r].ok;
                xs[r] = res[i + r].bytes;
                ys[r] = res[i + r].k.med_us;
            }
            if (!all)
                continue;
            fgh_fit_line(xs, ys, nrows, 0, &t0, &bw);
            fgh_json_obj_begin(&j, NULL);
            fgh_json_str(&j, "instance", res[i].in->name);
            fgh_json_str(&j, "model", "us = t0_us + bytes / bw_eff");
            fgh_json_num(&j, "t0_us", t0);
            fgh_json_num(&j, "bw_eff_gbps", bw);
            fgh_json_obj_end(&j);
        }
        fgh_json_arr_end(&j);
        fgh_json_obj_end(&j);
        const bool wrote = !ferror(f);
        fclose(f);
        CHECKF("bench: results file written", wrote, "%s", json_path);
        printf("results: %s\n", json_path);
    }
    free(res);
    return 0;
}

// ------------------------------------------------------------------ libfgrt

#ifdef FG_HAVE_FGRT
// A registry made from the cubins found (so the test needs no embedded build),
// the context, and the runtime's lookup and argument checks on this device.
static void setup_fgrt(void)
{
    for (int i = 0; i < g_ninst; i++) {
        inst *in = &g_inst[i];
        if (!in->image || in->load_error[0])
            continue;
        fg_kernel_entry *e = &g_reg[g_nreg];
        memset(e, 0, sizeof *e);
        e->name = in->name;
        e->family = "rmsnorm";
        e->op = "rmsnorm";
        e->arch = FG_REG_ARCH_SM90A;
        e->dtype = in->dt == FGH_F16 ? FG_REG_F16 : FG_REG_BF16;
        e->ndims = 1;
        e->dims[0] = in->hidden;
        e->grid_rule = FG_REG_GRID_ROWS;
        e->block[0] = (unsigned)in->threads;
        e->block[1] = e->block[2] = 1;
        e->cluster[0] = e->cluster[1] = e->cluster[2] = 1;
        e->image = (const unsigned char *)in->image;
        g_reg_size[g_nreg] = in->image_size;
        e->image_size = &g_reg_size[g_nreg];
        in->reg_index = (int)g_nreg++;
    }
    const fg_status st = fg_init(g_reg, g_nreg, 0, &g_fg);
    if (!CHECKF("fgrt: fg_init on device 0", st == FG_OK, "%s (%s)", fg_status_string(st),
                fg_last_error()))
        return;
    fg_device_info di;
    if (CHECK("fgrt: fg_device_get_info", fg_device_get_info(g_fg, &di) == FG_OK))
        printf("fgrt: %s, %s, %d SMs, L2 %lld bytes, registry of %zu images\n", di.name,
               di.arch_name, di.compute_units, di.l2_bytes, g_nreg);
    int bad = 0;
    for (int i = 0; i < g_ninst; i++) {
        const inst *in = &g_inst[i];
        if (in->reg_index < 0)
            continue;
        const long long dims[1] = {in->hidden};
        const fg_kernel_entry *e = NULL;
        const fg_kernel_entry *mine = &g_reg[in->reg_index];
        const fg_status ls = fg_context_lookup(g_fg, "rmsnorm", mine->dtype, dims, 1, &e);
        // several block sizes of one hidden size (tuning candidates) share the
        // key: the lookup picks one of them, and binding names the one wanted
        if (ls != FG_OK || !e || e < g_reg || e >= g_reg + g_nreg || e->dtype != mine->dtype ||
            e->dims[0] != in->hidden) {
            printf("fgrt: lookup of %s gave %s (%s)\n", in->name, e ? e->name : "nothing",
                   fg_status_string(ls));
            bad++;
        }
    }
    CHECKF("fgrt: lookup serves each instance's dtype and hidden from the registry", bad == 0,
           "%d wrong", bad);
    const long long odd[1] = {4097};
    const fg_kernel_entry *e = NULL;
    CHECK("fgrt: lookup of hidden 4097 is FG_ERR_NO_MATCHING_INSTANCE",
          fg_context_lookup(g_fg, "rmsnorm", FG_REG_F16, odd, 1, &e) == FG_ERR_NO_MATCHING_INSTANCE);
    // argument checks at bind, on real device buffers
    if (g_nreg == 0)
        return;
    const fg_kernel_entry *r0 = &g_reg[0];
    const size_t bytes = (size_t)r0->dims[0] * 2 * 4;
    char *buf = NULL;
    if (!CHECK("fgrt: alloc for argument checks", fgh_ok(cudaMalloc(&buf, 3 * bytes))))
        return;
    fg_rmsnorm_args a;
    memset(&a, 0, sizeof a);
    a.dtype = r0->dtype;
    a.hidden = r0->dims[0];
    a.rows = 4;
    a.x = buf;
    a.weight = buf + bytes;
    a.y = buf + 2 * bytes;
    a.eps = kEps;
    a.instance = r0->name;   // one block size of its hidden size: this one
    fg_binding *b = NULL;
    fg_status bs = fg_rmsnorm_bind(g_fg, &a, &b);
    if (CHECKF("fgrt: bind with good arguments", bs == FG_OK, "%s (%s)", fg_status_string(bs),
               fg_last_error())) {
        fg_binding_info bi;
        CHECK("fgrt: binding launches grid = rows, block = the instance's threads",
              fg_binding_get_info(b, &bi) == FG_OK && bi.grid[0] == 4 && bi.block[0] == r0->block[0] &&
                  bi.entry == r0);
        fg_binding_free(b);
    }
    b = NULL;
    a.x = buf + 2;
    CHECK("fgrt: misaligned x is FG_ERR_MISALIGNED", fg_rmsnorm_bind(g_fg, &a, &b) == FG_ERR_MISALIGNED);
    a.x = buf;
    a.y = buf + bytes / 2;   // overlaps x
    CHECK("fgrt: y overlapping x is refused", fg_rmsnorm_bind(g_fg, &a, &b) != FG_OK);
    a.y = buf + 2 * bytes;
    a.rows = 0;
    CHECK("fgrt: rows 0 is FG_ERR_BAD_SHAPE", fg_rmsnorm_bind(g_fg, &a, &b) == FG_ERR_BAD_SHAPE);
    cudaFree(buf);
    g_paths[g_npaths++] = PATH_FGRT;
    g_bench_path = PATH_FGRT;
}
#endif

// -------------------------------------------------------------------- main

int main(int argc, char **argv)
{
    fgh_args a;
    fgh_args_init(&a);
#ifdef FG_COMMIT
    if (!a.commit)
        a.commit = FG_COMMIT;
#endif
    for (int i = 1; i < argc; i++) {
        if (!fgh_common_arg(&a, argc, argv, &i)) {
            fprintf(stderr,
                    "usage: %s [--kernels DIR] [--manifest FILE] [--only A,B] [--seed N] [--verbose]\n"
                    "          [--quick] [--no-baseline]\n"
                    "       %s --bench [--json FILE] [--commit C] [--kernels DIR] [--manifest FILE]\n"
                    "          [--only A,B] [--quick] [--no-baseline]\n",
                    argv[0], argv[0]);
            return 2;
        }
    }
    fgh_args_apply(&a);
    const char *kdir = a.kernels, *json = a.json, *commit = a.commit, *manifest_path = a.manifest;
    const bool bench = a.bench, quick = a.quick;
    g_only = a.only;
    g_baseline = a.baseline;
    printf("test_rmsnorm: kernels from %s, seed 0x%llx\n", kdir, (unsigned long long)fgh_base_seed());
    fgh_device d;
    if (CHECK("device: open", fgh_device_open(0, &d) == 0) &&
        CHECK("driver API: libcuda.so.1 loaded", driver_open() == 0)) {
        printf("device: %s (sm_%d%d), %d SMs, L2 %zu bytes, driver %s, SM clock now %d MHz\n", d.name,
               d.cc_major, d.cc_minor, d.sms, d.l2_bytes, d.driver, fgh_clock_sm_mhz());
        bool go = CHECK("kernels: folder readable", discover(kdir, g_only) == 0);
        if (go) {
            int nf16 = 0, nbf16 = 0;
            for (int i = 0; i < g_ninst; i++) {
                nf16 += g_inst[i].dt == FGH_F16;
                nbf16 += g_inst[i].dt == FGH_BF16;
            }
            printf("kernels: %d rmsnorm instances (%d f16, %d bf16)%s\n", g_ninst, nf16, nbf16,
                   g_only ? " named by --only" : "");
            // a selection that runs nothing must not read as a pass
            if (g_only)
                go = CHECKF("rmsnorm: --only", runnable() > 0, "no runnable instance matches '%s'",
                            g_only);
            else
                CHECKF("kernels: f16 and bf16 rmsnorm instances found", nf16 > 0 && nbf16 > 0, "in %s",
                       kdir);
        }
        if (go && manifest_path) {
            char *manifest = fgh_read_text(manifest_path);
            if (CHECKF("rmsnorm: manifest readable", manifest != NULL, "%s", manifest_path))
                check_manifest(manifest);
            free(manifest);
        }
        if (go) {
#if defined(FG_HAVE_FGRT)
            setup_fgrt();
#elif defined(FG_FGRT_BUILD_FAILED)
            CHECKF("fgrt: libfgrt built", false, "runtime/ is there but did not compile; only the "
                   "driver-API path was tested");
#else
            fgh_skip("fgrt", "built without libfgrt (no runtime/include/fgrt.h): driver-API path only");
#endif
            printf("launch paths checked: %s%s; benchmark through %s\n", path_name(g_paths[0]),
                   g_npaths > 1 ? ", fgrt" : "", path_name(g_bench_path));
            cudaStream_t s;
            cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            if (bench)
                run_bench(s, &d, json, commit, quick);
            else
                run_checks(s, quick);
            CHECK("no CUDA error left", fgh_ok(cudaDeviceSynchronize()) && fgh_ok(cudaGetLastError()));
            cudaStreamDestroy(s);
#ifdef FG_HAVE_FGRT
            fg_shutdown(g_fg);
#endif
        }
    }
    const int failed = fgh_summary();
    return failed > 255 ? 255 : failed;
}
