// The tests/emu scaffolding the three tests share (decode grid, MLA portable,
// GEMM).  Two sides, chosen by whether KERNEL is defined:
//  - the emulated side (*_kernel.cpp: the generated source, KERNEL its kernel;
//    included after KERNEL_SRC): the instance's name and storage type as its
//    source has them;
//  - the test's side (*_emu.cpp, with the C references): the seed, the storage
//    type's dtype, ulp and tolerance, and the checks (a line
//    `ok|FAIL <kernel>: <what> (<detail>)` each, counted, and the closing
//    `N passed, N failed` that run.sh sums).
#ifndef FG_EMU_COMMON_H
#define FG_EMU_COMMON_H

#if defined(KERNEL)

#define EMU_STR2(x) #x
#define EMU_STR(x) EMU_STR2(x)
#define EMU_KERNEL_NAME EMU_STR(KERNEL)
#if defined(FG_DTYPE_F16)
#define EMU_F16 1   // the storage type: 1 f16, 0 bf16
#else
#define EMU_F16 0
#endif

#else

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "harness.h"

// The inputs' seed: fresh each run, FG_EMU_SEED repeats one (printed).
inline uint64_t emu_seed()
{
    const char *env = std::getenv("FG_EMU_SEED");
    const uint64_t seed = env ? std::strtoull(env, nullptr, 0) : (uint64_t)std::time(nullptr);
    std::printf("seed 0x%llx (FG_EMU_SEED)\n", (unsigned long long)seed);
    return seed;
}

inline fgh_dtype emu_dtype(bool f16) { return f16 ? FGH_F16 : FGH_BF16; }

// The outputs' relative L2 error against a reference at most.
inline double emu_tolerance(bool f16) { return f16 ? 2e-3 : 1e-2; }

// One unit in the last place of v in the storage type.
inline double emu_ulp(bool f16, double v)
{
    const int mant = f16 ? 10 : 7, emin = f16 ? -14 : -126;
    const int e = v == 0 ? emin : std::max(emin, (int)std::floor(std::log2(std::fabs(v))));
    return std::ldexp(1.0, e - mant);
}

struct EmuChecks {
    const char *kernel;
    int passed = 0, failed = 0;
    void check(bool ok, const char *what, double detail)
    {
        std::printf("%s %s: %s (%.3e)\n", ok ? "ok" : "FAIL", kernel, what, detail);
        (ok ? passed : failed)++;
    }
    // Prints the closing line; the exit status of main.
    int summary() const
    {
        std::printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
    }
};

#endif
#endif
