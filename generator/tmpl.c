#include "tmpl.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"

#define MAX_VALUES 64

static bool key_char(char c, bool first)
{
    return (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

static const fg_tmpl_value *lookup(const fg_tmpl_value *vals, size_t n, const char *k,
                                   size_t klen, size_t *index)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(vals[i].key) == klen && memcmp(vals[i].key, k, klen) == 0) {
            *index = i;
            return &vals[i];
        }
    return NULL;
}

/* True if [start, end) is the only non-blank text on its line. */
static bool alone_on_line(const char *text, const char *start, const char *end)
{
    for (const char *p = start; p > text && p[-1] != '\n'; p--)
        if (p[-1] != ' ' && p[-1] != '\t')
            return false;
    for (const char *p = end; *p && *p != '\n'; p++)
        if (*p != ' ' && *p != '\t')
            return false;
    return true;
}

int fg_tmpl_render_text(const char *label, const char *text, const fg_tmpl_value *vals,
                        size_t nvals, fg_strbuf *out, fg_diag *d)
{
    int errors_before = d->errors;
    bool used[MAX_VALUES] = {false};
    if (nvals > MAX_VALUES) {
        fg_error_at(d, label, 0, 0, "more than %d template values", MAX_VALUES);
        return -1;
    }
    fg_strbuf sb = {0};
    fg_sb_printf(&sb, "#line 1 \"%s\"\n", label);
    unsigned line = 1;
    const char *line_start = text;
    const char *p = text;
    while (*p) {
        if (p[0] == '{' && p[1] == '{') {
            const char *k = p + 2, *e = k;
            while (key_char(*e, e == k))
                e++;
            unsigned col = (unsigned)(p - line_start) + 1;
            if (e == k || e[0] != '}' || e[1] != '}') {
                fg_error_at(d, label, line, col,
                            "malformed placeholder; expected {{NAME}} with NAME in [A-Z0-9_]");
                p += 2;
                continue;
            }
            size_t idx;
            const fg_tmpl_value *v = lookup(vals, nvals, k, (size_t)(e - k), &idx);
            if (!v) {
                fg_error_at(d, label, line, col, "no value for placeholder {{%.*s}}",
                            (int)(e - k), k);
            } else {
                used[idx] = true;
                bool multi = strchr(v->value, '\n') != NULL;
                if (multi && !alone_on_line(text, p, e + 2))
                    fg_error_at(d, label, line, col,
                                "placeholder {{%s}} takes several lines and must stand alone "
                                "on its line",
                                v->key);
                fg_sb_puts(&sb, v->value);
                if (multi) {
                    /* Skip the rest of the template line and resynchronise. */
                    const char *nl = strchr(e + 2, '\n');
                    p = nl ? nl + 1 : e + 2 + strlen(e + 2);
                    line++;
                    line_start = p;
                    if (sb.len && sb.data[sb.len - 1] != '\n')
                        fg_sb_puts(&sb, "\n");
                    fg_sb_printf(&sb, "#line %u \"%s\"\n", line, label);
                    continue;
                }
            }
            p = e + 2;
            continue;
        }
        if (*p == '\n') {
            line++;
            line_start = p + 1;
        }
        fg_sb_append(&sb, p, 1);
        p++;
    }
    for (size_t i = 0; i < nvals; i++)
        if (!used[i])
            fg_error_at(d, label, 0, 0, "value '%s' is not used by the template", vals[i].key);
    if (d->errors != errors_before) {
        fg_sb_free(&sb);
        return -1;
    }
    fg_sb_append(out, fg_sb_str(&sb), sb.len);
    fg_sb_free(&sb);
    return 0;
}

int fg_tmpl_render(const char *dir, const char *name, const fg_tmpl_value *vals, size_t nvals,
                   fg_strbuf *out, fg_diag *d)
{
    char path[4096], label[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(label, sizeof label, "templates/%s", name);
    char *text = fg_read_all(path, NULL);
    if (!text) {
        fg_error_at(d, path, 0, 0, "cannot read template");
        return -1;
    }
    int rc = fg_tmpl_render_text(label, text, vals, nvals, out, d);
    free(text);
    return rc;
}
