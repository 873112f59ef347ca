// The host emulation's core, shared by its two kernel languages' shims
// (hip/hip_runtime.h for the AMD kernels, cuda_emu.h for the sm_90a ones),
// so that a generated kernel source compiles with the host's clang and runs
// on the CPU: each thread of a workgroup (block) is a fiber (ucontext), the
// lanes of a wave (warp: the shim's kEmuWave of them) exchange values at wave
// barriers, __syncthreads is a barrier of the workgroup's fibers.  A host
// thread runs one workgroup at a time (a cooperative launch runs every
// workgroup at once, each on its own host thread: emu_runtime.h), so
// `__shared__` variables are thread_local statics and threadIdx, blockIdx
// and the dynamic shared memory emu_dyn_smem are thread_local (the test's
// build replaces the kernel's `extern __shared__` line with emu_dyn_smem).
// The runtime is emu_runtime.cpp.
#ifndef FG_EMU_CORE_H
#define FG_EMU_CORE_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
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
// The fibers' order in each round shuffled from `seed` (0: thread order).
void emu_schedule_seed(uint64_t seed);
void __syncthreads();
// `bytes` from every lane of the caller's wave, in lane order (all its lanes
// take part); the result is valid until the next exchange.
const unsigned char *emu_wave_exchange(const void *mine, size_t bytes);
// The caller's wave meets (all its lanes take part).
void emu_wave_barrier();

unsigned atomicAdd(unsigned *p, unsigned v);
unsigned atomicOr(unsigned *p, unsigned v);
long long clock64();
// s_memrealtime: a tick (10 ns of the 100 MHz clock the kernels assume) a
// read, so a wait's time limit is a count of polls.
unsigned long long emu_realtime();
template <class T> T __ldg(const T *p) { return *p; }

// After an atomic add of memory order `order`: where it releases and this
// workgroup is a cooperative launch's lagging one, a pause (emu_runtime.cpp).
void emu_after_atomic(int order);
template <class T, class V> T emu_atomic_fetch_add(T *p, V v, int order)
{
    const T old = __atomic_fetch_add(p, (T)v, order);
    emu_after_atomic(order);
    return old;
}
// Called (when set) before each system-scope atomic load, with its address:
// a test's hook, which may land data and its flag mid-wait and count polls.
extern void (*emu_system_load_hook)(const void *p);
constexpr int kEmuScopeSystem = 5;   // (clang's __HIP_MEMORY_SCOPE_SYSTEM)
template <class T> T emu_atomic_load(const T *p, int order, int scope)
{
    emu_yield();   // (a spinning wait lets the others run)
    if (scope == kEmuScopeSystem && emu_system_load_hook)
        emu_system_load_hook(p);
    T v;
    __atomic_load(p, &v, order);
    return v;
}

#endif
