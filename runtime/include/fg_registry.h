/* The registry: one entry per compiled kernel instance, emitted by
 * `fusegen generate` as fg_registry.c and linked into libfgrt's users.
 * An entry says what the kernel computes (op, dtype, key dims, arch), how
 * to launch it, and where its binary image is. */
#ifndef FG_REGISTRY_H
#define FG_REGISTRY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { FG_REG_ARCH_SM90A, FG_REG_ARCH_GFX942, FG_REG_ARCH_GFX90A } fg_reg_arch;
typedef enum { FG_REG_F16, FG_REG_BF16 } fg_reg_dtype;
typedef enum { FG_REG_GRID_ROWS } fg_reg_grid_rule;   /* grid.x = rows of the call */

#define FG_REG_MAX_DIMS 8

typedef struct fg_kernel_entry {
    const char *name;            /* instance name = kernel symbol */
    const char *op;              /* "rmsnorm", ... */
    fg_reg_arch arch;
    fg_reg_dtype dtype;
    unsigned ndims;
    long long dims[FG_REG_MAX_DIMS];   /* key dims; meaning per op (README) */
    fg_reg_grid_rule grid_rule;
    unsigned block[3];
    unsigned cluster[3];         /* {1,1,1}: no cluster */
    unsigned char nonportable_cluster;
    unsigned char cooperative;
    unsigned dynamic_smem;
    const unsigned char *image;  /* cubin or code object */
    const size_t *image_size;
} fg_kernel_entry;

extern const fg_kernel_entry fg_registry[];
extern const size_t fg_registry_count;

#ifdef __cplusplus
}
#endif

#endif
