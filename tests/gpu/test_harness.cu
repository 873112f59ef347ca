// Self-test of the GPU harness: the device makes the same inputs as the host,
// the conversions match the CUDA intrinsics bit for bit, poison is caught,
// timing and the ceilings give sane numbers, the clock can be read.
//   test_harness [--seed N] [--verbose]
#include "harness.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

__global__ void conv_kernel(const float *in, unsigned short *h, unsigned short *b, size_t n)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        h[i] = __half_as_ushort(__float2half_rn(in[i]));
        b[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
    }
}

__global__ void spin_kernel(float *p, int n)
{
    float v = p[threadIdx.x];
    for (int i = 0; i < n; i++)
        v = v * 0.999f + 0.001f;
    p[threadIdx.x] = v;
}

static void test_known_conversions(void)
{
    struct { float f; unsigned short h, b; } k[] = {
        {1.0f, 0x3c00, 0x3f80},        {-2.0f, 0xc000, 0xc000},
        {65504.0f, 0x7bff, 0x4780},    {65520.0f, 0x7c00, 0x4780},
        {5.9604645e-08f, 0x0001, 0x3380}, /* 2^-24 */
        {2.9802322e-08f, 0x0000, 0x3300}, /* 2^-25: tie, to even (0) */
        {0.0f, 0x0000, 0x0000},        {1.00048828125f, 0x3c00, 0x3f80}, /* 1 + 2^-11: tie */
    };
    for (unsigned i = 0; i < sizeof k / sizeof k[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "host f16(%g)", (double)k[i].f);
        CHECKF(name, fgh_f32_to_f16(k[i].f) == k[i].h, "got 0x%04x want 0x%04x",
               fgh_f32_to_f16(k[i].f), k[i].h);
        snprintf(name, sizeof name, "host bf16(%g)", (double)k[i].f);
        CHECKF(name, fgh_f32_to_bf16(k[i].f) == k[i].b, "got 0x%04x want 0x%04x",
               fgh_f32_to_bf16(k[i].f), k[i].b);
    }
    CHECK("f16 round trip 0x3555", fgh_f32_to_f16(fgh_f16_to_f32(0x3555)) == 0x3555);
    CHECK("f16 round trip subnormal 0x0203", fgh_f32_to_f16(fgh_f16_to_f32(0x0203)) == 0x0203);
    CHECK("bf16 round trip 0xc123", fgh_f32_to_bf16(fgh_bf16_to_f32(0xc123)) == 0xc123);
    CHECK("poison f16 is NaN", isnan(fgh_f16_to_f32(0xffff)));
    CHECK("poison bf16 is NaN", isnan(fgh_bf16_to_f32(0xffff)));
}

// Host conversions against the device intrinsics over random finite floats
// of every exponent.
static void test_device_conversions(cudaStream_t s)
{
    const size_t n = 1 << 22;
    float *h_in = (float *)malloc(n * 4);
    unsigned short *h_h = (unsigned short *)malloc(n * 2), *h_b = (unsigned short *)malloc(n * 2);
    float *d_in = NULL;
    unsigned short *d_h = NULL, *d_b = NULL;
    if (!CHECK("conv: host alloc", h_in && h_h && h_b))
        goto out;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)fgh_splitmix64(0x1234 + i);
        if ((u & 0x7f800000u) == 0x7f800000u)
            u &= ~0x00800000u;    // keep it finite
        memcpy(&h_in[i], &u, 4);
    }
    if (!CHECK("conv: device alloc", fgh_ok(cudaMalloc(&d_in, n * 4)) &&
                                         fgh_ok(cudaMalloc(&d_h, n * 2)) &&
                                         fgh_ok(cudaMalloc(&d_b, n * 2))))
        goto out;
    if (!CHECK("conv: upload", fgh_upload(d_in, h_in, n * 4) == 0))
        goto out;
    conv_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(d_in, d_h, d_b, n);
    if (!CHECK("conv: kernel", fgh_ok(cudaGetLastError()) && fgh_ok(cudaStreamSynchronize(s))))
        goto out;
    cudaMemcpy(h_h, d_h, n * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(h_b, d_b, n * 2, cudaMemcpyDeviceToHost);
    {
        size_t bad_h = 0, bad_b = 0, first_h = 0, first_b = 0;
        for (size_t i = 0; i < n; i++) {
            if (fgh_f32_to_f16(h_in[i]) != h_h[i] && !bad_h++)
                first_h = i;
            if (fgh_f32_to_bf16(h_in[i]) != h_b[i] && !bad_b++)
                first_b = i;
        }
        CHECKF("conv: host f16 == __float2half_rn (4M random floats)", bad_h == 0,
               "%zu differ; first %a: host 0x%04x device 0x%04x", bad_h, (double)h_in[first_h],
               fgh_f32_to_f16(h_in[first_h]), h_h[first_h]);
        CHECKF("conv: host bf16 == __float2bfloat16_rn (4M random floats)", bad_b == 0,
               "%zu differ; first %a: host 0x%04x device 0x%04x", bad_b, (double)h_in[first_b],
               fgh_f32_to_bf16(h_in[first_b]), h_b[first_b]);
    }
out:
    cudaFree(d_in);
    cudaFree(d_h);
    cudaFree(d_b);
    free(h_in);
    free(h_h);
    free(h_b);
}

static void test_fill(cudaStream_t s)
{
    const size_t n = (1 << 20) + 3;
    const fgh_dtype types[] = {FGH_F32, FGH_F16, FGH_BF16};
    const float scales[] = {1e-2f, 1.0f, 30.0f};
    void *d = NULL, *h = malloc(n * 4), *g = malloc(n * 4);
    if (!CHECK("fill: alloc", h && g && fgh_ok(cudaMalloc(&d, n * 4))))
        goto out;
    for (int ti = 0; ti < 3; ti++)
        for (int si = 0; si < 3; si++) {
            const fgh_dtype t = types[ti];
            const uint64_t seed = fgh_next_seed();
            char name[128];
            snprintf(name, sizeof name, "fill %s scale %g: device bits == host bits",
                     fgh_dtype_name(t), (double)scales[si]);
            fgh_poison_device(d, n * fgh_dtype_size(t), s);
            if (!CHECK(name, fgh_fill_device(d, t, n, seed, scales[si], s) == 0 &&
                                 fgh_ok(cudaStreamSynchronize(s))))
                continue;
            cudaMemcpy(g, d, n * fgh_dtype_size(t), cudaMemcpyDeviceToHost);
            fgh_fill_host(h, t, n, seed, scales[si]);
            CHECK(name, memcmp(g, h, n * fgh_dtype_size(t)) == 0);
            double lo = 1e30, hi = -1e30, sum2 = 0;
            size_t zeros = 0;
            for (size_t i = 0; i < n; i++) {
                const double v = fgh_get(g, t, i);
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
                sum2 += v * v;
                zeros += v == 0;
            }
            snprintf(name, sizeof name, "fill %s scale %g: range and spread", fgh_dtype_name(t),
                     (double)scales[si]);
            // |v| <= scale after rounding to the storage type (0.01 rounds up in f16/bf16)
            const double bound = scales[si] * (1 + 1.0 / 128);
            const double rms = sqrt(sum2 / n), want = scales[si] / sqrt(3.0);
            CHECKF(name, lo >= -bound && hi <= bound && fabs(rms / want - 1) < 0.01 &&
                             zeros < n / 1000,
                   "min %g max %g rms %g (want %g) zeros %zu", lo, hi, rms, want, zeros);
        }
    // different seeds give different data
    fgh_fill_host(h, FGH_F32, 1024, 1, 1.0f);
    fgh_fill_host(g, FGH_F32, 1024, 2, 1.0f);
    CHECK("fill: seeds differ", memcmp(g, h, 4096) != 0);
out:
    cudaFree(d);
    free(h);
    free(g);
}

static void test_poison_and_compare(cudaStream_t s)
{
    const size_t n = 4096;
    unsigned short *d = NULL;
    unsigned short h[4096];
    double ref[4096];
    if (!CHECK("poison: alloc", fgh_ok(cudaMalloc(&d, n * 2))))
        return;
    fgh_poison_device(d, n * 2, s);
    cudaStreamSynchronize(s);
    cudaMemcpy(h, d, n * 2, cudaMemcpyDeviceToHost);
    cudaFree(d);
    CHECK("poison: every element poisoned", fgh_count_poisoned(h, FGH_F16, n) == n);
    for (size_t i = 0; i < n; i++)
        ref[i] = 1.0;
    fgh_err e = fgh_compare(h, FGH_BF16, ref, n);
    CHECK("compare: poisoned output fails (rel_l2 = inf)", !(e.rel_l2 <= 1e-2) && e.nonfinite == n);
    for (size_t i = 0; i < n; i++)
        h[i] = fgh_f32_to_bf16(1.0f);
    e = fgh_compare(h, FGH_BF16, ref, n);
    CHECK("compare: exact output has rel_l2 0", e.rel_l2 == 0 && e.nonfinite == 0);
    h[17] = 0xffff;
    e = fgh_compare(h, FGH_BF16, ref, n);
    CHECK("compare: one NaN fails", !(e.rel_l2 <= 1e-2) && e.nonfinite == 1 && e.first_bad == 17);
    h[17] = fgh_f32_to_bf16(1.0f);
    h[18] = fgh_f32_to_bf16(1.5f);
    e = fgh_compare(h, FGH_BF16, ref, n);
    CHECKF("compare: one wrong element", fabs(e.rel_l2 - 0.5 / 64) < 1e-12 && e.max_abs == 0.5,
           "rel_l2 %g", e.rel_l2);
}

struct spin_ctx { float *p; int n; };
static void enqueue_spin(void *c, int, cudaStream_t s)
{
    spin_ctx *x = (spin_ctx *)c;
    spin_kernel<<<1, 32, 0, s>>>(x->p, x->n);
}

static void test_timing(cudaStream_t s)
{
    float *p = NULL;
    if (!CHECK("timing: alloc", fgh_ok(cudaMalloc(&p, 128))))
        return;
    cudaMemset(p, 0, 128);
    spin_ctx a = {p, 1000}, b = {p, 100000};
    fgh_timing ta, tb;
    const bool ok = fgh_time_graph(s, enqueue_spin, &a, 64, 5, &ta) == 0 &&
                    fgh_time_graph(s, enqueue_spin, &b, 8, 5, &tb) == 0;
    cudaFree(p);
    if (!CHECK("timing: graphs ran", ok))
        return;
    printf("timing: 1e3-step spin %.2f us, 1e5-step spin %.2f us (clock %d MHz)\n", ta.med_us,
           tb.med_us, tb.sm_clock_mhz);
    CHECK("timing: min <= median <= max", ta.min_us <= ta.med_us && ta.med_us <= ta.max_us);
    CHECK("timing: 100x the work takes longer", tb.med_us > 10 * ta.med_us);
    CHECK("timing: rotation sets", fgh_rotation_sets(1 << 20, 50 << 20) == 101 &&
                                       fgh_rotation_sets(200 << 20, 50 << 20) == 2);
    CHECK("timing: SM clock read while running", tb.sm_clock_mhz > 0);
}

static void test_ceilings(cudaStream_t s)
{
    fgh_ceilings c;
    if (!CHECK("ceilings: measured", fgh_measure_ceilings(s, (size_t)1 << 30, &c) == 0))
        return;
    printf("ceilings: copy %.0f GB/s, read %.0f GB/s\n", c.copy_gbps, c.read_gbps);
    for (int i = 0; i < c.ncopy; i++)
        printf("  copy %-40s %7.0f GB/s  %8.1f us\n", c.copy[i].name, c.copy[i].gbps, c.copy[i].t.med_us);
    for (int i = 0; i < c.nread; i++)
        printf("  read %-40s %7.0f GB/s  %8.1f us\n", c.read[i].name, c.read[i].gbps, c.read[i].t.med_us);
    CHECK("ceilings: copy > 100 GB/s", c.copy_gbps > 100);
    CHECK("ceilings: read > 100 GB/s", c.read_gbps > 100);
}

static void test_json(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!CHECK("json: memstream", f != NULL))
        return;
    fgh_json j;
    fgh_json_init(&j, f);
    fgh_json_obj_begin(&j, NULL);
    fgh_json_str(&j, "a", "x\"y\\z\n");
    fgh_json_arr_begin(&j, "b");
    fgh_json_int(&j, NULL, 1);
    fgh_json_num(&j, NULL, NAN);
    fgh_json_arr_end(&j);
    fgh_json_arr_begin(&j, "c");
    fgh_json_arr_end(&j);
    fgh_json_obj_end(&j);
    fclose(f);
    const char *want = "{\n  \"a\": \"x\\\"y\\\\z\\n\",\n  \"b\": [\n    1,\n    null\n  ],\n"
                       "  \"c\": []\n}\n";
    CHECKF("json: writer output", buf && strcmp(buf, want) == 0, "got:\n%s", buf ? buf : "(null)");
    free(buf);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verbose"))
            fgh_set_verbose(true);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            fgh_set_base_seed(strtoull(argv[++i], NULL, 0));
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            i++;   // common option of the GPU test programs; no kernels here
        else {
            fprintf(stderr, "usage: %s [--seed N] [--verbose] [--kernels DIR (ignored)]\n", argv[0]);
            return 2;
        }
    }
    printf("test_harness: seed 0x%llx\n", (unsigned long long)fgh_base_seed());
    test_known_conversions();
    test_json();
    fgh_device d;
    if (CHECK("device: open", fgh_device_open(0, &d) == 0)) {
        printf("device: %s, %d SMs, L2 %zu bytes, driver %s\n", d.name, d.sms, d.l2_bytes, d.driver);
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        test_device_conversions(s);
        test_fill(s);
        test_poison_and_compare(s);
        test_timing(s);
        test_ceilings(s);
        CHECK("no CUDA error left", fgh_ok(cudaDeviceSynchronize()) && fgh_ok(cudaGetLastError()));
        cudaStreamDestroy(s);
    }
    const int failed = fgh_summary();
    return failed > 255 ? 255 : failed;
}
