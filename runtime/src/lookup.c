/* Registry lookup: which generated instance serves a call.  Pure: no device. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* A zero key is served only by an exact zero (a flag that is off): bounds,
 * tiles and run-time dims are shapes, which are positive. */
static bool dim_serves(fg_reg_dim_match m, long long have, long long want)
{
    switch (m) {
    case FG_REG_MATCH_EXACT: return want == have;
    case FG_REG_MATCH_MAX: return want > 0 && want <= have;
    case FG_REG_MATCH_MULTIPLE: return want > 0 && have > 0 && want % have == 0;
    case FG_REG_MATCH_ANY: return want > 0;
    }
    return false; /* a guard this runtime does not know never serves */
}

static bool serves(const fg_kernel_entry *e, fg_reg_arch arch, const char *op,
                   fg_reg_dtype dtype, const long long *dims, unsigned ndims)
{
    if (!e->op || strcmp(e->op, op) != 0 || e->arch != arch || e->dtype != dtype ||
        e->ndims != ndims)
        return false;
    for (unsigned k = 0; k < ndims; k++)
        if (!dim_serves(e->match[k], e->dims[k], dims[k]))
            return false;
    return true;
}

static bool planned_for(const fg_kernel_entry *e, const char *target)
{
    if (!target || !*target)
        return false;
    for (unsigned i = 0; i < e->ntargets && i < FG_REG_MAX_TARGETS; i++)
        if (e->targets[i].name && strcmp(e->targets[i].name, target) == 0)
            return true;
    return false;
}

/* Negative when a is preferred to b: more exact dims, then per dim the
 * stricter guard (exact, max, multiple, any), then the tighter bound, then
 * one planned for the device's target, then the higher priority (variants
 * of one shape, e.g. cluster sizes), then a tuned entry (a tuning spec's
 * configuration over the planner's). */
static int compare_specialization(const fg_kernel_entry *a, const fg_kernel_entry *b,
                                  const char *target)
{
    int exact_a = 0, exact_b = 0;
    for (unsigned k = 0; k < a->ndims; k++) {
        exact_a += a->match[k] == FG_REG_MATCH_EXACT;
        exact_b += b->match[k] == FG_REG_MATCH_EXACT;
    }
    if (exact_a != exact_b)
        return exact_b - exact_a;
    for (unsigned k = 0; k < a->ndims; k++) {
        if (a->match[k] != b->match[k])
            return (int)a->match[k] - (int)b->match[k];
        if (a->dims[k] == b->dims[k])
            continue;
        if (a->match[k] == FG_REG_MATCH_MAX)           /* the smaller maximum */
            return a->dims[k] < b->dims[k] ? -1 : 1;
        if (a->match[k] == FG_REG_MATCH_MULTIPLE)      /* the larger tile */
            return a->dims[k] > b->dims[k] ? -1 : 1;
    }
    const bool for_a = planned_for(a, target), for_b = planned_for(b, target);
    if (for_a != for_b)
        return for_a ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return (int)(b->tuned != 0) - (int)(a->tuned != 0);
}

static void append_dims(char *buf, size_t n, const long long *dims, unsigned ndims)
{
    size_t len = strlen(buf);
    for (unsigned k = 0; k < ndims && len < n; k++) {
        snprintf(buf + len, n - len, "%s%lld", k ? ", " : "[", dims[k]);
        len += strlen(buf + len);
    }
    if (len < n)
        snprintf(buf + len, n - len, "%s", ndims ? "]" : "[]");
}

/* Says what was asked for and what the registry has for the op on the arch,
 * so a missing instance is easy to add to the spec. */
static fg_status no_match(const fg_kernel_entry *reg, size_t n, fg_reg_arch arch, const char *op,
                          fg_reg_dtype dtype, const long long *dims, unsigned ndims)
{
    char want[128] = "", have[320] = "";
    append_dims(want, sizeof want, dims, ndims);
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        const fg_kernel_entry *e = &reg[i];
        if (!e->op || strcmp(e->op, op) != 0 || e->arch != arch || e->ndims > FG_REG_MAX_DIMS)
            continue;
        size_t len = strlen(have);
        if (len + 1 >= sizeof have)
            break;
        snprintf(have + len, sizeof have - len, "%s%s ", found++ ? ", " : "",
                 fg_reg_dtype_name(e->dtype));
        append_dims(have, sizeof have, e->dims, e->ndims);
    }
    return fg_fail(FG_ERR_NO_MATCHING_INSTANCE,
                   "no %s instance for %s %s %s; the registry has for %s on %s: %s", op,
                   fg_reg_arch_name(arch), fg_reg_dtype_name(dtype), want, op,
                   fg_reg_arch_name(arch), found ? have : "none");
}

fg_status fg_lookup(const fg_kernel_entry *reg, size_t n, fg_reg_arch arch, const char *target,
                    const char *op, fg_reg_dtype dtype, const long long *dims, unsigned ndims,
                    const fg_kernel_entry **out)
{
    if (out)
        *out = NULL;
    if (!out || !op || (!reg && n) || (!dims && ndims) || ndims > FG_REG_MAX_DIMS)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_lookup: NULL out, op, registry or dims, or "
                                                "more than %d dims", FG_REG_MAX_DIMS);
    /* Keys are shapes (positive, checked by each op's bind) or 0/1 flags. */
    for (unsigned k = 0; k < ndims; k++)
        if (dims[k] < 0)
            return fg_fail(FG_ERR_BAD_SHAPE, "%s: key %u is %lld; keys are not negative", op, k,
                           dims[k]);
    const fg_kernel_entry *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (serves(&reg[i], arch, op, dtype, dims, ndims) &&
            (!best || compare_specialization(&reg[i], best, target) < 0))
            best = &reg[i];
    if (!best)
        return no_match(reg, n, arch, op, dtype, dims, ndims);
    *out = best;
    return FG_OK;
}

fg_status fg_context_lookup(const fg_context *ctx, const char *op, fg_reg_dtype dtype,
                            const long long *dims, unsigned ndims, const fg_kernel_entry **out)
{
    if (!ctx) {
        if (out)
            *out = NULL;
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fg_context_lookup: NULL context");
    }
    const fg_device_info *dev = &ctx->drv->caps.info;
    return fg_lookup(ctx->registry, ctx->count, dev->arch, dev->target, op, dtype, dims, ndims,
                     out);
}
