#include "ref_mla_block.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double get(const void *buf, fgh_dtype t, size_t i) { return fgh_get(buf, t, i); }

/* out[r] = sum_k w[off + r ld + k] in[k] for r < rows (w row-major). */
static void matvec(const void *w, fgh_dtype t, size_t off, int rows, int cols, size_t ld,
                   const double *in, double *out)
{
    for (int r = 0; r < rows; r++) {
        double acc = 0;
        for (int k = 0; k < cols; k++)
            acc += get(w, t, off + (size_t)r * ld + k) * in[k];
        out[r] = acc;
    }
}

void fgh_ref_mla_block(const fgh_mla_block_cfg *c, const fgh_mla_block_weights *w,
                       const void *x, const void *cache, const int *pos, double *y,
                       double *new_row, double *q_abs)
{
    const fgh_dtype t = c->dtype;
    const int H = c->hidden, NH = c->heads, KV = c->kv_lora, R = c->rope, D = KV + R;
    const int QD = c->nope + R, KVB = c->nope + c->v_dim;
    const size_t ld_o = c->w_o_ld ? (size_t)c->w_o_ld : (size_t)NH * c->v_dim;
    const int qin = c->q_lora ? c->q_lora : H;
    double *xn = malloc(sizeof(double) * H), *qa = malloc(sizeof(double) * qin);
    double *q = malloc(sizeof(double) * NH * QD), *row = malloc(sizeof(double) * D);
    double *k = malloc(sizeof(double) * c->nope), *s = malloc(sizeof(double) * c->max_context);
    double *o = malloc(sizeof(double) * NH * c->v_dim), *lat = malloc(sizeof(double) * D);
    double *v = malloc(sizeof(double) * c->v_dim);
    for (int b = 0; b < c->batch; b++) {
        const int p = pos[b];
        for (int i = 0; i < H; i++)
            xn[i] = get(x, t, (size_t)b * H + i);
        if (w->input_norm)
            fgh_rmsnorm_row(xn, H, w->input_norm, t, c->eps);
        /* the query of every head, q_pe rotated */
        if (c->q_lora) {
            matvec(w->w_q_a, t, 0, c->q_lora, H, H, xn, qa);
            fgh_rmsnorm_row(qa, c->q_lora, w->q_a_norm, t, c->eps);
            matvec(w->w_q_b, t, 0, NH * QD, c->q_lora, c->q_lora, qa, q);
        } else {
            matvec(w->w_q, t, 0, NH * QD, H, H, xn, q);
        }
        for (int h = 0; h < NH; h++)
            fgh_rope_rotate(q + (size_t)h * QD + c->nope, R, p, c->inv_freq, false,
                            c->cs_scale);
        /* the new latent row: normalized c, rotated k_pe */
        matvec(w->w_kv_a, t, 0, D, H, H, xn, row);
        fgh_rmsnorm_row(row, KV, w->kv_a_norm, t, c->eps);
        fgh_rope_rotate(row + KV, R, p, c->inv_freq, false, c->cs_scale);
        memcpy(new_row + (size_t)b * D, row, sizeof(double) * D);
        if (c->round_new_row)
            for (int i = 0; i < D; i++)
                row[i] = fgh_rounded(t, row[i]);
        /* per head: explicit K and V from every latent row t <= p */
        for (int h = 0; h < NH; h++) {
            const double *qh = q + (size_t)h * QD;
            const size_t uk = (size_t)h * KVB * KV, uv = uk + (size_t)c->nope * KV;
            double mx = -INFINITY;
            for (int tk = 0; tk <= p; tk++) {
                for (int i = 0; i < D; i++)
                    lat[i] = tk < p ? get(cache, t, ((size_t)b * c->max_context + tk) * D + i)
                                    : row[i];
                matvec(w->w_kv_b, t, uk, c->nope, KV, KV, lat, k);
                double dot = 0;
                for (int i = 0; i < c->nope; i++)
                    dot += qh[i] * k[i];
                for (int i = 0; i < R; i++)
                    dot += qh[c->nope + i] * lat[KV + i];
                s[tk] = c->scale * dot;
                mx = s[tk] > mx ? s[tk] : mx;
            }
            double sum = 0;
            for (int tk = 0; tk <= p; tk++)
                sum += (s[tk] = exp(s[tk] - mx));
            double *oh = o + (size_t)h * c->v_dim;
            memset(oh, 0, sizeof(double) * c->v_dim);
            for (int tk = 0; tk <= p; tk++) {
                for (int i = 0; i < KV; i++)
                    lat[i] = tk < p ? get(cache, t, ((size_t)b * c->max_context + tk) * D + i)
                                    : row[i];
                matvec(w->w_kv_b, t, uv, c->v_dim, KV, KV, lat, v);
                for (int i = 0; i < c->v_dim; i++)
                    oh[i] += s[tk] / sum * v[i];
            }
            if (q_abs) {   /* W_uk_h^T q_nope | q_pe */
                double *qa_h = q_abs + ((size_t)b * NH + h) * D;
                for (int j = 0; j < KV; j++) {
                    double acc = 0;
                    for (int i = 0; i < c->nope; i++)
                        acc += get(w->w_kv_b, t, uk + (size_t)i * KV + j) * qh[i];
                    qa_h[j] = acc;
                }
                for (int i = 0; i < R; i++)
                    qa_h[KV + i] = qh[c->nope + i];
            }
        }
        matvec(w->w_o, t, 0, H, NH * c->v_dim, ld_o, o, y + (size_t)b * H);
    }
    free(xn), free(qa), free(q), free(row), free(k), free(s), free(o), free(lat), free(v);
}
