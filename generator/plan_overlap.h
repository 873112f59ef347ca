/* The overlap family's cost model (DESIGN.md, "Kernel family 3"): for one
 * tensor-parallel GEMM shape on one target, the time each schedule would
 * take, from the target's profile (peer-copy curve, GEMM times, GEMM
 * slowdown under copies), or its matmul ceiling for a GEMM not profiled.
 * `fusegen explain` prints the predictions; the runtime's executor
 * (fgrt_overlap.h) runs the chosen schedule. */
#ifndef FG_PLAN_OVERLAP_H
#define FG_PLAN_OVERLAP_H

#include "spec.h"

typedef enum {
    FG_SCHED_SERIAL_CE,      /* every peer copy over the copy engine, then the GEMM (AG);
                                the GEMM, then the partials' copies and the reduction (RS) */
    FG_SCHED_SHARD_OVERLAP,  /* one peer shard (AG) or chunk (RS) per step, its copy
                                under the GEMM of another */
    FG_SCHED_SERIAL_NCCL,    /* NCCL's collective, then (AG) or after (RS) the GEMM */
    FG_SCHED_CHUNK_OVERLAP,  /* each row block in pieces, each copied and multiplied on its
                                own; RS as a ring that adds in its GEMMs (fgrt_overlap.h) */
    FG_SCHED_CHUNK_FUSED,    /* sm_90a: one launch of the generated GEMM under chunk_overlap's
                                copies, taking each piece as it lands (AG) or having each
                                pushed as it is written (RS); predicted, not chosen until it
                                has been timed between GPUs */
    FG_SCHED_COUNT
} fg_schedule;

const char *fg_schedule_name(fg_schedule s);

/* The piece counts chunk_overlap is predicted for (those test_overlap times). */
enum { FG_OVERLAP_NCHUNKS = 3 };
extern const unsigned fg_overlap_chunks[FG_OVERLAP_NCHUNKS];   /* 2, 4, 8 */

/* Node sizes the hierarchical plan takes: the divisors g of the world size
 * (at most 64) with 2 <= g <= world / 2 (2 nodes or more), ten at most (60). */
enum { FG_OVERLAP_MAX_NODE_SIZES = 10 };

/* Writes the node sizes of `world` ranks into out, smallest first, and
 * returns their count (0 for a world with none: 2, 3, 5, ...). */
unsigned fg_overlap_node_sizes(unsigned world, unsigned out[FG_OVERLAP_MAX_NODE_SIZES]);

typedef struct fg_overlap_prediction {
    double gemm_us;            /* the unsplit GEMM alone */
    double comm_us;            /* the schedule-free communication: every copy back to back */
    double us[FG_SCHED_COUNT]; /* each schedule; NaN: not predicted (serial NCCL without
                                  the profile's NCCL fit, chunk_overlap where no piece
                                  count divides a block) */
    double chunk_us[FG_OVERLAP_NCHUNKS]; /* chunk_overlap with fg_overlap_chunks[i] pieces
                                            per block; NaN where they do not divide it */
    unsigned chunks;           /* chunk_overlap's (us[FG_SCHED_CHUNK_OVERLAP]): the fastest */
    unsigned fused_chunks;     /* chunk_fused's (us[FG_SCHED_CHUNK_FUSED]): the fastest */
    double lanes_us[FG_SCHED_COUNT]; /* each schedule on a copy lane a peer (the 2D order,
                                        fgrt_overlap_args.lanes = world - 1); NaN where not
                                        predicted: 2 ranks (one peer: the 1D order), more
                                        than 9, a ring, serial NCCL, RS chunk_overlap's ring,
                                        and as us[]; predicted, never chosen */
    unsigned lanes_chunks;       /* lanes_us[FG_SCHED_CHUNK_OVERLAP]'s pieces: the fastest */
    unsigned lanes_fused_chunks; /* lanes_us[FG_SCHED_CHUNK_FUSED]'s */
    /* The hierarchical plan (fgrt_overlap_hier_ops: the copy engine inside
     * nodes of hier_nodes[i] ranks, NCCL between them at the profile's NCCL
     * fit, as when one host's GPUs are split into nodes), for every node size
     * (fg_overlap_node_sizes); none without the profile's NCCL fit;
     * predicted, never chosen (not yet timed between GPUs) */
    unsigned hier_count;
    unsigned hier_nodes[FG_OVERLAP_MAX_NODE_SIZES];
    double hier_us[FG_OVERLAP_MAX_NODE_SIZES];
    double hier_lanes_us[FG_OVERLAP_MAX_NODE_SIZES];   /* ... its node's pushes on a copy
                                        lane a node peer (as lanes_us); NaN for nodes of 2
                                        (one peer), more than 9, or a ring */
    fg_schedule chosen;        /* the fastest but chunk_fused; serial on a tie (never slower
                                  than serial) */
    bool gemms_measured;       /* every GEMM time from the profile, none from the ceiling */
} fg_overlap_prediction;

/* The chosen schedule's pieces per block: chunks for chunk_overlap, else 1
 * (fgrt_overlap_args.chunks). */
unsigned fg_overlap_chosen_chunks(const fg_overlap_prediction *p);

/* Predicts shape s of gemm g on target t; NULL, or why it cannot (a target
 * without an interconnect profile or a matmul rate, a world size of 1). */
const char *fg_overlap_predict(const fg_gemm *g, const fg_gemm_shape *s, const fg_target *t,
                               fg_overlap_prediction *out);

#endif
