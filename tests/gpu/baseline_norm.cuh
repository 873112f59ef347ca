// RMSNorm for the unfused baselines of the GPU test programs (device code):
// one block a row, fp32 sums, the storage type's rounding once at the end,
// as the C references compute it.
#pragma once
#include "device_convert.cuh"

// rsqrt(mean(r[0..n)^2) + eps), the whole block taking part (once a kernel:
// its shared sums are not reset)
template <typename T>
__device__ float fgh_inv_rms(const T *r, int n, float eps)
{
    __shared__ float red[32];
    float ss = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = fgh_to_f(r[i]);
        ss += v * v;
    }
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = ss;
    __syncthreads();
    float t = 0.f;
    for (int i = 0; i < (int)blockDim.x / 32; i++)
        t += red[i];
    return rsqrtf(t / n + eps);
}

// y[b] = x[b] * rsqrt(mean(x[b]^2) + eps) * w, block b for row b (n values)
template <typename T>
__global__ void fgh_rmsnorm_rows(const T *x, const T *w, T *y, int n, float eps)
{
    const T *xb = x + (size_t)blockIdx.x * n;
    const float inv = fgh_inv_rms(xb, n, eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        y[(size_t)blockIdx.x * n + i] = fgh_from_f<T>(fgh_to_f(xb[i]) * inv * fgh_to_f(w[i]));
}
