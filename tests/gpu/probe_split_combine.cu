// Probe: the MLA core's B = 1 merge in one level over every split (issue
// 8's intercept).  The 16-head B = 1 kernel merged its 112 splits on chip,
// in clusters of 8 over DSMEM and then across clusters through a ticket;
// leaving both merges out took it from 10.1 to 5.2 us at S = 1K
// (docs/performance.md, "Where the B = 1 intercept goes").  Here a split
// kernel shaped like it (256 threads, 229088 bytes of shared memory, one
// block per SM, no clusters, so all 132 SMs can take a split) reads its
// tiles, writes a 16 x 512 bf16 partial and 16 (max, sum) pairs, and the
// active splits' partials are merged by (row, 64-column slice): by a
// combine kernel of 16 x 8 blocks launched plain, or with programmatic
// dependent launch (the split grid triggering at its top or after its
// stores; the combine waits in griddepcontrol.wait), or in the split kernel
// itself after a grid barrier (a cooperative launch).  Per launch, median
// of 15 CUDA-graph replays of 256 steps, every split reading its own region
// of a 1 GB buffer.  On an H200 (2026-12-04) every form added 2.8-3.8 us to
// the split alone, PDL triggered at the top 18 us at 132 splits (the
// combine's blocks took SMs the split grid still needed); the in-kernel
// form is what mla_decode.in's SPREAD merge does.  Not part of the tests.
//   nvcc -std=c++17 -arch=sm_90a -O3 -o probe_split_combine tests/gpu/probe_split_combine.cu
#include "probe_graph.cuh"

constexpr int kThreads = 256, kSmem = 229088, kMaxSplits = 132;
constexpr int kTileVecs = 32 * 1152 / 16;   // a 32-key tile's 16-byte pieces: 9 a thread
constexpr int kRows = 16, kCols = 512, kSlices = 8, kCombineThreads = 128;
constexpr int kLaunches = 256, kReps = 15;
constexpr size_t kBuffer = size_t(1) << 30;

__device__ void combine_slice(const uint4 *__restrict__ part, const float2 *__restrict__ ml,
                              int active, int slot, float *__restrict__ out);

// trigger: 1 lets the combine be scheduled at the top, 2 after the partial's
// stores; 3: no combine kernel, a grid barrier and blocks 0..127 merge a
// (row, slice) each (a cooperative launch: every block resident)
__global__ void __launch_bounds__(kThreads, 1)
split(const uint4 *__restrict__ data, size_t regions, int region, int per, int tiles, int trigger,
      uint4 *__restrict__ part, float2 *__restrict__ ml, unsigned *__restrict__ bar,
      float *__restrict__ out)
{
    if (trigger == 1)   // the combine may be scheduled now; it waits for this grid's writes
        asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    constexpr int kPer = kTileVecs / kThreads;
    float acc = 0.f;
    const int t0 = blockIdx.x * per, t1 = min(t0 + per, tiles);
    for (int t = t0; t < t1; t += 2) {   // two tiles' loads in flight at once
        uint4 v[2][kPer];
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const size_t base = ((size_t)region * kMaxSplits * 16 + t + u) % regions * kTileVecs;
#pragma unroll
            for (int i = 0; i < kPer; i++)
                if (t + u < t1)
                    v[u][i] = __ldcs(data + base + i * kThreads + threadIdx.x);
        }
#pragma unroll
        for (int u = 0; u < 2; u++)
#pragma unroll
            for (int i = 0; i < kPer; i++)
                if (t + u < t1)
                    acc += __uint_as_float(v[u][i].x ^ v[u][i].y ^ v[u][i].z ^ v[u][i].w) * 1e-30f;
    }
    // the partial: 16 rows x 512 bf16 (1024 16-byte pieces), and the rows' (max, sum)
    const unsigned w = __float_as_uint(acc) >> 16 | (__float_as_uint(acc) & 0xffff0000u);
    for (int i = threadIdx.x; i < kRows * kCols / 8; i += kThreads)
        part[(size_t)blockIdx.x * (kRows * kCols / 8) + i] = make_uint4(w, w ^ i, w, w);
    if (threadIdx.x < kRows)
        ml[blockIdx.x * kRows + threadIdx.x] =
            make_float2(acc + threadIdx.x, t0 < t1 ? 1.f + threadIdx.x : 0.f);
    if (trigger == 2) {
        __syncthreads();
        asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    }
    if (trigger != 3)
        return;
    // one count never reset: block 0 adds 2^31 - (n - 1), the others 1, so
    // its top bit flips once every block has arrived
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
        unsigned old;
        asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(bar), "r"(add) : "memory");
        unsigned now;
        do
            asm volatile("ld.acquire.gpu.u32 %0, [%1];\n" : "=r"(now) : "l"(bar) : "memory");
        while ((now ^ old) >> 31 == 0);
    }
    __syncthreads();
    if (blockIdx.x < kRows * kSlices && threadIdx.x < kCombineThreads)
        combine_slice(part, ml, (tiles + per - 1) / per, blockIdx.x, out);
}

// the combine's threads only (in the split kernel's form, a block's first 128)
__device__ __forceinline__ void named_sync_combine()
{
    asm volatile("bar.sync 1, %0;\n" ::"n"(kCombineThreads) : "memory");
}

__device__ __forceinline__ float4 bf16x4(uint2 u)
{
    return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                       __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}

// block (row, slice): 64 columns of one row over the active splits; thread
// (group g of 8 splits, 4 columns c), every load issued before the sums
__device__ void combine_slice(const uint4 *__restrict__ part, const float2 *__restrict__ ml,
                              int active, int slot, float *__restrict__ out)
{
    constexpr int kGroups = kCombineThreads / 16, kMaxK = (kMaxSplits + kGroups - 1) / kGroups;
    __shared__ float2 sml[kMaxSplits];
    __shared__ float4 red[kGroups][16];
    __shared__ float stat[2];
    const int row = slot / kSlices, slice = slot % kSlices;
    const int c = threadIdx.x % 16, g = threadIdx.x / 16;
    for (int i = threadIdx.x; i < active; i += kCombineThreads)
        sml[i] = __ldcg(&ml[i * kRows + row]);
    const uint2 *src = reinterpret_cast<const uint2 *>(part);
    uint2 v[kMaxK];
#pragma unroll
    for (int k = 0; k < kMaxK; k++) {
        const int p = g + k * kGroups;
        if (p < active)
            v[k] = __ldcg(&src[((size_t)p * kRows + row) * (kCols / 4) + slice * 16 + c]);
    }
    named_sync_combine();
    if (threadIdx.x < 32) {   // warp 0: the rows' max and total over the splits
        float mx = -INFINITY, total = 0.f;
        for (int p = threadIdx.x; p < active; p += 32)
            if (sml[p].y != 0.f)
                mx = fmaxf(mx, sml[p].x);
        for (int o = 16; o > 0; o >>= 1)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        for (int p = threadIdx.x; p < active; p += 32)
            total += sml[p].y == 0.f ? 0.f : exp2f(sml[p].x - mx) * sml[p].y;
        for (int o = 16; o > 0; o >>= 1)
            total += __shfl_xor_sync(0xffffffffu, total, o);
        if (threadIdx.x == 0)
            stat[0] = mx, stat[1] = total;
    }
    named_sync_combine();
    const float mx = stat[0], total = stat[1];
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int k = 0; k < kMaxK; k++) {
        const int p = g + k * kGroups;
        if (p < active) {
            const float wp = sml[p].y == 0.f ? 0.f : exp2f(sml[p].x - mx) * sml[p].y;
            const float4 x = bf16x4(v[k]);
            acc.x += wp * x.x, acc.y += wp * x.y, acc.z += wp * x.z, acc.w += wp * x.w;
        }
    }
    red[g][c] = acc;
    named_sync_combine();
    if (g == 0) {
        for (int q = 1; q < kGroups; q++)
            acc.x += red[q][c].x, acc.y += red[q][c].y, acc.z += red[q][c].z, acc.w += red[q][c].w;
        const float inv = 1.f / total;
        reinterpret_cast<float4 *>(out)[(row * kCols + slice * 64) / 4 + c] =
            make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
    }
}

__global__ void __launch_bounds__(kCombineThreads)
combine(const uint4 *__restrict__ part, const float2 *__restrict__ ml, int active, bool pdl,
        float *__restrict__ out)
{
    if (pdl)
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
    combine_slice(part, ml, active, blockIdx.x, out);
}

struct Buffers {
    uint4 *data, *part;
    size_t regions;
    float2 *ml;
    float *out;
    unsigned *bar;
};
enum Form { kSplitOnly, kPlain, kPdlTop, kPdlEnd, kInKernel };

static void enqueue(cudaStream_t s, const Buffers &b, int i, int splits, int len, Form form)
{
    const int tiles = (len + 31) / 32, per = (tiles + splits - 1) / splits;
    const int active = (tiles + per - 1) / per;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(splits);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = kSmem;
    cfg.stream = s;
    const bool pdl = form == kPdlTop || form == kPdlEnd;
    const int trigger = form == kPdlTop ? 1 : form == kPdlEnd ? 2 : form == kInKernel ? 3 : 0;
    cudaLaunchAttribute coop;
    coop.id = cudaLaunchAttributeCooperative;
    coop.val.cooperative = 1;
    if (form == kInKernel)
        cfg.attrs = &coop, cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, split, (const uint4 *)b.data, b.regions, i, per, tiles, trigger,
                          b.part, b.ml, b.bar, b.out));
    if (form == kSplitOnly || form == kInKernel)
        return;
    cudaLaunchConfig_t cc = {};
    cc.gridDim = dim3(kRows * kSlices);
    cc.blockDim = dim3(kCombineThreads);
    cc.stream = s;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    if (pdl)
        cc.attrs = &attr, cc.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cc, combine, (const uint4 *)b.part, (const float2 *)b.ml, active, pdl,
                          b.out));
}

int main()
{
    CK(cudaFuncSetAttribute(split, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    Buffers b;
    CK(cudaMalloc(&b.data, kBuffer));
    CK(cudaMemset(b.data, 0x3c, kBuffer));
    b.regions = kBuffer / (kTileVecs * sizeof(uint4));
    CK(cudaMalloc(&b.part, (size_t)kMaxSplits * kRows * kCols * 2));
    CK(cudaMalloc(&b.ml, (size_t)kMaxSplits * kRows * sizeof(float2)));
    CK(cudaMalloc(&b.out, kRows * kCols * sizeof(float)));
    CK(cudaMalloc(&b.bar, sizeof(unsigned)));
    CK(cudaMemset(b.bar, 0, sizeof(unsigned)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("split + combine, us per step (median of %d replays of %d):\n", kReps, kLaunches);
    printf("%6s %7s %11s %11s %11s %11s %11s\n", "S", "splits", "split only", "+ combine",
           "PDL top", "PDL end", "in kernel");
    for (int len : {1024, 4096, 16384, 32768})
        for (int splits : {112, 132}) {
            double t[5];
            for (int f = 0; f < 5; f++)
                t[f] = graph_per_launch_us(s, kLaunches, kReps,
                                           [&](int i) { enqueue(s, b, i, splits, len, (Form)f); });
            printf("%6d %7d %11.2f %11.2f %11.2f %11.2f %11.2f\n", len, splits, t[0], t[1], t[2],
                   t[3], t[4]);
        }
    float host[4];
    CK(cudaMemcpy(host, b.out, sizeof host, cudaMemcpyDeviceToHost));
    printf("(out[0] %g)\n", host[0]);
    return 0;
}
