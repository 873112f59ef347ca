/* Downstream demo: runs the RMSNorm kernel that fusegen generated for
 * specs/tiny.yaml through libfgrt and checks it against a C reference.
 * Without a GPU it says so and exits 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

#define HIDDEN 1024 /* the spec's hidden size */
#define ROWS 64
#define EPS 1e-5f
#define TOLERANCE 2e-3 /* relative L2 error for fp16 outputs */

/* Seeded counter-based inputs: uniform in [-1, 1). */
static float uniform(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * 0x1p-53 * 2.0 - 1.0);
}

/* The reference in double, from the same fp16-rounded inputs. */
static double relative_l2_error(const uint16_t *x, const uint16_t *w, const uint16_t *y,
                                int *nonfinite)
{
    double err = 0, ref_norm = 0;
    *nonfinite = 0;
    for (int r = 0; r < ROWS; r++) {
        const uint16_t *xr = x + (size_t)r * HIDDEN, *yr = y + (size_t)r * HIDDEN;
        double ss = 0;
        for (int i = 0; i < HIDDEN; i++)
            ss += (double)f16_to_float(xr[i]) * f16_to_float(xr[i]);
        const double scale = 1.0 / sqrt(ss / HIDDEN + EPS);
        for (int i = 0; i < HIDDEN; i++) {
            const double ref = f16_to_float(xr[i]) * scale * f16_to_float(w[i]);
            const double got = f16_to_float(yr[i]);
            *nonfinite += !isfinite(got);
            err += (got - ref) * (got - ref);
            ref_norm += ref * ref;
        }
    }
    return sqrt(err / ref_norm);
}

static int check(fg_status s, const char *what)
{
    if (s != FG_OK)
        fprintf(stderr, "demo: %s: %s (%s)\n", what, fg_status_string(s), fg_last_error());
    return s != FG_OK;
}

int main(void)
{
    fg_context *ctx;
    fg_status s = fg_init(fg_registry, fg_registry_count, 0, &ctx);
    if (s == FG_ERR_NO_DEVICE || s == FG_ERR_UNSUPPORTED_DEVICE) {
        printf("demo: no device to run on: %s (%s)\n", fg_status_string(s), fg_last_error());
        return 0;
    }
    if (check(s, "fg_init"))
        return 1;
    fg_device_info dev;
    fg_device_get_info(ctx, &dev);
    const long long hidden = HIDDEN;
    const fg_kernel_entry *e;
    if (check(fg_context_lookup(ctx, "rmsnorm", FG_REG_F16, &hidden, 1, &e), "lookup")) {
        fg_shutdown(ctx);
        return 1;
    }
    printf("demo: %s (%s, target %s): %s\n", dev.name, dev.arch_name,
           dev.target[0] ? dev.target : "none of the build's", e->name);

    const size_t n = (size_t)ROWS * HIDDEN, bytes = n * sizeof(uint16_t);
    uint16_t *x = malloc(bytes), *y = malloc(bytes), *w = malloc(HIDDEN * sizeof *w);
    void *dx = NULL, *dy = NULL, *dw = NULL;
    fg_binding *b = NULL;
    int failed = !x || !y || !w;
    if (!failed) {
        for (size_t i = 0; i < n; i++)
            x[i] = f16_from_float(uniform(1, i));
        for (int i = 0; i < HIDDEN; i++)
            w[i] = f16_from_float(1.0f + 0.5f * uniform(2, (uint64_t)i));
        memset(y, 0xff, bytes); /* NaN: a row the kernel does not write fails */
        failed = check(fg_mem_alloc(ctx, bytes, &dx), "alloc x") ||
                 check(fg_mem_alloc(ctx, bytes, &dy), "alloc y") ||
                 check(fg_mem_alloc(ctx, HIDDEN * sizeof *w, &dw), "alloc weight") ||
                 check(fg_memcpy_to_device(ctx, dx, x, bytes), "copy x") ||
                 check(fg_memcpy_to_device(ctx, dw, w, HIDDEN * sizeof *w), "copy weight") ||
                 check(fg_memcpy_to_device(ctx, dy, y, bytes), "poison y");
    }
    if (!failed) {
        const fg_rmsnorm_args a = {.dtype = FG_REG_F16, .hidden = HIDDEN, .rows = ROWS,
                                   .x = dx, .weight = dw, .y = dy, .eps = EPS};
        failed = check(fg_rmsnorm_bind(ctx, &a, &b), "bind") ||
                 check(fg_launch(b, NULL), "launch") || check(fg_synchronize(ctx, NULL), "sync") ||
                 check(fg_memcpy_to_host(ctx, y, dy, bytes), "copy y");
    }
    if (!failed) {
        int nonfinite;
        const double err = relative_l2_error(x, w, y, &nonfinite);
        failed = nonfinite || !(err <= TOLERANCE);
        printf("demo: rmsnorm %d x %d: relative L2 error %.2e (limit %.0e), %d non-finite: %s\n",
               ROWS, HIDDEN, err, TOLERANCE, nonfinite, failed ? "FAIL" : "ok");
    }
    if (!failed)
        failed = graph_replay_check(ctx, b, dy, y, bytes);

    fg_binding_free(b);
    fg_mem_free(ctx, dx);
    fg_mem_free(ctx, dy);
    fg_mem_free(ctx, dw);
    fg_shutdown(ctx);
    free(x);
    free(y);
    free(w);
    return failed;
}

/* fp16 <-> float, rounding to nearest even. */
uint16_t f16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const uint32_t sign = (u >> 16) & 0x8000u, mant = u & 0x7fffffu;
    const int exp = (int)((u >> 23) & 0xff) - 127 + 15;
    if (((u >> 23) & 0xff) == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) { /* subnormal: shift the full significand into place */
        if (exp < -10)
            return (uint16_t)sign;
        const uint32_t full = mant | 0x800000u, shift = (uint32_t)(14 - exp);
        uint32_t h = full >> shift;
        const uint32_t rest = full & ((1u << shift) - 1), half = 1u << (shift - 1);
        h += rest > half || (rest == half && (h & 1));
        return (uint16_t)(sign | h);
    }
    uint32_t h = sign | (uint32_t)exp << 10 | mant >> 13;
    const uint32_t rest = mant & 0x1fffu;
    h += rest > 0x1000u || (rest == 0x1000u && (h & 1)); /* a carry moves into the exponent */
    return (uint16_t)h;
}

float f16_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
                   mant = h & 0x3ffu;
    if (exp == 0) {
        const float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    /* exp == 31: infinity or NaN; otherwise rebias 15 -> 127 */
    const uint32_t u = sign | (exp == 31 ? 0x7f800000u : (exp + 112) << 23) | mant << 13;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
