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

/* YaRN (DeepSeek V2/V3): the frequency pair index below which a frequency
 * turns `rotations` times over the original context, as a real number. */
static double yarn_dim(double rotations, unsigned dim, double theta, double orig)
{
    return dim * log(orig / (rotations * TWO_PI)) / (2 * log(theta));
}

/* YaRN: pairs up to `low` (fast: beta_fast turns or more) keep their
 * frequency, those from `high` on (slow) are divided by the factor, and a
 * linear ramp over the pairs between blends the two. */
static double yarn(double inv, unsigned i, unsigned dim, double theta,
                   const fg_rope_scaling_spec *s)
{
    const double orig = s->original_max_position;
    double low = floor(yarn_dim(s->beta_fast, dim, theta, orig));
    double high = ceil(yarn_dim(s->beta_slow, dim, theta, orig));
    low = low < 0 ? 0 : low;
    high = high > dim - 1 ? dim - 1 : high;
    if (high == low)
        high += 0.001;
    double ramp = (i - low) / (high - low);
    ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
    return inv / s->factor * ramp + inv * (1 - ramp);
}

bool fg_rope_inv_freq(const fg_rope *rope, unsigned head_dim, float *inv_freq)
{
    const fg_rope_scaling_spec *s = rope->scaling;
    const fg_rope_scaling type = s ? s->type : FG_SCALING_NONE;
    if (type == FG_SCALING_YARN && !(s->factor > 0 && s->original_max_position > 0))
        return false;
    for (unsigned i = 0; i < head_dim / 2; i++) {
        double inv = 1.0 / pow(rope->theta, (2.0 * i) / head_dim);
        if (type == FG_SCALING_LINEAR)
            inv /= s->factor;
        else if (type == FG_SCALING_LLAMA3)
            inv = llama3(inv, s);
        else if (type == FG_SCALING_YARN)
            inv = yarn(inv, i, head_dim, rope->theta, s);
        inv_freq[i] = (float)inv;
    }
    return true;
}

/* YaRN's attention scaling: 0.1 m ln(factor) + 1 for factor > 1, else 1. */
static double yarn_mscale(double factor, double m)
{
    return factor > 1 ? 0.1 * m * log(factor) + 1.0 : 1.0;
}

double fg_rope_cos_sin_scale(const fg_rope *rope)
{
    const fg_rope_scaling_spec *s = rope->scaling;
    if (!s || s->type != FG_SCALING_YARN)
        return 1.0;
    return yarn_mscale(s->factor, s->mscale) / yarn_mscale(s->factor, s->mscale_all_dim);
}

double fg_rope_softmax_mscale2(const fg_rope *rope)
{
    const fg_rope_scaling_spec *s = rope->scaling;
    if (!s || s->type != FG_SCALING_YARN)
        return 1.0;
    const double m = yarn_mscale(s->factor, s->mscale_all_dim);
    return m * m;
}
