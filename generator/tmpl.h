/* Templates: text files under templates/ with {{PLACEHOLDER}} slots.
 * Rendering is strict: a placeholder with no value and a value that no
 * placeholder uses are both errors.  The output carries `#line` directives
 * so compiler messages point back into the template. */
#ifndef FG_TMPL_H
#define FG_TMPL_H

#include <stddef.h>

#include "diag.h"
#include "strbuf.h"

typedef struct fg_tmpl_value {
    const char *key;    /* [A-Z][A-Z0-9_]* */
    const char *value;  /* may span lines only if its placeholder stands alone on a line */
} fg_tmpl_value;

/* Renders `dir`/`name` and appends the text to `out`.  #line directives name
 * the file as "templates/<name>" so output does not depend on where the
 * templates are installed. */
int fg_tmpl_render(const char *dir, const char *name, const fg_tmpl_value *vals, size_t nvals,
                   fg_strbuf *out, fg_diag *d);

/* The same on template text already in memory (tests). */
int fg_tmpl_render_text(const char *label, const char *text, const fg_tmpl_value *vals,
                        size_t nvals, fg_strbuf *out, fg_diag *d);

#endif
