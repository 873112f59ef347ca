// GPU tests and benchmark of the whole MLA attention block at decode
// (fgrt.h's fg_mla_block_args; templates/mla_block.in, and its portable form
// mla_block_portable.in for a target without clusters, e.g.
// tests/gpu/portable/h200-portable.yaml: scripts/check-gpu.sh runs that build
// with its own --manifest), launched through libfgrt: registry rows made from
// the manifest -> fg_init -> fg_mla_block_bind (by instance name) ->
// fg_launch.  Nothing here assumes a form's block size: the launch (the
// sm_90a form's producer warp besides its THREADS, the portable form's
// THREADS alone) is the manifest's.
//
// Kernels: DIR/mla_block_*.cubin (--kernels).  Everything else comes from the
// generator's manifest.json (--manifest; default: fgh_open_manifest's, the
// kernel folder's, else $FG_GEN_DIR's, else generated/'s): params hidden,
// heads, q_lora, kv_lora, rope_dim, max_context, page_size, bmax (the 8
// key dims), nope, v_dim, w_o_ld; texts inv_freq and cs_scale (the RoPE table the kernel was built
// with); launch.grid/block/dynamic_smem/cooperative; workspace_bytes,
// counters.
//
// Checks, per instance, on fresh random inputs (the run's seed, printed;
// --seed), with y poisoned before every launch, against the C reference
// computed the non-absorbed way (ref_mla_block.c: explicit per-head K and V,
// so W_uk's absorption into q and W_uv's after the attention are checked):
//   y: relative L2 per request <= 1e-2 (bf16) / 2e-3 (f16), NaN never passes;
//   the appended latent row at pos: relative L2 <= 1e-2 / 2e-3 of the
//   reference's row (rounded once to the cache's type);
//   an inactive slot (position -1): y exactly 0;
//   graph replays (1000; 2 with --quick) bitwise equal to the direct launch,
//   y, the workspace and the appended rows poisoned before each, and every
//   counter but the grid barrier's back at 0 after them;
// at positions 0 (the new token alone), page and tile boundaries, and a
// longer context, batch 1 and 2 (at most B_max), through a shuffled block
// table where paged.
// --bench [--json FILE]: per instance, S = 4K and 16K (<= S_max), B = 1 to
// B_max by powers of two (--quick, as fusegen tune times: S = 4K, B = 1 and
// B_max), and the fit T = T0 + bytes / BW_eff over those points (the timed
// launches' output, poisoned before, checked against the baseline's on the
// same inputs where it runs: the lengths the reference cannot afford): CUDA-graph
// replays over enough weight and cache sets that a set is reused
// only after 2 x L2 of other traffic; us per launch, bytes (the weights once
// and every request's latent rows), GB/s and the fraction of the read
// ceiling measured in the same run, beside the unfused baseline: cuBLAS
// projections (bf16 in and out, fp32 accumulation; W_uk and W_uv as strided
// batched products over the heads), small kernels for the norms, RoPE and
// the append, and the MLA core (mla_decode, looked up through libfgrt among
// the mla_decode_*.cubin beside the block's; none there: the baseline is
// skipped, and says so; --no-baseline: not run, as fusegen tune times the
// candidates).  The baseline is checked against the reference
// once per instance (relative L2 <= 3e-2: it rounds q, q_abs and o to the
// storage type between its steps).
// --grid N: every instance launched with N blocks instead of its plan's (at
// most the plan's, which sizes the workspace), checks and benchmark alike.
// The sm_90a form takes each phase's shares from the grid, so fewer blocks
// load each SM as a faster GPU's would: on an H100, 64 blocks leave each
// ~45 GB/s of HBM, more than an H200's 128 need (~35); at 96 the H100's
// HBM is itself the limit (docs/performance.md, stop 77).  The benchmark's
// JSON names it in its "tool".
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "baseline_norm.cuh"
#include "harness.h"
#include "ref_decode.h"   // fgh_round_to
#include "ref_mla_block.h"
#ifdef FG_HAVE_FGRT
#include "fgrt.h"
#endif

namespace {

#ifdef FG_HAVE_FGRT
constexpr int kMaxInsts = 1024;   // a tuning run's candidates

struct Inst {
    char name[160], family[64];
    fgh_dtype dt;
    int hidden, heads, q_lora, kv_lora, rope, smax, page, bmax, nope, vdim, w_o_ld;
    long long grid[3], block[3], dynamic_smem, workspace, counters;
    float inv_freq[64], cs_scale;
    void *image;
    size_t image_size;
};

Inst g_inst[kMaxInsts];
int g_ninst, g_ncubins;
fg_kernel_entry g_reg[2 * kMaxInsts];   // the blocks', then the cores' (the baseline's)
size_t g_sizes[2 * kMaxInsts];
int g_nreg;
fg_context *g_fg;

// The MLA cores (mla_decode_*.cubin) the manifest describes, as registry
// rows, for the baseline: fgrt.h's key order heads, kv_lora, rope_dim,
// max_context, page_size, batch (a maximum).
struct Core {
    char name[160], family[64];
    void *image;
};
Core g_core[kMaxInsts];
int g_ncore;

void discover_cores(const char *dir, const char *manifest)
{
    int n;
    char **names = fgh_list_cubins(dir, "mla_decode_", &n);
    for (int k = 0; k < n && g_ncore < kMaxInsts; k++) {
        Core &c = g_core[g_ncore];
        snprintf(c.name, sizeof c.name, "%s", names[k]);
        const char *keys[6] = {"heads", "kv_lora", "rope_dim", "max_context", "page_size", "bmax"};
        long long dims[6], grid[3], block[3], cluster[3] = {1, 1, 1};
        bool ok = fgh_manifest_text(manifest, c.name, "family", c.family, sizeof c.family) >= 0 &&
                  fgh_manifest_ints(manifest, c.name, "launch.grid", grid, 3) == 3 &&
                  fgh_manifest_ints(manifest, c.name, "launch.block", block, 3) >= 1;
        for (int i = 0; ok && i < 6; i++)
            ok = (dims[i] = fgh_manifest_value(manifest, c.name, keys[i])) >= 0;
        char dt[16];
        ok = ok && fgh_manifest_text(manifest, c.name, "dtype", dt, sizeof dt) >= 0;
        if (!ok)
            continue;   // a core of another build: the baseline of its shape is skipped
        fgh_manifest_ints(manifest, c.name, "launch.cluster", cluster, 3);
        char path[512];
        snprintf(path, sizeof path, "%s/%s.cubin", dir, c.name);
        size_t size = 0;
        c.image = fgh_read_file(path, &size);
        if (!c.image)
            continue;
        fg_kernel_entry *r = &g_reg[g_nreg];
        *r = fg_kernel_entry{};
        r->name = c.name, r->family = c.family, r->op = "mla_decode", r->arch = FG_REG_ARCH_SM90A;
        r->dtype = strcmp(dt, "f16") ? FG_REG_BF16 : FG_REG_F16;
        r->ndims = 6;
        memcpy(r->dims, dims, sizeof dims);
        r->match[5] = FG_REG_MATCH_MAX;
        r->grid_rule = FG_REG_GRID_FIXED;
        for (int i = 0; i < 3; i++)
            r->grid[i] = (unsigned)grid[i], r->block[i] = (unsigned)block[i],
            r->cluster[i] = (unsigned)cluster[i];
        r->cooperative = (unsigned char)std::max(0LL, fgh_manifest_value(manifest, c.name, "launch.cooperative"));
        r->nonportable_cluster =
            (unsigned char)std::max(0LL, fgh_manifest_value(manifest, c.name, "launch.nonportable_cluster"));
        r->dynamic_smem = (unsigned)std::max(0LL, fgh_manifest_value(manifest, c.name, "launch.dynamic_smem"));
        r->workspace_bytes = (unsigned)std::max(0LL, fgh_manifest_value(manifest, c.name, "workspace_bytes"));
        r->counter_count = (unsigned)std::max(0LL, fgh_manifest_value(manifest, c.name, "counters"));
        r->priority = (int)std::max(0LL, fgh_manifest_value(manifest, c.name, "priority"));
        g_sizes[g_nreg] = size;
        r->image = (const unsigned char *)c.image;
        r->image_size = &g_sizes[g_nreg];
        g_nreg++, g_ncore++;
    }
    free(names);
}

bool from_manifest(const char *m, Inst *in, char *why, size_t nwhy, bool *absent)
{
    const char *n = in->name;
    char buf[sizeof in->name];
    *absent = fgh_manifest_text(m, n, "name", buf, sizeof buf) < 0;
    if (*absent) {
        snprintf(why, nwhy, "not in the manifest");
        return false;
    }
    struct { const char *key; int *dst; } f[] = {
        {"hidden", &in->hidden}, {"heads", &in->heads}, {"q_lora", &in->q_lora},
        {"kv_lora", &in->kv_lora}, {"rope_dim", &in->rope}, {"max_context", &in->smax},
        {"page_size", &in->page}, {"bmax", &in->bmax}, {"nope", &in->nope},
        {"v_dim", &in->vdim}, {"w_o_ld", &in->w_o_ld}};
    for (auto &e : f) {
        const long long v = fgh_manifest_value(m, n, e.key);
        if (v < 0) {
            snprintf(why, nwhy, "manifest entry without params.%s", e.key);
            return false;
        }
        *e.dst = (int)v;
    }
    char dt[16], cs[64];
    if (fgh_manifest_text(m, n, "dtype", dt, sizeof dt) < 0 || (strcmp(dt, "bf16") && strcmp(dt, "f16"))) {
        snprintf(why, nwhy, "dtype not f16 or bf16");
        return false;
    }
    in->dt = strcmp(dt, "f16") ? FGH_BF16 : FGH_F16;
    if (fgh_manifest_text(m, n, "family", in->family, sizeof in->family) < 0)
        snprintf(in->family, sizeof in->family, "mla_block");
    if (in->rope / 2 > 64 || !fgh_manifest_floats(m, n, "inv_freq", in->inv_freq, in->rope / 2) ||
        fgh_manifest_text(m, n, "cs_scale", cs, sizeof cs) < 0) {
        snprintf(why, nwhy, "manifest entry without texts.inv_freq (%d values) and cs_scale",
                 in->rope / 2);
        return false;
    }
    in->cs_scale = strtof(cs, nullptr);
    if (fgh_manifest_ints(m, n, "launch.grid", in->grid, 3) != 3 ||
        fgh_manifest_ints(m, n, "launch.block", in->block, 3) < 1) {
        snprintf(why, nwhy, "manifest entry without launch.grid and launch.block");
        return false;
    }
    in->dynamic_smem = fgh_manifest_value(m, n, "launch.dynamic_smem");
    in->workspace = fgh_manifest_value(m, n, "workspace_bytes");
    in->counters = fgh_manifest_value(m, n, "counters");
    if (in->dynamic_smem < 0 || in->workspace < 0 || in->counters < 0) {
        snprintf(why, nwhy, "manifest entry without dynamic_smem, workspace_bytes or counters");
        return false;
    }
    return true;
}

int discover(const char *dir, const char *manifest)
{
    int n;
    char **names = fgh_list_cubins(dir, "mla_block_", &n);
    for (int k = 0; k < n; k++) {
        g_ncubins++;
        if (g_ninst == kMaxInsts) {
            CHECKF("mla_block: kernel folder", false, "more than %d instances", kMaxInsts);
            break;
        }
        Inst in = {};
        snprintf(in.name, sizeof in.name, "%s", names[k]);
        char why[256];
        bool absent = false;
        if (!from_manifest(manifest, &in, why, sizeof why, &absent)) {
            if (absent)
                fgh_skip(in.name, "not in the manifest (a cubin of another build?)");
            else
                CHECKF("mla_block: manifest entry", false, "%s: %s", in.name, why);
            continue;
        }
        char path[512];
        snprintf(path, sizeof path, "%s/%s.cubin", dir, in.name);
        in.image = fgh_read_file(path, &in.image_size);
        if (in.image)
            g_inst[g_ninst++] = in;
        else
            CHECKF("mla_block: cubin read", false, "%s", path);
    }
    free(names);   // (sorted by name: so is g_inst)
    return g_ninst;
}

void make_entry(const Inst &in, fg_kernel_entry *e, size_t *size_slot)
{
    *e = fg_kernel_entry{};
    e->name = in.name;
    e->family = in.family;
    e->op = "mla_block";
    e->arch = FG_REG_ARCH_SM90A;
    e->dtype = in.dt == FGH_F16 ? FG_REG_F16 : FG_REG_BF16;
    // fgrt.h's key order: hidden, heads, q_lora, kv_lora, rope_dim, nope_dim,
    // v_dim, w_o_ld, max_context, page_size, batch (a maximum)
    e->ndims = 11;
    const long long dims[11] = {in.hidden, in.heads, in.q_lora, in.kv_lora, in.rope, in.nope,
                                in.vdim, in.w_o_ld, in.smax, in.page, in.bmax};
    memcpy(e->dims, dims, sizeof dims);
    e->match[10] = FG_REG_MATCH_MAX;
    e->grid_rule = FG_REG_GRID_FIXED;
    for (int i = 0; i < 3; i++) {
        e->grid[i] = (unsigned)in.grid[i];
        e->block[i] = (unsigned)in.block[i];
        e->cluster[i] = 1;
    }
    e->cooperative = 1;
    e->dynamic_smem = (unsigned)in.dynamic_smem;
    e->workspace_bytes = (unsigned)in.workspace;
    e->counter_count = (unsigned)in.counters;
    *size_slot = in.image_size;
    e->image = (const unsigned char *)in.image;
    e->image_size = size_slot;
}

// One set of device inputs of an instance, at batch B.
struct Problem {
    const Inst *in;
    int B;
    size_t n_wq, n_wqa, n_wqb, n_wkva, n_wkvb, n_wo, pages, row;
    void *x, *input_norm, *w_q, *w_q_a, *q_a_norm, *w_q_b, *w_kv_a, *kv_a_norm, *w_kv_b, *w_o;
    void *cache, *y;
    int *block_table, *positions;
    std::vector<int> table;   // host copy of the block table (page of token t of request b)
    bool no_input_norm;       // bind with input_norm NULL (x as is)
};

// Norm weights around 1 (U(0.75, 1.25)), the rest U(-scale, scale).
void *device_norm(int n, fgh_dtype t, uint64_t seed)
{
    std::vector<uint16_t> h(n);
    for (int i = 0; i < n; i++)
        h[i] = fgh_round_to(t, 1.0 + fgh_uniform(seed, i, 0.25f));
    void *d = nullptr;
    cudaMalloc(&d, n * 2);
    fgh_upload(d, h.data(), n * 2);
    return d;
}

void *device_rand(size_t n, fgh_dtype t, float scale, cudaStream_t s)
{
    void *d = nullptr;
    if (!fgh_ok(cudaMalloc(&d, n * 2)))
        return nullptr;
    fgh_fill_device(d, t, n, fgh_next_seed(), scale, s);
    return d;
}

bool make_problem(Problem *p, const Inst *in, int B, cudaStream_t s)
{
    *p = Problem{};
    p->in = in, p->B = B;
    const int H = in->hidden, NH = in->heads, QD = in->nope + in->rope, D = in->kv_lora + in->rope;
    const fgh_dtype t = in->dt;
    const float sh = sqrtf(3.f / H);
    p->x = device_rand((size_t)B * H, t, 1.f, s);
    p->input_norm = device_norm(H, t, fgh_next_seed());
    if (in->q_lora) {
        p->w_q_a = device_rand((size_t)in->q_lora * H, t, sh, s);
        p->q_a_norm = device_norm(in->q_lora, t, fgh_next_seed());
        p->w_q_b = device_rand((size_t)NH * QD * in->q_lora, t, sqrtf(3.f / in->q_lora), s);
    } else {
        p->w_q = device_rand((size_t)NH * QD * H, t, sh, s);
    }
    p->w_kv_a = device_rand((size_t)D * H, t, sh, s);
    p->kv_a_norm = device_norm(in->kv_lora, t, fgh_next_seed());
    p->w_kv_b = device_rand((size_t)NH * (in->nope + in->vdim) * in->kv_lora, t,
                            sqrtf(3.f / in->kv_lora), s);
    p->w_o = device_rand((size_t)H * in->w_o_ld, t, sqrtf(3.f / (NH * in->vdim)), s);
    // the cache: B requests' rows (a shuffled pool of pages where paged)
    const int P = in->page ? in->page : in->smax;
    p->pages = (size_t)B * (in->smax / P);
    p->cache = device_rand(p->pages * P * D, t, 1.f, s);
    if (in->page) {
        p->table.resize(p->pages);
        std::vector<int> perm(p->pages);
        fgh_permutation(perm.data(), (int)p->pages, fgh_next_seed());
        p->table = perm;
        cudaMalloc(&p->block_table, p->pages * sizeof(int));
        fgh_upload(p->block_table, perm.data(), p->pages * sizeof(int));
    }
    cudaMalloc(&p->positions, B * sizeof(int));
    cudaMalloc(&p->y, (size_t)B * H * 2);
    const bool q_ok = in->q_lora ? p->w_q_a && p->q_a_norm && p->w_q_b : p->w_q != nullptr;
    return fgh_ok(cudaStreamSynchronize(s)) && p->x && p->input_norm && q_ok && p->w_kv_a &&
           p->kv_a_norm && p->w_kv_b && p->w_o && p->cache && p->y && p->positions &&
           (!in->page || p->block_table);
}

void free_problem(Problem *p)
{
    void *ptrs[] = {p->x, p->input_norm, p->w_q, p->w_q_a, p->q_a_norm, p->w_q_b, p->w_kv_a,
                    p->kv_a_norm, p->w_kv_b, p->w_o, p->cache, p->y, p->block_table, p->positions};
    for (void *q : ptrs)
        cudaFree(q);
}

// Request b's cache row t (kv_lora + rope values) in the pool.
uint16_t *cache_row(const Problem *p, int b, int t)
{
    const Inst *in = p->in;
    const size_t row = !in->page ? (size_t)b * in->smax + t
                                 : (size_t)p->table[(size_t)b * (in->smax / in->page) + t / in->page] * in->page +
                                       t % in->page;
    return static_cast<uint16_t *>(p->cache) + row * (in->kv_lora + in->rope);
}

// Whether a stored 16-bit value of type t is NaN or inf.
bool nonfinite16(fgh_dtype t, uint16_t v)
{
    return (v & 0x7fff) >= (t == FGH_F16 ? 0x7c00 : 0x7f80);
}

fg_status bind(const Problem *p, fg_binding **out)
{
    const Inst *in = p->in;
    fg_mla_block_args a = {};
    a.dtype = in->dt == FGH_F16 ? FG_REG_F16 : FG_REG_BF16;
    a.hidden = in->hidden, a.heads = in->heads, a.q_lora = in->q_lora, a.kv_lora = in->kv_lora;
    a.rope_dim = in->rope, a.nope_dim = in->nope, a.v_dim = in->vdim, a.w_o_ld = in->w_o_ld;
    a.max_context = in->smax, a.page_size = in->page, a.batch = p->B;
    a.instance = in->name;
    a.x = p->x, a.input_norm = p->no_input_norm ? nullptr : p->input_norm, a.w_q = p->w_q;
    a.w_q_a = p->w_q_a;
    a.q_a_norm = p->q_a_norm, a.w_q_b = p->w_q_b, a.w_kv_a = p->w_kv_a, a.kv_a_norm = p->kv_a_norm;
    a.w_kv_b = p->w_kv_b, a.w_o = p->w_o, a.cache = p->cache, a.block_table = p->block_table;
    a.positions = p->positions, a.y = p->y;
    a.eps = 1e-6f;
    a.scale = 1.f / sqrtf((float)(in->nope + in->rope));
    return fg_mla_block_bind(g_fg, &a, out);
}

// Binds the block to p and launches it on s; false (a failed check) if either fails.
bool launch_block(Problem *p, const char *name, cudaStream_t s)
{
    fg_binding *bd = nullptr;
    fg_status st = bind(p, &bd);
    if (!CHECKF(name, st == FG_OK, "bind: %s (%s)", fg_status_string(st), fg_last_error()))
        return false;
    st = fg_launch(bd, s);
    const bool ran = CHECKF(name, st == FG_OK && fgh_ok(cudaStreamSynchronize(s)), "launch: %s (%s)",
                            fg_status_string(st), fg_last_error());
    fg_binding_free(bd);
    return ran;
}

// A NaN in request 0's input reaches every one of its outputs and none of
// request 1's: the attention must not read a split whose scores are all NaN
// as a split without keys (that gave y = 0).  Both requests at position pos.
void run_nan_case(Problem *p, int pos, cudaStream_t s)
{
    const Inst *in = p->in;
    const int B = p->B, H = in->hidden;
    char name[300];
    snprintf(name, sizeof name, "%s: B=%d, a NaN in request 0's x", in->name, B);
    const std::vector<int> positions(B, pos);
    cudaMemcpyAsync(p->positions, positions.data(), B * sizeof(int), cudaMemcpyHostToDevice, s);
    const uint16_t nan = in->dt == FGH_F16 ? 0x7e00 : 0x7fc0;
    cudaMemcpyAsync(p->x, &nan, sizeof nan, cudaMemcpyHostToDevice, s);
    fgh_poison_device(p->y, (size_t)B * H * 2, s);
    if (!launch_block(p, name, s))
        return;
    std::vector<uint16_t> hy((size_t)B * H);
    cudaMemcpy(hy.data(), p->y, hy.size() * 2, cudaMemcpyDeviceToHost);
    std::vector<size_t> nonfinite(B, 0);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < H; i++)
            nonfinite[b] += nonfinite16(in->dt, hy[(size_t)b * H + i]);
    CHECKF(name, nonfinite[0] == (size_t)H, "request 0: %zu of %d outputs NaN or inf", nonfinite[0], H);
    for (int b = 1; b < B; b++)
        CHECKF(name, nonfinite[b] == 0, "request %d: %zu outputs NaN or inf", b, nonfinite[b]);
}

// One case: positions pos[0..B), checked against the reference; `step`
// (default: bind and launch the block) computes y, `tol` overrides the
// dtype's limit.
void run_case(Problem *p, const std::vector<int> &pos, const char *what, cudaStream_t s,
              const std::function<bool(cudaStream_t)> &step = {}, double tol = 0)
{
    const Inst *in = p->in;
    const int B = p->B, H = in->hidden, D = in->kv_lora + in->rope;
    char name[300];
    snprintf(name, sizeof name, "%s: %s", in->name, what);
    cudaMemcpyAsync(p->positions, pos.data(), B * sizeof(int), cudaMemcpyHostToDevice, s);
    fgh_poison_device(p->y, (size_t)B * H * 2, s);
    fgh_poison_shared(s);   // a read of shared memory no step wrote shows as NaN
    // the reference's contiguous view of every request's rows before pos
    const int maxpos = *std::max_element(pos.begin(), pos.end());
    const int rows = std::max(1, maxpos);
    std::vector<uint16_t> view((size_t)B * in->smax * D);
    std::vector<uint16_t> row(D);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < std::min(rows, pos[b] < 0 ? 0 : pos[b]); t++)
            cudaMemcpy(view.data() + ((size_t)b * in->smax + t) * D,
                       cache_row(p, b, t), D * 2,
                       cudaMemcpyDeviceToHost);
    const bool ran = step ? CHECKF(name, step(s) && fgh_ok(cudaStreamSynchronize(s)), "run: %s",
                                   fg_last_error())
                          : launch_block(p, name, s);
    if (!ran)
        return;
    // the reference (x, weights to the host)
    auto host = [](const void *d, size_t n) {
        std::vector<uint16_t> h(n);
        if (d)
            cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost);
        return h;
    };
    const int NH = in->heads, QD = in->nope + in->rope;
    auto hx = host(p->x, (size_t)B * H), hn = host(p->input_norm, H);
    auto hwq = host(p->w_q, in->q_lora ? 0 : (size_t)NH * QD * H);
    auto hwqa = host(p->w_q_a, (size_t)in->q_lora * H), hqan = host(p->q_a_norm, in->q_lora);
    auto hwqb = host(p->w_q_b, in->q_lora ? (size_t)NH * QD * in->q_lora : 0);
    auto hwkva = host(p->w_kv_a, (size_t)D * H), hkvn = host(p->kv_a_norm, in->kv_lora);
    auto hwkvb = host(p->w_kv_b, (size_t)NH * (in->nope + in->vdim) * in->kv_lora);
    auto hwo = host(p->w_o, (size_t)H * in->w_o_ld);
    fgh_mla_block_cfg c = {};
    c.batch = B, c.hidden = H, c.heads = NH, c.q_lora = in->q_lora, c.kv_lora = in->kv_lora;
    c.nope = in->nope, c.rope = in->rope, c.v_dim = in->vdim, c.max_context = in->smax;
    c.w_o_ld = in->w_o_ld, c.eps = 1e-6, c.scale = 1.0 / sqrt((double)(in->nope + in->rope));
    c.cs_scale = in->cs_scale, c.inv_freq = in->inv_freq, c.dtype = in->dt, c.round_new_row = true;
    fgh_mla_block_weights w = {};
    w.input_norm = p->no_input_norm ? nullptr : hn.data();
    w.w_q = in->q_lora ? nullptr : hwq.data();
    w.w_q_a = hwqa.data(), w.q_a_norm = hqan.data(), w.w_q_b = hwqb.data();
    w.w_kv_a = hwkva.data(), w.kv_a_norm = hkvn.data(), w.w_kv_b = hwkvb.data(), w.w_o = hwo.data();
    std::vector<int> rpos(pos);
    for (int &v : rpos)
        v = std::max(v, 0);   // (an inactive slot's reference is not compared)
    std::vector<double> y((size_t)B * H), new_row((size_t)B * D);
    fgh_ref_mla_block(&c, &w, hx.data(), view.data(), rpos.data(), y.data(), new_row.data(), nullptr);
    auto hy = host(p->y, (size_t)B * H);
    if (!tol)
        tol = in->dt == FGH_F16 ? 2e-3 : 1e-2;
    for (int b = 0; b < B; b++) {
        if (pos[b] < 0) {
            bool zero = true;
            for (int i = 0; i < H; i++)
                zero &= hy[(size_t)b * H + i] == 0 || hy[(size_t)b * H + i] == 0x8000;
            CHECKF(name, zero, "request %d (inactive): y not all zero", b);
            continue;
        }
        const fgh_err e = fgh_compare(hy.data() + (size_t)b * H, in->dt, y.data() + (size_t)b * H, H);
        CHECKF(name, e.nonfinite == 0 && e.rel_l2 <= tol, "request %d y: rel L2 %.3e (limit %.0e), %zu "
               "non-finite", b, e.rel_l2, tol, e.nonfinite);
        cudaMemcpy(row.data(), cache_row(p, b, pos[b]), D * 2,
                   cudaMemcpyDeviceToHost);
        std::vector<double> want(D);
        for (int i = 0; i < D; i++)
            want[i] = fgh_rounded(in->dt, new_row[(size_t)b * D + i]);
        const fgh_err r = fgh_compare(row.data(), in->dt, want.data(), D);
        const double row_tol = in->dt == FGH_F16 ? 2e-3 : 1e-2;   // the row is the same math in both
        CHECKF(name, r.nonfinite == 0 && r.rel_l2 <= row_tol, "request %d appended row: rel L2 %.3e",
               b, r.rel_l2);
        printf("    %s: request %d pos %d: y rel L2 %.3e, new row %.3e\n", name, b, pos[b],
               e.rel_l2, r.rel_l2);
    }
}

// Graph replays of one binding bitwise equal to its direct launch: y, the
// workspace and every active request's appended row poisoned before each
// (the block is deterministic by construction: fixed-order sums, no atomic
// sums, D's atomicMax of the maxima is order-free; a race in global memory shows here, where the sanitizers cannot
// see it).  B_max requests at mixed positions, slot 1 inactive from B_max 3.
void check_repeat(const Inst *in, cudaStream_t s, int repeats)
{
    char name[320];
    snprintf(name, sizeof name, "%s: %d graph replays bitwise equal to the direct launch "
             "(y, workspace, appended rows poisoned before each)", in->name, repeats);
    Problem p;
    if (!CHECKF(name, make_problem(&p, in, in->bmax, s), "inputs")) {
        free_problem(&p);
        return;
    }
    const int B = p.B, H = in->hidden, D = in->kv_lora + in->rope;
    const int cap = std::min(in->smax - 1, 4096);
    std::vector<int> pos(B);
    for (int b = 0; b < B; b++)
        pos[b] = b == 1 && B > 2 ? -1 : (b * 997 + 131) % (cap + 1);
    cudaMemcpyAsync(p.positions, pos.data(), B * sizeof(int), cudaMemcpyHostToDevice, s);
    fg_binding *bd = nullptr;
    fg_binding_info info = {};
    bool ok = bind(&p, &bd) == FG_OK && fg_binding_get_info(bd, &info) == FG_OK;
    const size_t ws = ok && info.entry ? info.entry->workspace_bytes : 0;
    auto poison = [&] {
        bool done = fgh_poison_device(p.y, (size_t)B * H * 2, s) == 0 &&
                    (!ws || fgh_poison_device(info.workspace, ws, s) == 0);
        for (int b = 0; b < B; b++)
            if (pos[b] >= 0)
                done = done && fgh_poison_device(cache_row(&p, b, pos[b]), (size_t)D * 2, s) == 0;
        return done;
    };
    // y and the appended rows, one vector
    auto fetch = [&](std::vector<uint16_t> &out) {
        out.resize((size_t)B * (H + D));
        bool done = fgh_ok(cudaMemcpyAsync(out.data(), p.y, (size_t)B * H * 2,
                                           cudaMemcpyDeviceToHost, s));
        for (int b = 0; b < B; b++)
            if (pos[b] >= 0)
                done = done && fgh_ok(cudaMemcpyAsync(out.data() + (size_t)B * H + (size_t)b * D,
                                                      cache_row(&p, b, pos[b]), (size_t)D * 2,
                                                      cudaMemcpyDeviceToHost, s));
        return done && fgh_ok(cudaStreamSynchronize(s));
    };
    std::vector<uint16_t> first, out;
    ok = ok && poison() && fg_launch(bd, s) == FG_OK && fetch(first);
    // the direct launch wrote every active output (poison is NaN; NaN == NaN bitwise)
    size_t nonfinite = 0;
    for (int b = 0; ok && b < B; b++)
        if (pos[b] >= 0) {
            for (int i = 0; i < H; i++)
                nonfinite += nonfinite16(in->dt, first[(size_t)b * H + i]);
            for (int i = 0; i < D; i++)
                nonfinite += nonfinite16(in->dt, first[(size_t)B * H + (size_t)b * D + i]);
        }
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ok = ok && fgh_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (ok) {
        const fg_status st = fg_launch(bd, s);
        ok = fgh_ok(cudaStreamEndCapture(s, &graph)) && st == FG_OK &&
             fgh_ok(cudaGraphInstantiate(&exec, graph, 0));
    }
    int diff = 0, runs = 0;
    for (; ok && runs < repeats; runs++) {
        ok = poison() && fgh_ok(cudaGraphLaunch(exec, s)) && fetch(out);
        diff += ok && memcmp(first.data(), out.data(), out.size() * 2) != 0;
    }
    // every counter but the grid barrier's back at 0 after the launches, where
    // the next launch starts (bind zeroes them once)
    const unsigned counters = ok && info.entry ? info.entry->counter_count : 0;
    std::vector<unsigned> left(counters);
    size_t set = 0;
    if (counters > 1) {
        ok = fgh_ok(cudaMemcpy(left.data(), info.counters, counters * sizeof(unsigned), cudaMemcpyDeviceToHost));
        for (unsigned i = 1; ok && i < counters; i++)
            set += left[i] != 0;
    }
    CHECKF(name, ok && nonfinite == 0 && diff == 0 && runs == repeats && set == 0,
           "%d of %d replays differ, %zu non-finite outputs in the direct launch, %zu counters left "
           "set past the grid barrier's%s",
           diff, runs, nonfinite, set, ok ? "" : " (a bind, launch or copy failed)");
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    fg_binding_free(bd);
    free_problem(&p);
}

void test_instance(const Inst *in, cudaStream_t s, bool quick)
{
    printf("== %s: hidden %d, heads %d, q_lora %d, kv_lora %d, rope %d, S_max %d, page %d, "
           "B_max %d\n", in->name, in->hidden, in->heads, in->q_lora, in->kv_lora, in->rope,
           in->smax, in->page, in->bmax);
    // positions the reference can afford: it recomputes every head's K and V
    // from each latent row (heads x pos x (nope + v_dim) x kv_lora products)
    const int cap = std::min(in->smax - 1, std::max(64, 16000 / in->heads));
    const int P = in->page ? in->page : 64;
    std::vector<std::vector<int>> cases = {{0}, {std::min(P - 1, cap)}, {std::min(P, cap)}, {33}};
    if (!quick)
        cases.push_back({cap});
    for (auto &c : cases) {
        Problem p;
        const bool ok = CHECKF(in->name, make_problem(&p, in, 1, s), "inputs");
        if (ok) {
            char what[64];
            snprintf(what, sizeof what, "B=1, pos %d", c[0]);
            run_case(&p, c, what, s);
        }
        free_problem(&p);
        if (!ok)
            return;
    }
    {   // without an input norm (x as is)
        Problem p;
        if (CHECKF(in->name, make_problem(&p, in, 1, s), "inputs")) {
            p.no_input_norm = true;
            run_case(&p, {std::min(P + 1, cap)}, "B=1, no input norm", s);
        }
        free_problem(&p);
    }
    if (in->bmax >= 2) {
        Problem p;
        if (CHECKF(in->name, make_problem(&p, in, 2, s), "inputs")) {
            run_case(&p, {std::min(P + 1, cap), 5}, "B=2, mixed positions", s);
            run_case(&p, {-1, 70}, "B=2, slot 0 inactive", s);
            run_nan_case(&p, 40, s);   // (last: it leaves a NaN row in request 0's cache)
        }
        free_problem(&p);
    }
    if (in->bmax > 2) {   // every slot of the launch (from B_max 4: the tensor-core form's second n-tile)
        Problem p;
        if (CHECKF(in->name, make_problem(&p, in, in->bmax, s), "inputs")) {
            std::vector<int> pos(in->bmax);
            for (int b = 0; b < in->bmax; b++)
                pos[b] = b == 1 ? -1 : b * 37 % (cap + 1);
            char what[64];
            snprintf(what, sizeof what, "B=%d (B_max), mixed positions, slot 1 inactive", in->bmax);
            run_case(&p, pos, what, s);
        }
        free_problem(&p);
    }
}

// ---- the unfused baseline ----

// the new latent row of request b: rmsnorm(c, kv_a_norm) | k_pe turned at
// pos, into the cache; the core's length pos + 1 (0: an inactive slot)
template <typename T>
__global__ void bl_append(const T *kv, const T *kv_norm, T *cache, const int *block_table,
                          const int *positions, int *lengths, const float *inv_freq, float cs,
                          int kvl, int rope, int smax, int page, float eps)
{
    const int b = blockIdx.x, D = kvl + rope, pos = positions[b];
    const bool active = pos >= 0 && pos < smax;
    if (threadIdx.x == 0)
        lengths[b] = active ? pos + 1 : 0;
    if (!active)
        return;
    const T *r = kv + (size_t)b * D;
    const float inv = fgh_inv_rms(r, kvl, eps);
    const size_t row = page ? (size_t)block_table[(size_t)b * (smax / page) + pos / page] * page + pos % page
                            : (size_t)b * smax + pos;
    T *dst = cache + row * D;
    for (int i = threadIdx.x; i < kvl; i += blockDim.x)
        dst[i] = fgh_from_f<T>(fgh_to_f(r[i]) * inv * fgh_to_f(kv_norm[i]));
    for (int i = threadIdx.x; i < rope / 2; i += blockDim.x) {
        float sn, c;
        sincosf((float)pos * inv_freq[i], &sn, &c);
        c *= cs, sn *= cs;
        const float x0 = fgh_to_f(r[kvl + 2 * i]), x1 = fgh_to_f(r[kvl + 2 * i + 1]);
        dst[kvl + 2 * i] = fgh_from_f<T>(x0 * c - x1 * sn);
        dst[kvl + 2 * i + 1] = fgh_from_f<T>(x0 * sn + x1 * c);
    }
}

// q_abs[b][h][kvl + 2i, +1] = q_pe of head h turned at pos (block (h, b))
template <typename T>
__global__ void bl_qpe(const T *q, T *q_abs, const int *positions, const float *inv_freq, float cs,
                       int heads, int nope, int rope, int kvl)
{
    const int h = blockIdx.x, b = blockIdx.y;
    const int pos = max(positions[b], 0), QD = nope + rope, D = kvl + rope;
    const T *src = q + ((size_t)b * heads + h) * QD + nope;
    T *dst = q_abs + ((size_t)b * heads + h) * D + kvl;
    for (int i = threadIdx.x; i < rope / 2; i += blockDim.x) {
        float sn, c;
        sincosf((float)pos * inv_freq[i], &sn, &c);
        c *= cs, sn *= cs;
        const float x0 = fgh_to_f(src[2 * i]), x1 = fgh_to_f(src[2 * i + 1]);
        dst[2 * i] = fgh_from_f<T>(x0 * c - x1 * sn);
        dst[2 * i + 1] = fgh_from_f<T>(x0 * sn + x1 * c);
    }
}

struct Baseline {
    cublasHandle_t blas = nullptr;
    void *blas_ws = nullptr;   // cuBLAS's workspace, ours (nothing allocated while a graph is captured)
    void *xn = nullptr, *qa = nullptr, *qan = nullptr, *q = nullptr, *kv = nullptr;
    void *q_abs = nullptr, *o_lat = nullptr, *o = nullptr;
    float *lse = nullptr, *inv_freq = nullptr;
    int *lengths = nullptr;
    fg_binding *core = nullptr;
};

void baseline_free(Baseline *bl)
{
    if (bl->blas)
        cublasDestroy(bl->blas);
    fg_binding_free(bl->core);
    void *ptrs[] = {bl->xn, bl->qa, bl->qan, bl->q, bl->kv, bl->q_abs, bl->o_lat, bl->o,
                    bl->lse, bl->inv_freq, bl->lengths, bl->blas_ws};
    for (void *q : ptrs)
        cudaFree(q);
    *bl = Baseline{};
}

// Buffers, cuBLAS (on stream s, with a workspace of its own) and the core's
// binding for problem p; false (why in *why) where no core instance of its
// shape is there.
bool baseline_init(Baseline *bl, const Problem *p, cudaStream_t s, char *why, size_t nwhy)
{
    const Inst *in = p->in;
    const int B = p->B, NH = in->heads, QD = in->nope + in->rope, D = in->kv_lora + in->rope;
    const size_t e = 2;
    bool ok = fgh_ok(cudaMalloc(&bl->xn, (size_t)B * in->hidden * e)) &&
              fgh_ok(cudaMalloc(&bl->q, (size_t)B * NH * QD * e)) &&
              fgh_ok(cudaMalloc(&bl->kv, (size_t)B * D * e)) &&
              fgh_ok(cudaMalloc(&bl->q_abs, (size_t)B * NH * D * e)) &&
              fgh_ok(cudaMalloc(&bl->o_lat, (size_t)B * NH * in->kv_lora * e)) &&
              fgh_ok(cudaMalloc(&bl->o, (size_t)B * NH * in->vdim * e)) &&
              fgh_ok(cudaMalloc(&bl->lse, sizeof(float) * B * NH)) &&
              fgh_ok(cudaMalloc(&bl->lengths, sizeof(int) * B)) &&
              fgh_ok(cudaMalloc(&bl->inv_freq, sizeof(float) * in->rope / 2)) &&
              fgh_upload(bl->inv_freq, in->inv_freq, sizeof(float) * in->rope / 2) == 0 &&
              cublasCreate(&bl->blas) == CUBLAS_STATUS_SUCCESS &&
              fgh_ok(cudaMalloc(&bl->blas_ws, (size_t)32 << 20)) &&
              cublasSetStream(bl->blas, s) == CUBLAS_STATUS_SUCCESS &&
              cublasSetWorkspace(bl->blas, bl->blas_ws, (size_t)32 << 20) == CUBLAS_STATUS_SUCCESS;
    if (ok && in->q_lora)
        ok = fgh_ok(cudaMalloc(&bl->qa, (size_t)B * in->q_lora * e)) &&
             fgh_ok(cudaMalloc(&bl->qan, (size_t)B * in->q_lora * e));
    if (!ok) {
        snprintf(why, nwhy, "baseline buffers");
        return false;
    }
    fg_mla_decode_args a = {};
    a.dtype = in->dt == FGH_F16 ? FG_REG_F16 : FG_REG_BF16;
    a.heads = NH, a.kv_lora = in->kv_lora, a.rope_dim = in->rope, a.max_context = in->smax;
    a.page_size = in->page, a.batch = B;
    a.q = bl->q_abs, a.cache = p->cache, a.block_table = p->block_table, a.lengths = bl->lengths;
    a.out = bl->o_lat, a.lse = bl->lse;
    a.scale = 1.f / sqrtf((float)(in->nope + in->rope));
    const fg_status st = fg_mla_decode_bind(g_fg, &a, &bl->core);
    if (st != FG_OK) {
        snprintf(why, nwhy, "no MLA core of this shape (%s: %s)", fg_status_string(st), fg_last_error());
        return false;
    }
    return true;
}

template <typename T>
bool baseline_step_t(Baseline *bl, const Problem *p, cudaStream_t s, cudaDataType dt)
{
    const Inst *in = p->in;
    const int B = p->B, H = in->hidden, NH = in->heads, QD = in->nope + in->rope;
    const int D = in->kv_lora + in->rope, KV = in->kv_lora, V = in->vdim, NOPE = in->nope;
    const long long WKVB = (long long)(NOPE + V) * KV;   // a head's rows of W_kv_b
    const float one = 1.f, zero = 0.f, eps = 1e-6f;
    (void)s;   // cuBLAS's stream was set at init; the kernels and the core take s
    auto gemm = [&](cublasOperation_t ta, int m, int n, int k, const void *A, int lda, const void *Bm,
                    int ldb, void *C, int ldc) {
        return cublasGemmEx(bl->blas, ta, CUBLAS_OP_N, m, n, k, &one, A, dt, lda, Bm, dt, ldb, &zero, C,
                            dt, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    };
    auto batched = [&](cublasOperation_t ta, int m, int n, int k, const void *A, int lda, long long sa,
                       const void *Bm, int ldb, long long sb, void *C, int ldc, long long sc) {
        return cublasGemmStridedBatchedEx(bl->blas, ta, CUBLAS_OP_N, m, n, k, &one, A, dt, lda, sa, Bm, dt,
                                          ldb, sb, &zero, C, dt, ldc, sc, NH, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    };
    // rows are row-major [rows, k]: in cuBLAS's column-major terms W^T
    const void *xin = p->x;   // x as is without an input norm
    if (!p->no_input_norm) {
        fgh_rmsnorm_rows<T><<<B, 256, 0, s>>>((const T *)p->x, (const T *)p->input_norm, (T *)bl->xn, H, eps);
        xin = bl->xn;
    }
    bool ok;
    if (in->q_lora) {
        ok = gemm(CUBLAS_OP_T, in->q_lora, B, H, p->w_q_a, H, xin, H, bl->qa, in->q_lora);
        fgh_rmsnorm_rows<T><<<B, 256, 0, s>>>((const T *)bl->qa, (const T *)p->q_a_norm, (T *)bl->qan,
                                        in->q_lora, eps);
        ok = ok && gemm(CUBLAS_OP_T, NH * QD, B, in->q_lora, p->w_q_b, in->q_lora, bl->qan, in->q_lora,
                        bl->q, NH * QD);
    } else {
        ok = gemm(CUBLAS_OP_T, NH * QD, B, H, p->w_q, H, xin, H, bl->q, NH * QD);
    }
    ok = ok && gemm(CUBLAS_OP_T, D, B, H, p->w_kv_a, H, xin, H, bl->kv, D);
    bl_append<T><<<B, 256, 0, s>>>((const T *)bl->kv, (const T *)p->kv_a_norm, (T *)p->cache,
                                   p->block_table, p->positions, bl->lengths, bl->inv_freq,
                                   in->cs_scale, KV, in->rope, in->smax, in->page, eps);
    // q_abs_h = W_uk_h^T q_nope_h: W_uk_h is [nope, kv_lora] row-major, i.e. [kv_lora, nope]
    // column-major; q_nope_h the nope rows of head h's column of q
    ok = ok && batched(CUBLAS_OP_N, KV, B, NOPE, p->w_kv_b, KV, WKVB, bl->q, NH * QD, QD, bl->q_abs,
                       NH * D, D);
    bl_qpe<T><<<dim3(NH, B), 32, 0, s>>>((const T *)bl->q, (T *)bl->q_abs, p->positions, bl->inv_freq,
                                         in->cs_scale, NH, NOPE, in->rope, KV);
    ok = ok && fg_launch(bl->core, s) == FG_OK;
    // o_h = W_uv_h o_lat_h: W_uv_h is [v_dim, kv_lora] row-major
    ok = ok && batched(CUBLAS_OP_T, V, B, KV, (const T *)p->w_kv_b + (size_t)NOPE * KV, KV, WKVB, bl->o_lat,
                       NH * KV, KV, bl->o, NH * V, V);
    ok = ok && gemm(CUBLAS_OP_T, H, B, NH * V, p->w_o, in->w_o_ld, bl->o, NH * V, p->y, H);
    return ok && cudaPeekAtLastError() == cudaSuccess;
}

bool baseline_step(Baseline *bl, const Problem *p, cudaStream_t s)
{
    return p->in->dt == FGH_F16 ? baseline_step_t<__half>(bl, p, s, CUDA_R_16F)
                                : baseline_step_t<__nv_bfloat16>(bl, p, s, CUDA_R_16BF);
}

// The baseline is a yardstick only if it is right: once per instance, against
// the reference, at batch 1 and (B_max >= 2) 2 with mixed and inactive slots.
void check_baseline(const Inst *in, cudaStream_t s)
{
    const int pos = std::min(in->smax - 1, std::max(64, 16000 / in->heads));
    for (int B : {1, 2}) {
        if (B > in->bmax)
            break;
        char name[240];
        snprintf(name, sizeof name, "%s: the unfused baseline against the reference, B=%d", in->name, B);
        Problem p;
        Baseline bl;
        char why[300] = "";
        if (!CHECKF(name, make_problem(&p, in, B, s), "inputs")) {
            free_problem(&p);
            return;
        }
        if (!baseline_init(&bl, &p, s, why, sizeof why)) {
            fgh_skip(name, why);
        } else {
            auto step = [&](cudaStream_t st) { return baseline_step(&bl, &p, st); };
            if (B == 1) {
                run_case(&p, {pos}, "the unfused baseline", s, step, 3e-2);
            } else {
                run_case(&p, {pos, 5}, "the unfused baseline, B=2", s, step, 3e-2);
                run_case(&p, {-1, pos}, "the unfused baseline, B=2, slot 0 inactive", s, step, 3e-2);
            }
        }
        baseline_free(&bl);
        free_problem(&p);
    }
}

// ---- bench ----

// n 16-bit values from the device
std::vector<uint16_t> download16(const void *d, size_t n)
{
    std::vector<uint16_t> h(n);
    cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost);
    return h;
}

// (a launch that fails while a graph is captured leaves a shorter graph: counted, must be 0)
struct BenchCtx {
    std::vector<fg_binding *> b;
    int failed = 0;
};
void enqueue(void *ctx, int i, cudaStream_t s)
{
    auto *c = (BenchCtx *)ctx;
    c->failed += fg_launch(c->b[i % c->b.size()], s) != FG_OK;
}
struct BaselineCtx {
    std::vector<Baseline> bl;
    std::vector<Problem> *ps;
    int failed = 0;
};
void enqueue_baseline(void *ctx, int i, cudaStream_t s)
{
    auto *c = (BaselineCtx *)ctx;
    const size_t k = i % c->bl.size();
    c->failed += !baseline_step(&c->bl[k], &(*c->ps)[k], s);
}

// The points an instance is timed at.  The issue's: S = 4K and 16K, B = 1
// to B_max by powers of two (and B_max); --quick (fusegen tune's): S = 4K,
// B = 1 and B_max.
std::vector<std::pair<int, int>> bench_points(const Inst *in, bool quick)
{
    std::vector<int> Ss = {std::min(4096, in->smax)}, Bs = {1};
    if (!quick && in->smax >= 16384)
        Ss.push_back(16384);
    for (int B = 2; B < in->bmax; B *= 2)
        if (!quick)
            Bs.push_back(B);
    if (in->bmax > 1)
        Bs.push_back(in->bmax);
    std::vector<std::pair<int, int>> pts;
    for (int S : Ss)
        for (int B : Bs)
            pts.push_back({S, B});
    return pts;
}

void bench(cudaStream_t s, const fgh_device *dev, fgh_json *j, const std::vector<int> &sel,
           bool quick, bool baseline)
{
    fgh_ceilings ceil;
    fgh_measure_ceilings(s, (size_t)1 << 30, &ceil);
    fgh_json_ceilings(j, &ceil);
    printf("ceilings: copy %.0f GB/s, read %.0f GB/s\n", ceil.copy_gbps, ceil.read_gbps);
    struct InstFit {
        const Inst *in;
        fgh_fit fused, base;   // T = T0 + bytes / BW_eff over the instance's points
    };
    std::vector<InstFit> fits;
    fgh_json_arr_begin(j, "cases");
    for (int k : sel) {
        const Inst *in = &g_inst[k];
        const int H = in->hidden, NH = in->heads, D = in->kv_lora + in->rope, QD = in->nope + in->rope;
        const double wbytes = 2.0 * ((in->q_lora ? (double)in->q_lora * H + (double)NH * QD * in->q_lora
                                                 : (double)NH * QD * H) +
                                     (double)D * H + (double)NH * (in->nope + in->vdim) * in->kv_lora +
                                     (double)H * NH * in->vdim);
        std::vector<double> fb, fu, bb, bu;
        for (auto [S, B] : bench_points(in, quick)) {
            const double bytes = wbytes + 2.0 * B * (double)S * D;
            const int nsets = std::min(8, fgh_rotation_sets((size_t)bytes, dev->l2_bytes));
            std::vector<Problem> ps(nsets);
            BenchCtx ctx;
            bool ok = true;
            for (int i = 0; i < nsets && ok; i++) {
                ok = make_problem(&ps[i], in, B, s);
                std::vector<int> pos(B, S - 1);
                ok = ok && fgh_upload(ps[i].positions, pos.data(), B * sizeof(int)) == 0;
                fg_binding *bd = nullptr;
                ok = ok && bind(&ps[i], &bd) == FG_OK;
                ctx.b.push_back(bd);
            }
            char name[200];
            snprintf(name, sizeof name, "%s: bench B=%d S=%d", in->name, B, S);
            fgh_timing t = {};
            const size_t ny = (size_t)B * H;   // set 0's y, poisoned before each side's timed runs
            if (CHECKF(name, ok, "inputs or bind: %s", fg_last_error()))
                ok = fgh_poison_device(ps[0].y, ny * 2, s) == 0 &&
                     fgh_bench(s, enqueue, &ctx, nsets, 20.0, 7, &t) == 0 && ctx.failed == 0;
            CHECKF(name, ok, "timing");
            // (kept only where the baseline runs to be compared with)
            const std::vector<uint16_t> y_fused =
                ok && baseline ? download16(ps[0].y, ny) : std::vector<uint16_t>();
            // the unfused baseline over the same sets, where a core of the shape is there
            BaselineCtx bc;
            bc.ps = &ps;
            bc.bl.resize(nsets);
            char why[300] = "";
            bool bl_ok = ok && baseline;
            for (int i = 0; i < nsets && bl_ok; i++)   // each set run once outside a capture
                bl_ok = baseline_init(&bc.bl[i], &ps[i], s, why, sizeof why) &&
                        baseline_step(&bc.bl[i], &ps[i], s) && fgh_ok(cudaStreamSynchronize(s));
            fgh_timing tb = {};
            if (bl_ok)
                bl_ok = fgh_poison_device(ps[0].y, ny * 2, s) == 0 &&
                        fgh_bench(s, enqueue_baseline, &bc, nsets, 20.0, 7, &tb) == 0 && bc.failed == 0;
            if (!bl_ok && ok && baseline)
                printf("%s: baseline skipped: %s\n", name, why[0] ? why : "its run or timing failed");
            // what the timed launches made, against the baseline's on the same inputs
            // (lengths and batches the reference cannot afford): each within its
            // tolerance of the reference (1e-2 / 3e-2 in bf16), so within their sum
            if (bl_ok) {
                const std::vector<uint16_t> y_base = download16(ps[0].y, ny);
                std::vector<double> want(ny);
                for (size_t i = 0; i < ny; i++)
                    want[i] = fgh_get(y_base.data(), in->dt, i);
                const fgh_err e = fgh_compare(y_fused.data(), in->dt, want.data(), ny);
                const double tol = (in->dt == FGH_F16 ? 2e-3 : 1e-2) + 3e-2;
                char what[sizeof name + 48];   // name and the text after it
                snprintf(what, sizeof what, "%s: the timed output against the baseline's", name);
                CHECKF(what, e.nonfinite == 0 && e.rel_l2 <= tol, "rel L2 %.3e (limit %.0e), %zu non-finite",
                       e.rel_l2, tol, e.nonfinite);
            }
            for (auto &b : bc.bl)
                baseline_free(&b);
            if (ok) {
                const double us = t.med_us;
                printf("%-70s %8.2f us  %7.0f GB/s  %5.1f%% of read  baseline %8.2f us\n", name, us,
                       bytes / us / 1e3, 100.0 * bytes / us / 1e3 / ceil.read_gbps,
                       bl_ok ? tb.med_us : -1.0);
                fgh_json_obj_begin(j, nullptr);
                fgh_json_str(j, "instance", in->name);
                fgh_json_int(j, "batch", B);
                fgh_json_int(j, "S", S);
                fgh_json_num(j, "bytes", bytes);
                fgh_json_timing(j, "time", &t);
                fgh_json_num(j, "gbps", bytes / us / 1e3);
                fgh_json_num(j, "fraction_of_read_ceiling", bytes / us / 1e3 / ceil.read_gbps);
                fgh_json_arr_begin(j, "baselines");
                if (bl_ok) {
                    fgh_json_obj_begin(j, nullptr);
                    fgh_json_str(j, "name", "unfused_cublas_core");
                    fgh_json_str(j, "what", "cuBLAS projections, small kernels for the norms, RoPE and the "
                                            "append, the MLA core (mla_decode)");
                    fgh_json_timing(j, "time", &tb);   // as the other harnesses' baselines
                    fgh_json_obj_end(j);
                }
                fgh_json_arr_end(j);
                fgh_json_obj_end(j);
            }
            for (auto *bd : ctx.b)
                fg_binding_free(bd);
            for (auto &p : ps)
                free_problem(&p);
            if (ok)
                fb.push_back(bytes), fu.push_back(t.med_us);
            if (ok && bl_ok)
                bb.push_back(bytes), bu.push_back(tb.med_us);
        }
        fits.push_back({in, fgh_fit_points(fb.data(), fu.data(), (int)fb.size()),
                         fgh_fit_points(bb.data(), bu.data(), (int)bb.size())});
    }
    fgh_json_arr_end(j);
    fgh_json_arr_begin(j, "fits");
    for (const InstFit &f : fits)
        fgh_report_fit(j, f.in->name, "the (S, B) points", &f.fused, &f.base, ceil.read_gbps);
    fgh_json_arr_end(j);
}
#endif

}   // namespace

int main(int argc, char **argv)
{
    fgh_args a;
    fgh_args_init(&a);
    int grid = 0;   // --grid N (0: the plans')
    for (int i = 1; i < argc; i++) {
        if (fgh_common_arg(&a, argc, argv, &i))
            continue;
        if (!strcmp(argv[i], "--grid") && i + 1 < argc && (grid = atoi(argv[i + 1])) > 0) {
            i++;
            continue;
        }
        fprintf(stderr, "usage: %s [--kernels DIR] [--manifest FILE] [--only A,B] [--seed N] "
                        "[--quick] [--verbose] [--no-baseline] [--grid N] [--bench [--json FILE] [--commit C]]\n",
                argv[0]);
        return 2;
    }
    fgh_args_apply(&a);
    if (!fgh_shard_from_env())   // FG_SHARD=K/N: this run's share of the instances
        return 2;
    printf("test_mla_block: seed 0x%llx (--seed), kernels %s\n", (unsigned long long)fgh_base_seed(),
           a.kernels);
#ifndef FG_HAVE_FGRT
    fgh_skip("mla_block", "built without libfgrt (no runtime/include/fgrt.h)");
    return fgh_summary() ? 1 : 0;
#else
    char mpath[1024];
    char *manifest = fgh_open_manifest(a.manifest, a.kernels, mpath, sizeof mpath, nullptr);
    discover(a.kernels, manifest);
    if (g_ncubins == 0) {
        char why[600];
        snprintf(why, sizeof why, "no mla_block_*.cubin in %s", a.kernels);
        fgh_skip("mla_block", why);
        return fgh_summary() ? 1 : 0;
    }
    if (!g_ninst)
        CHECKF("mla_block: kernel folder", false, "%d mla_block cubins, none described by the "
               "manifest (--manifest)", g_ncubins);
    std::vector<const char *> names;
    for (int k = 0; k < g_ninst; k++)
        names.push_back(g_inst[k].name);
    std::unique_ptr<bool[]> chosen(new bool[g_ninst]);
    fgh_select(a.only, names.data(), names.size(), chosen.get());
    std::vector<int> sel;
    for (int k = 0; k < g_ninst; k++)
        if (chosen[k] && fgh_in_shard(g_inst[k].name))
            sel.push_back(k);
    for (int k : sel) {   // --grid: the instances run, each at most its plan's grid
        if (grid > g_inst[k].grid[0])
            CHECKF("mla_block: --grid", false, "%s: %d blocks, more than its plan's %lld", g_inst[k].name, grid,
                   g_inst[k].grid[0]);
        else if (grid > 0)
            g_inst[k].grid[0] = grid;
    }
    for (int k = 0; k < g_ninst; k++)
        make_entry(g_inst[k], &g_reg[k], &g_sizes[k]);
    g_nreg = g_ninst;
    discover_cores(a.kernels, manifest);
    if (a.only)
        CHECKF("mla_block: --only", !sel.empty(), "no instance matches '%s'", a.only);
    fgh_device dev;
    if (sel.empty() || fgh_device_open(0, &dev) != 0) {
        if (!sel.empty())
            fgh_skip("mla_block", "no usable GPU");
        return fgh_summary() ? 1 : 0;
    }
    const fg_status st = fg_init(g_reg, g_nreg, 0, &g_fg);
    if (!CHECKF("fgrt: fg_init", st == FG_OK, "%s (%s)", fg_status_string(st), fg_last_error()))
        return fgh_summary() ? 1 : 0;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (a.bench) {
        FILE *f;
        fgh_json j;
        char tool[64] = "test_mla_block --bench";
        if (grid > 0)
            snprintf(tool + strlen(tool), sizeof tool - strlen(tool), " --grid %d", grid);
        if (fgh_bench_doc_begin(&j, &f, a.json, &dev, a.commit, tool) != 0)
            return 2;
        bench(s, &dev, &j, sel, a.quick, a.baseline);
        fgh_bench_doc_end(&j, f, a.json);
    } else {
        for (int k : sel) {
            test_instance(&g_inst[k], s, a.quick);
            check_repeat(&g_inst[k], s, a.quick ? 2 : 1000);
            if (a.baseline)
                check_baseline(&g_inst[k], s);
        }
    }
    CHECK("mla_block: no CUDA error left", fgh_ok(cudaDeviceSynchronize()) && fgh_ok(cudaGetLastError()));
    cudaStreamDestroy(s);
    fg_shutdown(g_fg);
    free(manifest);
    return fgh_summary() ? 1 : 0;
#endif
}
