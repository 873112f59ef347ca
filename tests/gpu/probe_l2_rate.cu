// Probe: how many bytes a second can the SMs pull from L2 the way the
// portable GEMM (templates/overlap_gemm_portable.in, sm_90) loads its
// operands: one block of 256 threads an SM, cp.async.cg of 16 bytes into
// shared memory, a block of 48 KB (a 128 x 256 tile's K block of 64: 16 KB
// of A's rows, 32 KB of W's) in each of 4 stages, 3 in flight, one block
// barrier a stage, and no math.  Its 128 x 256 tiles need (128 + 256) x 64
// x 2 bytes for each 128 x 256 x 64 x 2 flops: 1 byte for 85.3 flops, so
// this rate over 85.3 is that tile's ceiling from L2 alone.  A working set
// that fits in L2 (the GEMM's A and W at M = 4096, N = 8192, K = 1024:
// 24 MB) against one that does not (1 GB: HBM); a piece as 384 rows of 128
// bytes, contiguous or 2048 bytes apart (the GEMM's rows at K = 1024).
// Each block reads pieces chosen by a stride over the working set, so
// blocks do not march in step.  Not part of the tests; docs/performance.md
// (the portable GEMM, stop 42).
//   nvcc -std=c++17 -arch=sm_90a -O3 -o probe_l2_rate tests/gpu/probe_l2_rate.cu && ./probe_l2_rate
#include <algorithm>
#include <cstdio>
#include <vector>

constexpr int kThreads = 256, kPiece = 48 * 1024, kStages = 4;
constexpr int kVecs = kPiece / 16 / kThreads;   // a thread's 16-byte copies a piece

__device__ __forceinline__ void copy16(unsigned dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wait_group()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// `pieces` pieces of the working set (`span` pieces long) a block, piece
// i of block b at (b * 7919 + i * 131) mod span; a piece's 128-byte rows
// `pitch` bytes apart (pitch / 128 pieces side by side in 384 rows).
__global__ void __launch_bounds__(kThreads, 1) stream(const char *data, long long span, int pitch,
                                                      int pieces, unsigned *sink)
{
    extern __shared__ __align__(128) char smem[];
    const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    const int tid = threadIdx.x;
    auto issue = [&](int i) {
        if (i < pieces) {
            const long long p = ((long long)blockIdx.x * 7919 + (long long)i * 131) % span;
            const int across = pitch / 128;
            const char *src = data + p / across * (kPiece / 128) * pitch + p % across * 128 +
                              tid / 8 * pitch + tid % 8 * 16;
            const unsigned dst = base + i % kStages * kPiece + tid * 16;
#pragma unroll
            for (int v = 0; v < kVecs; v++)   // (rows kThreads / 8 apart)
                copy16(dst + v * kThreads * 16, src + (long long)v * kThreads / 8 * pitch);
        }
        commit();
    };
    for (int i = 0; i < kStages - 1; i++)
        issue(i);
    unsigned x = 0;
    for (int i = 0; i < pieces; i++) {
        wait_group<kStages - 2>();
        __syncthreads();   // everyone's copies of piece i landed; piece i - 1's stage is free
        x ^= *reinterpret_cast<const unsigned *>(smem + i % kStages * kPiece + tid * 16);
        issue(i + kStages - 1);
    }
    wait_group<0>();
    if (x == 0x9e3779b9u)   // (never, but the compiler cannot know)
        sink[blockIdx.x] = x;
}

static bool ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        fprintf(stderr, "probe_l2_rate: %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

int main()
{
    cudaDeviceProp prop;
    if (!ok(cudaGetDeviceProperties(&prop, 0), "device"))
        return 1;
    const long long big = 1ll << 30;
    char *data;
    unsigned *sink;
    if (!ok(cudaMalloc(&data, big), "alloc") || !ok(cudaMalloc(&sink, 4096 * 4), "alloc") ||
        !ok(cudaMemset(data, 1, big), "memset") ||
        !ok(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 kStages * kPiece),
            "smem"))
        return 1;
    printf("%s, %d SMs, L2 %d MB; one block of %d threads an SM, cp.async.cg 16 B, "
           "%d stages of %d KB\n",
           prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, kThreads, kStages,
           kPiece >> 10);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    for (long long set : {24ll << 20, 40ll << 20, big})
        for (int pitch : {128, 2048}) {
            const long long span = set / kPiece;
            const int grid = prop.multiProcessorCount, pieces = 2000;
            std::vector<float> ms;
            for (int r = 0; r < 7; r++) {
                cudaEventRecord(e0);
                stream<<<grid, kThreads, kStages * kPiece>>>(data, span, pitch, pieces, sink);
                cudaEventRecord(e1);
                if (!ok(cudaEventSynchronize(e1), "run"))
                    return 1;
                float t;
                cudaEventElapsedTime(&t, e0, e1);
                ms.push_back(t);
            }
            std::sort(ms.begin(), ms.end());
            const double bytes = (double)grid * pieces * kPiece;
            printf("working set %5lld MB, rows %4d B apart: median %.3f ms, %.2f TB/s (best %.2f); "
                   "a 128 x 256 bf16 tile's ceiling from it: %.0f TFLOP/s\n",
                   set >> 20, pitch, ms[3], bytes / ms[3] * 1e-9, bytes / ms[0] * 1e-9,
                   bytes / ms[3] * 1e-9 * 85.33);
        }
    return 0;
}
