/* C references for the GPU tests: double accumulation, inputs read from the
 * same rounded storage values the kernels see. */
#ifndef FG_GPU_REF_H
#define FG_GPU_REF_H

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[r,:] = x[r,:] / sqrt(mean(x[r,:]^2) + eps) * w, all in double. */
void fgh_ref_rmsnorm(const void *x, const void *w, fgh_dtype t, int rows, int hidden, float eps,
                     double *y);

#ifdef __cplusplus
}
#endif

#endif
