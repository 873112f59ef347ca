/* Resource reports and `fusegen gate`.
 *
 * The fixtures under tests/data/resources are real output of nvcc 13.0
 * (ptxas) and clang-19 (AMDGPU), captured from the sources next to them and
 * from tests/kernels; the "compile" suite runs the compilers on
 * tests/kernels/{spill,nospill}.{cu,hip} and checks what the gate makes of
 * them.  The *_error_* logs are a compiler run on a file with a syntax error
 * (undeclared identifier).  Run from the repository root. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "fsutil.h"
#include "resources.h"
#include "strbuf.h"

#define DATA "tests/data/resources/"

/* Mirrors the Makefile's kernel rules; see the report in the change. */
#define NVCC_FLAGS "-gencode=arch=compute_90a,code=sm_90a -cubin -Xptxas -v"
#define HIP_FLAGS                                                                       \
    "-x hip --rocm-path=/usr --offload-device-only --no-gpu-bundle-output -O3 "        \
    "-Rpass-analysis=kernel-resource-usage"

/* ---- helpers ---------------------------------------------------------- */

static char *slurp(const char *path) { return fg_read_all(path, NULL); }

static char *fixture(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, DATA "%s", name);
    char *text = slurp(path);
    cr_assert_not_null(text, "cannot read %s (run the tests from the repository root)", path);
    return text;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Parses a fixture with `parse` into out[max]; returns the count. */
static int parse_fixture(int (*parse)(const char *, fg_resources *, int), const char *name,
                         fg_resources *out, int max)
{
    char *text = fixture(name);
    int n = parse(text, out, max);
    free(text);
    return n;
}

static const fg_resources *by_name(const fg_resources *r, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].kernel, name) == 0)
            return &r[i];
    cr_assert_fail("no function %s in the report", name);
    return NULL;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* A scratch folder per test, removed at the end of it. */
static char scratch[64];

static void make_scratch(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(scratch, sizeof scratch, "%s/fg_resources_XXXXXX", base);
    cr_assert_not_null(mkdtemp(scratch), "mkdtemp: %s", strerror(errno));
}

static void remove_scratch(void)
{
    if (scratch[0])
        nftw(scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* For tests that check what the gate prints (and keep it off the console). */
static void make_scratch_quiet(void)
{
    cr_redirect_stderr();
    make_scratch();
}

static const char *in_scratch(const char *name)
{
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", scratch, name);
    return p;
}

/* fg_cmd_gate on a manifest, an output and one or two logs. */
static int run_gate(const char *manifest, const char *out, const char *log1, const char *log2)
{
    char *argv[] = {"gate", "--manifest", (char *)manifest, "--out", (char *)out,
                    (char *)log1, (char *)log2, NULL};
    return fg_cmd_gate(log2 ? 7 : 6, argv);
}

static json_object *instance(json_object *manifest, const char *name)
{
    json_object *list, *inst, *n;
    cr_assert(json_object_object_get_ex(manifest, "instances", &list));
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        inst = json_object_array_get_idx(list, i);
        if (json_object_object_get_ex(inst, "name", &n) &&
            strcmp(json_object_get_string(n), name) == 0)
            return inst;
    }
    cr_assert_fail("no instance %s", name);
    return NULL;
}

/* resources.<key> of an instance, or -1 when it has no resources. */
static int resource(json_object *manifest, const char *name, const char *key)
{
    json_object *res, *v;
    if (!json_object_object_get_ex(instance(manifest, name), "resources", &res))
        return -1;
    cr_assert(json_object_object_get_ex(res, key, &v), "%s has no resources.%s", name, key);
    return json_object_get_int(v);
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* Everything the gate printed, for checking its messages. */
static char *captured_stderr(void)
{
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    fg_strbuf sb = {0};
    char buf[1024];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fg_sb_append(&sb, buf, n);
    return sb.data ? sb.data : calloc(1, 1);
}

/* ---- ptxas ------------------------------------------------------------ */

Test(ptxas, several_entries_and_a_device_function)
{
    fg_resources r[8];
    int n = parse_fixture(fg_resources_parse_ptxas, "ptxas_multi_sm90a.log", r, 8);
    cr_assert_eq(n, 5);
    /* In the order ptxas printed them (not source order). */
    cr_assert_str_eq(r[0].kernel, "calls");
    cr_assert_str_eq(r[1].kernel, "_Z6helperPfi");
    cr_assert_str_eq(r[2].kernel, "_Z4tmplILi64EEvPf");
    cr_assert_str_eq(r[3].kernel, "_Z7mangledPfPKfi");
    cr_assert_str_eq(r[4].kernel, "plain_c");

    cr_assert(r[0].is_entry && !r[1].is_entry && r[2].is_entry);
    cr_assert_str_eq(r[0].arch, "sm_90a");
    cr_assert_str_eq(r[1].arch, "");
    cr_assert_eq(r[0].registers, 40);
    cr_assert_eq(r[0].stack_bytes, 128);
    cr_assert_eq(r[2].registers, 32);
    cr_assert_eq(r[2].stack_bytes, 256);
    cr_assert_eq(r[3].registers, 14);
    cr_assert_eq(r[3].smem_bytes, 1024);
    cr_assert_eq(r[4].registers, 8);
    cr_assert_eq(r[4].smem_bytes, 0);
    for (int i = 0; i < n; i++) {
        cr_assert(!r[i].is_amd);
        cr_assert(!fg_resources_spills(&r[i]), "%s: stack without spills is fine", r[i].kernel);
    }
}

Test(ptxas, spilling_kernel)
{
    fg_resources r[2];
    cr_assert_eq(parse_fixture(fg_resources_parse_ptxas, "ptxas_spill_sm90a.log", r, 2), 1);
    cr_assert_str_eq(r[0].kernel, "test_spill");
    cr_assert_eq(r[0].registers, 32);
    cr_assert_eq(r[0].stack_bytes, 416);
    cr_assert_eq(r[0].spill_store_bytes, 852);
    cr_assert_eq(r[0].spill_load_bytes, 852);
    cr_assert(fg_resources_spills(&r[0]));
}

Test(ptxas, warn_spills_line_changes_nothing)
{
    fg_resources a, b;
    cr_assert_eq(parse_fixture(fg_resources_parse_ptxas, "ptxas_spill_sm90a.log", &a, 1), 1);
    cr_assert_eq(parse_fixture(fg_resources_parse_ptxas, "ptxas_spill_warn_sm90a.log", &b, 1), 1);
    cr_assert_str_eq(a.kernel, b.kernel);
    cr_assert_eq(a.spill_store_bytes, b.spill_store_bytes);
    cr_assert_eq(a.registers, b.registers);
}

Test(ptxas, spills_in_a_callee)
{
    fg_resources r[4];
    cr_assert_eq(parse_fixture(fg_resources_parse_ptxas, "ptxas_callee_spill_sm90a.log", r, 4), 2);
    const fg_resources *callee = by_name(r, 2, "_Z5heavyPKfii");
    cr_assert(!callee->is_entry);
    cr_assert_eq(callee->spill_store_bytes, 1224);
    cr_assert_eq(callee->spill_load_bytes, 1252);
    cr_assert(fg_resources_spills(callee));
    cr_assert(by_name(r, 2, "caller")->is_entry);
}

Test(ptxas, clean_kernels)
{
    fg_resources r[4];
    int n = parse_fixture(fg_resources_parse_ptxas, "ptxas_nospill_sm90a.log", r, 4);
    cr_assert_eq(n, 2);
    cr_assert_eq(by_name(r, n, "test_nospill")->registers, 10);
    cr_assert_eq(by_name(r, n, "test_nospill_smem")->smem_bytes, 1024);
    for (int i = 0; i < n; i++)
        cr_assert(!fg_resources_spills(&r[i]) && r[i].stack_bytes == 0);
}

Test(ptxas, count_beyond_max)
{
    fg_resources r[2];
    memset(r, 0x5a, sizeof r);
    cr_assert_eq(parse_fixture(fg_resources_parse_ptxas, "ptxas_multi_sm90a.log", NULL, 0), 5);
    cr_assert_eq(parse_fixture(fg_resources_parse_ptxas, "ptxas_multi_sm90a.log", r, 1), 5);
    cr_assert_str_eq(r[0].kernel, "calls");
    cr_assert_eq((unsigned char)r[1].kernel[0], 0x5a, "wrote past max");
}

Test(ptxas, no_report)
{
    cr_assert_eq(parse_fixture(fg_resources_parse_ptxas, "ptxas_error_sm90a.log", NULL, 0), -1);
    cr_assert_eq(parse_fixture(fg_resources_parse_ptxas, "amdgpu_multi_gfx942.log", NULL, 0), -1);
    cr_assert_eq(fg_resources_parse_ptxas("", NULL, 0), -1);
    cr_assert_eq(fg_resources_parse_ptxas(NULL, NULL, 0), -1);
    cr_assert_eq(fg_resources_parse_ptxas("ptxas info    : 0 bytes gmem\n", NULL, 0), -1);
    cr_assert_eq(fg_resources_parse_ptxas("\x01\xff garbage\n\n\t 12 bytes\n", NULL, 0), -1);
}

/* A log cut anywhere inside an entry's report is not a report. */
Test(ptxas, truncated)
{
    char *text = fixture("ptxas_spill_sm90a.log");
    const char *cuts[] = {"Function properties", "    416 bytes", "ptxas info    : Used"};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char *copy = strdup(text);
        char *at = strstr(copy, cuts[i]);
        cr_assert_not_null(at);
        *at = '\0';
        cr_assert_eq(fg_resources_parse_ptxas(copy, NULL, 0), -1, "cut at \"%s\"", cuts[i]);
        free(copy);
    }
    free(text);
}

Test(ptxas, malformed_lines)
{
    const char *head = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
                       "ptxas info    : Function properties for k\n";
    const char *bad_frame[] = {
        "    x bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n",
        "    0 bytes stack frame, 0 bytes spill stores\n",
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads, 9 more\n",
    };
    for (size_t i = 0; i < 3; i++) {
        fg_strbuf sb = {0};
        fg_sb_printf(&sb, "%s%sptxas info    : Used 8 registers\n", head, bad_frame[i]);
        cr_assert_eq(fg_resources_parse_ptxas(fg_sb_str(&sb), NULL, 0), -1, "case %zu", i);
        fg_sb_free(&sb);
    }
    fg_resources r;
    fg_strbuf ok = {0};
    fg_sb_printf(&ok, "%s    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\r\n"
                      "ptxas info    : Used 8 registers, 360 bytes cmem[0], 1 textures\r\n", head);
    cr_assert_eq(fg_resources_parse_ptxas(fg_sb_str(&ok), &r, 1), 1, "older items, CRLF");
    cr_assert_eq(r.registers, 8);
    fg_sb_free(&ok);
}

Test(ptxas, entry_name_too_long)
{
    fg_strbuf sb = {0};
    char name[200];
    memset(name, 'k', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    fg_sb_printf(&sb, "ptxas info    : Compiling entry function '%s' for 'sm_90a'\n"
                      "ptxas info    : Function properties for %s\n"
                      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                      "ptxas info    : Used 8 registers\n", name, name);
    cr_assert_eq(fg_resources_parse_ptxas(fg_sb_str(&sb), NULL, 0), -1);
    fg_sb_free(&sb);
}

/* ---- AMDGPU ----------------------------------------------------------- */

Test(amdgpu, several_kernels_gfx942)
{
    fg_resources r[4];
    int n = parse_fixture(fg_resources_parse_amdgpu, "amdgpu_multi_gfx942.log", r, 4);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(r[0].kernel, "plain_c");
    cr_assert_str_eq(r[1].kernel, "_Z7mangledPfPKfi");
    cr_assert_str_eq(r[2].kernel, "calls");
    cr_assert_eq(r[0].sgprs, 11);
    cr_assert_eq(r[0].vgprs, 3);
    cr_assert_eq(r[0].occupancy, 8);
    cr_assert_eq(r[1].lds_bytes, 1024);
    cr_assert_eq(r[2].scratch_bytes, 144, "a private array, not a spill");
    for (int i = 0; i < n; i++) {
        cr_assert(r[i].is_amd && r[i].is_entry);
        cr_assert_eq(r[i].agprs, 0);
        cr_assert(!fg_resources_spills(&r[i]));
    }
}

Test(amdgpu, several_kernels_gfx90a)
{
    fg_resources r[4];
    cr_assert_eq(parse_fixture(fg_resources_parse_amdgpu, "amdgpu_multi_gfx90a.log", r, 4), 3);
    cr_assert_eq(by_name(r, 3, "_Z7mangledPfPKfi")->lds_bytes, 1024);
}

Test(amdgpu, spilling_kernel)
{
    const struct { const char *log; int spills, scratch; } cases[] = {
        {"amdgpu_spill_gfx942.log", 286, 868},
        {"amdgpu_spill_gfx90a.log", 246, 704},
    };
    for (int i = 0; i < 2; i++) {
        fg_resources r;
        cr_assert_eq(parse_fixture(fg_resources_parse_amdgpu, cases[i].log, &r, 1), 1);
        cr_assert_str_eq(r.kernel, "test_spill");
        cr_assert_eq(r.vgprs, 128);
        cr_assert_eq(r.vgpr_spills, cases[i].spills, "%s", cases[i].log);
        cr_assert_eq(r.scratch_bytes, cases[i].scratch, "%s", cases[i].log);
        cr_assert_eq(r.occupancy, 4);
        cr_assert(fg_resources_spills(&r));
    }
}

Test(amdgpu, clean_kernels)
{
    const char *logs[] = {"amdgpu_nospill_gfx942.log", "amdgpu_nospill_gfx90a.log"};
    for (int i = 0; i < 2; i++) {
        fg_resources r[2];
        cr_assert_eq(parse_fixture(fg_resources_parse_amdgpu, logs[i], r, 2), 2);
        for (int k = 0; k < 2; k++)
            cr_assert(!fg_resources_spills(&r[k]) && r[k].scratch_bytes == 0);
    }
}

Test(amdgpu, no_report)
{
    cr_assert_eq(parse_fixture(fg_resources_parse_amdgpu, "amdgpu_error_gfx942.log", NULL, 0), -1);
    cr_assert_eq(parse_fixture(fg_resources_parse_amdgpu, "ptxas_multi_sm90a.log", NULL, 0), -1);
    cr_assert_eq(fg_resources_parse_amdgpu("", NULL, 0), -1);
    cr_assert_eq(fg_resources_parse_amdgpu("remark: SGPRs: 3\n", NULL, 0), -1);
    cr_assert_eq(fg_resources_parse_amdgpu("no remarks\x7f\x80 at all: 12\n", NULL, 0), -1);
}

Test(amdgpu, truncated_or_malformed)
{
    char *text = fixture("amdgpu_spill_gfx942.log");
    char *cut = strdup(text);
    *strstr(cut, "remark:     SGPRs Spill") = '\0';
    cr_assert_eq(fg_resources_parse_amdgpu(cut, NULL, 0), -1, "missing figures");
    free(cut);

    fg_strbuf sb = {0};
    fg_sb_puts(&sb, text);
    char *v = strstr(sb.data, "VGPRs Spill: 286");
    memcpy(v + strlen("VGPRs Spill: "), "2x6", 3);
    cr_assert_eq(fg_resources_parse_amdgpu(fg_sb_str(&sb), NULL, 0), -1, "not a number");
    fg_sb_free(&sb);
    free(text);
}

Test(amdgpu, without_option_tags)
{
    const char *text = "k.hip:1:1: remark: Function Name: k\n"
                       "k.hip:1:1: remark:     SGPRs: 10\n"
                       "k.hip:1:1: remark:     VGPRs: 5\n"
                       "k.hip:1:1: remark:     ScratchSize [bytes/lane]: 0\n"
                       "k.hip:1:1: remark:     Occupancy [waves/SIMD]: 8\n"
                       "k.hip:1:1: remark:     SGPRs Spill: 0\n"
                       "k.hip:1:1: remark:     VGPRs Spill: 0\n"
                       "k.hip:1:1: remark:     LDS Size [bytes/block]: 0\n";
    fg_resources r;
    cr_assert_eq(fg_resources_parse_amdgpu(text, &r, 1), 1, "no AGPRs line (RDNA), no tags");
    cr_assert_eq(r.vgprs, 5);
}

/* Remarks of other passes, and source snippets that look like remarks. */
Test(amdgpu, ignores_what_is_not_a_resource_remark)
{
    char *report = fixture("amdgpu_spill_gfx942.log");
    fg_strbuf sb = {0};
    fg_sb_puts(&sb, "k.hip:3:7: remark: foo inlined into bar: always inline attribute "
                    "[-Rpass=inline]\n"
                    "    3 |   // remark: Function Name: not_a_kernel\n"
                    "k.hip:9:1: warning: loop not unrolled: the optimizer was unable "
                    "[-Wpass-failed=transform-warning]\n");
    fg_sb_puts(&sb, report);
    fg_resources r[2];
    cr_assert_eq(fg_resources_parse_amdgpu(fg_sb_str(&sb), r, 2), 1);
    cr_assert_str_eq(r[0].kernel, "test_spill");
    fg_sb_free(&sb);
    free(report);
}

Test(parse_log, picks_the_format)
{
    fg_resources r[8];
    cr_assert_eq(parse_fixture(fg_resources_parse_log, "ptxas_multi_sm90a.log", r, 8), 5);
    cr_assert(!r[0].is_amd);
    cr_assert_eq(parse_fixture(fg_resources_parse_log, "amdgpu_multi_gfx942.log", r, 8), 3);
    cr_assert(r[0].is_amd);
    cr_assert_eq(parse_fixture(fg_resources_parse_log, "ptxas_error_sm90a.log", r, 8), -1);
    cr_assert_eq(fg_resources_parse_log("garbage", r, 8), -1);
}

/* ---- fg_cmd_gate ------------------------------------------------------ */

Test(gate, attaches_resources, .init = make_scratch, .fini = remove_scratch)
{
    const char *out = in_scratch("out.json");
    cr_assert_eq(run_gate(DATA "manifest_sm90a.json", out, DATA "ptxas_nospill_sm90a.log", NULL), 0);
    json_object *m = json_object_from_file(out);
    cr_assert_not_null(m);
    cr_assert_eq(resource(m, "test_nospill", "registers"), 10);
    cr_assert_eq(resource(m, "test_nospill", "spill_store_bytes"), 0);
    cr_assert_eq(resource(m, "test_nospill_smem", "smem_bytes"), 1024);
    cr_assert_eq(resource(m, "test_spill", "registers"), -1, "no log, no resources");
    json_object *params;
    cr_assert(json_object_object_get_ex(instance(m, "test_nospill"), "params", &params),
              "other fields kept");
    json_object_put(m);

    char *text = slurp(out);
    cr_assert_null(strstr(text, "\\/"), "paths are written without escaped slashes");
    cr_assert_not_null(strstr(text, "\"scale\": 0.5"), "numbers kept as written");
    cr_assert_eq(text[strlen(text) - 1], '\n');
    free(text);
}

Test(gate, amd_resources, .init = make_scratch, .fini = remove_scratch)
{
    const char *out = in_scratch("out.json");
    cr_assert_eq(run_gate(DATA "manifest_gfx942.json", out, DATA "amdgpu_nospill_gfx942.log", NULL), 0);
    json_object *m = json_object_from_file(out);
    cr_assert_eq(resource(m, "test_nospill", "vgprs"), 6);
    cr_assert_eq(resource(m, "test_nospill", "vgpr_spills"), 0);
    cr_assert_eq(resource(m, "test_nospill_smem", "lds_bytes"), 1024);
    json_object_put(m);
}

/* Same content: the file is not replaced, so Make sees nothing new. */
Test(gate, unchanged_output_is_not_rewritten, .init = make_scratch, .fini = remove_scratch)
{
    const char *out = in_scratch("out.json");
    struct stat a, b;
    cr_assert_eq(run_gate(DATA "manifest_sm90a.json", out, DATA "ptxas_nospill_sm90a.log", NULL), 0);
    cr_assert_eq(stat(out, &a), 0);
    cr_assert_eq(run_gate(DATA "manifest_sm90a.json", out, DATA "ptxas_nospill_sm90a.log", NULL), 0);
    cr_assert_eq(stat(out, &b), 0);
    cr_assert_eq(a.st_ino, b.st_ino);
    /* and the output fed back in is a fixed point */
    cr_assert_eq(run_gate(out, out, DATA "ptxas_nospill_sm90a.log", NULL), 0);
    cr_assert_eq(stat(out, &b), 0);
    cr_assert_eq(a.st_ino, b.st_ino);
    mode_t mask = umask(0);
    umask(mask);
    cr_assert_eq(b.st_mode & 0777, 0666 & ~mask, "mode %o", b.st_mode & 0777);
}

Test(gate, spill_fails_and_writes_nothing, .init = make_scratch_quiet, .fini = remove_scratch)
{
    const char *out = in_scratch("out.json");
    cr_assert_eq(run_gate(DATA "manifest_sm90a.json", out, DATA "ptxas_nospill_sm90a.log",
                          DATA "ptxas_spill_sm90a.log"), 1);
    cr_assert(!exists(out));
    char *err = captured_stderr();
    cr_assert_not_null(strstr(err, DATA "ptxas_spill_sm90a.log: error: kernel test_spill spills: "
                                       "852 bytes spill stores, 852 bytes spill loads"), "%s", err);
    cr_assert_null(strstr(err, "test_nospill"), "clean kernels are not reported: %s", err);
    free(err);
}

Test(gate, amd_spill_fails, .init = make_scratch_quiet, .fini = remove_scratch)
{
    const char *out = in_scratch("out.json");
    spit(out, "old\n");
    cr_assert_eq(run_gate(DATA "manifest_gfx942.json", out, DATA "amdgpu_spill_gfx942.log", NULL), 1);
    char *old = slurp(out);
    cr_assert_str_eq(old, "old\n", "a failed gate leaves OUT alone");
    free(old);
    char *err = captured_stderr();
    cr_assert_not_null(strstr(err, "error: kernel test_spill spills: 286 VGPRs"), "%s", err);
    free(err);
}

Test(gate, callee_spill_fails, .init = make_scratch_quiet, .fini = remove_scratch)
{
    const char *manifest = in_scratch("m.json");
    spit(manifest, "{\"instances\": [{\"name\": \"caller\", \"arch\": \"sm_90a\"}]}");
    cr_assert_eq(run_gate(manifest, in_scratch("out.json"), DATA "ptxas_callee_spill_sm90a.log",
                          NULL), 1);
    char *err = captured_stderr();
    cr_assert_not_null(strstr(err, "device function _Z5heavyPKfii spills: 1224 bytes"), "%s", err);
    free(err);
}

/* A tuning candidate that spills is discarded with its reason; the run
 * succeeds, and a candidate that does not spill is kept. */
Test(gate, spilling_candidate_is_discarded, .init = make_scratch_quiet, .fini = remove_scratch)
{
    const char *manifest = in_scratch("m.json");
    spit(manifest, "{\"instances\": [{\"name\": \"test_spill\", \"arch\": \"sm_90a\", "
                   "\"candidate\": true}, {\"name\": \"test_nospill\", \"arch\": "
                   "\"sm_90a\", \"candidate\": true}, {\"name\": \"test_nospill_smem\", "
                   "\"arch\": \"sm_90a\"}]}");
    const char *out = in_scratch("out.json");
    cr_assert_eq(run_gate(manifest, out, DATA "ptxas_nospill_sm90a.log",
                          DATA "ptxas_spill_sm90a.log"), 0);
    json_object *m = json_object_from_file(out);
    cr_assert_not_null(m);
    json_object *why;
    cr_assert(json_object_object_get_ex(instance(m, "test_spill"), "discarded", &why));
    cr_assert_str_eq(json_object_get_string(why), "spills: 852 bytes stored, 852 loaded");
    cr_assert(!json_object_object_get_ex(instance(m, "test_nospill"), "discarded", &why));
    cr_assert_eq(resource(m, "test_spill", "registers"), 32, "figures kept for the record");
    json_object_put(m);
    char *err = captured_stderr();
    cr_assert_not_null(strstr(err, "2 tuning candidates: 1 kept, 1 discarded (spills)"), "%s", err);
    free(err);
}

Test(gate, other_failures, .init = make_scratch_quiet, .fini = remove_scratch)
{
    const char *out = in_scratch("out.json");
    const char *m = DATA "manifest_sm90a.json";
    const char *log = DATA "ptxas_nospill_sm90a.log";
    struct { const char *log1, *log2, *why; } cases[] = {
        {DATA "ptxas_multi_sm90a.log", NULL, "is not in the manifest"},
        {DATA "ptxas_error_sm90a.log", NULL, "no complete resource report"},
        {DATA "amdgpu_nospill_gfx942.log", NULL, "the manifest's arch is sm_90a"},
        {log, log, "reported more than once"},
        {DATA "no_such.log", NULL, "cannot read"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(run_gate(m, out, cases[i].log1, cases[i].log2), 1, "%s", cases[i].why);
    cr_assert_eq(run_gate(DATA "no_such.json", out, log, NULL), 1);
    cr_assert_eq(run_gate(DATA "ptxas_multi_sm90a.log", out, log, NULL), 1, "not JSON");
    cr_assert(!exists(out));
    char *err = captured_stderr();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_not_null(strstr(err, cases[i].why), "%s: %s", cases[i].why, err);
    free(err);
}

Test(gate, usage, .init = cr_redirect_stdout)
{
    char *help[] = {"gate", "--help", NULL};
    cr_assert_eq(fg_cmd_gate(2, help), 0);
    char *none[] = {"gate", NULL};
    char *no_logs[] = {"gate", "--manifest", "m.json", "--out", "o.json", NULL};
    char *bad[] = {"gate", "--frobnicate", "x.log", NULL};
    char *no_value[] = {"gate", "--manifest", NULL};
    cr_redirect_stderr();
    cr_assert_eq(fg_cmd_gate(1, none), 2);
    cr_assert_eq(fg_cmd_gate(5, no_logs), 2);
    cr_assert_eq(fg_cmd_gate(3, bad), 2);
    cr_assert_eq(fg_cmd_gate(2, no_value), 2);
    fflush(stdout);
    cr_assert_stdout_neq_str("");
}

/* ---- the real compilers ----------------------------------------------- */

/* First of the candidates that can be run; NULL if none. */
static const char *find_tool(const char *env, const char *const *candidates)
{
    const char *v = getenv(env);
    if (v && *v)
        return v;
    for (; *candidates; candidates++) {
        if (strchr(*candidates, '/')) {
            if (access(*candidates, X_OK) == 0)
                return *candidates;
            continue;
        }
        fg_strbuf cmd = {0};
        fg_sb_printf(&cmd, "command -v %s >/dev/null 2>&1", *candidates);
        int rc = system(cmd.data);
        fg_sb_free(&cmd);
        if (rc == 0)
            return *candidates;
    }
    return NULL;
}

/* Runs `cmd` through popen and keeps everything it printed in `log`, as
 * the Makefile's rules do; returns its exit status. */
static int compile_to_log(const char *cmd, const char *log)
{
    fg_strbuf full = {0};
    fg_sb_printf(&full, "%s 2>&1", cmd);
    FILE *p = popen(full.data, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    FILE *f = fopen(log, "wb");
    cr_assert_not_null(f);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        fwrite(buf, 1, n, f);
    fclose(f);
    int st = pclose(p);
    fg_sb_free(&full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_manifest(const char *path, const char *arch)
{
    fg_strbuf sb = {0};
    fg_sb_printf(&sb, "{\"instances\": [{\"name\": \"test_nospill\", \"arch\": \"%s\"}, "
                      "{\"name\": \"test_nospill_smem\", \"arch\": \"%s\"}, "
                      "{\"name\": \"test_spill\", \"arch\": \"%s\"}]}\n", arch, arch, arch);
    spit(path, sb.data);
    fg_sb_free(&sb);
}

/* Compiles spill.EXT and nospill.EXT with `compiler` (a command line that
 * takes "SRC -o OBJ" after it) and checks the gate's verdict on both. */
static void gate_real_build(const char *compiler, const char *arch, const char *ext,
                            const char *obj_ext)
{
    const char *manifest = in_scratch("manifest.json");
    write_manifest(manifest, arch);
    const char *stems[] = {"nospill", "spill"};
    char logs[2][300];
    for (int i = 0; i < 2; i++) {
        fg_strbuf cmd = {0};
        fg_sb_printf(&cmd, "%s tests/kernels/%s.%s -o %s/%s.%s", compiler, stems[i], ext,
                     scratch, stems[i], obj_ext);
        /* named <instance>.<ext>.log, as make kernels names them */
        snprintf(logs[i], sizeof logs[i], "%s/test_%s.%s.log", scratch, stems[i], ext);
        int rc = compile_to_log(cmd.data, logs[i]);
        char *text = slurp(logs[i]);
        cr_assert_eq(rc, 0, "%s failed:\n%s", cmd.data, text);
        free(text);
        fg_sb_free(&cmd);
    }
    const char *out = in_scratch("out.json");
    cr_assert_eq(run_gate(manifest, out, logs[0], NULL), 0, "the gate rejects nospill.%s", ext);
    json_object *m = json_object_from_file(out);
    cr_assert_not_null(m);
    cr_assert_gt(resource(m, "test_nospill", strcmp(ext, "cu") ? "vgprs" : "registers"), 0);
    json_object_put(m);
    unlink(out);
    cr_assert_eq(run_gate(manifest, out, logs[0], logs[1]), 1, "the gate accepts spill.%s", ext);
    cr_assert(!exists(out));
}

#define COMPILE_TEST(name) \
    Test(compile, name, .init = make_scratch_quiet, .fini = remove_scratch, .timeout = 300)

COMPILE_TEST(nvcc_sm90a)
{
    static const char *const nvccs[] = {"nvcc", "/usr/local/cuda/bin/nvcc", NULL};
    const char *nvcc = find_tool("NVCC", nvccs);
    if (!nvcc)
        cr_skip_test("nvcc not found (not on PATH, not in /usr/local/cuda/bin, NVCC unset): "
                     "the sm_90a gate was NOT checked");
    fg_strbuf cc = {0};
    fg_sb_printf(&cc, "%s " NVCC_FLAGS, nvcc);
    gate_real_build(cc.data, "sm_90a", "cu", "cubin");
    fg_sb_free(&cc);
}

/* gfx942 needs the device-library folder of scripts/hip-devlibs.sh. */
static void clang_hip(const char *arch)
{
    static const char *const clangs[] = {"clang++-19", NULL};
    const char *clang = find_tool("HIP_CLANG", clangs);
    if (!clang)
        cr_skip_test("clang++-19 not found (HIP_CLANG unset): the %s gate was NOT checked", arch);
    const char *devlibs = getenv("FG_HIP_DEVLIBS");
    fg_strbuf cc = {0};
    if (!devlibs || !*devlibs) {
        devlibs = in_scratch("devlibs");
        fg_sb_printf(&cc, "scripts/hip-devlibs.sh %s", devlibs);
        int rc = compile_to_log(cc.data, in_scratch("devlibs.log"));
        cr_assert_eq(rc, 0, "scripts/hip-devlibs.sh failed (see its message with %s)", cc.data);
        cc.len = 0;
    }
    fg_sb_printf(&cc, "%s " HIP_FLAGS " --offload-arch=%s --rocm-device-lib-path=%s -c", clang,
                 arch, devlibs);
    gate_real_build(cc.data, arch, "hip", "co");
    fg_sb_free(&cc);
}

COMPILE_TEST(clang_gfx942) { clang_hip("gfx942"); }
COMPILE_TEST(clang_gfx90a) { clang_hip("gfx90a"); }
