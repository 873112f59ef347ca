// A host emulation of the HIP subset the generated AMD kernels use
// (tests/emu/decode_grid_emu.cpp and the others), on the emulation's core
// (emu_core.h: fibers for threads, waves of 64 lanes exchanging values for
// __shfl and MFMA, cooperative launches with every workgroup at once).
//
// MFMA 16x16x16 follows the CDNA3 ISA's layout: lane l holds A[l % 16][k]
// and B[k][l % 16] for k = 4 (l / 16) .. + 3, and D[4 (l / 16) + i][l % 16].
// This checks the kernel's index algebra against that layout, not the
// hardware.
#ifndef FG_EMU_HIP_RUNTIME_H
#define FG_EMU_HIP_RUNTIME_H

#include "emu_core.h"

constexpr int kEmuWave = 64;   // lanes a wave (the launches take it: emu_runtime.h)

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

#define __builtin_amdgcn_s_memrealtime() emu_realtime()
#define __HIP_MEMORY_SCOPE_AGENT 4   // (clang's values)
#define __HIP_MEMORY_SCOPE_SYSTEM kEmuScopeSystem
#define __hip_atomic_fetch_add(p, v, order, scope) emu_atomic_fetch_add((p), (v), (order))
#define __hip_atomic_load(p, order, scope) emu_atomic_load((p), (order), (scope))
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
