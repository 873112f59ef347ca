// Probe: how fast does the decode ring's byte stream arrive when the consumers
// do nothing but read each stage?  It replays the ring form's per-CTA copy
// pattern (Llama-2-7B dims, batch 1, two clusters of 2 per head: 128 CTAs,
// 6 stages of 32 KB) with no arithmetic and no exchanges, and variants of it,
// so the delivery rate of the pattern itself is measured apart from the
// kernel's dependencies.  Not a test: it prints GB/s per variant.
//
//   nvcc -arch=sm_90a -O3 -o probe tests/gpu/probe_ring_stream.cu && ./probe
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>
#include "probe_mbar.cuh"

namespace {
constexpr int H = 4096, NH = 32, HD = 128, SMAX = 16384, CPH = 4;
constexpr int STAGE = 32768, NST = 6, THREADS = 512, WARPS = THREADS / 32;
constexpr int TOK = STAGE / (2 * HD * 2);   // tokens per stage (K then V)
constexpr size_t WQKV_BYTES = (size_t)3 * NH * HD * H * 2;
constexpr size_t WO_BYTES = (size_t)H * NH * HD * 2;
constexpr size_t KV_BYTES = (size_t)NH * SMAX * HD * 2;   // one of K, V (batch 1)

enum Mode {
    RING_ALL = 0,      // W_q rows, KV tiles, k/v rows, W_o rows: the kernel's order
    RING_WQKV = 1,     // only the W_qkv rows, in the kernel's per-CTA pattern
    RING_KV = 2,       // only the KV tiles
    RING_WQKV_FLAT = 3,  // the same bytes as RING_WQKV, each CTA one contiguous run
    LDG_WQKV = 4,      // RING_WQKV's addresses by plain 16-byte loads, no ring
    LDG_FLAT = 5,      // W_qkv's bytes grid-strided by 16-byte loads: the read ceiling's pattern
};

struct Bufs {
    const uint8_t *wqkv, *wo, *k, *v;
};

// Row g (0..3*HD) of head h's projection rows, as the kernel maps them (MHA).
__device__ __forceinline__ size_t wrow(int h, int g)
{
    return g < HD ? (size_t)h * HD + g : (size_t)NH * HD + (g < 2 * HD ? 0 : NH * HD) + h * HD + g % HD;
}

__global__ void __launch_bounds__(THREADS + 32, 1) probe(Bufs b, int mode, int S, float *sink)
{
    extern __shared__ __align__(128) uint8_t ring[];
    __shared__ uint64_t full[NST], empty[NST];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int head = blockIdx.x / CPH, rank = blockIdx.x % CPH;
    if (tid == 0) {
        for (int i = 0; i < NST; i++) {
            mbar_init(&full[i], 1);
            mbar_init(&empty[i], WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // the stages this CTA streams, as (source, bytes) lists of up to 4 copies
    const int rq = HD / CPH, rkv = 2 * HD / CPH, r1 = STAGE / (H * 2);
    const int chunk = S / CPH, t0 = rank * chunk, t1 = t0 + chunk;
    const int grid = gridDim.x, ro = (H + grid - 1 - blockIdx.x) / grid;
    const bool wqkv = mode != RING_KV, kv = mode == RING_ALL || mode == RING_KV, wo = mode == RING_ALL;
    const int n1a = wqkv ? rq / r1 : 0, nkv = kv ? (t1 - t0 + TOK - 1) / TOK : 0;
    const int n1b = wqkv ? rkv / r1 : 0, n3 = wo ? (ro + 3) / 4 : 0;
    const int total = n1a + nkv + n1b + n3;
    if (mode == LDG_FLAT) {
        float acc = 0.f;
        const uint4 *p = reinterpret_cast<const uint4 *>(b.wqkv);
        const size_t n = WQKV_BYTES / 16, step = (size_t)gridDim.x * blockDim.x;
        size_t i = (size_t)blockIdx.x * blockDim.x + tid;
        for (; i + 3 * step < n; i += 4 * step) {
            uint4 w[4];
#pragma unroll
            for (int u = 0; u < 4; u++)
                w[u] = __ldcs(p + i + u * step);
#pragma unroll
            for (int u = 0; u < 4; u++)
                acc += __uint_as_float(w[u].x ^ w[u].y ^ w[u].z ^ w[u].w);
        }
        for (; i < n; i += step) {
            const uint4 w = __ldcs(p + i);
            acc += __uint_as_float(w.x ^ w.y ^ w.z ^ w.w);
        }
        if (acc == 1.2345f)
            *sink = acc;
        return;
    }
    if (mode == LDG_WQKV) {
        // every consumer and the producer warp load 16 B at a time, 8 in flight
        float acc = 0.f;
        const int rows = n1a * r1 + n1b * r1;
        for (int i = 0; i < rows; i++) {
            const int g = i < rq ? rank * rq + i : HD + rank * rkv + (i - rq);
            const uint4 *row = reinterpret_cast<const uint4 *>(b.wqkv + wrow(head, g) * H * 2);
            for (int c = tid; c < H * 2 / 16; c += blockDim.x) {
                const uint4 w = __ldcs(row + c);
                acc += __uint_as_float(w.x ^ w.y ^ w.z ^ w.w);
            }
        }
        if (acc == 1.2345f)
            *sink = acc;
        return;
    }
    if (warp == WARPS) {
        for (int it = 0; it < total; it++) {
            const int slot = it % NST;
            if (it >= NST)
                mbar_wait(&empty[slot], ((it / NST) + 1) & 1);
            uint8_t *dst = ring + (size_t)slot * STAGE;
            if (lane != 0)
                continue;
            if (it < n1a || (it >= n1a + nkv && it < n1a + nkv + n1b)) {
                const int j = it < n1a ? it : it - nkv;   // stage in the W_qkv stream
                const uint8_t *src;
                if (mode == RING_WQKV_FLAT)
                    src = b.wqkv + ((size_t)blockIdx.x * (n1a + n1b) + j) * STAGE;
                else {
                    const int g = j < n1a ? rank * rq + j * r1 : HD + rank * rkv + (j - n1a) * r1;
                    src = b.wqkv + wrow(head, g) * H * 2;
                }
                mbar_expect(&full[slot], STAGE);
                bulk(dst, src, STAGE, &full[slot]);
            } else if (it < n1a + nkv) {
                const int t = t0 + (it - n1a) * TOK, n = min(TOK, t1 - t) * HD * 2;
                const size_t off = ((size_t)head * SMAX + t) * HD * 2;
                mbar_expect(&full[slot], 2 * n);
                bulk(dst, b.k + off, n, &full[slot]);
                bulk(dst + STAGE / 2, b.v + off, n, &full[slot]);
            } else {
                const int r0 = (it - n1a - nkv - n1b) * 4, rows = min(4, ro - r0);
                mbar_expect(&full[slot], rows * NH * HD * 2);
                for (int r = 0; r < rows; r++)
                    bulk(dst + r * NH * HD * 2,
                         b.wo + (size_t)(blockIdx.x + (r0 + r) * grid) * NH * HD * 2, NH * HD * 2,
                         &full[slot]);
            }
        }
        return;
    }
    float acc = 0.f;
    for (int it = 0; it < total; it++) {
        const int slot = it % NST;
        mbar_wait(&full[slot], (it / NST) & 1);
        const uint4 *st = reinterpret_cast<const uint4 *>(ring + (size_t)slot * STAGE);
#pragma unroll
        for (int i = 0; i < STAGE / 16 / THREADS; i++) {
            const uint4 w = st[tid + i * THREADS];
            acc += __uint_as_float(w.x ^ w.y ^ w.z ^ w.w);
        }
        __syncwarp();
        if (lane == 0)
            mbar_arrive(&empty[slot]);
    }
    if (acc == 1.2345f)
        *sink = acc;
}

double bytes_of(int mode, int S)
{
    const double wqkv = (double)3 * HD * H * 2 * NH, kv = 2.0 * NH * S * HD * 2;
    switch (mode) {
    case RING_ALL: return wqkv + kv + (double)WO_BYTES;
    case RING_KV: return kv;
    default: return wqkv;
    }
}
} // namespace

int main()
{
    const int sets = 3;   // buffer sets rotated: 3 x 400 MB, far past L2
    std::vector<Bufs> bufs(sets);
    for (auto &b : bufs) {
        uint8_t *p;
        if (cudaMalloc(&p, WQKV_BYTES + WO_BYTES + 2 * KV_BYTES) != cudaSuccess)
            return 1;
        cudaMemset(p, 0x11, WQKV_BYTES + WO_BYTES + 2 * KV_BYTES);
        b = {p, p + WQKV_BYTES, p + WQKV_BYTES + WO_BYTES, p + WQKV_BYTES + WO_BYTES + KV_BYTES};
    }
    float *sink;
    cudaMalloc(&sink, 4);
    cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, NST * STAGE);
    cudaStream_t s;
    cudaStreamCreate(&s);
    struct Case {
        const char *name;
        int mode, S, grid;
    } cases[] = {
        {"ring: all phases, S=1K", RING_ALL, 1024, 128},
        {"ring: all phases, S=16K", RING_ALL, 16384, 128},
        {"ring: W_qkv rows only", RING_WQKV, 1024, 128},
        {"ring: W_qkv bytes, one contiguous run per CTA", RING_WQKV_FLAT, 1024, 128},
        {"ring: KV only, S=1K", RING_KV, 1024, 128},
        {"ring: KV only, S=16K", RING_KV, 16384, 128},
        {"16-byte loads: W_qkv rows only", LDG_WQKV, 1024, 128},
        {"16-byte loads: W_qkv grid-strided, 128 CTAs", LDG_FLAT, 1024, 128},
        {"16-byte loads: W_qkv grid-strided, 132 CTAs", LDG_FLAT, 1024, 132},
    };
    const int launches = 24;
    for (const Case &c : cases) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        for (int i = 0; i < launches; i++)
            probe<<<c.grid, THREADS + 32, NST * STAGE, s>>>(bufs[i % sets], c.mode, c.S, sink);
        cudaStreamEndCapture(s, &g);
        if (cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
            printf("%s: instantiate failed\n", c.name);
            return 1;
        }
        cudaGraphLaunch(ge, s);   // warm-up
        cudaStreamSynchronize(s);
        std::vector<float> us;
        cudaEvent_t a, z;
        cudaEventCreate(&a);
        cudaEventCreate(&z);
        for (int r = 0; r < 7; r++) {
            cudaEventRecord(a, s);
            cudaGraphLaunch(ge, s);
            cudaEventRecord(z, s);
            cudaEventSynchronize(z);
            float ms;
            cudaEventElapsedTime(&ms, a, z);
            us.push_back(ms * 1000.f / launches);
        }
        const cudaError_t e = cudaGetLastError();
        std::sort(us.begin(), us.end());
        const double gbs = bytes_of(c.mode, c.S) / (us[3] * 1e-6) / 1e9;
        printf("%-50s %8.2f us (min %.2f max %.2f) %7.0f GB/s%s%s\n", c.name, us[3], us[0], us[6],
               gbs, e ? " error: " : "", e ? cudaGetErrorString(e) : "");
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
    }
    return 0;
}
