/* libfgrt: loads, looks up and launches the kernels fusegen generated.
 *
 * The GPU driver (libcuda.so.1 or libamdhip64.so) is opened at run time, so a
 * program links and starts without a GPU and gets FG_ERR_NO_DEVICE from
 * fg_init().  No function aborts or prints; each returns an fg_status, and
 * fg_last_error() says more about the latest failure on the calling thread.
 *
 * Use: fg_init() once per device, fg_<op>_bind() once per set of buffers,
 * fg_launch() as often as needed (it allocates nothing, synchronizes nothing
 * and can be captured in a CUDA graph), fg_binding_free(), fg_shutdown(). */
#ifndef FGRT_H
#define FGRT_H

#include <stddef.h>

#include "fg_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FG_API __attribute__((visibility("default")))
#else
#define FG_API
#endif

typedef enum fg_status {
    FG_OK = 0,
    FG_ERR_INVALID_ARGUMENT,     /* a NULL handle, an out-of-range enum, a bad registry */
    FG_ERR_NULL_POINTER,         /* a device buffer argument is NULL */
    FG_ERR_MISALIGNED,           /* a device buffer is not aligned as the kernel loads it */
    FG_ERR_BAD_SHAPE,            /* a dim out of range (<= 0; < 0 for keys that may be 0;
                                    a flag not 0/1) or beyond what a launch can cover */
    FG_ERR_NO_MATCHING_INSTANCE, /* no registered kernel serves this op, dtype and shape */
    FG_ERR_NO_DEVICE,            /* no driver library, or it sees no device */
    FG_ERR_UNSUPPORTED_DEVICE,   /* a device fusegen emits no kernels for, or an old driver */
    FG_ERR_OCCUPANCY,            /* the kernel cannot be resident as its launch requires */
    FG_ERR_OUT_OF_MEMORY,        /* host or device allocation failed */
    FG_ERR_DRIVER,               /* a driver call failed; fg_last_error() names it */
    FG_ERR_TIMEOUT,              /* a wait on another GPU's work ran past its time limit */
    FG_ERR_PEER_FAILED,          /* another rank of a collective failed or gave up */
} fg_status;

#define FG_STATUS_COUNT (FG_ERR_PEER_FAILED + 1)

/* A fixed sentence per status ("unknown status" for other values). */
FG_API const char *fg_status_string(fg_status s);

/* Details of the latest failure on the calling thread (driver call and its
 * error name, the argument at fault, the instances a lookup considered);
 * "" before any failure.  Valid until the thread's next failing call. */
FG_API const char *fg_last_error(void);

FG_API const char *fg_reg_arch_name(fg_reg_arch a);   /* "sm_90a", "gfx942", ... */
FG_API const char *fg_reg_dtype_name(fg_reg_dtype d); /* "f16", "bf16" */

/* ---- lookup (pure: no device needed) ---- */

/* The most specialized entry of reg[0..n) that serves `op` on `arch` for
 * `dtype` and the key dims (their meaning per op: rmsnorm {hidden}).  An
 * entry serves a call when op, arch, dtype and ndims agree and every dim
 * passes the entry's guard (fg_reg_dim_match).  More exact dims win, then the
 * tighter bounds, then an entry planned for `target` (the device's target's
 * name, fg_device_info.target; NULL or "": none known), then the higher
 * priority, then a tuned entry (a tuning spec's configuration, over the
 * planner's); ties go to the earlier entry.  So a build for the H100 and the
 * H200, with an instance for each under one key, runs each GPU's own.
 * FG_ERR_NO_MATCHING_INSTANCE when none serves (there is never a fallback to
 * a near fit); FG_ERR_BAD_SHAPE for a negative key (0 is a flag value; each
 * op's bind refuses zero shapes). */
FG_API fg_status fg_lookup(const fg_kernel_entry *reg, size_t n, fg_reg_arch arch,
                           const char *target, const char *op, fg_reg_dtype dtype,
                           const long long *dims, unsigned ndims, const fg_kernel_entry **out);

/* ---- context: one device, its driver and the registry ---- */

typedef struct fg_context fg_context;
typedef struct fg_binding fg_binding;

/* Opens the driver and device `device` (an ordinal of that driver) and uses
 * its primary context, so engines built on the CUDA runtime API share it.
 * The device's arch decides which registry entries are usable.  The driver
 * library is libcuda.so.1, else libamdhip64.so (.so.6, .so.5); the environment variable
 * FG_DRIVER_LIB names another one (FG_DRIVER_LIB=/nonexistent forces the
 * no-device path).  `registry` must outlive the context. */
FG_API fg_status fg_init(const fg_kernel_entry *registry, size_t count, int device,
                         fg_context **out);

/* Unloads the modules and releases the device.  Free every binding of the
 * context first.  NULL is ignored. */
FG_API void fg_shutdown(fg_context *ctx);

typedef enum { FG_BACKEND_CUDA, FG_BACKEND_HIP } fg_backend;

typedef struct fg_device_info {
    fg_backend backend;
    fg_reg_arch arch;             /* what registry entries it runs */
    char name[128];               /* the driver's device name */
    char arch_name[64];           /* "sm_90", "gfx942:sramecc+:xnack-" */
    int compute_units;            /* SMs or CUs */
    size_t max_dynamic_smem;      /* per block, with opt-in */
    long long l2_bytes;           /* the L2's size, as the driver reports it */
    /* The registry's target (fg_reg_target) of this arch with the device's
     * compute units and L2 size: the entries planned for it are preferred
     * (fg_lookup); "" when none, or two of different names, match. */
    char target[32];
} fg_device_info;

FG_API fg_status fg_device_get_info(const fg_context *ctx, fg_device_info *out);

/* fg_lookup() over the context's registry for the device's arch and target. */
FG_API fg_status fg_context_lookup(const fg_context *ctx, const char *op, fg_reg_dtype dtype,
                                   const long long *dims, unsigned ndims,
                                   const fg_kernel_entry **out);

/* ---- ops: bind once, launch many ---- */

/* y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight, fp32 inside.
 * x and y are [rows, hidden] row-major, weight [hidden], all on the device,
 * 16-byte aligned, of `dtype`; y must not overlap x or weight. */
typedef struct fg_rmsnorm_args {
    fg_reg_dtype dtype;
    long long hidden;      /* key dim: an instance exists per hidden size */
    long long rows;        /* rows of every launch of the binding (grid.x) */
    const void *x;
    const void *weight;
    void *y;
    float eps;
    const char *instance;  /* NULL: the lookup's choice; else this instance (tests, tuning:
                              the block sizes of one hidden size share its key) */
} fg_rmsnorm_args;

/* Checks the arguments, finds the instance, loads its module (once per
 * context), sets its attributes, checks that it can be resident, and keeps
 * the kernel parameters.  The buffers must stay valid while the binding is
 * launched. */
FG_API fg_status fg_rmsnorm_bind(fg_context *ctx, const fg_rmsnorm_args *args, fg_binding **out);

/* One decode step of a Llama-family attention block (fused decode family):
 * [RMSNorm] -> QKV -> RoPE -> append k, v at positions[b] -> attention over
 * [0, pos] -> W_o (accumulated in fp32).  Shapes (README, "Tensor
 * contracts"): x, y [batch, hidden]; norm_w [hidden]; w_qkv [3*heads*head_dim,
 * hidden]; w_o [hidden, heads*head_dim]; k_cache, v_cache [batch, heads,
 * max_context, head_dim]; positions [batch] int32 on the device (< 0: an
 * inactive slot, output zero, no write).  Key: hidden, heads, kv_heads (0:
 * heads, i.e. MHA; with GQA w_qkv is [(heads + 2*kv_heads)*head_dim, hidden]
 * and the caches have kv_heads heads), head_dim, max_context, sliding_window
 * (0: none; W: attend over [pos - W + 1, pos]), page_size (0: the contiguous
 * caches above; P: k_cache and v_cache are page pools [pages, kv_heads, P,
 * head_dim] and block_table [batch, max_context / P] int32 on the device
 * gives request b's page of tokens [j*P, (j+1)*P); NULL when contiguous),
 * batch (<= the instance's B_max), and the 0/1 flags qkv_bias (b_qkv
 * [(heads + 2*kv_heads)*head_dim], added to the projections' rows before
 * RoPE; NULL without), rmsnorm,
 * neox (RoPE layout) and deterministic (bitwise reproducible output: an
 * instance that sums over heads in a fixed order, or one of the ring form,
 * which writes whole rows of y and is reproducible either way).  The binding
 * owns an fp32 workspace and the counters of its barriers, zeroed at bind. */
typedef struct fg_decode_attn_args {
    fg_reg_dtype dtype;
    long long hidden, heads, kv_heads, head_dim, max_context, sliding_window, page_size;
    long long batch;
    long long qkv_bias, rmsnorm, neox, deterministic;
    const char *instance;  /* NULL: the lookup's choice; else this instance (tests, tuning) */
    const void *x, *norm_w, *w_qkv, *b_qkv, *w_o;
    void *k_cache, *v_cache;
    const int *block_table;   /* paged caches only */
    const int *positions;
    void *y;
    float eps;
} fg_decode_attn_args;
FG_API fg_status fg_decode_attn_bind(fg_context *ctx, const fg_decode_attn_args *args,
                                     fg_binding **out);

/* The latent attention core of MLA decode (DeepSeek, weight-absorbed; the MLA
 * family).  For each active request b (lengths[b] > 0) and head h:
 *   s[t]      = scale * dot(q[b, h, :], row t of request b's latent cache), t < lengths[b]
 *   out[b, h] = sum_t softmax(s)[t] * row t's first kv_lora columns
 *   lse[b, h] = ln(sum_t exp(s[t]))
 * q [batch, heads, kv_lora + rope_dim] (the absorbed q_nope then q_pe); a
 * latent cache row is [c_kv (kv_lora) | k_pe (rope_dim)] (README, "Tensor
 * contracts"); out [batch, heads, kv_lora]; lse [batch, heads] fp32.  Key:
 * heads (on this GPU), kv_lora, rope_dim, max_context, page_size (0: cache
 * [batch, max_context, kv_lora + rope_dim]; P: cache is a page pool [pages,
 * P, kv_lora + rope_dim] and block_table [batch, max_context / P] int32 on the
 * device gives request b's page of tokens [j*P, (j+1)*P); NULL when
 * contiguous) and batch (<= the instance's B_max).  lengths [batch] int32 on
 * the device, 0..max_context; 0 is an inactive slot (out zero, lse -inf); the
 * kernel cannot report a length out of range, and reads a negative one as 0
 * and one past max_context as max_context.  scale: the softmax scale, YaRN's
 * mscale^2 included (`fusegen explain` and the manifest's softmax_scale give
 * the model's).  The binding owns an fp32 workspace for the clusters' merged
 * partial results and their per-slice tickets, zeroed at bind; the splits
 * merge in fixed orders (deterministic).  On CUDA the binding also encodes a
 * TMA tensor map of the cache (the instances from B_max 16 read their tiles
 * through it): a new cache pointer needs a new binding, as for every
 * pointer here. */
typedef struct fg_mla_decode_args {
    fg_reg_dtype dtype;
    long long heads, kv_lora, rope_dim, max_context, page_size, batch;
    const char *instance;  /* NULL: the lookup's choice; else this instance (tests, tuning) */
    const void *q, *cache;
    const int *block_table;   /* paged caches only */
    const int *lengths;
    void *out;
    float *lse;
    float scale;
} fg_mla_decode_args;
FG_API fg_status fg_mla_decode_bind(fg_context *ctx, const fg_mla_decode_args *args,
                                    fg_binding **out);

/* The whole MLA attention block at decode (DeepSeek, weight-absorbed; one
 * cooperative launch).  For each active request b (positions[b] >= 0, the
 * new token's position, < max_context), with xn = rmsnorm(x[b], input_norm)
 * (x as is when input_norm is NULL):
 *   q = W_q xn, or W_q_b rmsnorm(W_q_a xn, q_a_norm) when q_lora > 0
 *   [c | k_pe] = W_kv_a xn; the row [rmsnorm(c, kv_a_norm) | rope(k_pe, pos)]
 *   written to request b's latent cache at pos (README, "Tensor contracts")
 *   q_abs_h = [W_uk_h^T q_nope_h | rope(q_pe_h, pos)]; attention over the
 *   rows [0, pos] with `scale` (YaRN's mscale^2 in it) gives o_lat_h
 *   y[b] = W_o [W_uv_0 o_lat_0 .. W_uv_{heads-1} o_lat_{heads-1}]
 * Weights in Hugging Face's layout: w_q [heads (nope + rope), hidden] or
 * w_q_a [q_lora, hidden], q_a_norm [q_lora], w_q_b [heads (nope + rope),
 * q_lora]; w_kv_a [kv_lora + rope, hidden]; kv_a_norm [kv_lora]; w_kv_b
 * [heads (nope + v_dim), kv_lora] (per head W_uk's rows, then W_uv's); w_o
 * [hidden, all heads' v_dim], this GPU's columns (its heads' rows of w_q,
 * w_q_b and w_kv_b; under tensor parallelism y is this GPU's partial sum).
 * RoPE turns interleaved pairs (2i, 2i + 1) with the spec's frequencies.
 * Key: hidden, heads (on this GPU), q_lora (0: none), kv_lora, rope_dim,
 * nope_dim (qk_nope_head_dim), v_dim, w_o_ld (w_o's row length: every GPU's
 * heads x v_dim), max_context, page_size (0: contiguous cache [batch,
 * max_context, kv_lora + rope_dim]; P: a page pool and block_table as for
 * mla_decode), batch (<= B_max).  An inactive slot (positions[b] < 0) gets y
 * zero and no write; so does a position at or past max_context, which the
 * kernel cannot report.  y must not overlap x.
 * The binding owns an fp32 workspace and the grid barrier's counters. */
typedef struct fg_mla_block_args {
    fg_reg_dtype dtype;
    long long hidden, heads, q_lora, kv_lora, rope_dim, nope_dim, v_dim, w_o_ld, max_context,
        page_size, batch;
    const char *instance;  /* NULL: the lookup's choice; else this instance (tests) */
    const void *x, *input_norm;                 /* input_norm: NULL for none */
    const void *w_q, *w_q_a, *q_a_norm, *w_q_b;  /* w_q without q_lora; the other three with */
    const void *w_kv_a, *kv_a_norm, *w_kv_b, *w_o;
    void *cache;
    const int *block_table;   /* paged caches only */
    const int *positions;
    void *y;
    float eps, scale;
} fg_mla_block_args;
FG_API fg_status fg_mla_block_bind(fg_context *ctx, const fg_mla_block_args *args,
                                   fg_binding **out);

/* The owner's reduction of a GEMM + reduce-scatter (overlap family): out =
 * the sum over the world ranks' partials of this rank's row block, `own`
 * for slot `rank` and recv's other slots, in fp32 in rank order, rounded
 * once.  own and out hold `vecs` 16-byte vectors of dtype (elements / 8),
 * recv [world][vecs]; all on the device, 16-byte aligned; out must not
 * overlap own or recv.  Key: world.  The overlap executor (fgrt_overlap.h)
 * binds it itself when given no reduce callback. */
typedef struct fg_overlap_reduce_args {
    fg_reg_dtype dtype;
    long long world;       /* key dim */
    long long rank;        /* 0 .. world - 1 */
    long long vecs;        /* 16-byte vectors per row block */
    const void *own, *recv;
    void *out;
} fg_overlap_reduce_args;
FG_API fg_status fg_overlap_reduce_bind(fg_context *ctx, const fg_overlap_reduce_args *args,
                                        fg_binding **out);

/* The overlap family's GEMM (sm_90a): c[m, n] = a[m, k] . w[n, k]^T, w in
 * nn.Linear's layout, fp32 sums rounded once; a, w, c row-major on the
 * device, 16-byte aligned; m a multiple of 128 (whole tile rows).  Keys:
 * n, k.  Its TMA tensor maps are encoded here, once.
 * Fed as its rows land (the fused AG+GEMM) where flags is set: a is a
 * gather of row blocks of shard_rows rows, each but block `own` arriving
 * by copies in pieces of piece_rows rows, piece i of block r announced by
 * flags[r * flag_stride + i] reaching *epoch (compared as (int32_t)(flag -
 * epoch) >= 0; *epoch is read at each launch, so one captured launch
 * serves every call); a tile is taken only once every piece its rows lie
 * in is announced, tile rows in the order tile_rows lists them (m / 128 of
 * them; NULL: in order; fgrt_overlap_tile_rows gives the executor's).  A
 * wait that runs past limit_ns (1 .. 2 x 10^10) sets FG_GEMM_LATE in *status
 * and the kernel stops waiting: the call's output is then undefined, never
 * a hang.  Without flags the feed fields are ignored.
 * Drained as its rows are written (the fused GEMM+RS) where done is set:
 * once a tile's rows are in c, done[row / done_rows] grows by 2 for each
 * 256 columns of the tile (release, system scope; done_rows a multiple of
 * 128 rows that divides m), so that a counter reaches done_rows / 128 x
 * n / 128 once its rows are whole in c, whatever the form's tile width; a
 * stream that waits for that multiple (cuStreamWaitValue32) may then copy
 * those rows; the kernel only adds to them (fgrt_overlap's chunk_fused
 * zeroes each once its wait for the piece has passed).
 * The binding owns a workspace of a tile's fp32 sums for each block of the
 * grid (17 MB on an H200; fg_binding_get_info), where the last round's
 * tiles split over K leave their partial sums, and the counters of their
 * tickets; both forms split so. */
#define FG_GEMM_LATE 1u
#define FG_GEMM_TILE_ROWS 128              /* m, done_rows: whole tile rows */
#define FG_GEMM_TILE_COLS 256              /* the wgmma form's tile columns (2 done counts) */
#define FG_GEMM_DONE_COLS 128              /* a done counter grows by 1 for each 128 rows x
                                              128 columns of c written, on every form */
#define FG_GEMM_MAX_LIMIT_NS 20000000000LL /* limit_ns at most (the stages trap at ~35 s) */
typedef struct fg_overlap_gemm_args {
    fg_reg_dtype dtype;
    long long n, k;        /* key dims */
    long long m;           /* rows of every launch */
    const void *a, *w;
    void *c;
    const int *tile_rows;
    const unsigned *flags, *epoch;
    unsigned *status;
    long long own, shard_rows, piece_rows, flag_stride, limit_ns;
    unsigned *done;
    long long done_rows;
    const char *instance;  /* NULL: the lookup's choice; else this instance (tests, tuning) */
} fg_overlap_gemm_args;
FG_API fg_status fg_overlap_gemm_bind(fg_context *ctx, const fg_overlap_gemm_args *args,
                                      fg_binding **out);
/* The same product, feed and drain by the portable form (op
 * overlap_gemm_portable: AMD's gfx942 / gfx90a GEMM, and an sm_90a build
 * for a target without clusters): a, w, c passed as plain pointers, no
 * tensor maps; the same arguments and checks (its workspace 40 MB on an
 * MI300X). */
FG_API fg_status fg_overlap_gemm_portable_bind(fg_context *ctx, const fg_overlap_gemm_args *args,
                                               fg_binding **out);

/* Enqueues the bound kernel on `stream` (a CUstream or hipStream_t; NULL is
 * the legacy default stream).  No allocation, synchronization or descriptor
 * encoding: safe inside CUDA graph capture.  A binding owns its workspaces,
 * so at most one launch of it may be in flight at a time. */
FG_API fg_status fg_launch(fg_binding *b, void *stream);

/* NULL is ignored. */
FG_API void fg_binding_free(fg_binding *b);

typedef struct fg_binding_info {
    const fg_kernel_entry *entry;
    unsigned grid[3], block[3], cluster[3];
    unsigned dynamic_smem;
    long long resident_blocks;   /* blocks the device holds at once (occupancy check) */
    long long waves;             /* ceil(grid blocks / resident_blocks) */
    size_t workspace_bytes;      /* owned by the binding: workspace and counters */
    void *workspace;             /* the device workspace (the entry's workspace_bytes,
                                    then the counters 16-byte aligned); NULL if none.
                                    Tests poison it between launches of kernels that
                                    write it before reading it */
    void *counters;              /* its counters (the entry's counter_count, zeroed at
                                    bind; each launch leaves them as the next needs
                                    them); NULL if none */
} fg_binding_info;

FG_API fg_status fg_binding_get_info(const fg_binding *b, fg_binding_info *out);

/* ---- helpers for tests, examples and the harness ---- */

FG_API fg_status fg_mem_alloc(fg_context *ctx, size_t bytes, void **dptr);
FG_API fg_status fg_mem_free(fg_context *ctx, void *dptr);   /* NULL is ignored */
FG_API fg_status fg_memcpy_to_device(fg_context *ctx, void *dst, const void *src, size_t bytes);
FG_API fg_status fg_memcpy_to_host(fg_context *ctx, void *dst, const void *src, size_t bytes);
FG_API fg_status fg_synchronize(fg_context *ctx, void *stream);

/* Makes the context's device current on the calling thread (CUDA: its
 * primary context; HIP: hipSetDevice), for driver calls made directly. */
FG_API fg_status fg_make_current(fg_context *ctx);

/* A driver entry point for what libfgrt does not wrap (streams, events,
 * graphs): CUDA through cuGetProcAddress with the CUDA 12.0 API version,
 * HIP through dlsym.  NULL if absent. */
FG_API void *fg_driver_symbol(const fg_context *ctx, const char *name);

#ifdef __cplusplus
}
#endif

#endif
