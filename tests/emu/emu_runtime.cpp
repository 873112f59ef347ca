// The host emulation's runtime (include/emu_core.h and the shims declare
// it): a workgroup's threads as fibers run round robin, the workgroup
// barrier, the wave exchange behind the shuffles, MFMA 16x16x16 and the
// sm_90a shim's warp-wide operations, and a grid run either one workgroup
// after another or, for a cooperative launch, every workgroup at once, each
// on its own host thread.  A workgroup's state (its fibers, threadIdx,
// blockIdx, its LDS) is thread_local, so that one host thread runs one
// workgroup.  Shared by the tests/emu kernels.
#include <hip/hip_runtime.h>

#include <sched.h>
#include <unistd.h>
#include <ucontext.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "emu_runtime.h"

thread_local emu_dim3 threadIdx, blockIdx;
emu_dim3 gridDim, blockDim;
thread_local unsigned char *emu_dyn_smem;

// ---- fibers: one a thread of the workgroup, run round robin ----
namespace emu {
constexpr int kWave = 64, kSlot = 64;   // lanes a wave at most (MFMA's); bytes a lane exchanges at most
int wave = kWave;                        // this launch's lanes a wave
struct Fiber {
    ucontext_t ctx;
    bool done = false;
};
thread_local std::vector<Fiber> fibers;
// The fibers' stacks, kStack bytes each, made once for the largest workgroup
// and reused by every workgroup after it (its fibers have all returned by
// then; a stack needs no zeroing)
constexpr size_t kStack = 256 * 1024;
thread_local std::unique_ptr<char[]> stacks;
thread_local int stacks_made;
thread_local ucontext_t scheduler;
thread_local int current, nthreads;
thread_local void (*body)();
thread_local long long clock_ticks;
// Other workgroups run on host threads beside this one (a cooperative
// launch): a round of the fibers ends by giving the host's cores up, so a
// workgroup spinning at a grid barrier lets the ones it waits for run.
thread_local bool shares_host;
// One workgroup of each cooperative launch (the next one each launch) lags:
// at its start and after each of its releasing atomic adds (a grid barrier's arrival, a
// ticket, a counter its consumers wait on) it pauses until every other
// workgroup has run kLagRounds rounds of its fibers (or ended), so that they
// run on ahead of it through whatever is not fenced off by a barrier or a
// wait on it, and their reads of what it has not written yet (poisoned, or
// stale) show in the outputs.  (Counted in rounds, not time: a loaded host
// slows both sides alike.)
thread_local bool lags;
uint64_t schedule_seed;   // 0: round robin in thread order
constexpr long kLagRounds = 300;
unsigned cooperative_launches;
std::atomic<long> others_rounds;   // the other workgroups' rounds, summed
std::atomic<int> others_running;

struct Barrier {
    int arrived = 0, gen = 0;
    void wait(int n)
    {
        const int g = gen;
        if (++arrived == n) {
            arrived = 0;
            gen++;
        } else {
            while (gen == g)
                emu_yield();
        }
    }
};
thread_local Barrier block_barrier;
struct Wave {
    Barrier barrier;
    unsigned char slots[kWave * kSlot];
};
thread_local std::vector<Wave> waves;
thread_local std::vector<unsigned char> lane_copies;   // [thread][kWave * kSlot] (written before read)

void fiber_main()
{
    body();
    fibers[current].done = true;
    swapcontext(&fibers[current].ctx, &scheduler);
}

// Runs fn as every thread of one workgroup of n threads until all return.
void run_workgroup(int n, void (*fn)())
{
    nthreads = n, body = fn;
    if (n > stacks_made) {
        stacks.reset(new char[(size_t)n * kStack]);
        stacks_made = n;
    }
    fibers.assign(n, Fiber{});
    waves.assign((n + emu::wave - 1) / emu::wave, Wave{});
    if (lane_copies.size() < (size_t)n * kWave * kSlot)
        lane_copies.resize((size_t)n * kWave * kSlot);
    block_barrier = Barrier{};
    for (int i = 0; i < n; i++) {
        Fiber &f = fibers[i];
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks.get() + (size_t)i * kStack;
        f.ctx.uc_stack.ss_size = kStack;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, fiber_main, 0);
    }
    // the fibers' order within a round: shuffled each round (from the
    // inputs' seed and the workgroup), so that a race between warps whose
    // round-robin order would always settle one way may go the other
    std::vector<int> order(n);
    for (int i = 0; i < n; i++)
        order[i] = i;
    uint64_t rng = schedule_seed ^ (0x9e3779b97f4a7c15ull * (1 + blockIdx.x + 65536ull * (blockIdx.y + 65536ull * blockIdx.z)));
    for (bool left = true; left;) {
        left = false;
        for (int k = n - 1; k > 0 && schedule_seed; k--) {   // Fisher-Yates, xorshift64
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            std::swap(order[k], order[rng % (uint64_t)(k + 1)]);
        }
        for (int k = 0; k < n; k++) {
            const int i = order[k];
            if (fibers[i].done)
                continue;
            left = true;
            current = i;
            threadIdx = {(unsigned)i, 0, 0};
            swapcontext(&scheduler, &fibers[i].ctx);
        }
        if (shares_host && !lags)
            others_rounds++;
        if (shares_host)
            sched_yield();
    }
    fibers.clear();
}
} // namespace emu

void emu_schedule_seed(uint64_t seed) { emu::schedule_seed = seed; }
void emu_yield() { swapcontext(&emu::fibers[emu::current].ctx, &emu::scheduler); }
void __syncthreads() { emu::block_barrier.wait(emu::nthreads); }
namespace emu {
// The lagging workgroup's pause: until the others have run kLagRounds rounds
// each, or ended.
void lag()
{
    const long until = others_rounds + kLagRounds * (long)(gridDim.x * gridDim.y * gridDim.z - 1);
    while (others_running > 0 && others_rounds < until)
        usleep(20);
}
} // namespace emu
void emu_after_atomic(int order)
{
    if (emu::lags && order != __ATOMIC_RELAXED && order != __ATOMIC_ACQUIRE)
        emu::lag();
}
unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
unsigned atomicOr(unsigned *p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
long long clock64() { return ++emu::clock_ticks; }
unsigned long long emu_realtime() { return (unsigned long long)++emu::clock_ticks; }
void (*emu_system_load_hook)(const void *p);

const unsigned char *emu_wave_exchange(const void *mine, size_t bytes)
{
    const int t = emu::current, lane = t % emu::wave;
    emu::Wave &w = emu::waves[t / emu::wave];
    if (bytes > (size_t)emu::kSlot)
        abort();
    std::memcpy(w.slots + (size_t)lane * bytes, mine, bytes);
    w.barrier.wait(emu::wave);   // every lane's value in
    unsigned char *copy = &emu::lane_copies[(size_t)t * emu::kWave * emu::kSlot];
    std::memcpy(copy, w.slots, (size_t)emu::wave * bytes);
    w.barrier.wait(emu::wave);   // every lane's copy made: the slots are free
    return copy;
}
void emu_wave_barrier() { emu::waves[emu::current / emu::wave].barrier.wait(emu::wave); }

// D = A B + C over the wave, A 16 x 16 and B 16 x 16 as the ISA lays them out.
static emu_f32x4 mfma(const float a[4], const float b[4], emu_f32x4 c)
{
    struct {
        float a[4], b[4];
    } mine;
    for (int i = 0; i < 4; i++)
        mine.a[i] = a[i], mine.b[i] = b[i];
    const unsigned char *all = emu_wave_exchange(&mine, sizeof mine);
    const auto at = [&](int lane) {
        decltype(mine) v;
        std::memcpy(&v, all + (size_t)lane * sizeof mine, sizeof mine);
        return v;
    };
    const int lane = emu::current % emu::kWave, col = lane % 16, row0 = 4 * (lane / 16);
    emu_f32x4 d = c;
    for (int i = 0; i < 4; i++) {
        float acc = c[i];
        for (int k = 0; k < 16; k++)   // A[row][k] in lane row + 16 (k / 4), B[k][col] in col + 16 (k / 4)
            acc = std::fma(at(row0 + i + 16 * (k / 4)).a[k % 4], at(col + 16 * (k / 4)).b[k % 4], acc);
        d[i] = acc;
    }
    return d;
}
emu_f32x4 emu_mfma_f16(emu_f16x4 a, emu_f16x4 b, emu_f32x4 c, int, int, int)
{
    float fa[4], fb[4];
    for (int i = 0; i < 4; i++)
        fa[i] = (float)a[i], fb[i] = (float)b[i];
    return mfma(fa, fb, c);
}
emu_f32x4 emu_mfma_bf16(emu_i16x4 a, emu_i16x4 b, emu_f32x4 c, int, int, int)
{
    float fa[4], fb[4];
    for (int i = 0; i < 4; i++) {
        const uint32_t ua = (uint32_t)(uint16_t)a[i] << 16, ub = (uint32_t)(uint16_t)b[i] << 16;
        std::memcpy(&fa[i], &ua, 4);
        std::memcpy(&fb[i], &ub, 4);
    }
    return mfma(fa, fb, c);
}

void emu_run_grid(emu_dim3 grid, int threads, int wave, void (*fn)())
{
    emu::wave = wave;
    gridDim = grid, blockDim = {(unsigned)threads, 1, 1};
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                blockIdx = {x, y, z};
                emu::run_workgroup(threads, fn);
            }
}

void emu_run_cooperative(emu_dim3 grid, int threads, int wave, unsigned char *const *smem, void (*fn)())
{
    emu::wave = wave;
    const unsigned workgroups = grid.x * grid.y * grid.z;
    gridDim = grid, blockDim = {(unsigned)threads, 1, 1};
    std::vector<std::thread> hosts;
    const unsigned lagging = emu::cooperative_launches++ % workgroups;
    emu::others_rounds = 0, emu::others_running = (int)workgroups - 1;
    for (unsigned w = 0; w < workgroups; w++)
        hosts.emplace_back([=] {
            emu::shares_host = true;
            emu::lags = workgroups > 1 && w == lagging;
            blockIdx = {w % grid.x, w / grid.x % grid.y, w / grid.x / grid.y};
            emu_dyn_smem = smem[w];
            if (emu::lags)   // (it starts late, too)
                emu::lag();
            emu::run_workgroup(threads, fn);
            if (!emu::lags)
                emu::others_running--;
        });
    for (std::thread &h : hosts)
        h.join();
}
