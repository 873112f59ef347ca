// Probe: what a launch shaped like the MLA core's B = 1 kernel costs before
// any attention is done (issue 8's intercept, T0 <= 5 us).  The planner's
// 16-head B = 1 kernel is 112 blocks of 256 threads in clusters of 8, with
// 229088 bytes of shared memory; at S = 1K 32 of its blocks get a 32-key
// tile (36 KB of 576-wide bf16 rows) and the rest none.  Each row adds one
// step of that kernel's skeleton to the one before, timed per launch in
// CUDA-graph replays of 256 launches (each launch reads its own regions of
// a 1 GB buffer: 300 MB or more a replay, 6 times L2; stop 44's rows in
// docs/performance.md were timed with 64 launches, 75 MB a replay, and the
// 37.7 MB of "one cluster of 8" fit in L2), median of 15 replays:
//   empty kernels (1 block; 112 blocks; clusters of 8 with the shared memory),
//   the tile read by 16-byte loads, the cluster's two barriers alone, the
//   cluster's merge (16 x 512 float partials in shared memory, rank j
//   summing slice j of every peer's: the peers in turn, every rank starting
//   at rank 0 or at its own, or every peer's load in flight at once, which
//   tells the requests' contention from their latency; every peer's at once
//   by 16-byte ld.shared::cluster; or pushed, each rank sending each peer
//   its slice by one bulk copy into the peer's inbox), the cross-cluster
//   merge (slices to
//   global memory, a ticket, the last cluster's block re-reading them all);
//   clusters of 16 (non-portable); one cluster doing all of S = 1K with
//   only its own merge; and rows with programmatic dependent launch (a
//   launch may start while the one before finishes; each waits for it at
//   its top, so only the launch itself overlaps).
// The skeleton's merges stand for the kernel's steps, not for their costs
// (fp32 partials, more than the kernel moves: its whole skeleton takes
// longer than the kernel); the kernel's own merges were timed by leaving
// them out of it.  Not part of the tests; docs/performance.md (issue 8,
// stops 44 and 46).
//   nvcc -std=c++17 -arch=sm_90a -O3 -o probe_launch_floor tests/gpu/probe_launch_floor.cu && ./probe_launch_floor
#include <cooperative_groups.h>
#include "probe_graph.cuh"
namespace cg = cooperative_groups;

constexpr int kThreads = 256, kMaxBlocks = 112;
constexpr int kSmem = 229088;
constexpr int kTileVecs = 32 * 1152 / 16;   // a tile's 16-byte pieces: 2304, 9 a thread
constexpr int kLaunches = 256, kReps = 15;
constexpr size_t kBuffer = size_t(1) << 30;

enum Step {
    kEmpty,
    kRead,
    kClusterSync,
    kClusterMergeAllPeers,   // clusters of 8: each element's 8 peer loads in flight at once
    kClusterMergeRotated,    // the peers in turn, rank j starting at peer j
    kClusterMerge,           // the peers in turn, every rank starting at peer 0
    kClusterMergeV4,         // every peer's load at once, 16-byte ld.shared::cluster by address
    kClusterMergePush,       // each rank's slice pushed to its merger by one bulk copy a peer
    kGlobalMerge,
    kGlobalMergePush         // the cross-cluster merge after the pushed cluster merge
};

__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}
// a shared::cta address's counterpart in cluster rank `rank`
__device__ __forceinline__ unsigned peer_addr(unsigned a, int rank)
{
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}
__device__ __forceinline__ float4 ld_cluster4(unsigned a)
{
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(a)
                 : "memory");
    return v;
}

__device__ __forceinline__ void pdl_wait(bool pdl)
{
    if (pdl)
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
}
__device__ __forceinline__ void pdl_launch(bool pdl)
{
    if (pdl)
        asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// step: how much of the MLA kernel's skeleton runs; active: blocks with
// tiles (`tiles` each, loads all in flight at once); region: which part of
// the buffer this launch reads.  Clusters of gridDim / clusters blocks.
__global__ void __launch_bounds__(kThreads, 1)
skeleton(const uint4 *__restrict__ data, size_t regions, int region, int step, int active,
         int tiles, bool pdl, float *__restrict__ work, unsigned *__restrict__ tickets,
         float *__restrict__ out)
{
    extern __shared__ __align__(16) float smem[];
    pdl_launch(pdl);
    pdl_wait(pdl);
    if (step == kEmpty) {
        if (region < 0)   // never: keeps the kernel from being empty of effects
            out[0] = 1.f;
        return;
    }
    float acc = 0.f;
    if ((int)blockIdx.x < active) {
        constexpr int kPer = kTileVecs / kThreads;
        uint4 v[2][kPer];
#pragma unroll
        for (int t = 0; t < 2; t++) {
            const size_t base =
                (((size_t)region * kMaxBlocks + blockIdx.x) * 2 + t) % regions * kTileVecs;
#pragma unroll
            for (int i = 0; i < kPer; i++)
                if (t < tiles)
                    v[t][i] = __ldcs(data + base + i * kThreads + threadIdx.x);
        }
#pragma unroll
        for (int t = 0; t < 2; t++)
#pragma unroll
            for (int i = 0; i < kPer; i++)
                if (t < tiles)
                    acc += __uint_as_float(v[t][i].x ^ v[t][i].y ^ v[t][i].z ^ v[t][i].w) * 1e-30f;
    }
    if (step == kRead) {
        if (acc == 12345.f)
            out[0] = acc;
        return;
    }
    cg::cluster_group cluster = cg::this_cluster();
    const int csize = (int)cluster.num_blocks(), j = (int)cluster.block_rank();
    if (step == kClusterSync) {   // the cluster's two barriers, nothing exchanged
        cluster.sync();
        cluster.sync();
        if (acc == 12345.f)
            out[0] = acc;
        return;
    }
    // the cluster's merge: each block's partial (16 rows x 512 floats stand
    // for 16 heads x kv_lora) in shared memory, rank j sums slice j of all
    // (every peer load issued before the sums)
    const bool push = step == kClusterMergePush || step == kGlobalMergePush;
    const int cols = 512 / csize, per = 16 * cols / kThreads;   // 4 (8 blocks) or 2 (16)
    const int chunk = 16 * cols;   // push: slice p's 16 rows, contiguous, at smem + p * chunk
    float *inbox = smem + 16 * 512;   // push: peer p's slice j at inbox + p * chunk
    __shared__ alignas(8) unsigned long long bar;
    for (int i = threadIdx.x; i < 16 * 512; i += kThreads)
        smem[i] = acc + i;
    if (push) {
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(&bar)));
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                             smem_addr(&bar)),
                         "r"(csize * chunk * 4)
                         : "memory");
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // the slices, to the copies
    }
    cluster.sync();
    float sum = 0.f;
    if (step == kClusterMergeAllPeers) {   // (the probe's first form; csize 8)
        for (int i = threadIdx.x; i < 16 * 64; i += kThreads) {
            const int row = i / 64, col = j * 64 + i % 64;
#pragma unroll
            for (int p = 0; p < 8; p++)
                sum += cluster.map_shared_rank(smem, p)[row * 512 + col];
        }
    } else if (step == kClusterMergeV4) {   // 16-byte pieces of slice j, every peer's at once
        for (int i = threadIdx.x; i < chunk / 4; i += kThreads) {
            const unsigned a = smem_addr(smem + i / (cols / 4) * 512 + j * cols + i % (cols / 4) * 4);
            float4 v[16];
#pragma unroll
            for (int p = 0; p < 16; p++)
                if (p < csize)
                    v[p] = ld_cluster4(peer_addr(a, p));
#pragma unroll
            for (int p = 0; p < 16; p++)
                if (p < csize)
                    sum += v[p].x + v[p].y + v[p].z + v[p].w;
        }
    } else if (push) {   // thread p sends slice p to rank p, then all read the inbox here
        if (threadIdx.x < csize) {
            const int p = threadIdx.x;
            asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes "
                         "[%0], [%1], %2, [%3];\n" ::"r"(peer_addr(smem_addr(inbox + j * chunk), p)),
                         "r"(smem_addr(smem + p * chunk)), "r"(chunk * 4),
                         "r"(peer_addr(smem_addr(&bar), p))
                         : "memory");
        }
        asm volatile("{\n.reg .pred done;\nwait:\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
                     "@!done bra wait;\n}\n" ::"r"(smem_addr(&bar))
                     : "memory");
        for (int k = 0; k < per; k++)
            for (int q = 0; q < csize; q++)
                sum += inbox[q * chunk + threadIdx.x + k * kThreads];
    } else {
        const int first = step == kClusterMergeRotated ? j : 0;
        for (int q = 0; q < csize; q++) {
            const float *peer = cluster.map_shared_rank(smem, (q + first) % csize);
            float x[4];
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (k < per) {
                    const int i = threadIdx.x + k * kThreads;
                    x[k] = peer[i / cols * 512 + j * cols + i % cols];
                }
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (k < per)
                    sum += x[k];
        }
    }
    cluster.sync();   // no block leaves while a peer may still read its shared memory
    if ((step != kGlobalMerge && step != kGlobalMergePush) || (int)gridDim.x == csize) {
        out[j * kThreads + threadIdx.x] = sum;
        return;
    }
    // the cross-cluster merge: slice j of each cluster to global memory, a
    // ticket, the last of the clusters re-reads them all
    const int cl = blockIdx.x / csize, clusters = gridDim.x / csize;
    for (int i = threadIdx.x; i < 16 * cols; i += kThreads)
        work[((size_t)cl * csize + j) * 1024 + i] = sum + i;
    __syncthreads();
    __shared__ unsigned ticket;
    if (threadIdx.x == 0) {
        __threadfence();
        ticket = atomicAdd(&tickets[j], 1u);
    }
    __syncthreads();
    if (ticket != (unsigned)clusters - 1)
        return;
    __threadfence();
    float total = 0.f;
    for (int i = threadIdx.x; i < 16 * cols; i += kThreads)
        for (int c = 0; c < clusters; c++)
            total += __ldcg(&work[((size_t)c * csize + j) * 1024 + i]);
    out[j * kThreads + threadIdx.x] = total;
    if (threadIdx.x == 0)
        tickets[j] = 0;
}

__global__ void one_block_empty(float *out, int flag)
{
    if (flag < 0)
        out[0] = 1.f;
}

struct Buffers {
    uint4 *data;
    size_t regions;
    float *work, *out;
    unsigned *tickets;
};

// One launch of the skeleton (`blocks` in clusters of `cluster` or none,
// shared memory or none, PDL or not), launch index i choosing the region.
struct Row {
    const char *what;
    int step, blocks, cluster, active, tiles, smem;
    bool pdl;
};
static void launch(cudaStream_t s, const Buffers &b, int i, const Row &r)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(r.blocks);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = r.smem;
    cfg.stream = s;
    cudaLaunchAttribute attr[2];
    int n = 0;
    if (r.cluster > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = r.cluster, attr[n].val.clusterDim.y = 1;
        attr[n].val.clusterDim.z = 1;
        n++;
    }
    if (r.pdl) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n].val.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    cfg.attrs = attr;
    cfg.numAttrs = n;
    CK(cudaLaunchKernelEx(&cfg, skeleton, (const uint4 *)b.data, b.regions, i, r.step, r.active,
                          r.tiles, r.pdl, b.work, b.tickets, b.out));
}

int main()
{
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs; per launch, median of %d replays of %d launches\n", p.name,
           p.multiProcessorCount, kReps, kLaunches);
    CK(cudaFuncSetAttribute(skeleton, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    CK(cudaFuncSetAttribute(skeleton, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    Buffers b;
    CK(cudaMalloc(&b.data, kBuffer));
    CK(cudaMemset(b.data, 0x3c, kBuffer));
    b.regions = kBuffer / (kTileVecs * 16);
    CK(cudaMalloc(&b.work, kMaxBlocks * 1024 * sizeof(float)));
    CK(cudaMalloc(&b.out, 16 * kThreads * sizeof(float)));
    CK(cudaMalloc(&b.tickets, 16 * sizeof(unsigned)));
    CK(cudaMemset(b.tickets, 0, 16 * sizeof(unsigned)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    const Row rows[] = {
        {"empty, 112 blocks, no cluster, no shared memory", kEmpty, 112, 1, 0, 0, 0, false},
        {"empty, 112 blocks, clusters of 8, 229088 B shared", kEmpty, 112, 8, 0, 0, kSmem, false},
        {"  the same, PDL", kEmpty, 112, 8, 0, 0, kSmem, true},
        {"+ a tile read in 32 blocks (S = 1K)", kRead, 112, 8, 32, 1, kSmem, false},
        {"+ the cluster's two barriers, nothing exchanged", kClusterSync, 112, 8, 32, 1, kSmem,
         false},
        {"+ the cluster's merge, each element's 8 peer loads at once", kClusterMergeAllPeers, 112,
         8, 32, 1, kSmem, false},
        {"+ the cluster's merge, the peers in turn from rank j's own", kClusterMergeRotated, 112,
         8, 32, 1, kSmem, false},
        {"+ the cluster's merge, the peers in turn from rank 0", kClusterMerge, 112, 8, 32, 1,
         kSmem, false},
        {"+ the cluster's merge, 16-byte ld.shared::cluster, all at once", kClusterMergeV4, 112, 8,
         32, 1, kSmem, false},
        {"+ the cluster's merge, pushed: a bulk copy a peer", kClusterMergePush, 112, 8, 32, 1,
         kSmem, false},
        {"+ the cross-cluster merge (the kernel's skeleton)", kGlobalMerge, 112, 8, 32, 1, kSmem,
         false},
        {"  the same, the cluster's merge pushed", kGlobalMergePush, 112, 8, 32, 1, kSmem, false},
        {"  the same, PDL", kGlobalMerge, 112, 8, 32, 1, kSmem, true},
        {"  the skeleton, a tile in all 112 blocks (S = 3.5K)", kGlobalMerge, 112, 8, 112, 1,
         kSmem, false},
        {"clusters of 16: a tile read in 32 blocks", kRead, 112, 16, 32, 1, kSmem, false},
        {"  + the cluster's merge", kClusterMerge, 112, 16, 32, 1, kSmem, false},
        {"  + the cluster's merge, pushed", kClusterMergePush, 112, 16, 32, 1, kSmem, false},
        {"  + the cross-cluster merge", kGlobalMerge, 112, 16, 32, 1, kSmem, false},
        {"one cluster of 16, 2 tiles a block (S = 1K), its merge only", kClusterMerge, 16, 16, 16,
         2, kSmem, false},
        {"  the same, PDL", kClusterMerge, 16, 16, 16, 2, kSmem, true},
        {"one cluster of 8, 2 tiles a block (S = 512), its merge only", kClusterMerge, 8, 8, 8, 2,
         kSmem, false},
        {"  the same, pushed", kClusterMergePush, 8, 8, 8, 2, kSmem, false},
    };
    printf("%-62s %8.2f us\n", "empty, 1 block of 32 threads",
           graph_per_launch_us(s, kLaunches, kReps, [&](int i) { one_block_empty<<<1, 32, 0, s>>>(b.out, i); }));
    for (const Row &r : rows)
        printf("%-62s %8.2f us\n", r.what,
               graph_per_launch_us(s, kLaunches, kReps, [&](int i) { launch(s, b, i, r); }));
    CK(cudaGetLastError());
    return 0;
}
