// The MLA core run on the CPU against the C reference of the GPU tests
// (tests/gpu/ref_mla.c): the kernel through mla_core_kernel.cpp's emulation
// (each block's threads fibers), its portable form lowered to HIP (waves of
// 64, the grid's workgroups one after another, so the splits' partial
// results meet through the workspace and the last split's ticket) or its
// sm_90a form (warps of 32, wgmma, every block at once: a cooperative
// launch's grid barrier meets, and so do a cluster's blocks).  Requests of
// the whole cache (less a page each third), 100 keys (inside a page) and one
// key, the rows past them NaN.  Checks out against the reference (rel L2
// 2e-3 f16 / 1e-2 bf16), the log-sum-exp (1e-3), nothing non-finite, a
// second launch bitwise equal, and both within the workspace, counters and
// shared memory the planner sized (the manifest's figures and grid; its path
// the one argument); then a launch of batch B - 1 that leaves the last slot
// as it was.  Prints `N passed, N failed`; exit status 1 on any failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_common.h"
#include "mla_core_emu.h"
#include "ref_mla.h"

static const emu_mla_dims &D = emu_mla;
static EmuChecks checks = {D.name};

int main(int argc, char **argv)
{
    const EmuPlanned planned = emu_planned(argc, argv, D.name);
    const uint64_t seed = emu_seed();
    const fgh_dtype dt = emu_dtype(D.f16);
    const double tol = emu_tolerance(D.f16);
    const float scale = 0.0721687836f;   // 1/sqrt(128 + 64)
    const int B = D.bmax, pages_per = D.page ? D.max_context / D.page : 0;
    const size_t rows = (size_t)B * D.max_context;   // a pool of every request's pages
    typedef uint16_t st;
    std::vector<st> q((size_t)B * D.heads * D.d), cache(rows * D.d),
        out((size_t)B * D.heads * D.kv_lora);
    fgh_fill_host(q.data(), dt, q.size(), seed + 21, 1.0f);
    fgh_fill_host(cache.data(), dt, cache.size(), seed + 22, 1.0f);
    std::vector<int> lengths(B), table(D.page ? (size_t)B * pages_per : 1, 0);
    // the whole cache (less a page each third request, while there are
    // pages), a length inside a page, one key
    for (int b = 0; b < B; b++)
        lengths[b] = b % 3 == 1 ? 100 : b % 3 == 2 ? 1 : std::max(D.max_context - 64 * (b / 3), 100);
    for (size_t i = 0; D.page && i < table.size(); i++)   // the pool's pages shuffled
        table[i] = (int)((i * 5 + 1) % table.size());
    std::vector<double> o_ref((size_t)B * D.heads * D.kv_lora), lse_ref((size_t)B * D.heads);
    fgh_mla_cfg cfg = {};
    cfg.batch = B, cfg.heads = D.heads, cfg.kv_lora = D.kv_lora, cfg.rope = D.d - D.kv_lora;
    cfg.max_context = D.max_context, cfg.scale = scale, cfg.dtype = dt;
    cfg.page_size = D.page, cfg.page_table = D.page ? table.data() : nullptr;
    cfg.max_pages = pages_per;
    // the rows past each request's keys NaN, as test_mla_decode leaves them:
    // a kernel that reads one and weighs it 0 still shows
    for (int b = 0; b < B; b++)
        for (int t = lengths[b]; t < D.max_context; t++)
            std::memset(cache.data() + fgh_mla_row_at(&cfg, b, t), 0xff, (size_t)D.d * sizeof(st));
    fgh_ref_mla(&cfg, q.data(), cache.data(), lengths.data(), o_ref.data(), lse_ref.data());

    std::vector<float> lse((size_t)B * D.heads);
    // the workspace, counters (zeroed at bind) and LDS as the planner sized them
    EmuGuarded ws(planned.workspace_bytes), counters(planned.counters * sizeof(unsigned));
    EmuLds smem(planned.dynamic_smem, D.cooperative ? planned.grid[0] * planned.grid[1] * planned.grid[2] : 1);
    std::vector<st> first;
    size_t outside = 0;
    for (int run = 0; run < 2; run++) {
        std::memset(out.data(), 0xff, out.size() * sizeof(st));   // NaN: unwritten shows
        std::memset(lse.data(), 0xff, lse.size() * sizeof(float));
        ws.fill(0xff);
        smem.fill(0xff);
        emu_mla_launch(q.data(), cache.data(), table.data(), lengths.data(), out.data(),
                       lse.data(), ws.as<float>(), counters.as<unsigned>(), planned.grid,
                       planned.cluster, smem.pointers(), planned.dynamic_smem, B, scale);
        outside += ws.touched() + counters.touched() + smem.touched();
        if (run == 0) {
            first = out;
            continue;
        }
        checks.check(first == out, "a second launch (on the counters the first left) gives the same bits", 0);
    }
    checks.check(outside == 0, "the launches within the planner's workspace, counters and shared memory "
                 "(bytes past them written)", (double)outside);
    const unsigned *tickets = counters.as<unsigned>();
    checks.check(std::all_of(tickets, tickets + planned.counters, [](unsigned c) { return c == 0; }),
                 "every ticket reset for the next launch", 0);
    for (int b = 0; b < B; b++) {
        char what[96];
        const size_t o0 = (size_t)b * D.heads * D.kv_lora;
        const fgh_err e = fgh_compare(out.data() + o0, dt, o_ref.data() + o0, (size_t)D.heads * D.kv_lora);
        std::snprintf(what, sizeof what, "request %d, %d keys: out rel L2 <= %.0e", b, lengths[b], tol);
        checks.check(e.nonfinite == 0 && e.rel_l2 <= tol, what, e.rel_l2);
        double worst = 0;
        for (int h = 0; h < D.heads; h++) {
            const double g = lse[(size_t)b * D.heads + h], w = lse_ref[(size_t)b * D.heads + h];
            worst = std::isfinite(g) ? std::max(worst, std::fabs(g - w)) : INFINITY;
        }
        std::snprintf(what, sizeof what, "request %d: lse within 1e-3", b);
        checks.check(worst <= 1e-3, what, worst);
    }
    if (B > 1) {   // the last slot inactive (batch B - 1): left as it was, the others right
        std::memset(out.data(), 0xff, out.size() * sizeof(st));
        std::memset(lse.data(), 0xff, lse.size() * sizeof(float));
        ws.fill(0xff);
        smem.fill(0xff);
        emu_mla_launch(q.data(), cache.data(), table.data(), lengths.data(), out.data(),
                       lse.data(), ws.as<float>(), counters.as<unsigned>(), planned.grid,
                       planned.cluster, smem.pointers(), planned.dynamic_smem, B - 1, scale);
        const size_t n = (size_t)D.heads * D.kv_lora, last = (size_t)(B - 1) * n;
        const unsigned char *o = reinterpret_cast<const unsigned char *>(out.data() + last);
        const unsigned char *l = reinterpret_cast<const unsigned char *>(lse.data() + (size_t)(B - 1) * D.heads);
        checks.check(std::all_of(o, o + n * sizeof(st), [](unsigned char c) { return c == 0xff; }) &&
                         std::all_of(l, l + D.heads * sizeof(float), [](unsigned char c) { return c == 0xff; }),
                     "batch B - 1: the inactive last slot's out and lse untouched", 0);
        const fgh_err e = fgh_compare(out.data(), dt, o_ref.data(), last);
        char what[96];
        std::snprintf(what, sizeof what, "batch B - 1: the active requests' out rel L2 <= %.0e", tol);
        checks.check(e.nonfinite == 0 && e.rel_l2 <= tol, what, e.rel_l2);
    }
    return checks.summary();
}
