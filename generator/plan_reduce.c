/* The owner's reduction of a GEMM + reduce-scatter (the overlap family):
 * one streaming kernel per dtype, world size and target, launched by the
 * runtime's executor once per call after the peers' partials have landed. */
#include <stdio.h>

#include "plan.h"

#define REDUCE_THREADS 256
#define REDUCE_BLOCKS_PER_CU 16

int fg_plan_overlap_reduce(fg_dtype dtype, unsigned world, const fg_target *t, const char *why,
                           fg_instance *in, fg_diag *d)
{
    char dims[32];
    snprintf(dims, sizeof dims, "w%u", world);
    if (world < 2 || world > 64 ||
        !fg_instance_name(in->name, "overlap_reduce", t->arch, fg_dtype_name(dtype), dims, "")) {
        fg_error(d, "cannot name an overlap_reduce instance for world size %u", world);
        return -1;
    }
    in->family = "overlap_reduce";
    in->op = "overlap_reduce";
    in->template_name = "overlap_reduce.in";
    in->target = t;
    in->dtype = dtype;
    fg_instance_add_param(in, "WORLD", world);
    in->nkey_params = 1;
    fg_instance_add_param(in, "THREADS", REDUCE_THREADS);
    fg_instance_add_param(in, "BLOCKS_PER_CU", REDUCE_BLOCKS_PER_CU);
    const unsigned blocks = t->compute_units * REDUCE_BLOCKS_PER_CU;
    in->launch = (fg_launch){.grid = FG_GRID_FIXED, .grid_dims = {blocks, 1, 1},
                             .block = {REDUCE_THREADS, 1, 1}, .cluster = {1, 1, 1}};
    snprintf(in->path_key, sizeof in->path_key, "overlap_reduce/%s/%s", fg_arch_tag(t->arch),
             fg_dtype_name(dtype));
    fg_sb_printf(&in->reasons, "used for: %s\n", why);
    fg_sb_printf(&in->reasons,
                 "out = own partial + %u received, fp32 sums in rank order, one rounding\n",
                 world - 1);
    fg_sb_printf(&in->reasons,
                 "16-byte vectors, a grid-stride loop over %u blocks (%u per compute unit x %u, "
                 "more than are resident at once) of %u threads: streams at HBM rate where one "
                 "element per thread was latency-bound (measured in test_overlap on the H200)\n",
                 blocks, REDUCE_BLOCKS_PER_CU, t->compute_units, REDUCE_THREADS);
    return 0;
}
