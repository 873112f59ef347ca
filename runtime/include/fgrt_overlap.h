/* The overlap executor's issue order (DESIGN.md, "Kernel family 3").
 *
 * For one tensor-parallel GEMM (an all-gather feeding it, or a reduce-scatter
 * fed by it) and one schedule, the operations each rank issues, in order,
 * on its streams.  The executor below replays them with the copy engine, the
 * caller's GEMM and the generated (or the caller's) reduction, one process
 * per GPU with peer buffers mapped through CUDA IPC (serial NCCL's order is
 * the engine's to run, with NCCL); this part is host-only, so that every
 * schedule's order can be checked for every rank at once without a GPU.
 *
 * Conventions of the order:
 * - Stream 0 carries the copies and the flags set after them; streams 1 and 2
 *   the GEMMs (alternating, to soften wave quantization) and the reduction.
 *   With more than one copy lane (the 2D decomposition: pushes to several
 *   peers, or several pieces, at once on separate copy engines) a rank's
 *   push of piece j (0 for a whole block) to peer rank + i goes on lane
 *   (j (world - 1) + i - 1) % lanes, lane 0 being stream 0 and lane l > 0
 *   stream 2 + l (fgrt_overlap_copy_stream), its flag behind it on its lane;
 *   with lanes = world - 1 every peer has its own, with one peer its pieces
 *   take turns.
 * - A flag is set after the operations before it on its stream, in the
 *   memory of the rank that waits on it (the executor copies the call's
 *   epoch there: remote stream memory writes are gone from CUDA 13.1 on), so
 *   every wait reads local memory and has a time limit (the executor turns
 *   an expired one into an error, never a hang).  Flags hold the call's
 *   epoch, so a flag needs no reset between calls.
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
#include "fgrt.h"
#include "fgrt_limits.h"

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
    FGRT_CHUNK_OVERLAP,  /* each row block in `chunks` pieces, each piece's copy flagged on its
                            own and its GEMM issued once it landed.  AG: shard_overlap's order
                            by pieces.  RS: a ring with no reduction pass: at step s rank r
                            multiplies block r - s - 1 adding the running sum rank r - 1 sent
                            into receive slot s - 1 (cuBLASLt's C; the sum is rounded to the
                            dtype at each of the world - 1 hops, where the reduction of the
                            other schedules rounds once), and sends it on to r + 1; the last step,
                            the own block, writes `out` */
    FGRT_CHUNK_FUSED,    /* one launch of the generated GEMM (fg_overlap_gemm_bind, or
                            fg_overlap_gemm_portable_bind where only that form is) over all
                            of A, the tile rows in fgrt_overlap_tile_rows' order.  AG:
                            chunk_overlap's copies and flags, the GEMM issued before them
                            taking each tile once the flags of the pieces its rows lie in are
                            set (its own time-limited waits).  RS: the peers' blocks first,
                            the own last, each piece of a peer's partial pushed (copy engine)
                            once the GEMM has counted its rows written, then the owner's
                            reduction as shard_overlap's; pieces of whole 128-row tiles */
    FGRT_SCHEDULE_COUNT
} fgrt_schedule;

typedef enum {
    FGRT_OP_BARRIER,  /* join the streams, set `flag`, wait for every peer's (time limit) */
    FGRT_OP_COPY,     /* stream 0: row block `block` from this rank into `peer`: AG pushes
                         this rank's shard (block = this rank) into the same block of the
                         peer's gathered A (each rank's shard is its own block of its
                         gathered A: the caller writes it there, nothing copies it
                         locally); RS pushes this rank's partial of the peer's block
                         (chunk_overlap: the running sum of block `block`) into the
                         peer's receive slot `slot`.  A piece of it where chunk >= 0 */
    FGRT_OP_GEMM,     /* the rows of block `block` (all blocks: block = -1), of its piece
                         `chunk` where chunk >= 0; with slot >= 0 (RS chunk_overlap) the
                         product plus receive slot `slot`'s same rows, into `out` when the
                         block is the rank's own, else into its partials */
    FGRT_OP_SIGNAL,   /* set flag `flag` (FGRT_FLAG_SENT + i: piece i of what this rank
                         pushes to `peer`) in this rank's row of `peer`'s memory, after the
                         ops before it on `stream` */
    FGRT_OP_WAIT,     /* `stream` waits for flag `flag` of rank `peer` (its row of this
                         rank's memory; time limit) */
    FGRT_OP_REDUCE,   /* this rank's block: its own partial plus the received ones */
    FGRT_OP_NCCL,     /* the collective through NCCL (all blocks) */
    FGRT_OP_FUSED_GEMM, /* chunk_fused: every block in one kernel on `stream`; AG: each piece
                          of a peer's block multiplied once that peer's flag FGRT_FLAG_SENT +
                          piece is set in this rank's memory (the kernel's waits: no WAIT op) */
    FGRT_OP_WAIT_DONE, /* chunk_fused RS: `stream` waits until this rank's fused GEMM has
                          written piece `chunk` of row block `block` of its partials */
    FGRT_OP_NODE_BARRIER, /* the hierarchical plan's: a barrier among the ranks of this
                             rank's node only (flags cannot cross nodes) */
    FGRT_OP_NCCL_ACROSS,  /* the hierarchical plan's: on `stream` alone (after `after`),
                             one step of an exchange by NCCL among the ranks of this
                             rank's place in every node (r % node_ranks, one a node), every
                             member taking it at once: step s sends to the member s nodes
                             after this rank's and receives from `peer`, the member s
                             nodes before.  AG: this rank's own row block goes, `peer`'s own
                             (block `block`) arrives in its rows of the gathered A.  RS:
                             this node's sum of row block `block` (REDUCE of it: the own
                             partial plus the node's others' in their slots) goes to its
                             owner, `peer`'s node's sum of this rank's block arrives in
                             the receive slot of that node (`slot`) */
    FGRT_OP_REDUCE_ACROSS /* the hierarchical RS: this rank's out = its node's sum of its
                             block plus the other nodes' sums of it (NCCL_ACROSS's slots) */
} fgrt_op_kind;

typedef struct fgrt_op {
    fgrt_op_kind kind;
    unsigned stream;  /* below 2 + the lanes (FGRT_MAX_STREAMS; the hierarchical plan's
                         steps between nodes on stream 2 + the lanes); a barrier joins
                         them all */
    int peer;         /* COPY, SIGNAL: the rank written to; WAIT: the rank whose flag;
                         NCCL_ACROSS: the rank received from; else -1 */
    int block;        /* COPY, GEMM, REDUCE, WAIT_DONE: a row block (rank-sized share of M);
                         -1: all */
    int chunk;        /* COPY, GEMM, WAIT_DONE: a piece of the block (chunk_overlap,
                         chunk_fused); -1: all of it */
    int slot;         /* RS COPY: the peer's receive slot written; RS GEMM: the slot added;
                         RS NCCL_ACROSS: the node whose sum arrives; else -1 */
    unsigned flag;    /* BARRIER, SIGNAL, WAIT (FGRT_FLAG_*) */
    int after;        /* an earlier op this one must follow (an event where it ran on
                         another stream), or -1 */
} fgrt_op;

/* Flags of a rank, one row per sender in the memory of the rank that waits
 * on them (the row says who sent, the memory whom it was for): the opening
 * barrier's, then "piece i of what the sender pushed here has landed"
 * (FGRT_FLAG_SENT + i: AG's shard, or its piece i under chunk_overlap and
 * chunk_fused; RS's partial of this rank's block, i = 0, or its piece i
 * under chunk_fused; RS chunk_overlap's running sum sent at the sender's
 * ring step s, piece j: i = s * chunks + j). */
enum { FGRT_FLAG_START = 0, FGRT_FLAG_SENT = 1 };

/* FGRT_MAX_WORLD, FGRT_MAX_CHUNKS, FGRT_MAX_LANES: fgrt_limits.h */
#define FGRT_MAX_STREAMS (3 + FGRT_MAX_LANES)   /* an op's stream is below it (the GEMMs' 2,
                                                  the lanes, the hierarchical plan's steps) */

/* Flags in one sender's row for collective c under schedule s:
 * FGRT_FLAG_SENT plus the pieces a sender may flag to one rank (chunks; RS
 * chunk_overlap's ring (world - 1) x chunks), so every flag an op names is
 * below it (0 for arguments fgrt_overlap_ops refuses).  The executor keeps
 * world rows of it, and one epoch word. */
FGRT_OVERLAP_API unsigned fgrt_overlap_flags(fgrt_collective c, fgrt_schedule s, unsigned world,
                                             unsigned chunks);

/* Writes rank `rank`'s operations for collective c under schedule s with
 * `world` ranks and `lanes` copy lanes into out (at most max of them) and
 * returns how many there are (more than max: out was too small), or 0 for
 * invalid arguments (world under 2 or over FGRT_MAX_WORLD, rank not below
 * world, an unknown collective or schedule, chunks not 1 for a schedule
 * other than chunk_overlap and chunk_fused or not in 1..FGRT_MAX_CHUNKS for
 * them, lanes not fgrt_overlap_lanes_valid). */
FGRT_OVERLAP_API size_t fgrt_overlap_ops(fgrt_collective c, fgrt_schedule s, unsigned world,
                                         unsigned chunks, unsigned lanes, unsigned rank,
                                         fgrt_op *out, size_t max);

/* Whether a rank may push on `lanes` copy lanes: 1 always; more only where
 * its copies are independent of one another (not serial NCCL, whose copies
 * are NCCL's, nor RS chunk_overlap's ring, whose every push goes to the next
 * rank and carries what the last one delivered), up to FGRT_MAX_LANES and
 * the copies a rank issues in a call ((world - 1) x the pieces). */
FGRT_OVERLAP_API int fgrt_overlap_lanes_valid(fgrt_collective c, fgrt_schedule s,
                                              unsigned world, unsigned chunks, unsigned lanes);

/* The stream of a rank's push number q = j (world - 1) + i - 1 (piece j to
 * peer rank + i) over `lanes` lanes. */
FGRT_OVERLAP_API unsigned fgrt_overlap_copy_stream(unsigned q, unsigned lanes);

FGRT_OVERLAP_API const char *fgrt_schedule_name(fgrt_schedule s);   /* "shard_overlap" */

/* The hierarchical plan for `world` ranks in nodes of `node_ranks` (rank r
 * in node r / node_ranks, at place r % node_ranks): the copy engine inside
 * a node, NCCL between nodes; each rank opens with a barrier of its node.
 * AG: rank r (node n, place p) multiplies its own block, pushes it to its
 * node's other ranks, and gathers the own blocks of the ranks at its place
 * in the other nodes by NCCL, a step each (NCCL_ACROSS on its own stream, beside
 * the GEMMs and the copies: step s sends its own block to node n + s and
 * brings node n - s's), each forwarded to its node's other ranks and
 * multiplied (stream 2) once it is there; the node peers' blocks are
 * multiplied as they land, their own first, then in the order of the
 * steps; a sender's flag FGRT_FLAG_SENT + i is the block of the i-th node
 * after the sender's (0: its own).  RS: rank r (node n, place p)
 * goes node by node, its own last: for i = 1 .. nodes - 1, then 0, it
 * computes node n + i's blocks at the other places (on stream 2), each
 * pushed once written to the rank at that place of r's node (into receive
 * slot i x node_ranks + p, flag FGRT_FLAG_SENT + i), then node n + i's
 * block at place p, whose owner is at r's place (stream 1); once its node
 * peers' partials of it landed it sums them (REDUCE: the node's sum) and,
 * for i > 0, sends that sum to the owner by NCCL (NCCL_ACROSS step i, on
 * its own stream, beside the next node's GEMMs) while receiving node n - i's sum
 * of its own block.  REDUCE_ACROSS then adds the other nodes' sums to its
 * node's, into out: only the own node's sum and the last step are left at
 * the end (a reduce-scatter of every node sum at once, issued last, would
 * run under nothing).  The pushes inside a node go on `lanes` copy streams,
 * the one to the node's rank j places on over lane (j - 1) % lanes (with
 * node_ranks - 1 lanes each node peer has its own: the 2D order inside the
 * node), a flag on its copy's lane; the steps between nodes on stream
 * 2 + lanes.
 * Writes rank `rank`'s ops like fgrt_overlap_ops; 0 for invalid
 * arguments (fgrt_overlap_hier_lanes_valid, rank not below world).
 * Checked in the simulator of tests/unit/test_overlap_order.c; the
 * executor runs it with fgrt_overlap_args.node_ranks (the engine's NCCL as
 * its across callback). */
FGRT_OVERLAP_API size_t fgrt_overlap_hier_ops(fgrt_collective c, unsigned world,
                                              unsigned node_ranks, unsigned lanes,
                                              unsigned rank, fgrt_op *out, size_t max);

/* Whether the hierarchical plan takes these: node_ranks 2 or more, world a
 * multiple of it with 2 nodes or more and at most FGRT_MAX_WORLD, 1 to
 * node_ranks - 1 copy lanes (at most FGRT_MAX_LANES). */
FGRT_OVERLAP_API int fgrt_overlap_hier_lanes_valid(fgrt_collective c, unsigned world,
                                                   unsigned node_ranks, unsigned lanes);

/* Flags in one sender's row under the hierarchical plan: FGRT_FLAG_SENT +
 * the nodes (0 for the arguments fgrt_overlap_hier_ops refuses). */
FGRT_OVERLAP_API unsigned fgrt_overlap_hier_flags(fgrt_collective c, unsigned world,
                                                  unsigned node_ranks);

/* The order in which the fused GEMM (one kernel over all of A) takes the
 * tile rows of bm rows of rank `rank`'s A [m, k] under schedule s
 * (shard_overlap, chunk_overlap or chunk_fused).  AG: the own row block's
 * first, then each tile row once the last piece its rows lie in has
 * landed, in the order of the schedule's waits (fgrt_overlap_ops;
 * chunk_fused's pieces land as chunk_overlap's), ties in row order.  RS:
 * the blocks in the order their partials are pushed (rank + 1, rank + 2,
 * ...), the own block last.  With out NULL and max 0: the count, m / bm.
 * Else writes the m / bm tile rows into out and returns their count; 0 for
 * invalid arguments (a serial schedule, m not a multiple of bm and of
 * world x the pieces, max too small). */
FGRT_OVERLAP_API size_t fgrt_overlap_tile_rows(fgrt_collective c, fgrt_schedule s,
                                               unsigned world, unsigned chunks, unsigned rank,
                                               long long m, unsigned bm, int *out, size_t max);

/* The plan table's row for a GEMM (the generated fg_overlap_plans, or any
 * table of that type): collective, m, n, k, world and dtype equal, and the
 * target's name when target is not NULL; NULL when there is none. */
FGRT_OVERLAP_API const fg_overlap_entry *fgrt_overlap_find(const fg_overlap_entry *plans,
                                                           size_t count, fgrt_collective c,
                                                           long long m, long long n,
                                                           long long k, unsigned world,
                                                           fg_reg_dtype dtype,
                                                           const char *target);


/* ---- the executor: one rank's part of one GEMM's overlap ----
 *
 * One process per GPU as engines run it (or one process driving several
 * GPUs, each with its own executor): every rank creates its executor,
 * exports a handle, passes it to every other rank by its own means (MPI, a
 * socket, a pipe), and connects with all of them; from then on each
 * fgrt_overlap_run() is one call of the GEMM on every rank, in the same
 * order everywhere.  Copies run on the copy engine (peer memory mapped
 * through CUDA IPC, or directly within one process); every flag is written
 * in the memory of the rank that waits on it, by a 4-byte copy behind the
 * data it announces; the GEMMs are the caller's (fgrt_gemm_fn), the owner's
 * reduction the generated kernel or the caller's (fgrt_reduce_fn), enqueued
 * on the executor's streams.
 * CUDA, run on H200s; HIP (hipMemcpyAsync between devices, hipIpc*, stream
 * memory operations) compiled and linked, not yet run on AMD hardware. */

typedef struct fgrt_overlap fgrt_overlap;

/* Enqueues c[rows, n] = a[rows, k] x B (+ acc[rows, n] where acc is not
 * NULL: chunk_overlap's running sum, a receive slot's rows) on `stream` (a
 * CUstream or hipStream_t, one of the executor's); a, c and acc are rows of
 * the executor's a, c (or out) and receive slots.  0 on success.  The callbacks
 * run inside fgrt_overlap_run, after waits on other ranks were enqueued:
 * they must not synchronize, and every kernel they launch must have been
 * launched once before the first call (CUDA's lazy module loading loads a
 * module at its first launch and waits for the device's streams, which a
 * peer that never comes would hold for ever). */
typedef int (*fgrt_gemm_fn)(void *user, void *stream, const void *a, const void *acc, void *c,
                            long long rows);

/* Enqueues out = own + the sum of recv's world slots but slot `rank` (each
 * `elems` elements of the dtype; recv [world][elems]) on `stream`.  0 on
 * success. */
typedef int (*fgrt_reduce_fn)(void *user, void *stream, const void *own, const void *recv,
                              void *out, unsigned world, unsigned rank, long long elems);

/* The hierarchical plan's step between nodes (fgrt_overlap_args.node_ranks),
 * the engine's NCCL or any transport, enqueued on `stream`, among the
 * `nodes` ranks at this rank's place in every node (member i: the one in
 * node i; this rank is member `node`), step `step` (1 .. nodes - 1) of an
 * exchange every member takes at once: a grouped send to member (node +
 * step) % nodes and receive from member (node - step) % nodes, elems
 * elements each.  AG: blocks[i] are the rows of member i's own row block in
 * this rank's gathered A (not contiguous); blocks[node] (filled) goes, and
 * the other member's arrives in its blocks[].  RS: blocks[i] (contiguous)
 * is this node's sum of member i's row block; blocks[(node + step) % nodes]
 * goes, and the other member's node sum of this rank's block arrives in
 * out.  The same rules as fgrt_gemm_fn (no synchronizing).  0 on success. */
typedef int (*fgrt_across_fn)(void *user, void *stream, fgrt_collective c, unsigned nodes,
                              unsigned node, unsigned step, void *const *blocks, void *out,
                              long long elems);

typedef struct fgrt_overlap_args {
    fgrt_collective collective;
    fgrt_schedule schedule;    /* FGRT_SERIAL_CE, FGRT_SHARD_OVERLAP, FGRT_CHUNK_OVERLAP or
                                  FGRT_CHUNK_FUSED (serial NCCL is NCCL's own call) */
    unsigned world, rank;      /* 2..FGRT_MAX_WORLD ranks; each rank's device differs */
    unsigned chunks;           /* chunk_overlap, chunk_fused: pieces per row block
                                  (1..FGRT_MAX_CHUNKS); else 0 or 1 */
    unsigned lanes;            /* copy streams this rank pushes on (0 or 1: one, the 1D
                                  order; world - 1: every peer at once, the 2D one; under
                                  the hierarchical plan up to node_ranks - 1, every node
                                  peer at once); see fgrt_overlap_lanes_valid and
                                  fgrt_overlap_hier_lanes_valid.  The ranks need not agree. */
    long long m, n, k;         /* the GEMM of this rank: m rows in all, a multiple of world
                                  (of world x chunks for chunk_overlap and chunk_fused;
                                  chunk_fused: of 128 too, RS's of world x chunks x 128) */
    fg_reg_dtype dtype;
    void *a;                   /* AG: the gathered A [m, k]; the caller writes its shard into
                                  row block `rank`, the peers push theirs into the others.
                                  RS: A [m, k] */
    void *c;                   /* [m, n]: AG: the output; RS: this rank's partials */
    void *out;                 /* RS: this rank's row block of the sum [m / world, n];
                                  AG: NULL */
    fgrt_gemm_fn gemm;         /* chunk_fused: unused (the generated GEMM multiplies) */
    const void *w;             /* chunk_fused: W [n, k] in nn.Linear's layout, C = A W^T (the
                                  context's registry must hold, for n, k and this device,
                                  overlap_gemm (sm_90a, wgmma) or else overlap_gemm_portable
                                  (AMD, or sm_90a without clusters); m a multiple of 128);
                                  else unused */
    fgrt_reduce_fn reduce;     /* RS but chunk_overlap (whose GEMMs add the partials: unused
                                  there); NULL: the generated overlap_reduce kernel of the
                                  context's registry (fg_overlap_reduce_bind; a row block
                                  of m / world x n must be whole 16-byte vectors).  The
                                  hierarchical plan calls it once a block of the rank's
                                  column, with world = node_ranks, rank = its place, recv
                                  the node's slots of that block and out the executor's
                                  node sum, and once more at the end with world = the
                                  nodes, rank = its node, own its node's sum of its block
                                  and recv the other nodes' sums of it (the generated
                                  kernels: overlap_reduce_*_w<node_ranks> and _w<nodes>,
                                  which `generate` emits for every divisor of a spec's
                                  world) */
    void *user;                /* passed to gemm and reduce */
    double timeout_s;          /* fgrt_overlap_wait's limit (0: 10 s); chunk_fused's kernel
                                  waits at most min(timeout_s, 20 s) for a piece */
    unsigned node_ranks;       /* 0: one node (every peer mapped).  2 or more, with
                                  shard_overlap and m a multiple of world: the
                                  hierarchical plan (fgrt_overlap_hier_ops) over nodes of
                                  node_ranks ranks (rank r in node r / node_ranks), the copy
                                  engine inside a node and `across` between nodes; only the
                                  node's peers are mapped, its barriers are the node's, and
                                  a failure reaches the other nodes through `across` (the
                                  engine's NCCL and its own error handling), not through
                                  this executor's marks */
    fgrt_across_fn across;     /* with node_ranks: the step between nodes; else unused */
} fgrt_overlap_args;

/* What a rank tells its peers: opaque, the same size in every process. */
typedef struct fgrt_overlap_handle {
    unsigned char bytes[320];
} fgrt_overlap_handle;

/* Checks the arguments, makes the streams, events and flags and (RS) the
 * receive slots [world][m / world, n]; the buffers must stay valid for the
 * executor's life. */
FGRT_OVERLAP_API fg_status fgrt_overlap_create(fg_context *ctx, const fgrt_overlap_args *args,
                                               fgrt_overlap **out);

FGRT_OVERLAP_API fg_status fgrt_overlap_export(const fgrt_overlap *x, fgrt_overlap_handle *out);

/* all[r]: rank r's exported handle (this rank's own included).  Checks that
 * the ranks agree on the GEMM and the schedule, maps each peer's memory (IPC
 * from another process; directly, with peer access, from this one). */
FGRT_OVERLAP_API fg_status fgrt_overlap_connect(fgrt_overlap *x, const fgrt_overlap_handle *all);

/* Enqueues one call after the work already on `stream` (a CUstream or
 * hipStream_t, blocking or not; NULL:
 * the legacy stream), and makes `stream`'s later work wait for the call.
 * Does not block.  A failure while enqueueing marks every peer failed (see
 * fgrt_overlap_wait), then releases this rank's waits, and leaves the
 * executor failed (every later call returns the error). */
FGRT_OVERLAP_API fg_status fgrt_overlap_run(fgrt_overlap *x, void *stream);

/* Blocks until the last call is done on this rank, at most timeout_s.  Past
 * it: FG_ERR_TIMEOUT, fg_last_error() names the flags that never came (which
 * peer, which step), this rank's waits are released so its streams drain
 * (for at most timeout_s more: about 2 x timeout_s in all), the call's
 * outputs are undefined, and the executor stays failed (reporting its first
 * failure).
 * A rank that fails or gives up (a failed run, a timeout, a destroy with
 * work left) first writes a mark into every peer's flags, because releasing
 * its waits lets its queued pushes land in the peers' buffers whether or not
 * the peers are done with them.  A wait that finds the mark, while waiting
 * or once its streams are idle, returns FG_ERR_PEER_FAILED at once (naming
 * the rank that failed first: a rank that gives up on a mark passes it on;
 * and any flags still missing) and leaves the executor failed:
 * FG_OK therefore means every output of the call is right.  Where a peer's
 * copies fail outright its mark may not arrive; the time limit still ends
 * the wait. */
FGRT_OVERLAP_API fg_status fgrt_overlap_wait(fgrt_overlap *x);

/* Waits for this rank's streams (for timeout_s, then releasing its waits
 * and waiting until they finish), unmaps the peers, frees what create made.
 * Peers map this rank's flags and buffers: destroy on every rank only
 * after every rank's last fgrt_overlap_wait returned (a barrier of the
 * engine's), so that no peer still copies into what is freed.  NULL is
 * ignored. */
FGRT_OVERLAP_API void fgrt_overlap_destroy(fgrt_overlap *x);

#ifdef __cplusplus
}
#endif

#endif
