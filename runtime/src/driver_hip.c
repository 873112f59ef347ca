/* HIP backend: the hipModule API of a dlopen'ed libamdhip64.  It declares
 * the little it uses itself, so libfgrt builds where no ROCm headers are
 * installed (the GPU machines have only the CUDA toolkit). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef int hip_error;            /* hipError_t */
typedef void *hip_module;         /* hipModule_t */
typedef void *hip_function;       /* hipFunction_t */
typedef void *hip_stream;         /* hipStream_t */

/* Values from hip_runtime_api.h; the same in ROCm 5 and 6. */
enum { HIP_SUCCESS = 0, HIP_ERROR_OUT_OF_MEMORY = 2, HIP_ERROR_NO_DEVICE = 100,
       HIP_ERROR_INVALID_DEVICE = 101 };
enum { HIP_ATTR_COOPERATIVE_LAUNCH = 10, HIP_ATTR_L2_CACHE_SIZE = 19, HIP_ATTR_MAX_GRID_DIM_X = 29,
       HIP_ATTR_MULTIPROCESSOR_COUNT = 63, HIP_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 74 };
enum { HIP_MEMCPY_HOST_TO_DEVICE = 1, HIP_MEMCPY_DEVICE_TO_HOST = 2,
       HIP_MEMCPY_DEVICE_TO_DEVICE = 3 };
/* The overlap executor's (hip_runtime_api.h). */
enum { HIP_ERROR_NOT_READY = 600, HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704 };
enum { HIP_STREAM_NON_BLOCKING = 0x1, HIP_EVENT_DISABLE_TIMING = 0x2,
       HIP_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x0 /* ROCm's value; it accepts no other */,
       HIP_STREAM_WAIT_VALUE_GTE = 0x0 };
typedef void *hip_event;          /* hipEvent_t */
typedef struct hip_ipc_handle {   /* hipIpcMemHandle_t */
    char reserved[64];
} hip_ipc_handle;
_Static_assert(sizeof(hip_ipc_handle) == FG_IPC_HANDLE_BYTES, "a HIP IPC handle's size");

/* gcnArchName's offset in hipDeviceProp_t: ROCm 6's hipGetDevicePropertiesR0600
 * layout and the ROCm 5 layout (which ROCm 6 keeps for hipGetDeviceProperties). */
#define PROPS_ARCH_R0600 1160
#define PROPS_ARCH_R0000 396
#define PROPS_BYTES 8192   /* more than either layout */

#define HIP_FUNCS(X)                                                                               \
    X(hipInit, (unsigned flags))                                                                   \
    X(hipGetDeviceCount, (int *count))                                                             \
    X(hipGetDevice, (int *device))                                                                 \
    X(hipSetDevice, (int device))                                                                  \
    X(hipDeviceGetAttribute, (int *value, int attr, int device))                                   \
    X(hipDeviceGetName, (char *name, int len, int device))                                         \
    X(hipModuleLoadData, (hip_module * m, const void *image))                                      \
    X(hipModuleUnload, (hip_module m))                                                             \
    X(hipModuleGetFunction, (hip_function * f, hip_module m, const char *name))                    \
    X(hipModuleLaunchKernel, (hip_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,  \
                              unsigned by, unsigned bz, unsigned smem, hip_stream stream,          \
                              void **params, void **extra))                                        \
    X(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor,                                          \
      (int *blocks, hip_function f, int block_size, size_t smem))                                  \
    X(hipMalloc, (void **p, size_t bytes))                                                         \
    X(hipFree, (void *p))                                                                          \
    X(hipMemset, (void *p, int value, size_t bytes))                                               \
    X(hipMemcpy, (void *dst, const void *src, size_t bytes, int kind))                             \
    X(hipStreamSynchronize, (hip_stream stream))

#define HIP_OVERLAP_FUNCS(X)                                                                       \
    X(hipStreamCreateWithFlags, (hip_stream * s, unsigned flags))                                 \
    X(hipStreamDestroy, (hip_stream s))                                                            \
    X(hipStreamQuery, (hip_stream s))                                                              \
    X(hipEventCreateWithFlags, (hip_event * e, unsigned flags))                                   \
    X(hipEventDestroy, (hip_event e))                                                              \
    X(hipEventRecord, (hip_event e, hip_stream s))                                                 \
    X(hipStreamWaitEvent, (hip_stream s, hip_event e, unsigned flags))                             \
    X(hipMemcpyAsync, (void *dst, const void *src, size_t bytes, int kind, hip_stream s))          \
    X(hipStreamWriteValue32, (hip_stream s, void *ptr, uint32_t value, unsigned flags))           \
    X(hipStreamWaitValue32,                                                                        \
      (hip_stream s, void *ptr, uint32_t value, unsigned flags, uint32_t mask))                    \
    X(hipMemGetAddressRange, (void **base, size_t *size, void *ptr))                              \
    X(hipIpcGetMemHandle, (hip_ipc_handle * h, void *ptr))                                        \
    X(hipIpcOpenMemHandle, (void **ptr, hip_ipc_handle h, unsigned flags))                        \
    X(hipIpcCloseMemHandle, (void *ptr))                                                           \
    X(hipDeviceCanAccessPeer, (int *can, int device, int peer))                                   \
    X(hipDeviceEnablePeerAccess, (int peer, unsigned flags))

typedef struct hip_fns {
#define DECLARE(name, params) hip_error(*name) params;
    HIP_FUNCS(DECLARE)
#undef DECLARE
    const char *(*hipGetErrorName)(hip_error e);
    /* Optional: not every ROCm has them. */
    hip_error (*props_r0600)(void *props, int device);
    hip_error (*props_r0000)(void *props, int device);
    hip_error (*launch_cooperative)(hip_function f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                    hip_stream stream, void **params);
#define DECLARE(name, params) hip_error(*name) params;
    HIP_OVERLAP_FUNCS(DECLARE)   /* optional: the overlap executor's */
#undef DECLARE
    bool overlap;                /* every one of them resolved */
} hip_fns;

typedef struct hip {
    fg_driver base;
    void *lib;
    hip_fns fn;
    int dev;
} hip;

static void *sym(void *lib, const char *name, void *fnptr)
{
    void *p = dlsym(lib, name);
    memcpy(fnptr, &p, sizeof p); /* POSIX: object and function pointers convert */
    return p;
}

/* `what` (may be NULL) says what the call was for. */
static fg_status hip_status(const hip *h, hip_error e, const char *what, const char *call)
{
    if (e == HIP_SUCCESS)
        return FG_OK;
    const char *name = h->fn.hipGetErrorName ? h->fn.hipGetErrorName(e) : NULL;
    const fg_status st = e == HIP_ERROR_OUT_OF_MEMORY ? FG_ERR_OUT_OF_MEMORY
                         : e == HIP_ERROR_NO_DEVICE  ? FG_ERR_NO_DEVICE
                                                     : FG_ERR_DRIVER;
    return fg_fail(st, "%s%s%s: %s (%d)", what ? what : "", what ? ": " : "", call,
                   name ? name : "unknown HIP error", e);
}

/* HIP's current device is per thread: switch to ours for a call and back. */
static hip_error enter(hip *h, int *prev)
{
    hip_error e = h->fn.hipGetDevice(prev);
    if (e == HIP_SUCCESS && *prev != h->dev)
        e = h->fn.hipSetDevice(h->dev);
    return e;
}

static void leave(hip *h, int prev)
{
    if (prev != h->dev)
        h->fn.hipSetDevice(prev);
}

/* Runs `call` between enter() and leave(); the caller names it for errors. */
#define ON_DEVICE(h, what, call)                                                                   \
    do {                                                                                           \
        int prev_ = (h)->dev;                                                                      \
        hip_error e_ = enter((h), &prev_);                                                         \
        if (e_ == HIP_SUCCESS)                                                                     \
            e_ = (call);                                                                           \
        leave((h), prev_);                                                                         \
        return hip_status((h), e_, NULL, (what));                                                  \
    } while (0)

static void hip_close(fg_driver *d)
{
    free(d);
}

static fg_status hip_load(fg_driver *d, const void *image, const char *symbol, void **module,
                          void **fn)
{
    hip *h = (hip *)d;
    int prev = h->dev;
    hip_module m = NULL;
    hip_function f = NULL;
    const char *call = "hipSetDevice";
    hip_error e = enter(h, &prev);
    if (e == HIP_SUCCESS) {
        call = "hipModuleLoadData";
        e = h->fn.hipModuleLoadData(&m, image);
    }
    if (e == HIP_SUCCESS) {
        call = "hipModuleGetFunction";
        e = h->fn.hipModuleGetFunction(&f, m, symbol);
        if (e != HIP_SUCCESS)
            h->fn.hipModuleUnload(m);
    }
    leave(h, prev);
    *module = e == HIP_SUCCESS ? m : NULL;
    *fn = f;
    return hip_status(h, e, symbol, call);
}

static void hip_unload(fg_driver *d, void *module)
{
    hip *h = (hip *)d;
    int prev = h->dev;
    if (enter(h, &prev) == HIP_SUCCESS)
        h->fn.hipModuleUnload(module);
    leave(h, prev);
}

/* AMD GPUs need no opt-in for large LDS and have no clusters: nothing to set. */
static fg_status hip_configure(fg_driver *d, void *fn, const fg_launch_cfg *k, bool nonportable)
{
    (void)d, (void)fn, (void)k, (void)nonportable;
    return FG_OK;
}

static fg_status hip_occupancy(fg_driver *d, void *fn, const fg_launch_cfg *k, int *resident)
{
    hip *h = (hip *)d;
    *resident = 0;
    ON_DEVICE(h, "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
              h->fn.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(
                  resident, fn, (int)(k->block[0] * k->block[1] * k->block[2]), k->smem));
}

static fg_status hip_launch(fg_driver *d, void *fn, const fg_launch_cfg *k, void *stream,
                            void **params)
{
    hip *h = (hip *)d;
    if (k->cooperative)
        ON_DEVICE(h, "hipModuleLaunchCooperativeKernel",
                  h->fn.launch_cooperative(fn, k->grid[0], k->grid[1], k->grid[2], k->block[0],
                                           k->block[1], k->block[2], k->smem, stream, params));
    ON_DEVICE(h, "hipModuleLaunchKernel",
              h->fn.hipModuleLaunchKernel(fn, k->grid[0], k->grid[1], k->grid[2], k->block[0],
                                          k->block[1], k->block[2], k->smem, stream, params, NULL));
}

static fg_status hip_alloc(fg_driver *d, size_t bytes, void **dptr)
{
    hip *h = (hip *)d;
    *dptr = NULL;
    ON_DEVICE(h, "hipMalloc", h->fn.hipMalloc(dptr, bytes));
}

/* hipMemset may return before the memory is set: wait (the op is synchronous) */
static hip_error memset_zero_and_wait(hip *h, void *dptr, size_t bytes)
{
    const hip_error e = h->fn.hipMemset(dptr, 0, bytes);
    return e == HIP_SUCCESS ? h->fn.hipStreamSynchronize(NULL) : e;
}

static fg_status hip_zero(fg_driver *d, void *dptr, size_t bytes)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipMemset", memset_zero_and_wait(h, dptr, bytes));
}

static fg_status hip_free(fg_driver *d, void *dptr)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipFree", h->fn.hipFree(dptr));
}

static fg_status hip_copy(fg_driver *d, void *dst, const void *src, size_t bytes, bool to_device)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipMemcpy",
              h->fn.hipMemcpy(dst, src, bytes,
                              to_device ? HIP_MEMCPY_HOST_TO_DEVICE : HIP_MEMCPY_DEVICE_TO_HOST));
}

static fg_status hip_sync(fg_driver *d, void *stream)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipStreamSynchronize", h->fn.hipStreamSynchronize(stream));
}

static fg_status hip_make_current(fg_driver *d)
{
    hip *h = (hip *)d;
    return hip_status(h, h->fn.hipSetDevice(h->dev), NULL, "hipSetDevice");
}

static void *hip_symbol(const fg_driver *d, const char *name)
{
    return dlsym(((const hip *)d)->lib, name);
}

/* ---- the overlap executor's: hipMemcpyAsync between devices (SDMA), IPC.
 * Not run on AMD hardware here; compiled and linked only.  In the ops
 * table only where the runtime has every function (hip_ops_overlap), so
 * that a runtime without them is refused at fgrt_overlap_create, as a
 * backend without the ops is. ---- */

static fg_status hip_stream_create(fg_driver *d, void **stream)
{
    hip *h = (hip *)d;
    *stream = NULL;
    ON_DEVICE(h, "hipStreamCreateWithFlags",
              h->fn.hipStreamCreateWithFlags(stream, HIP_STREAM_NON_BLOCKING));
}

static void hip_stream_destroy(fg_driver *d, void *stream)
{
    hip *h = (hip *)d;
    h->fn.hipStreamDestroy(stream);
}

static fg_status hip_stream_idle(fg_driver *d, void *stream, bool *idle)
{
    hip *h = (hip *)d;
    *idle = false;
    const hip_error e = h->fn.hipStreamQuery(stream);
    *idle = e == HIP_SUCCESS;
    return hip_status(h, e == HIP_ERROR_NOT_READY ? HIP_SUCCESS : e, NULL, "hipStreamQuery");
}

static fg_status hip_event_create(fg_driver *d, void **event)
{
    hip *h = (hip *)d;
    *event = NULL;
    ON_DEVICE(h, "hipEventCreateWithFlags",
              h->fn.hipEventCreateWithFlags(event, HIP_EVENT_DISABLE_TIMING));
}

static void hip_event_destroy(fg_driver *d, void *event)
{
    hip *h = (hip *)d;
    h->fn.hipEventDestroy(event);
}

static fg_status hip_event_record(fg_driver *d, void *event, void *stream)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipEventRecord", h->fn.hipEventRecord(event, stream));
}

static fg_status hip_stream_wait_event(fg_driver *d, void *stream, void *event)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipStreamWaitEvent", h->fn.hipStreamWaitEvent(stream, event, 0));
}

static fg_status hip_copy_async(fg_driver *d, void *dst, const void *src, size_t bytes,
                                void *stream)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipMemcpyAsync",
              h->fn.hipMemcpyAsync(dst, src, bytes, HIP_MEMCPY_DEVICE_TO_DEVICE, stream));
}

static fg_status hip_read_async(fg_driver *d, void *host, const void *src, size_t bytes,
                                void *stream)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipMemcpyAsync",
              h->fn.hipMemcpyAsync(host, src, bytes, HIP_MEMCPY_DEVICE_TO_HOST, stream));
}

static fg_status hip_write_flag(fg_driver *d, void *stream, void *flag, unsigned value)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipStreamWriteValue32", h->fn.hipStreamWriteValue32(stream, flag, value, 0));
}

/* HIP compares unsigned (*flag >= value), not cyclically: epochs must not wrap
 * (2^32 calls). */
static fg_status hip_wait_flag(fg_driver *d, void *stream, const void *flag, unsigned value)
{
    hip *h = (hip *)d;
    ON_DEVICE(h, "hipStreamWaitValue32",
              h->fn.hipStreamWaitValue32(stream, (void *)(uintptr_t)flag, value,
                                         HIP_STREAM_WAIT_VALUE_GTE, 0xffffffffu));
}

static hip_error export_handle(hip *h, const void *dptr, void *handle, size_t *offset)
{
    void *base = NULL;
    size_t size = 0;
    hip_ipc_handle ipc;
    memset(&ipc, 0, sizeof ipc);
    hip_error e = h->fn.hipMemGetAddressRange(&base, &size, (void *)(uintptr_t)dptr);
    if (e == HIP_SUCCESS)
        e = h->fn.hipIpcGetMemHandle(&ipc, base);
    memcpy(handle, &ipc, sizeof ipc);
    *offset = e == HIP_SUCCESS ? (size_t)((const char *)dptr - (const char *)base) : 0;
    return e;
}

static fg_status hip_ipc_export(fg_driver *d, const void *dptr, void *handle, size_t *offset)
{
    hip *h = (hip *)d;
    *offset = 0;
    ON_DEVICE(h, "hipIpcGetMemHandle", export_handle(h, dptr, handle, offset));
}

static fg_status hip_ipc_open(fg_driver *d, const void *handle, void **base)
{
    hip *h = (hip *)d;
    hip_ipc_handle ipc;
    *base = NULL;
    memcpy(&ipc, handle, sizeof ipc);
    ON_DEVICE(h, "hipIpcOpenMemHandle",
              h->fn.hipIpcOpenMemHandle(base, ipc, HIP_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
}

static void hip_ipc_close(fg_driver *d, void *base)
{
    hip *h = (hip *)d;
    int prev = h->dev;
    if (enter(h, &prev) == HIP_SUCCESS)
        h->fn.hipIpcCloseMemHandle(base);
    leave(h, prev);
}

static hip_error enable_peer(hip *h, int ordinal)
{
    int can = 0;
    hip_error e = h->fn.hipDeviceCanAccessPeer(&can, h->dev, ordinal);
    if (e == HIP_SUCCESS && can) {
        e = h->fn.hipDeviceEnablePeerAccess(ordinal, 0);
        if (e == HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED)
            e = HIP_SUCCESS;
    }
    return e == HIP_SUCCESS && !can ? -1 : e;
}

static fg_status hip_enable_peer(fg_driver *d, int ordinal)
{
    hip *h = (hip *)d;
    int prev = h->dev;
    hip_error e = enter(h, &prev);
    if (e == HIP_SUCCESS)
        e = enable_peer(h, ordinal);
    leave(h, prev);
    if (e == -1)
        return fg_fail(FG_ERR_UNSUPPORTED_DEVICE, "device %d cannot access device %d's memory",
                       h->dev, ordinal);
    return hip_status(h, e, NULL, "hipDeviceEnablePeerAccess");
}

const char *const fg_hip_overlap_symbols[] = {
#define NAME(name, params) #name,
    HIP_OVERLAP_FUNCS(NAME)
#undef NAME
    NULL};

#define HIP_BASE_OPS                                                                               \
    .close = hip_close, .load = hip_load, .unload = hip_unload, .configure = hip_configure,        \
    .occupancy = hip_occupancy, .launch = hip_launch, .alloc = hip_alloc, .zero = hip_zero,        \
    .free = hip_free, .copy = hip_copy, .sync = hip_sync, .make_current = hip_make_current,        \
    .symbol = hip_symbol

static const fg_driver_ops hip_ops = {HIP_BASE_OPS};

static const fg_driver_ops hip_ops_overlap = {
    HIP_BASE_OPS,
    .stream_create = hip_stream_create, .stream_destroy = hip_stream_destroy,
    .stream_idle = hip_stream_idle, .event_create = hip_event_create,
    .event_destroy = hip_event_destroy, .event_record = hip_event_record,
    .stream_wait_event = hip_stream_wait_event, .copy_async = hip_copy_async,
    .read_async = hip_read_async,
    .write_flag = hip_write_flag, .wait_flag = hip_wait_flag, .ipc_export = hip_ipc_export,
    .ipc_open = hip_ipc_open, .ipc_close = hip_ipc_close, .enable_peer = hip_enable_peer,
};

static bool is_arch_name(const char *s, size_t room)
{
    return room > 4 && strncmp(s, "gfx", 3) == 0 && memchr(s, '\0', room) != NULL;
}

/* gcnArchName ("gfx942:sramecc+:xnack-") from hipDeviceProp_t, whose layout
 * changed in ROCm 6: read it at the offset of the layout we asked for, and
 * should that not look like an arch name, search the record for one. */
static fg_status arch_name(hip *h, char *out, size_t n)
{
    _Alignas(16) unsigned char props[PROPS_BYTES];
    const char *text = (const char *)props;
    size_t at = PROPS_ARCH_R0000;
    hip_error e;
    memset(props, 0, sizeof props);
    if (h->fn.props_r0600) {
        e = h->fn.props_r0600(props, h->dev);
        at = PROPS_ARCH_R0600;
    } else if (h->fn.props_r0000) {
        e = h->fn.props_r0000(props, h->dev);
    } else {
        return fg_fail(FG_ERR_UNSUPPORTED_DEVICE, "the HIP runtime lacks hipGetDeviceProperties");
    }
    if (e != HIP_SUCCESS)
        return hip_status(h, e, NULL, "hipGetDeviceProperties");
    if (!is_arch_name(text + at, sizeof props - at)) {
        at = 0; /* name[256] comes first: the arch string lies after it */
        for (size_t i = 256; i + 8 < sizeof props && !at; i++)
            if (is_arch_name(text + i, sizeof props - i))
                at = i;
        if (!at)
            return fg_fail(FG_ERR_UNSUPPORTED_DEVICE, "no gcnArchName in hipDeviceProp_t");
    }
    snprintf(out, n, "%s", text + at);
    return FG_OK;
}

static fg_status describe(hip *h)
{
    fg_device_caps *caps = &h->base.caps;
    int sms = 0, grid_x = 0, smem = 0, coop = 0, l2 = 0;
    hip_error e = h->fn.hipDeviceGetAttribute(&sms, HIP_ATTR_MULTIPROCESSOR_COUNT, h->dev);
    if (e == HIP_SUCCESS)
        e = h->fn.hipDeviceGetAttribute(&grid_x, HIP_ATTR_MAX_GRID_DIM_X, h->dev);
    if (e == HIP_SUCCESS)
        e = h->fn.hipDeviceGetAttribute(&smem, HIP_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, h->dev);
    if (e == HIP_SUCCESS)
        e = h->fn.hipDeviceGetAttribute(&coop, HIP_ATTR_COOPERATIVE_LAUNCH, h->dev);
    if (e == HIP_SUCCESS)
        e = h->fn.hipDeviceGetAttribute(&l2, HIP_ATTR_L2_CACHE_SIZE, h->dev);
    if (e == HIP_SUCCESS)
        e = h->fn.hipDeviceGetName(caps->info.name, (int)sizeof caps->info.name, h->dev);
    if (e != HIP_SUCCESS)
        return hip_status(h, e, NULL, "hipDeviceGetAttribute");
    fg_status s = arch_name(h, caps->info.arch_name, sizeof caps->info.arch_name);
    if (s != FG_OK)
        return s;
    caps->info.backend = FG_BACKEND_HIP;
    caps->info.compute_units = sms;
    caps->info.max_dynamic_smem = (size_t)smem;
    caps->info.l2_bytes = l2;
    caps->max_grid_x = grid_x;
    caps->clusters = false;
    caps->cooperative = coop != 0 && h->fn.launch_cooperative != NULL;
    const size_t base = strcspn(caps->info.arch_name, ":");
    if (base == 6 && strncmp(caps->info.arch_name, "gfx942", 6) == 0)
        caps->info.arch = FG_REG_ARCH_GFX942;
    else if (base == 6 && strncmp(caps->info.arch_name, "gfx90a", 6) == 0)
        caps->info.arch = FG_REG_ARCH_GFX90A;
    else
        return fg_fail(FG_ERR_UNSUPPORTED_DEVICE,
                       "%s is %s; the HIP kernels are built for gfx942 and gfx90a",
                       caps->info.name, caps->info.arch_name);
    return FG_OK;
}

fg_status fg_hip_open(void *lib, int device, fg_driver **out)
{
    *out = NULL;
    hip *h = calloc(1, sizeof *h);
    if (!h)
        return fg_fail(FG_ERR_OUT_OF_MEMORY, "fg_init: out of host memory");
    h->base.ops = &hip_ops;
    h->base.ordinal = device;
    h->lib = lib;
    h->dev = device;
    fg_status st = FG_OK;
#define RESOLVE(name, params)                                                                      \
    if (st == FG_OK && !sym(lib, #name, &h->fn.name))                                              \
        st = fg_fail(FG_ERR_UNSUPPORTED_DEVICE, "the HIP runtime lacks %s", #name);
    HIP_FUNCS(RESOLVE)
#undef RESOLVE
    sym(lib, "hipGetErrorName", &h->fn.hipGetErrorName);
    sym(lib, "hipGetDevicePropertiesR0600", &h->fn.props_r0600);
    sym(lib, "hipGetDeviceProperties", &h->fn.props_r0000);
    sym(lib, "hipModuleLaunchCooperativeKernel", &h->fn.launch_cooperative);
    h->fn.overlap = true;
#define RESOLVE_OPTIONAL(name, params) h->fn.overlap &= sym(lib, #name, &h->fn.name) != NULL;
    HIP_OVERLAP_FUNCS(RESOLVE_OPTIONAL)
#undef RESOLVE_OPTIONAL
    if (h->fn.overlap)
        h->base.ops = &hip_ops_overlap;
    int count = 0;
    if (st == FG_OK) {
        /* Without a GPU, ROCm's hipInit reports an invalid device rather than none. */
        hip_error e = h->fn.hipInit(0);
        if (e == HIP_SUCCESS)
            e = h->fn.hipGetDeviceCount(&count);
        st = e == HIP_ERROR_INVALID_DEVICE || e == HIP_ERROR_NO_DEVICE
                 ? fg_fail(FG_ERR_NO_DEVICE, "HIP: no device (hip error %d)", e)
                 : hip_status(h, e, NULL, "hipInit");
    }
    if (st == FG_OK && device >= count)
        st = fg_fail(FG_ERR_NO_DEVICE, "HIP device %d requested; the runtime sees %d", device,
                     count);
    if (st == FG_OK)
        st = describe(h);
    if (st != FG_OK) {
        hip_close(&h->base);
        return st;
    }
    *out = &h->base;
    return FG_OK;
}
