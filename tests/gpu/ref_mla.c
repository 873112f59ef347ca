/* C reference of the MLA decode attention core (ref_mla.h). */
#include "ref_mla.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t fgh_mla_row_at(const fgh_mla_cfg *c, int b, int t)
{
    const size_t d = (size_t)c->kv_lora + c->rope;
    if (!c->page_size)
        return ((size_t)b * c->max_context + t) * d;
    const size_t page = c->page_table[(size_t)b * c->max_pages + t / c->page_size];
    return (page * c->page_size + t % c->page_size) * d;
}

static void get_row(const fgh_mla_cfg *c, const void *buf, size_t at, int n, double *out)
{
    for (int i = 0; i < n; i++)
        out[i] = (double)fgh_get(buf, c->dtype, at + i);
}

/* Heads per pass over a cache row: that many independent sums, each still
 * added in column order, so the bits are those of one head at a time. */
enum { HEADS_PER_PASS = 8 };

void fgh_ref_mla_heads(const fgh_mla_cfg *c, const void *q_abs, const void *cache, const int *len,
                       int b, int h0, int h1, double *o, double *lse)
{
    const int d = c->kv_lora + c->rope, n = len[b], nh = h1 - h0;
    memset(o, 0, sizeof(double) * (size_t)nh * c->kv_lora);
    if (n <= 0) {
        for (int h = 0; h < nh; h++)
            lse[h] = -INFINITY;
        return;
    }
    double *q = malloc(sizeof(double) * (size_t)nh * d);
    double *row = malloc(sizeof(double) * (size_t)d);
    double *s = malloc(sizeof(double) * (size_t)nh * n);   /* [head][t] */
    double *mx = malloc(sizeof(double) * (size_t)nh), *sum = malloc(sizeof(double) * (size_t)nh);
    for (int h = 0; h < nh; h++) {
        get_row(c, q_abs, ((size_t)b * c->heads + h0 + h) * d, d, q + (size_t)h * d);
        mx[h] = -INFINITY;
        sum[h] = 0;
    }
    /* s_t = scale * (q . c_t), each row read once for all the heads */
    for (int t = 0; t < n; t++) {
        get_row(c, cache, fgh_mla_row_at(c, b, t), d, row);
        for (int h = 0; h < nh; h += HEADS_PER_PASS) {
            const int m = nh - h < HEADS_PER_PASS ? nh - h : HEADS_PER_PASS;
            double dot[HEADS_PER_PASS] = {0};
            for (int i = 0; i < d; i++)
                for (int k = 0; k < m; k++)
                    dot[k] += q[(size_t)(h + k) * d + i] * row[i];
            for (int k = 0; k < m; k++) {
                const double v = c->scale * dot[k];
                s[(size_t)(h + k) * n + t] = v;
                mx[h + k] = fmax(mx[h + k], v);
            }
        }
    }
    /* o = sum_t exp(s_t - max) c_t[0 : kv_lora] / sum_t exp(s_t - max) */
    for (int t = 0; t < n; t++) {
        get_row(c, cache, fgh_mla_row_at(c, b, t), c->kv_lora, row);
        for (int h = 0; h < nh; h++) {
            const double p = exp(s[(size_t)h * n + t] - mx[h]);
            double *out = o + (size_t)h * c->kv_lora;
            sum[h] += p;
            for (int i = 0; i < c->kv_lora; i++)
                out[i] += p * row[i];
        }
    }
    for (int h = 0; h < nh; h++) {
        double *out = o + (size_t)h * c->kv_lora;
        for (int i = 0; i < c->kv_lora; i++)
            out[i] /= sum[h];
        lse[h] = mx[h] + log(sum[h]);
    }
    free(q), free(row), free(s), free(mx), free(sum);
}

void fgh_ref_mla(const fgh_mla_cfg *c, const void *q_abs, const void *cache, const int *len,
                 double *o, double *lse)
{
    for (int b = 0; b < c->batch; b++)
        fgh_ref_mla_heads(c, q_abs, cache, len, b, 0, c->heads,
                          o + (size_t)b * c->heads * c->kv_lora, lse + (size_t)b * c->heads);
}

void fgh_mla_combine(int kv_lora, int n, const double *const *o_parts, const double *lse_parts,
                     double *o, double *lse)
{
    double mx = -INFINITY;
    for (int j = 0; j < n; j++)
        mx = fmax(mx, lse_parts[j]);
    memset(o, 0, sizeof(double) * (size_t)kv_lora);
    if (mx == -INFINITY) {
        *lse = -INFINITY;
        return;
    }
    double sum = 0;
    for (int j = 0; j < n; j++) {
        if (lse_parts[j] == -INFINITY)
            continue;
        const double w = exp(lse_parts[j] - mx);
        sum += w;
        for (int i = 0; i < kv_lora; i++)
            o[i] += w * o_parts[j][i];
    }
    for (int i = 0; i < kv_lora; i++)
        o[i] /= sum;
    *lse = mx + log(sum);
}
