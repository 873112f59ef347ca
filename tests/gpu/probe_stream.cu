// Probe: how fast can one block per SM stream a paged MLA latent cache
// (rows of 576 bf16 = 1152 B, pages of 64 rows, a shuffled block table)
// through shared-memory stages, with no attention math?  It separates the
// load path's ceiling from the kernel's: bulk copies of 1 row (the mma
// form's way, into padded rows), 2, 4 or 32 rows (the whole tile: a tile
// never crosses a page); 128 blocks (the 16-head B=64 grid) against 132;
// consumers that hold each stage for a given number of clocks (the
// attention math's stand-in), one team of 8 warps or two of 4 taking tiles
// in turn.  Not part of the tests; docs/performance.md, "The load path".
//   nvcc -std=c++17 -arch=sm_90a -O3 -o probe_stream tests/gpu/probe_stream.cu && ./probe_stream
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <random>

constexpr int kRow = 1152, kPage = 64, kTile = 32, kConsumers = 256;

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned n)
{ asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(n)); }
__device__ __forceinline__ void mbar_expect(uint64_t *b, unsigned bytes)
{ asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)), "r"(bytes) : "memory"); }
__device__ __forceinline__ void mbar_arrive(uint64_t *b)
{ asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(b)) : "memory"); }
__device__ __forceinline__ void mbar_wait(uint64_t *b, unsigned parity)
{
    asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}\n"
                 ::"r"(smem_u32(b)), "r"(parity) : "memory");
}
__device__ __forceinline__ void bulk(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)) : "memory");
}
struct Work { const unsigned char *cache; const int *table; int S, tiles_total, pages_per_req; };

// Block i takes tiles [i*T/n, (i+1)*T/n) of the B*S/32 tiles, in request order.
__device__ __forceinline__ long long tile_row(const Work &w, int tile, int row)
{
    const int per_req = w.S / kTile, b = tile / per_req, t = (tile % per_req) * kTile + row;
    const int page = w.table[b * w.pages_per_req + t / kPage];
    return (long long)page * kPage + t % kPage;
}
__device__ __forceinline__ const unsigned char *tile_src(const Work &w, int tile, int row)
{
    return w.cache + tile_row(w, tile, row) * kRow;
}

__device__ __forceinline__ void hold(int clk)
{
    const long long t0 = clock64();
    while (clock64() - t0 < clk) { }
}

// Copies of R contiguous rows (a tile never crosses a page), each group of
// R rows followed by 16 bytes of padding (R = 1: the mma form's padded rows;
// R = 4: eight groups, so 8 rows a group apart fall in 8 different bank
// groups; R = 32: the whole tile in one copy).  Warp 8 is the producer;
// TEAMS teams of consumer warps take tiles in turn, wait, hold, release.
template <int R, int TEAMS>
__global__ void __launch_bounds__(kConsumers + 32, 1) k_bulk(Work w, int hold_clk, float *sink)
{
    extern __shared__ __align__(1024) unsigned char sm[];
    constexpr int kGroupBytes = R * kRow + 16, kCopies = kTile / R, kStageBytes = kCopies * kGroupBytes;
    constexpr int kStages = 5;
    // a full barrier per (stage, team): with one a stage and an odd stage
    // count, a team could wait on a phase while the other team's earlier one
    // on that stage was still open, and pass at once (parity aliasing)
    constexpr int kPhaseStep = kStages % TEAMS == 0 ? kStages : kStages * TEAMS;
    uint64_t *full = reinterpret_cast<uint64_t *>(sm + kStages * kStageBytes), *empty = full + kStages * TEAMS;
    const int t0 = (int)((long long)blockIdx.x * w.tiles_total / gridDim.x);
    const int t1 = (int)((long long)(blockIdx.x + 1) * w.tiles_total / gridDim.x), n = t1 - t0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; s++) {
            for (int g = 0; g < TEAMS; g++) mbar_init(&full[s * TEAMS + g], 1);
            mbar_init(&empty[s], kConsumers / 32 / TEAMS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == kConsumers / 32) {
        for (int i = 0; i < n; i++) {
            const int s = i % kStages;
            if (i >= kStages) mbar_wait(&empty[s], ((i / kStages) - 1) & 1);
            uint64_t *bar = &full[s * TEAMS + i % TEAMS];
            if (lane == 0) mbar_expect(bar, kTile * kRow);
            __syncwarp();
            if (lane < kCopies)
                bulk(sm + s * kStageBytes + lane * kGroupBytes, tile_src(w, t0 + i, lane * R), R * kRow, bar);
        }
        return;
    }
    float acc = 0.f;
    for (int i = warp / (kConsumers / 32 / TEAMS); i < n; i += TEAMS) {
        const int s = i % kStages;
        mbar_wait(&full[s * TEAMS + i % TEAMS], (i / kPhaseStep) & 1);
        acc += (float)sm[s * kStageBytes + threadIdx.x * 4];
        if (hold_clk) hold(hold_clk);
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[s]);
    }
    if (acc == 12345.f) *sink = acc;
}

// Plain read of the whole pool, 16 B a thread per step: the read ceiling.
__global__ void k_read(const uint4 *p, size_t n, unsigned *sink)
{
    unsigned x = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = __ldcs(p + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x12345u) *sink = x;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

template <class F> static float time_us(F launch, int reps)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    launch(); CK(cudaDeviceSynchronize());
    std::vector<float> v;
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(a)); launch(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); v.push_back(ms * 1000.f);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main()
{
    const int B = 64, S = 16384, per_req = S / kPage, pages = B * per_req;
    const size_t bytes = (size_t)pages * kPage * kRow;
    unsigned char *cache; int *table; float *sink;
    CK(cudaMalloc(&cache, bytes)); CK(cudaMemset(cache, 1, bytes));
    CK(cudaMalloc(&table, pages * sizeof(int))); CK(cudaMalloc(&sink, 64));
    std::vector<int> h(pages);
    for (int i = 0; i < pages; i++) h[i] = i;
    std::shuffle(h.begin(), h.end(), std::mt19937(7));
    CK(cudaMemcpy(table, h.data(), pages * sizeof(int), cudaMemcpyHostToDevice));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    Work w{cache, table, S, B * S / kTile, per_req};
    const double gb = bytes / 1e9;
    const float tr = time_us([&] { k_read<<<sms * 4, 512>>>((const uint4 *)cache, bytes / 16, (unsigned *)sink); }, 9);
    printf("read ceiling (ld.global.cs, %d x 512): %.1f us, %.0f GB/s\n", sms * 4, tr, gb / tr * 1e6);
    auto report = [&](const char *name, int grid, int stages, int hold_clk, float us) {
        printf("%-40s grid %3d stages %d hold %5d clk: %8.1f us  %6.0f GB/s  %5.1f%% of read\n", name, grid,
               stages, hold_clk, us, gb / us * 1e6, 100.0 * tr / us);
    };
    for (int grid : {128, sms}) {
        auto run = [&](auto kern, int rows, int teams, int hold_clk) {
            const int smem = 5 * (kTile / rows) * (rows * kRow + 16) + 256;
            CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
            char name[96];
            snprintf(name, sizeof name, "bulk copies of %d row%s, %d team%s", rows, rows > 1 ? "s" : "", teams,
                     teams > 1 ? "s" : "");
            report(name, grid, 5, hold_clk, time_us([&] { kern<<<grid, kConsumers + 32, smem>>>(w, hold_clk, sink); }, 7));
        };
        run(k_bulk<1, 1>, 1, 1, 0), run(k_bulk<1, 2>, 1, 2, 2000), run(k_bulk<1, 2>, 1, 2, 3000);
        run(k_bulk<2, 1>, 2, 1, 0), run(k_bulk<2, 2>, 2, 2, 2000), run(k_bulk<2, 2>, 2, 2, 3000);
        run(k_bulk<4, 1>, 4, 1, 0), run(k_bulk<4, 2>, 4, 2, 2000), run(k_bulk<4, 2>, 4, 2, 3000);
        run(k_bulk<32, 1>, 32, 1, 0), run(k_bulk<32, 2>, 32, 2, 2000), run(k_bulk<32, 2>, 32, 2, 3000);
    }
    CK(cudaGetLastError());
    return 0;
}
