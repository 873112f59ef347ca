/* A kernel that must spill under the normal sm_90a flags, so the resource
 * gate has something to reject.  __launch_bounds__(1024, 2) caps ptxas at
 * 65536 / 2048 = 32 registers per thread, while the loop below keeps all
 * FG_LIVE accumulators live at once (each update reads its neighbour), so
 * about FG_LIVE - 32 of them have to live in local memory.  It does not
 * depend on -maxrregcount or the optimisation level. */
#define FG_LIVE 96

extern "C" __global__ void __launch_bounds__(1024, 2)
test_spill(const float *__restrict__ in, float *__restrict__ out, int n)
{
    float acc[FG_LIVE];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int i = 0; i < FG_LIVE; i++)
        acc[i] = in[t + i * n];
#pragma unroll 1
    for (int r = 0; r < 8; r++) {
#pragma unroll
        for (int i = 0; i < FG_LIVE; i++)
            acc[i] = acc[i] * acc[(i + 1) % FG_LIVE] + in[t + (i + r) * n];
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < FG_LIVE; i++)
        s += acc[i];
    out[t] = s;
}
