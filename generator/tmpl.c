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

/* dir/name's text (malloc'd) with its path and its "templates/<name>"
 * label (the #line name, whatever the folder), or NULL. */
static char *read_template(const char *dir, const char *name, char path[4096], char label[512])
{
    snprintf(path, 4096, "%s/%s", dir, name);
    snprintf(label, 512, "templates/%s", name);
    return fg_read_all(path, NULL);
}

/* Past the rest of the template line at `from`, then back to `label`'s own
 * numbering in the output (after text that did not follow it line for
 * line: a multi-line value, a partial). */
static const char *resync(const char *from, unsigned *line, const char **line_start,
                          const char *label, fg_strbuf *out)
{
    const char *nl = strchr(from, '\n');
    const char *p = nl ? nl + 1 : from + strlen(from);
    ++*line;
    *line_start = p;
    if (out->len && out->data[out->len - 1] != '\n')
        fg_sb_puts(out, "\n");
    fg_sb_printf(out, "#line %u \"%s\"\n", *line, label);
    return p;
}

/* Renders `text` (named `label`) onto `out` (left as it was on an error);
 * {{> NAME}} alone on a line renders the partial template dir/NAME there
 * (one level: a partial has no partials), with the same values.  used[]
 * marks the values placeholders took. */
static int render(const char *dir, const char *label, const char *text, const fg_tmpl_value *vals,
                  size_t nvals, bool *used, bool partial, fg_strbuf *out, fg_diag *d)
{
    const int errors_before = d->errors;
    const size_t out_before = out->len;
    fg_sb_printf(out, "#line 1 \"%s\"\n", label);
    unsigned line = 1;
    const char *line_start = text;
    const char *p = text;
    while (*p) {
        if (p[0] == '{' && p[1] == '{' && p[2] == '>') {
            unsigned col = (unsigned)(p - line_start) + 1;
            const char *n = p + 3;
            while (*n == ' ')
                n++;
            const char *e = n;
            while (*e && *e != '}' && *e != '\n' && *e != ' ')
                e++;
            if (e == n || e[0] != '}' || e[1] != '}' || !alone_on_line(text, p, e + 2)) {
                fg_error_at(d, label, line, col,
                            "malformed partial; expected {{> NAME}} alone on its line");
                p += 3;
                continue;
            }
            if (partial || !dir) {
                fg_error_at(d, label, line, col, "a partial (%.*s) %s", (int)(e - n), n,
                            partial ? "inside a partial: one level only" : "needs a template folder");
            } else {
                char name[256], path[4096], plabel[512];
                snprintf(name, sizeof name, "%.*s", (int)(e - n), n);
                char *ptext = read_template(dir, name, path, plabel);
                if (!ptext) {
                    fg_error_at(d, label, line, col, "cannot read the partial %s", path);
                } else {
                    if (out->len && out->data[out->len - 1] != '\n')
                        fg_sb_puts(out, "\n");
                    render(dir, plabel, ptext, vals, nvals, used, true, out, d);
                    free(ptext);
                }
            }
            p = resync(e, &line, &line_start, label, out);
            continue;
        }
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
                fg_sb_puts(out, v->value);
                if (multi) {   /* the rest of the template line skipped */
                    p = resync(e + 2, &line, &line_start, label, out);
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
        fg_sb_append(out, p, 1);
        p++;
    }
    if (d->errors != errors_before) {
        fg_sb_truncate(out, out_before);
        return -1;
    }
    return 0;
}

static int render_top(const char *dir, const char *label, const char *text,
                      const fg_tmpl_value *vals, size_t nvals, fg_strbuf *out, fg_diag *d)
{
    bool used[MAX_VALUES] = {false};
    if (nvals > MAX_VALUES) {
        fg_error_at(d, label, 0, 0, "more than %d template values", MAX_VALUES);
        return -1;
    }
    const int errors_before = d->errors;
    const size_t out_before = out->len;
    int rc = render(dir, label, text, vals, nvals, used, false, out, d);
    for (size_t i = 0; rc == 0 && i < nvals; i++)   /* after a clean render, every unused one */
        if (!used[i])
            fg_error_at(d, label, 0, 0, "value '%s' is not used by the template", vals[i].key);
    if (d->errors != errors_before) {
        fg_sb_truncate(out, out_before);
        rc = -1;
    }
    return rc;
}

int fg_tmpl_render_text(const char *label, const char *text, const fg_tmpl_value *vals,
                        size_t nvals, fg_strbuf *out, fg_diag *d)
{
    return render_top(NULL, label, text, vals, nvals, out, d);
}

int fg_tmpl_render(const char *dir, const char *name, const fg_tmpl_value *vals, size_t nvals,
                   fg_strbuf *out, fg_diag *d)
{
    char path[4096], label[512];
    char *text = read_template(dir, name, path, label);
    if (!text) {
        fg_error_at(d, path, 0, 0, "cannot read template");
        return -1;
    }
    int rc = render_top(dir, label, text, vals, nvals, out, d);
    free(text);
    return rc;
}
