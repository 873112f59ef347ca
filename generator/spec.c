/* Spec loading in three passes:
 *  1. libyaml parses the file into a node tree that keeps line and column
 *     of every key and value (syntax errors are reported here);
 *  2. the tree is checked against the libcyaml schema (unknown, missing and
 *     duplicate keys, types, enums), so every error points at its key;
 *  3. libcyaml loads the checked document into the structs of spec.h, and
 *     the semantic rules (ranges, divisibility, combinations) run with the
 *     locations kept from pass 1.
 * Nothing is loaded if any pass reports an error. */
#include "spec.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "decimal.h"
#include "fgrt_limits.h"
#include "fsutil.h"
#include "spec_schema.h"
#include "strbuf.h"

#define PATH_MAX_LEN 192

/* One key of the document with where it and its value start (1-based). */
typedef struct loc_entry {
    char path[PATH_MAX_LEN];
    unsigned key_line, key_col, val_line, val_col;
} loc_entry;

typedef struct checker {
    const char *file;
    fg_diag *d;
    yaml_document_t *doc;
    loc_entry *locs;
    size_t nlocs, caplocs;
} checker;

static void add_loc(checker *c, const char *path, yaml_mark_t key, yaml_mark_t val)
{
    if (c->nlocs == c->caplocs) {
        c->caplocs = c->caplocs ? c->caplocs * 2 : 64;
        loc_entry *p = realloc(c->locs, c->caplocs * sizeof *p);
        if (!p)
            fg_out_of_memory();
        c->locs = p;
    }
    loc_entry *e = &c->locs[c->nlocs++];
    snprintf(e->path, sizeof e->path, "%s", path);
    e->key_line = (unsigned)key.line + 1;
    e->key_col = (unsigned)key.column + 1;
    e->val_line = (unsigned)val.line + 1;
    e->val_col = (unsigned)val.column + 1;
}

static const loc_entry *find_loc(const checker *c, const char *path)
{
    for (size_t i = 0; i < c->nlocs; i++)
        if (strcmp(c->locs[i].path, path) == 0)
            return &c->locs[i];
    return NULL;
}

static bool has(const checker *c, const char *path) { return find_loc(c, path) != NULL; }

/* Reports an error at the value of `path` (or its key, or the file). */
static void err_at(checker *c, const char *path, bool at_key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void err_at(checker *c, const char *path, bool at_key, const char *fmt, ...)
{
    const loc_entry *e = path ? find_loc(c, path) : NULL;
    unsigned line = 0, col = 0;
    if (e) {
        line = at_key ? e->key_line : e->val_line;
        col = at_key ? e->key_col : e->val_col;
    }
    va_list ap;
    va_start(ap, fmt);
    fg_verror_at(c->d, c->file, line ? line : 1, col ? col : 1, fmt, ap);
    va_end(ap);
}

/* ---- pass 2: the document against the schema ---- */

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a sequence";
    default: return "a scalar";
    }
}

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static void join(char *out, const char *path, const char *key)
{
    if (*path)
        snprintf(out, PATH_MAX_LEN, "%s.%s", path, key);
    else
        snprintf(out, PATH_MAX_LEN, "%s", key);
}

static bool parse_float(const char *s, double *v)
{
    if (!*s)
        return false;
    errno = 0;
    char *end;
    double x = strtod(s, &end);
    if (*end || errno || !isfinite(x))
        return false;
    *v = x;
    return true;
}

static void expected_keys(const cyaml_schema_field_t *f, fg_strbuf *sb)
{
    for (; f->key; f++)
        fg_sb_printf(sb, "%s%s", sb->len ? ", " : "", f->key);
}

static void check_value(checker *c, const yaml_node_t *n, const cyaml_schema_value_t *s,
                        const char *path);

static void check_mapping(checker *c, const yaml_node_t *n, const cyaml_schema_value_t *s,
                          const char *path)
{
    const cyaml_schema_field_t *fields = s->mapping.fields;
    size_t nfields = 0;
    while (fields[nfields].key)
        nfields++;
    bool seen[32] = {false};

    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        if (k->type != YAML_SCALAR_NODE) {
            fg_error_at(c->d, c->file, (unsigned)k->start_mark.line + 1,
                        (unsigned)k->start_mark.column + 1,
                        "a key in '%s' is %s; expected a plain key", *path ? path : "(top)",
                        node_kind(k));
            continue;
        }
        char sub[PATH_MAX_LEN];
        join(sub, path, scalar(k));
        size_t i = 0;
        while (i < nfields && strcmp(fields[i].key, scalar(k)) != 0)
            i++;
        if (i == nfields) {
            fg_strbuf sb = {0};
            expected_keys(fields, &sb);
            fg_error_at(c->d, c->file, (unsigned)k->start_mark.line + 1,
                        (unsigned)k->start_mark.column + 1,
                        "unknown key '%s'%s%s; expected one of: %s", scalar(k),
                        *path ? " in " : "", path, fg_sb_str(&sb));
            fg_sb_free(&sb);
            continue;
        }
        if (seen[i]) {
            fg_error_at(c->d, c->file, (unsigned)k->start_mark.line + 1,
                        (unsigned)k->start_mark.column + 1, "duplicate key '%s'", sub);
            continue;
        }
        seen[i] = true;
        add_loc(c, sub, k->start_mark, v->start_mark);
        check_value(c, v, &fields[i].value, sub);
    }
    for (size_t i = 0; i < nfields; i++) {
        if (seen[i] || (fields[i].value.flags & CYAML_FLAG_OPTIONAL))
            continue;
        char sub[PATH_MAX_LEN];
        join(sub, path, fields[i].key);
        fg_error_at(c->d, c->file, (unsigned)n->start_mark.line + 1,
                    (unsigned)n->start_mark.column + 1, "missing key '%s'", sub);
    }
}

static void check_scalar(checker *c, const yaml_node_t *n, const cyaml_schema_value_t *s,
                         const char *path)
{
    const char *v = scalar(n);
    unsigned line = (unsigned)n->start_mark.line + 1, col = (unsigned)n->start_mark.column + 1;
    uint64_t u;
    double f;
    switch (s->type) {
    case CYAML_UINT:
        if (!fg_parse_decimal(v, strlen(v), 0, UINT32_MAX, &u))
            fg_error_at(c->d, c->file, line, col,
                        "'%s' is '%s'; expected a non-negative integer below 2^32", path, v);
        break;
    case CYAML_FLOAT:
        if (!parse_float(v, &f))
            fg_error_at(c->d, c->file, line, col, "'%s' is '%s'; expected a finite number",
                        path, v);
        break;
    case CYAML_BOOL:
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            fg_error_at(c->d, c->file, line, col, "'%s' is '%s'; expected true or false", path,
                        v);
        break;
    case CYAML_ENUM: {
        bool ok = false;
        fg_strbuf sb = {0};
        for (uint32_t i = 0; i < s->enumeration.count; i++) {
            ok |= strcmp(v, s->enumeration.strings[i].str) == 0;
            fg_sb_printf(&sb, "%s%s", i ? ", " : "", s->enumeration.strings[i].str);
        }
        if (!ok)
            fg_error_at(c->d, c->file, line, col, "'%s' is '%s'; expected one of: %s", path, v,
                        fg_sb_str(&sb));
        fg_sb_free(&sb);
        break;
    }
    case CYAML_STRING: {
        size_t len = strlen(v);
        if (len < s->string.min || len > s->string.max)
            fg_error_at(c->d, c->file, line, col,
                        "'%s' has %zu characters; expected %u to %u", path, len,
                        s->string.min, s->string.max);
        break;
    }
    default:
        break;
    }
}

static const char *schema_kind(const cyaml_schema_value_t *s)
{
    switch (s->type) {
    case CYAML_MAPPING: return "a mapping";
    case CYAML_SEQUENCE:
    case CYAML_SEQUENCE_FIXED: return "a sequence";
    case CYAML_UINT: return "a non-negative integer";
    case CYAML_FLOAT: return "a number";
    case CYAML_BOOL: return "true or false";
    case CYAML_ENUM: return "a name";
    default: return "a string";
    }
}

static void check_value(checker *c, const yaml_node_t *n, const cyaml_schema_value_t *s,
                        const char *path)
{
    bool want_map = s->type == CYAML_MAPPING;
    bool want_seq = s->type == CYAML_SEQUENCE || s->type == CYAML_SEQUENCE_FIXED;
    yaml_node_type_t want = want_map   ? YAML_MAPPING_NODE
                            : want_seq ? YAML_SEQUENCE_NODE
                                       : YAML_SCALAR_NODE;
    if (n->type != want) {
        if (*path)
            fg_error_at(c->d, c->file, (unsigned)n->start_mark.line + 1,
                        (unsigned)n->start_mark.column + 1, "'%s' is %s; expected %s", path,
                        node_kind(n), schema_kind(s));
        else
            fg_error_at(c->d, c->file, (unsigned)n->start_mark.line + 1,
                        (unsigned)n->start_mark.column + 1,
                        "the document is %s; expected a mapping with schema_version and one "
                        "of model, gemm, target",
                        node_kind(n));
        return;
    }
    if (want_map) {
        check_mapping(c, n, s, path);
    } else if (want_seq) {
        yaml_node_item_t *it = n->data.sequence.items.start;
        size_t count = (size_t)(n->data.sequence.items.top - it);
        if (count < s->sequence.min || count > s->sequence.max)
            fg_error_at(c->d, c->file, (unsigned)n->start_mark.line + 1,
                        (unsigned)n->start_mark.column + 1,
                        "'%s' has %zu entries; expected %u to %u", path, count, s->sequence.min,
                        s->sequence.max);
        for (size_t i = 0; i < count; i++) {
            yaml_node_t *e = yaml_document_get_node(c->doc, it[i]);
            char sub[PATH_MAX_LEN];
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            add_loc(c, sub, e->start_mark, e->start_mark);
            check_value(c, e, s->sequence.entry, sub);
        }
    } else {
        check_scalar(c, n, s, path);
    }
}

/* ---- pass 3: semantic rules ---- */

static bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

/* A value must lie in [lo, hi]; the message names the key and the range. */
static bool in_range(checker *c, const char *path, uint64_t v, uint64_t lo, uint64_t hi)
{
    if (v >= lo && v <= hi)
        return true;
    err_at(c, path, false, "'%s' is %llu; expected %llu to %llu", path, (unsigned long long)v,
           (unsigned long long)lo, (unsigned long long)hi);
    return false;
}

static void multiple_of(checker *c, const char *path, uint64_t v, uint64_t m, const char *why)
{
    if (v % m)
        err_at(c, path, false, "'%s' is %llu; expected a multiple of %llu (%s)", path,
               (unsigned long long)v, (unsigned long long)m, why);
}

static void power_of_two(checker *c, const char *path, uint64_t v)
{
    if (!is_pow2(v))
        err_at(c, path, false, "'%s' is %llu; expected a power of two", path,
               (unsigned long long)v);
}

static void float_range(checker *c, const char *path, double v, double lo, double hi)
{
    if (!(v > lo && v <= hi))
        err_at(c, path, false, "'%s' is %g; expected more than %g and at most %g", path, v, lo,
               hi);
}

bool fg_spec_name_ok(const char *s)
{
    const size_t n = strlen(s);
    if (n == 0 || n > FG_SPEC_NAME_MAX || strstr(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++) {
        const bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');
        if (!alnum && (i == 0 || !strchr("._-", s[i])))
            return false;
    }
    return true;
}

/* Names become file stems and kernel symbols: no paths, no surprises. */
static void check_name(checker *c, const char *path, const char *name)
{
    if (!fg_spec_name_ok(name))
        err_at(c, path, false,
               "'%s' is '%s'; expected lowercase letters, digits, '.', '_' or '-', starting "
               "with a letter or digit, without '/' or '..'",
               path, name);
}

static void forbid(checker *c, const char *path, const char *why)
{
    if (has(c, path))
        err_at(c, path, true, "'%s' %s", path, why);
}

static void require(checker *c, const char *path, const char *at, const char *why)
{
    if (!has(c, path))
        err_at(c, at, false, "missing key '%s' (%s)", path, why);
}

static void check_scaling(checker *c, const fg_rope_scaling_spec *s)
{
    static const char *const keys[] = {"factor", "low_freq_factor", "high_freq_factor",
                                       "original_max_position", "beta_fast", "beta_slow",
                                       "mscale", "mscale_all_dim"};
    /* Which of the keys above each scaling type takes, as a bit set. */
    static const unsigned wants[] = {
        [FG_SCALING_NONE] = 0x00, [FG_SCALING_LINEAR] = 0x01,
        [FG_SCALING_LLAMA3] = 0x0f, [FG_SCALING_YARN] = 0xf9};
    const char *base = "model.rope.scaling";
    char why[64];
    snprintf(why, sizeof why, "%s scaling needs it", fg_scaling_name(s->type));
    for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char p[PATH_MAX_LEN];
        join(p, base, keys[i]);
        if (wants[s->type] & (1u << i)) {
            require(c, p, "model.rope.scaling.type", why);
        } else if (has(c, p)) {
            char msg[96];
            snprintf(msg, sizeof msg, "does not apply to %s scaling", fg_scaling_name(s->type));
            forbid(c, p, msg);
        }
    }
    if (has(c, "model.rope.scaling.factor"))
        float_range(c, "model.rope.scaling.factor", s->factor, 0.0, 1024.0);
    if (s->type == FG_SCALING_LLAMA3 && has(c, "model.rope.scaling.high_freq_factor") &&
        !(s->high_freq_factor > s->low_freq_factor))
        err_at(c, "model.rope.scaling.high_freq_factor", false,
               "'model.rope.scaling.high_freq_factor' is %g; expected more than "
               "low_freq_factor (%g)",
               s->high_freq_factor, s->low_freq_factor);
    if (has(c, "model.rope.scaling.original_max_position"))
        in_range(c, "model.rope.scaling.original_max_position", s->original_max_position, 1,
                 1u << 24);
    /* YaRN: rotation counts with beta_fast above beta_slow (the ramp runs
     * from the first to the second), and mscales that keep 0.1 m ln(factor)
     * + 1 positive */
    if (s->type == FG_SCALING_YARN) {
        if (has(c, "model.rope.scaling.beta_slow"))
            float_range(c, "model.rope.scaling.beta_slow", s->beta_slow, 1e-3, 1e6);
        if (has(c, "model.rope.scaling.beta_fast") && has(c, "model.rope.scaling.beta_slow") &&
            !(s->beta_fast > s->beta_slow))
            err_at(c, "model.rope.scaling.beta_fast", false,
                   "'model.rope.scaling.beta_fast' is %g; expected more than beta_slow (%g)",
                   s->beta_fast, s->beta_slow);
        const char *ms[] = {"model.rope.scaling.mscale", "model.rope.scaling.mscale_all_dim"};
        const double mv[] = {s->mscale, s->mscale_all_dim};
        for (int i = 0; i < 2; i++)
            if (has(c, ms[i]) && !(mv[i] >= 0 && mv[i] <= 100))
                err_at(c, ms[i], false, "'%s' is %g; expected 0 to 100", ms[i], mv[i]);
    }
}

static void check_attention(checker *c, const fg_attention *a, uint32_t max_context)
{
    if (in_range(c, "model.attention.heads", a->heads, 1, 1024) &&
        in_range(c, "model.attention.kv_heads", a->kv_heads, 1, a->heads) &&
        a->heads % a->kv_heads)
        err_at(c, "model.attention.kv_heads", false,
               "'model.attention.heads' (%u) is not a multiple of 'model.attention.kv_heads' "
               "(%u); expected whole query-head groups",
               a->heads, a->kv_heads);
    if (in_range(c, "model.attention.head_dim", a->head_dim, 8, 512))
        multiple_of(c, "model.attention.head_dim", a->head_dim, 8, "16-byte vectors");
    if (has(c, "model.attention.sliding_window") && a->sliding_window)
        in_range(c, "model.attention.sliding_window", a->sliding_window, 1, max_context);
}

static void check_mla(checker *c, const fg_mla *m)
{
    in_range(c, "model.mla.heads", m->heads, 1, 1024);
    if (has(c, "model.mla.q_lora_rank") && in_range(c, "model.mla.q_lora_rank", m->q_lora_rank,
                                                    16, 16384))
        multiple_of(c, "model.mla.q_lora_rank", m->q_lora_rank, 16, "tensor-core tiles");
    if (in_range(c, "model.mla.kv_lora_rank", m->kv_lora_rank, 16, 4096))
        multiple_of(c, "model.mla.kv_lora_rank", m->kv_lora_rank, 16, "tensor-core tiles");
    if (in_range(c, "model.mla.qk_nope_head_dim", m->qk_nope_head_dim, 8, 512))
        multiple_of(c, "model.mla.qk_nope_head_dim", m->qk_nope_head_dim, 8, "16-byte vectors");
    if (in_range(c, "model.mla.qk_rope_head_dim", m->qk_rope_head_dim, 8, 512))
        multiple_of(c, "model.mla.qk_rope_head_dim", m->qk_rope_head_dim, 8, "16-byte vectors");
    if (in_range(c, "model.mla.v_head_dim", m->v_head_dim, 8, 512))
        multiple_of(c, "model.mla.v_head_dim", m->v_head_dim, 8, "16-byte vectors");
    if (has(c, "model.mla.tensor_parallel") &&
        in_range(c, "model.mla.tensor_parallel", m->tensor_parallel, 1, 64)) {
        power_of_two(c, "model.mla.tensor_parallel", m->tensor_parallel);
        if (m->heads % m->tensor_parallel)
            err_at(c, "model.mla.tensor_parallel", false,
                   "'model.mla.heads' (%u) is not a multiple of 'model.mla.tensor_parallel' "
                   "(%u); expected whole heads per GPU",
                   m->heads, m->tensor_parallel);
    }
}

static void check_model(checker *c, fg_model *m)
{
    check_name(c, "model.name", m->name);
    if (in_range(c, "model.hidden", m->hidden, 64, 65536))
        multiple_of(c, "model.hidden", m->hidden, 8, "16-byte vectors");
    float_range(c, "model.rms_eps", m->rms_eps, 0.0, 0.01);
    in_range(c, "model.max_context", m->max_context, 1, 1u << 20);

    if (m->family == FG_FAMILY_LLAMA) {
        require(c, "model.attention", "model.family", "family llama needs it");
        forbid(c, "model.mla", "does not apply to family llama");
        if (m->attention)
            check_attention(c, m->attention, m->max_context);
    } else {
        require(c, "model.mla", "model.family", "family mla needs it");
        forbid(c, "model.attention", "does not apply to family mla; use 'model.mla'");
        if (m->mla)
            check_mla(c, m->mla);
        if (m->mla && !has(c, "model.mla.tensor_parallel"))
            m->mla->tensor_parallel = 1;
    }

    float_range(c, "model.rope.theta", m->rope->theta, 0.0, 1e9);
    if (m->rope->scaling)
        check_scaling(c, m->rope->scaling);

    if (m->kv_cache->layout == FG_KV_PAGED) {
        require(c, "model.kv_cache.page_size", "model.kv_cache.layout", "a paged cache needs it");
        if (has(c, "model.kv_cache.page_size") &&
            in_range(c, "model.kv_cache.page_size", m->kv_cache->page_size, 1, 1024))
            power_of_two(c, "model.kv_cache.page_size", m->kv_cache->page_size);
    } else {
        forbid(c, "model.kv_cache.page_size", "applies only to a paged cache");
    }

    for (unsigned i = 0; i < m->batch_sizes_count; i++) {
        char p[PATH_MAX_LEN];
        snprintf(p, sizeof p, "model.batch_sizes[%u]", i);
        in_range(c, p, m->batch_sizes[i], 1, 256);
        if (i && m->batch_sizes[i] <= m->batch_sizes[i - 1])
            err_at(c, p, false, "'%s' is %u; expected batch sizes in increasing order", p,
                   m->batch_sizes[i]);
    }
}

static void check_gemm(checker *c, const fg_gemm *g)
{
    check_name(c, "gemm.name", g->name);
    in_range(c, "gemm.world_size", g->world_size, 2, FGRT_MAX_WORLD);   /* the executor's ranks */
    for (unsigned i = 0; i < g->shapes_count; i++) {
        const fg_gemm_shape *s = &g->shapes[i];
        char p[PATH_MAX_LEN], q[PATH_MAX_LEN + 8];
        snprintf(p, sizeof p, "gemm.shapes[%u]", i);
        snprintf(q, sizeof q, "%s.name", p);
        check_name(c, q, s->name);
        for (unsigned j = 0; j < i; j++)
            if (strcmp(g->shapes[j].name, s->name) == 0)
                err_at(c, q, false, "'%s' is '%s', which gemm.shapes[%u] already uses", q,
                       s->name, j);
        snprintf(q, sizeof q, "%s.m", p);
        if (in_range(c, q, s->m, 1, 1u << 20) && g->world_size)
            multiple_of(c, q, s->m, g->world_size, "whole rows per rank");
        snprintf(q, sizeof q, "%s.n", p);
        if (in_range(c, q, s->n, 8, 1u << 20))
            multiple_of(c, q, s->n, 8, "16-byte rows");
        snprintf(q, sizeof q, "%s.k", p);
        if (in_range(c, q, s->k, 8, 1u << 20))
            multiple_of(c, q, s->k, 8, "16-byte rows");
    }
}

static void check_target(checker *c, const fg_target *t)
{
    check_name(c, "target.name", t->name);
    in_range(c, "target.compute_units", t->compute_units, 1, 1024);
    unsigned warp = fg_arch_is_amd(t->arch) ? 64 : 32;
    if (t->warp_size != warp)
        err_at(c, "target.warp_size", false, "'target.warp_size' is %u; expected %u for %s",
               t->warp_size, warp, fg_arch_name(t->arch));
    in_range(c, "target.shared_mem_per_cu", t->shared_mem_per_cu, 16384, 1u << 20);
    in_range(c, "target.shared_mem_per_block", t->shared_mem_per_block, 16384,
             t->shared_mem_per_cu);
    in_range(c, "target.registers_per_cu", t->registers_per_cu, 16384, 1u << 20);
    in_range(c, "target.max_registers_per_thread", t->max_registers_per_thread, 32, 512);
    in_range(c, "target.l2_bytes", t->l2_bytes, 1u << 20, 1u << 30);
    if (fg_arch_is_amd(t->arch)) {
        if (t->max_cluster_size)
            err_at(c, "target.max_cluster_size", false,
                   "'target.max_cluster_size' is %u; expected 0 (%s has no thread-block "
                   "clusters)",
                   t->max_cluster_size, fg_arch_name(t->arch));
    } else if (t->max_cluster_size &&   /* 0: none used (the portable forms) */
               in_range(c, "target.max_cluster_size", t->max_cluster_size, 1, 16)) {
        power_of_two(c, "target.max_cluster_size", t->max_cluster_size);
    }
    float_range(c, "target.ceilings.copy_gbps", t->ceilings->copy_gbps, 0, 1e5);
    float_range(c, "target.ceilings.read_gbps", t->ceilings->read_gbps, 0, 1e5);
    float_range(c, "target.ceilings.matmul_bf16_tflops", t->ceilings->matmul_bf16_tflops, 0,
                1e5);
    const fg_interconnect *ic = t->interconnect;
    if (ic) {
        float_range(c, "target.interconnect.peer_copy_latency_us", ic->peer_copy_latency_us, 0,
                    1e4);
        float_range(c, "target.interconnect.peer_copy_gbps", ic->peer_copy_gbps, 0, 1e5);
        /* both directions at once move at least one direction's bytes, at most twice */
        float_range(c, "target.interconnect.peer_copy_bidir_gbps", ic->peer_copy_bidir_gbps,
                    ic->peer_copy_gbps * (1 - 1e-9), 2 * ic->peer_copy_gbps);
        if (!(ic->gemm_slowdown >= 0 && ic->gemm_slowdown < 1))
            err_at(c, "target.interconnect.gemm_slowdown", false,
                   "'target.interconnect.gemm_slowdown' is %g; expected a fraction from 0 to "
                   "below 1",
                   ic->gemm_slowdown);
        if (!(ic->call_overhead_us >= 0 && ic->call_overhead_us <= 1e5))
            err_at(c, "target.interconnect.call_overhead_us", false,
                   "'target.interconnect.call_overhead_us' is %g; expected 0 to 100000",
                   ic->call_overhead_us);
        /* NCCL's fits: both figures of a collective, or neither */
        const struct { const char *lat, *rate; double l, g; } nccl[] = {
            {"target.interconnect.nccl_ag_latency_us", "target.interconnect.nccl_ag_gbps",
             ic->nccl_ag_latency_us, ic->nccl_ag_gbps},
            {"target.interconnect.nccl_rs_latency_us", "target.interconnect.nccl_rs_gbps",
             ic->nccl_rs_latency_us, ic->nccl_rs_gbps}};
        for (int i = 0; i < 2; i++) {
            if (nccl[i].l == 0 && nccl[i].g == 0)
                continue;
            if (!(nccl[i].l >= 0 && nccl[i].l <= 1e5))
                err_at(c, nccl[i].lat, false, "'%s' is %g; expected 0 to 100000", nccl[i].lat,
                       nccl[i].l);
            float_range(c, nccl[i].rate, nccl[i].g, 0, 1e5);
        }
        /* the copy lanes' fit: all three figures, or none */
        if (ic->copy_lanes_latency_us != 0 || ic->copy_lanes_gbps != 0 || ic->copy_lanes_gpus) {
            if (!(ic->copy_lanes_latency_us >= 0 && ic->copy_lanes_latency_us <= 1e4))
                err_at(c, "target.interconnect.copy_lanes_latency_us", false,
                       "'target.interconnect.copy_lanes_latency_us' is %g; expected 0 to 10000",
                       ic->copy_lanes_latency_us);
            float_range(c, "target.interconnect.copy_lanes_gbps", ic->copy_lanes_gbps, 0, 1e5);
            in_range(c, "target.interconnect.copy_lanes_gpus", ic->copy_lanes_gpus, 2, 64);
        }
        for (unsigned i = 0; i < ic->gemm_times_count; i++) {
            const fg_gemm_time *g = &ic->gemm_times[i];
            char at[64];
            snprintf(at, sizeof at, "target.interconnect.gemm_times[%u].us", i);
            float_range(c, at, g->us, 0, 1e9);
            if (!g->m || !g->n || !g->k)
                err_at(c, at, false, "'%s' is for a %ux%ux%u GEMM; expected m, n and k above 0",
                       at, g->m, g->n, g->k);
            for (unsigned j = 0; j < i; j++)
                if (ic->gemm_times[j].m == g->m && ic->gemm_times[j].n == g->n &&
                    ic->gemm_times[j].k == g->k)
                    err_at(c, at, false, "'%s': the %ux%ux%u GEMM has a second time "
                           "(gemm_times[%u] is the first); expected one", at, g->m, g->n,
                           g->k, j);
        }
    }
}

fg_tuning_kind fg_tuning_kind_of(const char *family)
{
    const size_t n = strlen(family);
    if (strncmp(family, "decode_attn_", 12) == 0)
        return n > 17 && strcmp(family + n - 5, "_grid") == 0 ? FG_TUNE_GRID : FG_TUNE_RING;
    if (strncmp(family, "rmsnorm_", 8) == 0)
        return FG_TUNE_RMSNORM;
    if (strncmp(family, "mla_decode_", 11) == 0)
        return FG_TUNE_MLA;
    if (strncmp(family, "overlap_gemm_", 13) == 0)
        return FG_TUNE_GEMM;
    if (strncmp(family, "mla_block_", 10) == 0)
        return FG_TUNE_MLA_BLOCK;
    if (strncmp(family, "overlap_reduce_", 15) == 0)
        return FG_TUNE_REDUCE;
    return FG_TUNE_NONE;
}

/* The fields that belong to some kinds of entry (a mask of 1 << kind):
 * required (or optional) on them, an error on the others. */
#define KIND(k) (1u << (k))
static const struct { const char *key; unsigned kinds; bool required; } TUNING_FIELDS[] = {
    {"stage_bytes", KIND(FG_TUNE_RING), true},
    {"stages", KIND(FG_TUNE_RING) | KIND(FG_TUNE_MLA) | KIND(FG_TUNE_GEMM), true},
    {"in_flight", KIND(FG_TUNE_RING), true},
    {"in_flight_wo", KIND(FG_TUNE_RING), false},
    {"cache_x", KIND(FG_TUNE_RMSNORM), false},
    {"heads_per_block", KIND(FG_TUNE_MLA), true},
    {"cluster", KIND(FG_TUNE_MLA), true},
    {"clusters", KIND(FG_TUNE_MLA), true},
    {"step_cols", KIND(FG_TUNE_GRID), true},
    {"slices_qkv", KIND(FG_TUNE_GRID), true},
    {"slices_o", KIND(FG_TUNE_GRID), true},
    {"key_rounds", KIND(FG_TUNE_GRID), true},
    {"c_rounds", KIND(FG_TUNE_GEMM), true},
    {"group_m", KIND(FG_TUNE_GEMM), true},
    {"slots", KIND(FG_TUNE_MLA_BLOCK), true},
    {"piece_rows", KIND(FG_TUNE_MLA_BLOCK), true},
    {"chunk_rows", KIND(FG_TUNE_MLA_BLOCK), true},
    {"mma_proj", KIND(FG_TUNE_MLA_BLOCK), false},
    {"absorb_apart", KIND(FG_TUNE_MLA_BLOCK), false},
    {"blocks_per_cu", KIND(FG_TUNE_REDUCE), true},
};

static void check_tuning(checker *c, const fg_tuning *t)
{
    static const char *const kind_name[] = {[FG_TUNE_RING] = "a decode_attn family",
                                            [FG_TUNE_RMSNORM] = "an rmsnorm family",
                                            [FG_TUNE_MLA] = "an mla_decode family",
                                            [FG_TUNE_GRID] = "a decode_attn grid family",
                                            [FG_TUNE_GEMM] = "an overlap_gemm family",
                                            [FG_TUNE_MLA_BLOCK] = "an mla_block family",
                                            [FG_TUNE_REDUCE] = "an overlap_reduce family"};
    static const char *const kind_fields[] = {
        [FG_TUNE_RING] = "threads, stage_bytes, stages, in_flight and in_flight_wo",
        [FG_TUNE_RMSNORM] = "threads and cache_x",
        [FG_TUNE_MLA] = "threads, heads_per_block, stages, cluster and clusters",
        [FG_TUNE_GRID] = "threads, step_cols, slices_qkv, slices_o and key_rounds",
        [FG_TUNE_GEMM] = "threads, stages, c_rounds and group_m",
        [FG_TUNE_MLA_BLOCK] = "threads, slots, piece_rows, chunk_rows, mma_proj and absorb_apart",
        [FG_TUNE_REDUCE] = "threads and blocks_per_cu"};
    check_name(c, "tuning.target", t->target);
    for (unsigned i = 0; i < t->entries_count; i++) {
        const fg_tuning_entry *e = &t->entries[i];
        char p[PATH_MAX_LEN], entry[32];
        snprintf(entry, sizeof entry, "tuning.entries[%u]", i);
#define AT(field) (snprintf(p, sizeof p, "%s." field, entry), p)
        /* an instance name's stem: it is matched against generated names */
        if (strspn(e->family, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(e->family) ||
            !(e->family[0] >= 'a' && e->family[0] <= 'z')) {
            err_at(c, AT("family"), false,
                   "'%s' is '%s'; expected an instance name without its configuration part "
                   "(lowercase letters, digits and '_', starting with a letter)",
                   p, e->family);
            continue;
        }
        const fg_tuning_kind kind = fg_tuning_kind_of(e->family);
        if (kind == FG_TUNE_NONE) {
            err_at(c, AT("family"), false,
                   "'%s' is '%s'; expected a family fusegen tunes (decode_attn_..., "
                   "rmsnorm_..., mla_decode_..., overlap_gemm_..., mla_block_... or "
                   "overlap_reduce_...)", p,
                   e->family);
            continue;
        }
        for (unsigned j = 0; j < i; j++)
            if (strcmp(t->entries[j].family, e->family) == 0)
                err_at(c, AT("family"), false, "family '%s' has a second entry (entries[%u] "
                       "is the first); expected one per family", e->family, j);
        bool fields_ok = true;
        for (size_t f = 0; f < sizeof TUNING_FIELDS / sizeof TUNING_FIELDS[0]; f++) {
            char why[160];
            snprintf(p, sizeof p, "%s.%s", entry, TUNING_FIELDS[f].key);
            const bool mine = TUNING_FIELDS[f].kinds & KIND(kind);
            if (!mine && has(c, p)) {
                snprintf(why, sizeof why, "does not apply to %s; its configuration is %s",
                         kind_name[kind], kind_fields[kind]);
                forbid(c, p, why);
                fields_ok = false;
            } else if (mine && TUNING_FIELDS[f].required && !has(c, p)) {
                snprintf(why, sizeof why, "%s needs it", kind_name[kind]);
                require(c, p, entry, why);
                fields_ok = false;
            }
        }
        if (in_range(c, AT("threads"), e->threads, 32, 1024))
            multiple_of(c, AT("threads"), e->threads, 32, "whole warps");
        if (kind == FG_TUNE_RING && fields_ok) {
            if (in_range(c, AT("stage_bytes"), e->stage_bytes, 1024, 1u << 20))
                multiple_of(c, AT("stage_bytes"), e->stage_bytes, 128,
                            "bulk copies stay aligned");
            in_range(c, AT("stages"), e->stages, 1, 16);
            in_range(c, AT("in_flight"), e->in_flight, 1, e->stages ? e->stages : 1);
            if (e->in_flight_wo)
                in_range(c, AT("in_flight_wo"), e->in_flight_wo, 1,
                         e->in_flight ? e->in_flight : 1);
        }
        if (kind == FG_TUNE_GRID && fields_ok) {   /* the planner checks the rest */
            if (in_range(c, AT("step_cols"), e->step_cols, 32, 4096))
                multiple_of(c, AT("step_cols"), e->step_cols, 32, "whole 32-column chunks");
            in_range(c, AT("slices_qkv"), e->slices_qkv, 1, 64);
            in_range(c, AT("slices_o"), e->slices_o, 1, 64);
            in_range(c, AT("key_rounds"), e->key_rounds, 1, 16);
        }
        if (kind == FG_TUNE_GEMM && fields_ok) {   /* the planner checks the rest */
            in_range(c, AT("stages"), e->stages, 2, 8);
            in_range(c, AT("c_rounds"), e->c_rounds, 1, 4);
            in_range(c, AT("group_m"), e->group_m, 1, 64);
        }
        if (kind == FG_TUNE_MLA_BLOCK && fields_ok) {   /* the planner checks the rest */
            in_range(c, AT("slots"), e->slots, 2, 8);
            in_range(c, AT("piece_rows"), e->piece_rows, 1, 64);
            in_range(c, AT("chunk_rows"), e->chunk_rows, 4, 128);
        }
        if (kind == FG_TUNE_REDUCE && fields_ok)   /* the planner checks the rest */
            in_range(c, AT("blocks_per_cu"), e->blocks_per_cu, 1, 64);
        if (kind == FG_TUNE_MLA && fields_ok) {   /* the planner checks the rest */
            in_range(c, AT("heads_per_block"), e->heads_per_block, 16, 64);
            in_range(c, AT("stages"), e->stages, 1, 16);
            in_range(c, AT("cluster"), e->cluster, 1, 16);
            in_range(c, AT("clusters"), e->clusters, 1, 64);
        }
        float_range(c, AT("tuned_us"), e->tuned_us, 0, 1e9);
        float_range(c, AT("model_us"), e->model_us, 0, 1e9);
        float_range(c, AT("worst_us"), e->worst_us, 0, 1e9);
        in_range(c, AT("candidates"), e->candidates, 1, 1u << 20);
#undef AT
    }
}
#undef KIND

/* ---- driver ---- */

static void quiet_log(cyaml_log_t level, void *ctx, const char *fmt, va_list args)
{
    (void)level, (void)ctx, (void)fmt, (void)args;
}

static bool parse_document(checker *c, const char *text, size_t len)
{
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    bool ok = yaml_parser_load(&parser, c->doc);
    if (!ok)
        fg_error_at(c->d, c->file, (unsigned)parser.problem_mark.line + 1,
                    (unsigned)parser.problem_mark.column + 1, "YAML syntax: %s%s%s",
                    parser.problem ? parser.problem : "malformed document",
                    parser.context ? " " : "", parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    return ok;
}

static void check_top(checker *c, const fg_spec *s)
{
    if (s->schema_version != FG_SCHEMA_VERSION)
        err_at(c, "schema_version", false,
               "'schema_version' is %u; this fusegen reads schema version %u",
               s->schema_version, FG_SCHEMA_VERSION);
}

static unsigned count_kinds(const checker *c)
{
    return (unsigned)has(c, "model") + (unsigned)has(c, "gemm") + (unsigned)has(c, "target") +
           (unsigned)has(c, "tuning");
}

fg_spec *fg_spec_load(const char *path, fg_diag *d)
{
    size_t len;
    char *text = fg_read_all(path, &len);
    if (!text) {
        fg_error_at(d, path, 0, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    fg_spec *spec = fg_spec_load_text(path, text, len, d);
    free(text);
    return spec;
}

fg_spec *fg_spec_load_gemm(const char *path, fg_diag *d)
{
    fg_spec *s = fg_spec_load(path, d);
    if (s && s->kind != FG_SPEC_GEMM) {
        fg_error_at(d, path, 0, 0, "expected a GEMM-overlap spec (gemm:)");
        fg_spec_free(s);
        return NULL;
    }
    return s;
}

fg_spec *fg_spec_load_text(const char *path, const char *text, size_t len, fg_diag *d)
{
    int errors_before = d->errors;
    yaml_document_t doc;
    checker c = {.file = path, .d = d, .doc = &doc};
    fg_spec *spec = NULL;
    if (!parse_document(&c, text, len))
        goto out_text;

    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        fg_error_at(d, path, 1, 1,
                    "empty spec; expected a mapping with schema_version and one of model, "
                    "gemm, target, tuning");
        goto out_doc;
    }
    check_value(&c, root, &fg_spec_schema, "");
    if (d->errors == errors_before && count_kinds(&c) != 1)
        fg_error_at(d, path, (unsigned)root->start_mark.line + 1,
                    (unsigned)root->start_mark.column + 1,
                    "a spec holds exactly one of 'model', 'gemm', 'target' or 'tuning'; found %u",
                    count_kinds(&c));
    if (d->errors != errors_before)
        goto out_doc;

    cyaml_config_t cfg = {.log_fn = quiet_log, .mem_fn = cyaml_mem, .log_level = CYAML_LOG_ERROR};
    cyaml_err_t err =
        cyaml_load_data((const uint8_t *)text, len, &cfg, &fg_spec_schema, (void **)&spec, NULL);
    if (err != CYAML_OK) {
        /* Pass 2 accepts only what the schema describes, so this is a bug. */
        fg_error_at(d, path, 1, 1, "libcyaml rejected the document: %s", cyaml_strerror(err));
        spec = NULL;
        goto out_doc;
    }
    check_top(&c, spec);
    if (spec->model) {
        spec->kind = FG_SPEC_MODEL;
        check_model(&c, spec->model);
    } else if (spec->gemm) {
        spec->kind = FG_SPEC_GEMM;
        check_gemm(&c, spec->gemm);
    } else if (spec->target) {
        spec->kind = FG_SPEC_TARGET;
        check_target(&c, spec->target);
    } else {
        spec->kind = FG_SPEC_TUNING;
        check_tuning(&c, spec->tuning);
    }
    if (d->errors != errors_before) {
        cyaml_free(&cfg, &fg_spec_schema, spec, 0);
        spec = NULL;
        goto out_doc;
    }
    spec->path = strdup(path);

out_doc:
    yaml_document_delete(&doc);
out_text:
    free(c.locs);
    return spec;
}

void fg_spec_free(fg_spec *s)
{
    if (!s)
        return;
    free(s->path);
    s->path = NULL;
    cyaml_config_t cfg = {.log_fn = quiet_log, .mem_fn = cyaml_mem, .log_level = CYAML_LOG_ERROR};
    cyaml_free(&cfg, &fg_spec_schema, s, 0);
}

unsigned fg_dtype_bytes(fg_dtype t)
{
    (void)t;
    return 2; /* f16 and bf16 */
}

bool fg_arch_is_amd(fg_arch a) { return a == FG_ARCH_GFX942 || a == FG_ARCH_GFX90A; }

const char *fg_arch_tag(fg_arch a)
{
    switch (a) {
    case FG_ARCH_SM90A: return "sm90a";
    case FG_ARCH_GFX942: return "gfx942";
    case FG_ARCH_GFX90A: return "gfx90a";
    }
    return "?";
}

int fg_spec_write_checked(const char *path, const char *text, size_t len, bool *changed,
                          fg_diag *d)
{
    *changed = false;
    fg_spec *check = fg_spec_load_text(path, text, len, d);
    if (!check) {
        fg_error(d, "the spec to write does not validate (above); %s left as it was", path);
        return -1;
    }
    fg_spec_free(check);
    return fg_write_if_changed(path, text, len, changed, d);
}
