// The overlap family's fused GEMM (templates/overlap_gemm.in, or the
// portable form, overlap_gemm_portable.in, generated for an sm_90a target
// without clusters: tests/gpu/portable), on one GPU:
// C[M, N] = A[M, K] . W[N, K]^T, bf16 in, fp32 sums, bf16 out, against
// cuBLASLt's same product (TN, the same layouts) in the same run.
//
// Each overlap_gemm_* instance in --kernels (its launch and template from
// --manifest, or DIR/manifest.json, else $FG_GEN_DIR's) is loaded by the driver API; the wgmma
// form takes three TMA tensor maps encoded here (cuTensorMapEncodeTiled,
// 128-byte swizzle, the boxes its params give: bk x bm for A, bk x bn for
// W, cbox_cols x cbox_rows for C), the portable form plain pointers, and
// both the same parameters after them, then their split's workspace and
// counters, launched on the runtime's whole grid at every M.  Checks,
// on fresh random inputs with C (and the split's partial sums) poisoned
// before each launch, at M = 128 (one tile row), 1152 (a partial group of
// tile rows) and 4096 (both forms split the last round over K at each of
// them for most shapes): no poisoned output left, 256 sampled
// outputs against a double reference on the host (rel L2 <= 1e-2, NaN never
// passes), the whole output against cuBLASLt's (rel L2 <= 1e-2; not with
// --no-baseline, which racecheck takes: cuBLAS's own TMA kernels report
// hazards there), and the split's counters back at zero.
// Then 1000 launches at M = 256 with C poisoned before each must give
// bitwise the first launch's output (compared on the device; issue 12's
// deterministic mode: each output's sum has one order).  Then the kernel fed
// as its rows land (check_pieces: the fused AG+GEMM's flag waits, a lost
// piece ending in a status within the time limit), and drained as its
// rows are written (check_drain: the fused GEMM+RS's counters, a copy
// engine's waits on them).  --quick: the plain checks at M = 128 and
// 1152 only (the fed and drained ones keep their M = 2304), 2 launches for
// determinism (for compute-sanitizer).
// --bench [--json FILE]: no checks (as the other harnesses' --bench; run
// without it to check): both timed at M = 4096 and 16384 in CUDA graphs,
// interleaved (fused, cuBLASLt, fused, cuBLASLt), medians; TFLOP/s and the
// fused kernel's share of cuBLASLt's rate (--no-baseline: the fused kernel
// alone, as fusegen tune times its candidates, then checks the fastest).
// --profile ROWS: no checks; each chosen instance launched twice at M = ROWS
// (a multiple of 128), for a profiler to take the second (ncu -k
// regex:overlap_gemm --launch-skip 1 --launch-count 1, --only naming one).
// FG_SHARD=K/N: this run's share of the instances, as the other harnesses.
#include <cublasLt.h>
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#ifdef FG_HAVE_FGRT
#include "fgrt_overlap.h"
#include "overlap_gpu.cuh"   // now_us
#endif

namespace {

// ---- the driver API, through the runtime's entry points ----

struct Driver {
    decltype(&cuModuleLoadData) load = nullptr;
    decltype(&cuModuleGetFunction) getfn = nullptr;
    decltype(&cuFuncSetAttribute) setattr = nullptr;
    decltype(&cuLaunchKernel) launch = nullptr;
    decltype(&cuTensorMapEncodeTiled) encode = nullptr;
    decltype(&cuGetErrorString) errstr = nullptr;
    decltype(&cuStreamWaitValue32) wait_value = nullptr;
};
Driver drv;

template <class F> bool entry(const char *name, F *fn)
{
    cudaDriverEntryPointQueryResult q;
    void *p = nullptr;
    if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !p) {
        fprintf(stderr, "test_gemm: no driver entry point %s\n", name);
        return false;
    }
    *fn = (F)p;
    return true;
}

bool driver_open()
{
    return entry("cuModuleLoadData", &drv.load) && entry("cuModuleGetFunction", &drv.getfn) &&
           entry("cuFuncSetAttribute", &drv.setattr) && entry("cuLaunchKernel", &drv.launch) &&
           entry("cuTensorMapEncodeTiled", &drv.encode) && entry("cuGetErrorString", &drv.errstr) &&
           entry("cuStreamWaitValue32", &drv.wait_value);
}

bool cu_ok(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return true;
    const char *s = nullptr;
    drv.errstr(r, &s);
    fprintf(stderr, "test_gemm: %s: %s\n", what, s ? s : "unknown error");
    return false;
}

// A row-major bf16 matrix [rows][cols] as a tensor map of boxes box_cols x
// box_rows, 128-byte swizzle (box_cols x 2 bytes = 128).
bool tensor_map(CUtensorMap *m, const void *base, long long rows, long long cols, int box_rows,
                int box_cols)
{
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)cols * 2};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    const cuuint32_t elem[2] = {1, 1};
    return cu_ok(drv.encode(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims,
                            strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "cuTensorMapEncodeTiled");
}

// ---- one instance ----

struct Gemm {
    std::string name;
    bool portable = false;   // overlap_gemm_portable.in: pointers, not tensor maps
    long long n = 0, k = 0, bm = 0, bn = 0, bk = 0, cbox_rows = 0, cbox_cols = 0;
    unsigned grid = 0, block = 0, smem = 0;
    CUfunction fn = nullptr;
    // the portable form's last-round split over K: partial sums, counters
    // (the runtime's binding owns them; zeroed once, left at zero by each launch)
    void *ws = nullptr;
    unsigned *counters = nullptr;
    size_t ws_bytes = 0, ncounters = 0;
    Gemm() = default;
    Gemm(const Gemm &) = delete;
    ~Gemm() { cudaFree(ws), cudaFree(counters); }
};

bool gemm_open(Gemm *g, const char *dir, const char *manifest)
{
    const char *nm = g->name.c_str();
    char tmpl[64] = "";
    if (fgh_manifest_text(manifest, nm, "template", tmpl, sizeof tmpl) < 0) {
        fprintf(stderr, "test_gemm: %s: no template in the manifest\n", nm);
        return false;
    }
    g->portable = strcmp(tmpl, "overlap_gemm_portable.in") == 0;
    if (!g->portable && strcmp(tmpl, "overlap_gemm.in") != 0) {
        fprintf(stderr, "test_gemm: %s: template %s is neither form's\n", nm, tmpl);
        return false;
    }
    g->n = fgh_manifest_value(manifest, nm, "params.n");
    g->k = fgh_manifest_value(manifest, nm, "params.k");
    g->bm = fgh_manifest_value(manifest, nm, "params.bm");
    g->bn = fgh_manifest_value(manifest, nm, "params.bn");
    g->bk = fgh_manifest_value(manifest, nm, "params.bk");
    if (!g->portable) {
        g->cbox_rows = fgh_manifest_value(manifest, nm, "params.cbox_rows");
        g->cbox_cols = fgh_manifest_value(manifest, nm, "params.cbox_cols");
    }
    const long long grid = fgh_manifest_value(manifest, nm, "launch.grid");
    const long long block = fgh_manifest_value(manifest, nm, "launch.block");
    const long long smem = fgh_manifest_value(manifest, nm, "launch.dynamic_smem");
    const bool maps_ok = g->portable || (g->cbox_rows > 0 && g->cbox_cols > 0);
    if (g->n <= 0 || g->k <= 0 || g->bm <= 0 || g->bn <= 0 || g->bk <= 0 || !maps_ok ||
        grid <= 0 || block <= 0 || smem < 0 || (!g->portable && smem == 0)) {
        fprintf(stderr, "test_gemm: %s: its params and launch are not in the manifest\n", nm);
        return false;
    }
    g->grid = (unsigned)grid, g->block = (unsigned)block, g->smem = (unsigned)smem;
    {   // both forms: the workspace and counters of the last round's split
        const long long ws = fgh_manifest_value(manifest, nm, "workspace_bytes");
        const long long counters = fgh_manifest_value(manifest, nm, "counters");
        if (ws <= 0 || counters <= 0) {
            fprintf(stderr, "test_gemm: %s: no workspace_bytes or counters in the manifest\n", nm);
            return false;
        }
        g->ws_bytes = (size_t)ws, g->ncounters = (size_t)counters;
        if (!fgh_ok(cudaMalloc(&g->ws, g->ws_bytes)) ||
            !fgh_ok(cudaMalloc(&g->counters, g->ncounters * 4)) ||
            !fgh_ok(cudaMemset(g->counters, 0, g->ncounters * 4)))
            return false;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.cubin", dir, nm);
    size_t size = 0;
    void *image = fgh_read_file(path, &size);
    if (!image)
        return false;
    CUmodule mod;
    const bool ok = cu_ok(drv.load(&mod, image), "cuModuleLoadData") &&
                    cu_ok(drv.getfn(&g->fn, mod, nm), "cuModuleGetFunction") &&
                    (g->smem == 0 ||
                     cu_ok(drv.setattr(g->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       (int)g->smem),
                           "cuFuncSetAttribute"));
    free(image);
    return ok;
}

// The buffers of one (M, N, K) and their tensor maps (the wgmma form's).
struct Problem {
    long long m = 0, n = 0, k = 0;
    __nv_bfloat16 *a = nullptr, *w = nullptr, *c = nullptr, *ref = nullptr;
    CUtensorMap map_a, map_w, map_c;
    std::vector<uint16_t> ha, hw;   // host copies for the sampled reference
    bool open(const Gemm &g, long long rows, uint64_t seed, bool host_copies)
    {
        m = rows, n = g.n, k = g.k;
        const size_t na = (size_t)m * k, nw = (size_t)n * k, nc = (size_t)m * n;
        bool ok = fgh_ok(cudaMalloc(&a, na * 2)) && fgh_ok(cudaMalloc(&w, nw * 2)) &&
                  fgh_ok(cudaMalloc(&c, nc * 2)) && fgh_ok(cudaMalloc(&ref, nc * 2));
        if (ok && host_copies) {
            ha.resize(na), hw.resize(nw);
            fgh_fill_host(ha.data(), FGH_BF16, na, seed, 1.f);
            fgh_fill_host(hw.data(), FGH_BF16, nw, seed + 1, 1.f);
            ok = fgh_upload(a, ha.data(), na * 2) == 0 && fgh_upload(w, hw.data(), nw * 2) == 0;
        } else if (ok) {
            ok = fgh_fill_device(a, FGH_BF16, na, seed, 1.f, nullptr) == 0 &&
                 fgh_fill_device(w, FGH_BF16, nw, seed + 1, 1.f, nullptr) == 0 &&
                 fgh_ok(cudaDeviceSynchronize());   // (the launches go on another stream)
        }
        return ok && (g.portable || (tensor_map(&map_a, a, m, k, (int)g.bm, (int)g.bk) &&
                                     tensor_map(&map_w, w, n, k, (int)g.bn, (int)g.bk) &&
                                     tensor_map(&map_c, c, m, n, (int)g.cbox_rows,
                                                (int)g.cbox_cols)));
    }
    ~Problem() { cudaFree(a), cudaFree(w), cudaFree(c), cudaFree(ref); }
};

// The kernel's feed (overlap_gemm.in): where A's rows come from.  The
// default: every row there at launch, tiles in order.
struct Feed {
    const int *tile_rows = nullptr;
    const unsigned *flags = nullptr, *epoch = nullptr;
    int own = -1, shard_rows = 1, piece_rows = 1, flag_stride = 0;
    unsigned *status = nullptr;
    unsigned long long limit_ns = 0;
    unsigned *done = nullptr;   // the drain (the fused GEMM+RS)
    int done_rows = 0;
};

bool launch_fused(const Gemm &g, Problem &p, cudaStream_t s, Feed f = Feed())
{
    int rows = (int)p.m;
    void *maps[] = {&p.map_a, &p.map_w, &p.map_c}, *ptrs[] = {&p.a, &p.w, &p.c};
    void **abc = g.portable ? ptrs : maps;
    void *ws = g.ws, *counters = g.counters;
    void *args[] = {abc[0],         abc[1],          abc[2],       &rows,     &f.tile_rows,
                    &f.flags,       &f.epoch,        &f.own,       &f.shard_rows, &f.piece_rows,
                    &f.flag_stride, &f.status,       &f.limit_ns, &f.done,  &f.done_rows,
                    &ws,            &counters};
    // the runtime's grid, whatever m (the last round's split counts the
    // grid's blocks)
    return cu_ok(drv.launch(g.fn, g.grid, 1, 1, g.block, 1, 1, g.smem, (CUstream)s, args, nullptr),
                 "cuLaunchKernel");
}

// ---- cuBLASLt: C^T[N, M] = W^T' . A^T in column-major terms (TN) ----

struct Lt {
    cublasLtHandle_t h = nullptr;
    void *ws = nullptr;
    static constexpr size_t kWorkspace = (size_t)32 << 20;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulAlgo_t algo;
    long long m = -1, n = -1, k = -1;
    bool ok(cublasStatus_t st, const char *what)
    {
        if (st != CUBLAS_STATUS_SUCCESS)
            fprintf(stderr, "test_gemm: cuBLASLt %s: status %d\n", what, (int)st);
        return st == CUBLAS_STATUS_SUCCESS;
    }
    void drop()
    {
        if (op)
            cublasLtMatmulDescDestroy(op), op = nullptr;
        for (cublasLtMatrixLayout_t *l : {&la, &lb, &lc})
            if (*l)
                cublasLtMatrixLayoutDestroy(*l), *l = nullptr;
        m = n = k = -1;
    }
    bool plan(long long rows, long long cols, long long depth)
    {
        if (rows == m && cols == n && depth == k)
            return true;
        drop();
        const cublasOperation_t t = CUBLAS_OP_T;
        cublasLtMatmulPreference_t pref = nullptr;
        cublasLtMatmulHeuristicResult_t best = {};
        int found = 0;
        const size_t wsb = kWorkspace;
        const bool good =
            ok(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc") &&
            ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t),
               "transa") &&
            ok(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, depth, cols, depth), "W") &&
            ok(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, depth, rows, depth), "A") &&
            ok(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, cols, rows, cols), "C") &&
            ok(cublasLtMatmulPreferenceCreate(&pref), "preference") &&
            ok(cublasLtMatmulPreferenceSetAttribute(
                   pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb),
               "workspace") &&
            ok(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 1, &best, &found),
               "heuristic") &&
            found > 0;
        if (pref)
            cublasLtMatmulPreferenceDestroy(pref);
        if (!good)
            return false;
        algo = best.algo, m = rows, n = cols, k = depth;
        return true;
    }
    bool run(Problem &p, __nv_bfloat16 *out, cudaStream_t s)
    {
        const float one = 1.f, zero = 0.f;
        return plan(p.m, p.n, p.k) &&
               ok(cublasLtMatmul(h, op, &one, p.w, la, p.a, lb, &zero, out, lc, out, lc, &algo, ws,
                                 kWorkspace, s),
                  "matmul");
    }
};

// ---- checks ----

double host_bf16(const std::vector<uint16_t> &v, size_t i) { return fgh_bf16_to_f32(v[i]); }

void compare_outputs(const char *name, const Problem &p, uint64_t seed, bool baseline);

// C poisoned before a launch, and the split's partial sums with it (a
// piece summed before it was written shows as NaN).
bool poison_before_launch(const Gemm &g, const Problem &p, cudaStream_t s)
{
    return fgh_poison_device(p.c, (size_t)p.m * p.n * 2, s) == 0 &&
           (!g.ws || fgh_poison_device(g.ws, g.ws_bytes, s) == 0);
}

void check(const Gemm &g, Lt &lt, long long rows, uint64_t seed, cudaStream_t s, bool baseline)
{
    char name[200];
    snprintf(name, sizeof name, "%s, M=%lld", g.name.c_str(), rows);
    Problem p;
    if (!CHECK(name, p.open(g, rows, seed, true)))
        return;
    const bool ok = poison_before_launch(g, p, s) && launch_fused(g, p, s) &&
                    (!baseline || lt.run(p, p.ref, s)) && fgh_ok(cudaStreamSynchronize(s));
    if (CHECK(name, ok))
        compare_outputs(name, p, seed, baseline);
    if (g.counters) {
        std::vector<unsigned> left(g.ncounters);
        char what[260];
        snprintf(what, sizeof what, "%s: the split's counters back at zero", name);
        const bool read = fgh_ok(cudaMemcpy(left.data(), g.counters, g.ncounters * 4,
                                            cudaMemcpyDeviceToHost));
        const size_t nonzero = (size_t)std::count_if(left.begin(), left.end(),
                                                     [](unsigned v) { return v != 0; });
        CHECKF(what, read && nonzero == 0, "%zu of %zu counters not zero", nonzero, g.ncounters);
    }
}

// p.c against the double reference on 256 samples and (baseline) the whole
// of it against cuBLASLt's product in p.ref.
void compare_outputs(const char *name, const Problem &p, uint64_t seed, bool baseline)
{
    const size_t nc = (size_t)p.m * p.n;
    std::vector<uint16_t> got(nc), base(nc);
    if (!CHECK(name, fgh_ok(cudaMemcpy(got.data(), p.c, nc * 2, cudaMemcpyDeviceToHost)) &&
                         (!baseline || fgh_ok(cudaMemcpy(base.data(), p.ref, nc * 2,
                                                         cudaMemcpyDeviceToHost)))))
        return;
    char what[260];
    snprintf(what, sizeof what, "%s: every output written", name);
    const size_t poisoned = fgh_count_poisoned(got.data(), FGH_BF16, nc);
    CHECKF(what, poisoned == 0, "%zu outputs still poisoned", poisoned);
    // sampled outputs against a double reference (every tile row's first
    // and last rows among them, so a misplaced row of tiles shows)
    constexpr int kSamples = 256;
    std::vector<double> ref(kSamples);
    std::vector<uint16_t> sampled(kSamples);
    for (int i = 0; i < kSamples; i++) {
        const uint64_t h = fgh_splitmix64(seed + 77 + i);
        const long long r = i < 2 ? (i ? p.m - 1 : 0) : (long long)(h % (uint64_t)p.m);
        const long long col = (long long)((h >> 32) % (uint64_t)p.n);
        double t = 0;
        for (long long kk = 0; kk < p.k; kk++)
            t += host_bf16(p.ha, (size_t)r * p.k + kk) * host_bf16(p.hw, (size_t)col * p.k + kk);
        ref[i] = t;
        sampled[i] = got[(size_t)r * p.n + col];
    }
    const fgh_err e = fgh_compare(sampled.data(), FGH_BF16, ref.data(), kSamples);
    snprintf(what, sizeof what, "%s: %d sampled outputs against a double reference", name,
             kSamples);
    CHECKF(what, e.nonfinite == 0 && e.rel_l2 <= 1e-2, "rel L2 %.3e, %zu non-finite", e.rel_l2,
           e.nonfinite);
    fgh_err el = {};
    if (baseline) {
        std::vector<double> lt_out(nc);
        for (size_t i = 0; i < nc; i++)
            lt_out[i] = fgh_bf16_to_f32(base[i]);
        el = fgh_compare(got.data(), FGH_BF16, lt_out.data(), nc);
        snprintf(what, sizeof what, "%s: the whole output against cuBLASLt's", name);
        CHECKF(what, el.nonfinite == 0 && el.rel_l2 <= 1e-2, "rel L2 %.3e, %zu non-finite",
               el.rel_l2, el.nonfinite);
    }
    if (e.rel_l2 <= 1e-2 && baseline)
        printf("    %s: sampled rel L2 %.3e, against cuBLASLt %.3e\n", name, e.rel_l2, el.rel_l2);
    else if (e.rel_l2 <= 1e-2)
        printf("    %s: sampled rel L2 %.3e\n", name, e.rel_l2);
}

// Counts the 16-bit words where a and b differ into *count.
__global__ void count_differences(const uint16_t *a, const uint16_t *b, size_t n,
                                  unsigned long long *count)
{
    unsigned long long c = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        c += a[i] != b[i];
    if (c)
        atomicAdd(count, c);
}

void check_deterministic(const Gemm &g, int launches, uint64_t seed, cudaStream_t s)
{
    char name[200];
    snprintf(name, sizeof name, "%s, M=256: %d launches bitwise equal, C poisoned before each",
             g.name.c_str(), launches);
    Problem p;
    unsigned long long *count = nullptr, got = 0;
    const size_t nc = (size_t)256 * g.n;
    bool ok = p.open(g, 256, seed, false) && fgh_ok(cudaMalloc(&count, sizeof *count)) &&
              fgh_ok(cudaMemsetAsync(count, 0, sizeof *count, s)) &&
              fgh_poison_device(p.ref, nc * 2, s) == 0 && launch_fused(g, p, s) &&
              fgh_ok(cudaMemcpyAsync(p.ref, p.c, nc * 2, cudaMemcpyDeviceToDevice, s));
    for (int i = 1; ok && i < launches; i++)
        ok = poison_before_launch(g, p, s) && launch_fused(g, p, s);
    if (ok) {
        count_differences<<<264, 256, 0, s>>>((const uint16_t *)p.c, (const uint16_t *)p.ref, nc,
                                             count);
        ok = fgh_ok(cudaMemcpyAsync(&got, count, sizeof got, cudaMemcpyDeviceToHost, s)) &&
             fgh_ok(cudaStreamSynchronize(s));
    }
    cudaFree(count);
    CHECKF(name, ok && got == 0, "%s; %llu outputs differ", ok ? "ran" : "a launch failed", got);
}

#ifdef FG_HAVE_FGRT
// Fed as its rows land (the fused AG+GEMM, on one GPU): rank 1 of 3 under
// chunk_overlap with 4 pieces of 192 rows a row block (tiles of 128 rows
// straddle them).  With A whole, cuBLASLt's product is the reference; then
// the other ranks' blocks, C and the split's partial sums are poisoned
// (NaN), the kernel launched with the flags clear and the tile order of
// fgrt_overlap_tile_rows, and after it the pieces are copied in from pinned
// host memory on another stream in the order of the schedule's waits, each
// followed by its flag (a 4-byte copy of the epoch, as the executor sets
// them), the host pausing between pieces so that the kernel has to wait.  A tile taken before its rows
// landed reads NaN: every output must be finite and right, status 0.
// lose: the last piece never comes; the kernel must still end, within its
// limit, with status FG_GEMM_LATE: within 1 s more than twice the time the
// same check took with every piece (full_secs; a sanitizer slows both).
// Returns the seconds the check took.
double check_pieces(const Gemm &g, Lt &lt, uint64_t seed, cudaStream_t s, bool lose, bool baseline,
                    double full_secs)
{
    constexpr unsigned kWorld = 3, kChunks = 4, kRank = 1, kPieceRows = 192, kEpoch = 5;
    constexpr long long kRows = (long long)kWorld * kChunks * kPieceRows, kBlock = kRows / kWorld;
    constexpr unsigned kStride = FGRT_FLAG_SENT + kChunks;   // a sender's flags (the executor's)
    constexpr unsigned kLate = 1;                             // overlap_gemm.in's FG_GEMM_LATE
    char name[200];
    snprintf(name, sizeof name, "%s, M=%lld fed in pieces as they land%s", g.name.c_str(), kRows,
             lose ? ", the last one lost" : "");
    Problem p;
    int order[kRows / 128];
    fgrt_op ops[64];
    const size_t nops =
        fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, kWorld, kChunks, 1, kRank, ops, 64);
    const size_t tiles = fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, kWorld, kChunks,
                                                kRank, kRows, (unsigned)g.bm, order, kRows / 128);
    if (!CHECK(name, nops > 0 && nops <= 64 && tiles == kRows / g.bm &&
                         p.open(g, kRows, seed, true)))
        return 0;
    const size_t row_bytes = (size_t)g.k * 2;
    int *tile_rows = nullptr;
    unsigned *flags = nullptr, *words = nullptr, *host = nullptr;   // words: epoch, status
    cudaStream_t copies = nullptr;
    void *src = nullptr;
    bool ok = fgh_ok(cudaMalloc(&tile_rows, sizeof order)) &&
              fgh_ok(cudaMalloc(&flags, kWorld * kStride * 4)) &&
              fgh_ok(cudaMalloc(&words, 8)) && fgh_ok(cudaMallocHost(&host, 8)) &&
              fgh_ok(cudaMallocHost(&src, (size_t)kRows * row_bytes)) &&
              fgh_ok(cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking));
    if (ok) {
        memcpy(src, p.ha.data(), (size_t)kRows * row_bytes);
        host[0] = kEpoch, host[1] = 0;
        ok = fgh_upload(tile_rows, order, sizeof order) == 0 &&
             fgh_ok(cudaMemset(flags, 0, kWorld * kStride * 4)) && fgh_upload(words, host, 8) == 0 &&
             (!baseline || lt.run(p, p.ref, s)) && poison_before_launch(g, p, s);
        for (unsigned b = 0; ok && b < kWorld; b++)
            if (b != kRank)
                ok = fgh_poison_device((char *)p.a + b * kBlock * row_bytes, kBlock * row_bytes,
                                       s) == 0;
        ok = ok && fgh_ok(cudaStreamSynchronize(s));
    }
    Feed f;
    f.tile_rows = tile_rows, f.flags = flags + FGRT_FLAG_SENT, f.epoch = &words[0];
    f.own = (int)kRank, f.shard_rows = (int)kBlock, f.piece_rows = (int)kPieceRows;
    f.flag_stride = (int)kStride, f.status = &words[1];
    f.limit_ns = lose ? 50000000ull : 1000000000ull;
    const double t0 = overlap_gpu::now_us();
    ok = ok && launch_fused(g, p, s, f);
    usleep(2000);
    size_t sent = 0, waits = 0;
    for (size_t i = 0; ok && i < nops; i++) {
        if (ops[i].kind != FGRT_OP_WAIT || ops[i].flag < FGRT_FLAG_SENT)
            continue;
        waits++;
        if (lose && waits == kChunks * (kWorld - 1))
            break;
        const size_t peer = (size_t)ops[i].peer, piece = ops[i].flag - FGRT_FLAG_SENT;
        const size_t at = (peer * kBlock + piece * kPieceRows) * row_bytes;
        ok = fgh_ok(cudaMemcpyAsync((char *)p.a + at, (char *)src + at, kPieceRows * row_bytes,
                                    cudaMemcpyHostToDevice, copies)) &&
             fgh_ok(cudaMemcpyAsync(flags + peer * kStride + ops[i].flag, &host[0], 4,
                                    cudaMemcpyHostToDevice, copies));
        sent++;
        usleep(200);
    }
    ok = ok && fgh_ok(cudaStreamSynchronize(copies)) && fgh_ok(cudaStreamSynchronize(s)) &&
         fgh_ok(cudaMemcpy(&host[1], &words[1], 4, cudaMemcpyDeviceToHost));
    const double secs = (overlap_gpu::now_us() - t0) * 1e-6;
    if (CHECK(name, ok && sent == kChunks * (kWorld - 1) - (lose ? 1 : 0))) {
        char what[260];
        snprintf(what, sizeof what, "%s: status", name);
        CHECKF(what, host[1] == (lose ? kLate : 0u), "status %u, expected %u (%.3f s)", host[1],
               lose ? kLate : 0u, secs);
        if (!lose)
            compare_outputs(name, p, seed, baseline);
        else {
            snprintf(what, sizeof what, "%s: ends within its limit", name);
            CHECKF(what, secs < 1.0 + 2 * full_secs, "%.3f s (every piece: %.3f s)", secs,
                   full_secs);
        }
    }
    cudaFree(tile_rows), cudaFree(flags), cudaFree(words), cudaFreeHost(host), cudaFreeHost(src);
    if (copies)
        cudaStreamDestroy(copies);
    return secs;
}
#endif

// Drained as its rows are written (the fused GEMM+RS, on one GPU): M = 2304
// in 6 pieces of 384 rows (3 tile rows), a counter each, C and the split's
// partial sums poisoned (the n8192 shapes split their last round here).
// Before the launch, another stream is given, per piece, a wait for its
// counter to reach the contract's figure, n / 128 a tile row of 128 (2 for
// each 256 columns of a tile, whatever the form's tile width;
// cuStreamWaitValue32), and then a copy of
// its rows of C into pinned host memory: a counter that grew before its
// rows were written leaves poison, or rows other than the final ones, in
// the copy.  The copy must equal C afterwards, C must be right, the
// counters must hold exactly that figure, and twice it after a second launch.
void check_drain(const Gemm &g, Lt &lt, uint64_t seed, cudaStream_t s, bool baseline)
{
    constexpr long long kRows = 2304, kPiece = 384, kPieces = kRows / kPiece;
    char name[200];
    snprintf(name, sizeof name, "%s, M=%lld drained in pieces as they are written",
             g.name.c_str(), kRows);
    Problem p;
    if (!CHECK(name, p.open(g, kRows, seed, true)))
        return;
    const unsigned per_piece = (unsigned)(kPiece / 128 * (g.n / 128));
    const size_t piece_bytes = (size_t)kPiece * g.n * 2, nc = (size_t)kRows * g.n;
    unsigned *done = nullptr, counts[kPieces];
    uint16_t *copied = nullptr;
    cudaStream_t copies = nullptr;
    bool ok = fgh_ok(cudaMalloc(&done, sizeof counts)) &&
              fgh_ok(cudaMemset(done, 0, sizeof counts)) &&
              fgh_ok(cudaMallocHost(&copied, nc * 2)) &&
              fgh_ok(cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking)) &&
              poison_before_launch(g, p, s) && (!baseline || lt.run(p, p.ref, s)) &&
              fgh_ok(cudaStreamSynchronize(s));
    if (ok)
        memset(copied, 0, nc * 2);
    for (long long i = 0; ok && i < kPieces; i++)
        ok = cu_ok(drv.wait_value((CUstream)copies, (CUdeviceptr)(done + i), per_piece,
                                  CU_STREAM_WAIT_VALUE_GEQ),
                   "cuStreamWaitValue32") &&
             fgh_ok(cudaMemcpyAsync((char *)copied + i * piece_bytes, (char *)p.c + i * piece_bytes,
                                    piece_bytes, cudaMemcpyDeviceToHost, copies));
    Feed f;
    f.done = done, f.done_rows = (int)kPiece;
    ok = ok && launch_fused(g, p, s, f) && fgh_ok(cudaStreamSynchronize(s)) &&
         fgh_ok(cudaStreamSynchronize(copies)) &&
         fgh_ok(cudaMemcpy(counts, done, sizeof counts, cudaMemcpyDeviceToHost));
    if (CHECK(name, ok)) {
        std::vector<uint16_t> final_c(nc);
        char what[260];
        const bool read = fgh_ok(cudaMemcpy(final_c.data(), p.c, nc * 2, cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "%s: each piece copied after its counter equals C", name);
        CHECKF(what, read && memcmp(final_c.data(), copied, nc * 2) == 0,
               "%zu poisoned words in the copies", fgh_count_poisoned(copied, FGH_BF16, nc));
        int wrong = -1;
        for (long long i = 0; i < kPieces && wrong < 0; i++)
            wrong = counts[i] == per_piece ? -1 : (int)i;
        snprintf(what, sizeof what, "%s: each counter grew by n / 128 a tile row", name);
        CHECKF(what, wrong < 0, "counter %d holds %u, expected %u", wrong,
               wrong < 0 ? 0 : counts[wrong], per_piece);
        compare_outputs(name, p, seed, baseline);
        ok = launch_fused(g, p, s, f) && fgh_ok(cudaStreamSynchronize(s)) &&
             fgh_ok(cudaMemcpy(counts, done, sizeof counts, cudaMemcpyDeviceToHost));
        for (long long i = 0; i < kPieces && ok; i++)
            ok = counts[i] == 2 * per_piece;
        snprintf(what, sizeof what, "%s: a second launch adds as much (never reset)", name);
        CHECK(what, ok);
    }
    cudaFree(done), cudaFreeHost(copied);
    if (copies)
        cudaStreamDestroy(copies);
}

// ---- --bench ----

struct Timed {
    const Gemm *g;
    Lt *lt;
    Problem *p;
    bool fused;
};
void enqueue(void *ctx, int, cudaStream_t s)
{
    Timed *t = (Timed *)ctx;
    if (t->fused)
        launch_fused(*t->g, *t->p, s);
    else
        t->lt->run(*t->p, t->p->c, s);
}

void bench(const Gemm &g, Lt &lt, long long rows, uint64_t seed, cudaStream_t s, fgh_json *j,
           bool baseline)
{
    Problem p;
    char name[200];
    snprintf(name, sizeof name, "%s bench, M=%lld", g.name.c_str(), rows);
    if (!CHECK(name, p.open(g, rows, seed, false) && (!baseline || lt.plan(rows, g.n, g.k))))
        return;
    constexpr int kRounds = 2;
    std::vector<double> us[2];
    for (int r = 0; r < kRounds; r++)
        for (int f = 1; f >= (baseline ? 0 : 1); f--) {
            Timed t{&g, &lt, &p, f == 1};
            fgh_timing tm;
            if (!CHECK(name, fgh_bench(s, enqueue, &t, 1, 3.0, 7, &tm) == 0))
                return;
            us[f].push_back(tm.med_us);
        }
    const double flop = 2.0 * rows * g.n * g.k;
    const double fused = fgh_median(us[1].data(), (int)us[1].size());
    const double base = baseline ? fgh_median(us[0].data(), (int)us[0].size()) : NAN;
    printf("%-40s M=%6lld N=%6lld K=%6lld  fused %9.2f us %6.1f TFLOP/s", g.name.c_str(), rows,
           g.n, g.k, fused, flop / fused * 1e-6);
    if (baseline)
        printf("  cuBLASLt %9.2f us %6.1f TFLOP/s  fused/cuBLASLt rate %.3f", base,
               flop / base * 1e-6, base / fused);
    printf("\n");
    if (j) {
        // the shape every bench file has (instance, shape.rows, time.median:
        // fusegen tune and report read them), then the GEMM's own figures
        fgh_json_obj_begin(j, nullptr);
        fgh_json_str(j, "name", g.name.c_str());
        fgh_json_str(j, "instance", g.name.c_str());
        fgh_json_obj_begin(j, "shape");
        fgh_json_int(j, "rows", rows);
        fgh_json_obj_end(j);
        fgh_json_obj_begin(j, "time");
        fgh_json_num(j, "median", fused);
        fgh_json_obj_end(j);
        fgh_json_int(j, "m", rows), fgh_json_int(j, "n", g.n), fgh_json_int(j, "k", g.k);
        fgh_json_num(j, "fused_us", fused);
        fgh_json_num(j, "fused_tflops", flop / fused * 1e-6);
        if (baseline) {   // (non-finite numbers would be written as null)
            fgh_json_num(j, "cublaslt_us", base);
            fgh_json_num(j, "cublaslt_tflops", flop / base * 1e-6);
            fgh_json_num(j, "fused_share_of_cublaslt", base / fused);
        }
        fgh_json_obj_end(j);
    }
}

}   // namespace

int main(int argc, char **argv)
{
    fgh_args a;
    fgh_args_init(&a);
    long long profile_rows = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--profile") && i + 1 < argc && atoll(argv[i + 1]) > 0 &&
            atoll(argv[i + 1]) % 128 == 0)
            profile_rows = atoll(argv[++i]);
        else if (!fgh_common_arg(&a, argc, argv, &i)) {
            fprintf(stderr,
                    "usage: %s [--kernels DIR] [--manifest FILE] [--only A,B] [--seed N] "
                    "[--verbose] [--quick] [--no-baseline] [--bench [--json FILE]] [--commit C] "
                    "[--profile ROWS]\n",
                    argv[0]);
            return 2;
        }
    fgh_args_apply(&a);
    if (!fgh_shard_from_env())   // FG_SHARD=K/N: this run's share of the instances
        return 2;
    fgh_device d;
    if (!CHECK("device: open", fgh_device_open(0, &d) == 0))
        return fgh_summary() ? 1 : 0;
    if (d.cc_major != 9) {
        fgh_skip("overlap_gemm (sm_90a)", "this GPU is not compute capability 9.x");
        return fgh_summary() ? 1 : 0;
    }
    int n = 0;
    char **files = fgh_list_cubins(a.kernels, "overlap_gemm_", &n);
    char mpath[1024];
    char *manifest = fgh_open_manifest(a.manifest, a.kernels, mpath, sizeof mpath, nullptr);
    if (!n || !manifest) {
        fgh_skip("overlap_gemm", n ? "no manifest" : "no overlap_gemm_* cubin in --kernels");
        return fgh_summary() ? 1 : 0;
    }
    std::vector<const char *> names(files, files + n);
    std::unique_ptr<bool[]> chosen(new bool[n]);
    fgh_select(a.only, names.data(), n, chosen.get());
    cudaStream_t s;
    Lt lt;
    FILE *jf = nullptr;
    fgh_json j;
    bool ok = CHECK("driver entry points", driver_open()) &&
              fgh_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) &&
              lt.ok(cublasLtCreate(&lt.h), "create") &&
              fgh_ok(cudaMalloc(&lt.ws, Lt::kWorkspace));
    if (ok && a.bench && a.json)
        ok = fgh_bench_doc_begin(&j, &jf, a.json, &d, a.commit, "test_gemm --bench") == 0;
    if (jf)
        fgh_json_arr_begin(&j, "cases");
    for (int i = 0; ok && i < n; i++) {
        if (!chosen[i])
            continue;
        Gemm g;
        g.name = names[i];
        char dtype[16] = "";
        if (fgh_manifest_text(manifest, names[i], "dtype", dtype, sizeof dtype) < 0 ||
            strcmp(dtype, "bf16") != 0) {
            fgh_skip(names[i], "the harness's maps and references are bf16's");
            continue;
        }
        if (!CHECK(g.name.c_str(), gemm_open(&g, a.kernels, manifest)))
            continue;
        const uint64_t seed = fgh_next_seed();
        if (profile_rows > 0) {
            Problem p;
            CHECK(g.name.c_str(), p.open(g, profile_rows, seed, false) && launch_fused(g, p, s) &&
                                      launch_fused(g, p, s) &&
                                      fgh_ok(cudaStreamSynchronize(s)));
            continue;
        }
        if (a.bench) {
            for (long long rows : {4096ll, 16384ll})
                bench(g, lt, rows, seed + 7 * rows, s, jf ? &j : nullptr, a.baseline);
            continue;
        }
        for (long long rows : {128ll, 1152ll, 4096ll})
            if (!a.quick || rows < 4096)
                check(g, lt, rows, seed + rows, s, a.baseline);
        check_deterministic(g, a.quick ? 2 : 1000, seed + 5, s);
#ifdef FG_HAVE_FGRT
        const double full = check_pieces(g, lt, seed + 11, s, false, a.baseline, 0);
        check_pieces(g, lt, seed + 11, s, true, a.baseline, full);
#else
        fgh_skip(names[i], "fed in pieces: built without libfgrt (its tile order)");
#endif
        check_drain(g, lt, seed + 13, s, a.baseline);
    }
    if (jf) {
        fgh_json_arr_end(&j);
        fgh_bench_doc_end(&j, jf, a.json);
    }
    lt.drop();
    if (lt.h)
        cublasLtDestroy(lt.h);
    cudaFree(lt.ws);
    free(manifest);
    free(files);
    return fgh_summary() ? 1 : 0;
}
