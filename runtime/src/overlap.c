/* The overlap executor's issue order (fgrt_overlap.h). */
#include "fgrt_overlap.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fg_registry.h"
#include "internal.h"

_Static_assert((int)FG_REG_AG_GEMM == (int)FGRT_AG_GEMM &&
                   (int)FG_REG_GEMM_RS == (int)FGRT_GEMM_RS,
               "the registry's collectives are fgrt_collective's");
_Static_assert((int)FG_REG_SERIAL_NCCL == (int)FGRT_SERIAL_NCCL &&
                   (int)FG_REG_SERIAL_CE == (int)FGRT_SERIAL_CE &&
                   (int)FG_REG_SHARD_OVERLAP == (int)FGRT_SHARD_OVERLAP &&
                   (int)FG_REG_CHUNK_OVERLAP == (int)FGRT_CHUNK_OVERLAP &&
                   (int)FG_REG_CHUNK_FUSED == (int)FGRT_CHUNK_FUSED,
               "the registry's schedules are fgrt_schedule's");

typedef struct order {
    fgrt_op *out;
    size_t max, n;
    unsigned world, lanes;
} order;

/* Appends an op (of a whole block, or none: chunk and slot -1); its index
 * (counted even past max, so the caller learns the size it needs). */
static int push(order *o, fgrt_op_kind kind, unsigned stream, int peer, int block,
                unsigned flag, int after)
{
    if (o->n < o->max)
        o->out[o->n] = (fgrt_op){.kind = kind, .stream = stream, .peer = peer, .block = block,
                                 .chunk = -1, .slot = -1, .flag = flag, .after = after};
    return (int)o->n++;
}

/* Sets the last op's piece and receive slot. */
static void piece(order *o, int index, int chunk, int slot)
{
    if ((size_t)index < o->max)
        o->out[index].chunk = chunk, o->out[index].slot = slot;
}

unsigned fgrt_overlap_copy_stream(unsigned q, unsigned lanes)
{
    const unsigned l = lanes > 1 ? q % lanes : 0;
    return l == 0 ? 0 : 2 + l;
}

/* The stream of the copy of piece j (0 for whole blocks) to peer rank + i. */
static unsigned lane(const order *o, unsigned i, unsigned j)
{
    return fgrt_overlap_copy_stream(j * (o->world - 1) + i - 1, o->lanes);
}

static void barrier(order *o, unsigned flag)
{
    push(o, FGRT_OP_BARRIER, 0, -1, -1, flag, -1);
}

/* The flag of piece i of what a sender pushes to a rank (fgrt_overlap.h):
 * the rank it is for is the one whose memory holds it, the sender its row. */
static unsigned sent(unsigned i)
{
    return FGRT_FLAG_SENT + i;
}

/* AG: the own shard is pushed to r+1, r+2, ... (every rank writes a
 * different peer at each step, so no link carries two copies), each push
 * flagged; the shard of r-i is multiplied once its push from r-i is flagged.
 * No closing barrier: a rank's own pushes end its call, so the caller may
 * overwrite its shard on return, and the next call's opening barrier keeps
 * every push behind the GEMMs that read the block it overwrites. */
static void all_gather(order *o, fgrt_schedule s, unsigned world, unsigned chunks, unsigned rank)
{
    if (s == FGRT_SERIAL_NCCL) {
        const int ag = push(o, FGRT_OP_NCCL, 1, -1, -1, 0, -1);
        push(o, FGRT_OP_GEMM, 1, -1, -1, 0, ag);
        return;
    }
    barrier(o, FGRT_FLAG_START);
    const bool fused = s == FGRT_CHUNK_FUSED;
    const bool overlap = s != FGRT_SERIAL_CE && !fused;
    const bool pieces = fgrt_schedule_chunked(s);
    if (fused)   /* before the copies: its own waits take each piece as it lands */
        push(o, FGRT_OP_FUSED_GEMM, 1, -1, -1, 0, -1);
    if (overlap)   /* the own shard's rows first, under the first copy */
        push(o, FGRT_OP_GEMM, 1, -1, (int)rank, 0, -1);
    for (unsigned j = 0; j < chunks; j++)   /* piece by piece, each to every peer */
        for (unsigned i = 1; i < world; i++) {
            const int d = (int)((rank + i) % world);
            const unsigned st = lane(o, i, j);
            piece(o, push(o, FGRT_OP_COPY, st, d, (int)rank, 0, -1), pieces ? (int)j : -1, -1);
            push(o, FGRT_OP_SIGNAL, st, d, -1, sent(j), -1);
        }
    /* the peers' pieces in the order they land: piece j from every peer, then j + 1 */
    for (unsigned j = 0; j < chunks && !fused; j++)
        for (unsigned i = 1; i < world; i++) {
            const int p = (int)((rank + world - i) % world);
            const unsigned st = overlap ? 1 + (j * (world - 1) + i) % 2 : 1;
            push(o, FGRT_OP_WAIT, st, p, -1, sent(j), -1);
            if (overlap)
                piece(o, push(o, FGRT_OP_GEMM, st, -1, p, 0, -1), pieces ? (int)j : -1, -1);
        }
    if (s == FGRT_SERIAL_CE)
        push(o, FGRT_OP_GEMM, 1, -1, -1, 0, -1);
}

/* RS chunk_overlap: the running sum of block d starts at rank d + 1 and
 * passes through d + 2, ... to d, each rank adding its partial in its GEMM
 * (cuBLASLt's C), so no pass reads the partials again; every rank sends to
 * r + 1 only.  Pieces pipeline the ring: piece j of step s waits only for
 * piece j of step s - 1 at r - 1.  The next call's opening barrier keeps its
 * pushes behind every GEMM that reads a slot. */
static void ring_reduce_scatter(order *o, unsigned world, unsigned chunks, unsigned rank)
{
    const int next = (int)((rank + 1) % world), prev = (int)((rank + world - 1) % world);
    barrier(o, FGRT_FLAG_START);
    for (unsigned s = 0; s < world; s++) {
        const int d = (int)((rank + world - s - 1) % world);   /* d = r - s - 1 */
        for (unsigned j = 0; j < chunks; j++) {
            const unsigned st = 1 + (s * chunks + j) % 2;
            if (s > 0)
                push(o, FGRT_OP_WAIT, st, prev, -1, sent((s - 1) * chunks + j), -1);
            const int mm = push(o, FGRT_OP_GEMM, st, -1, d, 0, -1);
            piece(o, mm, (int)j, s > 0 ? (int)s - 1 : -1);
            if (s + 1 == world)
                continue;   /* the own block: the sum is complete in out */
            piece(o, push(o, FGRT_OP_COPY, 0, next, d, 0, mm), (int)j, (int)s);
            push(o, FGRT_OP_SIGNAL, 0, next, -1, sent(s * chunks + j), -1);
        }
    }
}

/* RS chunk_fused: one GEMM over every block, the peers' first (d = r + 1,
 * r + 2, ...) and the own last; each piece of a peer's partial is pushed
 * once the GEMM has counted its rows written, and flagged; the owner then
 * reduces as shard_overlap's does, after its GEMM and every peer's pieces.
 * The next call's opening barrier keeps its GEMM's writes of the partials
 * behind this call's pushes of them. */
static void fused_reduce_scatter(order *o, unsigned world, unsigned chunks, unsigned rank)
{
    barrier(o, FGRT_FLAG_START);
    push(o, FGRT_OP_FUSED_GEMM, 1, -1, -1, 0, -1);
    for (unsigned i = 1; i < world; i++) {
        const int d = (int)((rank + i) % world);
        for (unsigned j = 0; j < chunks; j++) {
            const unsigned st = lane(o, i, j);
            piece(o, push(o, FGRT_OP_WAIT_DONE, st, -1, d, 0, -1), (int)j, -1);
            piece(o, push(o, FGRT_OP_COPY, st, d, d, 0, -1), (int)j, (int)rank);
            push(o, FGRT_OP_SIGNAL, st, d, -1, sent(j), -1);
        }
    }
    for (unsigned i = 1; i < world; i++)
        for (unsigned j = 0; j < chunks; j++)
            push(o, FGRT_OP_WAIT, 1, (int)((rank + world - i) % world), -1, sent(j), -1);
    push(o, FGRT_OP_REDUCE, 1, -1, (int)rank, 0, -1);
}

/* RS: the partial of the block of rank d is computed at step i (d = r + i),
 * pushed to d, and flagged; the own block comes last, so the peers' partials
 * of it arrive while this rank computes the others.  No closing barrier: the
 * next call's opening one keeps its pushes behind this call's reduction at
 * every rank, and its GEMMs behind this call's pushes. */
static void reduce_scatter(order *o, fgrt_schedule s, unsigned world, unsigned rank)
{
    if (s == FGRT_SERIAL_NCCL) {
        const int mm = push(o, FGRT_OP_GEMM, 1, -1, -1, 0, -1);
        push(o, FGRT_OP_NCCL, 1, -1, -1, 0, mm);
        return;
    }
    barrier(o, FGRT_FLAG_START);
    int whole = -1;
    if (s == FGRT_SERIAL_CE)
        whole = push(o, FGRT_OP_GEMM, 1, -1, -1, 0, -1);
    for (unsigned i = 1; i < world; i++) {
        const int d = (int)((rank + i) % world);
        const int mm = s == FGRT_SHARD_OVERLAP ? push(o, FGRT_OP_GEMM, 1 + i % 2, -1, d, 0, -1)
                                               : whole;
        const unsigned st = lane(o, i, 0);
        piece(o, push(o, FGRT_OP_COPY, st, d, d, 0, mm), -1, (int)rank);
        push(o, FGRT_OP_SIGNAL, st, d, -1, sent(0), -1);
    }
    int own = whole;
    if (s == FGRT_SHARD_OVERLAP)
        own = push(o, FGRT_OP_GEMM, 1 + world % 2, -1, (int)rank, 0, -1);
    const unsigned rs = 1 + world % 2;   /* the stream of the own block's GEMM */
    for (unsigned i = 1; i < world; i++)
        push(o, FGRT_OP_WAIT, rs, (int)((rank + world - i) % world), -1, sent(0), -1);
    push(o, FGRT_OP_REDUCE, rs, -1, (int)rank, 0, own);
}

static bool valid(fgrt_collective c, fgrt_schedule s, unsigned world, unsigned chunks)
{
    return world >= 2 && world <= FGRT_MAX_WORLD && (unsigned)s < FGRT_SCHEDULE_COUNT &&
           (c == FGRT_AG_GEMM || c == FGRT_GEMM_RS) &&
           (fgrt_schedule_chunked(s) ? chunks >= 1 && chunks <= FGRT_MAX_CHUNKS : chunks == 1);
}

int fgrt_overlap_lanes_valid(fgrt_collective c, fgrt_schedule s, unsigned world,
                             unsigned chunks, unsigned lanes)
{
    if (!valid(c, s, world, chunks) || lanes < 1 || lanes > FGRT_MAX_LANES)
        return 0;
    if (lanes == 1)
        return 1;
    const bool ring = c == FGRT_GEMM_RS && s == FGRT_CHUNK_OVERLAP;
    return s != FGRT_SERIAL_NCCL && !ring && lanes <= (world - 1) * chunks;
}

unsigned fgrt_overlap_flags(fgrt_collective c, fgrt_schedule s, unsigned world, unsigned chunks)
{
    if (!valid(c, s, world, chunks))
        return 0;
    /* pieces a sender flags to one rank: RS chunk_overlap's (world - 1) steps x chunks, else chunks */
    const unsigned pieces = c == FGRT_GEMM_RS && s == FGRT_CHUNK_OVERLAP ? (world - 1) * chunks
                                                                          : chunks;
    return FGRT_FLAG_SENT + pieces;
}

size_t fgrt_overlap_ops(fgrt_collective c, fgrt_schedule s, unsigned world, unsigned chunks,
                        unsigned lanes, unsigned rank, fgrt_op *out, size_t max)
{
    if (!fgrt_overlap_lanes_valid(c, s, world, chunks, lanes) || rank >= world ||
        (!out && max))
        return 0;
    order o = {.out = out, .max = max, .world = world, .lanes = lanes};
    if (c == FGRT_AG_GEMM)
        all_gather(&o, s, world, chunks, rank);
    else if (s == FGRT_CHUNK_OVERLAP)
        ring_reduce_scatter(&o, world, chunks, rank);
    else if (s == FGRT_CHUNK_FUSED)
        fused_reduce_scatter(&o, world, chunks, rank);
    else
        reduce_scatter(&o, s, world, rank);
    return o.n;
}

size_t fgrt_overlap_tile_rows(fgrt_collective c, fgrt_schedule s, unsigned world,
                              unsigned chunks, unsigned rank, long long m, unsigned bm, int *out,
                              size_t max)
{
    /* chunk_fused's pieces land as chunk_overlap's, whose waits say the order */
    if (s == FGRT_CHUNK_FUSED && c == FGRT_AG_GEMM)
        s = FGRT_CHUNK_OVERLAP;
    const unsigned pieces = fgrt_schedule_chunked(s) ? chunks : 1;
    if ((s != FGRT_SHARD_OVERLAP && !fgrt_schedule_chunked(s)) ||
        !valid(c, s, world, chunks) || rank >= world || bm == 0 || m <= 0 ||
        m % ((long long)world * pieces) || m % bm || m / bm > INT32_MAX)
        return 0;
    const size_t tiles = (size_t)(m / bm);
    if (!out || max < tiles)
        return max || out ? 0 : tiles;
    if (c == FGRT_GEMM_RS) {   /* blocks in push order, the own last */
        if ((m / world) % bm)
            return 0;
        const size_t per_block = tiles / world;
        size_t n = 0;
        for (unsigned i = 1; i <= world; i++)
            for (size_t t = 0; t < per_block; t++)
                out[n++] = (int)(((rank + i) % world) * per_block + t);
        return tiles;
    }
    /* the waits' order is the same on any number of lanes */
    const size_t nops = fgrt_overlap_ops(FGRT_AG_GEMM, s, world, chunks, 1, rank, NULL, 0);
    fgrt_op *ops = malloc(nops * sizeof *ops);
    int *landed = malloc((size_t)world * pieces * sizeof *landed);   /* [sender][piece] */
    int *key = malloc(tiles * sizeof *key);
    if (!ops || !landed || !key) {
        free(ops), free(landed), free(key);
        return 0;
    }
    fgrt_overlap_ops(FGRT_AG_GEMM, s, world, chunks, 1, rank, ops, nops);
    /* a piece's place in the order of the waits (the own block: there from the start) */
    for (unsigned i = 0; i < world * pieces; i++)
        landed[i] = -1;
    int place = 0;
    for (size_t i = 0; i < nops; i++)
        if (ops[i].kind == FGRT_OP_WAIT && ops[i].flag >= FGRT_FLAG_SENT)
            landed[(size_t)ops[i].peer * pieces + (ops[i].flag - FGRT_FLAG_SENT)] = place++;
    /* a tile row is complete when the last piece its rows lie in is */
    const long long piece_rows = m / world / pieces;
    for (size_t t = 0; t < tiles; t++) {
        key[t] = -1;
        for (long long p = (long long)t * bm / piece_rows; p <= ((long long)t * bm + bm - 1) / piece_rows; p++)
            if (landed[p] > key[t])
                key[t] = landed[p];
    }
    /* ordered by that, stable (insertion: a few hundred tile rows at most) */
    for (size_t t = 0; t < tiles; t++) {
        size_t j = t;
        for (; j > 0 && key[out[j - 1]] > key[t]; j--)
            out[j] = out[j - 1];
        out[j] = (int)t;
    }
    free(ops), free(landed), free(key);
    return tiles;
}

/* The hierarchical plan's ranks: nodes of g, rank r at place r % g of
 * node r / g. */
typedef struct nodes {
    unsigned g, count, node, place;   /* ranks a node, nodes; this rank's node, place */
} nodes;

/* The rank at place p of the i-th node after this rank's. */
static int at(const nodes *n, unsigned i, unsigned p)
{
    return (int)(((n->node + i) % n->count) * n->g + p);
}

/* Its node's rank j places after it (j = g - k: k places before it). */
static int local(const nodes *n, unsigned j)
{
    return at(n, 0, (n->place + j) % n->g);
}

/* The stream of a push to the node's rank j places after this one: with
 * g - 1 lanes, each node peer has its own. */
static unsigned node_lane(const order *o, unsigned j)
{
    return fgrt_overlap_copy_stream(j - 1, o->lanes);
}

/* The stream of the steps between nodes: the one after the copy lanes. */
static unsigned across_stream(const order *o)
{
    return 2 + o->lanes;
}

/* The hierarchical AG (fgrt_overlap.h): rank r multiplies its own block
 * and pushes it to its node's others; NCCL step s (its own stream) sends it to
 * the rank at its place s nodes on and brings the one s nodes back, which
 * is forwarded to the node's others and multiplied (stream 2) once there;
 * the node peers' blocks are multiplied as they land, in the order sent. */
static void hier_all_gather(order *o, const nodes *n, unsigned rank)
{
    push(o, FGRT_OP_NODE_BARRIER, 0, -1, -1, FGRT_FLAG_START, -1);
    push(o, FGRT_OP_GEMM, 1, -1, (int)rank, 0, -1);
    for (unsigned j = 1; j < n->g; j++) {   /* the own block to the node's others */
        push(o, FGRT_OP_COPY, node_lane(o, j), local(n, j), (int)rank, 0, -1);
        push(o, FGRT_OP_SIGNAL, node_lane(o, j), local(n, j), -1, sent(0), -1);
    }
    for (unsigned s = 1; s < n->count; s++) {   /* node n - s's block: node offset i */
        const unsigned i = n->count - s;
        const int b = at(n, i, n->place);
        const int step = push(o, FGRT_OP_NCCL_ACROSS, across_stream(o), b, b, 0, -1);
        for (unsigned j = 1; j < n->g; j++) {   /* forwarded to the node's others */
            const unsigned st = node_lane(o, j);
            /* after the step: lane 0's first copy, and each other lane's (lane 0's
             * later ones follow its first on the stream) */
            push(o, FGRT_OP_COPY, st, local(n, j), b, 0, j == 1 || st ? step : -1);
            push(o, FGRT_OP_SIGNAL, st, local(n, j), -1, sent(i), -1);
        }
        push(o, FGRT_OP_GEMM, 2, -1, b, 0, step);
    }
    /* the node's others' blocks, then what they forward, in the order sent */
    for (unsigned s = 0; s < n->count; s++) {
        const unsigned i = (n->count - s) % n->count;
        for (unsigned j = 1; j < n->g; j++) {
            const unsigned p = (n->place + n->g - j) % n->g;
            push(o, FGRT_OP_WAIT, 1, local(n, n->g - j), -1, sent(i), -1);
            push(o, FGRT_OP_GEMM, 1, -1, at(n, i, p), 0, -1);
        }
    }
}

/* The hierarchical RS, node by node with its own last (fgrt_overlap.h):
 * node n + i's blocks at the other places pushed to the rank at that place
 * (its slot i g + p, flag sent(i)), then the one at place p summed with the
 * node's partials of it and, for i > 0, sent to its owner by NCCL beside
 * the next node's GEMMs while node n - i's sum of the own block arrives.
 * A peer pushes its partial of block (n + i, p) in its own step i, so the
 * steps of a node's ranks stay abreast. */
static void hier_reduce_scatter(order *o, const nodes *n)
{
    push(o, FGRT_OP_NODE_BARRIER, 0, -1, -1, FGRT_FLAG_START, -1);
    int across = -1;
    for (unsigned s = 1; s <= n->count; s++) {
        const unsigned i = s % n->count;   /* 1, 2, ..., then the own node */
        for (unsigned j = 1; j < n->g; j++) {   /* the node's other places, each pushed once done */
            const int b = at(n, i, (n->place + j) % n->g);
            const int mm = push(o, FGRT_OP_GEMM, 2, -1, b, 0, -1);
            piece(o, push(o, FGRT_OP_COPY, node_lane(o, j), local(n, j), b, 0, mm), -1,
                  (int)(i * n->g + n->place));
            push(o, FGRT_OP_SIGNAL, node_lane(o, j), local(n, j), -1, sent(i), -1);
        }
        const int b = at(n, i, n->place);   /* this place's: the node's sum of it */
        push(o, FGRT_OP_GEMM, 1, -1, b, 0, -1);
        for (unsigned j = 1; j < n->g; j++)
            push(o, FGRT_OP_WAIT, 1, local(n, n->g - j), -1, sent(i), -1);
        const int sum = push(o, FGRT_OP_REDUCE, 1, -1, b, 0, -1);
        if (i == 0)
            break;
        /* to b's owner; node n - i's sum of the own block into that node's slot */
        const unsigned from = (n->node + n->count - i) % n->count;
        across = push(o, FGRT_OP_NCCL_ACROSS, across_stream(o), (int)(from * n->g + n->place), b,
                      0, sum);
        piece(o, across, -1, (int)from);
    }
    push(o, FGRT_OP_REDUCE_ACROSS, 1, -1, at(n, 0, n->place), 0, across);
}

static bool hier_valid(fgrt_collective c, unsigned world, unsigned node_ranks)
{
    return (c == FGRT_AG_GEMM || c == FGRT_GEMM_RS) && node_ranks >= 2 &&
           world <= FGRT_MAX_WORLD && world % node_ranks == 0 && world / node_ranks >= 2;
}

unsigned fgrt_overlap_hier_flags(fgrt_collective c, unsigned world, unsigned node_ranks)
{
    return hier_valid(c, world, node_ranks) ? FGRT_FLAG_SENT + world / node_ranks : 0;
}

int fgrt_overlap_hier_lanes_valid(fgrt_collective c, unsigned world, unsigned node_ranks,
                                  unsigned lanes)
{
    return hier_valid(c, world, node_ranks) && lanes >= 1 && lanes <= FGRT_MAX_LANES &&
           lanes <= node_ranks - 1;
}

size_t fgrt_overlap_hier_ops(fgrt_collective c, unsigned world, unsigned node_ranks,
                             unsigned lanes, unsigned rank, fgrt_op *out, size_t max)
{
    if (!fgrt_overlap_hier_lanes_valid(c, world, node_ranks, lanes) || rank >= world ||
        (!out && max))
        return 0;
    order o = {.out = out, .max = max, .world = world, .lanes = lanes};
    const nodes n = {node_ranks, world / node_ranks, rank / node_ranks, rank % node_ranks};
    if (c == FGRT_AG_GEMM)
        hier_all_gather(&o, &n, rank);
    else
        hier_reduce_scatter(&o, &n);
    return o.n;
}

const char *fgrt_schedule_name(fgrt_schedule s)
{
    switch (s) {
    case FGRT_SERIAL_NCCL: return "serial_nccl";
    case FGRT_SERIAL_CE: return "serial_ce";
    case FGRT_SHARD_OVERLAP: return "shard_overlap";
    case FGRT_CHUNK_OVERLAP: return "chunk_overlap";
    case FGRT_CHUNK_FUSED: return "chunk_fused";
    case FGRT_SCHEDULE_COUNT: break;
    }
    return "?";
}

const fg_overlap_entry *fgrt_overlap_find(const fg_overlap_entry *plans, size_t count,
                                          fgrt_collective c, long long m, long long n,
                                          long long k, unsigned world, fg_reg_dtype dtype,
                                          const char *target)
{
    for (size_t i = 0; plans && i < count; i++) {
        const fg_overlap_entry *e = &plans[i];
        if ((int)e->collective == (int)c && e->m == m && e->n == n && e->k == k &&
            e->world == world && e->dtype == dtype &&
            (!target || (e->target && strcmp(e->target, target) == 0)))
            return e;
    }
    return NULL;
}
