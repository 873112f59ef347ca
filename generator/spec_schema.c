/* The libcyaml schemas of the spec format.  They are the one description of
 * which keys exist and what type each has: spec.c walks them to check a
 * document before libcyaml loads it into the structs of spec.h. */
#include "spec_schema.h"

#include <stddef.h>

#define ENUM_COUNT(a) (sizeof(a) / sizeof((a)[0]))

const cyaml_strval_t fg_dtype_strings[] = {{"f16", FG_DT_F16}, {"bf16", FG_DT_BF16}};
const unsigned fg_dtype_strings_count = ENUM_COUNT(fg_dtype_strings);

static const cyaml_strval_t family_strings[] = {
    {"llama", FG_FAMILY_LLAMA}, {"mla", FG_FAMILY_MLA}};
static const cyaml_strval_t layout_strings[] = {{"neox", FG_ROPE_NEOX}, {"gptj", FG_ROPE_GPTJ}};
static const cyaml_strval_t scaling_strings[] = {
    {"none", FG_SCALING_NONE}, {"linear", FG_SCALING_LINEAR},
    {"llama3", FG_SCALING_LLAMA3}, {"yarn", FG_SCALING_YARN}};
static const cyaml_strval_t kv_strings[] = {
    {"contiguous", FG_KV_CONTIGUOUS}, {"paged", FG_KV_PAGED}};
static const cyaml_strval_t collective_strings[] = {
    {"all_gather", FG_COLL_ALL_GATHER}, {"reduce_scatter", FG_COLL_REDUCE_SCATTER}};
static const cyaml_strval_t topology_strings[] = {
    {"nvswitch", FG_TOPO_NVSWITCH}, {"full_mesh", FG_TOPO_FULL_MESH},
    {"ring", FG_TOPO_RING}, {"pcie", FG_TOPO_PCIE}};
const cyaml_strval_t fg_arch_strings[] = {
    {"sm_90a", FG_ARCH_SM90A}, {"gfx942", FG_ARCH_GFX942}, {"gfx90a", FG_ARCH_GFX90A}};
const unsigned fg_arch_strings_count = ENUM_COUNT(fg_arch_strings);

#define NAME_MAX_LEN FG_SPEC_NAME_MAX
#define OPT (CYAML_FLAG_OPTIONAL)
#define STRICT (CYAML_FLAG_STRICT)
#define OPT_PTR (CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL)

/* ---- model ---- */

static const cyaml_schema_field_t attention_fields[] = {
    CYAML_FIELD_UINT("heads", CYAML_FLAG_DEFAULT, fg_attention, heads),
    CYAML_FIELD_UINT("kv_heads", CYAML_FLAG_DEFAULT, fg_attention, kv_heads),
    CYAML_FIELD_UINT("head_dim", CYAML_FLAG_DEFAULT, fg_attention, head_dim),
    CYAML_FIELD_BOOL("qkv_bias", OPT, fg_attention, qkv_bias),
    CYAML_FIELD_UINT("sliding_window", OPT, fg_attention, sliding_window),
    CYAML_FIELD_END};

static const cyaml_schema_field_t mla_fields[] = {
    CYAML_FIELD_UINT("heads", CYAML_FLAG_DEFAULT, fg_mla, heads),
    CYAML_FIELD_UINT("q_lora_rank", OPT, fg_mla, q_lora_rank),
    CYAML_FIELD_UINT("kv_lora_rank", CYAML_FLAG_DEFAULT, fg_mla, kv_lora_rank),
    CYAML_FIELD_UINT("qk_nope_head_dim", CYAML_FLAG_DEFAULT, fg_mla, qk_nope_head_dim),
    CYAML_FIELD_UINT("qk_rope_head_dim", CYAML_FLAG_DEFAULT, fg_mla, qk_rope_head_dim),
    CYAML_FIELD_UINT("v_head_dim", CYAML_FLAG_DEFAULT, fg_mla, v_head_dim),
    CYAML_FIELD_UINT("tensor_parallel", OPT, fg_mla, tensor_parallel),
    CYAML_FIELD_END};

static const cyaml_schema_field_t scaling_fields[] = {
    CYAML_FIELD_ENUM("type", STRICT, fg_rope_scaling_spec, type, scaling_strings,
                     ENUM_COUNT(scaling_strings)),
    CYAML_FIELD_FLOAT("factor", OPT, fg_rope_scaling_spec, factor),
    CYAML_FIELD_FLOAT("low_freq_factor", OPT, fg_rope_scaling_spec, low_freq_factor),
    CYAML_FIELD_FLOAT("high_freq_factor", OPT, fg_rope_scaling_spec, high_freq_factor),
    CYAML_FIELD_UINT("original_max_position", OPT, fg_rope_scaling_spec, original_max_position),
    CYAML_FIELD_FLOAT("beta_fast", OPT, fg_rope_scaling_spec, beta_fast),
    CYAML_FIELD_FLOAT("beta_slow", OPT, fg_rope_scaling_spec, beta_slow),
    CYAML_FIELD_FLOAT("mscale", OPT, fg_rope_scaling_spec, mscale),
    CYAML_FIELD_FLOAT("mscale_all_dim", OPT, fg_rope_scaling_spec, mscale_all_dim),
    CYAML_FIELD_END};

static const cyaml_schema_field_t rope_fields[] = {
    CYAML_FIELD_FLOAT("theta", CYAML_FLAG_DEFAULT, fg_rope, theta),
    CYAML_FIELD_ENUM("layout", STRICT, fg_rope, layout, layout_strings,
                     ENUM_COUNT(layout_strings)),
    CYAML_FIELD_MAPPING_PTR("scaling", OPT_PTR, fg_rope, scaling, scaling_fields),
    CYAML_FIELD_END};

static const cyaml_schema_field_t kv_fields[] = {
    CYAML_FIELD_ENUM("layout", STRICT, fg_kv_cache, layout, kv_strings, ENUM_COUNT(kv_strings)),
    CYAML_FIELD_UINT("page_size", OPT, fg_kv_cache, page_size),
    CYAML_FIELD_END};

static const cyaml_schema_value_t batch_entry = {
    CYAML_VALUE_UINT(CYAML_FLAG_DEFAULT, uint32_t)};

static const cyaml_schema_field_t model_fields[] = {
    CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, fg_model, name, 1, NAME_MAX_LEN),
    CYAML_FIELD_ENUM("family", STRICT, fg_model, family, family_strings,
                     ENUM_COUNT(family_strings)),
    CYAML_FIELD_ENUM("dtype", STRICT, fg_model, dtype, fg_dtype_strings,
                     ENUM_COUNT(fg_dtype_strings)),
    CYAML_FIELD_UINT("hidden", CYAML_FLAG_DEFAULT, fg_model, hidden),
    CYAML_FIELD_FLOAT("rms_eps", CYAML_FLAG_DEFAULT, fg_model, rms_eps),
    CYAML_FIELD_MAPPING_PTR("attention", OPT_PTR, fg_model, attention, attention_fields),
    CYAML_FIELD_MAPPING_PTR("mla", OPT_PTR, fg_model, mla, mla_fields),
    CYAML_FIELD_MAPPING_PTR("rope", CYAML_FLAG_POINTER, fg_model, rope, rope_fields),
    CYAML_FIELD_MAPPING_PTR("kv_cache", CYAML_FLAG_POINTER, fg_model, kv_cache, kv_fields),
    CYAML_FIELD_SEQUENCE("batch_sizes", CYAML_FLAG_POINTER, fg_model, batch_sizes,
                         &batch_entry, 1, FG_MAX_BATCH_SIZES),
    CYAML_FIELD_UINT("max_context", CYAML_FLAG_DEFAULT, fg_model, max_context),
    CYAML_FIELD_END};

/* ---- gemm ---- */

static const cyaml_schema_field_t shape_fields[] = {
    CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, fg_gemm_shape, name, 1, NAME_MAX_LEN),
    CYAML_FIELD_ENUM("collective", STRICT, fg_gemm_shape, collective, collective_strings,
                     ENUM_COUNT(collective_strings)),
    CYAML_FIELD_UINT("m", CYAML_FLAG_DEFAULT, fg_gemm_shape, m),
    CYAML_FIELD_UINT("n", CYAML_FLAG_DEFAULT, fg_gemm_shape, n),
    CYAML_FIELD_UINT("k", CYAML_FLAG_DEFAULT, fg_gemm_shape, k),
    CYAML_FIELD_END};

static const cyaml_schema_value_t shape_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, fg_gemm_shape, shape_fields)};

static const cyaml_schema_field_t gemm_fields[] = {
    CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, fg_gemm, name, 1, NAME_MAX_LEN),
    CYAML_FIELD_ENUM("dtype", STRICT, fg_gemm, dtype, fg_dtype_strings,
                     ENUM_COUNT(fg_dtype_strings)),
    CYAML_FIELD_UINT("world_size", CYAML_FLAG_DEFAULT, fg_gemm, world_size),
    CYAML_FIELD_ENUM("topology", STRICT, fg_gemm, topology, topology_strings,
                     ENUM_COUNT(topology_strings)),
    CYAML_FIELD_SEQUENCE("shapes", CYAML_FLAG_POINTER, fg_gemm, shapes, &shape_entry, 1,
                         FG_MAX_GEMM_SHAPES),
    CYAML_FIELD_END};

/* ---- target ---- */

static const cyaml_schema_field_t ceiling_fields[] = {
    CYAML_FIELD_FLOAT("copy_gbps", CYAML_FLAG_DEFAULT, fg_ceilings, copy_gbps),
    CYAML_FIELD_FLOAT("read_gbps", CYAML_FLAG_DEFAULT, fg_ceilings, read_gbps),
    CYAML_FIELD_FLOAT("matmul_bf16_tflops", CYAML_FLAG_DEFAULT, fg_ceilings, matmul_bf16_tflops),
    CYAML_FIELD_STRING_PTR("source", CYAML_FLAG_POINTER, fg_ceilings, source, 1, 256),
    CYAML_FIELD_END};

static const cyaml_schema_field_t gemm_time_fields[] = {
    CYAML_FIELD_UINT("m", CYAML_FLAG_DEFAULT, fg_gemm_time, m),
    CYAML_FIELD_UINT("n", CYAML_FLAG_DEFAULT, fg_gemm_time, n),
    CYAML_FIELD_UINT("k", CYAML_FLAG_DEFAULT, fg_gemm_time, k),
    CYAML_FIELD_FLOAT("us", CYAML_FLAG_DEFAULT, fg_gemm_time, us),
    CYAML_FIELD_END};

static const cyaml_schema_value_t gemm_time_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, fg_gemm_time, gemm_time_fields)};

static const cyaml_schema_field_t interconnect_fields[] = {
    CYAML_FIELD_FLOAT("peer_copy_latency_us", CYAML_FLAG_DEFAULT, fg_interconnect,
                      peer_copy_latency_us),
    CYAML_FIELD_FLOAT("peer_copy_gbps", CYAML_FLAG_DEFAULT, fg_interconnect, peer_copy_gbps),
    CYAML_FIELD_FLOAT("peer_copy_bidir_gbps", CYAML_FLAG_DEFAULT, fg_interconnect,
                      peer_copy_bidir_gbps),
    CYAML_FIELD_FLOAT("gemm_slowdown", CYAML_FLAG_DEFAULT, fg_interconnect, gemm_slowdown),
    CYAML_FIELD_FLOAT("call_overhead_us", CYAML_FLAG_OPTIONAL, fg_interconnect,
                      call_overhead_us),
    CYAML_FIELD_FLOAT("nccl_ag_latency_us", CYAML_FLAG_OPTIONAL, fg_interconnect,
                      nccl_ag_latency_us),
    CYAML_FIELD_FLOAT("nccl_ag_gbps", CYAML_FLAG_OPTIONAL, fg_interconnect, nccl_ag_gbps),
    CYAML_FIELD_FLOAT("nccl_rs_latency_us", CYAML_FLAG_OPTIONAL, fg_interconnect,
                      nccl_rs_latency_us),
    CYAML_FIELD_FLOAT("nccl_rs_gbps", CYAML_FLAG_OPTIONAL, fg_interconnect, nccl_rs_gbps),
    CYAML_FIELD_FLOAT("copy_lanes_latency_us", CYAML_FLAG_OPTIONAL, fg_interconnect,
                      copy_lanes_latency_us),
    CYAML_FIELD_FLOAT("copy_lanes_gbps", CYAML_FLAG_OPTIONAL, fg_interconnect, copy_lanes_gbps),
    CYAML_FIELD_UINT("copy_lanes_gpus", CYAML_FLAG_OPTIONAL, fg_interconnect, copy_lanes_gpus),
    CYAML_FIELD_SEQUENCE("gemm_times", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, fg_interconnect,
                         gemm_times, &gemm_time_entry, 0, FG_MAX_GEMM_TIMES),
    CYAML_FIELD_STRING_PTR("source", CYAML_FLAG_POINTER, fg_interconnect, source, 1, 256),
    CYAML_FIELD_END};

static const cyaml_schema_field_t target_fields[] = {
    CYAML_FIELD_STRING_PTR("name", CYAML_FLAG_POINTER, fg_target, name, 1, NAME_MAX_LEN),
    CYAML_FIELD_ENUM("arch", STRICT, fg_target, arch, fg_arch_strings,
                     ENUM_COUNT(fg_arch_strings)),
    CYAML_FIELD_UINT("compute_units", CYAML_FLAG_DEFAULT, fg_target, compute_units),
    CYAML_FIELD_UINT("warp_size", CYAML_FLAG_DEFAULT, fg_target, warp_size),
    CYAML_FIELD_UINT("shared_mem_per_block", CYAML_FLAG_DEFAULT, fg_target, shared_mem_per_block),
    CYAML_FIELD_UINT("shared_mem_per_cu", CYAML_FLAG_DEFAULT, fg_target, shared_mem_per_cu),
    CYAML_FIELD_UINT("registers_per_cu", CYAML_FLAG_DEFAULT, fg_target, registers_per_cu),
    CYAML_FIELD_UINT("max_registers_per_thread", CYAML_FLAG_DEFAULT, fg_target,
                     max_registers_per_thread),
    CYAML_FIELD_UINT("l2_bytes", CYAML_FLAG_DEFAULT, fg_target, l2_bytes),
    CYAML_FIELD_UINT("max_cluster_size", CYAML_FLAG_DEFAULT, fg_target, max_cluster_size),
    CYAML_FIELD_MAPPING_PTR("ceilings", CYAML_FLAG_POINTER, fg_target, ceilings, ceiling_fields),
    CYAML_FIELD_MAPPING_PTR("interconnect", OPT_PTR, fg_target, interconnect,
                            interconnect_fields),
    CYAML_FIELD_END};

/* ---- tuning ---- */

static const cyaml_schema_field_t tuning_entry_fields[] = {
    CYAML_FIELD_STRING_PTR("family", CYAML_FLAG_POINTER, fg_tuning_entry, family, 1, 160),
    CYAML_FIELD_UINT("threads", CYAML_FLAG_DEFAULT, fg_tuning_entry, threads),
    /* the ring form's (decode_attn families: required there, spec.c) */
    CYAML_FIELD_UINT("stage_bytes", OPT, fg_tuning_entry, stage_bytes),
    CYAML_FIELD_UINT("stages", OPT, fg_tuning_entry, stages),
    CYAML_FIELD_UINT("in_flight", OPT, fg_tuning_entry, in_flight),
    CYAML_FIELD_UINT("in_flight_wo", OPT, fg_tuning_entry, in_flight_wo),
    /* RMSNorm's (rmsnorm families; absent: false) */
    CYAML_FIELD_BOOL("cache_x", OPT, fg_tuning_entry, cache_x),
    /* the decode grid form's (decode_attn_..._grid families: required there) */
    CYAML_FIELD_UINT("step_cols", OPT, fg_tuning_entry, step_cols),
    CYAML_FIELD_UINT("slices_qkv", OPT, fg_tuning_entry, slices_qkv),
    CYAML_FIELD_UINT("slices_o", OPT, fg_tuning_entry, slices_o),
    CYAML_FIELD_UINT("key_rounds", OPT, fg_tuning_entry, key_rounds),
    /* the overlap GEMM's (overlap_gemm families, with stages: required there) */
    CYAML_FIELD_UINT("c_rounds", OPT, fg_tuning_entry, c_rounds),
    CYAML_FIELD_UINT("group_m", OPT, fg_tuning_entry, group_m),
    /* the MLA core's (mla_decode families, with stages: required there) */
    CYAML_FIELD_UINT("heads_per_block", OPT, fg_tuning_entry, heads_per_block),
    CYAML_FIELD_UINT("cluster", OPT, fg_tuning_entry, cluster),
    CYAML_FIELD_UINT("clusters", OPT, fg_tuning_entry, clusters),
    /* the whole MLA block's (mla_block families: required there; mma_proj
     * and absorb_apart absent: false) */
    CYAML_FIELD_UINT("slots", OPT, fg_tuning_entry, slots),
    CYAML_FIELD_UINT("piece_rows", OPT, fg_tuning_entry, piece_rows),
    CYAML_FIELD_UINT("chunk_rows", OPT, fg_tuning_entry, chunk_rows),
    CYAML_FIELD_BOOL("mma_proj", OPT, fg_tuning_entry, mma_proj),
    CYAML_FIELD_BOOL("absorb_apart", OPT, fg_tuning_entry, absorb_apart),
    /* the overlap family's reduction's (overlap_reduce families: required there) */
    CYAML_FIELD_UINT("blocks_per_cu", OPT, fg_tuning_entry, blocks_per_cu),
    CYAML_FIELD_FLOAT("tuned_us", CYAML_FLAG_DEFAULT, fg_tuning_entry, tuned_us),
    CYAML_FIELD_FLOAT("model_us", CYAML_FLAG_DEFAULT, fg_tuning_entry, model_us),
    CYAML_FIELD_FLOAT("worst_us", CYAML_FLAG_DEFAULT, fg_tuning_entry, worst_us),
    CYAML_FIELD_UINT("candidates", CYAML_FLAG_DEFAULT, fg_tuning_entry, candidates),
    CYAML_FIELD_STRING_PTR("measured", CYAML_FLAG_POINTER, fg_tuning_entry, measured, 1, 256),
    CYAML_FIELD_END};

static const cyaml_schema_value_t tuning_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, fg_tuning_entry, tuning_entry_fields)};

static const cyaml_schema_field_t tuning_fields[] = {
    CYAML_FIELD_STRING_PTR("target", CYAML_FLAG_POINTER, fg_tuning, target, 1, NAME_MAX_LEN),
    CYAML_FIELD_SEQUENCE("entries", CYAML_FLAG_POINTER, fg_tuning, entries, &tuning_entry, 0,
                         FG_MAX_TUNING_ENTRIES),
    CYAML_FIELD_END};

/* ---- top level ---- */

static const cyaml_schema_field_t spec_fields[] = {
    CYAML_FIELD_UINT("schema_version", CYAML_FLAG_DEFAULT, fg_spec, schema_version),
    CYAML_FIELD_MAPPING_PTR("model", OPT_PTR, fg_spec, model, model_fields),
    CYAML_FIELD_MAPPING_PTR("gemm", OPT_PTR, fg_spec, gemm, gemm_fields),
    CYAML_FIELD_MAPPING_PTR("target", OPT_PTR, fg_spec, target, target_fields),
    CYAML_FIELD_MAPPING_PTR("tuning", OPT_PTR, fg_spec, tuning, tuning_fields),
    CYAML_FIELD_END};

const cyaml_schema_value_t fg_spec_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, fg_spec, spec_fields)};

const char *fg_enum_string(const cyaml_strval_t *strings, unsigned count, int value)
{
    for (unsigned i = 0; i < count; i++)
        if (strings[i].val == value)
            return strings[i].str;
    return "?";
}

const char *fg_dtype_name(fg_dtype t)
{
    return fg_enum_string(fg_dtype_strings, fg_dtype_strings_count, (int)t);
}
const char *fg_arch_name(fg_arch a)
{
    return fg_enum_string(fg_arch_strings, fg_arch_strings_count, (int)a);
}
const char *fg_collective_name(fg_collective c)
{
    return fg_enum_string(collective_strings, ENUM_COUNT(collective_strings), (int)c);
}
const char *fg_topology_name(fg_topology t)
{
    return fg_enum_string(topology_strings, ENUM_COUNT(topology_strings), (int)t);
}
const char *fg_scaling_name(fg_rope_scaling s)
{
    return fg_enum_string(scaling_strings, ENUM_COUNT(scaling_strings), (int)s);
}
const char *fg_rope_layout_name(fg_rope_layout l)
{
    return fg_enum_string(layout_strings, ENUM_COUNT(layout_strings), (int)l);
}
const char *fg_kv_layout_name(fg_kv_layout l)
{
    return fg_enum_string(kv_strings, ENUM_COUNT(kv_strings), (int)l);
}
const char *fg_family_name(fg_model_family f)
{
    return fg_enum_string(family_strings, ENUM_COUNT(family_strings), (int)f);
}
