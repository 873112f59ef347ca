/* The host emulation's launches (emu_runtime.cpp), each workgroup as
 * `threads` fibers running fn. */
#ifndef FG_EMU_RUNTIME_H
#define FG_EMU_RUNTIME_H

#include "emu_core.h"

/* Every workgroup of `grid`, one after another, on the caller's thread (its
 * emu_dyn_smem the dynamic LDS of each), in waves of `wave` lanes (the
 * shim's kEmuWave): for kernels whose workgroups never wait on each other. */
void emu_run_grid(emu_dim3 grid, int threads, int wave, void (*fn)());

/* A cooperative launch: every workgroup of `grid` at once (grid barriers
 * and waits on other workgroups' counters meet), each on a host thread of
 * its own with the dynamic LDS smem[w] (w = x + grid.x (y + grid.y z)) and
 * its own copy of the kernel's `__shared__` variables; waves of `wave`
 * lanes. */
void emu_run_cooperative(emu_dim3 grid, int threads, int wave, unsigned char *const *smem, void (*fn)());

#endif
