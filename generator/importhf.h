/* import-hf: turns a Hugging Face config.json into a fusegen model spec.
 *
 * Supported model_type values: llama, mistral, qwen2 (family llama) and
 * deepseek_v2, deepseek_v3 (family mla).  Every key of the config is either
 * read, known to be irrelevant to the attention block (vocabulary, MLP, MoE
 * routing, ...), or an error: a key the importer does not understand might
 * change what the kernels must compute, so it is never dropped.  Features the
 * kernels do not support (o_proj bias, logit soft-capping, RoPE scaling other
 * than linear/llama3/yarn, per-layer sliding windows) are rejected by name.
 *
 * The importer checks what it needs to translate the config; the range rules
 * of the spec format itself (head_dim multiple of 8, ...) belong to
 * fg_spec_load, which a generated spec must pass like any other. */
#ifndef FG_IMPORTHF_H
#define FG_IMPORTHF_H

#include "diag.h"
#include "strbuf.h"

typedef struct fg_import_opts {
    const char *name;         /* NULL: from _name_or_path */
    const char *dtype;        /* "f16" | "bf16"; NULL: from torch_dtype */
    const char *batch_sizes;  /* comma-separated; NULL: "1,4,16" */
    const char *kv_cache;     /* "contiguous" | "paged:N"; NULL: contiguous for
                                 family llama, paged:64 for family mla */
    unsigned max_context;     /* 0: max_position_embeddings */
    unsigned tensor_parallel; /* family mla only; 0: 1 */
} fg_import_opts;

/* Reads `json_path` and appends the spec's YAML text to `yaml_out`.  `o` may
 * be NULL (all defaults).  Returns 0 on success; otherwise reports every
 * error found to `d` (as json_path:line:col where the key is known), leaves
 * `yaml_out` unchanged and returns non-zero.  The output depends only on the
 * file's content, its base name and `o`. */
int fg_import_hf(const char *json_path, const fg_import_opts *o, fg_strbuf *yaml_out,
                 fg_diag *d);
/* The same for a config already in memory (len bytes); `json_path` names it
 * in messages and supplies the base name. */
int fg_import_hf_text(const char *json_path, const char *json, size_t len,
                      const fg_import_opts *o, fg_strbuf *yaml_out, fg_diag *d);

/* `fusegen import-hf [options] CONFIG.json` (argv[0] is "import-hf").
 * Returns the exit status: 0 done, 1 the config could not be imported or
 * the output not written, 2 bad command line. */
int fg_cmd_import_hf(int argc, char **argv);

#endif
