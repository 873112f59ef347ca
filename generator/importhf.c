/* import-hf: a Hugging Face config.json becomes a fusegen model spec.
 *
 * Steps: read the text; parse it with json-c (strict JSON); index where each
 * key sits in the text, so messages can say line:col; translate the config
 * for its family, marking every key the translation reads; report every key
 * that was neither read nor listed as irrelevant; emit the YAML.  Nothing is
 * emitted after an error. */
#define _POSIX_C_SOURCE 200809L
#include "importhf.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"
#include "fsutil.h"
#include "spec.h"

#define KEY_PATH_LEN 96
#define MAX_READ 128
#define MAX_BATCH_SIZES 16  /* as the spec format allows */
#define MAX_BATCH 256
#define MAX_PAGE_SIZE 1024
#define MAX_TENSOR_PARALLEL 64
#define DEFAULT_ROPE_THETA 10000.0 /* transformers' default for every supported type */

/* model_type values, as bits so that key tables can name several. */
enum {
    MT_LLAMA = 1u << 0,
    MT_MISTRAL = 1u << 1,
    MT_QWEN2 = 1u << 2,
    MT_DSV2 = 1u << 3,
    MT_DSV3 = 1u << 4,
};
#define FAM_LLAMA (MT_LLAMA | MT_MISTRAL | MT_QWEN2)
#define FAM_MLA (MT_DSV2 | MT_DSV3)
#define ALL_TYPES (FAM_LLAMA | FAM_MLA)

static const struct {
    const char *name;
    unsigned bit;
} model_types[] = {
    {"llama", MT_LLAMA},       {"mistral", MT_MISTRAL},     {"qwen2", MT_QWEN2},
    {"deepseek_v2", MT_DSV2}, {"deepseek_v3", MT_DSV3},
};
#define SUPPORTED_TYPES "llama, mistral, qwen2, deepseek_v2, deepseek_v3"

/* Keys that do not change what the attention block computes at inference.
 * Everything else must be read by the translation or it is an error. */
static const struct {
    const char *key;
    unsigned types;
} irrelevant_keys[] = {
    /* bookkeeping */
    {"architectures", ALL_TYPES},
    {"transformers_version", ALL_TYPES},
    {"auto_map", FAM_MLA},
    {"bos_token_id", ALL_TYPES},
    {"eos_token_id", ALL_TYPES},
    {"pad_token_id", ALL_TYPES},
    {"use_cache", ALL_TYPES},
    {"initializer_range", ALL_TYPES},
    /* embeddings, MLP, LM head, depth: a spec describes one attention block */
    {"vocab_size", ALL_TYPES},
    {"tie_word_embeddings", ALL_TYPES},
    {"intermediate_size", ALL_TYPES},
    {"hidden_act", ALL_TYPES},
    {"mlp_bias", ALL_TYPES},
    {"num_hidden_layers", ALL_TYPES},
    /* training only */
    {"attention_dropout", ALL_TYPES},
    {"aux_loss_alpha", FAM_MLA},
    {"seq_aux", FAM_MLA},
    /* slices the projections and sums the slices: the same math */
    {"pretraining_tp", ALL_TYPES},
    /* MoE experts and routing (the MLP half of the block) */
    {"n_routed_experts", FAM_MLA},
    {"n_shared_experts", FAM_MLA},
    {"num_experts_per_tok", FAM_MLA},
    {"moe_intermediate_size", FAM_MLA},
    {"moe_layer_freq", FAM_MLA},
    {"first_k_dense_replace", FAM_MLA},
    {"n_group", FAM_MLA},
    {"topk_group", FAM_MLA},
    {"topk_method", FAM_MLA},
    {"routed_scaling_factor", FAM_MLA},
    {"scoring_func", FAM_MLA},
    {"norm_topk_prob", FAM_MLA},
    {"ep_size", FAM_MLA},
    /* V3's multi-token-prediction layers are more blocks of the same shape */
    {"num_nextn_predict_layers", MT_DSV3},
    /* MLA's latent cache is shared by all heads; the key is vestigial */
    {"num_key_value_heads", FAM_MLA},
};

/* Where a key ("key" or "parent.key") starts in the text. */
typedef struct key_loc {
    char path[KEY_PATH_LEN];
    unsigned line, col;
} key_loc;

typedef struct importer {
    const char *file;
    fg_diag *d;
    const char *text;
    size_t len;
    key_loc *locs;
    size_t nlocs, caplocs;
    char read[MAX_READ][KEY_PATH_LEN]; /* keys the translation looked up */
    unsigned nread;
    const char *type_name;
    unsigned type; /* MT_* */
} importer;

/* The translated model, with storage for what fg_model points to. */
typedef struct imported {
    fg_model m;
    fg_attention att;
    fg_mla mla;
    fg_rope rope;
    fg_rope_scaling_spec scaling;
    fg_kv_cache kv;
    uint32_t batch[MAX_BATCH_SIZES];
    char name[FG_SPEC_NAME_MAX + 1];
} imported;

/* The options, parsed. */
typedef struct choices {
    bool have_dtype, have_kv;
    fg_dtype dtype;
    fg_kv_cache kv;
    uint32_t batch[MAX_BATCH_SIZES];
    unsigned nbatch;
    unsigned tensor_parallel;
} choices;

/* ---- positions of keys in the text ---- */

static const key_loc *find_loc(const importer *im, const char *path)
{
    for (size_t i = 0; i < im->nlocs; i++)
        if (strcmp(im->locs[i].path, path) == 0)
            return &im->locs[i];
    return NULL;
}

/* Reports an error at the key `path`, or at the file when it has no place. */
static void err_key(importer *im, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void err_key(importer *im, const char *path, const char *fmt, ...)
{
    const key_loc *l = path ? find_loc(im, path) : NULL;
    va_list ap;
    va_start(ap, fmt);
    fg_verror_at(im->d, im->file, l ? l->line : 0, l ? l->col : 0, fmt, ap);
    va_end(ap);
}

static void add_loc(importer *im, const char *path, size_t off)
{
    unsigned line, col;
    fg_line_col(im->text, off, &line, &col);
    const key_loc *dup = find_loc(im, path);
    if (dup) {
        /* json-c keeps the last value without a word; a twice-given key is
         * more likely an editing mistake than intent. */
        fg_error_at(im->d, im->file, line, col,
                    "config key '%s' appears twice (first at line %u); expected it once", path,
                    dup->line);
        return;
    }
    if (im->nlocs == im->caplocs) {
        const size_t cap = im->caplocs ? 2 * im->caplocs : 64;
        key_loc *locs = realloc(im->locs, cap * sizeof *locs);
        if (!locs)
            fg_out_of_memory();
        im->locs = locs, im->caplocs = cap;
    }
    key_loc *l = &im->locs[im->nlocs++];
    snprintf(l->path, sizeof l->path, "%s", path);
    l->line = line;
    l->col = col;
}

/* A skimmer over text json-c has already accepted: it only has to find the
 * keys of the top-level object and of the objects directly inside it.
 * json-c's strict mode still takes single-quoted strings, which JSON has
 * not: the first one's offset is kept for the error.  Every step moves
 * forward, whatever the text. */
typedef struct scanner {
    importer *im;
    size_t i;
    size_t single_quote;   /* offset of the first single-quoted string; len: none */
} scanner;

static char peek(const scanner *s) { return s->i < s->im->len ? s->im->text[s->i] : '\0'; }

static void skip_ws(scanner *s)
{
    while (strchr(" \t\r\n", peek(s)) && peek(s))
        s->i++;
}

/* From an opening quote (" or ') to past the closing one of the same kind;
 * [*a, *b) is the content. */
static void skip_string(scanner *s, size_t *a, size_t *b)
{
    const char quote = peek(s);
    if (quote == '\'' && s->single_quote == s->im->len)
        s->single_quote = s->i;
    s->i++;
    *a = s->i;
    while (s->i < s->im->len && s->im->text[s->i] != quote)
        s->i += s->im->text[s->i] == '\\' ? 2 : 1;
    if (s->i > s->im->len)
        s->i = s->im->len;
    *b = s->i;
    s->i++;
}

static void scan_value(scanner *s, const char *parent, int depth);

static void scan_object(scanner *s, const char *parent, int depth)
{
    s->i++;
    for (;;) {
        skip_ws(s);
        char c = peek(s);
        if (c == '\0' || c == '}') {
            s->i++;
            return;
        }
        if (c == ',') {
            s->i++;
            continue;
        }
        size_t at = s->i, a, b;
        skip_string(s, &a, &b);
        char path[KEY_PATH_LEN];
        int klen = (int)(b - a);
        if (depth == 0)
            snprintf(path, sizeof path, "%.*s", klen, s->im->text + a);
        else
            snprintf(path, sizeof path, "%s.%.*s", parent, klen, s->im->text + a);
        if (depth <= 1)
            add_loc(s->im, path, at);
        skip_ws(s);
        s->i++; /* ':' */
        scan_value(s, path, depth + 1);
    }
}

static void scan_value(scanner *s, const char *parent, int depth)
{
    skip_ws(s);
    size_t a, b;
    switch (peek(s)) {
    case '{':
        scan_object(s, parent, depth);
        break;
    case '[':
        s->i++;
        for (;;) {
            skip_ws(s);
            char c = peek(s);
            if (c == '\0' || c == ']') {
                s->i++;
                break;
            }
            if (c == ',')
                s->i++;
            else
                scan_value(s, parent, 2); /* keys inside arrays are not indexed */
        }
        break;
    case '"':
    case '\'':
        skip_string(s, &a, &b);
        break;
    default: {
        const size_t from = s->i;
        while (peek(s) && !strchr(",]} \t\r\n", peek(s)))
            s->i++;
        if (s->i == from && peek(s))
            s->i++;   /* a delimiter where a value belongs: step over it */
    }
    }
}

static json_object *parse_json(importer *im)
{
    if (im->len > INT32_MAX) {
        fg_error_at(im->d, im->file, 0, 0, "file too large for a config.json");
        return NULL;
    }
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        fg_out_of_memory();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *root = json_tokener_parse_ex(tok, im->text, (int)im->len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    if (!root) {
        size_t off = e == json_tokener_continue ? im->len : json_tokener_get_parse_end(tok);
        unsigned line, col;
        fg_line_col(im->text, off, &line, &col);
        if (e == json_tokener_continue)
            fg_error_at(im->d, im->file, line, col,
                        "JSON syntax error: the file ends inside a value; expected the rest of "
                        "the JSON object");
        else
            fg_error_at(im->d, im->file, line, col, "JSON syntax error: %s",
                        json_tokener_error_desc(e));
    }
    json_tokener_free(tok);
    return root;
}

/* ---- looking keys up ---- */

static void mark_read(importer *im, const char *path)
{
    for (unsigned i = 0; i < im->nread; i++)
        if (strcmp(im->read[i], path) == 0)
            return;
    if (im->nread < MAX_READ)
        snprintf(im->read[im->nread++], KEY_PATH_LEN, "%s", path);
}

static bool was_read(const importer *im, const char *path)
{
    for (unsigned i = 0; i < im->nread; i++)
        if (strcmp(im->read[i], path) == 0)
            return true;
    return false;
}

static const char *join(char out[KEY_PATH_LEN], const char *prefix, const char *key)
{
    snprintf(out, KEY_PATH_LEN, "%s%s%s", prefix, *prefix ? "." : "", key);
    return out;
}

/* Finds the last component of `path` in `obj` and marks `path` read.
 * False when absent; *v is NULL for a JSON null. */
static bool lookup(importer *im, json_object *obj, const char *path, json_object **v)
{
    const char *dot = strrchr(path, '.');
    mark_read(im, path);
    *v = NULL;
    return json_object_object_get_ex(obj, dot ? dot + 1 : path, v);
}

/* A value as JSON text, shortened for messages. */
static const char *value_text(json_object *v, char *buf, size_t size)
{
    const char *t =
        json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (strlen(t) < size)
        snprintf(buf, size, "%s", t);
    else
        snprintf(buf, size, "%.*s...", (int)size - 4, t);
    return buf;
}

static const char *kind_name(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null: return "null";
    case json_type_boolean: return "a boolean";
    case json_type_int:
    case json_type_double: return "a number";
    case json_type_string: return "a string";
    case json_type_array: return "an array";
    case json_type_object: return "an object";
    }
    return "a value";
}

static void bad_value(importer *im, const char *path, json_object *v, const char *expected)
{
    char buf[64];
    if (!v)
        err_key(im, path, "config key '%s' is null; expected %s", path, expected);
    else
        err_key(im, path, "config key '%s' is %s (%s); expected %s", path, kind_name(v),
                value_text(v, buf, sizeof buf), expected);
}

/* A key whose value names a feature fusegen does not support. */
static void unsupported(importer *im, const char *path, json_object *v, const char *why)
{
    char buf[64];
    err_key(im, path, "config key '%s' (value %s) %s", path, value_text(v, buf, sizeof buf), why);
}

static void missing(importer *im, const char *path, const char *expected)
{
    err_key(im, path, "config key '%s' is missing; expected %s", path, expected);
}

static bool to_uint(importer *im, const char *path, json_object *v, uint32_t *out)
{
    if (json_object_is_type(v, json_type_int)) {
        int64_t x = json_object_get_int64(v);
        if (x >= 1 && x <= UINT32_MAX) {
            *out = (uint32_t)x;
            return true;
        }
    }
    bad_value(im, path, v, "a positive integer");
    return false;
}

static bool to_num(importer *im, const char *path, json_object *v, bool zero_ok, double *out)
{
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
        double x = json_object_get_double(v);
        if (isfinite(x) && (x > 0 || (zero_ok && x == 0))) {
            *out = x;
            return true;
        }
    }
    bad_value(im, path, v, zero_ok ? "a non-negative number" : "a positive number");
    return false;
}

static bool to_bool(importer *im, const char *path, json_object *v, bool *out)
{
    if (json_object_is_type(v, json_type_boolean)) {
        *out = json_object_get_boolean(v);
        return true;
    }
    bad_value(im, path, v, "true or false");
    return false;
}

static bool to_str(importer *im, const char *path, json_object *v, const char **out)
{
    if (json_object_is_type(v, json_type_string)) {
        *out = json_object_get_string(v);
        return true;
    }
    bad_value(im, path, v, "a string");
    return false;
}

static bool need_uint(importer *im, json_object *obj, const char *path, uint32_t *out)
{
    json_object *v;
    if (!lookup(im, obj, path, &v)) {
        missing(im, path, "a positive integer");
        return false;
    }
    return to_uint(im, path, v, out);
}

static bool need_num(importer *im, json_object *obj, const char *path, double *out)
{
    json_object *v;
    if (!lookup(im, obj, path, &v)) {
        missing(im, path, "a positive number");
        return false;
    }
    return to_num(im, path, v, false, out);
}

/* Optional keys: absent or null leave *out alone; true when *out was set. */
static bool opt_uint(importer *im, json_object *obj, const char *path, uint32_t *out)
{
    json_object *v;
    return lookup(im, obj, path, &v) && v && to_uint(im, path, v, out);
}

static bool opt_num(importer *im, json_object *obj, const char *path, bool zero_ok, double *out)
{
    json_object *v;
    return lookup(im, obj, path, &v) && v && to_num(im, path, v, zero_ok, out);
}

static bool opt_bool(importer *im, json_object *obj, const char *path, bool *out)
{
    json_object *v;
    return lookup(im, obj, path, &v) && v && to_bool(im, path, v, out);
}

static bool opt_str(importer *im, json_object *obj, const char *path, const char **out)
{
    json_object *v;
    return lookup(im, obj, path, &v) && v && to_str(im, path, v, out);
}

static bool is_irrelevant(const importer *im, const char *key)
{
    for (size_t i = 0; i < sizeof irrelevant_keys / sizeof irrelevant_keys[0]; i++)
        if ((irrelevant_keys[i].types & im->type) && strcmp(irrelevant_keys[i].key, key) == 0)
            return true;
    return false;
}

/* Every key of `obj` must have been read (or, at the top, be irrelevant). */
static void check_unread(importer *im, json_object *obj, const char *prefix)
{
    json_object_object_foreach(obj, key, val) {
        char path[KEY_PATH_LEN], buf[64];
        join(path, prefix, key);
        if (was_read(im, path) || (!*prefix && is_irrelevant(im, key)))
            continue;
        err_key(im, path,
                "config key '%s' (value %s) is not understood by import-hf; it may change what "
                "the attention block computes, so it is not ignored",
                path, value_text(val, buf, sizeof buf));
    }
}

/* ---- options ---- */

static bool parse_dtype(const char *s, fg_dtype *t)
{
    if (strcmp(s, "f16") == 0)
        *t = FG_DT_F16;
    else if (strcmp(s, "bf16") == 0)
        *t = FG_DT_BF16;
    else
        return false;
    return true;
}

/* A decimal integer from 1 to `max`, nothing else. */
static bool parse_count(const char *s, size_t n, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (!fg_parse_decimal(s, n, 1, max, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

static bool parse_kv_cache(const char *s, fg_kv_cache *kv)
{
    kv->page_size = 0;
    if (strcmp(s, "contiguous") == 0) {
        kv->layout = FG_KV_CONTIGUOUS;
        return true;
    }
    kv->layout = FG_KV_PAGED;
    return strncmp(s, "paged:", 6) == 0 &&
           parse_count(s + 6, strlen(s + 6), MAX_PAGE_SIZE, &kv->page_size) &&
           is_pow2(kv->page_size);
}

static bool parse_batch_sizes(const char *s, uint32_t *out, unsigned *n)
{
    *n = 0;
    for (;;) {
        size_t len = strcspn(s, ",");
        if (*n == MAX_BATCH_SIZES || !parse_count(s, len, MAX_BATCH, &out[*n]) ||
            (*n && out[*n] <= out[*n - 1]))
            return false;
        ++*n;
        if (!s[len])
            return true;
        s += len + 1;
    }
}

static bool parse_choices(const fg_import_opts *o, choices *c, fg_diag *d)
{
    int before = d->errors;
    memset(c, 0, sizeof *c);
    if (o->name && !fg_spec_name_ok(o->name))
        fg_error(d,
                 "--name '%s': expected up to %d lowercase letters, digits, '.', '_' or '-', "
                 "starting with a letter or digit",
                 o->name, FG_SPEC_NAME_MAX);
    c->have_dtype = o->dtype != NULL;
    if (o->dtype && !parse_dtype(o->dtype, &c->dtype))
        fg_error(d, "--dtype '%s': expected f16 or bf16", o->dtype);
    c->have_kv = o->kv_cache != NULL;
    if (o->kv_cache && !parse_kv_cache(o->kv_cache, &c->kv))
        fg_error(d,
                 "--kv-cache '%s': expected contiguous or paged:N with N a power of two from 1 "
                 "to %d",
                 o->kv_cache, MAX_PAGE_SIZE);
    const char *bs = o->batch_sizes ? o->batch_sizes : "1,4,16";
    if (!parse_batch_sizes(bs, c->batch, &c->nbatch))
        fg_error(d,
                 "--batch-sizes '%s': expected up to %d comma-separated batch sizes from 1 to %d "
                 "in increasing order",
                 bs, MAX_BATCH_SIZES, MAX_BATCH);
    c->tensor_parallel = o->tensor_parallel ? o->tensor_parallel : 1;
    if (!is_pow2(c->tensor_parallel) || c->tensor_parallel > MAX_TENSOR_PARALLEL)
        fg_error(d, "--tensor-parallel %u: expected a power of two from 1 to %d",
                 c->tensor_parallel, MAX_TENSOR_PARALLEL);
    return d->errors == before;
}

/* ---- translation ---- */

static bool find_model_type(importer *im, json_object *root)
{
    const char *s;
    json_object *v;
    if (!lookup(im, root, "model_type", &v)) {
        missing(im, "model_type", "one of " SUPPORTED_TYPES);
        return false;
    }
    if (!to_str(im, "model_type", v, &s))
        return false;
    for (size_t i = 0; i < sizeof model_types / sizeof model_types[0]; i++) {
        if (strcmp(model_types[i].name, s) == 0) {
            im->type = model_types[i].bit;
            im->type_name = model_types[i].name;
            return true;
        }
    }
    err_key(im, "model_type",
            "config key 'model_type' is \"%s\", which import-hf does not support; expected one "
            "of " SUPPORTED_TYPES,
            s);
    return false;
}

static void import_scaling_keys(importer *im, json_object *sc, const char *prefix,
                                fg_rope_scaling_spec *s)
{
    char p[KEY_PATH_LEN];
    need_num(im, sc, join(p, prefix, "factor"), &s->factor);
    if (s->type == FG_SCALING_LINEAR)
        return;
    need_uint(im, sc, join(p, prefix, "original_max_position_embeddings"),
              &s->original_max_position);
    if (s->type == FG_SCALING_LLAMA3) {
        need_num(im, sc, join(p, prefix, "low_freq_factor"), &s->low_freq_factor);
        need_num(im, sc, join(p, prefix, "high_freq_factor"), &s->high_freq_factor);
        return;
    }
    /* yarn; absent keys take transformers' defaults */
    s->beta_fast = 32;
    s->beta_slow = 1;
    s->mscale = 1;
    s->mscale_all_dim = 0;
    opt_num(im, sc, join(p, prefix, "beta_fast"), false, &s->beta_fast);
    opt_num(im, sc, join(p, prefix, "beta_slow"), false, &s->beta_slow);
    bool has_m = opt_num(im, sc, join(p, prefix, "mscale"), false, &s->mscale);
    bool has_all = opt_num(im, sc, join(p, prefix, "mscale_all_dim"), true, &s->mscale_all_dim);
    /* transformers ignores mscale unless mscale_all_dim is also given, while
     * DeepSeek's own code uses each alone: with only one, the two disagree. */
    if (has_m != has_all)
        err_key(im, join(p, prefix, has_m ? "mscale" : "mscale_all_dim"),
                "config key '%s' is given without '%s.%s'; implementations disagree on what "
                "that means; expected both or neither",
                p, prefix, has_m ? "mscale_all_dim" : "mscale");
}

/* rope_scaling (or transformers 5's rope_parameters) into s; NONE when the
 * object asks for no scaling. */
static void import_scaling(importer *im, json_object *sc, const char *prefix,
                           fg_rope_scaling_spec *s)
{
    static const struct {
        const char *name;
        fg_rope_scaling type;
    } types[] = {{"default", FG_SCALING_NONE},
                 {"linear", FG_SCALING_LINEAR},
                 {"llama3", FG_SCALING_LLAMA3},
                 {"yarn", FG_SCALING_YARN}};
    char p1[KEY_PATH_LEN], p2[KEY_PATH_LEN];
    const char *t1 = NULL, *t2 = NULL;
    opt_str(im, sc, join(p1, prefix, "type"), &t1);
    opt_str(im, sc, join(p2, prefix, "rope_type"), &t2);
    if (t1 && t2 && strcmp(t1, t2) != 0) {
        err_key(im, p2, "config key '%s' is \"%s\" but '%s' is \"%s\"; expected one type", p2, t2,
                p1, t1);
        return;
    }
    const char *path = t1 ? p1 : p2, *name = t1 ? t1 : t2;
    if (!name) {
        err_key(im, prefix, "config key '%s' has no 'type' or 'rope_type'; expected %s", prefix,
                "linear, llama3 or yarn");
        return;
    }
    size_t i = 0;
    while (i < sizeof types / sizeof types[0] && strcmp(types[i].name, name) != 0)
        i++;
    if (i == sizeof types / sizeof types[0]) {
        json_object *v;
        lookup(im, sc, path, &v);
        unsupported(im, path, v,
                    "is a RoPE scaling that fusegen kernels do not support; expected linear, "
                    "llama3 or yarn");
        return;
    }
    s->type = types[i].type;
    if (s->type != FG_SCALING_NONE)
        import_scaling_keys(im, sc, prefix, s);
    check_unread(im, sc, prefix);
}

static void import_rope(importer *im, json_object *root, imported *out)
{
    fg_rope *r = &out->rope;
    json_object *params, *sc;
    r->theta = DEFAULT_ROPE_THETA;
    r->layout = im->type & FAM_MLA ? FG_ROPE_GPTJ : FG_ROPE_NEOX;
    r->scaling = NULL;
    out->scaling.type = FG_SCALING_NONE;

    if (lookup(im, root, "rope_parameters", &params) && params) {
        /* transformers 5 keeps theta and scaling in one object */
        if (json_object_object_get_ex(root, "rope_theta", NULL) ||
            json_object_object_get_ex(root, "rope_scaling", NULL)) {
            mark_read(im, "rope_theta");
            mark_read(im, "rope_scaling");
            err_key(im, "rope_parameters",
                    "config has both 'rope_parameters' and 'rope_theta' or 'rope_scaling'; "
                    "expected one of the two forms");
            return;
        }
        if (!json_object_is_type(params, json_type_object)) {
            bad_value(im, "rope_parameters", params, "an object");
            return;
        }
        need_num(im, params, "rope_parameters.rope_theta", &r->theta);
        import_scaling(im, params, "rope_parameters", &out->scaling);
    } else {
        opt_num(im, root, "rope_theta", false, &r->theta);
        if (lookup(im, root, "rope_scaling", &sc) && sc) {
            if (json_object_is_type(sc, json_type_object))
                import_scaling(im, sc, "rope_scaling", &out->scaling);
            else
                bad_value(im, "rope_scaling", sc, "an object or null");
        }
    }
    if (out->scaling.type != FG_SCALING_NONE)
        r->scaling = &out->scaling;
}

/* Mistral: one window for every layer.  Qwen2: a window only on the layers
 * from max_window_layers on, which a spec cannot express. */
static uint32_t import_window(importer *im, json_object *root)
{
    json_object *v;
    uint32_t w = 0;
    if (im->type == MT_MISTRAL) {
        if (!lookup(im, root, "sliding_window", &v))
            w = 4096; /* transformers' MistralConfig default */
        else if (v)
            to_uint(im, "sliding_window", v, &w);
    } else if (im->type == MT_QWEN2) {
        bool use = false;
        uint32_t layers = 28; /* transformers' Qwen2Config default */
        opt_bool(im, root, "use_sliding_window", &use);
        bool has_w = opt_uint(im, root, "sliding_window", &w);
        opt_uint(im, root, "max_window_layers", &layers);
        if (use && has_w)
            err_key(im, "use_sliding_window",
                    "config key 'use_sliding_window' (value true) gives qwen2 layers from "
                    "max_window_layers (%u) on a sliding window of %u tokens; a fusegen spec has "
                    "one attention shape for all layers; expected false",
                    layers, w);
        w = 0;
    }
    return w;
}

static void import_attention(importer *im, json_object *root, imported *out)
{
    fg_attention *a = &out->att;
    json_object *v;
    need_uint(im, root, "num_attention_heads", &a->heads);
    a->kv_heads = a->heads;
    opt_uint(im, root, "num_key_value_heads", &a->kv_heads);
    if (!opt_uint(im, root, "head_dim", &a->head_dim) && a->heads && out->m.hidden) {
        if (out->m.hidden % a->heads)
            err_key(im, "num_attention_heads",
                    "config key 'num_attention_heads' (%u) does not divide hidden_size (%u) and "
                    "there is no head_dim; expected head_dim",
                    a->heads, out->m.hidden);
        else
            a->head_dim = out->m.hidden / a->heads;
    }
    if (a->heads && a->kv_heads && a->heads % a->kv_heads)
        err_key(im, "num_key_value_heads",
                "config key 'num_key_value_heads' (%u) does not divide num_attention_heads (%u); "
                "expected whole query-head groups",
                a->kv_heads, a->heads);

    /* Qwen2 always has q/k/v biases (and none on o_proj); Llama's
     * attention_bias puts one on o_proj as well. */
    a->qkv_bias = im->type == MT_QWEN2;
    bool bias = false;
    if (im->type == MT_LLAMA && opt_bool(im, root, "attention_bias", &bias) && bias) {
        lookup(im, root, "attention_bias", &v);
        unsupported(im, "attention_bias", v,
                    "adds a bias to o_proj, which fusegen kernels do not support; expected false");
    }
    if (lookup(im, root, "attn_logit_softcapping", &v) && v)
        unsupported(im, "attn_logit_softcapping", v,
                    "asks for attention logit soft-capping, which fusegen kernels do not "
                    "support; expected null");
    a->sliding_window = import_window(im, root);
    out->m.attention = a;
}

static void import_mla(importer *im, json_object *root, const choices *c, imported *out)
{
    fg_mla *m = &out->mla;
    json_object *v;
    need_uint(im, root, "num_attention_heads", &m->heads);
    if (!lookup(im, root, "q_lora_rank", &v))
        missing(im, "q_lora_rank", "a positive integer, or null for no q_lora path");
    else if (v) /* null: q is projected from the hidden state directly (V2-Lite) */
        to_uint(im, "q_lora_rank", v, &m->q_lora_rank);
    need_uint(im, root, "kv_lora_rank", &m->kv_lora_rank);
    need_uint(im, root, "qk_nope_head_dim", &m->qk_nope_head_dim);
    need_uint(im, root, "qk_rope_head_dim", &m->qk_rope_head_dim);
    need_uint(im, root, "v_head_dim", &m->v_head_dim);

    /* Newer transformers write head_dim = qk_rope_head_dim (the RoPE part). */
    uint32_t hd = 0;
    if (opt_uint(im, root, "head_dim", &hd) && hd != m->qk_rope_head_dim)
        err_key(im, "head_dim",
                "config key 'head_dim' (%u) differs from qk_rope_head_dim (%u); expected them "
                "equal or head_dim absent",
                hd, m->qk_rope_head_dim);
    bool flag = false;
    if (opt_bool(im, root, "attention_bias", &flag) && flag) {
        lookup(im, root, "attention_bias", &v);
        unsupported(im, "attention_bias", v,
                    "adds biases to the q, kv and o projections, which fusegen MLA kernels do "
                    "not support; expected false");
    }
    /* DeepSeek rotates interleaved pairs; rope_interleave false means halves. */
    flag = true;
    opt_bool(im, root, "rope_interleave", &flag);
    out->rope.layout = flag ? FG_ROPE_GPTJ : FG_ROPE_NEOX;

    /* V3 ships fp8 block-quantized weights; the kernels take the spec's
     * dtype, so they are dequantized before binding.  Integer formats are
     * something else. */
    if (lookup(im, root, "quantization_config", &v) && v) {
        json_object *qm = NULL;
        if (!json_object_object_get_ex(v, "quant_method", &qm) ||
            !json_object_is_type(qm, json_type_string) ||
            strcmp(json_object_get_string(qm), "fp8") != 0)
            unsupported(im, "quantization_config", v,
                        "names a weight format fusegen cannot dequantize; expected none or "
                        "quant_method fp8");
    }
    m->tensor_parallel = c->tensor_parallel;
    if (m->heads && m->heads % m->tensor_parallel)
        fg_error(im->d, "--tensor-parallel %u does not divide the %u heads of %s; expected a "
                        "divisor of %u",
                 m->tensor_parallel, m->heads, im->file, m->heads);
    out->m.mla = m;
}

static void import_dtype(importer *im, json_object *root, const choices *c, imported *out)
{
    json_object *v1, *v2;
    const char *s1 = NULL, *s2 = NULL;
    bool bad = false;
    if (lookup(im, root, "torch_dtype", &v1) && v1)
        bad |= !to_str(im, "torch_dtype", v1, &s1);
    /* transformers 4.56 and later write "dtype" instead */
    if (lookup(im, root, "dtype", &v2) && v2)
        bad |= !to_str(im, "dtype", v2, &s2);
    if (bad)
        return;
    if (s1 && s2 && strcmp(s1, s2) != 0) {
        err_key(im, "dtype",
                "config key 'dtype' is \"%s\" but torch_dtype is \"%s\"; expected one dtype", s2,
                s1);
        return;
    }
    const char *s = s1 ? s1 : s2, *path = s1 ? "torch_dtype" : "dtype";
    if (c->have_dtype)
        out->m.dtype = c->dtype;
    else if (!s)
        err_key(im, NULL, "config has no torch_dtype; pass --dtype f16 or --dtype bf16");
    else if (strcmp(s, "float16") == 0)
        out->m.dtype = FG_DT_F16;
    else if (strcmp(s, "bfloat16") == 0)
        out->m.dtype = FG_DT_BF16;
    else
        err_key(im, path,
                "config key '%s' is \"%s\", which fusegen kernels do not compute in; pass "
                "--dtype f16 or --dtype bf16",
                path, s);
}

/* "org/Some-Model" -> "some-model". */
static void derive_name(const char *src, char *out, size_t size)
{
    size_t end = strlen(src);
    while (end && src[end - 1] == '/')
        end--;
    size_t start = end;
    while (start && src[start - 1] != '/')
        start--;
    size_t n = 0;
    for (size_t i = start; i < end && n + 1 < size; i++) {
        char ch = src[i];
        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        bool keep = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || strchr("._-", ch);
        out[n++] = keep ? ch : '-';
    }
    out[n] = '\0';
    if (end - start >= size) /* too long: make fg_spec_name_ok refuse it */
        out[0] = '\0';
}

static void import_name(importer *im, json_object *root, const fg_import_opts *o,
                        imported *out)
{
    const char *src = NULL;
    json_object *v;
    bool present = lookup(im, root, "_name_or_path", &v) && v;
    if (present && !to_str(im, "_name_or_path", v, &src))
        return;
    if (o->name) {
        snprintf(out->name, sizeof out->name, "%s", o->name);
        return;
    }
    if (!present) {
        err_key(im, NULL, "config has no _name_or_path to name the model after; pass --name");
        return;
    }
    derive_name(src, out->name, sizeof out->name);
    if (!fg_spec_name_ok(out->name))
        err_key(im, "_name_or_path",
                "config key '_name_or_path' (\"%s\") gives no usable model name; pass --name",
                src);
}

/* The positions the model covers: max_position_embeddings, or what RoPE
 * scaling stretches the original positions to (Qwen2's YaRN recipe keeps
 * max_position_embeddings at the original length). */
static uint32_t covered_positions(const imported *out, uint32_t mpe)
{
    const fg_rope_scaling_spec *s = out->rope.scaling;
    if (!s)
        return mpe;
    double orig = s->type == FG_SCALING_LINEAR ? mpe : s->original_max_position;
    double ext = s->factor * orig;
    return ext > mpe ? (ext < UINT32_MAX ? (uint32_t)ext : UINT32_MAX) : mpe;
}

static void import_context(importer *im, json_object *root, const fg_import_opts *o,
                           imported *out)
{
    uint32_t mpe = 0;
    json_object *v;
    bool have = lookup(im, root, "max_position_embeddings", &v);
    if (have && !to_uint(im, "max_position_embeddings", v, &mpe))
        return;
    if (o->max_context) {
        uint32_t limit = covered_positions(out, mpe);
        if (have && o->max_context > limit)
            fg_error(im->d,
                     "--max-context %u exceeds the %u positions of %s (max_position_embeddings, "
                     "stretched by RoPE scaling where present); expected at most %u",
                     o->max_context, limit, im->file, limit);
        out->m.max_context = o->max_context;
    } else if (have) {
        out->m.max_context = mpe;
    } else {
        missing(im, "max_position_embeddings", "a positive integer (or pass --max-context)");
    }
}

static void import_model(importer *im, json_object *root, const fg_import_opts *o,
                         const choices *c, imported *out)
{
    fg_model *m = &out->m;
    if (!find_model_type(im, root))
        return;
    m->family = im->type & FAM_MLA ? FG_FAMILY_MLA : FG_FAMILY_LLAMA;
    import_name(im, root, o, out);
    import_dtype(im, root, c, out);
    need_uint(im, root, "hidden_size", &m->hidden);
    need_num(im, root, "rms_norm_eps", &m->rms_eps);
    import_rope(im, root, out);
    if (m->family == FG_FAMILY_LLAMA) {
        import_attention(im, root, out);
        if (c->tensor_parallel > 1)
            fg_error(im->d, "--tensor-parallel applies to family mla; %s is %s, family llama",
                     im->file, im->type_name);
    } else {
        import_mla(im, root, c, out);
    }
    import_context(im, root, o, out);
    /* A window at least as long as the context never leaves a token out. */
    if (m->attention && m->max_context && m->attention->sliding_window >= m->max_context)
        m->attention->sliding_window = 0;

    m->rope = &out->rope;
    out->kv = c->have_kv ? c->kv
                         : (fg_kv_cache){m->family == FG_FAMILY_MLA ? FG_KV_PAGED
                                                                    : FG_KV_CONTIGUOUS,
                                         m->family == FG_FAMILY_MLA ? 64 : 0};
    m->kv_cache = &out->kv;
    memcpy(out->batch, c->batch, sizeof out->batch);
    m->batch_sizes = out->batch;
    m->batch_sizes_count = c->nbatch;
    m->name = out->name;
    check_unread(im, root, "");
}

/* ---- emitting ---- */

/* Integers print as integers; other numbers as the shortest text that reads
 * back to the same double, with a '.' in the mantissa because YAML 1.1
 * readers take 1e-05 for a string. */
static void fmt_num(char *buf, size_t size, double v)
{
    if (v > -1e15 && v < 1e15 && v == (double)(int64_t)v) {
        snprintf(buf, size, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    char *e = strchr(buf, 'e');
    if (e && !memchr(buf, '.', (size_t)(e - buf)) && strlen(buf) + 3 <= size) {
        memmove(e + 2, e, strlen(e) + 1);
        e[0] = '.';
        e[1] = '0';
    }
}

static void put_num(fg_strbuf *sb, const char *indent_key, double v)
{
    char buf[40];
    fmt_num(buf, sizeof buf, v);
    fg_sb_printf(sb, "%s: %s\n", indent_key, buf);
}

static void emit_scaling(fg_strbuf *sb, const fg_rope_scaling_spec *s)
{
    /* the names the spec loader reads back (spec_schema.c) */
    fg_sb_printf(sb, "    scaling:\n      type: %s\n", fg_scaling_name(s->type));
    put_num(sb, "      factor", s->factor);
    if (s->type == FG_SCALING_LLAMA3) {
        put_num(sb, "      low_freq_factor", s->low_freq_factor);
        put_num(sb, "      high_freq_factor", s->high_freq_factor);
    }
    if (s->type != FG_SCALING_LINEAR)
        fg_sb_printf(sb, "      original_max_position: %u\n", s->original_max_position);
    if (s->type == FG_SCALING_YARN) {
        put_num(sb, "      beta_fast", s->beta_fast);
        put_num(sb, "      beta_slow", s->beta_slow);
        put_num(sb, "      mscale", s->mscale);
        put_num(sb, "      mscale_all_dim", s->mscale_all_dim);
    }
}

static void emit_block(fg_strbuf *sb, const fg_model *m)
{
    if (m->attention) {
        const fg_attention *a = m->attention;
        fg_sb_printf(sb,
                     "  attention:\n    heads: %u\n    kv_heads: %u\n    head_dim: %u\n"
                     "    qkv_bias: %s\n    sliding_window: %u\n",
                     a->heads, a->kv_heads, a->head_dim, a->qkv_bias ? "true" : "false",
                     a->sliding_window);
        return;
    }
    const fg_mla *x = m->mla;
    fg_sb_printf(sb, "  mla:\n    heads: %u\n", x->heads);
    if (x->q_lora_rank)
        fg_sb_printf(sb, "    q_lora_rank: %u\n", x->q_lora_rank);
    fg_sb_printf(sb,
                 "    kv_lora_rank: %u\n    qk_nope_head_dim: %u\n    qk_rope_head_dim: %u\n"
                 "    v_head_dim: %u\n    tensor_parallel: %u\n",
                 x->kv_lora_rank, x->qk_nope_head_dim, x->qk_rope_head_dim, x->v_head_dim,
                 x->tensor_parallel);
}

static void emit_yaml(fg_strbuf *sb, const char *json_path, const fg_model *m)
{
    const char *base = strrchr(json_path, '/');
    base = base ? base + 1 : json_path;
    fg_sb_puts(sb, "# fusegen model spec, imported from ");
    for (const char *p = base; *p; p++) /* a comment ends at a line break */
        fg_sb_append(sb, (unsigned char)*p < ' ' ? "?" : p, 1);
    fg_sb_printf(sb, "\nschema_version: %u\nmodel:\n  name: %s\n  family: %s\n  dtype: %s\n"
                     "  hidden: %u\n",
                 FG_SCHEMA_VERSION, m->name, fg_family_name(m->family), fg_dtype_name(m->dtype),
                 m->hidden);
    put_num(sb, "  rms_eps", m->rms_eps);
    emit_block(sb, m);
    fg_sb_puts(sb, "  rope:\n");
    put_num(sb, "    theta", m->rope->theta);
    fg_sb_printf(sb, "    layout: %s\n", fg_rope_layout_name(m->rope->layout));
    if (m->rope->scaling)
        emit_scaling(sb, m->rope->scaling);
    fg_sb_printf(sb, "  kv_cache:\n    layout: %s\n", fg_kv_layout_name(m->kv_cache->layout));
    if (m->kv_cache->layout == FG_KV_PAGED)
        fg_sb_printf(sb, "    page_size: %u\n", m->kv_cache->page_size);
    fg_sb_puts(sb, "  batch_sizes: [");
    for (unsigned i = 0; i < m->batch_sizes_count; i++)
        fg_sb_printf(sb, "%s%u", i ? ", " : "", m->batch_sizes[i]);
    fg_sb_printf(sb, "]\n  max_context: %u\n", m->max_context);
}

int fg_import_hf(const char *json_path, const fg_import_opts *o, fg_strbuf *yaml_out,
                 fg_diag *d)
{
    size_t len;
    char *text = fg_read_all(json_path, &len);
    if (!text) {
        fg_error_at(d, json_path, 0, 0, "cannot read: %s", strerror(errno));
        return 1;
    }
    int rc = fg_import_hf_text(json_path, text, len, o, yaml_out, d);
    free(text);
    return rc;
}

int fg_import_hf_text(const char *json_path, const char *json, size_t len,
                      const fg_import_opts *o, fg_strbuf *yaml_out, fg_diag *d)
{
    static const fg_import_opts no_opts;
    int before = d->errors;
    choices c;
    if (!o)
        o = &no_opts;
    if (!parse_choices(o, &c, d))
        return 1;

    importer *im = calloc(1, sizeof *im);
    if (!im)
        fg_out_of_memory();
    im->file = json_path;
    im->d = d;
    /* every reader of the text stops at len: no terminator needed */
    im->len = len;
    im->text = json;
    json_object *root = parse_json(im);
    if (root && !json_object_is_type(root, json_type_object)) {
        scanner s = {im, 0, len};
        unsigned line, col;
        skip_ws(&s);
        fg_line_col(im->text, s.i, &line, &col);
        fg_error_at(d, json_path, line, col, "the file holds %s; expected a JSON object",
                    kind_name(root));
    } else if (root) {
        scanner s = {im, 0, len};
        scan_value(&s, "", 0);
        if (s.single_quote < len) {
            unsigned line, col;
            fg_line_col(im->text, s.single_quote, &line, &col);
            fg_error_at(d, json_path, line, col, "JSON syntax error: a single-quoted string; "
                        "JSON quotes strings with \"");
        } else {
            imported out = {0};
            import_model(im, root, o, &c, &out);
            if (d->errors == before)
                emit_yaml(yaml_out, json_path, &out.m);
        }
    }
    json_object_put(root);
    free(im->locs);
    free(im);
    return d->errors != before;
}

/* ---- the command ---- */

static const char usage_text[] =
    "usage: fusegen import-hf [options] CONFIG.json\n"
    "\n"
    "Reads a Hugging Face config.json and writes a fusegen model spec.\n"
    "Supported model_type: llama, mistral, qwen2 (family llama);\n"
    "deepseek_v2, deepseek_v3 (family mla).  Every config key must be understood:\n"
    "an unknown key or an unsupported feature is an error, never dropped.\n"
    "\n"
    "options:\n"
    "  -o FILE                  write the spec to FILE (atomically; an unchanged FILE\n"
    "                           is left alone); default: standard output\n"
    "  --name NAME              model name; default: from _name_or_path\n"
    "  --dtype f16|bf16         element type; default: from torch_dtype\n"
    "  --batch-sizes LIST       comma-separated batch sizes; default: 1,4,16\n"
    "  --kv-cache contiguous|paged:N\n"
    "                           KV cache layout; default: contiguous (llama family),\n"
    "                           paged:64 (mla family)\n"
    "  --max-context N          longest context; default: max_position_embeddings\n"
    "  --tensor-parallel N      GPUs the MLA heads are split over; default: 1\n"
    "  -h, --help               show this text\n"
    "\n"
    "exit status: 0 done, 1 the config could not be imported or the spec not\n"
    "written, 2 bad command line.\n";

static int usage_error(fg_diag *d, const char *what, const char *arg)
{
    fg_error(d, "import-hf: %s '%s'; see 'fusegen import-hf --help'", what, arg);
    return 2;
}

int fg_cmd_import_hf(int argc, char **argv)
{
    enum { OPT_NAME = 256, OPT_DTYPE, OPT_BATCH, OPT_KV, OPT_MAXCTX, OPT_TP };
    static const struct option longopts[] = {
        {"name", required_argument, NULL, OPT_NAME},
        {"dtype", required_argument, NULL, OPT_DTYPE},
        {"batch-sizes", required_argument, NULL, OPT_BATCH},
        {"kv-cache", required_argument, NULL, OPT_KV},
        {"max-context", required_argument, NULL, OPT_MAXCTX},
        {"tensor-parallel", required_argument, NULL, OPT_TP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fg_import_opts o = {0};
    const char *out = NULL;
    fg_diag d;
    fg_diag_init(&d, stderr);
    uint32_t num;
    int c;

    optind = 0; /* glibc: start afresh, so the command can run twice in one process */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        case OPT_NAME: o.name = optarg; break;
        case OPT_DTYPE: o.dtype = optarg; break;
        case OPT_BATCH: o.batch_sizes = optarg; break;
        case OPT_KV: o.kv_cache = optarg; break;
        case OPT_MAXCTX:
            if (!parse_count(optarg, strlen(optarg), UINT32_MAX, &num))
                return usage_error(&d, "--max-context expects a positive integer, not", optarg);
            o.max_context = num;
            break;
        case OPT_TP:
            if (!parse_count(optarg, strlen(optarg), UINT32_MAX, &num))
                return usage_error(&d, "--tensor-parallel expects a positive integer, not",
                                   optarg);
            o.tensor_parallel = num;
            break;
        case ':': return usage_error(&d, "missing value for option", argv[optind - 1]);
        default: {
            char opt[3] = {'-', (char)optopt, '\0'};
            return usage_error(&d, "unknown option", optopt ? opt : argv[optind - 1]);
        }
        }
    }
    if (optind != argc - 1) {
        fg_error(&d, "import-hf: expected one CONFIG.json, got %d arguments; see "
                     "'fusegen import-hf --help'",
                 argc - optind);
        return 2;
    }
    choices ch;
    if (!parse_choices(&o, &ch, &d))
        return 2;

    fg_strbuf sb = {0};
    int rc = fg_import_hf(argv[optind], &o, &sb, &d) ? 1 : 0;
    if (rc == 0 && out) {
        /* atomic, and an unchanged file keeps its mtime */
        rc = fg_write_if_changed(out, sb.data, sb.len, NULL, &d) ? 1 : 0;
    } else if (rc == 0 && (fwrite(sb.data, 1, sb.len, stdout) != sb.len || fflush(stdout))) {
        fg_error(&d, "cannot write the spec to standard output: %s", strerror(errno));
        rc = 1;
    }
    fg_sb_free(&sb);
    return rc;
}
