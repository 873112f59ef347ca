/* Bind once, launch many: the generic part of every op.  Binding checks
 * the arguments against the op table, finds the instance, gets its loaded
 * kernel, checks occupancy and stores the kernel parameters, so fg_launch()
 * only hands them to the driver. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef union fg_param_value {
    void *p;
    int32_t i;
    float f;
    uint64_t u64;
    _Alignas(64) unsigned char map[128];   /* a TMA tensor map (CUtensorMap) */
} fg_param_value;

struct fg_binding {
    fg_context *ctx;
    const fg_kernel_entry *entry;
    void *fn;
    fg_launch_cfg cfg;
    long long resident_blocks, waves;
    void *workspace;
    size_t workspace_bytes;
    fg_param_value values[FG_MAX_KERNEL_ARGS];
    void *params[FG_MAX_KERNEL_ARGS];   /* params[i] = &values[i], as the driver wants */
};

static const void *field(const void *args, size_t offset)
{
    return (const char *)args + offset;
}

static long long ll_field(const void *args, size_t offset)
{
    long long v;
    memcpy(&v, field(args, offset), sizeof v);
    return v;
}

/* The table's guards: pointers present and aligned, integers in range,
 * floats finite.  Values are converted into `vals` in kernel order. */
static fg_status check_args(const fg_op_desc *op, const void *args, fg_param_value *vals)
{
    for (unsigned i = 0; i < op->nargs; i++) {
        const fg_arg_desc *a = &op->args[i];
        switch (a->kind) {
        case FG_ARG_DEVPTR: {
            void *p;
            memcpy(&p, field(args, a->offset), sizeof p);
            if (!p && !a->nullable)
                return fg_fail(FG_ERR_NULL_POINTER, "%s: %s is NULL", op->op, a->name);
            if ((uintptr_t)p % a->align)
                return fg_fail(FG_ERR_MISALIGNED, "%s: %s = %p is not %u-byte aligned", op->op,
                               a->name, p, a->align);
            vals[i].p = p;
            break;
        }
        case FG_ARG_I32: {
            const long long v = ll_field(args, a->offset);
            if (v < a->min || v > INT32_MAX)
                return fg_fail(FG_ERR_BAD_SHAPE, "%s: %s = %lld; expected %lld..%d", op->op,
                               a->name, v, a->min, INT32_MAX);
            vals[i].i = (int32_t)v;
            break;
        }
        case FG_ARG_F32: {
            float v;
            memcpy(&v, field(args, a->offset), sizeof v);
            if (!isfinite(v))
                return fg_fail(FG_ERR_INVALID_ARGUMENT, "%s: %s is not finite", op->op, a->name);
            vals[i].f = v;
            break;
        }
        case FG_ARG_U64: {
            const long long v = ll_field(args, a->offset);
            if (v < a->min)
                return fg_fail(FG_ERR_BAD_SHAPE, "%s: %s = %lld; expected at least %lld", op->op,
                               a->name, v, a->min);
            vals[i].u64 = (uint64_t)v;
            break;
        }
        case FG_ARG_TENSOR_MAP: {
            const void *p;
            memcpy(&p, field(args, a->offset), sizeof p);
            if (!p)
                return fg_fail(FG_ERR_NULL_POINTER, "%s: %s is NULL", op->op, a->name);
            if ((uintptr_t)p % 16)   /* TMA's global address */
                return fg_fail(FG_ERR_MISALIGNED, "%s: %s = %p is not 16-byte aligned", op->op,
                               a->name, p);
            break;   /* encoded once the device is known (encode_maps) */
        }
        case FG_ARG_WORKSPACE:
        case FG_ARG_COUNTERS:
            break; /* filled once the workspace exists */
        }
    }
    return FG_OK;
}

/* The op's tensor maps, through the driver (which checks what TMA allows:
 * the row pitch a multiple of 16 bytes, dims under 2^32). */
static fg_status encode_maps(fg_context *ctx, const fg_op_desc *op, const void *args,
                             fg_reg_dtype dtype, fg_param_value *vals)
{
    fg_driver *d = ctx->drv;
    for (unsigned i = 0; i < op->nargs; i++) {
        const fg_arg_desc *a = &op->args[i];
        if (a->kind != FG_ARG_TENSOR_MAP)
            continue;
        if (!d->ops->tensor_map && a->optional_map) {
            memset(vals[i].map, 0, sizeof vals[i].map);
            continue;
        }
        if (!d->ops->tensor_map)
            return fg_fail(FG_ERR_UNSUPPORTED_DEVICE, "%s: %s is a TMA tensor map; this "
                           "device's backend has none", op->op, a->name);
        const void *p;
        memcpy(&p, field(args, a->offset), sizeof p);
        long long rows, cols;
        if (a->map_shape)
            a->map_shape(args, &rows, &cols);
        else
            rows = ll_field(args, a->rows_offset), cols = ll_field(args, a->cols_offset);
        const fg_status s = d->ops->tensor_map(d, vals[i].map, dtype, p, rows, cols, a->box_rows,
                                               a->box_cols);
        if (s != FG_OK)
            return s;
    }
    return FG_OK;
}

static unsigned at_least_1(unsigned v)
{
    return v ? v : 1;
}

/* Launch shape from the entry and the call; checked against the device. */
static fg_status launch_shape(const fg_context *ctx, const fg_op_desc *op, const void *args,
                              const fg_kernel_entry *e, fg_launch_cfg *c)
{
    const fg_device_caps *caps = &ctx->drv->caps;
    *c = (fg_launch_cfg){.smem = e->dynamic_smem, .cooperative = e->cooperative};
    for (int k = 0; k < 3; k++) {
        c->block[k] = at_least_1(e->block[k]);
        c->cluster[k] = at_least_1(e->cluster[k]);
        c->grid[k] = 1;
    }
    switch (e->grid_rule) {
    case FG_REG_GRID_ROWS: {
        const long long rows = ll_field(args, op->rows_offset);
        if (rows < 1 || rows > caps->max_grid_x)
            return fg_fail(FG_ERR_BAD_SHAPE, "%s: rows = %lld; one block per row allows 1..%lld",
                           op->op, rows, caps->max_grid_x);
        c->grid[0] = (unsigned)rows;
        break;
    }
    case FG_REG_GRID_FIXED:
        for (int k = 0; k < 3; k++)
            c->grid[k] = at_least_1(e->grid[k]);
        if (c->grid[0] > caps->max_grid_x)
            return fg_fail(FG_ERR_BAD_SHAPE, "%s: entry %s has grid.x %u; the device allows %lld",
                           op->op, e->name, c->grid[0], caps->max_grid_x);
        break;
    default:
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "%s: entry %s has grid rule %d, unknown here",
                       op->op, e->name, (int)e->grid_rule);
    }
    for (int k = 0; k < 3; k++)
        if (c->grid[k] % c->cluster[k])
            return fg_fail(FG_ERR_BAD_SHAPE, "%s: grid %u is not a multiple of cluster %u (dim %d)",
                           op->op, c->grid[k], c->cluster[k], k);
    const unsigned csize = c->cluster[0] * c->cluster[1] * c->cluster[2];
    if (csize > 8 && !e->nonportable_cluster) /* else the driver's error would be obscure */
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "%s: registry entry %s has a cluster of %u "
                       "without nonportable_cluster (8 is the portable maximum)", op->op,
                       e->name, csize);
    if (fg_cfg_has_cluster(c) && !caps->clusters)
        return fg_fail(FG_ERR_UNSUPPORTED_DEVICE, "%s: %s needs thread-block clusters", op->op,
                       e->name);
    if (c->cooperative && !caps->cooperative)
        return fg_fail(FG_ERR_UNSUPPORTED_DEVICE, "%s: %s needs a cooperative launch", op->op,
                       e->name);
    if (c->smem > caps->info.max_dynamic_smem)
        return fg_fail(FG_ERR_OCCUPANCY, "%s: %s needs %u B of dynamic shared memory; the device "
                       "allows %zu", op->op, e->name, c->smem, caps->info.max_dynamic_smem);
    return FG_OK;
}

/* A launch that cannot be resident fails here with a status rather than at
 * launch; a cooperative one must also fit in a single wave. */
static fg_status check_occupancy(fg_context *ctx, const fg_kernel_entry *e, void *fn,
                                 fg_binding *b)
{
    const fg_launch_cfg *c = &b->cfg;
    int resident = 0;
    fg_status s = ctx->drv->ops->occupancy(ctx->drv, fn, c, &resident);
    if (s != FG_OK)
        return s;
    const long long csize = (long long)c->cluster[0] * c->cluster[1] * c->cluster[2];
    const long long capacity = fg_cfg_has_cluster(c)
                                   ? resident * csize
                                   : (long long)resident * ctx->drv->caps.info.compute_units;
    if (capacity <= 0)
        return fg_fail(FG_ERR_OCCUPANCY, "%s cannot be resident: %u threads, %u B dynamic shared "
                       "memory, cluster of %lld", e->name,
                       c->block[0] * c->block[1] * c->block[2], c->smem, csize);
    const long long blocks = (long long)c->grid[0] * c->grid[1] * c->grid[2];
    if (c->cooperative && blocks > capacity)
        return fg_fail(FG_ERR_OCCUPANCY, "%s: a cooperative launch of %lld blocks needs them all "
                       "resident; the device holds %lld", e->name, blocks, capacity);
    b->resident_blocks = capacity;
    b->waves = (blocks + capacity - 1) / capacity;
    return FG_OK;
}

/* Where the entry's arrival counters start in its workspace allocation:
 * after the workspace, 16-byte aligned. */
static size_t counters_offset(const fg_kernel_entry *e)
{
    return ((size_t)e->workspace_bytes + 15) / 16 * 16;
}
/* The entry's workspace and arrival counters, in one allocation.  Zeroed
 * here, once: the kernels leave them as the next launch needs them
 * (fg_registry.h), so the launch path never clears. */
static fg_status make_workspace(fg_context *ctx, const fg_op_desc *op, fg_binding *b)
{
    const size_t ws = counters_offset(b->entry);
    b->workspace_bytes = ws + (size_t)b->entry->counter_count * sizeof(uint32_t);
    if (b->workspace_bytes) {
        fg_driver *d = ctx->drv;
        fg_status s = d->ops->alloc(d, b->workspace_bytes, &b->workspace);
        if (s == FG_OK)
            s = d->ops->zero(d, b->workspace, b->workspace_bytes);
        if (s != FG_OK)
            return s;
    }
    for (unsigned i = 0; i < op->nargs; i++) {
        if (op->args[i].kind == FG_ARG_WORKSPACE)
            b->values[i].p = b->entry->workspace_bytes ? b->workspace : NULL;
        else if (op->args[i].kind == FG_ARG_COUNTERS)
            b->values[i].p = b->entry->counter_count ? (char *)b->workspace + ws : NULL;
    }
    return FG_OK;
}

/* The lookup's choice, or the instance the args name (tests, tuning), which
 * must serve the call just as a looked-up one would. */
static fg_status find_entry(const fg_context *ctx, const fg_op_desc *op, const void *args,
                            fg_reg_dtype dtype, const long long *keys,
                            const fg_kernel_entry **e)
{
    const char *name = NULL;
    if (op->instance_offset)
        memcpy(&name, field(args, op->instance_offset), sizeof name);
    if (!name)
        return fg_context_lookup(ctx, op->op, dtype, keys, op->nkeys, e);
    for (size_t i = 0; i < ctx->count; i++)
        if (strcmp(ctx->registry[i].name, name) == 0)
            return fg_lookup(&ctx->registry[i], 1, ctx->drv->caps.info.arch, NULL, op->op, dtype,
                             keys, op->nkeys, e);
    return fg_fail(FG_ERR_NO_MATCHING_INSTANCE, "%s: no instance named %s in the registry",
                   op->op, name);
}

fg_status fg_bind_op(fg_context *ctx, const fg_op_desc *op, const void *args, fg_binding **out)
{
    if (out)
        *out = NULL;
    if (!ctx || !args || !out)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "%s bind: NULL context, args or out", op->op);
    if (op->nargs > FG_MAX_KERNEL_ARGS || op->nkeys > FG_REG_MAX_DIMS)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "%s: op table too large", op->op);
    fg_reg_dtype dtype;
    memcpy(&dtype, field(args, op->dtype_offset), sizeof dtype);
    if (!fg_reg_dtype_bytes(dtype))
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "%s: dtype %d is not an fg_reg_dtype", op->op,
                       (int)dtype);
    long long keys[FG_REG_MAX_DIMS];
    for (unsigned k = 0; k < op->nkeys; k++) {
        keys[k] = ll_field(args, op->key_offsets[k]);
        if (keys[k] == 0 && op->zero_default_offsets[k])
            keys[k] = ll_field(args, op->zero_default_offsets[k]);
        const bool flag = k >= op->nkeys - op->nflags;
        const bool optional = op->optional_mask >> k & 1;
        if (flag ? (keys[k] != 0 && keys[k] != 1) : keys[k] < (optional ? 0 : 1))
            return fg_fail(FG_ERR_BAD_SHAPE, "%s: key %u is %lld; %s", op->op, k, keys[k],
                           flag       ? "flags are 0 or 1"
                           : optional ? "it must be 0 (off) or positive"
                                      : "dims must be positive");
    }
    fg_param_value vals[FG_MAX_KERNEL_ARGS] = {0};
    fg_status s = check_args(op, args, vals);
    if (s == FG_OK && op->check)
        s = op->check(args);
    const fg_kernel_entry *e = NULL;
    if (s == FG_OK)
        s = find_entry(ctx, op, args, dtype, keys, &e);
    fg_launch_cfg cfg;
    if (s == FG_OK)
        s = launch_shape(ctx, op, args, e, &cfg);
    if (s == FG_OK)
        s = encode_maps(ctx, op, args, dtype, vals);
    void *fn = NULL;
    if (s == FG_OK)
        s = fg_context_function(ctx, e, &cfg, &fn);
    if (s != FG_OK)
        return s;

    fg_binding *b = calloc(1, sizeof *b);
    if (!b)
        return fg_fail(FG_ERR_OUT_OF_MEMORY, "%s bind: out of host memory", op->op);
    *b = (fg_binding){.ctx = ctx, .entry = e, .fn = fn, .cfg = cfg};
    memcpy(b->values, vals, sizeof vals);
    for (unsigned i = 0; i < FG_MAX_KERNEL_ARGS; i++)
        b->params[i] = &b->values[i];
    s = check_occupancy(ctx, e, fn, b);
    if (s == FG_OK)
        s = make_workspace(ctx, op, b);
    if (s != FG_OK) {
        fg_binding_free(b);
        return s;
    }
    *out = b;
    return FG_OK;
}

fg_status fg_launch(fg_binding *b, void *stream)
{
    if (!b)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_launch: NULL binding");
    fg_driver *d = b->ctx->drv;
    return d->ops->launch(d, b->fn, &b->cfg, stream, b->params);
}

void fg_binding_free(fg_binding *b)
{
    if (!b)
        return;
    if (b->workspace)
        b->ctx->drv->ops->free(b->ctx->drv, b->workspace);
    free(b);
}

fg_status fg_binding_get_info(const fg_binding *b, fg_binding_info *out)
{
    if (!b || !out)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_binding_get_info: NULL binding or out");
    *out = (fg_binding_info){.entry = b->entry,
                             .dynamic_smem = b->cfg.smem,
                             .resident_blocks = b->resident_blocks,
                             .waves = b->waves,
                             .workspace_bytes = b->workspace_bytes,
                             .workspace = b->workspace,
                             .counters = b->entry->counter_count
                                             ? (char *)b->workspace + counters_offset(b->entry)
                                             : NULL};
    memcpy(out->grid, b->cfg.grid, sizeof out->grid);
    memcpy(out->block, b->cfg.block, sizeof out->block);
    memcpy(out->cluster, b->cfg.cluster, sizeof out->cluster);
    return FG_OK;
}
