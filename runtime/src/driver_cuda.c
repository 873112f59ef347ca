/* CUDA backend: the driver API of a dlopen'ed libcuda.so.1, on the device's
 * primary context so that libraries built on the runtime API share it.
 * cuda.h supplies only types: every function is resolved at run time. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* cuGetProcAddress returns the variant of each function with this API
 * version's semantics; 12.0 brought cuLaunchKernelEx and cluster occupancy. */
#define FG_CUDA_API 12000

/* cuda.h maps some names to versioned ones (cuMemAlloc -> cuMemAlloc_v2);
 * fields use the mapped name, and #name gives cuGetProcAddress the base one. */
#define CUDA_FUNCS(X)                                                                              \
    X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)        \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent)                   \
    X(cuCtxSetCurrent) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuModuleLoadData)                 \
    X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuLaunchKernelEx)            \
    X(cuOccupancyMaxActiveClusters) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                \
    X(cuGetErrorName) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD8) X(cuMemcpyHtoD) X(cuMemcpyDtoH)    \
    X(cuStreamSynchronize) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamQuery) X(cuEventCreate) \
    X(cuEventDestroy) X(cuEventRecord) X(cuStreamWaitEvent) X(cuMemcpyAsync) X(cuMemcpyDtoHAsync)  \
    X(cuStreamWriteValue32) X(cuStreamWaitValue32) X(cuMemGetAddressRange) X(cuIpcGetMemHandle)   \
    X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle) X(cuCtxEnablePeerAccess) X(cuDeviceCanAccessPeer) \
    X(cuTensorMapEncodeTiled)

typedef struct cuda_fns {
#define DECLARE(name) __typeof__(name) *name;
    CUDA_FUNCS(DECLARE)
#undef DECLARE
} cuda_fns;

typedef struct cuda {
    fg_driver base;
    __typeof__(cuGetProcAddress) *get_proc;
    cuda_fns fn;
    CUdevice dev;
    CUcontext primary;      /* retained: NULL until cuDevicePrimaryCtxRetain succeeds */
} cuda;

/* A sequence of driver calls that stops at the first failure and remembers
 * which call it was. */
typedef struct cu_seq {
    CUresult r;
    const char *call;
} cu_seq;

#define STEP(c, s, name, args)                                                                     \
    do {                                                                                           \
        if ((s)->r == CUDA_SUCCESS) {                                                              \
            (s)->call = #name;                                                                     \
            (s)->r = (c)->fn.name args;                                                            \
        }                                                                                          \
    } while (0)

static fg_status cu_status(const cuda *c, const cu_seq *s, const char *what)
{
    if (s->r == CUDA_SUCCESS)
        return FG_OK;
    const char *name = NULL;
    if (!c->fn.cuGetErrorName || c->fn.cuGetErrorName(s->r, &name) != CUDA_SUCCESS || !name)
        name = "unknown CUDA error";
    fg_status st = FG_ERR_DRIVER;
    if (s->r == CUDA_ERROR_OUT_OF_MEMORY)
        st = FG_ERR_OUT_OF_MEMORY;
    else if (s->r == CUDA_ERROR_NO_DEVICE || s->r == CUDA_ERROR_STUB_LIBRARY)
        st = FG_ERR_NO_DEVICE;
    return fg_fail(st, "%s%s%s: %s (%d)", what ? what : "", what ? ": " : "", s->call, name,
                   (int)s->r);
}

/* Makes the primary context current unless it already is (the common case
 * in an engine that uses the runtime API); leave() undoes it. */
static void enter(cuda *c, cu_seq *s, bool *pushed)
{
    CUcontext cur = NULL;
    *pushed = false;
    STEP(c, s, cuCtxGetCurrent, (&cur));
    if (s->r == CUDA_SUCCESS && cur != c->primary) {
        STEP(c, s, cuCtxPushCurrent, (c->primary));
        *pushed = s->r == CUDA_SUCCESS;
    }
}

static void leave(cuda *c, bool pushed)
{
    CUcontext popped;
    if (pushed)
        c->fn.cuCtxPopCurrent(&popped);
}

/* One driver call on the primary context into the sequence s_. */
#define CALL_ON_CONTEXT(c, s_, name, args)                                                         \
    do {                                                                                           \
        bool pushed_;                                                                              \
        enter((c), (s_), &pushed_);                                                                \
        STEP((c), (s_), name, args);                                                               \
        leave((c), pushed_);                                                                       \
    } while (0)

/* One driver call on the primary context, its status returned (or, in a
 * function returning nothing, dropped). */
#define ON_CONTEXT(c, name, args)                                                                  \
    do {                                                                                           \
        cu_seq s_ = {0};                                                                           \
        CALL_ON_CONTEXT((c), &s_, name, args);                                                     \
        return cu_status((c), &s_, NULL);                                                          \
    } while (0)

#define ON_CONTEXT_VOID(c, name, args)                                                             \
    do {                                                                                           \
        cu_seq s_ = {0};                                                                           \
        CALL_ON_CONTEXT((c), &s_, name, args);                                                     \
    } while (0)

static void cu_close(fg_driver *d)
{
    cuda *c = (cuda *)d;
    if (c->primary)
        c->fn.cuDevicePrimaryCtxRelease(c->dev);
    free(c);
}

static fg_status cu_load(fg_driver *d, const void *image, const char *symbol, void **module,
                         void **fn)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    bool pushed;
    CUmodule m = NULL;
    CUfunction f = NULL;
    enter(c, &s, &pushed);
    STEP(c, &s, cuModuleLoadData, (&m, image));
    STEP(c, &s, cuModuleGetFunction, (&f, m, symbol));
    if (s.r != CUDA_SUCCESS && m)
        c->fn.cuModuleUnload(m);
    leave(c, pushed);
    *module = s.r == CUDA_SUCCESS ? m : NULL;   /* never a handle already unloaded */
    *fn = f;
    return cu_status(c, &s, symbol);
}

static void cu_unload(fg_driver *d, void *module)
{
    ON_CONTEXT_VOID((cuda *)d, cuModuleUnload, ((CUmodule)module));
}

static fg_status cu_configure(fg_driver *d, void *fn, const fg_launch_cfg *k, bool nonportable)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    bool pushed;
    enter(c, &s, &pushed);
    if (k->smem)
        STEP(c, &s, cuFuncSetAttribute,
             ((CUfunction)fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)k->smem));
    if (nonportable)
        STEP(c, &s, cuFuncSetAttribute,
             ((CUfunction)fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    leave(c, pushed);
    return cu_status(c, &s, NULL);
}

/* The launch configuration; attrs must have room for two. */
static CUlaunchConfig launch_config(const fg_launch_cfg *k, void *stream, CUlaunchAttribute *attrs)
{
    unsigned n = 0;
    memset(attrs, 0, 2 * sizeof *attrs);
    if (fg_cfg_has_cluster(k)) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n].value.clusterDim.x = k->cluster[0];
        attrs[n].value.clusterDim.y = k->cluster[1];
        attrs[n].value.clusterDim.z = k->cluster[2];
        n++;
    }
    if (k->cooperative) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n].value.cooperative = 1;
        n++;
    }
    return (CUlaunchConfig){.gridDimX = k->grid[0], .gridDimY = k->grid[1], .gridDimZ = k->grid[2],
                            .blockDimX = k->block[0], .blockDimY = k->block[1],
                            .blockDimZ = k->block[2], .sharedMemBytes = k->smem,
                            .hStream = (CUstream)stream, .attrs = n ? attrs : NULL,
                            .numAttrs = n};
}

static fg_status cu_occupancy(fg_driver *d, void *fn, const fg_launch_cfg *k, int *resident)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    bool pushed;
    *resident = 0;
    enter(c, &s, &pushed);
    if (fg_cfg_has_cluster(k)) {
        CUlaunchAttribute attrs[2];
        const CUlaunchConfig cfg = launch_config(k, NULL, attrs);
        STEP(c, &s, cuOccupancyMaxActiveClusters, (resident, (CUfunction)fn, &cfg));
    } else {
        STEP(c, &s, cuOccupancyMaxActiveBlocksPerMultiprocessor,
             (resident, (CUfunction)fn, (int)(k->block[0] * k->block[1] * k->block[2]), k->smem));
    }
    leave(c, pushed);
    return cu_status(c, &s, NULL);
}

static fg_status cu_launch(fg_driver *d, void *fn, const fg_launch_cfg *k, void *stream,
                           void **params)
{
    cuda *c = (cuda *)d;
    CUlaunchAttribute attrs[2];
    const CUlaunchConfig cfg = launch_config(k, stream, attrs);
    cu_seq s = {0};
    CALL_ON_CONTEXT(c, &s, cuLaunchKernelEx, (&cfg, (CUfunction)fn, params, NULL));
    return cu_status(c, &s, NULL);
}

static fg_status cu_alloc(fg_driver *d, size_t bytes, void **dptr)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    CUdeviceptr p = 0;
    CALL_ON_CONTEXT(c, &s, cuMemAlloc, (&p, bytes));
    *dptr = (void *)(uintptr_t)p;
    return cu_status(c, &s, NULL);
}

static fg_status cu_zero(fg_driver *d, void *dptr, size_t bytes)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    bool pushed;
    enter(c, &s, &pushed);
    STEP(c, &s, cuMemsetD8, ((CUdeviceptr)(uintptr_t)dptr, 0, bytes));
    /* cuMemsetD8 on device memory is asynchronous (legacy stream): wait, so a
     * kernel on any stream sees zeros */
    STEP(c, &s, cuStreamSynchronize, ((CUstream)0));
    leave(c, pushed);
    return cu_status(c, &s, NULL);
}

static fg_status cu_free(fg_driver *d, void *dptr)
{
    ON_CONTEXT((cuda *)d, cuMemFree, ((CUdeviceptr)(uintptr_t)dptr));
}

static fg_status cu_copy(fg_driver *d, void *dst, const void *src, size_t bytes, bool to_device)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    bool pushed;
    enter(c, &s, &pushed);
    if (to_device)
        STEP(c, &s, cuMemcpyHtoD, ((CUdeviceptr)(uintptr_t)dst, src, bytes));
    else
        STEP(c, &s, cuMemcpyDtoH, (dst, (CUdeviceptr)(uintptr_t)src, bytes));
    leave(c, pushed);
    return cu_status(c, &s, NULL);
}

static fg_status cu_sync(fg_driver *d, void *stream)
{
    ON_CONTEXT((cuda *)d, cuStreamSynchronize, ((CUstream)stream));
}

static fg_status cu_make_current(fg_driver *d)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    STEP(c, &s, cuCtxSetCurrent, (c->primary));
    return cu_status(c, &s, NULL);
}

static void *cu_symbol(const fg_driver *d, const char *name)
{
    const cuda *c = (const cuda *)d;
    void *p = NULL;
    CUdriverProcAddressQueryResult q;
    if (c->get_proc(name, &p, FG_CUDA_API, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS ||
        q != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return p;
}

/* ---- the overlap executor's ---- */

static fg_status cu_stream_create(fg_driver *d, void **stream)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    CUstream st = NULL;
    CALL_ON_CONTEXT(c, &s, cuStreamCreate, (&st, CU_STREAM_NON_BLOCKING));
    *stream = st;
    return cu_status(c, &s, NULL);
}

static void cu_stream_destroy(fg_driver *d, void *stream)
{
    ON_CONTEXT_VOID((cuda *)d, cuStreamDestroy, ((CUstream)stream));
}

static fg_status cu_stream_idle(fg_driver *d, void *stream, bool *idle)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    CALL_ON_CONTEXT(c, &s, cuStreamQuery, ((CUstream)stream));
    *idle = s.r == CUDA_SUCCESS;
    if (s.r == CUDA_ERROR_NOT_READY)
        s.r = CUDA_SUCCESS;
    return cu_status(c, &s, NULL);
}

static fg_status cu_event_create(fg_driver *d, void **event)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    CUevent e = NULL;
    CALL_ON_CONTEXT(c, &s, cuEventCreate, (&e, CU_EVENT_DISABLE_TIMING));
    *event = e;
    return cu_status(c, &s, NULL);
}

static void cu_event_destroy(fg_driver *d, void *event)
{
    ON_CONTEXT_VOID((cuda *)d, cuEventDestroy, ((CUevent)event));
}

static fg_status cu_event_record(fg_driver *d, void *event, void *stream)
{
    ON_CONTEXT((cuda *)d, cuEventRecord, ((CUevent)event, (CUstream)stream));
}

static fg_status cu_stream_wait_event(fg_driver *d, void *stream, void *event)
{
    ON_CONTEXT((cuda *)d, cuStreamWaitEvent, ((CUstream)stream, (CUevent)event, 0));
}

static fg_status cu_copy_async(fg_driver *d, void *dst, const void *src, size_t bytes,
                               void *stream)
{
    ON_CONTEXT((cuda *)d, cuMemcpyAsync,
               ((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, (CUstream)stream));
}

static fg_status cu_read_async(fg_driver *d, void *host, const void *src, size_t bytes,
                               void *stream)
{
    ON_CONTEXT((cuda *)d, cuMemcpyDtoHAsync,
               (host, (CUdeviceptr)(uintptr_t)src, bytes, (CUstream)stream));
}

static fg_status cu_write_flag(fg_driver *d, void *stream, void *flag, unsigned value)
{
    ON_CONTEXT((cuda *)d, cuStreamWriteValue32,
               ((CUstream)stream, (CUdeviceptr)(uintptr_t)flag, value,
                CU_STREAM_WRITE_VALUE_DEFAULT));
}

static fg_status cu_wait_flag(fg_driver *d, void *stream, const void *flag, unsigned value)
{
    ON_CONTEXT((cuda *)d, cuStreamWaitValue32,
               ((CUstream)stream, (CUdeviceptr)(uintptr_t)flag, value, CU_STREAM_WAIT_VALUE_GEQ));
}

_Static_assert(sizeof(CUipcMemHandle) == FG_IPC_HANDLE_BYTES, "an IPC handle's size");

static fg_status cu_ipc_export(fg_driver *d, const void *dptr, void *handle, size_t *offset)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    bool pushed;
    CUdeviceptr base = 0;
    size_t size = 0;
    CUipcMemHandle h;
    memset(&h, 0, sizeof h);
    enter(c, &s, &pushed);
    STEP(c, &s, cuMemGetAddressRange, (&base, &size, (CUdeviceptr)(uintptr_t)dptr));
    STEP(c, &s, cuIpcGetMemHandle, (&h, base));
    leave(c, pushed);
    memcpy(handle, &h, sizeof h);
    *offset = s.r == CUDA_SUCCESS ? (size_t)((CUdeviceptr)(uintptr_t)dptr - base) : 0;
    return cu_status(c, &s, NULL);
}

static fg_status cu_ipc_open(fg_driver *d, const void *handle, void **base)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    CUdeviceptr p = 0;
    CUipcMemHandle h;
    memcpy(&h, handle, sizeof h);
    CALL_ON_CONTEXT(c, &s, cuIpcOpenMemHandle, (&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    *base = (void *)(uintptr_t)p;
    return cu_status(c, &s, NULL);
}

static void cu_ipc_close(fg_driver *d, void *base)
{
    ON_CONTEXT_VOID((cuda *)d, cuIpcCloseMemHandle, ((CUdeviceptr)(uintptr_t)base));
}

/* (No context needed: the map only describes memory.)  L2 promotion of
 * 256 B: the boxes' rows are 128 B, their neighbours loaded next. */
static fg_status cu_tensor_map(fg_driver *d, void *map, fg_reg_dtype dtype, const void *base,
                               long long rows, long long cols, unsigned box_rows,
                               unsigned box_cols)
{
    cuda *c = (cuda *)d;
    /* whole rows: a row as cols / 64 lines of 128 bytes, a 3D map */
    const bool whole = box_cols == 0;
    if (rows <= 0 || cols <= 0 || (cols * 2) % 16 ||
        (whole ? cols % 64 || cols / 64 > 256 : box_cols * 2 != 128))
        return fg_fail(FG_ERR_BAD_SHAPE, "a tensor map of %lld x %lld (boxes of %u x %u): rows "
                       "of a multiple of 16 bytes, boxes one 128-byte swizzle row wide or whole "
                       "rows of 128-byte lines", rows, cols, box_rows, box_cols);
    const cuuint64_t r = (cuuint64_t)rows, pitch = (cuuint64_t)cols * 2;
    const cuuint64_t dims[3] = {whole ? 64 : (cuuint64_t)cols, whole ? (cuuint64_t)cols / 64 : r, r};
    const cuuint64_t strides[2] = {whole ? 128 : pitch, pitch};
    const cuuint32_t box[3] = {whole ? 64 : box_cols, whole ? (cuuint32_t)(cols / 64) : box_rows,
                               box_rows};
    const cuuint32_t elem[3] = {1, 1, 1};
    cu_seq s = {0};
    STEP(c, &s, cuTensorMapEncodeTiled,
         ((CUtensorMap *)map,
          dtype == FG_REG_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
          whole ? 3 : 2, (void *)(uintptr_t)base, dims, strides, box, elem,
          CU_TENSOR_MAP_INTERLEAVE_NONE,
          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return cu_status(c, &s, "tensor map");
}

static fg_status cu_enable_peer(fg_driver *d, int ordinal)
{
    cuda *c = (cuda *)d;
    cu_seq s = {0};
    bool pushed;
    CUdevice peer = 0;
    CUcontext peer_ctx = NULL;
    int can = 0;
    enter(c, &s, &pushed);
    STEP(c, &s, cuDeviceGet, (&peer, ordinal));
    STEP(c, &s, cuDeviceCanAccessPeer, (&can, c->dev, peer));
    if (s.r == CUDA_SUCCESS && !can) {
        leave(c, pushed);
        return fg_fail(FG_ERR_UNSUPPORTED_DEVICE, "device %d cannot access device %d's memory",
                       d->ordinal, ordinal);
    }
    /* the peer's primary context is retained by its own fg_context */
    STEP(c, &s, cuDevicePrimaryCtxRetain, (&peer_ctx, peer));
    STEP(c, &s, cuCtxEnablePeerAccess, (peer_ctx, 0));
    if (s.r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
        s.r = CUDA_SUCCESS;
    if (peer_ctx)
        c->fn.cuDevicePrimaryCtxRelease(peer);
    leave(c, pushed);
    return cu_status(c, &s, NULL);
}

static const fg_driver_ops cuda_ops = {
    .close = cu_close, .load = cu_load, .unload = cu_unload, .configure = cu_configure,
    .occupancy = cu_occupancy, .launch = cu_launch, .alloc = cu_alloc, .zero = cu_zero,
    .free = cu_free,
    .copy = cu_copy, .sync = cu_sync, .make_current = cu_make_current, .symbol = cu_symbol,
    .stream_create = cu_stream_create, .stream_destroy = cu_stream_destroy,
    .stream_idle = cu_stream_idle, .event_create = cu_event_create,
    .event_destroy = cu_event_destroy, .event_record = cu_event_record,
    .stream_wait_event = cu_stream_wait_event, .copy_async = cu_copy_async,
    .read_async = cu_read_async,
    .write_flag = cu_write_flag, .wait_flag = cu_wait_flag, .ipc_export = cu_ipc_export,
    .ipc_open = cu_ipc_open, .ipc_close = cu_ipc_close, .enable_peer = cu_enable_peer,
    .tensor_map = cu_tensor_map,
};

static fg_status resolve_all(cuda *c)
{
#define RESOLVE(name)                                                                              \
    {                                                                                              \
        void *p = cu_symbol(&c->base, #name);                                                      \
        if (!p)                                                                                    \
            return fg_fail(FG_ERR_UNSUPPORTED_DEVICE, "the CUDA driver lacks %s (CUDA 12.0 API)",  \
                           #name);                                                                 \
        memcpy(&c->fn.name, &p, sizeof p); /* POSIX: object and function pointers convert */       \
    }
    CUDA_FUNCS(RESOLVE)
#undef RESOLVE
    return FG_OK;
}

/* The arch decides which registry entries run: sm_90a code needs exactly
 * compute capability 9.0. */
static fg_status describe(cuda *c, cu_seq *s)
{
    fg_device_caps *caps = &c->base.caps;
    int major = 0, minor = 0, sms = 0, grid_x = 0, smem = 0, cluster = 0, coop = 0, l2 = 0;
    const struct {
        int *value;
        CUdevice_attribute attr;
    } attrs[] = {
        {&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
        {&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
        {&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
        {&grid_x, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
        {&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
        {&cluster, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH},
        {&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH},
        {&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        STEP(c, s, cuDeviceGetAttribute, (attrs[i].value, attrs[i].attr, c->dev));
    STEP(c, s, cuDeviceGetName, (caps->info.name, (int)sizeof caps->info.name, c->dev));
    if (s->r != CUDA_SUCCESS)
        return cu_status(c, s, NULL);
    caps->info.backend = FG_BACKEND_CUDA;
    snprintf(caps->info.arch_name, sizeof caps->info.arch_name, "sm_%d%d", major, minor);
    caps->info.compute_units = sms;
    caps->info.max_dynamic_smem = (size_t)smem;
    caps->info.l2_bytes = l2;
    caps->max_grid_x = grid_x;
    caps->clusters = cluster != 0;
    caps->cooperative = coop != 0;
    if (major != 9 || minor != 0)
        return fg_fail(FG_ERR_UNSUPPORTED_DEVICE,
                       "%s is %s; the CUDA kernels are built for sm_90a (compute capability 9.0)",
                       caps->info.name, caps->info.arch_name);
    caps->info.arch = FG_REG_ARCH_SM90A;
    return FG_OK;
}

fg_status fg_cuda_open(void *lib, int device, fg_driver **out)
{
    *out = NULL;
    cuda *c = calloc(1, sizeof *c);
    if (!c)
        return fg_fail(FG_ERR_OUT_OF_MEMORY, "fg_init: out of host memory");
    c->base.ops = &cuda_ops;
    c->base.ordinal = device;
    void *get_proc = dlsym(lib, "cuGetProcAddress_v2");
    memcpy(&c->get_proc, &get_proc, sizeof get_proc);
    fg_status st = c->get_proc ? resolve_all(c)
                               : fg_fail(FG_ERR_UNSUPPORTED_DEVICE,
                                         "the CUDA driver is older than 12.0 "
                                         "(no cuGetProcAddress_v2)");
    cu_seq s = {0};
    int count = 0;
    if (st == FG_OK) {
        STEP(c, &s, cuInit, (0));
        STEP(c, &s, cuDeviceGetCount, (&count));
        st = cu_status(c, &s, NULL);
    }
    if (st == FG_OK && device >= count)
        st = fg_fail(FG_ERR_NO_DEVICE, "CUDA device %d requested; the driver sees %d", device,
                     count);
    if (st == FG_OK) {
        STEP(c, &s, cuDeviceGet, (&c->dev, device));
        st = s.r == CUDA_SUCCESS ? describe(c, &s) : cu_status(c, &s, NULL);
    }
    if (st == FG_OK) {
        STEP(c, &s, cuDevicePrimaryCtxRetain, (&c->primary, c->dev));
        st = cu_status(c, &s, NULL);
    }
    if (st != FG_OK) {
        cu_close(&c->base);
        return st;
    }
    *out = &c->base;
    return FG_OK;
}
