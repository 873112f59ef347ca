/* Resource reports of the GPU compilers, and the gate that acts on them.
 *
 * `make kernels` compiles every emitted kernel with the compiler's resource
 * report turned on (ptxas -v for CUDA, -Rpass-analysis=kernel-resource-usage
 * for AMDGPU) and keeps each log.  `fusegen gate` parses the logs, records the
 * figures in the manifest, and fails the build when a kernel spills: the
 * planners size tiles for registers, so a spill means a plan is wrong, and it
 * costs far more than the compiler's silence suggests. */
#ifndef FG_RESOURCES_H
#define FG_RESOURCES_H

#include <stdbool.h>

/* The figures of one function.  Figures a compiler does not report are 0. */
typedef struct fg_resources {
    char kernel[160];           /* symbol as the compiler prints it (mangled for C++) */

    /* CUDA, from `nvcc -Xptxas -v` (bytes per thread unless noted). */
    int registers;
    int stack_bytes;            /* "stack frame": local arrays and spills */
    int spill_store_bytes;
    int spill_load_bytes;
    int smem_bytes;             /* static shared memory per block */

    /* AMDGPU, from clang's -Rpass-analysis=kernel-resource-usage. */
    int sgprs, vgprs, agprs;
    int lds_bytes;              /* static LDS per block */
    int scratch_bytes;          /* per lane: private arrays and spills */
    int sgpr_spills, vgpr_spills; /* counts of spilled registers, not bytes */
    int occupancy;              /* waves per SIMD */

    bool is_amd;

    /* ptxas also reports non-inlined device functions; their spills belong
     * to the kernels that call them.  AMDGPU reports kernels only, with
     * their callees folded in. */
    bool is_entry;
    char arch[16];              /* "sm_90a" from ptxas; "" for AMDGPU, whose
                                   report does not say */
} fg_resources;

/* Parse the text of one compiler log.  Both store the first `max` functions
 * in `out` (in the order the compiler reported them) and return how many the
 * log holds, which may be more than `max` (call with max 0 to count).  They
 * return -1 when the text holds no report of that format, or a truncated or
 * malformed one. */
int fg_resources_parse_ptxas(const char *log_text, fg_resources *out, int max);
int fg_resources_parse_amdgpu(const char *log_text, fg_resources *out, int max);

/* Picks the format from the content ("ptxas info" lines or kernel-resource-
 * usage remarks) and parses it; -1 when neither is there. */
int fg_resources_parse_log(const char *log_text, fg_resources *out, int max);

/* True when the function spills registers to memory (or, on AMDGPU, SGPRs
 * to VGPR lanes).  Stack or scratch without spills (local arrays) is fine. */
bool fg_resources_spills(const fg_resources *r);

/* `fusegen gate --manifest IN.json --out OUT.json LOG...`; argv[0] is "gate".
 * Attaches a "resources" object to the manifest instance named by each kernel
 * in the logs and writes OUT (atomically, only if changed).  Returns 0; 1
 * when a kernel spills, a log has no report, a kernel is not in the manifest
 * or does not match its arch, or on I/O errors (OUT is then left alone);
 * 2 on a usage error. */
int fg_cmd_gate(int argc, char **argv);

#endif
