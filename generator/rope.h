/* RoPE frequencies as the emitted kernels use them: inv_freq[i] for
 * i < head_dim / 2, computed in double (with the spec's scaling) and rounded
 * once to float.  The C reference of the GPU tests computes the same table
 * for the decode family's scalings (tests/gpu/ref_decode.c), and a unit test
 * holds the two together; YaRN's is checked against values computed apart
 * (tests/unit/test_ref_decode.c). */
#ifndef FG_ROPE_H
#define FG_ROPE_H

#include <stdbool.h>

#include "spec.h"

/* Fills inv_freq[0 .. head_dim/2): none, linear, Llama 3.1 and YaRN (as
 * DeepSeek V2/V3 compute it: pairs that turn beta_fast times or more over
 * the original context keep their frequency, those under beta_slow turns are
 * divided by the factor, a linear ramp between).  False (table untouched)
 * for a YaRN spec without a factor or an original context. */
bool fg_rope_inv_freq(const fg_rope *rope, unsigned head_dim, float *inv_freq);

/* YaRN's two attention scalings (1 for the other scalings): the factor on
 * cos and sin, mscale(factor, mscale) / mscale(factor, mscale_all_dim), and
 * the one on the softmax scale, mscale(factor, mscale_all_dim)^2, with
 * mscale(f, m) = 0.1 m ln(f) + 1 for f > 1, else 1. */
double fg_rope_cos_sin_scale(const fg_rope *rope);
double fg_rope_softmax_mscale2(const fg_rope *rope);

#endif
