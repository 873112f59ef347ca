/* import-hf: published configs translate to the expected specs byte for
 * byte, those specs load, unsupported or malformed configs fail with exact
 * messages, and the command line behaves.  Run from the repository root. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "importhf.h"
#include "spec.h"

#define HF "tests/data/hf/"

static char *read_all(const char *path)
{
    char *text = fg_read_all(path, NULL);
    cr_assert(text, "cannot read %s", path);
    return text;
}

/* The text without its comment lines. */
static char *strip_comments(const char *s)
{
    fg_strbuf sb = {0};
    while (*s) {
        size_t n = strcspn(s, "\n");
        if (s[n] == '\n')
            n++;
        if (*s != '#')
            fg_sb_append(&sb, s, n);
        s += n;
    }
    fg_sb_append(&sb, "", 0);
    return sb.data;
}

/* Imports tests/data/hf/<name>.json; the diagnostics stay in d->last. */
static int import(const char *name, const fg_import_opts *o, fg_strbuf *out, fg_diag *d)
{
    char path[256];
    snprintf(path, sizeof path, HF "%s.json", name);
    fg_diag_init(d, NULL);
    return fg_import_hf(path, o, out, d);
}

/* The spec loader's verdict on `text`, written to a fresh temp file. */
static void assert_loads(const char *text, const char *what)
{
    char path[] = "/tmp/fg-importhf-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    size_t len = strlen(text);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
    fg_diag d;
    fg_diag_init(&d, NULL);
    fg_spec *s = fg_spec_load(path, &d);
    unlink(path);
    cr_assert(s, "%s does not load: %s", what, d.last);
    cr_assert_eq(d.errors, 0);
    cr_assert_eq(s->kind, FG_SPEC_MODEL);
    fg_spec_free(s);
}

/* Criterion re-runs the test binary for each test, so parameters must not
 * hold pointers: they are indices into the tables below. */
static size_t *indices(size_t n)
{
    static size_t idx[64];
    cr_assert(n <= sizeof idx / sizeof idx[0]);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    return idx;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- published configs ---- */

static const char *const good_names[] = {
    "llama-2-7b",        "llama-2-13b",           "llama-3-8b",  "llama-3.1-8b",
    "qwen2-7b",          "qwen2-7b-instruct-yarn", "mistral-7b-v0.1",
    "deepseek-v2-lite", "deepseek-v2",           "deepseek-v3",
};

ParameterizedTestParameters(import_hf, published_configs)
{
    return cr_make_param_array(size_t, indices(COUNT(good_names)), COUNT(good_names));
}

ParameterizedTest(size_t *i, import_hf, published_configs)
{
    const char *name = good_names[*i];
    fg_strbuf out = {0};
    fg_diag d;
    int rc = import(name, NULL, &out, &d);
    cr_assert_eq(rc, 0, "%s: %s", name, d.last);

    char path[256];
    snprintf(path, sizeof path, HF "%s.expected.yaml", name);
    char *want = read_all(path);
    cr_expect_str_eq(fg_sb_str(&out), want, "%s differs from %s", name, path);
    assert_loads(fg_sb_str(&out), name);
    free(want);
    fg_sb_free(&out);
}

/* ---- unsupported and malformed configs ---- */

typedef struct bad_case {
    const char *name;
    const char *message;
} bad_case;

static const bad_case bad_cases[] = {
        {"bad-rope-dynamic",
         HF "bad-rope-dynamic.json:21:5: error: config key 'rope_scaling.type' (value "
            "\"dynamic\") is a RoPE scaling that fusegen kernels do not support; expected "
            "linear, llama3 or yarn"},
        {"bad-gemma2",
         HF "bad-gemma2.json:20:3: error: config key 'model_type' is \"gemma2\", which "
            "import-hf does not support; expected one of llama, mistral, qwen2, deepseek_v2, "
            "deepseek_v3"},
        {"bad-softcap",
         HF "bad-softcap.json:25:3: error: config key 'attn_logit_softcapping' (value 50.0) "
            "asks for attention logit soft-capping, which fusegen kernels do not support; "
            "expected null"},
        {"bad-attention-bias",
         HF "bad-attention-bias.json:6:3: error: config key 'attention_bias' (value true) adds "
            "a bias to o_proj, which fusegen kernels do not support; expected false"},
        {"bad-unknown-key",
         HF "bad-unknown-key.json:18:3: error: config key 'use_qk_norm' (value true) is not "
            "understood by import-hf; it may change what the attention block computes, so it "
            "is not ignored"},
        {"bad-yarn-extra-key",
         HF "bad-yarn-extra-key.json:40:5: error: config key 'rope_scaling.attention_factor' "
            "(value 1.2) is not understood by import-hf; it may change what the attention "
            "block computes, so it is not ignored"},
        {"bad-qwen2-window",
         HF "bad-qwen2-window.json:26:3: error: config key 'use_sliding_window' (value true) "
            "gives qwen2 layers from max_window_layers (21) on a sliding window of 4096 "
            "tokens; a fusegen spec has one attention shape for all layers; expected false"},
        {"bad-syntax",
         HF "bad-syntax.json:10:3: error: JSON syntax error: object value separator ',' "
            "expected"},
        {"bad-truncated",
         HF "bad-truncated.json:13:20: error: JSON syntax error: the file ends inside a value; "
            "expected the rest of the JSON object"},
        {"bad-single-quote",
         HF "bad-single-quote.json:3:3: error: JSON syntax error: a single-quoted string; JSON "
            "quotes strings with \""},
        /* found by fuzz_importhf: json-c took the single quotes, and the key scanner,
         * misaligned by them, looped forever on a stray bracket */
        {"bad-fuzz-single-quote-hang",
         HF "bad-fuzz-single-quote-hang.json:13:1: error: JSON syntax error: a single-quoted "
            "string; JSON quotes strings with \""},
        {"bad-not-object",
         HF "bad-not-object.json:1:1: error: the file holds an array; expected a JSON object"},
        {"bad-hidden-string",
         HF "bad-hidden-string.json:9:3: error: config key 'hidden_size' is a string "
            "(\"4096\"); expected a positive integer"},
        {"bad-missing-hidden",
         HF "bad-missing-hidden.json: error: config key 'hidden_size' is missing; expected a "
            "positive integer"},
        {"bad-duplicate-key",
         HF "bad-duplicate-key.json:17:3: error: config key 'hidden_size' appears twice "
            "(first at line 9); expected it once"},
        {"bad-dtype-float32",
         HF "bad-dtype-float32.json:21:3: error: config key 'torch_dtype' is \"float32\", "
            "which fusegen kernels do not compute in; pass --dtype f16 or --dtype bf16"},
        {"bad-no-name",
         HF "bad-no-name.json: error: config has no _name_or_path to name the model after; "
            "pass --name"},
        {"no-such-file",
         HF "no-such-file.json: error: cannot read: No such file or directory"},
};

ParameterizedTestParameters(import_hf, rejected_configs)
{
    return cr_make_param_array(size_t, indices(COUNT(bad_cases)), COUNT(bad_cases));
}

ParameterizedTest(size_t *i, import_hf, rejected_configs, .timeout = 10)
{
    const bad_case *c = &bad_cases[*i];
    fg_strbuf out = {0};
    fg_diag d;
    int rc = import(c->name, NULL, &out, &d);
    cr_assert_neq(rc, 0, "%s was accepted", c->name);
    cr_expect_eq(d.errors, 1, "%s: %d errors, the last: %s", c->name, d.errors, d.last);
    cr_expect_str_eq(d.last, c->message);
    cr_expect_eq(out.len, 0, "%s: output after an error", c->name);
    fg_sb_free(&out);
}

/* ---- options ---- */

/* Imports with options, expecting success, and checks that `piece` is in
 * the output and that the output loads. */
static void expect_output(const char *name, const fg_import_opts *o, const char *piece)
{
    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_eq(import(name, o, &out, &d), 0, "%s: %s", name, d.last);
    cr_expect(strstr(fg_sb_str(&out), piece), "%s: no \"%s\" in:\n%s", name, piece,
              fg_sb_str(&out));
    assert_loads(fg_sb_str(&out), name);
    fg_sb_free(&out);
}

static void expect_error(const char *name, const fg_import_opts *o, const char *message)
{
    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_neq(import(name, o, &out, &d), 0, "%s was accepted", name);
    cr_expect_str_eq(d.last, message);
    cr_expect_eq(out.len, 0);
    fg_sb_free(&out);
}

Test(import_hf, dtype_option_overrides_torch_dtype)
{
    expect_output("bad-dtype-float32", &(fg_import_opts){.dtype = "f16"}, "\n  dtype: f16\n");
    expect_output("llama-2-7b", &(fg_import_opts){.dtype = "bf16"}, "\n  dtype: bf16\n");
    expect_error("llama-2-7b", &(fg_import_opts){.dtype = "fp32"},
                 "fusegen: error: --dtype 'fp32': expected f16 or bf16");
}

Test(import_hf, kv_cache_option)
{
    expect_output("llama-2-7b", &(fg_import_opts){.kv_cache = "paged:16"},
                  "\n  kv_cache:\n    layout: paged\n    page_size: 16\n");
    expect_output("deepseek-v2-lite", &(fg_import_opts){.kv_cache = "contiguous"},
                  "\n  kv_cache:\n    layout: contiguous\n  batch_sizes");
    static const char *const bad[] = {"paged:0", "paged:24", "paged:", "paged:2048", "ring",
                                      "paged:16x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[256];
        snprintf(want, sizeof want,
                 "fusegen: error: --kv-cache '%s': expected contiguous or paged:N with N a power "
                 "of two from 1 to 1024",
                 bad[i]);
        expect_error("llama-2-7b", &(fg_import_opts){.kv_cache = bad[i]}, want);
    }
}

Test(import_hf, batch_sizes_option)
{
    expect_output("deepseek-v2-lite", &(fg_import_opts){.batch_sizes = "1,16,64"},
                  "\n  batch_sizes: [1, 16, 64]\n");
    static const char *const bad[] = {"4,1", "1,,4", "", "0", "1,4,", "512"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[256];
        snprintf(want, sizeof want,
                 "fusegen: error: --batch-sizes '%s': expected up to 16 comma-separated batch "
                 "sizes from 1 to 256 in increasing order",
                 bad[i]);
        expect_error("llama-2-7b", &(fg_import_opts){.batch_sizes = bad[i]}, want);
    }
}

Test(import_hf, name_option)
{
    expect_output("bad-no-name", &(fg_import_opts){.name = "mistral-7b"},
                  "\n  name: mistral-7b\n");
    expect_error("llama-2-7b", &(fg_import_opts){.name = "Llama/2"},
                 "fusegen: error: --name 'Llama/2': expected up to 64 lowercase letters, "
                 "digits, '.', '_' or '-', starting with a letter or digit");
}

Test(import_hf, max_context_option)
{
    /* A window at least as long as the context is full attention. */
    expect_output("mistral-7b-v0.1", &(fg_import_opts){.max_context = 4096},
                  "    sliding_window: 0\n");
    expect_output("mistral-7b-v0.1", &(fg_import_opts){.max_context = 8192},
                  "    sliding_window: 4096\n");
    expect_error("llama-2-7b", &(fg_import_opts){.max_context = 8192},
                 "fusegen: error: --max-context 8192 exceeds the 4096 positions of " HF
                 "llama-2-7b.json (max_position_embeddings, stretched by RoPE scaling where "
                 "present); expected at most 4096");
    /* Qwen2's YaRN recipe keeps max_position_embeddings at 32768, factor 4. */
    expect_output("qwen2-7b-instruct-yarn", &(fg_import_opts){.max_context = 131072},
                  "\n  max_context: 131072\n");
    expect_error("qwen2-7b-instruct-yarn", &(fg_import_opts){.max_context = 131073},
                 "fusegen: error: --max-context 131073 exceeds the 131072 positions of " HF
                 "qwen2-7b-instruct-yarn.json (max_position_embeddings, stretched by RoPE "
                 "scaling where present); expected at most 131072");
}

Test(import_hf, tensor_parallel_option)
{
    expect_output("deepseek-v3", &(fg_import_opts){.tensor_parallel = 8},
                  "    tensor_parallel: 8\n");
    expect_error("deepseek-v3", &(fg_import_opts){.tensor_parallel = 3},
                 "fusegen: error: --tensor-parallel 3: expected a power of two from 1 to 64");
    expect_error("deepseek-v2-lite", &(fg_import_opts){.tensor_parallel = 32},
                 "fusegen: error: --tensor-parallel 32 does not divide the 16 heads of " HF
                 "deepseek-v2-lite.json; expected a divisor of 16");
    expect_error("llama-2-7b", &(fg_import_opts){.tensor_parallel = 2},
                 "fusegen: error: --tensor-parallel applies to family mla; " HF
                 "llama-2-7b.json is llama, family llama");
}

/* ---- the transformers 5 form and smaller rules ---- */

Test(import_hf, transformers5_form)
{
    /* "dtype", "rope_parameters" and head_dim = qk_rope_head_dim, as
     * transformers 5 saves DeepSeek-V2-Lite-Chat. */
    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_eq(import("deepseek-v2-lite-chat-tf5", &(fg_import_opts){.name = "deepseek-v2-lite"},
                        &out, &d),
                 0, "%s", d.last);
    char *want_text = read_all(HF "deepseek-v2-lite.expected.yaml");
    char *got = strip_comments(fg_sb_str(&out)), *want = strip_comments(want_text);
    cr_expect_str_eq(got, want);
    free(got), free(want), free(want_text);
    fg_sb_free(&out);
}

/* A small config: a Llama-2-7B block with `extra` spliced in (JSON members
 * with a trailing comma, or ""), written to a temp file. */
static const char small_head[] = "{\n  \"_name_or_path\": \"%s\",\n";
static const char small_tail[] =
    "  \"hidden_size\": 4096,\n  \"num_attention_heads\": 32,\n"
    "  \"max_position_embeddings\": 32768,\n  \"rms_norm_eps\": 1e-05,\n"
    "  \"torch_dtype\": \"float16\"\n}\n";

/* Imports `model_type` + `extra` under `name`; returns the diagnostics'
 * last line with the temp path replaced by "X". */
static int import_small(const char *name, const char *model_type, const char *extra,
                        fg_strbuf *out, char *msg, size_t msg_size)
{
    char path[] = "/tmp/fg-importhf-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, small_head, name);
    fprintf(f, "  \"model_type\": \"%s\",\n%s%s", model_type, extra, small_tail);
    fclose(f);
    fg_diag d;
    fg_diag_init(&d, NULL);
    int rc = fg_import_hf(path, NULL, out, &d);
    unlink(path);
    const char *p = strstr(d.last, path);
    if (p)
        snprintf(msg, msg_size, "%.*sX%s", (int)(p - d.last), d.last, p + strlen(path));
    else
        snprintf(msg, msg_size, "%s", d.last);
    return rc;
}

static void small_ok(const char *type, const char *extra, const char *piece)
{
    fg_strbuf out = {0};
    char msg[512];
    cr_assert_eq(import_small("test/small", type, extra, &out, msg, sizeof msg), 0, "%s", msg);
    cr_expect(strstr(fg_sb_str(&out), piece), "no \"%s\" in:\n%s", piece, fg_sb_str(&out));
    assert_loads(fg_sb_str(&out), extra);
    fg_sb_free(&out);
}

static void small_error_named(const char *name, const char *type, const char *extra,
                              const char *want)
{
    fg_strbuf out = {0};
    char msg[512];
    cr_assert_neq(import_small(name, type, extra, &out, msg, sizeof msg), 0, "accepted: %s",
                  extra);
    cr_expect_str_eq(msg, want);
    fg_sb_free(&out);
}

static void small_error(const char *type, const char *extra, const char *want)
{
    small_error_named("test/small", type, extra, want);
}

Test(import_hf, small_configs_accepted)
{
    small_ok("llama", "  \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0},\n",
             "    scaling:\n      type: linear\n      factor: 2\n  kv_cache");
    small_ok("llama", "  \"rope_scaling\": {\"rope_type\": \"default\"},\n",
             "    layout: neox\n  kv_cache");
    small_ok("llama", "  \"head_dim\": 64, \"num_key_value_heads\": 8,\n",
             "    heads: 32\n    kv_heads: 8\n    head_dim: 64\n");
    small_ok("mistral", "  \"sliding_window\": null,\n", "    sliding_window: 0\n");
    /* transformers' MistralConfig defaults an absent window to 4096 */
    small_ok("mistral", "", "    sliding_window: 4096\n");
    small_ok("qwen2", "  \"use_sliding_window\": true, \"sliding_window\": null,\n",
             "    qkv_bias: true\n    sliding_window: 0\n");
    small_ok("llama", "  \"attn_logit_softcapping\": null, \"rope_theta\": 500000,\n",
             "    theta: 500000\n");
}

Test(import_hf, small_configs_rejected)
{
    small_error("llama",
                "  \"rope_scaling\": {\"type\": \"yarn\", \"rope_type\": \"linear\", "
                "\"factor\": 2},\n",
                "X:4:36: error: config key 'rope_scaling.rope_type' is \"linear\" but "
                "'rope_scaling.type' is \"yarn\"; expected one type");
    small_error("llama",
                "  \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4, "
                "\"original_max_position_embeddings\": 1024, \"mscale\": 0.707},\n",
                "X:4:91: error: config key 'rope_scaling.mscale' is given without "
                "'rope_scaling.mscale_all_dim'; implementations disagree on what that means; "
                "expected both or neither");
    small_error("llama", "  \"rope_scaling\": {\"factor\": 4},\n",
                "X:4:3: error: config key 'rope_scaling' has no 'type' or 'rope_type'; "
                "expected linear, llama3 or yarn");
    small_error("llama",
                "  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8},\n",
                "X: error: config key 'rope_scaling.high_freq_factor' is missing; expected a "
                "positive number");
    small_error("llama", "  \"rope_parameters\": {\"rope_theta\": 1e4}, \"rope_theta\": 1e4,\n",
                "X:4:3: error: config has both 'rope_parameters' and 'rope_theta' or "
                "'rope_scaling'; expected one of the two forms");
    small_error("qwen2", "  \"attention_bias\": false,\n",
                "X:4:3: error: config key 'attention_bias' (value false) is not understood by "
                "import-hf; it may change what the attention block computes, so it is not "
                "ignored");
    small_error("llama", "  \"num_key_value_heads\": 12,\n",
                "X:4:3: error: config key 'num_key_value_heads' (12) does not divide "
                "num_attention_heads (32); expected whole query-head groups");
    small_error("llama", "  \"num_key_value_heads\": 0,\n",
                "X:4:3: error: config key 'num_key_value_heads' is a number (0); expected a "
                "positive integer");
    small_error("llama", "  \"rope_theta\": NaN,\n",
                "X:4:3: error: config key 'rope_theta' is a number (NaN); expected a positive "
                "number");
    small_error_named("./", "llama", "",
                "X:2:3: error: config key '_name_or_path' (\"./\") gives no usable model name; "
                "pass --name");
    small_error("llama", "  \"dtype\": \"bfloat16\",\n",
                "X:4:3: error: config key 'dtype' is \"bfloat16\" but torch_dtype is "
                "\"float16\"; expected one dtype");
}

Test(import_hf, mla_rules)
{
    static const char mla[] =
        "  \"num_key_value_heads\": 32, \"kv_lora_rank\": 512, \"qk_nope_head_dim\": 128,\n"
        "  \"qk_rope_head_dim\": 64, \"v_head_dim\": 128, \"q_lora_rank\": 1536,\n";
    char extra[512];
    small_ok("deepseek_v3", mla, "    q_lora_rank: 1536\n");
    snprintf(extra, sizeof extra, "%s  \"rope_interleave\": false,\n", mla);
    small_ok("deepseek_v3", extra, "    layout: neox\n");
    snprintf(extra, sizeof extra, "%s  \"head_dim\": 128,\n", mla);
    small_error("deepseek_v3", extra,
                "X:6:3: error: config key 'head_dim' (128) differs from qk_rope_head_dim (64); "
                "expected them equal or head_dim absent");
    snprintf(extra, sizeof extra, "%s  \"quantization_config\": {\"quant_method\": \"awq\"},\n",
             mla);
    small_error("deepseek_v3", extra,
                "X:6:3: error: config key 'quantization_config' (value "
                "{\"quant_method\":\"awq\"}) names a weight format fusegen cannot dequantize; "
                "expected none or quant_method fp8");
    snprintf(extra, sizeof extra, "%s  \"attention_bias\": true,\n", mla);
    small_error("deepseek_v2", extra,
                "X:6:3: error: config key 'attention_bias' (value true) adds biases to the q, kv "
                "and o projections, which fusegen MLA kernels do not support; expected false");
    small_error("deepseek_v2",
                "  \"kv_lora_rank\": 512, \"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64,\n"
                "  \"v_head_dim\": 128,\n",
                "X: error: config key 'q_lora_rank' is missing; expected a positive integer, "
                "or null for no q_lora path");
}

/* ---- the shipped specs are what import-hf makes of the fixtures ---- */

typedef struct shipped_case {
    const char *spec, *fixture;
    fg_import_opts opts;
} shipped_case;

static const shipped_case shipped_cases[] = {
        {"llama-2-7b", "llama-2-7b", {.name = "llama-2-7b"}},
        {"llama-2-13b", "llama-2-13b", {.name = "llama-2-13b"}},
        {"llama-3-8b", "llama-3-8b", {.name = "llama-3-8b"}},
        {"qwen2-7b", "qwen2-7b", {.max_context = 32768, .kv_cache = "paged:16"}},
        {"mistral-7b-v0.1", "mistral-7b-v0.1", {0}},
        {"deepseek-v2-lite", "deepseek-v2-lite", {.batch_sizes = "1,16,64", .max_context = 16384}},
        {"deepseek-v2", "deepseek-v2", {.batch_sizes = "1,16,64", .max_context = 16384}},
        {"deepseek-v3-tp8",
         "deepseek-v3",
         {.name = "deepseek-v3-tp8",
          .tensor_parallel = 8,
          .batch_sizes = "1,16,64",
          .max_context = 16384}},
};

ParameterizedTestParameters(import_hf, shipped_specs)
{
    return cr_make_param_array(size_t, indices(COUNT(shipped_cases)), COUNT(shipped_cases));
}

ParameterizedTest(size_t *i, import_hf, shipped_specs)
{
    const shipped_case *c = &shipped_cases[*i];
    char path[256];
    snprintf(path, sizeof path, "specs/models/%s.yaml", c->spec);
    char *text = read_all(path);
    assert_loads(text, path);

    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_eq(import(c->fixture, &c->opts, &out, &d), 0, "%s: %s", c->spec, d.last);
    char *want = strip_comments(fg_sb_str(&out)), *got = strip_comments(text);
    cr_expect_str_eq(got, want, "%s is not what import-hf makes of %s", path, c->fixture);
    free(want);
    free(got);
    free(text);
    fg_sb_free(&out);
}

/* ---- the command ---- */

static int run(char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    return fg_cmd_import_hf(argc, argv);
}

static unsigned count_entries(const char *dir)
{
    DIR *dp = opendir(dir);
    cr_assert(dp);
    unsigned n = 0;
    for (struct dirent *e; (e = readdir(dp));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(dp);
    return n;
}

/* The command prints usage and errors; keep them out of the test log. */
static void quiet(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

Test(import_hf_cli, help_and_bad_usage, .init = quiet)
{
    cr_expect_eq(run((char *[]){"import-hf", "--help", NULL}), 0);
    cr_expect_eq(run((char *[]){"import-hf", "--bogus", HF "llama-2-7b.json", NULL}), 2);
    cr_expect_eq(run((char *[]){"import-hf", "-x", HF "llama-2-7b.json", NULL}), 2);
    cr_expect_eq(run((char *[]){"import-hf", HF "llama-2-7b.json", "--dtype", NULL}), 2);
    cr_expect_eq(run((char *[]){"import-hf", "--kv-cache", "paged:0", HF "llama-2-7b.json",
                                NULL}),
                 2);
    cr_expect_eq(run((char *[]){"import-hf", "--max-context", "-1", HF "llama-2-7b.json", NULL}),
                 2);
    cr_expect_eq(run((char *[]){"import-hf", NULL}), 2);
    cr_expect_eq(run((char *[]){"import-hf", HF "llama-2-7b.json", HF "llama-2-13b.json", NULL}),
                 2);
    cr_expect_eq(run((char *[]){"import-hf", HF "bad-gemma2.json", NULL}), 1);
}

Test(import_hf_cli, writes_output_atomically, .init = quiet)
{
    char dir[] = "/tmp/fg-importhf-XXXXXX";
    cr_assert(mkdtemp(dir));
    char out[64];
    snprintf(out, sizeof out, "%s/spec.yaml", dir);

    /* On error nothing appears, not even a temp file. */
    cr_expect_eq(run((char *[]){"import-hf", "-o", out, HF "bad-softcap.json", NULL}), 1);
    cr_expect_eq(count_entries(dir), 0);

    cr_assert_eq(run((char *[]){"import-hf", "-o", out, "--kv-cache", "paged:64",
                                "--batch-sizes", "1,16,64", "--max-context", "16384",
                                HF "deepseek-v2-lite.json", NULL}),
                 0);
    char *got = read_all(out), *want = read_all("specs/models/deepseek-v2-lite.yaml");
    char *got_body = strip_comments(got), *want_body = strip_comments(want);
    cr_expect_str_eq(got_body, want_body);
    cr_expect_eq(count_entries(dir), 1);

    /* Unchanged output leaves the file alone (same inode, so Make sees no change). */
    struct stat before, after;
    cr_assert_eq(stat(out, &before), 0);
    cr_expect_eq(run((char *[]){"import-hf", "--batch-sizes", "1,16,64", "--max-context",
                                "16384", "-o", out, HF "deepseek-v2-lite.json", NULL}),
                 0);
    cr_assert_eq(stat(out, &after), 0);
    cr_expect_eq(before.st_ino, after.st_ino);

    /* A failed import leaves the previous output in place. */
    cr_expect_eq(run((char *[]){"import-hf", "-o", out, HF "bad-syntax.json", NULL}), 1);
    char *again = read_all(out);
    cr_expect_str_eq(again, got);
    cr_expect_eq(count_entries(dir), 1);

    free(got), free(want), free(got_body), free(want_body), free(again);
    unlink(out);
    rmdir(dir);
}
