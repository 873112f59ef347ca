/* The downstream demo's parts: fp16 conversion and the CUDA graph check. */
#ifndef DEMO_H
#define DEMO_H

#include <stddef.h>
#include <stdint.h>

#include "fgrt.h"

uint16_t f16_from_float(float f);
float f16_to_float(uint16_t h);

/* Captures one fg_launch() of `b` in a CUDA graph, replays it into the
 * poisoned output `y` and checks the result is bitwise `expect`.  Returns 0
 * when it matches, 1 when not, and 0 with a note on a HIP device. */
int graph_replay_check(fg_context *ctx, fg_binding *b, void *y, const uint16_t *expect,
                       size_t bytes);

#endif
