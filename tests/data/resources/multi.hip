// Source of the amdgpu_multi_*.log fixtures: several kernels in one file
// (extern "C", C++-mangled, LDS use, scratch from a local array in a callee
// that is not a spill).  Captured from the repository root with
//   clang++-19 -x hip --offload-arch=gfx942 --rocm-path=/usr \
//     --rocm-device-lib-path=DIR --offload-device-only --no-gpu-bundle-output \
//     -O3 -Rpass-analysis=kernel-resource-usage -c tests/data/resources/multi.hip \
//     -o /tmp/multi.co
// (and the same for gfx90a), DIR made by scripts/hip-devlibs.sh.
#include <hip/hip_runtime.h>

extern "C" __global__ void plain_c(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= 2.f;
}

__global__ void mangled(float *x, const float *y, int n)
{
    __shared__ float s[256];
    int i = threadIdx.x;
    s[i] = y[i];
    __syncthreads();
    x[i] = s[255 - i] * n;
}

__device__ __noinline__ float helper(float *p, int k)
{
    float a[32];
    for (int i = 0; i < 32; i++)
        a[i] = p[i * k];
    return a[k & 31];
}

extern "C" __global__ void calls(float *x) { x[threadIdx.x] = helper(x, threadIdx.x); }
