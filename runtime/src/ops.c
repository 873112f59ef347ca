/* The op table: per op, how its args struct maps to the registry key and to
 * the kernel's parameters, and the guards a table cannot express.  A new
 * kernel family adds its args struct and bind function to fgrt.h and one
 * descriptor here. */
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* ---- rmsnorm: kernel (x, weight, y, int rows, float eps) ---- */

#define PTR(field, bytes) {#field, FG_ARG_DEVPTR, offsetof(fg_rmsnorm_args, field), .align = bytes}

static const fg_arg_desc rmsnorm_args[] = {
    PTR(x, 16), /* 16-byte vector loads and stores */
    PTR(weight, 16),
    PTR(y, 16),
    {"rows", FG_ARG_I32, offsetof(fg_rmsnorm_args, rows), .min = 1},
    {"eps", FG_ARG_F32, offsetof(fg_rmsnorm_args, eps), .align = 0},
};
#undef PTR

static bool overlap(uintptr_t a, size_t na, uintptr_t b, size_t nb)
{
    return a < b + nb && b < a + na;
}

/* Runs after the table's checks (hidden and rows positive, pointers set).
 * The kernel takes x, weight and y as restrict pointers: an in-place call
 * would be undefined behaviour, so it is refused. */
static fg_status rmsnorm_check(const void *p)
{
    const fg_rmsnorm_args *a = p;
    const size_t elem = fg_reg_dtype_bytes(a->dtype);
    const size_t row = (size_t)a->hidden * elem;
    if ((size_t)a->rows > SIZE_MAX / row)
        return fg_fail(FG_ERR_BAD_SHAPE, "rmsnorm: rows %lld x hidden %lld overflows", a->rows,
                       a->hidden);
    const size_t all = row * (size_t)a->rows;
    const uintptr_t y = (uintptr_t)a->y;
    if (overlap(y, all, (uintptr_t)a->x, all) || overlap(y, all, (uintptr_t)a->weight, row))
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "rmsnorm: y overlaps x or weight; the kernel is not in-place");
    return FG_OK;
}

const fg_op_desc fg_op_rmsnorm = {
    .op = "rmsnorm",
    .dtype_offset = offsetof(fg_rmsnorm_args, dtype),
    .nkeys = 1,
    .key_offsets = {offsetof(fg_rmsnorm_args, hidden)},
    .rows_offset = offsetof(fg_rmsnorm_args, rows),
    .instance_offset = offsetof(fg_rmsnorm_args, instance),
    .args = rmsnorm_args,
    .nargs = sizeof rmsnorm_args / sizeof rmsnorm_args[0],
    .check = rmsnorm_check,
};

fg_status fg_rmsnorm_bind(fg_context *ctx, const fg_rmsnorm_args *args, fg_binding **out)
{
    return fg_bind_op(ctx, &fg_op_rmsnorm, args, out);
}

/* ---- decode_attn: kernel (x, norm_w, w_qkv, b_qkv, w_o, k_cache, v_cache, block_table,
 *      positions, y, workspace, counters, int batch, float eps) ---- */

#define PTR(field, bytes) {#field, FG_ARG_DEVPTR, offsetof(fg_decode_attn_args, field), .align = bytes}

static const fg_arg_desc decode_attn_args[] = {
    PTR(x, 16),
    PTR(norm_w, 16),
    PTR(w_qkv, 16),
    {"b_qkv", FG_ARG_DEVPTR, offsetof(fg_decode_attn_args, b_qkv), .align = 2, .nullable = true},
    PTR(w_o, 16),
    PTR(k_cache, 16),
    PTR(v_cache, 16),
    {"block_table", FG_ARG_DEVPTR, offsetof(fg_decode_attn_args, block_table), .align = 4,
     .nullable = true},
    PTR(positions, 4),
    PTR(y, 16),
    {"workspace", FG_ARG_WORKSPACE, 0, .align = 0},
    {"counters", FG_ARG_COUNTERS, 0, .align = 0},
    {"batch", FG_ARG_I32, offsetof(fg_decode_attn_args, batch), .min = 1},
    {"eps", FG_ARG_F32, offsetof(fg_decode_attn_args, eps), .align = 0},
};
#undef PTR

/* A paged cache needs its block table and whole pages; a contiguous one
 * (page_size 0) takes no table. */
static fg_status check_pages(const char *op, long long page_size, const void *block_table,
                             long long max_context)
{
    if (page_size && !block_table)
        return fg_fail(FG_ERR_NULL_POINTER, "%s: page_size %lld needs block_table", op, page_size);
    if (!page_size && block_table)
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "%s: block_table given for a contiguous cache (page_size 0)", op);
    if (page_size && max_context % page_size)
        return fg_fail(FG_ERR_BAD_SHAPE,
                       "%s: max_context %lld is not a whole number of %lld-token pages", op,
                       max_context, page_size);
    return FG_OK;
}

/* A paged binding needs its block table, a biased one its bias; neither is
 * taken where the key says there is none. */
static fg_status decode_attn_check(const void *p)
{
    const fg_decode_attn_args *a = p;
    if (!a->qkv_bias != !a->b_qkv)
        return fg_fail(a->qkv_bias ? FG_ERR_NULL_POINTER : FG_ERR_INVALID_ARGUMENT,
                       "decode_attn: qkv_bias %lld with b_qkv %s", a->qkv_bias,
                       a->b_qkv ? "set" : "NULL");
    return check_pages("decode_attn", a->page_size, a->block_table, a->max_context);
}

const fg_op_desc fg_op_decode_attn = {
    .op = "decode_attn",
    .dtype_offset = offsetof(fg_decode_attn_args, dtype),
    .nkeys = 12,
    .nflags = 4,
    .optional_mask = 1u << 5 | 1u << 6,   /* sliding_window: 0 is none; page_size: 0 contiguous */
    .zero_default_offsets = {[2] = offsetof(fg_decode_attn_args, heads)},   /* kv_heads 0: MHA */
    .key_offsets = {offsetof(fg_decode_attn_args, hidden), offsetof(fg_decode_attn_args, heads),
                    offsetof(fg_decode_attn_args, kv_heads),
                    offsetof(fg_decode_attn_args, head_dim),
                    offsetof(fg_decode_attn_args, max_context),
                    offsetof(fg_decode_attn_args, sliding_window),
                    offsetof(fg_decode_attn_args, page_size),
                    offsetof(fg_decode_attn_args, batch), offsetof(fg_decode_attn_args, qkv_bias),
                    offsetof(fg_decode_attn_args, rmsnorm),
                    offsetof(fg_decode_attn_args, neox),
                    offsetof(fg_decode_attn_args, deterministic)},
    .instance_offset = offsetof(fg_decode_attn_args, instance),
    .args = decode_attn_args,
    .nargs = sizeof decode_attn_args / sizeof decode_attn_args[0],
    .check = decode_attn_check,
};

fg_status fg_decode_attn_bind(fg_context *ctx, const fg_decode_attn_args *args, fg_binding **out)
{
    return fg_bind_op(ctx, &fg_op_decode_attn, args, out);
}

/* ---- mla_decode: kernel (q, cache, cache_map, cache_chunks, block_table, lengths,
 *      out, lse, workspace, counters, int batch, float scale) ---- */

#define PTR(field, bytes) {#field, FG_ARG_DEVPTR, offsetof(fg_mla_decode_args, field), .align = bytes}

/* The cache as the TMA tiles read it (mla_decode.in's kTmaTiles, kTmaChunks): rows
 * of kv_lora + rope_dim, batch x max_context of them contiguous, or paged:
 * every row a page index reaches (TMA's coordinates are 32-bit; the block
 * table's pages are the pool's, as for every read). */
static void mla_cache_shape(const void *p, long long *rows, long long *cols)
{
    const fg_mla_decode_args *a = p;
    *rows = a->page_size ? INT32_MAX : a->batch * a->max_context;
    *cols = a->kv_lora + a->rope_dim;
}

static const fg_arg_desc mla_decode_args[] = {
    PTR(q, 16),
    PTR(cache, 16),
    /* boxes of 8 whole rows, 4 a tile (mla_decode.in's kBoxRows); zeros on
     * HIP, whose portable form does not read it */
    {"cache_map", FG_ARG_TENSOR_MAP, offsetof(fg_mla_decode_args, cache), .box_rows = 8,
     .box_cols = 0, .optional_map = true, .map_shape = mla_cache_shape},
    /* boxes of 64 rows x 64 columns, a chunk of the wgmma form's tiles
     * (mla_wgmma.in's kTmaChunks); zeros on HIP */
    {"cache_chunks", FG_ARG_TENSOR_MAP, offsetof(fg_mla_decode_args, cache), .box_rows = 64,
     .box_cols = 64, .optional_map = true, .map_shape = mla_cache_shape},
    {"block_table", FG_ARG_DEVPTR, offsetof(fg_mla_decode_args, block_table), .align = 4,
     .nullable = true},
    PTR(lengths, 4),
    PTR(out, 16),
    PTR(lse, 4),
    {"workspace", FG_ARG_WORKSPACE, 0, .align = 0},
    {"counters", FG_ARG_COUNTERS, 0, .align = 0},
    {"batch", FG_ARG_I32, offsetof(fg_mla_decode_args, batch), .min = 1},
    {"scale", FG_ARG_F32, offsetof(fg_mla_decode_args, scale), .align = 0},
};
#undef PTR

/* A paged binding needs its block table, a contiguous one takes none. */
static fg_status mla_decode_check(const void *p)
{
    const fg_mla_decode_args *a = p;
    const fg_status st = check_pages("mla_decode", a->page_size, a->block_table, a->max_context);
    if (st != FG_OK)
        return st;
    if (!(a->scale > 0))
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "mla_decode: scale %g; expected above 0",
                       (double)a->scale);
    return FG_OK;
}

const fg_op_desc fg_op_mla_decode = {
    .op = "mla_decode",
    .dtype_offset = offsetof(fg_mla_decode_args, dtype),
    .nkeys = 6,
    .optional_mask = 1u << 4,   /* page_size: 0 is contiguous */
    .key_offsets = {offsetof(fg_mla_decode_args, heads), offsetof(fg_mla_decode_args, kv_lora),
                    offsetof(fg_mla_decode_args, rope_dim),
                    offsetof(fg_mla_decode_args, max_context),
                    offsetof(fg_mla_decode_args, page_size),
                    offsetof(fg_mla_decode_args, batch)},
    .instance_offset = offsetof(fg_mla_decode_args, instance),
    .args = mla_decode_args,
    .nargs = sizeof mla_decode_args / sizeof mla_decode_args[0],
    .check = mla_decode_check,
};

fg_status fg_mla_decode_bind(fg_context *ctx, const fg_mla_decode_args *args, fg_binding **out)
{
    return fg_bind_op(ctx, &fg_op_mla_decode, args, out);
}

/* ---- mla_block: kernel (x, input_norm, w_q, w_q_a, q_a_norm, w_q_b, w_kv_a,
 *      kv_a_norm, w_kv_b, w_o, cache, block_table, positions, y, workspace,
 *      counters, int batch, float eps, float scale) ---- */

#define PTR(field, bytes) {#field, FG_ARG_DEVPTR, offsetof(fg_mla_block_args, field), .align = bytes}
#define OPT(field, bytes)                                                                        \
    {#field, FG_ARG_DEVPTR, offsetof(fg_mla_block_args, field), .align = bytes, .nullable = true}

static const fg_arg_desc mla_block_args[] = {
    PTR(x, 16),
    OPT(input_norm, 16),
    OPT(w_q, 16),
    OPT(w_q_a, 16),
    OPT(q_a_norm, 16),
    OPT(w_q_b, 16),
    PTR(w_kv_a, 16),
    PTR(kv_a_norm, 16),
    PTR(w_kv_b, 16),
    PTR(w_o, 16),
    PTR(cache, 16),
    OPT(block_table, 4),
    PTR(positions, 4),
    PTR(y, 16),
    {"workspace", FG_ARG_WORKSPACE, 0, .align = 0},
    {"counters", FG_ARG_COUNTERS, 0, .align = 0},
    {"batch", FG_ARG_I32, offsetof(fg_mla_block_args, batch), .min = 1},
    {"eps", FG_ARG_F32, offsetof(fg_mla_block_args, eps), .align = 0},
    {"scale", FG_ARG_F32, offsetof(fg_mla_block_args, scale), .align = 0},
};
#undef PTR
#undef OPT

/* The q path the key names takes its weights and no others; a paged cache
 * its block table. */
static fg_status mla_block_check(const void *p)
{
    const fg_mla_block_args *a = p;
    if (a->q_lora ? !a->w_q_a || !a->q_a_norm || !a->w_q_b : !a->w_q)
        return fg_fail(FG_ERR_NULL_POINTER, "mla_block: q_lora %lld needs %s", a->q_lora,
                       a->q_lora ? "w_q_a, q_a_norm and w_q_b" : "w_q");
    if (a->q_lora ? a->w_q != NULL : a->w_q_a || a->q_a_norm || a->w_q_b)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "mla_block: q_lora %lld takes %s only",
                       a->q_lora, a->q_lora ? "w_q_a, q_a_norm and w_q_b, not w_q" : "w_q");
    const fg_status st = check_pages("mla_block", a->page_size, a->block_table, a->max_context);
    if (st != FG_OK)
        return st;
    if (!(a->scale > 0) || !(a->eps > 0))
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "mla_block: scale %g and eps %g; expected both "
                       "above 0", (double)a->scale, (double)a->eps);
    const size_t all = (size_t)a->batch * (size_t)a->hidden * fg_reg_dtype_bytes(a->dtype);
    if (overlap((uintptr_t)a->y, all, (uintptr_t)a->x, all))
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "mla_block: y overlaps x; the kernel is not in-place");
    return FG_OK;
}

const fg_op_desc fg_op_mla_block = {
    .op = "mla_block",
    .dtype_offset = offsetof(fg_mla_block_args, dtype),
    .nkeys = 11,
    .optional_mask = 1u << 2 | 1u << 9,   /* q_lora and page_size: 0 is none */
    .key_offsets = {offsetof(fg_mla_block_args, hidden), offsetof(fg_mla_block_args, heads),
                    offsetof(fg_mla_block_args, q_lora), offsetof(fg_mla_block_args, kv_lora),
                    offsetof(fg_mla_block_args, rope_dim), offsetof(fg_mla_block_args, nope_dim),
                    offsetof(fg_mla_block_args, v_dim), offsetof(fg_mla_block_args, w_o_ld),
                    offsetof(fg_mla_block_args, max_context),
                    offsetof(fg_mla_block_args, page_size), offsetof(fg_mla_block_args, batch)},
    .instance_offset = offsetof(fg_mla_block_args, instance),
    .args = mla_block_args,
    .nargs = sizeof mla_block_args / sizeof mla_block_args[0],
    .check = mla_block_check,
};

fg_status fg_mla_block_bind(fg_context *ctx, const fg_mla_block_args *args, fg_binding **out)
{
    return fg_bind_op(ctx, &fg_op_mla_block, args, out);
}

/* ---- overlap_reduce: kernel (own, recv, out, int rank, int vecs) ---- */

#define PTR(field) {#field, FG_ARG_DEVPTR, offsetof(fg_overlap_reduce_args, field), .align = 16}

static const fg_arg_desc overlap_reduce_args[] = {
    PTR(own),
    PTR(recv),
    PTR(out),
    {"rank", FG_ARG_I32, offsetof(fg_overlap_reduce_args, rank), .min = 0},
    {"vecs", FG_ARG_I32, offsetof(fg_overlap_reduce_args, vecs), .min = 1},
};
#undef PTR

/* The kernel reads own and recv through restrict pointers while it writes
 * out: refused in place. */
static fg_status overlap_reduce_check(const void *p)
{
    const fg_overlap_reduce_args *a = p;
    if (a->rank >= a->world)
        return fg_fail(FG_ERR_BAD_SHAPE, "overlap_reduce: rank %lld of world %lld", a->rank,
                       a->world);
    const size_t block = (size_t)a->vecs * 16;
    if ((size_t)a->world > SIZE_MAX / block)
        return fg_fail(FG_ERR_BAD_SHAPE, "overlap_reduce: world %lld x %lld vectors overflows",
                       a->world, a->vecs);
    const uintptr_t out = (uintptr_t)a->out;
    if (overlap(out, block, (uintptr_t)a->own, block) ||
        overlap(out, block, (uintptr_t)a->recv, block * (size_t)a->world))
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "overlap_reduce: out overlaps own or recv; the kernel is not in-place");
    return FG_OK;
}

const fg_op_desc fg_op_overlap_reduce = {
    .op = "overlap_reduce",
    .dtype_offset = offsetof(fg_overlap_reduce_args, dtype),
    .nkeys = 1,
    .key_offsets = {offsetof(fg_overlap_reduce_args, world)},
    .args = overlap_reduce_args,
    .nargs = sizeof overlap_reduce_args / sizeof overlap_reduce_args[0],
    .check = overlap_reduce_check,
};

fg_status fg_overlap_reduce_bind(fg_context *ctx, const fg_overlap_reduce_args *args,
                                 fg_binding **out)
{
    return fg_bind_op(ctx, &fg_op_overlap_reduce, args, out);
}

/* ---- overlap_gemm: kernel (map_a, map_w, map_c, int m_rows, tile_rows, flags, epoch, int own,
 *      int shard_rows, int piece_rows, int flag_stride, status, u64 limit_ns, done,
 *      int done_rows, workspace, counters) ---- */

/* The sm_90a form's tiles (overlap_gemm.in asserts them): A in boxes of 64
 * columns x 128 rows, W of 64 x 256, C of 64 x 64 (a consumer warpgroup's
 * rows, one 128-byte swizzle row). */
#define GEMM_BM FG_GEMM_TILE_ROWS
#define MAP(field, nrows, ncols, box)                                                              \
    {#field, FG_ARG_TENSOR_MAP, offsetof(fg_overlap_gemm_args, field),                             \
     .rows_offset = offsetof(fg_overlap_gemm_args, nrows),                                         \
     .cols_offset = offsetof(fg_overlap_gemm_args, ncols), .box_rows = box, .box_cols = 64}
#define OPT(field) {#field, FG_ARG_DEVPTR, offsetof(fg_overlap_gemm_args, field), .align = 4,      \
                    .nullable = true}
#define I32(field, least) {#field, FG_ARG_I32, offsetof(fg_overlap_gemm_args, field), .min = least}

/* What both forms take after a, w, c: m and the feed, then the drain. */
#define GEMM_AFTER_ABC                                                                             \
    I32(m, GEMM_BM), OPT(tile_rows), OPT(flags), OPT(epoch), I32(own, -1), I32(shard_rows, 0),     \
        I32(piece_rows, 0), I32(flag_stride, 0), OPT(status),                                      \
        {"limit_ns", FG_ARG_U64, offsetof(fg_overlap_gemm_args, limit_ns), .min = 0}, OPT(done),  \
        I32(done_rows, 0)
#define PTR16(field) {#field, FG_ARG_DEVPTR, offsetof(fg_overlap_gemm_args, field), .align = 16}

/* After the drain, both forms take the workspace and counters of their
 * last round's split over K. */
#define GEMM_SPLIT                                                                                 \
    {"workspace", FG_ARG_WORKSPACE, 0, .align = 0}, {"counters", FG_ARG_COUNTERS, 0, .align = 0}

static const fg_arg_desc overlap_gemm_args[] = {
    MAP(a, m, k, GEMM_BM), MAP(w, n, k, FG_GEMM_TILE_COLS), MAP(c, m, n, 64), GEMM_AFTER_ABC,
    GEMM_SPLIT,
};
/* The portable form's (overlap_gemm_portable.in): a, w, c as pointers. */
static const fg_arg_desc overlap_gemm_portable_args[] = {
    PTR16(a), PTR16(w), PTR16(c), GEMM_AFTER_ABC, GEMM_SPLIT,
};
#undef GEMM_SPLIT
#undef GEMM_AFTER_ABC
#undef PTR16
#undef MAP
#undef OPT
#undef I32

/* Whole tile rows; a feed whose waits can be met and whose time limit stays
 * under the kernel's own stage waits (they trap after about 35 s). */
static fg_status overlap_gemm_check(const void *p)
{
    const fg_overlap_gemm_args *a = p;
    if (a->m % GEMM_BM)
        return fg_fail(FG_ERR_BAD_SHAPE, "overlap_gemm: m %lld is not a multiple of %d", a->m,
                       GEMM_BM);
    if (a->done && (a->done_rows < GEMM_BM || a->done_rows % GEMM_BM || a->m % a->done_rows))
        return fg_fail(FG_ERR_BAD_SHAPE, "overlap_gemm: done_rows %lld; expected whole tile rows "
                       "of %d that divide m %lld", a->done_rows, GEMM_BM, a->m);
    if (!a->flags)
        return FG_OK;
    if (!a->epoch || !a->status)
        return fg_fail(FG_ERR_NULL_POINTER, "overlap_gemm: flags given without %s",
                       a->epoch ? "status" : "epoch");
    if (a->shard_rows < 1 || a->piece_rows < 1 || a->shard_rows % a->piece_rows ||
        a->m % a->shard_rows || a->flag_stride < a->shard_rows / a->piece_rows ||
        a->own >= a->m / a->shard_rows)
        return fg_fail(FG_ERR_BAD_SHAPE, "overlap_gemm: m %lld in blocks of %lld rows, pieces of "
                       "%lld, %lld flags a block, own block %lld: expected whole blocks of whole "
                       "pieces, a flag for each, own below the blocks", a->m, a->shard_rows,
                       a->piece_rows, a->flag_stride, a->own);
    if (a->limit_ns < 1 || a->limit_ns > FG_GEMM_MAX_LIMIT_NS)
        return fg_fail(FG_ERR_BAD_SHAPE, "overlap_gemm: limit_ns %lld; expected 1 .. %lld (%g "
                       "s; the wgmma form's stage waits trap after about 35 s)",
                       a->limit_ns, FG_GEMM_MAX_LIMIT_NS, FG_GEMM_MAX_LIMIT_NS * 1e-9);
    return FG_OK;
}
#undef GEMM_BM

/* The two forms' ops: one product, feed and drain, their a, w, c passed
 * as tensor maps (overlap_gemm) or as pointers (overlap_gemm_portable). */
#define GEMM_OP(name, argv)                                                                        \
    {.op = name,                                                                                   \
     .dtype_offset = offsetof(fg_overlap_gemm_args, dtype),                                        \
     .nkeys = 2,                                                                                   \
     .key_offsets = {offsetof(fg_overlap_gemm_args, n), offsetof(fg_overlap_gemm_args, k)},        \
     .instance_offset = offsetof(fg_overlap_gemm_args, instance),                                  \
     .args = argv,                                                                                 \
     .nargs = sizeof argv / sizeof argv[0],                                                        \
     .check = overlap_gemm_check}
const fg_op_desc fg_op_overlap_gemm = GEMM_OP("overlap_gemm", overlap_gemm_args);
const fg_op_desc fg_op_overlap_gemm_portable =
    GEMM_OP("overlap_gemm_portable", overlap_gemm_portable_args);
#undef GEMM_OP

fg_status fg_overlap_gemm_bind(fg_context *ctx, const fg_overlap_gemm_args *args,
                               fg_binding **out)
{
    return fg_bind_op(ctx, &fg_op_overlap_gemm, args, out);
}

fg_status fg_overlap_gemm_portable_bind(fg_context *ctx, const fg_overlap_gemm_args *args,
                                        fg_binding **out)
{
    return fg_bind_op(ctx, &fg_op_overlap_gemm_portable, args, out);
}
