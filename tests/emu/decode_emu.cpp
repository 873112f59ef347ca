// The decode family run on the CPU against the C reference of the GPU tests
// (tests/gpu/ref_decode.c): the grid form lowered to HIP or to CUDA (sm_90a),
// and the sm_90a register and ring forms (clusters of blocks that reach each
// other's shared memory), each through decode_kernel.cpp's emulation (every
// workgroup at once, each on a host thread of its own, each of its threads a
// fiber, waves of 64 or warps of 32 exchanging values at wave barriers).
// What this checks with no GPU: the index algebra (MFMA or mma fragments as
// the ISAs lay them out, the rows staged in shared memory, the merge of runs
// and of a cluster's partials), its roundings, the appended rows (poisoned
// before each launch, as y, the workspace and shared memory are; the
// register form's fast twin keeps its heads' sums at the workspace's start,
// zeroed at bind and by each launch), inactive slots, that a second launch
// (on the counters the first left) gives the same bits (that twin, which
// sums in arrival order: to one ulp), and that the launches stay within the
// workspace, counters and LDS the planner sized (the manifest's figures and
// grid; its path the one argument); on a grid of several workgroups also
// the phases' shares over the grid and its grid barriers, cluster barriers
// and remote arrivals.
// Not its memory ordering beyond what the host's shows, or its speed.
// Prints `N passed, N failed`; exit status 1 on any failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "decode_emu.h"
#include "emu_common.h"
#include "ref_decode.h"

static const emu_decode_dims &D = emu_dims;
static EmuChecks checks = {D.name};

int main(int argc, char **argv)
{
    const EmuPlanned planned = emu_planned(argc, argv, D.name);
    if (!emu_cooperative_grid(planned, checks))
        return checks.summary();
    const uint64_t seed = emu_seed();
    const fgh_dtype dt = emu_dtype(D.f16);
    const double tol = emu_tolerance(D.f16);
    const int B = D.bmax, H = D.hidden, HD = D.head_dim, NKV = D.kv_heads;
    const int R1 = (D.heads + 2 * NKV) * HD, QD = D.heads * HD;
    const size_t cache_rows = D.page ? (size_t)B * D.pages * NKV * D.page
                                     : (size_t)B * NKV * D.max_context;
    typedef uint16_t st;   // the storage type's bits
    std::vector<st> x((size_t)B * H), norm_w(H), w_qkv((size_t)R1 * H), b_qkv(R1),
        w_o((size_t)H * QD), k(cache_rows * HD), v(cache_rows * HD), y((size_t)B * H);
    fgh_fill_host(x.data(), dt, x.size(), seed + 11, 1.0f);
    fgh_fill_host(norm_w.data(), dt, norm_w.size(), seed + 12, 1.0f);
    fgh_fill_host(w_qkv.data(), dt, w_qkv.size(), seed + 13, 0.05f);
    fgh_fill_host(b_qkv.data(), dt, b_qkv.size(), seed + 14, 0.5f);
    fgh_fill_host(w_o.data(), dt, w_o.size(), seed + 15, 0.05f);
    fgh_fill_host(k.data(), dt, k.size(), seed + 16, 1.0f);
    fgh_fill_host(v.data(), dt, v.size(), seed + 17, 1.0f);
    // positions: the last row, a page's first row, an inactive slot (-1),
    // a middle row
    std::vector<int> pos(B);
    const int picks[4] = {D.max_context - 1, 16, -1, 100};
    for (int b = 0; b < B; b++)
        pos[b] = picks[b % 4];
    // the block table: the pool's pages dealt out in a shuffled order
    std::vector<int> table(D.page ? (size_t)B * D.pages : 1, 0);
    for (size_t i = 0; D.page && i < table.size(); i++)
        table[i] = (int)((i * 7 + 3) % table.size());
    // the rows past each position NaN, as test_decode_attn leaves them: a
    // kernel that reads one and weighs it 0 still shows
    for (int b = 0; b < B; b++)
        for (int t = pos[b] + 1; pos[b] >= 0 && t < D.max_context; t++)
            for (int h = 0; h < NKV; h++) {
                const size_t base = emu_cache_row(table.data(), b, h, t);
                std::memset(k.data() + base, 0xff, HD * sizeof(st));
                std::memset(v.data() + base, 0xff, HD * sizeof(st));
            }
    std::vector<st> k_ref = k, v_ref = v;
    std::vector<double> y_ref((size_t)B * H);
    fgh_decode_cfg cfg = {};
    cfg.hidden = H, cfg.heads = D.heads, cfg.head_dim = HD, cfg.max_context = D.max_context;
    cfg.batch = B, cfg.neox = D.neox, cfg.rmsnorm = D.rmsnorm, cfg.eps = 1e-5f, cfg.dtype = dt;
    cfg.kv_heads = NKV, cfg.sliding_window = D.window, cfg.inv_freq = D.inv_freq;
    const fgh_kv_view view = {k_ref.data(), v_ref.data(), D.page,
                              D.page ? table.data() : nullptr, D.pages};
    fgh_ref_decode_kv(&cfg, x.data(), norm_w.data(), w_qkv.data(),
                      D.qkv_bias ? b_qkv.data() : nullptr, w_o.data(), &view, pos.data(),
                      y_ref.data());

    // the workspace, counters (zeroed at bind) and LDS as the planner sized them
    EmuGuarded ws(planned.workspace_bytes), counters(planned.counters * sizeof(unsigned));
    EmuLds smem(planned.dynamic_smem, planned.grid[0]);
    std::vector<st> first;
    size_t outside = 0;
    for (int run = 0; run < 2; run++) {
        std::memset(y.data(), 0xff, y.size() * sizeof(st));   // NaN: unwritten shows
        for (int b = 0; b < B; b++)   // the appended rows too: one read before it is written shows
            for (int h = 0; pos[b] >= 0 && h < NKV; h++) {
                const size_t base = emu_cache_row(table.data(), b, h, pos[b]);
                std::memset(k.data() + base, 0xff, HD * sizeof(st));
                std::memset(v.data() + base, 0xff, HD * sizeof(st));
            }
        // (the sums at its start zeroed as at bind, and by each launch)
        std::memset(ws.as<unsigned char>() + D.ws_sum_bytes, 0xff, planned.workspace_bytes - D.ws_sum_bytes);
        smem.fill(0xff);
        emu_decode_launch(x.data(), norm_w.data(), w_qkv.data(), b_qkv.data(), w_o.data(),
                          k.data(), v.data(), table.data(), pos.data(), y.data(), ws.as<float>(),
                          counters.as<unsigned>(), smem.pointers(), planned.dynamic_smem,
                          smem.workgroups(), planned.cluster, (int)planned.block, B, 1e-5f);
        outside += ws.touched() + counters.touched() + smem.touched();
        if (run == 0) {   // (the second appends the same rows again)
            first = y;
            continue;
        }
        if (!D.ws_sum_bytes) {
            checks.check(first == y, "a second launch (on the counters the first left) gives the same bits", 0);
            continue;
        }
        // the heads' sums in arrival order (atomics): equal to rounding, as
        // test_decode_attn's replays of such instances
        double worst = 0;
        for (size_t i = 0; i < y.size(); i++) {
            const double a = fgh_get(first.data(), dt, i), b = fgh_get(y.data(), dt, i);
            worst = std::max(worst, std::fabs(a - b) / emu_ulp(D.f16, std::max(std::fabs(a), std::fabs(b))));
        }
        checks.check(worst <= 1, "a second launch (on the counters the first left) within one ulp of the first "
                     "(the heads summed in arrival order)", worst);
    }
    checks.check(outside == 0, "the launches within the planner's workspace, counters and LDS "
                 "(bytes past them written)", (double)outside);
    if (D.ws_sum_bytes) {
        const unsigned char *w = ws.as<unsigned char>();
        checks.check(std::all_of(w, w + D.ws_sum_bytes, [](unsigned char c) { return c == 0; }),
                     "the workspace's sums left zeroed for the next launch", (double)D.ws_sum_bytes);
    }
    for (int b = 0; b < B; b++) {
        char what[96];
        const size_t row = (size_t)b * H;
        if (pos[b] < 0) {
            bool zero = true;
            for (int i = 0; i < H; i++)
                zero = zero && fgh_get(y.data(), dt, row + i) == 0.f;
            std::snprintf(what, sizeof what, "request %d inactive: y zeros", b);
            checks.check(zero, what, 0);
            continue;
        }
        const fgh_err e = fgh_compare(y.data() + row, dt, y_ref.data() + row, H);
        std::snprintf(what, sizeof what, "request %d at pos %d: y rel L2 <= %.0e", b, pos[b], tol);
        checks.check(e.nonfinite == 0 && e.rel_l2 <= tol, what, e.rel_l2);
    }
    // The appended rows within one storage ulp of the reference's plus a
    // quarter ulp of the row's largest element (test_decode_attn's rule: the
    // normalized x is rounded from fp32 here, from double there); every other
    // cache element unchanged.
    std::vector<char> appended(k.size(), 0);
    size_t row_bad = 0, other_bad = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; pos[b] >= 0 && h < NKV; h++) {
            const size_t base = emu_cache_row(table.data(), b, h, pos[b]);
            for (int c = 0; c < 2; c++) {
                const std::vector<st> &got = c ? v : k, &want = c ? v_ref : k_ref;
                double rowmax = 0;
                for (int d = 0; d < HD; d++)
                    rowmax = std::max(rowmax, (double)std::fabs(fgh_get(want.data(), dt, base + d)));
                for (int d = 0; d < HD; d++) {
                    const double g = fgh_get(got.data(), dt, base + d);
                    const double w = fgh_get(want.data(), dt, base + d);
                    row_bad += !(std::fabs(g - w) <= emu_ulp(D.f16, w) + 0.25 * emu_ulp(D.f16, rowmax));
                    appended[base + d] = 1;
                }
            }
        }
    for (size_t i = 0; i < k.size(); i++)
        other_bad += !appended[i] && (k[i] != k_ref[i] || v[i] != v_ref[i]);
    checks.check(row_bad == 0, "appended rows within one ulp of the reference's", (double)row_bad);
    checks.check(other_bad == 0, "no cache element changed outside the appended rows", (double)other_bad);
    return checks.summary();
}
