// The overlap family's GEMM as lowered to HIP (templates/overlap_gemm_portable.in),
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
// multiple of the XCDs (the plain order); and the feed (run_feed_cases):
// every piece flagged before the launch, rows landing mid-wait, a piece
// lost (the kernel ends late, within its limit), only some flagged; and the
// drain (run_drain_case): each piece's counter n / 128 a tile row, again after a
// second launch, C the undrained run's bits.  Where a case's last round
// leaves half the grid or more idle its tiles are split over K (the label
// gives the pieces a tile): the partial sums poisoned before each launch,
// the split's counters back at zero after it.  What
// this checks: the index
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

// Random A and W of `tile_rows` tile rows, and the double reference.
struct Problem {
    int M;
    std::vector<uint16_t> a, w;
    std::vector<double> ref, bound;
};

static Problem make_problem(int tile_rows, uint64_t seed)
{
    const fgh_dtype dt = emu_dtype(D.f16);
    Problem p;
    p.M = tile_rows * D.bm;
    p.a.resize((size_t)p.M * D.k);
    p.w.resize((size_t)D.n * D.k);
    fgh_fill_host(p.a.data(), dt, p.a.size(), seed + 1, 1.0f);
    fgh_fill_host(p.w.data(), dt, p.w.size(), seed + 2, 1.0f);
    p.ref.resize((size_t)p.M * D.n);
    p.bound.resize((size_t)p.M * D.n);
    std::vector<double> av(p.a.size()), wv(p.w.size());
    for (size_t i = 0; i < p.a.size(); i++)
        av[i] = fgh_get(p.a.data(), dt, i);
    for (size_t i = 0; i < p.w.size(); i++)
        wv[i] = fgh_get(p.w.data(), dt, i);
    for (int m = 0; m < p.M; m++)
        for (int n = 0; n < D.n; n++) {
            double s = 0, sa = 0;
            const double *ar = &av[(size_t)m * D.k], *wr = &wv[(size_t)n * D.k];
            for (int k = 0; k < D.k; k++) {
                s += ar[k] * wr[k];
                sa += std::fabs(ar[k] * wr[k]);
            }
            p.ref[(size_t)m * D.n + n] = s;
            // C rounded once from fp32 sums: an ulp of the storage type (its
            // half, and a binade's step) plus K roundings of fp32 at most
            p.bound[(size_t)m * D.n + n] = emu_ulp(D.f16, s) + D.k * std::ldexp(sa, -24);
        }
    return p;
}

// C of M rows and a tile row of guard rows past them, poisoned (NaN:
// unwritten shows).
static std::vector<uint16_t> poisoned_c(const Problem &p)
{
    return std::vector<uint16_t>((size_t)(p.M + D.bm) * D.n, 0xffff);
}

// C against the reference on the rows `checked` marks (all: also C's rel L2):
// every element within an ulp + the fp32 sums' bound, none left poisoned,
// the guard rows past M untouched.
static void check_c(const char *what, const Problem &p, const std::vector<uint16_t> &c,
                    const std::vector<char> *checked = nullptr)
{
    const fgh_dtype dt = emu_dtype(D.f16);
    const double tol = emu_tolerance(D.f16);
    char msg[240];
    const size_t nc = (size_t)p.M * D.n;
    if (!checked) {
        const fgh_err e = fgh_compare(c.data(), dt, p.ref.data(), nc);
        std::snprintf(msg, sizeof msg, "%s: C rel L2 <= %.0e", what, tol);
        checks.check(e.nonfinite == 0 && e.rel_l2 <= tol, msg, e.rel_l2);
    }
    double worst = 0;
    size_t worst_at = 0, left = 0, rows = 0;
    for (int m = 0; m < p.M; m++) {
        if (checked && !(*checked)[m])
            continue;
        rows++;
        for (int n = 0; n < D.n; n++) {
            const size_t i = (size_t)m * D.n + n;
            left += fgh_count_poisoned(c.data() + i, dt, 1);
            const double g = fgh_get(c.data(), dt, i);
            const double r = std::isfinite(g) ? std::fabs(g - p.ref[i]) / p.bound[i] : INFINITY;
            if (!(r <= worst)) {
                worst = r;
                worst_at = i;
            }
        }
    }
    std::snprintf(msg, sizeof msg, "%s: every element%s within an ulp + fp32 sums' bound "
                  "(%zu rows; worst ratio at row %zu, column %zu)", what,
                  checked ? " of the rows checked" : "", rows, worst_at / D.n, worst_at % D.n);
    checks.check(worst <= 1.0, msg, worst);
    std::snprintf(msg, sizeof msg, "%s: no element of C%s left poisoned", what,
                  checked ? "'s rows checked" : "");
    checks.check(left == 0, msg, (double)left);
    const size_t guard_n = (size_t)D.bm * D.n;
    const size_t guard_left = fgh_count_poisoned(c.data() + nc, dt, guard_n);
    std::snprintf(msg, sizeof msg, "%s: the %d rows past M untouched", what, D.bm);
    checks.check(guard_left == guard_n, msg, (double)(guard_n - guard_left));
}

static void run_case(const char *what, int tile_rows, int grid, uint64_t seed, bool twice)
{
    const Problem p = make_problem(tile_rows, seed);
    std::vector<uint16_t> c, first;
    for (int run = 0; run < (twice ? 2 : 1); run++) {
        c = poisoned_c(p);
        emu_gemm_launch(p.a.data(), p.w.data(), c.data(), p.M, grid, nullptr, nullptr);
        if (run == 1)
            checks.check(first == c, "a second launch gives the same bits", 0);
        first = c;
    }
    const int tiles = tile_rows * (D.n / D.bn), split = emu_gemm_split(tiles, grid);
    char label[160];
    std::snprintf(label, sizeof label, "%s (M %d, %d tiles, grid %d, %d pieces a last-round tile)",
                  what, p.M, tiles, grid, split);
    check_c(label, p, c);
    std::snprintf(label, sizeof label, "%s: the split's counters back at zero", what);
    checks.check(emu_gemm_split_counters_left() == 0, label, emu_gemm_split_counters_left());
}

// ---- the feed (overlap_gemm_portable.in's flags, tile_rows, status) ----
//
// A of 3 blocks of 384 rows (3 tile rows each), block 1 the own one, the
// others in pieces of 96 rows (4 a block, 6 flags a block apart: tiles
// straddle pieces); the epoch near the wrap (0xfffffffe; flags set to it, or
// to 1 or 2 past it, which wrap to 0), a flag unset one or 1000 below it (the
// own block's too: a wait on them never ends).  tile_rows a random
// permutation.  The sequential emulation runs workgroups one after another,
// so a flag is either set before the launch or landed by the poll hook (on
// the polling thread, mid-wait: the rows copied in, then the flag set).
namespace feed {
constexpr int kBlocks = 3, kBlockRows = 384, kPieceRows = 96, kPieces = 4, kStride = 6, kOwn = 1;
constexpr unsigned kEpoch = 0xfffffffeu;

struct State {
    std::vector<unsigned> flags = std::vector<unsigned>(kBlocks * kStride, kEpoch - 1);
    std::vector<int> tile_rows;
    unsigned epoch = kEpoch, status = 0;
    // hook: polls a flag, landings left to do (rows from `source` into `a`
    // at the poll `land_at` of the flag), polls outside the flags or of the
    // own block's
    std::vector<int> polls = std::vector<int>(kBlocks * kStride, 0);
    int stray = 0, land_at = 0, landed = 0;
    const Problem *source = nullptr;
    std::vector<uint16_t> *a = nullptr;
    emu_gemm_feed args(unsigned long long limit_ns)
    {
        return {tile_rows.data(), flags.data(), &epoch, kOwn, kBlockRows, kPieceRows, kStride,
                &status, limit_ns};
    }
};

unsigned set_value(int i) { return kEpoch + (unsigned)(i % 3); }   // (0xfffffffe, f, 0)

void on_poll(const unsigned *flag, int, void *ctx)
{
    State &s = *static_cast<State *>(ctx);
    const long i = flag - s.flags.data();
    if (i < 0 || i >= (long)s.flags.size() || i / kStride == kOwn || i % kStride >= kPieces) {
        s.stray++;
        return;
    }
    s.polls[i]++;
    if (s.land_at && s.polls[i] == s.land_at && (int)(s.flags[i] - kEpoch) < 0) {
        const size_t row0 = (size_t)(i / kStride) * kBlockRows + (size_t)(i % kStride) * kPieceRows;
        std::memcpy(s.a->data() + row0 * D.k, s.source->a.data() + row0 * D.k,
                    (size_t)kPieceRows * D.k * sizeof(uint16_t));
        s.flags[i] = set_value((int)i);
        s.landed++;
    }
}

// The flags (block, piece) rows [row0, row0 + BM) lie in, the own block's left out.
std::vector<int> pieces_of(int row0)
{
    std::vector<int> out;
    for (int r = row0; r < row0 + D.bm; r += kPieceRows / 2) {   // (pieces are >= 48 rows)
        const int b = r / kBlockRows, i = b * kStride + r % kBlockRows / kPieceRows;
        if (b != kOwn && (out.empty() || out.back() != i))
            out.push_back(i);
    }
    return out;
}

// The tile rows (after tile_rows) of the jobs workgroup g of `grid` takes,
// a job at a time (the kernel's order, written out again here but for the
// split's piece count, the kernel's rounds_of): XCD-major numbering where
// the grid divides into the XCDs, tiles t, t + grid, ... of the whole
// rounds, then its piece of a tile of the last round (or that tile whole),
// tiles GROUP_M tile rows at a time.
std::vector<int> tile_rows_of(int g, int grid, int tiles_m, const std::vector<int> &order)
{
    const int tiles_n = D.n / D.bn, tiles = tiles_m * tiles_n;
    int first = g;
    if (D.xcds > 1 && grid % D.xcds == 0)
        first = g % D.xcds * (grid / D.xcds) + g / D.xcds;
    const int whole = tiles / grid * grid, split = emu_gemm_split(tiles, grid);
    std::vector<int> jobs;
    for (int t = first; t < whole; t += grid)
        jobs.push_back(t);
    if (first < (tiles - whole) * split)
        jobs.push_back(whole + first / split);
    std::vector<int> out;
    for (int t : jobs) {
        const int per_group = D.group_m * tiles_n, top = t / per_group * D.group_m;
        const int rows = std::min(tiles_m - top, D.group_m), r = t % per_group;
        out.push_back(order[top + r % rows]);
    }
    return out;
}

std::vector<int> permutation(int n, uint64_t seed)
{
    std::vector<int> p(n);
    for (int i = 0; i < n; i++)
        p[i] = i;
    for (int i = n - 1; i > 0; i--) {   // (Fisher-Yates on a 64-bit LCG)
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        std::swap(p[i], p[(int)((seed >> 33) % (uint64_t)(i + 1))]);
    }
    return p;
}
} // namespace feed

static void run_feed_cases(uint64_t seed)
{
    using namespace feed;
    const int tiles_m = kBlocks * kBlockRows / D.bm, grid = D.grid;
    const Problem p = make_problem(tiles_m, seed);
    char msg[240];
    // the unfed run, in order (checked against the reference)
    std::vector<uint16_t> plain = poisoned_c(p);
    emu_gemm_launch(p.a.data(), p.w.data(), plain.data(), p.M, grid, nullptr, nullptr);
    check_c("feed: the unfed run", p, plain);
    // the unfed run in a fed run's tile order: what that run must give bit
    // for bit (the order decides which tiles the last round splits over K,
    // and so their fp32 sums' order)
    const auto unfed_in = [&](const std::vector<int> &order) {
        std::vector<uint16_t> c = poisoned_c(p);
        emu_gemm_feed f = {};
        f.tile_rows = order.data();
        emu_gemm_launch(p.a.data(), p.w.data(), c.data(), p.M, grid, &f, nullptr);
        return c;
    };

    // (1) every piece landed before the launch, tile rows permuted: the
    // unfed run's bits, status 0, each tile's pieces polled once each
    {
        State s;
        s.tile_rows = permutation(tiles_m, seed + 7);
        for (int i = 0; i < (int)s.flags.size(); i++)
            if (i / kStride != kOwn && i % kStride < kPieces)
                s.flags[i] = set_value(i);
        emu_gemm_on_poll(on_poll, &s);
        std::vector<uint16_t> c = poisoned_c(p);
        const emu_gemm_feed f = s.args(100000ull);
        emu_gemm_launch(p.a.data(), p.w.data(), c.data(), p.M, grid, &f, nullptr);
        emu_gemm_on_poll(nullptr, nullptr);
        checks.check(c == unfed_in(s.tile_rows), "feed, every piece landed, tile rows permuted: "
                     "the unfed run's bits (in that order)", 0);
        checks.check(s.status == 0, "feed, every piece landed: status 0", s.status);
        long polls = 0, expected = 0;
        for (int v : s.polls)
            polls += v;
        for (int g = 0; g < grid; g++)
            for (int m : tile_rows_of(g, grid, tiles_m, s.tile_rows))
                expected += (long)pieces_of(m * D.bm).size();
        std::snprintf(msg, sizeof msg, "feed, every piece landed: one poll a piece a job "
                      "(%ld expected), none of the own block's or outside the flags", expected);
        checks.check(polls == expected && s.stray == 0, msg, (double)(polls - expected));
    }
    // (2) the rows land mid-wait: every other block's rows poisoned (NaN)
    // and its flags unset, the hook copying a piece in and setting its flag
    // at the third poll of it (limit 100 us: 10^4 polls, never reached).  A workgroup that
    // read a tile before its thread 0 saw every flag (no barrier after the
    // wait, a piece skipped) reads NaN.
    {
        State s;
        s.tile_rows = permutation(tiles_m, seed + 8);
        std::vector<uint16_t> a = p.a;
        for (int b = 0; b < kBlocks; b++)
            if (b != kOwn)
                std::memset(a.data() + (size_t)b * kBlockRows * D.k, 0xff,
                            (size_t)kBlockRows * D.k * sizeof(uint16_t));
        s.land_at = 3, s.source = &p, s.a = &a;
        emu_gemm_on_poll(on_poll, &s);
        std::vector<uint16_t> c = poisoned_c(p);
        const emu_gemm_feed f = s.args(100000ull);
        emu_gemm_launch(a.data(), p.w.data(), c.data(), p.M, grid, &f, nullptr);
        emu_gemm_on_poll(nullptr, nullptr);
        const int pieces = (kBlocks - 1) * kPieces;
        std::snprintf(msg, sizeof msg, "feed, rows landing mid-wait: all %d pieces landed by "
                      "the hook, status 0", pieces);
        checks.check(s.landed == pieces && s.status == 0 && s.stray == 0, msg, s.landed);
        checks.check(c == unfed_in(s.tile_rows), "feed, rows landing mid-wait: the unfed run's "
                     "bits (in that order)", 0);
    }
    // (3) a piece lost (block 2's piece 1, rows 864-959, poisoned, its flag
    // never set), limit 2 us (200 polls): the kernel ends, status
    // FG_GEMM_LATE, every row of the tile rows that do not touch it right;
    // (4) only some pieces landed (block 0's pieces 0 and 3, block 2's 2),
    // limit 1 ns: the workgroups that report late are exactly those with a
    // tile needing another piece
    for (int which = 0; which < 2; which++) {
        State s;
        s.tile_rows = permutation(tiles_m, seed + 9 + which);
        std::vector<uint16_t> a = p.a;
        std::vector<char> landed(s.flags.size(), 0);
        for (int i = 0; i < (int)s.flags.size(); i++)
            if (i / kStride != kOwn && i % kStride < kPieces)
                landed[i] = which == 0 ? i != 2 * kStride + 1
                                       : i == 0 || i == 3 || i == 2 * kStride + 2;
        for (int i = 0; i < (int)s.flags.size(); i++)
            s.flags[i] = landed[i] ? set_value(i) : kEpoch - (i % 2 ? 1000u : 1u);
        if (which == 0)
            std::memset(a.data() + (size_t)(2 * kBlockRows + kPieceRows) * D.k, 0xff,
                        (size_t)kPieceRows * D.k * sizeof(uint16_t));
        emu_gemm_on_poll(on_poll, &s);
        std::vector<uint16_t> c = poisoned_c(p);
        std::vector<unsigned> late(grid, 0);
        const emu_gemm_feed f = s.args(which == 0 ? 2000ull : 1ull);
        emu_gemm_launch(a.data(), p.w.data(), c.data(), p.M, grid, &f, late.data());
        emu_gemm_on_poll(nullptr, nullptr);
        // which tile rows need a piece that never lands, which workgroups take one
        std::vector<char> needs(tiles_m, 0), rows_ok(p.M, 1);
        for (int m = 0; m < tiles_m; m++)
            for (int i : pieces_of(m * D.bm))
                needs[m] |= !landed[i];
        int expected_late = 0, wrong = 0;
        for (int g = 0; g < grid; g++) {
            bool want = false;
            for (int m : tile_rows_of(g, grid, tiles_m, s.tile_rows))
                want |= needs[m] != 0;
            expected_late += want;
            wrong += (late[g] == 1) != want || (late[g] & ~1u);
        }
        for (int m = 0; m < tiles_m; m++)
            if (needs[m])
                std::fill(rows_ok.begin() + m * D.bm, rows_ok.begin() + (m + 1) * D.bm, 0);
        const char *name = which == 0 ? "feed, a piece lost" : "feed, some pieces landed";
        std::snprintf(msg, sizeof msg, "%s: the kernel ends, status FG_GEMM_LATE, exactly the "
                      "%d workgroups with a tile needing an unlanded piece report it (wrong: "
                      "%d of %d)", name, expected_late, wrong, grid);
        checks.check(s.status == 1 && wrong == 0 && expected_late > 0 && s.stray == 0, msg,
                     wrong);
        check_c(name, p, c, &rows_ok);
    }
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

// The drain (the fused GEMM+RS's counters): 5 tile rows in pieces of
// `piece` tile rows (1 and 5), C poisoned; each counter must hold n / 128
// for each tile row of its piece after the launch (the contract's count: 2
// for each 256 columns of a tile, so 1 a tile of this form's 128 columns;
// the workgroups run one after another, so
// this checks the counters' arithmetic, not their order against the
// stores), twice that after a second launch (never reset), and C the
// undrained run's bits.
static void run_drain_case(int piece, uint64_t seed)
{
    constexpr int kTileRows = 5;
    const Problem p = make_problem(kTileRows, seed);
    std::vector<uint16_t> plain = poisoned_c(p), c = poisoned_c(p);
    emu_gemm_launch(p.a.data(), p.w.data(), plain.data(), p.M, D.grid, nullptr, nullptr);
    std::vector<unsigned> done(kTileRows / piece, 0u);
    emu_gemm_feed f = {};
    f.done = done.data(), f.done_rows = piece * D.bm;
    const unsigned per_piece = (unsigned)(piece * (D.n / 128));
    char msg[200];
    for (unsigned launch = 1; launch <= 2; launch++) {
        emu_gemm_launch(p.a.data(), p.w.data(), c.data(), p.M, D.grid, &f, nullptr);
        int wrong = 0;
        for (unsigned v : done)
            wrong += v != launch * per_piece;
        std::snprintf(msg, sizeof msg, "drain, pieces of %d tile rows, launch %u: each counter "
                      "%u (n / 128 a tile row, never reset)", piece, launch, launch * per_piece);
        checks.check(wrong == 0, msg, wrong);
    }
    std::snprintf(msg, sizeof msg, "drain, pieces of %d tile rows: the split's counters back at "
                  "zero", piece);
    checks.check(emu_gemm_split_counters_left() == 0, msg, emu_gemm_split_counters_left());
    std::snprintf(msg, sizeof msg, "drain, pieces of %d tile rows: the undrained run's bits",
                  piece);
    checks.check(c == plain, msg, 0);
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
    run_feed_cases(seed + 500);
    run_drain_case(1, seed + 600);
    run_drain_case(5, seed + 700);
    return checks.summary();
}
