/* Instance names and options as the GPU tests read them: --only lists,
 * kernel file names, the options all of them take.  Plain C17, no CUDA
 * calls, so the unit tests check them on the CPU
 * (tests/unit/test_harness_names.c). */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool fgh_name_listed(const char *list, const char *name)
{
    const size_t len = strlen(name);
    for (const char *part = list; *part;) {
        const size_t n = strcspn(part, ",");
        if (n && n == len && strncmp(part, name, n) == 0)
            return true;
        part += n + (part[n] == ',');
    }
    return false;
}

/* Whether `name` contains the n characters at `part`. */
static bool contains(const char *name, const char *part, size_t n)
{
    for (const char *at = name; *at; at++)
        if (strncmp(at, part, n) == 0)
            return true;
    return false;
}

/* Whether the part (n characters) is some instance's whole name, and then
 * whether it chooses `name` (whole: that name alone; else: every name that
 * contains it). */
static bool part_is_whole(const char *part, size_t n, const char *const *names, size_t count)
{
    for (size_t k = 0; n && k < count; k++)
        if (strlen(names[k]) == n && strncmp(part, names[k], n) == 0)
            return true;
    return false;
}
static bool part_chooses(const char *part, size_t n, bool whole, const char *name)
{
    return n && (whole ? strlen(name) == n && strncmp(part, name, n) == 0 : contains(name, part, n));
}

void fgh_names_chosen(const char *list, const char *const *names, size_t count, bool *chosen)
{
    for (size_t k = 0; k < count; k++)
        chosen[k] = false;
    for (const char *part = list; *part;) {   /* each part once, against every name */
        const size_t n = strcspn(part, ",");
        const bool whole = part_is_whole(part, n, names, count);
        for (size_t k = 0; k < count; k++)
            chosen[k] = chosen[k] || part_chooses(part, n, whole, names[k]);
        part += n + (part[n] == ',');
    }
}

size_t fgh_names_unmatched(const char *list, const char *const *names, size_t count, char *out,
                           size_t size)
{
    size_t unmatched = 0, used = 0;
    if (size)
        out[0] = '\0';
    for (const char *part = list; *part;) {
        const size_t n = strcspn(part, ",");
        const bool whole = part_is_whole(part, n, names, count);
        bool any = false;
        for (size_t k = 0; n && k < count && !any; k++)
            any = part_chooses(part, n, whole, names[k]);
        if (n && !any) {
            unmatched++;
            if (used < size) {
                const int w = snprintf(out + used, size - used, "%s%.*s", used ? "," : "", (int)n, part);
                used += w > 0 ? (size_t)w : 0;
            }
        }
        part += n + (part[n] == ',');
    }
    return unmatched;
}

bool fgh_rmsnorm_parse(const char *file, fgh_rmsnorm_file *out)
{
    static const char ext[] = ".cubin";
    const size_t len = strlen(file), elen = sizeof ext - 1;
    memset(out, 0, sizeof *out);
    if (len <= elen || len - elen >= sizeof out->name || strcmp(file + len - elen, ext))
        return false;
    char dt[16];
    int used = 0;
    if (sscanf(file, "rmsnorm_%31[^_]_%15[^_]_h%d_t%d%n", out->arch, dt, &out->hidden,
               &out->threads, &used) != 4)
        return false;
    /* what follows the block size: "c" (x cached) or nothing, then .cubin */
    const char *rest = file + used;
    out->cache_x = *rest == 'c';
    if (strcmp(rest + out->cache_x, ext) != 0)
        return false;
    if (strcmp(dt, "f16") == 0)
        out->dt = FGH_F16;
    else if (strcmp(dt, "bf16") == 0)
        out->dt = FGH_BF16;
    else
        return false;
    if (out->hidden <= 0 || out->threads <= 0)
        return false;
    snprintf(out->name, sizeof out->name, "%.*s", (int)(len - elen), file);
    return true;
}

void fgh_args_init(fgh_args *a)
{
    *a = (fgh_args){0};
    a->kernels = getenv("FG_KERNELS_DIR") ? getenv("FG_KERNELS_DIR") : "build/kernels";
    a->commit = getenv("FG_COMMIT");
    a->baseline = true;
}

bool fgh_common_arg(fgh_args *a, int argc, char **argv, int *i)
{
    const char *o = argv[*i];
    const bool has_value = *i + 1 < argc;
    const char **text = !strcmp(o, "--kernels")  ? &a->kernels
                        : !strcmp(o, "--manifest") ? &a->manifest
                        : !strcmp(o, "--only")     ? &a->only
                        : !strcmp(o, "--json")     ? &a->json
                        : !strcmp(o, "--commit")   ? &a->commit
                                                   : NULL;
    if (text || !strcmp(o, "--seed")) {
        if (!has_value)
            return false;
        const char *v = argv[++*i];
        if (text)
            *text = v;
        else
            a->seed = strtoull(v, NULL, 0), a->seed_set = true;
        return true;
    }
    bool *flag = !strcmp(o, "--verbose") ? &a->verbose
                 : !strcmp(o, "--bench") ? &a->bench
                 : !strcmp(o, "--quick") ? &a->quick
                                         : NULL;
    if (flag)
        *flag = true;
    else if (!strcmp(o, "--no-baseline"))
        a->baseline = false;
    else
        return false;
    return true;
}
