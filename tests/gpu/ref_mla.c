/* C reference of the MLA decode attention core (ref_mla.h). */
#include "ref_mla.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Element offset of request b's cache row t. */
static size_t row_at(const fgh_mla_cfg *c, int b, int t)
{
    const size_t d = (size_t)c->kv_lora + c->rope;
    if (!c->page_size)
        return ((size_t)b * c->max_context + t) * d;
    const size_t page = c->page_table[(size_t)b * c->max_pages + t / c->page_size];
    return (page * c->page_size + t % c->page_size) * d;
}

void fgh_ref_mla(const fgh_mla_cfg *c, const void *q_abs, const void *cache, const int *len,
                 double *o, double *lse)
{
    const int d = c->kv_lora + c->rope;
    for (int b = 0; b < c->batch; b++) {
        const int n = len[b];
        double *s = n > 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
        for (int h = 0; h < c->heads; h++) {
            double *out = o + ((size_t)b * c->heads + h) * c->kv_lora;
            memset(out, 0, sizeof(double) * (size_t)c->kv_lora);
            if (n <= 0) {
                lse[(size_t)b * c->heads + h] = -INFINITY;
                continue;
            }
            const size_t q0 = ((size_t)b * c->heads + h) * d;
            double mx = -INFINITY;
            for (int t = 0; t < n; t++) {
                const size_t r = row_at(c, b, t);
                double dot = 0;
                for (int i = 0; i < d; i++)
                    dot += (double)fgh_get(q_abs, c->dtype, q0 + i) *
                           (double)fgh_get(cache, c->dtype, r + i);
                s[t] = c->scale * dot;
                mx = fmax(mx, s[t]);
            }
            double sum = 0;
            for (int t = 0; t < n; t++) {
                const double p = exp(s[t] - mx);
                sum += p;
                const size_t r = row_at(c, b, t);
                for (int i = 0; i < c->kv_lora; i++)
                    out[i] += p * (double)fgh_get(cache, c->dtype, r + i);
            }
            for (int i = 0; i < c->kv_lora; i++)
                out[i] /= sum;
            lse[(size_t)b * c->heads + h] = mx + log(sum);
        }
        free(s);
    }
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
