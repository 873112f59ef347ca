// Probe: how fast can one block per SM stream a paged MLA latent cache
// (rows of 576 bf16 = 1152 B, pages of 64 rows, a shuffled block table)
// through shared-memory stages, with no attention math?  It separates the
// load path's ceiling from the kernel's: bulk copies of 1 row (the mma
// form's way, into padded rows), 2, 4 or 32 rows (the whole tile: a tile
// never crosses a page); 128 blocks (the 16-head B=64 grid) against 132;
// consumers that hold each stage for a given number of clocks (the
// attention math's stand-in), one team of 8 warps or two of 4 taking tiles
// in turn; other grids given as arguments (few blocks: what one SM's copies
// reach when HBM is far from busy); last, the MLA block's attention's shape
// (one team holding each tile ~0.7 us) with 3 to 6 stages.  Not part of the tests;
// docs/performance.md, "The load path" and stop 76.
// TMA: one 3D tensor-map box a tile ({64 columns, 9 chunks of 128 B, 32
// rows}, 128-byte swizzle): one copy of the whole tile whose swizzle puts 8
// keys' same 16 bytes in 8 different bank groups (the 128-byte line of key
// k, chunk c is 9k + c, and 9k + c = k + c mod 8), so ldmatrix could read it
// without the padding that per-row copies need.
//   nvcc -std=c++17 -arch=sm_90a -O3 -o probe_stream tests/gpu/probe_stream.cu -lcuda && ./probe_stream [GRID...]
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <random>
#include "probe_mbar.cuh"

constexpr int kRow = 1152, kPage = 64, kTile = 32, kConsumers = 256;

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

// Box (0, 0, row) of a 3D map of whole rows into dst (1024-byte aligned).
__device__ __forceinline__ void tma_rows(void *dst, const CUtensorMap *map, int row, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %2, %3}], [%4];" ::"r"(smem_u32(dst)), "l"(map), "r"(0), "r"(row),
                 "r"(smem_u32(bar)) : "memory");
}

// Copies of R contiguous rows (a tile never crosses a page), each group of
// R rows followed by 16 bytes of padding (R = 1: the mma form's padded rows;
// R = 4: eight groups, so 8 rows a group apart fall in 8 different bank
// groups; R = 32: the whole tile in one copy); R = 0: the tile as one TMA
// box of `map` (see the top), unpadded.  Warp 8 is the producer; TEAMS
// teams of consumer warps take tiles in turn, wait, hold, release.
template <int R, int TEAMS, int STAGES = 5>
__global__ void __launch_bounds__(kConsumers + 32, 1) k_stream(const __grid_constant__ CUtensorMap map, Work w,
                                                               int hold_clk, float *sink)
{
    extern __shared__ __align__(1024) unsigned char sm_raw[];
    unsigned char *sm = sm_raw + (1024 - smem_u32(sm_raw) % 1024) % 1024;   // the swizzle's 1024-B atoms
    constexpr int kGroupBytes = R ? R * kRow + 16 : kTile * kRow, kCopies = R ? kTile / R : 1;
    constexpr int kStageBytes = kCopies * kGroupBytes, kStages = STAGES;
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
            if (R == 0 && lane == 0)
                tma_rows(sm + s * kStageBytes, &map, (int)tile_row(w, t0 + i, 0), bar);
            else if (R > 0 && lane < kCopies)
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

// The swizzle as the MLA kernel would read it: key k's 16 bytes j of its
// 128-byte chunk c at k * 1152 + c * 128 + (j ^ (k + c) % 8) * 16.  Rows of
// values row * 576 + column; counts the 16-bit values found elsewhere.
__global__ void k_tma_layout(const __grid_constant__ CUtensorMap map, int row0, unsigned *bad)
{
    extern __shared__ __align__(1024) unsigned char sm_raw[];
    unsigned char *sm = sm_raw + (1024 - smem_u32(sm_raw) % 1024) % 1024;
    __shared__ uint64_t bar;
    if (threadIdx.x == 0) {
        mbar_init(&bar, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        mbar_expect(&bar, kTile * kRow);
        tma_rows(sm, &map, row0, &bar);
    }
    __syncthreads();
    mbar_wait(&bar, 0);
    unsigned n = 0;
    for (int i = threadIdx.x; i < kTile * 576; i += blockDim.x) {
        const int k = i / 576, col = i % 576, c = col / 64, j = col % 64 / 8;
        const uint16_t v = *reinterpret_cast<const uint16_t *>(sm + k * kRow + c * 128 + ((j ^ ((k + c) % 8)) * 16) + col % 8 * 2);
        n += v != (uint16_t)((row0 + k) * 576 + col);
    }
    atomicAdd(bad, n);
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

// A map of `rows` whole rows of 576 bf16 ({64, 9, rows}), boxes of a tile.
static CUtensorMap rows_map(const void *base, long long rows, CUtensorMapL2promotion promo)
{
    CUtensorMap map;
    const cuuint64_t dims[3] = {64, 9, (cuuint64_t)rows}, strides[2] = {128, kRow};
    const cuuint32_t box[3] = {64, 9, kTile}, elem[3] = {1, 1, 1};
    const CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void *>(base),
                                              dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                              CU_TENSOR_MAP_SWIZZLE_128B, promo, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { printf("cuTensorMapEncodeTiled: %d\n", (int)r); exit(1); }
    return map;
}

// A k_stream shape as a value, so one argument names it for the launch and
// for its shared memory.
template <int R, int TEAMS, int STAGES = 5> struct form {
    static constexpr int rows = R, teams = TEAMS, stages = STAGES;
};

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

int main(int argc, char **argv)
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
        printf("%-40s grid %3d stages %d hold %5d clk: %8.1f us  %6.0f GB/s  %5.1f%% of read  %5.1f GB/s a block\n",
               name, grid, stages, hold_clk, us, gb / us * 1e6, 100.0 * tr / us, gb / us * 1e6 / grid);
    };
    {
        // the swizzled layout, checked (64 rows of row * 576 + column, tiles at rows 0 and 32)
        std::vector<uint16_t> v(64 * 576);
        for (int i = 0; i < 64 * 576; i++) v[i] = (uint16_t)i;
        uint16_t *small; unsigned *bad;
        CK(cudaMalloc(&small, v.size() * 2)); CK(cudaMalloc(&bad, 4)); CK(cudaMemset(bad, 0, 4));
        CK(cudaMemcpy(small, v.data(), v.size() * 2, cudaMemcpyHostToDevice));
        const CUtensorMap map = rows_map(small, 64, CU_TENSOR_MAP_L2_PROMOTION_NONE);
        const int smem = kTile * kRow + 1024;
        CK(cudaFuncSetAttribute(k_tma_layout, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        k_tma_layout<<<1, 256, smem>>>(map, 0, bad);
        k_tma_layout<<<1, 256, smem>>>(map, 32, bad);
        unsigned h_bad; CK(cudaMemcpy(&h_bad, bad, 4, cudaMemcpyDeviceToHost));
        printf("TMA swizzle layout: %u of %d values misplaced\n", h_bad, 2 * kTile * 576);
    }
    const CUtensorMap maps[2] = {rows_map(cache, (long long)pages * kPage, CU_TENSOR_MAP_L2_PROMOTION_NONE),
                                 rows_map(cache, (long long)pages * kPage, CU_TENSOR_MAP_L2_PROMOTION_L2_256B)};
    std::vector<int> grids = {128, sms};
    if (argc > 1) {
        grids.clear();
        for (int i = 1; i < argc; i++) {
            grids.push_back(atoi(argv[i]));
            if (grids.back() < 1 || grids.back() > w.tiles_total) {
                fprintf(stderr, "usage: %s [GRID...] (each 1 .. %d blocks)\n", argv[0], w.tiles_total);
                return 2;
            }
        }
    }
    for (int grid : grids) {
        // rows 0: the TMA box, with L2 promotion none (promo 0) or 256 B
        auto run = [&](auto shape, int hold_clk, int promo = 0) {
            using F = decltype(shape);
            const auto kern = k_stream<F::rows, F::teams, F::stages>;
            const int rows = F::rows, teams = F::teams, stages = F::stages;
            const int smem = stages * (rows ? (kTile / rows) * (rows * kRow + 16) : kTile * kRow) + 1024 + 256;
            CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
            char name[96];
            if (rows)
                snprintf(name, sizeof name, "bulk copies of %d row%s, %d team%s", rows, rows > 1 ? "s" : "",
                         teams, teams > 1 ? "s" : "");
            else
                snprintf(name, sizeof name, "TMA 3D box, 128B swizzle, promo %s, %d team%s",
                         promo ? "256" : "none", teams, teams > 1 ? "s" : "");
            report(name, grid, stages, hold_clk,
                   time_us([&] { kern<<<grid, kConsumers + 32, smem>>>(maps[promo], w, hold_clk, sink); }, 7));
        };
        run(form<1, 1>{}, 0), run(form<1, 2>{}, 2000), run(form<1, 2>{}, 3000);
        run(form<2, 1>{}, 0), run(form<2, 2>{}, 2000), run(form<2, 2>{}, 3000);
        run(form<4, 1>{}, 0), run(form<4, 2>{}, 2000), run(form<4, 2>{}, 3000);
        run(form<32, 1>{}, 0), run(form<32, 2>{}, 2000), run(form<32, 2>{}, 3000);
        for (int promo : {0, 1})
            run(form<0, 1>{}, 0, promo), run(form<0, 2>{}, 2000, promo), run(form<0, 2>{}, 3000, promo);
        // the MLA block's attention (stop 76): one team holding each tile ~0.7 us
        // (its chain), a copy a row or 4, 3 to 6 stages: what more bytes in
        // flight would give it
        run(form<1, 1, 5>{}, 1400), run(form<1, 1, 6>{}, 1400);
        run(form<4, 1, 3>{}, 1400), run(form<4, 1, 4>{}, 1400);
        run(form<4, 1, 5>{}, 1400), run(form<4, 1, 6>{}, 1400);
    }
    CK(cudaGetLastError());
    return 0;
}
