// Probe: how fast can the two blocks of a cluster exchange 128 KB (the fp32
// partial output of a 64-head MLA block)?  Per block, in cycles: local shared
// loads (the reference), loads of the peer's shared memory (DSMEM, generic
// pointers from map_shared_rank, 16 loads in flight a thread), stores into
// the peer's shared memory then a cluster barrier, and the global-memory way
// (write 128 KB, cluster barrier, read the peer's 128 KB through L2), at 2
// and at 128 blocks.  Not part of the tests; measured once on the H200:
// docs/performance.md, "Fixed costs".
//   nvcc -std=c++17 -arch=sm_90a -O3 -o probe_dsmem tests/gpu/probe_dsmem.cu && ./probe_dsmem
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
constexpr int kBytes = 128 * 1024, kThreads = 256, kN = kBytes / 16;
__device__ unsigned long long g_cyc[4][264];
template <int MODE> __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads, 1) k(float4 *ws, float *sink)
{
    extern __shared__ float4 sm[];   // 128 KB
    cg::cluster_group cl = cg::this_cluster();
    const int peer = cl.block_rank() ^ 1;
    for (int i = threadIdx.x; i < kN; i += kThreads) sm[i] = make_float4(i, 1, 2, 3);
    cl.sync();
    long long t0 = clock64();
    float4 acc = make_float4(0, 0, 0, 0);
    if (MODE == 0) {   // remote loads, all issued then summed (16 per thread per batch)
        const float4 *src = cl.map_shared_rank(sm, peer);
        for (int base = 0; base < kN; base += kThreads * 16) {
            float4 v[16];
#pragma unroll
            for (int u = 0; u < 16; u++) v[u] = src[base + u * kThreads + threadIdx.x];
#pragma unroll
            for (int u = 0; u < 16; u++) acc.x += v[u].x, acc.y += v[u].y, acc.z += v[u].z, acc.w += v[u].w;
        }
        cl.sync();
    } else if (MODE == 1) {   // remote stores into the peer (the peer's buffer overwritten)
        float4 *dst = cl.map_shared_rank(sm, peer);
        for (int i = threadIdx.x; i < kN; i += kThreads) dst[i] = make_float4(i, 2, 3, 4);
        cl.sync();
        for (int i = threadIdx.x; i < kN; i += kThreads) { float4 v = sm[i]; acc.x += v.x; }
    } else if (MODE == 2) {   // global: write own 128 KB, cluster sync, read the peer's from L2
        float4 *mine = ws + (size_t)blockIdx.x * kN, *theirs = ws + (size_t)(blockIdx.x ^ 1) * kN;
        for (int i = threadIdx.x; i < kN; i += kThreads) mine[i] = sm[i];
        cl.sync();
        for (int base = 0; base < kN; base += kThreads * 16) {
            float4 v[16];
#pragma unroll
            for (int u = 0; u < 16; u++) v[u] = __ldcg(&theirs[base + u * kThreads + threadIdx.x]);
#pragma unroll
            for (int u = 0; u < 16; u++) acc.x += v[u].x, acc.y += v[u].y, acc.z += v[u].z, acc.w += v[u].w;
        }
    } else {   // local smem reads (reference)
        for (int base = 0; base < kN; base += kThreads * 16) {
            float4 v[16];
#pragma unroll
            for (int u = 0; u < 16; u++) v[u] = sm[base + u * kThreads + threadIdx.x];
#pragma unroll
            for (int u = 0; u < 16; u++) acc.x += v[u].x, acc.y += v[u].y, acc.z += v[u].z, acc.w += v[u].w;
        }
        __syncthreads();
    }
    long long t1 = clock64();
    if (threadIdx.x == 0 && blockIdx.x < 264) g_cyc[MODE][blockIdx.x] = t1 - t0;
    if (acc.x == 1234.5f) sink[0] = acc.y + acc.z + acc.w;
    cl.sync();
}
template <int MODE> void run(int blocks, float4 *ws, float *sink, const char *name)
{
    cudaFuncSetAttribute(k<MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
    for (int r = 0; r < 3; r++) k<MODE><<<blocks, kThreads, kBytes>>>(ws, sink);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    cudaEventRecord(a);
    for (int r = 0; r < 20; r++) k<MODE><<<blocks, kThreads, kBytes>>>(ws, sink);
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b);
    unsigned long long c[264]; cudaMemcpyFromSymbol(c, g_cyc, sizeof c, MODE * sizeof c);
    double avg = 0; for (int i = 0; i < blocks; i++) avg += c[i]; avg /= blocks;
    printf("%-28s blocks %3d: %7.0f cycles a block for 128 KB = %5.1f B/clk/SM (%.2f us at 1.98 GHz); kernel %.2f us (%s)\n", name, blocks, avg,
           kBytes / avg, avg / 1980.0, ms * 1000 / 20, cudaGetErrorString(cudaGetLastError()));
}
int main()
{
    float4 *ws; float *sink;
    cudaMalloc(&ws, 264ull * kBytes); cudaMalloc(&sink, 16);
    for (int blocks : {2, 128}) {
        run<3>(blocks, ws, sink, "local smem loads");
        run<0>(blocks, ws, sink, "remote (DSMEM) loads");
        run<1>(blocks, ws, sink, "remote (DSMEM) stores+sync");
        run<2>(blocks, ws, sink, "global write+sync+L2 read");
    }
    return 0;
}
