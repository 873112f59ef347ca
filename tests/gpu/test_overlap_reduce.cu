// The overlap family's reduction (overlap_reduce instances) on the GPU, alone:
// out = the sum over the world's ranks of this rank's block, its own partial
// and the world - 1 received, in fp32 in rank order, rounded once.  Checked
// bitwise against the same sum on the host, at 1, 4099, 2^20 and twice the
// grid's threads + 3 16-byte vectors, as rank 0 and as the last rank, on
// fresh random partials, with out and a guard past it poisoned (NaN) before
// each launch and the unused receive slot (the rank's own) poisoned too; at
// 4099 vectors 1000 launches (2 with --quick), each bitwise the host's sum
// (determinism); with --bench, timed at 256K and 4M vectors a block
// against the read ceiling measured in the same run (not with --quick;
// --vecs N, repeatable: those sizes instead, e.g. shapes the tuning did not
// time).  The executor's tests
// (test_overlap_exec) run the same kernels between two ranks; this program
// is the reduction's tuning harness.
//
//   test_overlap_reduce [--kernels DIR] [--manifest FILE] [--only A,B] [--seed N] [--verbose]
//                       [--quick]
//   test_overlap_reduce --bench [--json FILE] [--commit C] [--kernels DIR] [--manifest FILE]
//                       [--only A,B] [--quick] [--vecs N]...
//
// Kernels: DIR/overlap_reduce_sm90a_*.cubin, their dtype, world size and
// launch (grid, block) from the manifest (DIR/manifest.json by default,
// else $FG_GEN_DIR's: fgh_open_manifest).
// --only A,B: those instances alone, by whole name (fusegen tune runs this
// program with --only and --bench --quick --no-baseline to time, --only
// alone to check).  --no-baseline is taken and changes nothing: there is no
// baseline kernel.  Signature: extern "C" __global__ void NAME(const uint4
// *own, const uint4 *recv, uint4 *out, int rank, int vecs).
//
// --bench JSON (schema fusegen-bench/1): one case per instance and size:
// "name" (INSTANCE/vecsN), "instance", "vecs", "world", "time" (median, min,
// max, ... in us), "bytes" (read and written), "gbps".  Each point timed is
// also logged as "INSTANCE vecs=N ...".
#include "harness.h"

#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace {

struct Inst {
    const char *name;
    fgh_dtype dt;
    int world;
    unsigned grid, block;
    cudaKernel_t fn;
};

// The instance's kernel, its dtype, world size and launch from the manifest.
bool open_inst(Inst *in, const char *dir, const char *manifest)
{
    char path[1024], dtype[16] = "";
    snprintf(path, sizeof path, "%s/%s.cubin", dir, in->name);
    long long grid[3], block[3];
    in->world = (int)fgh_manifest_value(manifest, in->name, "params.world");
    if (fgh_manifest_text(manifest, in->name, "dtype", dtype, sizeof dtype) < 0 ||
        fgh_manifest_ints(manifest, in->name, "launch.grid", grid, 3) != 3 ||
        fgh_manifest_ints(manifest, in->name, "launch.block", block, 3) != 3 || in->world < 2) {
        printf("    %s: no dtype, world or launch in the manifest\n", in->name);
        return false;
    }
    in->dt = !strcmp(dtype, "bf16") ? FGH_BF16 : FGH_F16;
    in->grid = (unsigned)grid[0], in->block = (unsigned)block[0];
    size_t n = 0;
    void *image = fgh_read_file(path, &n);
    cudaLibrary_t lib;
    const bool ok = image && fgh_ok(cudaLibraryLoadData(&lib, image, nullptr, nullptr, 0, nullptr,
                                                        nullptr, 0)) &&
                    fgh_ok(cudaLibraryGetKernel(&in->fn, lib, in->name));
    free(image);
    return ok;
}

// Device buffers of one call: own [vecs], recv [world][vecs], out [vecs]
// and a guard of kGuard vectors after it.
constexpr int kGuard = 64;
struct Bufs {
    uint4 *own = nullptr, *recv = nullptr, *out = nullptr;
    bool open(int world, long long vecs)
    {
        return fgh_ok(cudaMalloc(&own, vecs * 16)) &&
               fgh_ok(cudaMalloc(&recv, (size_t)world * vecs * 16)) &&
               fgh_ok(cudaMalloc(&out, (vecs + kGuard) * 16));
    }
    ~Bufs() { cudaFree(own), cudaFree(recv), cudaFree(out); }
};

bool launch(const Inst &in, const Bufs &b, int rank, long long vecs, cudaStream_t s)
{
    const uint4 *own = b.own, *recv = b.recv;
    uint4 *out = b.out;
    int r = rank, v = (int)vecs;
    void *args[] = {&own, &recv, &out, &r, &v};
    return fgh_ok(cudaLaunchKernel((const void *)in.fn, dim3(in.grid), dim3(in.block), args, 0, s));
}

// The checks at `vecs` vectors: one set of partials and their sum on the
// host, the kernel run as rank 0 and as the last rank, `launches` times each
// (determinism: every launch's out, poisoned before it, bitwise the host's).
void check(const Inst &in, long long vecs, int launches, uint64_t seed, cudaStream_t s)
{
    const size_t elems = (size_t)vecs * 8, width = fgh_dtype_size(in.dt);
    std::vector<unsigned char> parts((size_t)in.world * elems * width);
    for (int p = 0; p < in.world; p++)
        fgh_fill_host(parts.data() + p * elems * width, in.dt, elems, seed + p, 1.f);
    std::vector<uint16_t> want(elems);
    for (size_t i = 0; i < elems; i++) {
        float t = 0.f;   // the kernel's order: rank 0 first, one rounding
        for (int p = 0; p < in.world; p++)
            t += fgh_get(parts.data() + p * elems * width, in.dt, i);
        want[i] = fgh_round_to(in.dt, t);
    }
    for (int rank : {0, in.world - 1}) {
        char name[256];
        snprintf(name, sizeof name, "%s: rank %d of %d, %lld vectors, %d launch%s", in.name, rank,
                 in.world, vecs, launches, launches > 1 ? "es" : "");
        Bufs b;
        if (!CHECK(name, b.open(in.world, vecs)))
            return;
        bool ok = fgh_upload(b.own, parts.data() + rank * elems * width, elems * width) == 0;
        for (int p = 0; ok && p < in.world; p++)
            ok = p == rank ? fgh_poison_device(b.recv + (size_t)p * vecs, vecs * 16, s) == 0
                           : fgh_upload(b.recv + (size_t)p * vecs, parts.data() + p * elems * width,
                                        elems * width) == 0;
        std::vector<unsigned char> out((elems + kGuard * 8) * width);
        size_t wrong = 0, guard_hit = 0;   // summed over the launches
        int bad_launches = 0;
        for (int l = 0; ok && l < launches; l++) {
            ok = fgh_poison_device(b.out, (vecs + kGuard) * 16, s) == 0 &&
                 launch(in, b, rank, vecs, s) && fgh_ok(cudaStreamSynchronize(s)) &&
                 fgh_ok(cudaMemcpy(out.data(), b.out, out.size(), cudaMemcpyDeviceToHost));
            size_t w = 0;
            for (size_t i = 0; ok && i < elems; i++)
                w += want[i] != ((const uint16_t *)out.data())[i];
            const size_t g =
                ok ? kGuard * 8 - fgh_count_poisoned(out.data() + elems * width, in.dt, kGuard * 8) : 0;
            wrong += w, guard_hit += g, bad_launches += w || g;
        }
        if (!CHECK(name, ok))
            return;
        CHECKF(name, wrong == 0, "%d of %d launches differ from the host's sum (%zu elements of %zu "
               "a launch, summed)", bad_launches, launches, wrong, elems);
        char guard[300];
        snprintf(guard, sizeof guard, "%s: nothing written past out", name);
        CHECKF(guard, guard_hit == 0, "the %d vectors after out changed (%zu elements, summed)",
               kGuard, guard_hit);
    }
}

struct Timed {
    const Inst *in;
    std::vector<Bufs> *sets;
    long long vecs;
};
void enqueue(void *ctx, int i, cudaStream_t s)
{
    const Timed *t = (const Timed *)ctx;
    launch(*t->in, (*t->sets)[(size_t)i % t->sets->size()], 0, t->vecs, s);
}

void bench(const Inst &in, long long vecs, const fgh_device &d, double read_gbps, cudaStream_t s,
           fgh_json *j)
{
    char name[256];
    snprintf(name, sizeof name, "%s bench, %lld vectors", in.name, vecs);
    const size_t bytes = (size_t)(in.world + 1) * vecs * 16;   // world partials read, out written
    std::vector<Bufs> sets((size_t)fgh_rotation_sets(bytes, d.l2_bytes));
    bool ok = true;
    for (Bufs &b : sets)
        ok = ok && b.open(in.world, vecs) &&
             fgh_fill_device(b.own, in.dt, vecs * 8, fgh_next_seed(), 1.f, nullptr) == 0 &&
             fgh_fill_device(b.recv, in.dt, (size_t)in.world * vecs * 8, fgh_next_seed(), 1.f,
                             nullptr) == 0;
    // one launch outside the graph capture: the library loads the kernel at
    // its first launch, and a launch error shows here
    ok = ok && fgh_ok(cudaDeviceSynchronize()) && launch(in, sets[0], 0, vecs, s) &&
         fgh_ok(cudaStreamSynchronize(s));
    Timed t{&in, &sets, vecs};
    fgh_timing tm;
    if (!CHECK(name, ok && fgh_bench(s, enqueue, &t, (int)sets.size(), 2.0, 7, &tm) == 0))
        return;
    const double gbps = bytes / tm.med_us * 1e-3;
    printf("%s vecs=%lld world=%d  %9.2f us  %7.1f GB/s", in.name, vecs, in.world, tm.med_us,
           gbps);
    if (read_gbps > 0)
        printf("  %.1f%% of read", 100 * gbps / read_gbps);
    printf("\n");
    if (!j)
        return;
    char cname[256];
    snprintf(cname, sizeof cname, "%s/vecs%lld", in.name, vecs);
    fgh_json_obj_begin(j, nullptr);
    fgh_json_str(j, "name", cname);
    fgh_json_str(j, "instance", in.name);
    fgh_json_int(j, "vecs", vecs);
    fgh_json_int(j, "world", in.world);
    fgh_json_timing(j, "time", &tm);
    fgh_json_int(j, "bytes", (long long)bytes);
    fgh_json_num(j, "gbps", gbps);
    fgh_json_obj_end(j);
}

}   // namespace

int main(int argc, char **argv)
{
    fgh_args a;
    fgh_args_init(&a);
    std::vector<long long> bench_vecs;   // --vecs: the sizes benched (none: the usual ones)
    for (int i = 1; i < argc; i++) {
        if (fgh_common_arg(&a, argc, argv, &i))
            continue;
        if (!strcmp(argv[i], "--vecs") && i + 1 < argc && atoll(argv[i + 1]) > 0 &&
            atoll(argv[i + 1]) <= (1ll << 26)) {
            bench_vecs.push_back(atoll(argv[++i]));
            continue;
        }
        fprintf(stderr,
                "usage: %s [--kernels DIR] [--manifest FILE] [--only A,B] [--seed N] "
                "[--verbose] [--quick]\n"
                "       %s --bench [--json FILE] [--commit C] [--kernels DIR] "
                "[--manifest FILE] [--only A,B] [--quick] [--vecs N (1..2^26)]...\n",
                argv[0], argv[0]);
        return 2;
    }
    if (!bench_vecs.empty() && !a.bench) {
        fprintf(stderr, "%s: --vecs sizes what --bench times; without --bench it would be ignored\n",
                argv[0]);
        return 2;
    }
    if (bench_vecs.empty())
        bench_vecs = {1ll << 18, 1ll << 22};
    fgh_args_apply(&a);
    printf("test_overlap_reduce: kernels from %s, seed 0x%llx\n", a.kernels,
           (unsigned long long)fgh_base_seed());
    fgh_device d;
    if (!CHECK("device: open", fgh_device_open(0, &d) == 0))
        return fgh_summary() ? 1 : 0;
    if (d.cc_major != 9) {
        fgh_skip("overlap_reduce (sm_90a)", "this GPU is not compute capability 9.x");
        return fgh_summary() ? 1 : 0;
    }
    int n = 0;
    char **files = fgh_list_cubins(a.kernels, "overlap_reduce_", &n);
    char mpath[1024];
    char *manifest = fgh_open_manifest(a.manifest, a.kernels, mpath, sizeof mpath, nullptr);
    if (n <= 0 || !manifest) {
        fgh_skip("overlap_reduce", n > 0 ? "no manifest" : "no overlap_reduce_* cubin in --kernels");
        free(files);
        free(manifest);
        return fgh_summary() ? 1 : 0;
    }
    std::vector<const char *> names(files, files + n);
    std::unique_ptr<bool[]> chosen(new bool[(size_t)n]);
    fgh_select(a.only, names.data(), (size_t)n, chosen.get());
    cudaStream_t s;
    fgh_json j;
    FILE *jf = nullptr;
    bool ok = fgh_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    double read_gbps = 0;
    if (ok && a.bench) {
        if (a.json)
            ok = fgh_bench_doc_begin(&j, &jf, a.json, &d, a.commit, "test_overlap_reduce --bench") ==
                 0;
        fgh_ceilings c;
        if (ok && !a.quick && fgh_measure_ceilings(s, (size_t)1 << 30, &c) == 0) {
            read_gbps = c.read_gbps;
            printf("ceilings: copy %.0f GB/s, read %.0f GB/s\n", c.copy_gbps, c.read_gbps);
            if (jf)
                fgh_json_ceilings(&j, &c);
        }
        if (jf)
            fgh_json_arr_begin(&j, "cases");
    }
    int ran = 0;
    for (int i = 0; ok && i < n; i++) {
        if (!chosen[i])
            continue;
        Inst in{names[(size_t)i]};
        if (fgh_manifest_value(manifest, in.name, "params.world") < 0) {
            fgh_skip(in.name, "not in the manifest (a cubin of an earlier build)");
            continue;
        }
        if (!CHECK(in.name, open_inst(&in, a.kernels, manifest)))
            continue;
        ran++;
        if (a.bench) {
            for (long long vecs : bench_vecs)
                bench(in, vecs, d, read_gbps, s, jf ? &j : nullptr);
            continue;
        }
        const uint64_t seed = fgh_next_seed();
        // the last size takes every thread of the grid twice and some a third
        // time (the grid-stride loop's later passes; 8.6M vectors at most on
        // the H200's grids, which are at most 32 x 1024 threads a compute unit)
        const long long past = std::min(2ll * in.grid * in.block + 3, 1ll << 24);
        for (long long vecs : {1ll, 4099ll, 1ll << 20, past})   // determinism at 4099
            check(in, vecs, vecs == 4099 ? (a.quick ? 2 : 1000) : 1, seed + (uint64_t)vecs * 64, s);
    }
    if (jf) {
        fgh_json_arr_end(&j);
        fgh_bench_doc_end(&j, jf, a.json);
    }
    // a selection that runs nothing must not read as a pass
    CHECKF("overlap_reduce: instances run", ran > 0, "none of %d in %s%s%s", n, a.kernels,
           a.only ? " named by --only " : "", a.only ? a.only : "");
    CHECK("no CUDA error left", fgh_ok(cudaDeviceSynchronize()) && fgh_ok(cudaGetLastError()));
    cudaStreamDestroy(s);
    free(files);
    free(manifest);
    return fgh_summary() ? 1 : 0;
}
