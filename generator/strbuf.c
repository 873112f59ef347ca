#include "strbuf.h"

#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reserve(fg_strbuf *sb, size_t extra)
{
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(sb->data, cap);
    if (!p)
        fg_out_of_memory();
    sb->data = p;
    sb->cap = cap;
}

void fg_sb_append(fg_strbuf *sb, const char *s, size_t n)
{
    reserve(sb, n);
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void fg_sb_puts(fg_strbuf *sb, const char *s) { fg_sb_append(sb, s, strlen(s)); }

void fg_sb_printf(fg_strbuf *sb, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        reserve(sb, (size_t)n);
        vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
        sb->len += (size_t)n;
    }
    va_end(ap2);
}

const char *fg_sb_str(const fg_strbuf *sb) { return sb->data ? sb->data : ""; }

void fg_sb_truncate(fg_strbuf *sb, size_t len)
{
    if (sb->data && len < sb->len) {
        sb->len = len;
        sb->data[len] = '\0';
    }
}

void fg_sb_free(fg_strbuf *sb)
{
    free(sb->data);
    sb->data = NULL;
    sb->len = sb->cap = 0;
}

void fg_sb_yaml_quoted(fg_strbuf *sb, const char *s)
{
    fg_sb_puts(sb, "\"");
    for (; *s; s++)
        fg_sb_printf(sb, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
    fg_sb_puts(sb, "\"");
}
