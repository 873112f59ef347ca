/* The overlap executor (fgrt_overlap.h): one rank's issue order replayed on
 * its device with the copy engine, flags in device memory and the caller's
 * GEMM and reduction, or (chunk_fused) the generated GEMM fed by the flags. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fgrt_overlap.h"
#include "internal.h"

enum { MAX_STREAMS = FGRT_MAX_STREAMS, MAX_WORLD = FGRT_MAX_WORLD };

/* A peer's memory as this process addresses it. */
typedef struct peer_map {
    char *flags, *a, *recv;
    void *ipc[3];   /* bases opened through IPC (closed at destroy), else NULL */
} peer_map;

/* One flag a call waits on: which rank sets it, which flag. */
typedef struct awaited {
    unsigned peer, flag;
} awaited;

struct fgrt_overlap {
    fg_context *ctx;
    fg_driver *drv;
    fgrt_overlap_args args;
    size_t es;               /* bytes per element */
    long long rows;          /* m / world */
    unsigned chunks;         /* pieces per row block (1 but for chunk_overlap, chunk_fused) */
    unsigned lanes;          /* copy lanes (args.lanes, 0 read as 1) */
    unsigned node_ranks;     /* the hierarchical plan's ranks a node, or 0 (one node) */
    unsigned nodes, node, place;   /* ... its nodes; this rank's node and place in it */
    unsigned nstreams;       /* 2 + lanes: the copy lanes' and the GEMMs' (the
                                hierarchical plan: one more, its steps between nodes) */
    size_t block_a, block_c; /* bytes of a row block of A and of C */
    fgrt_op *ops;
    size_t nops;
    void **done;             /* per op: an event where a later op follows it, else NULL */
    awaited *waits;
    size_t nwaits;
    void *st[MAX_STREAMS];
    void *st_host;           /* the host's reads and releases of the flags: never the legacy
                                stream, which would wait for a blocking caller stream that
                                waits for this call */
    void *ev_in, *ev_bar, *ev_join[MAX_STREAMS];
    unsigned nflags;         /* per rank: fgrt_overlap_flags() */
    unsigned *flags;         /* device: [world][nflags] set by each rank, then the
                                TAIL_WORDS of enum tail_word */
    void *recv;              /* RS: [world][rows, n] */
    void *sums;              /* the hierarchical RS: its node's sums [nodes][rows, n], the
                                block of node i's member at i */
    void *across;            /* ... the other nodes' sums of its own block [nodes][rows, n],
                                node i's at i (its own node's unused) */
    fg_binding *reduction[MAX_WORLD];   /* RS without a reduce callback: the generated
                                kernel (the hierarchical plan's: one a node's block) */
    fg_binding *reduction_across;   /* ... the hierarchical plan's last, over the nodes' sums */
    fg_binding *fused;       /* chunk_fused: the generated GEMM over the whole gathered A */
    bool fused_portable;     /* ... its portable form (plain pointers), not the wgmma one */
    int *feed;               /* chunk_fused, device: its tile order [m / 128], its status
                                word (AG: FG_GEMM_LATE where a wait ran past its limit), then
                                (RS) its counters of rows written, [world][chunks] */
    unsigned per_piece;      /* chunk_fused RS: a piece's counter reaches this a call */
    double fused_limit_s;    /* chunk_fused: its waits' limit, min(timeout_s, FUSED_LIMIT_S) */
    unsigned epoch;          /* the latest call's */
    bool connected, failed;
    fg_status failure;
    unsigned marked_by;      /* the failure mark a wait read (1 + the rank that failed), or 0 */
    peer_map peer[MAX_WORLD];
};

#define OPS(x) ((x)->drv->ops)

static unsigned *flag_at(const fgrt_overlap *x, unsigned *flags, unsigned rank, unsigned flag)
{
    return flags + (size_t)rank * x->nflags + flag;
}

/* The words after a rank's [world][nflags] flags. */
enum tail_word {
    WORD_EPOCH,      /* the call's epoch, copied into the peers' flags */
    WORD_MARK,       /* the failure mark: 1 + a rank that failed or gave up, or 0 */
    WORD_MARK_OUT,   /* the mark this rank copies into its peers' WORD_MARK */
    TAIL_WORDS
};
static unsigned *tail_word(const fgrt_overlap *x, unsigned *flags, enum tail_word w)
{
    return flags + (size_t)x->args.world * x->nflags + w;
}

/* Peer p's flags, mapped into this process. */
static unsigned *peer_flags(const fgrt_overlap *x, unsigned p)
{
    return (unsigned *)x->peer[p].flags;
}

static bool has_overlap_ops(const fg_driver_ops *o)
{
    return o->stream_create && o->stream_destroy && o->stream_idle && o->event_create &&
           o->event_destroy && o->event_record && o->stream_wait_event && o->copy_async &&
           o->write_flag && o->wait_flag && o->ipc_export && o->ipc_open && o->ipc_close &&
           o->enable_peer && o->read_async && o->sync;
}

/* The fused GEMM's tile rows (fgrt.h) and its waits' longest limit */
enum { FUSED_BM = FG_GEMM_TILE_ROWS };
#define FUSED_LIMIT_S (FG_GEMM_MAX_LIMIT_NS * 1e-9)

/* Whether the order has the owner's reduction: RS but chunk_overlap, whose
 * GEMMs add the partials. */
static bool uses_reduction(const fgrt_overlap_args *a)
{
    return a->collective == FGRT_GEMM_RS && a->schedule != FGRT_CHUNK_OVERLAP;
}

/* The copy lanes asked for: 0 means one. */
static unsigned lanes_of(const fgrt_overlap_args *a)
{
    return a->lanes ? a->lanes : 1;
}

/* Whether peer p is one this rank maps, flags and waits on: every other
 * rank, or under the hierarchical plan those of its node. */
static bool in_scope(const fgrt_overlap *x, unsigned p)
{
    return p != x->args.rank && (!x->node_ranks || p / x->node_ranks == x->node);
}

static fg_status check_hier(const fgrt_overlap_args *a)
{
    const unsigned g = a->node_ranks;
    if (g == 0)
        return FG_OK;
    if (g < 2 || a->world % g || a->world / g < 2)
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "fgrt_overlap_create: node_ranks %u for world %u (0, or 2 or more "
                       "dividing the world into 2 nodes or more)",
                       g, a->world);
    if (a->schedule != FGRT_SHARD_OVERLAP)
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "fgrt_overlap_create: the hierarchical plan (node_ranks %u) is "
                       "shard_overlap's, not %s",
                       g, fgrt_schedule_name(a->schedule));
    if (!fgrt_overlap_hier_lanes_valid(a->collective, a->world, g, lanes_of(a)))
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "fgrt_overlap_create: %u copy lanes for the hierarchical plan in nodes "
                       "of %u (1 to %u: a lane a node peer at most)",
                       lanes_of(a), g, g - 1 < FGRT_MAX_LANES ? g - 1 : FGRT_MAX_LANES);
    if (!a->across)
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "fgrt_overlap_create: node_ranks %u and no across callback", g);
    return FG_OK;
}

static fg_status check_args(const fgrt_overlap_args *a)
{
    if (a->collective != FGRT_AG_GEMM && a->collective != FGRT_GEMM_RS)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_create: unknown collective %d",
                       (int)a->collective);
    if (a->schedule != FGRT_SERIAL_CE && a->schedule != FGRT_SHARD_OVERLAP &&
        !fgrt_schedule_chunked(a->schedule))
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "fgrt_overlap_create: schedule %s is not the executor's (serial_ce, "
                       "shard_overlap, chunk_overlap and chunk_fused are; serial NCCL is "
                       "NCCL's own call)",
                       fgrt_schedule_name(a->schedule));
    const bool fused = a->schedule == FGRT_CHUNK_FUSED;
    if (a->world < 2 || a->world > MAX_WORLD || a->rank >= a->world)
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "fgrt_overlap_create: rank %u of world %u (2 to %d ranks)", a->rank,
                       a->world, MAX_WORLD);
    const bool by_pieces = fgrt_schedule_chunked(a->schedule);
    if (by_pieces ? a->chunks < 1 || a->chunks > FGRT_MAX_CHUNKS : a->chunks > 1)
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "fgrt_overlap_create: %u chunks (chunk_overlap, chunk_fused: 1 to %d; "
                       "else 0 or 1)",
                       a->chunks, FGRT_MAX_CHUNKS);
    if (!fgrt_overlap_lanes_valid(a->collective, a->schedule, a->world,
                                  by_pieces ? a->chunks : 1, lanes_of(a)))
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "fgrt_overlap_create: %u copy lanes for %s (1 to %d, and no more than "
                       "the %u copies a rank issues; 1 for GEMM+RS chunk_overlap's ring)",
                       a->lanes, fgrt_schedule_name(a->schedule), FGRT_MAX_LANES,
                       (a->world - 1) * (by_pieces ? a->chunks : 1));
    const long long pieces = (long long)a->world * (by_pieces ? a->chunks : 1);
    if (a->m <= 0 || a->n <= 0 || a->k <= 0 || a->m % pieces)
        return fg_fail(FG_ERR_BAD_SHAPE,
                       "fgrt_overlap_create: m %lld, n %lld, k %lld (positive, m a multiple of "
                       "%lld: the world size%s)",
                       a->m, a->n, a->k, pieces, by_pieces ? " times the chunks" : "");
    if (fused && a->m % FUSED_BM)
        return fg_fail(FG_ERR_BAD_SHAPE,
                       "fgrt_overlap_create: chunk_fused: m %lld is not a multiple of %d (the "
                       "generated GEMM's tile rows)", a->m, FUSED_BM);
    /* RS's pieces are counted done by whole tiles */
    if (fused && a->collective == FGRT_GEMM_RS && a->m % (pieces * FUSED_BM))
        return fg_fail(FG_ERR_BAD_SHAPE,
                       "fgrt_overlap_create: chunk_fused GEMM+RS: m %lld is not a multiple of "
                       "%lld (the world x the chunks x the GEMM's %d-row tiles)", a->m,
                       pieces * FUSED_BM, FUSED_BM);
    if (a->m > (1LL << 40) / a->k || a->m > (1LL << 40) / a->n)
        return fg_fail(FG_ERR_BAD_SHAPE, "fgrt_overlap_create: m x k or m x n too large");
    if (fg_reg_dtype_bytes(a->dtype) == 0)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_create: unknown dtype %d",
                       (int)a->dtype);
    const bool rs = a->collective == FGRT_GEMM_RS;
    if (!a->a || !a->c || (rs && !a->out))
        return fg_fail(FG_ERR_NULL_POINTER, "fgrt_overlap_create: %s is NULL",
                       !a->a ? "a" : !a->c ? "c" : "out");
    if (fused ? !a->w : !a->gemm)
        return fused ? fg_fail(FG_ERR_NULL_POINTER, "fgrt_overlap_create: chunk_fused: w is NULL")
                     : fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_create: no gemm callback");
    const long long block_bytes = a->m / a->world * a->n * (long long)fg_reg_dtype_bytes(a->dtype);
    if (uses_reduction(a) && !a->reduce && block_bytes % 16)
        return fg_fail(FG_ERR_BAD_SHAPE,
                       "fgrt_overlap_create: the generated reduction streams 16-byte vectors; a "
                       "row block of m / world x n is %lld bytes (give a reduce callback)",
                       block_bytes);
    if (!(a->timeout_s >= 0) || a->timeout_s > 3600)
        return fg_fail(FG_ERR_INVALID_ARGUMENT,
                       "fgrt_overlap_create: timeout_s %g (0 to 3600; 0: 10 s)", a->timeout_s);
    return check_hier(a);
}

/* The order, the ops later ops follow (an event each) and the flags waited on. */
static fg_status plan(fgrt_overlap *x)
{
    const fgrt_overlap_args *a = &x->args;
    x->nops = x->node_ranks ? fgrt_overlap_hier_ops(a->collective, a->world, x->node_ranks,
                                                    x->lanes, a->rank, NULL, 0)
                            : fgrt_overlap_ops(a->collective, a->schedule, a->world, x->chunks,
                                               x->lanes, a->rank, NULL, 0);
    x->ops = calloc(x->nops, sizeof *x->ops);
    x->done = calloc(x->nops, sizeof *x->done);
    /* a barrier waits on every peer; the fused GEMM on every peer's pieces */
    x->waits = calloc(x->nops * a->world + (size_t)a->world * x->chunks, sizeof *x->waits);
    if (!x->ops || !x->done || !x->waits)
        return fg_fail(FG_ERR_OUT_OF_MEMORY, "fgrt_overlap_create: out of host memory");
    if (x->node_ranks)
        fgrt_overlap_hier_ops(a->collective, a->world, x->node_ranks, x->lanes, a->rank, x->ops,
                              x->nops);
    else
        fgrt_overlap_ops(a->collective, a->schedule, a->world, x->chunks, x->lanes, a->rank,
                         x->ops, x->nops);
    for (size_t i = 0; i < x->nops; i++) {
        const fgrt_op *op = &x->ops[i];
        fg_status st = FG_OK;
        if (op->after >= 0 && !x->done[op->after])
            st = OPS(x)->event_create(x->drv, &x->done[op->after]);
        if (st != FG_OK)
            return st;
        if (op->kind == FGRT_OP_WAIT)
            x->waits[x->nwaits++] = (awaited){(unsigned)op->peer, op->flag};
        /* AG's fused GEMM waits on its own, but a timeout names and releases its flags too */
        for (unsigned p = 0; op->kind == FGRT_OP_FUSED_GEMM && a->collective == FGRT_AG_GEMM &&
                             p < a->world;
             p++)
            for (unsigned j = 0; p != a->rank && j < x->chunks; j++)
                x->waits[x->nwaits++] = (awaited){p, FGRT_FLAG_SENT + j};
        if (op->kind == FGRT_OP_BARRIER || op->kind == FGRT_OP_NODE_BARRIER)
            for (unsigned p = 0; p < a->world; p++)
                if (in_scope(x, p))
                    x->waits[x->nwaits++] = (awaited){p, op->flag};
        if (op->stream >= x->nstreams)   /* the hierarchical plan's steps between nodes */
            x->nstreams = op->stream + 1;
    }
    return FG_OK;
}

static fg_status make_streams(fgrt_overlap *x)
{
    fg_status st = FG_OK;
    for (unsigned s = 0; s < x->nstreams && st == FG_OK; s++) {
        st = OPS(x)->stream_create(x->drv, &x->st[s]);
        if (st == FG_OK)
            st = OPS(x)->event_create(x->drv, &x->ev_join[s]);
    }
    if (st == FG_OK)
        st = OPS(x)->stream_create(x->drv, &x->st_host);
    if (st == FG_OK)
        st = OPS(x)->event_create(x->drv, &x->ev_in);
    if (st == FG_OK)
        st = OPS(x)->event_create(x->drv, &x->ev_bar);
    return st;
}

/* This rank's own row block of its partials (RS). */
static const char *own_block(const fgrt_overlap *x)
{
    return (const char *)x->args.c + (size_t)x->args.rank * x->block_c;
}

/* The hierarchical RS's sum of row block b (of its column): its own
 * partial plus its node peers' in the node_ranks receive slots of b's node
 * (offset from this rank's, as its peers push them), into the sums' block of
 * b's node.  Flat: this rank's block, every slot, the caller's out.  The
 * hierarchical RS's last sum: across_sum. */
typedef struct block_sum {
    const char *own, *recv;
    void *out;
    unsigned world, rank, node;   /* node: b's (0 flat) */
} block_sum;

static block_sum sum_of(const fgrt_overlap *x, int b)
{
    const fgrt_overlap_args *a = &x->args;
    if (!x->node_ranks)
        return (block_sum){own_block(x), x->recv, a->out, a->world, a->rank, 0};
    const unsigned node = (unsigned)b / x->node_ranks;
    const unsigned off = (node + x->nodes - x->node) % x->nodes;
    return (block_sum){(const char *)a->c + (size_t)b * x->block_c,
                       (const char *)x->recv + (size_t)off * x->node_ranks * x->block_c,
                       (char *)x->sums + (size_t)node * x->block_c, x->node_ranks, x->place,
                       node};
}

/* The hierarchical RS's last sum: its node's sum of its own block plus the
 * other nodes' (received by the steps between nodes), into the caller's out. */
static block_sum across_sum(const fgrt_overlap *x)
{
    return (block_sum){(const char *)x->sums + (size_t)x->node * x->block_c, x->across,
                       x->args.out, x->nodes, x->node, x->node};
}

/* The generated overlap_reduce kernel of the context's registry over t,
 * bound into *out. */
static fg_status bind_reduction(fgrt_overlap *x, block_sum t, fg_binding **out)
{
    const fg_overlap_reduce_args r = {
        .dtype = x->args.dtype, .world = t.world, .rank = t.rank,
        .vecs = (long long)(x->block_c / 16), .own = t.own, .recv = t.recv, .out = t.out};
    const fg_status st = fg_overlap_reduce_bind(x->ctx, &r, out);
    if (st != FG_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", fg_last_error());
        return fg_fail(st,
                       "fgrt_overlap_create: no reduce callback, and the generated reduction "
                       "does not bind (%s)",
                       why);
    }
    return FG_OK;
}

/* The fused GEMM's feed: its m / FUSED_BM tile rows, then its status word
 * (FG_GEMM_LATE where a wait ran out), then (RS) its done counters. */
static unsigned *fused_status(const fgrt_overlap *x)
{
    return (unsigned *)x->feed + x->args.m / FUSED_BM;
}

/* RS: the done counter of piece `part` of row block `block` (1 for each 128
 * x 128 of its rows written, FG_GEMM_DONE_COLS; zeroed once its wait has
 * passed, FGRT_OP_WAIT_DONE). */
static unsigned *fused_done(const fgrt_overlap *x, size_t block, size_t part)
{
    return fused_status(x) + 1 + block * x->chunks + part;
}

/* Fails with st, saying why the generated GEMM does not bind (fg_last_error()). */
static fg_status fused_unbound(fg_status st)
{
    char why[512];
    snprintf(why, sizeof why, "%s", fg_last_error());
    return fg_fail(st, "fgrt_overlap_create: chunk_fused: the generated GEMM does not bind (%s)",
                   why);
}

/* chunk_fused: the generated GEMM of the context's registry over all of A,
 * its tile order, status and (RS) counters in `feed`.  AG: fed by this
 * rank's flags (piece j of rank p's block at flag_at(p, FGRT_FLAG_SENT +
 * j), the epoch its tail word); RS: drained into a counter a piece. */
static fg_status bind_fused(fgrt_overlap *x)
{
    const fgrt_overlap_args *a = &x->args;
    const bool ag = a->collective == FGRT_AG_GEMM;
    const size_t tiles = (size_t)(a->m / FUSED_BM);
    const size_t words = tiles + 1 + (ag ? 0 : (size_t)a->world * x->chunks);
    int *order = malloc(tiles * sizeof *order);
    if (!order)
        return fg_fail(FG_ERR_OUT_OF_MEMORY, "fgrt_overlap_create: out of host memory");
    fg_status st = fgrt_overlap_tile_rows(a->collective, FGRT_CHUNK_FUSED, a->world, x->chunks,
                                          a->rank, a->m, FUSED_BM, order, tiles) == tiles
                       ? FG_OK
                       : fg_fail(FG_ERR_BAD_SHAPE, "fgrt_overlap_create: no tile order for m "
                                 "%lld in %u x %u pieces", a->m, a->world, x->chunks);
    void *p = NULL;
    if (st == FG_OK && (st = OPS(x)->alloc(x->drv, words * sizeof(int), &p)) == FG_OK)
        x->feed = p;
    if (st == FG_OK)
        st = OPS(x)->zero(x->drv, x->feed, words * sizeof(int));
    if (st == FG_OK)
        st = OPS(x)->copy(x->drv, x->feed, order, tiles * sizeof(int), true);
    free(order);
    if (st != FG_OK)
        return st;
    x->fused_limit_s = a->timeout_s < FUSED_LIMIT_S ? a->timeout_s : FUSED_LIMIT_S;
    /* AG: fed by this rank's flags; RS: drained into counters of a piece's rows */
    const long long piece_rows = x->rows / x->chunks;
    /* the contract's count, not a tile's: the portable form's tiles on AMD are
     * 128 columns wide, so n need only be a multiple of 128 there */
    x->per_piece = (unsigned)(piece_rows / FUSED_BM * (a->n / FG_GEMM_DONE_COLS));
    const fg_overlap_gemm_args g = {
        .dtype = a->dtype, .n = a->n, .k = a->k, .m = a->m, .a = a->a, .w = a->w, .c = a->c,
        .tile_rows = x->feed, .flags = ag ? x->flags + FGRT_FLAG_SENT : NULL,
        .epoch = tail_word(x, x->flags, WORD_EPOCH), .status = fused_status(x),
        .own = a->rank, .shard_rows = x->rows, .piece_rows = piece_rows,
        .flag_stride = x->nflags, .limit_ns = (long long)(x->fused_limit_s * 1e9),
        .done = ag ? NULL : fused_done(x, 0, 0), .done_rows = piece_rows};
    st = x->fused_portable ? fg_overlap_gemm_portable_bind(x->ctx, &g, &x->fused)
                           : fg_overlap_gemm_bind(x->ctx, &g, &x->fused);
    return st == FG_OK ? FG_OK : fused_unbound(st);
}

/* chunk_fused's GEMM for (n, k): the wgmma form's op where the registry has
 * it for this device, else the portable form's (AMD, or an sm_90a target
 * without clusters).  Both take the same feed (tile order, flags, status)
 * and drain (done counters reaching n / 128 a tile row), so the plan is the
 * same; only the binding differs (tensor maps or plain pointers). */
static fg_status fused_lookup(fg_context *ctx, const fgrt_overlap_args *a, bool *portable)
{
    const long long key[2] = {a->n, a->k};
    const fg_kernel_entry *gemm = NULL;
    *portable = false;
    fg_status st = fg_context_lookup(ctx, "overlap_gemm", a->dtype, key, 2, &gemm);
    if (st == FG_OK && gemm->arch != FG_REG_ARCH_SM90A)   /* (the generator emits none) */
        return fg_fail(FG_ERR_UNSUPPORTED_DEVICE,
                       "fgrt_overlap_create: chunk_fused: the registry's %s is an overlap_gemm "
                       "for %s; that op is the sm_90a wgmma form's (tensor maps)",
                       gemm->name, fg_reg_arch_name(gemm->arch));
    if (st != FG_ERR_NO_MATCHING_INSTANCE)
        return st;
    char wgmma_why[512];
    snprintf(wgmma_why, sizeof wgmma_why, "%s", fg_last_error());
    st = fg_context_lookup(ctx, "overlap_gemm_portable", a->dtype, key, 2, &gemm);
    if (st == FG_OK)
        *portable = true;
    else if (st == FG_ERR_NO_MATCHING_INSTANCE)
        st = fg_fail(st, "%s; and %s", wgmma_why, fg_last_error());
    return st;
}

fg_status fgrt_overlap_create(fg_context *ctx, const fgrt_overlap_args *args, fgrt_overlap **out)
{
    if (!out)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_create: out is NULL");
    *out = NULL;
    if (!ctx || !args)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_create: %s is NULL",
                       !ctx ? "ctx" : "args");
    fg_status st = check_args(args);
    if (st != FG_OK)
        return st;
    /* chunk_fused's GEMM looked up before anything is made (bound once the flags exist) */
    bool portable = false;
    if (args->schedule == FGRT_CHUNK_FUSED && (st = fused_lookup(ctx, args, &portable)) != FG_OK)
        return st == FG_ERR_UNSUPPORTED_DEVICE ? st : fused_unbound(st);
    if (!has_overlap_ops(ctx->drv->ops))
        return fg_fail(FG_ERR_UNSUPPORTED_DEVICE,
                       "fgrt_overlap_create: the device's driver has no overlap executor");
    fgrt_overlap *x = calloc(1, sizeof *x);
    if (!x)
        return fg_fail(FG_ERR_OUT_OF_MEMORY, "fgrt_overlap_create: out of host memory");
    x->ctx = ctx, x->drv = ctx->drv, x->args = *args, x->fused_portable = portable;
    if (x->args.timeout_s == 0)
        x->args.timeout_s = 10.0;
    x->es = fg_reg_dtype_bytes(args->dtype);
    x->rows = args->m / args->world;
    x->chunks = fgrt_schedule_chunked(args->schedule) ? args->chunks : 1;
    x->lanes = lanes_of(args);
    x->nstreams = 2 + x->lanes;
    x->block_a = (size_t)x->rows * args->k * x->es;
    x->block_c = (size_t)x->rows * args->n * x->es;
    x->node_ranks = args->node_ranks;
    if (x->node_ranks)
        x->nodes = args->world / x->node_ranks, x->node = args->rank / x->node_ranks,
        x->place = args->rank % x->node_ranks;
    x->nflags = x->node_ranks
                    ? fgrt_overlap_hier_flags(args->collective, args->world, x->node_ranks)
                    : fgrt_overlap_flags(args->collective, args->schedule, args->world,
                                         x->chunks);
    st = plan(x);
    if (st == FG_OK)
        st = make_streams(x);
    const size_t flag_bytes = ((size_t)args->world * x->nflags + TAIL_WORDS) * sizeof(unsigned);
    void *p = NULL;
    if (st == FG_OK && (st = OPS(x)->alloc(x->drv, flag_bytes, &p)) == FG_OK)
        x->flags = p;
    if (st == FG_OK)
        st = OPS(x)->zero(x->drv, x->flags, flag_bytes);
    if (st == FG_OK && args->collective == FGRT_GEMM_RS)
        st = OPS(x)->alloc(x->drv, (size_t)args->world * x->block_c, &x->recv);
    if (st == FG_OK && args->collective == FGRT_GEMM_RS && x->node_ranks)
        st = OPS(x)->alloc(x->drv, (size_t)x->nodes * x->block_c, &x->sums);
    if (st == FG_OK && args->collective == FGRT_GEMM_RS && x->node_ranks)
        st = OPS(x)->alloc(x->drv, (size_t)x->nodes * x->block_c, &x->across);
    /* the generated reduction: one binding, or the hierarchical plan's one a node
     * (node i's block of this rank's column: rank i x node_ranks + place) and the
     * last one across the nodes */
    const bool generated = uses_reduction(args) && !args->reduce;
    for (unsigned i = 0; st == FG_OK && generated && i < (x->node_ranks ? x->nodes : 1); i++) {
        const block_sum t = sum_of(x, (int)(i * x->node_ranks + x->place));
        st = bind_reduction(x, t, &x->reduction[t.node]);
    }
    if (st == FG_OK && generated && x->node_ranks)
        st = bind_reduction(x, across_sum(x), &x->reduction_across);
    if (st == FG_OK && args->schedule == FGRT_CHUNK_FUSED)
        st = bind_fused(x);
    if (st != FG_OK) {
        fgrt_overlap_destroy(x);
        return st;
    }
    *out = x;
    return FG_OK;
}

/* ---- the handle ---- */

/* 4: flags numbered by piece alone (a version 3 peer writes them at other offsets);
 * 5: two words more after the epoch word, the failure mark and its source (a
 * version 4 peer's flags end before them, so a mark would land past its end);
 * 6: node_ranks (the hierarchical plan);
 * 7: the hierarchical plan's step between nodes is one exchange a step, of
 * own blocks (AG) or node sums (RS) (a version 6 peer meets the first step
 * with its all-gather or reduce-scatter of all of them) */
enum { WIRE_MAGIC = 0x66676f76 /* "fgov" */, WIRE_VERSION = 7 };

typedef struct wire {
    uint32_t magic, version;
    int32_t pid, ordinal;
    uint32_t collective, schedule, chunks, world, rank, dtype, node_ranks;
    uint32_t ipc_ok;              /* bit i: buffer i exported for other processes */
    uint64_t process;             /* this process's token: pids repeat across containers */
    int64_t m, n, k;
    uint64_t ptr[3], offset[3];   /* flags, a, recv: raw (one process), offsets in their IPC
                                     allocations */
    unsigned char ipc[3][FG_IPC_HANDLE_BYTES];
} wire;
_Static_assert(sizeof(wire) <= sizeof(fgrt_overlap_handle), "the handle holds the wire form");

/* A token for this process, drawn once: with the pid it tells "the same
 * process" apart from one with the same pid in another PID namespace. */
static uint64_t token;
static pthread_once_t token_once = PTHREAD_ONCE_INIT;

static void draw_token(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    uint64_t z = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    z ^= (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&token;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;   /* splitmix64's finalizer */
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    token = z ^ (z >> 31);
}

static uint64_t process_token(void)
{
    pthread_once(&token_once, draw_token);
    return token;
}

fg_status fgrt_overlap_export(const fgrt_overlap *x, fgrt_overlap_handle *out)
{
    if (!x || !out)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_export: %s is NULL",
                       !x ? "executor" : "out");
    wire w;
    memset(&w, 0, sizeof w);
    w.magic = WIRE_MAGIC, w.version = WIRE_VERSION;
    w.pid = (int32_t)getpid(), w.process = process_token(), w.ordinal = x->drv->ordinal;
    w.collective = (uint32_t)x->args.collective, w.schedule = (uint32_t)x->args.schedule;
    w.chunks = x->chunks, w.node_ranks = x->node_ranks;
    w.world = x->args.world, w.rank = x->args.rank, w.dtype = (uint32_t)x->args.dtype;
    w.m = x->args.m, w.n = x->args.n, w.k = x->args.k;
    /* what the peers map: the flags, AG's gathered A, RS's receive slots */
    const void *mem[3] = {x->flags, x->args.collective == FGRT_AG_GEMM ? x->args.a : NULL,
                          x->recv};
    for (int i = 0; i < 3; i++) {
        w.ptr[i] = (uint64_t)(uintptr_t)mem[i];
        size_t off = 0;
        /* a buffer that cannot be exported still serves ranks of this process */
        if (mem[i] && OPS(x)->ipc_export(x->drv, mem[i], w.ipc[i], &off) == FG_OK)
            w.ipc_ok |= 1u << i;
        w.offset[i] = off;
    }
    memset(out, 0, sizeof *out);
    memcpy(out->bytes, &w, sizeof w);
    return FG_OK;
}

static fg_status map_peer(fgrt_overlap *x, unsigned p, const wire *w)
{
    peer_map *pm = &x->peer[p];
    char **dst[3] = {&pm->flags, &pm->a, &pm->recv};
    const bool need[3] = {true, x->args.collective == FGRT_AG_GEMM,
                          x->args.collective == FGRT_GEMM_RS};
    if (w->pid == (int32_t)getpid() && w->process == process_token()) {
        /* one process: the pointers as they are */
        if (w->ordinal != x->drv->ordinal) {
            const fg_status st = OPS(x)->enable_peer(x->drv, w->ordinal);
            if (st != FG_OK)
                return st;
        }
        for (int i = 0; i < 3; i++)
            *dst[i] = need[i] ? (char *)(uintptr_t)w->ptr[i] : NULL;
        return FG_OK;
    }
    for (int i = 0; i < 3; i++) {
        if (!need[i])
            continue;
        if (!(w->ipc_ok >> i & 1))
            return fg_fail(FG_ERR_INVALID_ARGUMENT,
                           "fgrt_overlap_connect: rank %u's %s cannot be shared with another "
                           "process (its IPC export failed: allocate it with the driver's "
                           "allocator, cuMemAlloc / cudaMalloc or hipMalloc, not from a pool "
                           "or the virtual memory API)",
                           p, i == 0 ? "flags" : i == 1 ? "gathered A" : "receive slots");
        const fg_status st = OPS(x)->ipc_open(x->drv, w->ipc[i], &pm->ipc[i]);
        if (st != FG_OK)
            return st;
        *dst[i] = (char *)pm->ipc[i] + w->offset[i];
    }
    return FG_OK;
}

/* Closes what connect opened through IPC and forgets every peer. */
static void unmap_peers(fgrt_overlap *x)
{
    for (unsigned p = 0; p < MAX_WORLD; p++)
        for (int i = 0; i < 3; i++)
            if (x->peer[p].ipc[i])
                OPS(x)->ipc_close(x->drv, x->peer[p].ipc[i]);
    memset(x->peer, 0, sizeof x->peer);
}

fg_status fgrt_overlap_connect(fgrt_overlap *x, const fgrt_overlap_handle *all)
{
    if (!x || !all)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_connect: %s is NULL",
                       !x ? "executor" : "handles");
    if (x->connected)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_connect: already connected");
    const fgrt_overlap_args *a = &x->args;
    for (unsigned p = 0; p < a->world; p++) {
        wire w;
        memcpy(&w, all[p].bytes, sizeof w);
        if (w.magic != WIRE_MAGIC)
            return fg_fail(FG_ERR_INVALID_ARGUMENT,
                           "fgrt_overlap_connect: handle %u is not an exported executor", p);
        if (w.version != WIRE_VERSION)
            return fg_fail(FG_ERR_INVALID_ARGUMENT,
                           "fgrt_overlap_connect: handle %u is from an executor of version %u; "
                           "this one is version %u (every rank must run the same libfgrt)",
                           p, w.version, WIRE_VERSION);
        if (w.rank != p || w.world != a->world || w.collective != (uint32_t)a->collective ||
            w.schedule != (uint32_t)a->schedule || w.chunks != x->chunks ||
            w.dtype != (uint32_t)a->dtype || w.m != a->m || w.n != a->n || w.k != a->k ||
            w.node_ranks != x->node_ranks)
            return fg_fail(FG_ERR_INVALID_ARGUMENT,
                           "fgrt_overlap_connect: handle %u is rank %u of %u for %s %s (%u "
                           "chunks, nodes of %u) m %lld n %lld k %lld; this rank expects rank %u "
                           "of %u for %s %s (%u chunks, nodes of %u) m %lld n %lld k %lld",
                           p, w.rank, w.world, w.collective ? "gemm_rs" : "ag_gemm",
                           fgrt_schedule_name((fgrt_schedule)w.schedule), w.chunks,
                           w.node_ranks ? w.node_ranks : w.world, (long long)w.m,
                           (long long)w.n, (long long)w.k, p, a->world,
                           a->collective ? "gemm_rs" : "ag_gemm", fgrt_schedule_name(a->schedule),
                           x->chunks, x->node_ranks ? x->node_ranks : a->world, a->m, a->n,
                           a->k);
    }
    fg_status st = FG_OK;
    for (unsigned p = 0; p < a->world && st == FG_OK; p++) {
        if (!in_scope(x, p))   /* (another node's rank: reached through `across` alone) */
            continue;
        wire w;
        memcpy(&w, all[p].bytes, sizeof w);
        st = map_peer(x, p, &w);
    }
    if (st != FG_OK) {
        unmap_peers(x);
        return st;
    }
    x->connected = true;
    return FG_OK;
}

/* ---- one call ---- */

/* Sets flag `flag` of this rank in rank p's memory, behind the work before
 * it on `stream`: a 4-byte copy of the call's epoch word. */
static fg_status send_flag(fgrt_overlap *x, unsigned p, unsigned flag, void *stream)
{
    return OPS(x)->copy_async(x->drv, flag_at(x, peer_flags(x, p), x->args.rank, flag),
                              tail_word(x, x->flags, WORD_EPOCH), sizeof(unsigned), stream);
}

static fg_status barrier(fgrt_overlap *x, unsigned flag, unsigned epoch)
{
    const fg_driver_ops *o = OPS(x);
    fg_status st = FG_OK;
    for (unsigned s = 1; s < x->nstreams && st == FG_OK; s++) {
        st = o->event_record(x->drv, x->ev_join[s], x->st[s]);
        if (st == FG_OK)
            st = o->stream_wait_event(x->drv, x->st[0], x->ev_join[s]);
    }
    if (st == FG_OK)
        st = o->write_flag(x->drv, x->st[0], tail_word(x, x->flags, WORD_EPOCH), epoch);
    for (unsigned p = 0; p < x->args.world && st == FG_OK; p++)
        if (in_scope(x, p))
            st = send_flag(x, p, flag, x->st[0]);
    for (unsigned p = 0; p < x->args.world && st == FG_OK; p++)
        if (in_scope(x, p))
            st = o->wait_flag(x->drv, x->st[0], flag_at(x, x->flags, p, flag), epoch);
    if (st == FG_OK)
        st = o->event_record(x->drv, x->ev_bar, x->st[0]);
    for (unsigned s = 1; s < x->nstreams && st == FG_OK; s++)
        st = o->stream_wait_event(x->drv, x->st[s], x->ev_bar);
    return st;
}

static fg_status callback_failed(const char *what, const fgrt_op *op)
{
    return fg_fail(FG_ERR_DRIVER, "fgrt_overlap_run: the %s callback failed (row block %d)", what,
                   op->block);
}

/* Enqueues sum t on stream s: its generated kernel where one is bound, else
 * the caller's reduce callback. */
static fg_status enqueue_sum(fgrt_overlap *x, block_sum t, fg_binding *bound, void *s,
                             const fgrt_op *op)
{
    if (bound)
        return fg_launch(bound, s);
    const int r = x->args.reduce(x->args.user, s, t.own, t.recv, t.out, t.world, t.rank,
                                 x->rows * x->args.n);
    return r == 0 ? FG_OK : callback_failed("reduce", op);
}

static fg_status enqueue_op(fgrt_overlap *x, const fgrt_op *op, unsigned epoch)
{
    const fgrt_overlap_args *a = &x->args;
    const fg_driver_ops *o = OPS(x);
    void *s = x->st[op->stream];
    /* an op's rows: a whole block, or its piece `chunk` */
    const size_t pieces = op->chunk < 0 ? 1 : x->chunks;
    const size_t part = op->chunk < 0 ? 0 : (size_t)op->chunk;
    const size_t len_a = x->block_a / pieces, len_c = x->block_c / pieces;
    const size_t at_a = (size_t)op->block * x->block_a + part * len_a;
    const size_t at_c = (size_t)op->block * x->block_c + part * len_c;
    char *A = a->a, *C = a->c;
    switch (op->kind) {
    case FGRT_OP_BARRIER:        /* every peer */
    case FGRT_OP_NODE_BARRIER:   /* the node's (in_scope says which) */
        return barrier(x, op->flag, epoch);
    case FGRT_OP_COPY:
        if (a->collective == FGRT_AG_GEMM)   /* the own shard into the peer's same block */
            return o->copy_async(x->drv, x->peer[op->peer].a + at_a, A + at_a, len_a, s);
        /* the partial (or running sum) of a block into the peer's slot */
        return o->copy_async(x->drv,
                             x->peer[op->peer].recv + (size_t)op->slot * x->block_c + part * len_c,
                             C + at_c, len_c, s);
    case FGRT_OP_GEMM: {
        const long long rows = x->rows / (long long)pieces;
        const char *acc = op->slot < 0 ? NULL
                                       : (const char *)x->recv + (size_t)op->slot * x->block_c +
                                             part * len_c;
        /* chunk_overlap's own block: the sum is complete, into out */
        char *c = acc && op->block == (int)a->rank ? (char *)a->out + part * len_c : C + at_c;
        const int r = op->block < 0 ? a->gemm(a->user, s, A, NULL, C, a->m)
                                    : a->gemm(a->user, s, A + at_a, acc, c, rows);
        return r == 0 ? FG_OK : callback_failed("gemm", op);
    }
    case FGRT_OP_SIGNAL:   /* "piece i of what I pushed to you has landed": in the peer's memory */
        return send_flag(x, (unsigned)op->peer, op->flag, s);
    case FGRT_OP_WAIT:
        return o->wait_flag(x->drv, s, flag_at(x, x->flags, (unsigned)op->peer, op->flag), epoch);
    case FGRT_OP_REDUCE: {
        const block_sum t = sum_of(x, op->block);
        return enqueue_sum(x, t, x->reduction[t.node], s, op);
    }
    case FGRT_OP_NCCL_ACROSS: {   /* the members' blocks: AG's rows of A, RS's node sums */
        void *blocks[MAX_WORLD];
        const bool ag = a->collective == FGRT_AG_GEMM;
        for (unsigned i = 0; i < x->nodes; i++)
            blocks[i] = ag ? A + ((size_t)i * x->node_ranks + x->place) * x->block_a
                           : (char *)x->sums + (size_t)i * x->block_c;
        /* the member received from is `step` nodes back */
        const unsigned step = (x->node + x->nodes - (unsigned)op->peer / x->node_ranks) % x->nodes;
        void *in = ag ? NULL : (char *)x->across + (size_t)op->slot * x->block_c;
        const int r = a->across(a->user, s, a->collective, x->nodes, x->node, step, blocks, in,
                                x->rows * (ag ? a->k : a->n));
        return r == 0 ? FG_OK : callback_failed("across", op);
    }
    case FGRT_OP_REDUCE_ACROSS:
        return enqueue_sum(x, across_sum(x), x->reduction_across, s, op);
    case FGRT_OP_FUSED_GEMM: {   /* AG: its status cleared for this call, behind the last
                                    one's (RS: no flags, so the kernel never sets it) */
        const fg_status st = a->collective == FGRT_AG_GEMM
                                 ? o->write_flag(x->drv, s, fused_status(x), 0)
                                 : FG_OK;
        return st == FG_OK ? fg_launch(x->fused, s) : st;
    }
    case FGRT_OP_WAIT_DONE: {
        /* the piece's rows written in this call (its whole count: the GEMM
         * adds no more to it), then its counter zeroed for the next call, so
         * every call waits for per_piece itself (HIP's stream waits compare
         * unsigned: a call's multiple would wrap); the next call's GEMM
         * follows, behind its opening barrier's join of this stream */
        unsigned *done = fused_done(x, (size_t)op->block, part);
        const fg_status st = o->wait_flag(x->drv, s, done, x->per_piece);
        return st == FG_OK ? o->write_flag(x->drv, s, done, 0) : st;
    }
    case FGRT_OP_NCCL:   /* serial NCCL: the engine's own call */
        break;
    }
    return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_run: op kind %d is not the executor's",
                   (int)op->kind);
}

/* The caller's stream follows everything enqueued on the executor's
 * streams; the first failure, after trying every stream. */
static fg_status join_caller(fgrt_overlap *x, void *stream)
{
    fg_status first = FG_OK;
    for (unsigned s = 0; s < x->nstreams; s++) {
        fg_status st = OPS(x)->event_record(x->drv, x->ev_join[s], x->st[s]);
        if (st == FG_OK)
            st = OPS(x)->stream_wait_event(x->drv, stream, x->ev_join[s]);
        if (first == FG_OK)
            first = st;
    }
    return first;
}

static fg_status enqueue_call(fgrt_overlap *x, void *stream, unsigned epoch)
{
    const fg_driver_ops *o = OPS(x);
    fg_status st = o->event_record(x->drv, x->ev_in, stream);
    for (unsigned s = 0; s < x->nstreams && st == FG_OK; s++)
        st = o->stream_wait_event(x->drv, x->st[s], x->ev_in);
    for (size_t i = 0; i < x->nops && st == FG_OK; i++) {
        const fgrt_op *op = &x->ops[i];
        if (op->after >= 0)
            st = o->stream_wait_event(x->drv, x->st[op->stream], x->done[op->after]);
        if (st == FG_OK)
            st = enqueue_op(x, op, epoch);
        if (st == FG_OK && x->done[i])
            st = o->event_record(x->drv, x->done[i], x->st[op->stream]);
    }
    return st == FG_OK ? join_caller(x, stream) : st;
}

/* Before this rank releases its waits (a failed enqueue, a timeout, a
 * destroy with work left), every peer learns it: the mark is written into
 * each peer's flags and has landed before any push the release lets through
 * can, so a peer whose wait reads no mark after its streams went idle had
 * finished with its buffers before those pushes (fgrt_overlap_wait). */
static void mark_peers(fgrt_overlap *x)
{
    if (!x->connected)
        return;
    unsigned *own = tail_word(x, x->flags, WORD_MARK_OUT);   /* (copied, as the flags are) */
    /* a rank that gives up on a peer's mark passes that mark on: the third
     * ranks learn which rank failed first, not which gave up after it */
    OPS(x)->write_flag(x->drv, x->st_host, own, x->marked_by ? x->marked_by : x->args.rank + 1);
    for (unsigned p = 0; p < x->args.world; p++)
        if (in_scope(x, p))
            OPS(x)->copy_async(x->drv, tail_word(x, peer_flags(x, p), WORD_MARK), own,
                               sizeof *own, x->st_host);
    OPS(x)->sync(x->drv, x->st_host);
}

/* Every flag this rank waits on set to the call's epoch from the host's
 * stream, so that its streams drain whatever the peers do; the peers are
 * marked first (mark_peers: every release lets this rank's pushes through). */
static fg_status release(fgrt_overlap *x)
{
    mark_peers(x);
    fg_status st = FG_OK;
    for (size_t i = 0; i < x->nwaits && st == FG_OK; i++)
        st = OPS(x)->write_flag(x->drv, x->st_host,
                                flag_at(x, x->flags, x->waits[i].peer, x->waits[i].flag),
                                x->epoch);
    return st == FG_OK ? OPS(x)->sync(x->drv, x->st_host) : st;
}

/* n words of this rank's flags from `src` into host memory, on the host's
 * stream, waited for. */
static fg_status read_words(fgrt_overlap *x, unsigned *dst, const unsigned *src, size_t n)
{
    fg_status st = OPS(x)->read_async(x->drv, dst, src, n * sizeof *dst, x->st_host);
    return st == FG_OK ? OPS(x)->sync(x->drv, x->st_host) : st;
}

/* The failure mark in this rank's flags: 0, or 1 + the peer that set it. */
static fg_status read_mark(fgrt_overlap *x, unsigned *mark)
{
    return read_words(x, mark, tail_word(x, x->flags, WORD_MARK), 1);
}

static fg_status refuse_failed(const fgrt_overlap *x, const char *fn)
{
    return fg_fail(x->failure,
                   "%s: an earlier call failed (%s); every rank must destroy its executor and "
                   "make a new one",
                   fn, fg_status_string(x->failure));
}

fg_status fgrt_overlap_run(fgrt_overlap *x, void *stream)
{
    if (!x)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_run: executor is NULL");
    if (!x->connected)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_run: not connected");
    if (x->failed)
        return refuse_failed(x, "fgrt_overlap_run");
    x->epoch++;
    const fg_status st = enqueue_call(x, stream, x->epoch);
    if (st != FG_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", fg_last_error());
        release(x);
        join_caller(x, stream);   /* best effort: the caller's later work follows it */
        x->failed = true, x->failure = st;
        return fg_fail(st, "%s", why);
    }
    return FG_OK;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Polls until every stream is idle or `limit_s` passes (*idle false); with
 * `mark`, also until a peer's failure mark appears (*mark its value, *idle
 * false: nothing more will come from that peer). */
static fg_status drain(fgrt_overlap *x, double limit_s, bool *idle, unsigned *mark)
{
    const double t0 = now_s();
    const struct timespec nap = {0, 20000};
    for (;;) {
        *idle = true;
        for (unsigned s = 0; s < x->nstreams && *idle; s++) {
            const fg_status st = OPS(x)->stream_idle(x->drv, x->st[s], idle);
            if (st != FG_OK)
                return st;
        }
        if (*idle || now_s() - t0 > limit_s)
            return FG_OK;
        if (mark) {
            const fg_status st = read_mark(x, mark);
            if (st != FG_OK || *mark)
                return st;
        }
        nanosleep(&nap, NULL);
    }
}

/* "rank 1's sent(0) at call 3 (has 2)" for each awaited flag short of the
 * call's epoch: sent(D) names D, this rank, as the destination of rank 1's
 * push; chunk_overlap adds the piece (RS's ring: the sender's step and the
 * piece of it). */
static void missing_flags(fgrt_overlap *x, char *buf, size_t len)
{
    const size_t n = (size_t)x->args.world * x->nflags;
    unsigned *v = calloc(n, sizeof *v);
    size_t used = 0;
    buf[0] = '\0';
    if (!v || read_words(x, v, x->flags, n) != FG_OK) {
        snprintf(buf, len, "(the flags could not be read)");
        free(v);
        return;
    }
    for (size_t i = 0; i < x->nwaits && used < len; i++) {
        const awaited *w = &x->waits[i];
        const unsigned got = *flag_at(x, v, w->peer, w->flag);
        if ((int32_t)(got - x->epoch) >= 0)
            continue;
        char name[48];
        if (w->flag == FGRT_FLAG_START)
            snprintf(name, sizeof name, "start");
        else if (x->node_ranks)   /* the block of the i-th node after the sender's */
            snprintf(name, sizeof name, "sent(%u) of node +%u", x->args.rank,
                     w->flag - FGRT_FLAG_SENT);
        else if (!fgrt_schedule_chunked(x->args.schedule))
            snprintf(name, sizeof name, "sent(%u)", x->args.rank);
        else if (x->args.collective == FGRT_AG_GEMM || x->args.schedule == FGRT_CHUNK_FUSED)
            /* piece i of the sender's shard (AG) or partial (RS chunk_fused) */
            snprintf(name, sizeof name, "sent(%u) piece %u", x->args.rank,
                     w->flag - FGRT_FLAG_SENT);
        else   /* the ring: i = step x chunks + piece */
            snprintf(name, sizeof name, "sent(%u) step %u piece %u", x->args.rank,
                     (w->flag - FGRT_FLAG_SENT) / x->chunks,
                     (w->flag - FGRT_FLAG_SENT) % x->chunks);
        used += (size_t)snprintf(buf + used, len - used, "%srank %u's %s at call %u (has %u)",
                                 used ? ", " : "", w->peer, name, x->epoch, got);
    }
    free(v);
}

fg_status fgrt_overlap_wait(fgrt_overlap *x)
{
    if (!x)
        return fg_fail(FG_ERR_INVALID_ARGUMENT, "fgrt_overlap_wait: executor is NULL");
    bool idle = false;
    unsigned mark = 0;
    fg_status st = drain(x, x->args.timeout_s, &idle, x->failed ? NULL : &mark);
    if (st != FG_OK)
        return st;
    if (idle && x->failed)
        return refuse_failed(x, "fgrt_overlap_wait");
    /* idle: the call is done, unless a peer marked a failure before now (and
     * so before any push its release let through: those could have landed
     * while this rank's work still read its buffers), or AG's fused GEMM's
     * own wait ran out (it then went on: its output is undefined; RS's has
     * no waits) */
    unsigned late = 0;
    if (idle && (st = read_mark(x, &mark)) == FG_OK && !mark && x->fused &&
        x->args.collective == FGRT_AG_GEMM)
        st = read_words(x, &late, fused_status(x), 1);
    if (idle && (st != FG_OK || (!mark && !late)))
        return st;
    char missing[512];
    missing_flags(x, missing, sizeof missing);
    x->marked_by = mark;
    release(x);   /* (which marks the peers: this rank gives up too) */
    drain(x, x->args.timeout_s, &idle, NULL);
    if (!x->failed)   /* an earlier failure stays the one reported */
        x->failure = mark ? FG_ERR_PEER_FAILED : FG_ERR_TIMEOUT;
    x->failed = true;
    if (mark)
        return fg_fail(FG_ERR_PEER_FAILED,
                       "fgrt_overlap_wait: rank %u failed or gave up%s%s; rank %u's outputs are "
                       "undefined, its waits were released%s",
                       mark - 1, missing[0] ? " while this rank waited for " : "", missing,
                       x->args.rank, idle ? "" : ", and its streams are still busy");
    if (late)
        return fg_fail(FG_ERR_TIMEOUT,
                       "fgrt_overlap_wait: rank %u's fused GEMM waited past its limit (%.1f s) "
                       "for %s; its output is undefined",
                       x->args.rank, x->fused_limit_s,
                       missing[0] ? missing : "a piece (set since)");
    return fg_fail(FG_ERR_TIMEOUT,
                   "fgrt_overlap_wait: rank %u waited %.1f s for %s; its waits were released%s",
                   x->args.rank, x->args.timeout_s, missing[0] ? missing : "its own streams",
                   idle ? "" : ", and its streams are still busy");
}

void fgrt_overlap_destroy(fgrt_overlap *x)
{
    if (!x)
        return;
    const fg_driver_ops *o = OPS(x);
    bool idle = true, streams = x->st_host != NULL;
    for (unsigned s = 0; s < x->nstreams; s++)
        streams &= x->st[s] != NULL;
    if (streams &&
        drain(x, x->args.timeout_s, &idle, NULL) == FG_OK && !idle && x->flags) {
        release(x);   /* then nothing waits on a peer: the streams finish */
        for (unsigned s = 0; s < x->nstreams; s++)
            o->sync(x->drv, x->st[s]);
    }
    unmap_peers(x);
    for (unsigned s = 0; s < x->nstreams; s++) {
        if (x->st[s])
            o->stream_destroy(x->drv, x->st[s]);
        if (x->ev_join[s])
            o->event_destroy(x->drv, x->ev_join[s]);
    }
    if (x->st_host)
        o->stream_destroy(x->drv, x->st_host);
    if (x->ev_in)
        o->event_destroy(x->drv, x->ev_in);
    if (x->ev_bar)
        o->event_destroy(x->drv, x->ev_bar);
    for (size_t i = 0; x->done && i < x->nops; i++)
        if (x->done[i])
            o->event_destroy(x->drv, x->done[i]);
    for (unsigned i = 0; i < MAX_WORLD; i++)
        fg_binding_free(x->reduction[i]);
    fg_binding_free(x->reduction_across);
    fg_binding_free(x->fused);
    if (x->feed)
        o->free(x->drv, x->feed);
    if (x->flags)
        o->free(x->drv, x->flags);
    if (x->recv)
        o->free(x->drv, x->recv);
    if (x->sums)
        o->free(x->drv, x->sums);
    if (x->across)
        o->free(x->drv, x->across);
    free(x->ops), free(x->done), free(x->waits);
    free(x);
}
