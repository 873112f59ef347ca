// The runtime's overlap executor (fgrt_overlap_create ... _wait in
// runtime/include/fgrt_overlap.h) as engines run it: one process per GPU.
// The first process forks one more per GPU before any of them touches CUDA;
// executor handles travel over pipes, peer memory is mapped through CUDA
// IPC; GEMMs are cuBLASLt calls and the owner's reduction the shared
// kernel, both through the executor's callbacks.
//
// Checks (bf16, rel L2 <= 1e-2, NaN never passes), on fresh random inputs
// with every output poisoned before each call:
//   - AG+GEMM and GEMM+RS, serial_ce, shard_overlap and chunk_overlap (2,
//     4 and 8 chunks; RS's ring adds the running sums in its GEMMs), 3 calls
//     in a row with new inputs each, every output element against a double
//     reference on the host (small shapes); GEMM+RS once with the reduce
//     callback and once with the generated overlap_reduce kernel, found in
//     --kernels DIR with DIR/manifest.json (--manifest FILE) as an engine's
//     registry would hold it (skipped, and said so, where DIR has none);
//   - 1000 calls of shard_overlap (AG+GEMM; GEMM+RS with the generated
//     reduction where there is one) and of chunk_overlap with 4 chunks,
//     outputs poisoned before each, bitwise equal to the first (issue 12's
//     deterministic mode);
//   - a peer that never runs its call: the waiting rank's
//     fgrt_overlap_wait returns FG_ERR_TIMEOUT once its limit has passed,
//     names the flag that did not come, and the executor refuses later calls;
//   - several copy lanes (fgrt_overlap_args.lanes, the 2D order): AG
//     chunk_overlap's 4 pieces of a block each on a lane of its own (up to
//     FGRT_MAX_LANES), and with more than 2 ranks shard_overlap with a lane
//     per peer, checked as above; chunk_fused's 2 pieces on 2 lanes below;
//   - AG+GEMM and GEMM+RS chunk_fused (2 and 4 chunks) with the generated
//     GEMM of --kernels (its instance of the fewest n x k; skipped, and said
//     so, where DIR has none; RS with the generated reduction where there is
//     one): 3 calls, no output left poisoned (AG: the peers' blocks of A are
//     poisoned too), 96 sampled outputs each; a copy failing on rank 0;
//   - injected failures on rank 0 (issue 12), through its driver table or
//     its GEMM callback: a copy that fails from the n-th on (rank 0's run
//     returns FG_ERR_DRIVER; rank 1 times out within its limit naming the
//     flag that never came), a GEMM callback that fails (rank 1 learns of it
//     by rank 0's mark: FG_ERR_PEER_FAILED before its limit); both ranks'
//     streams drain, the failed executors refuse later calls, nothing is
//     left allocated, and a new executor's call is right again.
// --quick: 2 calls in place of the 1000 of determinism (compute-sanitizer).
// --no-faults: the injected failures reported skipped (check-gpu-sanitize:
// under compute-sanitizer, rank 1 stalls for good in the case where rank 0's
// start flag came and its first piece never does; docs/reliability.md).
// On a machine with one GPU the ranks are 2 processes sharing it (CUDA IPC
// within one device): every check but the bench runs, and the paths that
// need two devices (peer access, copies between GPUs) are reported skipped.
// --world N: N ranks (processes) whatever the GPUs, rank r on GPU r % GPUs.
//   - from 4 ranks, the hierarchical plan (fgrt_overlap_args.node_ranks) for
//     every node size of 2 or more leaving 2 nodes or more (on one copy
//     lane, and on a lane a node peer where a node has 3 ranks or more),
//     AG+GEMM and GEMM+RS checked as above, and GEMM+RS's 1000 calls bitwise equal at
//     nodes of 2; the step between nodes is NCCL's where every rank has a
//     GPU and the test was built with NCCL (nccl_across_cb: a communicator a
//     place), else the test's own transport over CUDA IPC (across_cb).
// --bench [--json FILE] [--bench-shapes LIST]: us per call of each schedule
// on the executor and the unsplit GEMM alone, a GPU a rank, at the
// Llama-2-70B TP=2 shapes on 2 ranks, or at LIST's (`fusegen shapes SPEC`:
// NAME:all_gather|reduce_scatter:MxNxK,...) on --world ranks (5 calls back
// to back, host-timed on rank 0 between cross-process barriers, 9 repeats
// with the parts interleaved; medians), then each schedule checked once at
// the shape on 96 sampled outputs.  Each schedule on one copy lane, then
// where the collective takes them on several (the 2D order): shard_overlap
// with a lane a peer (more than 2 ranks), chunk_overlap's 2 and 4 pieces a
// lane each (AG; up to 8 lanes), keyed "..._l<lanes>"; from 4 ranks the
// hierarchical plan for every node size, on one lane and on a lane a node
// peer, keyed "..._n<node ranks>".  GEMM+RS uses the generated reduction
// where --kernels has it (the hierarchical plan: the callback's), else the
// test's reduce callback (the results file says which).
#include <algorithm>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <initializer_list>
#include <string>
#include <vector>

#include "harness.h"
#include "overlap_gpu.cuh"

#ifdef FG_HAVE_FGRT
#include "fgrt.h"
#include "fgrt_overlap.h"
extern "C" {
#include "internal.h"   // the context's driver table, for injected failures
}
#endif
#ifdef FG_HAVE_NCCL
#include <nccl.h>
#endif

namespace {

using namespace overlap_gpu;

constexpr int kMaxWorld = 8;
bool quick = false;   // --quick: 2 calls where determinism takes 1000 (for compute-sanitizer)
bool no_faults = false;   // --no-faults: the injected failures skipped (for compute-sanitizer)

// ---- processes: rank 0 is the first process, the others its children ----

struct Procs {
    int rank = 0, world = 1;
    int device = 0;                                   // rank % GPUs: ranks may share one
    int up_w = -1, down_r = -1;                       // a child's pipes to and from rank 0
    int down_w[kMaxWorld] = {}, up_r[kMaxWorld] = {};  // rank 0's, per child
};

bool write_all(int fd, const void *p, size_t n)
{
    for (const char *c = (const char *)p; n;) {
        const ssize_t k = write(fd, c, n);
        if (k <= 0 && errno != EINTR)
            return false;
        if (k > 0)
            c += k, n -= (size_t)k;
    }
    return true;
}

bool read_all(int fd, void *p, size_t n)
{
    for (char *c = (char *)p; n;) {
        const ssize_t k = read(fd, c, n);
        if (k == 0 || (k < 0 && errno != EINTR))
            return false;
        if (k > 0)
            c += k, n -= (size_t)k;
    }
    return true;
}

// Every rank contributes `size` bytes; every rank gets all of them in rank
// order.  Doubles as a barrier.
bool all_gather(const Procs &P, const void *mine, void *all, size_t size)
{
    char *out = (char *)all;
    if (P.rank != 0)
        return write_all(P.up_w, mine, size) && read_all(P.down_r, out, size * P.world);
    memcpy(out, mine, size);
    for (int c = 1; c < P.world; c++)
        if (!read_all(P.up_r[c], out + size * c, size))
            return false;
    for (int c = 1; c < P.world; c++)
        if (!write_all(P.down_w[c], out, size * P.world))
            return false;
    return true;
}

// A barrier that also tells every rank whether all of them are fine.
bool all_ok(const Procs &P, bool ok)
{
    char mine = ok, all[kMaxWorld] = {};
    if (!all_gather(P, &mine, all, 1))
        return false;
    for (int q = 0; q < P.world; q++)
        ok = ok && all[q];
    return ok;
}


#ifdef FG_HAVE_FGRT

// ---- the generated reduction, as an engine's registry holds it ----

struct Generated {
    unsigned char *image = nullptr;
    size_t size = 0;
    char name[96] = {};
    fg_kernel_entry e = {};
};

// Instance g->name of DIR as an engine's registry holds it (op `op`, key
// dims `dims`): its cubin, and from the manifest its launch shape; false
// (and why) if either is missing.
bool load_entry(const char *dir, const char *manifest_path, const char *op,
                std::initializer_list<long long> dims, Generated *g, char *why, size_t why_len)
{
    char path[1024], mpath[1024];
    snprintf(path, sizeof path, "%s/%s.cubin", dir ? dir : ".", g->name);
    if (!dir || !(g->image = (unsigned char *)fgh_read_file(path, &g->size))) {
        snprintf(why, why_len, "no %s", path);
        return false;
    }
    const char *used = nullptr;
    char *manifest = fgh_open_manifest(manifest_path, dir, mpath, sizeof mpath, &used);
    const long long grid = fgh_manifest_value(manifest, g->name, "grid");
    const long long block = fgh_manifest_value(manifest, g->name, "block");
    const long long smem = fgh_manifest_value(manifest, g->name, "dynamic_smem");
    free(manifest);
    if (grid <= 0 || block <= 0 || smem < 0) {
        snprintf(why, why_len, "%s is not in %s", g->name, used);
        return false;
    }
    g->e.name = g->name, g->e.family = op, g->e.op = op;
    g->e.arch = FG_REG_ARCH_SM90A, g->e.dtype = FG_REG_BF16;
    g->e.ndims = 0;
    for (long long d : dims)
        g->e.dims[g->e.ndims++] = d;
    g->e.grid_rule = FG_REG_GRID_FIXED;
    g->e.grid[0] = (unsigned)grid, g->e.grid[1] = g->e.grid[2] = 1;
    g->e.block[0] = (unsigned)block, g->e.block[1] = g->e.block[2] = 1;
    g->e.cluster[0] = g->e.cluster[1] = g->e.cluster[2] = 1;
    g->e.dynamic_smem = (unsigned)smem;
    g->e.image = g->image, g->e.image_size = &g->size;
    return true;
}

// The instance of DIR the runtime would launch among the cubins whose names
// `key` accepts (returning the instance's key, 0 to skip): in the manifest,
// not a tuning candidate, the smallest key, a tuned one before the
// planner's of that key (fg_lookup's tie-break).  Its name into g->name;
// its key, 0 if none.
template <class Key>
long long pick_instance(const char *dir, const char *manifest_path, const char *prefix, Key key,
                        Generated *g)
{
    char mpath[1024];
    char *manifest = dir ? fgh_open_manifest(manifest_path, dir, mpath, sizeof mpath, nullptr)
                         : nullptr;
    int count = 0;
    char **names = manifest ? fgh_list_cubins(dir, prefix, &count) : nullptr;
    long long best = 0;
    bool best_tuned = false;
    for (int i = 0; i < count; i++) {
        const long long k = key(names[i]);
        const bool tuned = fgh_manifest_value(manifest, names[i], "tuned") == 1;
        if (k <= 0 || fgh_manifest_value(manifest, names[i], "block") <= 0 ||
            fgh_manifest_value(manifest, names[i], "candidate") == 1 ||
            (best && (k > best || (k == best && (best_tuned || !tuned)))))
            continue;
        best = k, best_tuned = tuned;
        snprintf(g->name, sizeof g->name, "%s", names[i]);
    }
    free(names);
    free(manifest);
    return best;
}

// The generated reduction of DIR for `world` ranks (the planner's or a tuned one).
bool load_generated(const char *dir, const char *manifest_path, int world, Generated *g,
                    char *why, size_t why_len)
{
    char want[64];
    snprintf(want, sizeof want, "overlap_reduce_sm90a_bf16_w%d", world);
    const size_t len = strlen(want);
    auto key = [&](const char *name) -> long long {
        return !strncmp(name, want, len) && (name[len] == '\0' || name[len] == '_') ? 1 : 0;
    };
    if (!pick_instance(dir, manifest_path, "overlap_reduce_sm90a_bf16_w", key, g)) {
        snprintf(why, why_len, "no overlap_reduce_sm90a_bf16_w%d instance in %s", world,
                 dir ? dir : "(none)");
        return false;
    }
    return load_entry(dir, manifest_path, "overlap_reduce", {world}, g, why, why_len);
}

// The generated GEMM of chunk_fused: the overlap_gemm_sm90a_bf16 instance
// of DIR with the fewest n x k (the checks sample its outputs).
bool load_fused_gemm(const char *dir, const char *manifest_path, Generated *g, char *why,
                     size_t why_len)
{
    auto key = [](const char *name) -> long long {
        long long n = 0, k = 0;
        int end = 0;
        return sscanf(name, "overlap_gemm_sm90a_bf16_n%lld_k%lld%n", &n, &k, &end) == 2 &&
                       (name[end] == '\0' || name[end] == '_')
                   ? n * k
                   : 0;
    };
    long long n = 0, k = 0;
    if (!pick_instance(dir, manifest_path, "overlap_gemm_sm90a_bf16_n", key, g) ||
        sscanf(g->name, "overlap_gemm_sm90a_bf16_n%lld_k%lld", &n, &k) != 2) {
        snprintf(why, why_len, "no overlap_gemm_sm90a_bf16_n*_k* instance in %s",
                 dir ? dir : "(none)");
        return false;
    }
    return load_entry(dir, manifest_path, "overlap_gemm", {n, k}, g, why, why_len);
}

// ---- one rank's GEMM and buffers ----

// A rank's cuBLASLt and the B its GEMMs multiply by.
struct Gemm {
    LtGemm lt;
    const __nv_bfloat16 *b = nullptr;
    long long n = 0, k = 0;
    int sms = 0;
};

// The hierarchical plan's step between nodes (fgrt_across_fn), the test's
// own transport standing in for an engine's NCCL: CUDA IPC among the ranks
// at one place in every node ("members", member i in node i), ordered on
// the executor's stream by flag kernels.  Each member says it is ready for
// this call's data (its stream got here after its node barrier, so its
// previous call is over), waits for every other member's ready, pushes its
// data to member node + s at step s (AG: its own row block into the same
// rows of that member's A; RS: its node sum of that member's block into the
// member's staging slot of this node), says it has sent, waits for every
// other member's sent, and (RS) copies what member node - s staged into out.  A
// wait past 20 s gives up and sets `late` (then the call's outputs fail
// their check: never a hang).
struct Members {
    unsigned *p[kMaxWorld];   // each member's flags (ready or sent row), NULL for this rank
};

__global__ void across_signal(Members to, int n, unsigned slot, unsigned value)
{
    __threadfence_system();   // (the copies before it on the stream have completed)
    for (int j = threadIdx.x; j < n; j += blockDim.x)
        if (to.p[j])
            ((volatile unsigned *)to.p[j])[slot] = value;
    __threadfence_system();
}

__device__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void across_wait(const unsigned *flags, int n, int skip, unsigned value, unsigned *late)
{
    const unsigned long long t0 = global_ns();
    for (int j = 0; j < n; j++)
        while (j != skip && ((const volatile unsigned *)flags)[j] < value) {
            if (global_ns() - t0 > 20000000000ull) {
                *late = 1;
                return;
            }
            __nanosleep(1000);
        }
    __threadfence_system();
}

struct Across {
    unsigned *flags = nullptr;        // [2][kMaxWorld]: each member's ready, then sent
    unsigned *late = nullptr;
    __nv_bfloat16 *stage = nullptr;   // RS: [nodes][rows, n], member j's push in slot j
    const char *a = nullptr;          // this rank's A (AG: the rows' offsets)
    Members ready_to = {}, sent_to = {};
    char *peer_a[kMaxWorld] = {}, *peer_stage[kMaxWorld] = {};
    void *opened[kMaxWorld][3] = {};
    unsigned calls = 0;
    int sms = 0;

    // Every rank's part (all take part, whether members of this one's place
    // or not): allocate, export, map the members'.
    bool open(const Procs &P, const Shape &cs, unsigned node_ranks, char *my_a, int gpu_sms)
    {
        struct Wire {
            cudaIpcMemHandle_t h[3];
        } mine = {}, all[kMaxWorld];
        const long long rows = cs.m / P.world;
        const bool rs = cs.coll == FGRT_GEMM_RS;
        a = my_a, sms = gpu_sms;
        bool ok = fgh_ok(cudaMalloc(&flags, 2 * kMaxWorld * sizeof(unsigned) + 16)) &&
                  fgh_ok(cudaMemset(flags, 0, 2 * kMaxWorld * sizeof(unsigned) + 16)) &&
                  (!rs || fgh_ok(cudaMalloc(&stage, bytes(P.world / node_ranks * rows * cs.n)))) &&
                  fgh_ok(cudaIpcGetMemHandle(&mine.h[0], flags)) &&
                  fgh_ok(cudaIpcGetMemHandle(&mine.h[1], my_a)) &&
                  (!rs || fgh_ok(cudaIpcGetMemHandle(&mine.h[2], stage)));
        late = flags + 2 * kMaxWorld;
        if (!all_ok(P, ok) || !all_gather(P, &mine, all, sizeof mine))
            return false;
        const int place = P.rank % (int)node_ranks;
        for (int i = 0; ok && i < P.world / (int)node_ranks; i++) {
            const int q = i * (int)node_ranks + place;
            if (q == P.rank)
                continue;
            for (int b = 0; ok && b < (rs ? 3 : 2); b++)
                ok = fgh_ok(cudaIpcOpenMemHandle(&opened[i][b], all[q].h[b],
                                                 cudaIpcMemLazyEnablePeerAccess));
            if (!ok)
                break;
            ready_to.p[i] = (unsigned *)opened[i][0];
            sent_to.p[i] = (unsigned *)opened[i][0] + kMaxWorld;
            peer_a[i] = (char *)opened[i][1];
            peer_stage[i] = (char *)opened[i][2];
        }
        return all_ok(P, ok);
    }
    void close()
    {
        for (auto &o : opened)
            for (void *&p : o)
                if (p)
                    cudaIpcCloseMemHandle(p), p = nullptr;
        cudaFree(flags), cudaFree(stage);
        flags = nullptr, stage = nullptr;
    }
};

// The hierarchical plan's step between nodes by NCCL, as an engine runs it
// (issue 13: NCCL between the nodes), where every rank has a GPU of its own
// (NCCL takes no two ranks of a communicator on one GPU): a communicator a
// place, member i the rank in node i; a step is a grouped send to member
// node + step and receive from member node - step (fgrt_across_fn).
struct NcclAcross {
#ifdef FG_HAVE_NCCL
    ncclComm_t comm = nullptr;
#endif
    // Every rank's part: node 0's ranks make their place's id, every rank
    // joins its place's communicator, and one exchange loads NCCL's kernels
    // (a first launch must not happen inside a call: fgrt_gemm_fn's rules).
    bool open(const Procs &P, unsigned node_ranks, char *scratch)
    {
#ifdef FG_HAVE_NCCL
        ncclUniqueId mine = {}, all[kMaxWorld];
        bool ok = P.rank >= (int)node_ranks || ncclGetUniqueId(&mine) == ncclSuccess;
        if (!all_ok(P, ok) || !all_gather(P, &mine, all, sizeof mine))
            return false;
        const int place = P.rank % (int)node_ranks, nodes = P.world / (int)node_ranks;
        ok = ncclCommInitRank(&comm, nodes, all[place], P.rank / (int)node_ranks) == ncclSuccess;
        if (ok) {
            const int me = P.rank / (int)node_ranks;
            ok = ncclGroupStart() == ncclSuccess;
            ok = ncclSend(scratch, 8, ncclBfloat16, (me + 1) % nodes, comm, nullptr) == ncclSuccess && ok;
            ok = ncclRecv(scratch + 16, 8, ncclBfloat16, (me + nodes - 1) % nodes, comm, nullptr) ==
                     ncclSuccess && ok;
            ok = ncclGroupEnd() == ncclSuccess && ok && fgh_ok(cudaDeviceSynchronize());
        }
        return all_ok(P, ok);
#else
        (void)P, (void)node_ranks, (void)scratch;
        return false;
#endif
    }
    void close()
    {
#ifdef FG_HAVE_NCCL
        if (comm)
            ncclCommDestroy(comm);
        comm = nullptr;
#endif
    }
};

// The callbacks' state, one per executor: the rank's GEMM, and which of
// LtGemm's workspaces each of the executor's streams uses (its two GEMM
// streams run at once; sharing one workspace corrupts results).
struct User {
    Gemm *g = nullptr;
    void *streams[3] = {};
    int fail_after = -1;   // >= 0: calls past that many fail (an injected failure)
    int calls = 0;
    Across across;         // the hierarchical plan's, over CUDA IPC
    NcclAcross nccl;       // ... or by NCCL (across_by_nccl)
    void close_across() { across.close(), nccl.close(); }
};

// Whether the hierarchical plan's step between nodes goes by NCCL (built
// with it, a GPU a rank) or by the test's own CUDA IPC transport.
bool across_by_nccl = false;

int gemm_cb(void *user, void *stream, const void *a, const void *acc, void *c, long long rows)
{
    User *u = (User *)user;
    Gemm *g = u->g;
    if (u->fail_after >= 0 && u->calls++ >= u->fail_after)
        return 1;
    int slot = 0;
    while (slot < 3 && u->streams[slot] && u->streams[slot] != stream)
        slot++;
    if (slot == 3)
        return 1;   // the executor has three streams; a fourth is a bug
    u->streams[slot] = stream;
    return lt_matmul(&g->lt, slot, g->b, a, acc, c, rows, g->n, g->k, (cudaStream_t)stream) ? 0
                                                                                         : 1;
}

int reduce_cb(void *user, void *stream, const void *own, const void *recv, void *out,
              unsigned world, unsigned rank, long long elems)
{
    const Gemm *g = ((const User *)user)->g;
    if (elems % 8)
        return 1;
    reduce_block<<<g->sms * 16, 256, 0, (cudaStream_t)stream>>>(
        (const uint4 *)own, (const uint4 *)recv, (uint4 *)out, (int)world, (int)rank, elems / 8);
    return cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}

#ifdef FG_HAVE_NCCL
int nccl_across_cb(void *user, void *stream, fgrt_collective c, unsigned nodes, unsigned node,
                   unsigned step, void *const *blocks, void *out, long long elems)
{
    ncclComm_t comm = ((User *)user)->nccl.comm;
    cudaStream_t s = (cudaStream_t)stream;
    const bool ag = c == FGRT_AG_GEMM;
    const unsigned to = (node + step) % nodes, from = (node + nodes - step) % nodes;
    bool ok = step >= 1 && step < nodes && ncclGroupStart() == ncclSuccess;
    ok = ok && ncclSend(blocks[ag ? node : to], (size_t)elems, ncclBfloat16, (int)to, comm, s) ==
                   ncclSuccess;
    ok = ok && ncclRecv(ag ? blocks[from] : out, (size_t)elems, ncclBfloat16, (int)from, comm,
                        s) == ncclSuccess;
    return ncclGroupEnd() == ncclSuccess && ok ? 0 : 1;
}
#else
constexpr fgrt_across_fn nccl_across_cb = nullptr;   // (across_by_nccl stays false)
#endif

int across_cb(void *user, void *stream, fgrt_collective c, unsigned nodes, unsigned node,
              unsigned step, void *const *blocks, void *out, long long elems)
{
    Across &x = ((User *)user)->across;
    cudaStream_t s = (cudaStream_t)stream;
    const unsigned e = ++x.calls;
    const size_t b = bytes(elems);
    across_signal<<<1, 32, 0, s>>>(x.ready_to, (int)nodes, node, e);
    across_wait<<<1, 1, 0, s>>>(x.flags, (int)nodes, (int)node, e, x.late);
    const bool ag = c == FGRT_AG_GEMM;
    const unsigned to = (node + step) % nodes, from = (node + nodes - step) % nodes;
    bool ok = step >= 1 && step < nodes;
    if (ok)
        ok = ag ? cudaMemcpyAsync(x.peer_a[to] + ((const char *)blocks[node] - x.a), blocks[node],
                                  b, cudaMemcpyDeviceToDevice, s) == cudaSuccess
                : cudaMemcpyAsync(x.peer_stage[to] + node * b, blocks[to], b,
                                  cudaMemcpyDeviceToDevice, s) == cudaSuccess;
    across_signal<<<1, 32, 0, s>>>(x.sent_to, (int)nodes, node, e);
    across_wait<<<1, 1, 0, s>>>(x.flags + kMaxWorld, (int)nodes, (int)node, e, x.late);
    if (ok && !ag)   // member `from`'s sum of this rank's block
        ok = cudaMemcpyAsync(out, x.stage + (size_t)from * elems, b, cudaMemcpyDeviceToDevice,
                             s) == cudaSuccess;
    return ok && cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}


// How the checks and the bench name a case's collective.
const char *coll_name(const Shape &cs) { return cs.coll == FGRT_AG_GEMM ? "AG+GEMM" : "GEMM+RS"; }

// A rank's device buffers for one shape: AG: the gathered A [m, k], B, C
// [m, n]; RS: A [m, k], B, partials C [m, n], out [m / world, n]; chunk_fused
// also W = B^T [n, k] (the generated GEMM's operand).
struct Buffers {
    __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr, *out = nullptr, *w = nullptr;
    bool alloc(const Shape &cs, int world, bool fused)
    {
        return fgh_ok(cudaMalloc(&a, bytes(cs.m * cs.k))) &&
               fgh_ok(cudaMalloc(&b, bytes(cs.k * cs.n))) &&
               fgh_ok(cudaMalloc(&c, bytes(cs.m * cs.n))) &&
               (cs.coll == FGRT_AG_GEMM || fgh_ok(cudaMalloc(&out, bytes(cs.m / world * cs.n)))) &&
               (!fused || fgh_ok(cudaMalloc(&w, bytes(cs.n * cs.k))));
    }
    void free_all() { cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(out), cudaFree(w); }
};

// The inputs of call `call` as every rank can make them: rank p's A (AG:
// its shard [m / world, k]; RS: [m, k]) and B [k, n].
uint64_t seed_a(uint64_t base, int call, int p) { return base + 100 * call + p; }
uint64_t seed_b(uint64_t base, int call, int p) { return base + 100 * call + 50 + p; }

struct Host {
    std::vector<std::vector<uint16_t>> a, b;   // per rank
    void make(const Shape &cs, int world, uint64_t base, int call)
    {
        const long long rows = cs.m / world;
        a.assign(world, {}), b.assign(world, {});
        for (int p = 0; p < world; p++) {
            const long long na = (cs.coll == FGRT_AG_GEMM ? rows : cs.m) * cs.k;
            a[p].resize(na), b[p].resize(cs.k * cs.n);
            fgh_fill_host(a[p].data(), FGH_BF16, na, seed_a(base, call, p), 1.f);
            fgh_fill_host(b[p].data(), FGH_BF16, cs.k * cs.n, seed_b(base, call, p), 1.f);
        }
    }
    // Output element (i, j) of `rank` in double.
    double ref(const Shape &cs, int world, int rank, long long i, long long j) const
    {
        const long long rows = cs.m / world;
        double t = 0;
        for (int p = 0; p < (cs.coll == FGRT_AG_GEMM ? 1 : world); p++) {
            const uint16_t *arow = cs.coll == FGRT_AG_GEMM
                                       ? a[i / rows].data() + (i % rows) * cs.k
                                       : a[p].data() + (rank * rows + i) * cs.k;
            const uint16_t *bm = b[cs.coll == FGRT_AG_GEMM ? rank : p].data();
            for (long long kk = 0; kk < cs.k; kk++)
                t += (double)host_bf16(arow, kk) * host_bf16(bm, kk * cs.n + j);
        }
        return t;
    }
};

// This rank's inputs of one call written, its outputs poisoned (AG: the
// peers' blocks of the gathered A too).
bool write_inputs(const Shape &cs, const Procs &P, const Buffers &d, const Host &h)
{
    const long long rows = cs.m / P.world;
    const bool ag = cs.coll == FGRT_AG_GEMM;
    bool ok = fgh_poison_device(d.c, bytes(cs.m * cs.n), 0) == 0 &&
              (ag ? fgh_poison_device(d.a, bytes(cs.m * cs.k), 0) == 0
                  : fgh_poison_device(d.out, bytes(rows * cs.n), 0) == 0) &&
              fgh_ok(cudaDeviceSynchronize());
    __nv_bfloat16 *a = ag ? d.a + (size_t)P.rank * rows * cs.k : d.a;
    ok = ok && fgh_upload(a, h.a[P.rank].data(), bytes(h.a[P.rank].size())) == 0 &&
         fgh_upload(d.b, h.b[P.rank].data(), bytes(cs.k * cs.n)) == 0;
    if (ok && d.w) {   // chunk_fused's W: B transposed
        std::vector<uint16_t> w(cs.n * cs.k);
        for (long long l = 0; l < cs.k; l++)
            for (long long j = 0; j < cs.n; j++)
                w[j * cs.k + l] = h.b[P.rank][l * cs.n + j];
        ok = fgh_upload(d.w, w.data(), bytes(w.size())) == 0;
    }
    return ok;
}

bool make_executor(fg_context *ctx, const Shape &cs, Sched sched, const Procs &P,
                   const Buffers &d, User *u, double timeout_s, fgrt_overlap **x,
                   bool generated_reduce = false)
{
    Gemm *g = u->g;
    fgrt_overlap_args args = {};
    args.collective = cs.coll, args.schedule = sched.s, args.chunks = sched.chunks;
    args.lanes = sched.lanes;
    args.world = (unsigned)P.world, args.rank = (unsigned)P.rank;
    args.m = cs.m, args.n = cs.n, args.k = cs.k, args.dtype = FG_REG_BF16;
    args.a = d.a, args.c = d.c, args.out = d.out;
    args.gemm = gemm_cb, args.reduce = generated_reduce ? nullptr : reduce_cb, args.user = u;
    args.w = d.w;   // (chunk_fused's)
    args.timeout_s = timeout_s;
    args.node_ranks = sched.nodes;
    args.across = !sched.nodes ? nullptr : across_by_nccl ? nccl_across_cb : across_cb;
    g->b = d.b, g->n = cs.n, g->k = cs.k;
    // Every kernel the callbacks launch, launched once first: with CUDA's
    // lazy module loading, a kernel's first launch loads its module, which
    // waits for the device's streams, and those may be held by flag waits.
    // (chunk_overlap: GEMMs of a piece, RS's adding a running sum)
    const long long rows = cs.m / P.world;
    const bool rs = cs.coll == FGRT_GEMM_RS;
    bool warm = gemm_cb(u, nullptr, d.a, nullptr, d.c, rows) == 0 &&
                gemm_cb(u, nullptr, d.a, nullptr, d.c, cs.m) == 0 &&
                (!rs || reduce_cb(u, nullptr, d.c, d.c, d.out, P.world, P.rank, rows * cs.n) == 0) &&
                (sched.s != FGRT_CHUNK_OVERLAP ||
                 gemm_cb(u, nullptr, d.a, rs ? d.out : nullptr, d.c, rows / sched.chunks) == 0) &&
                fgh_ok(cudaDeviceSynchronize());
    if (sched.nodes && across_by_nccl) {   // the place's communicator, its kernels loaded
        warm = all_ok(P, warm) && u->nccl.open(P, sched.nodes, (char *)d.c);
    } else if (sched.nodes) {   // the step between nodes: its members mapped, its kernels loaded
        warm = all_ok(P, warm) &&
               u->across.open(P, cs, sched.nodes, (char *)d.a, g->sms);
        across_signal<<<1, 32>>>(Members{}, 0, 0, 0);
        across_wait<<<1, 1>>>(u->across.flags, 0, 0, 0, u->across.late);
        warm = warm && fgh_ok(cudaDeviceSynchronize());
    }
    u->streams[0] = nullptr;   // the warm-up's stream is not the executor's
    if (!all_ok(P, warm))
        return false;
    fgrt_overlap_handle mine, all[kMaxWorld];
    fg_status st = fgrt_overlap_create(ctx, &args, x);
    if (st == FG_OK)
        st = fgrt_overlap_export(*x, &mine);
    if (st != FG_OK)
        fprintf(stderr, "rank %d: %s: %s\n", P.rank, fg_status_string(st), fg_last_error());
    if (!all_ok(P, st == FG_OK) || !all_gather(P, &mine, all, sizeof mine))
        return false;
    st = fgrt_overlap_connect(*x, all);
    if (st != FG_OK)
        fprintf(stderr, "rank %d: connect: %s: %s\n", P.rank, fg_status_string(st),
                fg_last_error());
    return all_ok(P, st == FG_OK);
}

// One call on this rank: run, then wait.
fg_status call(fgrt_overlap *x, cudaStream_t s)
{
    fg_status st = fgrt_overlap_run(x, s);
    if (st == FG_OK)
        st = fgrt_overlap_wait(x);
    if (st != FG_OK)
        fprintf(stderr, "overlap executor: %s: %s\n", fg_status_string(st), fg_last_error());
    return st == FG_OK && fgh_ok(cudaStreamSynchronize(s)) ? FG_OK : st;
}

// ---- checks ----

// One executor of a check on this rank, with its buffers, callbacks' state
// and caller stream; everything freed when it goes.
struct Run {
    Buffers d;
    User u;
    fgrt_overlap *x = nullptr;
    cudaStream_t s = nullptr;
    // Every rank's buffers, stream and connected executor; false (and a
    // failed check named `what`) if any rank's failed.
    bool open(fg_context *ctx, const Procs &P, Gemm *g, const Shape &cs, Sched sched,
              double timeout_s, bool generated_reduce, const char *what)
    {
        u.g = g;
        return CHECK(what, all_ok(P, d.alloc(cs, P.world, sched.s == FGRT_CHUNK_FUSED) &&
                                         fgh_ok(cudaStreamCreateWithFlags(
                                             &s, cudaStreamNonBlocking)))) &&
               CHECK(what, make_executor(ctx, cs, sched, P, d, &u, timeout_s, &x,
                                         generated_reduce));
    }
    ~Run()
    {
        fgrt_overlap_destroy(x);
        u.close_across();
        if (s)
            cudaStreamDestroy(s);
        d.free_all();
    }
};

void check_case(fg_context *ctx, const Procs &P, Gemm *g, const Shape &cs, Sched sched,
                uint64_t base, bool generated_reduce)
{
    char name[200];
    snprintf(name, sizeof name, "executor %s %s%s, %d processes, M=%lld N=%lld K=%lld: rank %d",
             coll_name(cs), sched_name(sched).c_str(),
             generated_reduce ? " (generated reduction)" : "", P.world, cs.m, cs.n, cs.k, P.rank);
    Run r;
    if (r.open(ctx, P, g, cs, sched, 10.0, generated_reduce, name)) {
        const Buffers &d = r.d;
        const bool ag = cs.coll == FGRT_AG_GEMM;
        const long long out_rows = ag ? cs.m : cs.m / P.world;
        for (int c = 0; c < 3; c++) {
            Host h;
            h.make(cs, P.world, base, c);
            bool ok = write_inputs(cs, P, d, h);
            ok = all_ok(P, ok) && call(r.x, r.s) == FG_OK;
            std::vector<uint16_t> got(out_rows * cs.n);
            std::vector<double> ref(got.size());
            ok = ok && fgh_ok(cudaMemcpy(got.data(), ag ? d.c : d.out, bytes(got.size()),
                                         cudaMemcpyDeviceToHost));
            for (long long i = 0; ok && i < out_rows; i++)
                for (long long j = 0; j < cs.n; j++)
                    ref[i * cs.n + j] = h.ref(cs, P.world, P.rank, i, j);
            const fgh_err e = fgh_compare(got.data(), FGH_BF16, ref.data(), ref.size());
            char what[240];
            snprintf(what, sizeof what, "%s, call %d", name, c + 1);
            CHECKF(what, ok && e.nonfinite == 0 && e.rel_l2 <= 1e-2, "rel L2 %.3e, %zu non-finite",
                   e.rel_l2, e.nonfinite);
            if (!all_ok(P, ok))
                break;
        }
    }
}

// Issue 12's determinism: 1000 calls with the same inputs, every output
// poisoned before each, must give bitwise the first call's output (the
// reduction sums in rank order; the GEMMs are cuBLASLt's, deterministic
// by default).
void check_deterministic(fg_context *ctx, const Procs &P, Gemm *g, const Shape &cs, Sched sched,
                         bool generated_reduce, uint64_t base)
{
    const int kCalls = quick ? 2 : 1000;
    char name[200];
    snprintf(name, sizeof name, "executor %s %s%s, %d calls bitwise equal: rank %d",
             coll_name(cs), sched_name(sched).c_str(),
             generated_reduce ? " (generated reduction)" : "", kCalls, P.rank);
    Run r;
    if (r.open(ctx, P, g, cs, sched, 10.0, generated_reduce, name)) {
        const Buffers &d = r.d;
        const bool ag = cs.coll == FGRT_AG_GEMM;
        const long long out_rows = ag ? cs.m : cs.m / P.world;
        Host h;
        h.make(cs, P.world, base, 0);
        std::vector<uint16_t> first(out_rows * cs.n), got(first.size());
        bool ok = true, same = true;
        int differs_at = -1;
        for (int c = 0; c < kCalls && ok; c++) {
            // write_inputs poisons the outputs (and AG's peer blocks) first
            ok = all_ok(P, write_inputs(cs, P, d, h));
            ok = all_ok(P, ok && call(r.x, r.s) == FG_OK);
            ok = ok && fgh_ok(cudaMemcpy((c ? got : first).data(), ag ? d.c : d.out,
                                         bytes(first.size()), cudaMemcpyDeviceToHost));
            if (ok && c && memcmp(got.data(), first.data(), bytes(first.size())) != 0 &&
                differs_at < 0)
                differs_at = c, same = false;
        }
        CHECKF(name, ok && same, "%s; call %d differs from the first",
               ok ? "ran" : "a call failed", differs_at);
    }
}

// The hierarchical plan's schedules at `world` ranks, as the checks and the
// bench run them: every node size the runtime takes (2 ranks or more,
// leaving 2 nodes or more; fgrt_overlap_hier_lanes_valid, the same for both
// collectives) on one copy lane, then on a lane a node peer where a node
// has 3 ranks or more and the runtime takes that many lanes.
std::vector<Sched> hier_scheds(unsigned world)
{
    const auto takes = [world](unsigned node_ranks, unsigned lanes) {
        return fgrt_overlap_hier_lanes_valid(FGRT_AG_GEMM, world, node_ranks, lanes) != 0;
    };
    std::vector<Sched> out;
    for (unsigned node_ranks = 2; node_ranks <= world; node_ranks++) {
        if (!takes(node_ranks, 1))
            continue;
        out.push_back({FGRT_SHARD_OVERLAP, 1, 1, node_ranks});
        if (node_ranks > 2 && takes(node_ranks, node_ranks - 1))
            out.push_back({FGRT_SHARD_OVERLAP, 1, node_ranks - 1, node_ranks});
    }
    return out;
}

// M for a check near `want`: the executor takes M in blocks of world x
// chunks rows, so every rank's rows here are a multiple of 64 (up to 8
// chunks of 8 rows), at any world size (512 at 2, 4 and 8 ranks; 768 at 6).
long long check_rows(const Procs &P, long long want)
{
    const long long unit = 64LL * P.world;
    return (want + unit - 1) / unit * unit;
}

// Rank 0 runs a call that rank 1 never runs, on the legacy stream (which
// the driver's synchronous copies would wait behind): rank 0's wait must end
// in FG_ERR_TIMEOUT once its limit has passed, name rank 1's missing flag,
// and leave the executor refusing calls.
void check_timeout(fg_context *ctx, const Procs &P, Gemm *g, uint64_t base)
{
    const Shape cs{"timeout", FGRT_AG_GEMM, check_rows(P, 256), 256, 256};
    const double limit_s = 0.5;
    Run r;
    if (r.open(ctx, P, g, cs, {FGRT_SHARD_OVERLAP, 1}, limit_s, false, "executor timeout: setup")) {
        fgrt_overlap *x = r.x;
        Host h;
        h.make(cs, P.world, base, 0);
        const bool ok = all_ok(P, write_inputs(cs, P, r.d, h));
        if (P.rank == 0 && ok) {
            const double t0 = now_us();
            fg_status st = fgrt_overlap_run(x, nullptr);
            if (st == FG_OK)
                st = fgrt_overlap_wait(x);
            const double waited_s = (now_us() - t0) * 1e-6;
            const char *why = fg_last_error();
            CHECKF("executor timeout: rank 0's wait ends in FG_ERR_TIMEOUT, after its limit and "
                   "at most 2 s more",
                   st == FG_ERR_TIMEOUT && waited_s >= limit_s && waited_s < limit_s + 2.0,
                   "status %s after %.2f s: %s",
                   fg_status_string(st), waited_s, why);
            CHECKF("executor timeout: the error names rank 1's missing start flag",
                   strstr(why, "rank 1's start") != nullptr, "%s", why);
            bool idle = false;
            for (const double t1 = now_us(); !idle && now_us() - t1 < 5e6;)
                idle = cudaStreamQuery(nullptr) == cudaSuccess;
            CHECK("executor timeout: its streams and the caller's drained", idle);
            CHECK("executor timeout: later calls are refused",
                  fgrt_overlap_run(x, r.s) == FG_ERR_TIMEOUT);
        }
        all_ok(P, true);
    }
}

double sampled_error(const Shape &cs, const Procs &P, const Buffers &d, const Host &h,
                     uint64_t seed);

// chunk_fused with the generated GEMM `fused` (its n and k).  AG+GEMM: it
// takes each piece of the gathered A as its flag lands; GEMM+RS: each piece
// of a peer's partial is pushed once the GEMM counted its rows written, then
// the owner reduces (the generated reduction where there is one).  3 calls
// in a row with new inputs, the outputs (AG: and the peers' blocks of A: a
// tile taken before its rows landed reads NaN) poisoned before each: no
// output left poisoned, 96 sampled outputs against a double reference.
void check_fused(fg_context *ctx, const Procs &P, Gemm *g, const fg_kernel_entry &fused,
                 fgrt_collective coll, unsigned chunks, unsigned lanes, bool generated_reduce,
                 uint64_t base)
{
    const Shape cs{"fused", coll, 128LL * P.world * chunks, fused.dims[0], fused.dims[1]};
    const Sched sched{FGRT_CHUNK_FUSED, chunks, lanes};
    const bool ag = coll == FGRT_AG_GEMM;
    char name[200];
    snprintf(name, sizeof name, "executor %s %s%s, %s, %d processes, M=%lld N=%lld K=%lld: rank %d",
             coll_name(cs), sched_name(sched).c_str(),
             generated_reduce ? " (generated reduction)" : "", fused.name, P.world, cs.m, cs.n,
             cs.k, P.rank);
    Run r;
    if (!r.open(ctx, P, g, cs, sched, 10.0, generated_reduce, name))
        return;
    for (int c = 0; c < 3; c++) {
        Host h;
        h.make(cs, P.world, base, c);
        bool ok = all_ok(P, write_inputs(cs, P, r.d, h)) && call(r.x, r.s) == FG_OK;
        std::vector<uint16_t> got((ag ? cs.m : cs.m / P.world) * cs.n);
        ok = ok && fgh_ok(cudaMemcpy(got.data(), ag ? r.d.c : r.d.out, bytes(got.size()),
                                     cudaMemcpyDeviceToHost));
        const size_t poisoned = ok ? fgh_count_poisoned(got.data(), FGH_BF16, got.size()) : 0;
        const double err = ok ? sampled_error(cs, P, r.d, h, base + 31 * c) : INFINITY;
        char what[260];
        snprintf(what, sizeof what, "%s, call %d", name, c + 1);
        CHECKF(what, ok && poisoned == 0 && err <= 1e-2, "%s; %zu outputs poisoned, sampled rel L2 "
               "%.3e", ok ? "ran" : "failed", poisoned, err);
        if (!all_ok(P, ok))
            break;
    }
}

// ---- injected failures (issue 12) ----

// Rank 0's driver table with copy_async failing from its `after`-th call on,
// as a copy engine or a peer mapping failing in the middle of a call would
// (so the failure mark cannot travel either: the peer must time out).
struct CopyFault {
    static const fg_driver_ops *real;
    static fg_driver_ops ops;
    static int after, copies;
    static fg_status copy_async(fg_driver *d, void *dst, const void *src, size_t n, void *s)
    {
        if (copies++ >= after)
            return fg_fail(FG_ERR_DRIVER, "injected: copy_async %d failed", copies - 1);
        return real->copy_async(d, dst, src, n, s);
    }
    static void arm(fg_context *ctx, int n)
    {
        real = ctx->drv->ops, ops = *real, ops.copy_async = copy_async;
        after = n, copies = 0;
        ctx->drv->ops = &ops;
    }
    static void disarm(fg_context *ctx) { ctx->drv->ops = real; }
};
const fg_driver_ops *CopyFault::real = nullptr;
fg_driver_ops CopyFault::ops = {};
int CopyFault::after = 0, CopyFault::copies = 0;

// Device memory free on this rank's GPU, read once every rank is idle (a
// rank's freed buffers stay allocated while a peer keeps them mapped, and
// ranks sharing a GPU read the same count), then every rank waits again.
size_t free_bytes(const Procs &P)
{
    size_t f = 0, total = 0;
    all_ok(P, fgh_ok(cudaDeviceSynchronize()));
    all_ok(P, fgh_ok(cudaMemGetInfo(&f, &total)));
    return f;
}

// Waits (at most 5 s) until stream s and the executor's streams are idle:
// true if they drained.
bool drains(cudaStream_t s)
{
    bool idle = false;
    for (const double t0 = now_us(); !idle && now_us() - t0 < 5e6;)
        idle = cudaStreamQuery(s) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
    return idle;
}

// One call in which rank 0 fails: its copies from the `after`-th on
// (gemm false) or its GEMM callback from the `after`-th on (gemm true).
// Rank 0's run must return FG_ERR_DRIVER; rank 1's call must end in
// FG_ERR_TIMEOUT after its limit (a copy: no mark can travel) naming
// `missing`, or in FG_ERR_PEER_FAILED before it (a GEMM: rank 0 marks it);
// both executors then refuse calls and every stream drains.  World 2.
void check_injected(fg_context *ctx, const Procs &P, Gemm *g, const Shape &cs, Sched sched,
                    bool gemm, int after, const char *missing, uint64_t base)
{
    const double limit_s = 0.5;
    char name[200];
    snprintf(name, sizeof name, "executor %s %s, rank 0's %s %d failing: rank %d",
             coll_name(cs), sched_name(sched).c_str(),
             gemm ? "GEMM callback" : "copy", after, P.rank);
    Run r;
    if (!r.open(ctx, P, g, cs, sched, limit_s, false, name))
        return;
    Host h;
    h.make(cs, P.world, base, 0);
    if (!all_ok(P, write_inputs(cs, P, r.d, h)))
        return;
    if (P.rank == 0 && gemm)
        r.u.fail_after = after;
    if (P.rank == 0 && !gemm)
        CopyFault::arm(ctx, after);
    const double t0 = now_us();
    fg_status st = fgrt_overlap_run(r.x, r.s);
    const fg_status run_st = st;
    if (st == FG_OK)
        st = fgrt_overlap_wait(r.x);
    const double took_s = (now_us() - t0) * 1e-6;
    const std::string why = fg_last_error();
    if (P.rank == 0 && !gemm)
        CopyFault::disarm(ctx);
    char what[280];
    if (P.rank == 0) {
        snprintf(what, sizeof what, "%s: the run returns FG_ERR_DRIVER", name);
        CHECKF(what, run_st == FG_ERR_DRIVER && strstr(why.c_str(), gemm ? "gemm" : "injected"),
               "%s: %s", fg_status_string(run_st), why.c_str());
    } else if (P.rank == 1) {
        snprintf(what, sizeof what, "%s: %s", name,
                 gemm ? "FG_ERR_PEER_FAILED before its limit"
                      : "FG_ERR_TIMEOUT after its limit, at most 2 s more");
        CHECKF(what,
               gemm ? st == FG_ERR_PEER_FAILED && took_s < limit_s
                    : st == FG_ERR_TIMEOUT && took_s >= limit_s && took_s < limit_s + 2.0,
               "%s after %.3f s: %s", fg_status_string(st), took_s, why.c_str());
        snprintf(what, sizeof what, "%s: the error names %s", name, missing);
        CHECKF(what, strstr(why.c_str(), missing) != nullptr, "%s", why.c_str());
    }
    snprintf(what, sizeof what, "%s: its streams drain, later calls are refused", name);
    const bool drained = drains(r.s);
    CHECKF(what, drained && fgrt_overlap_run(r.x, r.s) != FG_OK, "%s",
           drained ? "a call was taken" : "streams still busy after 5 s");
    all_ok(P, true);
}

void check_injected_all(fg_context *ctx, const Procs &P, Gemm *g, const fg_kernel_entry *fused,
                        uint64_t base)
{
    if (P.world != 2) {
        if (P.rank == 0)
            fgh_skip("executor: injected failures", "the checks are written for 2 ranks");
        return;
    }
    const Shape ag{"fault", FGRT_AG_GEMM, 256, 256, 256}, rs{"fault", FGRT_GEMM_RS, 256, 256, 256};
    const Sched shard{FGRT_SHARD_OVERLAP, 1}, chunk2{FGRT_CHUNK_OVERLAP, 2};
    // Twice, memory counted around the second pass: the first loads the
    // modules its GEMM shapes need (lazy loading takes device memory once,
    // and on a shared GPU the count is the device's)
    size_t before = 0;
    int i = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            before = free_bytes(P);
        // rank 0's copies at world 2: its start flag, then per piece its data and flag
        for (const Shape *cs : {&ag, &rs}) {
            check_injected(ctx, P, g, *cs, shard, false, 0, "rank 0's start", base + 100 * ++i);
            check_injected(ctx, P, g, *cs, shard, false, 1, "rank 0's sent(1)", base + 100 * ++i);
            check_injected(ctx, P, g, *cs, shard, true, 0, "rank 0", base + 100 * ++i);
        }
        check_injected(ctx, P, g, ag, chunk2, false, 3, "rank 0's sent(1) piece 1",
                       base + 100 * ++i);
        check_injected(ctx, P, g, rs, chunk2, true, 1, "rank 0", base + 100 * ++i);
        // chunk_fused: rank 1's GEMM kernel waits for a piece that never comes
        // until its host wait gives up and releases it
        for (fgrt_collective coll : {FGRT_AG_GEMM, FGRT_GEMM_RS})
            if (fused)
                check_injected(ctx, P, g, {"fault", coll, 512, fused->dims[0], fused->dims[1]},
                               {FGRT_CHUNK_FUSED, 2}, false, 3, "rank 0's sent(1) piece 1",
                               base + 100 * ++i);
    }
    const size_t after = free_bytes(P);
    char what[120];
    snprintf(what, sizeof what, "executor: injected failures leave nothing allocated: rank %d",
             P.rank);
    CHECKF(what, after >= before, "%zu bytes fewer free (%zu before, %zu after)", before - after,
           before, after);
    // and the same context runs a right call again
    check_case(ctx, P, g, ag, shard, base + 100 * ++i, false);
}

// ---- --bench ----


// Sampled outputs of the last call against the inputs on the host.
double sampled_error(const Shape &cs, const Procs &P, const Buffers &d, const Host &h,
                     uint64_t seed)
{
    constexpr int kSamples = 96;
    const bool ag = cs.coll == FGRT_AG_GEMM;
    const long long out_rows = ag ? cs.m : cs.m / P.world;
    std::vector<uint16_t> got(kSamples);
    std::vector<double> ref(kSamples);
    for (int t = 0; t < kSamples; t++) {
        const uint64_t r = fgh_splitmix64(seed + t);
        const long long i = (long long)(r % (uint64_t)out_rows), j = (long long)((r >> 32) % cs.n);
        if (!fgh_ok(cudaMemcpy(&got[t], (ag ? d.c : d.out) + i * cs.n + j, 2,
                               cudaMemcpyDeviceToHost)))
            return INFINITY;
        ref[t] = h.ref(cs, P.world, P.rank, i, j);
    }
    const fgh_err e = fgh_compare(got.data(), FGH_BF16, ref.data(), kSamples);
    return e.nonfinite ? INFINITY : e.rel_l2;
}

// --bench-shapes (at 2 ranks, the TP = 2 defaults below when not given)
std::vector<Shape> bench_shapes;

void bench(fg_context *ctx, const Procs &P, Gemm *g, uint64_t base, const char *json_path,
           bool generated_reduce)
{
    static const Shape tp2[] = {
        {"qkv-m4096", FGRT_AG_GEMM, 4096, 5120, 8192},
        {"o-m4096", FGRT_GEMM_RS, 4096, 8192, 4096},
        {"ag-m4096-k1024", FGRT_AG_GEMM, 4096, 8192, 1024},
        {"fc2-m4096", FGRT_GEMM_RS, 4096, 8192, 14336},
    };
    const std::vector<Shape> cases =
        bench_shapes.empty() ? std::vector<Shape>(std::begin(tp2), std::end(tp2)) : bench_shapes;
    // one copy lane, then on several (the 2D order) where the collective takes
    // them: a lane a peer, and chunk_overlap's pieces a lane each (up to 8);
    // then the hierarchical plan for every node size, on one lane and on a
    // lane a node peer
    const unsigned peers = (unsigned)P.world - 1;
    std::vector<Sched> all_scheds = {{FGRT_SERIAL_CE, 1},     {FGRT_SHARD_OVERLAP, 1},
                                     {FGRT_CHUNK_OVERLAP, 2}, {FGRT_CHUNK_OVERLAP, 4},
                                     {FGRT_CHUNK_OVERLAP, 8}, {FGRT_SHARD_OVERLAP, 1, peers},
                                     {FGRT_CHUNK_OVERLAP, 2, std::min(2 * peers, 8u)},
                                     {FGRT_CHUNK_OVERLAP, 4, std::min(4 * peers, 8u)}};
    constexpr int kOneLane = 5;
    const unsigned world = (unsigned)P.world;
    for (const Sched &sc : hier_scheds(world))
        all_scheds.push_back(sc);
    const int kMaxScheds = (int)all_scheds.size();
    constexpr int kCalls = 5, kReps = 9;
    FILE *jf = P.rank == 0 && json_path ? fopen(json_path, "w") : nullptr;
    fgh_json j;
    if (jf) {
        json_begin(&j, jf, "test_overlap_exec --bench");
        fgh_json_int(&j, "world", P.world);
        fgh_json_str(&j, "method", "one process per GPU, the runtime's executor (CUDA IPC); us "
                                   "per call on rank 0: 5 calls back to back (run, then one "
                                   "wait), host-timed between cross-process barriers; 9 "
                                   "repeats with the parts interleaved; median, min, max; "
                                   "then each schedule checked on 96 sampled outputs");
        fgh_json_str(&j, "reduction", generated_reduce ? "generated overlap_reduce kernel"
                                                       : "the test's reduce callback");
        fgh_json_str(&j, "across", across_by_nccl ? "NCCL (a communicator a place)"
                                                  : "the test's CUDA IPC transport");
        fgh_json_arr_begin(&j, "cases");
    }
    for (const Shape &cs : cases) {
        char what[96];
        snprintf(what, sizeof what, "executor bench %s: rank %d", cs.name, P.rank);
        std::vector<Sched> scheds;
        for (int i = 0; i < kMaxScheds; i++) {   // (a "variant" of one lane repeats one)
            const Sched &sc = all_scheds[i];
            if (sc.nodes ? fgrt_overlap_hier_lanes_valid(cs.coll, world, sc.nodes, sc.lanes)
                         : (i < kOneLane || sc.lanes > 1) &&
                               fgrt_overlap_lanes_valid(cs.coll, sc.s, world, sc.chunks,
                                                        sc.lanes))
                scheds.push_back(sc);
        }
        const int kScheds = (int)scheds.size();
        const int kParts = 1 + kScheds;   // part 0: the unsplit GEMM alone
        Buffers d;
        std::vector<User> u(kScheds + 1);   // the executors', and the unsplit GEMM's
        for (User &e : u)
            e.g = g;
        std::vector<fgrt_overlap *> x(kScheds, nullptr);
        cudaStream_t s = nullptr;
        Host h;
        h.make(cs, P.world, base + 7, 0);
        bool ok = CHECK(what, all_ok(P, d.alloc(cs, P.world, false) && fgh_ok(cudaStreamCreateWithFlags(
                                                                   &s, cudaStreamNonBlocking))));
        // (the hierarchical plan's sums are a node's and the nodes': the
        // callback's, the generated kernel of --kernels being the world's)
        for (int i = 0; i < kScheds && ok; i++)
            ok = CHECK(what, make_executor(ctx, cs, scheds[i], P, d, &u[i], 30.0, &x[i],
                                             generated_reduce && !scheds[i].nodes));
        ok = ok && CHECK(what, all_ok(P, write_inputs(cs, P, d, h)));
        std::vector<std::vector<double>> t(kParts);
        const long long a_rows = cs.m;
        // every rank passes the same barriers: each part starts together and
        // ends with every rank's verdict, so a local failure stops all alike
        for (int rep = -1; rep < kReps && ok; rep++)
            for (int part = 0; part < kParts && ok; part++) {
                all_ok(P, true);
                const double t0 = now_us();
                bool done = true;
                for (int c = 0; c < kCalls && done; c++)
                    done = part == 0 ? gemm_cb(&u[kScheds], s, d.a, nullptr, d.c, a_rows) == 0
                                     : fgrt_overlap_run(x[part - 1], s) == FG_OK;
                done = done && (part == 0 || fgrt_overlap_wait(x[part - 1]) == FG_OK) &&
                       fgh_ok(cudaStreamSynchronize(s));
                const double us = (now_us() - t0) / kCalls;
                ok = all_ok(P, done);
                if (rep >= 0)
                    t[part].push_back(us);
            }
        std::vector<double> err(kScheds, NAN);
        for (int i = 0; i < kScheds && ok; i++) {   // each schedule once more, checked
            ok = all_ok(P, write_inputs(cs, P, d, h));
            ok = all_ok(P, ok && call(x[i], s) == FG_OK);
            err[i] = ok ? sampled_error(cs, P, d, h, base + 31 * i) : INFINITY;
            char name[160];
            snprintf(name, sizeof name, "%s: %s on sampled outputs", what,
                     sched_name(scheds[i]).c_str());
            CHECKF(name, err[i] <= 1e-2, "rel L2 %.3e", err[i]);
        }
        CHECK(what, ok);
        if (ok && P.rank == 0) {
            std::vector<std::string> names(kParts, "gemm");
            for (int p = 1; p < kParts; p++)
                names[p] = part_key(scheds[p - 1]);
            std::vector<double> med(kParts), lo(kParts), hi(kParts);
            for (int p = 0; p < kParts; p++) {
                med[p] = fgh_median(t[p].data(), (int)t[p].size());   // sorts
                lo[p] = t[p].front(), hi[p] = t[p].back();
            }
            printf("%-16s %s M=%5lld N=%5lld K=%5lld  gemm %7.1f ", cs.name,
                   coll_name(cs), cs.m, cs.n, cs.k, med[0]);
            for (int p = 1; p < kParts; p++)
                printf(" %s %7.1f (%.2fx)", names[p].c_str(), med[p], med[p] / med[0]);
            printf("  us\n");
            if (jf) {
                fgh_json_obj_begin(&j, nullptr);
                fgh_json_str(&j, "name", cs.name);
                fgh_json_str(&j, "collective",
                             cs.coll == FGRT_AG_GEMM ? "all_gather" : "reduce_scatter");
                fgh_json_int(&j, "m", cs.m), fgh_json_int(&j, "n", cs.n);
                fgh_json_int(&j, "k", cs.k);
                for (int p = 0; p < kParts; p++) {
                    fgh_json_obj_begin(&j, names[p].c_str());
                    fgh_json_num(&j, "median_us", med[p]);
                    fgh_json_num(&j, "min_us", lo[p]);
                    fgh_json_num(&j, "max_us", hi[p]);
                    if (p > 0)
                        fgh_json_num(&j, "sampled_rel_l2", err[p - 1]);
                    fgh_json_obj_end(&j);
                }
                fgh_json_obj_end(&j);
            }
        }
        for (auto *e : x)
            fgrt_overlap_destroy(e);
        for (User &e : u)
            e.close_across();
        if (s)
            cudaStreamDestroy(s);
        d.free_all();
        if (!all_ok(P, ok))
            break;
    }
    if (jf) {
        fgh_json_arr_end(&j);
        fgh_json_clocks(&j);
        fgh_json_obj_end(&j);
        fclose(jf);
    }
}

// Everything one rank does; returns when the rank is done.
void rank_main(const Procs &P, uint64_t base, bool do_bench, const char *json,
               const Generated *gen, const Generated *fused)
{
    fg_context *ctx = nullptr;
    Gemm g;
    fg_kernel_entry reg[2];   // the engine's registry: what --kernels has of these two
    size_t nreg = 0;
    if (gen)
        reg[nreg++] = gen->e;
    if (fused)
        reg[nreg++] = fused->e;
    const bool ok = fgh_ok(cudaSetDevice(P.device)) &&
                    CHECK("fg_init", fg_init(nreg ? reg : nullptr, nreg, P.device, &ctx) == FG_OK) &&
                    fgh_ok(cudaDeviceGetAttribute(&g.sms, cudaDevAttrMultiProcessorCount,
                                                  P.device)) &&
                    lt_open(&g.lt);
    if (all_ok(P, ok)) {
        if (do_bench) {
            bench(ctx, P, &g, base, json, gen != nullptr);
        } else {
            const long long m = check_rows(P, 512);
            const Shape cases[] = {
                {"ag", FGRT_AG_GEMM, m, 384, 320},
                {"rs", FGRT_GEMM_RS, m, 384, 320},
            };
            static const Sched scheds[] = {{FGRT_SERIAL_CE, 1},     {FGRT_SHARD_OVERLAP, 1},
                                           {FGRT_CHUNK_OVERLAP, 2}, {FGRT_CHUNK_OVERLAP, 4},
                                           {FGRT_CHUNK_OVERLAP, 8}};
            int i = 0;
            for (const Shape &cs : cases)
                for (const Sched &sched : scheds) {
                    check_case(ctx, P, &g, cs, sched, base + 1000 * ++i, false);
                    // (RS chunk_overlap adds in its GEMMs: no reduction to choose)
                    if (cs.coll == FGRT_GEMM_RS && gen && sched.s != FGRT_CHUNK_OVERLAP)
                        check_case(ctx, P, &g, cs, sched, base + 1000 * ++i, true);
                }
            // several copy lanes (the 2D order): AG's 4 pieces of each peer's
            // block, RS's partials, each on lanes of their own (one lane a
            // peer where there are more peers than one; RS's ring takes one)
            const unsigned peers = (unsigned)P.world - 1;
            const unsigned piece_lanes = 4 * peers < FGRT_MAX_LANES ? 4 * peers : FGRT_MAX_LANES;
            check_case(ctx, P, &g, cases[0], {FGRT_CHUNK_OVERLAP, 4, piece_lanes},
                       base + 1000 * ++i, false);
            if (peers > 1 && peers <= FGRT_MAX_LANES)
                for (const Shape &cs : cases)
                    check_case(ctx, P, &g, cs, {FGRT_SHARD_OVERLAP, 1, peers}, base + 1000 * ++i,
                               cs.coll == FGRT_GEMM_RS && gen);
            // the hierarchical plan (hier_scheds), the step between nodes by
            // NCCL or the test's own transport (across_by_nccl), its reduction
            // the callback's (the generated one of --kernels is the world's,
            // not a node's)
            for (const Sched &sc : hier_scheds((unsigned)P.world))
                for (const Shape &cs : cases)
                    check_case(ctx, P, &g, cs, sc, base + 1000 * ++i, false);
            if (P.world >= 4 && P.world % 2 == 0)
                check_deterministic(ctx, P, &g, cases[1], {FGRT_SHARD_OVERLAP, 1, 1, 2}, false,
                                    base + 8900);
            check_deterministic(ctx, P, &g, cases[0], {FGRT_SHARD_OVERLAP, 1}, false, base + 8000);
            check_deterministic(ctx, P, &g, cases[1], {FGRT_SHARD_OVERLAP, 1}, gen != nullptr,
                                base + 8500);
            check_deterministic(ctx, P, &g, cases[0], {FGRT_CHUNK_OVERLAP, 4}, false, base + 8600);
            check_deterministic(ctx, P, &g, cases[1], {FGRT_CHUNK_OVERLAP, 4}, false, base + 8700);
            for (unsigned chunks : {2u, 4u})
                for (fgrt_collective coll : {FGRT_AG_GEMM, FGRT_GEMM_RS})
                    if (fused)
                        check_fused(ctx, P, &g, fused->e, coll, chunks, 1,
                                    coll == FGRT_GEMM_RS && gen != nullptr,
                                    base + 7000 + 100 * chunks + 50 * coll);
            for (fgrt_collective coll : {FGRT_AG_GEMM, FGRT_GEMM_RS})   // pieces on 2 lanes
                if (fused)
                    check_fused(ctx, P, &g, fused->e, coll, 2, 2, false, base + 7800 + 50 * coll);
            check_timeout(ctx, P, &g, base + 9000);
            if (!no_faults)
                check_injected_all(ctx, P, &g, fused ? &fused->e : nullptr, base + 10000);
            else if (P.rank == 0)
                fgh_skip("executor: injected failures", "--no-faults");
        }
    }
    lt_close(&g.lt);
    fg_shutdown(ctx);
}

#endif   // FG_HAVE_FGRT

// GPUs, counted in a child so that this process has not touched CUDA when
// it forks the ranks.
int count_gpus()
{
    int fd[2];
    if (pipe(fd) != 0)
        return 0;
    const pid_t pid = fork();
    if (pid == 0) {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess)
            n = 0;
        write_all(fd[1], &n, sizeof n);
        _exit(0);
    }
    close(fd[1]);
    int n = 0;
    if (pid < 0 || !read_all(fd[0], &n, sizeof n))
        n = 0;
    close(fd[0]);
    if (pid > 0)
        waitpid(pid, nullptr, 0);
    return n;
}

}   // namespace

int main(int argc, char **argv)
{
    bool do_bench = false;
    int world = 0;   // --world: ranks (processes) over the GPUs; 0: one a GPU (2 on one)
    const char *json = nullptr, *kernels = nullptr, *manifest = nullptr, *shapes = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verbose"))
            fgh_set_verbose(true);
        else if (!strcmp(argv[i], "--bench"))
            do_bench = true;
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--no-faults"))
            no_faults = true;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            kernels = argv[++i];
        else if (!strcmp(argv[i], "--manifest") && i + 1 < argc)
            manifest = argv[++i];
        else if (!strcmp(argv[i], "--world") && i + 1 < argc && atoi(argv[i + 1]) >= 2 &&
                 atoi(argv[i + 1]) <= kMaxWorld)
            world = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bench-shapes") && i + 1 < argc)
            shapes = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--verbose] [--quick] [--no-faults] [--world N (2..%d)] "
                    "[--kernels DIR [--manifest FILE]] [--bench [--json FILE] "
                    "[--bench-shapes NAME:all_gather|reduce_scatter:MxNxK,...]]\n",
                    argv[0], kMaxWorld);
            return 2;
        }
    }
    static std::vector<std::string> shape_names;   // bench_shapes points into it
    if (shapes && !parse_bench_shapes(shapes, &bench_shapes, &shape_names))
        return 2;
#ifndef FG_HAVE_FGRT
    fgh_skip("overlap executor", "built without libfgrt");
    return fgh_summary() ? 1 : 0;
#else
    const int gpus = count_gpus();
    if (gpus < 1 || (gpus < 2 && do_bench)) {
        fgh_skip(do_bench ? "overlap executor bench, one process per GPU"
                          : "overlap executor, processes on a GPU",
                 gpus < 1 ? "no GPU in this machine" : "the bench needs 2 GPUs in this machine");
        return fgh_summary() ? 1 : 0;
    }
    setvbuf(stdout, nullptr, _IOLBF, 0);
    Procs P;
    P.world = world ? world : gpus < 2 ? 2 : gpus < kMaxWorld ? gpus : kMaxWorld;
    if (do_bench && (P.world > gpus || (P.world > 2 && bench_shapes.empty()))) {
        // a GPU a rank; past 2 ranks the shapes of that world, from --bench-shapes
        printf("overlap executor bench: %s: at 2 ranks, the TP = 2 shapes\n",
               P.world > gpus ? "fewer GPUs than ranks"
                              : "no --bench-shapes for that world (fusegen shapes SPEC)");
        P.world = 2;
        bench_shapes.clear();
    }
    if (P.world > gpus)
        printf("overlap executor: %d GPU(s): %d ranks, rank r on GPU r %% %d\n", gpus, P.world,
               gpus);
#ifdef FG_HAVE_NCCL
    across_by_nccl = P.world <= gpus;   // (NCCL takes no two ranks of a communicator on a GPU)
#endif
    if (P.world >= 4)
        printf("overlap executor: the hierarchical plan's step between nodes by %s\n",
               across_by_nccl ? "NCCL" : "the test's own CUDA IPC transport (ranks share GPUs, "
                                         "or built without NCCL)");
    const uint64_t base = fgh_base_seed();
    static Generated gen, fused;
    char why[1200], why_fused[1200];
    const bool have_gen = load_generated(kernels, manifest, P.world, &gen, why, sizeof why);
    const bool have_fused = load_fused_gemm(kernels, manifest, &fused, why_fused, sizeof why_fused);
    // a rank that died must not take the others with it (a write to its
    // pipe), and none may hang for ever: every process ends by this alarm
    signal(SIGPIPE, SIG_IGN);
    alarm(1200);
    pid_t kids[kMaxWorld] = {};
    for (int c = 1; c < P.world; c++) {
        int down[2], up[2];
        if (pipe(down) != 0 || pipe(up) != 0) {
            perror("pipe");
            return 1;
        }
        kids[c] = fork();
        if (kids[c] < 0) {
            perror("fork");
            return 1;
        }
        if (kids[c] == 0) {   // rank c
            Procs me;
            me.rank = c, me.world = P.world, me.device = c % gpus;
            me.up_w = up[1], me.down_r = down[0];
            close(up[0]), close(down[1]);
            for (int o = 1; o < c; o++)
                close(P.down_w[o]), close(P.up_r[o]);
            rank_main(me, base, do_bench, nullptr, have_gen ? &gen : nullptr,
                      have_fused ? &fused : nullptr);
            const int counts[3] = {fgh_passed_count(), fgh_failed_count(), fgh_skipped_count()};
            write_all(me.up_w, counts, sizeof counts);
            _exit(0);
        }
        close(up[1]), close(down[0]);
        P.down_w[c] = down[1], P.up_r[c] = up[0];
    }
    // skips here, once: the children's counts are added below
    if (!have_gen)
        fgh_skip("executor with the generated reduction", why);
    if (!have_fused && !do_bench)
        fgh_skip("executor chunk_fused (the generated GEMM)", why_fused);
    if (gpus < 2)
        fgh_skip("overlap executor between 2 GPUs (peer access, copies from GPU to GPU)",
                 "1 GPU in this machine; the checks run with both ranks on it");
    rank_main(P, base, do_bench, json, have_gen ? &gen : nullptr, have_fused ? &fused : nullptr);
    for (int c = 1; c < P.world; c++) {
        int counts[3];
        const bool lost = !read_all(P.up_r[c], counts, sizeof counts);
        if (lost)
            kill(kids[c], SIGKILL);
        else
            fgh_add_counts(counts[0], counts[1], counts[2]);
        int status = 0;
        waitpid(kids[c], &status, 0);
        CHECKF("a rank's process ended normally", !lost && WIFEXITED(status), "rank %d", c);
    }
    return fgh_summary() ? 1 : 0;
#endif
}
