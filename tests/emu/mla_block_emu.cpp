// The whole MLA block, its portable form as lowered to HIP or to CUDA, or
// its sm_90a form, run on the CPU against the C reference of the GPU tests
// (tests/gpu/ref_mla_block.c: K and V per head from the latent rows, so
// W_uk's absorption into q and W_uv's after the attention are checked): the
// kernel through mla_block_kernel.cpp's emulation (a cooperative grid: every
// workgroup at once, each on a host thread of its own as fibers, waves of 64
// or warps of 32), on inputs laid out as test_mla_block.cu makes them
// (Hugging Face's weight layouts, norm weights around 1, a shuffled block
// table where paged).  What this checks with no GPU: the index algebra (the
// projections' MFMA or mma fragments and their squares' shuffles, the
// absorption, the attention loop; the sm_90a form's ring of bulk copies and
// mbarriers as cuda_emu.h stands them in), its roundings, the appended latent rows and inactive slots, and on
// a grid of several workgroups the phases' shares of the work over the grid,
// its grid barriers and the splits' merge (on one, a request's keys are one
// split and the attention writes o_lat itself).  Not its memory ordering
// beyond what the host's (x86: stores in order) shows, or its speed.
// Checks, per case: y per request against the reference (rel L2 2e-3 f16 /
// 1e-2 bf16, nothing non-finite), the appended row at pos against the
// reference's (rounded once; the same limits), an inactive slot's y exactly
// 0, no other cache row changed, a NaN in one request's x in all its
// outputs and no other's; a second launch (y, workspace and the
// appended rows poisoned again) bitwise equal; all launches within the
// workspace, counters and LDS the planner sized (the manifest's figures; its
// path the one argument), on the grid it planned.  Prints
// `N passed, N failed`; exit status 1 on any failure.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_common.h"
#include "mla_block_emu.h"
#include "ref_mla_block.h"

static const emu_mla_block_dims &D = emu_mla_block;
static EmuChecks checks = {D.name};
typedef uint16_t st;   // the storage type's bits

namespace {

// Norm weights around 1 (U(0.75, 1.25)), as test_mla_block's.
std::vector<st> norm_weights(int n, fgh_dtype t, uint64_t seed)
{
    std::vector<st> w(n);
    for (int i = 0; i < n; i++)
        w[i] = fgh_round_to(t, 1.0 + fgh_uniform(seed, i, 0.25f));
    return w;
}

std::vector<st> random_values(size_t n, fgh_dtype t, uint64_t seed, float scale)
{
    std::vector<st> v(n);
    fgh_fill_host(v.data(), t, n, seed, scale);
    return v;
}

struct Problem {
    int B, W;   // requests; a latent row's width
    std::vector<st> x, input_norm, w_q, w_q_a, q_a_norm, w_q_b, w_kv_a, kv_a_norm, w_kv_b, w_o, cache;
    std::vector<int> table;   // the page of request b's token t: table[b pages_per + t / page]
    // request b's row t in the cache (the kernel's cache_row, test_mla_block's)
    size_t row(int b, int t) const
    {
        const size_t r = !D.page ? (size_t)b * D.max_context + t
                                 : (size_t)table[(size_t)b * (D.max_context / D.page) + t / D.page] * D.page +
                                       t % D.page;
        return r * W;
    }
};

// Every input of a launch at batch B, test_mla_block's make_problem on the host.
Problem make_problem(int B, uint64_t seed, fgh_dtype t)
{
    Problem p;
    p.B = B, p.W = D.kv_lora + D.rope;
    const int H = D.hidden, NH = D.heads, QD = D.nope + D.rope;
    const float sh = std::sqrt(3.f / H);
    p.x = random_values((size_t)B * H, t, seed + 1, 1.f);
    p.input_norm = norm_weights(H, t, seed + 2);
    if (D.q_lora) {
        p.w_q_a = random_values((size_t)D.q_lora * H, t, seed + 3, sh);
        p.q_a_norm = norm_weights(D.q_lora, t, seed + 4);
        p.w_q_b = random_values((size_t)NH * QD * D.q_lora, t, seed + 5, std::sqrt(3.f / D.q_lora));
    } else {
        p.w_q = random_values((size_t)NH * QD * H, t, seed + 6, sh);
    }
    p.w_kv_a = random_values((size_t)p.W * H, t, seed + 7, sh);
    p.kv_a_norm = norm_weights(D.kv_lora, t, seed + 8);
    p.w_kv_b = random_values((size_t)NH * (D.nope + D.v_dim) * D.kv_lora, t, seed + 9,
                             std::sqrt(3.f / D.kv_lora));
    p.w_o = random_values((size_t)H * D.w_o_ld, t, seed + 10, std::sqrt(3.f / (NH * D.v_dim)));
    // the cache: B requests' rows, a shuffled pool of pages where paged
    const size_t pages = D.page ? (size_t)B * (D.max_context / D.page) : 0;
    p.cache = random_values((size_t)B * D.max_context * p.W, t, seed + 11, 1.f);
    p.table.assign(D.page ? pages : 1, 0);
    if (D.page)
        fgh_permutation(p.table.data(), (int)pages, seed + 12);
    return p;
}

struct Buffers {
    EmuGuarded ws, counters;
    EmuLds smem;
    int threads;   // the planned block
};

// The kernel's arguments: p's inputs at positions pos (the input norm or
// none), y, and the planned buffers.
emu_mla_block_args args_of(Problem &p, const std::vector<int> &pos, bool input_norm, std::vector<st> &y,
                           Buffers &buf)
{
    emu_mla_block_args a = {};
    a.x = p.x.data(), a.input_norm = input_norm ? p.input_norm.data() : nullptr;
    a.w_q = D.q_lora ? nullptr : p.w_q.data();
    a.w_q_a = p.w_q_a.data(), a.q_a_norm = p.q_a_norm.data(), a.w_q_b = p.w_q_b.data();
    a.w_kv_a = p.w_kv_a.data(), a.kv_a_norm = p.kv_a_norm.data(), a.w_kv_b = p.w_kv_b.data();
    a.w_o = p.w_o.data(), a.cache = p.cache.data(), a.block_table = p.table.data();
    a.positions = pos.data(), a.y = y.data(), a.ws = buf.ws.as<float>();
    a.counters = buf.counters.as<unsigned>(), a.smem = buf.smem.pointers();
    a.workgroups = buf.smem.workgroups(), a.threads = buf.threads;
    a.batch = p.B, a.eps = 1e-6f, a.scale = 1.f / std::sqrt((float)(D.nope + D.rope));
    return a;
}

// The counters a launch left set past the grid barrier's (whose count keeps
// a state of its own): every other one must be back at 0, where the next
// launch starts (the runtime zeroes them once, at bind), or that launch
// waits on stale counts or merges against a stale maximum.
size_t counters_left(Buffers &buf)
{
    const unsigned *c = buf.counters.as<unsigned>();
    size_t n = 0;
    for (size_t i = 1; i < buf.counters.bytes() / sizeof(unsigned); i++)
        n += c[i] != 0;
    return n;
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One case: positions pos, launched `launches` times (y, the workspace, the
// LDS and the appended rows poisoned before each; from the second on,
// compared bitwise with the first), checked against the reference.
void run_case(Problem &p, const std::vector<int> &pos, bool input_norm, const char *what, Buffers &buf,
              int launches, size_t &outside)
{
    const fgh_dtype dt = emu_dtype(D.f16);
    const double tol = emu_tolerance(D.f16);
    const int B = p.B, H = D.hidden, W = p.W;
    // the rows past each active request's position NaN for the case, as
    // test_mla_block leaves them (a read of one weighed 0 shows), restored
    // after it
    const std::vector<st> unpoisoned = p.cache;
    for (int b = 0; b < B; b++)
        for (int t = pos[b] + 1; pos[b] >= 0 && t < D.max_context; t++)
            std::memset(p.cache.data() + p.row(b, t), 0xff, (size_t)W * sizeof(st));
    // the reference: its contiguous view of every request's rows before pos
    std::vector<st> view((size_t)B * D.max_context * W, 0);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < pos[b]; t++)
            std::memcpy(view.data() + ((size_t)b * D.max_context + t) * W, p.cache.data() + p.row(b, t),
                        (size_t)W * sizeof(st));
    fgh_mla_block_cfg c = {};
    c.batch = B, c.hidden = H, c.heads = D.heads, c.q_lora = D.q_lora, c.kv_lora = D.kv_lora;
    c.nope = D.nope, c.rope = D.rope, c.v_dim = D.v_dim, c.max_context = D.max_context;
    c.w_o_ld = D.w_o_ld, c.eps = 1e-6, c.scale = 1.0 / std::sqrt((double)(D.nope + D.rope));
    c.cs_scale = D.cs_scale, c.inv_freq = D.inv_freq, c.dtype = dt, c.round_new_row = true;
    fgh_mla_block_weights w = {};
    w.input_norm = input_norm ? p.input_norm.data() : nullptr;
    w.w_q = D.q_lora ? nullptr : p.w_q.data();
    w.w_q_a = p.w_q_a.data(), w.q_a_norm = p.q_a_norm.data(), w.w_q_b = p.w_q_b.data();
    w.w_kv_a = p.w_kv_a.data(), w.kv_a_norm = p.kv_a_norm.data(), w.w_kv_b = p.w_kv_b.data();
    w.w_o = p.w_o.data();
    std::vector<int> rpos(pos);
    for (int &v : rpos)
        v = std::max(v, 0);   // (an inactive slot's reference is not compared)
    std::vector<double> y_ref((size_t)B * H), new_row((size_t)B * W);
    fgh_ref_mla_block(&c, &w, p.x.data(), view.data(), rpos.data(), y_ref.data(), new_row.data(), nullptr);

    const std::vector<st> cache_before = p.cache;
    std::vector<st> y((size_t)B * H), first, out;
    const emu_mla_block_args a = args_of(p, pos, input_norm, y, buf);
    // y and the appended rows, one vector
    const auto fetch = [&](std::vector<st> &v) {
        v = y;
        for (int b = 0; b < B; b++)
            if (pos[b] >= 0)
                v.insert(v.end(), p.cache.begin() + p.row(b, pos[b]), p.cache.begin() + p.row(b, pos[b]) + W);
    };
    char name[160];
    for (int run = 0; run < launches; run++) {
        std::memset(y.data(), 0xff, y.size() * sizeof(st));   // NaN: unwritten shows
        for (int b = 0; b < B; b++)
            if (pos[b] >= 0)
                std::memset(p.cache.data() + p.row(b, pos[b]), 0xff, (size_t)W * sizeof(st));
        buf.ws.fill(0xff);
        buf.smem.fill(0xff);
        const auto t0 = std::chrono::steady_clock::now();
        emu_mla_block_launch(&a);
        std::printf("%s: launch %d took %.1f s\n", what, run + 1, seconds_since(t0));
        outside += buf.ws.touched() + buf.counters.touched() + buf.smem.touched();
        std::snprintf(name, sizeof name, "%s: launch %d leaves every counter but the grid barrier's at 0", what,
                      run + 1);
        checks.check(counters_left(buf) == 0, name, (double)counters_left(buf));
        fetch(run == 0 ? first : out);
        if (run > 0) {
            std::snprintf(name, sizeof name, "%s: launch %d gives the first's bits (y, appended rows)", what,
                          run + 1);
            checks.check(out == first, name, 0);
        }
    }
    for (int b = 0; b < B; b++) {
        const size_t r = (size_t)b * H;
        if (pos[b] < 0) {
            bool zero = true;
            for (int i = 0; i < H; i++)
                zero = zero && (y[r + i] & 0x7fff) == 0;
            std::snprintf(name, sizeof name, "%s: request %d inactive: y exactly 0", what, b);
            checks.check(zero, name, 0);
            continue;
        }
        const fgh_err e = fgh_compare(y.data() + r, dt, y_ref.data() + r, H);
        std::snprintf(name, sizeof name, "%s: request %d at pos %d: y rel L2 <= %.0e", what, b, pos[b], tol);
        checks.check(e.nonfinite == 0 && e.rel_l2 <= tol, name, e.nonfinite ? INFINITY : e.rel_l2);
        std::vector<double> want(W);
        for (int i = 0; i < W; i++)
            want[i] = fgh_rounded(dt, new_row[(size_t)b * W + i]);
        const fgh_err er = fgh_compare(p.cache.data() + p.row(b, pos[b]), dt, want.data(), W);
        std::snprintf(name, sizeof name, "%s: request %d: appended row rel L2 <= %.0e", what, b, tol);
        checks.check(er.nonfinite == 0 && er.rel_l2 <= tol, name, er.nonfinite ? INFINITY : er.rel_l2);
    }
    // every other cache element unchanged
    std::vector<char> appended(p.cache.size(), 0);
    for (int b = 0; b < B; b++)
        if (pos[b] >= 0)
            std::fill_n(appended.begin() + p.row(b, pos[b]), W, 1);
    size_t changed = 0;
    for (size_t i = 0; i < p.cache.size(); i++)
        changed += !appended[i] && p.cache[i] != cache_before[i];
    std::snprintf(name, sizeof name, "%s: no cache element changed outside the appended rows", what);
    checks.check(changed == 0, name, (double)changed);
    for (int b = 0; b < B; b++)
        for (int t = pos[b] + 1; pos[b] >= 0 && t < D.max_context; t++)
            std::memcpy(p.cache.data() + p.row(b, t), unpoisoned.data() + p.row(b, t), (size_t)W * sizeof(st));
}

// A NaN in request 0's x reaches every one of its outputs and none of the
// other requests' (test_mla_block's run_nan_case): all at position P + 1.
void run_nan_case(Problem &p, Buffers &buf, size_t &outside)
{
    const int B = p.B, H = D.hidden, pos_all = std::min(D.max_context - 1, (D.page ? D.page : 32) + 1);
    const std::vector<int> pos(B, pos_all);
    const st saved = p.x[0];
    p.x[0] = D.f16 ? 0x7e00 : 0x7fc0;
    std::vector<st> y((size_t)B * H);
    std::memset(y.data(), 0xff, y.size() * sizeof(st));
    const emu_mla_block_args a = args_of(p, pos, true, y, buf);
    buf.ws.fill(0xff);
    buf.smem.fill(0xff);
    emu_mla_block_launch(&a);
    outside += buf.ws.touched() + buf.counters.touched() + buf.smem.touched();
    p.x[0] = saved;
    const auto nonfinite = [&](int b) {
        size_t n = 0;
        for (int i = 0; i < H; i++)
            n += (y[(size_t)b * H + i] & 0x7fff) >= (D.f16 ? 0x7c00 : 0x7f80);
        return n;
    };
    char name[160];
    std::snprintf(name, sizeof name, "B=%d, a NaN in request 0's x: every output of request 0 NaN or inf", B);
    checks.check(nonfinite(0) == (size_t)H, name, (double)nonfinite(0));
    size_t others = 0;
    for (int b = 1; b < B; b++)
        others += nonfinite(b);
    std::snprintf(name, sizeof name, "B=%d, a NaN in request 0's x: no other request's output NaN or inf", B);
    checks.check(others == 0, name, (double)others);
}

}   // namespace

int main(int argc, char **argv)
{
    const EmuPlanned planned = emu_planned(argc, argv, D.name);
    const uint64_t seed = emu_seed();
    const fgh_dtype dt = emu_dtype(D.f16);
    if (!emu_cooperative_grid(planned, checks))
        return checks.summary();
    // the workspace, counters (zeroed at bind) and LDS as the planner sized them
    Buffers buf = {EmuGuarded(planned.workspace_bytes), EmuGuarded(planned.counters * sizeof(unsigned)),
                   EmuLds(planned.dynamic_smem, planned.grid[0]), (int)planned.block};
    size_t outside = 0;
    const int B = D.bmax, last = D.max_context - 1, P = D.page ? D.page : 32;
    Problem p = make_problem(B, seed, dt);
    // B_max requests: the last row (every tile, the pages shuffled), P + 1
    // (keys past a page's end where paged, past a tile's where contiguous),
    // then rows spread over the cache; launched twice
    std::vector<int> pos(B);
    for (int b = 0; b < B; b++)
        pos[b] = b == 0 ? last : b == 1 ? P + 1 : b * 37 % (last + 1);
    char what[96];
    std::snprintf(what, sizeof what, "B=%d, mixed positions", B);
    run_case(p, pos, true, what, buf, 2, outside);
    if (B >= 2) {   // slot 0 inactive, slot b at position b - 1 (the new token alone at 0)
        for (int b = 0; b < B; b++)
            pos[b] = b - 1;
        std::snprintf(what, sizeof what, "B=%d, slot 0 inactive, slot b at b - 1", B);
        run_case(p, pos, true, what, buf, 1, outside);
        run_nan_case(p, buf, outside);   // (last: it leaves a NaN row in request 0's cache)
    } else {   // without the input norm (x as is), a middle row
        run_case(p, {P + 1}, false, "B=1, no input norm", buf, 1, outside);
    }
    checks.check(outside == 0, "the launches within the planner's workspace, counters and LDS "
                 "(bytes past them written)", (double)outside);
    return checks.summary();
}
