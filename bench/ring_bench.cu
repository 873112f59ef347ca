// The ring microbenchmark (`make bench-ring`, sm_90a): one block a SM streams
// its share of a weight matrix through a ring of shared-memory slots filled by
// bulk copies from a producer warp, as mla_block.in's phases do, with
// consumers that only wait, touch the piece and give the slot back; then the
// same shares read by the consumers' own 16-byte loads.  GB/s per piece shape
// says whether the ring and the HBM pattern could feed the phases, apart from
// the consumers' work (docs/performance.md, the MLA block).
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define DEV __device__ __forceinline__
constexpr int kSlots = 5, kSlotBytes = 37376, kConsumers = 256;

DEV uint32_t sa(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
DEV void bar_init(uint64_t *b, unsigned n) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sa(b)), "r"(n) : "memory"); }
DEV void bar_expect(uint64_t *b, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(b)), "r"(bytes) : "memory");
}
DEV void bar_arrive(uint64_t *b) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sa(b)) : "memory"); }
DEV void bar_wait(uint64_t *b, unsigned parity)
{
    uint32_t ok = 0;
    while (!ok)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok) : "r"(sa(b)), "r"(parity) : "memory");
}
DEV void copy(void *dst, const void *src, unsigned bytes, uint64_t *b)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(b)) : "memory");
}

// A piece: rows x seg bytes, row r at src + r * stride, landing at dst + r * dst_stride.
// Block b's share starts at base + b * share; piece p's columns at (p % cols) * seg and
// rows at (p / cols) * rows.
struct Shape {
    int rows, seg, stride, dst_stride, cols, pieces, lanes;   // lanes: producer lanes issuing
    long long share;
};

__global__ void __launch_bounds__(kConsumers + 32, 1) ring(const unsigned char *base, Shape sh, unsigned *sink)
{
    extern __shared__ __align__(128) unsigned char sm[];
    uint64_t *full = reinterpret_cast<uint64_t *>(sm), *empty = full + kSlots;
    unsigned char *slot = sm + 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kSlots; s++)
            bar_init(&full[s], 1), bar_init(&empty[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const unsigned char *share = base + blockIdx.x * sh.share;
    if (threadIdx.x >= kConsumers) {   // the producer warp
        const int lane = threadIdx.x % 32;
        if (lane >= sh.lanes)
            return;
        for (int p = 0; p < sh.pieces; p++) {
            const int s = p % kSlots;
            if (p >= kSlots)
                bar_wait(&empty[s], (p / kSlots - 1) & 1);
            if (lane == 0)
                bar_expect(&full[s], sh.rows * sh.seg);
            __syncwarp(sh.lanes == 32 ? 0xffffffffu : (1u << sh.lanes) - 1);
            const unsigned char *src = share + (long long)(p / sh.cols) * sh.rows * sh.stride + (p % sh.cols) * sh.seg;
            for (int r = lane; r < sh.rows; r += sh.lanes)
                copy(slot + s * kSlotBytes + r * sh.dst_stride, src + (long long)r * sh.stride, sh.seg, &full[s]);
        }
        return;
    }
    unsigned acc = 0;
    for (int p = 0; p < sh.pieces; p++) {
        const int s = p % kSlots;
        bar_wait(&full[s], (p / kSlots) & 1);
        acc += slot[s * kSlotBytes + (threadIdx.x * 64) % (sh.rows * sh.dst_stride)];
        asm volatile("barrier.sync 1, %0;" ::"r"(kConsumers) : "memory");
        if (threadIdx.x == 0)
            bar_arrive(&empty[s]);
    }
    if (acc == 0xdeadbeef)
        *sink = acc;
}

// The same share streamed by the 256 consumer threads' own 16-byte loads
// (8 in flight a thread, L1 bypassed), no ring: the LSU path against the TMA's.
__global__ void __launch_bounds__(kConsumers + 32, 1) lsu(const uint4 *base, long long share16, unsigned *sink)
{
    if (threadIdx.x >= kConsumers)
        return;
    const uint4 *p = base + blockIdx.x * share16;
    unsigned acc = 0;
    for (long long i = threadIdx.x; i < share16; i += 8 * kConsumers) {
        uint4 v[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = i + j * kConsumers < share16 ? __ldcs(p + i + j * kConsumers) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc += v[j].x ^ v[j].w;
    }
    if (acc == 0xdeadbeef)
        *sink = acc;
}

int main()
{
    int devices = 0, sms = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
        return printf("ring_bench: no CUDA device\n"), 1;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const int smem = 128 + kSlots * kSlotBytes;
    cudaFuncSetAttribute(ring, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    const size_t set = 96ull << 20, sets = 4;   // rotated, past the L2
    unsigned char *buf;
    unsigned *sink;
    if (cudaMalloc(&buf, set * sets) != cudaSuccess || cudaMalloc(&sink, 4) != cudaSuccess)
        return printf("alloc failed\n"), 1;
    cudaMemset(buf, 1, set * sets);
    struct Case {
        const char *what;
        Shape sh;
    } cases[] = {
        // V3 A tensor-core form: 16 rows of 14 KB a block, 1 KB segments (14 pieces of 16 KB)
        {"16 rows x 1 KB, stride 14 KB, 1 lane", {16, 1024, 14336, 1040, 14, 14, 1, 16 * 14336}},
        {"16 rows x 1 KB, stride 14 KB, 32 lanes", {16, 1024, 14336, 1040, 14, 14, 32, 16 * 14336}},
        {"16 rows x 2 KB, stride 14 KB, 32 lanes", {16, 2048, 14336, 2064, 7, 7, 32, 16 * 14336}},
        // V2-Lite A tensor-core form: 32 rows of 4 KB, 1 KB segments (4 pieces of 32 KB)
        {"32 rows x 1 KB, stride 4 KB, 32 lanes", {32, 1024, 4096, 1040, 4, 4, 32, 32 * 4096}},
        // the scalar form: 2 whole rows of 14 KB a piece (one copy each), 8 pieces
        {"2 rows x 14 KB (whole rows), 32 lanes", {2, 14336, 14336, 14336, 1, 8, 32, 16 * 14336}},
        {"1 copy of 28 KB a piece", {1, 28672, 28672, 28672, 1, 8, 1, 16 * 14336}},
        // D: 32 latent rows of 1152 B, contiguous, one copy a row vs one a tile
        {"32 rows x 1152 B contiguous, 32 lanes", {32, 1152, 1152, 1168, 1, 16, 32, 16 * 32 * 1152}},
        {"1 copy of 36 KB (a tile) a piece", {1, 36864, 36864, 36864, 1, 16, 1, 16 * 32 * 1152}},
        // steady state: 3x the share a block (ramp and launch amortised)
        {"x3: 16 rows x 1 KB, stride 14 KB, 32 lanes", {16, 1024, 14336, 1040, 14, 42, 32, 48 * 14336}},
        {"x3: 2 rows x 14 KB (whole rows), 32 lanes", {2, 14336, 14336, 14336, 1, 24, 32, 48 * 14336}},
        {"x3: 1 copy of 36 KB a piece", {1, 36864, 36864, 36864, 1, 19, 1, 19 * 36864}},
    };
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    for (auto &c : cases) {
        const long long bytes = (long long)sms * c.sh.pieces * c.sh.rows * c.sh.seg;
        if ((long long)sms * c.sh.share > (long long)set)
            { printf("%s: share too large\n", c.what); continue; }
        for (int w = 0; w < 3; w++)
            ring<<<sms, kConsumers + 32, smem>>>(buf + (w % sets) * set, c.sh, sink);
        const int reps = 60;
        cudaEventRecord(a);
        for (int r = 0; r < reps; r++)
            ring<<<sms, kConsumers + 32, smem>>>(buf + (r % sets) * set, c.sh, sink);
        cudaEventRecord(b);
        if (cudaEventSynchronize(b) != cudaSuccess)
            return printf("%s: %s\n", c.what, cudaGetErrorString(cudaGetLastError())), 1;
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        const double us = 1e3 * ms / reps;
        printf("%-42s %6.1f MB a launch  %7.2f us  %7.0f GB/s\n", c.what, bytes / 1e6, us, bytes / us / 1e3);
    }
    for (long long share : {16ll * 14336, 32ll * 4096, 16ll * 32 * 1152, 48ll * 14336}) {
        const long long bytes = (long long)sms * share;
        for (int w = 0; w < 3; w++)
            lsu<<<sms, kConsumers + 32>>>((const uint4 *)(buf + (w % sets) * set), share / 16, sink);
        const int reps = 60;
        cudaEventRecord(a);
        for (int r = 0; r < reps; r++)
            lsu<<<sms, kConsumers + 32>>>((const uint4 *)(buf + (r % sets) * set), share / 16, sink);
        cudaEventRecord(b);
        if (cudaEventSynchronize(b) != cudaSuccess)
            return printf("lsu: %s\n", cudaGetErrorString(cudaGetLastError())), 1;
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        const double us = 1e3 * ms / reps;
        printf("LSU loads, %7lld B a block                  %6.1f MB a launch  %7.2f us  %7.0f GB/s\n", share,
               bytes / 1e6, us, bytes / us / 1e3);
    }
    return 0;
}
