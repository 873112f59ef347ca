/* A kernel that must spill under the normal gfx942 and gfx90a flags, so the
 * resource gate has something to reject.  __launch_bounds__(1024) puts 16
 * wave64 waves of a block on one CU, 4 per SIMD, which leaves 512 / 4 = 128
 * registers (VGPRs and AGPRs together) per lane, while the loop below keeps
 * all FG_LIVE accumulators live at once (each update reads its neighbour).
 * The rest go to scratch: "VGPRs Spill" > 0. */
#include <hip/hip_runtime.h>

#define FG_LIVE 192

extern "C" __global__ void __launch_bounds__(1024)
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
