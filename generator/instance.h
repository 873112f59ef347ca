/* Instances: one specialized kernel each.  fg_instance_name() is the only
 * place that forms a name; the name is the file stem, the kernel symbol, the
 * registry key and what --filter matches. */
#ifndef FG_INSTANCE_H
#define FG_INSTANCE_H

#include <stdbool.h>
#include <stddef.h>

#include "fg_registry.h"   /* FG_REG_MAX_TARGETS: a registry entry's targets */
#include "spec.h"
#include "strbuf.h"

#define FG_NAME_MAX 128      /* longest name kept whole is FG_NAME_LIMIT */
#define FG_NAME_LIMIT 120
#define FG_MAX_PARAMS 32
#define FG_MAX_SPECS_PER_INSTANCE 16
#define FG_MAX_TEXT_PARAMS 4

/* Forms `<family>_<arch>_<dtypes>_<dims>[_<variant>]`; empty parts are left
 * out.  Over FG_NAME_LIMIT characters, a readable prefix is kept and an
 * 8-hex FNV-1a hash of the full name appended.  Returns false if a part has
 * characters other than [a-z0-9_]. */
bool fg_instance_name(char out[FG_NAME_MAX], const char *family, fg_arch arch,
                      const char *dtypes, const char *dims, const char *variant);

/* Whether an instance name matches any of the shell globs (fnmatch); how
 * generate's --filter and report's --filter select. */
bool fg_name_matches(const char *name, const char *const *globs, size_t nglobs);

/* A named integer of an instance: template placeholder (upper case) and
 * manifest field (lower case) at once. */
typedef struct fg_param {
    const char *key;   /* static string, upper case, e.g. "HIDDEN" */
    long long value;
} fg_param;

typedef enum {
    FG_GRID_ROWS,   /* grid.x = rows of the call */
    FG_GRID_FIXED,  /* grid = fg_launch.grid_dims */
} fg_grid_rule;

typedef struct fg_launch {
    fg_grid_rule grid;
    unsigned grid_dims[3];     /* FG_GRID_FIXED */
    unsigned block[3];
    unsigned cluster[3];
    bool nonportable_cluster;
    bool cooperative;
    unsigned dynamic_smem;
} fg_launch;

/* The priority of a form planned for its targets alone, where a target of
 * the same arch and SMs plans another form of the same instance (the MLA
 * block's "_rc", the MLA core's "_tb": named apart by a tag after the
 * dims): the runtime takes the device's own target's form first, and this
 * one below the other on a device of neither target. */
#define FG_PRIORITY_TARGET_FORM (-1)

typedef struct fg_instance {
    char name[FG_NAME_MAX];
    const char *family;        /* "rmsnorm" */
    const char *op;            /* what the kernel computes, for the registry */
    const char *template_name; /* file under templates/ */
    const fg_target *target;
    fg_dtype dtype;
    fg_param params[FG_MAX_PARAMS];
    unsigned nparams;
    unsigned nkey_params;      /* the first ones: dims a call must match (registry guard) */
    unsigned key_max_mask;     /* bit k: key k is a maximum (call <= dim), else exact */
    const char *text_keys[FG_MAX_TEXT_PARAMS]; /* placeholders with text values */
    fg_strbuf text_values[FG_MAX_TEXT_PARAMS];
    unsigned ntexts;
    fg_launch launch;
    unsigned workspace_bytes;  /* fp32 workspace the binding owns, zeroed once */
    unsigned counter_count;    /* arrival counters the binding owns, zeroed once */
    int priority;              /* higher: preferred by lookup among equal keys
                                  (FG_PRIORITY_TARGET_FORM below 0) */
    bool candidate;            /* a tuning candidate (generate --candidates): the gate
                                  discards it when it spills instead of failing */
    bool tuned;                /* its configuration is a tuning entry's, not the model's */
    char path_key[128];        /* instances with equal keys share one code path */
    char tuning_family[FG_NAME_MAX];   /* the family a tuning entry names; "": none */
    fg_strbuf reasons;         /* one line per decision, for `explain` */
    const char *specs[FG_MAX_SPECS_PER_INSTANCE]; /* model and target spec paths */
    unsigned nspecs;
    const fg_target *targets[FG_REG_MAX_TARGETS]; /* the targets sharing it */
    unsigned ntargets;
} fg_instance;

void fg_instance_add_param(fg_instance *in, const char *key, long long value);
long long fg_instance_param(const fg_instance *in, const char *key); /* -1 if absent */
/* A placeholder whose value is text (tables, literals); returns its buffer. */
fg_strbuf *fg_instance_add_text(fg_instance *in, const char *key);
void fg_instance_free(fg_instance *in);
const char *fg_instance_ext(const fg_instance *in); /* "cu" or "hip" */

#endif
