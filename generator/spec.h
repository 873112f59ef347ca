/* Specs: the typed form of the YAML files under specs/.  One file holds one
 * spec, a top-level mapping with `schema_version` and exactly one of `model`,
 * `gemm` or `target`.  Loading checks the schema (libcyaml, strict enums, no
 * unknown keys) and then every semantic rule; each error names the file, line,
 * column and key.  See README.md, "Spec format". */
#ifndef FG_SPEC_H
#define FG_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"

#define FG_SCHEMA_VERSION 1u

typedef enum { FG_DT_F16, FG_DT_BF16 } fg_dtype;
typedef enum { FG_FAMILY_LLAMA, FG_FAMILY_MLA } fg_model_family;
typedef enum { FG_ROPE_NEOX, FG_ROPE_GPTJ } fg_rope_layout;
typedef enum {
    FG_SCALING_NONE, FG_SCALING_LINEAR, FG_SCALING_LLAMA3, FG_SCALING_YARN
} fg_rope_scaling;
typedef enum { FG_KV_CONTIGUOUS, FG_KV_PAGED } fg_kv_layout;
typedef enum { FG_COLL_ALL_GATHER, FG_COLL_REDUCE_SCATTER } fg_collective;
typedef enum { FG_TOPO_NVSWITCH, FG_TOPO_FULL_MESH, FG_TOPO_RING, FG_TOPO_PCIE } fg_topology;
typedef enum { FG_ARCH_SM90A, FG_ARCH_GFX942, FG_ARCH_GFX90A } fg_arch;

/* Llama-family attention (MHA or GQA). */
typedef struct fg_attention {
    uint32_t heads, kv_heads, head_dim;
    bool qkv_bias;
    uint32_t sliding_window;   /* 0: full attention */
} fg_attention;

/* DeepSeek multi-head latent attention. */
typedef struct fg_mla {
    uint32_t heads;
    uint32_t q_lora_rank;      /* 0: no q_lora path (V2-Lite) */
    uint32_t kv_lora_rank;
    uint32_t qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    uint32_t tensor_parallel;
} fg_mla;

typedef struct fg_rope_scaling_spec {
    fg_rope_scaling type;
    double factor;
    double low_freq_factor, high_freq_factor;        /* llama3 */
    uint32_t original_max_position;                  /* llama3, yarn */
    double beta_fast, beta_slow, mscale, mscale_all_dim; /* yarn */
} fg_rope_scaling_spec;

typedef struct fg_rope {
    double theta;
    fg_rope_layout layout;
    fg_rope_scaling_spec *scaling;  /* NULL: no scaling */
} fg_rope;

typedef struct fg_kv_cache {
    fg_kv_layout layout;
    uint32_t page_size;        /* paged only */
} fg_kv_cache;

typedef struct fg_model {
    char *name;
    fg_model_family family;
    fg_dtype dtype;
    uint32_t hidden;
    double rms_eps;
    fg_attention *attention;   /* family llama */
    fg_mla *mla;               /* family mla */
    fg_rope *rope;
    fg_kv_cache *kv_cache;
    uint32_t *batch_sizes;
    unsigned batch_sizes_count;
    uint32_t max_context;
} fg_model;

/* One GEMM of a tensor-parallel layer.  m, n, k are the per-rank GEMM's
 * dims: all-gather gathers m/world_size rows from each rank into [m, k]
 * before [m, k] x [k, n]; reduce-scatter sums [m, n] partials and leaves
 * m/world_size rows on each rank. */
typedef struct fg_gemm_shape {
    char *name;
    fg_collective collective;
    uint32_t m, n, k;
} fg_gemm_shape;

typedef struct fg_gemm {
    char *name;
    fg_dtype dtype;
    uint32_t world_size;
    fg_topology topology;
    fg_gemm_shape *shapes;
    unsigned shapes_count;
} fg_gemm;

typedef struct fg_ceilings {
    double copy_gbps;          /* device-to-device copy, bytes read + written */
    double read_gbps;          /* read-only streaming */
    double matmul_bf16_tflops;
    char *source;              /* where the figures come from */
} fg_ceilings;

/* One GEMM's measured time (bf16, the library the executor calls). */
typedef struct fg_gemm_time {
    uint32_t m, n, k;
    double us;
} fg_gemm_time;

#define FG_MAX_GEMM_TIMES 1024

/* Peer copies over the copy engine between two GPUs of the node and the
 * GEMMs of the overlap specs, as `fusegen profile` measures them; what the
 * overlap planner's cost model reads (optional: a target without it gets no
 * overlap predictions). */
typedef struct fg_interconnect {
    double peer_copy_latency_us;   /* fixed cost of one peer copy */
    double peer_copy_gbps;         /* one direction, copies queued back to back */
    double peer_copy_bidir_gbps;   /* both directions at once, in sum */
    double gemm_slowdown;          /* fraction a GEMM slows while peer copies stream */
    double call_overhead_us;       /* the executor's fixed cost per call (optional) */
    /* NCCL's collectives alone, fitted as latency + bytes received per rank /
     * rate (optional: 0 gbps, serial NCCL is not predicted) */
    double nccl_ag_latency_us, nccl_ag_gbps;
    double nccl_rs_latency_us, nccl_rs_gbps;
    /* copy lanes (the executor's 2D order): every GPU of copy_lanes_gpus
     * pushing to every other at once, a lane a peer (2 GPUs: two lanes
     * each), a rank's round fitted as latency + its bytes / rate (optional:
     * 0, the model assumes the one-peer rate shared by the lanes) */
    double copy_lanes_latency_us, copy_lanes_gbps;
    uint32_t copy_lanes_gpus;
    fg_gemm_time *gemm_times;      /* optional; a shape not here runs at the matmul ceiling */
    unsigned gemm_times_count;
    char *source;                  /* where the figures come from */
} fg_interconnect;

typedef struct fg_target {
    char *name;
    fg_arch arch;
    uint32_t compute_units;           /* SMs or CUs */
    uint32_t warp_size;               /* 32 or 64 */
    uint32_t shared_mem_per_block;    /* bytes, opt-in maximum */
    uint32_t shared_mem_per_cu;       /* bytes */
    uint32_t registers_per_cu;        /* 32-bit registers */
    uint32_t max_registers_per_thread;
    uint32_t l2_bytes;
    uint32_t max_cluster_size;        /* 0: no thread-block clusters */
    fg_ceilings *ceilings;
    fg_interconnect *interconnect;    /* NULL: not profiled */
} fg_target;

/* One measured choice, written by `fusegen tune`: the configuration that ran
 * fastest for an instance family (an instance name without its
 * configuration part), with the figures that chose it (times summed over
 * the points measured).  Seven kinds of family, told apart by the name:
 *   decode_attn_..._grid (e.g. decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b16_grid):
 *     the grid form's threads, step_cols, slices_qkv, slices_o, key_rounds;
 *   decode_attn_... (e.g. decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2):
 *     the ring form's threads, stage_bytes, stages, in_flight [, in_flight_wo];
 *   rmsnorm_... (e.g. rmsnorm_sm90a_f16_h4096): threads [, cache_x];
 *   mla_decode_... (e.g. mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b16):
 *     threads, heads_per_block, stages, cluster, clusters;
 *   overlap_gemm_... (e.g. overlap_gemm_sm90a_bf16_n8192_k1024):
 *     threads, stages, c_rounds, group_m;
 *   mla_block_... (e.g. mla_block_sm90a_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1):
 *     threads, slots, piece_rows, chunk_rows [, mma_proj, absorb_apart];
 *   overlap_reduce_... (e.g. overlap_reduce_sm90a_bf16_w2): threads, blocks_per_cu.
 * A field of another kind is an error. */
typedef struct fg_tuning_entry {
    char *family;
    uint32_t threads;
    uint32_t stage_bytes, stages, in_flight;   /* decode_attn (ring); stages also mla_decode */
    uint32_t in_flight_wo;     /* stages in flight while W_o streams; 0: as in_flight */
    bool cache_x;              /* rmsnorm: x loaded through the caches, not streamed */
    uint32_t heads_per_block, cluster, clusters;   /* mla_decode: block shape, splits */
    /* decode_attn grid form: columns a lane's weight loads cover at once, the
     * projections' column slices, key rounds in flight */
    uint32_t step_cols, slices_qkv, slices_o, key_rounds;
    /* overlap_gemm: (stages above) the C buffer's rounds a tile, tile rows a group */
    uint32_t c_rounds, group_m;
    /* mla_block: the ring's slots, weight rows a piece at most, W_uk rows a
     * chunk, the projections on tensor cores, the blocks that absorb W_uk
     * kept out of the projections before the absorption */
    uint32_t slots, piece_rows, chunk_rows;
    bool mma_proj, absorb_apart;
    uint32_t blocks_per_cu;    /* overlap_reduce: blocks a compute unit (with threads) */
    double tuned_us, model_us, worst_us;
    uint32_t candidates;
    char *measured;            /* GPU, points, commit */
} fg_tuning_entry;

/* The kinds of instance family a tuning entry can name. */
typedef enum {
    FG_TUNE_NONE,
    FG_TUNE_RING,
    FG_TUNE_RMSNORM,
    FG_TUNE_MLA,
    FG_TUNE_GRID,
    FG_TUNE_GEMM,
    FG_TUNE_MLA_BLOCK,
    FG_TUNE_REDUCE
} fg_tuning_kind;

/* The kind of a family by its name (decode_attn_..._grid is the grid form's,
 * any other decode_attn_... the ring form's, rmsnorm_... RMSNorm's,
 * mla_decode_... the MLA core's, overlap_gemm_... the overlap family's
 * GEMM's, mla_block_... the whole MLA block's, overlap_reduce_... the
 * overlap family's reduction's); FG_TUNE_NONE for any other. */
fg_tuning_kind fg_tuning_kind_of(const char *family);

/* A tuning file (specs/tuning/<target>.yaml): `generate` uses an entry's
 * configuration in place of the model's where one exists. */
typedef struct fg_tuning {
    char *target;
    fg_tuning_entry *entries;
    unsigned entries_count;
} fg_tuning;

typedef enum { FG_SPEC_MODEL, FG_SPEC_GEMM, FG_SPEC_TARGET, FG_SPEC_TUNING } fg_spec_kind;

typedef struct fg_spec {
    char *path;                /* as given; used in messages and banners */
    fg_spec_kind kind;
    uint32_t schema_version;
    fg_model *model;
    fg_gemm *gemm;
    fg_target *target;
    fg_tuning *tuning;
} fg_spec;

/* Loads and validates one spec file.  Returns NULL after reporting every
 * error found to `d`. */
/* The longest name a spec may give (model, GEMM, shape, target). */
#define FG_SPEC_NAME_MAX 64

/* Whether `name` is a valid spec name: 1..FG_SPEC_NAME_MAX lowercase letters,
 * digits, '.', '_' or '-', starting with a letter or digit, no "..".  Names
 * become file stems and kernel symbols. */
bool fg_spec_name_ok(const char *name);

fg_spec *fg_spec_load(const char *path, fg_diag *d);
/* A GEMM-overlap spec at path, or NULL (reported: another kind of spec is
 * an error too). */
fg_spec *fg_spec_load_gemm(const char *path, fg_diag *d);
/* The same for a spec already in memory (len bytes; no terminator needed);
 * `path` names it in messages. */
fg_spec *fg_spec_load_text(const char *path, const char *text, size_t len, fg_diag *d);
/* Writes a spec's text to `path` (fg_write_if_changed) only if it loads as a
 * spec; otherwise says so and leaves the file as it was.  0 on success. */
int fg_spec_write_checked(const char *path, const char *text, size_t len, bool *changed,
                          fg_diag *d);
void fg_spec_free(fg_spec *s);

const char *fg_dtype_name(fg_dtype t);   /* "f16", "bf16" */
unsigned fg_dtype_bytes(fg_dtype t);
const char *fg_arch_name(fg_arch a);     /* "sm_90a", "gfx942", "gfx90a" */
const char *fg_arch_tag(fg_arch a);      /* name part: "sm90a", "gfx942", ... */
bool fg_arch_is_amd(fg_arch a);
const char *fg_collective_name(fg_collective c);
const char *fg_topology_name(fg_topology t);
const char *fg_scaling_name(fg_rope_scaling s);
const char *fg_rope_layout_name(fg_rope_layout l);
const char *fg_kv_layout_name(fg_kv_layout l);
const char *fg_family_name(fg_model_family f);

#endif
