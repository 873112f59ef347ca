// Device side of the GPU harness (see harness.h): input generation and
// poisoning on the GPU, CUDA-graph timing, and the two bandwidth ceilings.
#include "harness.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(call) fgh_ok(call)

// ------------------------------------------------------------------ inputs

__device__ __forceinline__ uint64_t dev_splitmix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__device__ __forceinline__ float dev_uniform(uint64_t seed, uint64_t i, float scale)
{
    const uint64_t z = dev_splitmix64(seed + (i + 1) * 0x9E3779B97F4A7C15ull);
    // exact: a 24-bit integer times 2^-23, minus 1
    const float u = __fsub_rn(__fmul_rn((float)(uint32_t)(z >> 40), 1.0f / 8388608.0f), 1.0f);
    return __fmul_rn(u, scale);   // the one rounding, as on the host
}

template <typename T> __device__ __forceinline__ T dev_from_float(float v);
template <> __device__ __forceinline__ float dev_from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half dev_from_float<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 dev_from_float<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

template <typename T>
__global__ void fgh_fill_kernel(T *dst, size_t n, uint64_t seed, float scale)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = dev_from_float<T>(dev_uniform(seed, i, scale));
}

static int g_fill_blocks;

extern "C" int fgh_fill_device(void *dptr, fgh_dtype t, size_t n, uint64_t seed, float scale,
                               cudaStream_t s)
{
    if (n == 0)
        return 0;
    if (!g_fill_blocks) {
        int dev = 0, sms = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        g_fill_blocks = (sms > 0 ? sms : 16) * 8;
    }
    size_t want = (n + 255) / 256;
    const unsigned blocks = (unsigned)(want < (size_t)g_fill_blocks ? want : (size_t)g_fill_blocks);
    switch (t) {
    case FGH_F32: fgh_fill_kernel<float><<<blocks, 256, 0, s>>>((float *)dptr, n, seed, scale); break;
    case FGH_F16: fgh_fill_kernel<__half><<<blocks, 256, 0, s>>>((__half *)dptr, n, seed, scale); break;
    default:
        fgh_fill_kernel<__nv_bfloat16><<<blocks, 256, 0, s>>>((__nv_bfloat16 *)dptr, n, seed, scale);
        break;
    }
    return CK(cudaGetLastError()) ? 0 : -1;
}

extern "C" int fgh_poison_device(void *dptr, size_t bytes, cudaStream_t s)
{
    return CK(cudaMemsetAsync(dptr, FGH_POISON_BYTE, bytes, s)) ? 0 : -1;
}

// Every word of the block's dynamic shared memory set to poison.
__global__ void fgh_poison_shared_kernel(unsigned words)
{
    extern __shared__ uint32_t smem[];
    for (unsigned i = threadIdx.x; i < words; i += blockDim.x)
        smem[i] = 0xFFFFFFFFu;
}

extern "C" int fgh_poison_shared(cudaStream_t s)
{
    static int bytes, blocks;
    if (!bytes) {
        int dev = 0, optin = 0, sms = 0;
        if (!CK(cudaGetDevice(&dev)) ||
            !CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) ||
            !CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
            !CK(cudaFuncSetAttribute(fgh_poison_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     optin)) ||
            !CK(cudaFuncSetAttribute(fgh_poison_shared_kernel,
                                     cudaFuncAttributePreferredSharedMemoryCarveout, 100)))
            return -1;
        // one block fills an SM's shared memory; a few waves so that every
        // SM, not just the first ones free, takes some
        bytes = optin, blocks = 4 * sms;
    }
    fgh_poison_shared_kernel<<<blocks, 1024, bytes, s>>>((unsigned)(bytes / 4));
    return CK(cudaGetLastError()) ? 0 : -1;
}

extern "C" int fgh_upload(void *dptr, const void *host, size_t bytes)
{
    return CK(cudaMemcpy(dptr, host, bytes, cudaMemcpyHostToDevice)) && CK(cudaDeviceSynchronize())
               ? 0
               : -1;
}

// ------------------------------------------------------------------ timing

extern "C" int fgh_rotation_sets(size_t bytes_per_launch, size_t l2_bytes)
{
    if (bytes_per_launch == 0)
        return 1;
    const size_t need = 2 * l2_bytes;
    return 1 + (int)((need + bytes_per_launch - 1) / bytes_per_launch);
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

// Waits for the reps timed intervals between events ev[0..reps] (reading the
// SM clock a few times while they run), then fills out's statistics from
// t[reps] (per launch, us).  0 on success.
static int collect_timing(cudaEvent_t *ev, int reps, int launches, double *t, fgh_timing *out)
{
    double clk[64];
    int nclk = 0;
    while (nclk < 64) {
        const int mhz = fgh_clock_sample();
        if (mhz > 0)
            clk[nclk++] = mhz;
        if (cudaEventQuery(ev[reps]) != cudaErrorNotReady)
            break;
        sleep_us(2000);
    }
    if (!CK(cudaEventSynchronize(ev[reps])) || !CK(cudaGetLastError()))
        return -1;
    for (int r = 0; r < reps; r++) {
        float ms = 0;
        if (!CK(cudaEventElapsedTime(&ms, ev[r], ev[r + 1])))
            return -1;
        t[r] = ms * 1000.0 / launches;
    }
    out->reps = reps;
    out->launches = launches;
    out->med_us = fgh_median(t, reps);   // sorts t
    out->min_us = t[0];
    out->max_us = t[reps - 1];
    if (nclk)
        out->sm_clock_mhz = (int)fgh_median(clk, nclk);
    return 0;
}

extern "C" int fgh_time_graph(cudaStream_t s, fgh_enqueue_fn fn, void *ctx, int launches,
                              int reps, fgh_timing *out)
{
    memset(out, 0, sizeof *out);
    out->sm_clock_mhz = -1;
    if (launches < 1 || reps < 1)
        return -1;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaEvent_t *ev = (cudaEvent_t *)calloc((size_t)reps + 1, sizeof *ev);
    double *t = (double *)calloc((size_t)reps, sizeof *t);
    int rc = -1;
    if (!ev || !t)
        goto done;
    if (!CK(cudaGetLastError()))
        goto done;
    if (!CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)))
        goto done;
    for (int i = 0; i < launches; i++)
        fn(ctx, i, s);
    {
        const cudaError_t launch_err = cudaGetLastError();
        const cudaError_t end_err = cudaStreamEndCapture(s, &g);
        if (!CK(launch_err) || !CK(end_err))
            goto done;
    }
    if (!CK(cudaGraphInstantiate(&ge, g, 0)) || !CK(cudaGraphUpload(ge, s)))
        goto done;
    for (int w = 0; w < 2; w++)
        if (!CK(cudaGraphLaunch(ge, s)))
            goto done;
    if (!CK(cudaStreamSynchronize(s)))
        goto done;
    for (int r = 0; r <= reps; r++)
        if (!CK(cudaEventCreate(&ev[r])))
            goto done;
    if (!CK(cudaEventRecord(ev[0], s)))
        goto done;
    for (int r = 0; r < reps; r++)
        if (!CK(cudaGraphLaunch(ge, s)) || !CK(cudaEventRecord(ev[r + 1], s)))
            goto done;
    if (collect_timing(ev, reps, launches, t, out) == 0)
        rc = 0;
done:
    if (ev)
        for (int r = 0; r <= reps; r++)
            if (ev[r])
                cudaEventDestroy(ev[r]);
    if (ge)
        cudaGraphExecDestroy(ge);
    if (g)
        cudaGraphDestroy(g);
    free(ev);
    free(t);
    return rc;
}

extern "C" int fgh_time_stream(cudaStream_t s, fgh_enqueue_fn fn, void *ctx, int launches,
                               int reps, fgh_timing *out)
{
    memset(out, 0, sizeof *out);
    out->sm_clock_mhz = -1;
    if (launches < 1 || reps < 1)
        return -1;
    cudaEvent_t *ev = (cudaEvent_t *)calloc((size_t)reps + 1, sizeof *ev);
    double *t = (double *)calloc((size_t)reps, sizeof *t);
    int rc = -1;
    if (!ev || !t || !CK(cudaGetLastError()))
        goto done;
    for (int i = 0; i < 2 * launches; i++)   // warm-up
        fn(ctx, i, s);
    if (!CK(cudaGetLastError()) || !CK(cudaStreamSynchronize(s)))
        goto done;
    for (int r = 0; r <= reps; r++)
        if (!CK(cudaEventCreate(&ev[r])))
            goto done;
    if (!CK(cudaEventRecord(ev[0], s)))
        goto done;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < launches; i++)
            fn(ctx, i, s);
        if (!CK(cudaEventRecord(ev[r + 1], s)))
            goto done;
    }
    if (collect_timing(ev, reps, launches, t, out) == 0)
        rc = 0;
done:
    if (ev)
        for (int r = 0; r <= reps; r++)
            if (ev[r])
                cudaEventDestroy(ev[r]);
    free(ev);
    free(t);
    return rc;
}

#define FGH_MAX_LAUNCHES 65536

extern "C" int fgh_bench(cudaStream_t s, fgh_enqueue_fn fn, void *ctx, int nsets, double target_ms,
                         int reps, fgh_timing *out)
{
    if (nsets < 1)
        nsets = 1;
    if (reps < 5)
        reps = 5;
    // Calibrate from one set: a kernel of milliseconds is timed as it is (a
    // fixed floor of launches made a 13 ms GEMM cost 4 s a timing); a short
    // one's first estimate includes the launch overhead, so it is refined
    // until a replay reaches target_ms.
    long launches = nsets;
    for (int pass = 0;; pass++) {   // (the last count chosen is always timed)
        if (fgh_time_graph(s, fn, ctx, (int)launches, reps, out))
            return -1;
        const double replay_ms = out->med_us * launches / 1000.0;
        if (replay_ms >= target_ms || launches >= FGH_MAX_LAUNCHES || pass == 3 ||
            !(out->med_us > 0))
            return 0;
        long want = (long)ceil(target_ms * 1000.0 / out->med_us);
        want = (want + nsets - 1) / nsets * nsets;
        if (want > FGH_MAX_LAUNCHES)
            want = FGH_MAX_LAUNCHES / nsets * nsets;
        if (want <= launches)
            return 0;
        launches = want;
    }
}

// ---------------------------------------------------------------- ceilings

// Read-only stream: 16-byte loads, grid-stride, U loads in flight per thread,
// the data folded into one word per block so nothing is optimized away.
template <int U, bool CS>
__global__ void __launch_bounds__(512) fgh_read_kernel(const uint4 *__restrict__ p, size_t n,
                                                       unsigned *sink)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int k = 0; k < U; k++)
            v[k] = CS ? __ldcs(p + i + k * stride) : __ldg(p + i + k * stride);
#pragma unroll
        for (int k = 0; k < U; k++)
            acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    for (; i < n; i += stride) {
        const uint4 v = __ldg(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0)
        atomicXor(sink, acc);
}

// Copy kernel: 16-byte loads and stores, grid-stride, 4 in flight.
__global__ void __launch_bounds__(512) fgh_copy_kernel(uint4 *__restrict__ dst,
                                                       const uint4 *__restrict__ src, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 v[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            v[k] = __ldcs(src + i + k * stride);
#pragma unroll
        for (int k = 0; k < 4; k++)
            __stcs(dst + i + k * stride, v[k]);
    }
    for (; i < n; i += stride)
        dst[i] = src[i];
}

struct copy_ctx { void *dst; const void *src; size_t bytes; unsigned blocks; };
static void enqueue_copy_kernel(void *c, int, cudaStream_t s)
{
    copy_ctx *x = (copy_ctx *)c;
    fgh_copy_kernel<<<x->blocks, 512, 0, s>>>((uint4 *)x->dst, (const uint4 *)x->src, x->bytes / 16);
}
static void enqueue_copy(void *c, int, cudaStream_t s)
{
    copy_ctx *x = (copy_ctx *)c;
    cudaMemcpyAsync(x->dst, x->src, x->bytes, cudaMemcpyDeviceToDevice, s);
}

struct read_ctx {
    void (*kernel)(const uint4 *, size_t, unsigned *);
    unsigned blocks;
    const uint4 *p;
    size_t n;
    unsigned *sink;
};
static void enqueue_read(void *c, int, cudaStream_t s)
{
    read_ctx *x = (read_ctx *)c;
    x->kernel<<<x->blocks, 512, 0, s>>>(x->p, x->n, x->sink);
}

extern "C" int fgh_measure_ceilings(cudaStream_t s, size_t bytes, fgh_ceilings *c)
{
    memset(c, 0, sizeof *c);
    bytes = bytes / 4096 * 4096;
    c->bytes = bytes;
    void *src = NULL, *dst = NULL;
    unsigned *sink = NULL;
    int rc = -1, dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (!CK(cudaMalloc(&src, bytes)) || !CK(cudaMalloc(&dst, bytes)) ||
        !CK(cudaMalloc(&sink, sizeof *sink)))
        goto done;
    // random data, never zeros
    if (fgh_fill_device(src, FGH_F32, bytes / 4, 0xC0FFEEull, 1.0f, s) ||
        fgh_fill_device(dst, FGH_F32, bytes / 4, 0xBEEFull, 1.0f, s) ||
        !CK(cudaMemsetAsync(sink, 0, sizeof *sink, s)) || !CK(cudaStreamSynchronize(s)))
        goto done;
    {
        copy_ctx cc = {dst, src, bytes, (unsigned)(sms * 2)};
        fgh_ceiling_variant *v = c->copy;
        snprintf(v[0].name, sizeof v[0].name, "cudaMemcpyAsync_d2d_stream");
        snprintf(v[1].name, sizeof v[1].name, "cudaMemcpyAsync_d2d_graph");
        snprintf(v[2].name, sizeof v[2].name, "copy_kernel_u4_2blk512_per_sm_graph");
        if (fgh_time_stream(s, enqueue_copy, &cc, 4, 9, &v[0].t) ||
            fgh_time_graph(s, enqueue_copy, &cc, 4, 9, &v[1].t) ||
            fgh_time_graph(s, enqueue_copy_kernel, &cc, 4, 9, &v[2].t))
            goto done;
        c->ncopy = 3;
        for (int i = 0; i < c->ncopy; i++) {
            v[i].gbps = 2.0 * bytes / (v[i].t.med_us * 1e-6) / 1e9;
            if (v[i].gbps > c->copy_gbps)
                c->copy_gbps = v[i].gbps;
        }
    }
    {
        struct { const char *name; void (*k)(const uint4 *, size_t, unsigned *); int per_sm; } v[] = {
            {"ldg_u4_2blk512_per_sm", fgh_read_kernel<4, false>, 2},
            {"ldg_u4_4blk512_per_sm", fgh_read_kernel<4, false>, 4},
            {"ldg_u8_2blk512_per_sm", fgh_read_kernel<8, false>, 2},
            {"ldg_u8_4blk512_per_sm", fgh_read_kernel<8, false>, 4},
            {"ldcs_u4_4blk512_per_sm", fgh_read_kernel<4, true>, 4},
            {"ldcs_u8_4blk512_per_sm", fgh_read_kernel<8, true>, 4},
        };
        for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++) {
            read_ctx rcx = {v[i].k, (unsigned)(sms * v[i].per_sm), (const uint4 *)src, bytes / 16, sink};
            fgh_ceiling_variant *cv = &c->read[c->nread++];
            snprintf(cv->name, sizeof cv->name, "%s", v[i].name);
            if (fgh_time_graph(s, enqueue_read, &rcx, 4, 9, &cv->t))
                goto done;
            cv->gbps = (double)bytes / (cv->t.med_us * 1e-6) / 1e9;
            if (cv->gbps > c->read_gbps)
                c->read_gbps = cv->gbps;
        }
    }
    c->best_gbps = c->copy_gbps > c->read_gbps ? c->copy_gbps : c->read_gbps;
    rc = 0;
done:
    cudaFree(src);
    cudaFree(dst);
    cudaFree(sink);
    return rc;
}
