/* Emission: from planned instances to file contents (kernel sources,
 * registry source, manifest), all built in memory first so that an error
 * leaves every output untouched. */
#ifndef FG_EMIT_H
#define FG_EMIT_H

#include "plan.h"

#define FG_VERSION "0.1.0"

typedef struct fg_output {
    char *path;            /* out_dir/file */
    fg_strbuf content;
} fg_output;

typedef struct fg_outputs {
    fg_output *items;
    size_t count, cap;
} fg_outputs;

typedef struct fg_emit_ctx {
    const char *template_dir;
    const char *out_dir;
    const fg_spec *const *specs;   /* every spec loaded, in command-line order */
    size_t nspecs;
} fg_emit_ctx;

/* Paths only (for `fusegen list`), in the order generate writes them. */
void fg_emit_paths(const fg_emit_ctx *c, const fg_plan_set *set, fg_outputs *outs);

/* Paths and contents. */
int fg_emit_all(const fg_emit_ctx *c, const fg_plan_set *set, fg_outputs *outs, fg_diag *d);

/* Writes each output that changed; *written counts them. */
int fg_outputs_write(const fg_outputs *outs, unsigned *written, fg_diag *d);

void fg_outputs_free(fg_outputs *outs);

#endif
