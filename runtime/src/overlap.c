/* The overlap executor's issue order (fgrt_overlap.h). */
#include "fgrt_overlap.h"

typedef struct order {
    fgrt_op *out;
    size_t max, n;
} order;

/* Appends an op; its index (counted even past max, so the caller learns the
 * size it needs). */
static int push(order *o, fgrt_op_kind kind, unsigned stream, int peer, int block,
                unsigned flag, int after)
{
    if (o->n < o->max)
        o->out[o->n] = (fgrt_op){.kind = kind, .stream = stream, .peer = peer, .block = block,
                                 .flag = flag, .after = after};
    return (int)o->n++;
}

static void barrier(order *o, unsigned flag)
{
    push(o, FGRT_OP_BARRIER, 0, -1, -1, flag, -1);
}

/* AG: the peers' shards are pulled in the order r+1, r+2, ... (every rank
 * reads a different peer at each step, so no link carries two copies). */
static void all_gather(order *o, fgrt_schedule s, unsigned world, unsigned rank)
{
    if (s == FGRT_SERIAL_NCCL) {
        const int ag = push(o, FGRT_OP_NCCL, 1, -1, -1, 0, -1);
        push(o, FGRT_OP_GEMM, 1, -1, -1, 0, ag);
        return;
    }
    barrier(o, FGRT_FLAG_START);
    int last = -1;
    if (s == FGRT_SHARD_OVERLAP)   /* the own shard's rows first, under the first copy */
        push(o, FGRT_OP_GEMM, 1, -1, (int)rank, 0, -1);
    for (unsigned i = 1; i < world; i++) {
        const int p = (int)((rank + i) % world);
        last = push(o, FGRT_OP_COPY, 0, p, p, 0, -1);
        if (s == FGRT_SHARD_OVERLAP)
            push(o, FGRT_OP_GEMM, 1 + i % 2, -1, p, 0, last);
    }
    if (s == FGRT_SERIAL_CE)
        push(o, FGRT_OP_GEMM, 1, -1, -1, 0, last);
    barrier(o, FGRT_FLAG_END);
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
        push(o, FGRT_OP_COPY, 0, d, d, 0, mm);
        push(o, FGRT_OP_SIGNAL, 0, -1, -1, FGRT_FLAG_SENT + (unsigned)d, -1);
    }
    int own = whole;
    if (s == FGRT_SHARD_OVERLAP)
        own = push(o, FGRT_OP_GEMM, 1 + world % 2, -1, (int)rank, 0, -1);
    const unsigned rs = 1 + world % 2;   /* the stream of the own block's GEMM */
    for (unsigned i = 1; i < world; i++)
        push(o, FGRT_OP_WAIT, rs, (int)((rank + world - i) % world), -1,
             FGRT_FLAG_SENT + rank, -1);
    push(o, FGRT_OP_REDUCE, rs, -1, (int)rank, 0, own);
}

size_t fgrt_overlap_ops(fgrt_collective c, fgrt_schedule s, unsigned world, unsigned rank,
                        fgrt_op *out, size_t max)
{
    if (world < 2 || world > 64 || rank >= world || (unsigned)s >= FGRT_SCHEDULE_COUNT ||
        (c != FGRT_AG_GEMM && c != FGRT_GEMM_RS) || (!out && max))
        return 0;
    order o = {out, max, 0};
    if (c == FGRT_AG_GEMM)
        all_gather(&o, s, world, rank);
    else
        reduce_scatter(&o, s, world, rank);
    return o.n;
}

const char *fgrt_schedule_name(fgrt_schedule s)
{
    switch (s) {
    case FGRT_SERIAL_NCCL: return "serial-nccl";
    case FGRT_SERIAL_CE: return "serial-ce";
    case FGRT_SHARD_OVERLAP: return "shard-overlap";
    case FGRT_SCHEDULE_COUNT: break;
    }
    return "?";
}
