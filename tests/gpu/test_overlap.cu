// The overlap executor's issue order (runtime/include/fgrt_overlap.h) replayed
// on every GPU of this machine by one process: copies over the copy engine
// (cudaMemcpyPeerAsync), GEMMs through cuBLASLt on two alternating streams, the
// flags and barriers as events, the owner's reduction as a small kernel.
//
// Checks, on fresh random inputs with every output poisoned first:
//   - AG+GEMM: C = A B with A's rows gathered from every rank, against a
//     double reference on the host (small shapes);
//   - GEMM+RS: each rank's block of sum_r A_r B_r, likewise;
//   for serial-nccl (NCCL's collective, grouped over the ranks; skipped, and
//   said so, when built without NCCL), serial-ce, shard-overlap and
//   chunk-overlap (2, 4 and 8 chunks) at world
//   sizes 2, 4 and 8 as the GPUs present allow.  Relative L2 <= 1e-2 (bf16), NaN never passes.
// --bench [--json FILE] [--only NAME,...] [--bench-shapes LIST]: for the
// Llama-2-70B TP=2 shapes of specs/gemm at 2 GPUs (and the peer's; or the
// shapes of LIST, "NAME:all_gather|reduce_scatter:MxNxK,...", which
// scripts/gemm-shapes.sh makes from a GEMM spec such as bench/sweeps/*), the unsplit GEMM alone (T_gemm), the
// copies alone (T_comm, copy engine) and each schedule (T), serial NCCL
// included, with T / max(T_gemm, T_comm):
// medians over repeats of back-to-back calls, the parts interleaved in each
// repeat, host-timed between full synchronizations (the host enqueues ahead
// of the GPUs; not yet graph-captured); then each schedule once more, its
// outputs poisoned, checked at the bench shape on sampled entries.
// --nccl-only: the serial_nccl checks alone (check-gpu runs them once more
// with NCCL's shared-memory and peer-to-peer transports off, so that the
// ranks talk through its socket transport: the path between nodes, checked
// for function on one host; its speed there means nothing).
// --profile [--json FILE] [--gemm-shapes MxNxK,...]: what the overlap cost
// model needs, for `fusegen profile`: the peer-copy curve (64 KB to 256 MB,
// one way and both ways at once, queued ahead; up to 16 MB also as one
// cudaMemcpyBatchAsync batch) and its fit, NCCL's
// all-gather and reduce-scatter alone and their fits (when built with NCCL),
// the time of each GEMM shape asked for, a GEMM's slowdown under peer copies,
// and the executor's fixed cost per call.
//
// One process drives all GPUs here; engines run one process per GPU with
// peer buffers mapped through CUDA IPC, which this test does not cover yet.
#include <algorithm>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#ifdef FG_HAVE_NCCL
#include <nccl.h>
#endif

#include "fgrt_overlap.h"
#include "harness.h"
#include "overlap_gpu.cuh"

namespace {

using namespace overlap_gpu;

constexpr int kMaxWorld = 8;
constexpr int kMaxOps = 320;   // RS chunk_overlap at 8 ranks and FGRT_MAX_CHUNKS: 257

struct Rank {
    int dev = 0;
    cudaStream_t st[3] = {};
    LtGemm lt;
    __nv_bfloat16 *a = nullptr;     // AG: this rank's rows [M/W, K], its block of `full`;
                                    // RS: A_r [M, K]
    __nv_bfloat16 *full = nullptr;  // AG: the gathered A [M, K]
    __nv_bfloat16 *b = nullptr;     // [K, N]
    __nv_bfloat16 *c = nullptr;     // AG: C [M, N]; RS: the partial [M, N]
    __nv_bfloat16 *recv = nullptr;  // RS: W slots of [M/W, N] from each rank
    __nv_bfloat16 *out = nullptr;   // RS: this rank's reduced block [M/W, N]
    // [destination][flag]: fgrt_overlap_flags() of the schedule with the most per
    // destination (a flag is the piece of what this rank pushed to one rank: AG
    // pushes piece j to every peer, and a peer must not wait on another's later
    // push); a barrier's in the rank's own row, which no push uses
    std::vector<std::vector<cudaEvent_t>> flag;
    cudaEvent_t done[kMaxOps] = {};
    cudaEvent_t join[2] = {};       // a barrier joins streams 0 and 2 into 1
    int sms = 0;                    // the reduction's grid: 16 blocks per SM
#ifdef FG_HAVE_NCCL
    ncclComm_t comm = nullptr;   // serial_nccl
#endif
};

struct Setup {
    fgrt_collective coll;
    int world;
    long long m, n, k;
    bool nccl;   // a serial_nccl run needs the communicators; the others do without
    Rank r[kMaxWorld];
    // every rank's order for one schedule, made once and replayed per call
    int ops_sched = -1;
    unsigned ops_chunks = 0;
    fgrt_op ops[kMaxWorld][kMaxOps];
    size_t nops[kMaxWorld] = {};
};


// The current device may access `peer`'s memory (enabled once per process).
bool enable_peer(int peer)
{
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    cudaGetLastError();   // "already enabled" is not sticky; clear it
    return e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled || fgh_ok(e);
}

bool setup(Setup *s)
{
    const long long rows = s->m / s->world;
    if (s->m % s->world || (rows * s->n) % 8) {
        fprintf(stderr, "overlap: M must split evenly over the ranks, a block into 16-byte vectors\n");
        return false;
    }
    const unsigned nflags =
        fgrt_overlap_flags(s->coll, FGRT_CHUNK_OVERLAP, (unsigned)s->world, FGRT_MAX_CHUNKS);
    for (int q = 0; q < s->world; q++) {
        Rank &r = s->r[q];
        r.dev = q;
        if (!fgh_ok(cudaSetDevice(q)))
            return false;
        for (int p = 0; p < s->world; p++)
            if (p != q && !enable_peer(p))
                return false;
        for (auto &st : r.st)
            if (!fgh_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking)))
                return false;
        r.flag.assign(s->world, std::vector<cudaEvent_t>(nflags, nullptr));
        for (auto &row : r.flag)
            for (auto &e : row)
                if (!fgh_ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)))
                    return false;
        for (auto &e : r.done)
            if (!fgh_ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)))
                return false;
        for (auto &e : r.join)
            if (!fgh_ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)))
                return false;
        if (!fgh_ok(cudaDeviceGetAttribute(&r.sms, cudaDevAttrMultiProcessorCount, q)) ||
            !lt_open(&r.lt))
            return false;
        const bool ag = s->coll == FGRT_AG_GEMM;
        bool ok = fgh_ok(cudaMalloc(&r.b, bytes(s->k * s->n))) &&
                  fgh_ok(cudaMalloc(&r.c, bytes(s->m * s->n)));
        if (ag) {   // the shard lives in its block of the gathered A: no local copy
            ok = ok && fgh_ok(cudaMalloc(&r.full, bytes(s->m * s->k)));
            r.a = r.full + (size_t)q * rows * s->k;
        } else {
            ok = ok && fgh_ok(cudaMalloc(&r.a, bytes(s->m * s->k)));
        }
        if (!ag)
            ok = ok && fgh_ok(cudaMalloc(&r.recv, bytes(s->world * rows * s->n))) &&
                 fgh_ok(cudaMalloc(&r.out, bytes(rows * s->n)));
        if (!ok)
            return false;
    }
#ifdef FG_HAVE_NCCL
    if (!s->nccl)
        return true;
    ncclComm_t comms[kMaxWorld];
    int devs[kMaxWorld];
    for (int q = 0; q < s->world; q++)
        devs[q] = q;
    if (ncclCommInitAll(comms, s->world, devs) != ncclSuccess) {
        fprintf(stderr, "overlap: ncclCommInitAll failed\n");
        return false;
    }
    for (int q = 0; q < s->world; q++)
        s->r[q].comm = comms[q];
#endif
    return true;
}

void teardown(Setup *s)
{
    for (int q = 0; q < s->world; q++) {
        Rank &r = s->r[q];
        cudaSetDevice(q);
        cudaDeviceSynchronize();
        for (auto &st : r.st)
            if (st)
                cudaStreamDestroy(st);
        for (auto &row : r.flag)
            for (auto &e : row)
                if (e)
                    cudaEventDestroy(e);
        for (auto &e : r.done)
            if (e)
                cudaEventDestroy(e);
        for (auto &e : r.join)
            if (e)
                cudaEventDestroy(e);
        lt_close(&r.lt);
#ifdef FG_HAVE_NCCL
        if (r.comm)
            ncclCommDestroy(r.comm);
#endif
        if (s->coll != FGRT_AG_GEMM)
            cudaFree(r.a);
        cudaFree(r.full), cudaFree(r.b), cudaFree(r.c), cudaFree(r.recv), cudaFree(r.out);
        r = Rank{};
    }
}

// c[rows, n] = a[rows, k] x B (+ acc[rows, n] unless NULL), row-major,
// through cuBLASLt on the rank's stream `sti` with that stream's workspace.
bool gemm_rows(Rank &r, int sti, const __nv_bfloat16 *a, const __nv_bfloat16 *acc,
               __nv_bfloat16 *c, long long rows, long long n, long long k)
{
    return lt_matmul(&r.lt, sti, r.b, a, acc, c, rows, n, k, r.st[sti]);
}

// One rank's op, enqueued.  Cross-rank waits are on events the peers have
// recorded already (the caller enqueues in an order that guarantees it).
bool enqueue_op(Setup *s, int q, const fgrt_op *ops, int k)
{
    Rank &r = s->r[q];
    const fgrt_op &op = ops[k];
    cudaSetDevice(r.dev);
    cudaStream_t st = r.st[op.stream];
    if (op.after >= 0 && !fgh_ok(cudaStreamWaitEvent(st, r.done[op.after], 0)))
        return false;
    // the op's rows: a whole row block, or its piece `chunk`
    const long long block = s->m / s->world;
    const long long rows = op.chunk < 0 ? block : block / s->ops_chunks;
    const long long row0 = (long long)op.block * block + (op.chunk < 0 ? 0 : op.chunk * rows);
    const long long in_slot = row0 - (long long)op.block * block;   // rows into a slot
    bool ok = true;
    switch (op.kind) {
    case FGRT_OP_COPY:
        if (s->coll == FGRT_AG_GEMM)   // push the own shard (or its piece) into the peer's
            ok = fgh_ok(cudaMemcpyPeerAsync(s->r[op.peer].full + row0 * s->k, op.peer,
                                            r.full + row0 * s->k, r.dev, bytes(rows * s->k), st));
        else   // push this rank's partial (or running sum) of a block into the peer's slot
            ok = fgh_ok(cudaMemcpyPeerAsync(
                s->r[op.peer].recv + (op.slot * block + in_slot) * s->n, op.peer,
                r.c + row0 * s->n, r.dev, bytes(rows * s->n), st));
        break;
    case FGRT_OP_GEMM: {
        // AG reads the gathered A, whose own block is the rank's shard
        const __nv_bfloat16 *a = s->coll == FGRT_AG_GEMM ? r.full : r.a;
        const __nv_bfloat16 *acc =
            op.slot < 0 ? nullptr : r.recv + (op.slot * block + in_slot) * s->n;
        // chunk_overlap's own block: the sum is complete, into out
        __nv_bfloat16 *c = acc && op.block == q ? r.out + in_slot * s->n : r.c + row0 * s->n;
        if (op.block < 0)
            ok = gemm_rows(r, op.stream, a, nullptr, r.c, s->m, s->n, s->k);
        else
            ok = gemm_rows(r, op.stream, a + row0 * s->k, acc, c, rows, s->n, s->k);
        break;
    }
    case FGRT_OP_SIGNAL:   // piece op.flag of what this rank pushed to op.peer
        ok = fgh_ok(cudaEventRecord(r.flag[op.peer][op.flag], st));
        break;
    case FGRT_OP_WAIT:   // op.peer's flag for this rank
        ok = fgh_ok(cudaStreamWaitEvent(st, s->r[op.peer].flag[q][op.flag], 0));
        break;
    case FGRT_OP_REDUCE:
        // setup() makes rows * n a multiple of 8
        reduce_block<<<r.sms * 16, 256, 0, st>>>(
            reinterpret_cast<const uint4 *>(r.c + (size_t)q * rows * s->n),
            reinterpret_cast<const uint4 *>(r.recv), reinterpret_cast<uint4 *>(r.out), s->world, q,
            rows * s->n / 8);
        ok = fgh_ok(cudaPeekAtLastError());
        break;
    case FGRT_OP_BARRIER:
    case FGRT_OP_NCCL:
        break;   // handled by run_call
    case FGRT_OP_NODE_BARRIER:
    case FGRT_OP_NCCL_ACROSS:
    case FGRT_OP_REDUCE_ACROSS:
        return false;   // the hierarchical plan's: not replayed here (yet)
    }
    return ok && fgh_ok(cudaEventRecord(r.done[k], st));
}

// A barrier's first half: every stream of rank q joined into stream 1, the
// flag recorded there (in its own row: it is for every rank).
bool arm_barrier(Rank &r, int q, unsigned flag)
{
    cudaSetDevice(r.dev);
    return fgh_ok(cudaEventRecord(r.join[0], r.st[0])) &&
           fgh_ok(cudaEventRecord(r.join[1], r.st[2])) &&
           fgh_ok(cudaStreamWaitEvent(r.st[1], r.join[0], 0)) &&
           fgh_ok(cudaStreamWaitEvent(r.st[1], r.join[1], 0)) &&
           fgh_ok(cudaEventRecord(r.flag[q][flag], r.st[1]));
}

// Its second half: every stream waits for every rank's flag.
bool pass_barrier(Setup *s, Rank &r, unsigned flag)
{
    cudaSetDevice(r.dev);
    for (int p = 0; p < s->world; p++)
        for (auto st : r.st)
            if (!fgh_ok(cudaStreamWaitEvent(st, s->r[p].flag[p][flag], 0)))
                return false;
    return true;
}

// The NCCL op of every rank at once (one thread drives all GPUs, so the
// ranks' calls form one NCCL group): AG gathers in place into `full` (the
// rank's shard is its block); RS reduces the partials into `out`.
bool enqueue_nccl(Setup *s, fgrt_op (*ops)[kMaxOps], const size_t *next)
{
#ifdef FG_HAVE_NCCL
    const long long rows = s->m / s->world;
    bool ok = ncclGroupStart() == ncclSuccess;
    for (int q = 0; q < s->world && ok; q++) {
        Rank &r = s->r[q];
        const fgrt_op &op = ops[q][next[q]];
        cudaStream_t st = r.st[op.stream];
        ok = fgh_ok(cudaSetDevice(r.dev)) &&
             (op.after < 0 || fgh_ok(cudaStreamWaitEvent(st, r.done[op.after], 0))) &&
             (s->coll == FGRT_AG_GEMM
                  ? ncclAllGather(r.a, r.full, (size_t)(rows * s->k), ncclBfloat16, r.comm, st)
                  : ncclReduceScatter(r.c, r.out, (size_t)(rows * s->n), ncclBfloat16, ncclSum,
                                      r.comm, st)) == ncclSuccess;
    }
    ok = ncclGroupEnd() == ncclSuccess && ok;
    for (int q = 0; q < s->world && ok; q++) {
        cudaSetDevice(s->r[q].dev);
        ok = fgh_ok(cudaEventRecord(s->r[q].done[next[q]], s->r[q].st[ops[q][next[q]].stream]));
    }
    return ok;
#else
    (void)s, (void)ops, (void)next;
    return false;   // callers skip serial_nccl without NCCL
#endif
}

// One call of the schedule on every rank: each rank's ops enqueued in its
// order, the ranks interleaved so that every wait finds its event recorded.
bool run_call(Setup *s, Sched sched)
{
    const unsigned chunks = sched.s == FGRT_CHUNK_OVERLAP ? sched.chunks : 1;
    if ((s->m / s->world) % chunks) {   // fgrt_overlap_create's rule: whole pieces
        fprintf(stderr, "overlap: %u pieces do not divide a block of %lld rows\n", chunks,
                s->m / s->world);
        return false;
    }
    if (s->ops_sched != (int)sched.s || s->ops_chunks != chunks) {
        // the orders, made when the schedule changes (the bench's interleaved
        // parts remake them in their first call; a few us against a call)
        for (int q = 0; q < s->world; q++) {
            s->nops[q] = fgrt_overlap_ops(s->coll, sched.s, (unsigned)s->world, chunks, 1,
                                          (unsigned)q, s->ops[q], kMaxOps);   // one copy lane
            if (s->nops[q] == 0 || s->nops[q] > kMaxOps)
                return false;
        }
        s->ops_sched = (int)sched.s, s->ops_chunks = chunks;
    }
    fgrt_op(*ops)[kMaxOps] = s->ops;
    const size_t *n = s->nops;
    size_t next[kMaxWorld] = {};
    bool armed[kMaxWorld] = {}, at_nccl[kMaxWorld] = {};
    const size_t nflags = s->r[0].flag[0].size(), w = (size_t)s->world;
    std::vector<char> signalled_at(w * w * nflags, 0);   // [sender][destination][flag]
    auto signalled = [&](int from, int to) {
        return &signalled_at[((size_t)from * w + (size_t)to) * nflags];
    };
    for (bool moved = true; moved;) {
        moved = false;
        for (int q = 0; q < s->world; q++) {
            if (next[q] == n[q])
                continue;
            const fgrt_op &op = ops[q][next[q]];
            if (op.kind == FGRT_OP_BARRIER) {
                if (!armed[q]) {
                    if (!arm_barrier(s->r[q], q, op.flag))
                        return false;
                    armed[q] = true;
                    signalled(q, q)[op.flag] = true;   // its own row: for every rank
                    moved = true;
                }
                bool all = true;
                for (int p = 0; p < s->world; p++)
                    all &= signalled(p, p)[op.flag];
                if (!all)
                    continue;
                if (!pass_barrier(s, s->r[q], op.flag))
                    return false;
                armed[q] = false;
            } else if (op.kind == FGRT_OP_WAIT) {
                if (!signalled(op.peer, q)[op.flag])
                    continue;
                if (!enqueue_op(s, q, ops[q], (int)next[q]))
                    return false;
            } else if (op.kind == FGRT_OP_NCCL) {
                // every rank's order has it at the same place: issued when all are there
                if (!at_nccl[q])
                    at_nccl[q] = moved = true;
                bool all = true;
                for (int p = 0; p < s->world; p++)
                    all &= at_nccl[p];
                if (!all)
                    continue;
                if (!enqueue_nccl(s, ops, next))
                    return false;
                for (int p = 0; p < s->world; p++)
                    at_nccl[p] = false, next[p]++;
                moved = true;
                continue;
            } else {
                if (!enqueue_op(s, q, ops[q], (int)next[q]))
                    return false;
                if (op.kind == FGRT_OP_SIGNAL)
                    signalled(q, op.peer)[op.flag] = true;
            }
            next[q]++;
            moved = true;
        }
    }
    for (int q = 0; q < s->world; q++)
        if (next[q] != n[q])
            return false;   // an order that cannot be enqueued (the simulator says it can)
    return true;
}

// Waits for every stream of every rank, at most `limit_s` seconds.
bool finish(Setup *s, double limit_s)
{
    const double t0 = now_us();
    for (int q = 0; q < s->world; q++) {
        cudaSetDevice(s->r[q].dev);
        for (auto st : s->r[q].st)
            for (;;) {
                const cudaError_t e = cudaStreamQuery(st);
                if (e == cudaSuccess)
                    break;
                if (e != cudaErrorNotReady)
                    return fgh_ok(e);
                if ((now_us() - t0) * 1e-6 > limit_s) {
                    fprintf(stderr, "overlap: rank %d did not finish within %.0f s\n", q, limit_s);
                    return false;
                }
            }
    }
    return true;
}

// AG: the blocks of the gathered A other than the rank's own, poisoned.
bool poison_others(Setup *s, int q)
{
    const long long rows = s->m / s->world;
    for (int p = 0; p < s->world; p++)
        if (p != q && fgh_poison_device(s->r[q].full + (size_t)p * rows * s->k,
                                        bytes(rows * s->k), 0) != 0)
            return false;
    return true;
}

void check(fgrt_collective coll, Sched sched, int world, long long m, long long n, long long k)
{
    char name[160];
    snprintf(name, sizeof name, "%s %s, %d GPUs, M=%lld N=%lld K=%lld",
             coll == FGRT_AG_GEMM ? "AG+GEMM" : "GEMM+RS", sched_name(sched).c_str(), world, m,
             n, k);
    Setup s{coll, world, m, n, k, sched.s == FGRT_SERIAL_NCCL, {}};
    if (!CHECK(name, setup(&s))) {
        teardown(&s);
        return;
    }
    const long long rows = m / world;
    const bool ag = coll == FGRT_AG_GEMM;
    const uint64_t seed = fgh_next_seed();
    // inputs: AG: A's rows sharded, one B; RS: A_r and B_r per rank
    std::vector<std::vector<uint16_t>> ha(world), hb(world);
    bool ok = true;
    for (int q = 0; q < world && ok; q++) {
        Rank &r = s.r[q];
        cudaSetDevice(q);
        const long long na = (ag ? rows : m) * k;
        ha[q].resize(na), hb[q].resize(k * n);
        const uint64_t sa = seed + 2 * q, sb = ag ? seed + 1000 : seed + 2 * q + 1;
        fgh_fill_host(ha[q].data(), FGH_BF16, na, sa, 1.f);
        fgh_fill_host(hb[q].data(), FGH_BF16, k * n, sb, 1.f);
        ok = fgh_upload(r.a, ha[q].data(), bytes(na)) == 0 &&
             fgh_upload(r.b, hb[q].data(), bytes(k * n)) == 0 &&
             fgh_poison_device(r.c, bytes(m * n), 0) == 0 &&
             (ag ? poison_others(&s, q)
                 : fgh_poison_device(r.out, bytes(rows * n), 0) == 0 &&
                       fgh_poison_device(r.recv, bytes(world * rows * n), 0) == 0) &&
             fgh_ok(cudaDeviceSynchronize());
    }
    ok = ok && CHECK(name, run_call(&s, sched)) && CHECK(name, finish(&s, 30.0));
    const long long out_rows = ag ? m : rows;
    std::vector<double> ref;
    for (int q = 0; q < world && ok; q++) {
        // the reference of rank q's output in double (AG: every rank's is
        // the same A B, made once)
        const long long row0 = ag ? 0 : q * rows;
        if (!ag || q == 0)
            ref.assign(out_rows * n, 0.0);
        for (long long i = 0; (!ag || q == 0) && i < out_rows; i++)
            for (int p = 0; p < (ag ? 1 : world); p++) {
                const long long gi = row0 + i;
                const uint16_t *arow = ag ? ha[gi / rows].data() + (gi % rows) * k : ha[p].data() + gi * k;
                const uint16_t *bm = ag ? hb[q].data() : hb[p].data();
                for (long long kk = 0; kk < k; kk++) {
                    const double av = host_bf16(arow, kk);
                    for (long long j = 0; j < n; j++)
                        ref[i * n + j] += av * host_bf16(bm, kk * n + j);
                }
            }
        std::vector<uint16_t> got(out_rows * n);
        cudaSetDevice(q);
        ok = fgh_ok(cudaMemcpy(got.data(), ag ? s.r[q].c : s.r[q].out, bytes(out_rows * n),
                               cudaMemcpyDeviceToHost));
        const fgh_err e = fgh_compare(got.data(), FGH_BF16, ref.data(), ref.size());
        char what[200];
        snprintf(what, sizeof what, "%s: rank %d", name, q);
        CHECKF(what, ok && e.nonfinite == 0 && e.rel_l2 <= 1e-2, "rel L2 %.3e, %zu non-finite", e.rel_l2,
               e.nonfinite);
        printf("    %s: rel L2 %.3e\n", what, e.rel_l2);
    }
    teardown(&s);
}

// One call of `sched` at a bench shape, its outputs poisoned first, checked
// on kSamples entries spread over the ranks against a double reference made
// from the inputs read back (a full reference of these shapes is too slow on
// the host).  The relative L2 error over the samples; +inf if any sampled
// entry was left unwritten or the call failed.
double check_sampled(Setup *s, Sched sched, uint64_t seed)
{
    constexpr int kSamples = 96;
    const long long rows = s->m / s->world, n = s->n, k = s->k;
    const bool ag = s->coll == FGRT_AG_GEMM;
    bool ok = true;
    for (int q = 0; q < s->world && ok; q++) {
        Rank &r = s->r[q];
        cudaSetDevice(q);
        ok = fgh_poison_device(r.c, bytes(s->m * n), 0) == 0 &&
             (ag ? poison_others(s, q)
                 : fgh_poison_device(r.out, bytes(rows * n), 0) == 0 &&
                       fgh_poison_device(r.recv, bytes(s->world * rows * n), 0) == 0) &&
             fgh_ok(cudaDeviceSynchronize());
    }
    if (!ok || !run_call(s, sched) || !finish(s, 30.0))
        return INFINITY;
    std::vector<uint16_t> got(kSamples), arow(k), bcol(k);
    std::vector<double> ref(kSamples, 0.0);
    for (int t = 0; t < kSamples && ok; t++) {
        const uint64_t h = fgh_splitmix64(seed + t);
        const int q = (int)(h % s->world);
        const long long i = (long long)((h >> 8) % (uint64_t)(ag ? s->m : rows));
        const long long j = (long long)((h >> 32) % (uint64_t)n);
        const __nv_bfloat16 *out = ag ? s->r[q].c : s->r[q].out;
        ok = fgh_ok(cudaMemcpy(&got[t], out + i * n + j, 2, cudaMemcpyDeviceToHost));
        // AG: row i of the gathered A (its owner's shard) times rank q's B;
        // RS: the sum over ranks p of A_p's row q*rows+i times B_p
        for (int p = 0; p < (ag ? 1 : s->world) && ok; p++) {
            const Rank &src = s->r[ag ? q : p];
            const __nv_bfloat16 *a = ag ? s->r[i / rows].a + (i % rows) * k
                                        : src.a + (q * rows + i) * k;
            ok = fgh_ok(cudaMemcpy(arow.data(), a, bytes(k), cudaMemcpyDeviceToHost)) &&
                 fgh_ok(cudaMemcpy2D(bcol.data(), 2, src.b + j, bytes(n), 2, k,
                                     cudaMemcpyDeviceToHost));
            for (long long kk = 0; kk < k; kk++)
                ref[t] += (double)host_bf16(arow.data(), kk) * host_bf16(bcol.data(), kk);
        }
    }
    if (!ok)
        return INFINITY;
    const fgh_err e = fgh_compare(got.data(), FGH_BF16, ref.data(), kSamples);
    return e.nonfinite ? INFINITY : e.rel_l2;
}

bool sync_all(Setup *s)
{
    for (int q = 0; q < s->world; q++)
        if (!fgh_ok(cudaSetDevice(q)) || !fgh_ok(cudaDeviceSynchronize()))
            return false;
    return true;
}

// What one timed repetition enqueues: a schedule, the GEMM alone, or the copies alone.
enum class Part { schedule, gemm, comm };

bool enqueue_part(Setup *s, Part part, Sched sched)
{
    if (part == Part::schedule)
        return run_call(s, sched);
    const long long rows = s->m / s->world;
    for (int q = 0; q < s->world; q++) {
        Rank &r = s->r[q];
        cudaSetDevice(q);
        if (part == Part::gemm) {
            if (!gemm_rows(r, 1, s->coll == FGRT_AG_GEMM ? r.full : r.a, nullptr, r.c, s->m, s->n,
                           s->k))
                return false;
            continue;
        }
        for (int i = 1; i < s->world; i++) {   // the copies of the schedules, back to back
            const int p = (q + i) % s->world;
            const bool ok = s->coll == FGRT_AG_GEMM
                ? fgh_ok(cudaMemcpyPeerAsync(s->r[p].full + (size_t)q * rows * s->k, p, r.a, q,
                                             bytes(rows * s->k), r.st[0]))
                : fgh_ok(cudaMemcpyPeerAsync(s->r[p].recv + (size_t)q * rows * s->n, p,
                                             r.c + (size_t)p * rows * s->n, q, bytes(rows * s->n),
                                             r.st[0]));
            if (!ok)
                return false;
        }
    }
    return true;
}

// us per call of `calls` back-to-back calls of one part, host-timed between
// full synchronizations.
double time_once(Setup *s, Part part, Sched sched, int calls)
{
    if (!sync_all(s))
        return NAN;
    const double t0 = now_us();
    for (int c = 0; c < calls; c++)
        if (!enqueue_part(s, part, sched))
            return NAN;
    if (!sync_all(s))
        return NAN;
    const double us = (now_us() - t0) / calls;
    fgh_clock_sample();   // outside the timed window: the results file's clock record
    return us;
}


#ifdef FG_HAVE_NCCL
constexpr bool kHaveNccl = true;
#else
constexpr bool kHaveNccl = false;
#endif

// The timed parts of one shape, in the order each repeat runs them.
// (GEMMs on one stream instead of two alternating ones, tried at 6d7229a on
// the shipped shapes and the sweeps: 3-4% slower with 4 or 8 pieces, 3%
// faster for RS shard-overlap and 2 pieces; the order keeps two)
enum { kGemm, kComm, kNccl, kCe, kShard, kChunk2, kChunk4, kChunk8, kParts };
const char *const kPartName[kParts] = {"gemm",          "comm",           "serial_nccl",
                                       "serial_ce",     "shard_overlap",  "chunk_overlap_c2",
                                       "chunk_overlap_c4", "chunk_overlap_c8"};
// the schedule a part runs (gemm and comm: parts of serial_ce's)
const Sched kSched[kParts] = {{FGRT_SERIAL_CE, 1},     {FGRT_SERIAL_CE, 1},
                              {FGRT_SERIAL_NCCL, 1},   {FGRT_SERIAL_CE, 1},
                              {FGRT_SHARD_OVERLAP, 1}, {FGRT_CHUNK_OVERLAP, 2},
                              {FGRT_CHUNK_OVERLAP, 4}, {FGRT_CHUNK_OVERLAP, 8}};

// NaN: not run (serial_nccl without NCCL) or failed.
double run_part(Setup *s, int i, int calls)
{
    const Part part = i == kGemm ? Part::gemm : i == kComm ? Part::comm : Part::schedule;
    if (i == kNccl && !kHaveNccl)
        return NAN;
    return time_once(s, part, kSched[i], calls);
}

bool selected(const char *only, const char *name)
{
    if (!only)
        return true;
    const size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)); p += n)
        if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

// The Llama-2-70B TP=2 shapes of specs/gemm/llama-2-70b-tp2.yaml, then the
// shapes PyTorch's async tensor parallelism was measured at on this machine
// (../shared/DESIGN.md; its FC1 used N = 14336) where ours differ, for both
// collectives; its reduce-scatter times (312 us for "QKV M4096", under our
// K = 8192 GEMM alone) fit K halved, as a row-parallel layer has it.
void bench(int world, const char *json_path, const char *only, const std::vector<Shape> &given)
{
    static const Shape shipped[] = {
        {"qkv-m4096", FGRT_AG_GEMM, 4096, 5120, 8192},     {"o-m4096", FGRT_GEMM_RS, 4096, 8192, 4096},
        {"fc1-m4096", FGRT_AG_GEMM, 4096, 28672, 8192},    {"fc2-m4096", FGRT_GEMM_RS, 4096, 8192, 14336},
        {"qkv-m16384", FGRT_AG_GEMM, 16384, 5120, 8192},   {"o-m16384", FGRT_GEMM_RS, 16384, 8192, 4096},
        {"fc1-m16384", FGRT_AG_GEMM, 16384, 28672, 8192},  {"fc2-m16384", FGRT_GEMM_RS, 16384, 8192, 14336},
        {"ag-m6144-k1536", FGRT_AG_GEMM, 6144, 8192, 1536}, {"ag-m4096-k1024", FGRT_AG_GEMM, 4096, 8192, 1024},
        {"peer-ag-fc1-m4096", FGRT_AG_GEMM, 4096, 14336, 8192},
        {"peer-ag-fc1-m16384", FGRT_AG_GEMM, 16384, 14336, 8192},
        {"peer-rs-qkv-m4096", FGRT_GEMM_RS, 4096, 5120, 4096},
        {"peer-rs-fc1-m4096", FGRT_GEMM_RS, 4096, 14336, 4096},
        {"peer-rs-qkv-m16384", FGRT_GEMM_RS, 16384, 5120, 4096},
        {"peer-rs-fc1-m16384", FGRT_GEMM_RS, 16384, 14336, 4096},
    };
    const std::vector<Shape> shapes =
        given.empty() ? std::vector<Shape>(std::begin(shipped), std::end(shipped)) : given;
    constexpr int kCalls = 5, kReps = 9;
    FILE *jf = json_path ? fopen(json_path, "w") : nullptr;
    fgh_json j;
    if (jf) {
        json_begin(&j, jf, "test_overlap --bench");
        fgh_json_int(&j, "world", world);
        fgh_json_str(&j, "method", "us per call, each shape after 100 ms idle and 200 ms of its "
                                   "unsplit GEMM: 5 calls back to back, host-timed between full "
                                   "synchronizations; 9 repeats, parts interleaved in each; "
                                   "median, min, max; then each schedule checked once at the "
                                   "shape on 96 sampled outputs (sampled_rel_l2)");
        fgh_json_arr_begin(&j, "cases");
    }
    for (const Shape &sh : shapes) {
        if (!selected(only, sh.name))
            continue;
        Setup s{sh.coll, world, sh.m, sh.n, sh.k, kHaveNccl, {}};
        char what[96];
        snprintf(what, sizeof what, "bench %s at %d GPUs", sh.name, world);
        if (!CHECK(what, setup(&s))) {
            teardown(&s);
            continue;
        }
        for (int q = 0; q < world; q++) {   // values do not matter for time; finite ones do
            cudaSetDevice(q);
            const long long na = (sh.coll == FGRT_AG_GEMM ? sh.m / world : sh.m) * sh.k;
            fgh_fill_device(s.r[q].a, FGH_BF16, na, 1 + q, 1.f, 0);
            fgh_fill_device(s.r[q].b, FGH_BF16, sh.k * sh.n, 7, 1.f, 0);
        }
        // each shape from the state its profile time was taken in (time_gemm's
        // settle): 100 ms idle, then 200 ms of the unsplit GEMM on every rank
        bool finite = sync_all(&s);
        const timespec rest = {0, 100 * 1000 * 1000};
        nanosleep(&rest, nullptr);
        for (const double t0 = now_us(); finite && now_us() - t0 < 200e3;)
            finite = enqueue_part(&s, Part::gemm, {FGRT_SERIAL_CE, 1}) && sync_all(&s);
        double t[kParts][kReps], med[kParts], lo[kParts], hi[kParts];
        for (int rep = -1; rep < kReps; rep++)   // rep -1 warms up
            for (int i = 0; i < kParts; i++) {
                const double us = run_part(&s, i, kCalls);
                finite &= !isnan(us) || (i == kNccl && !kHaveNccl);
                if (rep >= 0)
                    t[i][rep] = us;
            }
        for (int i = 0; i < kParts; i++) {
            med[i] = fgh_median(t[i], kReps);   // sorts
            lo[i] = t[i][0], hi[i] = t[i][kReps - 1];
        }
        CHECK(what, finite);
        // every schedule timed is also checked at this shape
        double err[kParts];
        for (int i = 0; i < kParts; i++) {
            err[i] = NAN;
            if (i < kNccl || (i == kNccl && !kHaveNccl))
                continue;
            err[i] = check_sampled(&s, kSched[i], fgh_next_seed());
            char name[160];
            snprintf(name, sizeof name, "%s: %s on sampled outputs", what, kPartName[i]);
            CHECKF(name, err[i] <= 1e-2, "rel L2 %.3e", err[i]);
        }
        const double ideal = std::max(med[kGemm], med[kComm]);
        printf("%-19s %s M=%5lld N=%5lld K=%5lld  gemm %7.1f  comm %6.1f ", sh.name,
               sh.coll == FGRT_AG_GEMM ? "AG+GEMM" : "GEMM+RS", sh.m, sh.n, sh.k, med[kGemm],
               med[kComm]);
        for (int i = kNccl; i < kParts; i++)
            printf(" %s %7.1f (%.2fx)", kPartName[i], med[i], med[i] / ideal);
        printf("  us\n");
        if (jf) {
            fgh_json_obj_begin(&j, nullptr);
            fgh_json_str(&j, "name", sh.name);
            fgh_json_str(&j, "collective", sh.coll == FGRT_AG_GEMM ? "all_gather" : "reduce_scatter");
            fgh_json_int(&j, "m", sh.m), fgh_json_int(&j, "n", sh.n), fgh_json_int(&j, "k", sh.k);
            for (int i = 0; i < kParts; i++) {
                fgh_json_obj_begin(&j, kPartName[i]);
                fgh_json_num(&j, "median_us", med[i]);
                fgh_json_num(&j, "min_us", lo[i]);
                fgh_json_num(&j, "max_us", hi[i]);
                if (!isnan(err[i]))
                    fgh_json_num(&j, "sampled_rel_l2", err[i]);
                fgh_json_obj_end(&j);
            }
            for (int i = kNccl; i < kParts; i++) {
                char key[64];
                snprintf(key, sizeof key, "%s_over_ideal", kPartName[i]);
                fgh_json_num(&j, key, med[i] / ideal);
            }
            fgh_json_obj_end(&j);
        }
        teardown(&s);
    }
    if (jf) {
        fgh_json_arr_end(&j);
        fgh_json_clocks(&j);
        fgh_json_obj_end(&j);
        fclose(jf);
    }
}

// ---- --profile: what the cost model needs (fusegen profile runs this) ----

// Median us per copy of `bytes` from GPU 1 into GPU 0 (and, both, from 0 into
// 1 at once), 8 copies queued back to back per timing.
double time_copies(void *buf[2][2], size_t bytes, bool both, cudaStream_t st[2])
{
    constexpr int kQueued = 8, kReps = 5;
    double t[kReps];
    for (int rep = -1; rep < kReps; rep++) {
        for (int d = 0; d < 2; d++) {
            cudaSetDevice(d);
            cudaDeviceSynchronize();
        }
        const double t0 = now_us();
        for (int c = 0; c < kQueued; c++)
            for (int d = 0; d < (both ? 2 : 1); d++)   // d pulls from 1 - d
                if (!fgh_ok(cudaMemcpyPeerAsync(buf[d][1], d, buf[1 - d][0], 1 - d, bytes, st[d])))
                    return NAN;
        for (int d = 0; d < 2; d++) {
            cudaSetDevice(d);
            if (!fgh_ok(cudaStreamSynchronize(st[d])))
                return NAN;
        }
        if (rep >= 0)
            t[rep] = (now_us() - t0) / kQueued;
    }
    return fgh_median(t, kReps);
}

// Median us per copy of 8 copies of `bytes` from GPU 1 into GPU 0 issued as
// one cudaMemcpyBatchAsync (each into its own slice, since copies of a batch
// are unordered; time_copies rewrites one region), with the hint to keep
// them off the SMs; NaN where the API refuses or the toolkit lacks it (its
// signature is CUDA 13's; 12.8 had a failIdx argument more).  8 x bytes
// must fit the buffers.
double time_copies_batched(void *buf[2][2], size_t bytes, cudaStream_t st[2])
{
    constexpr int kQueued = 8, kReps = 5;
    void *dsts[kQueued];
    const void *srcs[kQueued];
    size_t sizes[kQueued];
    for (int c = 0; c < kQueued; c++) {
        dsts[c] = (char *)buf[0][1] + c * bytes;
        srcs[c] = (const char *)buf[1][0] + c * bytes;
        sizes[c] = bytes;
    }
#if CUDART_VERSION < 13000
    (void)buf, (void)bytes, (void)st;
    return NAN;
#else
    cudaMemcpyAttributes attr = {};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
    size_t attr_idx = 0;
    double t[kReps];
    for (int rep = -1; rep < kReps; rep++) {
        for (int d = 0; d < 2; d++) {
            cudaSetDevice(d);
            cudaDeviceSynchronize();
        }
        cudaSetDevice(0);
        const double t0 = now_us();
        if (cudaMemcpyBatchAsync(dsts, srcs, sizes, kQueued, &attr, &attr_idx, 1, st[0]) !=
            cudaSuccess) {
            cudaGetLastError();
            return NAN;
        }
        if (!fgh_ok(cudaStreamSynchronize(st[0])))
            return NAN;
        if (rep >= 0)
            t[rep] = (now_us() - t0) / kQueued;
    }
    return fgh_median(t, kReps);
#endif
}

// Copy lanes (the executor's 2D order): every one of `gpus` GPUs pushes to
// every other at once, a stream (lane) a peer; with 2 GPUs, two lanes each
// to its one peer.  Median us of one round (each lane's copy of `bytes`), 4
// rounds queued per timing; NaN on any error.  l.src[d]: `bytes` on GPU d;
// l.dst[d]: a slot of `bytes` a lane on GPU d, lane l of sender q writing
// slot q * lanes + l of its peer.
struct Lanes {
    int gpus = 0, lanes = 0;
    void *src[kMaxWorld] = {}, *dst[kMaxWorld] = {};
    cudaStream_t st[kMaxWorld][kMaxWorld] = {};
    size_t max_bytes = 0;

    bool open(int n, size_t max)
    {
        gpus = n, lanes = std::max(n - 1, 2), max_bytes = max;
        for (int d = 0; d < n; d++) {
            if (!fgh_ok(cudaSetDevice(d)) || !fgh_ok(cudaMalloc(&src[d], max)) ||
                !fgh_ok(cudaMalloc(&dst[d], max * lanes * n)))
                return false;
            for (int l = 0; l < lanes; l++)
                if (!fgh_ok(cudaStreamCreateWithFlags(&st[d][l], cudaStreamNonBlocking)))
                    return false;
            for (int q = 0; q < n; q++)
                if (q != d && !enable_peer(q))
                    return false;
        }
        return true;
    }
    void close()
    {
        for (int d = 0; d < gpus; d++) {
            cudaSetDevice(d);
            for (int l = 0; l < lanes; l++)
                if (st[d][l])
                    cudaStreamDestroy(st[d][l]);
            cudaFree(src[d]), cudaFree(dst[d]);
        }
    }
    double time_round(size_t bytes)
    {
        constexpr int kQueued = 4, kReps = 5;
        double t[kReps];
        for (int rep = -1; rep < kReps; rep++) {
            for (int d = 0; d < gpus; d++) {
                cudaSetDevice(d);
                cudaDeviceSynchronize();
            }
            const double t0 = now_us();
            for (int c = 0; c < kQueued; c++)
                for (int d = 0; d < gpus; d++)
                    for (int l = 0; l < lanes; l++) {
                        const int peer = (d + 1 + l % (gpus - 1)) % gpus;
                        char *to = (char *)dst[peer] + (size_t)(d * lanes + l) * max_bytes;
                        cudaSetDevice(d);
                        if (!fgh_ok(cudaMemcpyPeerAsync(to, peer, src[d], d, bytes, st[d][l])))
                            return NAN;
                    }
            for (int d = 0; d < gpus; d++) {
                cudaSetDevice(d);
                for (int l = 0; l < lanes; l++)
                    if (!fgh_ok(cudaStreamSynchronize(st[d][l])))
                        return NAN;
            }
            if (rep >= 0)
                t[rep] = (now_us() - t0) / kQueued;
        }
        return fgh_median(t, kReps);
    }
};

// Median us of one NCCL all-gather (or reduce-scatter) over both GPUs that
// moves `bytes` into each rank (its peer's shard, or its peer's partial of
// its block), 5 calls back to back per timing, median of 5; NaN without NCCL.
double time_nccl(void *buf[2][2], size_t bytes, bool gather, cudaStream_t st[2])
{
#ifdef FG_HAVE_NCCL
    static ncclComm_t comms[2];   // for the profile's one run: the process ends after it
    if (!comms[0]) {
        int devs[2] = {0, 1};
        if (ncclCommInitAll(comms, 2, devs) != ncclSuccess)
            return NAN;
    }
    const size_t count = bytes / 2;   // bf16 elements per rank's block
    constexpr int kCalls = 5, kReps = 5;
    double t[kReps];
    for (int rep = -1; rep < kReps; rep++) {
        for (int d = 0; d < 2; d++) {
            cudaSetDevice(d);
            cudaDeviceSynchronize();
        }
        const double t0 = now_us();
        for (int c = 0; c < kCalls; c++) {
            bool ok = ncclGroupStart() == ncclSuccess;
            for (int d = 0; d < 2 && ok; d++)
                ok = (gather ? ncclAllGather(buf[d][0], buf[d][1], count, ncclBfloat16, comms[d],
                                             st[d])
                             : ncclReduceScatter(buf[d][0], buf[d][1], count, ncclBfloat16,
                                                 ncclSum, comms[d], st[d])) == ncclSuccess;
            if (ncclGroupEnd() != ncclSuccess || !ok)
                return NAN;
        }
        for (int d = 0; d < 2; d++) {
            cudaSetDevice(d);
            if (!fgh_ok(cudaStreamSynchronize(st[d])))
                return NAN;
        }
        if (rep >= 0)
            t[rep] = (now_us() - t0) / kCalls;
    }
    return fgh_median(t, kReps);
#else
    (void)buf, (void)bytes, (void)gather, (void)st;
    return NAN;
#endif
}

// us = a + bytes / rate over the points at or above 1 MB (below, the copy
// engine's fixed costs are not one latency): a in us, rate in GB/s.
void fit_copy(const double *bytes, const double *us, int n, double *lat, double *gbps)
{
    fgh_fit_line(bytes, us, n, 1 << 20, lat, gbps);
}

// Median us of one cuBLASLt GEMM [rows, k] x [k, n] on GPU 0 (5 back to back
// per timing, `reps` timings after one to warm up), with peer copies into
// GPU 0 streaming meanwhile when `copies`.
double time_gemm(Rank &r, long long rows, long long n, long long k, __nv_bfloat16 *a,
                 __nv_bfloat16 *c, void *buf[2][2], size_t copy_bytes, bool copies, cudaStream_t cst,
                 int reps, bool settle)
{
    constexpr int kCalls = 5;
    const int kReps = reps;
    std::vector<double> t(kReps);
    cudaEvent_t e0, e1;
    cudaSetDevice(0);
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    bool ok = true;
    if (settle) {
        // The same starting state for every shape: 100 ms idle (the clocks
        // recover from what ran before), then 200 ms of this GEMM (it
        // reaches the clocks it runs at under sustained load, as inside the
        // schedules).  On the 2 x H200 a shape timed right after heavier
        // ones read up to 20% slow, one timed straight from idle up to 12%
        // fast, and after 30 ms of itself a 600 us one still 10% fast.
        cudaDeviceSynchronize();
        const timespec rest = {0, 100 * 1000 * 1000};
        nanosleep(&rest, nullptr);
        for (const double t0 = now_us(); ok && now_us() - t0 < 200e3;) {
            ok = gemm_rows(r, 1, a, nullptr, c, rows, n, k);
            ok = ok && fgh_ok(cudaStreamSynchronize(r.st[1]));
        }
    }
    for (int rep = -1; rep < kReps && ok; rep++) {
        cudaDeviceSynchronize();
        if (copies)   // enough queued to outlast the GEMMs
            for (int i = 0; i < 64; i++)
                ok &= fgh_ok(cudaMemcpyPeerAsync(buf[0][1], 0, buf[1][0], 1, copy_bytes, cst));
        cudaEventRecord(e0, r.st[1]);
        for (int i = 0; i < kCalls; i++)
            ok &= gemm_rows(r, 1, a, nullptr, c, rows, n, k);
        cudaEventRecord(e1, r.st[1]);
        fgh_clock_sample();
        ok &= fgh_ok(cudaEventSynchronize(e1));
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (rep >= 0)
            t[rep] = ms * 1e3 / kCalls;
        cudaDeviceSynchronize();
    }
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    return ok ? fgh_median(t.data(), kReps) : NAN;
}

// Shapes "MxNxK,MxNxK,..." (rows of A, columns of B, inner dimension).
int parse_shapes(const char *text, long long (*out)[3], int max)
{
    int n = 0;
    for (const char *p = text; p && *p && n < max;) {
        char *end;
        for (int d = 0; d < 3; d++) {
            out[n][d] = strtoll(p, &end, 10);
            if (end == p || out[n][d] <= 0 || (d < 2 && *end != 'x'))
                return -1;
            p = end + (d < 2);
        }
        if (*end && *end != ',')
            return -1;
        n++;
        p = *end ? end + 1 : end;
    }
    return n;
}

// The copy curve (one way and both ways at once, 64 KB to 256 MB) with its
// fit, the GEMMs asked for, and a GEMM's slowdown while copies stream into
// its GPU, as JSON for `fusegen profile`.
bool profile(const char *json_path, const char *shapes_text)
{
    static long long shapes[256][3];
    const int nshapes = shapes_text ? parse_shapes(shapes_text, shapes, 256) : 0;
    if (nshapes < 0) {
        fprintf(stderr, "overlap: --gemm-shapes '%s': expected MxNxK[,MxNxK...]\n", shapes_text);
        return false;
    }
    FILE *f = json_path ? fopen(json_path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "overlap: cannot write %s: %s\n", json_path, strerror(errno));
        return false;
    }
    constexpr size_t kMax = (size_t)256 << 20;
    void *buf[2][2] = {};
    cudaStream_t st[2] = {};
    bool ok = true;
    for (int d = 0; d < 2 && ok; d++) {
        ok = fgh_ok(cudaSetDevice(d)) && fgh_ok(cudaMalloc(&buf[d][0], kMax)) &&
             fgh_ok(cudaMalloc(&buf[d][1], kMax)) &&
             fgh_ok(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking)) && enable_peer(1 - d);
    }
    fgh_json j;
    json_begin(&j, f, "test_overlap --profile");
    fgh_json_str(&j, "method", "copies: cudaMemcpyPeerAsync from GPU 1 into GPU 0 (both: and 0 "
                               "into 1 at once), 8 queued per timing, median of 5, host-timed; "
                               "GEMMs: cuBLASLt bf16 on GPU 0, one shape at a time, each after "
                               "100 ms idle and 200 ms of itself, 5 per timing, median of 7 "
                               "after one to warm up, events");
    static const size_t sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20,
                                   128 << 20, 256 << 20};
    constexpr int kSizes = sizeof sizes / sizeof sizes[0];
    double xb[kSizes], one[kSizes], two[kSizes];
    fgh_json_arr_begin(&j, "copies");
    for (int i = 0; i < kSizes && ok; i++) {
        xb[i] = (double)sizes[i];
        one[i] = time_copies(buf, sizes[i], false, st);
        two[i] = time_copies(buf, sizes[i], true, st);
        ok = !isnan(one[i]) && !isnan(two[i]);
        fgh_json_obj_begin(&j, nullptr);
        fgh_json_int(&j, "bytes", (long long)sizes[i]);
        fgh_json_num(&j, "one_way_us", one[i]);
        fgh_json_num(&j, "both_ways_us", two[i]);
        fgh_json_obj_end(&j);
        printf("copy %9zu B: one way %8.1f us (%5.0f GB/s), both ways %8.1f us (%5.0f GB/s each)\n",
               sizes[i], one[i], sizes[i] / one[i] * 1e-3, two[i], sizes[i] / two[i] * 1e-3);
    }
    fgh_json_arr_end(&j);
    double lat1 = NAN, bw1 = NAN, lat2 = NAN, bw2 = NAN;
    if (ok) {
        fit_copy(xb, one, kSizes, &lat1, &bw1);
        fit_copy(xb, two, kSizes, &lat2, &bw2);
        printf("fit: one way %.1f us + bytes / %.0f GB/s; both ways %.1f us + bytes / %.0f GB/s each\n",
               lat1, bw1, lat2, bw2);
    }
    // the same one-way copies as one batch (cudaMemcpyBatchAsync), for the
    // chunked schedules to come: what batching saves per copy
    fgh_json_arr_begin(&j, "batched_copies");
    for (int i = 0; i < kSizes && ok; i++) {
        if (sizes[i] > (16 << 20))
            break;   // 8 slices must fit the buffers
        const double batched = time_copies_batched(buf, sizes[i], st);
        fgh_json_obj_begin(&j, nullptr);
        fgh_json_int(&j, "bytes", (long long)sizes[i]);
        fgh_json_num(&j, "individual_us", one[i]);
        fgh_json_num(&j, "batched_us", batched);
        fgh_json_obj_end(&j);
        printf("copy %9zu B: 8 queued one by one %8.1f us each, as one batch %8.1f us each\n",
               sizes[i], one[i], batched);
    }
    fgh_json_arr_end(&j);
    fgh_json_obj_begin(&j, "fit");
    fgh_json_num(&j, "one_way_latency_us", lat1), fgh_json_num(&j, "one_way_gbps", bw1);
    fgh_json_num(&j, "both_ways_latency_us", lat2), fgh_json_num(&j, "both_ways_gbps_each", bw2);
    fgh_json_obj_end(&j);
    // copy lanes: every GPU of the machine (up to 8) pushing to every other at
    // once, a lane a peer (2 GPUs: two lanes each), 1 MB to 64 MB a copy; the
    // rank's round fitted as latency + its lanes' bytes / rate.  Best effort:
    // where it fails the profile goes on without it (the model then assumes
    // the one-peer rate shared by the lanes)
    if (ok) {
        int gpus = 0;
        cudaGetDeviceCount(&gpus);
        gpus = std::min(gpus, 8);
        static const size_t lsz[] = {1 << 20, 4 << 20, 16 << 20, 64 << 20};
        constexpr int kL = sizeof lsz / sizeof lsz[0];
        Lanes ln;
        double xs[kL], us[kL], lat = NAN, bw = NAN;
        bool lanes_ok = gpus >= 2 && ln.open(gpus, lsz[kL - 1]);
        for (int i = 0; i < kL && lanes_ok; i++) {
            us[i] = ln.time_round(lsz[i]);
            xs[i] = (double)lsz[i] * ln.lanes;   // a rank's bytes a round
            lanes_ok = !isnan(us[i]);
        }
        if (lanes_ok) {
            fit_copy(xs, us, kL, &lat, &bw);
            fgh_json_obj_begin(&j, "lanes");
            fgh_json_int(&j, "gpus", gpus), fgh_json_int(&j, "lanes", ln.lanes);
            fgh_json_arr_begin(&j, "points");
            for (int i = 0; i < kL; i++) {
                fgh_json_obj_begin(&j, nullptr);
                fgh_json_int(&j, "bytes_per_copy", (long long)lsz[i]);
                fgh_json_num(&j, "round_us", us[i]);
                fgh_json_obj_end(&j);
                printf("lanes: %d GPUs, %d lanes each, %9zu B a copy: %8.1f us a round "
                       "(%5.0f GB/s a rank)\n",
                       gpus, ln.lanes, lsz[i], us[i], xs[i] / us[i] * 1e-3);
            }
            fgh_json_arr_end(&j);
            fgh_json_num(&j, "latency_us", lat), fgh_json_num(&j, "gbps", bw);
            fgh_json_obj_end(&j);
            printf("fit: lanes %.1f us + a rank's bytes / %.0f GB/s\n", lat, bw);
        } else {
            printf("lanes: not measured (%d GPUs; a step failed)\n", gpus);
            cudaGetLastError();
        }
        ln.close();
        cudaSetDevice(0);
    }
    // NCCL's collectives alone, 1 MB to 128 MB into each rank (its buffers hold
    // two blocks), fitted the same way; absent when built without NCCL
    if (ok && kHaveNccl) {
        static const size_t nsz[] = {1 << 20, 4 << 20, 16 << 20, 64 << 20, 128 << 20};
        constexpr int kN = sizeof nsz / sizeof nsz[0];
        fgh_json_obj_begin(&j, "nccl");
        for (int gather = 1; gather >= 0; gather--) {
            double xs[kN], us[kN], lat = NAN, bw = NAN;
            fgh_json_obj_begin(&j, gather ? "all_gather" : "reduce_scatter");
            fgh_json_arr_begin(&j, "points");
            for (int i = 0; i < kN; i++) {
                xs[i] = (double)nsz[i];
                us[i] = time_nccl(buf, nsz[i], gather, st);
                fgh_json_obj_begin(&j, nullptr);
                fgh_json_int(&j, "bytes", (long long)nsz[i]);
                fgh_json_num(&j, "us", us[i]);
                fgh_json_obj_end(&j);
                printf("nccl %s %9zu B into each rank: %8.1f us\n",
                       gather ? "all-gather" : "reduce-scatter", nsz[i], us[i]);
            }
            fgh_json_arr_end(&j);
            fit_copy(xs, us, kN, &lat, &bw);
            printf("fit: nccl %s %.1f us + bytes / %.0f GB/s\n",
                   gather ? "all-gather" : "reduce-scatter", lat, bw);
            fgh_json_num(&j, "latency_us", lat), fgh_json_num(&j, "gbps", bw);
            fgh_json_obj_end(&j);
        }
        fgh_json_obj_end(&j);
    }
    // GEMMs on GPU 0; buffers for the largest shape asked for (and the 8192^3 probe)
    long long ma = 8192 * 8192, mb = 8192 * 8192, mc = 8192 * 8192;
    for (int i = 0; i < nshapes; i++) {
        ma = std::max(ma, shapes[i][0] * shapes[i][2]);
        mb = std::max(mb, shapes[i][2] * shapes[i][1]);
        mc = std::max(mc, shapes[i][0] * shapes[i][1]);
    }
    Rank r;
    __nv_bfloat16 *a = nullptr, *c = nullptr;
    cudaStream_t cst = nullptr;
    ok = ok && fgh_ok(cudaSetDevice(0)) && fgh_ok(cudaMalloc(&a, bytes(ma))) &&
         fgh_ok(cudaMalloc(&r.b, bytes(mb))) && fgh_ok(cudaMalloc(&c, bytes(mc))) &&
         fgh_ok(cudaStreamCreateWithFlags(&r.st[1], cudaStreamNonBlocking)) &&
         fgh_ok(cudaStreamCreateWithFlags(&cst, cudaStreamNonBlocking)) &&
         lt_open(&r.lt) &&
         fgh_fill_device(a, FGH_BF16, ma, 3, 1.f, 0) == 0 &&
         fgh_fill_device(r.b, FGH_BF16, mb, 5, 1.f, 0) == 0;
    // one shape at a time, each from the same state (time_gemm's settle),
    // 7 timings after one to warm up.  The GPU's clocks follow the recent
    // load: round robin over the shapes read them 10-25% slow
    fgh_json_arr_begin(&j, "gemms");
    for (int i = 0; i < nshapes && ok; i++) {
        const double us = time_gemm(r, shapes[i][0], shapes[i][1], shapes[i][2], a, c, buf, 0,
                                    false, cst, 7, true);
        ok = !isnan(us);
        fgh_json_obj_begin(&j, nullptr);
        fgh_json_int(&j, "m", shapes[i][0]), fgh_json_int(&j, "n", shapes[i][1]);
        fgh_json_int(&j, "k", shapes[i][2]);
        fgh_json_num(&j, "us", us);
        fgh_json_obj_end(&j);
        printf("gemm %5lld x %5lld x %5lld: %8.1f us (%.0f TFLOP/s)\n", shapes[i][0], shapes[i][1],
               shapes[i][2], us, 2.0 * shapes[i][0] * shapes[i][1] * shapes[i][2] / us * 1e-6);
    }
    fgh_json_arr_end(&j);
    double alone = NAN, under = NAN;
    if (ok) {
        // alternated, so that clocks settling over the run weigh on both alike
        double ta[5], tu[5];
        for (int i = 0; i < 5; i++) {
            ta[i] = time_gemm(r, 8192, 8192, 8192, a, c, buf, 64 << 20, false, cst, 7, false);
            tu[i] = time_gemm(r, 8192, 8192, 8192, a, c, buf, 64 << 20, true, cst, 7, false);
        }
        alone = fgh_median(ta, 5), under = fgh_median(tu, 5);
        printf("gemm 8192^3: %.1f us alone, %.1f us under 64 MB peer copies (%+.2f%%)\n", alone,
               under, 100 * (under / alone - 1));
    }
    // the executor's fixed cost per call: a serial-ce AG+GEMM call less its
    // GEMM and its copy alone (barriers, cross-GPU event waits), on a small
    // shape whose GEMM (~55 us) still outlasts the host's enqueue: on a tiny
    // one the host's own time per call showed instead, and moved 15-30 us
    // between runs
    double call = NAN, call_gemm = NAN, call_comm = NAN;
    if (ok) {
        Setup ts{FGRT_AG_GEMM, 2, 2048, 8192, 1024, false, {}};
        if (setup(&ts)) {
            for (int q = 0; q < 2; q++) {   // finite inputs: the GEMM's time depends on them
                cudaSetDevice(q);
                fgh_fill_device(ts.r[q].a, FGH_BF16, 1024 * 1024, 11 + q, 1.f, 0);
                fgh_fill_device(ts.r[q].b, FGH_BF16, 1024 * 8192, 13, 1.f, 0);
            }
            std::vector<double> tc, tg, tm;
            for (int rep = -1; rep < 9; rep++) {   // rep -1 warms up; parts interleaved
                const double c = time_once(&ts, Part::schedule, {FGRT_SERIAL_CE, 1}, 5);
                const double g = time_once(&ts, Part::gemm, {FGRT_SERIAL_CE, 1}, 5);
                const double m = time_once(&ts, Part::comm, {FGRT_SERIAL_CE, 1}, 5);
                if (rep >= 0)
                    tc.push_back(c), tg.push_back(g), tm.push_back(m);
            }
            call = fgh_median(tc.data(), 9), call_gemm = fgh_median(tg.data(), 9);
            call_comm = fgh_median(tm.data(), 9);
            printf("executor: a serial_ce call (2048 x 8192 x 1024) %.1f us, its GEMM %.1f, its "
                   "copy %.1f: %.1f us fixed per call\n",
                   call, call_gemm, call_comm, call - call_gemm - call_comm);
        }
        teardown(&ts);
        cudaSetDevice(0);
    }
    fgh_json_obj_begin(&j, "call_overhead");
    fgh_json_num(&j, "call_us", call), fgh_json_num(&j, "gemm_us", call_gemm);
    fgh_json_num(&j, "comm_us", call_comm);
    fgh_json_num(&j, "us", call - call_gemm - call_comm);
    fgh_json_obj_end(&j);
    fgh_json_obj_begin(&j, "gemm_slowdown");
    fgh_json_num(&j, "alone_us", alone), fgh_json_num(&j, "under_copies_us", under);
    fgh_json_num(&j, "fraction", under / alone - 1);
    fgh_json_obj_end(&j);
    fgh_json_clocks(&j);
    fgh_json_obj_end(&j);
    fputc('\n', f);
    if (json_path)
        fclose(f);
    cudaSetDevice(0);
    cudaDeviceSynchronize();
    lt_close(&r.lt);
    if (r.st[1])
        cudaStreamDestroy(r.st[1]);
    if (cst)
        cudaStreamDestroy(cst);
    cudaFree(a), cudaFree(r.b), cudaFree(c);
    for (int d = 0; d < 2; d++) {
        cudaSetDevice(d);
        cudaFree(buf[d][0]), cudaFree(buf[d][1]);
        if (st[d])
            cudaStreamDestroy(st[d]);
    }
    return ok && !isnan(alone) && !isnan(under);
}

}   // namespace

int main(int argc, char **argv)
{
    // NVLink multicast (NVLS) can take a host's shared GPUs out of service
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    bool do_bench = false, do_profile = false, nccl_only = false;
    const char *json = nullptr, *only = nullptr, *shapes = nullptr, *bench_list = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verbose"))
            fgh_set_verbose(true);
        else if (!strcmp(argv[i], "--bench"))
            do_bench = true;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            ++i;   // check-gpu passes every test the kernels folder; this one uses none yet
        else if (!strcmp(argv[i], "--profile"))
            do_profile = true;
        else if (!strcmp(argv[i], "--nccl-only"))
            nccl_only = true;
        else if (!strcmp(argv[i], "--gemm-shapes") && i + 1 < argc)
            shapes = argv[++i];
        else if (!strcmp(argv[i], "--bench-shapes") && i + 1 < argc)
            bench_list = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--verbose] [--nccl-only] [--bench [--json FILE] [--only NAME,...]\n"
                    "          [--bench-shapes NAME:all_gather|reduce_scatter:MxNxK,...]]\n"
                    "       %s --profile [--json FILE] [--gemm-shapes MxNxK,...]\n",
                    argv[0], argv[0]);
            return 2;
        }
    }
    std::vector<std::string> bench_names;
    std::vector<Shape> bench_shapes;
    if (bench_list && !parse_bench_shapes(bench_list, &bench_shapes, &bench_names))
        return 2;
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 2) {
        if (do_profile) {
            fprintf(stderr, "overlap: --profile needs 2 GPUs in this machine\n");
            return 1;
        }
        fgh_skip("overlap executor order on the GPUs", "needs at least 2 GPUs in this machine");
        return fgh_summary() ? 1 : 0;
    }
    gpus = std::min(gpus, kMaxWorld);
    if (do_profile)   // measurements only: fusegen profile reads the JSON
        return profile(json, shapes) ? 0 : 1;
    if (!kHaveNccl)
        fgh_skip("serial_nccl schedules (checks and timings)",
                 "built without NCCL (no nccl.h / libnccl where the GPU tests were built)");
    static const Sched checked[] = {{FGRT_SERIAL_NCCL, 1},   {FGRT_SERIAL_CE, 1},
                                    {FGRT_SHARD_OVERLAP, 1}, {FGRT_CHUNK_OVERLAP, 2},
                                    {FGRT_CHUNK_OVERLAP, 4}, {FGRT_CHUNK_OVERLAP, 8}};
    for (int w = 2; w <= gpus; w *= 2)
        for (const Sched &sched : checked)
            for (fgrt_collective c : {FGRT_AG_GEMM, FGRT_GEMM_RS})
                if ((sched.s != FGRT_SERIAL_NCCL || kHaveNccl) &&
                    (!nccl_only || sched.s == FGRT_SERIAL_NCCL))
                    check(c, sched, w, 256 * w, 192, 128);
    if (do_bench)
        bench(2, json, only, bench_shapes);
    return fgh_summary() ? 1 : 0;
}
