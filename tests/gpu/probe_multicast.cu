// Probe: does a cluster of 2 stream a shared tile faster with multicast
// bulk copies than each block alone?  The MLA core's 128-head shape: each
// block holds two stages of a 64-row tile in nine 8 KB chunks; both blocks
// of a cluster read the same tiles (as the two head groups of a split do).
// No compute: a stage is refilled as soon as its tile has landed.  Modes:
//   0 own:        each block copies all nine chunks of every tile itself
//   1 own+sync:   as 0, but a stage is refilled only once the peer has
//                 landed it too (a remote mbarrier arrival), as the pairs do
//   2 multicast:  each block copies alternate chunks, multicast to both, a
//                 stage refilled once both have landed it (mode 1's signal)
//   3 half:       each block copies only its alternate chunks, to itself
//                 (half the bytes, no signal: what mode 2 moves from L2)
//   4, 5:         modes 1 and 2 with the MLA core's 2D boxes instead (a
//                 cache of rows of 576 bf16; a chunk is 64 rows x 64 columns,
//                 128-byte swizzle; the runtime's map)
// Prints per mode the median time of 20 launches and the bytes the SMs
// received per second.  Not part of the tests; measured once (docs/performance.md, stop 75).
//   nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -O3 -o probe_multicast tests/gpu/probe_multicast.cu -lcuda
//   ./probe_multicast
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cooperative_groups.h>
#include <cuda.h>
#include "probe_graph.cuh"
#include "probe_mbar.cuh"
namespace cg = cooperative_groups;

constexpr int kChunk = 8192, kChunks = 9, kTileBytes = kChunk * kChunks, kTiles = 64;
struct Smem {
    alignas(1024) unsigned char stage[2][kTileBytes];
    uint64_t full[2], empty[2];
};

__device__ void mbar_arrive_peer(uint64_t *b, unsigned rank)
{
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_u32(b)), "r"(rank));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}
__device__ void copy_multicast(void *dst, const void *src, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], "
                 "%2, [%3], %4;" ::"r"(smem_u32(dst)),
                 "l"(src), "r"(kChunk), "r"(smem_u32(bar)), "h"((unsigned short)3)
                 : "memory");
}

__device__ void box(void *dst, const CUtensorMap *map, int c0, int c1, uint64_t *bar, bool multicast)
{
    if (multicast)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                     "[%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_u32(dst)),
                     "l"(map), "r"(c0), "r"(c1), "r"(smem_u32(bar)), "h"((unsigned short)3)
                     : "memory");
    else
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                     "[%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(dst)),
                     "l"(map), "r"(c0), "r"(c1), "r"(smem_u32(bar))
                     : "memory");
}

template <int MODE> __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128, 1)
    stream(const unsigned char *src, unsigned *sink, const __grid_constant__ CUtensorMap map)
{
    extern __shared__ __align__(1024) unsigned char raw[];
    Smem &sm = *reinterpret_cast<Smem *>(raw + (1024 - smem_u32(raw) % 1024) % 1024);   // (the swizzle's 1024-byte atoms)
    cg::cluster_group cl = cg::this_cluster();
    const unsigned rank = cl.block_rank();
    const unsigned char *tiles = src + (size_t)(blockIdx.x / 2) * kTiles * kTileBytes;   // the cluster's
    const bool one = threadIdx.x == 0;
    if (one) {
        for (int s = 0; s < 2; s++)
            mbar_init(&sm.full[s], 1), mbar_init(&sm.empty[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (int t = 0; t < 2; t++)
            mbar_expect(&sm.full[t], MODE == 3 ? (rank ? 4 : 5) * kChunk : kTileBytes);
    }
    cl.sync();
    auto issue = [&](int t) {
        const unsigned char *tile = tiles + (size_t)t * kTileBytes;
        const int row = ((int)(blockIdx.x / 2) * kTiles + t) * 64;   // the 2D modes' first cache row
        for (int c = 0; c < kChunks; c++) {
            if (MODE == 4)
                box(sm.stage[t & 1] + c * kChunk, &map, c * 64, row, &sm.full[t & 1], false);
            else if (MODE == 5) {
                if (c % 2 == (int)rank)
                    box(sm.stage[t & 1] + c * kChunk, &map, c * 64, row, &sm.full[t & 1], true);
            } else if (MODE == 0 || MODE == 1)
                bulk(sm.stage[t & 1] + c * kChunk, tile + c * kChunk, kChunk, &sm.full[t & 1]);
            else if (c % 2 == (int)rank)
                MODE == 2 ? copy_multicast(sm.stage[t & 1] + c * kChunk, tile + c * kChunk, &sm.full[t & 1])
                          : bulk(sm.stage[t & 1] + c * kChunk, tile + c * kChunk, kChunk, &sm.full[t & 1]);
        }
    };
    unsigned acc = 0;
    if (one) {
        issue(0);
        issue(1);
        for (int t = 0; t < kTiles; t++) {
            const int s = t & 1;
            mbar_wait<true>(&sm.full[s], (unsigned)(t >> 1) & 1u);
            acc += sm.stage[s][(t * 131) % kTileBytes];   // (the tile read)
            if (t + 2 < kTiles) {
                mbar_expect(&sm.full[s], MODE == 3 ? (rank ? 4 : 5) * kChunk : kTileBytes);
                if (MODE == 1 || MODE == 2 || MODE >= 4) {   // both blocks have the stage landed (and read)
                    mbar_arrive_peer(&sm.empty[s], rank ^ 1u);
                    mbar_wait<true>(&sm.empty[s], (unsigned)(t >> 1) & 1u);
                }
                issue(t + 2);
            }
        }
        sink[blockIdx.x] = acc;
    }
    cl.sync();   // (no block leaves while a peer's copy may still land in it)
}

template <int MODE> float run(const unsigned char *src, unsigned *sink, const CUtensorMap &map, int blocks)
{
    const int smem = (int)sizeof(Smem) + 1024;
    CK(cudaFuncSetAttribute(stream<MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int i = 0; i < 21; i++) {
        CK(cudaEventRecord(a));
        stream<MODE><<<blocks, 128, smem>>>(src, sink, map);
        CK(cudaEventRecord(b));
        CK(cudaGetLastError());   // (the launch)
        CK(cudaEventSynchronize(b));
        float m;
        CK(cudaEventElapsedTime(&m, a, b));
        if (i)
            ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

int main()
{
    const int blocks = 132;   // 66 clusters: every SM a block
    const size_t bytes = (size_t)(blocks / 2) * kTiles * kTileBytes;
    unsigned char *src;
    unsigned *sink;
    CK(cudaMalloc(&src, bytes));
    CK(cudaMemset(src, 1, bytes));
    CK(cudaMalloc(&sink, blocks * sizeof(unsigned)));
    // the same bytes as a cache of rows of 576 bf16, chunks of 64 x 64 (the runtime's cache_chunks map)
    CUtensorMap map;
    const cuuint64_t dims[2] = {576, bytes / 1152}, strides[1] = {1152};
    const cuuint32_t boxdim[2] = {64, 64}, elem[2] = {1, 1};
    if (cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, src, dims, strides, boxdim, elem,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        std::printf("tensor map failed\n");
        return 1;
    }
    const char *names[] = {"own", "own+sync", "multicast", "half", "2D own+sync", "2D multicast"};
    float t[6] = {run<0>(src, sink, map, blocks), run<1>(src, sink, map, blocks), run<2>(src, sink, map, blocks),
                  run<3>(src, sink, map, blocks), run<4>(src, sink, map, blocks), run<5>(src, sink, map, blocks)};
    for (int m = 0; m < 6; m++) {
        const double landed = m == 3 ? bytes : 2.0 * bytes;   // bytes the SMs received
        std::printf("%-13s %8.1f us  %6.0f GB/s landed in shared memory  %6.0f GB/s of distinct tiles\n",
                    names[m], t[m] * 1e3, landed / (t[m] * 1e-3) / 1e9, bytes / (t[m] * 1e-3) / 1e9);
    }
    return 0;
}
