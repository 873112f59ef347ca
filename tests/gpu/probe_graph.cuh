// The probes' shared pieces: CK (a CUDA call that must succeed, else the
// probe exits saying which) and per-launch timing of CUDA-graph replays.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);       \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

// Microseconds per launch: enqueue(i) for i < launches captured into one
// graph on stream s, replayed 3 times to warm up and then `reps` times,
// each timed by events; the median replay over `launches`.
template <class F> double graph_per_launch_us(cudaStream_t s, int launches, int reps, F enqueue)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < launches; i++)
        enqueue(i);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int w = 0; w < 3; w++)
        CK(cudaGraphLaunch(ge, s));
    std::vector<cudaEvent_t> ev(reps + 1);
    for (auto &e : ev)
        CK(cudaEventCreate(&e));
    CK(cudaEventRecord(ev[0], s));
    for (int r = 0; r < reps; r++) {
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(ev[r + 1], s));
    }
    CK(cudaStreamSynchronize(s));
    std::vector<double> t(reps);
    for (int r = 0; r < reps; r++) {
        float ms;
        CK(cudaEventElapsedTime(&ms, ev[r], ev[r + 1]));
        t[r] = ms * 1000.0 / launches;
    }
    for (auto &e : ev)
        CK(cudaEventDestroy(e));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    std::sort(t.begin(), t.end());
    return t[reps / 2];
}
