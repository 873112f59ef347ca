// The tests/emu tests' checks: a line `ok|FAIL <kernel>: <what> (<detail>)`
// each, counted, and the closing `N passed, N failed` (run.sh sums those).
#ifndef FG_EMU_CHECK_H
#define FG_EMU_CHECK_H

#include <cstdio>

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
