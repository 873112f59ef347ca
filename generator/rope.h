/* RoPE frequencies as the emitted kernels use them: inv_freq[i] for
 * i < head_dim / 2, computed in double (with the spec's scaling) and rounded
 * once to float.  The C reference of the GPU tests computes the same table
 * (tests/gpu/ref_decode.c); a unit test holds the two together. */
#ifndef FG_ROPE_H
#define FG_ROPE_H

#include <stdbool.h>

#include "spec.h"

/* Fills inv_freq[0 .. head_dim/2).  False (table untouched) for a scaling
 * the kernels do not implement yet (YaRN: the MLA family's). */
bool fg_rope_inv_freq(const fg_rope *rope, unsigned head_dim, float *inv_freq);

#endif
