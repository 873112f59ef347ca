#include "diag.h"

#include <stdlib.h>
#include <string.h>

void fg_diag_init(fg_diag *d, FILE *stream)
{
    memset(d, 0, sizeof *d);
    d->stream = stream;
}

void fg_verror_at(fg_diag *d, const char *file, unsigned line, unsigned col,
                  const char *fmt, va_list ap)
{
    char msg[384];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (file && line && col)
        snprintf(d->last, sizeof d->last, "%s:%u:%u: error: %s", file, line, col, msg);
    else if (file && line)
        snprintf(d->last, sizeof d->last, "%s:%u: error: %s", file, line, msg);
    else if (file)
        snprintf(d->last, sizeof d->last, "%s: error: %s", file, msg);
    else
        snprintf(d->last, sizeof d->last, "fusegen: error: %s", msg);
    if (d->errors == 0)
        memcpy(d->first, d->last, sizeof d->first);
    d->errors++;
    if (d->stream)
        fprintf(d->stream, "%s\n", d->last);
}

void fg_error_at(fg_diag *d, const char *file, unsigned line, unsigned col,
                 const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fg_verror_at(d, file, line, col, fmt, ap);
    va_end(ap);
}

void fg_error(fg_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fg_verror_at(d, NULL, 0, 0, fmt, ap);
    va_end(ap);
}

void fg_out_of_memory(void)
{
    fputs("fusegen: out of memory\n", stderr);
    exit(2);
}
