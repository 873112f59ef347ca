// What the overlap tests share (test_overlap, test_overlap_exec): bf16
// GEMMs through cuBLASLt and the owner's reduction kernel.
#ifndef FG_OVERLAP_GPU_CUH
#define FG_OVERLAP_GPU_CUH

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "fgrt_overlap.h"
#include "harness.h"

namespace overlap_gpu {

// A GEMM of the overlap family: its collective and per-rank m, n, k (an
// all-gather layer gathers m / world rows from each rank, a reduce-scatter
// one leaves m / world on each).
struct Shape {
    const char *name;
    fgrt_collective coll;
    long long m, n, k;
};

// A --bench-shapes list, "NAME:all_gather:MxNxK,NAME:reduce_scatter:MxNxK,..."
// (what `fusegen shapes` prints), into out (names kept in `names`); false,
// and why on stderr, if malformed.
inline bool parse_bench_shapes(const char *text, std::vector<Shape> *out,
                               std::vector<std::string> *names)
{
    std::vector<std::string> items;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, ',');
        items.emplace_back(p, e ? (size_t)(e - p) : strlen(p));
        p = e ? e + 1 : p + strlen(p);
    }
    names->reserve(items.size());   // out keeps pointers into it
    for (const std::string &it : items) {
        char name[96], coll[32];
        long long m, n, k;
        char end;
        if (sscanf(it.c_str(), "%95[^:]:%31[^:]:%lldx%lldx%lld%c", name, coll, &m, &n, &k, &end) !=
                5 ||
            (strcmp(coll, "all_gather") && strcmp(coll, "reduce_scatter")) || m <= 0 || n <= 0 ||
            k <= 0) {
            fprintf(stderr, "--bench-shapes: '%s' is not NAME:all_gather|reduce_scatter:MxNxK\n",
                    it.c_str());
            return false;
        }
        names->push_back(name);
        out->push_back({names->back().c_str(),
                        strcmp(coll, "all_gather") ? FGRT_GEMM_RS : FGRT_AG_GEMM, m, n, k});
    }
    return !out->empty();
}

// A schedule as the tests run it: chunk_overlap and chunk_fused with their
// pieces per block; the copy lanes a rank pushes on (fgrt_overlap_args.lanes);
// the hierarchical plan's ranks a node (fgrt_overlap_args.node_ranks), or 0.
struct Sched {
    fgrt_schedule s;
    unsigned chunks;
    unsigned lanes = 1;
    unsigned nodes = 0;
};

// A results key: "shard_overlap", "chunk_overlap_c4", "chunk_fused_c2",
// "chunk_overlap_c4_l4"
inline std::string part_key(Sched s)
{
    std::string key = fgrt_schedule_name(s.s);
    if (s.s == FGRT_CHUNK_OVERLAP || s.s == FGRT_CHUNK_FUSED)
        key += "_c" + std::to_string(s.chunks);
    if (s.lanes > 1)
        key += "_l" + std::to_string(s.lanes);
    if (s.nodes)
        key += "_n" + std::to_string(s.nodes);
    return key;
}

// "shard_overlap", "chunk_overlap (4 chunks)", "chunk_fused (2 chunks, 2 copy lanes)"
inline std::string sched_name(Sched s)
{
    std::string name = fgrt_schedule_name(s.s);
    const bool pieces = s.s == FGRT_CHUNK_OVERLAP || s.s == FGRT_CHUNK_FUSED;
    if (pieces || s.lanes > 1)
        name += " (";
    if (pieces)
        name += std::to_string(s.chunks) + " chunks";
    if (s.lanes > 1)
        name += std::string(pieces ? ", " : "") + std::to_string(s.lanes) + " copy lanes";
    if (pieces || s.lanes > 1)
        name += ")";
    if (s.nodes)
        name += ", hierarchical, nodes of " + std::to_string(s.nodes);
    return name;
}

inline size_t bytes(long long elems) { return (size_t)elems * sizeof(__nv_bfloat16); }

inline double now_us()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

inline float host_bf16(const uint16_t *v, size_t i) { return fgh_bf16_to_f32(v[i]); }

// Opens the results object of one run: the GPU, the commit, the tool.
inline void json_begin(fgh_json *j, FILE *f, const char *tool)
{
    fgh_device d;
    fgh_device_open(0, &d);
    fgh_json_init(j, f);
    fgh_json_obj_begin(j, nullptr);
    fgh_json_header(j, &d, getenv("FG_COMMIT") ? getenv("FG_COMMIT") : "unknown", tool);
}

// cuBLASLt GEMMs on one device: a handle, a workspace per stream (GEMMs on
// two streams at once must not share one: its algorithms may keep partial
// tiles and counters there), and per shape its descriptors and the
// heuristic's first algorithm, kept so that enqueueing a GEMM is one
// cublasLtMatmul call.
struct LtPlan {
    long long rows, n, k;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
};

struct LtGemm {
    cublasLtHandle_t h = nullptr;
    void *ws[3] = {};   // one per stream of a Rank
    static constexpr size_t kWorkspace = (size_t)32 << 20;
    std::vector<LtPlan> plans;
};

inline bool lt_ok(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return true;
    fprintf(stderr, "overlap: %s: cuBLASLt status %d\n", what, (int)s);
    return false;
}

// On the current device.
inline bool lt_open(LtGemm *g)
{
    if (!lt_ok(cublasLtCreate(&g->h), "cublasLtCreate"))
        return false;
    for (void *&w : g->ws)
        if (!fgh_ok(cudaMalloc(&w, LtGemm::kWorkspace)))
            return false;
    return true;
}

inline void lt_close(LtGemm *g)
{
    for (LtPlan &p : g->plans) {
        cublasLtMatmulDescDestroy(p.op);
        cublasLtMatrixLayoutDestroy(p.a), cublasLtMatrixLayoutDestroy(p.b);
        cublasLtMatrixLayoutDestroy(p.c);
    }
    g->plans.clear();
    if (g->h)
        cublasLtDestroy(g->h);
    for (void *&w : g->ws)
        cudaFree(w), w = nullptr;
    g->h = nullptr;
}

// The plan of C[rows, n] = A[rows, k] B[k, n], row-major bf16 with fp32
// accumulation: cuBLASLt, column-major, computes C^T = B^T A^T.
inline const LtPlan *lt_plan(LtGemm *g, long long rows, long long n, long long k)
{
    for (const LtPlan &p : g->plans)
        if (p.rows == rows && p.n == n && p.k == k)
            return &p;
    LtPlan p{rows, n, k, nullptr, nullptr, nullptr, nullptr, {}};
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulHeuristicResult_t best = {};
    int found = 0;
    const size_t ws = LtGemm::kWorkspace;
    bool ok = lt_ok(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc") &&
              lt_ok(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, n, k, n), "layout B^T") &&
              lt_ok(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, k, rows, k), "layout A^T") &&
              lt_ok(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, n, rows, n), "layout C^T") &&
              lt_ok(cublasLtMatmulPreferenceCreate(&pref), "preference") &&
              lt_ok(cublasLtMatmulPreferenceSetAttribute(
                        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                    "workspace") &&
              lt_ok(cublasLtMatmulAlgoGetHeuristic(g->h, p.op, p.a, p.b, p.c, p.c, pref, 1, &best,
                                                   &found),
                    "heuristic") &&
              found > 0;
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (!ok) {
        fprintf(stderr, "overlap: no cuBLASLt algorithm for %lld x %lld x %lld\n", rows, n, k);
        if (p.op)
            cublasLtMatmulDescDestroy(p.op);
        cublasLtMatrixLayoutDestroy(p.a), cublasLtMatrixLayoutDestroy(p.b);
        cublasLtMatrixLayoutDestroy(p.c);
        return nullptr;
    }
    p.algo = best.algo;
    g->plans.push_back(p);
    return &g->plans.back();
}

// c[rows, n] = a[rows, k] x b[k, n] (+ acc[rows, n] unless NULL: cuBLASLt's
// C with beta 1, read in fp32 with the product), row-major bf16, on
// `stream` with workspace `slot` of g (one per stream that may run a GEMM
// at once).
inline bool lt_matmul(LtGemm *g, int slot, const __nv_bfloat16 *b, const void *a,
                      const void *acc, void *c, long long rows, long long n, long long k,
                      cudaStream_t stream)
{
    const float one = 1.f, zero = 0.f;
    const LtPlan *p = lt_plan(g, rows, n, k);
    return p && lt_ok(cublasLtMatmul(g->h, p->op, &one, b, p->a, a, p->b, acc ? &one : &zero,
                                     acc ? acc : c, p->c, c, p->c, &p->algo, g->ws[slot],
                                     LtGemm::kWorkspace, stream),
                      "cublasLtMatmul");
}

// out = own partial block + the W - 1 received ones, fp32 sums in rank
// order, rounded once.  16-byte loads and a grid of 16 blocks per SM keep
// enough bytes in flight to stream (scalar loads left it latency-bound at a
// fraction of HBM bandwidth).  `vecs`: elements / 8.
__global__ void reduce_block(const uint4 *own, const uint4 *recv, uint4 *out, int world, int rank,
                             long long vecs)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < vecs;
         i += (long long)gridDim.x * blockDim.x) {
        float t[8] = {};
        for (int p = 0; p < world; p++) {
            const uint4 v = p == rank ? own[i] : recv[(size_t)p * vecs + i];
            const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
            for (int j = 0; j < 4; j++) {
                const float2 f = __bfloat1622float2(h[j]);
                t[2 * j] += f.x, t[2 * j + 1] += f.y;
            }
        }
        uint4 o;
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&o);
        for (int j = 0; j < 4; j++)
            h[j] = __floats2bfloat162_rn(t[2 * j], t[2 * j + 1]);
        out[i] = o;
    }
}

}   // namespace overlap_gpu

#endif
