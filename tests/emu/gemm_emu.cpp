// The overlap family's GEMM as lowered to HIP (templates/overlap_gemm_hip.in),
// run on the CPU against a double reference: the kernel through
// gemm_kernel.cpp's emulation (each workgroup's 256 threads fibers, waves of
// 64 exchanging MFMA operands as the CDNA3 ISA lays them out, the grid's
// workgroups one after another).  For each case (rows M, grid), fresh random
// inputs, C poisoned (NaN) with a tile row of guard rows past M, then:
// C's rel L2 error against the reference (1e-2 bf16, 2e-3 f16; NaN never
// passes), every element within one unit in the last place of the storage
// type plus the fp32 sums' error bound (a misplaced element is far off), no
// element left poisoned, the guard rows untouched.  The cases: one tile row;
// a full group of tile rows and a partial one; every tile through one
// workgroup (the K pipeline running on across tiles); a grid that is not a
// multiple of the XCDs (the plain order).  What this checks: the index
// algebra (LDS swizzle, fragments, the free K and column orders, the tile
// order), the roundings, and (on the kernel's lds_at, not by timing) that the
// swizzle places a block's rows one-to-one and that every 8-lane phase of the
// 16-byte LDS reads and writes covers 8 distinct 16-byte slots of the 32
// banks.  Not checked: interleavings of the waves that the round-robin
// fibers do not produce, the hardware's MFMA rounding, speed.  Prints
// `N passed, N failed`; exit status 1 on any failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_common.h"
#include "gemm_emu.h"

static const emu_gemm_dims &D = emu_gemm;
static EmuChecks checks = {D.name};

static void run_case(const char *what, int tile_rows, int grid, uint64_t seed, bool twice)
{
    const fgh_dtype dt = emu_dtype(D.f16);
    const double tol = emu_tolerance(D.f16);
    const int M = tile_rows * D.bm, guard = D.bm;
    std::vector<uint16_t> a((size_t)M * D.k), w((size_t)D.n * D.k), c((size_t)(M + guard) * D.n);
    fgh_fill_host(a.data(), dt, a.size(), seed + 1, 1.0f);
    fgh_fill_host(w.data(), dt, w.size(), seed + 2, 1.0f);
    std::vector<double> ref((size_t)M * D.n), bound((size_t)M * D.n);
    std::vector<double> av(a.size()), wv(w.size());
    for (size_t i = 0; i < a.size(); i++)
        av[i] = fgh_get(a.data(), dt, i);
    for (size_t i = 0; i < w.size(); i++)
        wv[i] = fgh_get(w.data(), dt, i);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < D.n; n++) {
            double s = 0, sa = 0;
            const double *ar = &av[(size_t)m * D.k], *wr = &wv[(size_t)n * D.k];
            for (int k = 0; k < D.k; k++) {
                s += ar[k] * wr[k];
                sa += std::fabs(ar[k] * wr[k]);
            }
            ref[(size_t)m * D.n + n] = s;
            // C rounded once from fp32 sums: an ulp of the storage type (its
            // half, and a binade's step) plus K roundings of fp32 at most
            bound[(size_t)m * D.n + n] = emu_ulp(D.f16, s) + D.k * std::ldexp(sa, -24);
        }
    std::vector<uint16_t> first;
    for (int run = 0; run < (twice ? 2 : 1); run++) {
        std::memset(c.data(), 0xff, c.size() * sizeof(uint16_t));   // NaN: unwritten shows
        emu_gemm_launch(a.data(), w.data(), c.data(), M, grid);
        if (run == 1)
            checks.check(first == c, "a second launch gives the same bits", 0);
        first = c;
    }
    char msg[200];
    const size_t nc = (size_t)M * D.n;
    const fgh_err e = fgh_compare(c.data(), dt, ref.data(), nc);
    std::snprintf(msg, sizeof msg, "%s (M %d, %d tiles, grid %d): C rel L2 <= %.0e", what, M,
                  tile_rows * (D.n / D.bn), grid, tol);
    checks.check(e.nonfinite == 0 && e.rel_l2 <= tol, msg, e.rel_l2);
    double worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < nc; i++) {
        const double g = fgh_get(c.data(), dt, i);
        const double r = std::isfinite(g) ? std::fabs(g - ref[i]) / bound[i] : INFINITY;
        if (!(r <= worst)) {
            worst = r;
            worst_at = i;
        }
    }
    std::snprintf(msg, sizeof msg, "%s: every element within an ulp + fp32 sums' bound "
                  "(worst ratio at row %zu, column %zu)", what, worst_at / D.n, worst_at % D.n);
    checks.check(worst <= 1.0, msg, worst);
    const size_t left = fgh_count_poisoned(c.data(), dt, nc);
    std::snprintf(msg, sizeof msg, "%s: no element of C left poisoned", what);
    checks.check(left == 0, msg, (double)left);
    const size_t guard_left = fgh_count_poisoned(c.data() + nc, dt, (size_t)guard * D.n);
    std::snprintf(msg, sizeof msg, "%s: the %d rows past M untouched", what, guard);
    const size_t guard_n = (size_t)guard * D.n;
    checks.check(guard_left == guard_n, msg, (double)(guard_n - guard_left));
}

// lds_at against the kernel's access patterns (a ds_read_b128 / ds_write_b128
// serves 8 lanes a cycle: lanes 8p..8p+7 must fall in 8 distinct 16-byte
// slots of the 128-byte bank row): A's fragment reads (lane (r, q): row
// 64 wm + 16 i + r, vector q), W's (row 64 wn + 4 r + j), the stores of a
// thread's loads (thread t: row t / 4 + 64 x, vector t % 4).
static void check_lds_layout()
{
    const int rows = D.bm, chunks = D.bk / 8, units = rows * chunks;
    std::vector<int> seen(units, 0);
    bool inside = true;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < chunks; c++) {
            const int u = emu_gemm_lds_at(r, c);
            inside &= u >= 0 && u < units;
            if (u >= 0 && u < units)
                seen[u]++;
        }
    checks.check(inside && std::count(seen.begin(), seen.end(), 1) == units,
                 "LDS: a block's rows x vectors one-to-one onto its buffer", 0);
    const auto conflicts = [](auto row_of, auto chunk_of) {   // phases with a repeated slot
        int bad = 0;
        for (int p = 0; p < 8; p++) {
            unsigned slots = 0;
            for (int l = 8 * p; l < 8 * p + 8; l++)
                slots |= 1u << (emu_gemm_lds_at(row_of(l), chunk_of(l)) % 8);
            bad += slots != 0xffu;
        }
        return bad;
    };
    int bad = 0;
    for (int half = 0; half < 2; half++)
        for (int i = 0; i < 4; i++) {
            bad += conflicts([&](int l) { return 64 * half + 16 * i + l % 16; },
                             [](int l) { return l / 16; });
            bad += conflicts([&](int l) { return 64 * half + 4 * (l % 16) + i; },
                             [](int l) { return l / 16; });
        }
    for (int wave = 0; wave < D.threads / 64; wave++)
        for (int x = 0; x < rows * chunks / D.threads; x++)
            bad += conflicts(
                [&](int l) { return (64 * wave + l) / chunks + D.threads / chunks * x; },
                [&](int l) { return l % chunks; });
    checks.check(bad == 0, "LDS: the fragment reads and the stores free of bank conflicts "
                 "(8-lane phases with a repeated 16-byte slot)", bad);
}

int main()
{
    const uint64_t seed = emu_seed();
    std::printf("n %d, k %d, tiles %d x %d, K blocks of %d, groups of %d tile rows, %d XCDs, "
                "grid %d\n", D.n, D.k, D.bm, D.bn, D.bk, D.group_m, D.xcds, D.grid);
    check_lds_layout();
    run_case("one tile row", 1, D.grid, seed + 100, true);
    run_case("a group and a partial group", D.group_m + 3, D.grid, seed + 200, false);
    run_case("one workgroup", 3, 1, seed + 300, false);
    const int odd = D.xcds > 1 ? D.xcds + 1 : 3;   // not a multiple of the XCDs
    run_case("a grid of no whole XCDs", 5, odd, seed + 400, false);
    return checks.summary();
}
