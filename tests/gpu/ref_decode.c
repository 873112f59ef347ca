#include "ref_decode.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 2*pi as a double, as transformers' 2 * math.pi (M_PI is not in strict C17) */
#define TWO_PI 6.283185307179586

static double get(const void *buf, fgh_dtype t, size_t i) { return fgh_get(buf, t, i); }


/* Llama 3.1: high frequencies kept, low ones divided by factor, a linear
 * blend between them by how many wavelengths fit the original context.
 * Written apart from generator/rope.c on purpose: the reference checks the
 * generator (tests/unit/test_ref_decode.c holds the two tables equal, and
 * checks this one against the published rule at one frequency per band). */
static double llama3_scaled(double inv, const fgh_rope_scaling *s)
{
    const double orig = s->original_max_position;
    const double wavelen = TWO_PI / inv;
    if (wavelen < orig / s->high_freq_factor)
        return inv;
    if (wavelen > orig / s->low_freq_factor)
        return inv / s->factor;
    const double smooth =
        (orig / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
    return (1 - smooth) * inv / s->factor + smooth * inv;
}

void fgh_rope_inv_freq(double theta, int head_dim, const fgh_rope_scaling *scaling,
                       float *inv_freq)
{
    const fgh_rope_scaling_type type = scaling ? scaling->type : FGH_ROPE_SCALING_NONE;
    for (int i = 0; i < head_dim / 2; i++) {
        double inv = 1.0 / pow(theta, (2.0 * i) / head_dim);
        if (type == FGH_ROPE_SCALING_LINEAR)
            inv /= scaling->factor;
        else if (type == FGH_ROPE_SCALING_LLAMA3)
            inv = llama3_scaled(inv, scaling);
        inv_freq[i] = (float)inv;
    }
}

static int kv_heads(const fgh_decode_cfg *c) { return c->kv_heads ? c->kv_heads : c->heads; }

/* One request's step, shared by the threads that work on its heads. */
typedef struct decode_step {
    const fgh_decode_cfg *c;
    const void *w_qkv, *qkv_bias;
    const fgh_kv_view *kv;
    const float *inv_freq;   /* [HD / 2] */
    const double *xn;        /* [H], the normalized input */
    int b, pos, first;       /* attention over [first, pos] */
    double *o;               /* [NH * HD] */
} decode_step;

static void rope(const decode_step *st, double *v)
{
    fgh_rope_rotate(v, st->c->head_dim, st->pos, st->inv_freq, st->c->neox, 1.0);
}

/* Row r of W_qkv times xn, then the bias: the order a kernel that adds the
 * bias to its finished dot product has. */
static double project_row(const decode_step *st, size_t r)
{
    const int H = st->c->hidden;
    const fgh_dtype t = st->c->dtype;
    double acc = 0;
    for (int i = 0; i < H; i++)
        acc += get(st->w_qkv, t, r * H + i) * st->xn[i];
    return st->qkv_bias ? acc + get(st->qkv_bias, t, r) : acc;
}

/* Element index of the first of the HD values of token s, KV head g: the
 * one place that knows the cache layout. */
static size_t cache_row(const decode_step *st, int g, int s)
{
    const fgh_kv_view *kv = st->kv;
    const size_t nkv = kv_heads(st->c), hd = st->c->head_dim;
    if (!kv->page_size)
        return (((size_t)st->b * nkv + g) * st->c->max_context + s) * hd;
    const size_t page = kv->page_table[(size_t)st->b * kv->max_pages + s / kv->page_size];
    return ((page * nkv + g) * kv->page_size + s % kv->page_size) * hd;
}

/* KV head g: k and v rows of W_qkv, RoPE on k, both appended at pos. */
static void append_kv(const decode_step *st, int g)
{
    const int NH = st->c->heads, NKV = kv_heads(st->c), HD = st->c->head_dim;
    const fgh_dtype t = st->c->dtype;
    double *k = malloc(sizeof(double) * HD), *v = malloc(sizeof(double) * HD);
    for (int d = 0; d < HD; d++) {
        k[d] = project_row(st, (size_t)(NH + g) * HD + d);
        v[d] = project_row(st, (size_t)(NH + NKV + g) * HD + d);
    }
    rope(st, k);
    uint16_t *kc = st->kv->k, *vc = st->kv->v;
    const size_t at = cache_row(st, g, st->pos);
    for (int d = 0; d < HD; d++) {
        kc[at + d] = fgh_round_to(t, k[d]);
        vc[at + d] = fgh_round_to(t, v[d]);
    }
    free(k), free(v);
}

/* Query head h: its q, softmax over the window of its KV head's rows, o. */
static void attend(const decode_step *st, int h)
{
    const int HD = st->c->head_dim, g = h / (st->c->heads / kv_heads(st->c));
    const int n = st->pos - st->first + 1;
    const fgh_dtype t = st->c->dtype;
    double *q = malloc(sizeof(double) * HD), *p = malloc(sizeof(double) * n);
    double *acc = calloc(HD, sizeof(double));
    for (int d = 0; d < HD; d++)
        q[d] = project_row(st, (size_t)h * HD + d);
    rope(st, q);
    double mx = -INFINITY;
    for (int i = 0; i < n; i++) {
        const size_t row = cache_row(st, g, st->first + i);
        double sc = 0;
        for (int d = 0; d < HD; d++)
            sc += q[d] * get(st->kv->k, t, row + d);
        p[i] = sc / sqrt((double)HD);
        mx = fmax(mx, p[i]);
    }
    double den = 0;
    for (int i = 0; i < n; i++)
        den += p[i] = exp(p[i] - mx);
    for (int i = 0; i < n; i++) {
        const size_t row = cache_row(st, g, st->first + i);
        for (int d = 0; d < HD; d++)
            acc[d] += p[i] * get(st->kv->v, t, row + d);
    }
    for (int d = 0; d < HD; d++)
        st->o[(size_t)h * HD + d] = fgh_rounded(t, acc[d] / den);
    free(q), free(p), free(acc);
}

/* fn(st, i) for i in [0, n), split over up to 32 threads: heads are
 * independent of one another. */
typedef void head_fn(const decode_step *st, int i);
typedef struct head_share {
    const decode_step *st;
    head_fn *fn;
    int i0, i1;
} head_share;

static void *run_share(void *arg)
{
    const head_share *s = arg;
    for (int i = s->i0; i < s->i1; i++)
        s->fn(s->st, i);
    return NULL;
}

static void for_each_head(const decode_step *st, int n, head_fn *fn)
{
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nthreads = ncpu < 1 ? 1 : ncpu > 32 ? 32 : (int)ncpu;
    if (nthreads > n)
        nthreads = n;
    pthread_t th[32];
    head_share shares[32];
    for (int i = 0; i < nthreads; i++) {
        shares[i] = (head_share){st, fn, n * i / nthreads, n * (i + 1) / nthreads};
        if (pthread_create(&th[i], NULL, run_share, &shares[i]) != 0)
            run_share(&shares[i]), th[i] = 0;
    }
    for (int i = 0; i < nthreads; i++)
        if (th[i])
            pthread_join(th[i], NULL);
}

static void normalize(const fgh_decode_cfg *c, const void *x, const void *norm_w, int b,
                      double *xn)
{
    const int H = c->hidden;
    const fgh_dtype t = c->dtype;
    for (int i = 0; i < H; i++)
        xn[i] = get(x, t, (size_t)b * H + i);
    if (!c->rmsnorm)
        return;
    fgh_rmsnorm_row(xn, H, norm_w, t, c->eps);
    for (int i = 0; i < H; i++)   /* the kernels keep the normalized row in storage */
        xn[i] = fgh_rounded(t, xn[i]);
}

void fgh_ref_decode_kv(const fgh_decode_cfg *c, const void *x, const void *norm_w,
                       const void *w_qkv, const void *qkv_bias, const void *w_o,
                       const fgh_kv_view *kv, const int *pos, double *y)
{
    const int H = c->hidden, QD = c->heads * c->head_dim, W = c->sliding_window;
    const fgh_dtype t = c->dtype;
    double *xn = malloc(sizeof(double) * H), *o = malloc(sizeof(double) * QD);
    float *inv_freq = malloc(sizeof(float) * (c->head_dim / 2));
    if (c->inv_freq)
        memcpy(inv_freq, c->inv_freq, sizeof(float) * (c->head_dim / 2));
    else
        fgh_rope_inv_freq(c->theta, c->head_dim, &c->rope_scaling, inv_freq);

    for (int b = 0; b < c->batch; b++) {
        double *yb = y + (size_t)b * H;
        if (pos[b] < 0) {
            memset(yb, 0, sizeof(double) * H);
            continue;
        }
        normalize(c, x, norm_w, b, xn);
        const int first = W > 0 && pos[b] - W + 1 > 0 ? pos[b] - W + 1 : 0;
        const decode_step st = {c, w_qkv, qkv_bias, kv, inv_freq, xn, b, pos[b], first, o};
        /* every KV head's row is in the cache before any query head reads it */
        for_each_head(&st, kv_heads(c), append_kv);
        for_each_head(&st, c->heads, attend);
        for (int j = 0; j < H; j++) {
            double acc = 0;
            for (int i = 0; i < QD; i++)
                acc += o[i] * get(w_o, t, (size_t)j * QD + i);
            yb[j] = acc;
        }
    }
    free(xn), free(o), free(inv_freq);
}
