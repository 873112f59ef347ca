// GPU tests and benchmark of the MLA decode core (the latent attention of
// weight-absorbed DeepSeek attention, fgrt.h's fg_mla_decode_args), launched
// through libfgrt: registry rows made from the manifest -> fg_init ->
// fg_mla_decode_bind (by instance name) -> fg_launch.
//
// Kernels: DIR/mla_decode_*.cubin (--kernels, as `make kernels` or
// check-gpu.sh compile them).  Everything else comes from the generator's
// manifest.json (--manifest; default: fgh_open_manifest's, the kernel
// folder's, else $FG_GEN_DIR's, else generated/'s): params heads, kv_lora, rope_dim, max_context,
// page_size, bmax (the 6 key dims, "key_params": 6) and, printed and
// recorded only, heads_per_block, head_groups, splits, clusters, tile, stages,
// threads;
// "dtype", "arch", "family"; launch.grid/block/dynamic_smem (and
// launch.cluster, cooperative, nonportable_cluster, priority where present);
// workspace_bytes, counters.  A cubin the manifest does not describe is
// skipped (a stale build); one described without those fields fails.
//
// Checks, per instance, on fresh inputs of the run's seed (printed; --seed),
// with out and lse poisoned (NaN) and the binding's split workspace poisoned
// before every launch, against the double C reference (ref_mla.c, spread over
// the host's cores):
//   out: relative L2 per request <= 1e-2 (bf16) / 2e-3 (f16), every element
//        written (NaN never passes);
//   lse: |lse - ref| <= 1e-4 * max(1, |ref|) for every (request, head);
//   inactive slots (length 0): out exactly 0, lse exactly -inf;
//   slots past the binding's batch (< B_max): out and lse untouched (poison);
// on (a) every request at S_max (as many requests as the reference budget
// allows), and lengths at tile, split and page boundaries (1, 31..33, 63..65,
// 127..129, 300, splits x tile +-1, page +-1, S_max/2 + 1, S_max - 1, ...);
// (b) mixed lengths with an inactive slot, and a batch of inactive slots;
// (c) peaked attention: q = 2^k x a cache row (the newest, t = len - 1, on
// even heads; the first, t = 0, on odd heads), so an off-by-one fails; (d)
// input scales 0.1, 1 and 8; a softmax scale other than the test's default (the
// runtime argument must be used); (e) paged instances: every case through a
// shuffled block table over a pool whose rows past each length are NaN; (f)
// batch below B_max; (g) 1000 graph replays of one binding bitwise equal to
// its direct launch, outputs and workspace poisoned before each; (h) a NaN
// in one key's rope columns (the first key, the last of 65) makes every
// output and lse of its request NaN.  The plain baseline (below) is checked
// against the reference on (b).
// --quick: short lengths and 2 replays (compute-sanitizer runs); --repeats N:
// replays of (g); --list: what the manifest says of each instance and its
// registry row, checked with fg_lookup, without a GPU; --smallest:
// one instance per code path (dtype, cache layout, heads per block; one split,
// one cluster of splits or several clusters), the one with the least B_max x
// heads x S_max; --only A,B: the instances named A or B, or, for a part that
// is no instance's whole name, whose name contains it (nothing runnable
// selected: a failure); FG_SHARD=K/N as the other GPU
// tests; --no-baseline.
//
// --bench [--json FILE] [--quick] [--length S]: per instance at S = 1K, 4K,
// 16K (B_max 1: 1K, 2K, 4K, ... the fit range of issue 8; <= S_max;
// --quick: the smallest and the largest; --length: S alone,
// e.g. for a profiler's first launch) and B_max requests of length S:
// CUDA-graph replays over enough buffer sets that a set is reused only after
// 2 x L2 of other traffic (harness fgh_bench), the output of requests 0 and
// B_max - 1 checked against the reference; us per launch, bytes (cache rows
// read for all requests + q + out + lse), GB/s, TFLOP/s (2 x heads x
// (kv_lora + rope + kv_lora) x S per request), the fraction of the read-only
// ceiling and of the better of it and the copy ceiling, both measured in the
// same run (harness fgh_measure_ceilings), and the plain unfused baseline
// timed the same way; per instance a fit T(S) = T0 + bytes / BW_eff.
// --ramp: request b of the bench's B_max at length ceil(S x (b + 1) / B_max),
// not all at S (a mixed-length batch: a plan that splits each request alike
// leaves the short requests' blocks idle); bytes and FLOP/s count the lengths.
// --peer LIB: a peer's MLA decode (peer_mla.h: a shared library built
// elsewhere from the peer's own sources; the project ships none) timed beside
// each paged case on the same sets the same way, its output poisoned first and
// checked against the reference as the kernel's; a shape the peer does not
// run is skipped with its reason.
#include <algorithm>
#include <memory>
#include <numeric>
#include <atomic>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <thread>
#include <initializer_list>
#include <vector>

#include <dlfcn.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "device_convert.cuh"
#include "harness.h"
#include "ref_decode.h"   // fgh_round_to
#include "peer_mla.h"
#include "ref_mla.h"
#ifdef FG_HAVE_FGRT
#include "fgrt.h"
#endif

namespace {

#ifdef FG_HAVE_FGRT

// ---- device helpers: cache layouts, rows moved between layouts ----

// Where request b's cache row t starts (elements): contiguous [batch, smax, D]
// or a page pool [pages, page, D] behind bt [batch, smax / page].
struct Layout {
    int D, smax, page;
    const int *bt;
};

__host__ __device__ __forceinline__ size_t lay_row(const Layout &L, int b, int t)
{
    if (!L.page)
        return ((size_t)b * L.smax + t) * L.D;
    const size_t pg = (size_t)L.bt[(size_t)b * (L.smax / L.page) + t / L.page];
    return (pg * L.page + t % L.page) * L.D;
}

// grid (lmax, batch), block D * 2 / 16: rows t < len[b] between a compact
// buffer [batch, lmax, D] and the layout (to_layout) or back.
__global__ void move_rows(const uint4 *src, uint4 *dst, Layout L, const int *len, int lmax,
                          bool to_layout)
{
    const int t = blockIdx.x, b = blockIdx.y, v = threadIdx.x, nv = L.D * 2 / 16;
    if (t >= len[b] || v >= nv)
        return;
    const size_t compact = ((size_t)b * lmax + t) * nv + v, lay = lay_row(L, b, t) * 2 / 16 + v;
    if (to_layout)
        dst[lay] = src[compact];
    else
        dst[compact] = src[lay];
}

// ---- the plain baseline: unfused latent attention in four kernels ----
// scores = scale q . rows (fp32, global), softmax (fp32, in place; lse),
// partial P . V over token splits (fp32, global), the splits summed and
// rounded.  Plain CUDA cores, no tensor cores; each cache tile is read once
// per 16 heads.  Checked against the reference before it is timed.

constexpr int kBlHeads = 16;   // heads per block
constexpr int kBlTok = 64;     // tokens per block (scores) and per P tile (P . V)

template <typename T> __device__ __forceinline__ float2 load_f2(const T *p);
template <> __device__ __forceinline__ float2 load_f2<__half>(const __half *p)
{
    return __half22float2(*reinterpret_cast<const __half2 *>(p));
}
template <> __device__ __forceinline__ float2 load_f2<__nv_bfloat16>(const __nv_bfloat16 *p)
{
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(p));
}

// grid (ceil(heads / 16), ceil(lmax / 64), batch), block 256, dynamic smem
// 16 x D floats (q of the block's heads).
template <typename T>
__global__ void bl_scores(const T *q, const T *cache, Layout L, const int *len, int heads, int ld,
                          float scale, float *scores)
{
    extern __shared__ float qs[];
    const int h0 = blockIdx.x * kBlHeads, t0 = blockIdx.y * kBlTok, b = blockIdx.z, D = L.D;
    const int n = len[b];
    if (t0 >= n)
        return;
    for (int i = threadIdx.x; i < kBlHeads * D; i += blockDim.x) {
        const int h = i / D, c = i % D;
        qs[i] = h0 + h < heads ? fgh_to_f(q[((size_t)b * heads + h0 + h) * D + c]) : 0.f;
    }
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int t = t0 + warp; t < min(n, t0 + kBlTok); t += warps) {
        const T *row = cache + lay_row(L, b, t);
        float acc[kBlHeads];
#pragma unroll
        for (int h = 0; h < kBlHeads; h++)
            acc[h] = 0.f;
        for (int i = 2 * lane; i < D; i += 64) {
            const float2 r = load_f2(row + i);
#pragma unroll
            for (int h = 0; h < kBlHeads; h++) {
                const float2 qq = *reinterpret_cast<const float2 *>(qs + h * D + i);
                acc[h] += qq.x * r.x + qq.y * r.y;
            }
        }
#pragma unroll
        for (int h = 0; h < kBlHeads; h++) {
            for (int o = 16; o > 0; o >>= 1)
                acc[h] += __shfl_xor_sync(0xffffffffu, acc[h], o);
            if (lane == h && h0 + h < heads)
                scores[((size_t)b * heads + h0 + h) * ld + t] = acc[h] * scale;
        }
    }
}

__device__ float bl_block_reduce(float v, bool is_max, float *red)
{
    for (int o = 16; o > 0; o >>= 1) {
        const float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    __syncthreads();   // red is reused
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = v;
    __syncthreads();
    float r = is_max ? -INFINITY : 0.f;
    for (int w = 0; w < (int)blockDim.x / 32; w++)
        r = is_max ? fmaxf(r, red[w]) : r + red[w];
    return r;
}

// grid (heads, batch), block 256: scores -> probabilities in place; lse.
__global__ void bl_softmax(float *scores, const int *len, int heads, int ld, float *lse)
{
    __shared__ float red[32];
    const int h = blockIdx.x, b = blockIdx.y, n = len[b];
    float *s = scores + ((size_t)b * heads + h) * ld;
    if (n <= 0) {
        if (threadIdx.x == 0)
            lse[(size_t)b * heads + h] = -INFINITY;
        return;
    }
    float m = -INFINITY;
    for (int t = threadIdx.x; t < n; t += blockDim.x)
        m = fmaxf(m, s[t]);
    m = bl_block_reduce(m, true, red);
    float sum = 0.f;
    for (int t = threadIdx.x; t < n; t += blockDim.x)
        sum += expf(s[t] - m);
    sum = bl_block_reduce(sum, false, red);
    const float inv = 1.f / sum;
    for (int t = threadIdx.x; t < n; t += blockDim.x)
        s[t] = expf(s[t] - m) * inv;
    if (threadIdx.x == 0)
        lse[(size_t)b * heads + h] = m + logf(sum);
}

// grid (ceil(heads / 16), splits, batch), block kv_lora / 2 (2 columns a
// thread): part[b, h, split, :] = sum over the split's tokens of p . v.
template <typename T>
__global__ void bl_pv(const float *P, const T *cache, Layout L, const int *len, int heads, int ld,
                      int kvl, float *part)
{
    __shared__ float ps[kBlHeads][kBlTok];
    const int h0 = blockIdx.x * kBlHeads, sp = blockIdx.y, splits = gridDim.y, b = blockIdx.z;
    const int n = max(len[b], 0), chunk = (n + splits - 1) / splits;
    const int t_begin = min(n, sp * chunk), t_end = min(n, t_begin + chunk), c = 2 * threadIdx.x;
    float acc[kBlHeads][2];
#pragma unroll
    for (int h = 0; h < kBlHeads; h++)
        acc[h][0] = acc[h][1] = 0.f;
    for (int t0 = t_begin; t0 < t_end; t0 += kBlTok) {
        __syncthreads();
        for (int i = threadIdx.x; i < kBlHeads * kBlTok; i += blockDim.x) {
            const int h = i / kBlTok, tt = i % kBlTok, t = t0 + tt;
            ps[h][tt] = h0 + h < heads && t < t_end ? P[((size_t)b * heads + h0 + h) * ld + t] : 0.f;
        }
        __syncthreads();
        const int m = min(kBlTok, t_end - t0);
        for (int tt = 0; tt < m; tt++) {
            const float2 v = load_f2(cache + lay_row(L, b, t0 + tt) + c);
#pragma unroll
            for (int h = 0; h < kBlHeads; h++) {
                acc[h][0] += ps[h][tt] * v.x;
                acc[h][1] += ps[h][tt] * v.y;
            }
        }
    }
#pragma unroll
    for (int h = 0; h < kBlHeads; h++)
        if (h0 + h < heads)
            *reinterpret_cast<float2 *>(part + (((size_t)b * heads + h0 + h) * splits + sp) * kvl + c) =
                make_float2(acc[h][0], acc[h][1]);
}

// grid (heads, batch), block kv_lora / 2: out = the splits' sum, rounded.
template <typename T>
__global__ void bl_combine(const float *part, const int *len, int heads, int kvl, int splits, T *out)
{
    const int h = blockIdx.x, b = blockIdx.y, c = 2 * threadIdx.x;
    float a0 = 0.f, a1 = 0.f;
    if (len[b] > 0)
        for (int sp = 0; sp < splits; sp++) {
            const float *p = part + (((size_t)b * heads + h) * splits + sp) * kvl + c;
            a0 += p[0], a1 += p[1];
        }
    T *o = out + ((size_t)b * heads + h) * kvl + c;
    o[0] = fgh_from_f<T>(a0);
    o[1] = fgh_from_f<T>(a1);
}

// ---- instances: the cubins and their manifest entries ----

constexpr float kTestScale = 0.114721387f;

struct Inst {
    char name[160], family[64], scale_text[64];
    fgh_dtype dt;
    int heads, kvl, rope, D, smax, page, bmax;
    int hpb, groups, splits, clusters, spread, tile, stages, threads;   // the plan; -1 where the manifest has none
    float scale;                                      // kTestScale
    long long grid[3], block[3], cluster[3];
    long long cooperative, nonportable, dynamic_smem, workspace, counters, priority;
    void *image;
    size_t image_size;
};

constexpr int kMaxInsts = 1024;   // a tuning run's candidates of several families
Inst g_inst[kMaxInsts];
int g_ninst, g_ncubins;
fg_kernel_entry g_reg[kMaxInsts];
size_t g_sizes[kMaxInsts];
fg_context *g_fg;
bool g_quick;
int g_bench_length;   // --length: the one S benched (0: the usual ones)
bool g_ordered_pages; // --ordered-pages: the bench's pages in request order (FlashMLA's benchmark's layout)
bool g_ramp;          // --ramp: the bench's requests of lengths S / B_max, 2 S / B_max, ..., S

// true: the entry has what a test needs; false with `why` (absent: a stale
// cubin, skipped; incomplete: a generator fault, failed).
bool from_manifest(const char *m, Inst *in, char *why, size_t nwhy, bool *absent)
{
    const char *n = in->name;
    *absent = fgh_manifest_text(m, n, "name", why, nwhy) < 0;
    if (*absent) {
        snprintf(why, nwhy, "not in the manifest");
        return false;
    }
    const struct {
        int *field;
        const char *key;
        bool need;
    } ints[] = {{&in->heads, "heads", true},        {&in->kvl, "kv_lora", true},
                {&in->rope, "rope_dim", true},      {&in->smax, "max_context", true},
                {&in->page, "page_size", true},     {&in->bmax, "bmax", true},
                {&in->hpb, "heads_per_block", false}, {&in->groups, "head_groups", false},
                {&in->splits, "splits", false},     {&in->clusters, "clusters", false},
                {&in->spread, "spread", false},     {&in->tile, "tile", false},
                {&in->stages, "stages", false},     {&in->threads, "threads", false}};
    for (const auto &f : ints) {
        const long long v = fgh_manifest_value(m, n, f.key);
        *f.field = (int)v;
        if (f.need && v < 0) {
            snprintf(why, nwhy, "manifest entry without params.%s", f.key);
            return false;
        }
    }
    in->D = in->kvl + in->rope;
    const long long kp = fgh_manifest_value(m, n, "key_params");
    char dt[16] = "", arch[16] = "";
    if (kp != 6) {
        snprintf(why, nwhy, "key_params %lld; fgrt.h's mla_decode has 6 key dims", kp);
        return false;
    }
    if (fgh_manifest_text(m, n, "dtype", dt, sizeof dt) < 0 || (strcmp(dt, "bf16") && strcmp(dt, "f16"))) {
        snprintf(why, nwhy, "dtype '%s'; expected bf16 or f16", dt);
        return false;
    }
    in->dt = !strcmp(dt, "f16") ? FGH_F16 : FGH_BF16;
    if (fgh_manifest_text(m, n, "arch", arch, sizeof arch) < 0 || strcmp(arch, "sm_90a")) {
        snprintf(why, nwhy, "arch '%s'; this test runs sm_90a cubins", arch);
        return false;
    }
    if (fgh_manifest_text(m, n, "family", in->family, sizeof in->family) < 0)
        snprintf(in->family, sizeof in->family, "mla_decode");
    // The scale is a launch argument, not the instance's: one instance serves
    // models with different scales (DeepSeek-V2-Lite and V3 at TP=8 share the
    // 16-head one), so the test uses DeepSeek-V2-Lite's (explain gives each
    // model's): 1/sqrt(128 + 64) times YaRN's mscale^2 = 1.2608^2.
    in->scale = kTestScale;
    snprintf(in->scale_text, sizeof in->scale_text, "%.9g", (double)kTestScale);
    if (fgh_manifest_ints(m, n, "launch.grid", in->grid, 3) != 3) {
        snprintf(why, nwhy, "manifest entry without launch.grid [x, y, z]");
        return false;
    }
    in->block[1] = in->block[2] = 1;
    in->cluster[0] = in->cluster[1] = in->cluster[2] = 1;
    if (fgh_manifest_ints(m, n, "launch.block", in->block, 3) < 1) {
        snprintf(why, nwhy, "manifest entry without launch.block");
        return false;
    }
    fgh_manifest_ints(m, n, "launch.cluster", in->cluster, 3);
    in->dynamic_smem = fgh_manifest_value(m, n, "launch.dynamic_smem");
    in->cooperative = std::max(0LL, fgh_manifest_value(m, n, "launch.cooperative"));
    in->nonportable = std::max(0LL, fgh_manifest_value(m, n, "launch.nonportable_cluster"));
    in->workspace = fgh_manifest_value(m, n, "workspace_bytes");
    in->counters = fgh_manifest_value(m, n, "counters");
    in->priority = std::max(0LL, fgh_manifest_value(m, n, "priority"));
    if (in->dynamic_smem < 0 || in->workspace < 0 || in->counters < 0) {
        snprintf(why, nwhy, "manifest entry without launch.dynamic_smem, workspace_bytes or counters");
        return false;
    }
    const long long d = fgh_manifest_value(m, n, "d");
    if (in->heads <= 0 || in->kvl <= 0 || in->kvl % 64 || in->kvl > 2048 || in->D % 16 ||
        in->smax <= 0 || in->bmax <= 0 || (in->page && in->smax % in->page) || (d >= 0 && d != in->D)) {
        snprintf(why, nwhy, "dims this test cannot hold: heads %d, kv_lora %d (a multiple of 64, "
                 "<= 2048), rope %d (row a multiple of 16), max_context %d, page %d, bmax %d",
                 in->heads, in->kvl, in->rope, in->smax, in->page, in->bmax);
        return false;
    }
    return true;
}

int discover(const char *dir, const char *manifest)
{
    int n;
    char **names = fgh_list_cubins(dir, "mla_decode_", &n);
    int overflow = 0;
    for (int k = 0; k < n; k++) {
        g_ncubins++;
        if (g_ninst == kMaxInsts) {
            overflow++;
            continue;
        }
        Inst in = {};
        snprintf(in.name, sizeof in.name, "%s", names[k]);
        char why[256];
        bool absent = false;
        if (!from_manifest(manifest, &in, why, sizeof why, &absent)) {
            if (absent)
                fgh_skip(in.name, "not in the manifest (a cubin of another build?)");
            else
                CHECKF("mla_decode: manifest entry", false, "%s: %s", in.name, why);
            continue;
        }
        char path[512];
        snprintf(path, sizeof path, "%s/%s.cubin", dir, in.name);
        in.image = fgh_read_file(path, &in.image_size);
        if (in.image)
            g_inst[g_ninst++] = in;
        else   // (failures only: finding the kernels is no pass)
            CHECKF("mla_decode: cubin read", false, "%s", path);
    }
    free(names);   // (sorted by name: so is g_inst)
    if (overflow)
        CHECKF("mla_decode: kernel folder", false,
               "%d instances past the %d this program holds were not tested", overflow, kMaxInsts);
    return g_ninst;
}

// The registry row the generator emits for the instance (fg_registry.c).
void make_entry(const Inst &in, fg_kernel_entry *e, size_t *size_slot)
{
    *e = fg_kernel_entry{};
    e->name = in.name;
    e->family = in.family;
    e->op = "mla_decode";
    e->arch = FG_REG_ARCH_SM90A;
    e->dtype = in.dt == FGH_F16 ? FG_REG_F16 : FG_REG_BF16;
    // fgrt.h's key order: heads, kv_lora, rope_dim, max_context, page_size,
    // batch (a maximum)
    e->ndims = 6;
    const long long dims[6] = {in.heads, in.kvl, in.rope, in.smax, in.page, in.bmax};
    memcpy(e->dims, dims, sizeof dims);
    e->match[5] = FG_REG_MATCH_MAX;
    e->grid_rule = FG_REG_GRID_FIXED;
    for (int i = 0; i < 3; i++) {
        e->grid[i] = (unsigned)in.grid[i];
        e->block[i] = (unsigned)in.block[i];
        e->cluster[i] = (unsigned)in.cluster[i];
    }
    e->nonportable_cluster = (unsigned char)in.nonportable;
    e->cooperative = (unsigned char)in.cooperative;
    e->dynamic_smem = (unsigned)in.dynamic_smem;
    e->workspace_bytes = (unsigned)in.workspace;
    e->counter_count = (unsigned)in.counters;
    e->priority = (int)in.priority;
    *size_slot = in.image_size;
    e->image = (const unsigned char *)in.image;
    e->image_size = size_slot;
}

// --smallest: the code path an instance takes (dtype, cache layout, heads per
// block; one split, one cluster of splits, several clusters, or the spread merge).
int merge_path(const Inst &a)
{
    return a.splits <= 1 ? 0 : a.spread > 0 ? 3 : a.clusters <= 1 ? 1 : 2;
}
bool same_path(const Inst &a, const Inst &b)
{
    const int la = a.page == 0 ? 0 : a.page == 1 ? 1 : 2, lb = b.page == 0 ? 0 : b.page == 1 ? 1 : 2;
    return a.dt == b.dt && la == lb && a.hpb == b.hpb && merge_path(a) == merge_path(b);
}

double work_of(const Inst &a) { return (double)a.bmax * a.heads * a.smax; }

// ---- the reference, spread over the host's cores ----

void reference(const fgh_mla_cfg *c, const void *q, const void *cache, const int *len, double *o,
               double *lse)
{
    const int hc = 8, chunks = (c->heads + hc - 1) / hc, tasks = c->batch * chunks;
    std::atomic<int> next{0};
    auto work = [&]() {
        for (int k; (k = next++) < tasks;) {
            const int b = k / chunks, h0 = k % chunks * hc, h1 = std::min(c->heads, h0 + hc);
            fgh_ref_mla_heads(c, q, cache, len, b, h0, h1, o + ((size_t)b * c->heads + h0) * c->kv_lora,
                              lse + (size_t)b * c->heads + h0);
        }
    };
    unsigned n = std::thread::hardware_concurrency();
    n = std::max(1u, std::min({n, 64u, (unsigned)std::max(tasks, 1)}));
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < n; i++)
        pool.emplace_back(work);
    work();
    for (auto &t : pool)
        t.join();
}

// ---- judging one launch's outputs ----

constexpr double kLseTol = 1e-4;   // |lse - ref| <= kLseTol * max(1, |ref|): a lost tile of
                                   // 32 keys at S = 4K moves lse by ~1e-3 of it

double out_tol(fgh_dtype t) { return t == FGH_F16 ? 2e-3 : 1e-2; }

// ||b - a|| / ||a|| over n values
double rel_l2(const double *a, const double *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++)
        num += (b[i] - a[i]) * (b[i] - a[i]), den += a[i] * a[i];
    return sqrt(num / std::max(den, 1e-300));
}

struct Verdict {
    double worst_rel = 0, worst_lse = 0;
    int worst_b = -1, worst_lse_b = -1, active = 0, inactive = 0;
    size_t nonfinite = 0, lse_bad = 0, inactive_bad = 0, untouched_bad = 0, rel_bad = 0;
};

// out [alloc, heads, kvl] and lse [alloc, heads] as the device left them;
// ref_o, ref_l for requests [0, batch); slots past batch must be all poison.
Verdict judge(const Inst *in, int batch, int alloc, const int *len, const uint16_t *out,
              const float *lse, const double *ref_o, const double *ref_l)
{
    Verdict v;
    const size_t per = (size_t)in->heads * in->kvl;
    for (int b = 0; b < batch; b++) {
        const uint16_t *o = out + b * per;
        const float *l = lse + (size_t)b * in->heads;
        if (len[b] <= 0) {
            v.inactive++;
            for (size_t i = 0; i < per; i++)
                v.inactive_bad += !(fgh_get(o, in->dt, i) == 0.0f);
            for (int h = 0; h < in->heads; h++)
                v.inactive_bad += !(isinf(l[h]) && l[h] < 0);
            continue;
        }
        v.active++;
        const fgh_err e = fgh_compare(o, in->dt, ref_o + b * per, per);
        v.nonfinite += e.nonfinite;
        const double rel = e.nonfinite ? INFINITY : e.rel_l2;
        v.rel_bad += !(rel <= out_tol(in->dt));
        if (v.worst_b < 0 || !(rel <= v.worst_rel))
            v.worst_rel = rel, v.worst_b = b;
        for (int h = 0; h < in->heads; h++) {
            const double r = ref_l[(size_t)b * in->heads + h];
            const double err = isfinite(l[h]) ? fabs(l[h] - r) / std::max(1.0, fabs(r)) : INFINITY;
            v.lse_bad += !(err <= kLseTol);
            if (v.worst_lse_b < 0 || !(err <= v.worst_lse))
                v.worst_lse = err, v.worst_lse_b = b;
        }
    }
    const unsigned char *ob = (const unsigned char *)(out + batch * per),
                        *lb = (const unsigned char *)(lse + (size_t)batch * in->heads);
    for (size_t i = 0; i < (size_t)(alloc - batch) * per * 2; i++)
        v.untouched_bad += ob[i] != FGH_POISON_BYTE;
    for (size_t i = 0; i < (size_t)(alloc - batch) * in->heads * 4; i++)
        v.untouched_bad += lb[i] != FGH_POISON_BYTE;
    return v;
}

// The checks of one verdict, named "<instance>: <what>: ...".
void report(const Inst *in, const char *what, int batch, const Verdict &v)
{
    char name[320];
    if (v.active) {
        snprintf(name, sizeof name, "%s: %s: out", in->name, what);
        CHECKF(name, v.nonfinite == 0 && v.rel_bad == 0,
               "worst rel L2 %.3e at request %d (limit %.0e); %zu of %d requests over; %zu "
               "non-finite elements", v.worst_rel, v.worst_b, out_tol(in->dt), v.rel_bad, v.active,
               v.nonfinite);
        snprintf(name, sizeof name, "%s: %s: lse", in->name, what);
        CHECKF(name, v.lse_bad == 0,
               "worst |lse - ref| / max(1, |ref|) %.3e at request %d (limit %.0e); %zu heads over",
               v.worst_lse, v.worst_lse_b, kLseTol, v.lse_bad);
        printf("    %s: %s: worst rel L2 %.3e (request %d), worst lse error %.2e\n", in->name, what,
               v.worst_rel, v.worst_b, v.worst_lse);
    }
    if (v.inactive) {
        snprintf(name, sizeof name, "%s: %s: inactive slots out 0, lse -inf", in->name, what);
        CHECKF(name, v.inactive_bad == 0, "%zu elements of %d inactive slots wrong", v.inactive_bad,
               v.inactive);
    }
    if (batch < in->bmax) {
        snprintf(name, sizeof name, "%s: %s: slots past batch %d untouched", in->name, what, batch);
        CHECKF(name, v.untouched_bad == 0, "%zu bytes of out/lse past the batch written",
               v.untouched_bad);
    }
}

// ---- one problem: inputs, device buffers, a binding ----

struct Problem {
    const Inst *in = nullptr;
    int batch = 0, lmax = 1;   // the binding's batch; rows per request in the host cache
    float scale = 0, in_scale = 1;
    std::vector<int> len;       // [bmax]: past batch, lengths a kernel must not read
    std::vector<uint16_t> q;    // [bmax, heads, D]
    std::vector<uint16_t> cache;   // compact [batch, lmax, D]: rows < len[b]
    std::vector<int> bt;        // paged: [bmax, smax / page], a shuffled permutation
    size_t ncache = 0;          // device cache elements (all of it poisoned first)
    void *dq = nullptr, *dcache = nullptr, *dout = nullptr;
    float *dlse = nullptr;
    int *dlen = nullptr, *dbt = nullptr;
    fg_binding *b = nullptr;
    std::vector<double> ref_o, ref_l;   // the reference of the current inputs and scale
};

// Binds instance `in` (by name) to device buffers, the block table only for a
// paged cache.
fg_status bind_instance(const Inst *in, int batch, float scale, void *dq, void *dcache, int *dbt,
                        int *dlen, void *dout, float *dlse, fg_binding **b)
{
    fg_mla_decode_args a = {};
    a.dtype = in->dt == FGH_F16 ? FG_REG_F16 : FG_REG_BF16;
    a.heads = in->heads, a.kv_lora = in->kvl, a.rope_dim = in->rope;
    a.max_context = in->smax, a.page_size = in->page, a.batch = batch;
    a.instance = in->name;
    a.q = dq, a.cache = dcache, a.block_table = in->page ? dbt : nullptr;
    a.lengths = dlen, a.out = dout, a.lse = dlse, a.scale = scale;
    return fg_mla_decode_bind(g_fg, &a, b);
}

size_t nout(const Problem &p) { return (size_t)p.in->bmax * p.in->heads * p.in->kvl; }
size_t nlse(const Problem &p) { return (size_t)p.in->bmax * p.in->heads; }
Layout layout(const Problem &p) { return Layout{p.in->D, p.in->smax, p.in->page, p.dbt}; }

// A binding and the device buffers bound to it, released.
void free_bound(fg_binding *b, std::initializer_list<void *> dev)
{
    fg_binding_free(b);
    for (void *d : dev)
        cudaFree(d);
}

void problem_free(Problem *p)
{
    free_bound(p->b, {p->dq, p->dcache, p->dout, p->dlse, p->dlen, p->dbt});
    *p = Problem{};
}

// Host q (random, scaled), the device cache (rows < len[b] random, every
// other row and unowned page NaN poison) and its compact host copy, lengths
// and the block table on the device.  Slots past `batch` get length
// min(S_max, 64) and random q, but no cache rows: a kernel that ignored the
// batch would write their outputs.
bool problem_init(Problem *p, const Inst *in, int batch, const int *lens, float in_scale,
                  float scale, cudaStream_t s)
{
    problem_free(p);
    p->in = in, p->batch = batch, p->scale = scale, p->in_scale = in_scale;
    p->len.assign(in->bmax, std::min(in->smax, 64));
    p->lmax = 1;
    for (int b = 0; b < batch; b++)
        p->len[b] = lens[b], p->lmax = std::max(p->lmax, lens[b]);
    const size_t D = in->D;
    p->q.resize((size_t)in->bmax * in->heads * D);
    fgh_fill_host(p->q.data(), in->dt, p->q.size(), fgh_next_seed(), in_scale);
    if (in->page) {
        const int pps = in->smax / in->page, npages = in->bmax * pps;
        p->bt.resize(npages);
        fgh_permutation(p->bt.data(), npages, fgh_next_seed());
        p->ncache = (size_t)npages * in->page * D;
    } else {
        p->ncache = (size_t)in->bmax * in->smax * D;
    }
    const size_t ncompact = (size_t)batch * p->lmax * D;
    p->cache.resize(ncompact);
    void *stage = nullptr;
    bool ok = fgh_ok(cudaMalloc(&p->dq, p->q.size() * 2)) &&
              fgh_ok(cudaMalloc(&p->dcache, p->ncache * 2)) &&
              fgh_ok(cudaMalloc(&p->dout, nout(*p) * 2)) &&
              fgh_ok(cudaMalloc(&p->dlse, nlse(*p) * 4)) &&
              fgh_ok(cudaMalloc(&p->dlen, sizeof(int) * in->bmax)) &&
              (!in->page || fgh_ok(cudaMalloc(&p->dbt, sizeof(int) * p->bt.size()))) &&
              fgh_ok(cudaMalloc(&stage, ncompact * 2));
    // (every copy and kernel on s: a non-blocking stream is not ordered after
    // the legacy stream's copies)
    ok = ok &&
         fgh_ok(cudaMemcpyAsync(p->dlen, p->len.data(), sizeof(int) * in->bmax, cudaMemcpyHostToDevice, s)) &&
         (!in->page || fgh_ok(cudaMemcpyAsync(p->dbt, p->bt.data(), sizeof(int) * p->bt.size(),
                                              cudaMemcpyHostToDevice, s))) &&
         fgh_fill_device(stage, in->dt, ncompact, fgh_next_seed(), in_scale, s) == 0 &&
         fgh_poison_device(p->dcache, p->ncache * 2, s) == 0;
    if (ok) {
        move_rows<<<dim3(p->lmax, batch), (unsigned)(D * 2 / 16), 0, s>>>(
            (const uint4 *)stage, (uint4 *)p->dcache, layout(*p), p->dlen, p->lmax, true);
        ok = fgh_ok(cudaGetLastError()) &&
             fgh_ok(cudaMemcpyAsync(p->cache.data(), stage, ncompact * 2, cudaMemcpyDeviceToHost, s)) &&
             fgh_ok(cudaStreamSynchronize(s));
    }
    cudaFree(stage);
    return ok;
}

// q (as modified on the host) to the device, and the binding.
fg_status problem_bind(Problem *p, cudaStream_t s)
{
    if (!fgh_ok(cudaMemcpyAsync(p->dq, p->q.data(), p->q.size() * 2, cudaMemcpyHostToDevice, s)) ||
        !fgh_ok(cudaStreamSynchronize(s)))
        return FG_ERR_DRIVER;
    fg_binding_free(p->b);
    p->b = nullptr;
    return bind_instance(p->in, p->batch, p->scale, p->dq, p->dcache, p->dbt, p->dlen, p->dout,
                         p->dlse, &p->b);
}

void compute_reference(Problem *p)
{
    const Inst *in = p->in;
    fgh_mla_cfg c = {};
    c.batch = p->batch, c.heads = in->heads, c.kv_lora = in->kvl, c.rope = in->rope;
    c.max_context = p->lmax, c.scale = (double)p->scale, c.dtype = in->dt;
    p->ref_o.assign((size_t)p->batch * in->heads * in->kvl, 0.0);
    p->ref_l.assign((size_t)p->batch * in->heads, 0.0);
    reference(&c, p->q.data(), p->cache.data(), p->len.data(), p->ref_o.data(), p->ref_l.data());
}

// out and lse of all B_max slots: NaN poison.
bool poison_out_lse(const Inst *in, void *out, float *lse, cudaStream_t s)
{
    return fgh_poison_device(out, (size_t)in->bmax * in->heads * in->kvl * 2, s) == 0 &&
           fgh_poison_device(lse, (size_t)in->bmax * in->heads * 4, s) == 0;
}

// The binding's split workspace (not its counters, which the kernel leaves
// zero), out and lse (poison_out_lse), and the SMs' shared memory: NaN poison.
bool poison_outputs_of(fg_binding *b, void *out, float *lse, const Inst *in, cudaStream_t s)
{
    fg_binding_info info = {};
    if (fg_binding_get_info(b, &info) != FG_OK)
        return false;
    const size_t ws = info.entry ? info.entry->workspace_bytes : 0;
    return (!ws || fgh_poison_device(info.workspace, ws, s) == 0) && poison_out_lse(in, out, lse, s) &&
           fgh_poison_shared(s) == 0;
}

bool poison_outputs(const Problem &p, cudaStream_t s)
{
    return poison_outputs_of(p.b, p.dout, p.dlse, p.in, s);
}

bool fetch(const Problem &p, uint16_t *out, float *lse, cudaStream_t s)
{
    return fgh_ok(cudaMemcpyAsync(out, p.dout, nout(p) * 2, cudaMemcpyDeviceToHost, s)) &&
           fgh_ok(cudaMemcpyAsync(lse, p.dlse, nlse(p) * 4, cudaMemcpyDeviceToHost, s)) &&
           fgh_ok(cudaStreamSynchronize(s));
}

// One launch of the problem's binding, judged against its reference.
Verdict run_and_judge(Problem *p, const char *what, cudaStream_t s, bool *ran)
{
    char name[320];
    snprintf(name, sizeof name, "%s: %s: launch", p->in->name, what);
    std::vector<uint16_t> out(nout(*p));
    std::vector<float> lse(nlse(*p));
    *ran = CHECK(name, poison_outputs(*p, s));
    if (*ran) {
        const fg_status st = fg_launch(p->b, s);
        *ran = CHECKF(name, st == FG_OK && fgh_ok(cudaStreamSynchronize(s)), "%s (%s)",
                      fg_status_string(st), fg_last_error()) &&
               CHECK(name, fetch(*p, out.data(), lse.data(), s));
    }
    if (!*ran)
        return Verdict{};
    if (p->ref_o.empty())
        compute_reference(p);
    return judge(p->in, p->batch, p->in->bmax, p->len.data(), out.data(), lse.data(),
                 p->ref_o.data(), p->ref_l.data());
}

// Set up, bind, launch and judge one case; false if it could not run.
bool run_case(Problem *p, const Inst *in, const char *what, int batch, const int *lens,
              float in_scale, float scale, cudaStream_t s, void (*shape_q)(Problem *) = nullptr)
{
    char name[320];
    snprintf(name, sizeof name, "%s: %s: setup and bind", in->name, what);
    if (!CHECK(name, problem_init(p, in, batch, lens, in_scale, scale, s)))
        return false;
    if (shape_q)
        shape_q(p);
    const fg_status st = problem_bind(p, s);
    if (!CHECKF(name, st == FG_OK, "%s (%s)", fg_status_string(st), fg_last_error()))
        return false;
    bool ran;
    const Verdict v = run_and_judge(p, what, s, &ran);
    if (ran)
        report(in, what, batch, v);
    return ran;
}

// ---- the baseline ----

struct Baseline {
    const Inst *in = nullptr;
    float *scores = nullptr, *part = nullptr;
    int ld = 0, splits = 1, batch = 0;
};

void baseline_free(Baseline *bl)
{
    cudaFree(bl->scores), cudaFree(bl->part);
    *bl = Baseline{};
}

// Scratch for `batch` requests of at most lmax tokens.
bool baseline_init(Baseline *bl, const Inst *in, int batch, int lmax)
{
    baseline_free(bl);
    int sms = 132, dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const int hblocks = (in->heads + kBlHeads - 1) / kBlHeads;
    bl->in = in, bl->ld = std::max(lmax, 1), bl->batch = batch;
    // P . V: enough blocks for two waves, at least 256 tokens a split
    bl->splits = std::max(1, std::min((2 * sms + hblocks * batch - 1) / (hblocks * batch),
                                      (lmax + 255) / 256));
    return fgh_ok(cudaMalloc(&bl->scores, sizeof(float) * batch * in->heads * bl->ld)) &&
           fgh_ok(cudaMalloc(&bl->part, sizeof(float) * batch * in->heads * bl->splits * in->kvl)) &&
           fgh_ok(cudaFuncSetAttribute(bl_scores<__half>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       kBlHeads * in->D * 4)) &&
           fgh_ok(cudaFuncSetAttribute(bl_scores<__nv_bfloat16>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, kBlHeads * in->D * 4));
}

template <typename T>
void baseline_step_t(const Baseline *bl, const void *q, const void *cache, Layout L, const int *len,
                     int lmax, float scale, void *out, float *lse, cudaStream_t s)
{
    const Inst *in = bl->in;
    const int hblocks = (in->heads + kBlHeads - 1) / kBlHeads, B = bl->batch;
    bl_scores<T><<<dim3(hblocks, (lmax + kBlTok - 1) / kBlTok, B), 256, kBlHeads * in->D * 4, s>>>(
        (const T *)q, (const T *)cache, L, len, in->heads, bl->ld, scale, bl->scores);
    bl_softmax<<<dim3(in->heads, B), 256, 0, s>>>(bl->scores, len, in->heads, bl->ld, lse);
    bl_pv<T><<<dim3(hblocks, bl->splits, B), in->kvl / 2, 0, s>>>(bl->scores, (const T *)cache, L, len,
                                                                  in->heads, bl->ld, in->kvl, bl->part);
    bl_combine<T><<<dim3(in->heads, B), in->kvl / 2, 0, s>>>(bl->part, len, in->heads, in->kvl,
                                                            bl->splits, (T *)out);
}

void baseline_step(const Baseline *bl, const void *q, const void *cache, Layout L, const int *len,
                   int lmax, float scale, void *out, float *lse, cudaStream_t s)
{
    if (bl->in->dt == FGH_F16)
        baseline_step_t<__half>(bl, q, cache, L, len, lmax, scale, out, lse, s);
    else
        baseline_step_t<__nv_bfloat16>(bl, q, cache, L, len, lmax, scale, out, lse, s);
}

// The baseline on a problem's inputs, judged like the kernel.
void check_baseline(Problem *p, cudaStream_t s)
{
    char what[128];
    snprintf(what, sizeof what, "plain baseline (4 kernels) on B=%d mixed lengths", p->batch);
    char name[320];
    snprintf(name, sizeof name, "%s: %s: run", p->in->name, what);
    Baseline bl;
    std::vector<uint16_t> out(nout(*p));
    std::vector<float> lse(nlse(*p));
    const bool ok = baseline_init(&bl, p->in, p->batch, p->lmax) &&
                    fgh_poison_device(p->dout, nout(*p) * 2, s) == 0 &&
                    fgh_poison_device(p->dlse, nlse(*p) * 4, s) == 0;
    if (ok)
        baseline_step(&bl, p->dq, p->dcache, layout(*p), p->dlen, p->lmax, p->scale, p->dout, p->dlse, s);
    if (CHECK(name, ok && fgh_ok(cudaGetLastError()) && fetch(*p, out.data(), lse.data(), s))) {
        if (p->ref_o.empty())
            compute_reference(p);
        report(p->in, what, p->batch,
               judge(p->in, p->batch, p->in->bmax, p->len.data(), out.data(), lse.data(),
                     p->ref_o.data(), p->ref_l.data()));
    }
    baseline_free(&bl);
}

// ---- the cases ----

// Host budget of a case's reference: cache rows kept on the host and
// multiply-adds (about 1 s on 16 cores).
constexpr double kRefBytes = 512.0 * 1024 * 1024;
constexpr double kRefMacs = 2e10;

double macs_per_token(const Inst *in) { return (double)in->heads * (in->D + in->kvl); }

// Mixed lengths up to cap: slot 1 inactive when batch > 1, the others from a
// list with tile, page and split boundaries.
std::vector<int> mixed_lengths(const Inst *in, int batch, int cap)
{
    const int tile = in->tile > 0 ? in->tile : 32, sp = std::max(in->splits, 1);
    const int pick[] = {cap, 0, 1, cap / 2 + 1, tile + 1, 65, cap - 1, tile * sp + 1, 300, 64,
                        2, cap / 3, in->page + 1, 127, 33};
    std::vector<int> v(batch);
    for (int b = 0; b < batch; b++) {
        const int x = pick[b % (int)(sizeof pick / sizeof pick[0])];
        v[b] = b == 1 ? 0 : std::max(1, std::min(cap, x));
    }
    if (batch == 1)
        v[0] = cap;
    return v;
}

// Peaked: q[b, h] = c x row t of request b, t = len - 1 on even heads and 0 on
// odd ones; c a power of two (exact) that puts the peak score near 24.
void make_peaked(Problem *p)
{
    const Inst *in = p->in;
    const double mean_sq = (double)p->in_scale * p->in_scale * in->D / 3.0;
    const double c = exp2(std::max(-8.0, std::min(8.0, round(log2(24.0 / (p->scale * mean_sq))))));
    for (int b = 0; b < p->batch; b++) {
        if (p->len[b] <= 0)
            continue;
        for (int h = 0; h < in->heads; h++) {
            const int t = h % 2 ? 0 : p->len[b] - 1;
            const uint16_t *row = p->cache.data() + ((size_t)b * p->lmax + t) * in->D;
            uint16_t *q = p->q.data() + ((size_t)b * in->heads + h) * in->D;
            for (int i = 0; i < in->D; i++)
                q[i] = fgh_round_to(in->dt, c * fgh_get(row, in->dt, (size_t)i));   // exact
        }
    }
}

// The peaked case is only a test if the reference is peaked: each active
// head's reference output within 1e-3 (rel L2) of its row.
void check_peaked_setup(Problem *p)
{
    const Inst *in = p->in;
    if (p->ref_o.empty())
        compute_reference(p);
    double worst = 0;
    for (int b = 0; b < p->batch; b++)
        for (int h = 0; h < in->heads && p->len[b] > 0; h++) {
            const int t = h % 2 ? 0 : p->len[b] - 1;
            const uint16_t *r = p->cache.data() + ((size_t)b * p->lmax + t) * in->D;
            double num = 0, den = 0;
            for (int i = 0; i < in->kvl; i++) {
                const double want = fgh_get(r, in->dt, (size_t)i),
                             got = p->ref_o[((size_t)b * in->heads + h) * in->kvl + i];
                num += (got - want) * (got - want), den += want * want;
            }
            const double e = sqrt(num / std::max(den, 1e-300));
            if (!(e <= worst))   // a NaN is the worst (std::max would keep the old value)
                worst = e;
        }
    char name[320];
    snprintf(name, sizeof name, "%s: peaked case: the reference follows the chosen rows", in->name);
    CHECKF(name, worst <= 1e-3, "test setup: the reference is %.3e from the rows (not peaked)", worst);
}

// (g) graph replays of the problem's binding, bitwise equal to its direct
// launch, out, lse and the workspace poisoned before each.
void check_repeat(Problem *p, cudaStream_t s, int repeats)
{
    char name[320];
    snprintf(name, sizeof name, "%s: %d graph replays bitwise equal to the direct launch "
             "(out, lse, workspace poisoned before each)", p->in->name, repeats);
    std::vector<uint16_t> first(nout(*p)), out(nout(*p));
    std::vector<float> lfirst(nlse(*p)), lse(nlse(*p));
    bool ok = poison_outputs(*p, s) && fg_launch(p->b, s) == FG_OK &&
              fetch(*p, first.data(), lfirst.data(), s);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ok = ok && fgh_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (ok) {
        const fg_status st = fg_launch(p->b, s);
        ok = fgh_ok(cudaStreamEndCapture(s, &graph)) && st == FG_OK &&
             fgh_ok(cudaGraphInstantiate(&exec, graph, 0));
    }
    int diff = 0, runs = 0;
    for (; ok && runs < repeats; runs++) {
        ok = poison_outputs(*p, s) && fgh_ok(cudaGraphLaunch(exec, s)) &&
             fetch(*p, out.data(), lse.data(), s);
        diff += ok && (memcmp(first.data(), out.data(), out.size() * 2) != 0 ||
                       memcmp(lfirst.data(), lse.data(), lse.size() * 4) != 0);
    }
    CHECKF(name, ok && diff == 0 && runs == repeats, "%d of %d replays differ%s", diff, runs,
           ok ? "" : " (a launch or copy failed)");
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
}

void test_instance(const Inst *in, cudaStream_t s, bool baseline, int repeats)
{
    printf("== %s: heads %d, kv_lora %d, rope %d, S_max %d, page %d, B_max %d; heads/block %d, "
           "splits %d, tile %d; softmax scale %s\n", in->name, in->heads, in->kvl, in->rope,
           in->smax, in->page, in->bmax, in->hpb, in->splits, in->tile, in->scale_text);
    const int B = in->bmax, S = in->smax, tile = in->tile > 0 ? in->tile : 32;
    const int sp = std::max(in->splits, 1);
    const float scale = in->scale;
    const int cap = std::min(S, g_quick ? 512 : 2048);   // mixed lengths
    Problem p;
    char what[160];

    // (a) S_max for as many requests as the reference budget allows
    if (!g_quick || S <= 4096) {
        const double per = (double)S * in->D * 2, macs = (double)S * macs_per_token(in);
        const int nb = std::max(1, std::min(B, (int)std::min(kRefBytes / per, kRefMacs / macs)));
        std::vector<int> lens(nb, S);
        snprintf(what, sizeof what, "(a) S_max = %d, B=%d", S, nb);
        run_case(&p, in, what, nb, lens.data(), 1.0f, scale, s);
    }

    // (a) lengths at tile, split and page boundaries, B_max at a time
    {
        std::vector<int> L = {1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 300,
                              tile - 1, tile, tile + 1, sp * tile - 1, sp * tile, sp * tile + 1,
                              2 * sp * tile + 1, S / 2 + 1, S - 1};
        if (in->page)
            for (int x : {in->page - 1, in->page, in->page + 1, 2 * in->page + 1})
                L.push_back(x);
        if (g_quick)
            L = {1, 33, 65, tile + 1, sp * tile + 1, std::min(S, 512)};
        L.erase(std::remove_if(L.begin(), L.end(), [&](int x) { return x < 1 || x > S; }), L.end());
        std::sort(L.begin(), L.end());
        L.erase(std::unique(L.begin(), L.end()), L.end());
        for (size_t at = 0; at < L.size(); at += B) {
            const int nb = (int)std::min<size_t>(B, L.size() - at);
            std::string list;
            for (int b = 0; b < nb; b++)
                list += (b ? "," : "") + std::to_string(L[at + b]);
            snprintf(what, sizeof what, "(a) lengths %s", list.c_str());
            run_case(&p, in, what, nb, L.data() + at, 1.0f, scale, s);
        }
    }

    // (b) mixed lengths with an inactive slot; the baseline; (g) replays
    {
        const std::vector<int> lens = mixed_lengths(in, B, cap);
        snprintf(what, sizeof what, "(b) mixed lengths up to %d%s, B=%d", cap,
                 B > 1 ? ", slot 1 inactive" : "", B);
        if (run_case(&p, in, what, B, lens.data(), 1.0f, scale, s)) {
            check_repeat(&p, s, repeats);
            if (baseline)
                check_baseline(&p, s);
        }
    }
    {
        const std::vector<int> zeros(B, 0);
        snprintf(what, sizeof what, "(b) every slot inactive, B=%d", B);
        run_case(&p, in, what, B, zeros.data(), 1.0f, scale, s);
    }

    // (c) peaked on the newest (even heads) and the first (odd heads) token
    {
        std::vector<int> lens = mixed_lengths(in, B, cap);
        for (int &x : lens)
            x = std::max(x, 1);
        lens[0] = g_quick ? cap : S;   // the newest token at S_max
        snprintf(what, sizeof what, "(c) peaked on t = len-1 (even heads) and t = 0 (odd heads)");
        if (run_case(&p, in, what, B, lens.data(), 1.0f, scale, s, make_peaked))
            check_peaked_setup(&p);
    }

    // (d) input scales; the runtime softmax scale
    const float scales[] = {0.1f, 1.0f, 8.0f};
    for (float x : scales) {
        if (g_quick && x == 1.0f)
            continue;
        const std::vector<int> lens = mixed_lengths(in, B, std::min(cap, 1024));
        snprintf(what, sizeof what, "(d) inputs U(-%g, %g)", x, x);
        run_case(&p, in, what, B, lens.data(), x, scale, s);
    }
    {
        const float alt = scale * 0.5f;
        const std::vector<int> lens = mixed_lengths(in, B, std::min(cap, 1024));
        snprintf(what, sizeof what, "(d) softmax scale %.6g (the default %s x 0.5)", alt,
                 in->scale_text);
        if (run_case(&p, in, what, B, lens.data(), 1.0f, alt, s)) {
            // the case tells the scales apart: for some request the manifest
            // scale's reference is far from this one (length-1 requests are not)
            const std::vector<double> alt_o = p.ref_o;
            p.scale = scale;
            compute_reference(&p);
            const size_t per = (size_t)in->heads * in->kvl;
            double apart = 0;   // a NaN stays 0 here, and 0 fails the check
            for (int b = 0; b < p.batch; b++)
                if (p.len[b] > 1)
                    apart = std::max(apart, rel_l2(alt_o.data() + b * per, p.ref_o.data() + b * per, per));
            char name[320];
            snprintf(name, sizeof name, "%s: the runtime-scale case tells the scales apart", in->name);
            CHECKF(name, apart > 10 * out_tol(in->dt),
                   "test setup: the two scales' references differ by only %.3e", apart);
        }
    }

    // (f) batch below B_max
    std::vector<int> below;
    if (B >= 2)
        below.push_back(B - 1);
    if (B >= 3)
        below.push_back(1);
    for (int nb : below) {
        const std::vector<int> lens = mixed_lengths(in, nb, std::min(cap, 1024));
        snprintf(what, sizeof what, "(f) batch %d of B_max %d", nb, B);
        run_case(&p, in, what, nb, lens.data(), 1.0f, scale, s);
    }

    // (e) the pages really are shuffled
    if (in->page && !p.bt.empty()) {
        size_t moved = 0;
        for (size_t i = 0; i < p.bt.size(); i++)
            moved += p.bt[i] != (int)i;
        char name[320];
        snprintf(name, sizeof name, "%s: (e) block tables shuffled", in->name);
        CHECKF(name, p.bt.size() < 2 || moved > 0, "the permutation left all %zu pages in place",
               p.bt.size());
    }
    problem_free(&p);

    // (h) a NaN in one key's rope columns (the first key, then the last of
    // a length past one tile): every output and lse of the request is NaN
    // (the kernels' max drops a NaN, so this checks that P keeps it)
    const int L = std::min(in->smax, 65);
    for (int t : {0, L - 1}) {
        Problem q;
        char name[320];
        snprintf(name, sizeof name, "%s: (h) a NaN in key %d's rope columns, length %d", in->name,
                 t, L);
        bool ok = problem_init(&q, in, 1, &L, 1.0f, kTestScale, s);
        const size_t row = in->page ? (size_t)q.bt[t / in->page] * in->page + t % in->page : t;
        const uint16_t nan16 = 0xffff;   // a NaN in f16 and bf16
        std::vector<uint16_t> out(nout(q));
        std::vector<float> lse(nlse(q));
        ok = ok &&
             fgh_ok(cudaMemcpyAsync((uint16_t *)q.dcache + row * in->D + in->kvl + 1, &nan16, 2,
                                    cudaMemcpyHostToDevice, s)) &&
             problem_bind(&q, s) == FG_OK && poison_outputs(q, s) && fg_launch(q.b, s) == FG_OK &&
             fetch(q, out.data(), lse.data(), s);
        size_t finite = 0;
        for (size_t i = 0; ok && i < (size_t)in->heads * in->kvl; i++)
            finite += !std::isnan(fgh_get(out.data(), in->dt, i));
        for (int h = 0; ok && h < in->heads; h++)
            finite += !std::isnan(lse[h]);
        CHECKF(name, ok && finite == 0, "%s%zu of the request's outputs and lse are not NaN",
               ok ? "" : "setup or launch failed; ", finite);
        problem_free(&q);
    }
}

// --list: what the manifest says about each instance, its registry row and
// whether fg_lookup (pure, no device) finds that row for the instance's own
// key dims (where tuning candidates share the key, one of theirs: a tuning
// run binds each by name); no GPU needed.
void list_instances(const std::vector<int> &sel)
{
    for (int k : sel) {
        const Inst *in = &g_inst[k];
        const fg_kernel_entry *e = &g_reg[k];
        printf("%s\n  %s, heads %d, kv_lora %d, rope %d (D %d), S_max %d, page %d, B_max %d; plan: "
               "heads/block %d, head groups %d, splits %d (clusters %d), tile %d, stages %d, threads %d\n"
               "  softmax scale \"%s\" = %.9g; grid [%u, %u, %u], block [%u, %u, %u], cluster [%u, %u, "
               "%u], dynamic smem %u, workspace %u B, counters %u, cooperative %d\n",
               in->name, fgh_dtype_name(in->dt), in->heads, in->kvl, in->rope, in->D, in->smax,
               in->page, in->bmax, in->hpb, in->groups, in->splits, in->clusters, in->tile, in->stages,
               in->threads, in->scale_text, (double)in->scale, e->grid[0], e->grid[1], e->grid[2],
               e->block[0], e->block[1], e->block[2], e->cluster[0], e->cluster[1], e->cluster[2],
               e->dynamic_smem, e->workspace_bytes, e->counter_count, e->cooperative);
        char name[256];
        snprintf(name, sizeof name, "%s: fg_lookup finds its registry row", in->name);
        const fg_kernel_entry *got = nullptr;
        const fg_status st = fg_lookup(g_reg, g_ninst, FG_REG_ARCH_SM90A, NULL, "mla_decode", e->dtype,
                                       e->dims, 6, &got);
        // a row of this key: this one where no other has it (candidates may share it)
        const bool found = got && got->dtype == e->dtype && !memcmp(got->dims, e->dims, sizeof e->dims);
        CHECKF(name, st == FG_OK && found, "%s; got %s", fg_status_string(st), got ? got->name : "none");
        if (in->bmax > 1) {   // a smaller batch is served by this row or a tighter one
            long long dims[6];
            memcpy(dims, e->dims, sizeof dims);
            dims[5] = in->bmax - 1;
            snprintf(name, sizeof name, "%s: fg_lookup serves batch %d", in->name, in->bmax - 1);
            CHECKF(name, fg_lookup(g_reg, g_ninst, FG_REG_ARCH_SM90A, NULL, "mla_decode", e->dtype, dims,
                                   6, &got) == FG_OK && got && got->dims[5] >= in->bmax - 1 &&
                             got->dims[5] <= in->bmax,
                   "got %s", got ? got->name : "none");
        }
    }
}

// ---- benchmark ----

// The bench's request lengths at S (--ramp: a ramp up to S).
std::vector<int> bench_lengths(const Inst *in, int S)
{
    std::vector<int> len(in->bmax, S);
    if (g_ramp)
        for (int b = 0; b < in->bmax; b++)
            len[b] = (int)(((long long)S * (b + 1) + in->bmax - 1) / in->bmax);
    return len;
}

struct BenchSet {
    void *dq = nullptr, *dcache = nullptr, *dout = nullptr;
    float *dlse = nullptr;
    int *dlen = nullptr, *dbt = nullptr;
    fg_binding *b = nullptr;
    Layout L = {};
    int pool_pages = 0;   // paged: the pages of the cache's pool
};

void bench_set_free(BenchSet *x)
{
    free_bound(x->b, {x->dq, x->dcache, x->dout, x->dlse, x->dlen, x->dbt});
    *x = BenchSet{};
}

// Device bytes of one set: contiguous caches are [B_max, S_max, D] whatever
// S is; a paged set's pool holds just the pages S needs, plus a spare page
// that the table's unused entries name.
size_t bench_set_bytes(const Inst *in, int S)
{
    const size_t B = in->bmax, D = in->D;
    const size_t rows = in->page ? (B * ((S + in->page - 1) / in->page) + 1) * in->page : B * in->smax;
    return rows * D * 2 + B * in->heads * (D * 2 + in->kvl * 2 + 4) + B * 4 +
           (in->page ? B * (in->smax / in->page) * 4 : 0);
}

// B_max requests of lengths bench_lengths(S), inputs U(-1, 1) made on the device, pages in
// shuffled order (or, --ordered-pages, request after request in order);
// bound with the test's default softmax scale (kTestScale).
bool bench_set_init(BenchSet *x, const Inst *in, int S, cudaStream_t s)
{
    bench_set_free(x);
    const size_t B = in->bmax, D = in->D;
    std::vector<int> bt;
    size_t ncache = B * in->smax * D;
    if (in->page) {
        const int pps = in->smax / in->page, used = (S + in->page - 1) / in->page;
        const int npages = (int)B * used + 1;
        std::vector<int> perm((size_t)B * used);
        if (g_ordered_pages)
            std::iota(perm.begin(), perm.end(), 0);
        else
            fgh_permutation(perm.data(), (int)perm.size(), fgh_next_seed());
        bt.assign(B * pps, npages - 1);
        for (size_t b = 0; b < B; b++)
            for (int j = 0; j < used; j++)
                bt[b * pps + j] = perm[b * used + j];
        ncache = (size_t)npages * in->page * D;
        x->pool_pages = npages;
    }
    const std::vector<int> len = bench_lengths(in, S);
    bool ok = fgh_ok(cudaMalloc(&x->dq, B * in->heads * D * 2)) &&
              fgh_ok(cudaMalloc(&x->dcache, ncache * 2)) &&
              fgh_ok(cudaMalloc(&x->dout, B * in->heads * in->kvl * 2)) &&
              fgh_ok(cudaMalloc(&x->dlse, B * in->heads * 4)) &&
              fgh_ok(cudaMalloc(&x->dlen, B * sizeof(int))) &&
              (bt.empty() || fgh_ok(cudaMalloc(&x->dbt, bt.size() * sizeof(int)))) &&
              fgh_fill_device(x->dq, in->dt, B * in->heads * D, fgh_next_seed(), 1.0f, s) == 0 &&
              fgh_fill_device(x->dcache, in->dt, ncache, fgh_next_seed(), 1.0f, s) == 0 &&
              fgh_ok(cudaMemcpyAsync(x->dlen, len.data(), B * sizeof(int), cudaMemcpyHostToDevice, s)) &&
              (bt.empty() || fgh_ok(cudaMemcpyAsync(x->dbt, bt.data(), bt.size() * sizeof(int),
                                                    cudaMemcpyHostToDevice, s))) &&
              fgh_ok(cudaStreamSynchronize(s));
    x->L = Layout{in->D, in->smax, in->page, x->dbt};
    if (!ok)
        return false;
    return bind_instance(in, in->bmax, in->scale, x->dq, x->dcache, x->dbt, x->dlen, x->dout,
                         x->dlse, &x->b) == FG_OK;
}

// Requests 0 and B_max - 1 of what set x's out and lse hold, against the
// reference of their inputs (copied back from the device).
Verdict bench_check(const Inst *in, const BenchSet &x, int S, cudaStream_t s, bool *ok)
{
    const int n = in->bmax > 1 ? 2 : 1, picks[2] = {0, in->bmax - 1};
    const size_t D = in->D, per_q = (size_t)in->heads * D, per_o = (size_t)in->heads * in->kvl;
    std::vector<uint16_t> q(n * per_q), cache((size_t)n * S * D), out(n * per_o);
    std::vector<float> lse((size_t)n * in->heads);
    const std::vector<int> all = bench_lengths(in, S);
    std::vector<int> len(n);
    for (int k = 0; k < n; k++)
        len[k] = all[picks[k]];
    void *stage = nullptr;
    *ok = fgh_ok(cudaMalloc(&stage, (size_t)S * D * 2));
    for (int k = 0; k < n && *ok; k++) {
        const int b = picks[k];
        Layout L = x.L;   // request b alone, as request 0 of a shifted layout
        const char *src = (const char *)x.dcache;
        if (L.page)
            L.bt += (size_t)b * (in->smax / in->page);
        else
            src += (size_t)b * in->smax * D * 2;
        move_rows<<<dim3(S, 1), (unsigned)(D * 2 / 16), 0, s>>>((const uint4 *)src, (uint4 *)stage, L,
                                                                x.dlen + b, S, false);
        *ok = fgh_ok(cudaGetLastError()) &&
              fgh_ok(cudaMemcpyAsync(cache.data() + (size_t)k * S * D, stage, (size_t)S * D * 2,
                                     cudaMemcpyDeviceToHost, s)) &&
              fgh_ok(cudaMemcpyAsync(q.data() + k * per_q, (const char *)x.dq + b * per_q * 2,
                                     per_q * 2, cudaMemcpyDeviceToHost, s)) &&
              fgh_ok(cudaMemcpyAsync(out.data() + k * per_o, (const char *)x.dout + b * per_o * 2,
                                     per_o * 2, cudaMemcpyDeviceToHost, s)) &&
              fgh_ok(cudaMemcpyAsync(lse.data() + (size_t)k * in->heads, x.dlse + (size_t)b * in->heads,
                                     in->heads * 4, cudaMemcpyDeviceToHost, s)) &&
              fgh_ok(cudaStreamSynchronize(s));
    }
    cudaFree(stage);
    if (!*ok)
        return Verdict{};
    fgh_mla_cfg c = {};
    c.batch = n, c.heads = in->heads, c.kv_lora = in->kvl, c.rope = in->rope;
    c.max_context = S, c.scale = (double)in->scale, c.dtype = in->dt;
    std::vector<double> ro(n * per_o), rl((size_t)n * in->heads);
    reference(&c, q.data(), cache.data(), len.data(), ro.data(), rl.data());
    return judge(in, n, n, len.data(), out.data(), lse.data(), ro.data(), rl.data());
}

// --peer LIB: a peer's MLA decode (peer_mla.h), loaded once, timed and
// checked on every bench case whose shape it runs.
// (the pointers' types are peer_mla.h's declarations: nothing here links them)
struct PeerLib {
    decltype(&fg_peer_mla_name) name = nullptr;
    decltype(&fg_peer_mla_init) init = nullptr;
    decltype(&fg_peer_mla_step) step = nullptr;
    decltype(&fg_peer_mla_free) free = nullptr;
};
PeerLib g_peer;   // name null: no peer
const char *g_peer_path;

// Loads --peer's library; false (and why, printed) when it lacks a function.
bool peer_load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "test_mla_decode: --peer %s: %s\n", path, dlerror());
        return false;
    }
    PeerLib p;
    p.name = (decltype(p.name))dlsym(h, "fg_peer_mla_name");
    p.init = (decltype(p.init))dlsym(h, "fg_peer_mla_init");
    p.step = (decltype(p.step))dlsym(h, "fg_peer_mla_step");
    p.free = (decltype(p.free))dlsym(h, "fg_peer_mla_free");
    if (!p.name || !p.init || !p.step || !p.free) {
        fprintf(stderr, "test_mla_decode: --peer %s: not every fg_peer_mla_* function (peer_mla.h)\n", path);
        return false;
    }
    g_peer = p;
    return true;
}

struct BenchCtx {
    BenchSet *sets;
    int nsets, S;
    const Baseline *bl;   // set: time the baseline on the sets instead
    void *peer = nullptr;   // set: time the peer (g_peer) on the sets instead
    int failed = 0;       // launches that returned an error (a short graph times fast)
};

void enqueue(void *ctx, int i, cudaStream_t s)
{
    BenchCtx *c = (BenchCtx *)ctx;
    const BenchSet &x = c->sets[i % c->nsets];
    if (c->bl)
        baseline_step(c->bl, x.dq, x.dcache, x.L, x.dlen, c->S, c->bl->in->scale, x.dout, x.dlse, s);
    else if (c->peer)
        c->failed += g_peer.step(c->peer, x.dq, x.dcache, x.dbt, x.dlen, x.dout, x.dlse, s) != 0;
    else
        c->failed += fg_launch(x.b, s) != FG_OK;
}

// The peer on a case's sets, timed and checked as the kernel was (set 0's
// outputs poisoned first); false with *skipped set when the peer does not run
// the shape (why printed), false alone when it failed.
bool peer_case(const Inst *in, int S, BenchSet *sets, int nsets, cudaStream_t s, fgh_timing *t,
               Verdict *v, bool *skipped)
{
    *skipped = false;
    if (!in->page) {
        printf("    peer: skipped (contiguous cache; the peer interface takes pages)\n");
        *skipped = true;
        return false;
    }
    fg_peer_mla_shape sh = {};
    sh.batch = in->bmax, sh.heads = in->heads, sh.kv_lora = in->kvl, sh.rope = in->rope;
    sh.page = in->page, sh.pages_per_request = in->smax / in->page, sh.pool_pages = sets[0].pool_pages;
    sh.max_context = in->smax, sh.scale = in->scale, sh.f16 = in->dt == FGH_F16, sh.lens = sets[0].dlen;
    void *st = nullptr;
    const char *why = "";
    if (g_peer.init(&sh, &st, &why) != 0) {
        printf("    peer: skipped (%s)\n", why);
        *skipped = true;
        return false;
    }
    bool checked = false;
    BenchCtx c = {sets, nsets, S, nullptr, st};
    bool ok = poison_out_lse(in, sets[0].dout, sets[0].dlse, s) &&
              fgh_bench(s, enqueue, &c, nsets, 2.0, 7, t) == 0 && c.failed == 0 &&
              fgh_ok(cudaGetLastError()) && fgh_ok(cudaStreamSynchronize(s));
    if (ok)
        *v = bench_check(in, sets[0], S, s, &checked);
    g_peer.free(st);
    return ok && checked;
}

void bench(cudaStream_t s, const fgh_device *dev, fgh_json *j, const std::vector<int> &sel, bool quick,
           bool baseline)
{
    fgh_ceilings ceil = {};
    if (fgh_measure_ceilings(s, (size_t)1 << 30, &ceil) == 0)
        fgh_json_ceilings(j, &ceil);
    printf("ceilings: copy %.0f GB/s, read %.0f GB/s\n", ceil.copy_gbps, ceil.read_gbps);
    struct InstFit {   // T = T0 + bytes / BW over an instance's points
        const Inst *in;
        fgh_fit fused, base;
    };
    std::vector<InstFit> fits;
    fgh_json_arr_begin(j, "cases");
    for (int k : sel) {
        const Inst *in = &g_inst[k];
        // B_max 1: every power of two from 1K (the issue's fit range, 1K ...
        // 32K where the instance reaches it); else 1K, 4K, 16K
        std::vector<int> Ss;
        for (int S = 1024; S <= in->smax; S *= in->bmax == 1 ? 2 : 4)
            Ss.push_back(S);
        if (Ss.empty())
            Ss.push_back(in->smax);
        if (quick && Ss.size() > 2)
            Ss = {Ss.front(), Ss.back()};
        if (g_bench_length > 0)
            Ss = {std::min(g_bench_length, in->smax)};
        std::vector<double> fb, fu, bb, bu;
        for (int S : Ss) {
            const std::vector<int> lens = bench_lengths(in, S);
            const double B = in->bmax, rows = std::accumulate(lens.begin(), lens.end(), 0.0);
            const double bytes = rows * in->D * 2 + B * ((double)in->heads * in->D * 2 +
                                                         (double)in->heads * in->kvl * 2 + (double)in->heads * 4);
            const double flops = 2.0 * in->heads * (double)(in->D + in->kvl) * rows;
            const int want = fgh_rotation_sets((size_t)bytes, dev->l2_bytes);
            size_t free_b = 0, total_b = 0;
            cudaMemGetInfo(&free_b, &total_b);
            const size_t per_set = bench_set_bytes(in, S);
            const int fit_sets = (int)std::max<size_t>(1, (size_t)(0.6 * free_b) / std::max<size_t>(per_set, 1));
            const int nsets = std::min(want, fit_sets);
            std::vector<BenchSet> sets(nsets);
            bool ok = true;
            for (int m = 0; ok && m < nsets; m++)
                ok = bench_set_init(&sets[m], in, S, s);
            char what[320];
            snprintf(what, sizeof what, "%s: bench at S=%d, B=%d", in->name, S, in->bmax);
            // the output the timed launches make (set 0 poisoned before them),
            // checked on two requests
            Verdict v;
            bool checked = false;
            fgh_timing t = {}, tb = {};
            BenchCtx c = {sets.data(), nsets, S, nullptr};
            ok = ok && poison_outputs_of(sets[0].b, sets[0].dout, sets[0].dlse, in, s) &&
                 fgh_bench(s, enqueue, &c, nsets, 2.0, 7, &t) == 0 && c.failed == 0 &&
                 fgh_ok(cudaStreamSynchronize(s));
            if (ok)
                v = bench_check(in, sets[0], S, s, &checked);
            if (!CHECKF(what, ok && checked, "setup, bind, timing or check failed (%s)", fg_last_error())) {
                for (auto &x : sets)
                    bench_set_free(&x);
                continue;   // no case with a made-up time
            }
            CHECKF(what, v.nonfinite == 0 && v.rel_bad == 0 && v.lse_bad == 0,
                   "the timed kernel's output is wrong: rel L2 %.3e, lse error %.2e", v.worst_rel,
                   v.worst_lse);
            // the baseline on the same sets, timed and checked the same way
            Baseline bl;
            Verdict vb;
            bool have_bl = false;
            if (baseline) {
                bool bchecked = false;
                BenchCtx cb = {sets.data(), nsets, S, &bl};
                have_bl = baseline_init(&bl, in, in->bmax, S) &&
                          poison_out_lse(in, sets[0].dout, sets[0].dlse, s) &&
                          fgh_bench(s, enqueue, &cb, nsets, 2.0, 7, &tb) == 0 &&
                          fgh_ok(cudaGetLastError()) && fgh_ok(cudaStreamSynchronize(s));
                if (have_bl)
                    vb = bench_check(in, sets[0], S, s, &bchecked);
                have_bl = have_bl && bchecked;
                char bname[360];
                snprintf(bname, sizeof bname, "%s: plain baseline", what);
                CHECKF(bname, have_bl && vb.nonfinite == 0 && vb.rel_bad == 0 && vb.lse_bad == 0,
                       "%s; rel L2 %.3e, lse error %.2e", have_bl ? "wrong output" : "did not run",
                       vb.worst_rel, vb.worst_lse);
            }
            baseline_free(&bl);
            // the peer (--peer) on the same sets
            fgh_timing tp = {};
            Verdict vp;
            bool have_peer = false;
            if (g_peer.name) {
                bool skipped = false;
                have_peer = peer_case(in, S, sets.data(), nsets, s, &tp, &vp, &skipped);
                if (!skipped) {
                    char pname[360];
                    snprintf(pname, sizeof pname, "%s: peer %s", what, g_peer.name());
                    CHECKF(pname, have_peer && vp.nonfinite == 0 && vp.rel_bad == 0 && vp.lse_bad == 0,
                           "%s; rel L2 %.3e, lse error %.2e", have_peer ? "wrong output" : "did not run",
                           vp.worst_rel, vp.worst_lse);
                }
            }
            const double gbps = bytes / (t.med_us * 1e3), tflops = flops / (t.med_us * 1e6);
            // what the device holds at once (the driver's cluster occupancy): the
            // planner assumes, not measures, the clusters a GPC holds
            fg_binding_info info = {};
            fg_binding_get_info(sets[0].b, &info);
            printf("%-64s S=%5d B=%2d %9.2f us %6.0f GB/s %6.1f TFLOP/s %5.1f%% of read (sets %d, "
                   "%lld resident, %lld wave%s)",
                   in->name, S, in->bmax, t.med_us, gbps, tflops, 100 * gbps / ceil.read_gbps, nsets,
                   info.resident_blocks, info.waves, info.waves == 1 ? "" : "s");
            if (have_bl)
                printf(" | baseline %9.2f us (%.2fx)", tb.med_us, tb.med_us / t.med_us);
            if (have_peer)
                printf(" | peer %9.2f us (%.3fx)", tp.med_us, tp.med_us / t.med_us);
            printf("\n");
            fb.push_back(bytes), fu.push_back(t.med_us);
            if (have_bl)
                bb.push_back(bytes), bu.push_back(tb.med_us);
            fgh_json_obj_begin(j, NULL);
            fgh_json_str(j, "name", in->name);
            fgh_json_str(j, "instance", in->name);   // as the other harnesses' cases
            fgh_json_int(j, "S", S);
            fgh_json_int(j, "batch", in->bmax);
            fgh_json_int(j, "heads", in->heads);
            fgh_json_int(j, "kv_lora", in->kvl);
            fgh_json_int(j, "rope_dim", in->rope);
            fgh_json_int(j, "page_size", in->page);
            if (in->page)
                fgh_json_str(j, "page_order", g_ordered_pages ? "ordered" : "shuffled");
            fgh_json_str(j, "lengths", g_ramp ? "ramp: request b at ceil(S (b + 1) / batch)" : "all S");
            fgh_json_str(j, "dtype", fgh_dtype_name(in->dt));
            fgh_json_obj_begin(j, "plan");
            fgh_json_int(j, "heads_per_block", in->hpb);
            fgh_json_int(j, "head_groups", in->groups);
            fgh_json_int(j, "splits", in->splits);
            fgh_json_int(j, "clusters", in->clusters);
            fgh_json_int(j, "tile", in->tile);
            fgh_json_int(j, "stages", in->stages);
            fgh_json_int(j, "threads", in->threads);
            fgh_json_int(j, "resident_blocks", info.resident_blocks);
            fgh_json_int(j, "waves", info.waves);
            fgh_json_obj_end(j);
            fgh_json_str(j, "bytes_counted", "cache rows read for every request + q + out + lse");
            fgh_json_num(j, "bytes", bytes);
            fgh_json_num(j, "flops", flops);
            fgh_json_int(j, "rotation_sets", nsets);
            fgh_json_int(j, "rotation_sets_wanted", want);
            fgh_json_timing(j, "time", &t);
            fgh_json_num(j, "gbps", gbps);
            fgh_json_num(j, "tflops", tflops);
            fgh_json_num(j, "fraction_of_read_ceiling", gbps / ceil.read_gbps);
            fgh_json_num(j, "fraction_of_ceiling", gbps / ceil.best_gbps);
            fgh_json_num(j, "rel_l2", v.worst_rel);
            fgh_json_num(j, "lse_error", v.worst_lse);
            fgh_json_arr_begin(j, "baselines");
            if (have_bl) {
                const double bg = bytes / (tb.med_us * 1e3);
                fgh_json_obj_begin(j, NULL);
                fgh_json_str(j, "name", "unfused_plain");
                fgh_json_str(j, "what", "scores, softmax, P.V over token splits, split sum: 4 plain "
                                        "CUDA kernels, fp32 scores and probabilities in global memory");
                fgh_json_timing(j, "time", &tb);   // as the other harnesses' baselines
                fgh_json_num(j, "gbps", bg);
                fgh_json_num(j, "tflops", flops / (tb.med_us * 1e6));
                fgh_json_num(j, "fraction_of_ceiling", bg / ceil.best_gbps);
                fgh_json_num(j, "rel_l2", vb.worst_rel);
                fgh_json_num(j, "lse_error", vb.worst_lse);
                fgh_json_obj_end(j);
            }
            if (have_peer) {
                const double pg = bytes / (tp.med_us * 1e3);
                fgh_json_obj_begin(j, NULL);
                fgh_json_str(j, "name", "peer");
                fgh_json_str(j, "what", g_peer.name());
                fgh_json_str(j, "library", g_peer_path);
                fgh_json_timing(j, "time", &tp);
                fgh_json_num(j, "gbps", pg);
                fgh_json_num(j, "tflops", flops / (tp.med_us * 1e6));
                fgh_json_num(j, "fraction_of_read_ceiling", pg / ceil.read_gbps);
                fgh_json_num(j, "fraction_of_ceiling", pg / ceil.best_gbps);
                fgh_json_num(j, "rel_l2", vp.worst_rel);
                fgh_json_num(j, "lse_error", vp.worst_lse);
                fgh_json_obj_end(j);
            }
            fgh_json_arr_end(j);
            if (have_bl)
                fgh_json_num(j, "speedup_vs_baseline", tb.med_us / t.med_us);
            if (have_peer)
                fgh_json_num(j, "speedup_vs_peer", tp.med_us / t.med_us);
            fgh_json_obj_end(j);
            for (auto &x : sets)
                bench_set_free(&x);
        }
        fits.push_back({in, fgh_fit_points(fb.data(), fu.data(), (int)fb.size()),
                         fgh_fit_points(bb.data(), bu.data(), (int)bb.size())});
    }
    fgh_json_arr_end(j);
    fgh_json_arr_begin(j, "fits");
    for (const InstFit &f : fits)
        fgh_report_fit(j, f.in->name, "the S points", &f.fused, &f.base, ceil.read_gbps);
    fgh_json_arr_end(j);
}

#endif   // FG_HAVE_FGRT

} // namespace

int main(int argc, char **argv)
{
    fgh_args a;
    fgh_args_init(&a);
    [[maybe_unused]] bool smallest = false;
    [[maybe_unused]] int repeats = -1;
    [[maybe_unused]] bool list = false;
    for (int i = 1; i < argc; i++) {
        if (fgh_common_arg(&a, argc, argv, &i))
            continue;
        if (!strcmp(argv[i], "--smallest"))
            smallest = true;
        else if (!strcmp(argv[i], "--list"))
            list = true;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--length") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            g_bench_length = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ordered-pages"))
            g_ordered_pages = true;
        else if (!strcmp(argv[i], "--ramp"))
            g_ramp = true;
        else if (!strcmp(argv[i], "--peer") && i + 1 < argc)
            g_peer_path = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--kernels DIR] [--manifest FILE] [--only A,B] [--smallest] [--list] "
                            "[--seed N] [--quick] [--repeats N] [--no-baseline] [--verbose] "
                            "[--bench [--json FILE] [--commit C] [--length S] [--ordered-pages] [--ramp] [--peer LIB]]\n",
                    argv[0]);
            return 2;
        }
    }
    fgh_args_apply(&a);
    const char *kdir = a.kernels;
    [[maybe_unused]] const char *json = a.json, *commit = a.commit, *only = a.only,
                                *manifest_path = a.manifest;
    [[maybe_unused]] const bool do_bench = a.bench, quick = a.quick, baseline = a.baseline;
    if (!fgh_shard_from_env())   // FG_SHARD=K/N: this run's share of the instances
        return 2;
    printf("test_mla_decode: seed 0x%llx (--seed), kernels %s\n",
           (unsigned long long)fgh_base_seed(), kdir);
    if (g_ordered_pages)
        printf("test_mla_decode: the bench's pages in request order (--ordered-pages)\n");
    if (g_ramp)
        printf("test_mla_decode: the bench's request lengths a ramp up to S (--ramp)\n");
    if (g_peer_path) {
        if (!a.bench) {
            fprintf(stderr, "test_mla_decode: --peer times a peer beside --bench\n");
            return 2;
        }
        if (!peer_load(g_peer_path))
            return 2;
        printf("test_mla_decode: peer %s (%s)\n", g_peer.name(), g_peer_path);
    }
#ifndef FG_HAVE_FGRT
#ifdef FG_FGRT_BUILD_FAILED
    CHECKF("mla_decode: libfgrt", false, "runtime/ is there but did not build: nothing was tested");
#else
    fgh_skip("mla_decode", "built without libfgrt (no runtime/include/fgrt.h)");
#endif
    return fgh_summary() ? 1 : 0;
#else
    g_quick = quick;
    if (repeats < 0)
        repeats = quick ? 2 : 1000;
    char mpath[1024];
    char *manifest = fgh_open_manifest(manifest_path, kdir, mpath, sizeof mpath, &manifest_path);
    discover(kdir, manifest);
    if (g_ncubins == 0) {
        char why[600];
        snprintf(why, sizeof why, "no mla_decode_*.cubin in %s", kdir);
        fgh_skip("mla_decode", why);
        return fgh_summary() ? 1 : 0;
    }
    if (!manifest)
        printf("test_mla_decode: no manifest at %s (--manifest)\n", manifest_path);
    // cubins none of which the manifest describes: a wrong or stale manifest,
    // which must fail rather than read as nothing to test
    if (!g_ninst)
        CHECKF("mla_decode: kernel folder", false,
               "%d mla_decode cubins, none described by the manifest (--manifest)", g_ncubins);
    for (int k = 0; k < g_ninst; k++)
        make_entry(g_inst[k], &g_reg[k], &g_sizes[k]);
    // the selection: --only (whole names alone, other parts what contains
    // them) and the shard, then one per code path (--smallest)
    std::vector<const char *> names;
    for (int k = 0; k < g_ninst; k++)
        names.push_back(g_inst[k].name);
    std::unique_ptr<bool[]> selected(new bool[g_ninst]);
    fgh_select(only, names.data(), names.size(), selected.get());
    std::vector<int> sel;
    for (int k = 0; k < g_ninst; k++) {
        if (!selected[k])
            continue;
        bool keep = true;
        for (int o = 0; smallest && o < g_ninst; o++)
            if (o != k && selected[o] && same_path(g_inst[o], g_inst[k]) &&
                (work_of(g_inst[o]) < work_of(g_inst[k]) ||
                 (work_of(g_inst[o]) == work_of(g_inst[k]) && o < k)))
                keep = false;
        if (keep)
            sel.push_back(k);
    }
    printf("test_mla_decode: %d of %d instances selected%s\n", (int)sel.size(), g_ninst,
           smallest ? " (--smallest: one per code path)" : "");
    // a selection that runs nothing must not read as a pass (each cubin left
    // out said why above)
    if (only)
        CHECKF("mla_decode: --only", !sel.empty(), "no runnable instance matches '%s'", only);
    if (sel.empty())
        return fgh_summary() ? 1 : 0;
    if (list) {
        list_instances(sel);
        return fgh_summary() ? 1 : 0;
    }
    fgh_device dev;
    if (fgh_device_open(0, &dev) != 0) {
        fgh_skip("mla_decode", "no usable GPU");
        return fgh_summary() ? 1 : 0;
    }
    const fg_status st = fg_init(g_reg, g_ninst, 0, &g_fg);
    if (!CHECKF("fgrt: fg_init", st == FG_OK, "%s (%s)", fg_status_string(st), fg_last_error()))
        return fgh_summary() ? 1 : 0;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (do_bench) {
        FILE *f;
        fgh_json j;
        if (fgh_bench_doc_begin(&j, &f, json, &dev, commit, "test_mla_decode --bench") != 0)
            return 2;
        bench(s, &dev, &j, sel, quick, baseline);
        fgh_bench_doc_end(&j, f, json);
    } else {
        for (int k : sel)
            test_instance(&g_inst[k], s, baseline, repeats);
    }
    CHECK("mla_decode: no CUDA error left", fgh_ok(cudaDeviceSynchronize()) && fgh_ok(cudaGetLastError()));
    cudaStreamDestroy(s);
    fg_shutdown(g_fg);
    free(manifest);
    const int failed = fgh_summary();
    return failed ? 1 : 0;
#endif
}
