// Storage-type conversions for the baseline kernels of the GPU test programs
// (device code): fgh_to_f(v) widens f16/bf16 to float, fgh_from_f<T>(f) rounds
// to nearest even.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

template <typename T> __device__ __forceinline__ float fgh_to_f(T v);
template <> __device__ __forceinline__ float fgh_to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float fgh_to_f<__nv_bfloat16>(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}
template <typename T> __device__ __forceinline__ T fgh_from_f(float v);
template <> __device__ __forceinline__ __half fgh_from_f<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 fgh_from_f<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}
