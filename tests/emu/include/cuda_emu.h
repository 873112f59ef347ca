// A host emulation of what the generated sm_90a kernels take from CUDA and
// from their preludes, on the emulation's core (emu_core.h: fibers for
// threads, warps of 32 lanes exchanging values, cooperative launches with
// every block at once).  tests/emu/run.sh cuts a generated .cu source's
// prelude.cu.in and sm90.cu.in sections out (their `#line` marks) and puts
// `#include "cuda_emu.h"` in their place, after the instance's FG_DTYPE_
// define; the template's own code (prelude_common.in, the kernel) is
// compiled as it is.  What stands in for the hardware:
//  - the 16-bit storage types as their bits, rounded to nearest even;
//  - shared addresses (smem_addr) as offsets into the block's dynamic shared
//    memory, the only shared memory these kernels address that way;
//  - mbarriers in their own 8 bytes: pending arrivals, the count a phase
//    expects, the transaction bytes to come, the phase's parity;
//  - bulk copies queued: the destination poisoned (0xff: NaN) when one is
//    issued, the bytes landing (and completing their mbarrier's transaction
//    bytes) only when a thread tries that mbarrier's phase and finds it not
//    complete, so a read of a slot that did not wait for its phase shows;
//  - cp.async copies queued by thread and commit group, the destination
//    poisoned until a wait lands them;
//  - named barriers counting threads; ldmatrix and mma.sync m16n8k16 as the
//    PTX ISA lays out their fragments, over the warp's lanes (fp32 sums);
//  - acquire loads and acq_rel adds as the host's atomics (the add followed
//    by the lagging block's pause);
//  - wgmma (m64n64k16 from shared memory, m64n128k16 with A from
//    registers) run at the wait that covers it, its operands through the
//    kernels' descriptors;
//  - clusters: their blocks all at once, each other's shared memory, the
//    cluster barrier, remote mbarrier arrivals;
//  - TMA loads of the MLA core's maps (emu_rows_map: boxes of whole rows,
//    and 2D boxes one 128-byte line wide), landed as bulk copies are.
// Not emulated: TMA stores (a call traps); a box of another shape faults.
#ifndef FG_EMU_CUDA_H
#define FG_EMU_CUDA_H

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <type_traits>
#include <vector>

#include "emu_core.h"
#include "emu_runtime.h"

// ---- CUDA ----
constexpr int kEmuWave = 32;   // lanes a warp (the launches take it: emu_runtime.h)
struct __attribute__((aligned(16))) uint4 {
    unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
struct __attribute__((aligned(8))) uint2 {
    unsigned x, y;
};
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }

struct __half {
    uint16_t x;
};
struct __nv_bfloat16 {
    uint16_t x;
};
struct __half2 {
    __half x, y;
};
struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
// A value's bits as another type of the same size (C++20's bit_cast; the
// shim is C++17).
template <class To, class From> To emu_bit_cast(const From &v)
{
    static_assert(sizeof(To) == sizeof(From), "the bits alone");
    To t;
    std::memcpy(&t, &v, sizeof t);
    return t;
}
inline unsigned __float_as_uint(float f) { return emu_bit_cast<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return emu_bit_cast<float>(u); }
inline float __half2float(__half h) { return (float)emu_bit_cast<_Float16>(h.x); }
inline __half __float2half_rn(float v)
{
    return {emu_bit_cast<uint16_t>((_Float16)v)};   // (the host's conversion rounds to nearest even)
}
inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((uint32_t)b.x << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float v)
{
    uint32_t u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u)   // NaN stays NaN
        return {(uint16_t)((u >> 16) | 0x40u)};
    u += 0x7fffu + ((u >> 16) & 1u);
    return {(uint16_t)(u >> 16)};
}
inline __half2 __hmul2(__half2 a, __half2 b)
{
    return {__float2half_rn(__half2float(a.x) * __half2float(b.x)),
            __float2half_rn(__half2float(a.y) * __half2float(b.y))};
}
inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b)
{
    return {__float2bfloat16_rn(__bfloat162float(a.x) * __bfloat162float(b.x)),
            __float2bfloat16_rn(__bfloat162float(a.y) * __bfloat162float(b.y))};
}

// atomicAdd on a float: a compare-and-swap of its bits (blocks run on
// host threads of their own)
inline float atomicAdd(float *p, float v)
{
    uint32_t *bits = reinterpret_cast<uint32_t *>(p);
    uint32_t old = __atomic_load_n(bits, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(bits, &old, __float_as_uint(__uint_as_float(old) + v), false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return __uint_as_float(old);
}
// atomicMax on an unsigned: the same compare-and-swap loop
inline unsigned atomicMax(unsigned *p, unsigned v)
{
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
template <class T> T __ldcg(const T *p) { return *p; }
template <class T> T __ldcs(const T *p) { return *p; }
template <class T> void __stcg(T *p, T v) { *p = v; }
inline int emu_lane() { return (int)(threadIdx.x % 32); }
template <class T> T __shfl_sync(unsigned, T v, int src)
{
    const unsigned char *all = emu_wave_exchange(&v, sizeof v);
    T out;
    std::memcpy(&out, all + (size_t)(src & 31) * sizeof v, sizeof v);
    return out;
}
template <class T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask)
{
    return __shfl_sync(mask, v, emu_lane() ^ lane_mask);
}
template <class T> T __shfl_up_sync(unsigned mask, T v, unsigned delta)
{
    const int lane = emu_lane();
    return __shfl_sync(mask, v, lane >= (int)delta ? lane - (int)delta : lane);
}
inline void __syncwarp(unsigned = 0xffffffffu) { emu_wave_barrier(); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
// a warp's collectives (REDUX on sm_80 and later, VOTE): the lanes' values
// folded in lane order
template <class T, class F> T emu_reduce(T v, F fold)
{
    const unsigned char *all = emu_wave_exchange(&v, sizeof v);
    T acc;
    std::memcpy(&acc, all, sizeof acc);
    for (int l = 1; l < 32; l++) {
        T x;
        std::memcpy(&x, all + (size_t)l * sizeof x, sizeof x);
        acc = fold(acc, x);
    }
    return acc;
}
inline unsigned __reduce_max_sync(unsigned, unsigned v)
{
    return emu_reduce(v, [](unsigned a, unsigned b) { return a > b ? a : b; });
}
inline int __reduce_add_sync(unsigned, int v)
{
    return emu_reduce(v, [](int a, int b) { return a + b; });
}
inline unsigned __ballot_sync(unsigned, int pred)
{
    return emu_reduce((pred != 0 ? 1u : 0u) << emu_lane(), [](unsigned a, unsigned b) { return a | b; });
}
inline int __all_sync(unsigned, int pred)
{
    const int mine = pred != 0;
    const unsigned char *all = emu_wave_exchange(&mine, sizeof mine);
    for (int l = 0; l < 32; l++) {
        int v;
        std::memcpy(&v, all + (size_t)l * sizeof v, sizeof v);
        if (!v)
            return 0;
    }
    return 1;
}
// Byte n of the result: byte (s >> 4n) & 7 of y:x (x's bytes 0-3, y's 4-7).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s)
{
    const uint64_t in = (uint64_t)y << 32 | x;
    unsigned r = 0;
    for (int n = 0; n < 4; n++)
        r |= (unsigned)(in >> 8 * ((s >> 4 * n) & 7u) & 0xffu) << 8 * n;
    return r;
}
inline void __nanosleep(unsigned) { emu_yield(); }
[[noreturn]] inline void __trap()
{
    std::fprintf(stderr, "__trap (block %u, thread %u)\n", blockIdx.x, threadIdx.x);
    std::abort();
}
[[noreturn]] inline void emu_unsupported(const char *what)
{
    std::fprintf(stderr, "not emulated: %s\n", what);
    std::abort();
}
// What the hardware would not take either (the kernel's bug).
[[noreturn]] inline void emu_fault(const char *what)
{
    std::fprintf(stderr, "kernel fault (block %u, thread %u): %s\n", blockIdx.x, threadIdx.x, what);
    std::abort();
}

// ---- prelude.cu.in ----
#define FG_DEVICE inline
#define FG_WARP_SIZE 32

#if defined(FG_DTYPE_F16)
typedef __half fg_t;
FG_DEVICE float fg_to_float(fg_t v) { return __half2float(v); }
FG_DEVICE fg_t fg_from_float(float v) { return __float2half_rn(v); }
#else
typedef __nv_bfloat16 fg_t;
FG_DEVICE float fg_to_float(fg_t v) { return __bfloat162float(v); }
FG_DEVICE fg_t fg_from_float(float v) { return __float2bfloat16_rn(v); }
#endif

typedef uint4 fg_vec16;
#define FG_VEC_ELEMS 8

FG_DEVICE fg_vec16 fg_load_stream(const fg_vec16 *p) { return *p; }
FG_DEVICE fg_vec16 fg_load(const fg_vec16 *p) { return *p; }
FG_DEVICE void fg_store(fg_vec16 *p, fg_vec16 v) { *p = v; }
FG_DEVICE float fg_vec_get(const fg_vec16 &v, int i)
{
    return fg_to_float(reinterpret_cast<const fg_t *>(&v)[i]);
}
FG_DEVICE void fg_vec_set(fg_vec16 &v, int i, float f) { reinterpret_cast<fg_t *>(&v)[i] = fg_from_float(f); }
FG_DEVICE float fg_shfl_xor(float v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }
FG_DEVICE float fg_shfl(float v, int src) { return __shfl_sync(0xffffffffu, v, src); }
FG_DEVICE int fg_shfl(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }
FG_DEVICE void fg_wave_sync() { __syncwarp(); }
FG_DEVICE void fg_release_writes() {}
FG_DEVICE unsigned fg_add_acq_rel(unsigned *p, unsigned v)
{
    return emu_atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}
// (each acquire load lets the other fibers run: a poll's pause is in it)
FG_DEVICE unsigned fg_load_acquire(const unsigned *p) { return emu_atomic_load(p, __ATOMIC_ACQUIRE, 0); }
FG_DEVICE void fg_pause() {}
FG_DEVICE void fg_trap() { __trap(); }
template <class T> FG_DEVICE T fg_ws_load(const T *p) { return *p; }
template <class T> FG_DEVICE void fg_ws_store(T *p, T v) { *p = v; }

// ---- sm90.cu.in ----
// The kernel's `__shared__ Smem s` where run.sh made it a reference to this
// block's buffer (the cluster forms; see the clusters below), else null.
inline thread_local unsigned char *emu_static_smem;
// Shared addresses: the dynamic shared memory's from 0, the static buffer's
// from kEmuStaticBase.
constexpr uint32_t kEmuStaticBase = 1u << 24;
FG_DEVICE uint32_t smem_addr(const void *p)
{
    const unsigned char *b = static_cast<const unsigned char *>(p);
    if (b >= emu_dyn_smem && b - emu_dyn_smem < (ptrdiff_t)kEmuStaticBase)
        return (uint32_t)(b - emu_dyn_smem);
    if (emu_static_smem && b >= emu_static_smem && b - emu_static_smem < (ptrdiff_t)kEmuStaticBase)
        return kEmuStaticBase + (uint32_t)(b - emu_static_smem);
    emu_unsupported("a shared address outside the block's shared memory");
}
FG_DEVICE unsigned char *emu_smem_at(uint32_t addr)
{
    return addr >= kEmuStaticBase ? emu_static_smem + (addr - kEmuStaticBase) : emu_dyn_smem + addr;
}

// An mbarrier's state, in its own 8 bytes of shared memory.
struct EmuMbar {
    uint32_t pending : 16, expected : 16;
    int32_t tx : 31;
    uint32_t phase : 1;
};
static_assert(sizeof(EmuMbar) == 8, "an mbarrier's 8 bytes");
FG_DEVICE EmuMbar &emu_mbar(uint64_t *bar) { return *reinterpret_cast<EmuMbar *>(bar); }
// Every mbarrier operation holds it: a cluster peer's arrival runs on another
// host thread (and its release and acquire order the shared memory between).
inline std::mutex emu_mbar_lock;
FG_DEVICE void emu_mbar_settle(EmuMbar &m)
{
    if (m.pending == 0 && m.tx == 0)   // the phase completes
        m.phase ^= 1u, m.pending = m.expected;
}
// The block's bulk copies in flight.  They land as late as they may: when a
// thread tries their mbarrier's phase and finds it not complete, so that a
// read of a slot that did not wait for its phase finds it poisoned.
struct EmuCopy {
    void *dst;
    const void *src;
    unsigned bytes;
    uint64_t *bar;
};
inline thread_local std::vector<EmuCopy> emu_copies;
FG_DEVICE void emu_land_copies(uint64_t *bar)
{
    size_t kept = 0;
    for (const EmuCopy &c : emu_copies) {
        if (c.bar != bar) {
            emu_copies[kept++] = c;
            continue;
        }
        std::memcpy(c.dst, c.src, c.bytes);
        EmuMbar &m = emu_mbar(c.bar);
        m.tx = m.tx - (int32_t)c.bytes;
        emu_mbar_settle(m);
    }
    emu_copies.resize(kept);
}
FG_DEVICE void mbar_init(uint64_t *bar, unsigned count)
{
    const std::lock_guard<std::mutex> hold(emu_mbar_lock);
    emu_mbar(bar) = EmuMbar{(uint32_t)count, (uint32_t)count, 0, 0};
}
FG_DEVICE void emu_mbar_arrive(uint64_t *bar)   // (the lock held)
{
    EmuMbar &m = emu_mbar(bar);
    if (m.pending == 0)
        emu_fault("an arrival on an mbarrier with none pending");
    m.pending = m.pending - 1;
    emu_mbar_settle(m);
}
FG_DEVICE void mbar_expect(uint64_t *bar, unsigned bytes)
{
    const std::lock_guard<std::mutex> hold(emu_mbar_lock);
    emu_mbar(bar).tx = emu_mbar(bar).tx + (int32_t)bytes;
    emu_mbar_arrive(bar);
}
FG_DEVICE void mbar_arrive(uint64_t *bar)
{
    const std::lock_guard<std::mutex> hold(emu_mbar_lock);
    emu_mbar_arrive(bar);
}
FG_DEVICE void mbar_init_fence() {}
template <bool CLUSTER_SCOPE> FG_DEVICE bool mbar_try(uint64_t *bar, unsigned parity)
{
    {
        const std::lock_guard<std::mutex> hold(emu_mbar_lock);
        // (the phase of that parity has completed)
        const auto done = [&] { return emu_mbar(bar).phase != (parity & 1u); };
        if (done())
            return true;
        emu_land_copies(bar);
        if (done())
            return true;
    }
    emu_yield();
    return false;
}
template <bool CLUSTER_SCOPE = false, int LIMIT_LOG2 = 32>
FG_DEVICE void mbar_wait(uint64_t *bar, unsigned parity)
{
    const long long start = clock64();
    while (!mbar_try<CLUSTER_SCOPE>(bar, parity))
        if (clock64() - start > (1ll << LIMIT_LOG2))
            __trap();
}

FG_DEVICE void bulk_copy(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    if (bytes % 16)
        emu_fault("a bulk copy of bytes not a multiple of 16");
    smem_addr(dst), smem_addr(bar);   // (both in the block's shared memory)
    std::memset(dst, 0xff, bytes);    // NaN until it lands
    emu_copies.push_back({dst, src, bytes, bar});
}
FG_DEVICE void bulk_copy_once(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    bulk_copy(dst, src, bytes, bar);
}
template <bool kOnce>
FG_DEVICE void bulk_copy_once_if(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    bulk_copy(dst, src, bytes, bar);
}
FG_DEVICE void bulk_prefetch_l2(const void *, unsigned) {}

// Named barriers 1..15 (0 is __syncthreads'), counting threads.
struct EmuNamed {
    int arrived = 0, gen = 0;
};
inline thread_local EmuNamed emu_named[16];
FG_DEVICE void emu_named_arrive(EmuNamed &b, int threads)
{
    if (++b.arrived == threads)
        b.arrived = 0, b.gen++;
}
// (an arrival lets the others run: the threads it releases may overtake
// the arriving one, as on the hardware)
FG_DEVICE void named_arrive(int id, int threads)
{
    emu_named_arrive(emu_named[id], threads);
    emu_yield();
}
FG_DEVICE void named_sync(int id, int threads)
{
    EmuNamed &b = emu_named[id];
    const int gen = b.gen;
    emu_named_arrive(b, threads);
    while (b.gen == gen)
        emu_yield();
}
FG_DEVICE void st_shared_u32(unsigned addr, unsigned v) { std::memcpy(emu_smem_at(addr), &v, 4); }
FG_DEVICE void fence_proxy_async() {}
template <int ID, int THREADS> FG_DEVICE void bar_sync_aligned() { named_sync(ID, THREADS); }
FG_DEVICE void fence_acq_rel_cluster() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// Clusters: a launch with clusters runs every block at once
// (emu_run_cooperative), its clusters along x (cluster c: blocks c size ..
// in x-major order, the grid's x a multiple of size), and the launcher fills
// emu_clusters first.  A block reaches its peers' shared memory (the
// dynamic, and the kernel's `__shared__ Smem s`, which run.sh turns into a
// reference to emu_static_smem), arrives on their mbarriers, and meets them
// at the cluster barrier (every thread of the cluster's blocks).
struct EmuClusterBarrier {
    std::atomic<int> arrived{0}, gen{0};
};
struct EmuClusters {
    unsigned size = 1;                      // blocks a cluster
    unsigned char *const *dyn = nullptr;    // block w's dynamic shared memory (w x-major)
    unsigned char *const *stat = nullptr;   // block w's `__shared__ Smem s`
    size_t dyn_bytes = 0, stat_bytes = 0;
    EmuClusterBarrier *barriers = nullptr;  // cluster c's
};
inline EmuClusters emu_clusters;
inline thread_local int emu_cluster_gen[1024];   // the barrier's phase each thread arrived in
FG_DEVICE unsigned emu_block_id() { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }
FG_DEVICE EmuClusterBarrier &emu_cluster_barrier()
{
    if (!emu_clusters.barriers)
        emu_unsupported("a cluster barrier in a launch without clusters");
    return emu_clusters.barriers[emu_block_id() / emu_clusters.size];
}
// Address p of this block's shared memory in cluster rank r's.
template <class T> FG_DEVICE T *emu_map_shared(T *p, unsigned r)
{
    if (r >= emu_clusters.size || !emu_clusters.dyn)
        emu_fault("a cluster rank past the cluster's blocks");
    const unsigned peer = emu_block_id() - blockIdx.x % emu_clusters.size + r;
    unsigned char *b = reinterpret_cast<unsigned char *>(const_cast<std::remove_cv_t<T> *>(p));
    if (b >= emu_dyn_smem && b < emu_dyn_smem + emu_clusters.dyn_bytes)
        return reinterpret_cast<T *>(emu_clusters.dyn[peer] + (b - emu_dyn_smem));
    if (emu_static_smem && b >= emu_static_smem && b < emu_static_smem + emu_clusters.stat_bytes)
        return reinterpret_cast<T *>(emu_clusters.stat[peer] + (b - emu_static_smem));
    emu_fault("a pointer outside the block's shared memory mapped to a peer's");
}
FG_DEVICE void cluster_arrive()
{
    EmuClusterBarrier &c = emu_cluster_barrier();
    emu_cluster_gen[threadIdx.x] = c.gen.load();
    if (c.arrived.fetch_add(1) + 1 == (int)(blockDim.x * emu_clusters.size)) {
        c.arrived.store(0);
        c.gen.fetch_add(1);
    }
}
FG_DEVICE void cluster_wait()
{
    EmuClusterBarrier &c = emu_cluster_barrier();
    while (c.gen.load() == emu_cluster_gen[threadIdx.x])
        emu_yield();
}
// A launch of `grid` in clusters of `cluster` along x, every block at once
// on a host thread of its own: block w's dynamic shared memory smem[w]
// (dyn_bytes), its `__shared__ Smem s` stat[w] (stat_bytes; null: none).
inline void emu_run_clusters(emu_dim3 grid, unsigned cluster, int threads, unsigned char *const *smem,
                             size_t dyn_bytes, unsigned char *const *stat, size_t stat_bytes, void (*fn)())
{
    std::vector<EmuClusterBarrier> barriers(grid.x * grid.y * grid.z / cluster);
    emu_clusters = {cluster, smem, stat, dyn_bytes, stat_bytes, barriers.data()};
    emu_run_cooperative(grid, threads, kEmuWave, smem, fn);
    emu_clusters = {};
}
FG_DEVICE void mbar_arrive_remote(uint64_t *bar, unsigned r)
{
    uint64_t *peer = emu_map_shared(bar, r);
    const std::lock_guard<std::mutex> hold(emu_mbar_lock);
    emu_mbar_arrive(peer);
}

// cp.async: a thread's 16-byte copies in flight, in commit groups; the
// destination poisoned (0xff: NaN) from the issue until a wait lands the
// copy (its source read at the issue), so a read of shared memory that no
// wait covers, or a copy into memory still being read, shows.
struct EmuAsyncCopy {
    unsigned dst;
    unsigned group;   // the thread's commit group (those committed so far: the open one)
    unsigned char bytes[16];
};
struct EmuAsyncCopies {
    unsigned committed = 0;
    std::vector<EmuAsyncCopy> flight;
};
inline thread_local EmuAsyncCopies emu_async[1024];   // a block's threads'
FG_DEVICE void cp_async_commit() { emu_async[threadIdx.x].committed++; }
// Lands this thread's copies of the groups before `group`.
FG_DEVICE void emu_async_land(unsigned group)
{
    EmuAsyncCopies &a = emu_async[threadIdx.x];
    size_t kept = 0;
    for (const EmuAsyncCopy &c : a.flight)
        if (c.group < group)
            std::memcpy(emu_smem_at(c.dst), c.bytes, 16);
        else
            a.flight[kept++] = c;
    a.flight.resize(kept);
}
// all but the newest N committed groups
template <int N> FG_DEVICE void cp_async_wait_group()
{
    const unsigned c = emu_async[threadIdx.x].committed;
    emu_async_land(c > (unsigned)N ? c - N : 0);
}
FG_DEVICE void cp_async_wait_all() { emu_async_land(~0u); }
template <int DST, int SRC> FG_DEVICE void cp_async16_at(unsigned dst, const void *src)
{
    EmuAsyncCopy c = {dst + DST, emu_async[threadIdx.x].committed, {}};
    std::memcpy(c.bytes, static_cast<const unsigned char *>(src) + SRC, 16);
    std::memset(emu_smem_at(c.dst), 0xff, 16);
    emu_async[threadIdx.x].flight.push_back(c);
}
FG_DEVICE void cp_async16(void *dst, const void *src) { cp_async16_at<0, 0>(smem_addr(dst), src); }

// ldmatrix .x4: lanes 8 i .. 8 i + 7 give matrix i's rows (16 bytes each);
// lane l gets row l / 4's elements 2 (l % 4) and + 1 of each matrix, or
// with .trans those of column l / 4 at rows 2 (l % 4) and + 1.
FG_DEVICE void emu_ldmatrix_x4(unsigned r[4], const unsigned char *row, bool trans)
{
    const unsigned char *all = emu_wave_exchange(&row, sizeof row);
    const unsigned char *rows[32];
    std::memcpy(rows, all, sizeof rows);
    const int lane = emu_lane(), g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; i++) {
        uint16_t lo, hi;
        if (trans) {
            std::memcpy(&lo, rows[8 * i + 2 * t] + 2 * g, 2);
            std::memcpy(&hi, rows[8 * i + 2 * t + 1] + 2 * g, 2);
        } else {
            std::memcpy(&lo, rows[8 * i + g] + 4 * t, 2);
            std::memcpy(&hi, rows[8 * i + g] + 4 * t + 2, 2);
        }
        r[i] = (unsigned)lo | (unsigned)hi << 16;
    }
}
FG_DEVICE void ldmatrix_x4_at(unsigned r[4], unsigned addr) { emu_ldmatrix_x4(r, emu_smem_at(addr), false); }
FG_DEVICE void ldmatrix_x4(unsigned r[4], const void *p) { ldmatrix_x4_at(r, smem_addr(p)); }
FG_DEVICE void ldmatrix_x4_trans(unsigned r[4], const void *p)
{
    emu_ldmatrix_x4(r, emu_smem_at(smem_addr(p)), true);
}

// d += a . b, m16n8k16 (A row-major 16 x 16, B column-major 16 x 8): with g
// = lane / 4, t = lane % 4, a[0..3] hold A's (g, 2t..), (g + 8, 2t..),
// (g, 2t + 8..), (g + 8, 2t + 8..); b[0..1] B's (2t.., g), (2t + 8.., g);
// d[0..3] D's (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1).
FG_DEVICE float emu_half_of(unsigned w, int hi)
{
    return fg_to_float(emu_bit_cast<fg_t>((uint16_t)(hi ? w >> 16 : w)));
}
FG_DEVICE void mma16816(float d[4], const unsigned a[4], const unsigned b[2])
{
    struct Frag {
        unsigned a[4], b[2];
    } mine = {{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
    const unsigned char *all = emu_wave_exchange(&mine, sizeof mine);
    Frag f[32];
    std::memcpy(f, all, sizeof f);
    const auto A = [&](int r, int k) {
        return emu_half_of(f[r % 8 * 4 + k % 8 / 2].a[r / 8 + 2 * (k / 8)], k % 2);
    };
    const auto B = [&](int k, int n) { return emu_half_of(f[n * 4 + k % 8 / 2].b[k / 8], k % 2); };
    const int lane = emu_lane(), g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; i++) {
        const int r = g + 8 * (i / 2), c = 2 * t + i % 2;
        float acc = d[i];
        for (int k = 0; k < 16; k++)
            acc = std::fma(A(r, k), B(k, c), acc);
        d[i] = acc;
    }
}
FG_DEVICE unsigned pack2(float lo, float hi)
{
    unsigned u;
    fg_t *h = reinterpret_cast<fg_t *>(&u);
    h[0] = fg_from_float(lo), h[1] = fg_from_float(hi);
    return u;
}
FG_DEVICE float ex2(float x) { return std::exp2(x); }

// stmatrix .x4, ldmatrix's inverse: lanes 8 i .. 8 i + 7 give matrix i's
// rows; lane l's r[i] holds row l / 4's elements 2 (l % 4) and + 1.
FG_DEVICE void stmatrix_x4(void *p, const unsigned r[4])
{
    struct Frag {
        unsigned char *row;
        unsigned r[4];
    } mine = {emu_smem_at(smem_addr(p)), {r[0], r[1], r[2], r[3]}};
    const unsigned char *all = emu_wave_exchange(&mine, sizeof mine);
    Frag f[32];
    std::memcpy(f, all, sizeof f);
    const int lane = emu_lane(), i = lane / 8, row = lane % 8;
    for (int t = 0; t < 4; t++)   // this lane's row: lanes 4 row .. 4 row + 3, matrix i
        std::memcpy(f[lane].row + 4 * t, &f[4 * row + t].r[i], 4);
}

// wgmma over the 128 threads of a warpgroup, as late as it may run: each
// call queued in the thread's open commit group, its accumulators and A
// fragment by address, run (in order) by the wg_wait that covers its group;
// its operands must be the same at the wait as at the issue, so a kernel
// that issues before they have landed, or touches them before that wait,
// faults.  Shared-memory operands through the kernels'
// descriptors (wg_desc: 128-byte swizzle, the pattern a function of the
// shared address: 16-byte piece bits 4-6 XOR row bits 7-9): K-major, row mn
// at (mn / 8) SBO + (mn % 8) 128 bytes from the start, k at 2 k; MN-major
// (transposed B), k at (k / 8) SBO + (k % 8) 128, n at (n / 64) LBO + 2 (n
// % 64).  Accumulators (fp32) of thread w 32 + l of the warpgroup: d[4 j +
// i] is row 16 w + l / 4 + 8 (i / 2), column 8 j + 2 (l % 4) + i % 2; an A
// fragment from registers is mma.sync's A (m16n8k16) for rows 16 w..
FG_DEVICE uint64_t wg_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(lbo >> 4) << 16 |
           (uint64_t)(sbo >> 4) << 32 | 1ull << 62;
}
FG_DEVICE uint64_t wg_desc_plus(uint64_t d, unsigned off) { return d + (off >> 4); }
FG_DEVICE void wg_fence() {}
struct EmuWgDesc {
    unsigned start, lbo, sbo;
};
FG_DEVICE EmuWgDesc emu_wg_desc(uint64_t d)
{
    if (d >> 62 != 1)
        emu_unsupported("a wgmma descriptor without the 128-byte swizzle");
    return {(unsigned)(d & 0x3FFF) << 4, (unsigned)(d >> 16 & 0x3FFF) << 4, (unsigned)(d >> 32 & 0x3FFF) << 4};
}
FG_DEVICE float emu_wg_at(unsigned linear)
{
    const unsigned a = linear ^ ((linear >> 7 & 7u) << 4);
    fg_t h;
    std::memcpy(&h, emu_smem_at(a), 2);
    return fg_to_float(h);
}
FG_DEVICE float emu_wg_kmajor(const EmuWgDesc &d, int mn, int k)
{
    return emu_wg_at(d.start + mn / 8 * d.sbo + mn % 8 * 128 + 2 * k);
}
FG_DEVICE float emu_wg_mnmajor(const EmuWgDesc &d, int k, int n)
{
    return emu_wg_at(d.start + n / 64 * d.lbo + k / 8 * d.sbo + k % 8 * 128 + 2 * (n % 64));
}
// A warpgroup's threads meet.
struct EmuWarpgroup {
    int arrived = 0, gen = 0;
    unsigned char slots[128][16];   // the exchange's
};
inline thread_local EmuWarpgroup emu_warpgroups[8];
FG_DEVICE void emu_wg_meet()
{
    EmuWarpgroup &w = emu_warpgroups[threadIdx.x / 128];
    const int gen = w.gen;
    if (++w.arrived == 128)
        w.arrived = 0, w.gen++;
    while (w.gen == gen)
        emu_yield();
}
// Each thread's `bytes` in, a copy of all 128 out.
FG_DEVICE void emu_wg_exchange(const void *mine, size_t bytes, unsigned char (*all)[16])
{
    EmuWarpgroup &w = emu_warpgroups[threadIdx.x / 128];
    std::memcpy(w.slots[threadIdx.x % 128], mine, bytes);
    emu_wg_meet();
    std::memcpy(all, w.slots, sizeof w.slots);
    emu_wg_meet();   // every copy made: the slots are free
}
template <int N, class A, class B> FG_DEVICE void emu_wgmma(float *d, bool accumulate, A a, B b)
{
    const int w = threadIdx.x % 128 / 32, g = emu_lane() / 4, t = emu_lane() % 4;
    for (int i = 0; i < N / 2; i++) {
        const int row = 16 * w + g + 8 * (i % 4 / 2), col = 8 * (i / 4) + 2 * t + i % 2;
        float acc = accumulate ? d[i] : 0.f;
        for (int k = 0; k < 16; k++)
            acc = std::fma(a(row, k), b(k, col), acc);
        d[i] = acc;
    }
    emu_wg_meet();   // the warpgroup's reads of shared memory are done
}
// A queued wgmma: m64n64k16 with A and B K-major in shared memory (a = 0),
// or m64n128k16 with A from registers and B MN-major (a: the fragment); with
// a hash of the operands at its issue, which must still hold at its wait
// (the hardware may read them at any time between).
struct EmuWgOp {
    float *d;
    const unsigned *a;
    uint64_t da, db;
    bool accumulate;
    unsigned group;
    uint64_t operands;
};
// The bits of the operands this thread's share of op reads (FNV-1a): its
// own A fragment, or A's rows 16 w.. (K-major); B's columns 8 (l % 4)..
// (every thread's product reads all of B's, a share keeps it cheap).
FG_DEVICE uint64_t emu_wg_operands(const EmuWgOp &op)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const auto mix = [&](uint32_t v) { h = (h ^ v) * 0x100000001b3ull; };
    const int w = threadIdx.x % 128 / 32, t = emu_lane() % 4;
    const EmuWgDesc db = emu_wg_desc(op.db);
    if (op.a) {
        for (int i = 0; i < 4; i++)
            mix(op.a[i]);
        for (int k = 0; k < 16; k++)
            for (int n = 32 * t; n < 32 * t + 32; n++)
                mix(__float_as_uint(emu_wg_mnmajor(db, k, n)));
    } else {
        const EmuWgDesc da = emu_wg_desc(op.da);
        for (int m = 16 * w; m < 16 * w + 16; m++)
            for (int k = 0; k < 16; k++)
                mix(__float_as_uint(emu_wg_kmajor(da, m, k)));
        for (int n = 16 * t; n < 16 * t + 16; n++)
            for (int k = 0; k < 16; k++)
                mix(__float_as_uint(emu_wg_kmajor(db, n, k)));
    }
    return h;
}
struct EmuWgOps {
    unsigned committed = 0;
    std::vector<EmuWgOp> queued;
};
inline thread_local EmuWgOps emu_wg_ops[1024];   // a block's threads'
FG_DEVICE void emu_wg_run(const EmuWgOp &op)
{
    if (emu_wg_operands(op) != op.operands)
        emu_fault("a wgmma's operands changed between its issue and its wait");
    if (!op.a) {
        const EmuWgDesc da = emu_wg_desc(op.da), db = emu_wg_desc(op.db);
        emu_wgmma<64>(op.d, op.accumulate, [&](int m, int k) { return emu_wg_kmajor(da, m, k); },
                      [&](int k, int n) { return emu_wg_kmajor(db, n, k); });
        return;
    }
    unsigned char all[128][16];
    emu_wg_exchange(op.a, 16, all);
    const EmuWgDesc db = emu_wg_desc(op.db);
    const auto A = [&](int m, int k) {
        unsigned r;
        std::memcpy(&r, all[m / 16 * 32 + m % 8 * 4 + k % 8 / 2] + 4 * (m % 16 / 8 + 2 * (k / 8)), 4);
        return emu_half_of(r, k % 2);
    };
    emu_wgmma<128>(op.d, true, A, [&](int k, int n) { return emu_wg_mnmajor(db, k, n); });
}
FG_DEVICE void wg_commit() { emu_wg_ops[threadIdx.x].committed++; }
// until at most N of this thread's committed groups are left: the others run
template <int N> FG_DEVICE void wg_wait()
{
    EmuWgOps &o = emu_wg_ops[threadIdx.x];
    const unsigned upto = o.committed > (unsigned)N ? o.committed - N : 0;
    size_t ran = 0;
    while (ran < o.queued.size() && o.queued[ran].group < upto)
        emu_wg_run(o.queued[ran++]);
    o.queued.erase(o.queued.begin(), o.queued.begin() + (ptrdiff_t)ran);
}
// d (+)= A . B, m64n64k16, A and B K-major in shared memory
FG_DEVICE void wgmma_ss_n64(float (&d)[32], uint64_t a, uint64_t b, int accumulate)
{
    EmuWgOps &o = emu_wg_ops[threadIdx.x];
    o.queued.push_back({d, nullptr, a, b, accumulate != 0, o.committed, 0});
    o.queued.back().operands = emu_wg_operands(o.queued.back());
}
// d += A . B, m64n128k16, A in registers, B MN-major in shared memory
FG_DEVICE void wgmma_rs_n128_tb(float (&d)[64], const unsigned (&a)[4], uint64_t b)
{
    EmuWgOps &o = emu_wg_ops[threadIdx.x];
    o.queued.push_back({d, a, 0, b, true, o.committed, 0});
    o.queued.back().operands = emu_wg_operands(o.queued.back());
}
// globaltimer and the SM's id: a fixed stand-in (the kernels' timing hooks)
FG_DEVICE unsigned long long globaltimer_ns() { return 0; }
FG_DEVICE unsigned sm_id() { return 0; }
// TMA loads: boxes of whole rows (tma_load_rows) and 2D boxes one 128-byte
// line wide (tma_load_2d), each landed with the 128-byte swizzle; TMA stores
// not (the forms that use them trap here).
template <int N> FG_DEVICE void reg_fence(float (&)[N]) {}
struct alignas(64) fg_tensor_map {
    unsigned char opaque[128];
};
// What the emulation keeps in a map's bytes: a row-major [rows][cols] of
// 16-bit elements at base, boxes of box_rows rows, each whole (box_cols 0,
// the runtime's 3D maps) or box_cols wide.
struct EmuRowsMap {
    const unsigned char *base;
    long long rows, cols;
    int box_rows, box_cols;
};
static_assert(sizeof(EmuRowsMap) <= sizeof(fg_tensor_map), "in a map's bytes");
inline fg_tensor_map emu_rows_map(const void *base, long long rows, long long cols, int box_rows,
                                  int box_cols = 0)
{
    fg_tensor_map m{};
    const EmuRowsMap e{static_cast<const unsigned char *>(base), rows, cols, box_rows, box_cols};
    std::memcpy(m.opaque, &e, sizeof e);
    return m;
}
// 16-byte piece p of a box row at shared address a (1024-byte aligned
// boxes), from src or zeros past the map's rows: a bulk copy (poisoned until
// it lands) to where the 128-byte swizzle puts it, address bits 7-9 into 4-6.
FG_DEVICE void emu_tma_piece(uint32_t a, const unsigned char *src, uint64_t *bar)
{
    static const unsigned char zeros[16] = {};
    bulk_copy(emu_smem_at(a ^ ((a >> 7 & 7u) << 4)), src ? src : zeros, 16, bar);
}
// The box as the hardware lands it: bulk copies of its 16-byte pieces (each
// poisoned until it lands), each 128-byte line's pieces permuted by the
// line's index in its 1024-byte atom (address bits 7-9 into 4-6); rows past
// the map's zeros.
template <bool kOnce> FG_DEVICE void tma_load_rows(void *dst, const fg_tensor_map *map, int row, uint64_t *bar)
{
    EmuRowsMap e;
    std::memcpy(&e, map->opaque, sizeof e);
    const uint32_t at = smem_addr(dst);
    if (at % 1024 || e.cols % 64 || e.box_cols)
        emu_fault("a box of whole rows: 1024-byte aligned, rows of 128-byte lines, a map of whole rows");
    const long long pitch = e.cols * 2;
    for (int r = 0; r < e.box_rows; r++)
        for (long long p = 0; p < pitch / 16; p++)
            emu_tma_piece(at + (uint32_t)(r * pitch + p * 16),
                          row + r < e.rows ? e.base + (row + r) * pitch + p * 16 : nullptr, bar);
}
// The box at (column c0, row c1) of a map of box_cols-wide boxes: one
// 128-byte line a box row (the 128-byte swizzle's), rows past the map's zeros.
FG_DEVICE void tma_load_2d(void *dst, const fg_tensor_map *map, int c0, int c1, uint64_t *bar)
{
    EmuRowsMap e;
    std::memcpy(&e, map->opaque, sizeof e);
    const uint32_t at = smem_addr(dst);
    if (at % 1024 || e.box_cols * 2 != 128 || c0 < 0 || c0 + e.box_cols > e.cols || c1 < 0)
        emu_fault("a 2D box: 1024-byte aligned, one 128-byte line wide, within the map's columns");
    const long long pitch = e.cols * 2;
    for (int r = 0; r < e.box_rows; r++)
        for (int p = 0; p < 8; p++)
            emu_tma_piece(at + (uint32_t)(r * 128 + p * 16),
                          c1 + r < e.rows ? e.base + (c1 + r) * pitch + c0 * 2 + p * 16 : nullptr, bar);
}
FG_DEVICE void tma_store_2d(const fg_tensor_map *, int, int, const void *) { emu_unsupported("TMA"); }
FG_DEVICE void bulk_commit() {}
template <int N> FG_DEVICE void bulk_wait_read() {}
template <int N> FG_DEVICE void bulk_wait() {}
FG_DEVICE void tma_prefetch_map(const fg_tensor_map *) {}
template <int N> FG_DEVICE void regs_dec() {}
template <int N> FG_DEVICE void regs_inc() {}

#endif
