/* The overlap executor's issue order (runtime/include/fgrt_overlap.h), run
 * for every rank at once in a simulator: streams in order, events, flags,
 * barriers and NCCL collectives as the executor will have them, with the
 * interleaving of ranks and streams drawn at random.  Every schedule must
 * finish without a deadlock, move data only after it exists, and compute
 * each row block exactly once. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fgrt_overlap.h"

#define MAXW 8
#define MAXOPS 256
#define CALLS 2   /* two calls back to back: buffers and flags are reused */

typedef struct rank_state {
    fgrt_op ops[MAXOPS];
    size_t n, per_call;
    bool done[MAXOPS], armed[MAXOPS];
    bool flag[CALLS][FGRT_FLAG_SENT + MAXW];
    int entered;          /* the last call whose inputs the caller has written (-1: none) */
    int left;             /* the last call that returned */
    /* the call whose data each buffer holds (-1: none yet) */
    int have[MAXW];       /* AG: gathered A, row block b */
    int gemmed[MAXW];     /* AG: the last call whose GEMM read block b; RS: wrote partial b */
    int sent[MAXW];       /* RS: the last call whose push of partial b completed */
    int recv[MAXW];       /* RS: the receive slot of rank p's partial of this rank's block */
    int reduced;          /* RS: the last call whose reduction read the slots */
    int gemm_count[CALLS][MAXW], reduce_count[CALLS];
} rank_state;

typedef struct sim {
    fgrt_collective c;
    unsigned w;
    rank_state r[MAXW];
} sim;

static int call_of(const rank_state *r, size_t k) { return (int)(k / r->per_call); }

/* Whether everything op k of rank q follows is done. */
static bool prefix_done(const rank_state *r, size_t k)
{
    const fgrt_op *op = &r->ops[k];
    for (size_t j = 0; j < k; j++) {
        const fgrt_op *e = &r->ops[j];
        /* a barrier or a collective joins every stream both ways */
        const bool joins = op->kind == FGRT_OP_BARRIER || e->kind == FGRT_OP_BARRIER ||
                           op->kind == FGRT_OP_NCCL || e->kind == FGRT_OP_NCCL;
        if ((joins || e->stream == op->stream) && !r->done[j])
            return false;
    }
    const int base = call_of(r, k) * (int)r->per_call;
    return op->after < 0 || r->done[base + op->after];
}

/* The ordinal of op k among rank q's collectives (barriers and NCCL). */
static int collective_ordinal(const rank_state *r, size_t k)
{
    int n = 0;
    for (size_t j = 0; j < k; j++)
        n += r->ops[j].kind == FGRT_OP_BARRIER || r->ops[j].kind == FGRT_OP_NCCL;
    return n;
}

/* Whether every rank has armed its collective of this ordinal. */
static bool all_armed(const sim *m, int ordinal)
{
    for (unsigned p = 0; p < m->w; p++) {
        bool armed = false;
        for (size_t j = 0; j < m->r[p].n; j++)
            if ((m->r[p].ops[j].kind == FGRT_OP_BARRIER || m->r[p].ops[j].kind == FGRT_OP_NCCL) &&
                collective_ordinal(&m->r[p], j) == ordinal)
                armed = m->r[p].armed[j];
        if (!armed)
            return false;
    }
    return true;
}

/* Tries to advance op k of rank q; true if anything changed.  Every use of
 * a buffer asserts it holds this call's data, and every overwrite that the
 * data it replaces has been used. */
static bool step(sim *m, unsigned q, size_t k)
{
    rank_state *r = &m->r[q];
    const fgrt_op *op = &r->ops[k];
    if (r->done[k] || !prefix_done(r, k))
        return false;
    const unsigned w = m->w;
    const int e = call_of(r, k);
    if (r->entered < e) {   /* the caller writes this call's inputs (after the last returned) */
        cr_assert_eq(r->left, e - 1, "rank %u enters call %d before call %d returned", q, e,
                     e - 1);
        r->entered = e;
    }
    switch (op->kind) {
    case FGRT_OP_BARRIER:
    case FGRT_OP_NCCL:
        if (!r->armed[k]) {
            r->armed[k] = true;
            if (op->kind == FGRT_OP_BARRIER)
                r->flag[e][op->flag] = true;
            return true;
        }
        if (!all_armed(m, collective_ordinal(r, k)))
            return false;
        if (op->kind == FGRT_OP_NCCL && m->c == FGRT_AG_GEMM)
            for (unsigned b = 0; b < w; b++) {
                cr_assert(b == q || r->gemmed[b] >= e - 1, "rank %u: NCCL overwrites block %u "
                          "before call %d's GEMM read it", q, b, e - 1);
                r->have[b] = e;
            }
        if (op->kind == FGRT_OP_NCCL && m->c == FGRT_GEMM_RS) {
            /* (a rank past its own completion of the collective may have moved on) */
            for (unsigned p = 0; p < w; p++)
                cr_assert(m->r[p].gemmed[q] >= e, "rank %u reduces before rank %u's partial",
                          q, p);
            for (unsigned b = 0; b < w; b++)   /* NCCL has read every partial */
                r->sent[b] = e;
            r->reduced = e;
            r->reduce_count[e]++;
        }
        break;
    case FGRT_OP_SIGNAL:
        r->flag[e][op->flag] = true;
        break;
    case FGRT_OP_WAIT:
        if (!m->r[op->peer].flag[e][op->flag])
            return false;
        break;
    case FGRT_OP_COPY: {
        rank_state *peer = &m->r[op->peer];
        const int b = op->block;
        if (m->c == FGRT_AG_GEMM) {
            cr_assert(b == (int)q, "rank %u pushes block %d, not its own shard", q, b);
            cr_assert(peer->gemmed[b] >= e - 1, "rank %u overwrites rank %d's block %d before "
                      "its call %d GEMM read it", q, op->peer, b, e - 1);
            peer->have[b] = e;
        } else {
            cr_assert(r->gemmed[b] == e, "rank %u sends block %d of call %d before computing "
                      "it", q, b, e);
            cr_assert(peer->reduced >= e - 1, "rank %u overwrites rank %d's slot before its "
                      "call %d reduction read it", q, op->peer, e - 1);
            peer->recv[q] = e;
            r->sent[b] = e;
        }
        break;
    }
    case FGRT_OP_GEMM:
        for (unsigned b = 0; b < w; b++) {
            if (op->block >= 0 && (unsigned)op->block != b)
                continue;
            if (m->c == FGRT_AG_GEMM) {
                cr_assert((b == q ? r->entered : r->have[b]) == e,
                          "rank %u multiplies block %u before call %d's arrived", q, b, e);
            } else {
                cr_assert(b == q ? r->reduced >= e - 1 : r->sent[b] >= e - 1,
                          "rank %u overwrites partial %u before call %d used it", q, b, e - 1);
            }
            r->gemmed[b] = e;
            r->gemm_count[e][b]++;
        }
        break;
    case FGRT_OP_REDUCE:
        cr_assert(r->gemmed[q] == e, "rank %u reduces before its own partial", q);
        for (unsigned p = 0; p < w; p++)
            cr_assert(p == q || r->recv[p] == e, "rank %u reduces before rank %u's partial", q,
                      p);
        r->reduced = e;
        r->reduce_count[e]++;
        break;
    }
    r->done[k] = true;
    bool all = true;   /* the call returned when its last op is done */
    for (size_t j = (size_t)e * r->per_call; j < (size_t)(e + 1) * r->per_call; j++)
        all &= r->done[j];
    if (all)
        r->left = e;
    return true;
}

static void simulate(fgrt_collective c, fgrt_schedule s, unsigned w, unsigned seed)
{
    static sim m;
    memset(&m, 0, sizeof m);
    m.c = c, m.w = w;
    size_t total = 0;
    for (unsigned q = 0; q < w; q++) {
        rank_state *r = &m.r[q];
        r->per_call = fgrt_overlap_ops(c, s, w, q, r->ops, MAXOPS / CALLS);
        cr_assert(r->per_call > 0 && r->per_call <= MAXOPS / CALLS);
        for (int e = 1; e < CALLS; e++)
            memcpy(&r->ops[e * r->per_call], r->ops, r->per_call * sizeof *r->ops);
        r->n = CALLS * r->per_call;
        r->entered = r->left = r->reduced = -1;
        for (unsigned b = 0; b < MAXW; b++)
            r->have[b] = r->gemmed[b] = r->sent[b] = r->recv[b] = -1;
        total += r->n;
        for (size_t k = 0; k < r->per_call; k++) {
            const fgrt_op *op = &r->ops[k];
            cr_assert(op->stream <= 2 && op->after < (int)k, "rank %u op %zu", q, k);
            if (op->kind == FGRT_OP_COPY || op->kind == FGRT_OP_WAIT)
                cr_assert(op->peer >= 0 && (unsigned)op->peer < w && (unsigned)op->peer != q);
        }
    }
    srand(seed);
    for (size_t done = 0; done < total;) {
        /* a random rank and op first, then the rest in order: any that moves */
        const unsigned q0 = (unsigned)rand() % w;
        bool moved = false;
        for (unsigned i = 0; i < w && !moved; i++) {
            const unsigned q = (q0 + i) % w;
            const size_t k0 = (size_t)rand() % m.r[q].n;
            for (size_t j = 0; j < m.r[q].n && !moved; j++) {
                const size_t k = (k0 + j) % m.r[q].n;
                const bool was = m.r[q].done[k];
                moved = step(&m, q, k);
                done += !was && m.r[q].done[k];
            }
        }
        cr_assert(moved, "%s %s, %u ranks, seed %u: deadlock with %zu of %zu ops done",
                  c == FGRT_AG_GEMM ? "AG+GEMM" : "GEMM+RS", fgrt_schedule_name(s), w, seed,
                  done, total);
    }
    for (unsigned q = 0; q < w; q++)
        for (int e = 0; e < CALLS; e++) {
            for (unsigned b = 0; b < w; b++)
                cr_assert_eq(m.r[q].gemm_count[e][b], 1, "rank %u computed block %u %d times",
                             q, b, m.r[q].gemm_count[e][b]);
            if (c == FGRT_GEMM_RS)
                cr_assert_eq(m.r[q].reduce_count[e], 1, "rank %u reduced %d times", q,
                             m.r[q].reduce_count[e]);
        }
}

Test(overlap_order, every_schedule_completes_in_any_interleaving)
{
    const fgrt_collective cs[] = {FGRT_AG_GEMM, FGRT_GEMM_RS};
    for (size_t ci = 0; ci < 2; ci++)
        for (int s = 0; s < FGRT_SCHEDULE_COUNT; s++)
            for (unsigned w = 2; w <= MAXW; w++)
                for (unsigned seed = 1; seed <= 40; seed++)
                    simulate(cs[ci], (fgrt_schedule)s, w, seed);
}

/* Every rank meets the barriers and NCCL collectives in the same order, and
 * at each step the ranks copy to distinct peers (no link carries two copies
 * at once). */
Test(overlap_order, same_collective_order_and_distinct_peers)
{
    for (int s = 0; s < FGRT_SCHEDULE_COUNT; s++)
        for (unsigned w = 2; w <= MAXW; w++)
            for (int c = FGRT_AG_GEMM; c <= FGRT_GEMM_RS; c++) {
                fgrt_op ops[MAXW][MAXOPS];
                size_t n[MAXW];
                for (unsigned q = 0; q < w; q++)
                    n[q] = fgrt_overlap_ops((fgrt_collective)c, (fgrt_schedule)s, w, q, ops[q],
                                            MAXOPS);
                char seq0[64] = "", seq[64];
                for (unsigned q = 0; q < w; q++) {
                    size_t len = 0, copies = 0;
                    for (size_t k = 0; k < n[q]; k++) {
                        const fgrt_op *op = &ops[q][k];
                        if (op->kind == FGRT_OP_BARRIER || op->kind == FGRT_OP_NCCL)
                            seq[len++] = (char)('a' + op->kind + op->flag);
                        if (op->kind != FGRT_OP_COPY)
                            continue;
                        /* the copy of step `copies` at every other rank has another peer */
                        for (unsigned p = 0; p < q; p++) {
                            size_t seen = 0;
                            for (size_t j = 0; j < n[p]; j++)
                                if (ops[p][j].kind == FGRT_OP_COPY && seen++ == copies)
                                    cr_expect_neq(ops[p][j].peer, op->peer,
                                                  "ranks %u and %u copy with rank %d at step %zu",
                                                  p, q, op->peer, copies);
                        }
                        copies++;
                    }
                    seq[len] = '\0';
                    if (q == 0)
                        strcpy(seq0, seq);
                    cr_expect_str_eq(seq, seq0, "rank %u", q);
                }
            }
}

Test(overlap_order, sizes_and_bad_arguments)
{
    fgrt_op ops[4];
    const size_t need = fgrt_overlap_ops(FGRT_GEMM_RS, FGRT_SHARD_OVERLAP, 8, 3, NULL, 0);
    cr_assert_gt(need, 4);
    cr_assert_eq(fgrt_overlap_ops(FGRT_GEMM_RS, FGRT_SHARD_OVERLAP, 8, 3, ops, 4), need,
                 "a short array still gets the size");
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SERIAL_CE, 1, 0, ops, 4), 0);
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SERIAL_CE, 4, 4, ops, 4), 0);
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SCHEDULE_COUNT, 4, 0, ops, 4), 0);
    cr_assert_eq(fgrt_overlap_ops((fgrt_collective)7, FGRT_SERIAL_CE, 4, 0, ops, 4), 0);
    cr_assert_eq(fgrt_overlap_ops(FGRT_AG_GEMM, FGRT_SERIAL_CE, 65, 0, ops, 4), 0);
    cr_assert_str_eq(fgrt_schedule_name(FGRT_SHARD_OVERLAP), "shard_overlap");
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
