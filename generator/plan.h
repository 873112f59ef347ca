/* Planning: from a validated spec and a target to the instances to emit, each
 * with its chosen parameters and the reasons for them.  One planner per
 * kernel family; fg_plan_spec() asks each family what a spec needs. */
#ifndef FG_PLAN_H
#define FG_PLAN_H

#include "instance.h"
#include "plan_overlap.h"

/* One row of the overlap plan table: the schedule the cost model picks for
 * a shape of a GEMM-overlap spec on a target with an interconnect profile. */
typedef struct fg_overlap_plan {
    const fg_gemm *gemm;
    const fg_gemm_shape *shape;
    const fg_target *target;
    fg_overlap_prediction prediction;
} fg_overlap_plan;

typedef struct fg_plan_set {
    fg_instance *items;
    size_t count, cap;
    /* Set before planning: families add, next to their choice, every other
     * configuration that plans (tuning candidates, `generate --candidates`). */
    bool candidates;
    /* Set per target before planning: its tuning spec (fusegen tune), whose
     * entries replace the model's configuration; NULL: none given. */
    const fg_spec *tuning;
    /* The overlap plan table (not subject to name filters: it names no kernel). */
    fg_overlap_plan *overlap;
    size_t noverlap;
} fg_plan_set;

/* Adds the instances `spec` needs on `target`; an instance another spec
 * already asked for is shared and records both spec paths. */
int fg_plan_spec(const fg_spec *spec, const fg_spec *target, fg_plan_set *set, fg_diag *d);

/* Keeps the instances whose name matches any of the shell globs (fnmatch). */
void fg_plan_filter(fg_plan_set *set, const char *const *globs, size_t nglobs);

/* Keeps the first instance (by name) of each code path (path_key): enough
 * to compile-check every path without compiling every instance. */
void fg_plan_one_per_path(fg_plan_set *set);

/* Sorts by name so every output lists instances in one order. */
void fg_plan_sort(fg_plan_set *set);

void fg_plan_free(fg_plan_set *set);

/* Adds a planned instance (the set takes it over); one another spec already
 * asked for is shared and records both spec paths.  -1 (reported) when that
 * instance has the same name but different code: a naming bug. */
int fg_plan_add(fg_plan_set *set, fg_instance *in, const fg_spec *model, const fg_spec *target,
                fg_diag *d);

/* The entry of set->tuning for an instance family, or NULL (no tuning spec
 * for this target, or no entry for the family). */
const fg_tuning_entry *fg_plan_tuning_entry(const fg_plan_set *set, const char *family);

/* Where an instance's configuration comes from: the planner's model, a
 * tuning entry, or a tuning candidate (generate --candidates). */
typedef enum { FG_FROM_MODEL, FG_FROM_TUNING, FG_CANDIDATE } fg_origin;

/* Marks `in` as of tuning family `family`, its configuration from `from`. */
void fg_plan_mark(fg_instance *in, const char *family, fg_origin from);

/* Appends explain's line of where a configuration came from: with no entry
 * e, the model's (and why: no entry in the tuning spec, or none given); else
 * the tuned one, `what` (the configuration in words) and e's figures with
 * `decimals` digits after the point. */
void fg_plan_config_line(fg_strbuf *sb, const fg_plan_set *set, const fg_tuning_entry *e,
                         const char *what, int decimals);

/* The model's KV cache page size in rows; 0: contiguous. */
unsigned fg_kv_page(const fg_model *m);

/* Elements of an array (the planners' candidate lists). */
#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Family planners (plan_<family>.c). */
int fg_plan_decode(fg_plan_set *set, const fg_spec *model, const fg_spec *target, fg_diag *d);
/* Why the fused decode family emits nothing (or less) for this model and
 * target, or NULL. */
const char *fg_plan_decode_skipped(const fg_spec *model, const fg_target *target);
/* The MLA decode core (latent attention) of an MLA model, one instance per
 * batch size; why it emits nothing for this model and target, or NULL. */
int fg_plan_mla(fg_plan_set *set, const fg_spec *model, const fg_spec *target, fg_diag *d);
/* The whole MLA attention block at decode (plan_mla_block.c), and why a
 * spec and target get none, or none at some of the spec's batch sizes
 * (NULL: a block at each). */
int fg_plan_mla_block(fg_plan_set *set, const fg_spec *model, const fg_spec *target, fg_diag *d);
const char *fg_plan_mla_block_skipped(const fg_spec *model, const fg_target *t);
const char *fg_plan_mla_skipped(const fg_spec *model, const fg_target *target);
/* The MLA core's portable form (templates/mla_decode_portable.in) at 16
 * heads a workgroup on a target without clusters, as plan_mla.c's planner
 * shapes it for model m on target t: the fused block's portable form
 * (plan_mla_block.c) runs that loop.  NULL with the shape in *p, or why the
 * form does not fit (its text; valid until the next call). */
typedef struct fg_mla_portable_shape {
    unsigned threads, tile, stages, parts;
    unsigned smem;   /* the loop's shared memory (bytes) */
} fg_mla_portable_shape;
const char *fg_plan_mla_portable16(const fg_model *m, const fg_target *t, fg_mla_portable_shape *p);
/* Whether one bulk copy a cache row (an MLA row, 1152 bytes) streams less
 * than an SM's share of target t's read ceiling: such copies hold the MLA
 * block's attention to ~FG_MLA_ROW_COPY_GBPS a block (an H100 at 64, 96
 * and 132 blocks, stop 76; bare copies in probe_stream ~35), under the
 * H200's 34 GB/s an SM and above the H100's 24.  Where they lag (the H200)
 * the MLA kernels land a tile's rows 4 a copy; false on a target with no
 * ceilings. */
#define FG_MLA_ROW_COPY_GBPS 26.0
bool fg_mla_row_copies_lag(const fg_target *t);
/* The owner's reduction of a GEMM + reduce-scatter at `world` ranks, into
 * set (a tuning entry's configuration or the model's; with candidates). */
int fg_plan_overlap_reduce(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, fg_dtype dtype,
                           unsigned world, const char *why, fg_diag *d);
/* The sm_90a fused GEMM's tile (overlap_gemm.in asserts it): 128 rows, 256
 * columns, K blocks of 64. */
#define GEMM_BM 128u
#define GEMM_BN 256u
#define GEMM_BK 64u
/* The overlap family's fused GEMM for shape sh's n and k of GEMM spec s on
 * target spec ts, added to set, with set->candidates its tuning candidates
 * (plan_gemm.c); and why a shape and target get none (NULL: they do). */
int fg_plan_overlap_gemm(fg_plan_set *set, const fg_spec *s, const fg_spec *ts,
                         const fg_gemm_shape *sh, const char *why, fg_diag *d);
const char *fg_plan_overlap_gemm_skipped(const fg_gemm_shape *sh, const fg_target *t);
/* Whether target t gets the GEMM's portable form (no thread-block clusters:
 * AMD, or an sm_90a target that says it has none) rather than the wgmma one. */
bool fg_plan_gemm_portable(const fg_target *t);
/* The RMSNorm instance of a row of `hidden` for model spec s on target
 * spec ts, added to set, and with set->candidates its tuning candidates. */
int fg_plan_rmsnorm(fg_plan_set *set, const fg_spec *s, const fg_spec *ts, unsigned hidden,
                    const char *why, fg_diag *d);

#endif
