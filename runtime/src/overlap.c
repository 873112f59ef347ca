/* The overlap executor's issue order (fgrt_overlap.h). */
#include "fgrt_overlap.h"

#include <string.h>

#include "fg_registry.h"

_Static_assert((int)FG_REG_AG_GEMM == (int)FGRT_AG_GEMM &&
                   (int)FG_REG_GEMM_RS == (int)FGRT_GEMM_RS,
               "the registry's collectives are fgrt_collective's");
_Static_assert((int)FG_REG_SERIAL_NCCL == (int)FGRT_SERIAL_NCCL &&
                   (int)FG_REG_SERIAL_CE == (int)FGRT_SERIAL_CE &&
                   (int)FG_REG_SHARD_OVERLAP == (int)FGRT_SHARD_OVERLAP,
               "the registry's schedules are fgrt_schedule's");

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

/* AG: the own shard is pushed to r+1, r+2, ... (every rank writes a
 * different peer at each step, so no link carries two copies), each push
 * flagged; the shard of r-i is multiplied once its push from r-i is flagged.
 * No closing barrier: a rank's own pushes end its call, so the caller may
 * overwrite its shard on return, and the next call's opening barrier keeps
 * every push behind the GEMMs that read the block it overwrites. */
static void all_gather(order *o, fgrt_schedule s, unsigned world, unsigned rank)
{
    if (s == FGRT_SERIAL_NCCL) {
        const int ag = push(o, FGRT_OP_NCCL, 1, -1, -1, 0, -1);
        push(o, FGRT_OP_GEMM, 1, -1, -1, 0, ag);
        return;
    }
    barrier(o, FGRT_FLAG_START);
    if (s == FGRT_SHARD_OVERLAP)   /* the own shard's rows first, under the first copy */
        push(o, FGRT_OP_GEMM, 1, -1, (int)rank, 0, -1);
    for (unsigned i = 1; i < world; i++) {
        const int d = (int)((rank + i) % world);
        push(o, FGRT_OP_COPY, 0, d, (int)rank, 0, -1);
        push(o, FGRT_OP_SIGNAL, 0, -1, -1, FGRT_FLAG_SENT + (unsigned)d, -1);
    }
    for (unsigned i = 1; i < world; i++) {
        const int p = (int)((rank + world - i) % world);
        const unsigned st = s == FGRT_SHARD_OVERLAP ? 1 + i % 2 : 1;
        push(o, FGRT_OP_WAIT, st, p, -1, FGRT_FLAG_SENT + rank, -1);
        if (s == FGRT_SHARD_OVERLAP)
            push(o, FGRT_OP_GEMM, st, -1, p, 0, -1);
    }
    if (s == FGRT_SERIAL_CE)
        push(o, FGRT_OP_GEMM, 1, -1, -1, 0, -1);
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
    if (world < 2 || world > FGRT_MAX_WORLD || rank >= world || (unsigned)s >= FGRT_SCHEDULE_COUNT ||
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
    case FGRT_SERIAL_NCCL: return "serial_nccl";
    case FGRT_SERIAL_CE: return "serial_ce";
    case FGRT_SHARD_OVERLAP: return "shard_overlap";
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
