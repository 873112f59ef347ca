/* The overlap family's cost model (plan_overlap.h).
 *
 * Per rank, world size W, 2-byte elements:
 *   copy(b)  = latency + b / (bidir / 2): every rank sends and receives at
 *              once, so each direction gets half the two-way rate
 *   gemm(r)  = the profile's measured time of the r x n x k GEMM
 *              (`fusegen profile`: the library's efficiency varies 15% and
 *              more between these shapes), else 2 r n k / matmul ceiling
 * All-gather + GEMM, shard = (m / W) k elements from each peer:
 *   serial        (W - 1) copy(shard) + gemm(m)
 *   shard overlap (W - 1) max(gemm(m / W) (1 + slowdown), copy(shard)) + gemm(m / W):
 *                 the GEMM of shard i runs while shard i + 1 lands, own shard first
 * GEMM + reduce-scatter, chunk = (m / W) n partial sums for each peer:
 *   serial        gemm(m) + (W - 1) copy(chunk) + reduce
 *   shard overlap gemm(m / W) + (W - 1) max(gemm(m / W) (1 + slowdown), copy(chunk)) + reduce:
 *                 the peers' chunks first, each sent while the next is computed
 *   reduce        (W + 1) chunks through the copy ceiling (W read, 1 written)
 * Chunk overlap, c pieces of a block (rows / c), each copy flagged on its own,
 * every rank in step (so one rank's timeline stands for all), the copy
 * engine serial, the GEMMs issued in pairs on two streams (two that are
 * ready at once share the GPU and end together: measured, a pair's first
 * piece does not end early, so RS with 2 pieces exposed its copies):
 *   AG   gemm(m / W) (1 + slowdown), then the peers' pieces in the order
 *        they land, each multiplied once landed: piece j of the i-th peer
 *        lands after the (j (W - 1) + i)-th copy(piece)
 *   RS   W steps of c pieces, piece j of step s > 0 starting once piece j of
 *        step s - 1 landed from the ring's previous rank; each GEMM piece
 *        gemm(rows / c) (1 + slowdown), plus reading the added running sum
 *        (a piece of C through the copy ceiling) at steps s > 0
 * Chunk fused (sm_90a), one persistent GEMM at the whole GEMM's rate (one
 * launch: no piece's wave quantization) under copies.  AG: launched before
 * the copies, it takes each tile once its rows landed: the own block's
 * rows first, then each piece once landed (as chunk_overlap's), one after
 * the other on the whole GPU.  RS: the peers' blocks first, each piece
 * pushed (the copy engine serial) once its rows are written, the own block
 * last, then the reduction once the GEMM and every push are done (pieces
 * of whole 128-row tiles).  Not chosen: the fused GEMM has not yet run
 * between GPUs, so the model is unchecked (it would also need W in
 * nn.Linear's layout from the engine).
 * Every copy-engine schedule adds the executor's fixed cost per call (its
 * barriers and cross-GPU event waits), which the profile measures.
 * Serial NCCL: gemm(m) + NCCL's collective alone, latency + (W - 1) pieces
 * through its fitted rate (the profile's, per collective); not predicted
 * without that fit.
 * Copy lanes (the 2D order, one lane a peer: fgrt_overlap_args.lanes =
 * W - 1), more than 2 ranks.  The pushes are those of the one-lane order,
 * but a peer's do not queue behind the others': on a switch (or PCIe) the
 * lanes share the rank's links, so the bytes still pass one after the other
 * at the same rate while each copy's latency runs alongside the others'
 * (round j of the lanes pays it once); on a full mesh each lane has a link
 * of its own, every round lands after one copy(piece).  Where the profile
 * has the lanes' own fit (copy_lanes_*: every GPU pushing to every other at
 * once) its latency and rate replace both.  The same timelines
 * as above (shard overlap and serial as simulations of landing and
 * pushing), with the one-lane closed forms replaced by them; AG lands piece
 * j of peer i with push j (W - 1) + i, RS pushes each partial (piece) once
 * written.  Not predicted on a ring (a rank reaches one peer), for serial
 * NCCL or RS chunk_overlap (one lane); never chosen until timed on more than
 * two GPUs (the rates of several lanes at once are not in the profile).
 * The hierarchical plan (fgrt_overlap_hier_ops), nodes of g ranks, N = W / g
 * of them; NCCL between nodes in N - 1 steps of one block each way, each at
 * the profile's NCCL fit over 2 ranks (latency + one block through its
 * rate: one host's GPUs split into nodes, the emulation; another
 * network needs its own fit), one after the other.  The GPU runs one
 * kernel at a time, taking the earliest issued of those whose inputs are
 * there; NCCL and the copy engine beside it.
 *   AG   the own block's GEMM first; the g - 1 pushes of it on the copy
 *        engine; NCCL brings the other nodes' blocks a step each, the
 *        engine forwards each to the g - 1 node peers once it is there and
 *        its pushes before are out, and a node peer's block lands with the
 *        matching push or forward
 *   Inside a node on one lane, or on a lane a node peer (g - 1 lanes: the
 *   2D order's timelines above, the node's peers for the world's)
 *   RS   node by node, the own last: a node's g - 1 blocks at the other
 *        places (stream 2), each partial pushed once written, then its
 *        block at the own place (stream 1) and, once the node peers'
 *        partials of it landed, their sum ((g + 1) partials through the
 *        copy ceiling), which NCCL's step sends to its owner beside the
 *        next node's GEMMs; the last sum ((N + 1) blocks) once the own
 *        node's sum and the last step are in */
#include "plan_overlap.h"

#include <math.h>

#include "fgrt_limits.h"
#include "plan.h"

const char *fg_schedule_name(fg_schedule s)
{
    static const char *const names[FG_SCHED_COUNT] = {"serial_ce", "shard_overlap",
                                                      "serial_nccl", "chunk_overlap",
                                                      "chunk_fused"};
    return s < FG_SCHED_COUNT ? names[s] : "?";
}

/* us of the rows x n x k GEMM: the profile's time, else at the matmul ceiling. */
static double gemm_us(const fg_target *t, double rows, unsigned n, unsigned k, bool *measured)
{
    const fg_interconnect *ic = t->interconnect;
    for (unsigned i = 0; i < ic->gemm_times_count; i++) {
        const fg_gemm_time *g = &ic->gemm_times[i];
        if (g->m == rows && g->n == n && g->k == k)
            return g->us;
    }
    *measured = false;
    return 2.0 * rows * n * k / (t->ceilings->matmul_bf16_tflops * 1e6);
}

/* us of one peer copy of `bytes`: every rank sends and receives at once,
 * so each direction gets half the two-way rate. */
static double copy_us(const fg_interconnect *ic, double bytes)
{
    return ic->peer_copy_latency_us + bytes / (ic->peer_copy_bidir_gbps / 2 * 1e3);
}

/* The copy lanes of a timeline: one (the copy engine serial: copy_us per
 * copy), or one a peer (then the latency of copies on different lanes
 * overlaps; on a full mesh without the profile's lanes fit their bytes too). */
typedef struct lanes {
    unsigned count;      /* 1, or W - 1 */
    bool own_links;      /* a lane's bytes do not wait for another's */
    double latency_us;   /* a copy's latency (beside the other lanes', where several) */
    double gbps;         /* the rate of a lane's bytes, or (shared) of all lanes' */
} lanes;

/* The one lane: every copy latency + bytes at half the two-way rate (copy_us). */
static lanes one_lane(const fg_interconnect *ic)
{
    return (lanes){1, false, ic->peer_copy_latency_us, ic->peer_copy_bidir_gbps / 2};
}

/* A lane a peer for W ranks: the profile's lanes fit where it has one, else
 * on a full mesh a link each, on a switch the one-peer rate shared. */
static lanes lane_a_peer(const fg_interconnect *ic, unsigned w, fg_topology topo)
{
    if (ic->copy_lanes_gbps > 0)
        return (lanes){w - 1, false, ic->copy_lanes_latency_us, ic->copy_lanes_gbps};
    lanes l = one_lane(ic);
    l.count = w - 1, l.own_links = topo == FG_TOPO_FULL_MESH;
    return l;
}

/* When AG's at-th push (1-based; piece j to peer r + i is push
 * j (W - 1) + i) of `bytes` has landed, all issued at once: each round of
 * the lanes pays the latency once; the bytes pass one after the other, or
 * (own links) a round's at once. */
static double landed_us(lanes l, unsigned at, double bytes)
{
    const unsigned round = (at - 1) / l.count + 1;
    const double xfer = bytes / (l.gbps * 1e3);
    return l.own_links ? round * (l.latency_us + xfer) : round * l.latency_us + at * xfer;
}

/* RS: the end of a push of `bytes` on lane `lane` whose rows were written
 * at `ready`, behind the pushes before it: engine[lane] (own links) or
 * engine[0] (shared) is when those end. */
static double pushed_us(lanes l, unsigned lane, double ready, double *engine, double bytes)
{
    double *e = &engine[l.own_links ? lane : 0];
    const double xfer = bytes / (l.gbps * 1e3);
    if (l.count == 1 || l.own_links)   /* the latency in turn */
        return *e = fmax(*e, ready) + l.latency_us + xfer;
    /* the latency beside the other lanes', the bytes after theirs */
    return *e = fmax(*e, ready + l.latency_us) + xfer;
}

const unsigned fg_overlap_chunks[FG_OVERLAP_NCHUNKS] = {2, 4, 8};
/* The planner plans within the executor's limits (fgrt_limits.h: pieces a
 * block, copy lanes, ranks), a plan it could not run being no plan. */
_Static_assert(FG_OVERLAP_NCHUNKS == 3 && FGRT_MAX_CHUNKS >= 8,
               "fg_overlap_chunks' largest (8) within the executor's pieces");

/* Two GEMM pieces issued back to back (on the executor's two alternating
 * streams): when the second is ready before the first ends they run at once
 * and share the GPU, so both end together; else one after the other.
 * cost[i] and ready[i] of piece i; n is 1 for a lone last piece.  Advances
 * *now (the GPU busy until) and writes each piece's end. */
static void run_pair(double *now, const double cost[2], const double ready[2], int n,
                     double end[2])
{
    const double start = fmax(*now, ready[0]);
    if (n == 2 && ready[1] <= start + cost[0]) {
        end[0] = end[1] = fmax(start + cost[0] + cost[1], ready[1] + cost[1]);
    } else {
        end[0] = start + cost[0];
        if (n == 2)
            end[1] = fmax(end[0], ready[1]) + cost[1];
    }
    *now = end[n - 1];
}

/* chunk_overlap's time with c pieces per block (at most FGRT_MAX_CHUNKS) on
 * lanes l; NaN where c does not divide the block. */
static double chunk_overlap_us(const fg_gemm_shape *s, const fg_target *t, unsigned w,
                               unsigned c, lanes l, bool *measured)
{
    const fg_interconnect *ic = t->interconnect;
    const bool ag = s->collective == FG_COLL_ALL_GATHER;
    /* (landed[] holds FGRT_MAX_CHUNKS pieces; RS's ring pushes on one lane) */
    if (c > FGRT_MAX_CHUNKS || s->m % (w * c) || (!ag && l.count > 1))
        return NAN;
    const double e = 2.0, rows = (double)s->m / w, slow = 1 + ic->gemm_slowdown;
    const double piece = rows / c * (ag ? s->k : s->n) * e, copy = copy_us(ic, piece);
    const double g = gemm_us(t, rows / c, s->n, s->k, measured) * slow;
    /* the GEMMs in issue order: AG the own block, then each peer's pieces;
     * RS W steps of c pieces (step, piece) = (i / c, i % c) */
    const unsigned count = ag ? 1 + (w - 1) * c : w * c;
    const double add = rows / c * s->n * e / (t->ceilings->copy_gbps * 1e3);
    double now = 0, engine = 0;   /* this rank's GPU and copy engine busy until */
    double landed[FGRT_MAX_CHUNKS];    /* RS: piece j of the previous step, here */
    for (unsigned i = 0; i < count; i += 2) {
        const int n = i + 1 < count ? 2 : 1;
        double cost[2], ready[2], end[2];
        for (int k = 0; k < n; k++) {
            const unsigned at = i + (unsigned)k;
            if (ag) {   /* the at-th GEMM after the own block's lands with the at-th copy
                           (piece j of the p-th peer: at = j (W - 1) + p) */
                cost[k] = at ? g : gemm_us(t, rows, s->n, s->k, measured) * slow;
                ready[k] = at ? landed_us(l, at, piece) : 0;
            } else {
                cost[k] = g + (at >= c ? add : 0);
                ready[k] = at >= c ? landed[at % c] : 0;
            }
        }
        run_pair(&now, cost, ready, n, end);
        for (int k = 0; !ag && k < n; k++)   /* RS: each piece but the last step's goes on */
            if (i + (unsigned)k + c < count)
                landed[(i + (unsigned)k) % c] = engine = fmax(engine, end[k]) + copy;
    }
    return now;
}

/* chunk_fused's time with c pieces per block (reduce: RS's owner's
 * reduction); NaN where it does not apply (not sm_90a's wgmma form: the
 * executor runs the portable form too, but its rate on AMD has never been
 * measured and on an sm_90a target without clusters it is an ablation, so
 * neither is predicted; no fused GEMM emitted for the
 * shape's n and k on the target, fg_plan_overlap_gemm_skipped; c not
 * dividing the block; m not whole tile rows; RS: pieces of whole tile
 * rows). */
static double chunk_fused_us(const fg_gemm_shape *s, const fg_target *t, unsigned w, unsigned c,
                             double reduce, lanes l, bool *measured)
{
    const fg_interconnect *ic = t->interconnect;
    const bool ag = s->collective == FG_COLL_ALL_GATHER;
    if (t->arch != FG_ARCH_SM90A || fg_plan_gemm_portable(t) ||
        fg_plan_overlap_gemm_skipped(s, t) || s->m % (w * c) ||
        s->m % GEMM_BM || (!ag && (s->m / (w * c)) % GEMM_BM))
        return NAN;
    const double rows = (double)s->m / w, slow = 1 + ic->gemm_slowdown;
    const double per_row = gemm_us(t, s->m, s->n, s->k, measured) * slow / s->m;
    const double piece = rows / c * (ag ? s->k : s->n) * 2.0;
    if (!ag) {   /* the pieces pushed as written (peer by peer), the own block last, then
                    the reduction */
        double engine[FGRT_MAX_LANES] = {0}, last = 0;
        for (unsigned at = 1; at <= (w - 1) * c; at++)
            last = fmax(last, pushed_us(l, (at - 1) / c, at * rows / c * per_row, engine, piece));
        return fmax(last, s->m * per_row) + reduce;
    }
    double now = rows * per_row;   /* the own block, there at launch */
    for (unsigned at = 1; at <= (w - 1) * c; at++)   /* the at-th piece lands with the at-th push */
        now = fmax(now, landed_us(l, at, piece)) + rows / c * per_row;
    return now;
}

/* Each schedule on a copy lane a peer (the 2D order) into out->lanes_us,
 * NaN where not predicted (see the top of this file). */
static void predict_lanes(const fg_gemm *g, const fg_gemm_shape *s, const fg_target *t,
                          double gemm_part, double reduce, fg_overlap_prediction *out)
{
    const fg_interconnect *ic = t->interconnect;
    const unsigned w = g->world_size;
    for (int k = 0; k < FG_SCHED_COUNT; k++)
        out->lanes_us[k] = NAN;
    if (w < 3 || w - 1 > FGRT_MAX_LANES || g->topology == FG_TOPO_RING)
        return;
    const lanes l = lane_a_peer(ic, w, g->topology);
    const bool ag = s->collective == FG_COLL_ALL_GATHER;
    const double piece = (double)s->m / w * (ag ? s->k : s->n) * 2.0;
    const double under = gemm_part * (1 + ic->gemm_slowdown), fixed = ic->call_overhead_us;
    if (ag) {
        out->lanes_us[FG_SCHED_SERIAL_CE] = out->gemm_us + landed_us(l, w - 1, piece) + fixed;
        double now = gemm_part;   /* the own block first, then each peer's once landed */
        for (unsigned i = 1; i < w; i++)
            now = fmax(now, landed_us(l, i, piece)) + under;
        out->lanes_us[FG_SCHED_SHARD_OVERLAP] = now + fixed;
    } else {
        double engine[FGRT_MAX_LANES] = {0}, last = 0;
        for (unsigned i = 1; i < w; i++)   /* every partial once the whole GEMM is done */
            last = fmax(last, pushed_us(l, i - 1, out->gemm_us, engine, piece));
        out->lanes_us[FG_SCHED_SERIAL_CE] = last + reduce + fixed;
        double shard[FGRT_MAX_LANES] = {0}, sent = 0;
        for (unsigned i = 1; i < w; i++)   /* the peers' blocks first, each pushed once done */
            sent = fmax(sent, pushed_us(l, i - 1, gemm_part + (i - 1) * under, shard, piece));
        out->lanes_us[FG_SCHED_SHARD_OVERLAP] =
            fmax(sent, gemm_part + (w - 1) * under) + reduce + fixed;
    }
    for (int i = 0; i < FG_OVERLAP_NCHUNKS; i++) {
        bool measured = true;   /* (the one-lane prediction says it already) */
        const double us =
            chunk_overlap_us(s, t, w, fg_overlap_chunks[i], l, &measured) + fixed;
        if (!isnan(us) && !(us >= out->lanes_us[FG_SCHED_CHUNK_OVERLAP])) {
            out->lanes_us[FG_SCHED_CHUNK_OVERLAP] = us;
            out->lanes_chunks = fg_overlap_chunks[i];
        }
        const double fused =
            chunk_fused_us(s, t, w, fg_overlap_chunks[i], reduce, l, &measured) + fixed;
        if (!isnan(fused) && !(fused >= out->lanes_us[FG_SCHED_CHUNK_FUSED] * (1 - 1e-12))) {
            out->lanes_us[FG_SCHED_CHUNK_FUSED] = fused;
            out->lanes_fused_chunks = fg_overlap_chunks[i];
        }
    }
}

/* When NCCL's collective (all-gather for AG, reduce-scatter for RS) over
 * `ranks` ranks moving blocks of `bytes`, begun at `start` us, ends: the
 * profile's fit, latency + (ranks - 1) blocks through its rate; NaN without
 * that fit. */
static double nccl_end_us(const fg_interconnect *ic, bool ag, unsigned ranks, double bytes,
                          double start)
{
    const double gbps = ag ? ic->nccl_ag_gbps : ic->nccl_rs_gbps;
    return gbps > 0 ? start + (ag ? ic->nccl_ag_latency_us : ic->nccl_rs_latency_us) +
                          (ranks - 1) * bytes / (gbps * 1e3)
                    : NAN;
}

unsigned fg_overlap_node_sizes(unsigned world, unsigned out[FG_OVERLAP_MAX_NODE_SIZES])
{
    unsigned count = 0;
    for (unsigned g = 2; g <= world / 2 && count < FG_OVERLAP_MAX_NODE_SIZES; g++)
        if (world % g == 0)
            out[count++] = g;
    return count;
}

/* The hierarchical AG with nodes of g, the node's pushes on lanes l (see
 * the top of this file). */
static double hier_all_gather_us(const fg_interconnect *ic, lanes l, unsigned w, unsigned g,
                                 double block_gemm, double block_bytes)
{
    const unsigned nodes = w / g, node_blocks = nodes * (g - 1);
    const double exchange = nccl_end_us(ic, true, 2, block_bytes, 0);   /* a block each way */
    /* the node peers' blocks in the order waited for: their own, then each step's
     * (push j of a block to the node peer j + 1 places on, from when the block is there) */
    double landed[FGRT_MAX_WORLD], engine[FGRT_MAX_LANES] = {0};
    for (unsigned q = 0; q < node_blocks; q++)
        landed[q] = pushed_us(l, q % (g - 1) % l.count, q / (g - 1) * exchange, engine,
                              block_bytes);
    double now = block_gemm;   /* the own block */
    unsigned step = 1, node_done = 0;
    while (step < nodes || node_done < node_blocks) {
        const double node_ready = node_done < node_blocks ? landed[node_done] : INFINITY;
        /* the steps' blocks' GEMMs were issued before the node's: first when ready */
        if (step < nodes && step * exchange <= fmax(now, node_ready))
            now = fmax(now, step * exchange) + block_gemm, step++;
        else
            now = fmax(now, node_ready) + block_gemm, node_done++;
    }
    return now;
}

/* The hierarchical RS with nodes of g, the node's pushes on lanes l (see
 * the top of this file).  Stream 2 runs the other places' GEMMs, step by
 * step; stream 1 each step's own place's GEMM and node sum, then the last
 * sum.  The GPU takes the earliest issued of the two streams' next kernels
 * that can start when it frees (stream 1's sum waits for its node peers'
 * pushes, the last for NCCL), else the first that can. */
static double hier_reduce_scatter_us(const fg_target *t, lanes l, unsigned w, unsigned g,
                                     double block_gemm, double block_bytes)
{
    const fg_interconnect *ic = t->interconnect;
    const unsigned nodes = w / g, others = nodes * (g - 1);
    const double rate = t->ceilings->copy_gbps * 1e3;
    const double node_sum = (g + 1) * block_bytes / rate, last_sum = (nodes + 1) * block_bytes / rate;
    const double exchange = nccl_end_us(ic, false, 2, block_bytes, 0);   /* a block each way */
    double landed[FGRT_MAX_WORLD];   /* per step: its node peers' partials of the own place's block */
    double gpu = 0, engine[FGRT_MAX_LANES] = {0}, pushed = 0, nccl = 0, end1 = 0;
    unsigned o = 0, h = 0;   /* stream 2's next other GEMM; stream 1's next: 2 step (+ 1 its
                                sum), 2 nodes the last sum */
    while (h <= 2 * nodes) {
        const unsigned step = h / 2;   /* issue order: a step's g - 1 others, GEMM, sum */
        double r1 = end1;
        unsigned i1 = nodes * (g + 1);
        if (h == 2 * nodes)
            r1 = fmax(r1, nccl);
        else if (h % 2 == 0)
            i1 = step * (g + 1) + g - 1;
        else {   /* (a peer pushes its partial in the same step as this rank: the last push) */
            r1 = fmax(r1, o >= (step + 1) * (g - 1) ? landed[step] : INFINITY);
            i1 = step * (g + 1) + g;
        }
        const bool more = o < others;   /* stream 2 can always start: it follows itself */
        const unsigned i2 = (o / (g - 1)) * (g + 1) + o % (g - 1);
        const bool first = more ? r1 <= gpu && i1 < i2 : true;
        if (first) {
            gpu = end1 = fmax(gpu, r1) + (h == 2 * nodes ? last_sum : h % 2 ? node_sum : block_gemm);
            if (h % 2 && step + 1 < nodes)   /* the node's sum to its owner */
                nccl = fmax(nccl, gpu) + exchange;
            h++;
        } else {
            gpu += block_gemm;   /* (a peer pushes its partial as this rank does: the last) */
            pushed = fmax(pushed, pushed_us(l, o % (g - 1) % l.count, gpu, engine, block_bytes));
            if (++o % (g - 1) == 0)
                landed[o / (g - 1) - 1] = pushed, pushed = 0;
        }
    }
    return gpu;
}

/* The hierarchical plan for every node size into out->hier_* (none without
 * the collective's NCCL fit). */
static void predict_hier(const fg_gemm *g, const fg_gemm_shape *s, const fg_target *t,
                         double block_gemm, fg_overlap_prediction *out)
{
    const fg_interconnect *ic = t->interconnect;
    const bool ag = s->collective == FG_COLL_ALL_GATHER;
    const unsigned w = g->world_size;
    const double bytes = (double)s->m / w * (ag ? s->k : s->n) * 2.0;
    out->hier_count = 0;
    if (isnan(nccl_end_us(ic, ag, 2, bytes, 0)) || w > FGRT_MAX_WORLD)   /* no NCCL fit */
        return;
    const double under = block_gemm * (1 + ic->gemm_slowdown);
    out->hier_count = fg_overlap_node_sizes(w, out->hier_nodes);
    for (unsigned h = 0; h < out->hier_count; h++) {
        const unsigned n = out->hier_nodes[h];
        const lanes one = one_lane(ic), peers = lane_a_peer(ic, n, g->topology);
        out->hier_us[h] = (ag ? hier_all_gather_us(ic, one, w, n, under, bytes)
                              : hier_reduce_scatter_us(t, one, w, n, under, bytes)) +
                          ic->call_overhead_us;
        out->hier_lanes_us[h] =
            n < 3 || n - 1 > FGRT_MAX_LANES || g->topology == FG_TOPO_RING
                ? NAN
                : (ag ? hier_all_gather_us(ic, peers, w, n, under, bytes)
                      : hier_reduce_scatter_us(t, peers, w, n, under, bytes)) +
                      ic->call_overhead_us;
    }
}

unsigned fg_overlap_chosen_chunks(const fg_overlap_prediction *p)
{
    return p->chosen == FG_SCHED_CHUNK_OVERLAP ? p->chunks : 1;
}

const char *fg_overlap_predict(const fg_gemm *g, const fg_gemm_shape *s, const fg_target *t,
                               fg_overlap_prediction *out)
{
    const fg_interconnect *ic = t->interconnect;
    if (!ic)
        return "the target has no interconnect profile (peer-copy curve): `fusegen profile` "
               "measures it";
    if (!(t->ceilings->matmul_bf16_tflops > 0))
        return "the target has no measured matmul rate";
    const unsigned w = g->world_size;
    if (w < 2)
        return "a world size of 1 has nothing to overlap";
    const double e = 2.0, rows = (double)s->m / w;
    bool measured = true;
    const double gemm_all = gemm_us(t, s->m, s->n, s->k, &measured);
    const double gemm_part = gemm_us(t, rows, s->n, s->k, &measured);
    const double under_copies = gemm_part * (1 + ic->gemm_slowdown);
    const double piece = rows * (s->collective == FG_COLL_ALL_GATHER ? s->k : s->n) * e;
    const double copy = copy_us(ic, piece);
    const double reduce = s->collective == FG_COLL_REDUCE_SCATTER
                              ? (w + 1) * piece / (t->ceilings->copy_gbps * 1e3)
                              : 0;
    *out = (fg_overlap_prediction){.gemm_us = gemm_all, .comm_us = (w - 1) * copy,
                                   .gemms_measured = measured};
    const double fixed = ic->call_overhead_us;
    out->us[FG_SCHED_SERIAL_CE] = gemm_all + out->comm_us + reduce + fixed;
    out->us[FG_SCHED_SHARD_OVERLAP] =
        gemm_part + (w - 1) * fmax(under_copies, copy) + reduce + fixed;
    const bool ag = s->collective == FG_COLL_ALL_GATHER;
    out->us[FG_SCHED_SERIAL_NCCL] = nccl_end_us(ic, ag, w, piece, gemm_all);   /* NaN: no fit */
    out->us[FG_SCHED_CHUNK_OVERLAP] = NAN;   /* no piece count divides the block */
    for (int i = 0; i < FG_OVERLAP_NCHUNKS; i++) {
        const double us =
            chunk_overlap_us(s, t, w, fg_overlap_chunks[i], one_lane(ic), &out->gemms_measured) +
            fixed;
        out->chunk_us[i] = us;
        if (!isnan(us) && !(us >= out->us[FG_SCHED_CHUNK_OVERLAP])) {
            out->us[FG_SCHED_CHUNK_OVERLAP] = us;
            out->chunks = fg_overlap_chunks[i];
        }
    }
    out->us[FG_SCHED_CHUNK_FUSED] = NAN;
    for (int i = 0; i < FG_OVERLAP_NCHUNKS; i++) {
        const double us =
            chunk_fused_us(s, t, w, fg_overlap_chunks[i], reduce, one_lane(ic),
                           &out->gemms_measured) +
            fixed;
        /* (the fewest pieces on a tie: the sums differ only by rounding) */
        if (!isnan(us) && !(us >= out->us[FG_SCHED_CHUNK_FUSED] * (1 - 1e-12))) {
            out->us[FG_SCHED_CHUNK_FUSED] = us;
            out->fused_chunks = fg_overlap_chunks[i];
        }
    }
    predict_lanes(g, s, t, gemm_part, reduce, out);
    predict_hier(g, s, t, gemm_part, out);
    out->chosen = FG_SCHED_SERIAL_CE;
    for (int k = 1; k < FG_SCHED_COUNT; k++)   /* (chunk_fused: predicted, not chosen) */
        if (k != FG_SCHED_CHUNK_FUSED && out->us[k] < out->us[out->chosen])   /* NaN never wins */
            out->chosen = (fg_schedule)k;
    return NULL;
}
