/* The overlap executor's issue order (DESIGN.md, "Kernel family 3").
 *
 * For one tensor-parallel GEMM (an all-gather feeding it, or a reduce-scatter
 * fed by it) and one schedule, the operations each rank issues, in order,
 * on its streams.  The executor replays them with the copy engine, cuBLASLt,
 * an emitted reduction kernel and NCCL, one process per GPU with peer buffers
 * mapped through CUDA IPC; this part is host-only, so that every schedule's
 * order can be checked for every rank at once without a GPU.
 *
 * Conventions of the order:
 * - Stream 0 carries the copies and the flags set after them; streams 1 and 2
 *   the GEMMs (alternating, to soften wave quantization) and the reduction.
 * - Flags are written locally, after the operations before them on their
 *   stream (remote stream memory writes are gone from CUDA 13.1 on); a wait
 *   reads a peer's flag and has a time limit (the executor turns an expired
 *   one into an error, never a hang).  Flags hold the call's epoch, so a flag
 *   needs no reset between calls.
 * - A barrier joins every stream of the rank, sets its flag and waits for
 *   every peer's.  One opens each call: every rank's inputs are written, and
 *   its previous call is over (the next pushes cannot overwrite data not yet
 *   multiplied or reduced).  Every copy is a push by the rank that owns the
 *   data, so a call returns only after its reads of the caller's buffers
 *   (AG's shard) are done, and none closes with a barrier.
 *   tests/unit/test_overlap_order.c checks these orders for two calls in a
 *   row at 2 to 8 ranks; dropping the barrier, a flag or a wait makes a check
 *   fail. */
#ifndef FGRT_OVERLAP_H
#define FGRT_OVERLAP_H

#include <stddef.h>

#include "fg_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FGRT_OVERLAP_API __attribute__((visibility("default")))
#else
#define FGRT_OVERLAP_API
#endif

typedef enum {
    FGRT_AG_GEMM,   /* A's rows are sharded over the ranks: gather them, C = A B */
    FGRT_GEMM_RS    /* each rank's C = A B is partial: reduce it, row block r to rank r */
} fgrt_collective;

typedef enum {
    FGRT_SERIAL_NCCL,    /* the collective through NCCL, then (AG) or after (RS) one GEMM */
    FGRT_SERIAL_CE,      /* every copy over the copy engine, then (AG) or after (RS) one GEMM */
    FGRT_SHARD_OVERLAP,  /* one row block per step: its copy under the GEMM of another */
    FGRT_SCHEDULE_COUNT
} fgrt_schedule;

typedef enum {
    FGRT_OP_BARRIER,  /* join the streams, set `flag`, wait for every peer's (time limit) */
    FGRT_OP_COPY,     /* stream 0: row block `block` from this rank into `peer`: AG pushes
                         this rank's shard (block = this rank) into the same block of the
                         peer's gathered A (each rank's shard is its own block of its
                         gathered A: the caller writes it there, nothing copies it
                         locally); RS pushes this rank's partial of the peer's block into
                         the peer's receive slot of this rank */
    FGRT_OP_GEMM,     /* the rows of block `block` (all blocks: block = -1) */
    FGRT_OP_SIGNAL,   /* set local flag `flag` after the ops before it on `stream` */
    FGRT_OP_WAIT,     /* `stream` waits for flag `flag` of rank `peer` (time limit) */
    FGRT_OP_REDUCE,   /* this rank's block: its own partial plus the received ones */
    FGRT_OP_NCCL      /* the collective through NCCL (all blocks) */
} fgrt_op_kind;

typedef struct fgrt_op {
    fgrt_op_kind kind;
    unsigned stream;  /* 0, 1 or 2; a barrier joins them all */
    int peer;         /* COPY, WAIT: the other rank; else -1 */
    int block;        /* COPY, GEMM, REDUCE: a row block (rank-sized share of M); -1: all */
    unsigned flag;    /* BARRIER, SIGNAL, WAIT (FGRT_FLAG_*) */
    int after;        /* an earlier op this one must follow (an event where it ran on
                         another stream), or -1 */
} fgrt_op;

/* Flags of a rank: the opening barrier's, then "what I push to rank d has
 * landed there" (FGRT_FLAG_SENT + d: AG's shard, RS's partial of d's block). */
enum { FGRT_FLAG_START = 0, FGRT_FLAG_SENT = 1 };

/* Writes rank `rank`'s operations for collective c under schedule s with
 * `world` ranks into out (at most max of them) and returns how many there
 * are (more than max: out was too small), or 0 for invalid arguments (world
 * under 2 or over 64, rank not below world, an unknown collective or
 * schedule). */
FGRT_OVERLAP_API size_t fgrt_overlap_ops(fgrt_collective c, fgrt_schedule s, unsigned world,
                                         unsigned rank, fgrt_op *out, size_t max);

FGRT_OVERLAP_API const char *fgrt_schedule_name(fgrt_schedule s);   /* "shard_overlap" */

/* The plan table's row for a GEMM (the generated fg_overlap_plans, or any
 * table of that type): collective, m, n, k, world and dtype equal, and the
 * target's name when target is not NULL; NULL when there is none. */
FGRT_OVERLAP_API const fg_overlap_entry *fgrt_overlap_find(const fg_overlap_entry *plans,
                                                           size_t count, fgrt_collective c,
                                                           long long m, long long n,
                                                           long long k, unsigned world,
                                                           fg_reg_dtype dtype,
                                                           const char *target);

#ifdef __cplusplus
}
#endif

#endif
