/* The C reference of the fused decode step against stored golden outputs
 * (tests/golden/decode_ref_*.bin), so a change to the reference that GPU
 * tests are judged by cannot pass unnoticed, and its optional features (GQA,
 * sliding window, RoPE scaling, paged cache, q/k/v bias) against identities
 * that hold exactly.  Runs without a GPU.
 * FG_UPDATE_GOLDEN=1 rewrites the files (make update-golden). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_decode.h"
#include "rope.h"

#define MAGIC "FGGOLD1"

/* header: magic[8], u32 hidden, heads, head_dim, max_context, batch, dtype,
 * u64 seed, u64 count, u64 checksum (FNV-1a of the doubles); then doubles:
 * y [batch*hidden], then the appended k and v rows [batch][heads][2][head_dim]. */
typedef struct golden_header {
    char magic[8];
    uint32_t hidden, heads, head_dim, max_context, batch, dtype;
    uint64_t seed, count, checksum;
} golden_header;

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The fields every configuration sets; the optional features stay off. */
static fgh_decode_cfg base_cfg(int hidden, int heads, int head_dim, int max_context, int batch,
                               bool neox, bool rmsnorm, double theta, float eps, fgh_dtype t)
{
    return (fgh_decode_cfg){.hidden = hidden, .heads = heads, .head_dim = head_dim,
                            .max_context = max_context, .batch = batch, .neox = neox,
                            .rmsnorm = rmsnorm, .theta = theta, .eps = eps, .dtype = t};
}

static int kv_heads_of(const fgh_decode_cfg *c) { return c->kv_heads ? c->kv_heads : c->heads; }

/* Seeded inputs of one configuration; the generator is counter-based, so
 * buffers of two configurations made from one seed agree where they overlap. */
typedef struct problem {
    fgh_decode_cfg c;
    size_t qkv_rows, ncache;
    uint16_t *x, *g, *wqkv, *wo, *kc, *vc;
} problem;

static problem problem_new(fgh_decode_cfg c, uint64_t seed)
{
    problem p = {.c = c};
    const size_t H = c.hidden, QD = (size_t)c.heads * c.head_dim;
    p.qkv_rows = (size_t)(c.heads + 2 * kv_heads_of(&c)) * c.head_dim;
    p.ncache = (size_t)c.batch * kv_heads_of(&c) * c.max_context * c.head_dim;
    p.x = malloc(2 * c.batch * H), p.g = malloc(2 * H), p.wqkv = malloc(2 * p.qkv_rows * H);
    p.wo = malloc(2 * H * QD), p.kc = malloc(2 * p.ncache), p.vc = malloc(2 * p.ncache);
    fgh_fill_host(p.x, c.dtype, c.batch * H, seed + 1, 1.0f);
    fgh_fill_host(p.g, c.dtype, H, seed + 2, 1.0f);
    fgh_fill_host(p.wqkv, c.dtype, p.qkv_rows * H, seed + 3, 1.0f / sqrtf((float)H));
    fgh_fill_host(p.wo, c.dtype, H * QD, seed + 4, 1.0f / sqrtf((float)QD));
    fgh_fill_host(p.kc, c.dtype, p.ncache, seed + 5, 1.0f);
    fgh_fill_host(p.vc, c.dtype, p.ncache, seed + 6, 1.0f);
    return p;
}

static void problem_free(problem *p)
{
    free(p->x), free(p->g), free(p->wqkv), free(p->wo), free(p->kc), free(p->vc);
}

/* y [batch * hidden] of the contiguous cache; bias may be NULL. */
static double *run(problem *p, const void *bias, const int *pos)
{
    double *y = calloc((size_t)p->c.batch * p->c.hidden, sizeof(double));
    const fgh_kv_view kv = {.k = p->kc, .v = p->vc};
    fgh_ref_decode_kv(&p->c, p->x, p->g, p->wqkv, bias, p->wo, &kv, pos, y);
    return y;
}

/* Element index of token s of KV head g of request b in a contiguous cache. */
static size_t row_at(const problem *p, int b, int g, int s)
{
    return (((size_t)b * kv_heads_of(&p->c) + g) * p->c.max_context + s) * p->c.head_dim;
}

/* Runs the reference on seeded inputs; returns y and the appended rows. */
static double *run_reference(const fgh_decode_cfg *c, uint64_t seed, const int *pos, size_t *count)
{
    problem p = problem_new(*c, seed);
    const size_t H = c->hidden;
    const size_t rows = (size_t)c->batch * c->heads * 2 * c->head_dim;
    *count = c->batch * H + rows;
    double *out = calloc(*count, sizeof(double)), *y = run(&p, NULL, pos);
    memcpy(out, y, sizeof(double) * c->batch * H);
    double *r = out + c->batch * H;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads; h++)
            for (int kv = 0; kv < 2; kv++)
                for (int d = 0; d < c->head_dim; d++)
                    *r++ = pos[b] < 0 ? 0
                                      : fgh_get(kv ? p.vc : p.kc, c->dtype,
                                                row_at(&p, b, h, pos[b]) + d);
    free(y);
    problem_free(&p);
    return out;
}

static void check_golden(const char *path, fgh_decode_cfg c, uint64_t seed, const int *pos)
{
    size_t count;
    double *got = run_reference(&c, seed, pos, &count);
    golden_header hd = {MAGIC, c.hidden, c.heads, c.head_dim, c.max_context, c.batch, c.dtype,
                        seed, count, fnv1a(got, count * sizeof(double))};
    const char *update = getenv("FG_UPDATE_GOLDEN");
    if (update && !strcmp(update, "1")) {
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f, "cannot write %s", path);
        fwrite(&hd, sizeof hd, 1, f);
        fwrite(got, sizeof(double), count, f);
        fclose(f);
        free(got);
        cr_skip_test("rewrote %s (FG_UPDATE_GOLDEN=1)", path);
    }
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "missing golden file %s (make update-golden)", path);
    golden_header want;
    cr_assert_eq(fread(&want, sizeof want, 1, f), 1);
    cr_assert(!memcmp(want.magic, MAGIC, 8));
    cr_assert(want.hidden == hd.hidden && want.heads == hd.heads && want.head_dim == hd.head_dim &&
                  want.max_context == hd.max_context && want.batch == hd.batch &&
                  want.dtype == hd.dtype && want.seed == hd.seed && want.count == count,
              "%s: shape, dtype or seed differ from the test's", path);
    double *ref = malloc(count * sizeof(double));
    cr_assert_eq(fread(ref, sizeof(double), count, f), count);
    fclose(f);
    cr_assert_eq(fnv1a(ref, count * sizeof(double)), want.checksum, "%s is corrupt", path);
    /* libm may differ in the last bits between machines: compare, not memcmp */
    double num = 0, den = 0;
    for (size_t i = 0; i < count; i++) {
        cr_assert(isfinite(got[i]), "element %zu is not finite", i);
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    cr_assert(den > 0);
    cr_assert_leq(sqrt(num / den), 1e-12, "%s: reference drifted: rel L2 %.3e", path,
                  sqrt(num / den));
    free(ref);
    free(got);
}

Test(ref_decode, golden_small_f16)
{
    const int pos[3] = {17, -1, 0};
    check_golden("tests/golden/decode_ref_small_f16.bin",
                 base_cfg(256, 2, 64, 32, 3, true, true, 10000.0, 1e-5f, FGH_F16), 42,
                 pos);
}

Test(ref_decode, golden_small_bf16_gptj_no_norm)
{
    const int pos[2] = {31, 5};
    check_golden("tests/golden/decode_ref_small_bf16.bin",
                 base_cfg(512, 4, 128, 48, 2, false, false, 500000.0, 1e-6f, FGH_BF16),
                 7, pos);
}

/* The appended rows are the rounded k and v: pos 0 attends to the new token
 * alone, so the output is W_o applied to the head's (rounded) v. */
Test(ref_decode, pos_zero_attends_to_the_new_token_alone)
{
    const int pos[1] = {0};
    fgh_decode_cfg c = base_cfg(256, 2, 64, 8, 1, true, true, 10000.0, 1e-5f, FGH_F16);
    size_t count;
    double *got = run_reference(&c, 99, pos, &count);
    cr_assert_eq(count, 256 + 2 * 2 * 64);
    double ss = 0;
    for (int i = 0; i < 256; i++)
        ss += got[i] * got[i];
    cr_assert(ss > 0, "the output is not all zeros");
    free(got);
}

/* ---- the optional features, each against an identity that holds exactly ---- */

static void expect_same_doubles(const double *got, const double *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(!memcmp(&got[i], &want[i], sizeof(double)), "%s[%zu]: %.17g, expected %.17g",
                  what, i, got[i], want[i]);
}

static void expect_same_row(const uint16_t *got, const uint16_t *want, int hd, const char *what,
                            int b)
{
    cr_assert(!memcmp(got, want, 2 * (size_t)hd), "request %d: %s row differs", b, what);
}

Test(ref_decode, gqa_with_kv_heads_equal_to_heads_is_mha)
{
    const int pos[3] = {13, -1, 0};
    fgh_decode_cfg mha = base_cfg(128, 4, 32, 16, 3, true, true, 10000.0, 1e-5f, FGH_F16);
    fgh_decode_cfg gqa = mha;
    gqa.kv_heads = 4;
    problem a = problem_new(mha, 5), b = problem_new(gqa, 5);
    double *ya = run(&a, NULL, pos), *yb = run(&b, NULL, pos);
    expect_same_doubles(yb, ya, 3 * 128, "y");
    cr_assert(!memcmp(a.kc, b.kc, 2 * a.ncache) && !memcmp(a.vc, b.vc, 2 * a.ncache));
    free(ya), free(yb);
    problem_free(&a), problem_free(&b);
}

/* The MHA twin of a GQA problem: every query head gets its own copy of its
 * group's K/V weight rows and cache rows. */
static problem replicate_kv(const problem *gqa, uint64_t seed)
{
    fgh_decode_cfg c = gqa->c;
    c.kv_heads = 0;
    problem m = problem_new(c, seed);
    const int NH = c.heads, NKV = kv_heads_of(&gqa->c), HD = c.head_dim, group = NH / NKV;
    const size_t row_bytes = 2 * (size_t)HD * c.hidden;
    memcpy(m.x, gqa->x, 2 * (size_t)c.batch * c.hidden);
    memcpy(m.g, gqa->g, 2 * (size_t)c.hidden);
    memcpy(m.wo, gqa->wo, 2 * (size_t)c.hidden * NH * HD);
    memcpy(m.wqkv, gqa->wqkv, row_bytes * NH);
    for (int h = 0; h < NH; h++) {
        const int g = h / group;
        memcpy(m.wqkv + (size_t)(NH + h) * HD * c.hidden,
               gqa->wqkv + (size_t)(NH + g) * HD * c.hidden, row_bytes);
        memcpy(m.wqkv + (size_t)(2 * NH + h) * HD * c.hidden,
               gqa->wqkv + (size_t)(NH + NKV + g) * HD * c.hidden, row_bytes);
        for (int b = 0; b < c.batch; b++)
            for (int s = 0; s < c.max_context; s++) {
                memcpy(m.kc + row_at(&m, b, h, s), gqa->kc + row_at(gqa, b, g, s), 2 * HD);
                memcpy(m.vc + row_at(&m, b, h, s), gqa->vc + row_at(gqa, b, g, s), 2 * HD);
            }
    }
    return m;
}

Test(ref_decode, gqa_equals_mha_with_kv_replicated_per_group)
{
    const int pos[3] = {13, -1, 0};
    for (int nkv = 1; nkv <= 2; nkv++) {
        fgh_decode_cfg c = base_cfg(128, 4, 32, 16, 3, true, true, 10000.0, 1e-5f, FGH_BF16);
        c.kv_heads = nkv;
        problem gqa = problem_new(c, 11), mha = replicate_kv(&gqa, 12);
        double *yg = run(&gqa, NULL, pos), *ym = run(&mha, NULL, pos);
        expect_same_doubles(yg, ym, 3 * 128, "y");
        /* every copy of a group's rows, the appended one included, is the group's */
        for (int b = 0; b < 3; b++)
            for (int h = 0; h < 4; h++)
                for (int s = 0; s < 16; s++) {
                    const size_t rm = row_at(&mha, b, h, s), rg = row_at(&gqa, b, h / (4 / nkv), s);
                    expect_same_row(mha.kc + rm, gqa.kc + rg, 32, "k", b);
                    expect_same_row(mha.vc + rm, gqa.vc + rg, 32, "v", b);
                }
        free(yg), free(ym);
        problem_free(&gqa), problem_free(&mha);
    }
}

Test(ref_decode, window_covering_the_context_is_no_window)
{
    const int pos[3] = {20, 5, -1};
    const fgh_decode_cfg full = base_cfg(128, 2, 64, 24, 3, false, true, 10000.0, 1e-5f, FGH_F16);
    problem a = problem_new(full, 3);
    double *ya = run(&a, NULL, pos);
    const int windows[2] = {21, 24};   /* pos + 1 of the longest request, max_context */
    for (int i = 0; i < 2; i++) {
        fgh_decode_cfg c = full;
        c.sliding_window = windows[i];
        problem b = problem_new(c, 3);
        double *yb = run(&b, NULL, pos);
        expect_same_doubles(yb, ya, 3 * 128, "y");
        free(yb);
        problem_free(&b);
    }
    free(ya);
    problem_free(&a);
}

/* b's cache gets a's rows of the window ending at pos_a, moved to end at
 * pos_b: [pos_b - W + 1, pos_b) <- [pos_a - W + 1, pos_a). */
static void move_window(const problem *a, const int *pos_a, problem *b, const int *pos_b, int w)
{
    const int HD = a->c.head_dim;
    for (int r = 0; r < a->c.batch; r++) {
        const int shift = pos_a[r] - pos_b[r];
        for (int g = 0; g < kv_heads_of(&a->c); g++)
            for (int s = pos_b[r] - w + 1 < 0 ? 0 : pos_b[r] - w + 1; s < pos_b[r]; s++) {
                memcpy(b->kc + row_at(b, r, g, s), a->kc + row_at(a, r, g, s + shift), 2 * HD);
                memcpy(b->vc + row_at(b, r, g, s), a->vc + row_at(a, r, g, s + shift), 2 * HD);
            }
    }
}

/* Same y and same appended rows from a at pos_a and b at pos_b. */
static void expect_same_step(problem *a, const int *pos_a, problem *b, const int *pos_b)
{
    double *ya = run(a, NULL, pos_a), *yb = run(b, NULL, pos_b);
    expect_same_doubles(yb, ya, (size_t)a->c.batch * a->c.hidden, "y");
    for (int r = 0; r < a->c.batch; r++)
        for (int g = 0; g < kv_heads_of(&a->c); g++) {
            const size_t ra = row_at(a, r, g, pos_a[r]), rb = row_at(b, r, g, pos_b[r]);
            expect_same_row(b->kc + rb, a->kc + ra, a->c.head_dim, "k", r);
            expect_same_row(b->vc + rb, a->vc + ra, a->c.head_dim, "v", r);
        }
    free(ya), free(yb);
}

/* A window of W at pos is the whole of a cache that holds only those W
 * tokens.  Moving the tokens changes pos, so RoPE is made the identity (a
 * linear factor of infinity makes every inv_freq 0): q and k then do not
 * depend on pos and the two runs compute the same sums in the same order. */
Test(ref_decode, window_is_the_cache_truncated_to_its_last_w_tokens)
{
    const int W = 5, pos_a[3] = {17, 9, 3}, pos_b[3] = {4, 4, 3};
    fgh_decode_cfg c = base_cfg(128, 4, 32, 24, 3, true, true, 10000.0, 1e-5f, FGH_F16);
    c.kv_heads = 2;
    c.rope_scaling = (fgh_rope_scaling){.type = FGH_ROPE_SCALING_LINEAR, .factor = INFINITY};
    fgh_decode_cfg windowed = c;
    windowed.sliding_window = W;
    problem a = problem_new(windowed, 21), b = problem_new(c, 21);
    move_window(&a, pos_a, &b, pos_b, W);
    expect_same_step(&a, pos_a, &b, pos_b);
    problem_free(&a), problem_free(&b);
}

/* Linear scaling by f at pos is plain RoPE at pos / f when that is exact: f a
 * power of two and pos a multiple of it, so (float)pos * (inv / f) and
 * (float)(pos / f) * inv are the same float.  A window of the same length
 * puts the same cached tokens under both. */
Test(ref_decode, linear_scaling_by_four_is_plain_rope_at_a_quarter_of_pos)
{
    const int W = 6, pos_a[2] = {28, 48}, pos_b[2] = {7, 12};
    fgh_decode_cfg plain = base_cfg(128, 2, 64, 64, 2, true, true, 10000.0, 1e-5f, FGH_BF16);
    plain.sliding_window = W;
    fgh_decode_cfg linear = plain;
    linear.rope_scaling = (fgh_rope_scaling){.type = FGH_ROPE_SCALING_LINEAR, .factor = 4};
    problem a = problem_new(linear, 31), b = problem_new(plain, 31);
    move_window(&a, pos_a, &b, pos_b, W);
    expect_same_step(&a, pos_a, &b, pos_b);
    problem_free(&a), problem_free(&b);
}

static double plain_inv_freq(double theta, int hd, int i) { return 1.0 / pow(theta, 2.0 * i / hd); }

Test(ref_decode, inv_freq_plain_and_linear)
{
    const double theta = 10000.0;
    const int hd = 128;
    float none[64], unscaled[64], linear[64];
    const fgh_rope_scaling off = {0};
    fgh_rope_inv_freq(theta, hd, NULL, none);
    fgh_rope_inv_freq(theta, hd, &off, unscaled);
    cr_assert(!memcmp(none, unscaled, sizeof none));
    const double factors[2] = {3.0, 8.0};
    for (int f = 0; f < 2; f++) {
        const fgh_rope_scaling s = {.type = FGH_ROPE_SCALING_LINEAR, .factor = factors[f]};
        fgh_rope_inv_freq(theta, hd, &s, linear);
        for (int i = 0; i < hd / 2; i++) {
            cr_assert_eq(none[i], (float)plain_inv_freq(theta, hd, i), "plain inv_freq[%d]", i);
            /* divided in double, rounded once */
            cr_assert_eq(linear[i], (float)(plain_inv_freq(theta, hd, i) / factors[f]),
                         "linear inv_freq[%d] for factor %g", i, factors[f]);
        }
    }
    /* a power of two commutes with the rounding */
    for (int i = 0; i < hd / 2; i++)
        cr_assert_eq(linear[i], none[i] / 8.0f, "linear inv_freq[%d]", i);
}

/* Llama-3.1-8B's rope_scaling; one frequency from each band of the rule,
 * the expected value written out from its published definition. */
Test(ref_decode, inv_freq_llama3_bands)
{
    const double theta = 500000.0, factor = 8, low = 1, high = 4, orig = 8192;
    const int hd = 128;
    const fgh_rope_scaling s = {.type = FGH_ROPE_SCALING_LLAMA3,
                                .factor = factor,
                                .low_freq_factor = low,
                                .high_freq_factor = high,
                                .original_max_position = 8192};
    float got[64];
    fgh_rope_inv_freq(theta, hd, &s, got);
    const double two_pi = 2 * acos(-1.0);

    const double kept = plain_inv_freq(theta, hd, 20);
    cr_assert_lt(two_pi / kept, orig / high, "i = 20 is not a high frequency");
    cr_assert_eq(got[20], (float)kept);

    const double divided = plain_inv_freq(theta, hd, 63);
    cr_assert_gt(two_pi / divided, orig / low, "i = 63 is not a low frequency");
    cr_assert_eq(got[63], (float)(divided / factor));

    const double mid = plain_inv_freq(theta, hd, 31), wavelen = two_pi / mid;
    cr_assert(wavelen >= orig / high && wavelen <= orig / low, "i = 31 is not in the smooth band");
    const double smooth = (orig / wavelen - low) / (high - low);
    cr_assert(smooth > 0.1 && smooth < 0.9);
    cr_assert_eq(got[31], (float)((1 - smooth) * mid / factor + smooth * mid));
    cr_assert(got[31] > (float)(mid / factor) && got[31] < (float)mid);
}

/* The generator's table (what the kernels get) equals the reference's, bit
 * for bit, with no scaling, linear and llama3; YaRN is refused, not guessed. */
Test(ref_decode, generator_inv_freq_matches_the_reference)
{
    const fg_rope_scaling_spec specs[] = {
        {.type = FG_SCALING_NONE},
        {.type = FG_SCALING_LINEAR, .factor = 4},
        {.type = FG_SCALING_LLAMA3, .factor = 8, .low_freq_factor = 1, .high_freq_factor = 4,
         .original_max_position = 8192},
    };
    const fgh_rope_scaling refs[] = {
        {.type = FGH_ROPE_SCALING_NONE},
        {.type = FGH_ROPE_SCALING_LINEAR, .factor = 4},
        {.type = FGH_ROPE_SCALING_LLAMA3, .factor = 8, .low_freq_factor = 1,
         .high_freq_factor = 4, .original_max_position = 8192},
    };
    const double thetas[] = {10000.0, 500000.0};
    const unsigned hds[] = {64, 128};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++)
        for (size_t t = 0; t < 2; t++)
            for (size_t h = 0; h < 2; h++) {
                fg_rope_scaling_spec sc = specs[k];
                const fg_rope rope = {.theta = thetas[t], .scaling = &sc};
                float gen[64], ref[64];
                cr_assert(fg_rope_inv_freq(&rope, hds[h], gen));
                fgh_rope_inv_freq(thetas[t], (int)hds[h], &refs[k], ref);
                for (unsigned i = 0; i < hds[h] / 2; i++)
                    cr_assert_eq(gen[i], ref[i], "scaling %zu theta %g hd %u: inv_freq[%u]", k,
                                 thetas[t], hds[h], i);
            }
    /* YaRN without the original context it scales from: refused, untouched */
    fg_rope_scaling_spec yarn = {.type = FG_SCALING_YARN, .factor = 40};
    const fg_rope rope = {.theta = 10000.0, .scaling = &yarn};
    float untouched[32] = {0};
    cr_assert(!fg_rope_inv_freq(&rope, 64, untouched));
    for (int i = 0; i < 32; i++)
        cr_assert_eq(untouched[i], 0.0f);
}

/* YaRN as DeepSeek-V2-Lite and V3 use it (rope dim 64, theta 10000, factor
 * 40, original context 4096, beta_fast 32, beta_slow 1): the table against
 * values computed apart from this code, with numpy from the formula of
 * DeepSeek's modeling code in double and rounded once to float (pairs 0-10
 * unscaled, a ramp over 11-22, 23-31 divided by 40; DeepSeek itself computes
 * in fp32, which can differ in the last bit); and the two attention
 * scalings. */
Test(ref_decode, yarn_matches_deepseeks_formula)
{
    fg_rope_scaling_spec yarn = {.type = FG_SCALING_YARN, .factor = 40,
                                 .original_max_position = 4096, .beta_fast = 32, .beta_slow = 1,
                                 .mscale = 0.707, .mscale_all_dim = 0.707};
    const fg_rope rope = {.theta = 10000.0, .scaling = &yarn};
    float inv[32];
    cr_assert(fg_rope_inv_freq(&rope, 64, inv));
    const struct { unsigned i; double want; } golden[] = {
        {0, 1.0},
        {9, 7.498942316e-02},
        {10, 5.623413250e-02},
        {12, 2.687936090e-02},
        {16, 5.499999970e-03},
        {22, 1.778279402e-04},
        {23, 3.333803761e-05},
        {31, 3.333803534e-06},
    };
    for (size_t k = 0; k < sizeof golden / sizeof golden[0]; k++)
        cr_expect(fabs(inv[golden[k].i] - golden[k].want) <= 1e-9 * golden[k].want + 1e-12,
                  "inv_freq[%u] %.9e, expected %.9e", golden[k].i, (double)inv[golden[k].i],
                  golden[k].want);
    /* mscale = mscale_all_dim: cos and sin unscaled; softmax scale x 1.5896 */
    cr_expect_float_eq(fg_rope_cos_sin_scale(&rope), 1.0, 1e-15);
    cr_expect_float_eq(fg_rope_softmax_mscale2(&rope), 1.5896261651208736, 1e-12);
    yarn.mscale = 1.0;
    cr_expect_float_eq(fg_rope_cos_sin_scale(&rope), (0.1 * log(40.0) + 1) / (0.0707 * log(40.0) + 1),
                       1e-12);
    yarn.factor = 1.0;   /* no scaling up: both 1 */
    cr_expect_float_eq(fg_rope_softmax_mscale2(&rope), 1.0, 1e-15);
}

/* A pool [num_pages, NKV, P, HD] holding a contiguous cache's tokens under
 * a page table; the pages no request owns hold poison (NaN). */
static void scatter_to_pages(const problem *p, const uint16_t *contiguous, const int32_t *table,
                             int page_size, int max_pages, int num_pages, uint16_t *pool)
{
    const int NKV = kv_heads_of(&p->c), HD = p->c.head_dim;
    memset(pool, FGH_POISON_BYTE, 2 * (size_t)num_pages * page_size * NKV * HD);
    for (int b = 0; b < p->c.batch; b++)
        for (int s = 0; s < max_pages * page_size; s++) {
            const size_t page = table[(size_t)b * max_pages + s / page_size];
            for (int g = 0; g < NKV; g++)
                memcpy(pool + ((page * NKV + g) * page_size + s % page_size) * HD,
                       contiguous + row_at(p, b, g, s), 2 * HD);
        }
}

/* Physical pages in a seeded random order, so neighbours in a request are
 * not neighbours in the pool. */
static void shuffled_pages(int32_t *ids, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++)
        ids[i] = i;
    for (int i = n - 1; i > 0; i--) {
        const int j = (int)(fgh_splitmix64(seed + i) % (uint64_t)(i + 1));
        const int32_t t = ids[i];
        ids[i] = ids[j], ids[j] = t;
    }
}

Test(ref_decode, paged_equals_contiguous)
{
    const int S = 128, pos[4] = {100, -1, 64, 63}, page_sizes[3] = {1, 16, 64};
    fgh_decode_cfg c = base_cfg(128, 4, 32, S, 4, true, true, 10000.0, 1e-5f, FGH_F16);
    c.kv_heads = 2;
    for (int t = 0; t < 3; t++) {
        const int P = page_sizes[t], max_pages = S / P, num_pages = 4 * max_pages + 3;
        const size_t pool_elems = (size_t)num_pages * P * 2 * 32;
        problem p = problem_new(c, 41);
        int32_t *table = malloc(sizeof(int32_t) * num_pages);
        shuffled_pages(table, num_pages, 100 + P);   /* the last 3 stay unowned */
        uint16_t *pk = malloc(2 * pool_elems), *pv = malloc(2 * pool_elems);
        scatter_to_pages(&p, p.kc, table, P, max_pages, num_pages, pk);
        scatter_to_pages(&p, p.vc, table, P, max_pages, num_pages, pv);

        double *y_paged = calloc(4 * 128, sizeof(double));
        const fgh_kv_view paged = {pk, pv, P, table, max_pages};
        fgh_ref_decode_kv(&p.c, p.x, p.g, p.wqkv, NULL, p.wo, &paged, pos, y_paged);
        double *y = run(&p, NULL, pos);
        expect_same_doubles(y_paged, y, 4 * 128, "y");

        /* the pools are the updated contiguous cache under the same table:
         * the appended rows are in their pages, nothing else was written */
        uint16_t *want = malloc(2 * pool_elems);
        scatter_to_pages(&p, p.kc, table, P, max_pages, num_pages, want);
        cr_assert(!memcmp(pk, want, 2 * pool_elems), "page size %d: K pool differs", P);
        scatter_to_pages(&p, p.vc, table, P, max_pages, num_pages, want);
        cr_assert(!memcmp(pv, want, 2 * pool_elems), "page size %d: V pool differs", P);

        free(want), free(y), free(y_paged), free(pk), free(pv), free(table);
        problem_free(&p);
    }
}

/* A bias is a weight column of an input that is always 1: without RMSNorm,
 * x extended by a 1 and W_qkv by the bias column give the same sums in the
 * same order, ending with bias * 1 after the dot product, and so the same y
 * and cache (bias before RoPE, as part of the projection). */
Test(ref_decode, qkv_bias_is_a_weight_column_of_a_constant_input)
{
    const int H = 128, pos[3] = {11, -1, 0};
    fgh_decode_cfg c = base_cfg(H, 4, 32, 16, 3, false, false, 10000.0, 1e-5f, FGH_BF16);
    c.kv_heads = 2;
    fgh_decode_cfg wide = c;
    wide.hidden = H + 1;
    problem a = problem_new(c, 51), b = problem_new(wide, 52);
    uint16_t *bias = malloc(2 * a.qkv_rows);
    fgh_fill_host(bias, c.dtype, a.qkv_rows, 53, 0.5f);
    for (int r = 0; r < 3; r++) {
        memcpy(b.x + (size_t)r * (H + 1), a.x + (size_t)r * H, 2 * H);
        b.x[(size_t)r * (H + 1) + H] = fgh_round_to(c.dtype, 1.0);
    }
    for (size_t r = 0; r < a.qkv_rows; r++) {
        memcpy(b.wqkv + r * (H + 1), a.wqkv + r * H, 2 * H);
        b.wqkv[r * (H + 1) + H] = bias[r];
    }
    memcpy(b.wo, a.wo, 2 * (size_t)H * 4 * 32);   /* row H of b's W_o is not compared */
    memcpy(b.kc, a.kc, 2 * a.ncache);
    memcpy(b.vc, a.vc, 2 * a.ncache);
    double *ya = run(&a, bias, pos), *yb = run(&b, NULL, pos);
    for (int r = 0; r < 3; r++)
        expect_same_doubles(yb + (size_t)r * (H + 1), ya + (size_t)r * H, H, "y");
    cr_assert(!memcmp(a.kc, b.kc, 2 * a.ncache) && !memcmp(a.vc, b.vc, 2 * a.ncache));
    free(ya), free(yb), free(bias);
    problem_free(&a), problem_free(&b);
}
