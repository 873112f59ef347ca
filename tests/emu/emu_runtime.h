/* The HIP host emulation's launch (emu_runtime.cpp): every workgroup of
 * `grid`, one after another, each as `threads` fibers running fn. */
#ifndef FG_EMU_RUNTIME_H
#define FG_EMU_RUNTIME_H

#include <hip/hip_runtime.h>

void emu_run_grid(emu_dim3 grid, int threads, void (*fn)());

#endif
