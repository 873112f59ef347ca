/* C references for the GPU tests (see ref.h). */
#include "ref.h"

void fgh_ref_rmsnorm(const void *x, const void *w, fgh_dtype t, int rows, int hidden, float eps,
                     double *y)
{
    for (int r = 0; r < rows; r++) {
        const size_t o = (size_t)r * hidden;
        for (int i = 0; i < hidden; i++)
            y[o + i] = fgh_get(x, t, o + i);
        fgh_rmsnorm_row(y + o, hidden, w, t, (double)eps);
    }
}
