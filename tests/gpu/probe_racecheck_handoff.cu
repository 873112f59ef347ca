// Probe: can compute-sanitizer's racecheck tell a correct named-barrier
// handoff from a racy one?  It replays the MLA wgmma form's P handoff alone
// over 4 tiles: warpgroup 0 writes P and arrives on barrier 1; warpgroup 1
// syncs on 1, reads P and arrives on 3; warpgroup 0 syncs on 3 before it
// writes the next tile's P.  Not a test: run each mode under racecheck and
// compare the hazard counts.
//   mode 0  the handoff as the kernel has it (correct: PTX orders an arrive's
//           prior reads before the sync that completes its phase)
//   mode 1  warpgroup 1 arrives on 3 before its reads (a real WAR race)
//   mode 2  barrier 3 synced by both warpgroups (correct)
// and the MLA two-team form's pattern: two teams of 128 threads, each on its
// own barrier (barrier.sync 1 + team, 128), write their team's buffer, sync,
// read another thread's values of it, sync, over 4 tiles:
//   mode 3  as the kernel has it (correct: both syncs)
//   mode 4  the second sync left out (a real WAR race on the next tile)
//   mode 5  one team only (the other idle), the same syncs: is it the
//           partial thread count or the second barrier id that matters?
//   mode 9  as 3, then a block barrier (__syncthreads) and each thread
//           writing the other team's buffer (as the core writes its partial
//           output over stages the other team read; correct)
//   mode 10 as 9 without the block barrier (a real WAR race)
// and closer to the two-team form: each team's stage filled by a bulk copy
// on the team's own mbarrier, read with ldmatrix .trans between the team's
// barriers over 4 tiles, then a block barrier and plain stores over both
// stages (correct):
//   mode 11 no cluster (2 blocks)
//   mode 12 clusters of 2 (the form's launch)
// and what the two-team form has beyond those: the teams take an odd
// number of tiles in turn (team 0 one more, so one more pair of team
// barriers), the stages are one ring of 3 that both teams' tiles go
// through, each on the (stage, team) mbarrier, a team refilling the stage
// it left with the next tile, which is the other team's; V read with
// ldmatrix .trans twice a tile (scores, then P.V) around a team barrier;
// then a block barrier and plain stores over every stage (correct):
//   mode 13 the teams kernel of modes 3-10 with 5 tiles for team 0 and 4
//           for team 1, then mode 9's block barrier and cross-team writes
//   mode 14 the ring, 9 tiles, no cluster (2 blocks)
//   mode 15 the ring, 9 tiles, clusters of 2
// and the decode ring form's and the MLA block's slot handoff: a producer
// warp bulk-copies each piece into a slot of 2 on the slot's full mbarrier;
// 4 consumer warps wait on it, read the slot with plain loads, __syncwarp,
// and lane 0 of each arrives on the slot's empty mbarrier (count 4); the
// producer waits on empty before its next copy into the slot (correct):
//   mode 16 8 pieces, 2 blocks
// and the two-team form's exit as two blocks of one cluster see it: each
// block reads its own stage with ldmatrix .trans (block 1 for far longer),
// syncs, writes the same bytes with plain stores, then the cluster barrier;
// no shared memory is read or written across blocks (correct):
//   mode 17 clusters of 2
//   mode 18 no cluster (2 blocks)
//   mode 20 as 17, then each block reads its peer's stage through
//           distributed shared memory and the cluster barrier again (the
//           core's merge: correct)
// and the MLA core's stage reuse of mode 7 (8 blocks an SM, one after
// another, each bulk-copying its stage, reading it, then writing it with
// plain stores) launched in clusters of 2, as the core is:
//   mode 19
// and the MLA core's stage reuse: each block bulk-copies 16 KB into its
// shared memory (cp.async.bulk on an mbarrier), reads it, syncs the block,
// then writes the same bytes with plain stores (as the core writes its
// partial output over the stages after its loop); 160 KB a block, so one
// block an SM at a time:
//   mode 6  one block an SM (132 blocks; no SM runs a second)
//   mode 7  8 blocks an SM, one after another on each
//   mode 8  as 7 with plain stores, a block barrier, then the reads in place
//           of the bulk copy
// With compute-sanitizer 2025.3.1 on an H200 racecheck reports hazards in
// all of modes 0-2 (8, 7 or 8, 6 over 2 blocks, in two runs), and none on a
// one-phase arrive/sync handoff in either direction; in modes 3-10 it is
// right every time (0, 4, 0, 0, 0, 0, 0 and 2 hazards): neither the team
// barriers nor the bulk-copied stages alone bring its reports on the MLA
// core's two-team form.  Modes 11 and 12 print "no error"
// with 0 hazards (2026-12-02, with the launches' status checked); so do
// modes 13, 14 and 15 (2026-12-02, main at 9fdbabf + this probe), while
// mode 16, correct, gets 1 error: the producer's bulk copy (the async
// proxy's write) against the consumers' reads of the piece before it,
// 1364-1564 hazards at each of the 8 loads, although the producer waited on
// the empty mbarrier that every consumer warp arrived on after its reads.
// Modes 17-20: 0 hazards each.  What explains the two-team form's reports
// came from the kernel itself: with a cluster barrier in place of its block
// barrier after the loop, racecheck reports none (docs/reliability.md).
//
//   nvcc -arch=sm_90a -o probe tests/gpu/probe_racecheck_handoff.cu
//   for m in $(seq 0 20); do compute-sanitizer --tool racecheck ./probe $m; done
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__global__ void handoff(int mode, int tiles, int *out)
{
    __shared__ int p[1024];
    const int wg = threadIdx.x / 128, t128 = threadIdx.x % 128;
    int acc = 0;
    if (wg == 1) {
        asm volatile("barrier.arrive 3, 256;" ::: "memory");
        for (int t = 0; t < tiles; t++) {
            asm volatile("barrier.sync 1, 256;" ::: "memory");
            if (t + 1 < tiles && mode == 1)
                asm volatile("barrier.arrive 3, 256;" ::: "memory");
            for (int i = 0; i < 8; i++)
                acc += p[(t128 * 8 + i * 9) % 1024];
            if (t + 1 < tiles && mode == 0)
                asm volatile("barrier.arrive 3, 256;" ::: "memory");
            if (t + 1 < tiles && mode == 2)
                asm volatile("barrier.sync 3, 256;" ::: "memory");
        }
    } else {
        asm volatile("barrier.sync 3, 256;" ::: "memory");
        for (int t = 0; t < tiles; t++) {
            for (int i = 0; i < 8; i++)
                p[t128 * 8 + i] = t * 1000 + t128 + i;
            asm volatile("barrier.arrive 1, 256;" ::: "memory");
            if (t + 1 < tiles)
                asm volatile("barrier.sync 3, 256;" ::: "memory");
        }
    }
    out[threadIdx.x] = acc;
}

// The probe's own mbarrier and bulk-copy PTX (a standalone program: the
// generator's sm90.cu.in is a template it cannot include).
__device__ void probe_mbar_init(unsigned bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// bytes from global src into shared dst, completing on bar (its arrival and tx count)
__device__ void probe_bulk_copy(unsigned dst, const void *src, unsigned bytes, unsigned bar)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
                 "[%3];" ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ void probe_mbar_wait(unsigned bar, unsigned parity)
{
    for (unsigned ok = 0; !ok;)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
                     "selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
}
__device__ void probe_team_sync(int team)
{
    asm volatile("barrier.sync %0, 128;" ::"r"(1 + team) : "memory");
}

__global__ void teams(int mode, int tiles, int *out)
{
    __shared__ int buf[2][1024];
    const int team = threadIdx.x / 128, t128 = threadIdx.x % 128;
    int acc = 0;
    if (mode == 5 && team == 1) {
        out[threadIdx.x] = 0;
        return;
    }
    const int my_tiles = mode == 13 && team == 0 ? tiles + 1 : tiles;
    for (int t = 0; t < my_tiles; t++) {
        for (int i = 0; i < 8; i++)
            buf[team][t128 * 8 + i] = t * 1000 + t128 + i;
        probe_team_sync(team);
        for (int i = 0; i < 8; i++)
            acc += buf[team][(t128 * 8 + i * 9 + 64) % 1024];
        if (mode != 4)
            probe_team_sync(team);
    }
    if (mode >= 9) {
        if (mode != 10)
            __syncthreads();
        for (int i = 0; i < 8; i++)
            buf[1 - team][t128 * 8 + i] = acc + i;
    }
    out[threadIdx.x] = acc;
}

__global__ void reuse(int mode, const int4 *src, int *out)
{
    extern __shared__ int4 stage[];   // 160 KB; the first 16 KB used
    __shared__ alignas(8) uint64_t bar;
    constexpr unsigned kBytes = 16384;
    const unsigned addr = (unsigned)__cvta_generic_to_shared(stage);
    const unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
    if (mode == 8) {
        for (int i = threadIdx.x; i < kBytes / 16; i += blockDim.x)
            stage[i] = src[i];
        __syncthreads();
    } else {
        if (threadIdx.x == 0)
            probe_mbar_init(bar_addr);
        __syncthreads();
        if (threadIdx.x == 0)
            probe_bulk_copy(addr, src, kBytes, bar_addr);
        probe_mbar_wait(bar_addr, 0);
    }
    int acc = 0;
    for (int i = threadIdx.x; i < kBytes / 16; i += blockDim.x)
        acc += stage[(i * 7) % (kBytes / 16)].x;
    __syncthreads();
    for (int i = threadIdx.x; i < kBytes / 16; i += blockDim.x)
        stage[i] = make_int4(acc, i, 0, 0);
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

__global__ void teams_tma(const int4 *src, int *out)
{
    __shared__ alignas(128) uint16_t stage[2][32 * 64];   // a team's 32 rows x 64 values
    __shared__ alignas(8) uint64_t bar[2];
    const int team = threadIdx.x / 128, t128 = threadIdx.x % 128, lane = threadIdx.x % 32;
    const unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar[team]);
    const unsigned st_addr = (unsigned)__cvta_generic_to_shared(&stage[team][0]);
    if (t128 == 0)
        probe_mbar_init(bar_addr);
    __syncthreads();
    unsigned acc = 0;
    for (int t = 0; t < 4; t++) {
        if (t128 == 0)
            probe_bulk_copy(st_addr, src + t * 256, 4096, bar_addr);
        probe_mbar_wait(bar_addr, t & 1);
        unsigned r[4];
        const unsigned a = st_addr + ((lane % 16) * 64 + (t128 / 32) * 16 + lane / 16 * 8) * 2;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
        acc += r[0] ^ r[1] ^ r[2] ^ r[3];
        probe_team_sync(team);   // the team is done with it
        if (t128 == 0)   // (the next copy writes the stage the reads above left)
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        probe_team_sync(team);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 2 * 32 * 64; i += blockDim.x)
        (&stage[0][0])[i] = (uint16_t)(acc + i);
    out[blockIdx.x * blockDim.x + threadIdx.x] = (int)acc;
}

// The two-team form's stage ring (modes 14, 15): tile u in stage u % 3 on
// mbarrier full[u % 3][u % 2]; the tiles of one barrier are 6 apart.
__global__ void teams_ring(const int4 *src, int *out)
{
    constexpr int kStages = 3, kTeams = 2, kTiles = 9, kPhaseStep = 6, kBytes = 4096;
    __shared__ alignas(128) uint16_t stage[kStages][32 * 64];   // 32 rows x 64 values
    __shared__ alignas(8) uint64_t full[kStages][kTeams];
    const int team = threadIdx.x / 128, t128 = threadIdx.x % 128, lane = threadIdx.x % 32;
    const auto bar_at = [&](int u) { return (unsigned)__cvta_generic_to_shared(&full[u % kStages][u % kTeams]); };
    const auto stage_at = [&](int u) { return (unsigned)__cvta_generic_to_shared(&stage[u % kStages][0]); };
    if (threadIdx.x < kStages * kTeams)
        probe_mbar_init((unsigned)__cvta_generic_to_shared(&full[threadIdx.x / kTeams][threadIdx.x % kTeams]));
    __syncthreads();
    if (threadIdx.x == 0)
        for (int u = 0; u < kStages; u++)
            probe_bulk_copy(stage_at(u), src + u * 256, kBytes, bar_at(u));
    unsigned acc = 0;
    const auto read_v = [&](unsigned st) {
        unsigned r[4];
        const unsigned a = st + ((lane % 16) * 64 + (t128 / 32) * 16 + lane / 16 * 8) * 2;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
        acc += r[0] ^ r[1] ^ r[2] ^ r[3];
    };
    for (int u = team; u < kTiles; u += kTeams) {
        probe_mbar_wait(bar_at(u), (unsigned)(u / kPhaseStep) & 1u);
        read_v(stage_at(u));   // the scores
        probe_team_sync(team);   // the team is done with its previous tile's stage
        const int next = u - kTeams + kStages;
        if (u >= kTeams && next < kTiles && t128 == 0) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            probe_bulk_copy(stage_at(next), src + next % 4 * 256, kBytes, bar_at(next));
        }
        probe_team_sync(team);   // the softmax's
        read_v(stage_at(u));     // P.V
    }
    __syncthreads();
    for (int i = threadIdx.x; i < kStages * 32 * 64; i += blockDim.x)
        (&stage[0][0])[i] = (uint16_t)(acc + i);
    out[blockIdx.x * blockDim.x + threadIdx.x] = (int)acc;
}

// The producer / consumer slot handoff (mode 16).
__global__ void slots(const int4 *src, int *out)
{
    constexpr int kSlots = 2, kPieces = 8, kConsumers = 4, kBytes = 4096;
    __shared__ alignas(128) int4 slot[kSlots][kBytes / 16];
    __shared__ alignas(8) uint64_t full[kSlots], empty[kSlots];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const auto addr = [](const void *p) { return (unsigned)__cvta_generic_to_shared(p); };
    if (threadIdx.x < kSlots) {
        probe_mbar_init(addr(&full[threadIdx.x]));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(addr(&empty[threadIdx.x])), "r"(kConsumers)
                     : "memory");
    }
    __syncthreads();
    int acc = 0;
    if (warp == 0) {
        for (int u = 0; u < kPieces && lane == 0; u++) {
            if (u >= kSlots)   // the consumers are done with piece u - kSlots
                probe_mbar_wait(addr(&empty[u % kSlots]), (unsigned)(u / kSlots - 1) & 1u);
            probe_bulk_copy(addr(&slot[u % kSlots][0]), src + u % 4 * 256, kBytes, addr(&full[u % kSlots]));
        }
    } else {
        for (int u = 0; u < kPieces; u++) {
            probe_mbar_wait(addr(&full[u % kSlots]), (unsigned)(u / kSlots) & 1u);
            for (int i = lane; i < kBytes / 16; i += 32)
                acc += slot[u % kSlots][(i * 5 + warp) % (kBytes / 16)].x;
            __syncwarp();
            if (lane == 0)
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(addr(&empty[u % kSlots])) : "memory");
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Two blocks, each only in its own shared memory, one far slower (modes 17, 18).
__global__ void own_stage(int cluster, int *out)
{
    __shared__ alignas(128) uint16_t stage[64 * 64];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x)
        stage[i] = (uint16_t)i;
    __syncthreads();
    unsigned acc = 0;
    const unsigned a = (unsigned)__cvta_generic_to_shared(&stage[((lane % 16) + 16 * (warp % 4)) * 64 +
                                                                  (warp / 4) * 16 + lane / 16 * 8]);
    for (int it = 0; it < (blockIdx.x % 2 ? 4000 : 1); it++) {
        unsigned r[4];
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
        acc += r[0] ^ r[1] ^ r[2] ^ r[3];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x)
        stage[i] = (uint16_t)(acc + i);
    if (cluster) {
        asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
        asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    }
    if (cluster == 2) {   // the peer's stage, then nobody leaves before its peer is done
        unsigned rank, peer_addr, v;
        asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                     : "=r"(peer_addr) : "r"((unsigned)__cvta_generic_to_shared(&stage[threadIdx.x])), "r"(rank ^ 1u));
        asm volatile("ld.shared::cluster.u16 %0, [%1];" : "=r"(v) : "r"(peer_addr) : "memory");
        acc += v;
        asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
        asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = (int)acc + stage[threadIdx.x];
}

int main(int argc, char **argv)
{
    const int mode = argc > 1 ? atoi(argv[1]) : 0;
    int *out;
    if (mode < 0 || mode > 20) {
        fprintf(stderr, "usage: %s [0..20]\n", argv[0]);
        return 2;
    }
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaMalloc(&out, 8 * sms * 256 * sizeof(int));
    int4 *src;
    cudaMalloc(&src, 16384);
    cudaMemset(src, 1, 16384);
    // a launch that fails runs nothing, and racecheck then reports 0 hazards:
    // its status is the probe's result before the synchronize's
    cudaError_t launched = cudaSuccess;
    if (mode <= 2) {
        handoff<<<2, 256>>>(mode, 4, out);
    } else if (mode == 16) {
        slots<<<2, 160>>>(src, out);
    } else if (mode <= 5 || mode == 9 || mode == 10 || mode == 13) {
        teams<<<2, 256>>>(mode, 4, out);
    } else if (mode == 19) {
        const int smem = 160 * 1024;
        launched = cudaFuncSetAttribute(reuse, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = 2, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3(8 * sms), cfg.blockDim = dim3(256), cfg.dynamicSmemBytes = smem;
        cfg.attrs = attr, cfg.numAttrs = 1;
        if (launched == cudaSuccess)
            launched = cudaLaunchKernelEx(&cfg, reuse, mode, (const int4 *)src, out);
    } else if (mode >= 11) {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = mode == 12 || mode == 15 ? 2 : 1, attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.gridDim = dim3(2), cfg.blockDim = dim3(256), cfg.attrs = attr, cfg.numAttrs = 1;
        if (mode >= 17)
            attr[0].val.clusterDim.x = mode == 18 ? 1 : 2;
        launched = mode >= 17   ? cudaLaunchKernelEx(&cfg, own_stage, mode == 17 ? 1 : mode == 20 ? 2 : 0, out)
                   : mode >= 14 ? cudaLaunchKernelEx(&cfg, teams_ring, (const int4 *)src, out)
                                : cudaLaunchKernelEx(&cfg, teams_tma, (const int4 *)src, out);
    } else {
        const int smem = 160 * 1024;
        launched = cudaFuncSetAttribute(reuse, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (launched == cudaSuccess)
            reuse<<<mode == 6 ? sms : 8 * sms, 256, smem>>>(mode, src, out);
    }
    if (launched == cudaSuccess)
        launched = cudaGetLastError();
    const cudaError_t e = launched != cudaSuccess ? launched : cudaDeviceSynchronize();
    printf("mode %d: %s%s\n", mode, launched != cudaSuccess ? "launch failed: " : "",
           cudaGetErrorString(e));
    cudaFree(out);
    cudaFree(src);
    return e != cudaSuccess;
}
