// A host emulation of the HIP subset the generated AMD kernels use, so that
// a generated .hip source compiles with the host's clang and runs on the
// CPU (tests/emu/decode_grid_emu.cpp): each thread of a workgroup is a fiber
// (ucontext), waves of 64 lanes exchange values (__shfl, MFMA) at wave
// barriers, __syncthreads is a barrier of the workgroup's fibers.  A host
// thread runs one workgroup at a time (a cooperative launch runs every
// workgroup at once, each on its own host thread: emu_runtime.h), so
// `__shared__` variables are thread_local statics and threadIdx, blockIdx
// and the dynamic LDS emu_dyn_smem are thread_local (the test's build
// replaces the kernel's `extern __shared__` line with emu_dyn_smem).
//
// MFMA 16x16x16 follows the CDNA3 ISA's layout: lane l holds A[l % 16][k]
// and B[k][l % 16] for k = 4 (l / 16) .. + 3, and D[4 (l / 16) + i][l % 16].
// This checks the kernel's index algebra against that layout, not the
// hardware.
#ifndef FG_EMU_HIP_RUNTIME_H
#define FG_EMU_HIP_RUNTIME_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__ static
#define __shared__ static thread_local

struct emu_dim3 {
    unsigned x, y, z;
};
extern thread_local emu_dim3 threadIdx, blockIdx;
extern emu_dim3 gridDim, blockDim;
extern thread_local unsigned char *emu_dyn_smem;

struct float2 {
    float x, y;
};
struct __attribute__((aligned(16))) float4 {
    float x, y, z, w;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }

// The fibers' scheduling points.
void emu_yield();
void __syncthreads();
// Lane `lane`'s `bytes` from every lane of the caller's wave, in lane order
// (all 64 lanes take part); the result is valid until the next exchange.
const unsigned char *emu_wave_exchange(const void *mine, size_t bytes);

template <class T> T __shfl(T v, int src, int width = 64)
{
    const unsigned char *all = emu_wave_exchange(&v, sizeof v);
    const int lane = (int)(threadIdx.x % 64), base = lane - lane % width;
    T out;
    std::memcpy(&out, all + (size_t)(base + (src % width)) * sizeof v, sizeof v);
    return out;
}
template <class T> T __shfl_xor(T v, int mask, int width = 64)
{
    const int lane = (int)(threadIdx.x % 64);
    return __shfl(v, (lane ^ mask) % width, width);
}

unsigned atomicAdd(unsigned *p, unsigned v);
unsigned atomicOr(unsigned *p, unsigned v);
long long clock64();
// s_memrealtime: a tick (10 ns of the 100 MHz clock the kernels assume) a
// read, so a wait's time limit is a count of polls.
unsigned long long emu_realtime();
#define __builtin_amdgcn_s_memrealtime() emu_realtime()
template <class T> T __ldg(const T *p) { return *p; }

#define __HIP_MEMORY_SCOPE_AGENT 4   // (clang's values)
#define __HIP_MEMORY_SCOPE_SYSTEM 5
// Called (when set) before each system-scope atomic load, with its address:
// a test's hook, which may land data and its flag mid-wait and count polls.
extern void (*emu_system_load_hook)(const void *p);
// After an atomic add: where this workgroup is a cooperative launch's
// lagging one, a pause (emu_runtime.cpp).
void emu_after_atomic();
template <class T, class V> T emu_atomic_fetch_add(T *p, V v, int order)
{
    const T old = __atomic_fetch_add(p, (T)v, order);
    emu_after_atomic();
    return old;
}
#define __hip_atomic_fetch_add(p, v, order, scope) emu_atomic_fetch_add((p), (v), (order))
#define __hip_atomic_load(p, order, scope) emu_atomic_load((p), (order), (scope))
template <class T> T emu_atomic_load(const T *p, int order, int scope)
{
    emu_yield();   // (a spinning wait lets the others run)
    if (scope == __HIP_MEMORY_SCOPE_SYSTEM && emu_system_load_hook)
        emu_system_load_hook(p);
    T v;
    __atomic_load(p, &v, order);
    return v;
}
#define __builtin_amdgcn_s_sleep(n) emu_yield()
#define __builtin_amdgcn_wave_barrier() ((void)0)
#define __builtin_amdgcn_sched_barrier(mask) ((void)0)
#define __builtin_amdgcn_fence(order, scope) __atomic_thread_fence(order)

typedef float emu_f32x4 __attribute__((ext_vector_type(4)));
typedef _Float16 emu_f16x4 __attribute__((ext_vector_type(4)));
typedef short emu_i16x4 __attribute__((ext_vector_type(4)));
emu_f32x4 emu_mfma_f16(emu_f16x4 a, emu_f16x4 b, emu_f32x4 c, int, int, int);
emu_f32x4 emu_mfma_bf16(emu_i16x4 a, emu_i16x4 b, emu_f32x4 c, int, int, int);
#define __builtin_amdgcn_mfma_f32_16x16x16f16 emu_mfma_f16
#define __builtin_amdgcn_mfma_f32_16x16x16bf16_1k emu_mfma_bf16

// The kernels' AMD branches (`#if defined(__HIP__)`), as clang -x hip has it.
#define __HIP__ 1

#endif
