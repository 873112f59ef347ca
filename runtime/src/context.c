/* The context: the driver library opened at run time, one device, the
 * registry and a cache of loaded kernels (one module per entry). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef fg_status (*open_fn)(void *lib, int device, fg_driver **out);

static open_fn backend_of(void *lib)
{
    if (dlsym(lib, "cuGetProcAddress_v2") || dlsym(lib, "cuInit"))
        return fg_cuda_open;
    if (dlsym(lib, "hipModuleLaunchKernel"))
        return fg_hip_open;
    return NULL;
}

/* FG_ERR_NO_DEVICE when the library is absent or sees no device.
 * RTLD_NODELETE: some GPU runtimes do not survive being unmapped while
 * their threads or atexit handlers remain. */
static fg_status try_lib(const char *path, int device, fg_driver **drv, void **lib, bool *opened)
{
    *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    *opened = *lib != NULL;
    if (!*lib) {
        const char *why = dlerror();
        return fg_fail(FG_ERR_NO_DEVICE, "%s", why ? why : path);
    }
    open_fn open = backend_of(*lib);
    fg_status s = open ? open(*lib, device, drv)
                       : fg_fail(FG_ERR_NO_DEVICE, "%s is neither a CUDA nor a HIP driver", path);
    if (s != FG_OK) {
        dlclose(*lib);
        *lib = NULL;
    }
    return s;
}

static void append(char *buf, size_t n, const char *text)
{
    const size_t len = strlen(buf);
    snprintf(buf + len, n - len, "%s%s", len ? "; " : "", text);
}

fg_status fg_init(const fg_kernel_entry *registry, size_t count, int device, fg_context **out)
{
    if (out)
        *out = NULL;
    if (!out || (!registry && count) || device < 0)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_init: NULL out or registry, or device < 0");
    static const char *const defaults[] = {"libcuda.so.1", "libamdhip64.so", "libamdhip64.so.6",
                                           "libamdhip64.so.5"};
    const char *env = getenv("FG_DRIVER_LIB");
    const char *const *libs = defaults;
    size_t nlibs = sizeof defaults / sizeof defaults[0];
    if (env && *env) {
        libs = &env;
        nlibs = 1;
    }
    /* No device anywhere is FG_ERR_NO_DEVICE; any other failure wins. */
    fg_status worst = FG_ERR_NO_DEVICE;
    char why[512] = "";
    bool hip_opened = false;
    for (size_t i = 0; i < nlibs; i++) {
        const bool hip = strstr(libs[i], "amdhip") != NULL && libs == defaults;
        if (hip && hip_opened)
            continue; /* one HIP runtime is enough: the names are aliases */
        fg_driver *drv = NULL;
        void *lib = NULL;
        bool opened;
        fg_status s = try_lib(libs[i], device, &drv, &lib, &opened);
        hip_opened |= hip && opened;
        if (s == FG_OK)
            return fg_context_create(drv, lib, registry, count, out);
        if (s != FG_ERR_NO_DEVICE && worst == FG_ERR_NO_DEVICE) {
            worst = s;
            why[0] = '\0';
        }
        if (s == worst)
            append(why, sizeof why, fg_last_error());
    }
    return fg_fail(worst, "%s", why);
}

static fg_status check_registry(const fg_kernel_entry *reg, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!reg[i].name || !reg[i].op || reg[i].ndims > FG_REG_MAX_DIMS ||
            reg[i].ntargets > FG_REG_MAX_TARGETS)
            return fg_fail(FG_ERR_INVALID_ARGUMENT,
                           "registry entry %zu has no name or op, or more than %d dims or %d "
                           "targets", i, FG_REG_MAX_DIMS, FG_REG_MAX_TARGETS);
    return FG_OK;
}

/* The name of the registry's target of the device's arch whose compute
 * units and L2 size are the device's; "" when none matches, or when targets
 * of two names do (they could not be told apart). */
static void device_target(const fg_kernel_entry *reg, size_t n, fg_device_info *info)
{
    const char *found = NULL;
    for (size_t i = 0; i < n; i++) {
        if (reg[i].arch != info->arch)
            continue;
        for (unsigned t = 0; t < reg[i].ntargets; t++) {
            const fg_reg_target *rt = &reg[i].targets[t];
            if (!rt->name || rt->compute_units != info->compute_units ||
                rt->l2_bytes != info->l2_bytes)
                continue;
            if (found && strcmp(found, rt->name) != 0) {
                info->target[0] = '\0';
                return;
            }
            found = rt->name;
        }
    }
    snprintf(info->target, sizeof info->target, "%s", found ? found : "");
}

fg_status fg_context_create(fg_driver *drv, void *lib, const fg_kernel_entry *registry,
                            size_t count, fg_context **out)
{
    fg_status s = check_registry(registry, count);
    fg_context *ctx = NULL;
    if (s == FG_OK) {
        ctx = calloc(1, sizeof *ctx);
        if (ctx)
            ctx->slots = calloc(count ? count : 1, sizeof *ctx->slots);
        if (!ctx || !ctx->slots || pthread_mutex_init(&ctx->lock, NULL) != 0)
            s = fg_fail(FG_ERR_OUT_OF_MEMORY, "fg_init: out of host memory");
    }
    if (s != FG_OK) {
        if (ctx)
            free(ctx->slots);
        free(ctx);
        drv->ops->close(drv);
        if (lib)
            dlclose(lib);
        return s;
    }
    device_target(registry, count, &drv->caps.info);
    ctx->drv = drv;
    ctx->lib = lib;
    ctx->registry = registry;
    ctx->count = count;
    *out = ctx;
    return FG_OK;
}

void fg_shutdown(fg_context *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->count; i++)
        if (ctx->slots[i].module)
            ctx->drv->ops->unload(ctx->drv, ctx->slots[i].module);
    ctx->drv->ops->close(ctx->drv);
    if (ctx->lib)
        dlclose(ctx->lib);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx->slots);
    free(ctx);
}

/* Loading is rare (once per entry), so one lock for the whole cache. */
fg_status fg_context_function(fg_context *ctx, const fg_kernel_entry *e, const fg_launch_cfg *c,
                              void **fn)
{
    if (e < ctx->registry || e >= ctx->registry + ctx->count)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "entry %s is not in the context's registry",
                       e->name);
    if (!e->image || !e->image_size || *e->image_size == 0)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "registry entry %s has no image", e->name);
    fg_module_slot *slot = &ctx->slots[e - ctx->registry];
    fg_status s = FG_OK;
    pthread_mutex_lock(&ctx->lock);
    if (!slot->fn) {
        fg_driver *d = ctx->drv;
        void *module = NULL, *f = NULL;
        s = d->ops->load(d, e->image, e->name, &module, &f);
        if (s == FG_OK) {
            s = d->ops->configure(d, f, c, e->nonportable_cluster);
            if (s != FG_OK)
                d->ops->unload(d, module);
        }
        if (s == FG_OK)
            *slot = (fg_module_slot){.module = module, .fn = f};
    }
    *fn = slot->fn;
    pthread_mutex_unlock(&ctx->lock);
    return s;
}

fg_status fg_device_get_info(const fg_context *ctx, fg_device_info *out)
{
    if (!ctx || !out)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_device_get_info: NULL context or out");
    *out = ctx->drv->caps.info;
    return FG_OK;
}

/* ---- helpers ---- */

fg_status fg_mem_alloc(fg_context *ctx, size_t bytes, void **dptr)
{
    if (dptr)
        *dptr = NULL;
    if (!ctx || !dptr || !bytes)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_mem_alloc: NULL context or dptr, or 0 bytes");
    return ctx->drv->ops->alloc(ctx->drv, bytes, dptr);
}

fg_status fg_mem_free(fg_context *ctx, void *dptr)
{
    if (!ctx)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_mem_free: NULL context");
    return dptr ? ctx->drv->ops->free(ctx->drv, dptr) : FG_OK;
}

static fg_status copy(fg_context *ctx, void *dst, const void *src, size_t bytes, bool to_device)
{
    if (!ctx)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_memcpy: NULL context");
    if (!bytes)
        return FG_OK;
    if (!dst || !src)
        return fg_fail(FG_ERR_NULL_POINTER, "fg_memcpy: NULL %s", dst ? "source" : "destination");
    return ctx->drv->ops->copy(ctx->drv, dst, src, bytes, to_device);
}

fg_status fg_memcpy_to_device(fg_context *ctx, void *dst, const void *src, size_t bytes)
{
    return copy(ctx, dst, src, bytes, true);
}

fg_status fg_memcpy_to_host(fg_context *ctx, void *dst, const void *src, size_t bytes)
{
    return copy(ctx, dst, src, bytes, false);
}

fg_status fg_synchronize(fg_context *ctx, void *stream)
{
    if (!ctx)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_synchronize: NULL context");
    return ctx->drv->ops->sync(ctx->drv, stream);
}

fg_status fg_make_current(fg_context *ctx)
{
    if (!ctx)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_make_current: NULL context");
    return ctx->drv->ops->make_current(ctx->drv);
}

void *fg_driver_symbol(const fg_context *ctx, const char *name)
{
    return ctx && name ? ctx->drv->ops->symbol(ctx->drv, name) : NULL;
}
