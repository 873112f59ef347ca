/* The MLA block reference (tests/gpu/ref_mla_block.c, issue 9) against the
 * absorbed computation a fused kernel does, worked here in double: scores
 * over the latent rows with q_abs = W_uk^T q_nope | q_pe, the latent
 * output sum p c, then W_uv and W_o (the reference's q_abs, itself checked
 * against a query computed here: projections, q_lora's RMSNorm, RoPE with
 * cos/sin scaled).  Plus head shards summing to the whole and the new row
 * at position 0. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_mla_block.h"

enum { B = 2, H = 64, NH = 4, QL = 24, KV = 32, NOPE = 16, R = 8, VD = 16, S = 12 };
enum { D = KV + R, QD = NOPE + R, KVB = NOPE + VD };

typedef struct {
    uint16_t x[B * H], in_norm[H], w_q[NH * QD * H], w_q_a[QL * H], q_a_norm[QL],
        w_q_b[NH * QD * QL], w_kv_a[D * H], kv_a_norm[KV], w_kv_b[NH * KVB * KV],
        w_o[H * NH * VD], cache[B * S * D];
    float inv_freq[R / 2];
} inputs;

static void fill(void *buf, size_t n, uint64_t seed, float scale)
{
    fgh_fill_host(buf, FGH_BF16, n, seed, scale);
}

static inputs *make_inputs(void)
{
    inputs *in = calloc(1, sizeof *in);
    cr_assert_not_null(in);
    fill(in->x, B * H, 1, 1.0f);
    fill(in->in_norm, H, 2, 1.0f);
    fill(in->w_q, NH * QD * H, 3, 0.2f);
    fill(in->w_q_a, QL * H, 4, 0.2f);
    fill(in->q_a_norm, QL, 5, 1.0f);
    fill(in->w_q_b, NH * QD * QL, 6, 0.3f);
    fill(in->w_kv_a, D * H, 7, 0.2f);
    fill(in->kv_a_norm, KV, 8, 1.0f);
    fill(in->w_kv_b, NH * KVB * KV, 9, 0.3f);
    fill(in->w_o, H * NH * VD, 10, 0.2f);
    fill(in->cache, B * S * D, 11, 1.0f);
    for (int i = 0; i < R / 2; i++)
        in->inv_freq[i] = (float)(1.0 / pow(10000.0, 2.0 * i / R));
    return in;
}

static fgh_mla_block_cfg cfg(const inputs *in, int q_lora)
{
    return (fgh_mla_block_cfg){.batch = B, .hidden = H, .heads = NH, .q_lora = q_lora,
                               .kv_lora = KV, .nope = NOPE, .rope = R, .v_dim = VD,
                               .max_context = S, .eps = 1e-6, .scale = 0.3, .cs_scale = 1.0,
                               .inv_freq = in->inv_freq, .dtype = FGH_BF16};
}

static fgh_mla_block_weights weights(const inputs *in)
{
    return (fgh_mla_block_weights){.input_norm = in->in_norm, .w_q = in->w_q, .w_q_a = in->w_q_a,
                                   .q_a_norm = in->q_a_norm, .w_q_b = in->w_q_b,
                                   .w_kv_a = in->w_kv_a, .kv_a_norm = in->kv_a_norm,
                                   .w_kv_b = in->w_kv_b, .w_o = in->w_o};
}

static double w(const uint16_t *buf, size_t i) { return fgh_bf16_to_f32(buf[i]); }

static double rel(const double *a, const double *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++)
        num += (a[i] - b[i]) * (a[i] - b[i]), den += a[i] * a[i];
    return sqrt(num / den);
}

/* y the absorbed way from the reference's q_abs and new rows */
static void absorbed(const inputs *in, const fgh_mla_block_cfg *c, const int *pos,
                     const double *q_abs, const double *new_row, double *y)
{
    for (int b = 0; b < B; b++) {
        double o[NH * VD];
        for (int h = 0; h < NH; h++) {
            const double *q = q_abs + ((size_t)b * NH + h) * D;
            double s[S], mx = -INFINITY, sum = 0, lat[KV] = {0};
            for (int t = 0; t <= pos[b]; t++) {
                double dot = 0;
                for (int i = 0; i < D; i++)
                    dot += q[i] * (t < pos[b] ? w(in->cache, ((size_t)b * S + t) * D + i)
                                              : new_row[(size_t)b * D + i]);
                s[t] = c->scale * dot;
                mx = fmax(mx, s[t]);
            }
            for (int t = 0; t <= pos[b]; t++)
                sum += (s[t] = exp(s[t] - mx));
            for (int t = 0; t <= pos[b]; t++)
                for (int i = 0; i < KV; i++)
                    lat[i] += s[t] / sum * (t < pos[b] ? w(in->cache, ((size_t)b * S + t) * D + i)
                                                       : new_row[(size_t)b * D + i]);
            for (int j = 0; j < VD; j++) {   /* W_uv after the attention */
                double acc = 0;
                for (int i = 0; i < KV; i++)
                    acc += w(in->w_kv_b, ((size_t)h * KVB + NOPE + j) * KV + i) * lat[i];
                o[h * VD + j] = acc;
            }
        }
        for (int r = 0; r < H; r++) {
            double acc = 0;
            for (int i = 0; i < NH * VD; i++)
                acc += w(in->w_o, (size_t)r * NH * VD + i) * o[i];
            y[(size_t)b * H + r] = acc;
        }
    }
}

Test(ref_mla_block, explicit_equals_absorbed)
{
    inputs *in = make_inputs();
    const int pos[B] = {5, S - 1};
    for (int q_lora = 0; q_lora <= QL; q_lora += QL) {
        const fgh_mla_block_cfg c = cfg(in, q_lora);
        const fgh_mla_block_weights wt = weights(in);
        double y[B * H], row[B * D], qa[B * NH * D], ya[B * H];
        fgh_ref_mla_block(&c, &wt, in->x, in->cache, pos, y, row, qa);
        absorbed(in, &c, pos, qa, row, ya);
        const double e = rel(y, ya, B * H);
        cr_expect(e < 1e-12, "q_lora %d: explicit and absorbed differ by %.3e", q_lora, e);
        double n = 0;
        for (int i = 0; i < B * H; i++)
            n += y[i] * y[i];
        cr_expect(n > 1e-6 && isfinite(n), "q_lora %d: |y|^2 %g", q_lora, n);
    }
    free(in);
}

/* The query path on its own, at positions past 0: q (W_q x, or W_q_b
 * rmsnorm(W_q_a x)) computed here, q_pe rotated here (pairs (2i, 2i+1), cos
 * and sin times cs_scale), then W_uk^T q_nope: the reference's q_abs must be
 * that, with and without q_lora, at cs_scale 1 and 1.3. */
Test(ref_mla_block, absorbed_query_computed_apart)
{
    inputs *in = make_inputs();
    const int pos[B] = {5, 9};
    for (int q_lora = 0; q_lora <= QL; q_lora += QL)
        for (int k = 0; k < 2; k++) {
            fgh_mla_block_cfg c = cfg(in, q_lora);
            c.cs_scale = k ? 1.3 : 1.0;
            const fgh_mla_block_weights wt = weights(in);
            double y[B * H], row[B * D], qa[B * NH * D];
            fgh_ref_mla_block(&c, &wt, in->x, in->cache, pos, y, row, qa);
            for (int b = 0; b < B; b++) {
                double xn[H], ss = 0, q[NH * QD];
                for (int i = 0; i < H; i++)
                    ss += w(in->x, (size_t)b * H + i) * w(in->x, (size_t)b * H + i);
                for (int i = 0; i < H; i++)
                    xn[i] = w(in->x, (size_t)b * H + i) / sqrt(ss / H + 1e-6) * w(in->in_norm, i);
                if (q_lora) {
                    double a[QL], as = 0;
                    for (int r = 0; r < QL; r++) {
                        a[r] = 0;
                        for (int i = 0; i < H; i++)
                            a[r] += w(in->w_q_a, (size_t)r * H + i) * xn[i];
                        as += a[r] * a[r];
                    }
                    for (int r = 0; r < QL; r++)
                        a[r] = a[r] / sqrt(as / QL + 1e-6) * w(in->q_a_norm, r);
                    for (int r = 0; r < NH * QD; r++) {
                        q[r] = 0;
                        for (int i = 0; i < QL; i++)
                            q[r] += w(in->w_q_b, (size_t)r * QL + i) * a[i];
                    }
                } else {
                    for (int r = 0; r < NH * QD; r++) {
                        q[r] = 0;
                        for (int i = 0; i < H; i++)
                            q[r] += w(in->w_q, (size_t)r * H + i) * xn[i];
                    }
                }
                for (int h = 0; h < NH; h++) {
                    const double *qh = q + h * QD, *got = qa + ((size_t)b * NH + h) * D;
                    for (int j = 0; j < KV; j++) {
                        double want = 0;
                        for (int i = 0; i < NOPE; i++)
                            want += w(in->w_kv_b, ((size_t)h * KVB + i) * KV + j) * qh[i];
                        cr_expect(fabs(got[j] - want) <= 1e-12 * (1 + fabs(want)),
                                  "q_lora %d cs %g request %d head %d latent %d: %.17g, want %.17g",
                                  q_lora, c.cs_scale, b, h, j, got[j], want);
                    }
                    for (int i = 0; i < R / 2; i++) {
                        const double ang = (double)((float)pos[b] * in->inv_freq[i]);
                        const double x0 = qh[NOPE + 2 * i], x1 = qh[NOPE + 2 * i + 1];
                        const double r0 = (x0 * cos(ang) - x1 * sin(ang)) * c.cs_scale;
                        const double r1 = (x0 * sin(ang) + x1 * cos(ang)) * c.cs_scale;
                        cr_expect(fabs(got[KV + 2 * i] - r0) <= 1e-12 * (1 + fabs(r0)) &&
                                      fabs(got[KV + 2 * i + 1] - r1) <= 1e-12 * (1 + fabs(r1)),
                                  "q_lora %d cs %g request %d head %d rope pair %d", q_lora,
                                  c.cs_scale, b, h, i);
                    }
                }
            }
        }
    free(in);
}

/* Two shards of two heads each (weights offset to their rows, W_o's columns
 * through w_o_ld): their partial sums add up to the whole block's y. */
Test(ref_mla_block, head_shards_sum_to_the_whole)
{
    inputs *in = make_inputs();
    const int pos[B] = {7, 3};
    fgh_mla_block_cfg c = cfg(in, QL);
    fgh_mla_block_weights wt = weights(in);
    double whole[B * H], part[B * H], sum[B * H] = {0}, row[B * D];
    fgh_ref_mla_block(&c, &wt, in->x, in->cache, pos, whole, row, NULL);
    c.heads = NH / 2, c.w_o_ld = NH * VD;
    for (int sh = 0; sh < 2; sh++) {
        fgh_mla_block_weights ws = wt;
        ws.w_q_b = in->w_q_b + (size_t)sh * (NH / 2) * QD * QL;
        ws.w_kv_b = in->w_kv_b + (size_t)sh * (NH / 2) * KVB * KV;
        ws.w_o = in->w_o + (size_t)sh * (NH / 2) * VD;
        fgh_ref_mla_block(&c, &ws, in->x, in->cache, pos, part, row, NULL);
        for (int i = 0; i < B * H; i++)
            sum[i] += part[i];
    }
    const double e = rel(whole, sum, B * H);
    cr_expect(e < 1e-13, "shards differ from the whole by %.3e", e);
    free(in);
}

/* At position 0 the rotation is the identity: the new row's k_pe is W_kv_a's
 * rope rows times the normalized input, and its c is RMSNorm'd. */
Test(ref_mla_block, position_zero_and_the_new_row)
{
    inputs *in = make_inputs();
    const int pos[B] = {0, 0};
    const fgh_mla_block_cfg c = cfg(in, 0);
    const fgh_mla_block_weights wt = weights(in);
    double y[B * H], row[B * D];
    fgh_ref_mla_block(&c, &wt, in->x, in->cache, pos, y, row, NULL);
    for (int b = 0; b < B; b++) {
        double xn[H], ss = 0;
        for (int i = 0; i < H; i++)
            ss += w(in->x, (size_t)b * H + i) * w(in->x, (size_t)b * H + i);
        for (int i = 0; i < H; i++)
            xn[i] = w(in->x, (size_t)b * H + i) / sqrt(ss / H + 1e-6) * w(in->in_norm, i);
        double ckv[D], css = 0;
        for (int r = 0; r < D; r++) {
            ckv[r] = 0;
            for (int i = 0; i < H; i++)
                ckv[r] += w(in->w_kv_a, (size_t)r * H + i) * xn[i];
        }
        for (int i = 0; i < KV; i++)
            css += ckv[i] * ckv[i];
        for (int i = 0; i < D; i++) {
            const double want =
                i < KV ? ckv[i] / sqrt(css / KV + 1e-6) * w(in->kv_a_norm, i) : ckv[i];
            cr_expect(fabs(row[(size_t)b * D + i] - want) <= 1e-12 * (1 + fabs(want)),
                      "request %d element %d: %.17g, expected %.17g", b, i,
                      row[(size_t)b * D + i], want);
        }
    }
    free(in);
}
