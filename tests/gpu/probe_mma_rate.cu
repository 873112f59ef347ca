// Probe: the tensor cores' rate through mma.sync m16n8k16 (bf16 in, fp32
// sums) on this GPU, with no memory traffic: the ceiling of the overlap
// GEMM's portable form on sm_90 (templates/overlap_gemm_portable.in), which
// has no wgmma.  Each warp keeps `kChains` independent accumulators (so the
// mma's latency is hidden) and multiplies register operands in a loop;
// blocks of 4, 8 or 16 warps, one or two blocks an SM.  Prints the rate
// per configuration and the best.  Not part of the tests; the number is
// docs/performance.md's ceiling for that form.
//   nvcc -std=c++17 -arch=sm_90a -O3 -o probe_mma_rate tests/gpu/probe_mma_rate.cu && ./probe_mma_rate
#include <cstdio>

#include <cuda_runtime.h>

constexpr int kChains = 16, kIters = 4096;

__global__ void mma_loop(float *out, unsigned seed)
{
    float d[kChains][4] = {};
    unsigned a[4], b[2];
    for (int i = 0; i < 4; i++)
        a[i] = seed * (threadIdx.x + 1) + i;   // (bf16 pairs: any bits that are finite)
    a[0] &= 0x3f803f80u, a[1] &= 0x3f803f80u, a[2] &= 0x3f803f80u, a[3] &= 0x3f803f80u;
    b[0] = 0x3f803f80u & (seed + threadIdx.x), b[1] = 0x3f803f80u & (seed ^ threadIdx.x);
    for (int it = 0; it < kIters; it++)
#pragma unroll
        for (int c = 0; c < kChains; c++)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    float s = 0;
    for (int c = 0; c < kChains; c++)
        s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    if (s == 12345.f)   // (never: keeps the products live)
        out[threadIdx.x] = s;
}

int main()
{
    int sms = 0, clock_khz = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    float *out;
    cudaMalloc(&out, 1024 * sizeof(float));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    double best = 0;
    for (int warps : {4, 8, 16})
        for (int per_sm : {1, 2}) {
            const int grid = sms * per_sm, threads = 32 * warps;
            mma_loop<<<grid, threads>>>(out, 1);   // warm-up
            float ms_best = 1e30f;
            for (int rep = 0; rep < 5; rep++) {
                cudaEventRecord(e0);
                mma_loop<<<grid, threads>>>(out, rep + 2);
                cudaEventRecord(e1);
                cudaEventSynchronize(e1);
                float ms = 0;
                cudaEventElapsedTime(&ms, e0, e1);
                ms_best = ms < ms_best ? ms : ms_best;
            }
            const double flop = 2.0 * 16 * 8 * 16 * kChains * kIters * (double)grid * warps;
            const double tflops = flop / (ms_best * 1e-3) * 1e-12;
            best = tflops > best ? tflops : best;
            printf("mma.sync m16n8k16 bf16: %2d warps a block, %d a SM (%d SMs): %7.1f TFLOP/s\n",
                   warps, per_sm, sms, tflops);
        }
    const cudaError_t err = cudaGetLastError();
    printf("best %.1f TFLOP/s (%s; reported clock %d MHz)\n", best,
           err == cudaSuccess ? "ok" : cudaGetErrorString(err), clock_khz / 1000);
    return err == cudaSuccess ? 0 : 1;
}
