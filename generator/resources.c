/* Parsers for the compilers' resource reports, and `fusegen gate`.
 *
 * ptxas -v (CUDA 13.0) prints, per entry (kernel), in no particular order
 * between entries:
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90a'
 *   ptxas info    : Function properties for NAME
 *       N bytes stack frame, N bytes spill stores, N bytes spill loads
 *   ptxas info    : Used N registers, used N barriers[, N bytes smem]
 *                   [, N bytes cumulative stack size]
 * and, for each non-inlined device function, a "Function properties" block
 * with no "Compiling" or "Used" line.  Items of the "Used" line that are zero
 * are left out, and their set has changed between releases, so unknown items
 * are skipped.
 *
 * clang's -Rpass-analysis=kernel-resource-usage prints, per kernel, remarks
 *   FILE:L:C: remark: Function Name: NAME [-Rpass-analysis=kernel-resource-usage]
 *   FILE:L:C: remark:     SGPRs: N [...]
 * followed by source-snippet lines; the set of keys depends on the target
 * (AGPRs only where there are MFMA units) and the LLVM release (Dynamic Stack
 * is new in 19), so only the keys the gate needs are required. */
#include "resources.h"

#include "decimal.h"
#include "fsutil.h"
#include "jsonget.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "diag.h"
#include "strbuf.h"

/* ---- shared parsing helpers ------------------------------------------- */

/* Functions found so far; the callers' `max` may be smaller than the log. */
typedef struct fn_list {
    fg_resources *v;
    int n, cap;
} fn_list;

static fg_resources *fn_push(fn_list *l)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        fg_resources *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            fg_out_of_memory();
        l->v = v;
        l->cap = cap;
    }
    fg_resources *r = &l->v[l->n++];
    memset(r, 0, sizeof *r);
    return r;
}

/* Copies what was found to the caller and returns the count (or -1). */
static int fn_finish(fn_list *l, bool ok, fg_resources *out, int max)
{
    int n = ok && l->n > 0 ? l->n : -1;
    for (int i = 0; i < n && i < max; i++)
        out[i] = l->v[i];
    free(l->v);
    return n;
}

/* Copies the next line of *p (without its '\n' or '\r') into buf and
 * advances *p.  Over-long lines are cut; no report line is that long. */
static bool next_line(const char **p, char *buf, size_t size)
{
    if (!**p)
        return false;
    const char *end = strchr(*p, '\n');
    size_t len = end ? (size_t)(end - *p) : strlen(*p);
    size_t keep = len < size - 1 ? len : size - 1;
    memcpy(buf, *p, keep);
    buf[keep] = '\0';
    if (keep && buf[keep - 1] == '\r')
        buf[keep - 1] = '\0';
    *p += len + (end ? 1 : 0);
    return true;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A name that does not fit would no longer match the manifest. */
static bool set_name(char *dst, size_t size, const char *src, size_t len)
{
    if (len == 0 || len >= size)
        return false;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return true;
}

/* A whole non-negative decimal int, nothing else but trailing blanks. */
static bool parse_count(const char *s, int *out)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    uint64_t v;
    if (!fg_parse_decimal(s, n, 0, INT32_MAX, &v))
        return false;
    *out = (int)v;
    return true;
}

/* ---- ptxas ----------------------------------------------------------- */

typedef struct ptxas_state {
    fn_list fns;
    char entry[160];        /* from the latest "Compiling entry function" */
    char arch[16];
    bool entry_pending;     /* its "Function properties" not seen yet */
    int frame_for;          /* index of the function whose "bytes stack
                               frame" line comes next, or -1 */
} ptxas_state;

/* "'NAME' for 'ARCH'": the two quoted words. */
static bool ptxas_compiling(ptxas_state *s, const char *rest)
{
    const char *q1 = rest[0] == '\'' ? strchr(rest + 1, '\'') : NULL;
    if (!q1 || !starts_with(q1, "' for '") || s->entry_pending)
        return false;
    const char *a = q1 + strlen("' for '");
    const char *q2 = strchr(a, '\'');
    if (!q2 || !set_name(s->entry, sizeof s->entry, rest + 1, (size_t)(q1 - rest - 1)) ||
        !set_name(s->arch, sizeof s->arch, a, (size_t)(q2 - a)))
        return false;
    s->entry_pending = true;
    return true;
}

static bool ptxas_properties(ptxas_state *s, const char *name)
{
    if (s->frame_for >= 0)
        return false;
    fg_resources *r = fn_push(&s->fns);
    s->frame_for = s->fns.n - 1;
    r->is_entry = s->entry_pending && strcmp(name, s->entry) == 0;
    if (r->is_entry) {
        s->entry_pending = false;
        r->registers = -1;  /* until its "Used" line; checked at the end */
        snprintf(r->arch, sizeof r->arch, "%s", s->arch);
        return set_name(r->kernel, sizeof r->kernel, name, strlen(name));
    }
    /* Device functions only inform: a cut name is better than no gate. */
    snprintf(r->kernel, sizeof r->kernel, "%s", name);
    return true;
}

static bool ptxas_frame(ptxas_state *s, const char *line)
{
    fg_resources *r = &s->fns.v[s->frame_for];
    int used = 0;
    if (sscanf(line, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads%n",
               &r->stack_bytes, &r->spill_store_bytes, &r->spill_load_bytes, &used) != 3 ||
        line[used] != '\0')
        return false;
    s->frame_for = -1;
    return true;
}

static fg_resources *ptxas_find_entry(ptxas_state *s, const char *name)
{
    for (int i = s->fns.n - 1; i >= 0; i--)
        if (s->fns.v[i].is_entry && strcmp(s->fns.v[i].kernel, name) == 0)
            return &s->fns.v[i];
    return NULL;
}

/* "Used N registers, used N barriers, N bytes smem, ..." for the current
 * entry; items other than registers and smem are not needed. */
static bool ptxas_used(ptxas_state *s, char *items)
{
    fg_resources *r = ptxas_find_entry(s, s->entry);
    if (!r || r->registers >= 0)
        return false;
    for (char *save = NULL, *it = strtok_r(items, ",", &save); it;
         it = strtok_r(NULL, ",", &save)) {
        int v, used = 0;
        if (sscanf(it, " Used %d registers%n", &v, &used) == 1 && !it[used])
            r->registers = v;
        else if (sscanf(it, " %d bytes smem%n", &v, &used) == 1 && !it[used])
            r->smem_bytes = v;
    }
    return r->registers >= 0;
}

/* One line; false when it breaks the report's structure. */
static bool ptxas_line(ptxas_state *s, char *line)
{
    if (s->frame_for >= 0)
        return ptxas_frame(s, line);
    if (starts_with(line, "ptxas fatal") || starts_with(line, "ptxas error"))
        return false;   /* no complete report after an error */
    if (!starts_with(line, "ptxas info"))
        return true;    /* warnings, nvcc's own messages */
    char *body = strchr(line, ':');
    if (!body)
        return true;
    body += strspn(body + 1, " ") + 1;
    if (starts_with(body, "Compiling entry function "))
        return ptxas_compiling(s, body + strlen("Compiling entry function "));
    if (starts_with(body, "Function properties for "))
        return ptxas_properties(s, body + strlen("Function properties for "));
    if (starts_with(body, "Used "))
        return ptxas_used(s, body);
    return true;        /* gmem, compile time, maxrregcount notes */
}

static bool ptxas_complete(const ptxas_state *s)
{
    if (s->entry_pending || s->frame_for >= 0)
        return false;
    for (int i = 0; i < s->fns.n; i++)
        if (s->fns.v[i].is_entry && s->fns.v[i].registers < 0)
            return false;
    return true;
}

int fg_resources_parse_ptxas(const char *log_text, fg_resources *out, int max)
{
    ptxas_state s = {.frame_for = -1};
    char line[1024];
    bool ok = log_text != NULL;
    for (const char *p = log_text; ok && next_line(&p, line, sizeof line);)
        ok = ptxas_line(&s, line);
    return fn_finish(&s.fns, ok && ptxas_complete(&s), out, max);
}

/* ---- AMDGPU remarks -------------------------------------------------- */

/* The keys the gate reads; any other key is skipped. */
static const struct amd_key {
    const char *key;
    size_t offset;
    bool required;
} amd_keys[] = {
    {"SGPRs", offsetof(fg_resources, sgprs), true},
    {"VGPRs", offsetof(fg_resources, vgprs), true},
    {"AGPRs", offsetof(fg_resources, agprs), false},  /* MFMA targets only */
    {"ScratchSize [bytes/lane]", offsetof(fg_resources, scratch_bytes), true},
    {"Occupancy [waves/SIMD]", offsetof(fg_resources, occupancy), true},
    {"SGPRs Spill", offsetof(fg_resources, sgpr_spills), true},
    {"VGPRs Spill", offsetof(fg_resources, vgpr_spills), true},
    {"LDS Size [bytes/block]", offsetof(fg_resources, lds_bytes), true},
};
enum { AMD_NKEYS = sizeof amd_keys / sizeof amd_keys[0] };

typedef struct amd_state {
    fn_list fns;
    unsigned seen;          /* bit i: amd_keys[i] seen for the last kernel */
} amd_state;

static bool amd_kernel_complete(const amd_state *s)
{
    if (s->fns.n == 0)
        return true;
    for (int i = 0; i < AMD_NKEYS; i++)
        if (amd_keys[i].required && !(s->seen & (1u << i)))
            return false;
    return true;
}

/* The text of a kernel-resource-usage remark: after "remark: ", without
 * the option tag and the indentation clang puts before the figures.  NULL
 * for anything else: other diagnostics, remarks of other passes (tagged
 * with their option), and the indented source snippets under a remark,
 * whose code could contain anything. */
static char *amd_remark_text(char *line)
{
    static const char mark[] = "remark: ", tag[] = " [-Rpass-analysis=kernel-resource-usage]";
    char *t = starts_with(line, mark) ? line : strstr(line, ": remark: ");
    if (!t || line[0] == ' ')
        return NULL;
    t = strstr(t, mark) + strlen(mark);
    char *opt = strstr(t, " [-");
    if (opt && strcmp(opt, tag) != 0)
        return NULL;
    if (opt)
        *opt = '\0';
    return t + strspn(t, " ");
}

static bool amd_field(amd_state *s, const char *key, const char *value)
{
    int i = 0;
    while (i < AMD_NKEYS && strcmp(key, amd_keys[i].key) != 0)
        i++;
    if (i == AMD_NKEYS)
        return true;    /* e.g. "Dynamic Stack: False" */
    if (s->fns.n == 0 || (s->seen & (1u << i)))
        return false;   /* a figure before any "Function Name", or twice */
    int *field = (int *)((char *)&s->fns.v[s->fns.n - 1] + amd_keys[i].offset);
    if (!parse_count(value, field))
        return false;
    s->seen |= 1u << i;
    return true;
}

static bool amd_line(amd_state *s, char *line)
{
    char *text = amd_remark_text(line);
    if (!text)
        return true;    /* source snippets, other diagnostics */
    if (starts_with(text, "Function Name: ")) {
        if (!amd_kernel_complete(s))
            return false;
        const char *name = text + strlen("Function Name: ");
        fg_resources *r = fn_push(&s->fns);
        r->is_amd = r->is_entry = true;
        s->seen = 0;
        return set_name(r->kernel, sizeof r->kernel, name, strlen(name));
    }
    char *colon = strstr(text, ": ");
    if (!colon)
        return true;    /* a remark of another kind */
    *colon = '\0';
    return amd_field(s, text, colon + 2);
}

int fg_resources_parse_amdgpu(const char *log_text, fg_resources *out, int max)
{
    amd_state s = {0};
    char line[1024];
    bool ok = log_text != NULL;
    for (const char *p = log_text; ok && next_line(&p, line, sizeof line);)
        ok = amd_line(&s, line);
    return fn_finish(&s.fns, ok && amd_kernel_complete(&s), out, max);
}

int fg_resources_parse_log(const char *log_text, fg_resources *out, int max)
{
    if (!log_text)
        return -1;
    if (strstr(log_text, "ptxas info"))
        return fg_resources_parse_ptxas(log_text, out, max);
    if (strstr(log_text, "remark: Function Name: "))
        return fg_resources_parse_amdgpu(log_text, out, max);
    return -1;
}

/* SGPR spills usually land in VGPR lanes rather than memory, but they still
 * mean the register budget of the plan is too small. */
bool fg_resources_spills(const fg_resources *r)
{
    return r->spill_store_bytes > 0 || r->spill_load_bytes > 0 ||
           r->sgpr_spills > 0 || r->vgpr_spills > 0;
}

/* ---- the gate -------------------------------------------------------- */

static const char gate_usage[] =
    "usage: fusegen gate --manifest IN.json --out OUT.json LOG...\n"
    "\n"
    "Reads compiler logs named <instance>.<ext>.log (the output of\n"
    "`nvcc -Xptxas -v` or `clang -Rpass-analysis=kernel-resource-usage`),\n"
    "attaches each kernel's registers, stack/scratch, shared memory and spills\n"
    "as \"resources\" to the manifest instance of the same name, and writes\n"
    "OUT.json (only if its content changed).  Exits 1, writing nothing, when a\n"
    "kernel spills, a log has no resource report, or a kernel is not in the\n"
    "manifest.  A tuning candidate (\"candidate\": true, from `generate\n"
    "--candidates`) that spills is not an error: it gets \"discarded\" with\n"
    "the reason, and the candidates kept and discarded are counted on stderr.\n";

typedef struct gate {
    const char *manifest_path;
    json_object *manifest;
    json_object *instances;     /* borrowed from manifest */
    bool *reported;             /* per instance: a log reported it already */
    unsigned candidates, discarded;
    fg_diag diag;
} gate;

static json_object *resources_json(const fg_resources *r)
{
    json_object *o = json_object_new_object();
#define FG_PUT_INT(field) json_object_object_add(o, #field, json_object_new_int(r->field))
    if (r->is_amd) {
        json_object_object_add(o, "compiler", json_object_new_string("amdgpu"));
        FG_PUT_INT(sgprs);
        FG_PUT_INT(vgprs);
        FG_PUT_INT(agprs);
        FG_PUT_INT(scratch_bytes);
        FG_PUT_INT(sgpr_spills);
        FG_PUT_INT(vgpr_spills);
        FG_PUT_INT(lds_bytes);
        FG_PUT_INT(occupancy);
    } else {
        json_object_object_add(o, "compiler", json_object_new_string("ptxas"));
        FG_PUT_INT(registers);
        FG_PUT_INT(stack_bytes);
        FG_PUT_INT(spill_store_bytes);
        FG_PUT_INT(spill_load_bytes);
        FG_PUT_INT(smem_bytes);
    }
#undef FG_PUT_INT
    return o;
}

static int find_instance(const gate *g, const char *name)
{
    size_t n = json_object_array_length(g->instances);
    for (size_t i = 0; i < n; i++) {
        const char *s = fg_json_str(json_object_array_get_idx(g->instances, i), "name");
        if (s && strcmp(s, name) == 0)
            return (int)i;
    }
    return -1;
}

static void report_spill(gate *g, const char *log, const fg_resources *r)
{
    const char *what = r->is_entry ? "kernel" : "device function";
    if (r->is_amd)
        fg_error_at(&g->diag, log, 0, 0,
                    "%s %s spills: %d VGPRs, %d SGPRs spilled (%d bytes/lane scratch, "
                    "%d VGPRs, %d AGPRs, %d SGPRs); expected no spills",
                    what, r->kernel, r->vgpr_spills, r->sgpr_spills, r->scratch_bytes,
                    r->vgprs, r->agprs, r->sgprs);
    else
        fg_error_at(&g->diag, log, 0, 0,
                    "%s %s spills: %d bytes spill stores, %d bytes spill loads "
                    "(%d bytes stack frame, %d registers); expected no spills",
                    what, r->kernel, r->spill_store_bytes, r->spill_load_bytes,
                    r->stack_bytes, r->registers);
}

/* The compiler and target of the log must be the instance's: a log of
 * another build would put wrong figures into the manifest. */
static bool arch_matches(const fg_resources *r, const char *arch)
{
    if (r->is_amd)
        return starts_with(arch, "gfx");
    return strcmp(r->arch, arch) == 0;
}

static void gate_function(gate *g, const char *log, const fg_resources *r)
{
    if (!r->is_entry) {
        if (fg_resources_spills(r))
            report_spill(g, log, r);
        return;     /* device functions are not instances */
    }
    int i = find_instance(g, r->kernel);
    if (i < 0) {
        fg_error_at(&g->diag, log, 0, 0, "kernel %s is not in the manifest %s; "
                    "expected the logs of this manifest's instances", r->kernel,
                    g->manifest_path);
        return;
    }
    json_object *inst = json_object_array_get_idx(g->instances, (size_t)i);
    const char *arch = fg_json_str(inst, "arch");
    if (!arch || !arch_matches(r, arch)) {
        fg_error_at(&g->diag, log, 0, 0, "kernel %s: the log is %s%s, but the manifest's "
                    "arch is %s", r->kernel, r->is_amd ? "an AMDGPU report" :
                    "a ptxas report for ", r->is_amd ? "" : r->arch, arch ? arch : "missing");
        return;
    }
    if (g->reported[i]) {
        fg_error_at(&g->diag, log, 0, 0, "kernel %s is reported more than once; "
                    "expected one log per instance and one target per log", r->kernel);
        return;
    }
    g->reported[i] = true;
    json_object_object_add(inst, "resources", resources_json(r));
    const bool candidate = fg_json_true(inst, "candidate");
    g->candidates += candidate;
    if (!fg_resources_spills(r))
        return;
    if (!candidate) {
        report_spill(g, log, r);
        return;
    }
    char why[96];   /* AMD reports registers spilled, not bytes */
    if (r->is_amd)
        snprintf(why, sizeof why, "spills: %d VGPRs, %d SGPRs spilled", r->vgpr_spills,
                 r->sgpr_spills);
    else
        snprintf(why, sizeof why, "spills: %d bytes stored, %d loaded", r->spill_store_bytes,
                 r->spill_load_bytes);
    json_object_object_add(inst, "discarded", json_object_new_string(why));
    g->discarded++;
}

static void gate_log(gate *g, const char *log)
{
    char *text = fg_read_all(log, NULL);
    if (!text) {
        fg_error_at(&g->diag, log, 0, 0, "cannot read: %s", strerror(errno));
        return;
    }
    int n = fg_resources_parse_log(text, NULL, 0);
    fg_resources *fns = n > 0 ? calloc((size_t)n, sizeof *fns) : NULL;
    if (n <= 0 || !fns || fg_resources_parse_log(text, fns, n) != n)
        fg_error_at(&g->diag, log, 0, 0, "no complete resource report; expected the "
                    "output of `nvcc -Xptxas -v` or `clang -Rpass-analysis="
                    "kernel-resource-usage` for a kernel that compiled");
    else
        for (int i = 0; i < n; i++)
            gate_function(g, log, &fns[i]);
    free(fns);
    free(text);
}

/* What is wrong with a parse that stopped at `rest`; NULL: nothing. */
static const char *json_problem(json_object *obj, enum json_tokener_error err, const char *rest)
{
    if (err == json_tokener_continue)
        return "unexpected end of file";
    if (err != json_tokener_success)
        return json_tokener_error_desc(err);
    if (rest[strspn(rest, " \t\r\n")])
        return "text after the end";
    if (!json_object_is_type(obj, json_type_object))
        return "not an object";
    return NULL;
}

/* The manifest as a JSON object; reports where it is broken. */
static json_object *parse_json_file(const char *path, fg_diag *d)
{
    char *text = fg_read_all(path, NULL);
    if (!text) {
        fg_error_at(d, path, 0, 0, "cannot read the manifest: %s", strerror(errno));
        return NULL;
    }
    json_tokener *tok = json_tokener_new();
    /* The length counts the final NUL, which ends a bare top-level literal. */
    json_object *obj = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
    size_t end = json_tokener_get_parse_end(tok);
    const char *problem = json_problem(obj, json_tokener_get_error(tok), text + end);
    if (problem) {
        unsigned line, col;
        fg_line_col(text, end, &line, &col);
        fg_error_at(d, path, line, col, "invalid manifest: %s; expected the JSON object "
                    "fusegen writes", problem);
        json_object_put(obj);
        obj = NULL;
    }
    json_tokener_free(tok);
    free(text);
    return obj;
}

static bool gate_load(gate *g, const char *path)
{
    g->manifest_path = path;
    g->manifest = parse_json_file(path, &g->diag);
    if (!g->manifest)
        return false;
    if (!json_object_object_get_ex(g->manifest, "instances", &g->instances) ||
        !json_object_is_type(g->instances, json_type_array)) {
        fg_error_at(&g->diag, path, 0, 0, "no \"instances\" array; expected a manifest "
                    "written by fusegen");
        return false;
    }
    size_t n = json_object_array_length(g->instances);
    g->reported = calloc(n ? n : 1, sizeof *g->reported);
    if (!g->reported)
        fg_out_of_memory();
    return true;
}

/* Options come before the logs.  Returns 0 to go on, -1 after --help,
 * otherwise the exit code of a usage error. */
static int gate_args(int argc, char **argv, const char **in, const char **out, int *first_log)
{
    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        const char *opt = argv[i++];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            fputs(gate_usage, stdout);
            return -1;
        }
        if (!strcmp(opt, "--"))
            break;
        const char **dst = !strcmp(opt, "--manifest") ? in : !strcmp(opt, "--out") ? out : NULL;
        if (!dst || i >= argc) {
            fprintf(stderr, "fusegen gate: %s: %s\n%s", opt,
                    dst ? "needs a value" : "unknown option", gate_usage);
            return 2;
        }
        *dst = argv[i++];
    }
    *first_log = i;
    if (!*in || !*out || i >= argc) {
        fprintf(stderr, "fusegen gate: needs --manifest, --out and at least one LOG\n%s",
                gate_usage);
        return 2;
    }
    return 0;
}

int fg_cmd_gate(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int first_log = 0;
    int rc = gate_args(argc, argv, &in, &out, &first_log);
    if (rc)
        return rc < 0 ? 0 : rc;

    gate g = {0};
    fg_diag_init(&g.diag, stderr);
    if (gate_load(&g, in))
        for (int i = first_log; i < argc; i++)
            gate_log(&g, argv[i]);
    if (g.candidates)
        fprintf(stderr, "fusegen gate: %u tuning candidates: %u kept, %u discarded (spills)\n",
                g.candidates, g.candidates - g.discarded, g.discarded);
    /* Any error: write nothing, so Make does not take a failed gate's
     * manifest for an up-to-date one. */
    if (!g.diag.errors) {
        const char *text = json_object_to_json_string_ext(
            g.manifest, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                            JSON_C_TO_STRING_NOSLASHESCAPE);
        fg_strbuf sb = {0};
        fg_sb_printf(&sb, "%s\n", text);
        fg_write_if_changed(out, fg_sb_str(&sb), sb.len, NULL, &g.diag);
        fg_sb_free(&sb);
    }
    json_object_put(g.manifest);
    free(g.reported);
    return g.diag.errors ? 1 : 0;
}
