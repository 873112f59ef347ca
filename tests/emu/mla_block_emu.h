/* The interface between the emulated MLA block (mla_block_kernel.cpp: the
 * generated .hip source of the block's portable form with the HIP shim) and
 * its test (mla_block_emu.cpp, with the C reference): plain types only. */
#ifndef FG_EMU_MLA_BLOCK_H
#define FG_EMU_MLA_BLOCK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel's compile-time shape, as its template has it (the workspace,
 * counters and LDS a launch is given: the manifest's figures). */
typedef struct emu_mla_block_dims {
    const char *name;
    int f16;   /* storage type: 1 f16, 0 bf16 */
    int hidden, heads, q_lora, kv_lora, nope, rope, v_dim, max_context, page, bmax, w_o_ld, threads;
    const float *inv_freq;   /* [rope / 2], the kernel's table */
    float cs_scale;          /* YaRN's factor on cos and sin (1 without) */
} emu_mla_block_dims;

extern const emu_mla_block_dims emu_mla_block;

/* The kernel's arguments (fgrt.h's fg_mla_block_args' buffers), in the
 * storage type but for the integer tables, the workspace and the counters. */
typedef struct emu_mla_block_args {
    const void *x, *input_norm, *w_q, *w_q_a, *q_a_norm, *w_q_b, *w_kv_a, *kv_a_norm, *w_kv_b, *w_o;
    void *cache;
    const int *block_table, *positions;
    void *y;
    float *ws;
    unsigned *counters;
    unsigned char *const *smem;   /* the dynamic LDS of each workgroup */
    unsigned workgroups;          /* the planned grid (x) */
    int threads;                  /* the planned block (the sm_90a form's has a producer warp) */
    int batch;
    float eps, scale;
} emu_mla_block_args;

/* One cooperative launch: every workgroup at once, each `threads` fibers on
 * a host thread of its own (its grid barriers meet). */
void emu_mla_block_launch(const emu_mla_block_args *a);

#ifdef __cplusplus
}
#endif
#endif
