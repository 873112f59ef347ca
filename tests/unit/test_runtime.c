/* libfgrt without a GPU: statuses, registry lookup and its guards, the
 * no-device path, and bind/launch driven through a fake driver that records
 * what the runtime asks of it. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- statuses ---- */

Test(runtime_status, every_status_has_its_own_string)
{
    for (int i = 0; i < FG_STATUS_COUNT; i++) {
        const char *s = fg_status_string((fg_status)i);
        cr_assert(s && *s, "status %d", i);
        cr_assert_str_neq(s, "unknown status", "status %d", i);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(s, fg_status_string((fg_status)j), "statuses %d and %d", i, j);
    }
    cr_assert_str_eq(fg_status_string((fg_status)FG_STATUS_COUNT), "unknown status");
    cr_assert_str_eq(fg_status_string((fg_status)-1), "unknown status");
}

Test(runtime_status, names)
{
    cr_assert_str_eq(fg_reg_arch_name(FG_REG_ARCH_SM90A), "sm_90a");
    cr_assert_str_eq(fg_reg_arch_name(FG_REG_ARCH_GFX942), "gfx942");
    cr_assert_str_eq(fg_reg_arch_name(FG_REG_ARCH_GFX90A), "gfx90a");
    cr_assert_str_eq(fg_reg_dtype_name(FG_REG_F16), "f16");
    cr_assert_str_eq(fg_reg_dtype_name(FG_REG_BF16), "bf16");
    cr_assert_str_eq(fg_reg_dtype_name((fg_reg_dtype)9), "unknown dtype");
}

/* ---- lookup ---- */

static const unsigned char image[64] = {1};
static const size_t image_size = sizeof image;

#define ENTRY(nm, o, a, dt, ...)                                                                   \
    {.name = nm, .family = o, .op = o, .arch = a, .dtype = dt, .block = {128, 1, 1},               \
     .cluster = {1, 1, 1}, .image = image, .image_size = &image_size, __VA_ARGS__}
#define SM90 FG_REG_ARCH_SM90A
#define MAX FG_REG_MATCH_MAX
#define MULT FG_REG_MATCH_MULTIPLE
#define ANY FG_REG_MATCH_ANY

static const fg_kernel_entry reg[] = {
    ENTRY("any", "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {1}, .match = {ANY}),
    ENTRY("m256", "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {256}, .match = {MULT}),
    ENTRY("m512", "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {512}, .match = {MULT}),
    ENTRY("h4096", "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {4096}),
    ENTRY("h4096_again", "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {4096}),
    ENTRY("h1024", "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {1024}),
    ENTRY("bf16_h4096", "rmsnorm", SM90, FG_REG_BF16, .ndims = 1, .dims = {4096}),
    ENTRY("gfx_h4096", "rmsnorm", FG_REG_ARCH_GFX942, FG_REG_F16, .ndims = 1, .dims = {4096}),
    ENTRY("b16", "attn", SM90, FG_REG_F16, .ndims = 2, .dims = {16, 128}, .match = {MAX}),
    ENTRY("b4", "attn", SM90, FG_REG_F16, .ndims = 2, .dims = {4, 128}, .match = {MAX}),
    ENTRY("b64", "attn", SM90, FG_REG_F16, .ndims = 2, .dims = {64, 128}, .match = {MAX}),
    ENTRY("weird", "odd", SM90, FG_REG_F16, .ndims = 1, .dims = {8}, .match = {99}),
};
static const size_t nreg = sizeof reg / sizeof reg[0];

static const char *find(fg_reg_arch arch, const char *op, fg_reg_dtype dt, long long d0,
                        long long d1, unsigned ndims, fg_status expect)
{
    const long long dims[2] = {d0, d1};
    const fg_kernel_entry *e = (const fg_kernel_entry *)1;
    fg_status s = fg_lookup(reg, nreg, arch, NULL, op, dt, dims, ndims, &e);
    cr_assert_eq(s, expect, "%s %lld: got %s (%s)", op, d0, fg_status_string(s), fg_last_error());
    if (s != FG_OK) {
        cr_assert_null(e, "a failed lookup clears *out");
        return NULL;
    }
    return e->name;
}

#define FIND(op, d0, d1, n) find(SM90, op, FG_REG_F16, d0, d1, n, FG_OK)

Test(runtime_lookup, most_specialized_wins)
{
    cr_assert_str_eq(FIND("rmsnorm", 4096, 0, 1), "h4096", "exact beats multiple and any");
    cr_assert_str_eq(FIND("rmsnorm", 1024, 0, 1), "h1024");
    cr_assert_str_eq(FIND("rmsnorm", 2048, 0, 1), "m512", "the larger tile wins");
    cr_assert_str_eq(FIND("rmsnorm", 768, 0, 1), "m256", "768 is no multiple of 512");
    cr_assert_str_eq(FIND("rmsnorm", 100, 0, 1), "any");
    cr_assert_str_eq(FIND("attn", 3, 128, 2), "b4", "the smallest maximum that fits");
    cr_assert_str_eq(FIND("attn", 4, 128, 2), "b4");
    cr_assert_str_eq(FIND("attn", 10, 128, 2), "b16");
    cr_assert_str_eq(FIND("attn", 64, 128, 2), "b64");
}

Test(runtime_lookup, arch_and_dtype_select)
{
    cr_assert_str_eq(find(FG_REG_ARCH_GFX942, "rmsnorm", FG_REG_F16, 4096, 0, 1, FG_OK),
                     "gfx_h4096");
    cr_assert_str_eq(find(SM90, "rmsnorm", FG_REG_BF16, 4096, 0, 1, FG_OK), "bf16_h4096");
}

Test(runtime_lookup, guards_refuse)
{
    find(SM90, "attn", FG_REG_F16, 65, 128, 2, FG_ERR_NO_MATCHING_INSTANCE);   /* over B_max */
    find(SM90, "attn", FG_REG_F16, 4, 64, 2, FG_ERR_NO_MATCHING_INSTANCE);     /* exact dim */
    find(SM90, "attn", FG_REG_F16, 4, 0, 1, FG_ERR_NO_MATCHING_INSTANCE);      /* ndims */
    find(SM90, "odd", FG_REG_F16, 8, 0, 1, FG_ERR_NO_MATCHING_INSTANCE);       /* unknown guard */
    find(FG_REG_ARCH_GFX90A, "rmsnorm", FG_REG_F16, 4096, 0, 1, FG_ERR_NO_MATCHING_INSTANCE);
    find(SM90, "gemm", FG_REG_F16, 4096, 0, 1, FG_ERR_NO_MATCHING_INSTANCE);
}

Test(runtime_lookup, ties_go_to_the_first_entry)
{
    const long long h = 4096;
    const fg_kernel_entry *e;
    cr_assert_eq(fg_lookup(reg + 4, nreg - 4, SM90, NULL, "rmsnorm", FG_REG_F16, &h, 1, &e), FG_OK);
    cr_assert_str_eq(e->name, "h4096_again");
    cr_assert_eq(fg_lookup(reg, nreg, SM90, NULL, "rmsnorm", FG_REG_F16, &h, 1, &e), FG_OK);
    cr_assert_str_eq(e->name, "h4096");
}

Test(runtime_lookup, priority_orders_equally_specialized_entries)
{
    const fg_kernel_entry r[] = {
        ENTRY("c2", "attn", SM90, FG_REG_F16, .ndims = 1, .dims = {4096}),
        ENTRY("c4", "attn", SM90, FG_REG_F16, .ndims = 1, .dims = {4096}, .priority = 5),
        ENTRY("c8", "attn", SM90, FG_REG_F16, .ndims = 1, .dims = {4096}, .priority = -1),
        ENTRY("any", "attn", SM90, FG_REG_F16, .ndims = 1, .dims = {1}, .match = {ANY},
              .priority = 99),
    };
    const long long h = 4096, other = 1024;
    const fg_kernel_entry *e;
    cr_assert_eq(fg_lookup(r, 4, SM90, NULL, "attn", FG_REG_F16, &h, 1, &e), FG_OK);
    cr_assert_str_eq(e->name, "c4", "the higher priority among equals");
    cr_assert_eq(fg_lookup(r, 4, SM90, NULL, "attn", FG_REG_F16, &other, 1, &e), FG_OK);
    cr_assert_str_eq(e->name, "any", "priority never beats a more specialized entry");
}

/* A build for the H100 and the H200 (one arch) has the planner's instance
 * of a family and, where the tuning spec has an entry, the tuned one, for
 * one key: the tuned one is taken, wherever it is in the registry, but never
 * over a higher priority or a more specialized entry. */
Test(runtime_lookup, a_tuned_entry_wins_over_an_equal_planners)
{
    const fg_kernel_entry r[] = {
        ENTRY("gemm", "overlap_gemm", SM90, FG_REG_BF16, .ndims = 2, .dims = {8192, 4096}),
        ENTRY("gemm_s4c2g16", "overlap_gemm", SM90, FG_REG_BF16, .ndims = 2,
              .dims = {8192, 4096}, .tuned = 1),
        ENTRY("gemm_again", "overlap_gemm", SM90, FG_REG_BF16, .ndims = 2, .dims = {8192, 4096}),
        ENTRY("other_tuned", "overlap_gemm", SM90, FG_REG_BF16, .ndims = 2, .dims = {8192, 1024},
              .tuned = 1),
        ENTRY("other_first", "overlap_gemm", SM90, FG_REG_BF16, .ndims = 2, .dims = {8192, 1024},
              .priority = 1),
    };
    const long long k4096[] = {8192, 4096}, k1024[] = {8192, 1024};
    const fg_kernel_entry *e;
    cr_assert_eq(fg_lookup(r, 5, SM90, NULL, "overlap_gemm", FG_REG_BF16, k4096, 2, &e), FG_OK);
    cr_assert_str_eq(e->name, "gemm_s4c2g16", "the tuned among equals, wherever it is");
    cr_assert_eq(fg_lookup(r, 5, SM90, NULL, "overlap_gemm", FG_REG_BF16, k1024, 2, &e), FG_OK);
    cr_assert_str_eq(e->name, "other_first", "a higher priority before tuning");
}

/* The H100 and the H200 as a build's target specs say them. */
#define H100 {"h100", 132, 52428800}
#define H200 {"h200", 132, 62914560}
/* The MLA block's B_max 16 in a build for both: a copy a row for the H100
 * (below the groups on a device of neither), 4 rows a copy for the H200. */
#define BLOCK_BY_TARGET                                                                            \
    ENTRY("blk_rc", "mla_block", SM90, FG_REG_BF16, .ndims = 1, .dims = {16}, .match = {MAX},      \
          .priority = -1, .targets = {H100}, .ntargets = 1),                                       \
        ENTRY("blk", "mla_block", SM90, FG_REG_BF16, .ndims = 1, .dims = {16}, .match = {MAX},     \
              .targets = {H200}, .ntargets = 1)

/* A build for the H100 and the H200 can hold, under one key, an instance
 * planned for each (the MLA block's latent rows: a copy a row, or 4): the
 * device's target's is taken over a higher priority or a tuned entry, never
 * over a more specialized one; a device of no target of the registry's gets
 * the order without targets. */
Test(runtime_lookup, the_devices_targets_entry_wins_among_equals)
{
    const fg_kernel_entry r[] = {
        BLOCK_BY_TARGET,
        ENTRY("blk_tuned", "mla_block", SM90, FG_REG_BF16, .ndims = 1, .dims = {16},
              .match = {MAX}, .tuned = 1, .targets = {H200}, .ntargets = 1),
        ENTRY("blk_b8", "mla_block", SM90, FG_REG_BF16, .ndims = 1, .dims = {8}, .match = {MAX}),
    };
    const long long b16 = 16, b4 = 4;
    const fg_kernel_entry *e;
    cr_assert_eq(fg_lookup(r, 4, SM90, "h100", "mla_block", FG_REG_BF16, &b16, 1, &e), FG_OK);
    cr_assert_str_eq(e->name, "blk_rc", "the device's target's, over priority and tuning");
    cr_assert_eq(fg_lookup(r, 4, SM90, "h200", "mla_block", FG_REG_BF16, &b16, 1, &e), FG_OK);
    cr_assert_str_eq(e->name, "blk_tuned", "among the target's, the tuned one");
    const char *unknown[] = {NULL, "", "h800"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(fg_lookup(r, 4, SM90, unknown[i], "mla_block", FG_REG_BF16, &b16, 1, &e),
                     FG_OK);
        cr_assert_str_eq(e->name, "blk_tuned", "no target known: priority, then tuning (%d)", i);
    }
    cr_assert_eq(fg_lookup(r, 4, SM90, "h100", "mla_block", FG_REG_BF16, &b4, 1, &e), FG_OK);
    cr_assert_str_eq(e->name, "blk_b8", "the tighter bound before the target");
}

Test(runtime_lookup, no_match_is_an_error_that_says_what_exists)
{
    const long long h = 1024;
    const fg_kernel_entry *e;
    /* Only an f16 instance has hidden 1024: bf16 is not served by a near fit. */
    cr_assert_eq(fg_lookup(reg + 3, nreg - 3, SM90, NULL, "rmsnorm", FG_REG_BF16, &h, 1, &e),
                 FG_ERR_NO_MATCHING_INSTANCE);
    cr_assert_null(e);
    const char *why = fg_last_error();
    cr_assert(strstr(why, "no rmsnorm instance for sm_90a bf16 [1024]"), "%s", why);
    cr_assert(strstr(why, "f16 [1024]") && strstr(why, "bf16 [4096]"), "%s", why);
    cr_assert_eq(fg_lookup(reg, 0, SM90, NULL, "rmsnorm", FG_REG_F16, &h, 1, &e),
                 FG_ERR_NO_MATCHING_INSTANCE);
    cr_assert(strstr(fg_last_error(), "none"), "%s", fg_last_error());
}

Test(runtime_lookup, bad_arguments)
{
    const long long dims[FG_REG_MAX_DIMS + 1] = {4096};
    const long long zero = 0, negative = -4096;
    const fg_kernel_entry *e;
    cr_assert_eq(fg_lookup(reg, nreg, SM90, NULL, "rmsnorm", FG_REG_F16, dims, 1, NULL),
                 FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fg_lookup(reg, nreg, SM90, NULL, NULL, FG_REG_F16, dims, 1, &e),
                 FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fg_lookup(NULL, 3, SM90, NULL, "rmsnorm", FG_REG_F16, dims, 1, &e),
                 FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fg_lookup(reg, nreg, SM90, NULL, "rmsnorm", FG_REG_F16, NULL, 1, &e),
                 FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fg_lookup(reg, nreg, SM90, NULL, "rmsnorm", FG_REG_F16, dims,
                           FG_REG_MAX_DIMS + 1, &e),
                 FG_ERR_INVALID_ARGUMENT);
    /* a zero key is a flag value to lookup: no rmsnorm entry has it */
    cr_assert_eq(fg_lookup(reg, nreg, SM90, NULL, "rmsnorm", FG_REG_F16, &zero, 1, &e),
                 FG_ERR_NO_MATCHING_INSTANCE);
    cr_assert_eq(fg_lookup(reg, nreg, SM90, NULL, "rmsnorm", FG_REG_F16, &negative, 1, &e),
                 FG_ERR_BAD_SHAPE);
}

/* ---- the no-device path ---- */

static const fg_kernel_entry empty_reg[1];

Test(runtime_init, forced_no_device)
{
    setenv("FG_DRIVER_LIB", "/nonexistent/libcuda.so.1", 1);
    fg_context *ctx = (fg_context *)1;
    cr_assert_eq(fg_init(reg, nreg, 0, &ctx), FG_ERR_NO_DEVICE);
    cr_assert_null(ctx);
    cr_assert(strstr(fg_last_error(), "/nonexistent/libcuda.so.1"), "%s", fg_last_error());
}

Test(runtime_init, a_library_that_is_no_driver)
{
    setenv("FG_DRIVER_LIB", "libc.so.6", 1);
    fg_context *ctx;
    cr_assert_eq(fg_init(empty_reg, 0, 0, &ctx), FG_ERR_NO_DEVICE);
    cr_assert(strstr(fg_last_error(), "neither a CUDA nor a HIP driver"), "%s", fg_last_error());
}

/* This machine's own libraries: CI has no GPU, but may have libamdhip64. */
Test(runtime_init, this_machine)
{
    unsetenv("FG_DRIVER_LIB");
    fg_context *ctx = NULL;
    fg_status s = fg_init(reg, nreg, 0, &ctx);
    if (s == FG_OK) {
        fg_shutdown(ctx);
        cr_skip_test("a GPU is present");
    }
    cr_assert(s == FG_ERR_NO_DEVICE || s == FG_ERR_UNSUPPORTED_DEVICE, "%s: %s",
              fg_status_string(s), fg_last_error());
    cr_assert_null(ctx);
}

/* The HIP functions the overlap executor resolves (driver_hip.c), where this
 * machine has ROCm's runtime: each must exist under the name it is looked up
 * by, or the executor's HIP path would report them missing at run time. */
Test(runtime_init, hip_has_the_overlap_functions)
{
    void *lib = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        cr_skip_test("no libamdhip64.so on this machine");
    size_t n = 0;
    for (const char *const *name = fg_hip_overlap_symbols; *name; name++, n++)
        cr_expect_not_null(dlsym(lib, *name), "libamdhip64 lacks %s", *name);
    cr_expect_geq(n, 16u, "the list driver_hip.c resolves");
    dlclose(lib);
}

Test(runtime_init, bad_arguments)
{
    fg_context *ctx;
    cr_assert_eq(fg_init(reg, nreg, 0, NULL), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fg_init(NULL, 2, 0, &ctx), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fg_init(reg, nreg, -1, &ctx), FG_ERR_INVALID_ARGUMENT);
    fg_shutdown(NULL);
    fg_binding_free(NULL);
    cr_assert_eq(fg_launch(NULL, NULL), FG_ERR_INVALID_ARGUMENT);
}

/* ---- bind and launch through a fake driver ---- */

typedef struct fake {
    fg_driver base;
    int loads, unloads, configures, launches, allocs, frees, closes;
    int resident;              /* what occupancy reports */
    fg_status load_status;     /* what load returns */
    /* injected failures: what these calls return (FG_OK: they work) */
    fg_status configure_status, occupancy_status, launch_status, alloc_status, zero_status;
    bool nonportable;          /* last configure */
    fg_launch_cfg cfg;         /* last launch */
    void *stream;
    void *x, *weight, *y;      /* last launch's parameters */
    int rows;
    float eps;
    void *raw[5];              /* the first five parameters as pointers */
    int zeros;
    int maps;                  /* tensor maps encoded, each recorded below */
    long long map_dims[4][4];  /* rows, cols, box rows, box cols */
    fg_reg_dtype map_dtype;
    void *params[20];          /* the last launch's parameter pointers (at most 20 kept) */
} fake;

static fake F;

static void f_close(fg_driver *d) { ((fake *)d)->closes++; }
static fg_status f_load(fg_driver *d, const void *img, const char *sym, void **m, void **fn)
{
    fake *f = (fake *)d;
    (void)sym;
    if (f->load_status != FG_OK)
        return fg_fail(f->load_status, "fake load failed");
    f->loads++;
    *m = (void *)img;
    *fn = (void *)sym;
    return FG_OK;
}
static void f_unload(fg_driver *d, void *m) { (void)m, ((fake *)d)->unloads++; }
static fg_status f_configure(fg_driver *d, void *fn, const fg_launch_cfg *c, bool nonportable)
{
    (void)fn, (void)c;
    if (((fake *)d)->configure_status != FG_OK)
        return fg_fail(((fake *)d)->configure_status, "fake configure failed");
    ((fake *)d)->configures++;
    ((fake *)d)->nonportable = nonportable;
    return FG_OK;
}
static fg_status f_occupancy(fg_driver *d, void *fn, const fg_launch_cfg *c, int *resident)
{
    (void)fn, (void)c;
    if (((fake *)d)->occupancy_status != FG_OK)
        return fg_fail(((fake *)d)->occupancy_status, "fake occupancy query failed");
    *resident = ((fake *)d)->resident;
    return FG_OK;
}
static fg_status f_launch(fg_driver *d, void *fn, const fg_launch_cfg *c, void *stream,
                          void **params)
{
    fake *f = (fake *)d;
    (void)fn;
    if (f->launch_status != FG_OK)
        return fg_fail(f->launch_status, "fake launch failed");
    f->launches++;
    f->cfg = *c;
    f->stream = stream;
    memcpy(&f->x, params[0], sizeof f->x);
    memcpy(&f->weight, params[1], sizeof f->weight);
    memcpy(&f->y, params[2], sizeof f->y);
    memcpy(&f->rows, params[3], sizeof f->rows);
    memcpy(&f->eps, params[4], sizeof f->eps);
    for (int i = 0; i < 5; i++)
        memcpy(&f->raw[i], params[i], sizeof f->raw[i]);
    memcpy(f->params, params, sizeof f->params);
    return FG_OK;
}
/* A map that says what it was made of: its base in its first 8 bytes. */
static fg_status f_tensor_map(fg_driver *d, void *map, fg_reg_dtype dtype, const void *base,
                              long long rows, long long cols, unsigned box_rows, unsigned box_cols)
{
    fake *f = (fake *)d;
    cr_assert_eq((uintptr_t)map % 64, 0, "a tensor map parameter is 64-byte aligned");
    memset(map, 0, 128);
    memcpy(map, &base, sizeof base);
    if (f->maps < 4)
        memcpy(f->map_dims[f->maps], (long long[4]){rows, cols, box_rows, box_cols},
               sizeof f->map_dims[0]);
    f->maps++;
    f->map_dtype = dtype;
    return FG_OK;
}
static fg_status f_alloc(fg_driver *d, size_t n, void **p)
{
    if (((fake *)d)->alloc_status != FG_OK)
        return fg_fail(((fake *)d)->alloc_status, "fake allocation failed");
    ((fake *)d)->allocs++;
    *p = malloc(n);
    return FG_OK;
}
static fg_status f_zero(fg_driver *d, void *p, size_t n)
{
    if (((fake *)d)->zero_status != FG_OK)
        return fg_fail(((fake *)d)->zero_status, "fake memset failed");
    ((fake *)d)->zeros++;
    memset(p, 0, n);
    return FG_OK;
}
static fg_status f_free(fg_driver *d, void *p)
{
    ((fake *)d)->frees++;
    free(p);
    return FG_OK;
}
static fg_status f_copy(fg_driver *d, void *dst, const void *src, size_t n, bool to_device)
{
    (void)d, (void)to_device;
    memcpy(dst, src, n);
    return FG_OK;
}
static fg_status f_ok(fg_driver *d) { (void)d; return FG_OK; }
static fg_status f_sync(fg_driver *d, void *s) { (void)s; return f_ok(d); }
static void *f_symbol(const fg_driver *d, const char *name) { (void)d, (void)name; return NULL; }

static const fg_driver_ops fake_ops = {
    .close = f_close, .load = f_load, .unload = f_unload, .configure = f_configure,
    .occupancy = f_occupancy, .launch = f_launch, .alloc = f_alloc, .zero = f_zero,
    .free = f_free,
    .copy = f_copy, .sync = f_sync, .make_current = f_ok, .symbol = f_symbol,
    .tensor_map = f_tensor_map,
};
/* The same without TMA (as HIP's backend) */
static const fg_driver_ops fake_ops_no_tma = {
    .close = f_close, .load = f_load, .unload = f_unload, .configure = f_configure,
    .occupancy = f_occupancy, .launch = f_launch, .alloc = f_alloc, .zero = f_zero,
    .free = f_free, .copy = f_copy, .sync = f_sync, .make_current = f_ok, .symbol = f_symbol};

/* A fake device of `arch` with `cus` compute units and an L2 of l2_bytes. */
static fg_context *fake_device_ctx(fg_reg_arch arch, int cus, long long l2_bytes,
                                   const fg_kernel_entry *r, size_t n)
{
    F = (fake){.base = {.ops = &fake_ops}, .resident = 8};
    F.base.caps = (fg_device_caps){
        .info = {.backend = FG_BACKEND_CUDA, .arch = arch, .name = "fake",
                 .arch_name = "sm_90", .compute_units = cus, .max_dynamic_smem = 232448,
                 .l2_bytes = l2_bytes},
        .max_grid_x = 100000, .clusters = true, .cooperative = true};
    fg_context *ctx = NULL;
    cr_assert_eq(fg_context_create(&F.base, NULL, r, n, &ctx), FG_OK);
    return ctx;
}

static fg_context *fake_ctx(fg_reg_arch arch, const fg_kernel_entry *r, size_t n)
{
    return fake_device_ctx(arch, 132, 0, r, n);
}

/* The context tells which of the registry's targets the device is by its
 * compute units and L2 size, and its lookups prefer that target's entries. */
Test(runtime_bind, the_device_is_known_by_its_compute_units_and_l2)
{
    const fg_kernel_entry r[] = {
        BLOCK_BY_TARGET,
        ENTRY("both", "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {4096},
              .targets = {H100, H200}, .ntargets = 2),
        /* another arch's target with the H100's figures is not the H100's */
        ENTRY("gfx", "rmsnorm", FG_REG_ARCH_GFX942, FG_REG_F16, .ndims = 1, .dims = {4096},
              .targets = {{"gfx_twin", 132, 52428800}}, .ntargets = 1),
    };
    const struct {
        int cus;
        long long l2;
        const char *target, *entry;
    } cases[] = {
        {132, 52428800, "h100", "blk_rc"},
        {132, 62914560, "h200", "blk"},
        {132, 0, "", "blk"},            /* L2 not reported */
        {114, 52428800, "", "blk"},     /* an H100 PCIe: not the h100 spec's */
    };
    const long long b = 16;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fg_context *ctx = fake_device_ctx(SM90, cases[i].cus, cases[i].l2, r, 4);
        fg_device_info info;
        cr_assert_eq(fg_device_get_info(ctx, &info), FG_OK);
        cr_assert_str_eq(info.target, cases[i].target, "case %zu", i);
        cr_assert_eq(info.l2_bytes, cases[i].l2);
        const fg_kernel_entry *e = NULL;
        cr_assert_eq(fg_context_lookup(ctx, "mla_block", FG_REG_BF16, &b, 1, &e), FG_OK);
        cr_assert_str_eq(e->name, cases[i].entry, "case %zu", i);
        fg_shutdown(ctx);
    }
    /* two targets of one arch with one device's figures cannot be told apart */
    const fg_kernel_entry twins[] = {
        ENTRY("a", "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {4096}, .targets = {H100},
              .ntargets = 1),
        ENTRY("b", "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {4096},
              .targets = {{"h100_twin", 132, 52428800}}, .ntargets = 1),
    };
    fg_context *ctx = fake_device_ctx(SM90, 132, 52428800, twins, 2);
    fg_device_info info;
    cr_assert_eq(fg_device_get_info(ctx, &info), FG_OK);
    cr_assert_str_eq(info.target, "");
    fg_shutdown(ctx);
    /* an entry that says more targets than it can hold is a bad registry */
    const fg_kernel_entry bad[] = {ENTRY("a", "rmsnorm", SM90, FG_REG_F16, .ndims = 1,
                                         .dims = {4096}, .ntargets = FG_REG_MAX_TARGETS + 1)};
    F = (fake){.base = {.ops = &fake_ops}};
    ctx = (fg_context *)1;
    cr_assert_eq(fg_context_create(&F.base, NULL, bad, 1, &ctx), FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "targets"), "%s", fg_last_error());
    cr_assert_eq(F.closes, 1, "the driver closed");
}

#define DEV(addr) ((void *)(uintptr_t)(addr))

static fg_rmsnorm_args good_args(void)
{
    /* Far apart, so no row count used here makes them overlap. */
    return (fg_rmsnorm_args){.dtype = FG_REG_F16, .hidden = 1024, .rows = 4,
                             .x = DEV(0x1000000000), .weight = DEV(0x2000000000),
                             .y = DEV(0x3000000000), .eps = 1e-5f};
}

static void expect_bind(fg_context *ctx, fg_rmsnorm_args a, fg_status expect)
{
    fg_binding *b = (fg_binding *)1;
    fg_status s = fg_rmsnorm_bind(ctx, &a, &b);
    cr_assert_eq(s, expect, "got %s (%s)", fg_status_string(s), fg_last_error());
    cr_assert_null(b, "a failed bind clears *out");
}

Test(runtime_bind, bind_once_launch_many)
{
    fg_context *ctx = fake_ctx(SM90, reg, nreg);
    fg_rmsnorm_args a = good_args();
    fg_binding *b = NULL;
    cr_assert_eq(fg_rmsnorm_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    cr_assert_eq(F.loads, 1);
    cr_assert_eq(F.configures, 1);

    fg_binding_info info;
    cr_assert_eq(fg_binding_get_info(b, &info), FG_OK);
    cr_assert_str_eq(info.entry->name, "h1024");
    cr_assert_eq(info.grid[0], 4);
    cr_assert_eq(info.block[0], 128);
    cr_assert_eq(info.cluster[0], 1);
    cr_assert_eq(info.resident_blocks, 8 * 132);
    cr_assert_eq(info.waves, 1);
    cr_assert_eq(info.workspace_bytes, 0);
    cr_assert_null(info.counters);

    for (int i = 0; i < 3; i++)
        cr_assert_eq(fg_launch(b, DEV(0x77)), FG_OK);
    cr_assert_eq(F.launches, 3);
    cr_assert_eq(F.stream, DEV(0x77));
    cr_assert_eq(F.x, a.x);
    cr_assert_eq(F.weight, a.weight);
    cr_assert_eq(F.y, a.y);
    cr_assert_eq(F.rows, 4);
    cr_assert_float_eq(F.eps, 1e-5f, 0);
    cr_assert_eq(F.cfg.grid[0], 4);
    cr_assert_not(F.cfg.cooperative);
    cr_assert_eq(F.allocs, 0, "the launch path allocates nothing");

    /* A second binding of the same instance reuses the loaded module. */
    fg_binding *b2 = NULL;
    a.rows = 100000;
    cr_assert_eq(fg_rmsnorm_bind(ctx, &a, &b2), FG_OK, "%s", fg_last_error());
    cr_assert_eq(F.loads, 1);
    cr_assert_eq(fg_binding_get_info(b2, &info), FG_OK);
    cr_assert_eq(info.waves, (100000 + 8 * 132 - 1) / (8 * 132));
    fg_binding_free(b2);
    fg_binding_free(b);
    fg_shutdown(ctx);
    cr_assert_eq(F.unloads, 1);
    cr_assert_eq(F.closes, 1);
}

static const fg_kernel_entry reduce_reg[] = {
    ENTRY("red_w2", "overlap_reduce", SM90, FG_REG_BF16, .ndims = 1, .dims = {2},
          .grid_rule = FG_REG_GRID_FIXED, .grid = {2112, 1, 1}),
    ENTRY("red_w8", "overlap_reduce", SM90, FG_REG_BF16, .ndims = 1, .dims = {8},
          .grid_rule = FG_REG_GRID_FIXED, .grid = {2112, 1, 1}),
};

static fg_overlap_reduce_args good_reduce(void)
{
    return (fg_overlap_reduce_args){.dtype = FG_REG_BF16, .world = 2, .rank = 1, .vecs = 1024,
                                    .own = DEV(0x1000000000), .recv = DEV(0x2000000000),
                                    .out = DEV(0x3000000000)};
}

static void expect_reduce_bind(fg_context *ctx, fg_overlap_reduce_args a, fg_status want)
{
    fg_binding *b = (fg_binding *)1;
    const fg_status s = fg_overlap_reduce_bind(ctx, &a, &b);
    cr_assert_eq(s, want, "got %s (%s)", fg_status_string(s), fg_last_error());
    cr_assert_null(b, "a failed bind clears *out");
}

/* The overlap family's reduction: keyed by world size, the entry's fixed
 * grid, the kernel's parameters (own, recv, out, rank, vecs) in order. */
Test(runtime_bind, overlap_reduce)
{
    fg_context *ctx = fake_ctx(SM90, reduce_reg, 2);
    const fg_overlap_reduce_args a = good_reduce();
    fg_binding *b = NULL;
    cr_assert_eq(fg_overlap_reduce_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    fg_binding_info info;
    cr_assert_eq(fg_binding_get_info(b, &info), FG_OK);
    cr_assert_str_eq(info.entry->name, "red_w2");
    cr_assert_eq(fg_launch(b, DEV(0x55)), FG_OK);
    cr_assert_eq(F.cfg.grid[0], 2112);
    cr_assert_eq(F.stream, DEV(0x55));
    cr_assert_eq(F.raw[0], a.own);
    cr_assert_eq(F.raw[1], a.recv);
    cr_assert_eq(F.raw[2], a.out);
    int rank, vecs;
    memcpy(&rank, &F.raw[3], sizeof rank);
    memcpy(&vecs, &F.raw[4], sizeof vecs);
    cr_assert_eq(rank, 1);
    cr_assert_eq(vecs, 1024);
    fg_binding_free(b);
    fg_shutdown(ctx);
}

static const fg_kernel_entry gemm_reg[] = {
    ENTRY("gemm_n8192_k1024", "overlap_gemm", SM90, FG_REG_BF16, .ndims = 2, .dims = {8192, 1024},
          .grid_rule = FG_REG_GRID_FIXED, .grid = {132, 1, 1}, .dynamic_smem = 200000),
};

static fg_overlap_gemm_args good_gemm(void)
{
    return (fg_overlap_gemm_args){
        .dtype = FG_REG_BF16, .n = 8192, .k = 1024, .m = 4096, .a = DEV(0x1000000000),
        .w = DEV(0x2000000000), .c = DEV(0x3000000000), .tile_rows = DEV(0x4000000000),
        .flags = DEV(0x5000000004), .epoch = DEV(0x5000000000), .status = DEV(0x6000000000),
        .own = 1, .shard_rows = 2048, .piece_rows = 512, .flag_stride = 5,
        .limit_ns = 500000000, .done = DEV(0x7000000000), .done_rows = 1024};
}

static void expect_gemm_bind(fg_context *ctx, fg_overlap_gemm_args a, fg_status want,
                             const char *says)
{
    fg_binding *b = (fg_binding *)1;
    const fg_status s = fg_overlap_gemm_bind(ctx, &a, &b);
    cr_assert_eq(s, want, "got %s (%s)", fg_status_string(s), fg_last_error());
    cr_assert_null(b, "a failed bind clears *out");
    cr_assert(!says || strstr(fg_last_error(), says), "'%s' does not say '%s'", fg_last_error(),
              says);
}

/* The overlap family's GEMM: keyed by (n, k); its three tensor maps
 * encoded at bind time (A: m x k in boxes of 128 x 64, W: n x k in 256 x
 * 64, C: m x n in 64 x 64) and passed first, then m and the feed in the
 * kernel's order. */
Test(runtime_bind, overlap_gemm)
{
    fg_context *ctx = fake_ctx(SM90, gemm_reg, 1);
    const fg_overlap_gemm_args a = good_gemm();
    fg_binding *b = NULL;
    cr_assert_eq(fg_overlap_gemm_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    cr_assert_eq(F.maps, 3);
    const long long want[3][4] = {{4096, 1024, 128, 64}, {8192, 1024, 256, 64}, {4096, 8192, 64, 64}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(F.map_dims[i][j], want[i][j], "map %d, figure %d", i, j);
    cr_assert_eq(F.map_dtype, FG_REG_BF16);
    cr_assert_eq(fg_launch(b, DEV(0x55)), FG_OK);
    cr_assert_eq(F.maps, 3, "encoded once, at bind");
    cr_assert_eq(F.cfg.grid[0], 132);
    cr_assert_eq(F.cfg.smem, 200000);
    cr_assert_eq(F.raw[0], a.a);
    cr_assert_eq(F.raw[1], a.w);
    cr_assert_eq(F.raw[2], a.c);
    int i32[5];
    const int at[5] = {3, 7, 8, 9, 10};   /* m, own, shard_rows, piece_rows, flag_stride */
    for (int i = 0; i < 5; i++)
        memcpy(&i32[i], F.params[at[i]], sizeof i32[i]);
    cr_assert(i32[0] == 4096 && i32[1] == 1 && i32[2] == 2048 && i32[3] == 512 && i32[4] == 5);
    const void *p[4];
    const int pat[4] = {4, 5, 6, 11};   /* tile_rows, flags, epoch, status */
    for (int i = 0; i < 4; i++)
        memcpy(&p[i], F.params[pat[i]], sizeof p[i]);
    cr_assert(p[0] == a.tile_rows && p[1] == a.flags && p[2] == a.epoch && p[3] == a.status);
    uint64_t limit;
    memcpy(&limit, F.params[12], sizeof limit);
    cr_assert_eq(limit, 500000000u);
    void *done;
    int done_rows;
    memcpy(&done, F.params[13], sizeof done);
    memcpy(&done_rows, F.params[14], sizeof done_rows);
    cr_assert(done == a.done && done_rows == 1024);
    fg_binding_free(b);
    /* unfed: no flags, nothing else needed */
    fg_overlap_gemm_args u = {.dtype = FG_REG_BF16, .n = 8192, .k = 1024, .m = 128,
                              .a = a.a, .w = a.w, .c = a.c};
    cr_assert_eq(fg_overlap_gemm_bind(ctx, &u, &b), FG_OK, "%s", fg_last_error());
    fg_binding_free(b);
    fg_shutdown(ctx);
}

/* The portable form (op overlap_gemm_portable; here a gfx942 entry): the
 * same arguments with a, w, c passed as plain pointers, no maps encoded,
 * then the workspace and counters of its last round's split over K; the
 * wgmma form's bind never picks it, and the same guards hold. */
static const fg_kernel_entry gemm_portable_reg[] = {
    ENTRY("gemm_portable_n8192_k1024", "overlap_gemm_portable", FG_REG_ARCH_GFX942, FG_REG_BF16,
          .ndims = 2, .dims = {8192, 1024}, .grid_rule = FG_REG_GRID_FIXED, .grid = {608, 1, 1},
          .workspace_bytes = 608 * 128 * 128 * 4, .counter_count = 304),
};

Test(runtime_bind, overlap_gemm_portable)
{
    fg_context *ctx = fake_ctx(FG_REG_ARCH_GFX942, gemm_portable_reg, 1);
    const fg_overlap_gemm_args a = good_gemm();
    fg_binding *b = NULL;
    cr_assert_eq(fg_overlap_gemm_portable_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    cr_assert_eq(F.maps, 0, "no tensor maps");
    cr_assert_eq(fg_launch(b, DEV(0x55)), FG_OK);
    cr_assert_eq(F.cfg.grid[0], 608);
    cr_assert_eq(F.raw[0], a.a);
    cr_assert_eq(F.raw[1], a.w);
    cr_assert_eq(F.raw[2], a.c);
    int m, done_rows;
    memcpy(&m, F.params[3], sizeof m);
    memcpy(&done_rows, F.params[14], sizeof done_rows);
    cr_assert(m == 4096 && done_rows == 1024);
    void *done;
    memcpy(&done, F.params[13], sizeof done);
    cr_assert_eq(done, a.done);
    fg_binding_info info;
    cr_assert_eq(fg_binding_get_info(b, &info), FG_OK);
    cr_assert_eq(info.workspace_bytes, 608 * 128 * 128 * 4 + 304 * 4, "partial sums, then counters");
    void *ws, *counters;
    memcpy(&ws, F.params[15], sizeof ws);
    memcpy(&counters, F.params[16], sizeof counters);
    cr_assert_eq(ws, info.workspace, "the split's partial sums: the binding's workspace");
    cr_assert_eq(counters, (char *)info.workspace + 608 * 128 * 128 * 4, "then its counters");
    cr_assert_eq(counters, info.counters, "the info's counters: the kernel's");
    fg_binding_free(b);
    fg_overlap_gemm_args bad = good_gemm();
    bad.a = DEV(0x1000000008);
    b = (fg_binding *)1;
    cr_assert_eq(fg_overlap_gemm_portable_bind(ctx, &bad, &b), FG_ERR_MISALIGNED);
    cr_assert_null(b);
    bad = good_gemm(), bad.m = 4000;
    cr_assert_eq(fg_overlap_gemm_portable_bind(ctx, &bad, &b), FG_ERR_BAD_SHAPE);
    expect_gemm_bind(ctx, good_gemm(), FG_ERR_NO_MATCHING_INSTANCE, NULL);   /* not the wgmma op */
    fg_shutdown(ctx);
}

Test(runtime_bind, overlap_gemm_guards)
{
    fg_context *ctx = fake_ctx(SM90, gemm_reg, 1);
    fg_overlap_gemm_args a = good_gemm();
    a.m = 4000;
    expect_gemm_bind(ctx, a, FG_ERR_BAD_SHAPE, "multiple of 128");
    a = good_gemm(), a.k = 2048;
    expect_gemm_bind(ctx, a, FG_ERR_NO_MATCHING_INSTANCE, NULL);
    a = good_gemm(), a.w = NULL;
    expect_gemm_bind(ctx, a, FG_ERR_NULL_POINTER, "w is NULL");
    a = good_gemm(), a.c = DEV(0x3000000008);
    expect_gemm_bind(ctx, a, FG_ERR_MISALIGNED, "16-byte");
    a = good_gemm(), a.epoch = NULL;
    expect_gemm_bind(ctx, a, FG_ERR_NULL_POINTER, "without epoch");
    a = good_gemm(), a.status = NULL;
    expect_gemm_bind(ctx, a, FG_ERR_NULL_POINTER, "without status");
    a = good_gemm(), a.piece_rows = 500;
    expect_gemm_bind(ctx, a, FG_ERR_BAD_SHAPE, "whole blocks of whole pieces");
    a = good_gemm(), a.flag_stride = 3;   /* 4 pieces a block */
    expect_gemm_bind(ctx, a, FG_ERR_BAD_SHAPE, NULL);
    a = good_gemm(), a.own = 2;
    expect_gemm_bind(ctx, a, FG_ERR_BAD_SHAPE, NULL);
    a = good_gemm(), a.limit_ns = 0;
    expect_gemm_bind(ctx, a, FG_ERR_BAD_SHAPE, "limit_ns");
    a = good_gemm(), a.limit_ns = 30000000000;
    expect_gemm_bind(ctx, a, FG_ERR_BAD_SHAPE, "limit_ns");
    a = good_gemm(), a.done_rows = 192;
    expect_gemm_bind(ctx, a, FG_ERR_BAD_SHAPE, "done_rows 192");
    a = good_gemm(), a.done_rows = 1536;   /* not dividing m 4096 */
    expect_gemm_bind(ctx, a, FG_ERR_BAD_SHAPE, "done_rows 1536");
    cr_assert_eq(F.maps, 0, "refused binds encode nothing");
    cr_assert_eq(F.loads, 0, "refused binds load nothing");
    fg_shutdown(ctx);
}

/* A backend without TMA (HIP's) refuses the bind with a status. */
Test(runtime_bind, overlap_gemm_needs_tensor_maps)
{
    fg_context *ctx = fake_ctx(SM90, gemm_reg, 1);
    F.base.ops = &fake_ops_no_tma;
    expect_gemm_bind(ctx, good_gemm(), FG_ERR_UNSUPPORTED_DEVICE, "tensor map");
    fg_shutdown(ctx);
}

Test(runtime_bind, overlap_reduce_guards)
{
    fg_context *ctx = fake_ctx(SM90, reduce_reg, 2);
    fg_overlap_reduce_args a = good_reduce();
    a.world = 4;   /* no instance for 4 ranks */
    expect_reduce_bind(ctx, a, FG_ERR_NO_MATCHING_INSTANCE);
    a = good_reduce(), a.rank = 2;
    expect_reduce_bind(ctx, a, FG_ERR_BAD_SHAPE);
    cr_assert(strstr(fg_last_error(), "rank 2 of world 2"), "%s", fg_last_error());
    a = good_reduce(), a.rank = -1;
    expect_reduce_bind(ctx, a, FG_ERR_BAD_SHAPE);
    a = good_reduce(), a.vecs = 0;
    expect_reduce_bind(ctx, a, FG_ERR_BAD_SHAPE);
    a = good_reduce(), a.recv = NULL;
    expect_reduce_bind(ctx, a, FG_ERR_NULL_POINTER);
    a = good_reduce(), a.out = DEV(0x3000000008);
    expect_reduce_bind(ctx, a, FG_ERR_MISALIGNED);
    a = good_reduce(), a.out = DEV(0x2000000000 + 16 * 1024);   /* recv's slot 1 */
    expect_reduce_bind(ctx, a, FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "not in-place"), "%s", fg_last_error());
    a = good_reduce(), a.out = (void *)a.own;
    expect_reduce_bind(ctx, a, FG_ERR_INVALID_ARGUMENT);
    a = good_reduce(), a.dtype = FG_REG_F16;   /* only bf16 instances here */
    expect_reduce_bind(ctx, a, FG_ERR_NO_MATCHING_INSTANCE);
    cr_assert_eq(F.loads, 0, "refused binds load nothing");
    fg_shutdown(ctx);
}

Test(runtime_bind, argument_checks)
{
    fg_context *ctx = fake_ctx(SM90, reg, nreg);
    fg_rmsnorm_args a;

    a = good_args(), a.x = NULL;
    expect_bind(ctx, a, FG_ERR_NULL_POINTER);
    cr_assert(strstr(fg_last_error(), "x is NULL"), "%s", fg_last_error());
    a = good_args(), a.weight = NULL;
    expect_bind(ctx, a, FG_ERR_NULL_POINTER);
    a = good_args(), a.y = NULL;
    expect_bind(ctx, a, FG_ERR_NULL_POINTER);
    a = good_args(), a.weight = DEV(0x2000000008);
    expect_bind(ctx, a, FG_ERR_MISALIGNED);
    cr_assert(strstr(fg_last_error(), "weight"), "%s", fg_last_error());
    a = good_args(), a.y = DEV(0x3000000002);
    expect_bind(ctx, a, FG_ERR_MISALIGNED);
    a = good_args(), a.rows = 0;
    expect_bind(ctx, a, FG_ERR_BAD_SHAPE);
    a = good_args(), a.rows = -3;
    expect_bind(ctx, a, FG_ERR_BAD_SHAPE);
    a = good_args(), a.rows = 100001; /* past the fake device's grid limit */
    expect_bind(ctx, a, FG_ERR_BAD_SHAPE);
    a = good_args(), a.rows = 1LL << 40; /* past the kernel's int rows */
    expect_bind(ctx, a, FG_ERR_BAD_SHAPE);
    a = good_args(), a.hidden = 0;
    expect_bind(ctx, a, FG_ERR_BAD_SHAPE);
    a = good_args(), a.eps = NAN;
    expect_bind(ctx, a, FG_ERR_INVALID_ARGUMENT);
    a = good_args(), a.y = (void *)a.x; /* in place */
    expect_bind(ctx, a, FG_ERR_INVALID_ARGUMENT);
    a = good_args(), a.y = DEV(0x1000000000 + 4096); /* overlaps x's second half */
    expect_bind(ctx, a, FG_ERR_INVALID_ARGUMENT);
    a = good_args(), a.dtype = (fg_reg_dtype)7;
    expect_bind(ctx, a, FG_ERR_INVALID_ARGUMENT);

    a = good_args();
    fg_binding *b;
    cr_assert_eq(fg_rmsnorm_bind(NULL, &a, &b), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fg_rmsnorm_bind(ctx, NULL, &b), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(fg_rmsnorm_bind(ctx, &a, NULL), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(F.loads, 0, "nothing is loaded for a refused call");
    fg_shutdown(ctx);
}

/* An instance named in the args is bound instead of the lookup's choice
 * (tuning times each block size of one hidden size), but only one that
 * serves the call. */
Test(runtime_bind, a_named_instance_is_bound)
{
    fg_context *ctx = fake_ctx(SM90, reg, nreg);
    fg_rmsnorm_args a = good_args();
    a.hidden = 4096;
    a.instance = "h4096_again";
    fg_binding *b = NULL;
    cr_assert_eq(fg_rmsnorm_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    fg_binding_info info;
    cr_assert_eq(fg_binding_get_info(b, &info), FG_OK);
    cr_assert_str_eq(info.entry->name, "h4096_again", "the lookup alone takes h4096");
    fg_binding_free(b);
    a.instance = "h1024";   /* in the registry, but not for hidden 4096 */
    expect_bind(ctx, a, FG_ERR_NO_MATCHING_INSTANCE);
    a.instance = "h8192";
    expect_bind(ctx, a, FG_ERR_NO_MATCHING_INSTANCE);
    cr_assert(strstr(fg_last_error(), "no instance named h8192"), "%s", fg_last_error());
    fg_shutdown(ctx);
}

Test(runtime_bind, dtype_and_shape_not_generated)
{
    fg_context *ctx = fake_ctx(SM90, reg + 3, nreg - 3); /* no generic entries */
    fg_rmsnorm_args a = good_args();
    a.dtype = FG_REG_BF16; /* only f16 has hidden 1024 */
    expect_bind(ctx, a, FG_ERR_NO_MATCHING_INSTANCE);
    a = good_args(), a.hidden = 2048;
    expect_bind(ctx, a, FG_ERR_NO_MATCHING_INSTANCE);
    cr_assert(strstr(fg_last_error(), "[2048]"), "%s", fg_last_error());
    fg_shutdown(ctx);
}

Test(runtime_bind, the_device_arch_picks_entries)
{
    fg_context *ctx = fake_ctx(FG_REG_ARCH_GFX942, reg, nreg);
    const long long h = 4096;
    const fg_kernel_entry *e;
    cr_assert_eq(fg_context_lookup(ctx, "rmsnorm", FG_REG_F16, &h, 1, &e), FG_OK);
    cr_assert_str_eq(e->name, "gfx_h4096");
    fg_rmsnorm_args a = good_args(); /* hidden 1024: sm_90a only */
    expect_bind(ctx, a, FG_ERR_NO_MATCHING_INSTANCE);
    fg_device_info info;
    cr_assert_eq(fg_device_get_info(ctx, &info), FG_OK);
    cr_assert_eq(info.arch, FG_REG_ARCH_GFX942);
    cr_assert_eq(fg_context_lookup(NULL, "rmsnorm", FG_REG_F16, &h, 1, &e),
                 FG_ERR_INVALID_ARGUMENT);
    fg_shutdown(ctx);
}

Test(runtime_bind, occupancy_is_checked_at_bind)
{
    fg_context *ctx = fake_ctx(SM90, reg, nreg);
    F.resident = 0;
    expect_bind(ctx, good_args(), FG_ERR_OCCUPANCY);
    fg_shutdown(ctx);
}

/* Launch features an entry can ask for: clusters, cooperative, smem. */
static fg_kernel_entry one(const char *name, unsigned cluster, bool coop, unsigned smem)
{
    fg_kernel_entry e = ENTRY(name, "rmsnorm", SM90, FG_REG_F16, .ndims = 1, .dims = {1024},
                              .nonportable_cluster = cluster > 8, .cooperative = coop,
                              .dynamic_smem = smem);
    e.cluster[0] = cluster;
    return e;
}

Test(runtime_bind, cluster_entry)
{
    fg_kernel_entry e[1] = {one("c16", 16, false, 0)};
    fg_context *ctx = fake_ctx(SM90, e, 1);
    F.resident = 7; /* clusters */
    fg_rmsnorm_args a = good_args();
    a.rows = 20;
    expect_bind(ctx, a, FG_ERR_BAD_SHAPE); /* 20 rows: no whole clusters of 16 */
    a.rows = 32;
    fg_binding *b;
    cr_assert_eq(fg_rmsnorm_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    cr_assert(F.nonportable, "the non-portable cluster size attribute is set");
    fg_binding_info info;
    fg_binding_get_info(b, &info);
    cr_assert_eq(info.resident_blocks, 7 * 16);
    cr_assert_eq(fg_launch(b, NULL), FG_OK);
    cr_assert_eq(F.cfg.cluster[0], 16);
    fg_binding_free(b);
    F.base.caps.clusters = false;
    expect_bind(ctx, a, FG_ERR_UNSUPPORTED_DEVICE);
    fg_shutdown(ctx);

    e[0].nonportable_cluster = 0; /* a generator bug: refused before the driver sees it */
    ctx = fake_ctx(SM90, e, 1);
    expect_bind(ctx, a, FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "nonportable_cluster"), "%s", fg_last_error());
    fg_shutdown(ctx);
}

Test(runtime_bind, cooperative_entry_must_fit_one_wave)
{
    fg_kernel_entry e[1] = {one("coop", 1, true, 0)};
    fg_context *ctx = fake_ctx(SM90, e, 1);
    F.resident = 1;
    fg_rmsnorm_args a = good_args();
    a.rows = 133; /* 132 SMs x 1 block */
    expect_bind(ctx, a, FG_ERR_OCCUPANCY);
    a.rows = 132;
    fg_binding *b;
    cr_assert_eq(fg_rmsnorm_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    cr_assert_eq(fg_launch(b, NULL), FG_OK);
    cr_assert(F.cfg.cooperative);
    fg_binding_free(b);
    fg_shutdown(ctx);
}

Test(runtime_bind, shared_memory_beyond_the_device)
{
    fg_kernel_entry e[1] = {one("big", 1, false, 300000)};
    fg_context *ctx = fake_ctx(SM90, e, 1);
    expect_bind(ctx, good_args(), FG_ERR_OCCUPANCY);
    fg_shutdown(ctx);
}

Test(runtime_bind, a_failed_load_is_reported_and_retried)
{
    fg_context *ctx = fake_ctx(SM90, reg, nreg);
    F.load_status = FG_ERR_DRIVER;
    expect_bind(ctx, good_args(), FG_ERR_DRIVER);
    F.load_status = FG_OK;
    fg_rmsnorm_args a = good_args();
    fg_binding *b;
    cr_assert_eq(fg_rmsnorm_bind(ctx, &a, &b), FG_OK);
    cr_assert_eq(F.loads, 1);
    fg_binding_free(b);
    fg_shutdown(ctx);
}

Test(runtime_bind, bad_registries)
{
    fg_kernel_entry e[1] = {one("noimage", 1, false, 0)};
    e[0].image = NULL;
    fg_context *ctx = fake_ctx(SM90, e, 1);
    expect_bind(ctx, good_args(), FG_ERR_INVALID_ARGUMENT);
    fg_shutdown(ctx);

    e[0].op = NULL;
    fg_context *none = (fg_context *)1;
    F = (fake){.base = {.ops = &fake_ops}};
    cr_assert_eq(fg_context_create(&F.base, NULL, e, 1, &none), FG_ERR_INVALID_ARGUMENT);
    cr_assert_eq(F.closes, 1, "the driver is closed when the context cannot be made");
}

/* An op whose kernel takes the binding's workspace and counters, on an
 * entry with a fixed grid: what later families (decode attention) need. */
static const fg_arg_desc ws_args[] = {
    {"x", FG_ARG_DEVPTR, offsetof(fg_rmsnorm_args, x), .align = 16},
    {"workspace", FG_ARG_WORKSPACE, .offset = 0},
    {"counters", FG_ARG_COUNTERS, .offset = 0},
    {"rows", FG_ARG_I32, offsetof(fg_rmsnorm_args, rows), .min = 1},
    {"eps", FG_ARG_F32, offsetof(fg_rmsnorm_args, eps), .min = 0},
};
static const fg_op_desc ws_op = {
    .op = "wsop", .dtype_offset = offsetof(fg_rmsnorm_args, dtype), .nkeys = 1,
    .key_offsets = {offsetof(fg_rmsnorm_args, hidden)},
    .rows_offset = offsetof(fg_rmsnorm_args, rows), .args = ws_args, .nargs = 5};

Test(runtime_bind, workspace_counters_and_fixed_grid)
{
    const fg_kernel_entry e[] = {
        ENTRY("ws", "wsop", SM90, FG_REG_F16, .ndims = 1, .dims = {1024},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {6, 2, 1}, .workspace_bytes = 100,
              .counter_count = 3),
    };
    fg_context *ctx = fake_ctx(SM90, e, 1);
    fg_rmsnorm_args a = good_args();
    fg_binding *b = NULL;
    cr_assert_eq(fg_bind_op(ctx, &ws_op, &a, &b), FG_OK, "%s", fg_last_error());
    fg_binding_info info;
    fg_binding_get_info(b, &info);
    cr_assert_eq(info.grid[0], 6);
    cr_assert_eq(info.grid[1], 2);
    cr_assert_eq(info.workspace_bytes, 112 + 3 * 4, "workspace rounded to 16 B, then counters");
    cr_assert_not_null(info.workspace);
    cr_assert_eq(F.allocs, 1);
    cr_assert_eq(F.zeros, 1, "zeroed once, at bind");
    cr_assert_eq(fg_launch(b, NULL), FG_OK);
    cr_assert_eq(fg_launch(b, NULL), FG_OK);
    cr_assert_eq(F.zeros, 1, "never on the launch path");
    cr_assert_eq(F.raw[0], a.x);
    cr_assert_not_null(F.raw[1]);
    cr_assert_eq((char *)F.raw[2], (char *)F.raw[1] + 112);
    cr_assert_eq(info.workspace, F.raw[1], "the info names the workspace the kernel gets");
    const unsigned char *ws = F.raw[1];
    for (size_t i = 0; i < info.workspace_bytes; i++)
        cr_assert_eq(ws[i], 0);
    fg_binding_free(b);
    cr_assert_eq(F.frees, 1, "the binding frees what it owns");
    fg_shutdown(ctx);
}

/* Every driver failure on the bind and launch paths becomes the status the
 * driver gave, leaks nothing, and leaves the context (and, after a failed
 * launch, the binding) usable once the failure is gone. */
Test(runtime_bind, driver_failures_are_statuses_and_leave_the_state_usable)
{
    const fg_kernel_entry e[] = {
        ENTRY("ws", "wsop", SM90, FG_REG_F16, .ndims = 1, .dims = {1024},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {6, 2, 1}, .workspace_bytes = 100,
              .counter_count = 3),
    };
    fg_rmsnorm_args a = good_args();
    /* each on a fresh context: a context loads and configures a module once */
    struct {
        fg_status *knob;
        fg_status injected;
        const char *what;
    } cases[] = {
        {&F.load_status, FG_ERR_DRIVER, "loading the module"},
        {&F.configure_status, FG_ERR_DRIVER, "configuring the kernel"},
        {&F.occupancy_status, FG_ERR_DRIVER, "the occupancy query"},
        {&F.alloc_status, FG_ERR_OUT_OF_MEMORY, "allocating the workspace"},
        {&F.zero_status, FG_ERR_DRIVER, "zeroing the workspace"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fg_context *ctx = fake_ctx(SM90, e, 1);
        *cases[i].knob = cases[i].injected;
        fg_binding *b = (fg_binding *)1;
        const fg_status st = fg_bind_op(ctx, &ws_op, &a, &b);
        cr_assert_eq(st, cases[i].injected, "%s: got %s (%s)", cases[i].what,
                     fg_status_string(st), fg_last_error());
        cr_assert(strstr(fg_last_error(), "fake"), "%s: %s", cases[i].what, fg_last_error());
        cr_assert_null(b, "%s: a failed bind clears *out", cases[i].what);
        cr_assert_eq(F.allocs, F.frees, "%s: the failed bind leaked device memory", cases[i].what);
        *cases[i].knob = FG_OK;
        cr_assert_eq(fg_bind_op(ctx, &ws_op, &a, &b), FG_OK, "%s: then %s", cases[i].what,
                     fg_last_error());
        fg_binding_free(b);
        fg_shutdown(ctx);
        cr_assert_eq(F.allocs, F.frees, "%s", cases[i].what);
        cr_assert_eq(F.loads, F.unloads, "%s: every loaded module unloaded", cases[i].what);
    }

    fg_context *ctx = fake_ctx(SM90, e, 1);
    fg_binding *b = NULL;
    cr_assert_eq(fg_bind_op(ctx, &ws_op, &a, &b), FG_OK, "%s", fg_last_error());
    F.launch_status = FG_ERR_DRIVER;
    cr_assert_eq(fg_launch(b, NULL), FG_ERR_DRIVER);
    cr_assert(strstr(fg_last_error(), "fake launch failed"), "%s", fg_last_error());
    F.launch_status = FG_OK;
    const int before = F.launches;
    cr_assert_eq(fg_launch(b, NULL), FG_OK, "the binding works again: %s", fg_last_error());
    cr_assert_eq(F.launches, before + 1);
    fg_binding_free(b);
    fg_shutdown(ctx);
    cr_assert_eq(F.allocs, F.frees);
    cr_assert_eq(F.loads, F.unloads, "every loaded module unloaded at shutdown");
}

/* fg_decode_attn_bind: kv_heads 0 means MHA and finds the instances keyed by
 * their heads; a GQA or sliding-window call finds only an instance emitted
 * for it; a negative window is a shape error, not a miss. */
Test(runtime_bind, decode_keys_kv_heads_and_window)
{
    /* fgrt.h's key order: hidden, heads, kv_heads, head_dim, max_context,
     * sliding_window, page_size, batch (a maximum), qkv_bias, rmsnorm, neox,
     * deterministic */
    const fg_kernel_entry e[] = {
        ENTRY("mha", "decode_attn", SM90, FG_REG_F16, .ndims = 12,
              .dims = {4096, 32, 32, 128, 4096, 0, 0, 4, 0, 1, 1, 0}, .match = {[7] = MAX},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {128, 1, 1}, .workspace_bytes = 64,
              .counter_count = 2),
        ENTRY("gqa_w4096", "decode_attn", SM90, FG_REG_F16, .ndims = 12,
              .dims = {4096, 32, 8, 128, 32768, 4096, 0, 4, 0, 1, 1, 0}, .match = {[7] = MAX},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {128, 1, 1}, .workspace_bytes = 64,
              .counter_count = 2),
        ENTRY("mha_p16", "decode_attn", SM90, FG_REG_F16, .ndims = 12,
              .dims = {4096, 32, 32, 128, 4096, 0, 16, 4, 0, 1, 1, 0}, .match = {[7] = MAX},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {128, 1, 1}, .workspace_bytes = 64,
              .counter_count = 2),
    };
    fg_context *ctx = fake_ctx(SM90, e, 3);
    fg_decode_attn_args a = {.dtype = FG_REG_F16, .hidden = 4096, .heads = 32, .head_dim = 128,
                             .max_context = 4096, .batch = 2, .rmsnorm = 1, .neox = 1,
                             .x = DEV(0x1000000000), .norm_w = DEV(0x2000000000),
                             .w_qkv = DEV(0x3000000000), .w_o = DEV(0x4000000000),
                             .k_cache = DEV(0x5000000000), .v_cache = DEV(0x6000000000),
                             .positions = DEV(0x7000000000), .y = DEV(0x8000000000),
                             .eps = 1e-5f};
    fg_binding *b = NULL;
    fg_binding_info info;
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_OK, "kv_heads 0: %s", fg_last_error());
    fg_binding_get_info(b, &info);
    cr_assert_str_eq(info.entry->name, "mha");
    fg_binding_free(b);
    a.kv_heads = 32;
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_OK, "kv_heads = heads: %s", fg_last_error());
    fg_binding_free(b);

    a.kv_heads = 8;   /* GQA at this shape: nothing emitted */
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_NO_MATCHING_INSTANCE);
    a.max_context = 32768, a.sliding_window = 4096;
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_OK, "GQA + window: %s", fg_last_error());
    fg_binding_get_info(b, &info);
    cr_assert_str_eq(info.entry->name, "gqa_w4096");
    fg_binding_free(b);
    a.sliding_window = 0;   /* full attention is another computation */
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_NO_MATCHING_INSTANCE);
    a.sliding_window = -1;
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_BAD_SHAPE);
    cr_assert(strstr(fg_last_error(), "0 (off) or positive"), "%s", fg_last_error());
    a.sliding_window = 0, a.kv_heads = -8;
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_BAD_SHAPE);

    /* paged caches: the page size is a key; the block table comes with it */
    a.kv_heads = 32, a.max_context = 4096, a.page_size = 16;
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_NULL_POINTER);
    cr_assert(strstr(fg_last_error(), "needs block_table"), "%s", fg_last_error());
    a.block_table = DEV(0x9000000000);
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_OK, "paged: %s", fg_last_error());
    fg_binding_get_info(b, &info);
    cr_assert_str_eq(info.entry->name, "mha_p16");
    fg_binding_free(b);
    a.page_size = 64;   /* another page size is another kernel */
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_NO_MATCHING_INSTANCE);
    a.page_size = 48;   /* 4096 is not whole pages of 48 */
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_BAD_SHAPE);
    a.page_size = 0;    /* a table with contiguous caches is a mistake, not ignored */
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "contiguous"), "%s", fg_last_error());
    a.block_table = DEV(0x9000000002);   /* int32 entries */
    a.page_size = 16;
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_MISALIGNED);

    /* biases: a key flag, and the pointer comes with it */
    a.block_table = NULL, a.page_size = 0;
    a.b_qkv = DEV(0xa000000000);
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "qkv_bias 0 with b_qkv set"), "%s", fg_last_error());
    a.qkv_bias = 1;   /* no biased instance emitted at this shape */
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_NO_MATCHING_INSTANCE);
    a.b_qkv = NULL;
    cr_assert_eq(fg_decode_attn_bind(ctx, &a, &b), FG_ERR_NULL_POINTER);
    cr_assert_eq(fg_decode_attn_bind(ctx, NULL, &b), FG_ERR_INVALID_ARGUMENT);
    fg_shutdown(ctx);
    cr_assert_eq(F.allocs, F.frees);
}

/* mla_decode: the six keys (heads, kv_lora, rope_dim, max_context,
 * page_size, batch as a maximum), the block table with pages only, a
 * positive scale, aligned pointers, and its workspace and counters. */
Test(runtime_bind, mla_decode_arguments)
{
    const fg_kernel_entry e[] = {
        ENTRY("mla", "mla_decode", SM90, FG_REG_BF16, .ndims = 6,
              .dims = {16, 512, 64, 16384, 0, 16}, .match = {[5] = MAX},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {8, 1, 16}, .workspace_bytes = 4096,
              .counter_count = 32),
        ENTRY("mla_p64", "mla_decode", SM90, FG_REG_BF16, .ndims = 6,
              .dims = {16, 512, 64, 16384, 64, 16}, .match = {[5] = MAX},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {8, 1, 16}),
    };
    fg_context *ctx = fake_ctx(SM90, e, 2);
    fg_mla_decode_args a = {.dtype = FG_REG_BF16, .heads = 16, .kv_lora = 512, .rope_dim = 64,
                            .max_context = 16384, .batch = 4, .q = DEV(0x1000000000),
                            .cache = DEV(0x2000000000), .lengths = DEV(0x3000000000),
                            .out = DEV(0x4000000000), .lse = DEV(0x5000000000), .scale = 0.1f};
    fg_binding *b = NULL;
    fg_binding_info info;
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    fg_binding_get_info(b, &info);
    cr_assert_str_eq(info.entry->name, "mla");
    cr_assert_eq(info.workspace_bytes, 4096 + 32 * 4, "the merge's workspace, then its tickets");
    /* the cache in boxes of 8 whole rows (the mma form's tiles) and of 64
     * rows x 64 columns (the wgmma form's chunks): the contiguous requests' rows */
    cr_assert_eq(F.maps, 2);
    const long long contiguous[2][4] = {{4 * 16384, 576, 8, 0}, {4 * 16384, 576, 64, 64}};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(F.map_dims[i][j], contiguous[i][j], "map %d, figure %d", i, j);
    cr_assert_eq(fg_launch(b, NULL), FG_OK, "%s", fg_last_error());
    /* (the fake map begins with its base) */
    cr_assert_eq(memcmp(F.params[2], &a.cache, sizeof a.cache), 0, "the maps after q and cache");
    cr_assert_eq(memcmp(F.params[3], &a.cache, sizeof a.cache), 0, "the maps after q and cache");
    cr_assert_eq(memcmp(F.params[5], &a.lengths, sizeof a.lengths), 0, "then the table, lengths");
    fg_binding_free(b);
    a.batch = 17;   /* past B_max */
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_ERR_NO_MATCHING_INSTANCE);
    a.batch = 0;
    cr_assert_neq(fg_mla_decode_bind(ctx, &a, &b), FG_OK);
    a.batch = 4, a.kv_lora = 256;   /* another width is another kernel */
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_ERR_NO_MATCHING_INSTANCE);
    a.kv_lora = 512;
    const float scales[] = {0.f, -0.1f};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
        a.scale = scales[i];
        cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_ERR_INVALID_ARGUMENT, "scale %g",
                     (double)scales[i]);
        cr_assert(strstr(fg_last_error(), "expected above 0"), "%s", fg_last_error());
    }
    a.scale = NAN;
    cr_assert_neq(fg_mla_decode_bind(ctx, &a, &b), FG_OK);
    cr_assert(strstr(fg_last_error(), "scale is not finite"), "%s", fg_last_error());
    a.scale = 0.1f;
    a.out = DEV(0x4000000008);   /* 16-byte rows */
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_ERR_MISALIGNED);
    a.out = NULL;
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_ERR_NULL_POINTER);
    a.out = DEV(0x4000000000);
    /* pages: the table comes with them, and only with them */
    a.page_size = 64;
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_ERR_NULL_POINTER);
    cr_assert(strstr(fg_last_error(), "mla_decode: page_size 64 needs block_table"), "%s",
              fg_last_error());
    a.block_table = DEV(0x6000000000);
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_OK, "paged: %s", fg_last_error());
    fg_binding_get_info(b, &info);
    cr_assert_str_eq(info.entry->name, "mla_p64");
    fg_binding_free(b);
    /* paged: every row a 32-bit page coordinate reaches */
    cr_assert_eq(F.maps, 4);
    cr_assert_eq(F.map_dims[2][0], INT32_MAX);
    cr_assert_eq(F.map_dims[3][0], INT32_MAX);
    a.page_size = 48;   /* 16384 is not whole pages of 48 */
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_ERR_BAD_SHAPE);
    a.page_size = 0;
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "contiguous cache"), "%s", fg_last_error());
    fg_shutdown(ctx);
    cr_assert_eq(F.allocs, F.frees);
}

/* On a backend without TMA (HIP's) mla_decode's cache_map and cache_chunks
 * are zeros: only the sm_90a form reads them. */
Test(runtime_bind, mla_decode_map_without_tma)
{
    const fg_kernel_entry e[] = {
        ENTRY("mla", "mla_decode", SM90, FG_REG_BF16, .ndims = 6,
              .dims = {16, 512, 64, 16384, 0, 16}, .match = {[5] = MAX},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {8, 1, 16}),
    };
    fg_context *ctx = fake_ctx(SM90, e, 1);
    F.base.ops = &fake_ops_no_tma;
    fg_mla_decode_args a = {.dtype = FG_REG_BF16, .heads = 16, .kv_lora = 512, .rope_dim = 64,
                            .max_context = 16384, .batch = 4, .q = DEV(0x1000000000),
                            .cache = DEV(0x2000000000), .lengths = DEV(0x3000000000),
                            .out = DEV(0x4000000000), .lse = DEV(0x5000000000), .scale = 0.1f};
    fg_binding *b = NULL;
    cr_assert_eq(fg_mla_decode_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    cr_assert_eq(fg_launch(b, NULL), FG_OK, "%s", fg_last_error());
    const unsigned char zeros[128] = {0};
    cr_assert_eq(memcmp(F.params[2], zeros, sizeof zeros), 0, "maps of zeros");
    cr_assert_eq(memcmp(F.params[3], zeros, sizeof zeros), 0, "maps of zeros");
    fg_binding_free(b);
    fg_shutdown(ctx);
}

/* mla_block: eight keys (q_lora and page_size may be 0), the q path's
 * weights and no others, the block table with pages only, positive scale
 * and eps, a cooperative launch with its workspace and counters. */
Test(runtime_bind, mla_block_arguments)
{
    const fg_kernel_entry e[] = {
        ENTRY("blk", "mla_block", SM90, FG_REG_BF16, .ndims = 11,
              .dims = {2048, 16, 0, 512, 64, 128, 128, 2048, 16384, 64, 16}, .match = {[10] = MAX},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {132, 1, 1}, .cooperative = true,
              .workspace_bytes = 8192, .counter_count = 2),
        ENTRY("blk_q", "mla_block", SM90, FG_REG_BF16, .ndims = 11,
              .dims = {7168, 16, 1536, 512, 64, 128, 128, 16384, 16384, 64, 16}, .match = {[10] = MAX},
              .grid_rule = FG_REG_GRID_FIXED, .grid = {132, 1, 1}, .cooperative = true),
    };
    fg_context *ctx = fake_ctx(SM90, e, 2);
    fg_mla_block_args a = {.dtype = FG_REG_BF16, .hidden = 2048, .heads = 16, .kv_lora = 512,
                           .rope_dim = 64, .nope_dim = 128, .v_dim = 128, .w_o_ld = 2048,
                           .max_context = 16384, .page_size = 64, .batch = 1,
                           .x = DEV(0x1000000000), .w_q = DEV(0x2000000000),
                           .w_kv_a = DEV(0x3000000000), .kv_a_norm = DEV(0x4000000000),
                           .w_kv_b = DEV(0x5000000000), .w_o = DEV(0x6000000000),
                           .cache = DEV(0x7000000000), .block_table = DEV(0x8000000000),
                           .positions = DEV(0x9000000000), .y = DEV(0xa000000000),
                           .eps = 1e-6f, .scale = 0.1f};
    fg_binding *b = NULL;
    fg_binding_info info;
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_OK, "%s", fg_last_error());
    fg_binding_get_info(b, &info);
    cr_assert_str_eq(info.entry->name, "blk");
    cr_assert_eq(info.workspace_bytes, 8192 + 2 * 4, "the phases' workspace, then the barrier's");
    fg_binding_free(b);
    /* the q path: w_q without q_lora, the three q_lora weights with it */
    a.w_q_a = DEV(0xb000000000);
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "mla_block: q_lora 0 takes w_q only"), "%s", fg_last_error());
    a.w_q_a = NULL, a.w_q = NULL;
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_ERR_NULL_POINTER);
    a.hidden = 7168, a.q_lora = 1536, a.w_o_ld = 16384;   /* V3 at TP=8: all 128 heads' columns */
    a.w_q_a = DEV(0xb000000000), a.q_a_norm = DEV(0xc000000000);
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_ERR_NULL_POINTER, "w_q_b missing");
    cr_assert(strstr(fg_last_error(), "needs w_q_a, q_a_norm and w_q_b"), "%s", fg_last_error());
    a.w_q_b = DEV(0xd000000000);
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_OK, "q_lora: %s", fg_last_error());
    fg_binding_get_info(b, &info);
    cr_assert_str_eq(info.entry->name, "blk_q");
    fg_binding_free(b);
    /* pages, eps and scale */
    a.block_table = NULL;
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_ERR_NULL_POINTER);
    a.block_table = DEV(0x8000000000), a.eps = 0.f;
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_ERR_INVALID_ARGUMENT);
    a.eps = 1e-6f, a.w_o_ld = 2048;   /* another W_o row length is another kernel */
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_ERR_NO_MATCHING_INSTANCE);
    a.w_o_ld = 16384, a.y = DEV(0x1000000800);   /* y over x */
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(fg_last_error(), "y overlaps x"), "%s", fg_last_error());
    a.y = DEV(0xa000000000), a.batch = 17;   /* past B_max */
    cr_assert_eq(fg_mla_block_bind(ctx, &a, &b), FG_ERR_NO_MATCHING_INSTANCE);
    fg_shutdown(ctx);
    cr_assert_eq(F.allocs, F.frees);
}

Test(runtime_helpers, memory)
{
    fg_context *ctx = fake_ctx(SM90, reg, nreg);
    void *p = NULL;
    cr_assert_eq(fg_mem_alloc(ctx, 16, &p), FG_OK);
    cr_assert_not_null(p);
    const char in[16] = "fusegen", *none = NULL;
    char out[16] = "";
    cr_assert_eq(fg_memcpy_to_device(ctx, p, in, sizeof in), FG_OK);
    cr_assert_eq(fg_memcpy_to_host(ctx, out, p, sizeof out), FG_OK);
    cr_assert_str_eq(out, "fusegen");
    cr_assert_eq(fg_memcpy_to_host(ctx, out, none, sizeof out), FG_ERR_NULL_POINTER);
    cr_assert_eq(fg_memcpy_to_host(ctx, NULL, NULL, 0), FG_OK);
    cr_assert_eq(fg_mem_free(ctx, p), FG_OK);
    cr_assert_eq(fg_mem_free(ctx, NULL), FG_OK);
    cr_assert_eq(fg_mem_alloc(ctx, 0, &p), FG_ERR_INVALID_ARGUMENT);
    cr_assert_null(p);
    cr_assert_eq(fg_synchronize(ctx, NULL), FG_OK);
    cr_assert_eq(fg_make_current(ctx), FG_OK);
    cr_assert_null(fg_driver_symbol(ctx, "cuStreamCreate"));
    cr_assert_eq(F.allocs, 1);
    cr_assert_eq(F.frees, 1);
    fg_shutdown(ctx);
}
