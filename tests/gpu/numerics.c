/* Numerics shared by the GPU tests and the references: storage conversions,
 * the counter-based input generator, and error measures.  Plain C17, no CUDA
 * calls, so the references and their golden checks also build in CI. */
#include "harness.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------- dtypes */

size_t fgh_dtype_size(fgh_dtype t) { return t == FGH_F32 ? 4 : 2; }

const char *fgh_dtype_name(fgh_dtype t)
{
    return t == FGH_F32 ? "f32" : t == FGH_F16 ? "f16" : "bf16";
}

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t fgh_f32_to_f16(float f)
{
    const uint32_t x = f2u(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | 0x7e00u;                    /* NaN */
    if (ax >= 0x477ff000u)
        return sign | 0x7c00u;                    /* >= 65520 rounds to inf */
    if (ax >= 0x38800000u) {                      /* normal: >= 2^-14 */
        uint32_t r = ax + 0x0fffu + ((ax >> 13) & 1u);
        r -= 0x38000000u;                         /* exponent 127 -> 15 bias */
        return sign | (uint16_t)(r >> 13);
    }
    /* subnormal: m * 2^-24, m rounded to nearest even (the scaling is exact) */
    return sign | (uint16_t)rintf(u2f(ax) * 16777216.0f);
}

float fgh_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        const float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    if (e == 31)
        return u2f(sign | 0x7f800000u | (m << 13));
    return u2f(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t fgh_f32_to_bf16(float f)
{
    const uint32_t x = f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);     /* quiet NaN */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

uint16_t fgh_round_to(fgh_dtype t, double v)
{
    /* double -> float -> half can round twice; the gap matters only on ties
     * of the float, far below the tolerances used with the references. */
    return t == FGH_F16 ? fgh_f32_to_f16((float)v) : fgh_f32_to_bf16((float)v);
}

double fgh_rounded(fgh_dtype t, double v)
{
    const uint16_t b = fgh_round_to(t, v);
    return t == FGH_F16 ? fgh_f16_to_f32(b) : fgh_bf16_to_f32(b);
}

void fgh_rmsnorm_row(double *v, int n, const void *w, fgh_dtype t, double eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += v[i] * v[i];
    const double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        v[i] = v[i] * inv * fgh_get(w, t, (size_t)i);
}

void fgh_rope_rotate(double *v, int dim, int pos, const float *inv_freq, bool neox,
                     double cs_scale)
{
    for (int p = 0; p < dim / 2; p++) {
        const float ang = (float)pos * inv_freq[p];
        const double cs = cos((double)ang) * cs_scale, sn = sin((double)ang) * cs_scale;
        const int i0 = neox ? p : 2 * p, i1 = neox ? p + dim / 2 : 2 * p + 1;
        const double a = v[i0], b = v[i1];
        v[i0] = a * cs - b * sn;
        v[i1] = b * cs + a * sn;
    }
}

float fgh_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

float fgh_get(const void *buf, fgh_dtype t, size_t i)
{
    switch (t) {
    case FGH_F32: return ((const float *)buf)[i];
    case FGH_F16: return fgh_f16_to_f32(((const uint16_t *)buf)[i]);
    default: return fgh_bf16_to_f32(((const uint16_t *)buf)[i]);
    }
}

/* ----------------------------------------------------------------- inputs */

uint64_t fgh_splitmix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float fgh_uniform(uint64_t seed, uint64_t i, float scale)
{
    const uint64_t z = fgh_splitmix64(seed + (i + 1) * 0x9E3779B97F4A7C15ull);
    const float u = (float)(uint32_t)(z >> 40) * (1.0f / 8388608.0f) - 1.0f;   /* exact */
    volatile float v = u * scale;                                                /* one rounding */
    return v;
}

void fgh_fill_host(void *dst, fgh_dtype t, size_t n, uint64_t seed, float scale)
{
    for (size_t i = 0; i < n; i++) {
        const float v = fgh_uniform(seed, i, scale);
        switch (t) {
        case FGH_F32: ((float *)dst)[i] = v; break;
        case FGH_F16: ((uint16_t *)dst)[i] = fgh_f32_to_f16(v); break;
        default: ((uint16_t *)dst)[i] = fgh_f32_to_bf16(v); break;
        }
    }
}

void fgh_permutation(int *perm, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        const int j = (int)(fgh_splitmix64(seed + (uint64_t)i) % (uint64_t)(i + 1));
        const int t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
}

static uint64_t g_base_seed = 0x5EEDF00D2026ull, g_seed_counter;
void fgh_set_base_seed(uint64_t seed) { g_base_seed = seed; g_seed_counter = 0; }
uint64_t fgh_base_seed(void) { return g_base_seed; }
uint64_t fgh_next_seed(void) { return fgh_splitmix64(g_base_seed ^ (++g_seed_counter << 20)); }

/* -------------------------------------------------------------- accuracy */

fgh_err fgh_compare(const void *out, fgh_dtype t, const double *ref, size_t n)
{
    fgh_err e = {0, 0, 0, SIZE_MAX};
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double o = fgh_get(out, t, i);
        if (!isfinite(o)) {
            if (e.nonfinite++ == 0)
                e.first_bad = i;
            continue;
        }
        const double d = o - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
        if (fabs(d) > e.max_abs)
            e.max_abs = fabs(d);
    }
    if (e.nonfinite || !isfinite(num) || !isfinite(den))
        e.rel_l2 = INFINITY;
    else
        e.rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    return e;
}

size_t fgh_count_poisoned(const void *buf, fgh_dtype t, size_t n)
{
    const size_t es = fgh_dtype_size(t);
    const unsigned char *b = buf;
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < es && b[i * es + k] == FGH_POISON_BYTE)
            k++;
        c += k == es;
    }
    return c;
}

/* ----------------------------------------------------------------- stats */

bool fgh_fit_line(const double *bytes, const double *us, int n, double min_bytes, double *t0_us,
                  double *gbps)
{
    *t0_us = *gbps = NAN;
    double mb = 0, mu = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (bytes[i] >= min_bytes && isfinite(us[i]))
            mb += bytes[i], mu += us[i], m++;
    if (m < 2)
        return false;
    mb /= m, mu /= m;
    double sbb = 0, sbu = 0;   /* centred sums: no cancellation at GB sizes */
    for (int i = 0; i < n; i++)
        if (bytes[i] >= min_bytes && isfinite(us[i]))
            sbb += (bytes[i] - mb) * (bytes[i] - mb), sbu += (bytes[i] - mb) * (us[i] - mu);
    if (!(sbb > 0) || !(sbu > 0))
        return false;
    const double slope = sbu / sbb;   /* us per byte */
    *t0_us = mu - slope * mb;
    *gbps = 1e-3 / slope;
    return true;
}

fgh_fit fgh_fit_points(const double *bytes, const double *us, int n)
{
    fgh_fit f = {NAN, NAN, n};
    fgh_fit_line(bytes, us, n, 0, &f.t0_us, &f.bw_gbps);
    return f;
}
