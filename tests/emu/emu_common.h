// The tests/emu scaffolding the tests share (decode, MLA core, MLA block,
// GEMM).  Two sides, chosen by whether KERNEL is defined:
//  - the emulated side (*_kernel.cpp: the generated source, KERNEL its kernel;
//    included after KERNEL_SRC): the instance's name and storage type as its
//    source has them;
//  - the test's side (*_emu.cpp, with the C references): the seed, the storage
//    type's dtype, ulp and tolerance, the checks (a line
//    `ok|FAIL <kernel>: <what> (<detail>)` each, counted, and the closing
//    `N passed, N failed` that run.sh sums), and the planner's figures for the
//    instance (its manifest.json entry, the launch's grid with them) with
//    buffers of exactly those sizes behind a guard, so that a launch needing
//    more than the planner gives it shows.
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
#include <cstring>
#include <ctime>
#include <vector>

#include <json-c/json.h>

#include "harness.h"

void emu_schedule_seed(uint64_t seed);   // (emu_runtime.cpp)

// The inputs' seed, and the fibers' order's: fresh each run, FG_EMU_SEED
// repeats one (printed; the host threads of a cooperative launch still
// interleave as the host runs them).
inline uint64_t emu_seed()
{
    const char *env = std::getenv("FG_EMU_SEED");
    const uint64_t seed = env ? std::strtoull(env, nullptr, 0) : (uint64_t)std::time(nullptr);
    std::printf("seed 0x%llx (FG_EMU_SEED)\n", (unsigned long long)seed);
    emu_schedule_seed(seed | 1);
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

// What the planner gives a launch of the instance, as its manifest.json entry
// has it (the runtime allocates from these figures).
struct EmuPlanned {
    size_t workspace_bytes, dynamic_smem;
    unsigned counters;
    unsigned grid[3];   // launch.grid
    unsigned block;     // launch.block[0]
    unsigned cluster;   // launch.cluster[0] (1 where the entry has none)
};

// The planner's figures for instance `name` from the manifest named on the
// command line (run.sh passes the one generated beside its source); where
// they cannot be read, says so and exits (a failed check).
inline EmuPlanned emu_planned(int argc, char **argv, const char *name)
{
    const char *why = "usage: <test> MANIFEST.json";
    EmuPlanned p = {};
    json_object *root = argc > 1 ? json_object_from_file(argv[1]) : nullptr, *list, *in = nullptr;
    if (argc > 1)
        why = "the manifest does not list the instance";
    if (root && json_object_object_get_ex(root, "instances", &list))
        for (size_t i = 0; i < json_object_array_length(list) && !in; i++) {
            json_object *o = json_object_array_get_idx(list, i), *n;
            if (json_object_object_get_ex(o, "name", &n) &&
                std::strcmp(json_object_get_string(n), name) == 0)
                in = o;
        }
    json_object *ws, *counters, *launch, *smem, *grid, *block, *cluster;
    const bool ok = in && json_object_object_get_ex(in, "workspace_bytes", &ws) &&
                    json_object_object_get_ex(in, "counters", &counters) &&
                    json_object_object_get_ex(in, "launch", &launch) &&
                    json_object_object_get_ex(launch, "dynamic_smem", &smem) &&
                    json_object_object_get_ex(launch, "grid", &grid) &&
                    json_object_array_length(grid) == 3 &&
                    json_object_object_get_ex(launch, "block", &block) &&
                    json_object_array_length(block) == 3;
    if (ok)
        p = {(size_t)json_object_get_int64(ws), (size_t)json_object_get_int64(smem),
             (unsigned)json_object_get_int64(counters),
             {(unsigned)json_object_get_int64(json_object_array_get_idx(grid, 0)),
              (unsigned)json_object_get_int64(json_object_array_get_idx(grid, 1)),
              (unsigned)json_object_get_int64(json_object_array_get_idx(grid, 2))},
             (unsigned)json_object_get_int64(json_object_array_get_idx(block, 0)), 1};
    if (ok && json_object_object_get_ex(launch, "cluster", &cluster) && json_object_array_length(cluster) == 3)
        p.cluster = (unsigned)json_object_get_int64(json_object_array_get_idx(cluster, 0));
    json_object_put(root);
    if (!ok) {
        std::printf("FAIL %s: the planner's figures (%s)\n0 passed, 1 failed\n", name,
                    in ? "workspace_bytes, counters, launch.dynamic_smem, launch.grid, launch.block" : why);
        std::exit(1);
    }
    std::printf("planned: workspace %zu B, %u counters, %zu B of dynamic LDS, a grid of %u x %u x %u, "
                "blocks of %u, clusters of %u (manifest)\n",
                p.workspace_bytes, p.counters, p.dynamic_smem, p.grid[0], p.grid[1], p.grid[2], p.block,
                p.cluster);
    return p;
}

// A buffer of `bytes` (a planner's figure), then as many again (4 KB at
// least) of a canary the kernel must not touch.
class EmuGuarded {
  public:
    explicit EmuGuarded(size_t bytes)
        : bytes_(bytes), buf_(bytes + std::max(bytes, (size_t)4096), 0)
    {
        std::memset(buf_.data() + bytes_, kCanary, buf_.size() - bytes_);
    }
    template <class T> T *as() { return reinterpret_cast<T *>(buf_.data()); }
    // Fills the planned bytes (0xff: NaN in float and the storage types).
    void fill(unsigned char byte) { std::memset(buf_.data(), byte, bytes_); }
    size_t bytes() const { return bytes_; }
    // Bytes of the guard changed.
    size_t touched() const
    {
        size_t n = 0;
        for (size_t i = bytes_; i < buf_.size(); i++)
            n += buf_[i] != kCanary;
        return n;
    }

  private:
    static constexpr unsigned char kCanary = 0xa5;
    size_t bytes_;
    std::vector<unsigned char> buf_;
};

// A cooperative launch's grid is one row of workgroups (gridDim.x), as
// emu_run_cooperative runs it: checked; false (the test ends) where not.
inline bool emu_cooperative_grid(const EmuPlanned &p, EmuChecks &checks)
{
    const bool row = p.grid[0] >= 1 && p.grid[1] == 1 && p.grid[2] == 1;
    checks.check(row, "the planned grid is one row of workgroups (gridDim.x)", (double)p.grid[0]);
    return row;
}

// The dynamic LDS of a cooperative launch: `bytes` (the planner's figure) for
// each of its workgroups, each behind a guard of its own.
class EmuLds {
  public:
    EmuLds(size_t bytes, unsigned workgroups) : parts_(workgroups, EmuGuarded(bytes))
    {
        for (EmuGuarded &g : parts_)
            pointers_.push_back(g.as<unsigned char>());
    }
    unsigned workgroups() const { return (unsigned)parts_.size(); }
    unsigned char *const *pointers() const { return pointers_.data(); }
    void fill(unsigned char byte)
    {
        for (EmuGuarded &g : parts_)
            g.fill(byte);
    }
    size_t touched() const
    {
        size_t n = 0;
        for (const EmuGuarded &g : parts_)
            n += g.touched();
        return n;
    }

  private:
    std::vector<EmuGuarded> parts_;
    std::vector<unsigned char *> pointers_;
};

#endif
#endif
