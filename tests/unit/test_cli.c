/* The fusegen command end to end: determinism, write-if-changed, nothing
 * written on error, list == generate, filters, golden generated text.
 * Runs the binary named by $FUSEGEN (default build/fusegen). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <utime.h>

#include "fg_registry.h"
#include "fsutil.h"
#include "strbuf.h"

#define ALL_SPECS "specs/models/*.yaml specs/gemm/*.yaml specs/targets/*.yaml"

static char tmp[64];

static const char *fusegen(void)
{
    const char *f = getenv("FUSEGEN");
    return f && *f ? f : "build/fusegen";
}

/* Runs `fusegen ARGS`, returns its exit status; output (stdout+stderr) in *out. */
static int run(char **out, const char *fmt, ...)
{
    char args[2048], cmd[2400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", fusegen(), args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (len + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    int st = pclose(p);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void setup(void)
{
    strcpy(tmp, "/tmp/fg-cli-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cli, .init = setup, .fini = teardown);

static int count_files(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));)
        n += e->d_name[0] != '.';
    closedir(dp);
    return n;
}

static char *slurp(const char *path)
{
    char *s = fg_read_all(path, NULL);
    cr_assert_not_null(s, "cannot read %s", path);
    return s;
}

Test(cli, generate_is_deterministic_and_machine_independent)
{
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/a " ALL_SPECS, tmp), 0, "%s", out);
    free(out);
    cr_assert_eq(run(&out, "generate --out %s/b " ALL_SPECS, tmp), 0, "%s", out);
    free(out);
    char list_cmd[256];
    snprintf(list_cmd, sizeof list_cmd, "cd %s/a && ls", tmp);
    FILE *p = popen(list_cmd, "r");
    char name[512];
    int files = 0;
    while (fgets(name, sizeof name, p)) {
        name[strcspn(name, "\n")] = '\0';
        char pa[1024], pb[1024];
        snprintf(pa, sizeof pa, "%s/a/%s", tmp, name);
        snprintf(pb, sizeof pb, "%s/b/%s", tmp, name);
        char *a = slurp(pa), *b = slurp(pb);
        cr_expect_str_eq(a, b, "%s differs between runs", name);
        cr_expect_null(strstr(a, tmp), "%s holds the output path", name);
        cr_expect_null(strstr(a, "/work/"), "%s holds an absolute path", name);
        free(a);
        free(b);
        files++;
    }
    pclose(p);
    cr_assert_geq(files, 20, "expected kernels for every model and target");
}

static void mtimes(const char *dir, struct timespec *t, int max, int *n)
{
    DIR *dp = opendir(dir);
    *n = 0;
    for (struct dirent *e; (e = readdir(dp)) && *n < max;) {
        if (e->d_name[0] == '.')
            continue;
        char p[1024];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        stat(p, &st);
        t[(*n)++] = st.st_mtim;
    }
    closedir(dp);
}

Test(cli, second_run_changes_nothing)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/out", tmp);
    cr_assert_eq(run(NULL, "generate --out %s " ALL_SPECS, dir), 0);
    struct timespec before[256], after[256];
    int nb, na;
    mtimes(dir, before, 256, &nb);
    char *out;
    cr_assert_eq(run(&out, "generate --out %s " ALL_SPECS, dir), 0);
    cr_assert(strstr(out, " 0 of "), "second run must write no file: %s", out);
    free(out);
    mtimes(dir, after, 256, &na);
    cr_assert_eq(na, nb);
    for (int i = 0; i < na; i++)
        cr_assert(before[i].tv_sec == after[i].tv_sec && before[i].tv_nsec == after[i].tv_nsec,
                  "a modification time changed");
}

Test(cli, list_names_exactly_what_generate_writes)
{
    char *listed;
    cr_assert_eq(run(&listed, "list --out %s/o " ALL_SPECS, tmp), 0);
    cr_assert_eq(run(NULL, "generate --out %s/o " ALL_SPECS, tmp), 0);
    int lines = 0;
    for (char *l = strtok(listed, "\n"); l; l = strtok(NULL, "\n")) {
        struct stat st;
        cr_expect_eq(stat(l, &st), 0, "listed but not written: %s", l);
        lines++;
    }
    char dir[128];
    snprintf(dir, sizeof dir, "%s/o", tmp);
    cr_assert_eq(count_files(dir), lines, "written but not listed");
    free(listed);
}

Test(cli, error_writes_nothing)
{
    char *out;
    int rc = run(&out, "generate --out %s/o specs/models/llama-2-7b.yaml "
                       "tests/specs/bad/unknown_key.yaml specs/targets/h200.yaml", tmp);
    cr_assert_neq(rc, 0);
    cr_assert(strstr(out, "tests/specs/bad/unknown_key.yaml:8:3: error: unknown key 'hiden'"),
              "%s", out);
    cr_assert(strstr(out, "nothing written"), "%s", out);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/o", tmp);
    cr_assert_eq(count_files(dir), -1, "the output folder must not even be created");
    free(out);
}

Test(cli, error_keeps_existing_outputs)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/o", tmp);
    cr_assert_eq(run(NULL, "generate --out %s specs/models/llama-2-7b.yaml "
                           "specs/targets/h200.yaml", dir), 0);
    int before = count_files(dir);
    cr_assert_neq(run(NULL, "generate --out %s specs/models/llama-2-13b.yaml "
                            "tests/specs/bad/zero_dim.yaml specs/targets/h200.yaml", dir), 0);
    cr_assert_eq(count_files(dir), before);
}

Test(cli, filter_and_target_selection)
{
    char *out;
    cr_assert_eq(run(&out, "list --out o --target mi300x --filter '*_h4096_*' " ALL_SPECS), 0);
    cr_assert(strstr(out, "o/rmsnorm_gfx942_f16_h4096_t256c.hip"), "%s", out);
    cr_assert_null(strstr(out, "sm90a"), "%s", out);
    cr_assert_null(strstr(out, "h2048"), "%s", out);
    free(out);
    cr_assert_neq(run(&out, "list --target b200 " ALL_SPECS), 0);
    cr_assert(strstr(out, "fusegen: error: unknown target 'b200'; the target specs given are: "),
              "%s", out);
    free(out);
    cr_assert_neq(run(&out, "list specs/models/llama-2-7b.yaml"), 0);
    cr_assert(strstr(out, "no target spec given"), "%s", out);
    free(out);
}

Test(cli, one_per_path_keeps_every_code_path_once)
{
    char *all, *few;
    cr_assert_eq(run(&all, "list " ALL_SPECS), 0);
    cr_assert_eq(run(&few, "list --one-per-path " ALL_SPECS), 0);
    size_t n_all = 0, n_few = 0;
    for (char *p = all; (p = strchr(p, '\n')); p++)
        n_all++;
    for (char *p = few; (p = strchr(p, '\n')); p++)
        n_few++;
    cr_assert_lt(n_few, n_all);
    /* every arch and dtype still present */
    const char *must[] = {"sm90a_f16", "sm90a_bf16", "gfx942_f16", "gfx942_bf16", "gfx90a_bf16"};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        cr_expect(strstr(few, must[i]), "%s missing from: %s", must[i], few);
    free(all);
    free(few);
}

/* --candidates adds RMSNorm's other block sizes, x streamed or cached: at
 * least 20 for hidden 4096, none of them the planner's t256c again, each of
 * the family rmsnorm_<arch>_<dtype>_h<hidden> and marked as a candidate. */
Test(cli, candidates_enumerate_rmsnorm_block_sizes)
{
    char *plain, *cand;
    const char *specs = "specs/models/llama-2-7b.yaml specs/targets/h200.yaml";
    cr_assert_eq(run(&plain, "list --out %s/g --filter 'rmsnorm_sm90a_f16_h4096*' %s", tmp, specs),
                 0);
    cr_assert_eq(run(&cand, "list --candidates --out %s/g --filter 'rmsnorm_sm90a_f16_h4096*' %s",
                     tmp, specs), 0, "%s", cand);
    cr_assert(strstr(plain, "rmsnorm_sm90a_f16_h4096_t256c.cu"), "%s", plain);
    unsigned n = 0, model = 0, cached = 0;
    for (char *line = cand, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        unsigned t;
        char c = 0;
        const char *at = strstr(line, "rmsnorm_sm90a_f16_h4096_t");
        if (!at || !strstr(line, ".cu"))
            continue;
        cr_assert_geq(sscanf(at, "rmsnorm_sm90a_f16_h4096_t%u%c", &t, &c), 1, "%s", line);
        cr_expect_eq(t % 32, 0u, "%s", line);
        cr_expect_leq(t, 512u, "no thread without a vector: %s", line);
        model += t == 256 && c == 'c';
        cached += c == 'c';
        n++;
    }
    cr_expect_eq(model, 1u, "the planner's choice once");
    cr_expect_geq(n - 1, 20u, "%u candidates", n - 1);
    cr_expect_eq(cached, n / 2, "each block size streamed and cached");
    free(plain);
    free(cand);
    cr_assert_eq(run(NULL, "generate --candidates --out %s/g --filter "
                           "'rmsnorm_sm90a_f16_h4096_t96c' %s", tmp, specs), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/g/manifest.json", tmp);
    char *man = slurp(path);
    cr_assert(strstr(man, "\"candidate\": true"), "%s", man);
    cr_assert(strstr(man, "\"tuning_family\": \"rmsnorm_sm90a_f16_h4096\""), "%s", man);
    cr_assert(strstr(man, "\"cache_x\": 1"), "%s", man);
    free(man);
    snprintf(path, sizeof path, "%s/g/rmsnorm_sm90a_f16_h4096_t96c.cu", tmp);
    char *src = slurp(path);
    cr_assert(strstr(src, "1 ? fg_load(xr + idx) : fg_load_stream(xr + idx)"), "x cached");
    free(src);
}

/* --candidates adds the ring's other configurations: at least 20 for
 * Llama-2-7B at batch 1 (issue 11), all distinct, each with as many bytes in
 * flight as keep HBM busy, and never the planner's own choice again. */
Test(cli, candidates_enumerate_the_ring_configurations)
{
    char *plain, *cand;
    const char *specs = "specs/models/llama-2-7b.yaml specs/targets/h200.yaml";
    cr_assert_eq(run(&plain, "list --out %s/g --filter 'decode_attn_*_b1_*ring*' %s", tmp, specs), 0);
    cr_assert_eq(run(&cand, "list --candidates --out %s/g --filter 'decode_attn_*_b1_*ring*' %s",
                     tmp, specs), 0, "%s", cand);
    unsigned n = 0;
    for (char *line = cand, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        const char *k = strstr(line, "_ring_k");
        if (k) {
            unsigned kb, stages, inflight;
            cr_assert_eq(sscanf(k, "_ring_k%un%uf%u", &kb, &stages, &inflight), 3, "%s", line);
            cr_expect_geq(inflight * kb, 64u, "too few bytes in flight: %s", line);
            cr_expect_leq(inflight, stages, "%s", line);
            n++;
        } else if (strstr(line, ".cu")) {
            cr_expect_not_null(strstr(plain, line), "%s is not a planned instance", line);
        }
    }
    cr_expect_geq(n, 20u, "%u candidates", n);
    cr_expect_null(strstr(plain, "_ring_k"), "no candidates without --candidates");
    free(plain);
    free(cand);
    /* the manifest marks them, and generating twice gives the same bytes */
    cr_assert_eq(run(NULL, "generate --candidates --out %s/g --filter 'decode_attn_*_b1_*ring*' %s",
                     tmp, specs), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/g/manifest.json", tmp);
    char *m = slurp(path);
    cr_expect_not_null(strstr(m, "\"candidate\": true"));
    free(m);
}

/* text with its first `from` replaced by `to` (malloc'd; `from` must occur). */
static char *replaced(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    cr_assert_not_null(at, "no '%s' in the text", from);
    char *out = malloc(strlen(text) - strlen(from) + strlen(to) + 1);
    cr_assert_not_null(out);
    sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* A shell script standing in for a GPU harness: written and made runnable. */
static void write_program(const char *path, const char *text)
{
    write_file(path, text);
    cr_assert_eq(chmod(path, 0755), 0, "%s", path);
}

/* A tuning entry whose family is for another architecture than its target's
 * could never apply: generate refuses it and writes nothing. */
Test(cli, tuning_entry_for_another_architecture_is_refused)
{
    char tuning[128];
    snprintf(tuning, sizeof tuning, "%s/h200-gfx.yaml", tmp);
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: rmsnorm_gfx942_f16_h4096\n      threads: 256\n"
                       "      tuned_us: 1\n      model_us: 2\n      worst_us: 3\n"
                       "      candidates: 4\n      measured: \"by hand\"\n");
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/gfx specs/models/llama-2-7b.yaml "
                           "specs/targets/h200.yaml %s", tmp, tuning),
                 1, "%s", out);
    cr_expect_not_null(strstr(out, "'rmsnorm_gfx942_f16_h4096' is not for sm90a, target h200's "
                                   "architecture"),
                       "%s", out);
    char path[160];
    snprintf(path, sizeof path, "%s/gfx", tmp);
    cr_expect_neq(access(path, F_OK), 0, "nothing written");
    free(out);
}

/* A tuning spec's entry replaces the model's configuration for its family
 * (the twin too), explain says so with the figures, other families keep the
 * model's, and generating twice with it writes the same bytes. */
Test(cli, tuning_spec_replaces_the_models_configuration)
{
    char tuning[128], specs[256];
    snprintf(tuning, sizeof tuning, "%s/h200-tuned.yaml", tmp);
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2\n"
                       "      threads: 512\n      stage_bytes: 16384\n      stages: 8\n"
                       "      in_flight: 6\n      tuned_us: 101.94\n      model_us: 102.39\n"
                       "      worst_us: 112.46\n      candidates: 72\n      measured: \"by hand\"\n");
    snprintf(specs, sizeof specs, "specs/models/llama-2-7b.yaml specs/targets/h200.yaml %s",
             tuning);
    char *out;
    cr_assert_eq(run(&out, "explain --filter '*_b1_c2x2_t512_ring*' %s", specs), 0, "%s", out);
    const char *tuned = "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2_t512_ring_k16n8f6_norm\n";
    const char *at = strstr(out, tuned);
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "STAGE_BYTES=16384 STAGES=8 INFLIGHT=6"), "%s", out);
    cr_expect_not_null(strstr(at, "h200-tuned.yaml): 512 threads, "
                                  "8 stages of 16384 B, 6 in flight (6 while W_o streams): "
                                  "101.9 us against the "
                                  "model's 102.4 (worst 112.5 of 72 candidates; by hand)"),
                       "%s", out);
    const char *twin = strstr(out, "s4096_b1_c2x2_t512_ring_k16n8f6_norm_det\n");
    cr_assert_not_null(twin, "%s", out);
    cr_expect_not_null(strstr(twin, "INFLIGHT=6"), "%s", out);
    free(out);
    /* without the tuning spec: the model's configuration, and explain says why */
    cr_assert_eq(run(&out, "explain --filter '*s4096_b1_c2x2_t512_ring_norm' "
                           "specs/models/llama-2-7b.yaml specs/targets/h200.yaml"), 0);
    cr_expect_not_null(strstr(out, "INFLIGHT=8"), "%s", out);
    cr_expect_not_null(strstr(out, "configuration: the model's (no tuning file given)"), "%s",
                       out);
    free(out);
    /* a family without an entry */
    cr_assert_eq(run(&out, "explain --filter '*s4096_b4_c2x2_t512_ring_norm' %s", specs), 0);
    cr_expect_not_null(strstr(out, "configuration: the model's (no entry for this family in "),
                       "%s", out);
    free(out);
    /* round trip: the same bytes twice */
    cr_assert_eq(run(NULL, "generate --out %s/a %s", tmp, specs), 0);
    cr_assert_eq(run(NULL, "generate --out %s/b %s", tmp, specs), 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "diff -r %s/a %s/b >/dev/null", tmp, tmp);
    cr_expect_eq(system(cmd), 0, "two runs with the tuning spec differ");
}


/* An rmsnorm entry replaces the planner's block size (and x's path) for its
 * family: the kernel, registry and manifest have the tuned configuration,
 * explain says where it came from, other families and targets keep the
 * model's, generating twice gives the same bytes, and an entry that no
 * longer plans is an error with nothing written. */
#define RMS_TUNING "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"                   \
                   "    - family: rmsnorm_sm90a_f16_h4096\n      threads: %u\n"                 \
                   "      cache_x: true\n      tuned_us: 20.25\n      model_us: 22.5\n"          \
                   "      worst_us: 41\n      candidates: 32\n      measured: \"by hand\"\n"

Test(cli, tuning_spec_replaces_the_rmsnorm_block_size)
{
    char tuning[128], specs[320], text[512];
    snprintf(tuning, sizeof tuning, "%s/h200-rms.yaml", tmp);
    snprintf(text, sizeof text, RMS_TUNING, 128u);
    write_file(tuning, text);
    snprintf(specs, sizeof specs, "specs/models/llama-2-7b.yaml specs/models/llama-2-13b.yaml "
                                  "specs/targets/h200.yaml %s", tuning);
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/a --filter 'rmsnorm_*' %s", tmp, specs), 0, "%s",
                 out);
    free(out);
    char path[192];
    snprintf(path, sizeof path, "%s/a/rmsnorm_sm90a_f16_h4096_t128c.cu", tmp);
    char *cu = slurp(path);
    cr_expect_not_null(strstr(cu, "__launch_bounds__(128)"), "%s", cu);
    free(cu);
    snprintf(path, sizeof path, "%s/a/rmsnorm_sm90a_f16_h4096_t256c.cu", tmp);
    struct stat st;
    cr_expect_neq(stat(path, &st), 0, "the model's block size is not emitted beside the tuned one");
    snprintf(path, sizeof path, "%s/a/manifest.json", tmp);
    char *man = slurp(path);
    const char *at = strstr(man, "\"name\": \"rmsnorm_sm90a_f16_h4096_t128c\"");
    cr_assert_not_null(at, "%s", man);
    cr_expect_not_null(strstr(at, "\"threads\": 128"), "%s", man);
    cr_expect_not_null(strstr(at, "\"cache_x\": 1"), "%s", man);
    cr_expect_not_null(strstr(at, "\"tuned\": true"), "%s", man);
    /* llama-2-13b's hidden 5120 has no entry: the model's choice */
    cr_expect_not_null(strstr(man, "\"name\": \"rmsnorm_sm90a_f16_h5120_t320c\""), "%s", man);
    free(man);
    snprintf(path, sizeof path, "%s/a/fg_registry.c", tmp);
    char *reg = slurp(path);
    at = strstr(reg, ".name = \"rmsnorm_sm90a_f16_h4096_t128c\"");
    cr_assert_not_null(at, "%s", reg);
    cr_expect_not_null(strstr(at, ".block = {128, 1, 1}"), "%s", reg);
    free(reg);
    /* explain: which configuration and why */
    cr_assert_eq(run(&out, "explain --filter 'rmsnorm_*' %s", specs), 0, "%s", out);
    at = strstr(out, "rmsnorm_sm90a_f16_h4096_t128c\n");
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "h200-rms.yaml): 128 threads, x loaded through the caches: "
                                  "20.25 us against the model's 22.50 (worst 41.00 of 32 "
                                  "candidates; by hand)"),
                       "%s", out);
    at = strstr(out, "rmsnorm_sm90a_f16_h5120_t320c\n");
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "configuration: the model's (no entry for this family in "),
                       "%s", out);
    free(out);
    /* another target of the arch without a tuning spec keeps the model's */
    cr_assert_eq(run(&out, "list --filter 'rmsnorm_*' specs/models/llama-2-7b.yaml "
                           "specs/targets/h100.yaml %s", tuning), 1, "%s", out);
    cr_expect_not_null(strstr(out, "no target spec of that name is given"), "%s", out);
    free(out);
    cr_assert_eq(run(&out, "list --out %s/l --filter 'rmsnorm_*' specs/models/llama-2-7b.yaml "
                           "specs/targets/h100.yaml specs/targets/h200.yaml %s", tmp, tuning),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "/rmsnorm_sm90a_f16_h4096_t256c.cu\n"), "%s", out);
    cr_expect_not_null(strstr(out, "/rmsnorm_sm90a_f16_h4096_t128c.cu\n"), "%s", out);
    free(out);
    /* round trip: the same bytes twice */
    cr_assert_eq(run(NULL, "generate --out %s/b --filter 'rmsnorm_*' %s", tmp, specs), 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "diff -r %s/a %s/b >/dev/null", tmp, tmp);
    cr_expect_eq(system(cmd), 0, "two runs with the tuning spec differ");
    /* an entry that no longer plans: an error, nothing written */
    snprintf(text, sizeof text, RMS_TUNING, 1024u);
    write_file(tuning, text);
    cr_expect_eq(run(&out, "generate --out %s/c %s", tmp, specs), 1);
    cr_expect_not_null(strstr(out, "the entry for rmsnorm_sm90a_f16_h4096 (1024 threads, x "
                                   "cached) does not plan: 1024 threads is more than one per "
                                   "16-byte vector (512 vectors a row); run fusegen tune again"),
                       "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/c", tmp);
    cr_expect_neq(stat(path, &st), 0, "nothing written");
}
/* A tuning spec must name a target given, one per target, and every entry
 * must still plan; otherwise nothing is written. */
Test(cli, tuning_spec_errors)
{
    char path[128];
    snprintf(path, sizeof path, "%s/t.yaml", tmp);
    const char *entry = "schema_version: 1\ntuning:\n  target: %s\n  entries:\n"
                        "    - family: decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2\n"
                        "      threads: 512\n      stage_bytes: %u\n      stages: 8\n"
                        "      in_flight: 8\n      tuned_us: 1\n      model_us: 1\n"
                        "      worst_us: 1\n      candidates: 2\n      measured: x\n";
    struct { const char *target; unsigned stage; const char *why; } cases[] = {
        {"b200", 16384, "tunes target 'b200', but no target spec of that name is given"},
        {"h200", 24576, "does not plan: W_qkv rows do not split evenly"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fprintf(f, entry, cases[i].target, cases[i].stage);
        fclose(f);
        char *out;
        cr_expect_neq(run(&out, "generate --out %s/g specs/models/llama-2-7b.yaml "
                                "specs/targets/h200.yaml %s", tmp, path), 0);
        cr_expect_not_null(strstr(out, cases[i].why), "%s", out);
        free(out);
        snprintf(path, sizeof path, "%s/g", tmp);
        struct stat st;
        cr_expect_neq(stat(path, &st), 0, "nothing written");
        snprintf(path, sizeof path, "%s/t.yaml", tmp);
    }
    char *out;
    cr_expect_neq(run(&out, "list specs/models/llama-2-7b.yaml specs/targets/h200.yaml "
                            "specs/tuning/h200.yaml specs/tuning/h200.yaml"), 0);
    cr_expect_not_null(strstr(out, "both tune target 'h200'"), "%s", out);
    free(out);
}

/* fusegen tune with a stand-in harness (no GPU here): it times the
 * configurations of a family, checks the fastest in order, skips one that
 * fails, writes the fastest that passes, leaves the file alone when nothing
 * changed, and the entry it writes is one generate uses. */

#define TUNE_FAMILY "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2"
#define TUNE_INST(variant, cand, threads, kb, n, f, w)                                           \
    "{\"name\": \"" TUNE_FAMILY "_t" #threads "_ring" variant "_norm\", \"template\": "         \
    "\"decode_attn_ring.in\", \"targets\": [\"h200\"], \"tuning_family\": \"" TUNE_FAMILY "\", " \
    cand "\"params\": {\"deterministic\": 0, " \
    "\"threads\": " #threads ", \"stage_bytes\": " #kb ", \"stages\": " #n ", \"inflight\": " #f \
    ", \"inflight3\": " #w "}, \"resources\": {\"registers\": 96}}"

Test(cli, tune_times_checks_and_writes_the_winner)
{
    char manifest[128], harness[128], out[128], cmd[1024];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", tmp);
    snprintf(harness, sizeof harness, "%s/harness.sh", tmp);
    snprintf(out, sizeof out, "%s/h200.yaml", tmp);
    /* the planner's choice, three candidates (k16n8f6 fast but failing its
     * checks; k24n4f4 the fastest but timed at one point only, its other
     * case failed), one discarded for spilling */
    write_file(manifest, "{\"instances\": [" TUNE_INST("", "", 512, 16384, 8, 8, 8) ", "
                         TUNE_INST("_k16n8f6", "\"candidate\": true, ", 512, 16384, 8, 6, 6) ", "
                         TUNE_INST("_k20n8f8w4", "\"candidate\": true, ", 512, 20480, 8, 8, 4) ", "
                         TUNE_INST("_k24n4f4", "\"candidate\": true, ", 512, 24576, 4, 4, 4) ", "
                         TUNE_INST("_k8n16f16", "\"candidate\": true, \"discarded\": \"spills\", ",
                                   256, 8192, 16, 16, 16) "]}");
    write_program(harness,
               "#!/bin/sh\n"
               "only= json=\n"
               "while [ $# -gt 0 ]; do case $1 in --only) only=$2; shift;; --json) json=$2; shift;; "
               "esac; shift; done\n"
               "if [ -z \"$json\" ]; then case $only in *k16n8f6*) echo FAIL; exit 1;; esac; "
               "exit 0; fi\n"
               "case $only in *k8n16f16*) exit 3;; esac\n"
               "{ echo '{\"gpu\": {\"name\": \"Stand-in\"}, \"commit\": \"abc1234\", "
               "\"cases\": ['; sep=\n"
               "for n in $(echo $only | tr , ' '); do case $n in *k16n8f6*) t=40;; *k20n8f8*) "
               "t=45;; *k24n4f4*) t=10;; *) t=50;; esac\n"
               "for s in 1024 4096; do case $n$s in *k24n4f4*4096) continue;; esac; printf '%s{\"name\": \"%s\", \"S\": %s, \"time\": "
               "{\"median\": %s}}' \"$sep\" $n $s $t; sep=,; echo \"$n S=$s\" >&2; done; done; "
               "echo ']}'; } > $json\n");
    char *log;
    /* a work folder that does not exist yet is made */
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s --work %s/w/x", manifest, out,
                     harness, tmp),
                 0, "%s", log);
    cr_expect_not_null(strstr(log, "failed its checks: not chosen"), "%s", log);
    cr_expect_not_null(strstr(log, "_k24n4f4_norm: 1 of 2 points timed: not chosen"), "%s", log);
    /* progress from the log: the harness's lines with " S=", four
     * configurations at two points each, one point left out */
    cr_expect_not_null(strstr(log, "fusegen tune:   7 of 8 points timed\n"), "%s", log);
    free(log);
    snprintf(cmd, sizeof cmd, "%s/w/x/tune.log", tmp);
    cr_expect_eq(access(cmd, R_OK), 0, "%s", cmd);
    char *spec = slurp(out);
    cr_expect_not_null(strstr(spec, "  target: h200\n"), "%s", spec);
    cr_expect_not_null(strstr(spec, "    - family: " TUNE_FAMILY "\n      threads: 512\n"
                                    "      stage_bytes: 20480\n      stages: 8\n"
                                    "      in_flight: 8\n      in_flight_wo: 4\n"
                                    "      tuned_us: 90.00\n"
                                    "      model_us: 100.00\n      worst_us: 100.00\n"
                                    "      candidates: 3\n"
                                    "      measured: \"Stand-in, S = 1024 + 4096, commit abc1234, fusegen tune, confirmed alone by turns (3 runs each)\"\n"),
                       "%s", spec);
    free(spec);
    /* the same timings again: the spec is not rewritten */
    struct stat a, b;
    cr_assert_eq(stat(out, &a), 0);
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s", manifest, out, harness), 0);
    cr_expect_not_null(strstr(log, "unchanged (1 entries)"), "%s", log);
    free(log);
    cr_assert_eq(stat(out, &b), 0);
    cr_expect_eq(a.st_ino, b.st_ino);
    /* the entry is one generate takes */
    cr_expect_eq(run(&log, "explain --filter '*s4096_b1_c2x2_t512_ring*' "
                           "specs/models/llama-2-7b.yaml specs/targets/h200.yaml %s", out),
                 0, "%s", log);
    cr_expect_not_null(strstr(log, TUNE_FAMILY "_t512_ring_k20n8f8w4_norm\n"), "%s", log);
    cr_expect_not_null(strstr(log, "20480 B, 8 in flight (4 while W_o streams): 90.0 us against "
                                 "the model's 100.0"),
                       "%s", log);
    free(log);
    /* a harness that fails the timing run: an error, the spec left alone */
    snprintf(cmd, sizeof cmd, "tune --manifest %s --out %s --harness /bin/false", manifest, out);
    cr_expect_eq(run(&log, "%s", cmd), 1);
    cr_expect_not_null(strstr(log, "the decode_attn harness's timing run failed"), "%s", log);
    free(log);
    cr_assert_eq(stat(out, &b), 0);
    cr_expect_eq(a.st_ino, b.st_ino);
    /* 10% faster is within a 20% margin: the planner's choice stands, the entry goes */
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s --margin 20", manifest, out,
                     harness),
                 0, "%s", log);
    cr_expect_not_null(strstr(log, "within the 20% margin: the planner's choice stands"), "%s",
                       log);
    free(log);
    spec = slurp(out);
    cr_expect_not_null(strstr(spec, "  entries: []\n"), "%s", spec);
    free(spec);
    cr_expect_eq(run(&log, "tune --manifest %s --out %s --margin 60", manifest, out), 2);
    free(log);
}

/* Two ring families of different S_max in one run: each entry names the
 * points its own family was timed at (a run-wide list named the other
 * family's S_max too). */
#define TUNE_FAMILY16 "decode_attn_sm90a_f16_h4096_nh32_hd128_s16384_b1_c2x2"
#define TUNE_INST16(variant, cand, kb, n, f)                                                      \
    "{\"name\": \"" TUNE_FAMILY16 "_t512_ring" variant "_norm\", \"template\": "                 \
    "\"decode_attn_ring.in\", \"targets\": [\"h200\"], \"tuning_family\": \"" TUNE_FAMILY16       \
    "\", " cand "\"params\": {\"deterministic\": 0, \"threads\": 512, \"stage_bytes\": " #kb       \
    ", \"stages\": " #n ", \"inflight\": " #f ", \"inflight3\": " #f "}, \"resources\": "         \
    "{\"registers\": 96}}"

Test(cli, tune_entries_name_their_own_points)
{
    char manifest[128], harness[128], out[128];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", tmp);
    snprintf(harness, sizeof harness, "%s/harness.sh", tmp);
    snprintf(out, sizeof out, "%s/h200.yaml", tmp);
    write_file(manifest, "{\"instances\": [" TUNE_INST("", "", 512, 16384, 8, 8, 8) ", "
                         TUNE_INST("_k20n8f8w4", "\"candidate\": true, ", 512, 20480, 8, 8, 4) ", "
                         TUNE_INST16("", "", 16384, 8, 8) ", "
                         TUNE_INST16("_k24n4f4", "\"candidate\": true, ", 24576, 4, 4) "]}");
    /* candidates fastest; each instance timed at 1024 and its own S_max */
    write_program(harness,
               "#!/bin/sh\n"
               "only= json=\n"
               "while [ $# -gt 0 ]; do case $1 in --only) only=$2; shift;; --json) json=$2; shift;; "
               "esac; shift; done\n"
               "[ -z \"$json\" ] && exit 0\n"
               "{ echo '{\"gpu\": {\"name\": \"Stand-in\"}, \"cases\": ['; sep=\n"
               "for n in $(echo $only | tr , ' '); do case $n in *_k*) t=40;; *) t=50;; esac\n"
               "case $n in *s16384*) smax=16384;; *) smax=4096;; esac\n"
               "for s in 1024 $smax; do printf '%s{\"name\": \"%s\", \"S\": %s, \"time\": "
               "{\"median\": %s}}' \"$sep\" $n $s $t; sep=,; echo \"$n S=$s\" >&2; done; done; "
               "echo ']}'; } > $json\n");
    char *log;
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s", manifest, out, harness), 0,
                 "%s", log);
    free(log);
    char *spec = slurp(out);
    const char *at4 = strstr(spec, "    - family: " TUNE_FAMILY "\n");
    const char *at16 = strstr(spec, "    - family: " TUNE_FAMILY16 "\n");
    cr_assert(at4 && at16, "%s", spec);
    cr_expect_not_null(strstr(at4, "      measured: \"Stand-in, S = 1024 + 4096, fusegen tune, confirmed alone by turns (3 runs each)\"\n"),
                       "%s", spec);
    cr_expect_not_null(strstr(at16, "      measured: \"Stand-in, S = 1024 + 16384, fusegen tune, confirmed alone by turns (3 runs each)\"\n"),
                       "%s", spec);
    free(spec);
}

/* A winner of the run of all is timed again alone, by turns with the
 * planner's choice (the planner's first, then the other way about), before
 * its checks: here the candidate is fast only beside the others, as a
 * configuration timed early in a long run on a warming GPU is.  Its entry's
 * times are the runs alone's medians; --confirm 0 lets the run of all decide. */
Test(cli, tune_confirms_a_winner_alone_by_turns)
{
    char manifest[128], harness[128], out[128], path[160];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", tmp);
    snprintf(harness, sizeof harness, "%s/harness.sh", tmp);
    snprintf(out, sizeof out, "%s/h200.yaml", tmp);
    write_file(manifest, "{\"instances\": [" TUNE_INST("", "", 512, 16384, 8, 8, 8) ", "
                         TUNE_INST("_k20n8f8w4", "\"candidate\": true, ", 512, 20480, 8, 8, 4)
                         "]}");
    /* the candidate: 40 us a point beside the others, alone-us's alone (at
     * S = 1024 only where it says "short"); the planner's 50; each timing
     * run's --only appended to alone.log */
    write_program(harness,
               "#!/bin/sh\n"
               "d=$(dirname \"$0\") only= json=\n"
               "while [ $# -gt 0 ]; do case $1 in --only) only=$2; shift;; --json) json=$2; shift;; "
               "esac; shift; done\n"
               "[ -z \"$json\" ] && exit 0\n"
               "echo \"$only\" >> $d/alone.log\n"
               "{ echo '{\"gpu\": {\"name\": \"Stand-in\"}, \"cases\": ['; sep=\n"
               "for n in $(echo $only | tr , ' '); do t=50 pts='1024 4096'; case $n in *_k20*) "
               "t=$(cat $d/alone-us); case $only in *,*) t=40;; esac; [ $t = short ] && t=45 "
               "pts=1024;; esac\n"
               "for s in $pts; do printf '%s{\"name\": \"%s\", \"S\": %s, \"time\": "
               "{\"median\": %s}}' \"$sep\" $n $s $t; sep=,; echo \"$n S=$s\" >&2; done; done; "
               "echo ']}'; } > $json\n");
    snprintf(path, sizeof path, "%s/alone-us", tmp);
    write_file(path, "50\n");
    char *log;
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s", manifest, out, harness), 0,
                 "%s", log);
    cr_expect_not_null(strstr(log, "timing " TUNE_FAMILY "_t512_ring_k20n8f8w4_norm and the "
                                   "planner's choice alone, by turns (3 runs each)\n"),
                       "%s", log);
    cr_expect_not_null(strstr(log, TUNE_FAMILY ": 100.00 us (" TUNE_FAMILY "_t512_ring_k20n8f8w4"
                                   "_norm) against the planner's 100.00, alone by turns, is "
                                   "within the 1% margin: the planner's choice stands\n"),
                       "%s", log);
    cr_expect_null(strstr(log, "checking"), "%s", log);
    free(log);
    char *spec = slurp(out);
    cr_expect_not_null(strstr(spec, "  entries: []\n"), "%s", spec);
    free(spec);
    snprintf(path, sizeof path, "%s/alone.log", tmp);
    char *runs = slurp(path);
    cr_expect_str_eq(runs, TUNE_FAMILY "_t512_ring_norm," TUNE_FAMILY "_t512_ring_k20n8f8w4_norm\n"
                           TUNE_FAMILY "_t512_ring_norm\n"
                           TUNE_FAMILY "_t512_ring_k20n8f8w4_norm\n"
                           TUNE_FAMILY "_t512_ring_k20n8f8w4_norm\n"
                           TUNE_FAMILY "_t512_ring_norm\n"
                           TUNE_FAMILY "_t512_ring_norm\n"
                           TUNE_FAMILY "_t512_ring_k20n8f8w4_norm\n");
    free(runs);
    /* faster alone too, by less: the entry has the runs alone's times */
    snprintf(path, sizeof path, "%s/alone-us", tmp);
    write_file(path, "45\n");
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s", manifest, out, harness), 0,
                 "%s", log);
    cr_expect_not_null(strstr(log, "checking " TUNE_FAMILY "_t512_ring_k20n8f8w4_norm (90.00 us)"),
                       "%s", log);
    free(log);
    spec = slurp(out);
    cr_expect_not_null(strstr(spec, "      tuned_us: 90.00\n      model_us: 100.00\n"
                                    "      worst_us: 100.00\n      candidates: 2\n      measured: "
                                    "\"Stand-in, S = 1024 + 4096, fusegen tune, confirmed alone by "
                                    "turns (3 runs each)\"\n"),
                       "%s", spec);
    free(spec);
    /* timed short alone (a point missing): not chosen, the planner's stands */
    write_file(path, "short\n");
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s", manifest, out, harness), 0,
                 "%s", log);
    cr_expect_not_null(strstr(log, TUNE_FAMILY "_t512_ring_k20n8f8w4_norm timed short alone"),
                       "%s", log);
    cr_expect_not_null(strstr(log, "the planner's choice stands"), "%s", log);
    free(log);
    spec = slurp(out);
    cr_expect_not_null(strstr(spec, "  entries: []\n"), "%s", spec);
    free(spec);
    /* --confirm 0: the run of all decides */
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s --confirm 0", manifest, out,
                     harness),
                 0, "%s", log);
    cr_expect_null(strstr(log, "alone, by turns"), "%s", log);
    free(log);
    spec = slurp(out);
    cr_expect_not_null(strstr(spec, "      tuned_us: 80.00\n      model_us: 100.00\n"), "%s",
                       spec);
    cr_expect_null(strstr(spec, "fusegen tune, confirmed"), "%s", spec);
    free(spec);
    cr_expect_eq(run(&log, "tune --manifest %s --out %s --confirm 16", manifest, out), 2);
    cr_expect_not_null(strstr(log, "--confirm '16'; expected 0 to 15"), "%s", log);
    free(log);
}

/* RMSNorm families are tuned in the same run as the ring's, each with its
 * own harness: test_rmsnorm beside test_decode_attn unless
 * --rmsnorm-harness names another.  It gets the same command line (whole
 * names in --only), its cases name their point "rows", the cached-x
 * candidate that fails its checks is passed over, and the entry it writes
 * (threads, cache_x) is one generate uses. */

#define RMS_FAMILY "rmsnorm_sm90a_f16_h4096"
#define RMS_INST(variant, cand, threads, cached)                                                 \
    "{\"name\": \"" RMS_FAMILY "_t" variant "\", \"template\": \"rmsnorm.in\", \"targets\": "     \
    "[\"h200\"], \"tuning_family\": \"" RMS_FAMILY "\", " cand "\"params\": {\"hidden\": 4096, " \
    "\"threads\": " #threads ", \"cache_x\": " #cached "}, \"resources\": {\"registers\": 40}}"

/* test_rmsnorm's stand-in: t256c fastest but failing its checks, t256 next;
 * every call's arguments appended to rms-args.log beside it */
static const char rms_harness_text[] =
    "#!/bin/sh\n"
    "echo \"$*\" >> \"$(dirname \"$0\")/rms-args.log\"\n"
    "only= json=\n"
    "while [ $# -gt 0 ]; do case $1 in --only) only=$2; shift;; --json) json=$2; shift;; esac; "
    "shift; done\n"
    "if [ -z \"$json\" ]; then case \",$only,\" in *,rmsnorm_sm90a_f16_h4096_t256c,*) echo FAIL; "
    "exit 1;; esac; exit 0; fi\n"
    "{ echo '{\"gpu\": {\"name\": \"Stand-in\"}, \"commit\": \"abc1234\", \"cases\": ['; sep=\n"
    "for n in $(echo $only | tr , ' '); do case $n in *_t256c) a=2.0 b=18.0;; *_t256) a=2.1 "
    "b=18.4;; *) a=2.5 b=20.0;; esac\n"
    "for r in 1 4096; do if [ $r = 1 ]; then t=$a; else t=$b; fi\n"
    "printf '%s{\"name\": \"%s/rows%s\", \"instance\": \"%s\", \"shape\": {\"rows\": %s, "
    "\"hidden\": 4096}, \"time\": {\"median\": %s}}' \"$sep\" $n $r $n $r $t; sep=,; "
    "echo \"$n rows=$r\" >&2; done; done\n"
    "echo ']}'; } > $json\n";

/* --check-all: every configuration timed is checked, each in a run of its
 * own; one that fails is named and not chosen, and the planner's own choice
 * failing is an error with the spec left alone. */
Test(cli, tune_check_all_checks_every_configuration)
{
    char manifest[128], dir[128], rms[160], out[128], path[192];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", tmp);
    snprintf(dir, sizeof dir, "%s/gpu", tmp);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(rms, sizeof rms, "%s/test_rmsnorm", dir);
    snprintf(out, sizeof out, "%s/h200.yaml", tmp);
    write_program(rms, rms_harness_text);   /* t256c fails its checks */
    write_file(manifest, "{\"instances\": [" RMS_INST("128", "", 128, 0) ", "
                         RMS_INST("256", "\"candidate\": true, ", 256, 0) ", "
                         RMS_INST("256c", "\"candidate\": true, ", 256, 1) "]}");
    char *log;
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s/test_decode_attn --check-all",
                     manifest, out, dir),
                 0, "%s", log);
    cr_expect_not_null(strstr(log, "checking every configuration of " RMS_FAMILY "\n"), "%s", log);
    cr_expect_not_null(strstr(log, RMS_FAMILY "_t256c failed its checks: not chosen\n"), "%s",
                       log);
    cr_expect_not_null(strstr(log, RMS_FAMILY ": 2 of 3 configurations passed their checks\n"),
                       "%s", log);
    free(log);
    snprintf(path, sizeof path, "%s/rms-args.log", dir);
    char *args = slurp(path);
    for (const char *v = "128\0" "256\0" "256c\0"; *v; v += strlen(v) + 1) {
        char check[96];
        snprintf(check, sizeof check, "--only " RMS_FAMILY "_t%s\n", v);
        cr_expect_not_null(strstr(args, check), "a check run of t%s: %s", v, args);
    }
    free(args);
    char *spec = slurp(out);
    cr_expect_not_null(strstr(spec, "    - family: " RMS_FAMILY "\n      threads: 256\n"
                                    "      cache_x: false\n      tuned_us: 20.50\n"),
                       "%s", spec);
    free(spec);
    /* the planner's own choice failing: an error, the spec left alone (its
     * times set back, so that a rewrite would show) */
    struct stat a, b;
    const struct utimbuf past = {.actime = 1000000000, .modtime = 1000000000};
    cr_assert_eq(utime(out, &past), 0);
    cr_assert_eq(stat(out, &a), 0);
    write_file(manifest, "{\"instances\": [" RMS_INST("256c", "", 256, 1) ", "
                         RMS_INST("128", "\"candidate\": true, ", 128, 0) "]}");
    cr_expect_eq(run(&log, "tune --manifest %s --out %s --harness %s/test_decode_attn --check-all",
                     manifest, out, dir),
                 1, "%s", log);
    cr_expect_not_null(strstr(log, RMS_FAMILY ": the planner's own choice failed its checks"),
                       "%s", log);
    free(log);
    cr_assert_eq(stat(out, &b), 0);
    cr_expect_eq(a.st_mtime, b.st_mtime);
    cr_expect_eq(a.st_ino, b.st_ino);
}

/* A stand-in for a GPU harness that fusegen tune runs: every check passes
 * (a run without --json), and a timing run (--json FILE) writes the cases
 * that the shell text `cases` prints for each name $n in --only's list
 * (printf "$sep{...}", then sep=,; a line with " POINT=" to stderr each);
 * the run's commit `commit` (NULL: none). */
static void write_stand_in(const char *path, const char *cases, const char *commit)
{
    char *text = NULL;
    cr_assert_geq(asprintf(&text,
                           "#!/bin/sh\n"
                           "only= json=\n"
                           "while [ $# -gt 0 ]; do case $1 in --only) only=$2; shift;; --json) "
                           "json=$2; shift;; esac; shift; done\n"
                           "[ -z \"$json\" ] && exit 0\n"
                           "{ echo '{\"gpu\": {\"name\": \"Stand-in\"}, %s%s%s\"cases\": ['; "
                           "sep=\n"
                           "for n in $(echo $only | tr , ' '); do\n%s\ndone\n"
                           "echo ']}'; } > $json\n",
                           commit ? "\"commit\": \"" : "", commit ? commit : "",
                           commit ? "\", " : "", cases),
                  0);
    write_program(path, text);
    free(text);
}

/* A stand-in for a harness timed at S = 1024 and s2 (test_decode_attn's,
 * test_mla_decode's): instances matching the shell pattern `fast` take
 * fast_us at each point, the others slow_us; every check passes. */
static void write_s_harness(const char *path, const char *fast, unsigned s2, unsigned fast_us,
                            unsigned slow_us)
{
    char cases[512];
    snprintf(cases, sizeof cases,
             "case $n in %s) t=%u;; *) t=%u;; esac\n"
             "for s in 1024 %u; do printf '%%s{\"name\": \"%%s\", \"instance\": \"%%s\", "
             "\"S\": %%s, \"time\": {\"median\": %%s}}' \"$sep\" $n $n $s $t; sep=,; "
             "echo \"$n S=$s\" >&2; done",
             fast, fast_us, slow_us, s2);
    write_stand_in(path, cases, "abc1234");
}

Test(cli, tune_rmsnorm_families_with_their_harness)
{
    char manifest[128], dir[128], ring[160], rms[160], out[128], path[192];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", tmp);
    snprintf(dir, sizeof dir, "%s/gpu", tmp);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(ring, sizeof ring, "%s/test_decode_attn", dir);
    snprintf(rms, sizeof rms, "%s/test_rmsnorm", dir);
    snprintf(out, sizeof out, "%s/h200.yaml", tmp);
    write_file(manifest, "{\"instances\": [" TUNE_INST("", "", 512, 16384, 8, 8, 8) ", "
                         TUNE_INST("_k16n8f6", "\"candidate\": true, ", 512, 16384, 8, 6, 6) ", "
                         RMS_INST("128", "", 128, 0) ", "
                         RMS_INST("256", "\"candidate\": true, ", 256, 0) ", "
                         RMS_INST("256c", "\"candidate\": true, ", 256, 1) ", "
                         RMS_INST("64c", "\"candidate\": true, \"discarded\": \"spills\", ", 64, 1)
                         "]}");
    write_s_harness(ring, "*k16n8f6*", 4096, 45, 50);   /* the candidate 10% faster */
    write_program(rms, rms_harness_text);
    char *log;
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s --commit abc9f00", manifest, out,
                     ring),
                 0, "%s", log);
    cr_expect_not_null(strstr(log, "timing 2 decode_attn configurations (S = 1K and S_max;"),
                       "%s", log);
    cr_expect_not_null(strstr(log, "timing 3 rmsnorm configurations (rows = 1 and 4096;"), "%s",
                       log);
    cr_expect_not_null(strstr(log, "fusegen tune:   6 of 6 points timed\n"), "%s", log);
    cr_expect_not_null(strstr(log, "checking " RMS_FAMILY "_t256c (20.00 us)\n"
                                   "fusegen tune:   failed its checks: not chosen\n"),
                       "%s", log);
    free(log);
    /* the harness's command lines: whole names, the bench run, then one check */
    snprintf(path, sizeof path, "%s/rms-args.log", dir);
    char *args = slurp(path);
    cr_expect_not_null(strstr(args, "--only " RMS_FAMILY "_t128," RMS_FAMILY "_t256," RMS_FAMILY
                                    "_t256c --bench --quick --no-baseline --json "),
                       "%s", args);
    cr_expect_not_null(strstr(args, "--manifest "), "%s", args);
    cr_expect_not_null(strstr(args, "--only " RMS_FAMILY "_t256\n"), "%s", args);
    cr_expect_null(strstr(args, "_t64c"), "a discarded candidate is not run: %s", args);
    /* --commit reaches every timing run, not the checks */
    cr_expect_not_null(strstr(args, ".json --commit abc9f00\n"), "%s", args);
    for (char *l = args, *e; (e = strchr(l, '\n')) != NULL; l = e + 1) {
        *e = '\0';
        cr_expect((strstr(l, " --bench ") != NULL) == (strstr(l, " --commit abc9f00") != NULL), "%s", l);
    }
    free(args);
    cr_expect_eq(run(&log, "tune --manifest %s --out %s --harness %s --commit 'a b'", manifest, out, ring),
                 2, "a commit with a space: %s", log);
    cr_expect_not_null(strstr(log, "--commit 'a b'; expected 1 to 64 letters"), "%s", log);
    free(log);
    char *spec = slurp(out);
    cr_expect_not_null(strstr(spec, "    - family: " TUNE_FAMILY "\n      threads: 512\n"
                                    "      stage_bytes: 16384\n      stages: 8\n"
                                    "      in_flight: 6\n      tuned_us: 90.00\n"),
                       "%s", spec);
    cr_expect_not_null(strstr(spec, "    - family: " RMS_FAMILY "\n      threads: 256\n"
                                    "      cache_x: false\n      tuned_us: 20.50\n"
                                    "      model_us: 22.50\n      worst_us: 22.50\n"
                                    "      candidates: 3\n      measured: \"Stand-in, rows = "
                                    "1 + 4096, commit abc1234, fusegen tune, confirmed alone by turns (3 runs each)\"\n"),
                       "%s", spec);
    free(spec);
    /* the entry is one generate takes */
    cr_assert_eq(run(&log, "explain --filter 'rmsnorm_*' specs/models/llama-2-7b.yaml "
                           "specs/targets/h200.yaml %s", out),
                 0, "%s", log);
    cr_expect_not_null(strstr(log, RMS_FAMILY "_t256\n"), "%s", log);
    cr_expect_not_null(strstr(log, "h200.yaml): 256 threads, x streamed: 20.50 us against the "
                                   "model's 22.50 (worst 22.50 of 3 candidates; Stand-in, rows = "
                                   "1 + 4096, commit abc1234, fusegen tune, confirmed alone by turns (3 runs each))"),
                       "%s", log);
    free(log);
    /* --rmsnorm-harness names another: a failing timing run is an error */
    struct stat a, b;
    cr_assert_eq(stat(out, &a), 0);
    cr_expect_eq(run(&log, "tune --manifest %s --out %s --harness %s --rmsnorm-harness /bin/false",
                     manifest, out, ring),
                 1);
    cr_expect_not_null(strstr(log, "the rmsnorm harness's timing run failed"), "%s", log);
    free(log);
    cr_assert_eq(stat(out, &b), 0);
    cr_expect_eq(a.st_ino, b.st_ino, "the spec is left as it was");
    /* candidates generated with a tuning spec: the planner's choice is not among them */
    write_file(manifest, "{\"instances\": [" RMS_INST("256", "\"tuned\": true, ", 256, 0) ", "
                         RMS_INST("128", "\"candidate\": true, ", 128, 0) "]}");
    cr_expect_eq(run(&log, "tune --manifest %s --out %s --harness %s", manifest, out, ring), 1);
    cr_expect_not_null(strstr(log, RMS_FAMILY "_t256 is a tuned configuration; generate the "
                                   "candidates without a tuning spec"),
                       "%s", log);
    free(log);
}

/* --candidates adds the MLA core's other configurations (heads a block,
 * stages, cluster size and count): at least 20 for DeepSeek-V2-Lite at
 * batch 16, all distinct, none the planner's own, all of its tuning family;
 * the planner's instances are the same bytes as without candidates. */
#define MLA_FAMILY "mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b16"
Test(cli, candidates_enumerate_mla_configurations)
{
    const char *specs = "specs/models/deepseek-v2-lite.yaml specs/targets/h200.yaml";
    char *cand;
    cr_assert_eq(run(&cand, "list --candidates --out %s/m --filter '" MLA_FAMILY "_*' %s", tmp,
                     specs), 0, "%s", cand);
    unsigned n = 0, model = 0;
    char seen[64][160];
    for (char *line = cand, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        const char *at = strstr(line, MLA_FAMILY "_g");
        if (!at || !strstr(line, ".cu"))
            continue;
        unsigned g, c, p, st = 0;
        if (sscanf(at, MLA_FAMILY "_g%u_s%u.cu", &g, &p) == 2) {   /* the planner's: spread */
            cr_expect_eq(g, 16u, "%s", line);
            cr_expect_eq(p, 8u, "132 SMs over 16 requests: 8 splits each: %s", line);
            model++;
        } else {
            cr_assert_geq(sscanf(at, MLA_FAMILY "_g%u_c%ux%u_n%u", &g, &c, &p, &st), 3, "%s", line);
            cr_expect_neq(st, 0u, "a candidate names its stages: %s", line);
            cr_expect_eq(g, 16u, "16 heads allow 16 a block only: %s", line);
            cr_expect(c == 1 || c == 2 || c == 4 || c == 8, "%s", line);
        }
        for (unsigned k = 0; k < n && k < 64; k++)
            cr_expect_str_neq(seen[k], at, "twice: %s", at);
        if (n < 64)
            snprintf(seen[n], sizeof seen[n], "%s", at);
        n++;
    }
    cr_expect_eq(model, 1u, "the planner's choice once (its name has no stage count)");
    cr_expect_geq(n - 1, 20u, "%u candidates", n - 1);
    free(cand);
    cr_assert_eq(run(NULL, "generate --candidates --out %s/mc --filter '" MLA_FAMILY "_*' %s",
                     tmp, specs), 0);
    cr_assert_eq(run(NULL, "generate --out %s/mp --filter '" MLA_FAMILY "_*' %s", tmp, specs),
                 0);
    char path[192];
    snprintf(path, sizeof path, "%s/mc/manifest.json", tmp);
    char *man = slurp(path);
    cr_expect_not_null(strstr(man, "\"candidate\": true"), "%s", man);
    cr_expect_not_null(strstr(man, "\"tuning_family\": \"" MLA_FAMILY "\""), "%s", man);
    free(man);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cmp -s %s/mc/" MLA_FAMILY "_g16_s8.cu %s/mp/" MLA_FAMILY
             "_g16_s8.cu", tmp, tmp);
    cr_expect_eq(system(cmd), 0, "the planner's instance differs with --candidates");
    /* a shape the planner's fits and a smaller one does not (16 heads a
     * block, two teams, at a 960-wide row): candidates leave it out */
    snprintf(cmd, sizeof cmd, "sed 's/    heads: 16/    heads: 32/; s/qk_rope_head_dim: 64/"
             "qk_rope_head_dim: 448/' specs/models/deepseek-v2-lite.yaml > %s/wide.yaml", tmp);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(run(&cand, "list --candidates --out %s/w --filter 'mla_*' %s/wide.yaml "
                            "specs/targets/h200.yaml", tmp, tmp),
                 0, "%s", cand);
    cr_expect_not_null(strstr(cand, "_g32_c"), "%s", cand);
    cr_expect_null(strstr(cand, "_g16_c"), "%s", cand);
    free(cand);
}

/* An mla_decode entry replaces the planner's configuration for its family
 * (the name, the parameters, explain's reason); one that does not plan, or
 * that names another kind's field, is an error with nothing written. */
#define MLA_TUNING "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"                   \
                   "    - family: " MLA_FAMILY "\n      threads: %u\n      heads_per_block: %u\n" \
                   "      stages: %u\n      cluster: %u\n      clusters: %u\n%s"                 \
                   "      tuned_us: 80\n      model_us: 86.4\n      worst_us: 120\n"          \
                   "      candidates: 21\n      measured: \"by hand\"\n"

Test(cli, tuning_spec_replaces_the_mla_configuration)
{
    char tuning[128], specs[256], text[640], path[192];
    snprintf(tuning, sizeof tuning, "%s/h200-mla.yaml", tmp);
    snprintf(text, sizeof text, MLA_TUNING, 256u, 16u, 4u, 2u, 2u, "");
    write_file(tuning, text);
    snprintf(specs, sizeof specs, "specs/models/deepseek-v2-lite.yaml specs/targets/h200.yaml %s",
             tuning);
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/t --filter 'mla_*_b16_*' %s", tmp, specs), 0, "%s",
                 out);
    free(out);
    snprintf(path, sizeof path, "%s/t/manifest.json", tmp);
    char *man = slurp(path);
    const char *at = strstr(man, "\"name\": \"" MLA_FAMILY "_g16_c2x2_n4\"");
    cr_assert_not_null(at, "%s", man);
    cr_expect_not_null(strstr(at, "\"stages\": 4"), "%s", man);
    cr_expect_not_null(strstr(at, "\"splits\": 4"), "%s", man);
    cr_expect_not_null(strstr(at, "\"tuned\": true"), "%s", man);
    free(man);
    cr_assert_eq(run(&out, "explain --filter 'mla_*_b16_*' %s", specs), 0, "%s", out);
    cr_expect_not_null(strstr(out, "h200-mla.yaml): 16 heads a block, 4 stages, 2 clusters of "
                                   "2: 80.00 us against the model's 86.40 (worst 120.00 of 21 "
                                   "candidates; by hand)"),
                       "%s", out);
    free(out);
    /* entries that do not plan */
    const struct { unsigned threads, hpb, stages, c, p; const char *extra, *why; } bad[] = {
        {256, 64, 2, 1, 1, "", "64 heads a block: 16 heads per GPU and kv_lora 512 take 16"},
        {128, 16, 4, 2, 2, "", "128 threads: 16 heads a block run 256"},
        {256, 16, 9, 2, 2, "", "9 stages: 16 heads a block take 3 to 5 (shared memory)"},
        {256, 16, 4, 3, 1, "", "a cluster of 3 is not a power of two"},
        {256, 16, 4, 1, 3, "", "the last cluster's merge would read 6144 bytes a head row"},
        {256, 16, 4, 2, 16, "", "16 x 16 clusters of 2 at B_max 16: more than 2 waves of the "
                                "66 h200 holds at once"},
        {256, 16, 4, 2, 2, "      cache_x: true\n", "does not apply to an mla_decode family"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, MLA_TUNING, bad[i].threads, bad[i].hpb, bad[i].stages,
                 bad[i].c, bad[i].p, bad[i].extra);
        write_file(tuning, text);
        snprintf(path, sizeof path, "%s/bad%zu", tmp, i);
        cr_expect_eq(run(&out, "generate --out %s %s", path, specs), 1, "entry %zu", i);
        cr_expect_not_null(strstr(out, bad[i].why), "entry %zu: %s", i, out);
        free(out);
        struct stat st;
        cr_expect_neq(stat(path, &st), 0, "entry %zu: nothing written", i);
    }
}

#define MLA_INST(variant, cand, stages, c, p)                                                   \
    "{\"name\": \"" MLA_FAMILY "_" variant "\", \"template\": \"mla_decode.in\", \"targets\": " \
    "[\"h200\"], \"tuning_family\": \"" MLA_FAMILY "\", " cand "\"params\": {\"threads\": "   \
    "256, \"heads_per_block\": 16, \"stages\": " #stages ", \"cluster\": " #c ", "              \
    "\"clusters\": " #p "}, \"resources\": {\"registers\": 160}}"

Test(cli, tune_mla_families_with_their_harness)
{
    char manifest[128], dir[128], ring[160], mla[160], out[128];
    snprintf(manifest, sizeof manifest, "%s/mla-manifest.json", tmp);
    snprintf(dir, sizeof dir, "%s/mgpu", tmp);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(ring, sizeof ring, "%s/test_decode_attn", dir);
    snprintf(mla, sizeof mla, "%s/test_mla_decode", dir);
    snprintf(out, sizeof out, "%s/h200-tuned-mla.yaml", tmp);
    write_file(manifest, "{\"instances\": [" MLA_INST("g16_c2x4", "", 5, 2, 4) ", "
                         MLA_INST("g16_c2x2_n4", "\"candidate\": true, ", 4, 2, 2) ", "
                         MLA_INST("g16_c1x8_n5", "\"candidate\": true, ", 5, 1, 8) "]}");
    write_program(ring, "#!/bin/sh\nexit 1\n");
    write_s_harness(mla, "*_c2x2_n4", 16384, 40, 43);   /* g16 c2x2 at 4 stages fastest */
    char *log;
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s", manifest, out, ring), 0,
                 "%s", log);
    cr_expect_not_null(strstr(log, "timing 3 mla_decode configurations (S = 1K and S_max;"),
                       "%s", log);
    free(log);
    char *spec = slurp(out);
    cr_expect_not_null(strstr(spec, "    - family: " MLA_FAMILY "\n      threads: 256\n"
                                    "      heads_per_block: 16\n      stages: 4\n"
                                    "      cluster: 2\n      clusters: 2\n      tuned_us: 80.00\n"
                                    "      model_us: 86.00\n"),
                       "%s", spec);
    free(spec);
    /* the entry is one generate takes */
    cr_assert_eq(run(&log, "list --filter 'mla_*_b16_*' specs/models/deepseek-v2-lite.yaml "
                           "specs/targets/h200.yaml %s", out),
                 0, "%s", log);
    cr_expect_not_null(strstr(log, MLA_FAMILY "_g16_c2x2_n4.cu"), "%s", log);
    free(log);
}

/* The grid form (decode_attn, batch above 4): its family's tuning entry
 * replaces the model's configuration, carried in the instance name; entries
 * that do not plan are refused with the reason and nothing written. */
#define GRID_FAMILY "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b16_grid"
#define GRID_TUNING "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"                    \
                    "    - family: " GRID_FAMILY "\n      threads: %u\n      step_cols: %u\n"    \
                    "      slices_qkv: %u\n      slices_o: %u\n      key_rounds: %u\n%s"          \
                    "      tuned_us: 300\n      model_us: 310\n      worst_us: 400\n"            \
                    "      candidates: 71\n      measured: \"by hand\"\n"

Test(cli, tuning_spec_replaces_the_grid_configuration)
{
    char tuning[128], specs[256], text[640], path[192];
    snprintf(tuning, sizeof tuning, "%s/h200-grid.yaml", tmp);
    snprintf(text, sizeof text, GRID_TUNING, 512u, 128u, 16u, 4u, 6u, "");
    write_file(tuning, text);
    snprintf(specs, sizeof specs, "specs/models/llama-2-7b.yaml specs/targets/h200.yaml %s", tuning);
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/g --filter 'decode_attn_*_b16_*' %s", tmp, specs), 0,
                 "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/g/manifest.json", tmp);
    char *man = slurp(path);
    const char *at = strstr(man, "\"name\": \"" GRID_FAMILY "_t512_k128q16o4u6_norm\"");
    cr_assert_not_null(at, "%s", man);
    cr_expect_not_null(strstr(at, "\"slices_qkv\": 16"), "%s", man);
    cr_expect_not_null(strstr(at, "\"step_cols\": 128"), "%s", man);
    cr_expect_not_null(strstr(at, "\"tuned\": true"), "%s", man);
    cr_expect_not_null(strstr(man, "\"name\": \"" GRID_FAMILY "_t512_k128q16o4u6_norm_det\""),
                       "the twin is tuned too: %s", man);
    free(man);
    cr_assert_eq(run(&out, "explain --filter 'decode_attn_*_b16_*' %s", specs), 0, "%s", out);
    cr_expect_not_null(strstr(out, "h200-grid.yaml): steps of 128 columns, 16 and 4 slices, 6 key "
                                   "rounds: 300.0 us against the model's 310.0 (worst "
                                   "400.0 of 71 candidates; by hand)"),
                       "%s", out);
    free(out);
    const struct { unsigned threads, step, q, o, rounds; const char *extra, *why; } bad[] = {
        {256, 256, 8, 8, 8, "", "the grid form runs 512 threads"},
        {512, 256, 3, 8, 8, "", "must split into 1-64 slices of whole steps"},
        {512, 256, 32, 8, 8, "", "must split into 1-64 slices of whole steps"},
        {512, 256, 8, 8, 8, "      stages: 4\n", "does not apply to a decode_attn grid family"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, GRID_TUNING, bad[i].threads, bad[i].step, bad[i].q, bad[i].o,
                 bad[i].rounds, bad[i].extra);
        write_file(tuning, text);
        snprintf(path, sizeof path, "%s/gbad%zu", tmp, i);
        cr_expect_eq(run(&out, "generate --out %s %s", path, specs), 1, "entry %zu", i);
        cr_expect_not_null(strstr(out, bad[i].why), "entry %zu: %s", i, out);
        free(out);
        struct stat st;
        cr_expect_neq(stat(path, &st), 0, "entry %zu: nothing written", i);
    }
}

/* generate --candidates: the grid form's steps, neighbouring slice counts
 * and key rounds, at least 20 a family (issue 11), marked as candidates. */
Test(cli, grid_candidates)
{
    char *out;
    cr_assert_eq(run(&out, "list --candidates --filter 'decode_attn_*_b16_grid*' "
                           "specs/models/llama-2-7b.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    unsigned n = 0;
    for (const char *p = out; (p = strstr(p, "_b16_grid_t512_k")); p++)
        n++;
    cr_expect_geq(n, 20u, "%u candidates: %s", n, out);
    cr_expect_not_null(strstr(out, GRID_FAMILY "_t512_k128q16o4u6_norm.cu"), "%s", out);
    cr_expect_not_null(strstr(out, GRID_FAMILY "_t512_norm.cu"), "the model's: %s", out);
    free(out);
}

#define GRID_INST(variant, cand, step, q, o, u)                                                   \
    "{\"name\": \"" GRID_FAMILY "_" variant "\", \"template\": \"decode_attn_grid.in\", "         \
    "\"targets\": [\"h200\"], \"tuning_family\": \"" GRID_FAMILY "\", " cand "\"params\": {"     \
    "\"threads\": 512, \"step_cols\": " #step ", \"slices_qkv\": " #q ", \"slices_o\": " #o ", " \
    "\"unroll\": " #u "}, \"resources\": {\"registers\": 128}}"

Test(cli, tune_grid_families_with_the_decode_harness)
{
    char manifest[128], dir[128], ring[160], out[128];
    snprintf(manifest, sizeof manifest, "%s/grid-manifest.json", tmp);
    snprintf(dir, sizeof dir, "%s/ggpu", tmp);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(ring, sizeof ring, "%s/test_decode_attn", dir);
    snprintf(out, sizeof out, "%s/h200-tuned-grid.yaml", tmp);
    write_file(manifest, "{\"instances\": [" GRID_INST("t512_norm", "", 256, 8, 8, 8) ", "
                         GRID_INST("t512_k128q16o4u6_norm", "\"candidate\": true, ", 128, 16, 4, 6)
                         ", " GRID_INST("t512_k256q4o8u4_norm", "\"candidate\": true, ", 256, 4, 8, 4)
                         "]}");
    write_s_harness(ring, "*_k128q16o4u6_norm", 4096, 140, 150);   /* that candidate fastest */
    char *log;
    cr_assert_eq(run(&log, "tune --manifest %s --out %s --harness %s", manifest, out, ring), 0,
                 "%s", log);
    free(log);
    char *spec = slurp(out);
    cr_expect_not_null(strstr(spec, "    - family: " GRID_FAMILY "\n      threads: 512\n"
                                    "      step_cols: 128\n      slices_qkv: 16\n"
                                    "      slices_o: 4\n      key_rounds: 6\n"
                                    "      tuned_us: 280.00\n      model_us: 300.00\n"),
                       "%s", spec);
    free(spec);
    /* the entry is one generate takes */
    cr_assert_eq(run(&log, "list --filter 'decode_attn_*_b16_*' specs/models/llama-2-7b.yaml "
                           "specs/targets/h200.yaml %s", out),
                 0, "%s", log);
    cr_expect_not_null(strstr(log, GRID_FAMILY "_t512_k128q16o4u6_norm.cu"), "%s", log);
    free(log);
}

/* `list --candidates` of a tuning family from specs: the list in *out, and
 * how many times the family's name is in it (the model's and the
 * candidates'). */
static int list_candidates(const char *family, const char *specs, char **out)
{
    cr_assert_eq(run(out, "list --candidates --filter '%s*' %s", family, specs), 0, "%s", *out);
    int n = 0;
    for (const char *p = *out; (p = strstr(p, family)); p++)
        n++;
    return n;
}

/* `generate` of specs with a tuning spec whose entry does not plan: exit 1
 * with `why` in the output, and nothing written (into tmp/gen_name). */
static void expect_entry_refused(const char *specs, const char *tuning, const char *gen_name,
                                 const char *why)
{
    char gen[160], *out;
    snprintf(gen, sizeof gen, "%s/%s", tmp, gen_name);
    cr_expect_eq(run(&out, "generate --out %s %s %s", gen, specs, tuning), 1, "%s", out);
    cr_expect_not_null(strstr(out, why), "%s", out);
    free(out);
    struct stat st;
    cr_expect_neq(stat(gen, &st), 0, "nothing written");
}

/* `fusegen tune` over a gate's manifest of `instances` (JSON objects) with
 * a stand-in for the harness `program` (write_stand_in's, with `cases`), in
 * a new folder tmp/name.  Returns tune's exit status, its output in *out
 * and the tuning spec it wrote in *spec (NULL if none). */
static int tune_with_stand_in(const char *name, const char *program, const char *instances,
                              const char *cases, char **out, char **spec)
{
    char dir[160], manifest[200], harness[220], decode[220], outspec[200];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(manifest, sizeof manifest, "%s/manifest.json", dir);
    snprintf(harness, sizeof harness, "%s/%s", dir, program);
    snprintf(decode, sizeof decode, "%s/test_decode_attn", dir);
    snprintf(outspec, sizeof outspec, "%s/tuned.yaml", dir);
    char *json = NULL;
    cr_assert_geq(asprintf(&json, "{\"instances\": [%s]}", instances), 0);
    write_file(manifest, json);
    free(json);
    write_stand_in(harness, cases, NULL);
    const int rc = run(out, "tune --manifest %s --out %s --harness %s", manifest, outspec, decode);
    struct stat st;
    *spec = stat(outspec, &st) == 0 ? slurp(outspec) : NULL;
    return rc;
}

/* The overlap family's GEMM: candidates over stages, C rounds and tile rows
 * a group (every one whose shared memory fits, >= 20), named by their
 * configuration; a tuning entry replaces the model's and names the
 * instance; fusegen tune times them with test_gemm (cases at M = 4096 and
 * 16384, shape.rows and time.median) and writes the entry. */
#define GEMM_FAMILY "overlap_gemm_sm90a_bf16_n8192_k1024"
#define GEMM_INST(variant, cand, st, r, g)                                                       \
    "{\"name\": \"" GEMM_FAMILY variant "\", \"template\": \"overlap_gemm.in\", \"targets\": "   \
    "[\"h200\"], \"tuning_family\": \"" GEMM_FAMILY "\", " cand "\"params\": {\"threads\": "     \
    "384, \"stages\": " #st ", \"c_rounds\": " #r ", \"group_m\": " #g "}, \"resources\": "      \
    "{\"registers\": 168}}"

Test(cli, gemm_candidates_tuning_entry_and_tune)
{
    char *out;
    const int n = list_candidates(GEMM_FAMILY, "specs/gemm/llama-2-70b-tp2.yaml "
                                               "specs/targets/h200.yaml", &out);
    cr_expect_geq(n, 21, "the model's and >= 20 candidates: %d\n%s", n, out);
    cr_expect_not_null(strstr(out, GEMM_FAMILY ".cu"), "%s", out);   /* the model's */
    cr_expect_not_null(strstr(out, GEMM_FAMILY "_s3c1g4.cu"), "%s", out);
    cr_expect_null(strstr(out, GEMM_FAMILY "_s4c1g"), "4 stages and a whole-tile C buffer "
                                                      "exceed 227 KB: %s", out);
    cr_expect_null(strstr(out, GEMM_FAMILY "_s4c2g8.cu"), "the model's, named by its shape: %s",
                   out);
    free(out);
    /* a tuning entry names the instance and explain says so */
    char tuning[160];
    snprintf(tuning, sizeof tuning, "%s/h200-gemm.yaml", tmp);
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: " GEMM_FAMILY "\n      threads: 384\n      stages: 3\n"
                       "      c_rounds: 1\n      group_m: 4\n      tuned_us: 90\n"
                       "      model_us: 100\n      worst_us: 130\n      candidates: 39\n"
                       "      measured: \"by hand\"\n");
    cr_assert_eq(run(&out, "explain --filter '" GEMM_FAMILY "*' specs/gemm/llama-2-70b-tp2.yaml "
                           "specs/targets/h200.yaml %s", tuning),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, GEMM_FAMILY "_s3c1g4\n"), "%s", out);
    cr_expect_not_null(strstr(out, "3 stages, C in 1 round(s), 4 tile rows a group: 90.00 us "
                                   "against the model's 100.00"),
                       "%s", out);
    free(out);
    /* an entry that does not fit is refused, and nothing is written */
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: " GEMM_FAMILY "\n      threads: 384\n      stages: 4\n"
                       "      c_rounds: 1\n      group_m: 4\n      tuned_us: 90\n"
                       "      model_us: 100\n      worst_us: 130\n      candidates: 39\n"
                       "      measured: \"by hand\"\n");
    expect_entry_refused("specs/gemm/llama-2-70b-tp2.yaml specs/targets/h200.yaml", tuning,
                         "gemm-gen", "need 263248 B of shared memory");
    /* fusegen tune with test_gemm's stand-in: s3c1g4 fastest */
    char *spec;
    cr_assert_eq(tune_with_stand_in("gemmgpu", "test_gemm",
                                    GEMM_INST("", "", 4, 2, 8) ", "
                                    GEMM_INST("_s3c1g4", "\"candidate\": true, ", 3, 1, 4) ", "
                                    GEMM_INST("_s2c2g16", "\"candidate\": true, ", 2, 2, 16),
                                    "case $n in *_s3c1g4) t=40;; *) t=50;; esac\n"
                                    "for m in 4096 16384; do printf '%s{\"name\": \"%s\", "
                                    "\"instance\": \"%s\", \"shape\": {\"rows\": %s}, "
                                    "\"time\": {\"median\": %s}}' \"$sep\" $n $n $m $t; "
                                    "sep=,; echo \"$n M= $m\" >&2; done",
                                    &out, &spec),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "6 of 6 points timed"), "%s", out);
    free(out);
    cr_assert_not_null(spec);
    cr_expect_not_null(strstr(spec, "    - family: " GEMM_FAMILY "\n      threads: 384\n"
                                    "      stages: 3\n      c_rounds: 1\n      group_m: 4\n"
                                    "      tuned_us: 80.00\n      model_us: 100.00\n"),
                       "%s", spec);
    cr_expect_not_null(strstr(spec, "measured: \"Stand-in, M = 4096 + 16384, fusegen tune, confirmed alone by turns (3 runs each)\""),
                       "%s", spec);
    free(spec);
}

/* The overlap family's reduction: candidates over threads and blocks a
 * compute unit (4 x 6, the model's among them), named by their
 * configuration; a tuning entry replaces the model's and names the
 * instance; one of another kind's fields, or one that does not plan, is
 * refused with nothing written; fusegen tune times them with
 * test_overlap_reduce (cases at 256K and 4M vectors, their point "vecs") and
 * writes the entry. */
#define REDUCE_FAMILY "overlap_reduce_sm90a_bf16_w2"
#define REDUCE_INST(variant, cand, th, b)                                                        \
    "{\"name\": \"" REDUCE_FAMILY variant "\", \"template\": \"overlap_reduce.in\", "           \
    "\"targets\": [\"h200\"], \"tuning_family\": \"" REDUCE_FAMILY "\", " cand "\"params\": "  \
    "{\"world\": 2, \"threads\": " #th ", \"blocks_per_cu\": " #b "}, \"resources\": "          \
    "{\"registers\": 32}}"
#define REDUCE_ENTRY(family, fields)                                                             \
    "schema_version: 1\ntuning:\n  target: h200\n  entries:\n    - family: " family "\n" fields \
    "      tuned_us: 90\n      model_us: 100\n      worst_us: 130\n      candidates: 23\n"       \
    "      measured: \"by hand\"\n"

Test(cli, reduce_candidates_tuning_entry_and_tune)
{
    char *out;
    const int n = list_candidates(REDUCE_FAMILY, "specs/gemm/llama-2-70b-tp2.yaml "
                                                 "specs/targets/h200.yaml", &out);
    cr_expect_eq(n, 24, "the model's and 23 candidates: %d\n%s", n, out);
    cr_expect_not_null(strstr(out, REDUCE_FAMILY ".cu"), "the model's, by its family: %s", out);
    cr_expect_not_null(strstr(out, REDUCE_FAMILY "_t1024b1.cu"), "%s", out);
    cr_expect_null(strstr(out, REDUCE_FAMILY "_t256b16.cu"), "the model's configuration: %s", out);
    free(out);
    /* a tuning entry names the instance and explain says so */
    char tuning[160];
    snprintf(tuning, sizeof tuning, "%s/h200-reduce.yaml", tmp);
    write_file(tuning, REDUCE_ENTRY(REDUCE_FAMILY, "      threads: 512\n      blocks_per_cu: 4\n"));
    cr_assert_eq(run(&out, "explain --filter '" REDUCE_FAMILY "*' specs/gemm/llama-2-70b-tp2.yaml "
                           "specs/targets/h200.yaml %s", tuning),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, REDUCE_FAMILY "_t512b4\n"), "%s", out);
    cr_expect_not_null(strstr(out, "launch: grid=(528,1,1) block=(512,1,1)"), "%s", out);
    cr_expect_not_null(strstr(out, "512 threads, 4 blocks a compute unit: 90.00 us against the "
                                   "model's 100.00"),
                       "%s", out);
    free(out);
    /* a field of another kind is refused at its line */
    write_file(tuning, REDUCE_ENTRY(REDUCE_FAMILY, "      threads: 512\n      blocks_per_cu: 4\n"
                                                   "      stages: 4\n"));
    cr_expect_eq(run(&out, "list specs/gemm/llama-2-70b-tp2.yaml specs/targets/h200.yaml %s",
                     tuning),
                 1, "%s", out);
    cr_expect_not_null(strstr(out, "does not apply to an overlap_reduce family; its "
                                   "configuration is threads and blocks_per_cu"),
                       "%s", out);
    free(out);
    /* an entry that does not plan (a block of 96 threads on 64-wide waves) is
     * refused, and nothing is written */
    char amd[160];
    snprintf(amd, sizeof amd, "%s/mi300x-reduce.yaml", tmp);
    write_file(amd, "schema_version: 1\ntuning:\n  target: mi300x\n  entries:\n"
                    "    - family: overlap_reduce_gfx942_bf16_w2\n      threads: 96\n"
                    "      blocks_per_cu: 4\n      tuned_us: 90\n      model_us: 100\n"
                    "      worst_us: 130\n      candidates: 23\n      measured: \"by hand\"\n");
    expect_entry_refused("specs/gemm/llama-2-70b-tp2.yaml specs/targets/mi300x.yaml", amd,
                         "reduce-gen", "96 threads: whole waves of 64, at most 1024");
    /* fusegen tune with test_overlap_reduce's stand-in: t512b4 fastest */
    char *spec;
    cr_assert_eq(tune_with_stand_in("reducegpu", "test_overlap_reduce",
                                    REDUCE_INST("", "", 256, 16) ", "
                                    REDUCE_INST("_t512b4", "\"candidate\": true, ", 512, 4) ", "
                                    REDUCE_INST("_t128b1", "\"candidate\": true, ", 128, 1),
                                    "case $n in *_t512b4) t=40;; *) t=50;; esac\n"
                                    "for v in 262144 4194304; do printf '%s{\"instance\": "
                                    "\"%s\", \"vecs\": %s, \"time\": {\"median\": %s}}' "
                                    "\"$sep\" $n $v $t; sep=,; echo \"$n vecs=$v\" >&2; done",
                                    &out, &spec),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "timing 3 overlap_reduce configurations (256K and 4M vectors "
                                   "a block;"),
                       "%s", out);
    cr_expect_not_null(strstr(out, "6 of 6 points timed"), "%s", out);
    free(out);
    cr_assert_not_null(spec);
    cr_expect_not_null(strstr(spec, "    - family: " REDUCE_FAMILY "\n      threads: 512\n"
                                    "      blocks_per_cu: 4\n      tuned_us: 80.00\n"
                                    "      model_us: 100.00\n"),
                       "%s", spec);
    cr_expect_not_null(strstr(spec, "measured: \"Stand-in, vecs = 262144 + 4194304, fusegen "
                                    "tune, confirmed alone by turns (3 runs each)\""),
                       "%s", spec);
    free(spec);
}

/* The whole MLA block: candidates over the ring's slots, the rows a piece,
 * the W_uk rows a chunk and the projections' units (every one that plans,
 * >= 20; V2-Lite's absorbing blocks apart in each, "a"), and the model's
 * configuration with them in the projections, named by their
 * configuration; a tuning entry replaces the model's and names the
 * instance; one that does not plan is refused with nothing written;
 * fusegen tune times them with test_mla_block (cases at S = 4K) and writes
 * the entry. */
#define BLOCK_FAMILY "mla_block_sm90a_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1"
#define BLOCK_INST(variant, cand, sl, pr, cr, mma, ap)                                          \
    "{\"name\": \"" BLOCK_FAMILY variant "\", \"template\": \"mla_block.in\", \"targets\": "    \
    "[\"h200\"], \"tuning_family\": \"" BLOCK_FAMILY "\", " cand "\"params\": {\"threads\": "   \
    "256, \"bmax\": 1, \"slots\": " #sl ", \"piece_rows\": " #pr ", \"chunk_rows\": " #cr  \
    ", \"mma_proj\": " #mma ", \"absorb_apart\": " #ap "}, \"resources\": {\"registers\": 160}}"

/* test_mla_block's stand-in for fusegen tune: each instance timed at
 * B = 1, S = 4K: the one whose name ends in `winner` in 20 us, the others in 30 */
#define BLOCK_STAND_IN(winner)                                                                    \
    "case $n in *" winner ") t=20;; *) t=30;; esac\n"                                            \
    "printf '%s{\"instance\": \"%s\", \"batch\": 1, \"S\": 4096, \"time\": {\"median\": %s}}' " \
    "\"$sep\" $n $t; sep=,; echo \"$n: bench B=1 S=4096\" >&2"

Test(cli, mla_block_candidates_tuning_entry_and_tune)
{
    char *out;
    const int n = list_candidates(BLOCK_FAMILY, "specs/models/deepseek-v2-lite.yaml "
                                                "specs/targets/h200.yaml", &out);
    cr_expect_geq(n, 21, "the model's and >= 20 candidates: %d\n%s", n, out);
    cr_expect_not_null(strstr(out, BLOCK_FAMILY ".cu"), "the model's, by its dims: %s", out);
    cr_expect_not_null(strstr(out, BLOCK_FAMILY "_s2p4c8a.cu"), "%s", out);
    cr_expect_not_null(strstr(out, BLOCK_FAMILY "_s5p16c16ta.cu"), "%s", out);
    cr_expect_null(strstr(out, BLOCK_FAMILY "_s5p16c32a.cu"), "the model's configuration: %s", out);
    cr_expect_not_null(strstr(out, BLOCK_FAMILY "_s5p16c32.cu"), "the model's, blocks not apart: %s",
                       out);
    cr_expect_null(strstr(out, BLOCK_FAMILY "_s2p4c8.cu"), "one candidate not apart: %s", out);
    cr_expect_null(strstr(out, BLOCK_FAMILY "_s6"), "6 slots exceed 227 KB: %s", out);
    cr_expect_null(strstr(out, "c8ta.cu"), "tensor-core chunks are whole k-steps of 16: %s", out);
    cr_expect_null(strstr(out, "p8c16ta.cu"), "tensor-core projections take no piece rows: %s",
                   out);
    free(out);
    /* a tuning entry names the instance and explain says so */
    char tuning[160];
    snprintf(tuning, sizeof tuning, "%s/h200-block.yaml", tmp);
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: " BLOCK_FAMILY "\n      threads: 256\n      slots: 3\n"
                       "      piece_rows: 8\n      chunk_rows: 16\n"
                       "      tuned_us: 25\n      model_us: 27\n      worst_us: 40\n"
                       "      candidates: 55\n      measured: \"by hand\"\n");
    cr_assert_eq(run(&out, "explain --filter '" BLOCK_FAMILY "*' specs/models/deepseek-v2-lite.yaml "
                           "specs/targets/h200.yaml %s", tuning),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, BLOCK_FAMILY "_s3p8c16\n"), "%s", out);
    cr_expect_not_null(strstr(out, "3 slots, pieces of up to 8 rows, W_uk chunks of 16 rows, "
                                   "projections on CUDA cores: 25.00 us against the model's 27.00"),
                       "%s", out);
    cr_expect_not_null(strstr(out, "projections on CUDA cores (the tuning entry's)"), "%s", out);
    cr_expect_not_null(strstr(out, "ABSORB_APART=0 ROW_GROUP=4\n"), "the entry's, absent: false: %s", out);
    free(out);
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: " BLOCK_FAMILY "\n      threads: 256\n      slots: 3\n"
                       "      piece_rows: 8\n      chunk_rows: 16\n      absorb_apart: true\n"
                       "      tuned_us: 25\n      model_us: 27\n      worst_us: 40\n"
                       "      candidates: 55\n      measured: \"by hand\"\n");
    cr_assert_eq(run(&out, "explain --filter '" BLOCK_FAMILY "*' specs/models/deepseek-v2-lite.yaml "
                           "specs/targets/h200.yaml %s", tuning),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, BLOCK_FAMILY "_s3p8c16a\n"), "%s", out);
    cr_expect_not_null(strstr(out, "ABSORB_APART=16 ROW_GROUP=4\n"), "%s", out);
    cr_expect_not_null(strstr(out, "projections on CUDA cores, absorbing blocks apart: 25.00 us"),
                       "%s", out);
    free(out);
    /* a field of another kind is refused at its line */
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: " BLOCK_FAMILY "\n      threads: 256\n      slots: 3\n"
                       "      piece_rows: 8\n      chunk_rows: 16\n      stages: 4\n"
                       "      tuned_us: 25\n      model_us: 27\n      worst_us: 40\n"
                       "      candidates: 55\n      measured: \"by hand\"\n");
    cr_expect_eq(run(&out, "list specs/models/deepseek-v2-lite.yaml specs/targets/h200.yaml %s",
                     tuning),
                 1, "%s", out);
    cr_expect_not_null(strstr(out, "does not apply to an mla_block family"), "%s", out);
    free(out);
    /* an entry that does not plan is refused, and nothing is written */
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: " BLOCK_FAMILY "\n      threads: 256\n      slots: 6\n"
                       "      piece_rows: 8\n      chunk_rows: 16\n"
                       "      tuned_us: 25\n      model_us: 27\n      worst_us: 40\n"
                       "      candidates: 55\n      measured: \"by hand\"\n");
    expect_entry_refused("specs/models/deepseek-v2-lite.yaml specs/targets/h200.yaml", tuning,
                         "block-gen", "6 slots: 2 to 5 slots of 37376 bytes fit");
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: " BLOCK_FAMILY "\n      threads: 256\n      slots: 3\n"
                       "      piece_rows: 8\n      chunk_rows: 16\n      mma_proj: true\n"
                       "      tuned_us: 25\n      model_us: 27\n      worst_us: 40\n"
                       "      candidates: 55\n      measured: \"by hand\"\n");
    expect_entry_refused("specs/models/deepseek-v2-lite.yaml specs/targets/h200.yaml", tuning,
                         "block-gen", "8 rows a piece with the projections on tensor cores");
    /* 128 heads: the grid has no four blocks a head to keep the absorbing ones apart */
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: mla_block_sm90a_bf16_h5120_nh128_q1536_kv512_r64_s16384_p64_b1\n"
                       "      threads: 256\n      slots: 3\n      piece_rows: 16\n"
                       "      chunk_rows: 16\n      absorb_apart: true\n"
                       "      tuned_us: 25\n      model_us: 27\n      worst_us: 40\n"
                       "      candidates: 55\n      measured: \"by hand\"\n");
    expect_entry_refused("specs/models/deepseek-v2.yaml specs/targets/h200.yaml", tuning,
                         "block-gen", "the absorbing blocks apart: 128 heads need four blocks a "
                                      "head, the grid has 132");
    /* fusegen tune with test_mla_block's stand-in: s3p16c16t fastest */
    char *spec;
    cr_assert_eq(tune_with_stand_in("blockgpu", "test_mla_block",
                                    BLOCK_INST("", "", 5, 16, 32, 0, 16) ", "
                                    BLOCK_INST("_s3p16c16t", "\"candidate\": true, ", 3, 16, 16, 1, 0)
                                    ", " BLOCK_INST("_s2p4c8", "\"candidate\": true, ", 2, 4, 8, 0, 0),
                                    BLOCK_STAND_IN("_s3p16c16t"),
                                    &out, &spec),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "3 of 3 points timed"), "%s", out);
    free(out);
    cr_assert_not_null(spec);
    cr_expect_not_null(strstr(spec, "    - family: " BLOCK_FAMILY "\n      threads: 256\n"
                                    "      slots: 3\n      piece_rows: 16\n      chunk_rows: 16\n"
                                    "      mma_proj: true\n      absorb_apart: false\n"
                                    "      tuned_us: 20.00\n"
                                    "      model_us: 30.00\n"),
                       "%s", spec);
    cr_expect_not_null(strstr(spec, "measured: \"Stand-in, B = 1, fusegen tune, confirmed alone by turns (3 runs each)\""), "%s", spec);
    free(spec);
    /* generating with the written spec names the tuned instance */
    char outspec[200];
    snprintf(outspec, sizeof outspec, "%s/blockgpu/tuned.yaml", tmp);
    cr_assert_eq(run(&out, "list specs/models/deepseek-v2-lite.yaml specs/targets/h200.yaml %s",
                     outspec),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, BLOCK_FAMILY "_s3p16c16t.cu"), "%s", out);
    free(out);
    /* a winner with the absorbing blocks apart (the manifest's absorb_apart:
     * their count): the entry says so, and names the instance with its `a` */
    cr_assert_eq(tune_with_stand_in("blockgpu-apart", "test_mla_block",
                                    BLOCK_INST("", "", 5, 16, 32, 0, 16) ", "
                                    BLOCK_INST("_s3p16c16t", "\"candidate\": true, ", 3, 16, 16, 1, 0)
                                    ", " BLOCK_INST("_s3p16c16ta", "\"candidate\": true, ", 3, 16, 16, 1, 16),
                                    BLOCK_STAND_IN("_s3p16c16ta"),
                                    &out, &spec),
                 0, "%s", out);
    free(out);
    cr_assert_not_null(spec);
    cr_expect_not_null(strstr(spec, "      slots: 3\n      piece_rows: 16\n      chunk_rows: 16\n"
                                    "      mma_proj: true\n      absorb_apart: true\n"
                                    "      tuned_us: 20.00\n"),
                       "%s", spec);
    free(spec);
    snprintf(outspec, sizeof outspec, "%s/blockgpu-apart/tuned.yaml", tmp);
    cr_assert_eq(run(&out, "list specs/models/deepseek-v2-lite.yaml specs/targets/h200.yaml %s",
                     outspec),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, BLOCK_FAMILY "_s3p16c16ta.cu"), "%s", out);
    free(out);
}

/* make's stand-in for `tune --target`: records its arguments and leaves the
 * gate's manifest (the three MLA configurations above) in KBUILD. */
static const char make_stand_in_text[] =
    "#!/bin/sh\n"
    "log=$(dirname $0)/make-args\n"
    "for a in \"$@\"; do echo \"$a\" >> $log; case $a in KBUILD=*) kb=${a#KBUILD=};; esac; done\n"
    "mkdir -p $kb && cp $(dirname $0)/gated.json $kb/manifest.json\n";

/* Runs `tune --target h200 --filter 'mla_*_b16_*' ... SPECS` from a new
 * folder `dir` holding make's stand-in ($MAKE; its arguments go to
 * dir/make-args), the gate's manifest it leaves (two MLA configurations) and
 * the harnesses' stand-ins; returns the exit status, the output in *log. */
static int run_tune_target(const char *dir, const char *work, const char *out, const char *specs,
                           char **log)
{
    char make[160], ring[160], mla[160], path[192];
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(make, sizeof make, "%s/make", dir);
    snprintf(ring, sizeof ring, "%s/test_decode_attn", dir);
    snprintf(mla, sizeof mla, "%s/test_mla_decode", dir);
    snprintf(path, sizeof path, "%s/gated.json", dir);
    write_file(path, "{\"instances\": [" MLA_INST("g16_c2x4", "", 5, 2, 4) ", "
                     MLA_INST("g16_c2x2_n4", "\"candidate\": true, ", 4, 2, 2) "]}");
    write_program(make, make_stand_in_text);
    write_program(ring, "#!/bin/sh\nexit 1\n");
    write_s_harness(mla, "*_c2x2_n4", 16384, 40, 43);   /* g16 c2x2 at 4 stages fastest */
    cr_assert_eq(setenv("MAKE", make, 1), 0);
    const int rc = run(log, "tune --target h200 --filter 'mla_*_b16_*' --work %s --out %s "
                            "--harness %s %s", work, out, ring, specs);
    unsetenv("MAKE");
    return rc;
}

/* `tune --target NAME SPEC...` generates and compiles the candidates through
 * mk/kernels.mk ($MAKE), then times them as with --manifest; its defaults
 * and the target spec it adds are what make is given. */
Test(cli, tune_target_compiles_then_times)
{
    char dir[128], out[128], work[128], path[192];
    snprintf(dir, sizeof dir, "%s/tgpu", tmp);
    snprintf(out, sizeof out, "%s/h200-tuned.yaml", tmp);
    snprintf(work, sizeof work, "%s/work", tmp);
    char *log;
    const int rc = run_tune_target(dir, work, out, "specs/models/deepseek-v2-lite.yaml", &log);
    cr_assert_eq(rc, 0, "%s", log);
    cr_expect_not_null(strstr(log, "generating and compiling the candidates for h200"), "%s", log);
    cr_expect_not_null(strstr(log, "timing 2 mla_decode configurations"), "%s", log);
    free(log);
    snprintf(path, sizeof path, "%s/make-args", dir);
    char *args = slurp(path);
    cr_expect_not_null(strstr(args, "\n-f\nmk/kernels.mk\n"), "%s", args);
    cr_expect_not_null(strstr(args, "\nSPECS=specs/models/deepseek-v2-lite.yaml "
                                     "specs/targets/h200.yaml\n"), "%s", args);
    cr_expect_not_null(strstr(args, "\nLIST_OPTS=--candidates --target h200 --filter "
                                     "'mla_*_b16_*'\n"), "%s", args);
    free(args);
    char *spec = slurp(out);
    cr_expect_not_null(strstr(spec, "    - family: " MLA_FAMILY "\n      threads: 256\n"
                                    "      heads_per_block: 16\n      stages: 4\n"),
                       "%s", spec);
    free(spec);
}

/* The fused MLA block is planned for whole pages only (its block table holds
 * max_context / page entries a request): a partial last page is refused, and
 * explain says why, as the MLA core's planner does. */
Test(cli, mla_block_refuses_a_partial_last_page)
{
    char *text = slurp("specs/models/deepseek-v3-tp8.yaml"), *out, path[128];
    char *p = strstr(text, "max_context: 16384");
    cr_assert_not_null(p, "the shipped spec changed");
    memcpy(p + strlen("max_context: "), "16010", 5);
    snprintf(path, sizeof path, "%s/v3-odd-pages.yaml", tmp);
    write_file(path, text);
    free(text);
    cr_assert_eq(run(&out, "explain --filter 'mla_block*' %s specs/targets/h200.yaml", path), 0, "%s",
                 out);
    cr_expect_not_null(strstr(out, "the fused MLA block takes a paged cache of whole pages"), "%s", out);
    cr_expect_null(strstr(out, "mla_block_sm90a"), "%s", out);
    free(out);
    cr_assert_eq(run(&out, "explain --filter 'mla_block*' specs/models/deepseek-v3-tp8.yaml "
                           "specs/targets/h200.yaml"), 0, "%s", out);
    cr_expect_not_null(strstr(out, "mla_block_sm90a_bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b1\n"),
                       "%s", out);
    free(out);
}

/* The sm_90a form is left out where a split of its attention would be
 * long (V2's 128 heads at B_max 16: 8 head groups x 16 requests for 132
 * SMs, one split of 16K keys each), and explain says so; V3 at TP = 8 (one
 * group) keeps its B_max 16. */
Test(cli, mla_block_leaves_long_splits_to_the_core)
{
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'mla_block*' specs/models/deepseek-v2.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "mla_block_sm90a_bf16_h5120_nh128_q1536_kv512_r64_s16384_p64_b1\n"), "%s", out);
    cr_expect_null(strstr(out, "mla_block_sm90a_bf16_h5120_nh128_q1536_kv512_r64_s16384_p64_b16\n"), "%s", out);
    cr_expect_not_null(strstr(out, "deepseek-v2 on h200: the fused MLA block: not at B_max 16 (a split of the "
                                   "attention would hold 16384 keys of one head group, more than 4096"),
                       "%s", out);
    free(out);
    cr_assert_eq(run(&out, "explain --filter 'mla_block*' specs/models/deepseek-v3-tp8.yaml "
                           "specs/targets/h200.yaml"), 0, "%s", out);
    cr_expect_not_null(strstr(out, "mla_block_sm90a_bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b16\n"), "%s", out);
    cr_expect_null(strstr(out, "the fused MLA block:"), "%s", out);
    free(out);
}

/* The fused MLA block's portable form (templates/mla_block_portable.in) on
 * the targets without clusters, DeepSeek-V2-Lite's B_max 1 and 16: the 11
 * key params, then the MLA core's 16-head portable shape (threads, tile,
 * stages, parts) and its shared memory + 4096; one cooperative workgroup a
 * CU (SM) of exactly THREADS threads (no producer warp); named _portable so
 * that h200-portable's do not collide with h200's. */
Test(cli, mla_block_portable_plans)
{
    static const char *const keys = "params: HIDDEN=2048 HEADS=16 Q_LORA=0 KV_LORA=512 ROPE_DIM=64 "
                                    "NOPE=128 V_DIM=128 W_O_LD=2048 MAX_CONTEXT=16384 PAGE_SIZE=64 BMAX=";
    const struct {
        const char *target, *arch, *shape, *launch, *scope, *units;
    } cases[] = {
        {"specs/targets/mi300x.yaml", "gfx942", "THREADS=256 SMEM_BYTES=47568 TILE=32 STAGES=1 PARTS=2\n",
         "launch: grid=(304,1,1) block=(256,1,1) cluster=(1,1,1) dynamic_smem=47568 cooperative\n",
         "with agent-scope release/acquire (MI300X's XCD L2 caches are not coherent",
         "(MFMA 16x16x16, K in the free order): units of 16 weight rows a workgroup, its 4 waves"},
        {"specs/targets/mi250.yaml", "gfx90a", "THREADS=256 SMEM_BYTES=47568 TILE=32 STAGES=1 PARTS=2\n",
         "launch: grid=(110,1,1) block=(256,1,1) cluster=(1,1,1) dynamic_smem=47568 cooperative\n",
         "with agent-scope release/acquire",
         "(MFMA 16x16x16, K in the free order): units of 16 weight rows a workgroup, its 4 waves"},
        {"tests/gpu/portable/h200-portable.yaml", "sm90a",
         "THREADS=256 SMEM_BYTES=117456 TILE=32 STAGES=2 PARTS=8\n",
         "launch: grid=(132,1,1) block=(256,1,1) cluster=(1,1,1) dynamic_smem=117456 cooperative\n",
         "with device-scope release/acquire",
         "(mma.sync m16n8k16, K in the free order): units of 16 weight rows a workgroup, its 8 warps"},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out, want[256];
        cr_assert_eq(run(&out, "explain --filter 'mla_block*' specs/models/deepseek-v2-lite.yaml %s",
                         cases[i].target),
                     0, "%s", out);
        for (unsigned b = 1; b <= 16; b += 15) {
            snprintf(want, sizeof want, "mla_block_%s_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b%u_portable\n",
                     cases[i].arch, b);
            const char *at = strstr(out, want);
            cr_assert_not_null(at, "%s: %s", want, out);
            snprintf(want, sizeof want, "%s%u %s", keys, b, cases[i].shape);
            cr_expect_not_null(strstr(at, want), "%s: %s", want, at);
            cr_expect_not_null(strstr(at, cases[i].launch), "%s", at);
        }
        cr_expect_not_null(strstr(out, "has no thread-block clusters (max_cluster_size 0), so no bulk "
                                       "copies, no mbarrier ring and no producer warp"),
                           "%s", out);
        cr_expect_not_null(strstr(out, "x 256 threads"), "%s", out);
        cr_expect_not_null(strstr(out, "5 grid barriers between its phases"), "%s", out);
        cr_expect_not_null(strstr(out, cases[i].scope), "%s", out);
        cr_expect_not_null(strstr(out, cases[i].units), "%s", out);
        cr_expect_not_null(strstr(out, "W_uk's absorption into q on the vector units: items of (head, "
                                       "128 output columns), 64 of them"),
                           "%s", out);
        cr_expect_not_null(strstr(out, "attention: the MLA core's portable loop at 16 heads a group"),
                           "%s", out);
        cr_expect_not_null(strstr(out, "weights read once a step: 27.5 MB"), "%s", out);
        cr_expect_null(strstr(out, "the fused MLA block:"), "no skip line: %s", out);
        free(out);
    }
    /* q_lora: one grid barrier more; the requests as n-tiles of 16 on AMD */
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'mla_block*b16*' specs/models/deepseek-v3-tp8.yaml "
                           "specs/targets/mi300x.yaml"),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "mla_block_gfx942_bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b16_portable\n"),
                       "%s", out);
    cr_expect_not_null(strstr(out, "6 grid barriers between its phases (projections, q_lora's second"),
                       "%s", out);
    cr_expect_not_null(strstr(out, "the requests as N (1 n-tile of 16 for B_max 16)"), "%s", out);
    free(out);

    /* the manifest: the family and op fg_mla_block_bind looks up, the
     * template, the RoPE texts, the sm_90a form's workspace (items = max(grid,
     * B_max x groups): 304 at B_max 1), one counter */
    cr_assert_eq(run(&out, "generate --out %s --filter 'mla_block*b1_*' specs/models/deepseek-v2-lite.yaml "
                           "specs/targets/mi300x.yaml", tmp),
                 0, "%s", out);
    free(out);
    char path[128];
    snprintf(path, sizeof path, "%s/manifest.json", tmp);
    char *man = slurp(path);
    cr_expect_not_null(strstr(man, "\"family\": \"mla_block\",\n      \"op\": \"mla_block\""), "%s", man);
    cr_expect_not_null(strstr(man, "\"template\": \"mla_block_portable.in\""), "%s", man);
    cr_expect_not_null(strstr(man, "\"inv_freq\": \"1.000000000e+00f, 7.498942018e-01f"), "%s", man);
    cr_expect_not_null(strstr(man, "\"cs_scale\": \"1.000000000e+00f\""), "%s", man);
    cr_expect_not_null(strstr(man, "\"workspace_bytes\": 10091008,\n      \"counters\": 1,"), "%s", man);
    free(man);
}

/* The sm_90a targets with clusters keep the sm_90a form (mla_block.in: a
 * producer warp besides the 256 threads, the ring's slots), and h200 and
 * h200-portable planned together name their blocks apart.  V2-Lite's
 * absorbing blocks take no rows of the projections (ABSORB_APART: a head's
 * W_uk outweighs half a block's share of them); V3's at TP = 8 do. */
Test(cli, mla_block_cluster_targets_keep_the_sm90a_form)
{
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'mla_block*b1*' specs/models/deepseek-v2-lite.yaml "
                           "specs/targets/h200.yaml tests/gpu/portable/h200-portable.yaml"),
                 0, "%s", out);
    const char *at = strstr(out, "mla_block_sm90a_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1\n");
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "THREADS=256 SMEM_BYTES=224000 SLOTS=5 SLOT_BYTES=37376 PIECE_ROWS=16 "
                                  "CHUNK_ROWS=32 MMA_PROJ=0 FOLD_WO=0 HEAD_WAITS=1 UV_PARTS=8 ABSORB_APART=16 ROW_GROUP=4\n"
                                  "  launch: grid=(132,1,1) block=(288,1,1) "
                                  "cluster=(1,1,1) dynamic_smem=224000 cooperative\n"),
                       "%s", at);
    cr_expect_not_null(strstr(at, "target: h200 (sm_90a"), "%s", at);
    at = strstr(out, "mla_block_sm90a_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1_portable\n");
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "target: h200-portable (sm_90a"), "%s", at);
    free(out);
    /* no portable form where the target has clusters */
    cr_assert_eq(run(&out, "list --out %s " ALL_SPECS, tmp), 0, "%s", out);
    cr_expect_null(strstr(out, "mla_block_sm90a_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1_portable"),
                   "%s", out);
    cr_expect_not_null(strstr(out, "mla_block_sm90a_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1.cu"), "%s",
                       out);
    free(out);
    cr_assert_eq(run(&out, "explain --filter 'mla_block*b1' specs/models/deepseek-v3-tp8.yaml "
                           "specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "HEAD_WAITS=1 UV_PARTS=8 ABSORB_APART=0 ROW_GROUP=4\n"), "%s", out);
    cr_expect_null(strstr(out, "take no rows of the projections"), "%s", out);
    free(out);
}

/* W_o's chunks folded (FOLD_WO) where every block's share of W_o is 16 rows
 * or fewer on the tensor-core form: V2-Lite's 2048 rows on 132 SMs, not
 * V3's 7168, nor V2-Lite's CUDA-core form at B_max 1; the emulation's fold
 * spec on 16 SMs and not on 4. */
Test(cli, mla_block_folds_thin_wo_shares)
{
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'mla_block_sm90a*' specs/models/deepseek-v2-lite.yaml "
                           "specs/targets/h200.yaml"),
                 0, "%s", out);
    const char *at = strstr(out, "mla_block_sm90a_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b16\n");
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "MMA_PROJ=1 FOLD_WO=1 "), "%s", at);
    cr_expect_not_null(strstr(at, "W_o's pieces hold a block's rows twice, 1024 columns"), "%s", at);
    at = strstr(out, "mla_block_sm90a_bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1\n");
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "MMA_PROJ=0 FOLD_WO=0 "), "%s", at);
    free(out);
    cr_assert_eq(run(&out, "explain --filter 'mla_block_sm90a*b16' specs/models/deepseek-v3-tp8.yaml "
                           "specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "MMA_PROJ=1 FOLD_WO=0 "), "%s", out);
    cr_expect_null(strstr(out, "W_o's pieces hold"), "%s", out);
    free(out);
    /* the emulation's fold spec: hidden 256 is 16 rows a block on 16 SMs, 64 on 4 */
    cr_assert_eq(run(&out, "explain tests/emu/specs/emu-fold-mla-bf16.yaml tests/emu/specs/emu-sm90a-16sm.yaml"),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "MMA_PROJ=1 FOLD_WO=1 "), "%s", out);
    free(out);
    cr_assert_eq(run(&out, "explain tests/emu/specs/emu-fold-mla-bf16.yaml tests/emu/specs/emu-sm90a-4sm.yaml"),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "MMA_PROJ=1 FOLD_WO=0 "), "%s", out);
    free(out);
}

/* The entry of the instance `name` in a generated fg_registry.c, up to the
 * next entry's name (a copy, for checks of its fields), or NULL. */
static char *registry_entry(const char *reg, const char *name)
{
    char key[192];
    snprintf(key, sizeof key, ".name = \"%s\"", name);
    const char *at = strstr(reg, key);
    if (!at)
        return NULL;
    const char *end = strstr(at + 1, ".name = ");
    return strndup(at, end ? (size_t)(end - at) : strlen(at));
}
/* The fg_registry.c that `generate --filter FILTER MODEL` writes for the
 * H100 and the H200 into tmp/DIR. */
static char *h100_h200_registry(const char *dir, const char *filter, const char *model)
{
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/%s --filter '%s' %s specs/targets/h100.yaml specs/targets/h200.yaml",
                     tmp, dir, filter, model),
                 0, "%s", out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/%s/fg_registry.c", tmp, dir);
    return slurp(path);
}
/* A registry of a build for the H100 and the H200 holds the H100's form
 * (h100_form) at priority -1, for the H100 alone, and the H200's (h200_form)
 * at 0, for the H200 alone, each with its target's figures (SMs, L2 bytes):
 * the runtime takes each device's own, and the H200's on a device of
 * neither. */
static void expect_forms_by_target(const char *reg, const char *h100_form, const char *h200_form)
{
    char *h100 = registry_entry(reg, h100_form), *h200 = registry_entry(reg, h200_form);
    cr_assert(h100 && h200, "%s", reg);
    cr_expect_not_null(strstr(h100, ".priority = -1,"), "%s", h100);
    cr_expect_null(strstr(h200, ".priority = "), "%s", h200);
    cr_expect_not_null(strstr(h100, ".targets = {{\"h100\", 132, 52428800}},\n        .ntargets = 1,"), "%s", h100);
    cr_expect_not_null(strstr(h200, ".targets = {{\"h200\", 132, 62914560}},\n        .ntargets = 1,"), "%s", h200);
    free(h100);
    free(h200);
}

/* The MLA block's attention tiles land 4 rows a copy where an SM's share
 * of the target's read ceiling is more than a copy a row streams (the
 * H200's 33.7 GB/s), or from 8 head groups (V2's 128 heads) on any target;
 * a copy a row on the H100 (23.6 GB/s) below 8 head groups, and with pages
 * smaller than a tile. */
Test(cli, mla_block_row_groups_by_target)
{
    char *out;
    const struct {
        const char *model, *target;
        unsigned want;
    } cases[] = {
        {"specs/models/deepseek-v3-tp8.yaml", "specs/targets/h200.yaml", 4},
        {"specs/models/deepseek-v3-tp8.yaml", "specs/targets/h100.yaml", 1},
        {"specs/models/deepseek-v2.yaml", "specs/targets/h100.yaml", 4},
        {"tests/gpu/specs/deepseek-mla-p1-bf16.yaml", "specs/targets/h200.yaml", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(run(&out, "explain --filter 'mla_block_sm90a*' %s %s", cases[i].model, cases[i].target),
                     0, "%s", out);
        char want[32], other[32];   /* (every instance of the model alike) */
        snprintf(want, sizeof want, " ROW_GROUP=%u\n", cases[i].want);
        snprintf(other, sizeof other, " ROW_GROUP=%u\n", cases[i].want > 1 ? 1 : 4);
        cr_expect_not_null(strstr(out, want), "%s on %s: %s", cases[i].model, cases[i].target, out);
        cr_expect_null(strstr(out, other), "%s on %s: %s", cases[i].model, cases[i].target, out);
        cr_expect_not_null(strstr(out, cases[i].want > 1 ? "the attention's tiles land 4 rows a copy: "
                                                         : "the attention's tiles land a copy a row: "),
                           "%s on %s: %s", cases[i].model, cases[i].target, out);
        free(out);
    }
    /* the H100's copies a row named apart from the H200's groups (the same
     * SMs); a build for both runs each target's own, the groups on a device
     * of neither */
    cr_assert_eq(run(&out, "explain --filter 'mla_block_sm90a*b16*' specs/models/deepseek-v3-tp8.yaml "
                           "specs/targets/h100.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    const char *rc = strstr(out, "mla_block_sm90a_bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b16_rc\n");
    const char *groups = strstr(out, "mla_block_sm90a_bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b16\n");
    cr_assert(rc && groups, "%s", out);
    cr_expect_not_null(strstr(rc, " ROW_GROUP=1\n"), "%s", rc);
    cr_expect_not_null(strstr(rc, "the runtime takes each target's own"), "%s", rc);
    cr_expect_not_null(strstr(groups, " ROW_GROUP=4\n"), "%s", groups);
    free(out);
    /* ... in the registry: the copies a row at priority -1 (a device of
     * neither target), the groups at 0, each with its target's figures */
    char *reg = h100_h200_registry("rowgroups", "mla_block_sm90a*b16*", "specs/models/deepseek-v3-tp8.yaml");
    expect_forms_by_target(reg, "mla_block_sm90a_bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b16_rc",
                           "mla_block_sm90a_bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b16");
    free(reg);
}

/* The MLA core's mma form from B_max 16: the H200's tiles in groups of 4
 * rows a copy, the H100's as TMA boxes, named apart ("_tb") and ranked
 * below the groups on a device of neither target; below B_max 16 a copy a
 * row on both, one instance for the two targets. */
Test(cli, mla_core_tile_copies_by_target)
{
    char *reg = h100_h200_registry("coretiles", "mla_decode_sm90a*", "specs/models/deepseek-v2-lite.yaml");
    expect_forms_by_target(reg, "mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b16_tb_g16_s8",
                           "mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b16_g16_s8");
    char *b1 = registry_entry(reg, "mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b1_g16_s132");
    cr_assert_not_null(b1, "%s", reg);
    cr_expect_not_null(strstr(b1, ".ntargets = 2,"), "B_max 1 for both: %s", b1);
    cr_expect_null(strstr(reg, "_b1_tb_"), "a copy a row below B_max 16 on both: %s", reg);
    free(b1);
    free(reg);
    /* the sources: the boxes' and the groups' template constants */
    char path[256];
    snprintf(path, sizeof path, "%s/coretiles/mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b16_tb_g16_s8.cu", tmp);
    char *src = slurp(path);
    cr_expect_not_null(strstr(src, "constexpr bool kTmaTiles = 1;"), "the H100's boxes");
    cr_expect_not_null(strstr(src, "constexpr int kRowGroup = 1;"), "the H100's boxes");
    free(src);
    snprintf(path, sizeof path, "%s/coretiles/mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b16_g16_s8.cu", tmp);
    src = slurp(path);
    cr_expect_not_null(strstr(src, "constexpr bool kTmaTiles = 0;"), "the H200's groups");
    cr_expect_not_null(strstr(src, "constexpr int kRowGroup = 4;"), "the H200's groups");
    free(src);
}

/* Where the MLA core's portable loop does not fit a target without
 * clusters, the block is skipped and explain says so (its reason the
 * core's); where the loop fits but not the block's (the largest of the
 * loop's and its other phases' shared memory, and 4096 bytes more), the
 * plan is refused with the figures. */
Test(cli, mla_block_portable_skipped_where_the_loop_does_not_fit)
{
    char *mi = slurp("specs/targets/mi300x.yaml");
    const struct {
        const char *lds;
        int rc;
        const char *want;
    } cases[] = {
        {"24576", 0,
         "deepseek-v2-lite on small-lds: the fused MLA block: the fused MLA block's portable form "
         "(small-lds has no clusters: max_cluster_size 0) runs the MLA core's portable loop at 16 "
         "heads a workgroup, which does not fit: a row of 576: 16 keys and 16 heads need 24784 bytes "
         "of shared memory; small-lds allows 24576\n"},
        {"26000", 1,
         "mla_block: the portable form needs 28880 bytes of shared memory at B_max 1 (the MLA core "
         "loop's 24784 at 16 heads, tiles of 16 keys in 1 stage, or its other phases' 12288, and "
         "4096 of its own); small-lds allows 26000"},
        /* the loop fits, but at B_max 16 the absorption's every request's
         * q_nope and sums do not */
        {"32768", 1,
         "mla_block: the portable form needs 45056 bytes of shared memory at B_max 16 (the MLA core "
         "loop's 24784 at 16 heads, tiles of 16 keys in 1 stage, or its other phases' 40960, and "
         "4096 of its own); small-lds allows 32768"},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char block[64], cu[64], path[128], *out;
        snprintf(block, sizeof block, "shared_mem_per_block: %s", cases[i].lds);
        snprintf(cu, sizeof cu, "shared_mem_per_cu: %s", cases[i].lds);
        char *a = replaced(mi, "shared_mem_per_block: 65536", block);
        char *b = replaced(a, "shared_mem_per_cu: 65536", cu);
        char *text = replaced(b, "name: mi300x", "name: small-lds");
        snprintf(path, sizeof path, "%s/small-lds-%u.yaml", tmp, i);
        write_file(path, text);
        free(text);
        free(b);
        free(a);
        const int rc = run(&out, "explain --filter 'mla_block*' specs/models/deepseek-v2-lite.yaml %s", path);
        cr_expect_eq(rc != 0, cases[i].rc, "exit %d: %s", rc, out);
        cr_expect_not_null(strstr(out, cases[i].want), "%s", out);
        cr_expect_null(strstr(out, "mla_block_gfx942"), "%s", out);
        free(out);
    }
    free(mi);
}

/* tune --target adds the shipped target spec only when no spec given is that
 * target's, which it tells by the name inside the spec, not by the file's:
 * h200's spec under another name is not added twice, and a file named
 * h200.yaml that holds another target does not stand in for h200's. */
Test(cli, tune_target_knows_its_spec_by_name)
{
    const struct { const char *file, *copy_of; bool shipped_added; } cases[] = {
        {"renamed-target.yaml", "specs/targets/h200.yaml", false},
        {"h200.yaml", "specs/targets/h100.yaml", true},
    };
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char dir[128], out[160], work[160], path[192], given[256], specs[320];
        snprintf(dir, sizeof dir, "%s/tname%u", tmp, c);
        snprintf(out, sizeof out, "%s/tuned.yaml", dir);
        snprintf(work, sizeof work, "%s/work", dir);
        snprintf(path, sizeof path, "%s/tname%u-specs", tmp, c);   /* the spec under its file name */
        cr_assert_eq(mkdir(path, 0755), 0);
        snprintf(given, sizeof given, "%s/%s", path, cases[c].file);
        char *text = slurp(cases[c].copy_of);
        write_file(given, text);
        free(text);
        snprintf(specs, sizeof specs, "specs/models/deepseek-v2-lite.yaml %s", given);
        char *log;
        const int rc = run_tune_target(dir, work, out, specs, &log);
        cr_expect_eq(rc, 0, "%s", log);
        free(log);
        snprintf(path, sizeof path, "%s/make-args", dir);
        char *args = slurp(path), want[512];
        snprintf(want, sizeof want, "\nSPECS=specs/models/deepseek-v2-lite.yaml %s%s\n", given,
                 cases[c].shipped_added ? " specs/targets/h200.yaml" : "");
        cr_expect_not_null(strstr(args, want), "%s: want %s in %s", cases[c].file, want, args);
        free(args);
    }
}

/* The forms do not mix, and what passes through Make is checked first: each
 * a usage error (2) that makes nothing. */
Test(cli, tune_target_refuses_what_it_cannot_pass_on)
{
    const struct { const char *args, *why; } bad[] = {
        {"--target h200 --manifest m.json specs/models/llama-2-7b.yaml",
         "give it or --manifest, not both"},
        {"--target h200 --kernels k specs/models/llama-2-7b.yaml", "--kernels is --manifest's"},
        {"--target h200", "--target needs the SPEC..."},
        {"--target 'h*' specs/models/llama-2-7b.yaml", "--target: expected a target name"},
        {"--target h200 --filter 'a b' specs/models/llama-2-7b.yaml",
         "--filter: a glob of letters, digits and ._-*?[] only ('a b')"},
        {"--target h200 'specs/models/llama 2.yaml'", "spec paths pass through Make"},
        {"--target h200 --work 'w w' specs/models/llama-2-7b.yaml", "--work passes through Make"},
        {"--filter 'x*' --manifest m.json --out o.yaml", "--filter selects what --target compiles"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out;
        cr_expect_eq(run(&out, "tune --work %s/w %s", tmp, bad[i].args), 2, "%s", bad[i].args);
        cr_expect_not_null(strstr(out, bad[i].why), "%s: %s", bad[i].args, out);
        free(out);
    }
    char path[160];
    snprintf(path, sizeof path, "%s/w", tmp);
    struct stat st;
    cr_expect_neq(stat(path, &st), 0, "nothing made");
}

/* GEMM-overlap specs give the plan table: a registry row and a manifest entry
 * per shape on every target with an interconnect profile, the cost model's
 * choice in each, kept whatever --filter selects among the kernels. */
Test(cli, overlap_plan_table)
{
    cr_assert_eq(run(NULL, "generate --out %s/o --filter 'rmsnorm_*' specs/gemm/llama-2-70b-tp2.yaml "
                           "specs/targets/h200.yaml specs/targets/h100.yaml "
                           "specs/models/llama-2-7b.yaml", tmp),
                 0);
    char path[160];
    snprintf(path, sizeof path, "%s/o/fg_registry.c", tmp);
    char *reg = slurp(path);
    cr_expect_not_null(strstr(reg, "{.gemm = \"llama-2-70b-tp2\", .shape = \"qkv-m4096\", "
                                   ".target = \"h200\", .collective = FG_REG_AG_GEMM,\n"
                                   "     .m = 4096, .n = 5120, .k = 8192, .world = 2, "
                                   ".dtype = FG_REG_BF16,\n     .schedule = FG_REG_"),
                       "%s", reg);
    cr_expect_null(strstr(reg, ".target = \"h100\""), "h100 has no interconnect profile");
    snprintf(path, sizeof path, "%s/o/manifest.json", tmp);
    char *man = slurp(path);
    const char *rows = strstr(man, "\"overlap_plans\"");
    cr_assert_not_null(rows, "%s", man);
    unsigned n = 0;
    for (const char *p = rows; (p = strstr(p, "\"schedule\": ")); p++)
        n++;
    snprintf(path, sizeof path, "const size_t fg_overlap_plans_count = %u;", n);
    cr_expect_not_null(strstr(reg, path), "%u manifest rows: %s", n, reg);
    cr_expect_geq(n, 8u);
    free(reg);
    free(man);
}

Test(cli, golden_generated_text)
{
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/g --filter rmsnorm_sm90a_f16_h4096_t256c "
                           "specs/models/llama-2-7b.yaml specs/targets/h200.yaml", tmp),
                 0, "%s", out);
    free(out);
    const char *files[] = {"rmsnorm_sm90a_f16_h4096_t256c.cu", "fg_registry.c", "manifest.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char got_path[256], want_path[256];
        snprintf(got_path, sizeof got_path, "%s/g/%s", tmp, files[i]);
        snprintf(want_path, sizeof want_path, "tests/golden/%s", files[i]);
        char *got = slurp(got_path), *want = slurp(want_path);
        cr_expect_str_eq(got, want, "%s differs from %s (make update-golden if intended)",
                         got_path, want_path);
        free(got);
        free(want);
    }
}

/* CUDA kernels carry the shared sm_90 helpers after the prelude; HIP
 * kernels do not (their PTX would not build for AMDGPU). */
Test(cli, sm90_helpers_in_cuda_kernels_only)
{
    cr_assert_eq(run(NULL, "generate --out %s/h --filter 'rmsnorm_*_h4096_*' "
                           "specs/models/llama-2-7b.yaml specs/targets/h200.yaml "
                           "specs/targets/mi300x.yaml", tmp),
                 0);
    char path[200];
    snprintf(path, sizeof path, "%s/h/rmsnorm_sm90a_f16_h4096_t256c.cu", tmp);
    char *cu = slurp(path);
    const char *prelude = strstr(cu, "#line 1 \"templates/prelude.cu.in\"");
    const char *sm90 = strstr(cu, "#line 1 \"templates/sm90.cu.in\"");
    cr_expect(prelude && sm90 && prelude < sm90, "the sm_90 helpers follow the prelude: %s", cu);
    free(cu);
    snprintf(path, sizeof path, "%s/h/rmsnorm_gfx942_f16_h4096_t256c.hip", tmp);
    char *hip = slurp(path);
    cr_expect_null(strstr(hip, "sm90.cu.in"), "%s", hip);
    cr_expect_null(strstr(hip, "mbar_init"), "%s", hip);
    free(hip);
}

/* Manifest parameter names are the template keys in lower case: letters,
 * digits and underscores only (an engine's scripts look them up by name). */
Test(cli, manifest_param_names_are_lower_snake_case)
{
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/p --filter 'decode_attn*b1_c2x2_t512_norm' "
                           "specs/models/llama-2-7b.yaml specs/targets/h200.yaml", tmp),
                 0, "%s", out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/p/manifest.json", tmp);
    char *m = slurp(path);
    cr_assert(strstr(m, "\"head_dim\": 128"), "%s", m);
    cr_assert(strstr(m, "\"clusters_per_head\": 2"), "%s", m);
    /* text values too (the GPU test rebuilds the reference from them) */
    cr_assert(strstr(m, "\"inv_freq\": \"1.000000000e+00f, "), "%s", m);
    const char *p = strstr(m, "\"params\"");
    cr_assert(p);
    for (; *p && *p != '}'; p++)
        cr_assert(*p == '\n' || (*p >= 0x20 && *p < 0x7f), "byte 0x%02x in the params", *p);
    free(m);
}

/* Models of equal shapes whose code differs (RoPE base, RoPE layout) get
 * instances of different names: one name never stands for two codes. */
Test(cli, decode_names_carry_what_changes_the_code)
{
    char *base = slurp("specs/models/llama-2-7b.yaml");
    const struct {
        const char *from, *to, *name_part;
    } variants[] = {
        {"theta: 10000", "theta: 1000000", "_rt1000000_"},
        {"layout: neox", "layout: gptj", "_gptj_"},
        {"layout: contiguous", "layout: paged\n    page_size: 16", "_p16_"},
        /* llama3 scaling: the bands and the original context change the table */
        {"layout: neox", "layout: neox\n    scaling:\n      type: llama3\n      factor: 8\n"
                         "      low_freq_factor: 1\n      high_freq_factor: 2\n"
                         "      original_max_position: 2048",
         "_rsllama38l1h2o2048_"},
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        /* the same spec under another name, with one property changed */
        char *at = strstr(base, variants[v].from), *name = strstr(base, "name: llama-2-7b\n");
        cr_assert(at && name && name < at, "%s not after the name in llama-2-7b.yaml",
                  variants[v].from);
        const char *after_name = name + strlen("name: llama-2-7b");
        char path[128];
        snprintf(path, sizeof path, "%s/variant%zu.yaml", tmp, v);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fprintf(f, "%.*sname: variant%zu%.*s%s%s", (int)(name - base), base, v,
                (int)(at - after_name), after_name, variants[v].to, at + strlen(variants[v].from));
        fclose(f);
        char *out;
        cr_assert_eq(run(&out, "list --target h200 --filter 'decode_attn*' "
                               "specs/models/llama-2-7b.yaml %s specs/targets/h200.yaml",
                         path),
                     0, "%s", out);
        cr_assert(strstr(out, variants[v].name_part), "%s", out);
        cr_assert(strstr(out, "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2_t512_ring_norm"),
                  "%s", out);
        free(out);
    }
    free(base);
}

/* Qwen2-7B: q/k/v biases, seven query heads per KV head, a 16-token paged
 * cache, and hidden 3584 (7 x 512): the group attends on tensor cores, so
 * the ring takes 256 threads (168 registers each: 9 warps are charged as
 * 12), whose rows tile with stages of 4 rows (32 KB), 2 warps a row. */
Test(cli, decode_qwen2_plans_on_the_ring_at_256_threads)
{
    char *out;
    cr_assert_eq(run(&out, "explain --target h200 specs/models/qwen2-7b.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "decode_attn_sm90a_bf16_h3584_nh28_kv4_hd128_s32768_rt1000000_p16_bias_b1_"
                          "c2x2_t256_ring_norm\n"),
              "%s", out);
    cr_assert(strstr(out, "__launch_bounds__(288, 1): one CTA per SM, at most 168 per thread"), "%s",
              out);
    cr_assert(strstr(out, "STAGE_BYTES=32768 STAGES=5 INFLIGHT=5 INFLIGHT3=5 ROWS1=4 SHARE_KV=1"),
              "%s", out);
    /* batch 16: the grid form, the group's 7 query heads an attention item on
     * tensor cores, merged in a phase of their own (5 barriers) */
    cr_assert(strstr(out, "decode_attn_sm90a_bf16_h3584_nh28_kv4_hd128_s32768_rt1000000_p16_bias_b16_"
                          "grid_t512_norm\n"),
              "%s", out);
    cr_assert(strstr(out, "attention: items of (request, KV head, its 7 query heads, "), "%s", out);
    cr_assert(strstr(out, "(132 CTAs, 2112 warps), 5 grid barriers"), "%s", out);
    cr_assert(strstr(out, "HEADS_PER_ITEM=7 ATT_MMA=1"), "%s", out);
    cr_assert_null(strstr(out, "_t448_norm"), "no register form: %s", out);
    free(out);
    /* merged after a grid barrier: the binding owns the barrier's count and
     * the items' counter, no tickets */
    char gen[160], path[200];
    snprintf(gen, sizeof gen, "%s/qwen2-b16", tmp);
    cr_assert_eq(run(&out, "generate --out %s --filter '*_b16_grid_t512_norm' "
                           "specs/models/qwen2-7b.yaml specs/targets/h200.yaml", gen),
                 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/manifest.json", gen);
    char *man = slurp(path);
    cr_expect_not_null(strstr(man, "\"counters\": 2,"), "%s", man);
    free(man);
}

/* Paged caches: the ring form only (no register-form instance), at any page
 * size (1: a copy per token). */
Test(cli, decode_paged_plan_and_skips)
{
    char *base = slurp("specs/models/llama-2-7b.yaml");
    const char *from = "layout: contiguous";
    char *at = strstr(base, from);
    cr_assert(at);
    const unsigned pages[] = {16, 1};
    for (size_t v = 0; v < 2; v++) {
        char path[128];
        snprintf(path, sizeof path, "%s/paged%u.yaml", tmp, pages[v]);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fprintf(f, "%.*slayout: paged\n    page_size: %u%s", (int)(at - base), base, pages[v],
                at + strlen(from));
        fclose(f);
        char *out;
        cr_assert_eq(run(&out, "explain --target h200 %s specs/targets/h200.yaml", path), 0, "%s",
                     out);
        if (pages[v] == 16) {
            cr_assert(strstr(out, "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_p16_b1_c2x2_t512_"
                                  "ring_norm\n"),
                      "%s", out);
            cr_assert(strstr(out, "KV cache: pages of 16 tokens (K and V pools [pages, 32, 16, "
                                  "128], block table [batch, 256] int32)"),
                      "%s", out);
            cr_assert_null(strstr(out, "_p16_b1_c2x2_t512_norm\n"), "%s", out);
        } else {
            cr_assert(strstr(out, "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_p1_b4_c2x2_t512_"
                                  "ring_norm\n"),
                      "%s", out);
            cr_assert(strstr(out, "block table [batch, 4096] int32"), "%s", out);
        }
        free(out);
    }
    free(base);
}

/* The ring form's measured plan: 8 stages of 16 KB at every batch (the
 * tuning candidates' winner), one CTA per SM, and the ring preferred over
 * the register split by priority. */
Test(cli, decode_ring_plan_follows_the_measurements)
{
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/r --target h200 --filter 'decode_attn*c2x2_t512*' "
                           "tests/gpu/specs/llama-2-7b-16k-f16.yaml specs/targets/h200.yaml",
                     tmp),
                 0, "%s", out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/r/manifest.json", tmp);
    char *m = slurp(path);
    const struct {
        const char *instance, *want[3];
    } cases[] = {
        {"b1_c2x2_t512_ring_norm", {"\"stage_bytes\": 16384", "\"stages\": 8",
                                    "__launch_bounds__(544, 1)"}},
        {"b2_c2x2_t512_ring_norm", {"\"stage_bytes\": 16384", "\"stages\": 8",
                                    "\"priority\": 3"}},
        {"b4_c2x2_t512_ring_norm", {"\"stage_bytes\": 16384", "\"stages\": 8",
                                    "\"priority\": 3"}},
        {"b1_c2x2_t512_norm", {"\"unroll3\": 4", "\"loads1\": 8", "\"priority\": 2"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[160];
        snprintf(name, sizeof name,
                 "\"name\": \"decode_attn_sm90a_f16_h4096_nh32_hd128_s16384_%s\"",
                 cases[i].instance);
        const char *at = strstr(m, name);
        cr_assert(at, "%s not generated", cases[i].instance);
        const char *end = strstr(at + 1, "\"name\": \"decode_attn");
        for (int k = 0; k < 3; k++) {
            if (cases[i].want[k][0] == '_') {   /* the launch attribute: in the source */
                snprintf(path, sizeof path,
                         "%s/r/decode_attn_sm90a_f16_h4096_nh32_hd128_s16384_%s.cu", tmp,
                         cases[i].instance);
                char *src = slurp(path);
                cr_assert(strstr(src, cases[i].want[k]), "%s: %s", cases[i].instance,
                          cases[i].want[k]);
                free(src);
                continue;
            }
            const char *hit = strstr(at, cases[i].want[k]);
            cr_assert(hit && (!end || hit < end), "%s: %s", cases[i].instance, cases[i].want[k]);
        }
    }
    free(m);
}

/* Llama-2-13B: pairs of clusters of 2 would need 160 CTAs and clusters of 3
 * cannot all be resident, so the one-cluster-of-2 ring (80 CTAs) outranks the
 * register form (measured), with a deterministic twin. */
Test(cli, decode_13b_prefers_the_single_cluster_ring)
{
    char *out;
    cr_assert_eq(run(&out, "generate --out %s/r13 --target h200 --filter 'decode_attn*h5120*s4096*' "
                           "specs/models/llama-2-13b.yaml specs/targets/h200.yaml",
                     tmp),
                 0, "%s", out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/r13/manifest.json", tmp);
    char *m = slurp(path);
    const struct {
        const char *instance, *priority;
    } cases[] = {
        {"b1_c2_t512_ring_norm\"", "\"priority\": 3"},
        {"b1_c2_t512_ring_norm_det\"", "\"priority\": 1"},
        {"b1_c4_t256_norm\"", "\"priority\": 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[160];
        snprintf(name, sizeof name, "\"name\": \"decode_attn_sm90a_f16_h5120_nh40_hd128_s4096_%s",
                 cases[i].instance);
        const char *at = strstr(m, name);
        cr_assert(at, "%s not generated", cases[i].instance);
        const char *end = strstr(at + 1, "\"name\": \"decode_attn");
        const char *hit = strstr(at, cases[i].priority);
        cr_assert(hit && (!end || hit < end), "%s: %s", cases[i].instance, cases[i].priority);
    }
    cr_assert_null(strstr(m, "_c3_"), "no cluster-of-3 instance");
    free(m);
}

/* The overlap GEMM's portable form: on AMD and on an sm_90a target without
 * clusters (named apart there), its own op (plain pointers: never bound as
 * the wgmma form's overlap_gemm), the tile the target's warp gives; the
 * H200 keeps the wgmma form. */
Test(cli, gemm_portable_form_where_there_are_no_clusters)
{
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'overlap_gemm*n8192_k1024*' "
                           "specs/gemm/llama-2-70b-tp8.yaml specs/targets/h200.yaml "
                           "specs/targets/mi300x.yaml tests/gpu/portable/h200-portable.yaml"),
                 0, "%s", out);
    const char *at = strstr(out, "overlap_gemm_sm90a_bf16_n8192_k1024_portable\n");
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "params: N=8192 K=1024 BM=128 BN=256 BK=64 WN=64 GROUP_M=8 "
                                  "THREADS=256 STAGES=4 LDS_BYTES=196608 MIN_BLOCKS=1 XCDS=1 "
                                  "GRID=132 SPLIT_MAX=4 PIECE_KBLOCKS=2\n  launch: "
                                  "grid=(132,1,1) block=(256,1,1) "
                                  "cluster=(1,1,1) dynamic_smem=196608\n"),
                       "%s", at);
    cr_expect_not_null(strstr(at, "the portable form: h200-portable has no thread-block "
                                  "clusters"), "%s", at);
    cr_expect_not_null(strstr(at, "4 x 8 mma.sync m16n8k16 tiles"), "%s", at);
    cr_expect_not_null(strstr(at, "the last round split over K where its tiles would leave half "
                                  "the grid or more idle (m's tiles mod 132: 1 to 66)"), "%s", at);
    cr_expect_not_null(strstr(at, "workspace (17301504 B: a tile's sums for each block)"), "%s",
                       at);
    at = strstr(out, "overlap_gemm_gfx942_bf16_n8192_k1024\n");
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "BN=128 BK=32 WN=64 GROUP_M=8 THREADS=256 STAGES=2 "
                                  "LDS_BYTES=32768 MIN_BLOCKS=2 XCDS=8 GRID=608 SPLIT_MAX=4 "
                                  "PIECE_KBLOCKS=2\n  launch: "
                                  "grid=(608,1,1) block=(256,1,1) cluster=(1,1,1) "
                                  "dynamic_smem=0\n"), "%s", at);
    at = strstr(out, "overlap_gemm_sm90a_bf16_n8192_k1024\n");
    cr_assert_not_null(at, "%s", out);
    cr_expect_not_null(strstr(at, "block=(384,1,1)"), "%s", at);
    free(out);
    cr_assert_eq(run(&out, "generate --out %s --filter 'overlap_gemm*n8192_k1024*' "
                           "specs/gemm/llama-2-70b-tp8.yaml specs/targets/h200.yaml "
                           "specs/targets/mi300x.yaml tests/gpu/portable/h200-portable.yaml", tmp),
                 0, "%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/fg_registry.c", tmp);
    char *reg = slurp(path);
    cr_assert_not_null(reg);
    const char *e = strstr(reg, ".name = \"overlap_gemm_sm90a_bf16_n8192_k1024_portable\"");
    cr_assert_not_null(e, "%s", reg);
    cr_expect_not_null(strstr(e, ".op = \"overlap_gemm_portable\""), "%s", e);
    /* the split's workspace (a 128 x 256 tile's fp32 sums a block) and counters */
    cr_expect_not_null(strstr(e, ".workspace_bytes = 17301504,\n        .counter_count = 66,"),
                       "%s", e);
    e = strstr(reg, ".name = \"overlap_gemm_gfx942_bf16_n8192_k1024\"");
    cr_assert_not_null(e, "%s", reg);
    cr_expect_not_null(strstr(e, ".op = \"overlap_gemm_portable\""), "%s", e);
    cr_expect_not_null(strstr(e, ".workspace_bytes = 39845888,\n        .counter_count = 304,"),
                       "%s", e);
    e = strstr(reg, ".name = \"overlap_gemm_sm90a_bf16_n8192_k1024\"");
    cr_assert_not_null(e, "%s", reg);
    cr_expect_not_null(strstr(e, ".op = \"overlap_gemm\""), "%s", e);
    free(reg);
}

/* A GEMM spec with reduce-scatter shapes gets the owner's reduction kernel,
 * one per dtype and world size on every target, and one for each node size
 * of the hierarchical plan (TP = 8: nodes of 2 and 4, and so 4 and 2 nodes). */
Test(cli, gemm_specs_get_the_owners_reduction)
{
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'overlap_reduce_*' " ALL_SPECS), 0);
    cr_assert(strstr(out, "overlap_reduce_sm90a_bf16_w2\n"), "%s", out);
    cr_assert(strstr(out, "overlap_reduce_sm90a_bf16_w8\n"), "%s", out);
    cr_assert(strstr(out, "overlap_reduce_gfx942_bf16_w2\n"), "%s", out);
    cr_assert(strstr(out, "overlap_reduce_sm90a_bf16_w4\n"), "%s", out);
    cr_assert(strstr(out, "out = own partial + 7 received, fp32 sums in rank order"), "%s", out);
    cr_assert(strstr(out, "used for: the reduce-scatter shapes of llama-2-70b-tp2"), "%s", out);
    cr_assert(strstr(out, "grid=(2112,1,1) block=(256,1,1)"), "%s", out);
    free(out);
    /* alone, TP = 8 has the node sizes' kernels for the hierarchical plan only
     * (with every spec, the TP = 2 and 4 specs' own reductions are the same kernels) */
    cr_assert_eq(run(&out, "explain --filter 'overlap_reduce_sm90a_*_w4' "
                           "specs/gemm/llama-2-70b-tp8.yaml specs/targets/h200.yaml"),
                 0);
    cr_assert(strstr(out, "the sums of llama-2-70b-tp8's reduce-scatter shapes under the "
                          "hierarchical plan (a node's partials with nodes of 4, the nodes' "
                          "sums with 4 nodes)"), "%s", out);
    free(out);
}

Test(cli, explain_gives_reasons)
{
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'rmsnorm_sm90a_bf16_h7168*' " ALL_SPECS), 0);
    cr_assert(strstr(out, "rmsnorm_sm90a_bf16_h7168_t448c\n"), "%s", out);
    cr_assert(strstr(out, "shared by h100 h200"), "%s", out);
    cr_assert(strstr(out, "448 threads (14 warps of 32) x 2 vectors each"), "%s", out);
    cr_assert(strstr(out, "used for: input RMSNorm of deepseek-v3"), "%s", out);
    /* GEMM shapes: the cost model where the target has an interconnect profile */
    cr_assert(strstr(out, "which the runtime's executor (fgrt_overlap.h) runs"), "%s", out);
    cr_assert(strstr(out, "on h200, predicted by the cost model"), "%s", out);
    cr_assert(strstr(out, "qkv-m4096 (all_gather m4096 n5120 k8192): gemm "), "%s", out);
    cr_assert(strstr(out, " -> shard_overlap"), "%s", out);
    /* TP = 8: each schedule on a copy lane a peer too (two ranks have one peer: none) */
    cr_assert(strstr(out, "on a copy lane a peer (2D, 7 lanes, assumed: the one-peer rate shared; "
                          "predicted, not chosen until timed on more than 2 GPUs): serial_ce "),
              "%s", out);
    cr_assert_null(strstr(out, "(2D, 1 lanes"), "%s", out);
    cr_assert(strstr(out, "on mi300x: schedules not predicted: the target has no interconnect "
                          "profile"),
              "%s", out);
    free(out);
}

Test(cli, explain_decode_plan_and_skips)
{
    char *out;
    cr_assert_eq(run(&out, "explain --target h200 --filter 'decode_attn*b1_c2x2*' "
                           "specs/models/llama-2-7b.yaml specs/models/llama-3-8b.yaml "
                           "specs/models/deepseek-v2-lite.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2_t512_norm\n"),
              "%s", out);
    cr_assert(strstr(out, "launch: grid=(128,1,1) block=(512,1,1) cluster=(2,1,1)"), "%s", out);
    cr_assert(strstr(out, "cooperative"), "%s", out);
    /* the ring form: one producer warp more, the ring in dynamic shared memory */
    cr_assert(strstr(out, "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2_t512_ring_norm\n"),
              "%s", out);
    cr_assert(strstr(out, "launch: grid=(128,1,1) block=(544,1,1) cluster=(2,1,1) "
                          "dynamic_smem=131072 cooperative"),
              "%s", out);
    cr_assert(strstr(out, "preferred: two clusters of 2 per head streamed through a shared-memory "
                          "ring"),
              "%s", out);
    cr_assert(strstr(out, "QKV: rank r computes 96 whole rows of the head's 384"), "%s", out);
    /* GQA: the ring form only; what stays unsupported is said per batch size */
    cr_assert(strstr(out, "decode_attn_sm90a_bf16_h4096_nh32_kv8_hd128_s8192_rt500000_b1_c2x2_t256_"
                          "ring_norm\n"),
              "%s", out);
    /* batch 16 plans (the grid form, outside this filter): no skip line for it */
    cr_assert_null(strstr(out, "batch 16:"), "%s", out);
    free(out);
    cr_assert_eq(run(&out, "explain --target h200 --filter 'decode_attn*b16*' "
                           "specs/models/llama-3-8b.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "decode_attn_sm90a_bf16_h4096_nh32_kv8_hd128_s8192_rt500000_b16_grid_t512_"
                          "norm\n"),
              "%s", out);
    cr_assert(strstr(out, "attention: items of (request, KV head, its 4 query heads, "), "%s", out);
    cr_assert(strstr(out, "UNROLL=1 HEADS_PER_ITEM=4 ATT_MMA=1"), "%s", out);
    free(out);
    /* no key rounds to vary on tensor cores: candidates differ in steps and
     * slices only (u1), and a tuning entry's other key rounds are refused */
    cr_assert_eq(run(&out, "list --candidates --filter 'decode_attn_*_b16_grid*' "
                           "specs/models/llama-3-8b.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_expect_not_null(strstr(out, "u1_norm.cu"), "%s", out);
    cr_expect_null(strstr(out, "u4_norm.cu"), "%s", out);
    free(out);
    char tuning[128], gqa_out[160];
    snprintf(tuning, sizeof tuning, "%s/h200-gqa.yaml", tmp);
    snprintf(gqa_out, sizeof gqa_out, "%s/gqa-rounds", tmp);
    write_file(tuning, "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
                       "    - family: decode_attn_sm90a_bf16_h4096_nh32_kv8_hd128_s8192_rt500000_b16"
                       "_grid\n      threads: 512\n      step_cols: 256\n      slices_qkv: 16\n"
                       "      slices_o: 8\n      key_rounds: 4\n      tuned_us: 300\n"
                       "      model_us: 310\n      worst_us: 400\n      candidates: 9\n"
                       "      measured: \"by hand\"\n");
    cr_expect_eq(run(&out, "generate --out %s specs/models/llama-3-8b.yaml specs/targets/h200.yaml %s",
                     gqa_out, tuning),
                 1, "%s", out);
    cr_expect_not_null(strstr(out, "has one block of 16 keys in flight (key rounds 1)"), "%s", out);
    free(out);
    struct stat st;
    cr_expect_neq(stat(gqa_out, &st), 0, "nothing written");
    /* MLA: the latent attention core per batch size, with the model's softmax scale
     * (YaRN's mscale^2 in it); on targets without clusters the portable form,
     * and explain says why */
    cr_assert_eq(run(&out, "explain --filter 'mla_decode*' specs/models/deepseek-v2-lite.yaml "
                           "specs/targets/h200.yaml specs/targets/mi300x.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b1_g16_s132\n"), "%s",
              out);
    /* every SM takes a split at B = 1 and 16 (132 and 8 a request): no
     * clusters, one merge level spread over the splits after a barrier (a
     * cooperative launch); at B = 64 (2 a request) a cluster of 2 merges */
    cr_expect(strstr(out, "SPLITS=132 CLUSTER=1 CLUSTERS=132 SPREAD=1"), "%s", out);
    cr_expect(strstr(out, "132 x 1 x 1 blocks for 132 SMs at one each (one wave: a cooperative launch)"),
              "%s", out);
    cr_expect(strstr(out, "the 132 meet at a barrier, then each merges its pieces"), "%s", out);
    cr_expect(strstr(out, "mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b16_g16_s8\n"), "%s", out);
    cr_expect(strstr(out, "mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b64_g16_c2x1\n"), "%s", out);
    /* the H200's tiles in groups of 4 rows a copy from B_max 16, a copy a
     * row below */
    cr_expect(strstr(out, "SPLITS=132 CLUSTER=1 CLUSTERS=132 SPREAD=1 BALANCED=0 TILE=32 WGMMA=0 "
                          "STAGES=5 TMA_TILES=0 TMA_CHUNKS=0 ROW_GROUP=1"), "%s", out);
    cr_expect(strstr(out, "SPLITS=8 CLUSTER=1 CLUSTERS=8 SPREAD=1 BALANCED=0 TILE=32 WGMMA=0 "
                          "STAGES=5 TMA_TILES=0 TMA_CHUNKS=0 ROW_GROUP=4"), "%s", out);
    cr_expect(strstr(out, "SPLITS=2 CLUSTER=2 CLUSTERS=1 SPREAD=0 BALANCED=0 TILE=32 WGMMA=0 "
                          "STAGES=5 TMA_TILES=0 TMA_CHUNKS=0 ROW_GROUP=4"), "%s", out);
    cr_expect(strstr(out, "5 stages of 32 keys (a bulk copy 4 whole rows a group"), "%s", out);
    cr_expect(strstr(out, "5 stages of 32 keys (a bulk copy a row into padded rows"), "%s", out);
    cr_expect_null(strstr(out, "TMA_TILES=1"), "the H100's alone: %s", out);
    cr_expect_null(strstr(out, "TMA_CHUNKS=1"), "the wgmma form's alone: %s", out);
    cr_assert(strstr(out, "deepseek-v2-lite's softmax scale (the launch's `scale`) 0.114721387"),
              "%s", out);
    cr_assert(strstr(out, "mla_decode_gfx942_bf16_nh16_kv512_r64_s16384_p64_b1_g16_s64_portable\n"),
              "%s", out);
    cr_assert(strstr(out, "the portable form: mi300x has no thread-block clusters"), "%s", out);
    cr_expect(strstr(out, "the scores and P.V on the matrix units (MFMA 16x16x16"), "%s", out);
    free(out);
    /* the same on an sm_90a target without clusters (to run it on an H200) */
    cr_assert_eq(run(&out, "explain --filter 'mla_decode*' specs/models/deepseek-v2-lite.yaml "
                           "tests/gpu/portable/h200-portable.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b16_g16_s15_portable\n"),
              "%s", out);
    cr_expect(strstr(out, "the scores and P.V on the matrix units (mma.sync m16n8k16"), "%s", out);
    cr_expect(strstr(out, "main loop: this template's mma.sync form; the cluster form's wgmma loop "
                          "does not take 16 heads per GPU and kv_lora 512: it takes a multiple of 64 "
                          "heads and kv_lora 512"),
              "%s", out);
    cr_expect_null(strstr(out, "_c2x4"), "no cluster form: %s", out);
    cr_expect(strstr(out, "64-token pages through the block table, a lookup a tile"), "%s", out);
    free(out);
    /* 128 heads on the cluster form's wgmma loop: a tile's chunks as TMA
     * boxes of 64 x 64 from B_max 16 (a tile lies in one page), cp.async below */
    cr_assert_eq(run(&out, "explain --filter 'mla_decode*' specs/models/deepseek-v2.yaml "
                           "specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "mla_decode_sm90a_bf16_nh128_kv512_r64_s16384_p64_b64_g64_d66\n"), "%s", out);
    cr_expect(strstr(out, "TILE=64 WGMMA=1 STAGES=2 TMA_TILES=0 TMA_CHUNKS=1"), "%s", out);
    cr_expect(strstr(out, "2 stages of 64 keys in wgmma's 128-byte swizzle, filled by TMA boxes of 64 "
                          "keys x 64 columns, a chunk each"), "%s", out);
    cr_expect(strstr(out, "PAGE_SIZE=64 BMAX=1 D=576 HEADS_PER_BLOCK=64 HEAD_GROUPS=2 SPLITS=66 CLUSTER=1 "
                          "CLUSTERS=66 SPREAD=1 BALANCED=0 TILE=64 WGMMA=1 STAGES=2 TMA_TILES=0 "
                          "TMA_CHUNKS=0"), "%s", out);
    cr_expect(strstr(out, "filled by cp.async (TMA boxes from B_max 16: slower below)"), "%s", out);
    /* the balanced deal (B = 64) says how its runs merge, and no cluster merge */
    cr_expect(strstr(out, "one cut over several is merged by the last of them to finish"),
              "%s", out);
    cr_expect(strstr(out, "cut into 66 even runs, each request a run starts counted as a few tiles more"),
              "%s", out);
    cr_expect_null(strstr(out, "clusters of 1 splits merge"), "%s", out);
    cr_expect_null(strstr(out, "BMAX=16 D=576 HEADS_PER_BLOCK=64 HEAD_GROUPS=2 SPLITS=4 CLUSTER=1 CLUSTERS=4 "
                               "SPREAD=1 BALANCED=0 TILE=64 WGMMA=1 STAGES=2 TMA_TILES=0 TMA_CHUNKS=0"),
                   "%s", out);
    free(out);
    /* 128 heads: 64 a workgroup on the cluster form's wgmma main loop (2
     * warpgroups, tiles of 64 keys in 2 stages); at B = 1 the splits fill
     * the SMs in one wave, so they meet at a barrier (a cooperative launch)
     * and merge in one level spread over them, not two */
    cr_assert_eq(run(&out, "explain --filter 'mla_decode*' specs/models/deepseek-v2.yaml "
                           "tests/gpu/portable/h200-portable.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "mla_decode_sm90a_bf16_nh128_kv512_r64_s16384_p64_b1_g64_s64_portable\n"),
              "%s", out);
    cr_expect(strstr(out, "HEADS_PER_BLOCK=64 HEAD_GROUPS=2 SPLITS=64 SPLIT_GROUP=8"), "%s", out);
    cr_expect(strstr(out, "TILE=64 STAGES=2 THREADS=256 PARTS=1 WGMMA=1 MIN_BLOCKS=1 SMEM_BYTES=231424"),
              "%s", out);
    cr_expect(strstr(out, "main loop: the cluster form's wgmma loop (mla_wgmma.in), which the cluster "
                          "planner runs for these heads and this row"),
              "%s", out);
    cr_expect(strstr(out, "(wgmma: m64n64k16 for the scores, m64n128k16 for P.V, the heads as M)"), "%s",
              out);
    cr_expect(strstr(out, "tiles of 64 keys in 2 cp.async stages"), "%s", out);
    cr_expect(strstr(out, "COOP_MERGE=1 CLUSTER=1"), "%s", out);
    cr_expect(strstr(out, "launch: grid=(64,2,1) block=(256,1,1) cluster=(1,1,1) "
                          "dynamic_smem=231424 cooperative\n"), "%s", out);
    cr_expect(strstr(out, "the 64 splits of a request's head group meet at a barrier (device-scope "
                          "release/acquire), and each then merges a slice of the 64 heads (at most "
                          "1) over all 64 partials into the output: a cooperative launch"),
              "%s", out);
    cr_expect_null(strstr(out, "the last of each group of 8 splits merges"), "%s", out);
    /* a request of few keys (at most 16 tiles) on 4 splits, one merge level
     * (the partials are 64 KB) */
    cr_expect(strstr(out, "SPLIT_GROUP=8 FEW_TILES=16 FEW_SPLITS=4 "), "%s", out);
    cr_expect(strstr(out, "a request of at most 16 tiles (1024 keys) takes at most 4 splits, merged in "
                          "one level"),
              "%s", out);
    free(out);
    /* the fused decode family's portable form on an sm_90a target without
     * clusters: the grid form at every batch, explain says why; no ring or
     * register form */
    cr_assert_eq(run(&out, "explain --filter 'decode_attn*' specs/models/llama-2-7b.yaml "
                           "tests/gpu/portable/h200-portable.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_grid_t512_norm\n"),
              "%s", out);
    cr_assert(strstr(out, "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b4_grid_t512_norm\n"),
              "%s", out);
    cr_expect(strstr(out, "the portable form: h200-portable has no thread-block clusters, so grid "
                          "barriers and global memory take the cluster collectives' place"),
              "%s", out);
    cr_expect_null(strstr(out, "_ring_"), "%s", out);
    cr_expect_null(strstr(out, "_c2x"), "%s", out);
    free(out);
    /* on AMD targets the same portable form, lowered to HIP: MFMA for the
     * projections, waves of 64, agent-scope barriers; batch 16's staged rows
     * do not fit the 64 KB of LDS: its projections read x and o from the
     * workspace, one grid barrier more, and explain says why */
    cr_assert_eq(run(&out, "explain specs/models/llama-2-7b.yaml specs/targets/mi300x.yaml"), 0,
                 "%s", out);
    cr_assert(strstr(out, "decode_attn_gfx942_f16_h4096_nh32_hd128_s4096_b4_grid_t512_norm\n"),
              "%s", out);
    cr_expect(strstr(out, "(304 workgroups, 2432 waves of 64), 4 grid barriers at agent scope"),
              "%s", out);
    cr_expect(strstr(out, "on matrix cores (MFMA 16x16x16, the batch as N)"), "%s", out);
    cr_assert(strstr(out, "decode_attn_gfx942_f16_h4096_nh32_hd128_s4096_b16_grid_t512_norm\n"),
              "%s", out);
    cr_expect(strstr(out, "BATCH_TILE=16 STAGED_ROWS=0\n"), "%s", out);
    cr_expect(strstr(out, "(304 workgroups, 2432 waves of 64), 5 grid barriers at agent scope"),
              "%s", out);
    cr_expect(strstr(out, "x normalized once into the workspace (16 rows x 4096 x 2 B = 131072 B), "
                          "no rows staged: staging the batch's rows (x, then o) would take "
                          "133120 B with 1 KB spare, over the 65536 B of LDS a workgroup has"),
              "%s", out);
    cr_expect_null(strstr(out, "do not fit in the 64 KB of LDS"), "%s", out);
    free(out);
    /* GQA on AMD: a group's heads one attention item on the matrix cores
     * (MFMA 16x16x16, the heads as N), one more grid barrier before the
     * merge; the HIP sources compile in kernels-ci and run on the host
     * emulation (tests/emu) */
    cr_assert_eq(run(&out, "explain --filter 'decode_attn*b4_grid_t512_norm' "
                           "specs/models/llama-3-8b.yaml specs/targets/mi250.yaml"),
                 0, "%s", out);
    cr_expect(strstr(out, "UNROLL=1 HEADS_PER_ITEM=4 ATT_MMA=1"), "%s", out);
    cr_expect(strstr(out, "waves of 64), 5 grid barriers at agent scope"), "%s", out);
    cr_expect(strstr(out, "attention: items of (request, KV head, its 4 query heads, a run of >= "
                          "64 keys, at most 64 runs) from a counter, on matrix cores (MFMA "
                          "16x16x16, the group's heads as N"),
              "%s", out);
    cr_expect(strstr(out, "16 keys (8 KB) in flight a wave"), "%s", out);
    free(out);
    /* Qwen2-7B's groups of 7 on MI300X alike */
    cr_assert_eq(run(&out, "explain --filter 'decode_attn*b4_grid_t512_norm' "
                           "specs/models/qwen2-7b.yaml specs/targets/mi300x.yaml"),
                 0, "%s", out);
    cr_expect(strstr(out, "HEADS_PER_ITEM=7 ATT_MMA=1"), "%s", out);
    free(out);
}

/* The H200 without clusters (tests/gpu/portable/h200-portable.yaml) is the
 * H200 target spec but for its name, max_cluster_size and comments: a ceiling or a
 * limit changed in one and not the other would make the portable form's
 * runs on the H200 plan for another GPU. */
Test(cli, h200_portable_target_follows_h200)
{
    char *a = slurp("specs/targets/h200.yaml"), *b = slurp("tests/gpu/portable/h200-portable.yaml");
    char *sa = NULL, *sb = NULL;
    unsigned lines = 0;
    for (char *la = strtok_r(a, "\n", &sa), *lb = strtok_r(b, "\n", &sb); la || lb;
         la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb)) {
        while (la && la[0] == '#')   /* comments: each spec's own header */
            la = strtok_r(NULL, "\n", &sa);
        while (lb && lb[0] == '#')
            lb = strtok_r(NULL, "\n", &sb);
        if (!la && !lb)
            break;
        cr_assert(la && lb, "one spec ends first, after %u lines", lines);
        lines++;
        if (strstr(la, "  name: ") == la || strstr(la, "  max_cluster_size: ") == la) {
            cr_assert(strncmp(la, lb, strchr(la, ':') - la + 1) == 0, "%s / %s", la, lb);
            continue;
        }
        cr_assert_str_eq(la, lb, "line %u", lines);
    }
    cr_expect_gt(lines, 50, "both specs read");
    free(a);
    free(b);
}

/* Batches above 4: the grid form (one cooperative CTA per SM, the
 * projections' units sliced so the warps' last round is nearly full, a
 * deterministic twin of the same code); above 16 explain says why not. */
Test(cli, decode_grid_form_above_batch_4)
{
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'decode_attn*b16*' specs/models/llama-2-7b.yaml "
                           "specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b16_grid_t512_norm\n"), "%s",
              out);
    cr_assert(strstr(out, "decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b16_grid_t512_norm_det\n"),
              "%s", out);
    cr_assert(strstr(out, "launch: grid=(132,1,1) block=(512,1,1) cluster=(1,1,1) "
                          "dynamic_smem=132096 cooperative"),
              "%s", out);
    /* 768 tiles of W_qkv x 8 slices = 6144 units over 2112 warps: 3 rounds, 97% */
    cr_assert(strstr(out, "QKV: 6144 units of 16 W_qkv rows x 512 columns (8 slices; 97%"), "%s",
              out);
    cr_assert(strstr(out, "output: 2048 units of 16 W_o rows x 512 columns"), "%s", out);
    free(out);

    char *l2 = slurp("specs/models/llama-2-7b.yaml");
    char *text = replaced(l2, "batch_sizes: [1, 4, 16]", "batch_sizes: [1, 32]");
    char path[128];
    snprintf(path, sizeof path, "%s/llama-b32.yaml", tmp);
    write_file(path, text);
    free(text);
    free(l2);
    cr_assert_eq(run(&out, "explain %s specs/targets/h200.yaml", path), 0, "%s", out);
    cr_assert(strstr(out, "batch 32: batch sizes above 16 are not planned"), "%s", out);
    cr_assert_null(strstr(out, "_b32_"), "%s", out);
    free(out);
}

/* GQA on cluster targets: the ring through batch 4 (it shares a group's K
 * and V tiles on tensor cores), the grid form above; at batch 16 the grid's
 * merge takes 32 of a GQA head's columns a warp (MHA a head's 128). */
Test(cli, decode_gqa_ring_to_batch_4)
{
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'decode_attn*' specs/models/qwen2-7b.yaml "
                           "specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "_p16_bias_b1_c2x2_t256_ring_norm\n"), "%s", out);
    cr_assert(strstr(out, "_p16_bias_b4_c2x2_t448_ring_norm\n"), "%s", out);
    cr_assert(strstr(out, "_p16_bias_b16_grid_t512_norm\n"), "%s", out);
    cr_assert_null(strstr(out, "_b4_grid_"), "%s", out);
    cr_assert(strstr(out, "MAX_SPLITS=64 MERGE_COLS=32 "), "%s", out);   /* batch 16 */
    free(out);

    char *l3 = slurp("specs/models/llama-3-8b.yaml");
    char path[128];
    const struct {
        const char *sizes, *form;
    } cases[] = {{"batch_sizes: [2]", "_b2_c2x2_t256_ring_norm\n"},
                 {"batch_sizes: [4]", "_b4_c2x2_t256_ring_norm\n"},
                 {"batch_sizes: [8]", "_b8_grid_t512_norm\n"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = replaced(l3, "batch_sizes: [1, 4, 16]", cases[i].sizes);
        snprintf(path, sizeof path, "%s/llama3-batch-%zu.yaml", tmp, i);
        write_file(path, text);
        free(text);
        cr_assert_eq(run(&out, "explain --filter 'decode_attn*' %s specs/targets/h200.yaml", path),
                     0, "%s", out);
        cr_expect_not_null(strstr(out, cases[i].form), "%s: %s", cases[i].sizes, out);
        free(out);
    }
    free(l3);

    cr_assert_eq(run(&out, "explain --filter 'decode_attn*b16_grid_t512_norm' "
                           "specs/models/llama-2-7b.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "MAX_SPLITS=64 MERGE_COLS=128 "), "%s", out);
    free(out);
}

/* The ring shares a KV group's tiles on tensor cores (groups of at most 8
 * heads; larger ones keep each head's stream), with the group's rows, states
 * and merged o in the workspace; MHA rings do not. */
Test(cli, decode_ring_shares_kv_groups)
{
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'decode_attn*b1_c2x2_t256_ring_norm' "
                           "specs/models/qwen2-7b.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "ROWS1=4 SHARE_KV=1 GROUP_CTAS=33\n"), "%s", out);
    /* the 4 groups fill the 132 SMs (7 heads x 4 CTAs would leave 20 idle) */
    cr_assert(strstr(out, "grid=(132,1,1)"), "%s", out);
    cr_assert(strstr(out, "the 33 CTAs of a group (its 7 query heads) split its 1152 q, k, v "
                          "rows (36 each"),
              "%s", out);
    cr_assert(strstr(out, "all 7 heads (on tensor cores"), "%s", out);
    cr_assert(strstr(out, "merges its 33 states per head"), "%s", out);
    free(out);
    /* the group of whole clusters (2 CTAs a query head) stays for its test */
    cr_assert_eq(run(&out, "explain --filter 'decode_attn*b1_c2_t256_ring_norm' "
                           "specs/models/qwen2-7b.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "SHARE_KV=1 GROUP_CTAS=14\n"), "%s", out);
    cr_assert(strstr(out, "grid=(56,1,1)"), "%s", out);
    free(out);
    /* 256 threads: the tensor-core attention's registers (168 a thread) */
    cr_assert_eq(run(&out, "explain --filter 'decode_attn*b1_c2x2_t256_ring_norm' "
                           "specs/models/llama-3-8b.yaml specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "SHARE_KV=1"), "%s", out);
    cr_assert(strstr(out, "split its 768 q, k, v rows (48 each"), "%s", out);
    free(out);
    cr_assert_eq(run(&out, "explain --filter 'decode_attn*ring*' specs/models/llama-2-7b.yaml "
                           "specs/targets/h200.yaml"),
                 0, "%s", out);
    cr_assert(strstr(out, "SHARE_KV=0"), "%s", out);
    cr_assert_null(strstr(out, "SHARE_KV=1"), "%s", out);
    free(out);
}

/* A model whose S_max is below the portable form's tile still gets the
 * form (one split, its rows masked past the length), not a shared-memory
 * refusal. */
Test(cli, mla_portable_short_context)
{
    char *lite = slurp("specs/models/deepseek-v2-lite.yaml");
    /* S_max 8 in pages of 8 */
    char *paged = replaced(lite, "page_size: 64", "page_size: 8");
    char *text = replaced(paged, "max_context: 16384", "max_context: 8");
    char path[128];
    snprintf(path, sizeof path, "%s/mla-short.yaml", tmp);
    write_file(path, text);
    free(text);
    free(paged);
    char *out;
    cr_assert_eq(run(&out, "explain --filter 'mla_decode*' %s specs/targets/mi300x.yaml", path), 0,
                 "%s", out);
    cr_expect(strstr(out, "_s8_p8_b1_g16_s1_portable\n"), "%s", out);
    cr_expect(strstr(out, "tiles of 32 keys"), "%s", out);
    free(out);
    free(lite);
}

/* The portable form at other widths on a 64 KiB LDS (MI300X): tiles of 32
 * keys where the tile (Q's rows before it) fits, else 16; a kv_lora its
 * matrix products do not take is not emitted, with the reason. */
Test(cli, mla_portable_tile_fits_the_lds)
{
    char *lite = slurp("specs/models/deepseek-v2-lite.yaml");
    const struct {
        const char *kv, *rope, *want;
    } cases[] = {
        {"512", "64", "tiles of 32 keys in one LDS buffer (43472 bytes of LDS)"},     /* DeepSeek's 576 */
        {"512", "448", "tiles of 16 keys in one LDS buffer (37072 bytes of LDS)"},    /* 960: 32 keys would need 68,032 */
        {"1024", "512", "kv_lora 1024 and a row of 1536: the portable form's matrix products need"},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[128], kv[64], rope[64];
        snprintf(path, sizeof path, "%s/mla-portable-%u.yaml", tmp, i);
        snprintf(kv, sizeof kv, "kv_lora_rank: %s", cases[i].kv);
        snprintf(rope, sizeof rope, "qk_rope_head_dim: %s", cases[i].rope);
        char *wide = replaced(lite, "kv_lora_rank: 512", kv);
        char *text = replaced(wide, "qk_rope_head_dim: 64", rope);
        write_file(path, text);
        free(text);
        free(wide);
        char *out;
        cr_assert_eq(run(&out, "explain --filter 'mla_decode*' %s specs/targets/mi300x.yaml", path),
                     0, "%s", out);
        cr_expect_not_null(strstr(out, cases[i].want), "%s", out);
        free(out);
    }
    free(lite);
}

/* The portable form's sm_90 main loop at 64 heads a workgroup: the cluster
 * form's wgmma loop where the cluster planner would run it (kv_lora 512, a
 * row of whole 64-column chunks, its shared memory fits), else this
 * template's mma.sync loop at 512 threads, and explain says why. */
Test(cli, mla_portable_main_loop)
{
    char *v2 = slurp("specs/models/deepseek-v2.yaml");
    const struct {
        const char *kv, *want, *params;
    } cases[] = {
        {"512", "main loop: the cluster form's wgmma loop (mla_wgmma.in)",
         "TILE=64 STAGES=2 THREADS=256 PARTS=1 WGMMA=1"},
        {"256", "main loop: this template's mma.sync form; the cluster form's wgmma loop does not take "
                "128 heads per GPU and kv_lora 256: it takes a multiple of 64 heads and kv_lora 512",
         "HEADS_PER_BLOCK=64 "},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[128], kv[64];
        snprintf(path, sizeof path, "%s/mla-main-loop-%u.yaml", tmp, i);
        snprintf(kv, sizeof kv, "kv_lora_rank: %s", cases[i].kv);
        char *text = replaced(v2, "kv_lora_rank: 512", kv);
        write_file(path, text);
        free(text);
        char *out;
        cr_assert_eq(run(&out, "explain --filter 'mla_decode*b1_*' %s tests/gpu/portable/h200-portable.yaml",
                         path),
                     0, "%s", out);
        cr_expect_not_null(strstr(out, cases[i].want), "%s", out);
        cr_expect_not_null(strstr(out, cases[i].params), "%s", out);
        if (i == 1)
            cr_expect_not_null(strstr(out, "THREADS=512 PARTS=4 WGMMA=0"), "%s", out);
        free(out);
    }
    free(v2);
}

/* The MLA planner's choices at widths other than DeepSeek's: a cluster of c
 * splits merges kv_lora / c columns a rank, a float4 a step for each of a
 * row's 16 threads at 16 heads a block, so c divides kv_lora / 64 (384: c up
 * to 2; 448: no cluster); a row whose fewest stages do not fit is not
 * emitted, and explain says why. */
Test(cli, mla_planner_fits_the_template_at_other_widths)
{
    char *lite = slurp("specs/models/deepseek-v2-lite.yaml");
    const struct {
        const char *kv, *rope, *want, *refuse;
    } cases[] = {
        {"384", "64", "_kv384_r64_", NULL},
        {"448", "64", "_kv448_r64_", NULL},
        {"512", "448", NULL, "a row of 960: 3 stages of 32 keys"},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[128], *text = malloc(strlen(lite) + 8), *p;   /* room for a longer rope */
        cr_assert_not_null(text);
        strcpy(text, lite);
        snprintf(path, sizeof path, "%s/mla-%u.yaml", tmp, i);
        p = strstr(text, "kv_lora_rank: 512");
        cr_assert_not_null(p);
        memcpy(p + strlen("kv_lora_rank: "), cases[i].kv, 3);
        p = strstr(text, "qk_rope_head_dim: 64");
        cr_assert_not_null(p);
        char *rest = strdup(p + strlen("qk_rope_head_dim: 64"));
        sprintf(p, "qk_rope_head_dim: %s%s", cases[i].rope, rest);
        free(rest);
        write_file(path, text);
        free(text);
        char *out;
        cr_assert_eq(run(&out, "explain --filter 'mla_decode*' %s specs/targets/h200.yaml", path),
                     0, "%s", out);
        if (cases[i].want) {
            const unsigned kv = (unsigned)atoi(cases[i].kv);
            unsigned n = 0;
            for (const char *q = strstr(out, cases[i].want); q; q = strstr(q + 1, cases[i].want)) {
                /* the name's variant: _g<heads>_c<cluster>x<count>, _s<splits> (the spread
                 * merge: its pieces are the template's to fit) or _d<blocks> (the balanced
                 * deal: its merge's too) */
                unsigned g, cl, p;
                const char *v = strstr(q, "_g");
                cr_assert_not_null(v, "%s", out);
                if (sscanf(v, "_g%u_c%ux%u", &g, &cl, &p) == 3)
                    cr_expect(cl >= 1 && kv % (cl * 64) == 0, "kv_lora %u with clusters of %u:\n%s",
                              kv, cl, out);
                else
                    cr_expect(sscanf(v, "_g%u_s%u", &g, &p) == 2 || sscanf(v, "_g%u_d%u", &g, &p) == 2,
                              "%s", out);
                n++;
            }
            cr_expect_geq(n, 3u, "an instance per batch size:\n%s", out);
        } else {
            cr_expect_not_null(strstr(out, cases[i].refuse), "%s", out);
        }
        free(out);
    }
    free(lite);
}

/* fusegen shapes: the sweep specs' shapes as test_overlap's --bench-shapes
 * list, in file order, through the spec parser; a bad spec or one that is
 * not a GEMM spec prints nothing and fails. */
Test(cli, shapes_lists_gemm_spec_shapes)
{
    char *out;
    cr_assert_eq(run(&out, "shapes bench/sweeps/overlap-tp2-fit.yaml"), 0, "%s", out);
    unsigned n = 1;
    for (const char *c = strchr(out, ','); c; c = strchr(c + 1, ','))
        n++;
    cr_expect_eq(n, 56u, "%s", out);
    cr_expect_eq(strncmp(out, "l3-8b-qkv-m512:all_gather:512x3072x4096,", 40), 0, "%s", out);
    cr_expect_not_null(strstr(out, ",l2-70b-fc2-m32768:reduce_scatter:32768x8192x14336"), "%s",
                       out);
    free(out);
    char bad[128];
    snprintf(bad, sizeof bad, "%s/bad-shape.yaml", tmp);
    write_file(bad, "schema_version: 1\ngemm:\n  name: x\n  dtype: bf16\n  world_size: 2\n"
                    "  topology: nvlink\n  shapes:\n"
                    "    - {name: x, collective: bogus, m: 1, n: 2, k: 3}\n");
    cr_expect_eq(run(&out, "shapes bench/sweeps/overlap-tp2-fit.yaml %s", bad), 1, "%s", out);
    cr_expect_not_null(strstr(out, "collective"), "%s", out);
    cr_expect_null(strstr(out, "l3-8b"), "nothing printed: %s", out);
    free(out);
    cr_expect_eq(run(&out, "shapes specs/targets/h200.yaml"), 1, "%s", out);
    cr_expect_not_null(strstr(out, "expected a GEMM-overlap spec"), "%s", out);
    free(out);
}

Test(cli, help_and_version)
{
    char *out;
    cr_assert_eq(run(&out, "--version"), 0);
    cr_assert_str_eq(out, "fusegen 0.1.0\n");
    free(out);
    const char *cmds[] = {"generate", "list", "explain", "import-hf", "gate",
                          "embed",    "report", "tune",    "shapes"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cr_expect_eq(run(&out, "%s --help", cmds[i]), 0, "%s --help", cmds[i]);
        cr_expect(strstr(out, "usage: fusegen"), "%s --help: %s", cmds[i], out);
        free(out);
    }
    cr_assert_eq(run(&out, "frobnicate"), 2);
    cr_assert(strstr(out, "unknown command 'frobnicate'"));
    free(out);
}

Test(cli, embed_round_trip)
{
    char img[128], src[128];
    snprintf(img, sizeof img, "%s/img.bin", tmp);
    snprintf(src, sizeof src, "%s/img.c", tmp);
    FILE *f = fopen(img, "wb");
    unsigned char bytes[] = {0, 1, 2, 255, 128};
    fwrite(bytes, 1, sizeof bytes, f);
    fclose(f);
    cr_assert_eq(run(NULL, "embed --name k_1 %s %s", img, src), 0);
    char *c = slurp(src);
    cr_assert(strstr(c, "const unsigned char fg_image_k_1[] = {\n    0,1,2,255,128,\n};"), "%s", c);
    cr_assert(strstr(c, "const size_t fg_image_k_1_size = 5;"));
    free(c);
    cr_assert_neq(run(NULL, "embed --name Bad-Name %s %s", img, src), 0);
}

/* report: a results file as a markdown table and a gnuplot chart; the numbers
 * are the file's (GB/s from bytes and the median), nothing is written on an
 * error. */
Test(cli, report_table_and_chart)
{
    char *out;
    cr_assert_eq(run(&out, "report -o %s/r tests/data/bench/decode-two-cases.json", tmp), 0, "%s",
                 out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/r/decode-two-cases.md", tmp);
    char *md = slurp(path);
    cr_assert(strstr(md, "NVIDIA H200, commit abc1234, 2026-11-30T08:36:18Z"), "%s", md);
    cr_assert(strstr(md, "read-only 4594 GB/s, device-to-device copy 4235 GB/s"), "%s", md);
    /* 151011328 B in 47.96 us: 3149 GB/s, 68.5% of 4594; baseline 82.05 us: 1.71x */
    cr_assert(strstr(md, "| decode_attn_sm90a_f16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_norm | "
                         "1024 | 1 | 47.96 (47.90-48.10) | 3149 | 68.5 | 82.05 | 1.71x |"),
              "%s", md);
    cr_assert(strstr(md, "_p16_b1_c2x2_t512_ring_norm | 16384 | 1 | 106.16 (106.00-106.50) | 3793 | "
                         "82.6 | - | - |"),
              "%s", md);
    free(md);
    snprintf(path, sizeof path, "%s/r/decode-two-cases.gp", tmp);
    char *gp = slurp(path);
    cr_assert(strstr(gp, "decode-two-cases.png'"), "%s", gp);
    cr_assert(strstr(gp, "title 'f16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_norm'"), "%s", gp);
    cr_assert(strstr(gp, "title 'baseline of f16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_norm'"),
              "%s", gp);
    cr_assert_null(strstr(gp, "baseline of f16_h4096_nh32_hd128_s16384_p16"), "%s", gp);
    cr_assert(strstr(gp, "4594.0 with lines lw 3 lc rgb 'black' title 'read ceiling"), "%s", gp);
    free(gp);
    if (system("command -v gnuplot >/dev/null 2>&1") != 0)
        cr_skip_test("gnuplot is not installed (make deps installs it): the chart was not drawn");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd %s/r && gnuplot decode-two-cases.gp", tmp);
    cr_assert_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/r/decode-two-cases.png", tmp);
    struct stat st;
    cr_assert(stat(path, &st) == 0 && st.st_size > 1000, "no chart drawn");
}

/* report on a fused-GEMM results file (test_gemm --bench): TFLOP/s from
 * 2 m n k and each median, the fused kernel's share of cuBLASLt's rate, a
 * chart of both rates per shape. */
Test(cli, report_gemm_rates)
{
    char *out;
    cr_assert_eq(run(&out, "report -o %s/rg tests/data/bench/gemm-two-cases.json", tmp), 0, "%s",
                 out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/rg/gemm-two-cases.md", tmp);
    char *md = slurp(path);
    cr_assert(strstr(md, "NVIDIA H200, commit abc1234, 2026-12-02T09:53:36Z"), "%s", md);
    /* 2 x 4096 x 8192 x 1024 = 68.72 GFLOP: 693.1 TFLOP/s in 99.14 us, 646.6 in 106.28 */
    cr_assert(strstr(md, "| overlap_gemm_sm90a_bf16_n8192_k1024 | 4096 | 8192 | 1024 | 99.1 | "
                         "693.2 | 106.3 | 646.6 | 1.072 |"),
              "%s", md);
    cr_assert(strstr(md, "| 16384 | 5120 | 8192 | 2048.0 | 671.1 | 1987.7 | 691.4 | 0.971 |"),
              "%s", md);
    free(md);
    snprintf(path, sizeof path, "%s/rg/gemm-two-cases.gp", tmp);
    char *gp = slurp(path);
    cr_assert(strstr(gp, "\"m4096 n8192 k1024\" 693.2 646.6\n"), "%s", gp);
    cr_assert(strstr(gp, "title 'fused (overlap_gemm)', '' using 3 title 'cuBLASLt'"), "%s", gp);
    free(gp);
}

/* --filter keeps the cases of matching instances, --suffix names the view
 * apart from the full report; a filter matching nothing is an error. */
Test(cli, report_filtered_view)
{
    char *out;
    cr_assert_eq(run(&out, "report -o %s/r -s contiguous -f '*_s16384_b1_*' "
                           "tests/data/bench/decode-two-cases.json", tmp),
                 0, "%s", out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/r/decode-two-cases-contiguous.md", tmp);
    char *md = slurp(path);
    cr_expect(strstr(md, "_s16384_b1_c2x2_t512_ring_norm | 1024"), "%s", md);
    cr_expect_null(strstr(md, "_p16_"), "%s", md);
    free(md);
    snprintf(path, sizeof path, "%s/r/decode-two-cases-contiguous.gp", tmp);
    char *gp = slurp(path);
    cr_expect(strstr(gp, "decode-two-cases-contiguous.png'"), "%s", gp);
    free(gp);
    snprintf(path, sizeof path, "%s/r/decode-two-cases.md", tmp);
    struct stat st;
    cr_expect_neq(stat(path, &st), 0, "the full report is not written by a filtered run");
    cr_expect_eq(run(&out, "report -o %s/r -f 'nothing*' tests/data/bench/decode-two-cases.json",
                     tmp),
                 1);
    cr_expect(strstr(out, "no case's instance matches the filters"), "%s", out);
    free(out);
    cr_expect_eq(run(&out, "report -s 'Bad/' tests/data/bench/decode-two-cases.json"), 2);
    free(out);
}

/* The rmsnorm harness's cases (shape.rows, an instance field, a list of
 * baselines) read as rows too. */
Test(cli, report_reads_the_rmsnorm_harness)
{
    char *out;
    cr_assert_eq(run(&out, "report -o %s tests/data/bench/rmsnorm-one-case.json", tmp), 0, "%s",
                 out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/rmsnorm-one-case.md", tmp);
    char *md = slurp(path);
    /* 67117056 B in 19.8 us: 3390 GB/s, 75.2% of 4508; baseline 25.2 us: 1.27x */
    cr_assert(strstr(md, "| instance | rows | batch |"), "%s", md);
    cr_assert(strstr(md, "| rmsnorm_sm90a_f16_h4096_t128 | 4096 | - | 19.80 (19.70-19.90) | 3390 | "
                         "75.2 | 25.20 | 1.27x |"),
              "%s", md);
    free(md);
    snprintf(path, sizeof path, "%s/rmsnorm-one-case.gp", tmp);
    char *gp = slurp(path);
    cr_assert(strstr(gp, "set xlabel 'rows'"), "%s", gp);
    cr_assert(strstr(gp, "title 'f16_h4096_t128'"), "%s", gp);
    free(gp);
}

/* The rmsnorm harness's cases as it writes them now (the timing under
 * "time", as test_decode_attn's; a case without baselines, as
 * --no-baseline leaves it) read the same way. */
Test(cli, report_reads_the_rmsnorm_harness_time_key)
{
    char *out;
    cr_assert_eq(run(&out, "report -o %s tests/data/bench/rmsnorm-time.json", tmp), 0, "%s", out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/rmsnorm-time.md", tmp);
    char *md = slurp(path);
    cr_expect(strstr(md, "| rmsnorm_sm90a_f16_h4096_t128 | 4096 | - | 19.80 (19.70-19.90) | 3390 | "
                         "75.2 | 25.20 | 1.27x |"),
              "%s", md);
    cr_expect(strstr(md, "| rmsnorm_sm90a_f16_h4096_t256c | 4096 | - | 18.90 (18.80-19.20) | 3551 | "
                         "78.8 | - | - |"),
              "%s", md);
    free(md);
}

/* Overlap results: each part with its spread, each schedule over max(T_gemm,
 * T_comm) in the table and the chart, a part not run as "-", --filter on
 * shape names, and a case without its GEMM time refused. */
Test(cli, report_reads_the_overlap_harness)
{
    char *out;
    cr_assert_eq(run(&out, "report -o %s tests/data/bench/overlap-two-shapes.json", tmp), 0, "%s",
                 out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/overlap-two-shapes.md", tmp);
    char *md = slurp(path);
    cr_expect(strstr(md, "2 x NVIDIA H200, commit abc1234"), "%s", md);
    /* 520 / max(400, 100) = 1.30; 150 / max(80, 100) = 1.50 */
    cr_expect(strstr(md, "| qkv-m4096 | all_gather | 4096 | 5120 | 8192 | 400.0 (390.0-410.0) | "
                         "100.0 (99.0-101.0) | - | 520.0 (510.0-530.0) [1.30] | "
                         "440.0 (430.0-450.0) [1.10] |"),
              "%s", md);
    cr_expect(strstr(md, "| 250.0 (240.0-260.0) [2.50] | 200.0 (200.0-200.0) [2.00] | "
                         "150.0 (150.0-150.0) [1.50] |"),
              "%s", md);
    free(md);
    snprintf(path, sizeof path, "%s/overlap-two-shapes.gp", tmp);
    char *gp = slurp(path);
    /* (results from before chunk_overlap have no chunk parts: NaN, not drawn) */
    cr_expect(strstr(gp, "\"qkv-m4096\" NaN 1.300 1.100 NaN NaN NaN\n"
                         "\"o-m4096\" 2.500 2.000 1.500 NaN NaN NaN\n"),
              "%s", gp);
    cr_expect(strstr(gp, "set output 'overlap-two-shapes.png'"), "%s", gp);
    free(gp);
    cr_assert_eq(run(&out, "report -o %s -s rs -f 'o-*' tests/data/bench/overlap-two-shapes.json",
                     tmp), 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/overlap-two-shapes-rs.md", tmp);
    md = slurp(path);
    cr_expect_null(strstr(md, "qkv-m4096"), "%s", md);
    cr_expect(strstr(md, "| o-m4096 |"), "%s", md);
    free(md);
    /* a case without its GEMM time */
    char *doc = slurp("tests/data/bench/overlap-two-shapes.json");
    char *at = strstr(doc, "\"gemm\": {\"median_us\": 80.0");
    cr_assert_not_null(at);
    memcpy(at + 1, "GEMM", 4);
    snprintf(path, sizeof path, "%s/broken-overlap.json", tmp);
    write_file(path, doc);
    free(doc);
    cr_expect_eq(run(&out, "report %s", path), 1);
    cr_expect(strstr(out, "case 1: an overlap case without its name, collective, gemm or comm "
                          "time"),
              "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/broken-overlap.md", tmp);
    cr_expect_neq(access(path, F_OK), 0, "nothing written");
}

Test(cli, report_refuses_bad_input_and_writes_nothing)
{
    char bad[256], wrong[256];
    snprintf(bad, sizeof bad, "%s/bad.json", tmp);
    snprintf(wrong, sizeof wrong, "%s/wrong.json", tmp);
    FILE *f = fopen(bad, "w");
    fputs("{\"schema\": \"fusegen-bench/1\", \"cases\": [", f);
    fclose(f);
    f = fopen(wrong, "w");
    fputs("{\"schema\": \"fusegen-bench/1\", \"cases\": [{\"name\": \"x\", \"S\": 1}]}", f);
    fclose(f);
    const char *want[] = {"cannot read or parse", "case 0: a case without"};
    const char *files[] = {bad, wrong};
    for (int i = 0; i < 2; i++) {
        char *out;
        cr_assert_eq(run(&out, "report -o %s/r tests/data/bench/decode-two-cases.json %s", tmp,
                         files[i]),
                     1, "%s", out);
        cr_assert(strstr(out, want[i]), "%s", out);
        free(out);
        char dir[256];
        snprintf(dir, sizeof dir, "%s/r", tmp);
        cr_assert_leq(count_files(dir), 0, "the good file's report was written beside an error");
    }
    char *out;
    cr_assert_eq(run(&out, "report %s/none.txt", tmp), 1, "%s", out);
    cr_assert(strstr(out, "expected a .json results file"), "%s", out);
    free(out);
}

/* fusegen profile with a stand-in harness (no GPU here): the fit, the slowdown
 * and a time for every GEMM the specs' schedules run replace the target's
 * interconnect block, the rest of the file stays byte for byte, and explain
 * then predicts from the profiled GEMMs; a failed run leaves the spec alone. */
Test(cli, profile_writes_the_interconnect_block)
{
    char target[128], harness[128], work[128];
    snprintf(target, sizeof target, "%s/h200.yaml", tmp);
    snprintf(harness, sizeof harness, "%s/prof.sh", tmp);
    snprintf(work, sizeof work, "%s/prof", tmp);
    char *orig = slurp("specs/targets/h200.yaml");
    write_file(target, orig);
    write_program(harness,
               "#!/bin/sh\n"
               "json= shapes=\n"
               "while [ $# -gt 0 ]; do case $1 in --json) json=$2; shift;; --gemm-shapes) "
               "shapes=$2; shift;; esac; shift; done\n"
               "{ echo '{\"gpu\": {\"name\": \"Stand-in\"}, \"date_utc\": \"2026-01-01\", "
               "\"commit\": \"abc\", \"fit\": {\"both_ways_latency_us\": 9, \"one_way_gbps\": 380, "
               "\"both_ways_gbps_each\": 350}, \"gemm_slowdown\": {\"fraction\": -0.002}, "
               "\"call_overhead\": {\"us\": 25.5}, \"nccl\": {\"all_gather\": {\"latency_us\": "
               "12, \"gbps\": 300}, \"reduce_scatter\": {\"latency_us\": -1, \"gbps\": 250}}, "
               "\"lanes\": {\"gpus\": 2, \"lanes\": 2, \"latency_us\": 11, \"gbps\": 700}, "
               "\"gemms\": ['; sep=\n"
               "for s in $(echo $shapes | tr , ' '); do m=${s%%x*}; r=${s#*x}; n=${r%%x*}; "
               "k=${r#*x}; printf '%s{\"m\": %s, \"n\": %s, \"k\": %s, \"us\": %s}' \"$sep\" $m $n "
               "$k $((m / 8)); sep=,; done; echo ']}'; } > $json\n");
    char *log;
    cr_assert_eq(run(&log, "profile --target %s --harness %s --work %s "
                           "specs/gemm/llama-2-70b-tp2.yaml", target, harness, work),
                 0, "%s", log);
    free(log);
    char *spec = slurp(target);
    cr_expect_not_null(strstr(spec, "  interconnect:\n    peer_copy_latency_us: 9.00\n"
                                    "    peer_copy_gbps: 380\n    peer_copy_bidir_gbps: 700\n"
                                    "    gemm_slowdown: 0.0000\n    call_overhead_us: 25.5\n"
                                    "    nccl_ag_latency_us: 12.00\n    nccl_ag_gbps: 300\n"
                                    "    nccl_rs_latency_us: 0.00\n    nccl_rs_gbps: 250\n"
                                    "    copy_lanes_latency_us: 11.00\n    copy_lanes_gbps: 700\n"
                                    "    copy_lanes_gpus: 2\n"
                                    "    gemm_times:\n"),
                       "%s", spec);
    /* qkv-m4096 whole and split over 2 ranks, each once */
    cr_expect_not_null(strstr(spec, "      - {m: 4096, n: 5120, k: 8192, us: 512.0}\n"), "%s", spec);
    cr_expect_not_null(strstr(spec, "      - {m: 2048, n: 5120, k: 8192, us: 256.0}\n"), "%s", spec);
    cr_expect_not_null(strstr(spec, "    source: \"fusegen profile, Stand-in x2, 2026-01-01, abc\"\n"),
                       "%s", spec);
    /* the block (its comment first) is written once, and replaces the
     * shipped one: everything before it is the original's */
    const char *mine = "  # Written by `fusegen profile`";
    const char *at = strstr(spec, mine), *was = strstr(orig, mine);
    cr_assert(at && was, "%s", spec);
    cr_expect_null(strstr(at + 1, mine), "%s", spec);
    cr_expect_eq(at - spec, was - orig);
    cr_expect_eq(strncmp(spec, orig, (size_t)(at - spec)), 0, "%s", spec);
    free(spec);
    cr_assert_eq(run(&log, "explain --filter 'none' specs/gemm/llama-2-70b-tp2.yaml %s", target), 0,
                 "%s", log);
    cr_expect_not_null(strstr(log, "qkv-m4096 (all_gather m4096 n5120 k8192): gemm 512.0 us "
                                   "(profiled)"),
                       "%s", log);
    /* serial NCCL: 512 + 12 + 2048 x 8192 x 2 B / 300 GB/s = 635.8 us */
    cr_expect_not_null(strstr(log, "serial_nccl 635.8 us"), "%s", log);
    free(log);
    /* TP = 8's lanes from the profile's fit */
    cr_assert_eq(run(&log, "explain --filter 'none' specs/gemm/llama-2-70b-tp8.yaml %s", target), 0,
                 "%s", log);
    cr_expect_not_null(strstr(log, "(2D, 7 lanes, the profile's lanes fit on 2 GPUs; "), "%s",
                       log);
    /* the hierarchical plan beside it, on a lane a node peer where a node has 3 or more */
    const char *hier = strstr(log, "hierarchical (");
    cr_assert_not_null(hier, "%s", log);
    cr_expect_not_null(strstr(hier, "nodes of 2 "), "%s", hier);
    cr_expect_not_null(strstr(hier, "nodes of 4 "), "%s", hier);
    cr_expect_not_null(strstr(strstr(hier, "nodes of 4 "), "(a copy lane a node peer "), "%s",
                       hier);
    free(log);
    /* a harness that fails: an error, the spec left alone */
    struct stat a, b;
    cr_assert_eq(stat(target, &a), 0);
    cr_expect_eq(run(&log, "profile --target %s --harness /bin/false --work %s "
                           "specs/gemm/llama-2-70b-tp2.yaml", target, work),
                 1);
    cr_expect_not_null(strstr(log, "the harness's profile run failed"), "%s", log);
    free(log);
    cr_assert_eq(stat(target, &b), 0);
    cr_expect_eq(a.st_ino, b.st_ino);
    cr_expect_eq(a.st_mtime, b.st_mtime);
    /* measurements the target spec cannot hold (both directions at once below
     * one alone): the validation's error, the spec left alone */
    char odd[128];
    snprintf(odd, sizeof odd, "%s/odd.sh", tmp);
    write_program(odd, "#!/bin/sh\n"
                    "while [ $# -gt 0 ]; do case $1 in --json) json=$2; shift;; esac; shift; done\n"
                    "echo '{\"fit\": {\"both_ways_latency_us\": 9, \"one_way_gbps\": 380, "
                    "\"both_ways_gbps_each\": 100}, \"gemm_slowdown\": {\"fraction\": 0}, "
                    "\"call_overhead\": {\"us\": 1}, \"gemms\": []}' > $json\n");
    cr_expect_eq(run(&log, "profile --target %s --harness %s --work %s "
                           "specs/gemm/llama-2-70b-tp2.yaml", target, odd, work),
                 1);
    cr_expect_not_null(strstr(log, "peer_copy_bidir_gbps"), "%s", log);
    cr_expect_not_null(strstr(log, "the spec to write does not validate"), "%s", log);
    free(log);
    cr_assert_eq(stat(target, &b), 0);
    cr_expect_eq(a.st_ino, b.st_ino);
    /* a target without the block gets it appended */
    char *h100 = slurp("specs/targets/h100.yaml");
    cr_assert_null(strstr(h100, "interconnect:"));
    write_file(target, h100);
    cr_assert_eq(run(&log, "profile --target %s --harness %s --work %s "
                           "specs/gemm/llama-2-70b-tp2.yaml", target, harness, work),
                 0, "%s", log);
    free(log);
    spec = slurp(target);
    cr_expect_eq(strncmp(spec, h100, strlen(h100)), 0, "%s", spec);
    cr_expect_not_null(strstr(spec + strlen(h100), "  interconnect:\n"), "%s", spec);
    free(spec);
    /* a block with a key after it: only the block's own lines are replaced */
    char *ceil = strstr(h100, "  ceilings:");
    cr_assert_not_null(ceil);
    fg_strbuf mid = {0};
    fg_sb_printf(&mid, "%.*s  interconnect:\n    peer_copy_latency_us: 1\n    peer_copy_gbps: 1\n"
                       "    peer_copy_bidir_gbps: 1\n    gemm_slowdown: 0\n    source: old\n%s",
                 (int)(ceil - h100), h100, ceil);
    write_file(target, fg_sb_str(&mid));
    fg_sb_free(&mid);
    cr_assert_eq(run(&log, "profile --target %s --harness %s --work %s "
                           "specs/gemm/llama-2-70b-tp2.yaml", target, harness, work),
                 0, "%s", log);
    free(log);
    spec = slurp(target);
    cr_expect_null(strstr(spec, "source: old"), "%s", spec);
    cr_expect_not_null(strstr(spec, "\"\n  ceilings:\n"), "the key after the block stays: %s",
                       spec);
    cr_expect_not_null(strstr(spec, ceil), "%s", spec);
    free(spec);
    free(h100);
    /* a model spec where a GEMM spec belongs */
    cr_expect_eq(run(&log, "profile --target %s --harness %s --work %s specs/models/llama-2-7b.yaml",
                     target, harness, work),
                 1);
    cr_expect_not_null(strstr(log, "expected a GEMM-overlap spec"), "%s", log);
    free(log);
    free(orig);
}

/* An instance serves at most FG_REG_MAX_TARGETS targets (its registry
 * entry's list) and FG_MAX_SPECS_PER_INSTANCE specs (its manifest entry's):
 * one more of either is refused, with nothing written, rather than dropped. */
Test(cli, an_instance_serves_no_more_targets_or_specs_than_its_entries_list)
{
    char *target = slurp("specs/targets/h200.yaml"), *model = slurp("specs/models/llama-2-7b.yaml");
    char targets[1024] = "", models[2048] = "";
    for (int i = 1; i <= 16; i++) {
        char name[32], path[96];
        snprintf(name, sizeof name, "name: t%d\n", i);
        snprintf(path, sizeof path, "%s/t%d.yaml", tmp, i);
        char *text = replaced(target, "name: h200\n", name);
        write_file(path, text);
        free(text);
        if (i <= FG_REG_MAX_TARGETS + 1)
            snprintf(targets + strlen(targets), sizeof targets - strlen(targets), " %s", path);
        snprintf(name, sizeof name, "name: m%d\n", i);
        snprintf(path, sizeof path, "%s/m%d.yaml", tmp, i);
        text = replaced(model, "name: llama-2-7b\n", name);
        write_file(path, text);
        free(text);
        snprintf(models + strlen(models), sizeof models - strlen(models), " %s", path);
    }
    free(target);
    free(model);
    /* 9 targets of one arch planned alike: one too many */
    char *out, dir[96];
    snprintf(dir, sizeof dir, "%s/o", tmp);
    cr_assert_neq(run(&out, "generate --out %s --filter 'rmsnorm_*' specs/models/llama-2-7b.yaml%s", dir, targets),
                  0, "%s", out);
    cr_expect_not_null(strstr(out, "rmsnorm_sm90a_f16_h4096_t256c: planned alike for more than 8 targets (t9 "
                                   "among them)"),
                       "%s", out);
    cr_expect_not_null(strstr(out, "nothing written"), "%s", out);
    cr_expect_eq(count_files(dir), -1, "nothing written");
    free(out);
    /* 8 are listed, each with its figures */
    *strrchr(targets, ' ') = '\0';
    cr_assert_eq(run(&out, "generate --out %s --filter 'rmsnorm_*' specs/models/llama-2-7b.yaml%s", dir, targets),
                 0, "%s", out);
    free(out);
    char path[128];
    snprintf(path, sizeof path, "%s/fg_registry.c", dir);
    char *reg = slurp(path);
    cr_expect_not_null(strstr(reg, "{\"t8\", 132, 62914560}},\n        .ntargets = 8,"), "%s", reg);
    free(reg);
    /* 16 models and a target share the instance: 17 specs */
    snprintf(dir, sizeof dir, "%s/o2", tmp);
    cr_assert_neq(run(&out, "generate --out %s --filter 'rmsnorm_*'%s specs/targets/h200.yaml", dir, models), 0,
                  "%s", out);
    cr_expect_not_null(strstr(out, "rmsnorm_sm90a_f16_h4096_t256c: serves more than 16 specs"), "%s", out);
    cr_expect_eq(count_files(dir), -1, "nothing written");
    free(out);
}
