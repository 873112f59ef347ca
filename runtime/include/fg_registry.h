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
typedef enum {
    FG_REG_GRID_ROWS,    /* grid.x = rows of the call */
    FG_REG_GRID_FIXED,   /* grid = the entry's grid: the instance covers its whole shape */
} fg_reg_grid_rule;

/* How a call's key dim must relate to the entry's for the entry to serve it
 * (the lookup guard).  EXACT is 0, so entries that leave `match` out are
 * fully specialized. */
typedef enum {
    FG_REG_MATCH_EXACT = 0,   /* call == dims[k] */
    FG_REG_MATCH_MAX,         /* call <= dims[k]: a compile-time maximum (B_max, S_max) */
    FG_REG_MATCH_MULTIPLE,    /* call % dims[k] == 0: a tile size */
    FG_REG_MATCH_ANY,         /* any call value: the kernel takes it at run time */
} fg_reg_dim_match;

#define FG_REG_MAX_DIMS 12

/* A target an entry was planned for, told apart from the arch's other
 * targets as the driver reports the device: a build for the H100 and the
 * H200 (one arch) can hold an instance for each under one key, planned from
 * each one's bandwidth, and a context prefers the one planned for its device
 * (fg_device_info.target). */
typedef struct fg_reg_target {
    const char *name;            /* the target spec's name, e.g. "h200" */
    int compute_units;           /* SMs or CUs */
    long long l2_bytes;          /* the L2's size as the driver reports it */
} fg_reg_target;

#define FG_REG_MAX_TARGETS 8

typedef struct fg_kernel_entry {
    const char *name;            /* instance name = kernel symbol */
    const char *family;          /* kernel family (template), e.g. "rmsnorm" */
    const char *op;              /* what it computes: "rmsnorm", ... */
    fg_reg_arch arch;
    fg_reg_dtype dtype;
    unsigned ndims;
    long long dims[FG_REG_MAX_DIMS];   /* key dims; meaning per op (fgrt.h) */
    fg_reg_dim_match match[FG_REG_MAX_DIMS];
    fg_reg_grid_rule grid_rule;
    unsigned grid[3];            /* FG_REG_GRID_FIXED */
    unsigned block[3];
    unsigned cluster[3];         /* {1,1,1}: no cluster */
    unsigned char nonportable_cluster;
    unsigned char cooperative;
    unsigned dynamic_smem;
    /* Owned by each binding, zeroed when it is made; the kernels leave them
     * as the next launch needs them (a ticket cleared by the last block to
     * take one; a grid barrier's count with its low 31 bits back at zero,
     * its top bit flipped at each barrier). */
    unsigned workspace_bytes;    /* fp32 workspace */
    unsigned counter_count;      /* 32-bit arrival counters */
    int priority;                /* among equally specialized entries, higher wins */
    /* a tuning spec's configuration: preferred to an equal entry that is the
     * planner's, where neither is the device's target's (below) */
    unsigned char tuned;
    /* the targets it was planned for (none: not said); among equally
     * specialized entries, one planned for the device's target wins first */
    fg_reg_target targets[FG_REG_MAX_TARGETS];
    unsigned ntargets;
    const unsigned char *image;  /* cubin or code object */
    const size_t *image_size;
} fg_kernel_entry;

extern const fg_kernel_entry fg_registry[];
extern const size_t fg_registry_count;

/* The overlap plan table: per GEMM-overlap shape and target, the schedule
 * fusegen's cost model picked, which fgrt_overlap_ops() turns into each
 * rank's issue order.  The values of these enums are those of fgrt_overlap.h. */
typedef enum { FG_REG_AG_GEMM, FG_REG_GEMM_RS } fg_reg_collective;
typedef enum {
    FG_REG_SERIAL_NCCL,
    FG_REG_SERIAL_CE,
    FG_REG_SHARD_OVERLAP,
    FG_REG_CHUNK_OVERLAP,
    FG_REG_CHUNK_FUSED
} fg_reg_schedule;

typedef struct fg_overlap_entry {
    const char *gemm, *shape, *target;   /* spec names */
    fg_reg_collective collective;
    long long m, n, k;                   /* the whole GEMM: C[m, n] = A[m, k] B[k, n] */
    unsigned world;
    fg_reg_dtype dtype;
    fg_reg_schedule schedule;
    unsigned chunks;                     /* pieces per row block (chunk_overlap), else 1:
                                            fgrt_overlap_args.chunks */
    double predicted_us;                 /* the cost model's time of the schedule */
    double serial_us;                    /* and of serial over the copy engine */
} fg_overlap_entry;

extern const fg_overlap_entry fg_overlap_plans[];
extern const size_t fg_overlap_plans_count;

#ifdef __cplusplus
}
#endif

#endif
