/* C references for the GPU tests (see ref.h). */
#include "ref.h"

#include <math.h>
#include <stdlib.h>

void fgh_ref_rmsnorm(const void *x, const void *w, fgh_dtype t, int rows, int hidden, float eps,
                     double *y)
{
    double *wd = malloc(sizeof *wd * (size_t)hidden);
    if (!wd)
        return;
    for (int i = 0; i < hidden; i++)
        wd[i] = fgh_get(w, t, (size_t)i);
    for (int r = 0; r < rows; r++) {
        const size_t o = (size_t)r * hidden;
        double ss = 0;
        for (int i = 0; i < hidden; i++) {
            const double v = fgh_get(x, t, o + i);
            ss += v * v;
        }
        const double scale = 1.0 / sqrt(ss / hidden + (double)eps);
        for (int i = 0; i < hidden; i++)
            y[o + i] = fgh_get(x, t, o + i) * scale * wd[i];
    }
    free(wd);
}
