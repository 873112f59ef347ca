#include "rope.h"

#include <math.h>

/* 2 pi in double (M_PI is not strict C17) */
#define TWO_PI 6.283185307179586

/* Llama 3.1: frequencies whose wavelength fits the original context many
 * times are kept, those longer than it divided by the factor, and a linear
 * blend in between. */
static double llama3(double inv, const fg_rope_scaling_spec *s)
{
    const double orig = s->original_max_position, wavelen = TWO_PI / inv;
    if (wavelen < orig / s->high_freq_factor)
        return inv;
    if (wavelen > orig / s->low_freq_factor)
        return inv / s->factor;
    const double smooth =
        (orig / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
    return (1 - smooth) * inv / s->factor + smooth * inv;
}

bool fg_rope_inv_freq(const fg_rope *rope, unsigned head_dim, float *inv_freq)
{
    const fg_rope_scaling_spec *s = rope->scaling;
    const fg_rope_scaling type = s ? s->type : FG_SCALING_NONE;
    if (type == FG_SCALING_YARN)
        return false;
    for (unsigned i = 0; i < head_dim / 2; i++) {
        double inv = 1.0 / pow(rope->theta, (2.0 * i) / head_dim);
        if (type == FG_SCALING_LINEAR)
            inv /= s->factor;
        else if (type == FG_SCALING_LLAMA3)
            inv = llama3(inv, s);
        inv_freq[i] = (float)inv;
    }
    return true;
}
