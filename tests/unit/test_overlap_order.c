/* The overlap executor's issue order (runtime/include/fgrt_overlap.h), run
 * for every rank at once in a simulator: streams in order, events, flags,
 * barriers and NCCL collectives as the executor will have them, with the
 * interleaving of ranks and streams drawn at random.  Every schedule must
 * finish without a deadlock, move data only after it exists (piece by piece
 * where a schedule splits the row blocks), overwrite it only after it was
 * used, and compute each row block exactly once; for RS every rank's output
 * must sum every rank's partial exactly once.  One test breaks the orders
 * on purpose, to show that the checks catch what they claim to. */
#include <criterion/criterion.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fgrt_overlap.h"

#define MAXW 8
#define MAXP FGRT_MAX_CHUNKS   /* pieces of a row block */
#define CALLS 2                /* two calls back to back: buffers and flags are reused */
#define MAXCALL 256            /* ops of one rank's call */
#define MAXOPS (CALLS * MAXCALL)
#define MAXFLAGS (FGRT_FLAG_SENT + (MAXW - 1) * MAXP)   /* a sender's row: the ring's most */
#define STREAMS FGRT_MAX_STREAMS   /* the GEMMs' two and up to FGRT_MAX_LANES copy lanes */
#define SEEDS 40

/* What one piece of a buffer holds. */
typedef struct held {
    int call;       /* the call whose data (-1: none yet) */
    int read;       /* the last call whose data was used from it */
    int block;      /* RS receive slots: the row block the data belongs to */
    unsigned sum;   /* RS: the ranks whose partials the data sums (bit p: rank p) */
} held;

typedef struct rank_state {
    fgrt_op ops[MAXOPS];
    size_t n, per_call;
    int need[MAXOPS][STREAMS];      /* per stream, the last earlier op an op follows (-1: none) */
    size_t colls[MAXOPS], ncolls;   /* the barriers and NCCL collectives, in order */
    size_t coll_no[MAXOPS];         /* one's place among them */
    bool done[MAXOPS], armed[MAXOPS];
    bool moved[MAXOPS];             /* an NCCL collective whose data its group has moved */
    unsigned priority[MAXOPS];      /* drawn per seed: which of the ready ops moves first */
    size_t head[STREAMS];           /* per stream: no op before it is left to do */
    bool flag[CALLS][MAXW][MAXFLAGS];   /* in this rank's memory: [call][setter][flag] */
    int entered;          /* the last call whose inputs the caller has written (-1: none) */
    int left;             /* the last call that returned */
    held a[MAXW][MAXP];      /* AG: gathered A, per (row block, piece) */
    held part[MAXW][MAXP];   /* RS: partials C (chunk_overlap: the running sums) */
    held slot[MAXW][MAXP];   /* RS: receive slots */
    held across[MAXW][MAXP]; /* the hierarchical RS: node i's sum of this rank's block */
    held out[MAXP];          /* RS: this rank's row block of the sum */
    int gemms[CALLS][MAXW][MAXP], outs[CALLS][MAXP];   /* writes per call */
    bool taken[CALLS][MAXW][MAXP];   /* the fused GEMM's pieces, multiplied */
} rank_state;

typedef struct sim {
    fgrt_collective c;
    fgrt_schedule s;
    unsigned w, pieces;   /* pieces: chunks (1 but for chunk_overlap) */
    unsigned lanes;       /* copy lanes of every rank */
    unsigned node;        /* the hierarchical plan's ranks a node (fgrt_overlap_hier_ops), or 0 */
    rank_state r[MAXW];
} sim;

/* A deliberate break of an order, for the tests of the checks themselves. */
typedef enum {
    DROP_OP,      /* leave op `op` out */
    NO_AFTER,     /* op `op` without its event */
    NO_SLOT,      /* GEMM `op` without the receive slot it adds */
    EARLIER_FLAG, /* WAIT `op` for its sender's flag before the one it names (start for
                     the first piece): set, but before the data it should wait for */
    OTHER_SENDER, /* WAIT `op` for the same flag from another rank than its sender */
    OTHER_LANE    /* SIGNAL `op` on another copy lane than its copy's */
} break_kind;

typedef struct breakage {
    break_kind kind;
    int rank;    /* whose order; -1: every rank's */
    size_t op;   /* the op's index in a call */
} breakage;

static jmp_buf caught;
static char why[512];

/* A broken rule: say which, and leave the simulation (simulate returns it). */
static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    longjmp(caught, 1);
}

#define check(cond, ...) ((cond) ? (void)0 : fail(__VA_ARGS__))

static const char *coll_name(fgrt_collective c)
{
    return c == FGRT_AG_GEMM ? "AG+GEMM" : "GEMM+RS";
}

static bool joins(const fgrt_op *op)
{
    return op->kind == FGRT_OP_BARRIER || op->kind == FGRT_OP_NCCL ||
           op->kind == FGRT_OP_NODE_BARRIER;
}

/* Whether an op is met by a group of ranks: the joining ones, and the
 * hierarchical plan's NCCL across nodes (on its stream alone). */
static bool collective(const fgrt_op *op)
{
    return joins(op) || op->kind == FGRT_OP_NCCL_ACROSS;
}

/* Whether rank p meets rank q's collective op: every rank, or the
 * hierarchical plan's node (barrier) or place (NCCL across nodes). */
static bool in_group(const sim *m, const fgrt_op *op, unsigned q, unsigned p)
{
    if (op->kind == FGRT_OP_NODE_BARRIER)
        return p / m->node == q / m->node;
    if (op->kind == FGRT_OP_NCCL_ACROSS)
        return p % m->node == q % m->node;
    return true;
}

static bool chunked(int s)
{
    return s == FGRT_CHUNK_OVERLAP || s == FGRT_CHUNK_FUSED;
}

/* Whether an op names a flag. */
static bool flagged(const fgrt_op *op)
{
    return op->kind == FGRT_OP_BARRIER || op->kind == FGRT_OP_SIGNAL || op->kind == FGRT_OP_WAIT;
}

/* Whether a piece's data was used (or there is none): it may be overwritten. */
static bool used(const held *h) { return h->call < 0 || h->read == h->call; }

static int call_of(const rank_state *r, size_t k) { return (int)(k / r->per_call); }

/* Whether everything op k follows is done: its call starts after the last
 * returned (the executor's streams follow the caller's stream, which
 * follows every stream of the last call), then streams and events. */
static bool ready(const rank_state *r, size_t k)
{
    if (r->left < call_of(r, k) - 1)
        return false;
    for (int t = 0; t < STREAMS; t++)
        if (r->need[k][t] >= 0 && !r->done[r->need[k][t]])
            return false;
    const int after = r->ops[k].after;
    return after < 0 || r->done[(size_t)call_of(r, k) * r->per_call + (size_t)after];
}

/* Whether every rank of op's group (with q) has armed its collective number `no`. */
static bool all_armed(const sim *m, const fgrt_op *op, unsigned q, size_t no)
{
    for (unsigned p = 0; p < m->w; p++)
        if (in_group(m, op, q, p) && (no >= m->r[p].ncolls || !m->r[p].armed[m->r[p].colls[no]]))
            return false;
    return true;
}

/* Serial NCCL's collective, number `no` of q's collectives, among every
 * rank.  Once every rank has armed it, its data moves for all of them at
 * once (the first of them to complete moves it).  AG: the own block of
 * each into every other's gathered A.  RS: into each one's out, the
 * partials of its block, each rank's once. */
static void nccl(sim *m, unsigned q, size_t no, int e)
{
    if (m->r[q].moved[m->r[q].colls[no]])
        return;
    for (unsigned d = 0; d < m->w; d++) {
        rank_state *r = &m->r[d];
        r->moved[r->colls[no]] = true;
        for (unsigned j = 0; j < m->pieces; j++) {
            unsigned sum = 0;
            for (unsigned p = 0; p < m->w; p++) {
                if (m->c == FGRT_GEMM_RS) {
                    held *in = &m->r[p].part[d][j];
                    check(in->call == e, "NCCL reads rank %u's partial of block %u of call %d in "
                          "call %d", p, d, in->call, e);
                    check(!(in->sum & sum), "NCCL sums a partial of block %u twice", d);
                    sum |= in->sum;
                    continue;
                }
                if (p == d)
                    continue;
                check(m->r[p].a[p][j].call == e, "rank %u gathers rank %u's block of call %d in "
                      "call %d", d, p, m->r[p].a[p][j].call, e);
                check(used(&r->a[p][j]), "rank %u: NCCL overwrites block %u before call %d's "
                      "GEMM read it", d, p, r->a[p][j].call);
                r->a[p][j].call = e;
            }
            if (m->c == FGRT_AG_GEMM)
                continue;
            for (unsigned p = 0; p < m->w; p++)   /* NCCL has read every partial it summed */
                m->r[p].part[d][j].read = e;
            r->out[j] = (held){.call = e, .sum = sum};
            r->outs[e][j]++;
        }
    }
}

/* The bits of the ranks of node i (nodes of g). */
static unsigned node_mask(unsigned g, unsigned i)
{
    return ((1u << g) - 1u) << (i * g);
}

/* The hierarchical plan's step between nodes, number `no` of q's
 * collectives (step s: q receives from the member s nodes back).  Once
 * every member of q's place has armed it, each member d receives from the
 * member `src` s nodes back: AG src's own block, into d's rows of it; RS
 * into its slot of src's node the node sum of block d that src holds (its
 * REDUCE wrote it into its partial of d).  Each member's op must say so. */
static void across_step(sim *m, unsigned q, const fgrt_op *op, size_t no, int e)
{
    if (m->r[q].moved[m->r[q].colls[no]])
        return;
    const unsigned g = m->node, nodes = m->w / g;
    const unsigned s = (q / g + nodes - (unsigned)op->peer / g) % nodes;
    check(s > 0, "rank %u steps to its own node", q);
    for (unsigned d = q % g; d < m->w; d += g) {
        rank_state *r = &m->r[d];
        const fgrt_op *mine = &r->ops[r->colls[no]];
        const unsigned from = (d / g + nodes - s) % nodes, src = from * g + d % g;
        const int sent = (int)(((d / g + s) % nodes) * g + d % g);   /* RS: the sum sent */
        check(mine->peer == (int)src && (m->c == FGRT_AG_GEMM
                                             ? mine->block == (int)src && mine->slot == -1
                                             : mine->block == sent && mine->slot == (int)from),
              "rank %u takes its step between nodes as another's (block %d, node %d, rank %d "
              "at rank %u's step %u)", d, mine->block, mine->slot, mine->peer, q, s);
        r->moved[r->colls[no]] = true;
        if (m->c == FGRT_AG_GEMM) {
            check(m->r[src].a[src][0].call == e, "rank %u sends its block of call %d in call %d",
                  src, m->r[src].a[src][0].call, e);
            check(used(&r->a[src][0]), "rank %u: the step overwrites block %u before call %d's "
                  "GEMM read it", d, src, r->a[src][0].call);
            r->a[src][0].call = e;
            continue;
        }
        held *in = &m->r[src].part[d][0], *to = &r->across[from][0];
        check(in->call == e && in->sum == node_mask(g, from), "rank %u sends node %u's sum of "
              "block %u of call %d holding ranks %#x in call %d", src, from, d, in->call,
              in->sum, e);
        check(used(to), "rank %u: node %u's sum of call %d overwritten before it was used", d,
              from, to->call);
        in->read = e;
        *to = (held){.call = e, .read = -1, .block = (int)d, .sum = in->sum};
    }
}

/* The hierarchical RS's last sum on rank q: its node's sum of its block
 * plus the other nodes' (received by the steps between nodes), into out. */
static void reduce_across(sim *m, unsigned q, const fgrt_op *op, int e)
{
    rank_state *r = &m->r[q];
    const unsigned g = m->node, nodes = m->w / g;
    check(op->block == (int)q, "rank %u adds the nodes' sums of block %d", q, op->block);
    held *own = &r->part[q][0];
    check(own->call == e && own->sum == node_mask(g, q / g), "rank %u adds the nodes' sums "
          "before its node's (call %d, ranks %#x)", q, own->call, own->sum);
    own->read = e;
    unsigned sum = own->sum;
    for (unsigned i = 0; i < nodes; i++) {
        if (i == q / g)
            continue;
        held *in = &r->across[i][0];
        check(in->call == e && in->block == (int)q, "rank %u adds node %u's sum before it "
              "arrived", q, i);
        check(!(in->sum & sum), "rank %u adds a node's sum twice", q);
        in->read = e;
        sum |= in->sum;
    }
    r->out[0] = (held){.call = e, .sum = sum};
    r->outs[e][0]++;
}

/* The hierarchical RS's REDUCE of block b on rank q: its partial plus its
 * node's others' in their slots (the block's node after q's x node + their
 * place), into its partial of b (what the step between nodes sends, or for
 * the own block the last sum adds to). */
static void reduce_node(sim *m, unsigned q, const fgrt_op *op, int e)
{
    rank_state *r = &m->r[q];
    const unsigned g = m->node, nodes = m->w / g, b = (unsigned)op->block;
    check(b % g == q % g, "rank %u sums block %u, not of its column", q, b);
    held *own = &r->part[b][0];
    check(own->call == e, "rank %u sums block %u before its own partial", q, b);
    unsigned sum = own->sum;
    for (unsigned p = 0; p < g; p++) {
        if (p == q % g)
            continue;
        held *in = &r->slot[(b / g + nodes - q / g) % nodes * g + p][0];
        check(in->call == e && in->block == (int)b, "rank %u sums block %u before its node's "
              "rank at place %u pushed it", q, b, p);
        check(!(in->sum & sum), "rank %u sums a partial twice", q);
        in->read = e;
        sum |= in->sum;
    }
    *own = (held){.call = e, .read = -1, .block = -1, .sum = sum};   /* not yet used */
}

static void copy(sim *m, unsigned q, const fgrt_op *op, int e, unsigned j0, unsigned j1)
{
    rank_state *r = &m->r[q], *peer = &m->r[op->peer];
    const int b = op->block;
    for (unsigned j = j0; j < j1; j++) {
        held *from = m->c == FGRT_AG_GEMM ? &r->a[b][j] : &r->part[b][j];
        held *to = m->c == FGRT_AG_GEMM ? &peer->a[b][j] : &peer->slot[op->slot][j];
        check(m->c != FGRT_AG_GEMM || b == (int)q || m->node, "rank %u pushes block %d, not "
              "its own shard", q, b);   /* (the hierarchical plan forwards what NCCL brought) */
        check(from->call == e, "rank %u sends block %d piece %u of call %d in call %d", q, b, j,
              from->call, e);
        check(used(to), "rank %u overwrites rank %d's %s %d piece %u before its call %d used "
              "it", q, op->peer, m->c == FGRT_AG_GEMM ? "block" : "receive slot",
              m->c == FGRT_AG_GEMM ? b : op->slot, j, to->call);
        from->read = e;
        to->call = e, to->block = b, to->sum = from->sum;
    }
}

static void gemm(sim *m, unsigned q, const fgrt_op *op, int e, unsigned j0, unsigned j1)
{
    rank_state *r = &m->r[q];
    for (unsigned b = 0; b < m->w; b++)
        for (unsigned j = j0; j < j1; j++) {
            if (op->block >= 0 && (unsigned)op->block != b)
                continue;
            r->gemms[e][b][j]++;
            if (m->c == FGRT_AG_GEMM) {
                check(r->a[b][j].call == e, "rank %u multiplies block %u piece %u before call "
                      "%d's arrived", q, b, j, e);
                r->a[b][j].read = e;
                continue;
            }
            unsigned sum = 1u << q;
            if (op->slot >= 0) {   /* plus the running sum in the slot, of the same rows */
                held *in = &r->slot[op->slot][j];
                check(in->call == e && in->block == (int)b, "rank %u adds slot %d piece %u "
                      "(call %d's, block %d) to block %u of call %d", q, op->slot, j, in->call,
                      in->block, b, e);
                check(!(in->sum & sum), "rank %u adds its own partial twice", q);
                in->read = e;
                sum |= in->sum;
            }
            /* as the executor: the own block's sum, complete, into out */
            const bool into_out = op->slot >= 0 && b == q;
            held *to = into_out ? &r->out[j] : &r->part[b][j];
            check(into_out || used(to), "rank %u overwrites partial %u piece %u before call "
                  "%d used it", q, b, j, to->call);
            to->call = e, to->sum = sum;
            if (into_out)
                r->outs[e][j]++;
        }
}

static void reduce(sim *m, unsigned q, const fgrt_op *op, int e)
{
    rank_state *r = &m->r[q];
    check(op->block == (int)q, "rank %u reduces block %d", q, op->block);
    for (unsigned j = 0; j < m->pieces; j++) {
        held *own = &r->part[q][j];
        check(own->call == e, "rank %u reduces before its own partial", q);
        own->read = e;
        unsigned sum = own->sum;
        for (unsigned p = 0; p < m->w; p++) {
            held *in = &r->slot[p][j];
            if (p == q)
                continue;
            check(in->call == e && in->block == (int)q, "rank %u reduces before rank %u's "
                  "partial", q, p);
            check(!(in->sum & sum), "rank %u sums a partial twice", q);
            in->read = e;
            sum |= in->sum;
        }
        r->out[j] = (held){.call = e, .sum = sum};
        r->outs[e][j]++;
    }
}

/* Tries to advance op k of rank q; true if anything changed.  Every use of
 * a buffer checks it holds this call's data, and every overwrite that the
 * data it replaces has been used. */
static bool step(sim *m, unsigned q, size_t k)
{
    rank_state *r = &m->r[q];
    const fgrt_op *op = &r->ops[k];
    if (r->done[k] || !ready(r, k))
        return false;
    const unsigned w = m->w;
    const int e = call_of(r, k);
    if (r->entered < e) {   /* the caller has written this call's inputs */
        r->entered = e;
        if (m->c == FGRT_AG_GEMM)   /* its shard: its own block of the gathered A */
            for (unsigned j = 0; j < m->pieces; j++)
                r->a[q][j].call = e;
    }
    /* the pieces an op covers: the whole block, or its piece `chunk` */
    const unsigned j0 = op->chunk < 0 ? 0 : (unsigned)op->chunk;
    const unsigned j1 = op->chunk < 0 ? m->pieces : j0 + 1;
    switch (op->kind) {
    case FGRT_OP_BARRIER:
    case FGRT_OP_NODE_BARRIER:
    case FGRT_OP_NCCL:
    case FGRT_OP_NCCL_ACROSS:
        if (!r->armed[k]) {
            r->armed[k] = true;
            const bool flags = op->kind == FGRT_OP_BARRIER || op->kind == FGRT_OP_NODE_BARRIER;
            for (unsigned p = 0; flags && p < w; p++)
                if (p != q && in_group(m, op, q, p))   /* its flag, set in every peer's memory
                                                          (a wait could read it) */
                    m->r[p].flag[e][q][op->flag] = true;
            return true;
        }
        if (!all_armed(m, op, q, r->coll_no[k]))
            return false;
        if (op->kind == FGRT_OP_NCCL_ACROSS)
            across_step(m, q, op, r->coll_no[k], e);
        else if (op->kind == FGRT_OP_NCCL)
            nccl(m, q, r->coll_no[k], e);
        break;
    case FGRT_OP_SIGNAL:   /* in this rank's row of the memory of the rank it is for */
        m->r[op->peer].flag[e][q][op->flag] = true;
        break;
    case FGRT_OP_WAIT:
        if (!r->flag[e][op->peer][op->flag])
            return false;
        break;
    case FGRT_OP_WAIT_DONE:   /* the fused GEMM has written this call's piece */
        if (op->block < 0 || op->chunk < 0 || !r->taken[e][op->block][op->chunk])
            return false;
        break;
    case FGRT_OP_COPY:
        copy(m, q, op, e, j0, j1);
        break;
    case FGRT_OP_GEMM:
        gemm(m, q, op, e, j0, j1);
        break;
    case FGRT_OP_REDUCE:
        if (m->node)
            reduce_node(m, q, op, e);
        else
            reduce(m, q, op, e);
        break;
    case FGRT_OP_REDUCE_ACROSS:
        reduce_across(m, q, op, e);
        break;
    case FGRT_OP_FUSED_GEMM: {   /* one kernel: AG each piece once its flag is set, in any
                                    order; RS one piece a step in its tile order (the peers'
                                    blocks first, the own last), waiting on nothing */
        for (unsigned i = 1; m->c == FGRT_GEMM_RS && i <= w; i++)
            for (unsigned j = 0, b = (q + i) % w; j < m->pieces; j++)
                if (!r->taken[e][b][j]) {
                    const fgrt_op piece = {.kind = FGRT_OP_GEMM, .block = (int)b, .slot = -1};
                    gemm(m, q, &piece, e, j, j + 1);
                    r->taken[e][b][j] = true;
                    return true;   /* done once a step finds every piece taken */
                }
        bool all = true, moved = false;
        for (unsigned b = 0; b < w; b++)
            for (unsigned j = 0; j < m->pieces; j++) {
                if (r->taken[e][b][j])
                    continue;
                if (m->c == FGRT_AG_GEMM && b != q && !r->flag[e][b][FGRT_FLAG_SENT + j]) {
                    all = false;
                    continue;
                }
                const fgrt_op piece = {.kind = FGRT_OP_GEMM, .block = (int)b, .slot = -1};
                gemm(m, q, &piece, e, j, j + 1);
                r->taken[e][b][j] = moved = true;
            }
        if (!all)
            return moved;
        break;
    }
    }
    r->done[k] = true;
    bool all = true;   /* the call returned when its last op is done */
    for (size_t j = (size_t)e * r->per_call; j < (size_t)(e + 1) * r->per_call; j++)
        all &= r->done[j];
    if (all) {
        r->left = e;
        for (unsigned j = 0; m->c == FGRT_GEMM_RS && j < m->pieces; j++)
            check(r->out[j].call == e && r->out[j].sum == (1u << w) - 1u,
                  "rank %u returns call %d with out piece %u of call %d summing ranks %#x, "
                  "not %#x", q, e, j, r->out[j].call, r->out[j].sum, (1u << w) - 1u);
    }
    return true;
}

/* Rank q's ops of one call into ops, broken where brk says; how many. */
static size_t order_of(const sim *m, unsigned q, const breakage *brk, fgrt_op *ops)
{
    size_t n = m->node ? fgrt_overlap_hier_ops(m->c, m->w, m->node, m->lanes, q, ops, MAXCALL)
                       : fgrt_overlap_ops(m->c, m->s, m->w, m->pieces, m->lanes, q, ops, MAXCALL);
    check(n > 0 && n <= MAXCALL, "rank %u has %zu ops", q, n);
    if (!brk || (brk->rank >= 0 && (unsigned)brk->rank != q))
        return n;
    fgrt_op *op = &ops[brk->op];
    switch (brk->kind) {
    case DROP_OP:   /* the later ops' events shift with it (none follows a wait or barrier) */
        memmove(op, op + 1, (n - brk->op - 1) * sizeof *op);
        n--;
        for (size_t k = 0; k < n; k++)
            ops[k].after -= ops[k].after > (int)brk->op;
        break;
    case NO_AFTER:
        op->after = -1;
        break;
    case NO_SLOT:
        op->slot = -1;
        break;
    case EARLIER_FLAG:   /* the sender sets it in this rank's memory before the right one */
        op->flag--;
        break;
    case OTHER_LANE:   /* lane 0's flag on lane 1, any other's on lane 0 */
        op->stream = op->stream == 0 ? 3 : 0;
        break;
    case OTHER_SENDER: {   /* the first rank other than this one and the sender */
        int p = 0;
        while (p == (int)q || p == op->peer)
            p++;
        op->peer = p;
        break;
    }
    }
    return n;
}

/* Runs CALLS calls of every rank in one random interleaving of a plan of
 * fgrt_overlap_ops, or with node > 0 of fgrt_overlap_hier_ops (s, chunks
 * and lanes unused); NULL if every check held, else the first broken rule. */
static const char *simulate_plan(fgrt_collective c, fgrt_schedule s, unsigned w, unsigned chunks,
                                 unsigned lanes, unsigned node, unsigned seed,
                                 const breakage *brk)
{
    static sim m;
    memset(&m, 0, sizeof m);
    m.c = c, m.s = s, m.w = w, m.pieces = chunks, m.lanes = lanes, m.node = node;
    if (setjmp(caught))
        return why;
    const unsigned nflags = node ? fgrt_overlap_hier_flags(c, w, node)
                                 : fgrt_overlap_flags(c, s, w, chunks);
    check(nflags > FGRT_FLAG_SENT && nflags <= MAXFLAGS, "%u flags", nflags);
    size_t total = 0;
    for (unsigned q = 0; q < w; q++) {
        rank_state *r = &m.r[q];
        r->per_call = order_of(&m, q, brk, r->ops);
        for (int e = 1; e < CALLS; e++)
            memcpy(&r->ops[e * r->per_call], r->ops, r->per_call * sizeof *r->ops);
        r->n = CALLS * r->per_call;
        r->entered = r->left = -1;
        for (unsigned b = 0; b < MAXW; b++)
            for (unsigned j = 0; j < MAXP; j++) {
                const held none = {.call = -1, .read = -1, .block = -1};
                r->a[b][j] = r->part[b][j] = r->slot[b][j] = r->across[b][j] = r->out[j] = none;
            }
        total += r->n;
        for (size_t k = 0; k < r->per_call; k++) {
            const fgrt_op *op = &r->ops[k];
            check(op->stream < STREAMS && op->after < (int)k, "rank %u op %zu", q, k);
            const bool has_peer = op->kind == FGRT_OP_COPY || op->kind == FGRT_OP_SIGNAL ||
                                  op->kind == FGRT_OP_WAIT;
            check(!has_peer || (op->peer >= 0 && (unsigned)op->peer < w && (unsigned)op->peer != q),
                  "rank %u op %zu: peer %d", q, k, op->peer);
            check(op->block >= -1 && op->block < (int)w &&
                      (op->kind != FGRT_OP_COPY || op->block >= 0),
                  "rank %u op %zu: block %d", q, k, op->block);
            check(op->chunk >= -1 && op->chunk < (int)chunks, "rank %u op %zu: chunk %d", q, k,
                  op->chunk);
            /* slots are RS's: written by every COPY, added by chunk_overlap's GEMMs */
            check(c == FGRT_GEMM_RS ? op->slot >= -1 && op->slot < (int)w &&
                                          (op->kind != FGRT_OP_COPY || op->slot >= 0)
                                    : op->slot == -1,
                  "rank %u op %zu: slot %d", q, k, op->slot);
            check(!flagged(op) || op->flag < nflags, "rank %u op %zu: flag %u of %u", q, k,
                  op->flag, nflags);
            check(op->kind != FGRT_OP_SIGNAL || op->flag >= FGRT_FLAG_SENT,
                  "rank %u op %zu: signals flag %u", q, k, op->flag);
        }
        /* What each op waits for on each stream: streams run in order, and a
         * barrier or a collective joins every stream both ways.  A stream's
         * done ops are a prefix of it, so its last op before says for all. */
        int last[STREAMS], last_join[STREAMS];
        for (unsigned t = 0; t < STREAMS; t++)
            last[t] = last_join[t] = -1;
        for (size_t k = 0; k < r->n; k++) {
            const fgrt_op *op = &r->ops[k];
            for (unsigned t = 0; t < STREAMS; t++)
                r->need[k][t] = joins(op) || t == op->stream ? last[t] : last_join[t];
            last[op->stream] = (int)k;
            if (joins(op))
                last_join[op->stream] = (int)k;
            if (collective(op)) {
                r->coll_no[k] = r->ncolls;
                r->colls[r->ncolls++] = k;
            }
        }
    }
    /* Each op has a random priority, and of the ops that may move, the one
     * of the highest does: an op of low priority lags behind all that can
     * pass it, as a slow GEMM or a late copy would.  (Random priorities find
     * a missing wait in far fewer runs than a fair random choice.) */
    srand(seed);
    for (unsigned q = 0; q < w; q++)
        for (size_t k = 0; k < m.r[q].n; k++)
            m.r[q].priority[k] = (unsigned)rand();
    for (size_t done = 0; done < total;) {
        /* the ops that may move: each rank's first op not done on each stream */
        struct candidate { unsigned q; size_t k; unsigned priority; } next[MAXW * STREAMS], swap;
        size_t count = 0;
        for (unsigned q = 0; q < w; q++)
            for (unsigned t = 0; t < STREAMS; t++) {
                rank_state *r = &m.r[q];
                size_t *h = &r->head[t];
                while (*h < r->n && (r->ops[*h].stream != t || r->done[*h]))
                    ++*h;
                if (*h < r->n)
                    next[count++] = (struct candidate){q, *h, r->priority[*h]};
            }
        for (size_t i = 1; i < count; i++)   /* the highest priority first */
            for (size_t j = i; j > 0 && next[j].priority > next[j - 1].priority; j--)
                swap = next[j], next[j] = next[j - 1], next[j - 1] = swap;
        bool moved = false;
        for (size_t i = 0; i < count && !moved; i++) {
            moved = step(&m, next[i].q, next[i].k);
            done += m.r[next[i].q].done[next[i].k];   /* (an armed barrier is not done yet) */
        }
        check(moved, "deadlock with %zu of %zu ops done", done, total);
    }
    for (unsigned q = 0; q < w; q++)
        for (int e = 0; e < CALLS; e++)
            for (unsigned j = 0; j < chunks; j++) {
                for (unsigned b = 0; b < w; b++)
                    check(m.r[q].gemms[e][b][j] == 1, "rank %u computed block %u piece %u %d "
                          "times in call %d", q, b, j, m.r[q].gemms[e][b][j], e);
                check(c == FGRT_AG_GEMM || m.r[q].outs[e][j] == 1, "rank %u wrote out piece "
                      "%u %d times in call %d", q, j, m.r[q].outs[e][j], e);
            }
    return NULL;
}

/* A plan of fgrt_overlap_ops (one schedule, its chunks and lanes). */
static const char *simulate(fgrt_collective c, fgrt_schedule s, unsigned w, unsigned chunks,
                            unsigned lanes, unsigned seed, const breakage *brk)
{
    return simulate_plan(c, s, w, chunks, lanes, 0, seed, brk);
}

/* The copy lanes worth simulating for a schedule: one, two, and one per
 * peer (the 2D order) or per copy, where valid. */
static unsigned lane_counts(fgrt_collective c, fgrt_schedule s, unsigned w, unsigned chunks,
                            unsigned out[3])
{
    const unsigned copies = (w - 1) * chunks;
    const unsigned all = copies < FGRT_MAX_LANES ? copies : FGRT_MAX_LANES;
    const unsigned want[3] = {1, 2, w - 1 > 2 ? w - 1 : all};
    unsigned n = 0;
    for (unsigned i = 0; i < 3; i++)
        if (fgrt_overlap_lanes_valid(c, s, w, chunks, want[i]) && (n == 0 || want[i] > out[n - 1]))
            out[n++] = want[i];
    return n;
}

/* Every seed's interleaving passes every check, on every lane count. */
static void expect_sound(fgrt_collective c, fgrt_schedule s, unsigned w, unsigned chunks,
                         unsigned seeds)
{
    unsigned lanes[3];
    const unsigned nl = lane_counts(c, s, w, chunks, lanes);
    for (unsigned l = 0; l < nl; l++)
        for (unsigned seed = 1; seed <= seeds; seed++) {
            const char *err = simulate(c, s, w, chunks, lanes[l], seed, NULL);
            cr_assert(!err, "%s %s, %u ranks, %u chunks, %u lanes, seed %u: %s", coll_name(c),
                      fgrt_schedule_name(s), w, chunks, lanes[l], seed, err);
        }
}

Test(overlap_order, every_schedule_completes_in_any_interleaving)
{
    for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++)
        for (int s = 0; s < FGRT_SCHEDULE_COUNT; s++)
            for (unsigned w = 2; w <= MAXW; w++)
                expect_sound((fgrt_collective)c, (fgrt_schedule)s, w, 1, SEEDS);
}

/* A chunked schedule s by pieces: a piece is multiplied (AG) or added on
 * (RS) only once that piece landed, whatever its neighbours did. */
static void expect_chunks_sound(fgrt_collective c, fgrt_schedule s)
{
    for (unsigned w = 2; w <= MAXW; w++) {
        for (unsigned chunks = 2; chunks <= 4; chunks++)
            expect_sound(c, s, w, chunks, SEEDS);
        expect_sound(c, s, w, FGRT_MAX_CHUNKS, SEEDS / 4);
    }
}

Test(overlap_order, chunk_overlap_ag_by_pieces_in_any_interleaving)
{
    expect_chunks_sound(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP);
}

/* chunk_fused: AG's one GEMM takes each piece once it landed, in any order;
 * RS's pieces are pushed once the GEMM wrote them. */
Test(overlap_order, chunk_fused_by_pieces_in_any_interleaving)
{
    expect_chunks_sound(FGRT_AG_GEMM, FGRT_CHUNK_FUSED);
    expect_chunks_sound(FGRT_GEMM_RS, FGRT_CHUNK_FUSED);
}

Test(overlap_order, chunk_overlap_rs_by_pieces_in_any_interleaving)
{
    expect_chunks_sound(FGRT_GEMM_RS, FGRT_CHUNK_OVERLAP);
}

/* Whether op k of a call follows op a (a < k) by streams and the other
 * events alone: then k's own event on a is redundant, and dropping it
 * breaks nothing. */
static bool follows_anyway(const fgrt_op *ops, size_t a, size_t k)
{
    bool behind_a[MAXCALL] = {false};
    behind_a[a] = true;
    for (size_t j = a + 1; j <= k; j++)
        for (size_t i = a; i < j && !behind_a[j]; i++)
            behind_a[j] = behind_a[i] && (ops[i].stream == ops[j].stream || joins(&ops[i]) ||
                                          joins(&ops[j]) || (j < k && ops[j].after == (int)i));
    return behind_a[k];
}

/* The checks have teeth: rank 0's order without any one of its waits, with
 * a wait for its sender's flag before the right one (always set, so this
 * must fail a check of the data, not deadlock) or for the same flag of
 * another sender, without an event that nothing else implies, or with a
 * GEMM that leaves out the running sum it adds, and the orders without
 * their opening barrier, each fail in some interleaving (each within 30
 * seeds when this was written). */
/* RS chunk_fused: whether the wait of rank `to` for piece `flag` from
 * sender p is implied by its wait for p's last piece, which p pushes after
 * it on the same lane (the owner waits for every piece before one
 * reduction). */
static bool implied_by_last_piece(unsigned w, unsigned chunks, unsigned lanes, unsigned p,
                                  unsigned to, unsigned flag)
{
    static fgrt_op sender[MAXCALL];
    const size_t n = fgrt_overlap_ops(FGRT_GEMM_RS, FGRT_CHUNK_FUSED, w, chunks, lanes, p,
                                      sender, MAXCALL);
    unsigned lane[MAXP] = {0};
    for (size_t k = 0; k < n; k++)
        if (sender[k].kind == FGRT_OP_COPY && sender[k].peer == (int)to)
            lane[sender[k].chunk] = sender[k].stream;
    const unsigned j = flag - FGRT_FLAG_SENT;
    return j + 1 < chunks && lane[j] == lane[chunks - 1];
}

/* Breaks each of rank 0's ops that bears weight, every way that applies,
 * and expects each break noticed within 100 seeds. */
static void expect_breaks_caught(fgrt_collective c, fgrt_schedule s, unsigned w,
                                 unsigned chunks, unsigned lanes)
{
    static fgrt_op ops[MAXCALL];
    const size_t n = fgrt_overlap_ops(c, s, w, chunks, lanes, 0, ops, MAXCALL);
    for (size_t k = 0; k < n; k++) {
        const fgrt_op *op = &ops[k];
        breakage brk[4];
        size_t nb = 0;
        /* a wait, or the flag it reads: rank 0 waits, or rank 0 signals */
        const bool waits = op->kind == FGRT_OP_WAIT;
        const bool implied =
            c == FGRT_GEMM_RS && s == FGRT_CHUNK_FUSED && (waits || op->kind == FGRT_OP_SIGNAL) &&
            implied_by_last_piece(w, chunks, lanes, waits ? (unsigned)op->peer : 0,
                                  waits ? 0 : (unsigned)op->peer, op->flag);
        if (op->kind == FGRT_OP_WAIT && !implied) {
            brk[nb++] = (breakage){DROP_OP, 0, k};
            brk[nb++] = (breakage){EARLIER_FLAG, 0, k};
            if (w > 2)   /* a third rank to have set a flag of that number */
                brk[nb++] = (breakage){OTHER_SENDER, 0, k};
        }
        if (op->kind == FGRT_OP_BARRIER)
            brk[nb++] = (breakage){DROP_OP, -1, k};
        if (op->kind == FGRT_OP_SIGNAL && s == FGRT_CHUNK_FUSED)
            brk[nb++] = (breakage){DROP_OP, 0, k};   /* the fused GEMM's flag */
        if (op->kind == FGRT_OP_SIGNAL && lanes > 1 && !implied)
            brk[nb++] = (breakage){OTHER_LANE, 0, k};
        if (op->kind == FGRT_OP_WAIT_DONE)
            brk[nb++] = (breakage){DROP_OP, 0, k};
        if (op->kind == FGRT_OP_GEMM && op->slot >= 0)
            brk[nb++] = (breakage){NO_SLOT, 0, k};
        if (op->after >= 0 && !follows_anyway(ops, (size_t)op->after, k))
            brk[nb++] = (breakage){NO_AFTER, 0, k};
        for (size_t i = 0; i < nb; i++) {
            bool noticed = false;
            for (unsigned seed = 1; seed <= 100 && !noticed; seed++) {
                const char *err = simulate(c, s, w, chunks, lanes, seed, &brk[i]);
                noticed = err && (brk[i].kind != EARLIER_FLAG || strncmp(err, "deadlock", 8) != 0);
            }
            cr_expect(noticed, "%s %s, %u ranks, %u lanes: breaking op %zu (kind %d) of rank %d "
                      "(way %d) goes unnoticed", coll_name(c), fgrt_schedule_name(s), w, lanes, k,
                      (int)op->kind, brk[i].rank, (int)brk[i].kind);
        }
    }
}

/* On one copy lane and on the most the simulator tries (the 2D order). */
Test(overlap_order, every_broken_order_is_caught)
{
    for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++)
        for (int s = 0; s < FGRT_SCHEDULE_COUNT; s++)
            for (unsigned w = 2; w <= MAXW; w++) {
                const unsigned chunks = chunked(s) ? 3 : 1;
                unsigned lanes[3];
                const unsigned nl = lane_counts((fgrt_collective)c, (fgrt_schedule)s, w, chunks,
                                                lanes);
                expect_breaks_caught((fgrt_collective)c, (fgrt_schedule)s, w, chunks, lanes[0]);
                if (nl > 1)
                    expect_breaks_caught((fgrt_collective)c, (fgrt_schedule)s, w, chunks,
                                         lanes[nl - 1]);
            }
}

/* For every schedule, world and chunk count: every rank meets the barriers
 * and NCCL collectives in the same order; at each step the ranks copy to
 * distinct peers (no link carries two copies at once); every flag an op
 * names is one of fgrt_overlap_flags'. */
Test(overlap_order, same_collective_order_distinct_peers_and_flags_in_range)
{
    static fgrt_op ops[MAXW][MAXCALL];
    for (int s = 0; s < FGRT_SCHEDULE_COUNT; s++)
        for (unsigned chunks = 1; chunks <= (chunked(s) ? MAXP : 1); chunks++)
            for (unsigned w = 2; w <= MAXW; w++)
                for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++) {
                    const unsigned flags = fgrt_overlap_flags((fgrt_collective)c,
                                                              (fgrt_schedule)s, w, chunks);
                    int peers[MAXW][MAXCALL];   /* each rank's copies' peers, in order */
                    size_t copies[MAXW];
                    char seq0[64] = "", seq[64];
                    for (unsigned q = 0; q < w; q++) {
                        const size_t n = fgrt_overlap_ops((fgrt_collective)c, (fgrt_schedule)s,
                                                          w, chunks, 1, q, ops[q], MAXCALL);
                        cr_assert(n > 0 && n <= MAXCALL, "%zu ops", n);
                        size_t len = 0;
                        copies[q] = 0;
                        for (size_t k = 0; k < n; k++) {
                            const fgrt_op *op = &ops[q][k];
                            if (joins(op))
                                seq[len++] = (char)('a' + op->kind + op->flag);
                            if (op->kind == FGRT_OP_COPY)
                                peers[q][copies[q]++] = op->peer;
                            if (flagged(op))
                                cr_expect_lt(op->flag, flags, "%s %s, %u ranks, %u chunks",
                                             coll_name((fgrt_collective)c),
                                             fgrt_schedule_name((fgrt_schedule)s), w, chunks);
                        }
                        seq[len] = '\0';
                        if (q == 0)
                            strcpy(seq0, seq);
                        cr_expect_str_eq(seq, seq0, "rank %u", q);
                        for (unsigned p = 0; p < q; p++)
                            for (size_t i = 0; i < copies[p] && i < copies[q]; i++)
                                cr_expect_neq(peers[p][i], peers[q][i],
                                              "%s %s, %u chunks: ranks %u and %u copy with rank "
                                              "%d at step %zu", coll_name((fgrt_collective)c),
                                              fgrt_schedule_name((fgrt_schedule)s), chunks, p,
                                              q, peers[q][i], i);
                    }
                }
}

/* A flag's number is the piece of what one sender pushed to one rank, not
 * the rank it is for (the memory it is written in says that): a sender's
 * row is FGRT_FLAG_SENT plus its pieces, not world times that.  Up to
 * FGRT_MAX_WORLD ranks (past the simulator's MAXW): every flag an op names
 * is below fgrt_overlap_flags, every SIGNAL names a peer, and each (sender,
 * rank, flag) is signalled once and waited on once by that rank. */
Test(overlap_order, flags_are_per_sender_and_small)
{
    cr_assert_eq(fgrt_overlap_flags(FGRT_GEMM_RS, FGRT_CHUNK_OVERLAP, 64, 8),
                 FGRT_FLAG_SENT + 63 * 8, "the ring: (world - 1) x chunks pieces");
    cr_assert_eq(fgrt_overlap_flags(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 64, 8), FGRT_FLAG_SENT + 8);
    cr_assert_eq(fgrt_overlap_flags(FGRT_GEMM_RS, FGRT_SHARD_OVERLAP, 64, 1), FGRT_FLAG_SENT + 1);
    cr_assert_eq(fgrt_overlap_flags(FGRT_AG_GEMM, FGRT_SERIAL_CE, 64, 1), FGRT_FLAG_SENT + 1);
    enum { W = FGRT_MAX_WORLD, F = FGRT_FLAG_SENT + (W - 1) * FGRT_MAX_CHUNKS };
    static signed char balance[W][W][F];   /* [sender][rank][flag]: signals less waits */
    static bool signalled[W][W][F];
    const unsigned worlds[] = {2, 3, 5, 8, 16, 33, 64}, some_chunks[] = {1, 3, 8};
    for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++)
        for (int s = 0; s < FGRT_SCHEDULE_COUNT; s++)
            for (size_t wi = 0; wi < sizeof worlds / sizeof *worlds; wi++)
                for (size_t ci = 0; ci < (chunked(s) ? 3u : 1u); ci++) {
                    const fgrt_collective coll = (fgrt_collective)c;
                    const fgrt_schedule sched = (fgrt_schedule)s;
                    const unsigned w = worlds[wi], chunks = some_chunks[ci];
                    const unsigned flags = fgrt_overlap_flags(coll, sched, w, chunks);
                    const bool ring = coll == FGRT_GEMM_RS && sched == FGRT_CHUNK_OVERLAP;
                    cr_assert_eq(flags, FGRT_FLAG_SENT + (ring ? (w - 1) * chunks : chunks),
                                 "%s %s, %u ranks, %u chunks", coll_name(coll),
                                 fgrt_schedule_name(sched), w, chunks);
                    memset(balance, 0, sizeof balance);
                    memset(signalled, 0, sizeof signalled);
                    for (unsigned q = 0; q < w; q++) {
                        const size_t n = fgrt_overlap_ops(coll, sched, w, chunks, 1, q, NULL, 0);
                        fgrt_op *ops = calloc(n, sizeof *ops);
                        cr_assert(n > 0 && ops);
                        cr_assert_eq(fgrt_overlap_ops(coll, sched, w, chunks, 1, q, ops, n), n);
                        for (size_t k = 0; k < n; k++) {
                            const fgrt_op *op = &ops[k];
                            /* AG's fused GEMM waits on every peer's pieces itself */
                            for (unsigned p = 0; op->kind == FGRT_OP_FUSED_GEMM &&
                                                 coll == FGRT_AG_GEMM && p < w; p++)
                                for (unsigned j = 0; p != q && j < chunks; j++)
                                    balance[p][q][FGRT_FLAG_SENT + j]--;
                            if (!flagged(op))
                                continue;
                            cr_assert_lt(op->flag, flags, "%s %s, %u ranks, %u chunks: rank %u "
                                         "op %zu", coll_name(coll), fgrt_schedule_name(sched),
                                         w, chunks, q, k);
                            if (op->kind == FGRT_OP_BARRIER)
                                continue;
                            cr_assert(op->peer >= 0 && (unsigned)op->peer < w &&
                                          (unsigned)op->peer != q &&
                                          op->flag >= FGRT_FLAG_SENT,
                                      "%s %s, %u ranks, %u chunks: rank %u op %zu (kind %d): "
                                      "peer %d, flag %u", coll_name(coll),
                                      fgrt_schedule_name(sched), w, chunks, q, k,
                                      (int)op->kind, op->peer, op->flag);
                            if (op->kind == FGRT_OP_SIGNAL) {
                                cr_assert_not(signalled[q][op->peer][op->flag],
                                              "rank %u signals flag %u to rank %d twice", q,
                                              op->flag, op->peer);
                                signalled[q][op->peer][op->flag] = true;
                                balance[q][op->peer][op->flag]++;
                            } else {
                                balance[op->peer][q][op->flag]--;
                            }
                        }
                        free(ops);
                    }
                    for (unsigned p = 0; p < w; p++)
                        for (unsigned q = 0; q < w; q++)
                            for (unsigned f = 0; f < flags; f++)
                                cr_assert_eq(balance[p][q][f], 0,
                                             "%s %s, %u ranks, %u chunks: rank %u's flag %u "
                                             "for rank %u: %d more signals than waits",
                                             coll_name(coll), fgrt_schedule_name(sched), w,
                                             chunks, p, f, q, balance[p][q][f]);
                }
}

Test(overlap_order, sizes_and_bad_arguments)
{
    fgrt_op ops[4];
    const size_t need = fgrt_overlap_ops(FGRT_GEMM_RS, FGRT_SHARD_OVERLAP, 8, 1, 1, 3, NULL, 0);
    cr_assert_gt(need, 4);
    cr_assert_eq(fgrt_overlap_ops(FGRT_GEMM_RS, FGRT_SHARD_OVERLAP, 8, 1, 1, 3, ops, 4), need,
                 "a short array still gets the size");
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SERIAL_CE, 1, 1, 1, 0, ops, 4), 0);
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SERIAL_CE, 4, 1, 1, 4, ops, 4), 0);
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SCHEDULE_COUNT, 4, 1, 1, 0, ops, 4), 0);
    cr_assert_eq(fgrt_overlap_ops((fgrt_collective)7, FGRT_SERIAL_CE, 4, 1, 1, 0, ops, 4), 0);
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SERIAL_CE, 65, 1, 1, 0, ops, 4), 0);
    /* lanes: 1 to FGRT_MAX_LANES and no more than a rank's copies; one for
     * serial NCCL and the RS ring */
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 4, 1, 0, 0, NULL, 0), 0);
    cr_assert_gt(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 4, 1, 3, 0, NULL, 0), 0);
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 4, 1, 4, 0, NULL, 0), 0,
                 "4 lanes for 3 copies");
    cr_assert_gt(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 2, 4, 4, 0, NULL, 0), 0,
                 "one peer's 4 pieces on 4 lanes");
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 16, 1, FGRT_MAX_LANES + 1,
                                  0, NULL, 0), 0);
    cr_assert_eq(fgrt_overlap_ops(FGRT_GEMM_RS, FGRT_CHUNK_OVERLAP, 4, 2, 2, 0, NULL, 0), 0);
    cr_assert_eq(fgrt_overlap_ops(FGRT_GEMM_RS, FGRT_SERIAL_NCCL, 4, 1, 2, 0, NULL, 0), 0);
    cr_assert(fgrt_overlap_lanes_valid(FGRT_GEMM_RS, FGRT_CHUNK_FUSED, 8, 2, 7));
    cr_assert_not(fgrt_overlap_lanes_valid(FGRT_GEMM_RS, FGRT_CHUNK_FUSED, 8, 9, 1),
                  "invalid chunks: no lane count is valid");
    /* fgrt_overlap_flags refuses what fgrt_overlap_ops does */
    cr_assert_eq(fgrt_overlap_flags(FGRT_AG_GEMM, FGRT_SERIAL_CE, 1, 1), 0);
    cr_assert_eq(fgrt_overlap_flags(FGRT_AG_GEMM, FGRT_SERIAL_CE, 65, 1), 0);
    cr_assert_eq(fgrt_overlap_flags(FGRT_AG_GEMM, FGRT_SCHEDULE_COUNT, 4, 1), 0);
    cr_assert_eq(fgrt_overlap_flags((fgrt_collective)7, FGRT_SERIAL_CE, 4, 1), 0);
    /* chunks: 1 to FGRT_MAX_CHUNKS for chunk_overlap and chunk_fused, 1 for
     * every other schedule */
    for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++)
        for (int s = 0; s < FGRT_SCHEDULE_COUNT; s++)
            for (unsigned chunks = 0; chunks <= FGRT_MAX_CHUNKS + 1; chunks++) {
                const bool valid = chunked(s) ? chunks >= 1 && chunks <= FGRT_MAX_CHUNKS
                                              : chunks == 1;
                const char *name = fgrt_schedule_name((fgrt_schedule)s);
                cr_expect_eq(fgrt_overlap_ops((fgrt_collective)c, (fgrt_schedule)s, 4, chunks, 1,
                                              1, NULL, 0) > 0,
                             valid, "%s, %u chunks", name, chunks);
                cr_expect_eq(fgrt_overlap_flags((fgrt_collective)c, (fgrt_schedule)s, 4,
                                                chunks) > 0,
                             valid, "%s, %u chunks: flags", name, chunks);
            }
    cr_assert_str_eq(fgrt_schedule_name(FGRT_SHARD_OVERLAP), "shard_overlap");
    cr_assert_str_eq(fgrt_schedule_name(FGRT_CHUNK_OVERLAP), "chunk_overlap");
    cr_assert_str_eq(fgrt_schedule_name(FGRT_CHUNK_FUSED), "chunk_fused");
}

/* Lanes move copies and nothing else: on any valid lane count each op is
 * the one-lane order's but for its stream; the push of piece j to peer
 * rank + i (with its flag, and RS chunk_fused's wait for the rows it sends)
 * goes on lane (j (world - 1) + i - 1) % lanes; every lane carries some;
 * with one lane a peer (world - 1) each peer's pushes share one, every peer
 * its own. */
static void expect_lanes_move_copies(fgrt_collective c, fgrt_schedule s, unsigned w,
                                     unsigned chunks, unsigned lanes)
{
    static fgrt_op one[MAXCALL], ops[MAXCALL];
    const unsigned q = w - 1;
    const size_t n = fgrt_overlap_ops(c, s, w, chunks, 1, q, one, MAXCALL);
    cr_assert_eq(fgrt_overlap_ops(c, s, w, chunks, lanes, q, ops, MAXCALL), n);
    unsigned used = 0;   /* bit t: stream t carries a copy */
    int peer_stream[MAXW];
    for (unsigned p = 0; p < MAXW; p++)
        peer_stream[p] = -1;
    for (size_t k = 0; k < n; k++) {
        fgrt_op a = one[k], b = ops[k];
        const bool lane_op = a.kind == FGRT_OP_COPY || a.kind == FGRT_OP_SIGNAL ||
                             a.kind == FGRT_OP_WAIT_DONE;
        cr_assert(lane_op || a.stream == b.stream, "%s %s, %u ranks, %u lanes: op %zu (kind %d) "
                  "moved", coll_name(c), fgrt_schedule_name(s), w, lanes, k, (int)a.kind);
        a.stream = b.stream = 0;
        cr_assert(memcmp(&a, &b, sizeof a) == 0, "op %zu differs", k);
        if (ops[k].kind != FGRT_OP_COPY)
            continue;
        const unsigned i = (ops[k].peer + w - q) % w, j = ops[k].chunk < 0 ? 0 : ops[k].chunk;
        const unsigned st = fgrt_overlap_copy_stream(j * (w - 1) + i - 1, lanes);
        cr_assert_eq(ops[k].stream, st, "copy %zu", k);
        cr_assert(st == 0 || (st >= 3 && st < 2 + lanes));
        used |= 1u << st;
        cr_assert(k + 1 < n && ops[k + 1].kind == FGRT_OP_SIGNAL && ops[k + 1].stream == st,
                  "a copy's flag behind it on its lane");
        if (k > 0 && ops[k - 1].kind == FGRT_OP_WAIT_DONE)
            cr_assert_eq(ops[k - 1].stream, st);
        const int p = ops[k].peer;
        cr_assert(lanes != w - 1 || peer_stream[p] < 0 || peer_stream[p] == (int)st,
                  "peer %d on two lanes", p);
        peer_stream[p] = (int)st;
    }
    cr_assert_eq(__builtin_popcount(used), (int)lanes, "%s %s, %u ranks, %u chunks: %d lanes "
                 "used of %u", coll_name(c), fgrt_schedule_name(s), w, chunks,
                 __builtin_popcount(used), lanes);
    for (unsigned p = 0; lanes == w - 1 && p < q; p++)
        for (unsigned r = 0; r < p; r++)
            cr_assert_neq(peer_stream[p], peer_stream[r], "peers %u and %u share a lane", r, p);
}

Test(overlap_order, lanes_only_move_copies)
{
    for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++)
        for (int s = 0; s < FGRT_SCHEDULE_COUNT; s++)
            for (unsigned w = 2; w <= MAXW; w++)
                for (unsigned chunks = 1; chunks <= (chunked(s) ? 3u : 1u); chunks += 2)
                    for (unsigned lanes = 2; lanes <= FGRT_MAX_LANES; lanes++)
                        if (fgrt_overlap_lanes_valid((fgrt_collective)c, (fgrt_schedule)s, w,
                                                     chunks, lanes))
                            expect_lanes_move_copies((fgrt_collective)c, (fgrt_schedule)s, w,
                                                     chunks, lanes);
}

/* The plan table's lookup: every field must match; the target only when asked. */
Test(overlap_order, plan_table_lookup)
{
    static const fg_overlap_entry plans[] = {
        {.gemm = "g", .shape = "a", .target = "h100", .collective = FG_REG_AG_GEMM, .m = 4096,
         .n = 5120, .k = 8192, .world = 2, .dtype = FG_REG_BF16, .schedule = FG_REG_SERIAL_CE},
        {.gemm = "g", .shape = "a", .target = "h200", .collective = FG_REG_AG_GEMM, .m = 4096,
         .n = 5120, .k = 8192, .world = 2, .dtype = FG_REG_BF16,
         .schedule = FG_REG_SHARD_OVERLAP},
        {.gemm = "g", .shape = "b", .target = "h200", .collective = FG_REG_GEMM_RS, .m = 4096,
         .n = 8192, .k = 4096, .world = 2, .dtype = FG_REG_BF16, .schedule = FG_REG_SERIAL_CE},
    };
    const size_t n = sizeof plans / sizeof plans[0];
    const fg_overlap_entry *e =
        fgrt_overlap_find(plans, n, FGRT_AG_GEMM, 4096, 5120, 8192, 2, FG_REG_BF16, "h200");
    cr_assert_eq(e, &plans[1]);
    cr_assert_eq(fgrt_overlap_find(plans, n, FGRT_AG_GEMM, 4096, 5120, 8192, 2, FG_REG_BF16,
                                   NULL),
                 &plans[0], "no target: the first match");
    cr_assert_eq(fgrt_overlap_find(plans, n, FGRT_GEMM_RS, 4096, 8192, 4096, 2, FG_REG_BF16,
                                   "h200"),
                 &plans[2]);
    /* any field off: none */
    cr_assert_null(fgrt_overlap_find(plans, n, FGRT_GEMM_RS, 4096, 5120, 8192, 2, FG_REG_BF16,
                                     NULL));
    cr_assert_null(fgrt_overlap_find(plans, n, FGRT_AG_GEMM, 4096, 5120, 8192, 4, FG_REG_BF16,
                                     NULL));
    cr_assert_null(fgrt_overlap_find(plans, n, FGRT_AG_GEMM, 4096, 5120, 8192, 2, FG_REG_F16,
                                     NULL));
    cr_assert_null(fgrt_overlap_find(plans, n, FGRT_AG_GEMM, 8192, 5120, 8192, 2, FG_REG_BF16,
                                     NULL));
    cr_assert_null(fgrt_overlap_find(plans, n, FGRT_AG_GEMM, 4096, 5120, 8192, 2, FG_REG_BF16,
                                     "mi300x"));
    cr_assert_null(fgrt_overlap_find(NULL, 0, FGRT_AG_GEMM, 4096, 5120, 8192, 2, FG_REG_BF16,
                                     NULL));
}

/* The fused GEMM's tile order: a permutation of the tile rows, the own row
 * block's first, every other tile row no earlier than the waits of the
 * pieces its rows lie in; two cases worked out by hand (one where pieces of
 * 192 rows straddle tiles of 128). */
Test(overlap_order, fused_tile_rows)
{
    int got[64];
    /* 2 ranks, 4 pieces, rank 1: its block (tile rows 16..31), then rank 0's pieces in order */
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 2, 4, 1, 4096, 128, got, 64), 32);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(got[i], (i + 16) % 32, "place %d: tile row %d", i, got[i]);
    /* 3 ranks, 2 pieces of 192 rows, rank 1: waits (0, piece 0), (2, 0), (0, 1), (2, 1) */
    const int want[] = {3, 4, 5, 0, 6, 1, 2, 7, 8};
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 3, 2, 1, 1152, 128, NULL, 0), 9);
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 3, 2, 1, 1152, 128, got, 9), 9);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(got[i], want[i], "place %d: tile row %d, expected %d", i, got[i], want[i]);
    /* every world, rank and piece count: a permutation, the own block's rows first */
    for (unsigned w = 2; w <= 8; w++)
        for (unsigned chunks = 1; chunks <= 4; chunks++)
            for (unsigned r = 0; r < w; r++) {
                const long long m = (long long)w * chunks * 256;
                const size_t n = fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, w, chunks, r, m, 128,
                                                        got, 64);
                cr_assert_eq(n, (size_t)(m / 128));
                bool seen[64] = {false};
                const int own = (int)(m / w / 128);
                for (size_t i = 0; i < n; i++) {
                    cr_assert(got[i] >= 0 && (size_t)got[i] < n && !seen[got[i]]);
                    seen[got[i]] = true;
                    if ((int)i < own)
                        cr_assert_eq(got[i] / own, (int)r, "%u ranks, rank %u: place %zu", w,
                                     r, i);
                }
            }
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_SHARD_OVERLAP, 2, 1, 0, 512, 128, got, 64), 4);
    cr_assert_eq(got[0], 0);
    cr_assert_eq(got[2], 2);
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_SERIAL_CE, 2, 1, 0, 512, 128, got, 64), 0);
    /* RS: the blocks in push order from rank + 1, the own last */
    const int rs[] = {4, 5, 0, 1, 2, 3};
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_GEMM_RS, FGRT_CHUNK_FUSED, 3, 2, 1, 768, 128, got, 64),
                 6);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(got[i], rs[i], "RS place %d: tile row %d, expected %d", i, got[i], rs[i]);
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_GEMM_RS, FGRT_CHUNK_FUSED, 3, 1, 1, 384, 128, got, 64),
                 3);
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_GEMM_RS, FGRT_CHUNK_FUSED, 3, 1, 1, 768 / 2 * 3, 128,
                                        got, 64),
                 9, "blocks of 384 rows: 3 tile rows each");
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_GEMM_RS, FGRT_CHUNK_FUSED, 2, 1, 0, 640, 128, got, 64),
                 0, "RS blocks of 320 rows straddle tiles");
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 2, 2, 0, 500, 128, got, 64), 0,
                 "m not whole tiles");
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 2, 3, 0, 512, 128, got, 64), 0,
                 "m not whole pieces");
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 2, 2, 2, 512, 128, got, 64), 0,
                 "rank past the world");
    cr_assert_eq(fgrt_overlap_tile_rows(FGRT_AG_GEMM, FGRT_CHUNK_OVERLAP, 2, 2, 0, 512, 128, got, 3), 0,
                 "out too small");
}

/* The hierarchical plan of collective c, `w` ranks in nodes of `node`, its
 * node pushes on `lanes` copy lanes: in any interleaving, two calls, every
 * block multiplied once, after it landed (RS: every rank's out the sum of
 * every partial once), nothing overwritten before it was used; breaking
 * any of rank 0's waits, its events, or the node barrier is caught, and on
 * several lanes any of its flags moved onto another lane; the flags stay in
 * the node and in range, each signalled once and waited on once. */
static void expect_hier_sound(fgrt_collective c, unsigned w, unsigned node, unsigned lanes)
{
    static fgrt_op ops[MAXCALL];
    for (unsigned seed = 1; seed <= SEEDS; seed++) {
        const char *err = simulate_plan(c, FGRT_SERIAL_CE, w, 1, lanes, node, seed, NULL);
        cr_assert(!err, "hierarchical %s, %u ranks in nodes of %u on %u lanes, seed %u: %s",
                  coll_name(c), w, node, lanes, seed, err);
    }
    const unsigned flags = fgrt_overlap_hier_flags(c, w, node);
    cr_assert_eq(flags, FGRT_FLAG_SENT + w / node);
    static int balance[MAXW][MAXW][MAXFLAGS];   /* [sender][rank][flag]: signals less waits */
    static bool signalled[MAXW][MAXW][MAXFLAGS];
    memset(balance, 0, sizeof balance);
    memset(signalled, 0, sizeof signalled);
    for (unsigned q = 0; q < w; q++) {
        const size_t n = fgrt_overlap_hier_ops(c, w, node, lanes, q, ops, MAXCALL);
        cr_assert(n > 0 && n <= MAXCALL);
        for (size_t k = 0; k < n; k++) {
            const fgrt_op *op = &ops[k];
            if (op->kind == FGRT_OP_SIGNAL || op->kind == FGRT_OP_WAIT) {
                cr_assert(op->flag >= FGRT_FLAG_SENT && op->flag < flags);
                cr_assert_eq((unsigned)op->peer / node, q / node, "flags stay in the node");
                if (op->kind == FGRT_OP_SIGNAL) {
                    cr_assert_not(signalled[q][op->peer][op->flag], "signalled twice");
                    signalled[q][op->peer][op->flag] = true;
                    balance[q][op->peer][op->flag]++;
                } else {
                    balance[op->peer][q][op->flag]--;
                }
            }
            const bool moved = lanes > 1 && op->kind == FGRT_OP_SIGNAL;
            if (q != 0 || !(op->kind == FGRT_OP_WAIT || op->kind == FGRT_OP_NODE_BARRIER ||
                            moved ||
                            (op->after >= 0 && !follows_anyway(ops, (size_t)op->after, k))))
                continue;
            breakage brk = {op->kind == FGRT_OP_WAIT ? DROP_OP : moved ? OTHER_LANE : NO_AFTER, 0,
                            k};
            if (op->kind == FGRT_OP_NODE_BARRIER)
                brk = (breakage){DROP_OP, -1, k};
            bool noticed = false;
            for (unsigned seed = 1; seed <= 100 && !noticed; seed++)
                noticed = simulate_plan(c, FGRT_SERIAL_CE, w, 1, lanes, node, seed, &brk) != NULL;
            cr_expect(noticed, "hierarchical %s, %u ranks in nodes of %u on %u lanes: breaking "
                      "op %zu (kind %d) goes unnoticed", coll_name(c), w, node, lanes, k,
                      (int)op->kind);
        }
    }
    for (unsigned p = 0; p < w; p++)
        for (unsigned q = 0; q < w; q++)
            for (unsigned f = 0; f < flags; f++)
                cr_assert_eq(balance[p][q][f], 0, "rank %u's flag %u for rank %u", p, f, q);
}

/* Nodes of 2, 3 and 4 ranks, 2 to 4 nodes, both collectives, on one lane
 * and (nodes of 3 and 4) on one a node peer and on two. */
Test(overlap_order, hierarchical_plan_in_any_interleaving)
{
    static const unsigned plans[][2] = {{4, 2}, {6, 2}, {6, 3}, {8, 2}, {8, 4}};   /* world, node */
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++)
        for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++)
            for (unsigned lanes = 1; lanes < plans[i][1]; lanes++)
                expect_hier_sound((fgrt_collective)c, plans[i][0], plans[i][1], lanes);
    /* refused: nodes of 1, one node, a world not whole nodes, a rank past it, no lanes or
     * more than the node peers */
    cr_assert_eq(fgrt_overlap_hier_ops(FGRT_AG_GEMM, 4, 1, 1, 0, NULL, 0), 0);
    cr_assert_eq(fgrt_overlap_hier_ops(FGRT_GEMM_RS, 4, 4, 1, 0, NULL, 0), 0);
    cr_assert_eq(fgrt_overlap_hier_ops(FGRT_AG_GEMM, 6, 4, 1, 0, NULL, 0), 0);
    cr_assert_eq(fgrt_overlap_hier_ops(FGRT_AG_GEMM, 4, 2, 1, 4, NULL, 0), 0);
    cr_assert_eq(fgrt_overlap_hier_ops((fgrt_collective)7, 4, 2, 1, 0, NULL, 0), 0);
    cr_assert_eq(fgrt_overlap_hier_ops(FGRT_AG_GEMM, 4, 2, 0, 0, NULL, 0), 0);
    cr_assert_eq(fgrt_overlap_hier_ops(FGRT_GEMM_RS, 8, 4, 4, 0, NULL, 0), 0);
    cr_assert(fgrt_overlap_hier_ops(FGRT_GEMM_RS, 8, 4, 3, 0, NULL, 0) > 0);
    cr_assert_eq(fgrt_overlap_hier_flags(FGRT_AG_GEMM, 6, 4), 0);
}
