/* The overlap executor's limits (fgrt_overlap.h), apart so that the generator,
 * which plans for them, reads the same figures without the runtime's API. */
#ifndef FGRT_LIMITS_H
#define FGRT_LIMITS_H

#define FGRT_MAX_WORLD 64   /* ranks an order or an executor may have */
#define FGRT_MAX_CHUNKS 8   /* pieces a row block may be split into */
#define FGRT_MAX_LANES 8    /* copy streams a rank may push on at once */

#endif
