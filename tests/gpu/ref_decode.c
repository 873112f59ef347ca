#include "ref_decode.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint16_t fgh_round_to(fgh_dtype t, double v)
{
    /* double -> float -> half can round twice; the gap matters only on ties
     * of the float, far below the tolerances used with this reference. */
    return t == FGH_F16 ? fgh_f32_to_f16((float)v) : fgh_f32_to_bf16((float)v);
}

static double get(const void *buf, fgh_dtype t, size_t i) { return fgh_get(buf, t, i); }

static double rounded(fgh_dtype t, double v)
{
    uint16_t b = fgh_round_to(t, v);
    return t == FGH_F16 ? fgh_f16_to_f32(b) : fgh_bf16_to_f32(b);
}

static void rope(const fgh_decode_cfg *c, double *v, int pos)
{
    const int hd = c->head_dim;
    for (int p = 0; p < hd / 2; p++) {
        const float inv = (float)(1.0 / pow(c->theta, (2.0 * p) / hd));
        const float ang = (float)pos * inv;
        const double cs = cos((double)ang), sn = sin((double)ang);
        const int i0 = c->neox ? p : 2 * p, i1 = c->neox ? p + hd / 2 : 2 * p + 1;
        const double a = v[i0], b = v[i1];
        v[i0] = a * cs - b * sn;
        v[i1] = b * cs + a * sn;
    }
}

/* One head of one request: QKV rows of the head, RoPE, append, attention. */
typedef struct head_job {
    const fgh_decode_cfg *c;
    const void *w_qkv;
    void *k_cache, *v_cache;
    const double *xn;
    int b, pos, h0, h1;
    double *o;   /* [NH * HD] */
} head_job;

static void *run_heads(void *arg)
{
    const head_job *j = arg;
    const fgh_decode_cfg *c = j->c;
    const int H = c->hidden, NH = c->heads, HD = c->head_dim, S = c->max_context;
    const fgh_dtype t = c->dtype;
    double *q = malloc(sizeof(double) * HD), *k = malloc(sizeof(double) * HD);
    double *v = malloc(sizeof(double) * HD), *p = malloc(sizeof(double) * (S + 1));
    uint16_t *kc = j->k_cache, *vc = j->v_cache;
    for (int h = j->h0; h < j->h1; h++) {
        double *dst[3] = {q, k, v};
        for (int which = 0; which < 3; which++)
            for (int d = 0; d < HD; d++) {
                const size_t row = (size_t)which * NH * HD + (size_t)h * HD + d;
                double acc = 0;
                for (int i = 0; i < H; i++)
                    acc += get(j->w_qkv, t, row * H + i) * j->xn[i];
                dst[which][d] = acc;
            }
        rope(c, q, j->pos);
        rope(c, k, j->pos);
        const size_t base = ((size_t)j->b * NH + h) * S * HD;
        for (int d = 0; d < HD; d++) {
            kc[base + (size_t)j->pos * HD + d] = fgh_round_to(t, k[d]);
            vc[base + (size_t)j->pos * HD + d] = fgh_round_to(t, v[d]);
        }
        double mx = -INFINITY;
        for (int s = 0; s <= j->pos; s++) {
            double sc = 0;
            for (int d = 0; d < HD; d++)
                sc += q[d] * get(kc, t, base + (size_t)s * HD + d);
            p[s] = sc / sqrt((double)HD);
            mx = fmax(mx, p[s]);
        }
        double den = 0;
        for (int s = 0; s <= j->pos; s++)
            den += p[s] = exp(p[s] - mx);
        for (int d = 0; d < HD; d++) {
            double acc = 0;
            for (int s = 0; s <= j->pos; s++)
                acc += p[s] * get(vc, t, base + (size_t)s * HD + d);
            j->o[(size_t)h * HD + d] = rounded(t, acc / den);
        }
    }
    free(q), free(k), free(v), free(p);
    return NULL;
}

void fgh_ref_decode(const fgh_decode_cfg *c, const void *x, const void *norm_w,
                    const void *w_qkv, const void *w_o, void *k_cache, void *v_cache,
                    const int *pos, double *y)
{
    const int H = c->hidden, NH = c->heads, HD = c->head_dim;
    const fgh_dtype t = c->dtype;
    double *xn = malloc(sizeof(double) * H);
    double *o = malloc(sizeof(double) * (size_t)NH * HD);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nthreads = ncpu < 1 ? 1 : ncpu > 32 ? 32 : (int)ncpu;
    if (nthreads > NH)
        nthreads = NH;

    for (int b = 0; b < c->batch; b++) {
        double *yb = y + (size_t)b * H;
        if (pos[b] < 0) {
            memset(yb, 0, sizeof(double) * H);
            continue;
        }
        double ss = 0;
        for (int i = 0; i < H; i++) {
            const double f = get(x, t, (size_t)b * H + i);
            ss += f * f;
        }
        const double r = 1.0 / sqrt(ss / H + c->eps);
        for (int i = 0; i < H; i++) {
            const double f = get(x, t, (size_t)b * H + i);
            xn[i] = c->rmsnorm ? rounded(t, f * r * get(norm_w, t, i)) : f;
        }
        /* heads are independent: one thread per share of them */
        pthread_t th[32];
        head_job jobs[32];
        for (int i = 0; i < nthreads; i++) {
            jobs[i] = (head_job){c, w_qkv, k_cache, v_cache, xn, b, pos[b],
                                 NH * i / nthreads, NH * (i + 1) / nthreads, o};
            if (pthread_create(&th[i], NULL, run_heads, &jobs[i]) != 0)
                run_heads(&jobs[i]), th[i] = 0;
        }
        for (int i = 0; i < nthreads; i++)
            if (th[i])
                pthread_join(th[i], NULL);
        for (int j = 0; j < H; j++) {
            double acc = 0;
            for (int i = 0; i < NH * HD; i++)
                acc += o[i] * get(w_o, t, (size_t)j * NH * HD + i);
            yb[j] = acc;
        }
    }
    free(xn), free(o);
}
