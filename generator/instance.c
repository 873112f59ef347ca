#include "instance.h"

#include <fnmatch.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool valid_part(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

bool fg_instance_name(char out[FG_NAME_MAX], const char *family, fg_arch arch,
                      const char *dtypes, const char *dims, const char *variant)
{
    const char *parts[] = {family, fg_arch_tag(arch), dtypes, dims, variant};
    char full[1024] = "";
    size_t len = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!parts[i] || !*parts[i])
            continue;
        if (!valid_part(parts[i]))
            return false;
        int n = snprintf(full + len, sizeof full - len, "%s%s", len ? "_" : "", parts[i]);
        if (n < 0 || (size_t)n >= sizeof full - len)
            return false;
        len += (size_t)n;
    }
    if (len == 0)
        return false;
    if (len <= FG_NAME_LIMIT) {
        memcpy(out, full, len + 1);
        return true;
    }
    /* prefix (FG_NAME_LIMIT - 9 chars) + '_' + 8 hex = FG_NAME_LIMIT */
    snprintf(out, FG_NAME_MAX, "%.*s_%08x", FG_NAME_LIMIT - 9, full, fnv1a(full));
    return true;
}

void fg_instance_add_param(fg_instance *in, const char *key, long long value)
{
    /* a planner's bug, not an input's: a dropped parameter would only show
     * later as a template's missing placeholder */
    if (in->nparams >= FG_MAX_PARAMS) {
        fprintf(stderr, "fusegen: internal error: %s: more than %d parameters (adding %s)\n",
                in->name, FG_MAX_PARAMS, key);
        abort();
    }
    in->params[in->nparams++] = (fg_param){key, value};
}

long long fg_instance_param(const fg_instance *in, const char *key)
{
    for (unsigned i = 0; i < in->nparams; i++)
        if (strcmp(in->params[i].key, key) == 0)
            return in->params[i].value;
    return -1;
}

const char *fg_instance_ext(const fg_instance *in)
{
    return fg_arch_is_amd(in->target->arch) ? "hip" : "cu";
}

fg_strbuf *fg_instance_add_text(fg_instance *in, const char *key)
{
    if (in->ntexts == FG_MAX_TEXT_PARAMS)
        return NULL;
    in->text_keys[in->ntexts] = key;
    in->text_values[in->ntexts] = (fg_strbuf){0};
    return &in->text_values[in->ntexts++];
}

void fg_instance_free(fg_instance *in)
{
    fg_sb_free(&in->reasons);
    for (unsigned i = 0; i < in->ntexts; i++)
        fg_sb_free(&in->text_values[i]);
    in->ntexts = 0;
}

bool fg_name_matches(const char *name, const char *const *globs, size_t nglobs)
{
    for (size_t g = 0; g < nglobs; g++)
        if (fnmatch(globs[g], name, 0) == 0)
            return true;
    return false;
}
