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
// With compute-sanitizer 2025.3.1 on an H200 racecheck reports hazards in
// all three (8, 7 or 8, 6 over 2 blocks, in two runs), and none on a
// one-phase arrive/sync handoff in either direction.
//
//   nvcc -arch=sm_90a -o probe tests/gpu/probe_racecheck_handoff.cu
//   for m in 0 1 2 3 4 5; do compute-sanitizer --tool racecheck ./probe $m; done
#include <cuda_runtime.h>
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

__global__ void teams(int mode, int tiles, int *out)
{
    __shared__ int buf[2][1024];
    const int team = threadIdx.x / 128, t128 = threadIdx.x % 128;
    int acc = 0;
    if (mode == 5 && team == 1) {
        out[threadIdx.x] = 0;
        return;
    }
    for (int t = 0; t < tiles; t++) {
        for (int i = 0; i < 8; i++)
            buf[team][t128 * 8 + i] = t * 1000 + t128 + i;
        asm volatile("barrier.sync %0, 128;" ::"r"(1 + team) : "memory");
        for (int i = 0; i < 8; i++)
            acc += buf[team][(t128 * 8 + i * 9 + 64) % 1024];
        if (mode != 4)
            asm volatile("barrier.sync %0, 128;" ::"r"(1 + team) : "memory");
    }
    out[threadIdx.x] = acc;
}

int main(int argc, char **argv)
{
    const int mode = argc > 1 ? atoi(argv[1]) : 0;
    int *out;
    if (mode < 0 || mode > 5) {
        fprintf(stderr, "usage: %s [0|1|2|3|4|5]\n", argv[0]);
        return 2;
    }
    cudaMalloc(&out, 256 * sizeof(int));
    if (mode <= 2)
        handoff<<<2, 256>>>(mode, 4, out);
    else
        teams<<<2, 256>>>(mode, 4, out);
    const cudaError_t e = cudaDeviceSynchronize();
    printf("mode %d: %s\n", mode, cudaGetErrorString(e));
    cudaFree(out);
    return e != cudaSuccess;
}
