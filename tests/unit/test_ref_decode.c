/* The C reference of the fused decode step against stored golden outputs
 * (tests/golden/decode_ref_*.bin), so a change to the reference that GPU
 * tests are judged by cannot pass unnoticed.  Runs without a GPU.
 * FG_UPDATE_GOLDEN=1 rewrites the files (make update-golden). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_decode.h"

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

/* Runs the reference on seeded inputs; returns y and the appended rows. */
static double *run_reference(const fgh_decode_cfg *c, uint64_t seed, const int *pos, size_t *count)
{
    const size_t H = c->hidden, QD = (size_t)c->heads * c->head_dim;
    const size_t ncache = (size_t)c->batch * c->heads * c->max_context * c->head_dim;
    uint16_t *x = malloc(2 * c->batch * H), *g = malloc(2 * H), *wqkv = malloc(2 * 3 * QD * H);
    uint16_t *wo = malloc(2 * H * QD), *kc = malloc(2 * ncache), *vc = malloc(2 * ncache);
    fgh_fill_host(x, c->dtype, c->batch * H, seed + 1, 1.0f);
    fgh_fill_host(g, c->dtype, H, seed + 2, 1.0f);
    fgh_fill_host(wqkv, c->dtype, 3 * QD * H, seed + 3, 1.0f / sqrtf((float)H));
    fgh_fill_host(wo, c->dtype, H * QD, seed + 4, 1.0f / sqrtf((float)QD));
    fgh_fill_host(kc, c->dtype, ncache, seed + 5, 1.0f);
    fgh_fill_host(vc, c->dtype, ncache, seed + 6, 1.0f);
    const size_t rows = (size_t)c->batch * c->heads * 2 * c->head_dim;
    *count = c->batch * H + rows;
    double *out = calloc(*count, sizeof(double));
    fgh_ref_decode(c, x, g, wqkv, wo, kc, vc, pos, out);
    double *r = out + c->batch * H;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads; h++)
            for (int kv = 0; kv < 2; kv++)
                for (int d = 0; d < c->head_dim; d++) {
                    const size_t row = ((size_t)b * c->heads + h) * c->max_context +
                                       (pos[b] < 0 ? 0 : (size_t)pos[b]);
                    *r++ = pos[b] < 0 ? 0 : fgh_get(kv ? vc : kc, c->dtype, row * c->head_dim + d);
                }
    free(x), free(g), free(wqkv), free(wo), free(kc), free(vc);
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
                 (fgh_decode_cfg){256, 2, 64, 32, 3, true, true, 10000.0, 1e-5f, FGH_F16}, 42,
                 pos);
}

Test(ref_decode, golden_small_bf16_gptj_no_norm)
{
    const int pos[2] = {31, 5};
    check_golden("tests/golden/decode_ref_small_bf16.bin",
                 (fgh_decode_cfg){512, 4, 128, 48, 2, false, false, 500000.0, 1e-6f, FGH_BF16},
                 7, pos);
}

/* The appended rows are the rounded k and v: pos 0 attends to the new token
 * alone, so the output is W_o applied to the head's (rounded) v. */
Test(ref_decode, pos_zero_attends_to_the_new_token_alone)
{
    const int pos[1] = {0};
    fgh_decode_cfg c = {256, 2, 64, 8, 1, true, true, 10000.0, 1e-5f, FGH_F16};
    size_t count;
    double *got = run_reference(&c, 99, pos, &count);
    cr_assert_eq(count, 256 + 2 * 2 * 64);
    double ss = 0;
    for (int i = 0; i < 256; i++)
        ss += got[i] * got[i];
    cr_assert(ss > 0, "the output is not all zeros");
    free(got);
}
