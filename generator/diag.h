/* Diagnostics: every error the generator reports goes through here, so that
 * messages share one format (`file:line:col: error: what; what is expected`)
 * and callers can count them instead of stopping at the first. */
#ifndef FG_DIAG_H
#define FG_DIAG_H

#include <stdarg.h>
#include <stdio.h>

typedef struct fg_diag {
    FILE *stream;      /* where messages go; NULL keeps them only in `last` */
    int errors;
    char first[512];   /* text of the first message, for tests */
    char last[512];    /* text of the most recent message */
} fg_diag;

void fg_diag_init(fg_diag *d, FILE *stream);

/* line and col are 1-based; 0 leaves them out of the message. */
void fg_error_at(fg_diag *d, const char *file, unsigned line, unsigned col,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void fg_verror_at(fg_diag *d, const char *file, unsigned line, unsigned col,
                  const char *fmt, va_list ap);

/* An error with no source location (command line, I/O). */
void fg_error(fg_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Out of memory ends fusegen: "fusegen: out of memory" on stderr, exit
 * status 2.  Nothing is half-written, as every output is written whole at the
 * end of a run (fsutil.h). */
_Noreturn void fg_out_of_memory(void);

#endif
