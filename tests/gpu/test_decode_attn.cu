// GPU tests and benchmark of the fused decode-attention family, launched
// through libfgrt (each instance bound by name -> launch).
//
// Kernels: DIR/decode_attn_sm90a_<dt>_<shape and plan>.cubin as `make kernels`
// or check-gpu.sh compile them.  The dtype comes from the name; everything
// else (shapes, KV heads, window, RoPE layout and table, plan, launch shape,
// workspace, counters, the cooperative flag) from the manifest
// (--manifest; default: the kernel folder's, else $FG_GEN_DIR's, else
// generated/'s, as fgh_open_manifest says): an instance the manifest does
// not describe is reported as skipped.
//
// Checks, per instance, on fresh random inputs with outputs poisoned (and the
// SMs' shared memory, so a read of shared memory the launch never wrote shows
// as NaN):
//   - y against the C reference (double) at several positions and input scales,
//     relative L2 <= 2e-3 (f16) / 1e-2 (bf16), every element written;
//   - the appended cache row within one storage ulp of the reference, every
//     other cache row bitwise untouched (rows past pos hold NaN poison, so a
//     read past [0, pos] would also show in y);
//   - peaked attention: W_k rows of head 0 set to a multiple of its W_q rows,
//     so the newest token dominates: an off-by-one on it fails;
//   - inactive slots (pos < 0) give zeros and write nothing (batch > 2);
//   - CUDA-graph replay equals the direct launch (bitwise for deterministic
//     instances, to rounding for those that add in arrival order);
//   - deterministic instances: 1000 launches, bitwise identical, the fp32
//     workspace poisoned before each.
// --only A,B: the instances named A or B, or, for a part that is no
// instance's whole name, whose name contains it (nothing selected: a failure).
// --no-baseline: the fused kernels' checks and timings alone (racecheck runs:
// cuBLAS's own TMA kernels in the baseline draw its potential-hazard reports;
// fusegen tune's timing runs).
// --quick without --bench (sanitizer runs): three of the five cases (pos 0,
// S/2, peaked: every code path, not every input scale) and 2 deterministic
// launches instead of 1000 (check-gpu runs the 1000).
// --bench: T(S) at S = 1K..16K (S_max permitting; --quick: 1K and S_max) per
// instance, the unfused baseline (cuBLAS projections + plain kernels, split-KV
// attention; GQA, windows, biases and paged caches as the instance has them)
// on the same shapes, and the copy and read-only ceilings, all in the same run.
#include <algorithm>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "baseline_norm.cuh"
#include "fgrt.h"
#include "harness.h"
#include "ref_decode.h"

namespace {

struct Inst {
    char name[160];
    int hidden, heads, kv, hd, smax, window, page, bmax, cluster, threads, det, neox,
        bias;
    float inv_freq[128];   // the table the kernel was built with (manifest "texts")
    long long workspace, counters, cooperative, grid, block, dynamic_smem;
    fgh_dtype dt;
    void *image;
    size_t image_size;
};

constexpr int kMaxInsts = 1024;   // room for a tuning run's candidates
constexpr int kMaxBatch = 16;     // the family's largest B_max (the grid form)
Inst g_inst[kMaxInsts];
int g_ninst;
fg_kernel_entry g_reg[kMaxInsts];
fg_context *g_fg;

// A decode_attn cubin's name and dtype; the rest comes from the manifest.
bool parse_name(const char *file, Inst *in)
{
    char dt[8];
    int used = 0;
    const size_t len = strlen(file);
    if (sscanf(file, "decode_attn_sm90a_%7[^_]_%n", dt, &used) != 1 || !used || len < 7 ||
        strcmp(file + len - 6, ".cubin") != 0 || (strcmp(dt, "f16") && strcmp(dt, "bf16")))
        return false;
    in->dt = !strcmp(dt, "f16") ? FGH_F16 : FGH_BF16;
    snprintf(in->name, sizeof in->name, "%.*s", (int)(len - 6), file);
    return true;
}

int discover(const char *dir, const char *manifest)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int overflow = 0;   // instances past the table: a failure, never a silent skip
    int found = 0;      // decode_attn cubins in the folder
    for (struct dirent *e; (e = readdir(d));) {
        Inst in = {};
        if (!parse_name(e->d_name, &in))
            continue;
        found++;
        if (g_ninst == kMaxInsts) {
            overflow++;
            continue;
        }
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        const struct {
            int *field;
            const char *key;
        } dims[] = {{&in.hidden, "hidden"},     {&in.heads, "heads"},
                    {&in.kv, "kv_heads"},       {&in.hd, "head_dim"},
                    {&in.smax, "max_context"},  {&in.window, "window"},
                    {&in.page, "page_size"},       {&in.bias, "qkv_bias"},
                    {&in.bmax, "bmax"},         {&in.threads, "threads"},
                    {&in.det, "deterministic"}, {&in.neox, "neox"}};
        bool known = true;
        for (const auto &d : dims) {
            const long long v = fgh_manifest_value(manifest, in.name, d.key);
            known &= v >= 0;
            *d.field = (int)v;
        }
        known &= in.bmax <= kMaxBatch;
        // (the launch's: the grid form's clusters are of one CTA)
        const long long cl = fgh_manifest_value(manifest, in.name, "cluster");
        known &= cl > 0;
        in.cluster = (int)cl;
        known &= in.hd / 2 <= 128 &&
                 fgh_manifest_floats(manifest, in.name, "inv_freq", in.inv_freq, in.hd / 2);
        if (!known) {
            fgh_skip(in.name, "not in the manifest (shape, plan or RoPE table unknown)");
            continue;
        }
        in.workspace = fgh_manifest_value(manifest, in.name, "workspace_bytes");
        in.counters = fgh_manifest_value(manifest, in.name, "counters");
        in.cooperative = fgh_manifest_value(manifest, in.name, "cooperative");
        in.grid = fgh_manifest_value(manifest, in.name, "grid");
        in.block = fgh_manifest_value(manifest, in.name, "block");
        in.dynamic_smem = fgh_manifest_value(manifest, in.name, "dynamic_smem");
        if (in.workspace < 0 || in.counters < 0 || in.cooperative < 0 || in.grid <= 0 || in.block <= 0 ||
            in.dynamic_smem < 0) {
            fgh_skip(in.name, "not in the manifest (workspace, counters, launch shape unknown)");
            continue;
        }
        in.image = fgh_read_file(path, &in.image_size);
        if (in.image)
            g_inst[g_ninst++] = in;
    }
    closedir(d);
    // failures only: finding the folder is not a check passed (a run whose
    // every instance was skipped must not read as "1 passed")
    if (overflow)
        CHECKF("decode_attn: kernel folder", false,
               "%d instances past the %d this program holds were not tested", overflow,
               kMaxInsts);
    if (found && !g_ninst)
        CHECKF("decode_attn: kernel folder", false,
               "%d decode_attn cubins, none described by the manifest (--manifest)", found);
    qsort(g_inst, g_ninst, sizeof(Inst), [](const void *a, const void *b) {
        return strcmp(((const Inst *)a)->name, ((const Inst *)b)->name);
    });
    return g_ninst;
}

// The registry entry the generator would emit for this instance.
void make_entry(const Inst &in, fg_kernel_entry *e, size_t *size_slot)
{
    *e = fg_kernel_entry{};
    e->name = in.name;
    e->family = "decode_attn";
    e->op = "decode_attn";
    e->arch = FG_REG_ARCH_SM90A;
    e->dtype = in.dt == FGH_F16 ? FG_REG_F16 : FG_REG_BF16;
    // fgrt.h's key order: hidden, heads, kv_heads, head_dim, max_context,
    // sliding_window, page_size, batch (a maximum), qkv_bias, rmsnorm, neox,
    // deterministic
    e->ndims = 12;
    const long long dims[12] = {in.hidden, in.heads, in.kv,   in.hd, in.smax, in.window,
                                in.page,   in.bmax,  in.bias, 1,     in.neox, in.det};
    memcpy(e->dims, dims, sizeof dims);
    e->match[7] = FG_REG_MATCH_MAX;
    e->grid_rule = FG_REG_GRID_FIXED;
    e->grid[0] = (unsigned)in.grid, e->grid[1] = 1, e->grid[2] = 1;
    e->block[0] = (unsigned)in.block, e->block[1] = 1, e->block[2] = 1;
    e->dynamic_smem = (unsigned)in.dynamic_smem;
    e->cluster[0] = in.cluster, e->cluster[1] = 1, e->cluster[2] = 1;
    e->nonportable_cluster = in.cluster > 8;
    e->cooperative = (unsigned char)in.cooperative;
    e->workspace_bytes = (size_t)in.workspace;
    e->counter_count = (unsigned)in.counters;
    *size_slot = in.image_size;
    e->image = (const unsigned char *)in.image;
    e->image_size = size_slot;
}

size_t g_sizes[kMaxInsts];

// ---- one problem: host inputs, device buffers, a binding ----

struct Problem {
    const Inst *in;
    fgh_decode_cfg cfg;
    int batch, S;                      // S: the cache's max_context (the instance's)
    size_t nx, nw_qkv, nw_o, ncache;   // ncache: also the page pool's size
    size_t nbias, ntable;              // 0 without biases, with contiguous caches
    uint16_t *x, *g, *wqkv, *bqkv, *wo, *kc, *vc;  // host copies (storage bits); bqkv: bias
    int *pos;
    int *bt;                           // paged: the block table [batch, smax / page]
    void *dx, *dg, *dwqkv, *dbqkv, *dwo, *dkc, *dvc, *dy;
    int *dpos, *dbt;
    fg_binding *b;
};

// The element counts of a problem of `batch` requests of instance `in`.
void problem_sizes(Problem *p, const Inst *in, int batch)
{
    p->in = in;
    p->batch = batch;
    p->nx = (size_t)batch * in->hidden;
    p->nw_qkv = (size_t)(in->heads + 2 * in->kv) * in->hd * in->hidden;
    p->nw_o = (size_t)in->hidden * in->heads * in->hd;
    p->ncache = (size_t)batch * in->kv * in->smax * in->hd;
    p->nbias = in->bias ? (size_t)(in->heads + 2 * in->kv) * in->hd : 0;
    p->ntable = in->page ? (size_t)batch * (in->smax / in->page) : 0;
}

// Paged instances: the block table maps request b's page j to a page of the
// pool, a random permutation of all batch * smax / page pages, so neighbouring
// pages of a request are scattered as an engine's would be.
void make_block_table(Problem *p)
{
    const int n = (int)p->ntable;
    p->bt = (int *)malloc(sizeof(int) * n);
    fgh_permutation(p->bt, n, fgh_next_seed());
}

// Between the host's contiguous caches [batch, kv, smax, hd] and the device's
// page pool [pages, kv, page, hd]: to_pool copies contiguous rows into the pool.
void repage(const Problem *p, const uint16_t *from, uint16_t *to, bool to_pool)
{
    const Inst *in = p->in;
    const int page = in->page, pages = in->smax / page;
    for (int b = 0; b < p->batch; b++)
        for (int h = 0; h < in->kv; h++)
            for (int t = 0; t < in->smax; t++) {
                const size_t c = (((size_t)b * in->kv + h) * in->smax + t) * in->hd;
                const size_t q =
                    (((size_t)p->bt[b * pages + t / page] * in->kv + h) * page + t % page) * in->hd;
                memcpy(to_pool ? to + q : to + c, to_pool ? from + c : from + q, in->hd * 2);
            }
}

// A cache's host copy onto the device (through the pages when paged).
bool upload_cache(const Problem *p, void *d, const uint16_t *h)
{
    if (!p->in->page)
        return fgh_upload(d, h, p->ncache * 2) == 0;
    uint16_t *pool = (uint16_t *)malloc(p->ncache * 2);
    repage(p, h, pool, true);
    const bool ok = fgh_upload(d, pool, p->ncache * 2) == 0;
    free(pool);
    return ok;
}

// The device's cache as contiguous host rows.
bool download_cache(const Problem *p, uint16_t *h, const void *d)
{
    if (!p->in->page)
        return fgh_ok(cudaMemcpy(h, d, p->ncache * 2, cudaMemcpyDeviceToHost));
    uint16_t *pool = (uint16_t *)malloc(p->ncache * 2);
    const bool ok = fgh_ok(cudaMemcpy(pool, d, p->ncache * 2, cudaMemcpyDeviceToHost));
    if (ok)
        repage(p, pool, h, false);
    free(pool);
    return ok;
}


bool upload(void *d, const void *h, size_t n) { return fgh_upload(d, h, n) == 0; }

// Inputs: x scaled by xscale; weights ~ U(-1,1)/sqrt(fan_in); the cache
// U(-1,1) for rows < pos and NaN poison from pos on.
bool problem_init(Problem *p, const Inst *in, int batch, const int *pos, float xscale)
{
    *p = Problem{};
    problem_sizes(p, in, batch);
    p->S = in->smax;
    p->cfg = fgh_decode_cfg{};
    p->cfg.hidden = in->hidden, p->cfg.heads = in->heads, p->cfg.head_dim = in->hd;
    p->cfg.max_context = in->smax, p->cfg.batch = batch, p->cfg.neox = in->neox;
    p->cfg.rmsnorm = true, p->cfg.eps = 1e-5f, p->cfg.dtype = in->dt;
    p->cfg.kv_heads = in->kv, p->cfg.sliding_window = in->window;
    p->cfg.inv_freq = in->inv_freq;   // the generator's table (unit-tested against the formula)
    const int H = in->hidden, QD = in->heads * in->hd;
    const fgh_dtype t = in->dt;
    p->x = (uint16_t *)malloc(p->nx * 2);
    p->g = (uint16_t *)malloc(H * 2);
    p->wqkv = (uint16_t *)malloc(p->nw_qkv * 2);
    p->wo = (uint16_t *)malloc(p->nw_o * 2);
    p->kc = (uint16_t *)malloc(p->ncache * 2);
    p->vc = (uint16_t *)malloc(p->ncache * 2);
    p->pos = (int *)malloc(sizeof(int) * batch);
    memcpy(p->pos, pos, sizeof(int) * batch);
    if (in->page)
        make_block_table(p);
    fgh_fill_host(p->x, t, p->nx, fgh_next_seed(), xscale);
    fgh_fill_host(p->g, t, H, fgh_next_seed(), 1.0f);
    fgh_fill_host(p->wqkv, t, p->nw_qkv, fgh_next_seed(), 1.0f / sqrtf((float)H));
    if (in->bias) {   // of the size of the projections' values, so a missed bias shows
        p->bqkv = (uint16_t *)malloc(p->nbias * 2);
        fgh_fill_host(p->bqkv, t, p->nbias, fgh_next_seed(), xscale);
    }
    fgh_fill_host(p->wo, t, p->nw_o, fgh_next_seed(), 1.0f / sqrtf((float)QD));
    fgh_fill_host(p->kc, t, p->ncache, fgh_next_seed(), 1.0f);
    fgh_fill_host(p->vc, t, p->ncache, fgh_next_seed(), 1.0f);
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < in->kv; h++) {
            const size_t base = ((size_t)b * in->kv + h) * in->smax * in->hd;
            const int from = pos[b] < 0 ? 0 : pos[b];
            memset(p->kc + base + (size_t)from * in->hd, 0xFF,
                   (size_t)(in->smax - from) * in->hd * 2);
            memset(p->vc + base + (size_t)from * in->hd, 0xFF,
                   (size_t)(in->smax - from) * in->hd * 2);
        }
    return true;
}

// The device buffers of a problem (sizes set by the caller).
bool problem_alloc(Problem *p)
{
    return fgh_ok(cudaMalloc(&p->dx, p->nx * 2)) && fgh_ok(cudaMalloc(&p->dg, p->in->hidden * 2)) &&
           fgh_ok(cudaMalloc(&p->dwqkv, p->nw_qkv * 2)) &&
           fgh_ok(cudaMalloc(&p->dwo, p->nw_o * 2)) &&
           fgh_ok(cudaMalloc(&p->dkc, p->ncache * 2)) &&
           fgh_ok(cudaMalloc(&p->dvc, p->ncache * 2)) &&
           fgh_ok(cudaMalloc(&p->dy, p->nx * 2)) &&
           fgh_ok(cudaMalloc(&p->dpos, sizeof(int) * p->batch)) &&
           (!p->ntable || fgh_ok(cudaMalloc(&p->dbt, sizeof(int) * p->ntable))) &&
           (!p->nbias || fgh_ok(cudaMalloc(&p->dbqkv, p->nbias * 2)));
}

bool problem_device(Problem *p)
{
    const int H = p->in->hidden;
    return problem_alloc(p) && upload(p->dx, p->x, p->nx * 2) && upload(p->dg, p->g, H * 2) &&
           upload(p->dwqkv, p->wqkv, p->nw_qkv * 2) && upload(p->dwo, p->wo, p->nw_o * 2) &&
           upload_cache(p, p->dkc, p->kc) && upload_cache(p, p->dvc, p->vc) &&
           upload(p->dpos, p->pos, sizeof(int) * p->batch) &&
           (!p->ntable || upload(p->dbt, p->bt, sizeof(int) * p->ntable)) &&
           (!p->nbias || upload(p->dbqkv, p->bqkv, p->nbias * 2));
}

fg_status problem_bind(Problem *p)
{
    fg_decode_attn_args a = {};
    a.dtype = p->in->dt == FGH_F16 ? FG_REG_F16 : FG_REG_BF16;
    a.hidden = p->in->hidden, a.heads = p->in->heads, a.head_dim = p->in->hd;
    a.kv_heads = p->in->kv, a.sliding_window = p->in->window;
    a.page_size = p->in->page, a.block_table = p->dbt;
    a.qkv_bias = p->in->bias, a.b_qkv = p->dbqkv;
    a.max_context = p->in->smax, a.batch = p->batch;
    a.rmsnorm = 1, a.neox = p->in->neox, a.deterministic = p->in->det;
    a.instance = p->in->name;
    a.x = p->dx, a.norm_w = p->dg, a.w_qkv = p->dwqkv, a.w_o = p->dwo;
    a.k_cache = p->dkc, a.v_cache = p->dvc, a.positions = p->dpos, a.y = p->dy;
    a.eps = p->cfg.eps;
    return fg_decode_attn_bind(g_fg, &a, &p->b);
}

void problem_free(Problem *p)
{
    fg_binding_free(p->b);
    void *dev[] = {p->dx, p->dg, p->dwqkv, p->dbqkv, p->dwo, p->dkc, p->dvc, p->dy, p->dpos, p->dbt};
    for (void *d : dev)
        cudaFree(d);
    void *host[] = {p->x, p->g, p->wqkv, p->bqkv, p->wo, p->kc, p->vc, p->pos, p->bt};
    for (void *h : host)
        free(h);
    *p = Problem{};
}

double ulp(fgh_dtype t, float v)
{
    const float a = fabsf(v);
    const int e = a > 0 ? ilogbf(a) : -24;
    return ldexp(1.0, e - (t == FGH_F16 ? 10 : 7));
}

// Runs the kernel once and checks y, the appended rows and the untouched cache.
void check_once(const char *what, Problem *p, cudaStream_t s)
{
    const Inst *in = p->in;
    char name[256];
    snprintf(name, sizeof name, "%s: %s", in->name, what);
    if (!CHECK(name, fgh_poison_device(p->dy, p->nx * 2, s) == 0 && fgh_poison_shared(s) == 0))
        return;
    const fg_status st = fg_launch(p->b, s);
    if (!CHECKF(name, st == FG_OK && fgh_ok(cudaStreamSynchronize(s)), "launch: %s (%s)",
                fg_status_string(st), fg_last_error()))
        return;
    uint16_t *y = (uint16_t *)malloc(p->nx * 2);
    uint16_t *kc = (uint16_t *)malloc(p->ncache * 2), *vc = (uint16_t *)malloc(p->ncache * 2);
    double *ref = (double *)malloc(sizeof(double) * p->nx);
    bool copied = fgh_ok(cudaMemcpy(y, p->dy, p->nx * 2, cudaMemcpyDeviceToHost)) &&
                  download_cache(p, kc, p->dkc) && download_cache(p, vc, p->dvc);
    if (CHECK(name, copied)) {
        // the reference appends to the host copies, which then must equal the device's
        const fgh_kv_view host_cache = {.k = p->kc, .v = p->vc};
        fgh_ref_decode_kv(&p->cfg, p->x, p->g, p->wqkv, p->bqkv, p->wo, &host_cache, p->pos, ref);
        const fgh_err e = fgh_compare(y, in->dt, ref, p->nx);
        const double tol = in->dt == FGH_F16 ? 2e-3 : 1e-2;
        CHECKF(name, e.nonfinite == 0 && e.rel_l2 <= tol,
               "rel L2 %.3e (limit %.0e), %zu non-finite (first at %zu)", e.rel_l2, tol,
               e.nonfinite, e.first_bad);
        printf("    %s: rel L2 %.3e\n", name, e.rel_l2);
        // The appended rows: each element within one storage ulp of the reference's
        // rounding plus a quarter ulp of the row's largest element: the kernel's
        // normalized x is rounded from fp32, the reference's from double, and the
        // odd element that rounds the other way moves k and v by about that much.
        size_t row_bad = 0, other_bad = 0;
        for (int b = 0; b < p->batch; b++)
            for (int h = 0; h < in->kv; h++) {
                const size_t base = ((size_t)b * in->kv + h) * in->smax * in->hd;
                float rowmax[2] = {0, 0};
                if (p->pos[b] >= 0)
                    for (int d = 0; d < in->hd; d++)
                        for (int kv = 0; kv < 2; kv++) {
                            const uint16_t *c = kv ? p->vc : p->kc;
                            const size_t i = base + (size_t)p->pos[b] * in->hd + d;
                            rowmax[kv] = fmaxf(rowmax[kv], fabsf(fgh_get(c, in->dt, i)));
                        }
                for (int t = 0; t < in->smax; t++)
                    for (int d = 0; d < in->hd; d++) {
                        const size_t i = base + (size_t)t * in->hd + d;
                        if (t == p->pos[b]) {
                            for (int kv = 0; kv < 2; kv++) {
                                const uint16_t got = kv ? vc[i] : kc[i], want = kv ? p->vc[i] : p->kc[i];
                                const float g = fgh_get(&got, in->dt, 0), w = fgh_get(&want, in->dt, 0);
                                row_bad += !(fabsf(g - w) <= ulp(in->dt, w) + 0.25 * ulp(in->dt, rowmax[kv]));
                            }
                        } else {
                            other_bad += kc[i] != p->kc[i] || vc[i] != p->vc[i];
                        }
                    }
            }
        CHECKF(name, row_bad == 0, "%zu appended elements off by more than one ulp", row_bad);
        CHECKF(name, other_bad == 0, "%zu cache elements changed outside row pos", other_bad);
        // inactive slots: zeros
        for (int b = 0; b < p->batch; b++)
            if (p->pos[b] < 0) {
                size_t nz = 0;
                for (int j = 0; j < in->hidden; j++)
                    nz += y[(size_t)b * in->hidden + j] != 0;
                CHECKF(name, nz == 0, "inactive slot %d: %zu non-zero outputs", b, nz);
            }
        // keep the device's cache as the new state (the reference wrote the same rows)
        std::swap(p->kc, kc);   // the old copies are freed below
        std::swap(p->vc, vc);
    }
    free(y), free(kc), free(vc), free(ref);
}

// Graph replay gives the launch's bits; deterministic instances repeat 1000 times
// with their fp32 workspace poisoned (NaN) before every launch: a kernel that
// read a workspace value it had not written would show it (races in global
// memory are invisible to compute-sanitizer).  The counters after it stay.
void check_repeat(Problem *p, cudaStream_t s, int repeats)
{
    const Inst *in = p->in;
    char name[256];
    // Fast instances sum heads with fp32 atomics in arrival order: their replays
    // must agree to rounding, deterministic ones bit for bit.
    char what[96];
    snprintf(what, sizeof what, "%d launches bitwise identical, workspace poisoned before each",
             repeats);
    snprintf(name, sizeof name, "%s: %s", in->name,
             repeats > 1 ? what
             : in->det   ? "graph replay bitwise equal"
                         : "graph replay equal to rounding");
    uint16_t *first = (uint16_t *)malloc(p->nx * 2), *y = (uint16_t *)malloc(p->nx * 2);
    bool ok = fg_launch(p->b, s) == FG_OK &&
              fgh_ok(cudaMemcpyAsync(first, p->dy, p->nx * 2, cudaMemcpyDeviceToHost, s)) &&
              fgh_ok(cudaStreamSynchronize(s));
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ok = ok && fgh_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (ok) {
        const fg_status st = fg_launch(p->b, s);
        ok = fgh_ok(cudaStreamEndCapture(s, &graph)) && st == FG_OK &&
             fgh_ok(cudaGraphInstantiate(&exec, graph, 0));
    }
    fg_binding_info info = {};
    ok = ok && fg_binding_get_info(p->b, &info) == FG_OK;
    const size_t ws_data = info.entry ? info.entry->workspace_bytes : 0;
    size_t diff = 0;
    int runs = 0;
    for (int r = 0; ok && r < repeats; r++, runs++) {
        if (repeats > 1 && in->det && ws_data)
            ok = fgh_poison_device(info.workspace, ws_data, s) == 0;
        ok = ok && fgh_poison_device(p->dy, p->nx * 2, s) == 0 && fgh_ok(cudaGraphLaunch(exec, s)) &&
             fgh_ok(cudaMemcpyAsync(y, p->dy, p->nx * 2, cudaMemcpyDeviceToHost, s)) &&
             fgh_ok(cudaStreamSynchronize(s));
        if (ok && memcmp(first, y, p->nx * 2) != 0) {
            if (in->det) {
                diff++;
            } else {
                double *ref = (double *)malloc(sizeof(double) * p->nx);
                for (size_t i = 0; i < p->nx; i++)
                    ref[i] = fgh_get(first, in->dt, i);
                const fgh_err e = fgh_compare(y, in->dt, ref, p->nx);
                diff += !(e.nonfinite == 0 && e.rel_l2 <= (in->dt == FGH_F16 ? 1e-3 : 8e-3));
                free(ref);
            }
        }
    }
    CHECKF(name, ok && diff == 0, "%zu of %d replays differ from the direct launch", diff, runs);
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    free(first), free(y);
}

// W_k rows of head 0 := 4 x its W_q rows: q.k_new = 4|q|^2 dominates.
void make_peaked(Problem *p)
{
    const int H = p->in->hidden, QD = p->in->heads * p->in->hd;
    for (int d = 0; d < p->in->hd; d++) {
        const uint16_t *q = p->wqkv + (size_t)d * H;
        uint16_t *k = p->wqkv + ((size_t)QD + d) * H;
        for (int i = 0; i < H; i++)
            k[i] = fgh_round_to(p->in->dt, 4.0 * fgh_get(q, p->in->dt, i));
    }
}

void test_instance(const Inst *in, cudaStream_t s, bool quick)
{
    struct Case {
        const char *what;
        int pos0;
        float xscale;
        bool peaked;
    } cases[] = {
        {"pos 0 (attends to the new token alone)", 0, 1.0f, false},
        {"pos S/2, x scale 1", in->smax / 2, 1.0f, false},
        {"pos S-1, x scale 30", in->smax - 1, 30.0f, false},
        {"pos 777, x scale 0.05", 777 % in->smax, 0.05f, false},
        {"peaked on the newest token, pos S/3", in->smax / 3, 1.0f, true},
    };
    for (const Case &c : cases) {
        // long caches: the two cases that stress them (the reference costs O(S) per head)
        if (in->smax > 4096 && &c != &cases[2] && &c != &cases[4])
            continue;
        if (quick && (&c == &cases[2] || &c == &cases[3]))
            continue;
        const int batch = in->bmax;
        int pos[kMaxBatch];
        for (int b = 0; b < batch; b++)   // mixed lengths; slot 1 inactive when batch > 2
            pos[b] = b == 0 ? c.pos0 : (b == 1 && batch > 2) ? -1 : (c.pos0 * (b + 1) / (batch + 1));
        Problem p;
        problem_init(&p, in, batch, pos, c.xscale);
        if (c.peaked)
            make_peaked(&p);
        char name[256];
        snprintf(name, sizeof name, "%s: bind", in->name);
        // (bound before the check: its message reads st, and a function's
        // arguments are evaluated in no set order)
        const bool on_device = CHECK(name, problem_device(&p));
        const fg_status st = on_device ? problem_bind(&p) : FG_ERR_DRIVER;
        if (on_device &&
            CHECKF(name, st == FG_OK, "%s (%s)", fg_status_string(st), fg_last_error())) {
            check_once(c.what, &p, s);
            if (&c == &cases[1])
                check_repeat(&p, s, quick && in->det ? 2 : 1);
            if (&c == &cases[2] && in->det)
                check_repeat(&p, s, 1000);
        }
        problem_free(&p);
    }
}


// ---- the unfused baseline: what an engine without fusion launches per step ----
// RMSNorm kernel, cuBLAS GEMM for QKV, RoPE + append kernel, split-KV decode
// attention + combine kernels, cuBLAS GEMM for W_o; fp32 accumulation, the
// same storage roundings as the reference.  Checked against the reference
// before it is timed.

// The shape of one baseline step: heads, KV heads (GQA: NH / NKV query heads
// share one), head dim, the cache (contiguous [B, NKV, S, HD], or pages of
// `page` tokens: a pool [pages, NKV, page, HD] behind the block table `bt`
// [B, S / page]) and the sliding window (0: none).
struct BlShape {
    int NH, NKV, HD, S, page, window;
    const int *bt;
};

__device__ __forceinline__ size_t bl_cache_row(const BlShape &sh, int b, int g, int t)
{
    if (!sh.page)
        return (((size_t)b * sh.NKV + g) * sh.S + t) * sh.HD;
    const size_t pg = (size_t)sh.bt[(size_t)b * (sh.S / sh.page) + t / sh.page];
    return ((pg * sh.NKV + g) * sh.page + t % sh.page) * sh.HD;
}

// grid B, block 256: the q, k and v biases (Qwen2), added to the finished
// projection before RoPE.
template <typename T>
__global__ void bl_bias_add(T *qkv, const T *bias, int QKVD)
{
    T *r = qkv + (size_t)blockIdx.x * QKVD;
    for (int i = threadIdx.x; i < QKVD; i += blockDim.x)
        r[i] = fgh_from_f<T>(fgh_to_f(r[i]) + fgh_to_f(bias[i]));
}

// grid (NH, B), block HD/2: rotate q of head h; head h < NKV also rotates k
// of KV head h and appends k and v at pos.  qkv rows: NH q heads, NKV k, NKV v.
template <typename T>
__global__ void bl_rope_append(T *qkv, T *kc, T *vc, const int *pos, const float *inv_freq,
                               BlShape sh, bool neox)
{
    const int h = blockIdx.x, b = blockIdx.y, p = threadIdx.x, HD = sh.HD;
    const int ps = pos[b];
    if (ps < 0)
        return;
    T *row = qkv + (size_t)b * (sh.NH + 2 * sh.NKV) * HD;
    T *q = row + (size_t)h * HD;
    float sn, cs;
    sincosf((float)ps * inv_freq[p], &sn, &cs);
    const int i0 = neox ? p : 2 * p, i1 = neox ? p + HD / 2 : 2 * p + 1;
    const float q0 = fgh_to_f(q[i0]), q1 = fgh_to_f(q[i1]);
    q[i0] = fgh_from_f<T>(q0 * cs - q1 * sn);
    q[i1] = fgh_from_f<T>(q1 * cs + q0 * sn);
    if (h >= sh.NKV)
        return;
    const T *k = row + (size_t)(sh.NH + h) * HD, *v = row + (size_t)(sh.NH + sh.NKV + h) * HD;
    const float k0 = fgh_to_f(k[i0]), k1 = fgh_to_f(k[i1]);
    const size_t at = bl_cache_row(sh, b, h, ps);
    kc[at + i0] = fgh_from_f<T>(k0 * cs - k1 * sn);
    kc[at + i1] = fgh_from_f<T>(k1 * cs + k0 * sn);
    vc[at + i0] = v[i0];
    vc[at + i1] = v[i1];
}

// grid (NH, splits, B), block 128: one split of the attended tokens ([0, pos],
// or the window's last `window` of them) per CTA; a group of HD/8 lanes per
// token with 16-byte loads; partial (acc, m, l) to `part`.
template <typename T>
__global__ void bl_attn_split(const T *qkv, const T *kc, const T *vc, const int *pos,
                              float *part, BlShape sh, float scale_log2)
{
    extern __shared__ float sm[];   // groups x (HD + 2)
    const int NH = sh.NH, HD = sh.HD;
    const int h = blockIdx.x, sp = blockIdx.y, b = blockIdx.z, splits = gridDim.y;
    const int lpr = HD / 8, groups = blockDim.x / lpr, grp = threadIdx.x / lpr, gl = threadIdx.x % lpr;
    const int ps = pos[b], g = h / (NH / sh.NKV);
    const int lo = ps >= 0 && sh.window && ps + 1 > sh.window ? ps + 1 - sh.window : 0;
    const int n = ps < 0 ? 0 : ps + 1 - lo, chunk = (n + splits - 1) / splits;
    const int t0 = lo + sp * chunk, t1 = min(lo + n, t0 + chunk);
    const T *q = qkv + (size_t)b * (NH + 2 * sh.NKV) * HD + (size_t)h * HD;
    float qv[8], acc[8], m = -INFINITY, l = 0.f;
    for (int j = 0; j < 8; j++) {
        qv[j] = fgh_to_f(q[gl * 8 + j]) * scale_log2;
        acc[j] = 0.f;
    }
    for (int t = t0; t < t1; t += groups) {
        const int tt = t + grp;
        uint4 kr = {}, vr = {};
        if (tt < t1) {
            const size_t at = bl_cache_row(sh, b, g, tt) + gl * 8;
            kr = *reinterpret_cast<const uint4 *>(kc + at);
            vr = *reinterpret_cast<const uint4 *>(vc + at);
        }
        const T *ke = reinterpret_cast<const T *>(&kr), *ve = reinterpret_cast<const T *>(&vr);
        float sc = 0.f;
        for (int j = 0; j < 8; j++)
            sc += qv[j] * fgh_to_f(ke[j]);
        for (int o = lpr / 2; o > 0; o >>= 1)
            sc += __shfl_xor_sync(0xffffffffu, sc, o);
        if (tt < t1) {
            const float mn = fmaxf(m, sc), c = exp2f(m - mn), pr = exp2f(sc - mn);
            l = l * c + pr;
            for (int j = 0; j < 8; j++)
                acc[j] = acc[j] * c + pr * fgh_to_f(ve[j]);
            m = mn;
        }
    }
    float *st = sm + grp * (HD + 2);
    for (int j = 0; j < 8; j++)
        st[gl * 8 + j] = acc[j];
    if (gl == 0)
        st[HD] = m, st[HD + 1] = l;
    __syncthreads();
    float *out = part + (((size_t)b * NH + h) * splits + sp) * (HD + 2);
    for (int d = threadIdx.x; d < HD + 2; d += blockDim.x) {
        float mx = -INFINITY;
        for (int g = 0; g < groups; g++)
            mx = fmaxf(mx, sm[g * (HD + 2) + HD]);
        float t = 0.f;
        for (int g = 0; g < groups && d != HD; g++) {
            const float gm = sm[g * (HD + 2) + HD];
            t += (gm == -INFINITY ? 0.f : exp2f(gm - mx)) * sm[g * (HD + 2) + (d == HD + 1 ? HD + 1 : d)];
        }
        out[d] = d == HD ? mx : t;
    }
}

// grid (NH, B), block HD: merge the splits into o (rounded, as W_o reads it).
template <typename T>
__global__ void bl_attn_combine(const float *part, T *o, int NH, int HD, int splits)
{
    const int h = blockIdx.x, b = blockIdx.y, d = threadIdx.x;
    const float *p = part + ((size_t)b * NH + h) * splits * (HD + 2);
    float mx = -INFINITY;
    for (int s = 0; s < splits; s++)
        mx = fmaxf(mx, p[s * (HD + 2) + HD]);
    float num = 0.f, den = 0.f;
    for (int s = 0; s < splits; s++) {
        const float m = p[s * (HD + 2) + HD];
        const float w = m == -INFINITY ? 0.f : exp2f(m - mx);
        num += w * p[s * (HD + 2) + d];
        den += w * p[s * (HD + 2) + HD + 1];
    }
    o[(size_t)b * NH * HD + (size_t)h * HD + d] = fgh_from_f<T>(den > 0.f ? num / den : 0.f);
}

struct Baseline {
    cublasHandle_t blas = nullptr;
    void *xn = nullptr, *qkv = nullptr, *o = nullptr;
    float *part = nullptr, *inv_freq = nullptr;
    int splits = 1;
};

bool baseline_init(Baseline *bl, const Problem *p)
{
    const Inst *in = p->in;
    const int QD = in->heads * in->hd, QKVD = (in->heads + 2 * in->kv) * in->hd;
    // enough CTAs to fill the GPU at the longest context: about 256 tokens a split
    bl->splits = std::max(1, std::min(64, (in->smax + 255) / 256));
    return fgh_ok(cudaMalloc(&bl->xn, (size_t)p->batch * in->hidden * 2)) &&
           fgh_ok(cudaMalloc(&bl->qkv, (size_t)p->batch * QKVD * 2)) &&
           fgh_ok(cudaMalloc(&bl->o, (size_t)p->batch * QD * 2)) &&
           fgh_ok(cudaMalloc(&bl->part, sizeof(float) * p->batch * in->heads * bl->splits * (in->hd + 2))) &&
           fgh_ok(cudaMalloc(&bl->inv_freq, sizeof(float) * in->hd / 2)) &&
           // the RoPE table the kernel under test was built with (manifest)
           fgh_upload(bl->inv_freq, in->inv_freq, sizeof(float) * in->hd / 2) == 0 &&
           cublasCreate(&bl->blas) == CUBLAS_STATUS_SUCCESS;
}

void baseline_free(Baseline *bl)
{
    if (bl->blas)
        cublasDestroy(bl->blas);
    cudaFree(bl->xn), cudaFree(bl->qkv), cudaFree(bl->o), cudaFree(bl->part), cudaFree(bl->inv_freq);
    *bl = Baseline{};
}

template <typename T>
bool baseline_step_t(Baseline *bl, const Problem *p, cudaStream_t s, cudaDataType dt)
{
    const Inst *in = p->in;
    const int H = in->hidden, NH = in->heads, HD = in->hd, QD = NH * HD, B = p->batch;
    const int QKVD = (NH + 2 * in->kv) * HD;
    const BlShape sh = {NH, in->kv, HD, in->smax, in->page, in->window, p->dbt};
    const float one = 1.f, zero = 0.f;
    cublasSetStream(bl->blas, s);
    fgh_rmsnorm_rows<T><<<B, 256, 0, s>>>((const T *)p->dx, (const T *)p->dg, (T *)bl->xn, H, p->cfg.eps);
    bool ok = cublasGemmEx(bl->blas, CUBLAS_OP_T, CUBLAS_OP_N, QKVD, B, H, &one, p->dwqkv, dt, H,
                           bl->xn, dt, H, &zero, bl->qkv, dt, QKVD, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    if (in->bias)
        bl_bias_add<T><<<B, 256, 0, s>>>((T *)bl->qkv, (const T *)p->dbqkv, QKVD);
    bl_rope_append<T><<<dim3(NH, B), HD / 2, 0, s>>>((T *)bl->qkv, (T *)p->dkc, (T *)p->dvc, p->dpos,
                                                     bl->inv_freq, sh, in->neox != 0);
    const float scale = (float)(1.4426950408889634 / sqrt((double)HD));
    bl_attn_split<T><<<dim3(NH, bl->splits, B), 128, (128 / (HD / 8)) * (HD + 2) * sizeof(float), s>>>(
        (const T *)bl->qkv, (const T *)p->dkc, (const T *)p->dvc, p->dpos, bl->part, sh, scale);
    bl_attn_combine<T><<<dim3(NH, B), HD, 0, s>>>(bl->part, (T *)bl->o, NH, HD, bl->splits);
    ok = ok && cublasGemmEx(bl->blas, CUBLAS_OP_T, CUBLAS_OP_N, H, B, QD, &one, p->dwo, dt, QD, bl->o,
                            dt, QD, &zero, p->dy, dt, H, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    return ok && cudaPeekAtLastError() == cudaSuccess;
}

bool baseline_step(Baseline *bl, const Problem *p, cudaStream_t s)
{
    return p->in->dt == FGH_F16 ? baseline_step_t<__half>(bl, p, s, CUDA_R_16F)
                                : baseline_step_t<__nv_bfloat16>(bl, p, s, CUDA_R_16BF);
}

// The baseline is only a yardstick if it is right: once per shape, on host
// inputs, against the reference (MHA or GQA, windows, biases, contiguous or
// paged caches, as the instance has them).

void check_baseline(const Inst *in, cudaStream_t s)
{
    char name[256];
    snprintf(name, sizeof name, "baseline (cuBLAS + plain kernels) for %s", in->name);
    int pos[kMaxBatch];
    for (int b = 0; b < in->bmax; b++)
        pos[b] = in->smax / 2 + b;
    Problem p;
    problem_init(&p, in, in->bmax, pos, 1.0f);
    Baseline bl;
    if (CHECK(name, problem_device(&p) && baseline_init(&bl, &p) &&
                        fgh_poison_device(p.dy, p.nx * 2, s) == 0) &&
        CHECK(name, baseline_step(&bl, &p, s) && fgh_ok(cudaStreamSynchronize(s)))) {
        uint16_t *y = (uint16_t *)malloc(p.nx * 2);
        double *ref = (double *)malloc(sizeof(double) * p.nx);
        // the kernels' reference: biases and the cache layout as the instance has them
        const fgh_kv_view host_cache = {.k = p.kc, .v = p.vc};
        fgh_ref_decode_kv(&p.cfg, p.x, p.g, p.wqkv, p.bqkv, p.wo, &host_cache, p.pos, ref);
        if (CHECK(name, fgh_ok(cudaMemcpy(y, p.dy, p.nx * 2, cudaMemcpyDeviceToHost)))) {
            const fgh_err e = fgh_compare(y, in->dt, ref, p.nx);
            const double tol = in->dt == FGH_F16 ? 2e-3 : 1e-2;
            CHECKF(name, e.nonfinite == 0 && e.rel_l2 <= tol, "rel L2 %.3e (limit %.0e)", e.rel_l2, tol);
            printf("    %s: rel L2 %.3e\n", name, e.rel_l2);
        }
        free(y), free(ref);
    }
    baseline_free(&bl);
    problem_free(&p);
}

// ---- benchmark ----

// Device buffers filled on the device (no host copies, no reference).
bool bench_problem(Problem *p, const Inst *in, const int *pos, cudaStream_t s)
{
    *p = Problem{};
    problem_sizes(p, in, in->bmax);
    p->cfg.eps = 1e-5f;
    const int H = in->hidden, QD = in->heads * in->hd;
    const fgh_dtype t = in->dt;
    if (in->page)
        make_block_table(p);
    return problem_alloc(p) && fgh_fill_device(p->dx, t, p->nx, fgh_next_seed(), 1.0f, s) == 0 &&
           (!p->ntable || upload(p->dbt, p->bt, sizeof(int) * p->ntable)) &&
           fgh_fill_device(p->dg, t, H, fgh_next_seed(), 1.0f, s) == 0 &&
           fgh_fill_device(p->dwqkv, t, p->nw_qkv, fgh_next_seed(), 1.0f / sqrtf((float)H), s) == 0 &&
           (!p->nbias || fgh_fill_device(p->dbqkv, t, p->nbias, fgh_next_seed(), 1.0f, s) == 0) &&
           fgh_fill_device(p->dwo, t, p->nw_o, fgh_next_seed(), 1.0f / sqrtf((float)QD), s) == 0 &&
           fgh_fill_device(p->dkc, t, p->ncache, fgh_next_seed(), 1.0f, s) == 0 &&
           fgh_fill_device(p->dvc, t, p->ncache, fgh_next_seed(), 1.0f, s) == 0 &&
           fgh_ok(cudaMemcpyAsync(p->dpos, pos, sizeof(int) * p->batch, cudaMemcpyHostToDevice, s)) &&
           fgh_ok(cudaStreamSynchronize(s));
}

struct BenchCtx {
    Problem *sets;
    int nsets;
    Baseline *bl;   // set: time the baseline on the sets instead
    int failed = 0; // launches that returned an error (a short graph times fast)
};

void enqueue(void *ctx, int i, cudaStream_t s)
{
    BenchCtx *c = (BenchCtx *)ctx;
    if (c->bl)
        baseline_step(c->bl, &c->sets[i % c->nsets], s);
    else
        c->failed += fg_launch(c->sets[i % c->nsets].b, s) != FG_OK;
}

bool same_shape(const Inst *a, const Inst *b)
{
    return a->dt == b->dt && a->hidden == b->hidden && a->heads == b->heads && a->kv == b->kv &&
           a->hd == b->hd && a->smax == b->smax && a->window == b->window && a->page == b->page &&
           a->bmax == b->bmax && a->bias == b->bias && a->neox == b->neox &&
           memcmp(a->inv_freq, b->inv_freq, sizeof(float) * a->hd / 2) == 0;
}

// The run's instances (fgh_select, once the instances are loaded): --only's
// whole names alone (the ring's `…_norm` begins its deterministic twin's
// `…_norm_det`), other parts what contains them; this run's shard.
bool g_selected[kMaxInsts];

// True for the first selected instance of its shape (deterministic ones left
// out when asked): the baseline runs once per shape.
bool first_of_shape(int k, bool skip_det)
{
    for (int q = 0; q < k; q++)
        if (same_shape(&g_inst[q], &g_inst[k]) && !(skip_det && g_inst[q].det) && g_selected[q])
            return false;
    return true;
}

// quick: S = 1K and S_max only.
void bench(cudaStream_t s, const fgh_device *dev, fgh_json *j, bool quick,
           bool baseline)
{
    fgh_ceilings ceil = {};
    if (fgh_measure_ceilings(s, (size_t)1 << 30, &ceil) == 0)
        fgh_json_ceilings(j, &ceil);
    printf("ceilings: copy %.0f GB/s, read %.0f GB/s\n", ceil.copy_gbps, ceil.read_gbps);
    fgh_json_arr_begin(j, "cases");
    for (int k = 0; k < g_ninst; k++) {
        const Inst *in = &g_inst[k];
        if (in->det || !g_selected[k])
            continue;
        const int QD = in->heads * in->hd;
        for (int S = 1024; S <= in->smax; S *= 2) {
            if (quick && S != 1024 && S != in->smax)
                continue;
            int pos[kMaxBatch];
            for (int b = 0; b < in->bmax; b++)
                pos[b] = S - 1;
            // weights, then per request the KV rows attended (a window caps them)
            // read, x and y
            const double attended = in->window && in->window < S ? in->window : S;
            const double wqkv = (double)(in->heads + 2 * in->kv) * in->hd * in->hidden;
            const double bytes = 2.0 * (wqkv + (double)in->hidden * QD) +
                                 in->bmax * (2.0 * in->kv * attended * in->hd * 2 +
                                             2.0 * in->hidden * 2);
            const int nsets = fgh_rotation_sets((size_t)bytes, dev->l2_bytes);
            Problem sets[4];
            int made = 0;
            bool ok = nsets <= 4;
            for (; ok && made < nsets; made++)
                ok = bench_problem(&sets[made], in, pos, s) && problem_bind(&sets[made]) == FG_OK;
            fgh_timing t = {}, tb = {};
            BenchCtx c = {sets, nsets, nullptr};
            if (ok)
                ok = fgh_bench(s, enqueue, &c, nsets, 2.0, 7, &t) == 0 && c.failed == 0;
            // the baseline, once per shape, on the same buffer sets
            Baseline bl;
            bool have_bl = false;
            if (ok && baseline && first_of_shape(k, true) &&
                baseline_init(&bl, &sets[0])) {
                BenchCtx cb = {sets, nsets, &bl};
                // cuBLAS sets itself up on its first call: not inside the capture
                have_bl = baseline_step(&bl, &sets[0], s) && fgh_ok(cudaStreamSynchronize(s)) &&
                          fgh_bench(s, enqueue, &cb, nsets, 2.0, 7, &tb) == 0;
                baseline_free(&bl);
            }
            char what[256];
            snprintf(what, sizeof what, "%s: bench at S=%d", in->name, S);
            if (!CHECKF(what, ok, "setup, bind or timing failed (%s)", fg_last_error())) {
                for (int m = 0; m < made; m++)
                    problem_free(&sets[m]);
                continue;   // no case with a made-up time
            }
            const double gbps = bytes / (t.med_us * 1e3);
            printf("%-70s S=%5d  %8.2f us  %6.0f GB/s  %5.1f%% of read", in->name, S, t.med_us,
                   gbps, 100 * gbps / ceil.read_gbps);
            if (have_bl)
                printf("  | unfused baseline %8.2f us", tb.med_us);
            printf("\n");
            fgh_json_obj_begin(j, NULL);
            fgh_json_str(j, "name", in->name);
            fgh_json_str(j, "instance", in->name);   // as test_rmsnorm's cases
            fgh_json_int(j, "S", S);
            fgh_json_int(j, "batch", in->bmax);
            fgh_json_int(j, "cluster", in->cluster);
            fgh_json_num(j, "bytes", bytes);
            // projections (2 flops a weight per request) and attention (q.k and p.v)
            fgh_json_num(j, "flops", in->bmax * (2.0 * (wqkv + (double)in->hidden * QD) +
                                                 4.0 * in->heads * attended * in->hd));
            fgh_json_timing(j, "time", &t);
            fgh_json_num(j, "gbps", gbps);
            fgh_json_num(j, "fraction_of_read_ceiling", gbps / ceil.read_gbps);
            if (have_bl)
                fgh_json_timing(j, "baseline_unfused_cublas", &tb);
            fgh_json_obj_end(j);
            for (int m = 0; m < made; m++)
                problem_free(&sets[m]);
        }
    }
    fgh_json_arr_end(j);
}

} // namespace

int main(int argc, char **argv)
{
    fgh_args a;
    fgh_args_init(&a);
    for (int i = 1; i < argc; i++) {
        if (!fgh_common_arg(&a, argc, argv, &i)) {
            fprintf(stderr, "usage: %s [--kernels DIR] [--manifest FILE] [--only A,B] [--seed N] "
                            "[--verbose] [--no-baseline] [--quick] [--bench [--json FILE] "
                            "[--commit C]]\n", argv[0]);
            return 2;
        }
    }
    fgh_args_apply(&a);
    const char *kdir = a.kernels, *json = a.json, *commit = a.commit, *only = a.only;
    const bool do_bench = a.bench, quick = a.quick, baseline = a.baseline;
    if (!fgh_shard_from_env())   // FG_SHARD=K/N: this run's share of the instances
        return 2;
    fgh_device dev;
    if (fgh_device_open(0, &dev) != 0) {
        fgh_skip("decode_attn", "no usable GPU");
        return fgh_summary() ? 1 : 0;
    }
    char mpath[1024];
    char *manifest = fgh_open_manifest(a.manifest, kdir, mpath, sizeof mpath, nullptr);
    if (discover(kdir, manifest) <= 0) {
        fgh_skip("decode_attn", "no decode_attn cubins in the kernel folder");
        return fgh_summary() ? 1 : 0;
    }
    for (int k = 0; k < g_ninst; k++)
        make_entry(g_inst[k], &g_reg[k], &g_sizes[k]);
    {
        std::vector<const char *> names;
        for (int k = 0; k < g_ninst; k++)
            names.push_back(g_inst[k].name);
        fgh_select(only, names.data(), names.size(), g_selected);
    }
    const fg_status st = fg_init(g_reg, g_ninst, 0, &g_fg);
    if (!CHECKF("fgrt: fg_init", st == FG_OK, "%s (%s)", fg_status_string(st), fg_last_error()))
        return fgh_summary() ? 1 : 0;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (do_bench) {
        FILE *f;
        fgh_json j;
        if (fgh_bench_doc_begin(&j, &f, json, &dev, commit, "test_decode_attn --bench") != 0)
            return 2;
        bench(s, &dev, &j, quick, baseline);
        fgh_bench_doc_end(&j, f, json);
    } else {
        int tested = 0;
        for (int k = 0; k < g_ninst; k++) {
            if (!g_selected[k])
                continue;
            tested++;
            test_instance(&g_inst[k], s, quick);
            if (baseline && first_of_shape(k, false))
                check_baseline(&g_inst[k], s);
        }
        // a selection that runs nothing must not read as a pass (a sanitizer
        // run given the wrong manifest once counted its folder check alone)
        if (only)
            CHECKF("decode_attn: --only", tested > 0, "no runnable instance matches '%s'", only);
    }
    cudaStreamDestroy(s);
    fg_shutdown(g_fg);
    return fgh_summary() ? 1 : 0;
}
