/* A growable, always NUL-terminated byte string for building file contents. */
#ifndef FG_STRBUF_H
#define FG_STRBUF_H

#include <stddef.h>

typedef struct fg_strbuf {
    char *data;   /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
} fg_strbuf;

void fg_sb_append(fg_strbuf *sb, const char *s, size_t n);
void fg_sb_puts(fg_strbuf *sb, const char *s);
void fg_sb_printf(fg_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *fg_sb_str(const fg_strbuf *sb); /* "" when empty */
/* s as a double-quoted YAML scalar (quotes and backslashes escaped) */
void fg_sb_yaml_quoted(fg_strbuf *sb, const char *s);
/* Back to its first len bytes (what was appended after them dropped). */
void fg_sb_truncate(fg_strbuf *sb, size_t len);
void fg_sb_free(fg_strbuf *sb);

#endif
