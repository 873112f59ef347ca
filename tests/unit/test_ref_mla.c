/* The MLA attention-core reference (tests/gpu/ref_mla.c) against identities
 * that do not need it: one token, two tokens worked by hand, equal scores, a
 * peaked query (one-hot rope columns; a multiple of the newest or the first
 * row), pages through a shuffled table, splits combined, inactive slots among
 * mixed lengths, bf16 and f16 inputs read as stored, heads computed apart. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_mla.h"

enum { KVL = 32, ROPE = 16, D = KVL + ROPE, S = 40, H = 11 }; /* more than a pass of the reference (8 heads) and not a multiple of it */

static uint16_t bf(float f) { return fgh_f32_to_bf16(f); }

/* A bf16 cache [batch, S, D] of random rows, and queries [batch, H, D]. */
static void random_inputs(int batch, uint16_t **cache, uint16_t **q, uint64_t seed)
{
    *cache = malloc(2 * (size_t)batch * S * D);
    *q = malloc(2 * (size_t)batch * H * D);
    fgh_fill_host(*cache, FGH_BF16, (size_t)batch * S * D, seed, 1.0f);
    fgh_fill_host(*q, FGH_BF16, (size_t)batch * H * D, seed + 1, 1.0f);
}

static fgh_mla_cfg cfg(int batch)
{
    return (fgh_mla_cfg){.batch = batch, .heads = H, .kv_lora = KVL, .rope = ROPE,
                         .max_context = S, .scale = 0.125, .dtype = FGH_BF16};
}

static double value(const uint16_t *cache, int b, int t, int i)
{
    return fgh_bf16_to_f32(cache[((size_t)b * S + t) * D + i]);
}

Test(ref_mla, one_token_returns_its_values)
{
    uint16_t *cache, *q;
    random_inputs(1, &cache, &q, 11);
    const int len = 1;
    double o[H * KVL], lse[H];
    fgh_mla_cfg c = cfg(1);
    fgh_ref_mla(&c, q, cache, &len, o, lse);
    for (int h = 0; h < H; h++) {
        double dot = 0;
        for (int i = 0; i < D; i++)
            dot += (double)fgh_bf16_to_f32(q[h * D + i]) * value(cache, 0, 0, i);
        cr_assert_float_eq(lse[h], c.scale * dot, 1e-12);
        for (int i = 0; i < KVL; i++)
            cr_assert_eq(o[h * KVL + i], value(cache, 0, 0, i));
    }
    free(cache), free(q);
}

Test(ref_mla, equal_scores_average_the_values)
{
    /* the query reads only the rope columns, which every row shares: all
     * scores equal, o = the mean of the rows' values, lse = s + ln(len) */
    uint16_t *cache, *q;
    random_inputs(1, &cache, &q, 12);
    for (int t = 0; t < S; t++)
        for (int i = KVL; i < D; i++)
            cache[(size_t)t * D + i] = bf(0.25f * (float)(i - KVL));
    for (int h = 0; h < H; h++)
        for (int i = 0; i < KVL; i++)
            q[h * D + i] = bf(0.f);
    const int len = S;
    double o[H * KVL], lse[H];
    fgh_mla_cfg c = cfg(1);
    fgh_ref_mla(&c, q, cache, &len, o, lse);
    for (int h = 0; h < H; h++) {
        double dot = 0;
        for (int i = KVL; i < D; i++)
            dot += (double)fgh_bf16_to_f32(q[h * D + i]) * 0.25 * (i - KVL);
        cr_assert_float_eq(lse[h], c.scale * dot + log((double)S), 1e-9);
        for (int i = 0; i < KVL; i++) {
            double mean = 0;
            for (int t = 0; t < S; t++)
                mean += value(cache, 0, t, i);
            cr_assert_float_eq(o[h * KVL + i], mean / S, 1e-12);
        }
    }
    free(cache), free(q);
}

Test(ref_mla, a_peaked_query_returns_one_row)
{
    /* rope columns one-hot per row; the query's rope column j is 320, so s_j =
     * 0.125 x 320 = 40 and every other row scores 0 */
    uint16_t *cache, *q;
    random_inputs(1, &cache, &q, 13);
    for (int t = 0; t < S; t++)
        for (int i = KVL; i < D; i++)
            cache[(size_t)t * D + i] = bf(i - KVL == t % ROPE ? 1.f : 0.f);
    const int j = 7;   /* rows 7, 23 and 39 share the one-hot column: len 20 keeps one */
    for (int h = 0; h < H; h++)
        for (int i = 0; i < D; i++)
            q[h * D + i] = bf(i >= KVL && i - KVL == j ? 320.f : 0.f);
    const int len = 20;
    double o[H * KVL], lse[H];
    fgh_mla_cfg c = cfg(1);
    fgh_ref_mla(&c, q, cache, &len, o, lse);   /* s_j = 40, the others 0 */
    for (int h = 0; h < H; h++)
        for (int i = 0; i < KVL; i++)
            cr_assert_float_eq(o[h * KVL + i], value(cache, 0, j, i), 1e-15 + 1e-15 * 20,
                               "head %d value %d", h, i);
    free(cache), free(q);
}

Test(ref_mla, pages_give_the_same_result)
{
    const int batch = 3, P = 8, pages_per = S / P, npages = batch * pages_per + 2;
    uint16_t *cache, *q;
    random_inputs(batch, &cache, &q, 14);
    int32_t *table = malloc(sizeof(int32_t) * batch * pages_per);
    int32_t *perm = malloc(sizeof(int32_t) * npages);
    for (int i = 0; i < npages; i++)
        perm[i] = i;
    for (int i = npages - 1; i > 0; i--) {   /* a seeded shuffle; two pages stay unowned */
        const int k = (int)(fgh_splitmix64(99 + (uint64_t)i) % (uint64_t)(i + 1));
        const int32_t x = perm[i];
        perm[i] = perm[k], perm[k] = x;
    }
    uint16_t *pool = malloc(2 * (size_t)npages * P * D);
    memset(pool, 0xff, 2 * (size_t)npages * P * D);   /* NaN in bf16: an unowned page read shows */
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < pages_per; j++) {
            table[b * pages_per + j] = perm[b * pages_per + j];
            memcpy(pool + (size_t)table[b * pages_per + j] * P * D,
                   cache + ((size_t)b * S + j * P) * D, 2 * (size_t)P * D);
        }
    const int len[3] = {S, 17, 8};   /* mid-page and page-aligned ends */
    double o1[3 * H * KVL], l1[3 * H], o2[3 * H * KVL], l2[3 * H];
    fgh_mla_cfg c = cfg(batch);
    fgh_ref_mla(&c, q, cache, len, o1, l1);
    c.page_size = P, c.page_table = table, c.max_pages = pages_per;
    fgh_ref_mla(&c, q, pool, len, o2, l2);
    cr_assert_eq(memcmp(o1, o2, sizeof o1), 0);
    cr_assert_eq(memcmp(l1, l2, sizeof l1), 0);
    free(cache), free(q), free(table), free(perm), free(pool);
}

Test(ref_mla, splits_combine_to_the_whole)
{
    uint16_t *cache, *q;
    random_inputs(1, &cache, &q, 15);
    const int cut = 13;
    double whole[H * KVL], lw[H], a[H * KVL], la[H], bpart[H * KVL], lb[H];
    fgh_mla_cfg c = cfg(1);
    const int len = S, len_a = cut, len_b = S - cut, none = 0;
    fgh_ref_mla(&c, q, cache, &len, whole, lw);
    fgh_ref_mla(&c, q, cache, &len_a, a, la);
    fgh_ref_mla(&c, q, cache + (size_t)cut * D, &len_b, bpart, lb);   /* rows cut.. */
    double empty[H * KVL], le[H];
    fgh_ref_mla(&c, q, cache, &none, empty, le);
    for (int h = 0; h < H; h++) {
        const double *parts[3] = {a + h * KVL, empty + h * KVL, bpart + h * KVL};
        const double lses[3] = {la[h], le[h], lb[h]};
        double o[KVL], l;
        fgh_mla_combine(KVL, 3, parts, lses, o, &l);
        cr_assert_float_eq(l, lw[h], 1e-12);
        for (int i = 0; i < KVL; i++)
            cr_assert_float_eq(o[i], whole[h * KVL + i], 1e-12);
    }
    free(cache), free(q);
}

Test(ref_mla, inactive_slots_among_mixed_lengths)
{
    uint16_t *cache, *q;
    random_inputs(3, &cache, &q, 16);
    const int lens[3] = {0, 5, -1};
    double o[3 * H * KVL], lse[3 * H];
    fgh_mla_cfg c = cfg(3);
    fgh_ref_mla(&c, q, cache, lens, o, lse);
    for (int h = 0; h < H; h++) {
        cr_assert(isinf(lse[h]) && lse[h] < 0);
        cr_assert(isinf(lse[2 * H + h]) && lse[2 * H + h] < 0);
        cr_assert(isfinite(lse[H + h]));
        for (int i = 0; i < KVL; i++) {
            cr_assert_eq(o[h * KVL + i], 0.0);
            cr_assert_eq(o[(2 * H + h) * KVL + i], 0.0);
        }
    }
    /* request 1 alone gives the same numbers: the others do not leak in */
    double o1[H * KVL], l1[H];
    fgh_mla_cfg one = cfg(1);
    fgh_ref_mla(&one, q + (size_t)H * D, cache + (size_t)S * D, &lens[1], o1, l1);
    cr_assert_eq(memcmp(o1, o + H * KVL, sizeof o1), 0);
    cr_assert_eq(memcmp(l1, lse + H, sizeof l1), 0);
    double o_none[KVL], l_none;
    fgh_mla_combine(KVL, 0, NULL, NULL, o_none, &l_none);
    cr_assert(isinf(l_none) && l_none < 0 && o_none[0] == 0.0, "no splits: empty");
    free(cache), free(q);
}

Test(ref_mla, two_keys_give_the_worked_softmax)
{
    /* value columns of row 0 all 1, of row 1 all -1, rope columns 0; head h's
     * query is 8 (h + 1) in column 0: s = 0.125 x 8 (h + 1) x (+-1) = +-(h + 1),
     * so p0 = e^(h+1) / (e^(h+1) + e^-(h+1)), o = p0 - p1 = tanh(h + 1) and
     * lse = ln(e^(h+1) + e^-(h+1)) = ln(2 cosh(h + 1)); worked for h = 0:
     * o = 0.7615941559557649, lse = 1.1269280110429727 */
    uint16_t cache[2 * D], q[H * D];
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < D; i++)
            cache[t * D + i] = bf(i < KVL ? (t ? -1.f : 1.f) : 0.f);
    fgh_fill_host(q, FGH_BF16, H * D, 21, 1.0f);   /* only column 0 and the rope ones read */
    for (int h = 0; h < H; h++) {
        q[h * D] = bf(8.f * (float)(h + 1));
        for (int i = 1; i < KVL; i++)
            q[h * D + i] = bf(0.f);
    }
    const int len = 2;
    double o[H * KVL], lse[H];
    fgh_mla_cfg c = cfg(1);
    c.max_context = 2;
    fgh_ref_mla(&c, q, cache, &len, o, lse);
    cr_assert_float_eq(o[0], 0.7615941559557649, 1e-15);
    cr_assert_float_eq(lse[0], 1.1269280110429727, 1e-15);
    for (int h = 0; h < H; h++) {
        const double x = h + 1;
        cr_assert_float_eq(lse[h], log(exp(x) + exp(-x)), 1e-14, "head %d", h);
        for (int i = 0; i < KVL; i++)
            cr_assert_float_eq(o[h * KVL + i], tanh(x), 1e-15, "head %d value %d", h, i);
    }
}

/* q = 16 x row j: s_j = 2 |c_j|^2, about 32 at D = 48, against scores of
 * spread about 4.6 for the other rows: out is row j's values to ~1e-9. */
static void peaked_on(int j, int len)
{
    uint16_t *cache, *q;
    random_inputs(1, &cache, &q, 30 + (uint64_t)j);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < D; i++)
            q[h * D + i] = bf(16.f * (float)value(cache, 0, j, i));   /* exact: a power of 2 */
    double o[H * KVL], lse[H];
    fgh_mla_cfg c = cfg(1);
    fgh_ref_mla(&c, q, cache, &len, o, lse);
    double sj = 0;
    for (int i = 0; i < D; i++)
        sj += 16.0 * value(cache, 0, j, i) * value(cache, 0, j, i);
    sj *= c.scale;
    for (int h = 0; h < H; h++) {
        cr_assert_float_eq(lse[h], sj, 1e-6, "row %d of %d: lse %g, s_j %g", j, len, lse[h], sj);
        for (int i = 0; i < KVL; i++)
            cr_assert_float_eq(o[h * KVL + i], value(cache, 0, j, i), 1e-6, "row %d value %d", j, i);
    }
    free(cache), free(q);
}

Test(ref_mla, a_query_along_the_newest_or_first_row_returns_it)
{
    peaked_on(S - 1, S);   /* the newest token */
    peaked_on(0, S);       /* the first */
    peaked_on(16, 17);     /* the newest of a shorter request */
}

/* The reference reads the stored bits: a value that bf16 or f16 cannot hold
 * (1/3 + i/100) comes back as its rounding, and that is what it averages. */
static void round_trip(fgh_dtype t)
{
    uint16_t row[D], q[H * D];
    for (int i = 0; i < D; i++) {
        const float v = 1.f / 3.f + (float)i / 100.f;
        row[i] = t == FGH_F16 ? fgh_f32_to_f16(v) : fgh_f32_to_bf16(v);
    }
    fgh_fill_host(q, t, H * D, 40, 1.0f);
    const int len = 1;
    double o[H * KVL], lse[H];
    fgh_mla_cfg c = cfg(1);
    c.dtype = t;
    c.max_context = 1;
    fgh_ref_mla(&c, q, row, &len, o, lse);
    for (int h = 0; h < H; h++) {
        double s = 0;
        for (int i = 0; i < D; i++)
            s += (double)fgh_get(q, t, (size_t)h * D + i) * (double)fgh_get(row, t, (size_t)i);
        cr_assert_float_eq(lse[h], 0.125 * s, 1e-12);
        for (int i = 0; i < KVL; i++) {
            const double stored = fgh_get(row, t, (size_t)i);
            cr_assert_eq(o[h * KVL + i], stored, "%s value %d", fgh_dtype_name(t), i);
            cr_assert_neq(o[h * KVL + i], (double)(1.f / 3.f + (float)i / 100.f));
        }
    }
}

Test(ref_mla, bf16_and_f16_inputs_are_read_as_stored)
{
    round_trip(FGH_BF16);
    round_trip(FGH_F16);
}

Test(ref_mla, heads_apart_give_the_bits_of_the_whole)
{
    /* what a test spreading the reference over threads relies on */
    const int batch = 2;
    uint16_t *cache, *q;
    random_inputs(batch, &cache, &q, 50);
    const int len[2] = {S, 23};
    double whole[2 * H * KVL], lw[2 * H], part[2 * H * KVL], lp[2 * H];
    fgh_mla_cfg c = cfg(batch);
    fgh_ref_mla(&c, q, cache, len, whole, lw);
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < H; h += 2) {   /* heads in pieces of 2 and 1 */
            const int h1 = h + 2 < H ? h + 2 : H;
            fgh_ref_mla_heads(&c, q, cache, len, b, h, h1, part + ((size_t)b * H + h) * KVL,
                              lp + b * H + h);
        }
    cr_assert_eq(memcmp(whole, part, sizeof whole), 0);
    cr_assert_eq(memcmp(lw, lp, sizeof lw), 0);
    free(cache), free(q);
}
