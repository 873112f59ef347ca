/* libfgrt internals: the driver interface the CUDA and HIP backends
 * implement, the context and binding, the op table.  Tests include this to
 * drive the runtime with a fake driver. */
#ifndef FGRT_INTERNAL_H
#define FGRT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "fgrt.h"
#include "fgrt_overlap.h"

/* Records the details of a failure for fg_last_error() and returns `s`. */
fg_status fg_fail(fg_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- driver interface ---- */

typedef struct fg_launch_cfg {
    unsigned grid[3], block[3], cluster[3];   /* cluster {1,1,1}: none */
    unsigned smem;                            /* dynamic shared memory, bytes */
    bool cooperative;
} fg_launch_cfg;

static inline bool fg_cfg_has_cluster(const fg_launch_cfg *c)
{
    return c->cluster[0] * c->cluster[1] * c->cluster[2] > 1;
}

typedef struct fg_driver fg_driver;

/* Every call makes the device current for its duration and leaves the
 * caller's current context (or device) as it found it. */
typedef struct fg_driver_ops {
    void (*close)(fg_driver *d);
    fg_status (*load)(fg_driver *d, const void *image, const char *symbol, void **module,
                      void **fn);
    void (*unload)(fg_driver *d, void *module);
    /* Function attributes an entry needs: max dynamic smem, non-portable clusters. */
    fg_status (*configure)(fg_driver *d, void *fn, const fg_launch_cfg *c, bool nonportable);
    /* Cluster launches: clusters the whole device holds at once (cfg's cluster
     * shape); otherwise blocks per compute unit. */
    fg_status (*occupancy)(fg_driver *d, void *fn, const fg_launch_cfg *c, int *resident);
    fg_status (*launch)(fg_driver *d, void *fn, const fg_launch_cfg *c, void *stream,
                        void **params);
    fg_status (*alloc)(fg_driver *d, size_t bytes, void **dptr);
    fg_status (*zero)(fg_driver *d, void *dptr, size_t bytes);   /* synchronous */
    fg_status (*free)(fg_driver *d, void *dptr);
    fg_status (*copy)(fg_driver *d, void *dst, const void *src, size_t bytes, bool to_device);
    fg_status (*sync)(fg_driver *d, void *stream);
    fg_status (*make_current)(fg_driver *d);
    void *(*symbol)(const fg_driver *d, const char *name);

    /* The overlap executor's (NULL where a backend has none yet).  Streams
     * are non-blocking, events have no timing; copies are device to device
     * on any device of the address space (peer and IPC-mapped memory); a
     * flag is a 32-bit word of local device memory, and a wait passes once
     * (int32_t)(*flag - value) >= 0 (HIP: once *flag >= value, unsigned). */
    fg_status (*stream_create)(fg_driver *d, void **stream);
    void (*stream_destroy)(fg_driver *d, void *stream);
    fg_status (*stream_idle)(fg_driver *d, void *stream, bool *idle);   /* nothing pending */
    fg_status (*event_create)(fg_driver *d, void **event);
    void (*event_destroy)(fg_driver *d, void *event);
    fg_status (*event_record)(fg_driver *d, void *event, void *stream);
    fg_status (*stream_wait_event)(fg_driver *d, void *stream, void *event);
    fg_status (*copy_async)(fg_driver *d, void *dst, const void *src, size_t bytes, void *stream);
    /* Device memory into host memory, on `stream` (not the legacy stream). */
    fg_status (*read_async)(fg_driver *d, void *host, const void *src, size_t bytes,
                            void *stream);
    fg_status (*write_flag)(fg_driver *d, void *stream, void *flag, unsigned value);
    fg_status (*wait_flag)(fg_driver *d, void *stream, const void *flag, unsigned value);
    /* IPC: the handle (FG_IPC_HANDLE_BYTES) of the allocation holding dptr
     * and dptr's offset in it; open maps a peer process's allocation. */
    fg_status (*ipc_export)(fg_driver *d, const void *dptr, void *handle, size_t *offset);
    fg_status (*ipc_open)(fg_driver *d, const void *handle, void **base);
    void (*ipc_close)(fg_driver *d, void *base);
    /* This device may read and write device `ordinal`'s memory (one process). */
    fg_status (*enable_peer)(fg_driver *d, int ordinal);

    /* A TMA tensor map (128 bytes, 64-byte aligned) of a row-major
     * [rows][cols] matrix of 16-bit dtype at base, boxes of box_rows x
     * box_cols with box_cols one 128-byte swizzle row (64), or 0: boxes of
     * box_rows whole rows, cols a multiple of 64 (each row's 128-byte lines
     * swizzled as the box's lines in order).  128-byte swizzle; NULL where a
     * backend has no TMA. */
    fg_status (*tensor_map)(fg_driver *d, void *map, fg_reg_dtype dtype, const void *base,
                            long long rows, long long cols, unsigned box_rows,
                            unsigned box_cols);
} fg_driver_ops;

#define FG_IPC_HANDLE_BYTES 64

typedef struct fg_device_caps {
    fg_device_info info;
    long long max_grid_x;
    bool clusters;          /* can launch thread-block clusters */
    bool cooperative;       /* can launch cooperative kernels */
} fg_device_caps;

/* Backends embed this as their first member. */
struct fg_driver {
    const fg_driver_ops *ops;
    fg_device_caps caps;
    int ordinal;            /* the device's ordinal in its driver */
};

/* Open device `device` through an already dlopen'ed library. */
fg_status fg_cuda_open(void *lib, int device, fg_driver **out);
fg_status fg_hip_open(void *lib, int device, fg_driver **out);
/* The HIP functions the overlap executor resolves, NULL-terminated (tests
 * check that the HIP runtime has each). */
extern const char *const fg_hip_overlap_symbols[];

/* ---- the overlap executor's issue order ---- */

/* Schedules whose row blocks go in pieces (args.chunks of them). */
static inline bool fgrt_schedule_chunked(fgrt_schedule s)
{
    return s == FGRT_CHUNK_OVERLAP || s == FGRT_CHUNK_FUSED;
}

/* ---- context ---- */

typedef struct fg_module_slot {
    void *module, *fn;      /* NULL until the entry is first bound */
} fg_module_slot;

struct fg_context {
    fg_driver *drv;
    void *lib;              /* dlopen handle, closed after drv */
    const fg_kernel_entry *registry;
    size_t count;
    fg_module_slot *slots;  /* one per registry entry */
    pthread_mutex_t lock;   /* guards slots: binds may come from several threads */
};

/* Wraps an opened driver (tests pass a fake one; lib may be NULL).  On
 * failure the driver is closed. */
fg_status fg_context_create(fg_driver *drv, void *lib, const fg_kernel_entry *registry,
                            size_t count, fg_context **out);

/* The entry's kernel, loaded and configured on first use. */
fg_status fg_context_function(fg_context *ctx, const fg_kernel_entry *e, const fg_launch_cfg *c,
                              void **fn);

/* ---- ops ---- */

typedef enum {
    FG_ARG_DEVPTR,
    FG_ARG_I32,
    FG_ARG_F32,
    FG_ARG_WORKSPACE,
    FG_ARG_COUNTERS,
    FG_ARG_U64,
    FG_ARG_TENSOR_MAP,
} fg_arg_kind;

/* One kernel parameter, in kernel order, read from the op's args struct:
 * DEVPTR from a pointer field, I32 from a long long field, F32 from a float
 * field (finite), U64 from a long long field (>= min).  WORKSPACE and
 * COUNTERS are the binding's own (no field).  TENSOR_MAP: the matrix at the
 * pointer field `offset` (16-byte aligned), its rows and columns the long
 * long fields at rows_offset and cols_offset (or what map_shape says),
 * encoded at bind time; box_cols 0 boxes whole rows.  An optional_map is
 * zeros where the backend has no TMA: the forms built there do not read it. */
typedef struct fg_arg_desc {
    const char *name;
    fg_arg_kind kind;
    size_t offset;
    unsigned align;         /* DEVPTR: required alignment in bytes */
    bool nullable;          /* DEVPTR: NULL is accepted (passed as is; the op's check decides) */
    long long min;          /* I32, U64: smallest accepted value (I32's largest: INT32_MAX) */
    size_t rows_offset, cols_offset;   /* TENSOR_MAP */
    unsigned box_rows, box_cols;       /* TENSOR_MAP */
    bool optional_map;                 /* TENSOR_MAP */
    void (*map_shape)(const void *args, long long *rows, long long *cols);   /* TENSOR_MAP */
} fg_arg_desc;

#define FG_MAX_KERNEL_ARGS 24

/* Everything op-specific the generic bind needs. */
typedef struct fg_op_desc {
    const char *op;                       /* registry op name */
    size_t dtype_offset;                  /* fg_reg_dtype field */
    unsigned nkeys;                       /* key dims, registry order */
    unsigned nflags;                      /* the last nflags keys are 0/1 flags, not shapes */
    unsigned optional_mask;               /* bit k: key k may be 0 (a feature turned off) */
    size_t zero_default_offsets[FG_REG_MAX_DIMS]; /* key k 0 in a call: the long long
                                                     field here instead (0: none) */
    size_t instance_offset;               /* const char * field naming an instance, or 0 */
    size_t key_offsets[FG_REG_MAX_DIMS];  /* long long fields */
    size_t rows_offset;                   /* long long field for FG_REG_GRID_ROWS */
    const fg_arg_desc *args;
    unsigned nargs;
    fg_status (*check)(const void *args); /* guards the table cannot say; may be NULL */
} fg_op_desc;

extern const fg_op_desc fg_op_rmsnorm;
extern const fg_op_desc fg_op_decode_attn;
extern const fg_op_desc fg_op_mla_decode;
extern const fg_op_desc fg_op_mla_block;
extern const fg_op_desc fg_op_overlap_reduce;
extern const fg_op_desc fg_op_overlap_gemm;
extern const fg_op_desc fg_op_overlap_gemm_portable;

fg_status fg_bind_op(fg_context *ctx, const fg_op_desc *op, const void *args, fg_binding **out);

size_t fg_reg_dtype_bytes(fg_reg_dtype d);

#endif
