/* Small clean kernels: no scratch, no spills.  The resource gate must accept
 * them.  Two entries, so one log reports more than one kernel; the second
 * uses LDS and a barrier, so "LDS Size" shows up in the report. */
#include <hip/hip_runtime.h>

extern "C" __global__ void
test_nospill(const float *__restrict__ x, float *__restrict__ y, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void __launch_bounds__(256)
test_nospill_smem(const float *__restrict__ x, float *__restrict__ out)
{
    __shared__ float tile[256];
    tile[threadIdx.x] = x[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    out[blockIdx.x * 256 + threadIdx.x] = tile[255 - threadIdx.x];
}
