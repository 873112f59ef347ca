// The emulated side of tests/emu's GEMM test: the overlap family's GEMM for
// AMD (KERNEL_SRC, from templates/overlap_gemm_portable.in; kernel KERNEL; its
// LDS a static array, which the shim makes a static) compiled for the host
// with the HIP shim, and the plain-C interface of gemm_emu.h.  The test is
// gemm_emu.cpp.
#include <hip/hip_runtime.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include KERNEL_SRC

#include "emu_common.h"
#include "emu_runtime.h"
#include "gemm_emu.h"

extern "C" const emu_gemm_dims emu_gemm = {
    EMU_KERNEL_NAME, EMU_F16,
    N, K, BM, BN, BK, GROUP_M, XCDS, GRID, THREADS,
};

extern "C" int emu_gemm_lds_at(int row, int c) { return lds_at(row, c); }
extern "C" int emu_gemm_split(int tiles, int grid) { return rounds_of(tiles, grid).split; }

// The last round's split over K: GRID tiles' partial sums (poisoned, NaN,
// before each launch) and GRID / 2 counters (zeroed once, as the runtime's
// binding does; each launch leaves them at zero).
static std::vector<float4> split_ws((size_t)GRID * BM * BN / 4);
static std::vector<unsigned> split_counters(GRID / 2, 0u);

static struct Launch {
    const fg_t *a, *w;
    fg_t *c;
    int m_rows;
    emu_gemm_feed feed;
    unsigned *late, reported;
} launch_args;

static void thread_body()
{
    Launch &l = launch_args;
    const emu_gemm_feed &f = l.feed;
    KERNEL(l.a, l.w, l.c, l.m_rows, f.tile_rows, f.flags, f.epoch, f.own, f.shard_rows,
           f.piece_rows, f.flag_stride, f.status, f.limit_ns, f.done, f.done_rows, split_ws.data(),
           split_counters.data());
    if (threadIdx.x == 0 && l.late && f.status) {   // (thread 0 is the one that reports)
        l.late[blockIdx.x] = *f.status;
        l.reported |= *f.status;
        *f.status = 0;
    }
}

extern "C" void emu_gemm_launch(const void *a, const void *w, void *c, int m_rows, int grid,
                                const emu_gemm_feed *feed, unsigned *late)
{
    launch_args = {(const fg_t *)a, (const fg_t *)w, (fg_t *)c, m_rows,
                   feed ? *feed : emu_gemm_feed{}, late, 0};
    const float nan = std::nanf("");
    std::fill(split_ws.begin(), split_ws.end(), make_float4(nan, nan, nan, nan));
    emu_run_grid({(unsigned)grid, 1, 1}, THREADS, kEmuWave, thread_body);
    if (late && launch_args.feed.status)
        *launch_args.feed.status |= launch_args.reported;
}

static void (*poll_hook)(const unsigned *, int, void *);
static void *poll_ctx;
static void on_system_load(const void *p)
{
    poll_hook((const unsigned *)p, (int)blockIdx.x, poll_ctx);
}

extern "C" void emu_gemm_on_poll(void (*hook)(const unsigned *, int, void *), void *ctx)
{
    poll_hook = hook, poll_ctx = ctx;
    emu_system_load_hook = hook ? on_system_load : nullptr;
}

extern "C" int emu_gemm_split_counters_left(void)
{
    return (int)std::count_if(split_counters.begin(), split_counters.end(),
                              [](unsigned v) { return v != 0; });
}
